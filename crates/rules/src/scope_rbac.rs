//! scope-rbac: oria must not grant on a user's behalf what the user could not
//! grant directly (contracts.md "scope-rbac"; domain.md §5, §3).
//!
//! The oria operator holds `escalate` and `bind` on clusterroles, so without
//! this policy anyone allowed to create a ScopeTemplate or a ScopeInstance
//! could have it create any ClusterRole and bind it anywhere: a confused
//! deputy. The checks mirror the API server's own escalation checks for the
//! objects oria creates:
//! - a ScopeTemplate becomes ClusterRoles, so its author needs what a
//!   ClusterRole author needs (§3.4): `system:masters`, cluster-wide
//!   `escalate` on clusterroles, or cluster-wide rules covering each entry;
//! - a ScopeInstance becomes bindings, so its author needs what a binding
//!   author needs (`BindingAuthorized`, §3.4) in every target: `bind` on the
//!   ClusterRole there, or rules there covering the ClusterRole's rules.
//!
//! Shape checks (names, ServiceAccount namespaces, cluster-scoped rules)
//! apply to everyone, `system:masters` included: they are about objects oria
//! cannot reconcile as intended, not about privilege.

use olm_guard_core::protocol::{GetResourceRequest, ListAllResourcesRequest, ResourceAttributes};
use olm_guard_core::{
    AdmissionRequest, Cluster, ClusterExt, ContextError, ObjectMeta, Operation, PolicySettings,
    UserInfo, Verdict,
};
use olm_guard_olm::scope::{
    self, ClusterRoleTemplate, SCOPE_INSTANCE, SCOPE_TEMPLATE, ScopeInstance, ScopeTemplate,
};
use olm_guard_rbac::{PolicyRule, RBAC_GROUP, SYSTEM_MASTERS};
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// The seed's open question, answered "no": ScopeTemplate rules may not
    /// name cluster-scoped resources or non-resource URLs.
    pub forbid_cluster_scoped_resources: bool,
    /// Accept a ScopeInstance whose ScopeTemplate does not exist yet (the
    /// seed's create-the-instance-first workflow). Its bindings are then not
    /// checked: whoever creates the template later decides what they grant.
    pub allow_pending_template: bool,
}

impl PolicySettings for Settings {}

pub fn validate(request: &AdmissionRequest, settings: &Settings, cluster: &dyn Cluster) -> Verdict {
    if !matches!(request.operation, Operation::Create | Operation::Update) {
        return Verdict::accept();
    }
    for group in scope::GROUPS {
        if request.targets(group, SCOPE_TEMPLATE) {
            return validate_template(request, settings, cluster);
        }
        if request.targets(group, SCOPE_INSTANCE) {
            return validate_instance(request, group, settings, cluster);
        }
    }
    Verdict::accept()
}

// ---------------------------------------------------------------- ScopeTemplate

fn validate_template(
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Verdict {
    let template = match ScopeTemplate::from_object(&request.object) {
        Ok(template) => template,
        Err(e) => {
            return Verdict::bad_request(format!(
                "ScopeTemplate \"{}\" cannot be read: {e}",
                request.name
            ));
        }
    };
    let name = display_name(&template.metadata, request);
    let entries = &template.spec.cluster_roles;

    let mut problems: Vec<String> = entries
        .iter()
        .enumerate()
        .flat_map(|(index, entry)| entry_problems(index, entry))
        .collect();
    if settings.forbid_cluster_scoped_resources {
        let cluster_scoped: Vec<String> = entries
            .iter()
            .enumerate()
            .flat_map(|(index, entry)| cluster_scoped_grants(index, entry))
            .collect();
        if !cluster_scoped.is_empty() {
            problems.push(format!(
                "{}. Setting forbidClusterScopedResources is on: oria binds these ClusterRoles \
                 with RoleBindings, which cannot grant cluster-scoped access, or, for a ScopeInstance \
                 without namespaces, with a ClusterRoleBinding that grants it cluster-wide; remove \
                 them from the rules (name the namespaced resources the operator needs instead of \
                 \"*\")",
                cluster_scoped.join("; ")
            ));
        }
    }
    if !problems.is_empty() {
        return Verdict::deny(format!(
            "ScopeTemplate \"{name}\" is invalid: {}",
            problems.join("; ")
        ));
    }

    let user = &request.user_info;
    if user.in_group(SYSTEM_MASTERS) {
        return Verdict::accept();
    }
    // Unrestricted by name: a ScopeTemplate creates ClusterRoles of any name,
    // as a ClusterRole CREATE (no name yet) does upstream.
    let escalate = ResourceAttributes::new("escalate", RBAC_GROUP, "clusterroles");
    match cluster.authorized(user, escalate) {
        Ok(true) => return Verdict::accept(),
        Ok(false) => {}
        Err(e) => return Verdict::context_unavailable("the user's escalate permission (can_i)", e),
    }
    let held = match rules_held(cluster, user, "") {
        Ok(held) => held,
        Err(e) => return Verdict::context_unavailable(&rbac_lookup(""), e),
    };
    let uncovered: Vec<String> = entries
        .iter()
        .enumerate()
        .filter_map(|(index, entry)| {
            olm_guard_rbac::covers(&held, &entry.rules)
                .err()
                .map(|missing| format!("{} needs {}", entry.describe(index), rules_text(&missing)))
        })
        .collect();
    if uncovered.is_empty() {
        return Verdict::accept();
    }
    Verdict::deny(format!(
        "ScopeTemplate \"{name}\": {} is attempting to grant RBAC permissions not currently held \
         cluster-wide through oria, which creates these ClusterRoles with its own escalate \
         permission: {}. Remove those rules from the template, or have it created by someone who \
         holds them cluster-wide or may escalate clusterroles",
        user.describe(),
        uncovered.join("; ")
    ))
}

/// Shape problems of one entry that oria could not reconcile as intended.
fn entry_problems(index: usize, entry: &ClusterRoleTemplate) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(why) = scope::cluster_role_name_problem(&entry.generate_name) {
        problems.push(format!(
            "spec.clusterRoles[{index}].generateName is not a valid ClusterRole name ({why}): \
             oria creates a ClusterRole named exactly this, so set it to a name such as \
             \"my-operator-manager\" without '/' or '%'"
        ));
    }
    for (position, subject) in entry.subjects.iter().enumerate() {
        if subject.kind == "ServiceAccount" && subject.namespace.is_empty() {
            problems.push(format!(
                "spec.clusterRoles[{index}].subjects[{position}] (ServiceAccount \"{}\") has no \
                 namespace: set spec.clusterRoles[{index}].subjects[{position}].namespace to the \
                 ServiceAccount's namespace (without it a ClusterRoleBinding binds no one, and \
                 each RoleBinding would bind a different ServiceAccount of its own namespace)",
                subject.name
            ));
        }
    }
    problems
}

/// Built-in resources Kubernetes serves cluster-scoped, plus those of the
/// operator-framework and Kubewarden APIs this project deals with. A rule
/// can only be judged by name (a template may be created before its CRDs),
/// so other cluster-scoped custom resources are not recognised; a `*`
/// resource may match any of them and counts as cluster-scoped.
const CLUSTER_SCOPED: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "namespaces",
            "nodes",
            "persistentvolumes",
            "componentstatuses",
        ],
    ),
    (
        "admissionregistration.k8s.io",
        &[
            "mutatingwebhookconfigurations",
            "validatingwebhookconfigurations",
            "validatingadmissionpolicies",
            "validatingadmissionpolicybindings",
            "mutatingadmissionpolicies",
            "mutatingadmissionpolicybindings",
        ],
    ),
    ("apiextensions.k8s.io", &["customresourcedefinitions"]),
    ("apiregistration.k8s.io", &["apiservices"]),
    (
        "authentication.k8s.io",
        &["tokenreviews", "selfsubjectreviews"],
    ),
    (
        "authorization.k8s.io",
        &[
            "subjectaccessreviews",
            "selfsubjectaccessreviews",
            "selfsubjectrulesreviews",
        ],
    ),
    (
        "certificates.k8s.io",
        &["certificatesigningrequests", "clustertrustbundles"],
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        &["flowschemas", "prioritylevelconfigurations"],
    ),
    ("internal.apiserver.k8s.io", &["storageversions"]),
    (
        "networking.k8s.io",
        &["ingressclasses", "ipaddresses", "servicecidrs"],
    ),
    ("node.k8s.io", &["runtimeclasses"]),
    (
        "rbac.authorization.k8s.io",
        &["clusterroles", "clusterrolebindings"],
    ),
    ("resource.k8s.io", &["deviceclasses", "resourceslices"]),
    ("scheduling.k8s.io", &["priorityclasses"]),
    (
        "storage.k8s.io",
        &[
            "csidrivers",
            "csinodes",
            "storageclasses",
            "volumeattachments",
            "volumeattributesclasses",
        ],
    ),
    ("storagemigration.k8s.io", &["storageversionmigrations"]),
    ("metrics.k8s.io", &["nodes"]),
    (
        "operators.coreos.com",
        &[
            "operators",
            "olmconfigs",
            "scopetemplates",
            "scopeinstances",
        ],
    ),
    (
        "operators.io.operator-framework",
        &["scopetemplates", "scopeinstances"],
    ),
    (
        "olm.operatorframework.io",
        &[
            "clusterextensions",
            "clustercatalogs",
            "clusterobjectsets",
            "clusterextensionrevisions",
        ],
    ),
    (
        "policies.kubewarden.io",
        &[
            "clusteradmissionpolicies",
            "clusteradmissionpolicygroups",
            "policyservers",
        ],
    ),
];

/// Whether `resource` (possibly `parent/subresource`) of `group` may be a
/// cluster-scoped resource. `*` groups match every group of the list.
fn is_cluster_scoped(group: &str, resource: &str) -> bool {
    let parent = resource.split('/').next().unwrap_or(resource);
    parent == "*"
        || CLUSTER_SCOPED.iter().any(|(known_group, resources)| {
            (group == "*" || group == *known_group) && resources.contains(&parent)
        })
}

/// What each rule of the entry grants on cluster-scoped resources or
/// non-resource URLs, one line per rule.
fn cluster_scoped_grants(index: usize, entry: &ClusterRoleTemplate) -> Vec<String> {
    entry
        .rules
        .iter()
        .enumerate()
        .filter_map(|(position, rule)| {
            let mut named = Vec::new();
            let mut resources: Vec<&str> = rule
                .resources
                .iter()
                .filter(|resource| rule.api_groups.iter().any(|g| is_cluster_scoped(g, resource)))
                .map(String::as_str)
                .collect();
            resources.dedup();
            if !resources.is_empty() {
                named.push(format!("cluster-scoped resources {}", resources.join(", ")));
            }
            if !rule.non_resource_urls.is_empty() {
                named.push(format!("non-resource URLs {}", rule.non_resource_urls.join(", ")));
            }
            (!named.is_empty()).then(|| {
                format!(
                    "spec.clusterRoles[{index}].rules[{position}] (of ClusterRole \"{}\") grants {}",
                    entry.generate_name,
                    named.join(" and ")
                )
            })
        })
        .collect()
}

// ---------------------------------------------------------------- ScopeInstance

fn validate_instance(
    request: &AdmissionRequest,
    group: &str,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Verdict {
    let instance = match ScopeInstance::from_object(&request.object) {
        Ok(instance) => instance,
        Err(e) => {
            return Verdict::bad_request(format!(
                "ScopeInstance \"{}\" cannot be read: {e}",
                request.name
            ));
        }
    };
    let name = display_name(&instance.metadata, request);
    let template_name = &instance.spec.scope_template_name;
    if template_name.is_empty() {
        return Verdict::deny(format!(
            "ScopeInstance \"{name}\": spec.scopeTemplateName is required: set it to the name of \
             the ScopeTemplate whose ClusterRoles this instance binds"
        ));
    }
    let bad_namespaces: Vec<String> = instance
        .spec
        .namespaces
        .iter()
        .enumerate()
        .filter_map(|(index, namespace)| {
            scope::namespace_name_problem(namespace).map(|why| {
                format!("spec.namespaces[{index}] \"{namespace}\" is not a namespace name ({why})")
            })
        })
        .collect();
    if !bad_namespaces.is_empty() {
        return Verdict::deny(format!(
            "ScopeInstance \"{name}\": {}; list existing namespace names, or leave spec.namespaces \
             empty to bind cluster-wide",
            bad_namespaces.join("; ")
        ));
    }

    let template = match find_template(cluster, group, template_name) {
        Ok(Some(object)) => match ScopeTemplate::from_object(&object) {
            Ok(template) => template,
            Err(e) => {
                return Verdict::context_unavailable(
                    &format!("ScopeTemplate \"{template_name}\""),
                    format!("it cannot be read: {e}"),
                );
            }
        },
        Ok(None) if settings.allow_pending_template => {
            return Verdict::accept().with_warning(format!(
                "ScopeTemplate \"{template_name}\" ({}) does not exist yet; ScopeInstance \
                 \"{name}\" was accepted without checking its bindings because \
                 allowPendingTemplate is set, so whoever creates that template decides what \
                 this instance grants",
                scope::api_version(group)
            ));
        }
        Ok(None) => {
            return Verdict::deny(format!(
                "ScopeTemplateNotFound: ScopeInstance \"{name}\" names ScopeTemplate \
                 \"{template_name}\" in spec.scopeTemplateName, which does not exist in {}, so \
                 the bindings it asks for cannot be checked; create the ScopeTemplate first, or \
                 correct spec.scopeTemplateName",
                scope::api_version(group)
            ));
        }
        Err(e) => {
            return Verdict::context_unavailable(
                &format!(
                    "ScopeTemplate \"{template_name}\" ({})",
                    scope::api_version(group)
                ),
                e,
            );
        }
    };

    let user = &request.user_info;
    if user.in_group(SYSTEM_MASTERS) {
        return Verdict::accept();
    }
    let mut refused = Vec::new();
    for target in targets(&instance) {
        match unbindable_entries(cluster, user, &template, target) {
            Ok(entries) => refused.extend(entries),
            Err(verdict) => return verdict,
        }
    }
    if refused.is_empty() {
        return Verdict::accept();
    }
    let fix = if instance.spec.namespaces.is_empty() {
        "Get verb bind on those ClusterRoles cluster-wide (or the missing permissions through a \
         ClusterRoleBinding), or list in spec.namespaces only the namespaces where you may bind them"
    } else {
        "Get verb bind on those ClusterRoles (or the missing permissions) in those namespaces, or \
         remove the namespaces from spec.namespaces"
    };
    Verdict::deny(format!(
        "ScopeInstance \"{name}\" asks oria, which binds with its own bind permission, to bind \
         ClusterRoles of ScopeTemplate \"{template_name}\" that {} may not bind: {}. {fix}",
        user.describe(),
        refused.join("; ")
    ))
}

/// Where oria binds: each listed namespace, or the whole cluster (`""`)
/// through a ClusterRoleBinding when none is listed. Duplicates bind once.
fn targets(instance: &ScopeInstance) -> Vec<&str> {
    let mut targets: Vec<&str> = Vec::new();
    for namespace in &instance.spec.namespaces {
        if !targets.contains(&namespace.as_str()) {
            targets.push(namespace);
        }
    }
    if targets.is_empty() {
        targets.push("");
    }
    targets
}

/// The template entries the user may not bind in `target`, described for
/// the message. RBAC is loaded at most once per target, and only when some
/// entry is not already allowed by `bind`.
fn unbindable_entries(
    cluster: &dyn Cluster,
    user: &UserInfo,
    template: &ScopeTemplate,
    target: &str,
) -> Result<Vec<String>, Verdict> {
    let mut held: Option<Vec<PolicyRule>> = None;
    let mut refused = Vec::new();
    for (index, entry) in template.spec.cluster_roles.iter().enumerate() {
        let bind = ResourceAttributes::new("bind", RBAC_GROUP, "clusterroles")
            .name(&entry.generate_name)
            .namespace(target);
        match cluster.authorized(user, bind) {
            Ok(true) => continue,
            Ok(false) => {}
            Err(e) => {
                return Err(Verdict::context_unavailable(
                    &format!("the user's bind permission {} (can_i)", where_text(target)),
                    e,
                ));
            }
        }
        let held = match &mut held {
            Some(held) => held,
            None => match rules_held(cluster, user, target) {
                Ok(rules) => held.insert(rules),
                Err(e) => return Err(Verdict::context_unavailable(&rbac_lookup(target), e)),
            },
        };
        if let Err(missing) = olm_guard_rbac::covers(held, &entry.rules) {
            refused.push(format!(
                "{} of the template {} (not authorized to bind clusterroles \"{}\" there, and \
                 missing {})",
                entry.describe(index),
                where_text(target),
                entry.generate_name,
                rules_text(&missing)
            ));
        }
    }
    Ok(refused)
}

/// The template a ScopeInstance names, in the instance's own API group, or
/// `None` when it does not exist. Kubewarden reports a missing object as an
/// error like any failed lookup, so a failed get is confirmed by a list:
/// only a list that answers without the template means "not found", and a
/// host that cannot answer still fails closed.
fn find_template(
    cluster: &dyn Cluster,
    group: &str,
    name: &str,
) -> Result<Option<Value>, ContextError> {
    let api_version = scope::api_version(group);
    let get = GetResourceRequest {
        api_version: api_version.clone(),
        kind: SCOPE_TEMPLATE.to_string(),
        name: name.to_string(),
        ..GetResourceRequest::default()
    };
    let get_error = match cluster.get_as::<Value>(&get) {
        Ok(object) => return Ok(Some(object)),
        Err(e) => e,
    };
    // Unfiltered: Kubewarden keeps one watch per distinct list request, so
    // one list of all templates serves every instance.
    let all = ListAllResourcesRequest::new(&api_version, SCOPE_TEMPLATE);
    let templates: Vec<Value> = cluster.list_all_as(&all).map_err(|list_error| {
        let message = format!(
            "getting it failed ({get_error}) and listing ScopeTemplates failed ({list_error})"
        );
        list_error.with_message(message)
    })?;
    Ok(templates
        .into_iter()
        .find(|t| ObjectMeta::of(t).name == name))
}

// ---------------------------------------------------------------- shared

/// The user's rules in `namespace` (`""`: cluster-wide, ClusterRoleBindings
/// only), as the API server resolves them (§3.2).
fn rules_held(
    cluster: &dyn Cluster,
    user: &UserInfo,
    namespace: &str,
) -> Result<Vec<PolicyRule>, ContextError> {
    Ok(olm_guard_rbac::cluster::load(cluster, namespace)?.rules_for(user, namespace))
}

fn rbac_lookup(namespace: &str) -> String {
    if namespace.is_empty() {
        "the cluster's RBAC (ClusterRoles, ClusterRoleBindings)".to_string()
    } else {
        format!(
            "the RBAC of namespace \"{namespace}\" (ClusterRoles, ClusterRoleBindings, Roles, RoleBindings)"
        )
    }
}

fn where_text(target: &str) -> String {
    if target.is_empty() {
        "cluster-wide (spec.namespaces is empty, so oria creates a ClusterRoleBinding)".to_string()
    } else {
        format!("in namespace \"{target}\"")
    }
}

/// Rules in the API server's compact RBAC text, as a Go-style list
/// (`[{..} {..}]`) so a rule's own commas stay unambiguous.
fn rules_text(rules: &[PolicyRule]) -> String {
    let rules: Vec<String> = olm_guard_rbac::compact::compact(rules)
        .iter()
        .map(ToString::to_string)
        .collect();
    format!("[{}]", rules.join(" "))
}

/// The object's name for messages: `metadata.name`, else the request's,
/// else the `generateName` prefix a CREATE may carry instead.
fn display_name<'a>(meta: &'a ObjectMeta, request: &'a AdmissionRequest) -> &'a str {
    [&meta.name, &request.name, &meta.generate_name]
        .into_iter()
        .find(|name| !name.is_empty())
        .map_or("", String::as_str)
}

#[cfg(test)]
mod tests {
    use olm_guard_core::NoCluster;
    use olm_guard_snapshot::Snapshot;
    use serde_json::json;

    use super::*;
    use crate::testing::{Probe, admission_request, assert_allowed, message, snapshot};

    /// RBAC of the tests: oria's real manager ClusterRole bound to its
    /// ServiceAccount, and users holding the tutorial template's rules in
    /// different places.
    const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: manager-role}
rules:
- apiGroups: [rbac.authorization.k8s.io]
  resources: [clusterrolebindings, rolebindings]
  verbs: [create, delete, get, list, patch, update, watch]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [clusterroles]
  verbs: [bind, create, delete, escalate, get, list, patch, update, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: oria-manager}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: manager-role}
subjects:
- {kind: ServiceAccount, name: oria-controller-manager, namespace: oria-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: memcached-admin}
rules:
- apiGroups: ["*"]
  resources: [deployments, memcacheds]
  verbs: [create, delete, get, list, patch, update, watch]
- apiGroups: [cache.example.com]
  resources: [memcacheds/finalizers, memcacheds/status]
  verbs: [get, patch, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-memcached}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: memcached-admin}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-memcached, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: memcached-admin}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: bind-manager-role}
rules:
- apiGroups: [rbac.authorization.k8s.io]
  resources: [clusterroles]
  resourceNames: [manager-role]
  verbs: [bind]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: carol-bind, namespace: team-b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bind-manager-role}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: escalator}
rules:
- apiGroups: [rbac.authorization.k8s.io]
  resources: [clusterroles]
  verbs: [escalate]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: dave-escalates}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: escalator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: dave}
"#;

    const ORIA_SA: &str = "system:serviceaccount:oria-system:oria-controller-manager";

    /// oria's docs/tutorial.md ScopeTemplate (shared/realworld/oria), in `group`.
    fn tutorial_template(group: &str) -> Value {
        let mut template: Value = serde_json::from_str(include_str!(
            "../../olm/tests/fixtures/oria-tutorial-scopetemplate.json"
        ))
        .unwrap();
        template["apiVersion"] = json!(scope::api_version(group));
        template
    }

    /// A template whose second entry asks for secrets nobody but masters holds.
    fn two_entry_template(group: &str) -> Value {
        let mut template = tutorial_template(group);
        template["metadata"]["name"] = json!("two-entries");
        template["spec"]["clusterRoles"]
            .as_array_mut()
            .unwrap()
            .push(json!({
                "generateName": "secret-reader",
                "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "watch", "list"]}],
                "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]
            }));
        template
    }

    fn cluster_with(templates: &[Value]) -> Snapshot {
        let mut snapshot = snapshot(&[RBAC]);
        for template in templates {
            snapshot.add(template.clone()).unwrap();
        }
        snapshot
    }

    fn user(name: &str) -> Value {
        let groups: Vec<&str> = match name {
            "root" => vec!["system:masters", "system:authenticated"],
            ORIA_SA => vec![
                "system:serviceaccounts",
                "system:serviceaccounts:oria-system",
                "system:authenticated",
            ],
            _ => vec!["system:authenticated"],
        };
        json!({"username": name, "groups": groups})
    }

    fn request(operation: &str, object: &Value, username: &str) -> AdmissionRequest {
        let api_version = object["apiVersion"]
            .as_str()
            .unwrap_or("operators.coreos.com/v1alpha1");
        let (group, version) = api_version.split_once('/').unwrap();
        let kind = object["kind"].as_str().unwrap_or("");
        admission_request(
            [group, version, kind],
            &format!("{}s", kind.to_lowercase()),
            json!({
                "name": object["metadata"]["name"],
                "operation": operation,
                "userInfo": user(username),
                "object": object,
            }),
        )
    }

    fn instance(group: &str, template: &str, namespaces: &[&str]) -> Value {
        json!({
            "apiVersion": scope::api_version(group),
            "kind": "ScopeInstance",
            "metadata": {"name": "instance"},
            "spec": {"scopeTemplateName": template, "namespaces": namespaces}
        })
    }

    fn settings() -> Settings {
        Settings::default()
    }

    fn forbid_cluster_scoped() -> Settings {
        Settings {
            forbid_cluster_scoped_resources: true,
            ..Settings::default()
        }
    }

    fn pending_allowed() -> Settings {
        Settings {
            allow_pending_template: true,
            ..Settings::default()
        }
    }

    #[track_caller]
    fn assert_denied(verdict: &Verdict, code: u16, parts: &[&str]) {
        crate::testing::assert_denied(verdict, parts);
        assert_eq!(verdict.code, Some(code), "{}", message(verdict));
    }

    // ------------------------------------------------------------ scope of the policy

    #[test]
    fn other_requests_pass_untouched() {
        let template = two_entry_template(scope::ORIA_GROUP);
        // No cluster at all: any lookup would fail closed, so acceptance
        // proves these requests are not looked at.
        let mut delete = request("DELETE", &template, "erin");
        delete.old_object = template.clone();
        assert_allowed(&validate(&delete, &settings(), &NoCluster));

        let connect = request("CONNECT", &template, "erin");
        assert_allowed(&validate(&connect, &settings(), &NoCluster));

        let mut status = request("UPDATE", &template, "erin");
        status.sub_resource = Some("status".into());
        assert_allowed(&validate(&status, &settings(), &NoCluster));

        let mut other_group = request("CREATE", &template, "erin");
        other_group.kind.group = "example.com".into();
        assert_allowed(&validate(&other_group, &settings(), &NoCluster));

        let mut other_kind = request("CREATE", &template, "erin");
        other_kind.kind.kind = "ClusterRole".into();
        assert_allowed(&validate(&other_kind, &settings(), &NoCluster));
    }

    #[test]
    fn settings_are_camel_case_and_strict() {
        let parsed: Settings = olm_guard_core::settings::parse(&json!({
            "forbidClusterScopedResources": true, "allowPendingTemplate": true
        }))
        .unwrap();
        assert_eq!(
            parsed,
            Settings {
                forbid_cluster_scoped_resources: true,
                allow_pending_template: true
            }
        );
        assert_eq!(
            olm_guard_core::settings::parse::<Settings>(&Value::Null).unwrap(),
            Settings::default()
        );
        let error =
            olm_guard_core::settings::parse::<Settings>(&json!({"forbidClusterScoped": true}))
                .unwrap_err();
        assert!(error.contains("forbidClusterScoped"), "{error}");
    }

    // ------------------------------------------------------------ ScopeTemplate

    #[test]
    fn template_needs_rules_held_cluster_wide() {
        let cluster = cluster_with(&[]);
        for group in scope::GROUPS {
            let template = tutorial_template(group);
            // alice holds the tutorial's rules through a ClusterRoleBinding.
            assert_allowed(&validate(
                &request("CREATE", &template, "alice"),
                &settings(),
                &cluster,
            ));
            assert_allowed(&validate(
                &request("UPDATE", &template, "alice"),
                &settings(),
                &cluster,
            ));
            // bob holds them only in team-a: ClusterRoles are cluster-wide.
            let verdict = validate(&request("CREATE", &template, "bob"), &settings(), &cluster);
            assert_denied(
                &verdict,
                403,
                &[
                    "ScopeTemplate \"scopetemplate-sample-manager\"",
                    "user \"bob\" (groups=[system:authenticated])",
                    "spec.clusterRoles[0] (\"manager-role\") needs",
                    r#"{APIGroups:["*"], Resources:["deployments"], Verbs:["create" "delete" "get" "list" "patch" "update" "watch"]}"#,
                    r#"{APIGroups:["cache.example.com"], Resources:["memcacheds/finalizers"], Verbs:["update"]}"#,
                ],
            );
            assert_denied(
                &validate(&request("UPDATE", &template, "erin"), &settings(), &cluster),
                403,
                &["user \"erin\""],
            );
        }
    }

    #[test]
    fn template_denial_names_only_the_uncovered_entry() {
        let cluster = cluster_with(&[]);
        let template = two_entry_template(scope::OLM_GROUP);
        let verdict = validate(
            &request("CREATE", &template, "alice"),
            &settings(),
            &cluster,
        );
        assert_denied(
            &verdict,
            403,
            &[
                "spec.clusterRoles[1] (\"secret-reader\") needs [{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"watch\" \"list\"]}]",
            ],
        );
        assert!(
            !message(&verdict).contains("manager-role"),
            "{}",
            message(&verdict)
        );
    }

    #[test]
    fn escalate_or_system_masters_may_create_any_template() {
        let cluster = cluster_with(&[]);
        let template = two_entry_template(scope::ORIA_GROUP);
        assert_allowed(&validate(
            &request("CREATE", &template, "dave"),
            &settings(),
            &cluster,
        ));
        assert_allowed(&validate(
            &request("CREATE", &template, ORIA_SA),
            &settings(),
            &cluster,
        ));
        // system:masters needs no lookup at all.
        assert_allowed(&validate(
            &request("CREATE", &template, "root"),
            &settings(),
            &NoCluster,
        ));
    }

    #[test]
    fn escalate_restricted_by_name_does_not_count() {
        // A ClusterRole CREATE has no name, so only an unrestricted escalate
        // lets oria create ClusterRoles of any name on the user's behalf.
        let mut cluster = cluster_with(&[]);
        cluster
            .add_yaml(
                r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: escalate-one}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], resourceNames: [manager-role], verbs: [escalate]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: frank-escalate-one}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: escalate-one}
subjects: [{kind: User, name: frank}]
"#,
            )
            .unwrap();
        let template = tutorial_template(scope::ORIA_GROUP);
        assert_denied(
            &validate(
                &request("CREATE", &template, "frank"),
                &settings(),
                &cluster,
            ),
            403,
            &["user \"frank\""],
        );
    }

    #[test]
    fn generate_name_must_be_a_cluster_role_name_even_for_masters() {
        for (bad, why) in [
            (json!(""), "it is empty"),
            (json!(null), "it is empty"),
            (json!("a/b"), "'/'"),
            (json!(".."), "\"..\" is not allowed"),
        ] {
            let mut template = tutorial_template(scope::ORIA_GROUP);
            template["spec"]["clusterRoles"][0]["generateName"] = bad;
            let verdict = validate(
                &request("CREATE", &template, "root"),
                &settings(),
                &NoCluster,
            );
            assert_denied(
                &verdict,
                403,
                &[
                    "spec.clusterRoles[0].generateName is not a valid ClusterRole name",
                    why,
                ],
            );
        }
        let mut template = tutorial_template(scope::ORIA_GROUP);
        template["spec"]["clusterRoles"][0]
            .as_object_mut()
            .unwrap()
            .remove("generateName");
        assert_denied(
            &validate(
                &request("CREATE", &template, "root"),
                &settings(),
                &NoCluster,
            ),
            403,
            &["generateName"],
        );
    }

    #[test]
    fn service_account_subjects_need_a_namespace() {
        let mut template = tutorial_template(scope::OLM_GROUP);
        template["spec"]["clusterRoles"][0]["subjects"] = json!([
            {"kind": "User", "name": "jane"},
            {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "name": "fooServiceAccount", "namespace": null}
        ]);
        let verdict = validate(
            &request("CREATE", &template, "root"),
            &settings(),
            &NoCluster,
        );
        assert_denied(
            &verdict,
            403,
            &[
                "spec.clusterRoles[0].subjects[2] (ServiceAccount \"fooServiceAccount\") has no namespace",
                "set spec.clusterRoles[0].subjects[2].namespace",
            ],
        );
        assert!(
            !message(&verdict).contains("subjects[0]")
                && !message(&verdict).contains("subjects[1]")
        );

        template["spec"]["clusterRoles"][0]["subjects"][2]["namespace"] = json!("foo");
        assert_allowed(&validate(
            &request("CREATE", &template, "root"),
            &settings(),
            &NoCluster,
        ));
    }

    #[test]
    fn shape_problems_are_reported_together() {
        let mut template = two_entry_template(scope::OLM_GROUP);
        template["spec"]["clusterRoles"][0]["generateName"] = json!("");
        template["spec"]["clusterRoles"][1]["subjects"][0]["namespace"] = json!("");
        let verdict = validate(
            &request("CREATE", &template, "root"),
            &settings(),
            &NoCluster,
        );
        assert_denied(
            &verdict,
            403,
            &[
                "spec.clusterRoles[0].generateName",
                "spec.clusterRoles[1].subjects[0]",
            ],
        );
    }

    #[test]
    fn cluster_scoped_resources_are_known_by_group_and_name() {
        assert!(is_cluster_scoped("", "nodes"));
        assert!(is_cluster_scoped("", "nodes/proxy"));
        assert!(is_cluster_scoped("", "namespaces"));
        assert!(is_cluster_scoped("*", "namespaces"));
        assert!(is_cluster_scoped(
            "rbac.authorization.k8s.io",
            "clusterroles"
        ));
        assert!(is_cluster_scoped(
            "operators.io.operator-framework",
            "scopetemplates"
        ));
        assert!(is_cluster_scoped("apps", "*"));
        assert!(is_cluster_scoped("", "*/status"));
        assert!(!is_cluster_scoped("", "pods"));
        assert!(!is_cluster_scoped("*", "deployments"));
        assert!(!is_cluster_scoped(
            "rbac.authorization.k8s.io",
            "rolebindings"
        ));
        // The resource name alone does not make it cluster-scoped.
        assert!(!is_cluster_scoped("example.com", "nodes"));
        assert!(!is_cluster_scoped("apps", "namespaces"));
    }

    #[test]
    fn forbid_cluster_scoped_resources_setting() {
        let cluster = cluster_with(&[]);
        let tutorial = tutorial_template(scope::ORIA_GROUP);
        // The tutorial only names namespaced resources.
        assert_allowed(&validate(
            &request("CREATE", &tutorial, "alice"),
            &forbid_cluster_scoped(),
            &cluster,
        ));

        let cases = [
            (
                json!({"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}),
                "cluster-scoped resources nodes",
            ),
            (
                json!({"apiGroups": ["*"], "resources": ["namespaces", "pods"], "verbs": ["get"]}),
                "cluster-scoped resources namespaces",
            ),
            (
                json!({"apiGroups": ["apps"], "resources": ["*"], "verbs": ["get"]}),
                "cluster-scoped resources *",
            ),
            (
                json!({"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["get"]}),
                "clusterroles",
            ),
            (
                json!({"nonResourceURLs": ["/metrics"], "verbs": ["get"]}),
                "non-resource URLs /metrics",
            ),
        ];
        for (rule, expected) in cases {
            let mut template = tutorial.clone();
            template["spec"]["clusterRoles"][0]["rules"]
                .as_array_mut()
                .unwrap()
                .push(rule);
            // Even system:masters: it is about what oria would create.
            let verdict = validate(
                &request("CREATE", &template, "root"),
                &forbid_cluster_scoped(),
                &NoCluster,
            );
            assert_denied(
                &verdict,
                403,
                &[
                    "spec.clusterRoles[0].rules[3] (of ClusterRole \"manager-role\") grants",
                    expected,
                    "forbidClusterScopedResources",
                ],
            );
            assert!(!message(&verdict).contains("pods"), "{}", message(&verdict));
            // Off by default.
            assert_allowed(&validate(
                &request("CREATE", &template, "root"),
                &settings(),
                &NoCluster,
            ));
        }
    }

    #[test]
    fn unreadable_templates_are_bad_requests_naming_the_field() {
        let cases = [
            (
                json!({"spec": {"clusterRoles": "manager-role"}}),
                "spec.clusterRoles has the wrong type",
            ),
            (
                json!({"spec": {"clusterRoles": [{"rules": {"verbs": ["get"]}}]}}),
                "spec.clusterRoles[0].rules has the wrong type",
            ),
            (
                json!({"spec": {"clusterRoles": [{"subjects": [{"kind": 3}]}]}}),
                "spec.clusterRoles[0].subjects[0].kind has the wrong type",
            ),
            (json!({"spec": "manager-role"}), "spec has the wrong type"),
        ];
        for (object, expected) in cases {
            let mut object = object;
            object["apiVersion"] = json!("operators.coreos.com/v1alpha1");
            object["kind"] = json!("ScopeTemplate");
            let verdict = validate(&request("CREATE", &object, "root"), &settings(), &NoCluster);
            assert_denied(
                &verdict,
                400,
                &["ScopeTemplate", "cannot be read", expected],
            );
        }
        let mut missing = request("CREATE", &tutorial_template(scope::OLM_GROUP), "root");
        missing.object = Value::Null;
        assert_denied(
            &validate(&missing, &settings(), &NoCluster),
            400,
            &["not a JSON object"],
        );
    }

    #[test]
    fn template_checks_fail_closed() {
        let snapshot = cluster_with(&[]);
        let template = tutorial_template(scope::ORIA_GROUP);
        let cluster = Probe::new(&snapshot).failing_can_i("SubjectAccessReview refused");
        assert_denied(
            &validate(
                &request("CREATE", &template, "alice"),
                &settings(),
                &cluster,
            ),
            500,
            &["escalate", "SubjectAccessReview refused", "fails closed"],
        );
        let cluster = Probe::new(&snapshot).failing_lists("list refused");
        assert_denied(
            &validate(
                &request("CREATE", &template, "alice"),
                &settings(),
                &cluster,
            ),
            500,
            &["the cluster's RBAC", "list refused"],
        );
    }

    // ------------------------------------------------------------ ScopeInstance

    #[test]
    fn instance_needs_its_template_in_the_same_group() {
        let cluster = cluster_with(&[tutorial_template(scope::ORIA_GROUP)]);
        let missing = instance(scope::ORIA_GROUP, "nope", &[]);
        let verdict = validate(&request("CREATE", &missing, "root"), &settings(), &cluster);
        assert_denied(
            &verdict,
            403,
            &[
                "ScopeTemplateNotFound",
                "ScopeTemplate \"nope\"",
                "spec.scopeTemplateName",
                "operators.io.operator-framework/v1alpha1",
                "create the ScopeTemplate first",
            ],
        );
        // The template exists only in the other API group.
        let other_group = instance(scope::OLM_GROUP, "scopetemplate-sample-manager", &[]);
        assert_denied(
            &validate(
                &request("CREATE", &other_group, "root"),
                &settings(),
                &cluster,
            ),
            403,
            &["ScopeTemplateNotFound", "operators.coreos.com/v1alpha1"],
        );
        let same_group = instance(scope::ORIA_GROUP, "scopetemplate-sample-manager", &[]);
        assert_allowed(&validate(
            &request("CREATE", &same_group, "root"),
            &settings(),
            &cluster,
        ));
    }

    #[test]
    fn allow_pending_template_accepts_with_a_warning() {
        let cluster = cluster_with(&[]);
        let pending = instance(scope::OLM_GROUP, "foo", &["foo", "bar"]);
        let verdict = validate(
            &request("CREATE", &pending, "erin"),
            &pending_allowed(),
            &cluster,
        );
        assert_allowed(&verdict);
        assert_eq!(verdict.warnings.len(), 1);
        assert!(
            verdict.warnings[0].contains("ScopeTemplate \"foo\""),
            "{:?}",
            verdict.warnings
        );
        assert!(
            verdict.warnings[0].contains("allowPendingTemplate"),
            "{:?}",
            verdict.warnings
        );

        // Once the template exists, the bindings are checked as usual.
        let cluster = cluster_with(&[tutorial_template(scope::OLM_GROUP)]);
        let real = instance(scope::OLM_GROUP, "scopetemplate-sample-manager", &["foo"]);
        assert_denied(
            &validate(
                &request("CREATE", &real, "erin"),
                &pending_allowed(),
                &cluster,
            ),
            403,
            &["user \"erin\""],
        );
    }

    #[test]
    fn instance_bind_checks_per_target() {
        for group in scope::GROUPS {
            let cluster = cluster_with(&[tutorial_template(group)]);
            let check = |user: &str, namespaces: &[&str]| {
                let object = instance(group, "scopetemplate-sample-manager", namespaces);
                validate(&request("CREATE", &object, user), &settings(), &cluster)
            };
            // alice holds the rules cluster-wide: anywhere is fine.
            assert_allowed(&check("alice", &[]));
            assert_allowed(&check("alice", &["team-a", "team-b"]));
            // bob holds them in team-a only.
            assert_allowed(&check("bob", &["team-a"]));
            let verdict = check("bob", &["team-a", "team-b"]);
            assert_denied(
                &verdict,
                403,
                &[
                    "ScopeInstance \"instance\"",
                    "ScopeTemplate \"scopetemplate-sample-manager\"",
                    "user \"bob\"",
                    "spec.clusterRoles[0] (\"manager-role\") of the template in namespace \"team-b\"",
                    "not authorized to bind clusterroles \"manager-role\" there",
                    r#"{APIGroups:["cache.example.com"], Resources:["memcacheds/status"], Verbs:["get" "patch" "update"]}"#,
                    "remove the namespaces from spec.namespaces",
                ],
            );
            assert!(
                !message(&verdict).contains("team-a"),
                "{}",
                message(&verdict)
            );
            assert_denied(
                &check("bob", &[]),
                403,
                &[
                    "cluster-wide (spec.namespaces is empty, so oria creates a ClusterRoleBinding)",
                    "list in spec.namespaces only the namespaces where you may bind them",
                ],
            );
            // carol may bind manager-role (by name) in team-b only.
            assert_allowed(&check("carol", &["team-b"]));
            assert_denied(
                &check("carol", &["team-a"]),
                403,
                &["in namespace \"team-a\""],
            );
            assert_denied(&check("carol", &[]), 403, &["cluster-wide"]);
            // oria itself holds bind; masters hold everything.
            assert_allowed(&check(ORIA_SA, &[]));
            assert_allowed(&check("root", &["anywhere"]));
            assert_denied(&check("erin", &["team-a"]), 403, &["user \"erin\""]);
            // UPDATE is checked like CREATE.
            let object = instance(group, "scopetemplate-sample-manager", &["team-b"]);
            assert_denied(
                &validate(&request("UPDATE", &object, "bob"), &settings(), &cluster),
                403,
                &["team-b"],
            );
        }
    }

    #[test]
    fn instance_denial_lists_every_entry_and_target() {
        let cluster = cluster_with(&[two_entry_template(scope::ORIA_GROUP)]);
        let object = instance(scope::ORIA_GROUP, "two-entries", &["team-a", "team-b"]);
        let verdict = validate(&request("CREATE", &object, "carol"), &settings(), &cluster);
        let text = message(&verdict);
        assert_denied(
            &verdict,
            403,
            &[
                "spec.clusterRoles[0] (\"manager-role\") of the template in namespace \"team-a\"",
                "spec.clusterRoles[1] (\"secret-reader\") of the template in namespace \"team-a\"",
                "spec.clusterRoles[1] (\"secret-reader\") of the template in namespace \"team-b\"",
            ],
        );
        // carol may bind manager-role in team-b.
        assert!(
            !text.contains("(\"manager-role\") of the template in namespace \"team-b\""),
            "{text}"
        );
    }

    #[test]
    fn rbac_is_loaded_once_per_target() {
        let snapshot = cluster_with(&[two_entry_template(scope::ORIA_GROUP)]);
        let cluster = Probe::new(&snapshot);
        let object = instance(
            scope::ORIA_GROUP,
            "two-entries",
            &["team-a", "team-b", "team-a"],
        );
        let verdict = validate(&request("CREATE", &object, "erin"), &settings(), &cluster);
        assert_denied(&verdict, 403, &["team-a", "team-b"]);
        // Two entries, two distinct targets: one RBAC load per target.
        assert_eq!(
            cluster.lists_of("ClusterRoleBinding"),
            2,
            "{:?}",
            cluster.listed_kinds()
        );
        assert_eq!(
            cluster.lists_of("RoleBinding"),
            2,
            "{:?}",
            cluster.listed_kinds()
        );

        // Nothing is loaded when bind already allows every entry.
        let cluster = Probe::new(&snapshot);
        assert_allowed(&validate(
            &request("CREATE", &object, ORIA_SA),
            &settings(),
            &cluster,
        ));
        assert_eq!(
            cluster.lists_of("ClusterRoleBinding"),
            0,
            "{:?}",
            cluster.listed_kinds()
        );
    }

    #[test]
    fn instance_fields_are_checked() {
        let cluster = cluster_with(&[tutorial_template(scope::OLM_GROUP)]);
        let no_template = instance(scope::OLM_GROUP, "", &[]);
        assert_denied(
            &validate(
                &request("CREATE", &no_template, "root"),
                &settings(),
                &cluster,
            ),
            403,
            &["spec.scopeTemplateName is required"],
        );
        let bad_namespace = instance(
            scope::OLM_GROUP,
            "scopetemplate-sample-manager",
            &["team-a", "", "Team_B"],
        );
        let verdict = validate(
            &request("CREATE", &bad_namespace, "root"),
            &settings(),
            &cluster,
        );
        assert_denied(
            &verdict,
            403,
            &[
                "spec.namespaces[1] \"\" is not a namespace name (it is empty)",
                "spec.namespaces[2] \"Team_B\"",
            ],
        );
        let mut wrong_type = instance(scope::OLM_GROUP, "x", &[]);
        wrong_type["spec"]["namespaces"] = json!("team-a");
        assert_denied(
            &validate(
                &request("CREATE", &wrong_type, "root"),
                &settings(),
                &cluster,
            ),
            400,
            &["spec.namespaces has the wrong type"],
        );
    }

    #[test]
    fn instance_lookups_fail_closed() {
        let snapshot = cluster_with(&[tutorial_template(scope::OLM_GROUP)]);
        let object = instance(
            scope::OLM_GROUP,
            "scopetemplate-sample-manager",
            &["team-a"],
        );
        let missing = instance(scope::OLM_GROUP, "nope", &["team-a"]);

        // get and list both fail: not "not found", even when pending is allowed.
        let cluster = Probe::new(&snapshot)
            .failing_get("connection reset")
            .failing_lists("list refused");
        for (object, settings) in [(&object, settings()), (&missing, pending_allowed())] {
            let verdict = validate(&request("CREATE", object, "bob"), &settings, &cluster);
            assert_denied(
                &verdict,
                500,
                &[
                    "ScopeTemplate",
                    "connection reset",
                    "list refused",
                    "fails closed",
                ],
            );
        }
        // A failed get confirmed by a list that has the template: checked normally.
        let cluster = Probe::new(&snapshot).failing_get("connection reset");
        assert_allowed(&validate(
            &request("CREATE", &object, "bob"),
            &settings(),
            &cluster,
        ));
        assert_denied(
            &validate(&request("CREATE", &missing, "bob"), &settings(), &cluster),
            403,
            &["ScopeTemplateNotFound"],
        );

        let cluster = Probe::new(&snapshot).failing_can_i("SubjectAccessReview refused");
        assert_denied(
            &validate(&request("CREATE", &object, "bob"), &settings(), &cluster),
            500,
            &[
                "bind permission in namespace \"team-a\"",
                "SubjectAccessReview refused",
            ],
        );

        // can_i answers, RBAC lists do not.
        assert_denied(
            &validate(
                &request("CREATE", &object, "bob"),
                &settings(),
                &Probe::new(&snapshot).failing_lists("list refused"),
            ),
            500,
            &["the RBAC of namespace \"team-a\"", "list refused"],
        );
    }

    #[test]
    fn a_stored_template_that_cannot_be_read_fails_closed() {
        let mut broken = tutorial_template(scope::OLM_GROUP);
        broken["spec"]["clusterRoles"] = json!("manager-role");
        let cluster = cluster_with(&[broken]);
        let object = instance(scope::OLM_GROUP, "scopetemplate-sample-manager", &[]);
        assert_denied(
            &validate(&request("CREATE", &object, "alice"), &settings(), &cluster),
            500,
            &[
                "ScopeTemplate \"scopetemplate-sample-manager\"",
                "spec.clusterRoles has the wrong type",
            ],
        );
    }

    #[test]
    fn messages_name_generated_objects_by_their_prefix() {
        let mut template = tutorial_template(scope::OLM_GROUP);
        template["metadata"] = json!({"generateName": "memcached-"});
        template["spec"]["clusterRoles"][0]["generateName"] = json!("");
        let verdict = validate(
            &request("CREATE", &template, "root"),
            &settings(),
            &NoCluster,
        );
        assert_denied(&verdict, 403, &["ScopeTemplate \"memcached-\" is invalid"]);
    }

    #[test]
    fn targets_are_the_namespaces_or_the_cluster() {
        let parse = |namespaces: &[&str]| {
            ScopeInstance::from_object(&instance(scope::OLM_GROUP, "t", namespaces)).unwrap()
        };
        assert_eq!(targets(&parse(&[])), [""]);
        assert_eq!(targets(&parse(&["a", "b", "a"])), ["a", "b"]);
    }
}
