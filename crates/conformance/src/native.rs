//! The cluster side of a native policy's evaluation: the API server's
//! authorizer and the params of a binding's `paramRef`, both answered from
//! a scenario's snapshot; and the record of every authorizer check an
//! evaluation made, which answers Kubernetes' own evaluation of the same
//! request (`olm_guard_kube_harness`).

use std::sync::{Arc, Mutex};

use serde_json::Value;

use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_core::selector::{LabelSelector, Selector};
use olm_guard_core::{ClusterExt, UserInfo};
use olm_guard_kube_harness::AuthorizerAnswer;
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

/// An authorizer that answers through another and keeps every answer, as
/// the table Kubernetes' evaluation of the same request is answered from.
pub struct RecordingAuthorizer {
    inner: Arc<dyn Authorize>,
    answers: Mutex<Vec<AuthorizerAnswer>>,
}

impl RecordingAuthorizer {
    /// Records what `inner` answers.
    pub fn new(inner: Arc<dyn Authorize>) -> Self {
        RecordingAuthorizer {
            inner,
            answers: Mutex::new(Vec::new()),
        }
    }

    /// Every check answered so far, each once.
    pub fn answers(&self) -> Vec<AuthorizerAnswer> {
        let mut answers = self.answers.lock().map(|a| a.clone()).unwrap_or_default();
        answers.sort();
        answers.dedup();
        answers
    }

    fn record(&self, mut answer: AuthorizerAnswer, result: &Result<bool, AuthorizerError>) {
        match result {
            Ok(allowed) => answer.allowed = *allowed,
            Err(e) => answer.error = e.to_string(),
        }
        if let Ok(mut answers) = self.answers.lock() {
            answers.push(answer);
        }
    }
}

impl Authorize for RecordingAuthorizer {
    fn resource(
        &self,
        user: &UserInfo,
        attributes: &ResourceAttributes,
    ) -> Result<bool, AuthorizerError> {
        let result = self.inner.resource(user, attributes);
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        self.record(
            AuthorizerAnswer {
                user: user.username.clone(),
                groups: user.groups.clone(),
                verb: attributes.verb.clone(),
                namespace: text(&attributes.namespace),
                api_group: text(&attributes.group),
                resource: attributes.resource.clone(),
                subresource: text(&attributes.subresource),
                name: text(&attributes.name),
                ..AuthorizerAnswer::default()
            },
            &result,
        );
        result
    }

    fn non_resource(
        &self,
        user: &UserInfo,
        verb: &str,
        path: &str,
    ) -> Result<bool, AuthorizerError> {
        let result = self.inner.non_resource(user, verb, path);
        self.record(
            AuthorizerAnswer {
                user: user.username.clone(),
                groups: user.groups.clone(),
                verb: verb.to_string(),
                path: path.to_string(),
                ..AuthorizerAnswer::default()
            },
            &result,
        );
        result
    }
}
