//! The admission rules of olm-guard, one module per policy.
//!
//! Each exposes `Settings` (a [`olm_guard_core::PolicySettings`]) and
//! `pub fn validate(request, settings, cluster) -> Verdict`. The wasm modules
//! in `policies/` only register these with Kubewarden.

pub mod aggregation_escalation;
pub mod catalog_union;
pub mod group_authorization;
pub mod og_intersection;
pub mod revision_uniqueness;
pub mod scope_rbac;

#[cfg(test)]
pub(crate) mod testing;
