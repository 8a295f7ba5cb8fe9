//! A [`Cluster`] that answers from another and writes down every call: the
//! page's "host calls" list, the in-browser counterpart of `olm-guard run
//! --trace` (host/src/commands/run/one.rs, `print_trace`).

use std::cell::RefCell;

use serde::Serialize;
use serde_json::Value;

use olm_guard_core::protocol::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    SubjectAccessReviewStatus,
};
use olm_guard_core::{Capability, Cluster, ContextError};

/// One host call: what the rule asked and what it was answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostCall {
    /// `kubernetes/list_resources_all`, ...: the capability as metadata's
    /// `hostCapabilities` names it.
    pub capability: String,
    /// The request, as the module sends it over waPC.
    pub request: Value,
    /// The answer (a `List`, an object, a SubjectAccessReview status), when
    /// the call succeeded. An answer that is not JSON is kept as a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<Value>,
    /// The error's text, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Answers from `inner`, recording each call in order.
pub struct Recording<'a> {
    inner: &'a dyn Cluster,
    calls: RefCell<Vec<HostCall>>,
}

impl<'a> Recording<'a> {
    /// A recorder over `inner`, with no call yet.
    pub fn new(inner: &'a dyn Cluster) -> Recording<'a> {
        Recording {
            inner,
            calls: RefCell::new(Vec::new()),
        }
    }

    /// The calls made so far, in order.
    pub fn into_calls(self) -> Vec<HostCall> {
        self.calls.into_inner()
    }

    fn record<R: Serialize, A>(
        &self,
        capability: Capability,
        request: &R,
        result: Result<A, ContextError>,
        answer: impl FnOnce(&A) -> Value,
    ) -> Result<A, ContextError> {
        let (answer, error) = match &result {
            Ok(a) => (Some(answer(a)), None),
            Err(e) => (None, Some(e.to_string())),
        };
        self.calls.borrow_mut().push(HostCall {
            capability: capability.path(),
            request: serde_json::to_value(request).unwrap_or(Value::Null),
            answer,
            error,
        });
        result
    }
}

/// The host's answer bytes as JSON, or as text when they are not JSON.
fn bytes_answer(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

impl Cluster for Recording<'_> {
    fn list_all(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
        let result = self.inner.list_all(request);
        self.record(Capability::ListAll, request, result, |b| bytes_answer(b))
    }

    fn list_by_namespace(
        &self,
        request: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, ContextError> {
        let result = self.inner.list_by_namespace(request);
        self.record(Capability::ListByNamespace, request, result, |b| {
            bytes_answer(b)
        })
    }

    fn get(&self, request: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
        let result = self.inner.get(request);
        self.record(Capability::Get, request, result, |b| bytes_answer(b))
    }

    fn can_i(&self, request: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
        let result = self.inner.can_i(request);
        self.record(Capability::CanI, request, result, |status| {
            serde_json::to_value(status).unwrap_or(Value::Null)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use olm_guard_core::ClusterExt;
    use olm_guard_snapshot::Snapshot;

    #[test]
    fn every_call_is_recorded_with_its_answer_or_error() {
        let snapshot =
            Snapshot::from_yaml("apiVersion: v1\nkind: Namespace\nmetadata: {name: olm}\n")
                .unwrap();
        let recording = Recording::new(&snapshot);
        let found: Vec<Value> = recording
            .list_all_as(&ListAllResourcesRequest {
                api_version: "v1".into(),
                kind: "Namespace".into(),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(found.len(), 1);
        let missing = recording.get(&GetResourceRequest {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            name: "nope".into(),
            ..Default::default()
        });
        assert!(missing.is_err());
        let calls = recording.into_calls();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].capability, "kubernetes/list_resources_all");
        assert_eq!(calls[0].request["kind"], "Namespace");
        assert_eq!(
            calls[0].answer.as_ref().unwrap()["items"][0]["metadata"]["name"],
            "olm"
        );
        assert_eq!(calls[1].capability, "kubernetes/get_resource");
        assert!(calls[1].answer.is_none());
        assert!(
            calls[1].error.as_ref().unwrap().contains("nope"),
            "{:?}",
            calls[1]
        );
    }
}
