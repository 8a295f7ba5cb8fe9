//! The cluster as a rule sees it: the four Kubernetes host capabilities.
//!
//! In a module, `olm-guard-kubewarden` implements [`Cluster`] with waPC host
//! calls; natively (unit tests, the speed baseline) and inside the host,
//! `olm-guard-snapshot` implements it over a snapshot. Rules are written
//! against the trait only, so the code that is tested natively is the code
//! that ships.

use std::rc::Rc;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_with::DefaultOnNull;

use crate::UserInfo;
use crate::listed::{ListAnswer, decode_error};
use crate::protocol::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewStatus,
};
use crate::shared::SharedAnswers;

/// The Kubernetes host capabilities of Kubewarden's waPC protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// `kubernetes/list_resources_all`.
    ListAll,
    /// `kubernetes/list_resources_by_namespace`.
    ListByNamespace,
    /// `kubernetes/get_resource`.
    Get,
    /// `kubernetes/can_i`.
    CanI,
}

impl Capability {
    /// The waPC operation name (`list_resources_all`, ...).
    pub fn operation(self) -> &'static str {
        match self {
            Capability::ListAll => "list_resources_all",
            Capability::ListByNamespace => "list_resources_by_namespace",
            Capability::Get => "get_resource",
            Capability::CanI => "can_i",
        }
    }

    /// `kubernetes/<operation>`, as metadata's `hostCapabilities` names it.
    pub fn path(self) -> String {
        format!("kubernetes/{}", self.operation())
    }

    /// The capability of a waPC `kubernetes/<operation>` call.
    pub fn from_operation(operation: &str) -> Option<Capability> {
        [
            Capability::ListAll,
            Capability::ListByNamespace,
            Capability::Get,
            Capability::CanI,
        ]
        .into_iter()
        .find(|c| c.operation() == operation)
    }
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "kubernetes/{}", self.operation())
    }
}

/// Why a lookup failed, so a front end can pick a status code or an audit
/// result without reading the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContextErrorKind {
    /// The policy's metadata does not grant the kind or capability
    /// (policy-server's allow list).
    Forbidden,
    /// The object asked for does not exist.
    NotFound,
    /// The request itself was wrong: a bad selector, a cluster-scoped kind
    /// listed by namespace, an undecodable request.
    InvalidRequest,
    /// The host failed to answer (inside a module every host error arrives
    /// as text; the ones policy-server words recognisably are classified).
    Transport,
    /// The host answered with something that is not the expected JSON.
    Decode,
    /// There is no cluster context at all.
    Unavailable,
}

/// A failed lookup: which capability, about what, why, and the host's own
/// words, which are what rules quote in their denials (its `Display`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ContextError {
    /// Why it failed.
    pub kind: ContextErrorKind,
    /// The capability used, when known.
    pub capability: Option<Capability>,
    /// What was looked up, e.g. `v1/Namespace "olm"`; empty when unknown.
    pub target: String,
    /// The text the host (or the snapshot) gave.
    pub message: String,
}

impl ContextError {
    /// An error of `kind` with the host's text.
    pub fn new(kind: ContextErrorKind, message: impl Into<String>) -> ContextError {
        ContextError {
            kind,
            capability: None,
            target: String::new(),
            message: message.into(),
        }
    }

    /// The same error, saying which capability and target it concerns.
    pub fn on(mut self, capability: Capability, target: impl Into<String>) -> ContextError {
        self.capability = Some(capability);
        self.target = target.into();
        self
    }

    /// The same failure described by `message` (e.g. with what the caller
    /// was doing), keeping its kind, capability and target.
    pub fn with_message(mut self, message: impl Into<String>) -> ContextError {
        self.message = message.into();
        self
    }

    /// Classifies a host's error text as policy-server words it: its
    /// allow-list denials and its not-found answers have fixed phrases.
    pub fn from_host(message: impl Into<String>) -> ContextError {
        let message = message.into();
        let kind = if message.contains("has not been granted access") {
            ContextErrorKind::Forbidden
        } else if message.contains("Cannot find") || message.contains("not found") {
            ContextErrorKind::NotFound
        } else {
            ContextErrorKind::Transport
        };
        ContextError::new(kind, message)
    }
}

/// Raw host capabilities: each returns the JSON the host answered.
pub trait Cluster {
    /// A `List` (`{"items": [...]}`).
    fn list_all(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError>;
    /// A `List` of one namespace.
    fn list_by_namespace(
        &self,
        request: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, ContextError>;
    /// One object; not found is an error, as in Kubewarden.
    fn get(&self, request: &GetResourceRequest) -> Result<Vec<u8>, ContextError>;
    /// A SubjectAccessReview.
    fn can_i(&self, request: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError>;

    /// Where decoded answers are kept for the other evaluations of a batch
    /// (`crate::shared`); `None`, the default, for a single evaluation.
    fn shared_answers(&self) -> Option<&SharedAnswers> {
        None
    }
}

#[serde_with::serde_as]
#[derive(Deserialize)]
#[serde(bound = "T: DeserializeOwned")]
struct ListOf<T> {
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default = "Vec::new")]
    items: Vec<T>,
}

fn decode<T: DeserializeOwned>(
    bytes: &[u8],
    what: &str,
    capability: Capability,
    target: String,
) -> Result<T, ContextError> {
    serde_json::from_slice(bytes).map_err(|e| decode_error(what, &e, capability, target))
}

/// `apiVersion/Kind`, the target of a list.
fn kind_target(api_version: &str, kind: &str) -> String {
    format!("{api_version}/{kind}")
}

/// What a namespaced list names in a failure: `v1/Role in namespace "x"`.
fn namespaced_target(request: &ListResourcesByNamespaceRequest) -> String {
    format!(
        "{} in namespace \"{}\"",
        kind_target(&request.api_version, &request.kind),
        request.namespace
    )
}

/// Typed conveniences over [`Cluster`]; every rule uses these.
pub trait ClusterExt: Cluster {
    /// [`Cluster::list_all`], decoded.
    fn list_all_as<T: DeserializeOwned>(
        &self,
        request: &ListAllResourcesRequest,
    ) -> Result<Vec<T>, ContextError> {
        let target = kind_target(&request.api_version, &request.kind);
        let bytes = self.list_all(request)?;
        let what = format!("listing {}", request.kind);
        Ok(decode::<ListOf<T>>(&bytes, &what, Capability::ListAll, target)?.items)
    }

    /// [`Cluster::list_all`], decoded and turned into `D` by `build`; in a
    /// batch ([`Cluster::shared_answers`]) made once and shared by every
    /// evaluation that asks the same request for the same `D`.
    fn list_all_shared<T: DeserializeOwned, D: 'static>(
        &self,
        request: &ListAllResourcesRequest,
        build: impl FnOnce(Vec<T>) -> D,
    ) -> Result<Rc<D>, ContextError> {
        self.list_all_read(request, |answer| {
            let mut items = Vec::new();
            answer.each(|item| items.push(item))?;
            Ok(build(items))
        })
    }

    /// [`Cluster::list_all`], the answer handed to `read`, which reads what
    /// its rule needs of it ([`crate::listed`]) into `D`; in a batch
    /// ([`Cluster::shared_answers`]) made once and shared by every evaluation
    /// that asks the same request for the same `D`.
    fn list_all_read<D: 'static>(
        &self,
        request: &ListAllResourcesRequest,
        read: impl FnOnce(ListAnswer) -> Result<D, ContextError>,
    ) -> Result<Rc<D>, ContextError> {
        let make = || read(self.list_all_answer(request)?);
        // The request's JSON is the whole key: kind, selectors, masks.
        match (self.shared_answers(), serde_json::to_string(request)) {
            (Some(shared), Ok(key)) => {
                shared.get_or_try_insert(format!("list_resources_all {key}"), make)
            }
            _ => make().map(Rc::new),
        }
    }

    /// [`Cluster::list_all`], the answer as it came, to read with
    /// [`ListAnswer`] (not shared: a caller that shares keeps what it
    /// builds).
    fn list_all_answer(
        &self,
        request: &ListAllResourcesRequest,
    ) -> Result<ListAnswer, ContextError> {
        let bytes = self.list_all(request)?;
        Ok(ListAnswer::new(
            bytes,
            format!("listing {}", request.kind),
            Capability::ListAll,
            kind_target(&request.api_version, &request.kind),
        ))
    }

    /// [`Cluster::list_by_namespace`], the answer handed to `read` as in
    /// [`ClusterExt::list_all_read`] (not shared: a caller that shares
    /// keeps what it builds).
    fn list_by_namespace_read<D>(
        &self,
        request: &ListResourcesByNamespaceRequest,
        read: impl FnOnce(ListAnswer) -> Result<D, ContextError>,
    ) -> Result<D, ContextError> {
        let target = namespaced_target(request);
        let bytes = self.list_by_namespace(request)?;
        read(ListAnswer::new(
            bytes,
            format!("listing {}", request.kind),
            Capability::ListByNamespace,
            target,
        ))
    }

    /// [`Cluster::list_by_namespace`], decoded.
    fn list_by_namespace_as<T: DeserializeOwned>(
        &self,
        request: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<T>, ContextError> {
        let target = namespaced_target(request);
        let bytes = self.list_by_namespace(request)?;
        let what = format!("listing {}", request.kind);
        Ok(decode::<ListOf<T>>(&bytes, &what, Capability::ListByNamespace, target)?.items)
    }

    /// [`Cluster::get`], decoded.
    fn get_as<T: DeserializeOwned>(&self, request: &GetResourceRequest) -> Result<T, ContextError> {
        let target = format!(
            "{} \"{}\"",
            kind_target(&request.api_version, &request.kind),
            request.name
        );
        let bytes = self.get(request)?;
        let what = format!("getting {} {}", request.kind, request.name);
        decode(&bytes, &what, Capability::Get, target)
    }

    /// Whether `user` may do `attributes`: one SubjectAccessReview.
    fn authorized(
        &self,
        user: &UserInfo,
        attributes: ResourceAttributes,
    ) -> Result<bool, ContextError> {
        let request = CanIRequest {
            subject_access_review: SubjectAccessReview {
                groups: Some(user.groups.clone()),
                resource_attributes: attributes,
                user: user.username.clone(),
            },
            disable_cache: false,
        };
        Ok(self.can_i(&request)?.allowed)
    }
}

impl<C: Cluster + ?Sized> ClusterExt for C {}

/// A context for rules that need none: every lookup fails (closed).
pub struct NoCluster;

fn unavailable(message: String, capability: Capability, target: String) -> ContextError {
    ContextError::new(ContextErrorKind::Unavailable, message).on(capability, target)
}

impl Cluster for NoCluster {
    fn list_all(&self, r: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
        Err(unavailable(
            format!("no cluster context to list {}", r.kind),
            Capability::ListAll,
            kind_target(&r.api_version, &r.kind),
        ))
    }
    fn list_by_namespace(
        &self,
        r: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, ContextError> {
        Err(unavailable(
            format!("no cluster context to list {}", r.kind),
            Capability::ListByNamespace,
            kind_target(&r.api_version, &r.kind),
        ))
    }
    fn get(&self, r: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
        Err(unavailable(
            format!("no cluster context to get {}", r.kind),
            Capability::Get,
            kind_target(&r.api_version, &r.kind),
        ))
    }
    fn can_i(&self, _: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
        Err(unavailable(
            "no cluster context for a SubjectAccessReview".into(),
            Capability::CanI,
            String::new(),
        ))
    }
}
