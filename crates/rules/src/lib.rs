//! The admission rules of olm-guard, one module per policy.
//!
//! Each exposes `Settings` (a [`olm_guard_core::PolicySettings`]) and
//! `pub fn validate(request, settings, cluster) -> Verdict`. The wasm modules
//! in `policies/` only register these with Kubewarden; [`registry::RULES`]
//! lists them all, once, for every other front end.

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

pub mod aggregation_escalation;
pub mod catalog_union;
pub mod common;
pub mod group_authorization;
pub mod og_intersection;
pub mod registry;
pub mod revision_uniqueness;
pub mod scope_rbac;

#[cfg(test)]
pub(crate) mod testing;
