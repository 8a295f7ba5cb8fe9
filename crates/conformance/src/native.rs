//! The cluster side of a native policy's evaluation: the API server's
//! authorizer and the params of a binding's `paramRef`, both answered from
//! a scenario's snapshot.

use std::sync::Arc;

use serde_json::Value;

use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_core::selector::{LabelSelector, Selector};
use olm_guard_core::{ClusterExt, UserInfo};
use olm_guard_native::admission::Params;
use olm_guard_native::authorizer::{Authorize, AuthorizerError};
use olm_guard_snapshot::Snapshot;

/// A snapshot as the API server's authorizer and informer cache.
pub struct SnapshotCluster(pub Arc<Snapshot>);

impl Authorize for SnapshotCluster {
    /// Through the snapshot's SubjectAccessReview answer, so that a
    /// scenario's injected lookup failures reach the policy as authorizer
    /// errors.
    fn resource(
        &self,
        user: &UserInfo,
        attributes: &ResourceAttributes,
    ) -> Result<bool, AuthorizerError> {
        self.0
            .authorized(user, attributes.clone())
            .map_err(|e| AuthorizerError(Box::new(e)))
    }

    fn non_resource(
        &self,
        user: &UserInfo,
        verb: &str,
        path: &str,
    ) -> Result<bool, AuthorizerError> {
        Ok(self
            .0
            .rbac()
            .authorize_non_resource(user, verb, path)
            .allowed)
    }
}

impl Params for SnapshotCluster {
    fn params(&self, api_version: &str, kind: &str, selector: &Value) -> Vec<Value> {
        let selector = serde_json::from_value::<LabelSelector>(selector.clone())
            .ok()
            .and_then(|s| Selector::from_label_selector(&s).ok());
        let Some(selector) = selector else {
            return Vec::new();
        };
        self.0
            .objects()
            .filter(|o| {
                o.get("apiVersion").and_then(Value::as_str) == Some(api_version)
                    && o.get("kind").and_then(Value::as_str) == Some(kind)
            })
            .filter(|o| {
                let labels = o
                    .pointer("/metadata/labels")
                    .and_then(|l| serde_json::from_value(l.clone()).ok())
                    .unwrap_or_default();
                selector.matches(&labels)
            })
            .cloned()
            .collect()
    }
}
