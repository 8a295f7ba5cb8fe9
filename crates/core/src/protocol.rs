//! Payloads of Kubewarden's `kubernetes/*` host capabilities, byte-compatible
//! with policy-server and `kubewarden-policy-sdk` 0.17 (snake_case keys on the
//! requests, the SubjectAccessReview status in camelCase).

use serde::{Deserialize, Serialize};

/// `kubernetes/list_resources_all`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ListAllResourcesRequest {
    /// `group/version` (or `v1`) of the kind.
    pub api_version: String,
    /// The kind, e.g. `ConfigMap`.
    pub kind: String,
    /// A label selector, e.g. `app=web,tier!=db`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// A field selector (`metadata.name`, `metadata.namespace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<String>,
    /// Fields to keep in each answered object (dotted paths); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_masks: Option<Vec<String>>,
}

impl ListAllResourcesRequest {
    /// A request for every `kind` object of `api_version`.
    pub fn new(api_version: &str, kind: &str) -> Self {
        ListAllResourcesRequest {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            ..Default::default()
        }
    }

    /// Only objects whose labels match `selector`.
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Only objects whose fields match `selector`.
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Only these fields of each object (dotted paths, e.g. `spec.group`),
    /// besides `apiVersion`, `kind` and `metadata`, which are always kept
    /// (Kubewarden 1.33's `field_masks`). A host that predates masks
    /// ignores them and answers whole objects, which a rule reads the same.
    ///
    /// ```
    /// use olm_guard_core::protocol::ListAllResourcesRequest;
    ///
    /// let request = ListAllResourcesRequest::new("v1", "Namespace").field_masks(["metadata"]);
    /// assert_eq!(request.field_masks, Some(vec!["metadata".to_string()]));
    /// ```
    pub fn field_masks<S: Into<String>>(mut self, masks: impl IntoIterator<Item = S>) -> Self {
        self.field_masks = Some(masks.into_iter().map(Into::into).collect());
        self
    }
}

/// `kubernetes/list_resources_by_namespace`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ListResourcesByNamespaceRequest {
    /// `group/version` (or `v1`) of the kind.
    pub api_version: String,
    /// The kind, e.g. `ConfigMap`.
    pub kind: String,
    /// The namespace.
    pub namespace: String,
    /// A label selector, e.g. `app=web,tier!=db`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// A field selector (`metadata.name`, `metadata.namespace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<String>,
    /// Fields to keep in each answered object (dotted paths); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_masks: Option<Vec<String>>,
}

impl ListResourcesByNamespaceRequest {
    /// A request for the `kind` objects in `namespace`.
    pub fn new(api_version: &str, kind: &str, namespace: &str) -> Self {
        ListResourcesByNamespaceRequest {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            namespace: namespace.to_string(),
            ..Default::default()
        }
    }
}

/// `kubernetes/get_resource`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GetResourceRequest {
    /// `group/version` (or `v1`) of the kind.
    pub api_version: String,
    /// The kind, e.g. `ConfigMap`.
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// The namespace; `None` for cluster-scoped kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Ask the host not to answer from its cache.
    #[serde(default)]
    pub disable_cache: bool,
    /// Fields to keep in each answered object (dotted paths); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_masks: Option<Vec<String>>,
}

/// `kubernetes/can_i`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CanIRequest {
    /// The review to evaluate.
    pub subject_access_review: SubjectAccessReview,
    /// Ask the host not to answer from its cache.
    #[serde(default)]
    pub disable_cache: bool,
}

/// The spec of a SubjectAccessReview as Kubewarden sends it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SubjectAccessReview {
    /// The user's groups.
    #[serde(default)]
    pub groups: Option<Vec<String>>,
    /// What the user wants to do.
    pub resource_attributes: ResourceAttributes,
    /// The user name.
    pub user: String,
}

/// The attributes of one authorization check. `None` and `""` mean the same.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResourceAttributes {
    /// The API group.
    #[serde(default)]
    pub group: Option<String>,
    /// The object's name, for a check on one object.
    #[serde(default)]
    pub name: Option<String>,
    /// The namespace; `None` for cluster-scoped kinds.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The resource.
    pub resource: String,
    /// The subresource.
    #[serde(default)]
    pub subresource: Option<String>,
    /// The verb (`get`, `create`, `escalate`, ...).
    pub verb: String,
    /// The API version.
    #[serde(default)]
    pub version: Option<String>,
}

impl ResourceAttributes {
    /// `verb` on `group`/`resource`, any name, any namespace.
    pub fn new(verb: &str, group: &str, resource: &str) -> Self {
        ResourceAttributes {
            verb: verb.to_string(),
            group: Some(group.to_string()),
            resource: resource.to_string(),
            ..Default::default()
        }
    }

    /// Narrowed to a subresource (`""` means none).
    pub fn subresource(mut self, subresource: &str) -> Self {
        self.subresource = non_empty(subresource);
        self
    }

    /// Narrowed to one object (`""` means any).
    pub fn name(mut self, name: &str) -> Self {
        self.name = non_empty(name);
        self
    }

    /// Narrowed to one namespace (`""` means all).
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = non_empty(namespace);
        self
    }
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// `authorization.k8s.io/v1` SubjectAccessReviewStatus, as the host returns it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubjectAccessReviewStatus {
    /// Whether the action is allowed.
    pub allowed: bool,
    /// Whether an authorizer denied it outright.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied: Option<bool>,
    /// Why, in the authorizer's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// An error met while evaluating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation_error: Option<String>,
}
