//! Waiting until kube-apiserver's RBAC authorizer has seen the RBAC a test
//! just wrote.
//!
//! The authorizer decides from informer caches of Roles, RoleBindings,
//! ClusterRoles and ClusterRoleBindings (kubernetes
//! `plugin/pkg/auth/authorizer/rbac`, fed by the shared informers), which
//! follow the stored objects a moment later. A request or a
//! SubjectAccessReview sent right after a grant is written (or taken away)
//! can still be decided without it. Each informer applies its kind's
//! changes in the order they were stored, so a sentinel grant written after
//! the test's own shows when they are all seen: once the sentinel user may
//! do what only the sentinels grant, every earlier change of the four
//! kinds is in the authorizer's caches too.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

use super::{ClusterError, READY_WITHIN, TestCluster, request_error};

/// The user the sentinels grant to; no test's RBAC names it.
const SENTINEL_USER: &str = "olm-guard:rbac-sentinel";
/// The API group of the sentinels' rules; no server serves it.
const SENTINEL_GROUP: &str = "rbac-sentinel.olm-guard.test";
/// Where the namespaced sentinels live: a Namespace the server keeps.
const SENTINEL_NAMESPACE: &str = "default";

/// A fresh name for each round of sentinels, so that a round never meets
/// the one before it.
static ROUND: AtomicUsize = AtomicUsize::new(0);

impl TestCluster {
    /// Waits until the API server's RBAC authorizer decides with every
    /// change made so far to Roles, RoleBindings, ClusterRoles and
    /// ClusterRoleBindings: writes a sentinel of each kind, asks until the
    /// sentinel grants are in force, and deletes the sentinels again.
    pub fn wait_rbac_seen(&self) -> Result<(), ClusterError> {
        let round = ROUND.fetch_add(1, Ordering::Relaxed);
        let cluster_wide = format!("cluster-{round}");
        let namespaced = format!("namespace-{round}");
        let sentinels = sentinels(
            &format!("olm-guard-rbac-sentinel-{round}"),
            &cluster_wide,
            &namespaced,
        );
        // At once: the sentinels need only come after the test's own.
        let outcome = self.create_all(&sentinels, sentinels.len()).and_then(|()| {
            let started = Instant::now();
            while !(self.sentinel_may(&cluster_wide, None)?
                && self.sentinel_may(&namespaced, Some(SENTINEL_NAMESPACE))?)
            {
                if started.elapsed() > READY_WITHIN {
                    return Err(request_error(
                        "waiting for the RBAC authorizer",
                        format!("the sentinel grants are not in force after {READY_WITHIN:?}"),
                    ));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(())
        });
        for sentinel in &sentinels {
            self.delete_sentinel(sentinel)?;
        }
        outcome
    }

    /// Deletes a sentinel (nothing when it was never created). An RBAC
    /// object has no finalizer: it is gone when the delete is answered.
    fn delete_sentinel(&self, sentinel: &Value) -> Result<(), ClusterError> {
        let api = self.api_for(sentinel)?;
        let name = sentinel["metadata"]["name"].as_str().unwrap_or_default();
        match self
            .runtime
            .block_on(api.delete(name, &DeleteParams::default()))
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(request_error("deleting an RBAC sentinel", e)),
        }
    }

    /// Whether the authorizer lets the sentinel user `get` `resource` of
    /// the sentinels' group (in `namespace`), as a SubjectAccessReview.
    fn sentinel_may(&self, resource: &str, namespace: Option<&str>) -> Result<bool, ClusterError> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(SENTINEL_USER.to_string()),
                resource_attributes: Some(ResourceAttributes {
                    group: Some(SENTINEL_GROUP.to_string()),
                    resource: Some(resource.to_string()),
                    verb: Some("get".to_string()),
                    namespace: namespace.map(str::to_string),
                    ..ResourceAttributes::default()
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let answer = self
            .runtime
            .block_on(api.create(&PostParams::default(), &review))
            .map_err(|e| request_error("a SubjectAccessReview", e))?;
        Ok(answer.status.is_some_and(|status| status.allowed))
    }
}

/// A ClusterRole and its ClusterRoleBinding granting `get` on
/// `cluster_wide`, and a Role and its RoleBinding granting `get` on
/// `namespaced`, all to the sentinel user: a grant is in force only once
/// both its role and its binding are seen, so one sentinel of each kind.
fn sentinels(name: &str, cluster_wide: &str, namespaced: &str) -> Vec<Value> {
    let rules = |resource: &str| json!([{"apiGroups": [SENTINEL_GROUP], "resources": [resource], "verbs": ["get"]}]);
    let subjects =
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": SENTINEL_USER}]);
    let role_ref =
        |kind: &str| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name});
    let namespaced_meta = json!({"name": name, "namespace": SENTINEL_NAMESPACE});
    vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": name}, "rules": rules(cluster_wide)}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": name}, "roleRef": role_ref("ClusterRole"), "subjects": subjects}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": namespaced_meta, "rules": rules(namespaced)}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": namespaced_meta, "roleRef": role_ref("Role"), "subjects": subjects}),
    ]
}
