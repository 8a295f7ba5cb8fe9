//! scope-rbac, natively, for ScopeTemplates (rules 1 to 4 of
//! `olm_guard_rules::scope_rbac`'s template half): each entry oria can
//! create, and no rule its author could not grant, checked atom by atom
//! through the authorizer as RBAC's `covers` checks them, as many atoms as
//! the API server's cost budget allows ([`MAX_ATOMS`]); a larger template
//! fails closed, saying so. ScopeInstances are the module's: their bindings
//! are judged against the ScopeTemplate they name, which CEL cannot read.

use olm_guard_olm::scope::{GROUPS, VERSION};
use olm_guard_rules::scope_rbac::{CLUSTER_SCOPED, Settings};

use super::{Check, Enforcement, GenerateError, Native, cel_string, user_text};
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
        "a ScopeTemplate from anyone else grants nothing they do not hold cluster-wide, for \
         templates of at most 26 rule atoms",
        Enforcement::Policy,
        "one authorizer check per rule atom (verb x group x resource x name, or verb x URL), \
         each in a variable of its own: the API server charges 350,000 per check (Kubernetes \
         1.32+) against 1,000,000 per expression and 10,000,000 per evaluation",
    ),
    Check::new(
        "a ScopeTemplate of more than 26 rule atoms from anyone else",
        Enforcement::ModuleOnly,
        "more authorizer checks than one evaluation may pay for; the native policy fails closed \
         and denies such a ScopeTemplate, saying so",
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
    let list = |r: &str, f: &str| format!("(has({r}.{f}) ? {r}.{f} : [])");
    let entries =
        "(has(object.spec) && has(object.spec.clusterRoles) ? object.spec.clusterRoles : [])";
    let generate_name = "(has(e.generateName) ? e.generateName : '')";
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
            "has(object.metadata.name) && object.metadata.name != '' ? object.metadata.name : \
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
             without \\'/\\' or \\'%\\''] : []) + {subjects}.filter(s, has(s.kind) && \
             s.kind == 'ServiceAccount' && (!has(s.namespace) || s.namespace == '')).map(s, \
             'spec.clusterRoles entry \"' + {generate_name} + '\": ServiceAccount subject \"' + \
             (has(s.name) ? s.name : '') + \
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
    // Every rule atom of every entry, as one string each (verb, group,
    // resource, name, URL, the entry's generateName, joined by a unit
    // separator): standard CEL has no flatten, so the nested lists are
    // joined and split. Each part is converted with string(): the object
    // is dyn, so its fields are too, and Kubernetes' compiler refuses a
    // list literal that mixes dyn and string (cel-go's
    // ValidateHomogeneousAggregateLiterals, in the base environment since
    // 1.29); the schema types them all as strings, so string() changes no
    // value.
    let names_or_none = format!(
        "(size({n}) == 0 ? [''] : {n})",
        n = list("r", "resourceNames")
    );
    variables.push(named(
        "atoms",
        &format!(
            "variables.entries.map(e, {rules}.map(r, {verbs}.map(v, {groups}.map(g, \
             {resources}.map(res, {names_or_none}.map(n, [string(v), string(g), string(res), \
             string(n), '', string({generate_name})].join('{US}')).join('{RS}')).join('{RS}'))\
             .join('{RS}') + '{RS}' + {urls}.map(u, [string(v), '', '', '', string(u), \
             string({generate_name})].join('{US}')).join('{RS}')).join('{RS}')).join('{RS}'))\
             .join('{RS}').split('{RS}').filter(a, a != '')",
            rules = list("e", "rules"),
            verbs = list("r", "verbs"),
            groups = list("r", "apiGroups"),
            resources = list("r", "resources"),
            urls = list("r", "nonResourceURLs"),
        ),
    ));
    // Each atom's fields, then one authorizer check per atom, each in its
    // own expression (one check is 350,000 of an expression's 1,000,000).
    for k in 0..MAX_ATOMS {
        variables.push(named(
            &format!("atom{k}"),
            &format!("size(variables.atoms) > {k} ? variables.atoms[{k}].split('{US}') : []"),
        ));
        variables.push(named(
            &format!("holds{k}"),
            &format!(
                "size(variables.atom{k}) == 0 || ({url} != '' ? \
                 authorizer.path({url}).check({verb}).allowed() : {resource_check})",
                url = atom_field(k, 4),
                verb = atom_field(k, 0),
                resource_check = resource_check(k),
            ),
        ));
    }
    // The denial naming each atom, for the messages (which read no
    // authorizer-backed variable).
    variables.push(named(
        "notHeld",
        &format!(
            "variables.atoms.map(a, a.split('{US}')).map(a, 'ScopeTemplate \"' + variables.name + \
             '\": ' + {user} + ' is attempting to grant RBAC permissions not currently held \
             cluster-wide through oria, which creates these ClusterRoles with its own escalate \
             permission: ' + {missing} + '. Remove those rules from the template, or have it \
             created by someone who holds them cluster-wide or may escalate clusterroles')",
            user = user_text(),
            missing = missing_atom("a"),
        ),
    ));
    let mut validations = vec![
        Validation {
            expression: "size(variables.problems) == 0".into(),
            message: Some("the ScopeTemplate is invalid".into()),
            message_expression: Some(
                "'ScopeTemplate \"' + variables.name + '\" is invalid: ' + \
                 variables.problems.join('; ')"
                    .into(),
            ),
            reason: Some("Forbidden".into()),
        },
        // Fails closed above what one evaluation may check.
        Validation {
            expression: format!("variables.bypassed || size(variables.atoms) <= {MAX_ATOMS}"),
            message: Some(format!(
                "natively, a ScopeTemplate of more than {MAX_ATOMS} rule atoms is accepted only \
                 from a requester who may escalate clusterroles"
            )),
            message_expression: Some(format!(
                "'ScopeTemplate \"' + variables.name + '\": ' + {user} + ' may not escalate \
                 clusterroles, and its rules grant ' + string(size(variables.atoms)) + ' \
                 permissions (verb x group x resource x name, or verb x URL): checking that you \
                 hold each takes one authorizer check, and the API server lets a policy make \
                 {MAX_ATOMS}. Natively a larger ScopeTemplate is accepted only from a requester \
                 who may escalate clusterroles (or system:masters): run the scope-rbac module, \
                 or have someone who may escalate clusterroles create it'",
                user = user_text(),
            )),
            reason: Some("Forbidden".into()),
        },
    ];
    // Rule 4, atom by atom: the first one the author does not hold names
    // itself.
    for k in 0..MAX_ATOMS {
        validations.push(Validation {
            expression: format!(
                "variables.bypassed || size(variables.atoms) > {MAX_ATOMS} || variables.holds{k}"
            ),
            message: Some(
                "the ScopeTemplate grants RBAC permissions its author does not hold cluster-wide"
                    .into(),
            ),
            message_expression: Some(format!(
                "size(variables.atom{k}) == 0 ? '' : variables.notHeld[{k}]"
            )),
            reason: Some("Forbidden".into()),
        });
    }
    let policy = BoundPolicy::new(
        "olm-guard-scope-rbac-templates",
        RULE,
        "ScopeTemplates oria can create, granting nothing their author does not hold",
        PolicySpec::fail_closed(
            MatchResources {
                resource_rules: GROUPS
                    .iter()
                    .map(|group| rule_for(group, VERSION, "scopetemplates", &["CREATE", "UPDATE"]))
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
        mutations: Vec::new(),
        mutation_previews: Vec::new(),
        checks: CHECKS,
    })
}

/// The most rule atoms the native policy checks through the authorizer:
/// with the `escalate` check, 27 checks of 350,000 fit the 10,000,000 one
/// evaluation may spend (Kubernetes 1.32+), with room for the rest.
pub const MAX_ATOMS: usize = 26;

/// The separators of [`generate`]'s atom strings: ASCII's unit and record
/// separators, which no RBAC verb, group, resource, name or URL holds.
const US: &str = "\\u001f";
const RS: &str = "\\u001e";

/// Field `i` of atom `k` (0 verb, 1 group, 2 resource, 3 name, 4 URL,
/// 5 entry).
fn atom_field(k: usize, i: usize) -> String {
    format!("variables.atom{k}[{i}]")
}

/// The authorizer check of resource atom `k`: a subresource (`pods/log`)
/// is asked as one, as RBAC's `covers` matches `*/log`.
fn resource_check(k: usize) -> String {
    let resource = atom_field(k, 2);
    format!(
        "authorizer.group({group}).resource({resource}.indexOf('/') >= 0 ? \
         {resource}.substring(0, {resource}.indexOf('/')) : {resource}).subresource(\
         {resource}.indexOf('/') >= 0 ? {resource}.substring({resource}.indexOf('/') + 1) : '')\
         .name({name}).check({verb}).allowed()",
        group = atom_field(k, 1),
        name = atom_field(k, 3),
        verb = atom_field(k, 0),
    )
}

/// An atom's fields (the CEL list `a`) as the module names a missing rule:
/// `spec.clusterRoles entry
/// "x" needs [{APIGroups:["g"], Resources:["r"], Verbs:["v"]}]`.
fn missing_atom(a: &str) -> String {
    let field = |i: usize| format!("{a}[{i}]");
    let (verb, group, resource, name, url, entry) =
        (field(0), field(1), field(2), field(3), field(4), field(5));
    format!(
        "('spec.clusterRoles entry \"' + {entry} + '\" needs [' + ({url} != '' ? \
         '{{NonResourceURLs:[\"' + {url} + '\"], Verbs:[\"' + {verb} + '\"]}}' : \
         '{{APIGroups:[\"' + {group} + '\"], Resources:[\"' + {resource} + '\"]' + \
         ({name} != '' ? ', ResourceNames:[\"' + {name} + '\"]' : '') + ', Verbs:[\"' + {verb} \
         + '\"]}}') + ']')"
    )
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

/// The rule atoms of a ScopeTemplate request's object as the policy counts
/// them: per rule, verbs x groups x resources x names (at least one), plus
/// verbs x non-resource URLs; 0 for an object that is no ScopeTemplate.
pub fn template_atoms(request: &serde_json::Value) -> usize {
    let object = request.get("object").unwrap_or(&serde_json::Value::Null);
    olm_guard_olm::scope::ScopeTemplate::from_object(object)
        .map(|template| {
            template
                .spec
                .cluster_roles
                .iter()
                .flat_map(|entry| &entry.rules)
                .map(|r| {
                    r.verbs.len()
                        * (r.api_groups.len() * r.resources.len() * r.resource_names.len().max(1)
                            + r.non_resource_urls.len())
                })
                .sum()
        })
        .unwrap_or(0)
}
