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
        "a ScopeTemplate from system:masters or a requester who may escalate clusterroles",
        Enforcement::Policy,
        "two facts of the request: its groups and one authorizer check",
    ),
    Check::new(
        "a ScopeTemplate from anyone else grants nothing they do not hold cluster-wide",
        Enforcement::ModuleOnly,
        "it takes one authorizer check per rule atom (verb x group x resource x name), and the \
         API server charges 350,000 per check against 1,000,000 per expression and 10,000,000 \
         per evaluation: two atoms per expression, 28 per template; the native policy fails \
         closed and denies such a ScopeTemplate",
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
        "(has(request.userInfo.groups) && 'system:masters' in \
         request.userInfo.groups) || \
         authorizer.group('rbac.authorization.k8s.io').resource('clusterroles')\
         .check('escalate').allowed()",
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
        // Fails closed: whether the author holds every rule needs one
        // authorizer check per rule atom, beyond what the API server lets
        // a policy spend; only an author who may grant anything passes.
        Validation {
            expression: "variables.bypassed".into(),
            message: Some(
                "natively, only a requester who may escalate clusterroles creates ScopeTemplates"
                    .into(),
            ),
            message_expression: Some(format!(
                "'ScopeTemplate \"' + variables.name + '\": ' + {user} + ' may not escalate \
                 clusterroles, and oria would create these ClusterRoles with its own escalate \
                 permission. Natively a ScopeTemplate is accepted only from a requester who may \
                 escalate clusterroles (or system:masters): whether you hold each of its rules \
                 takes one authorizer check per rule, more than the API server lets a policy \
                 make, and is checked by the scope-rbac module. Have someone who may escalate \
                 clusterroles create it, or run the module'",
                user = user_text(),
            )),
            reason: Some("Forbidden".into()),
        },
    ];
    let policy = BoundPolicy::new(
        "olm-guard-scope-rbac-templates",
        RULE,
        "ScopeTemplates oria can create, granting nothing their author does not hold",
        PolicySpec::fail_closed(
            MatchResources {
                resource_rules: GROUPS
                    .iter()
                    .map(|group| rule_for(group, "scopetemplates", &["CREATE", "UPDATE"]))
                    .collect(),
            },
            variables,
            validations,
        ),
        &["Deny"],
    );
    Ok(Native {
        rule: RULE,
        policies: vec![policy],
        schema_patches: Vec::new(),
        checks: CHECKS,
    })
}

/// Whether the author of a ScopeTemplate request is in system:masters or
/// may escalate clusterroles (asked of `cluster`'s authorizer): the
/// requests the native policy decides completely.
pub fn author_may_grant_anything(
    request: &serde_json::Value,
    cluster: &dyn olm_guard_core::Cluster,
) -> bool {
    use olm_guard_core::ClusterExt;
    use olm_guard_core::protocol::ResourceAttributes;
    let user: olm_guard_core::UserInfo = request
        .get("userInfo")
        .and_then(|u| serde_json::from_value(u.clone()).ok())
        .unwrap_or_default();
    user.groups.iter().any(|g| g == "system:masters")
        || cluster
            .authorized(
                &user,
                ResourceAttributes::new("escalate", olm_guard_rbac::RBAC_GROUP, "clusterroles"),
            )
            .unwrap_or(false)
}
