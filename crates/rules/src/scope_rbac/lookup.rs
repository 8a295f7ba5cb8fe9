//! The cluster lookups both checks make: the ScopeTemplate an instance
//! names, and the RBAC rules a user holds.

use olm_guard_core::protocol::{GetResourceRequest, ListAllResourcesRequest};
use olm_guard_core::{Cluster, ClusterExt, ContextError, ObjectMeta, UserInfo};
use olm_guard_olm::scope::{self, SCOPE_TEMPLATE};
use olm_guard_rbac::PolicyRule;
use olm_guard_rbac::cluster::Wanted;
use serde_json::Value;

/// The template a ScopeInstance names, in the instance's own API group, or
/// `None` when it does not exist. Kubewarden reports a missing object as an
/// error like any failed lookup, so a failed get is confirmed by a list:
/// only a list that answers without the template means "not found", and a
/// host that cannot answer still fails closed.
pub(super) fn find_template(
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

/// The user's rules in `namespace` (`""`: cluster-wide, ClusterRoleBindings
/// only), as the API server resolves them (kubernetes
/// `pkg/registry/rbac/validation/rule.go`, `DefaultRuleResolver.VisitRulesFor`).
pub(super) fn rules_held(
    cluster: &dyn Cluster,
    user: &UserInfo,
    namespace: &str,
) -> Result<Vec<PolicyRule>, ContextError> {
    let wanted = Wanted {
        user,
        selected_by: &[],
        aggregated: false,
    };
    Ok(olm_guard_rbac::cluster::load(cluster, namespace, &wanted)?.rules_for(user, namespace))
}

pub(super) fn rbac_lookup(namespace: &str) -> String {
    if namespace.is_empty() {
        "the cluster's RBAC (ClusterRoles, ClusterRoleBindings)".to_string()
    } else {
        format!(
            "the RBAC of namespace \"{namespace}\" (ClusterRoles, ClusterRoleBindings, Roles, RoleBindings)"
        )
    }
}
