//! OLM resources as the policies read them, and OLM's own algorithms
//! (provided-API sets, namespace-set algebra) written once.

// Input is untrusted JSON: rules and the code they call answer with a
// verdict, never a panic. Tests may unwrap.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

pub mod catalog_source;
pub mod cluster_object_set;
pub mod operator_group;
pub mod scope;

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Why the admission object of a custom resource cannot be read as its
/// kind: what a rule puts in its denial, naming the field and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    /// No object, or JSON that is not a map.
    #[error("the object is missing or is not a JSON object")]
    NotAnObject,
    /// The object as a whole is not a map (a ClusterObjectSet's words).
    #[error("the object is {found}, not a {kind}; send the object as a JSON map")]
    NotAMap {
        /// The kind read (`ClusterObjectSet`).
        kind: &'static str,
        /// The JSON type found (`a list`).
        found: &'static str,
    },
    /// A top-level field that must be a map (`metadata`, `spec`) is not.
    #[error("{field} is {found}; it must be a map of fields")]
    FieldNotAMap {
        /// `metadata` or `spec`.
        field: &'static str,
        /// The JSON type found.
        found: &'static str,
    },
    /// A field of the wrong type, by its path (`spec.targetNamespaces`),
    /// after `prefix` (`field `, or nothing), with what to do.
    #[error("{prefix}{path} has the wrong type ({reason}){fix}")]
    WrongType {
        /// Words before the path.
        prefix: &'static str,
        /// The field's path.
        path: String,
        /// serde's account of the mismatch.
        reason: String,
        /// `; write it as the CustomResourceDefinition defines it`, or
        /// nothing.
        fix: &'static str,
    },
}

/// What a wrong type in a custom resource tells its writer to do.
const AS_THE_CRD_DEFINES_IT: &str = "; write it as the CustomResourceDefinition defines it";

/// Reads the admission object of a custom resource, naming the field at
/// fault after `path_prefix` (`field spec.targetNamespaces has the wrong
/// type ...`) so that a user knows what to fix.
pub(crate) fn read_custom_resource<T: DeserializeOwned>(
    object: &Value,
    path_prefix: &'static str,
) -> Result<T, ObjectError> {
    if !object.is_object() {
        return Err(ObjectError::NotAnObject);
    }
    olm_guard_core::decode::from_value(object).map_err(|e| ObjectError::WrongType {
        prefix: path_prefix,
        path: e.path,
        reason: e.reason,
        fix: AS_THE_CRD_DEFINES_IT,
    })
}
