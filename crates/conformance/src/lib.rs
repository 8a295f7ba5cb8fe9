//! Test-only package: `tests/reference_host.rs` runs every scenario under
//! `testdata/` through Kubewarden's own waPC host crates (`wapc` and
//! `wasmtime-provider`, as kubewarden-controller's
//! `crates/policy-evaluator` uses them) and requires the same answers as
//! olm-guard's host. Nothing here is published or linked into a binary.
