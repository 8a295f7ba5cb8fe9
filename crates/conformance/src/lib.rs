//! Kubewarden's own waPC host, driven the way kubewarden-controller's
//! `crates/policy-evaluator` and `crates/policy-server` drive it, as a
//! yardstick for olm-guard's host:
//!
//! - [`ReferenceHost`]: the `wapc` and `wasmtime-provider` crates over one
//!   wasmtime engine configured as policy-server configures it, with host
//!   calls answered through olm-guard's [`ContextHost`] (grants from the
//!   module's metadata, policy-server's denial texts). It evaluates either
//!   as policy-server does, a fresh waPC instance per operation
//!   ([`ReferenceHost::evaluate`]), or as `kwctl bench` does, one instance
//!   reused for every evaluation ([`ReferenceHost::instance`]).
//! - [`policy_evaluator`]: policy-evaluator's request type and response
//!   conversions, restated so that olm-guard's own are checked against
//!   them rather than used on both sides.
//! - [`verdict`]: what two hosts' answers must agree on.
//! - [`scenario`]: a `testdata/` scenario's request, settings and cluster.
//!
//! `tests/reference_host.rs` runs every scenario of `testdata/` through
//! both hosts; the `olm-guard-reference-bench` binary times them.
//!
//! [`ContextHost`]: olm_guard_evaluator::ContextHost

pub mod native;
pub mod policy_evaluator;
pub mod reference;
pub mod requests;
pub mod scenario;
pub mod served;
pub mod verdict;

pub use reference::{LongLivedInstance, POLICY_TIMEOUT_SECONDS, ReferenceAnswer, ReferenceHost};
pub use verdict::{Answer, Verdict, apply_patch};
