//! The parts of `metadata` the policies read. Lenient on purpose: a policy
//! must give a message, not a parse error, for odd but legal objects.
//! Kubernetes treats `key: null` like an absent key, so every field is
//! `DefaultOnNull` as well as `default`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::DefaultOnNull;

/// The `metadata` of any object, as far as the rules read it.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// `metadata.name`.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub name: String,
    /// `metadata.generateName`.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub generate_name: String,
    /// `metadata.namespace`; empty for cluster-scoped objects.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub namespace: String,
    /// `metadata.uid`.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub uid: String,
    /// `metadata.labels`.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// `metadata.annotations`.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// `metadata.ownerReferences`, unread.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub owner_references: Vec<Value>,
    /// `metadata.finalizers`.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(default)]
    pub finalizers: Vec<String>,
}

impl ObjectMeta {
    /// Reads `metadata` of any JSON object; a missing or malformed
    /// `metadata` reads as empty.
    pub fn of(object: &Value) -> ObjectMeta {
        object
            .get("metadata")
            .and_then(|m| ObjectMeta::deserialize(m).ok())
            .unwrap_or_default()
    }

    /// The value of label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }

    /// The value of annotation `key`.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).map(String::as_str)
    }
}
