//! The `admission.k8s.io/v1` AdmissionRequest as Kubewarden hands it to a
//! module (camelCase keys, optional fields omitted).
//!
//! We do not use the SDK's `KubernetesAdmissionRequest`: it drops
//! `resource.resource` and fails on a `null` where a map is expected, and a
//! policy must answer every JSON with a verdict.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::nullable;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    #[default]
    Create,
    Update,
    Delete,
    Connect,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersionKind {
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub group: String,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub version: String,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub kind: String,
}

impl GroupVersionKind {
    pub fn is(&self, group: &str, kind: &str) -> bool {
        self.group == group && self.kind == kind
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersionResource {
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub group: String,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub version: String,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub resource: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UserInfo {
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub username: String,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub uid: String,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub groups: Vec<String>,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// `user "alice" (groups=[a, b])`, the way the API server names a requester.
    pub fn describe(&self) -> String {
        format!(
            "user \"{}\" (groups=[{}])",
            self.username,
            self.groups.join(", ")
        )
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub uid: String,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub kind: GroupVersionKind,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub resource: GroupVersionResource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_kind: Option<GroupVersionKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_resource: Option<GroupVersionResource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_sub_resource: Option<String>,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub name: String,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub namespace: String,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub operation: Operation,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub user_info: UserInfo,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub object: Value,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub old_object: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub options: Value,
}

impl AdmissionRequest {
    /// True when the request targets `group`/`kind` itself, not a subresource
    /// such as `status`: every policy accepts everything else untouched.
    pub fn targets(&self, group: &str, kind: &str) -> bool {
        self.kind.is(group, kind) && self.sub_resource.as_deref().unwrap_or("").is_empty()
    }
}
