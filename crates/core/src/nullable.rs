//! Kubernetes treats `key: null` like an absent key. serde's `#[serde(default)]`
//! only covers the absent case, so collection fields use [`deserialize`] too.

use serde::{Deserialize, Deserializer};

/// `#[serde(default, deserialize_with = "olm_guard_core::nullable::deserialize")]`:
/// `null` becomes `T::default()`.
pub fn deserialize<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}
