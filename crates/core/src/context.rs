//! The cluster as a rule sees it: the four Kubernetes host capabilities.
//!
//! In a module, `olm-guard-kubewarden` implements [`Cluster`] with waPC host
//! calls; natively (unit tests, the speed baseline) and inside the host,
//! `olm-guard-snapshot` implements it over a snapshot. Rules are written
//! against the trait only, so the code that is tested natively is the code
//! that ships.

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::UserInfo;
use crate::protocol::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewStatus,
};

/// A failed lookup. The text is what the host said; rules deny with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextError(pub String);

impl std::fmt::Display for ContextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ContextError {}

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
}

#[derive(Deserialize)]
#[serde(bound = "T: DeserializeOwned")]
struct ListOf<T> {
    #[serde(
        default = "Vec::new",
        deserialize_with = "crate::nullable::deserialize"
    )]
    items: Vec<T>,
}

fn decode<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, ContextError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ContextError(format!("the host's answer to {what} is not valid: {e}")))
}

/// Typed conveniences over [`Cluster`]; every rule uses these.
pub trait ClusterExt: Cluster {
    fn list_all_as<T: DeserializeOwned>(
        &self,
        request: &ListAllResourcesRequest,
    ) -> Result<Vec<T>, ContextError> {
        let bytes = self.list_all(request)?;
        Ok(decode::<ListOf<T>>(&bytes, &format!("listing {}", request.kind))?.items)
    }

    fn list_by_namespace_as<T: DeserializeOwned>(
        &self,
        request: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<T>, ContextError> {
        let bytes = self.list_by_namespace(request)?;
        Ok(decode::<ListOf<T>>(&bytes, &format!("listing {}", request.kind))?.items)
    }

    fn get_as<T: DeserializeOwned>(&self, request: &GetResourceRequest) -> Result<T, ContextError> {
        let bytes = self.get(request)?;
        decode(
            &bytes,
            &format!("getting {} {}", request.kind, request.name),
        )
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

impl Cluster for NoCluster {
    fn list_all(&self, r: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
        Err(ContextError(format!(
            "no cluster context to list {}",
            r.kind
        )))
    }
    fn list_by_namespace(
        &self,
        r: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, ContextError> {
        Err(ContextError(format!(
            "no cluster context to list {}",
            r.kind
        )))
    }
    fn get(&self, r: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
        Err(ContextError(format!(
            "no cluster context to get {}",
            r.kind
        )))
    }
    fn can_i(&self, _: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
        Err(ContextError(
            "no cluster context for a SubjectAccessReview".into(),
        ))
    }
}
