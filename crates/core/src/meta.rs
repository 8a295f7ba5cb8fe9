//! The parts of `metadata` the policies read. Lenient on purpose: a policy
//! must give a message, not a parse error, for odd but legal objects.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::nullable;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub name: String,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub generate_name: String,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub namespace: String,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub uid: String,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "nullable::deserialize")]
    pub owner_references: Vec<Value>,
    #[serde(default, deserialize_with = "nullable::deserialize")]
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

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).map(String::as_str)
    }
}
