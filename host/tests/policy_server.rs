//! Where policy-server shapes a module's answer, ours is shaped the same,
//! through the real modules: a patch from a policy that may not mutate
//! (`mutating: false`) is a rejection with policy-server's message
//! (kubewarden/kubewarden-controller, `crates/policy-server/src/evaluation/
//! admission_response_handler.rs`, `apply_mutation_constraint`).

use std::sync::Arc;

use olm_guard_evaluator::{Policy, input};
use olm_guard_runtime::{Limits, Runtime};
use olm_guard_snapshot::Snapshot;

mod common;
use common::{module, root};

/// group-authorization filling `spec.group` from the owner label: a
/// mutation, with the module's metadata saying `mutating` or not.
fn backfill(mutating: bool) -> olm_guard_evaluator::AdmissionResponse {
    let dir = root().join("testdata/group-authorization/backfill-create-mutated");
    let runtime = Runtime::new(Limits::default()).unwrap();
    let wasm = std::fs::read(module("group-authorization")).unwrap();
    let mut metadata = Policy::from_bytes(&runtime, "group-authorization", &wasm, None)
        .unwrap()
        .metadata
        .expect("an annotated module");
    metadata.mutating = mutating;
    let policy =
        Policy::from_bytes(&runtime, "group-authorization", &wasm, Some(metadata)).unwrap();
    assert_eq!(policy.allowed_to_mutate(), mutating);
    let request =
        input::admission_request(input::read_document(&dir.join("request.json")).unwrap()).unwrap();
    let settings = input::read_document(&dir.join("settings.json")).unwrap();
    let cluster =
        Snapshot::from_yaml(&std::fs::read_to_string(dir.join("cluster.yaml")).unwrap()).unwrap();
    policy
        .validate(&request, &settings, Arc::new(cluster))
        .unwrap()
        .response
}

#[test]
fn a_mutating_policy_patches() {
    let response = backfill(true);
    assert!(response.allowed, "{}", response.message());
    assert_eq!(response.patch_type.as_deref(), Some("JSONPatch"));
    assert!(response.patch.is_some());
}

#[test]
fn a_patch_from_a_policy_that_may_not_mutate_is_a_rejection() {
    let response = backfill(false);
    assert!(!response.allowed);
    assert_eq!(
        response.message(),
        "Request rejected by policy group-authorization. The policy attempted to mutate the \
         request, but it is currently configured to not allow mutations."
    );
    assert!(response.patch.is_none() && response.patch_type.is_none());
    // The module's own warning still reaches the client, as policy-server
    // keeps every other field of the response.
    let warnings = response.warnings.unwrap_or_default();
    assert!(
        warnings.iter().any(|w| w.contains("spec.group was set")),
        "{warnings:?}"
    );
}
