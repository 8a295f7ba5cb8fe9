//! Shared vocabulary of olm-guard.
//!
//! Everything here compiles natively and to `wasm32-wasip1`: policies use it
//! inside their modules, the host uses the same types to answer the module's
//! host calls, so the wire format is defined exactly once.
//!
//! Kubernetes treats `key: null` like an absent key. serde's
//! `#[serde(default)]` only covers the absent case, so lenient fields also
//! carry serde_with's `#[serde_as(as = "DefaultOnNull")]` (with
//! `#[serde_with::serde_as]` on the struct): `null` becomes the default.

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

pub mod admission;
pub mod context;
pub mod decode;
#[cfg(feature = "display")]
pub mod display;
pub mod evaluate;
pub mod listed;
pub mod meta;
pub mod object_request;
pub mod protocol;
#[cfg(feature = "response")]
pub mod response;
pub mod selector;
pub mod settings;
pub mod shared;
pub mod text;
pub mod verdict;

pub use admission::{AdmissionRequest, GroupVersionKind, Operation, UserInfo};
pub use context::{Capability, Cluster, ClusterExt, ContextError, ContextErrorKind, NoCluster};
pub use meta::ObjectMeta;
pub use settings::{PolicySettings, SettingsError};
pub use verdict::Verdict;
