//! The authorizer of a native policy's evaluation: the checks Kubernetes'
//! own admission code makes (`olm_guard_kube_harness::authorizer`)
//! answered from a scenario's snapshot, as the API server's RBAC
//! authorizer answers them on that cluster.

use std::sync::Arc;

use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_core::{ClusterExt, UserInfo};
use olm_guard_kube_harness::AuthorizerAnswer;
use olm_guard_snapshot::Snapshot;

/// A snapshot as the API server's authorizer.
pub struct SnapshotAuthorizer(pub Arc<Snapshot>);

impl SnapshotAuthorizer {
    /// Whether the user of `check` may do what it asks: a resource check
    /// through the snapshot's SubjectAccessReview answer, so that a
    /// scenario's injected lookup failures reach the policy as authorizer
    /// errors (`Err`, the error's text); a non-resource check (a `path`)
    /// through olm-guard's RBAC engine.
    pub fn answer(&self, check: &AuthorizerAnswer) -> Result<bool, String> {
        let user = UserInfo {
            username: check.user.clone(),
            groups: check.groups.clone(),
            ..UserInfo::default()
        };
        if !check.path.is_empty() {
            return Ok(self
                .0
                .rbac()
                .authorize_non_resource(&user, &check.verb, &check.path)
                .allowed);
        }
        let given = |text: &str| Some(text.to_string()).filter(|t| !t.is_empty());
        let attributes = ResourceAttributes {
            group: Some(check.api_group.clone()),
            resource: check.resource.clone(),
            subresource: given(&check.subresource),
            namespace: given(&check.namespace),
            name: given(&check.name),
            verb: check.verb.clone(),
            // Kubernetes' CEL authorizer library asks for every version
            // (k8s.io/apiserver `pkg/cel/library/authz.go`,
            // `resourceCheckCheck`).
            version: Some("*".into()),
        };
        self.0
            .authorized(&user, attributes)
            .map_err(|e| e.to_string())
    }
}
