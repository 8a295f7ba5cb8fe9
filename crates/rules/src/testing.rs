//! Helpers shared by the unit tests of the rules: admission requests, cluster
//! snapshots, verdict assertions and a cluster that records and fails on
//! demand.

use std::cell::RefCell;

use olm_guard_core::protocol::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    SubjectAccessReviewStatus,
};
use olm_guard_core::{AdmissionRequest, Cluster, ContextError, Verdict};
use olm_guard_snapshot::Snapshot;
use serde_json::{Value, json};

/// An AdmissionRequest for `[group, version, kind]`, served as `resource`,
/// with `fields` (`operation`, `userInfo`, `object`, `oldObject`, `name`,
/// ...) laid over a default `uid`, as the API server sends them.
#[track_caller]
pub(crate) fn admission_request(gvk: [&str; 3], resource: &str, fields: Value) -> AdmissionRequest {
    let [group, version, kind] = gvk;
    let mut request = json!({
        "uid": "1",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
    });
    if let (Some(request), Value::Object(fields)) = (request.as_object_mut(), fields) {
        request.extend(fields);
    }
    serde_json::from_value(request).unwrap()
}

/// A snapshot of the objects of YAML documents (each may hold several, or
/// a `List`).
#[track_caller]
pub(crate) fn snapshot(documents: &[&str]) -> Snapshot {
    let mut snapshot = Snapshot::new();
    for document in documents {
        snapshot.add_yaml(document).unwrap();
    }
    snapshot
}

/// What Rust's debug output looks like; no message may contain it.
const DEBUG_OUTPUT: [&str; 7] = [
    "Some(", "None", "Object {", "String(", "Number(", "Array [", "\\\"",
];

pub(crate) fn message(verdict: &Verdict) -> &str {
    verdict.message.as_deref().unwrap_or("")
}

#[track_caller]
pub(crate) fn assert_no_debug_output(text: &str) {
    for debug in DEBUG_OUTPUT {
        assert!(!text.contains(debug), "debug output {debug:?} in: {text}");
    }
}

#[track_caller]
pub(crate) fn assert_contains_all(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} not in: {text}");
    }
}

/// A denial whose message holds every part and no debug output; returns
/// the message.
#[track_caller]
pub(crate) fn assert_denied(verdict: &Verdict, parts: &[&str]) -> String {
    assert!(!verdict.allowed, "expected a denial, got {verdict:?}");
    let message = message(verdict);
    assert_contains_all(message, parts);
    assert_no_debug_output(message);
    message.to_string()
}

#[track_caller]
pub(crate) fn assert_allowed(verdict: &Verdict) {
    assert!(verdict.allowed, "expected acceptance, got {verdict:?}");
}

/// Whether one warning holds every part.
pub(crate) fn has_warning(verdict: &Verdict, parts: &[&str]) -> bool {
    verdict
        .warnings
        .iter()
        .any(|w| parts.iter().all(|part| w.contains(part)))
}

/// A cluster answering from `inner` that records what a rule asks for, and
/// whose capabilities can be made to fail as a host's can.
pub(crate) struct Probe<'a> {
    inner: &'a dyn Cluster,
    /// Lists fail with this error...
    list_error: Option<String>,
    /// ...only for this kind, when set.
    failing_kind: Option<String>,
    get_error: Option<String>,
    can_i_error: Option<String>,
    /// Every SubjectAccessReview is allowed, whatever `inner` says.
    allow_all: bool,
    pub(crate) list_all_requests: RefCell<Vec<ListAllResourcesRequest>>,
    pub(crate) namespaced_lists: RefCell<Vec<ListResourcesByNamespaceRequest>>,
    pub(crate) reviews: RefCell<Vec<CanIRequest>>,
}

impl<'a> Probe<'a> {
    pub(crate) fn new(inner: &'a dyn Cluster) -> Self {
        Probe {
            inner,
            list_error: None,
            failing_kind: None,
            get_error: None,
            can_i_error: None,
            allow_all: false,
            list_all_requests: RefCell::default(),
            namespaced_lists: RefCell::default(),
            reviews: RefCell::default(),
        }
    }

    /// Every list fails with `error`.
    pub(crate) fn failing_lists(mut self, error: &str) -> Self {
        self.list_error = Some(error.to_string());
        self
    }

    /// Lists of `kind` fail with "`kind` is forbidden".
    pub(crate) fn failing_lists_of(mut self, kind: &str) -> Self {
        self.list_error = Some(format!("{kind} is forbidden"));
        self.failing_kind = Some(kind.to_string());
        self
    }

    pub(crate) fn failing_get(mut self, error: &str) -> Self {
        self.get_error = Some(error.to_string());
        self
    }

    pub(crate) fn failing_can_i(mut self, error: &str) -> Self {
        self.can_i_error = Some(error.to_string());
        self
    }

    pub(crate) fn allowing_all(mut self) -> Self {
        self.allow_all = true;
        self
    }

    /// The kinds listed, cluster-wide or in a namespace, in order.
    pub(crate) fn listed_kinds(&self) -> Vec<String> {
        let all = self.list_all_requests.borrow();
        let namespaced = self.namespaced_lists.borrow();
        all.iter()
            .map(|r| r.kind.clone())
            .chain(namespaced.iter().map(|r| r.kind.clone()))
            .collect()
    }

    /// How often `kind` was listed, cluster-wide or in a namespace.
    pub(crate) fn lists_of(&self, kind: &str) -> usize {
        self.listed_kinds().iter().filter(|k| *k == kind).count()
    }

    /// The resource names of the SubjectAccessReviews asked, in order.
    pub(crate) fn reviewed_names(&self) -> Vec<Option<String>> {
        self.reviews
            .borrow()
            .iter()
            .map(|r| r.subject_access_review.resource_attributes.name.clone())
            .collect()
    }

    fn list_failure(&self, kind: &str) -> Result<(), ContextError> {
        match (&self.list_error, &self.failing_kind) {
            (Some(error), None) => Err(ContextError::from_host(error.clone())),
            (Some(error), Some(failing)) if failing == kind => {
                Err(ContextError::from_host(error.clone()))
            }
            _ => Ok(()),
        }
    }
}

impl Cluster for Probe<'_> {
    fn list_all(&self, r: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
        self.list_all_requests.borrow_mut().push(r.clone());
        self.list_failure(&r.kind)?;
        self.inner.list_all(r)
    }
    fn list_by_namespace(
        &self,
        r: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, ContextError> {
        self.namespaced_lists.borrow_mut().push(r.clone());
        self.list_failure(&r.kind)?;
        self.inner.list_by_namespace(r)
    }
    fn get(&self, r: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
        if let Some(error) = &self.get_error {
            return Err(ContextError::from_host(error.clone()));
        }
        self.inner.get(r)
    }
    fn can_i(&self, r: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
        self.reviews.borrow_mut().push(r.clone());
        if let Some(error) = &self.can_i_error {
            return Err(ContextError::from_host(error.clone()));
        }
        if self.allow_all {
            return Ok(SubjectAccessReviewStatus {
                allowed: true,
                ..Default::default()
            });
        }
        self.inner.can_i(r)
    }
}
