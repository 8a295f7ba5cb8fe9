//! Payloads of Kubewarden's `kubernetes/*` host capabilities, byte-compatible
//! with policy-server and `kubewarden-policy-sdk` 0.17 (snake_case keys on the
//! requests, the SubjectAccessReview status in camelCase).

use serde::{Deserialize, Serialize};

/// `kubernetes/list_resources_all`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ListAllResourcesRequest {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_masks: Option<Vec<String>>,
}

impl ListAllResourcesRequest {
    pub fn new(api_version: &str, kind: &str) -> Self {
        ListAllResourcesRequest {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            ..Default::default()
        }
    }

    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }
}

/// `kubernetes/list_resources_by_namespace`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ListResourcesByNamespaceRequest {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_masks: Option<Vec<String>>,
}

impl ListResourcesByNamespaceRequest {
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
    pub api_version: String,
    pub kind: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default)]
    pub disable_cache: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_masks: Option<Vec<String>>,
}

/// `kubernetes/can_i`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CanIRequest {
    pub subject_access_review: SubjectAccessReview,
    #[serde(default)]
    pub disable_cache: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SubjectAccessReview {
    #[serde(default)]
    pub groups: Option<Vec<String>>,
    pub resource_attributes: ResourceAttributes,
    pub user: String,
}

/// The attributes of one authorization check. `None` and `""` mean the same.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResourceAttributes {
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    pub resource: String,
    #[serde(default)]
    pub subresource: Option<String>,
    pub verb: String,
    #[serde(default)]
    pub version: Option<String>,
}

impl ResourceAttributes {
    pub fn new(verb: &str, group: &str, resource: &str) -> Self {
        ResourceAttributes {
            verb: verb.to_string(),
            group: Some(group.to_string()),
            resource: resource.to_string(),
            ..Default::default()
        }
    }

    pub fn subresource(mut self, subresource: &str) -> Self {
        self.subresource = non_empty(subresource);
        self
    }

    pub fn name(mut self, name: &str) -> Self {
        self.name = non_empty(name);
        self
    }

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
    pub allowed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation_error: Option<String>,
}
