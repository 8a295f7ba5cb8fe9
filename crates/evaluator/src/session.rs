//! Recorded host-capability sessions in kwctl's format: record every
//! exchange between a module and the cluster, and answer a later evaluation
//! from the file instead of a snapshot.
//!
//! The format is kwctl's (`kwctl run --record-host-capabilities-interactions`
//! / `--replay-host-capabilities-interactions`, kubewarden/kubewarden-controller
//! `crates/kwctl/src/callback_handler/proxy.rs`, `Exchange` and `Response`): a
//! YAML list whose items are
//!
//! ```yaml
//! - type: Exchange
//!   request: |
//!     !KubernetesGetResource
//!     api_version: v1
//!     kind: Namespace
//!     name: olm
//!     namespace: null
//!     disable_cache: false
//!     field_masks: null
//!   response:
//!     type: Success
//!     payload: '{"apiVersion":"v1","kind":"Namespace",...}'
//! ```
//!
//! `request` is a YAML *string* holding `serde_yaml_ng::to_string` of
//! policy-evaluator's `CallbackRequestType` (`crates/policy-evaluator/src/
//! callback_requests.rs`): the variant is a YAML tag, the fields are snake_case.
//! `response` is `Success` with the JSON text the module received
//! (`String::from_utf8` of the answer bytes), or `Error` with the host's error
//! text. A file written here replays under kwctl, and a file kwctl records
//! replays here.
//!
//! Where the recorder sits: kwctl's proxy stands behind the host's
//! authorization gate (policy-evaluator `src/runtimes/callback.rs`,
//! `check_authorization` runs before the request is sent over the callback
//! channel the proxy listens on). A call the grants deny never reaches it and
//! is not recorded; `tracing/log` is not recorded either. [`SessionRecorder`]
//! wraps the [`Cluster`] behind [`crate::ContextHost`], which also checks the
//! grants first, so it sees exactly the calls kwctl's proxy would.

use std::collections::{BTreeSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use olm_guard_core::protocol::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    SubjectAccessReview, SubjectAccessReviewStatus,
};
use olm_guard_core::{Capability, Cluster, ContextError, ContextErrorKind};

use crate::host::ClusterContext;

/// Why a session could not be read, written or recorded.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The file could not be read.
    #[error("cannot read session {}", path.display())]
    Read {
        /// The session file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file could not be written.
    #[error("cannot write session {}", path.display())]
    Write {
        /// The session file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a YAML list of `type: Exchange` items.
    #[error(
        "{source_name}: not a host-capabilities session (a YAML list of `type: Exchange` items \
         with `request` and `response`, as kwctl records)"
    )]
    Format {
        /// The file (or another name for the text).
        source_name: String,
        /// The YAML error.
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// One exchange's `request` is not a callback request.
    #[error(
        "{source_name}: exchange {number}: `request` must be a YAML-tagged callback request \
         such as `!KubernetesGetResource` with snake_case fields: {reason}"
    )]
    Request {
        /// The file (or another name for the text).
        source_name: String,
        /// The exchange, counting from 1.
        number: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A session could not be turned into YAML.
    #[error("cannot write the session as YAML")]
    Serialize(#[from] serde_yaml_ng::Error),
}

/// A Kubernetes request as policy-evaluator's `CallbackRequestType` names it
/// (kubewarden/kubewarden-controller `crates/policy-evaluator/src/
/// callback_requests.rs`): the variant names are the YAML tags, the fields
/// and their order are upstream's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum KubernetesRequest {
    /// `kubernetes/list_resources_by_namespace`.
    KubernetesListResourceNamespace {
        /// `group/version` (or `v1`).
        api_version: String,
        /// The kind.
        kind: String,
        /// The namespace.
        namespace: String,
        /// A label selector.
        label_selector: Option<String>,
        /// A field selector.
        field_selector: Option<String>,
        /// Fields to keep (a set upstream: order and repeats do not count).
        #[serde(default)]
        field_masks: Option<BTreeSet<String>>,
    },
    /// `kubernetes/list_resources_all`.
    KubernetesListResourceAll {
        /// `group/version` (or `v1`).
        api_version: String,
        /// The kind.
        kind: String,
        /// A label selector.
        label_selector: Option<String>,
        /// A field selector.
        field_selector: Option<String>,
        /// Fields to keep.
        #[serde(default)]
        field_masks: Option<BTreeSet<String>>,
    },
    /// `kubernetes/get_resource`.
    KubernetesGetResource {
        /// `group/version` (or `v1`).
        api_version: String,
        /// The kind.
        kind: String,
        /// The object's name.
        name: String,
        /// The namespace; `None` for cluster-scoped kinds.
        namespace: Option<String>,
        /// Ask the host not to answer from its cache.
        disable_cache: bool,
        /// Fields to keep.
        #[serde(default)]
        field_masks: Option<BTreeSet<String>>,
    },
    /// `kubernetes/can_i`: the SubjectAccessReview as the module sent it.
    KubernetesCanI {
        /// The review.
        request: SubjectAccessReview,
        /// Ask the host not to answer from its cache.
        disable_cache: bool,
    },
}

impl KubernetesRequest {
    /// The variant's name, the YAML tag without `!`.
    pub fn tag(&self) -> &'static str {
        match self {
            KubernetesRequest::KubernetesListResourceNamespace { .. } => KUBERNETES_TAGS[0],
            KubernetesRequest::KubernetesListResourceAll { .. } => KUBERNETES_TAGS[1],
            KubernetesRequest::KubernetesGetResource { .. } => KUBERNETES_TAGS[2],
            KubernetesRequest::KubernetesCanI { .. } => KUBERNETES_TAGS[3],
        }
    }
}

fn mask_set(masks: &Option<Vec<String>>) -> Option<BTreeSet<String>> {
    masks.as_ref().map(|m| m.iter().cloned().collect())
}

impl From<&ListResourcesByNamespaceRequest> for KubernetesRequest {
    fn from(r: &ListResourcesByNamespaceRequest) -> Self {
        KubernetesRequest::KubernetesListResourceNamespace {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            namespace: r.namespace.clone(),
            label_selector: r.label_selector.clone(),
            field_selector: r.field_selector.clone(),
            field_masks: mask_set(&r.field_masks),
        }
    }
}

impl From<&ListAllResourcesRequest> for KubernetesRequest {
    fn from(r: &ListAllResourcesRequest) -> Self {
        KubernetesRequest::KubernetesListResourceAll {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            label_selector: r.label_selector.clone(),
            field_selector: r.field_selector.clone(),
            field_masks: mask_set(&r.field_masks),
        }
    }
}

impl From<&GetResourceRequest> for KubernetesRequest {
    fn from(r: &GetResourceRequest) -> Self {
        KubernetesRequest::KubernetesGetResource {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            name: r.name.clone(),
            namespace: r.namespace.clone(),
            disable_cache: r.disable_cache,
            field_masks: mask_set(&r.field_masks),
        }
    }
}

impl From<&CanIRequest> for KubernetesRequest {
    fn from(r: &CanIRequest) -> Self {
        KubernetesRequest::KubernetesCanI {
            request: r.subject_access_review.clone(),
            disable_cache: r.disable_cache,
        }
    }
}

/// The tags of the Kubernetes variants, the ones this host can answer.
const KUBERNETES_TAGS: [&str; 4] = [
    "KubernetesListResourceNamespace",
    "KubernetesListResourceAll",
    "KubernetesGetResource",
    "KubernetesCanI",
];

/// One recorded request: a Kubernetes request this host serves, or any other
/// callback request kwctl records (OCI, Sigstore, DNS, crypto), kept as
/// written so that a session recorded for another policy still loads and
/// saves unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallbackRequest {
    /// A `kubernetes/*` request.
    Kubernetes(KubernetesRequest),
    /// Another `CallbackRequestType` variant, e.g. `!OciManifestDigest`.
    Other {
        /// The YAML tag without `!`.
        tag: String,
        /// The request text as recorded.
        text: String,
    },
}

impl CallbackRequest {
    /// Parses a recorded `request` string.
    fn parse(text: &str) -> Result<CallbackRequest, String> {
        let value: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
        let serde_yaml_ng::Value::Tagged(tagged) = &value else {
            return Err("it has no `!Variant` tag".into());
        };
        let tag = tagged.tag.to_string();
        let tag = tag.trim_start_matches('!');
        if KUBERNETES_TAGS.contains(&tag) {
            serde_yaml_ng::from_value(value.clone())
                .map(CallbackRequest::Kubernetes)
                .map_err(|e| format!("!{tag}: {e}"))
        } else {
            Ok(CallbackRequest::Other {
                tag: tag.to_string(),
                text: text.to_string(),
            })
        }
    }

    /// The `request` string kwctl writes: `serde_yaml_ng::to_string` of the
    /// tagged request.
    fn to_yaml(&self) -> Result<String, serde_yaml_ng::Error> {
        match self {
            CallbackRequest::Kubernetes(request) => serde_yaml_ng::to_string(request),
            CallbackRequest::Other { text, .. } => Ok(text.clone()),
        }
    }
}

impl fmt::Display for CallbackRequest {
    /// One line: `!Tag {"field":value,...}`, for replay errors.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallbackRequest::Kubernetes(request) => {
                // Externally tagged in JSON, fields in declaration order:
                // {"Variant":{fields}}.
                let tag = request.tag();
                let json = serde_json::to_string(request).unwrap_or_default();
                match json
                    .strip_prefix(&format!("{{\"{tag}\":"))
                    .and_then(|rest| rest.strip_suffix('}'))
                {
                    Some(fields) => write!(f, "!{tag} {fields}"),
                    None => write!(f, "!{tag} {request:?}"),
                }
            }
            CallbackRequest::Other { tag, text } => {
                let body = text.lines().skip(1).collect::<Vec<_>>().join(", ");
                write!(f, "!{tag} {{{body}}}")
            }
        }
    }
}

/// The host's answer to one request, as kwctl records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Response {
    /// The JSON text the module received.
    Success {
        /// The answer, as text.
        payload: String,
    },
    /// The host's error text.
    Error {
        /// The text.
        message: String,
    },
}

/// One request and its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// What the module asked.
    pub request: CallbackRequest,
    /// What the host answered.
    pub response: Response,
}

/// An exchange as it is stored: kwctl's `Exchange` (`#[serde(tag = "type")]`
/// on a struct, so each item carries `type: Exchange`).
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename = "Exchange")]
struct StoredExchange {
    request: String,
    response: Response,
}

/// A recorded session: every exchange of one evaluation, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Session {
    /// The exchanges, in the order the module made the calls.
    pub exchanges: Vec<Exchange>,
}

impl Session {
    /// Parses a session's YAML text; `source_name` names it in errors.
    pub fn from_yaml(text: &str, source_name: &str) -> Result<Session, SessionError> {
        let stored: Vec<StoredExchange> =
            serde_yaml_ng::from_str(text).map_err(|source| SessionError::Format {
                source_name: source_name.to_string(),
                source,
            })?;
        let exchanges = stored
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                let request = CallbackRequest::parse(&item.request).map_err(|reason| {
                    SessionError::Request {
                        source_name: source_name.to_string(),
                        number: i + 1,
                        reason,
                    }
                })?;
                Ok(Exchange {
                    request,
                    response: item.response,
                })
            })
            .collect::<Result<Vec<_>, SessionError>>()?;
        Ok(Session { exchanges })
    }

    /// The session as kwctl writes it.
    pub fn to_yaml(&self) -> Result<String, SessionError> {
        let stored = self
            .exchanges
            .iter()
            .map(|e| {
                Ok(StoredExchange {
                    request: e.request.to_yaml()?,
                    response: e.response.clone(),
                })
            })
            .collect::<Result<Vec<_>, serde_yaml_ng::Error>>()?;
        Ok(serde_yaml_ng::to_string(&stored)?)
    }

    /// Reads a session file.
    pub fn load(path: &Path) -> Result<Session, SessionError> {
        let text = std::fs::read_to_string(path).map_err(|source| SessionError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Session::from_yaml(&text, &path.display().to_string())
    }

    /// Writes the session to `path`, creating its directory.
    pub fn save(&self, path: &Path) -> Result<(), SessionError> {
        let text = self.to_yaml()?;
        let write = |source| SessionError::Write {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(write)?;
        }
        std::fs::write(path, text).map_err(write)
    }
}

/// The answer bytes of `can_i`, exactly as [`crate::ContextHost`] sends them
/// to the module (it serialises the status the cluster gave).
fn status_bytes(status: &SubjectAccessReviewStatus) -> Result<Vec<u8>, ContextError> {
    serde_json::to_vec(status)
        .map_err(|e| ContextError::new(ContextErrorKind::Decode, e.to_string()))
}

/// A [`Cluster`] that answers from another and records every exchange.
pub struct SessionRecorder {
    inner: ClusterContext,
    exchanges: Mutex<Vec<Exchange>>,
}

impl SessionRecorder {
    /// Records what `inner` answers.
    pub fn new(inner: ClusterContext) -> SessionRecorder {
        SessionRecorder {
            inner,
            exchanges: Mutex::new(Vec::new()),
        }
    }

    /// The exchanges so far.
    pub fn session(&self) -> Session {
        Session {
            exchanges: self.exchanges.lock().map(|e| e.clone()).unwrap_or_default(),
        }
    }

    fn record(
        &self,
        request: KubernetesRequest,
        answer: Result<Vec<u8>, ContextError>,
    ) -> Result<Vec<u8>, ContextError> {
        let response = match &answer {
            // kwctl keeps the payload as text and fails the recording on
            // bytes that are not UTF-8; the lossy text keeps the session
            // readable and the module still gets the original bytes.
            Ok(bytes) => Response::Success {
                payload: String::from_utf8_lossy(bytes).into_owned(),
            },
            // The text ContextHost hands the module for a failed lookup.
            Err(e) => Response::Error {
                message: e.message.clone(),
            },
        };
        if let Ok(mut exchanges) = self.exchanges.lock() {
            exchanges.push(Exchange {
                request: CallbackRequest::Kubernetes(request),
                response,
            });
        }
        answer
    }
}

impl Cluster for SessionRecorder {
    fn list_all(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
        self.record(request.into(), self.inner.list_all(request))
    }

    fn list_by_namespace(
        &self,
        request: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, ContextError> {
        self.record(request.into(), self.inner.list_by_namespace(request))
    }

    fn get(&self, request: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
        self.record(request.into(), self.inner.get(request))
    }

    fn can_i(&self, request: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
        let status = self.inner.can_i(request);
        let bytes = status.as_ref().map_err(Clone::clone).and_then(status_bytes);
        self.record(request.into(), bytes)?;
        status
    }
}

/// A [`Cluster`] that answers from a recorded session, strictly in order, as
/// kwctl's replay does (`CallbackHandlerProxy::produce_recorded_response`):
/// each call takes the next exchange and must equal its request, field by
/// field; otherwise, and past the last exchange, the call fails with a text
/// that shows the expected and the actual request. A recorded `Error` answers
/// with the same text.
pub struct SessionReplay {
    source: String,
    total: usize,
    pending: Mutex<VecDeque<Exchange>>,
    problems: Mutex<Vec<String>>,
}

impl SessionReplay {
    /// Replays `session`; `source` (the file) names it in errors.
    pub fn new(session: Session, source: impl Into<String>) -> SessionReplay {
        SessionReplay {
            source: source.into(),
            total: session.exchanges.len(),
            pending: Mutex::new(session.exchanges.into()),
            problems: Mutex::new(Vec::new()),
        }
    }

    /// Loads and replays the session file `path`.
    pub fn load(path: &Path) -> Result<SessionReplay, SessionError> {
        Ok(SessionReplay::new(
            Session::load(path)?,
            path.display().to_string(),
        ))
    }

    /// The exchanges not replayed yet (kwctl warns about leftovers).
    pub fn remaining(&self) -> usize {
        self.pending.lock().map(|p| p.len()).unwrap_or(0)
    }

    /// Every mismatch and every call past the end, in order: the replay did
    /// not describe this evaluation.
    pub fn problems(&self) -> Vec<String> {
        self.problems.lock().map(|p| p.clone()).unwrap_or_default()
    }

    fn fail(&self, capability: Capability, target: String, message: String) -> ContextError {
        if let Ok(mut problems) = self.problems.lock() {
            problems.push(message.clone());
        }
        ContextError::new(ContextErrorKind::Unavailable, message).on(capability, target)
    }

    fn answer(
        &self,
        actual: KubernetesRequest,
        capability: Capability,
        target: String,
    ) -> Result<String, ContextError> {
        let actual = CallbackRequest::Kubernetes(actual);
        let (number, next) = match self.pending.lock() {
            Ok(mut pending) => (self.total - pending.len() + 1, pending.pop_front()),
            Err(_) => (0, None),
        };
        let Some(exchange) = next else {
            return Err(self.fail(
                capability,
                target,
                format!(
                    "replay error: {} has no exchange left ({} recorded), got {actual}",
                    self.source, self.total
                ),
            ));
        };
        if exchange.request != actual {
            return Err(self.fail(
                capability,
                target,
                format!(
                    "replay error: unexpected request at exchange {number} of {}: expected {}, got {actual}",
                    self.source, exchange.request
                ),
            ));
        }
        match exchange.response {
            Response::Success { payload } => Ok(payload),
            Response::Error { message } => {
                Err(ContextError::from_host(message).on(capability, target))
            }
        }
    }
}

impl Cluster for SessionReplay {
    fn list_all(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
        let target = format!("{}/{}", request.api_version, request.kind);
        self.answer(request.into(), Capability::ListAll, target)
            .map(String::into_bytes)
    }

    fn list_by_namespace(
        &self,
        request: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, ContextError> {
        let target = format!(
            "{}/{} in namespace \"{}\"",
            request.api_version, request.kind, request.namespace
        );
        self.answer(request.into(), Capability::ListByNamespace, target)
            .map(String::into_bytes)
    }

    fn get(&self, request: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
        let target = format!(
            "{}/{} \"{}\"",
            request.api_version, request.kind, request.name
        );
        self.answer(request.into(), Capability::Get, target)
            .map(String::into_bytes)
    }

    /// The recorded payload decoded as the module would decode it; the host
    /// then sends it re-serialised (same fields; spacing and unknown fields
    /// of a hand-written payload are not kept).
    fn can_i(&self, request: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
        let payload = self.answer(request.into(), Capability::CanI, String::new())?;
        serde_json::from_str(&payload).map_err(|e| {
            ContextError::new(
                ContextErrorKind::Decode,
                format!(
                    "{}: the recorded can_i answer is not a SubjectAccessReviewStatus: {e}",
                    self.source
                ),
            )
            .on(Capability::CanI, String::new())
        })
    }
}

#[cfg(test)]
mod tests;
