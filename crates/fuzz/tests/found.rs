//! Inputs the fuzzer found breaking one of its properties, kept as fixed
//! cases through the host (the module in `dist/`, as `make test` builds
//! it), so that they stay fixed whatever the seeded run's inputs become.

mod common;

use std::sync::Arc;

use olm_guard_runtime::{Limits, Runtime};
use olm_guard_snapshot::Snapshot;
use serde_json::json;

/// Property 5 (seed 13): an OperatorGroup the request never looks at, with
/// `spec.targetNamespaces` a list of lists, failed the second evaluation of
/// an audit's batch (which read every group whole) while the request alone,
/// and the first of the batch, were allowed.
#[test]
fn og_intersection_batch_with_an_unreadable_group_answers_as_alone() {
    let runtime = Runtime::new(Limits::default()).unwrap();
    let policy = common::module(&runtime, "og-intersection");
    let seeds = common::seeds("og-intersection");
    let seed = seeds
        .iter()
        .find(|seed| seed.origin.ends_with("og-r3-mis-cased-annotation-allowed"))
        .expect("the scenario the finding came from");
    let mut objects = seed.objects.clone();
    let group = objects
        .iter_mut()
        .find(|o| o["kind"] == "OperatorGroup" && o["metadata"]["name"] == "olm-operators")
        .expect("the scenario's group in olm");
    group["spec"]["targetNamespaces"] = json!([["olm"], ["olm"]]);
    let snapshot: Arc<Snapshot> = Arc::new(Snapshot::try_from_objects(objects).unwrap());

    let alone = policy
        .validate(&seed.request, &seed.settings, snapshot.clone())
        .unwrap()
        .response;
    assert!(alone.allowed, "{alone:?}");
    let requests = vec![seed.request.clone(); 3];
    let batched = policy
        .validate_batch(&requests, &seed.settings, snapshot)
        .unwrap();
    assert_eq!(batched.len(), 3);
    for (at, response) in batched.iter().enumerate() {
        assert_eq!(
            (response.allowed, &response.status, &response.warnings),
            (alone.allowed, &alone.status, &alone.warnings),
            "evaluation {at} of the batch"
        );
    }
}
