//! scope-rbac, natively, for ScopeTemplates (rules 1 to 4 of
//! `olm_guard_rules::scope_rbac`'s template half): each entry oria can
//! create, and no rule its author could not grant, checked atom by atom
//! through the authorizer as RBAC's `covers` checks them. ScopeInstances
//! are the module's: their bindings are judged against the ScopeTemplate
//! they name, which CEL cannot read.

use olm_guard_olm::scope::GROUPS;
use olm_guard_rules::scope_rbac::{CLUSTER_SCOPED, Settings};

use super::aggregation_escalation::rules_shape;
use super::{Check, Enforcement, GenerateError, Native, cel_string, object_shape, user_text};
use crate::model::{BoundPolicy, MatchResources, PolicySpec, Validation, named, rule_for};

/// The rule's name.
pub const RULE: &str = "scope-rbac";

/// Every check of the rule and where it is enforced.
pub const CHECKS: &[Check] = &[
    Check::new(
        "ScopeTemplate entries oria can create: a valid ClusterRole name, ServiceAccount \
         subjects with a namespace",
        Enforcement::Policy,
        "the object alone decides it",
    ),
    Check::new(
        "forbidClusterScopedResources: no cluster-scoped resource or non-resource URL in a \
         ScopeTemplate's rules",
        Enforcement::Policy,
        "the module's list of cluster-scoped resources is written into the policy",
    ),
    Check::new(
        "a ScopeTemplate grants nothing its author does not hold cluster-wide, unless they are \
         in system:masters or may escalate clusterroles",
        Enforcement::Policy,
        "each rule is broken into verb x group x resource (x name) and non-resource URL x verb, \
         and each asked of the authorizer, which answers what RBAC's covers answers",
    ),
    Check::new(
        "a ScopeInstance: its template exists (or allowPendingTemplate), its namespaces are \
         valid, and its bindings grant nothing the requester could not grant where they bind",
        Enforcement::ModuleOnly,
        "the bindings are those of the ScopeTemplate the instance names, which CEL cannot read",
    ),
];

/// The policy for `settings`.
pub fn generate(settings: &Settings) -> Result<Native, GenerateError> {
    let list = |r: &str, f: &str| format!("(has({r}.{f}) && {r}.{f} != null ? {r}.{f} : [])");
    let entries = "(has(object.spec) && object.spec != null && has(object.spec.clusterRoles) && \
                   object.spec.clusterRoles != null ? object.spec.clusterRoles : [])";
    let generate_name = "(has(e.generateName) && e.generateName != null ? e.generateName : '')";
    // One atom of a rule, through the authorizer.
    let resource_atom = |name: Option<&str>| {
        let named = name.map(|n| format!(".name({n})")).unwrap_or_default();
        format!(
            "(res.indexOf('/') >= 0 ? authorizer.group(g).resource(res.substring(0, \
             res.indexOf('/'))).subresource(res.substring(res.indexOf('/') + 1)){named} : \
             authorizer.group(g).resource(res){named}).check(v).allowed()"
        )
    };
    let held = format!(
        "{groups}.all(g, {resources}.all(res, {verbs}.all(v, size({names}) == 0 ? {unnamed} : \
         {names}.all(n, {named})))) && {urls}.all(u, {verbs}.all(v, \
         authorizer.path(u).check(v).allowed()))",
        groups = list("r", "apiGroups"),
        resources = list("r", "resources"),
        verbs = list("r", "verbs"),
        names = list("r", "resourceNames"),
        urls = list("r", "nonResourceURLs"),
        unnamed = resource_atom(None),
        named = resource_atom(Some("n")),
    );
    let cluster_scoped = {
        let known: Vec<String> = CLUSTER_SCOPED
            .iter()
            .flat_map(|(group, resources)| {
                resources
                    .iter()
                    .map(move |r| cel_string(&format!("{group}/{r}")))
            })
            .collect();
        format!("[{}]", known.join(", "))
    };
    // The parent resource of a rule's resource, as cluster_scoped.rs reads it.
    let parent = "(res.indexOf('/') >= 0 ? res.substring(0, res.indexOf('/')) : res)";
    let mut variables = vec![
        named("entries", entries),
        named(
            "name",
            "has(object.metadata) && object.metadata != null && has(object.metadata.name) && \
             object.metadata.name != null && object.metadata.name != '' ? object.metadata.name : \
             request.name",
        ),
    ];
    let name_bad = format!(
        "({generate_name} == '' || {generate_name} == '.' || {generate_name} == '..' || \
         {generate_name}.contains('/') || {generate_name}.contains('%'))"
    );
    // Each entry's problems, named by its generateName: standard CEL has no
    // index of a list element.
    variables.push(named(
        "shapeProblems",
        &format!(
            "variables.entries.map(e, ({name_bad} ? ['spec.clusterRoles entry \"' + \
             {generate_name} + '\": generateName is not a valid ClusterRole name: oria creates a \
             ClusterRole named exactly this, so set it to a name such as \"my-operator-manager\" \
             without \\'/\\' or \\'%\\''] : []) + {subjects}.filter(s, type(s) == map && \
             has(s.kind) && s.kind == 'ServiceAccount' && (!has(s.namespace) || s.namespace == \
             null || s.namespace == '')).map(s, 'spec.clusterRoles entry \"' + {generate_name} + \
             '\": ServiceAccount subject \"' + (has(s.name) && s.name != null ? s.name : '') + \
             '\" has no namespace: set the ServiceAccount\\'s namespace (without it a \
             ClusterRoleBinding binds no one, and each RoleBinding would bind a different \
             ServiceAccount of its own namespace)'))",
            name_bad = name_bad,
            subjects = list("e", "subjects"),
        ),
    ));
    let mut problems =
        "variables.shapeProblems.filter(l, size(l) > 0).map(l, l.join('; '))".to_string();
    if settings.forbid_cluster_scoped_resources {
        variables.push(named(
            "clusterScoped",
            &format!(
                "variables.entries.filter(e, {rules}.exists(r, size({urls}) > 0 || \
                 {resources}.exists(res, {parent} == '*' || {groups}.exists(g, (g == '*' ? \
                 {known}.exists(k, k.endsWith('/' + {parent})) : (g + '/' + {parent}) in \
                 {known}))))).map(e, {generate_name})",
                rules = list("e", "rules"),
                urls = list("r", "nonResourceURLs"),
                resources = list("r", "resources"),
                groups = list("r", "apiGroups"),
                known = cluster_scoped,
            ),
        ));
        problems = format!(
            "{problems} + (size(variables.clusterScoped) == 0 ? [] : ['the ClusterRoles ' + \
             variables.clusterScoped.map(n, '\"' + n + '\"').join(', ') + ' grant cluster-scoped \
             resources or non-resource URLs. Setting forbidClusterScopedResources is on: oria \
             binds these ClusterRoles with RoleBindings, which cannot grant cluster-scoped \
             access, or, for a ScopeInstance without namespaces, with a ClusterRoleBinding that \
             grants it cluster-wide; remove them from the rules (name the namespaced resources \
             the operator needs instead of \"*\")'])"
        );
    }
    variables.push(named("problems", &problems));
    variables.push(named(
        "bypassed",
        "(has(request.userInfo.groups) && request.userInfo.groups != null && 'system:masters' in \
         request.userInfo.groups) || \
         authorizer.group('rbac.authorization.k8s.io').resource('clusterroles')\
         .check('escalate').allowed()",
    ));
    variables.push(named(
        "notHeld",
        &format!(
            "variables.entries.filter(e, !{rules}.all(r, {held})).map(e, {generate_name})",
            rules = list("e", "rules"),
        ),
    ));
    let validations = vec![
        Validation {
            expression: format!(
                "({}) && {entries}.all(e, type(e) == map && (!has(e.generateName) || \
                 e.generateName == null || type(e.generateName) == string) && ({}) && \
                 (!has(e.subjects) || e.subjects == null || (type(e.subjects) == list && \
                 e.subjects.all(s, type(s) == map))))",
                object_shape("object"),
                rules_shape("e"),
            ),
            message: Some(
                "the ScopeTemplate cannot be read: spec.clusterRoles must be a list of entries \
                 with a generateName, RBAC rules and subjects"
                    .into(),
            ),
            message_expression: None,
            reason: Some("Invalid".into()),
        },
        Validation {
            expression: "size(variables.problems) == 0".into(),
            message: Some("the ScopeTemplate is invalid".into()),
            message_expression: Some(
                "'ScopeTemplate \"' + variables.name + '\" is invalid: ' + \
                 variables.problems.join('; ')"
                    .into(),
            ),
            reason: Some("Invalid".into()),
        },
        Validation {
            expression: "variables.bypassed || size(variables.notHeld) == 0".into(),
            message: Some(
                "the ScopeTemplate grants RBAC permissions its author does not hold".into(),
            ),
            message_expression: Some(format!(
                "'ScopeTemplate \"' + variables.name + '\": ' + {user} + ' is attempting to grant \
                 RBAC permissions not currently held cluster-wide through oria, which creates \
                 these ClusterRoles with its own escalate permission: the rules of ' + \
                 variables.notHeld.map(n, '\"' + n + '\"').join(', ') + '. Remove those rules \
                 from the template, or have it created by someone who holds them cluster-wide or \
                 may escalate clusterroles'",
                user = user_text(),
            )),
            reason: Some("Forbidden".into()),
        },
    ];
    let policy = BoundPolicy::new(
        "olm-guard-scope-rbac-templates",
        RULE,
        "ScopeTemplates oria can create, granting nothing their author does not hold",
        PolicySpec {
            failure_policy: "Fail".into(),
            param_kind: None,
            match_constraints: MatchResources {
                resource_rules: GROUPS
                    .iter()
                    .map(|group| rule_for(group, "scopetemplates", &["CREATE", "UPDATE"]))
                    .collect(),
            },
            match_conditions: Vec::new(),
            variables,
            validations,
        },
        &["Deny"],
    );
    Ok(Native {
        rule: RULE,
        policies: vec![policy],
        schema_patches: Vec::new(),
        checks: CHECKS,
    })
}
