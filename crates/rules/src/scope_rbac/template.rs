//! ScopeTemplate rules 1 to 4: the shape of each entry, and what its author
//! must hold for oria to create the ClusterRoles on their behalf.

use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_core::{AdmissionRequest, Cluster, ClusterExt, Verdict};
use olm_guard_olm::scope::{self, ClusterRoleTemplate, ScopeTemplate};
use olm_guard_rbac::{RBAC_GROUP, SYSTEM_MASTERS};

use super::Settings;
use super::cluster_scoped::cluster_scoped_grants;
use super::lookup::{rbac_lookup, rules_held};
use super::messages::rules_text;
use crate::common::{display_name, read_or_bad_request};

pub(super) fn validate_template(
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Verdict {
    let read = ScopeTemplate::from_object(&request.object);
    let template = match read_or_bad_request(read, |e| {
        format!("ScopeTemplate \"{}\" cannot be read: {e}", request.name)
    }) {
        Ok(template) => template,
        Err(verdict) => return verdict,
    };
    let name = display_name(&template.metadata, request);
    let entries = &template.spec.cluster_roles;

    // Rules 1 and 2, and rule 3 when the setting is on: shape problems,
    // for everyone.
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

    // Rule 4: what the author must hold.
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
