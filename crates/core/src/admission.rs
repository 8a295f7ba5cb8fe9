//! The `admission.k8s.io/v1` AdmissionRequest as Kubewarden hands it to a
//! module (camelCase keys, optional fields omitted).
//!
//! We do not use the SDK's `KubernetesAdmissionRequest`: it drops
//! `resource.resource` and fails on a `null` where a map is expected, and a
//! policy must answer every JSON with a verdict.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::DefaultOnNull;

/// The operation of an admission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    /// `CREATE`: a new object.
    #[default]
    Create,
    /// `UPDATE`: `object` replaces `oldObject`.
    Update,
    /// `DELETE`: `oldObject` goes away.
    Delete,
    /// `CONNECT`: a connection to a subresource (e.g. `exec`).
    Connect,
}

/// `group`, `version`, `kind` of an object (the core group is `""`).
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersionKind {
    /// The API group; `""` for the core group.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub group: String,
    /// The API version.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub version: String,
    /// The kind.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub kind: String,
}

impl GroupVersionKind {
    /// Whether this is `group`/`kind`, any version.
    pub fn is(&self, group: &str, kind: &str) -> bool {
        self.group == group && self.kind == kind
    }
}

/// `group`, `version`, `resource` an object is served as.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersionResource {
    /// The API group; `""` for the core group.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub group: String,
    /// The API version.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub version: String,
    /// The resource (plural, lower case).
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub resource: String,
}

/// Who sent the request, as the API server authenticated them.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UserInfo {
    /// The user name (`system:serviceaccount:ns:name` for service accounts).
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub username: String,
    /// The user's or the request's UID.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub uid: String,
    /// The groups the user is in.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub groups: Vec<String>,
    /// Extra attributes from the authenticator.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// Whether the user is in `group`.
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

/// An `admission.k8s.io/v1` AdmissionRequest.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    /// The user's or the request's UID.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub uid: String,
    /// The kind of `object`.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub kind: GroupVersionKind,
    /// The resource being written.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub resource: GroupVersionResource,
    /// The subresource (e.g. `status`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    /// The kind the client asked for, when converted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_kind: Option<GroupVersionKind>,
    /// The resource the client asked for, when converted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_resource: Option<GroupVersionResource>,
    /// The subresource the client asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_sub_resource: Option<String>,
    /// The object's name (empty on a CREATE with `generateName`).
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub name: String,
    /// The object's namespace; empty for cluster-scoped objects.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub namespace: String,
    /// CREATE, UPDATE, DELETE or CONNECT.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub operation: Operation,
    /// The requester.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub user_info: UserInfo,
    /// The object being written (`null` on DELETE).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub object: Value,
    /// The stored object (UPDATE and DELETE).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub old_object: Value,
    /// Whether nothing will be persisted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// The operation's options (`CreateOptions`, ...).
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
