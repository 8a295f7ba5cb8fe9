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

/// Reads the admission object of a custom resource, naming the field at
/// fault after `path_prefix` (`field spec.targetNamespaces has the wrong
/// type ...`) so that a user knows what to fix.
pub(crate) fn read_custom_resource<T: DeserializeOwned>(
    object: &Value,
    path_prefix: &str,
) -> Result<T, String> {
    if !object.is_object() {
        return Err("the object is missing or is not a JSON object".to_string());
    }
    olm_guard_core::decode::from_value(object).map_err(|e| {
        format!(
            "{path_prefix}{} has the wrong type ({}); write it as the CustomResourceDefinition \
             defines it",
            e.path, e.reason
        )
    })
}
