//! Every scenario in testdata/, through the real wasm modules in dist/
//! (build them with `make dist`; `make test` does).

use std::path::PathBuf;

use std::sync::Arc;

use olm_guard_host::runtime::{Limits, Runtime};
use olm_guard_host::scenario::{self, PolicyStore};
use olm_guard_host::synthetic::Workload;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn dist() -> PathBuf {
    let dist = std::env::var_os("OLM_GUARD_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("dist"));
    assert!(
        dist.is_dir(),
        "{} is missing: build the modules first (make dist)",
        dist.display()
    );
    dist
}

#[test]
fn every_scenario_passes_through_its_module() {
    let root = root();
    let dist = dist();
    // Scenario metadata fallbacks are relative to the project root.
    std::env::set_current_dir(&root).unwrap();
    let dirs = scenario::discover(&[root.join("testdata")]).unwrap();
    let runtime = Runtime::new(Limits::default()).unwrap();
    let mut store = PolicyStore::new(&runtime, dist);
    let failures: Vec<String> = dirs
        .iter()
        .map(|dir| scenario::run(dir, &mut store))
        .filter(|outcome| !outcome.passed())
        .map(|outcome| format!("{}: {}", outcome.dir.display(), outcome.failures.join("; ")))
        .collect();
    assert!(!dirs.is_empty(), "no scenarios found in testdata/");
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n")
    );
}

#[test]
fn every_policy_has_scenarios_for_both_verdicts() {
    let root = root();
    for entry in std::fs::read_dir(root.join("policies")).unwrap() {
        let policy = entry.unwrap().file_name().to_string_lossy().into_owned();
        let dirs = scenario::discover(&[root.join("testdata").join(&policy)]).unwrap();
        let verdicts: Vec<Option<bool>> = dirs
            .iter()
            .map(|d| {
                let text = std::fs::read_to_string(d.join("expect.json")).unwrap();
                let expect: serde_json::Value = serde_json::from_str(&text).unwrap();
                expect["allowed"].as_bool()
            })
            .collect();
        for verdict in [true, false] {
            assert!(
                verdicts.contains(&Some(verdict)),
                "{policy} has no scenario expecting allowed={verdict}"
            );
        }
    }
}

/// The sizes the issues name (10,000 ClusterObjectSets; 5,000 ClusterRoles and
/// 5,000 bindings; 2,000 OperatorGroups over 5,000 namespaces) still evaluate
/// through the modules within the default limits, to the expected verdict.
#[test]
fn large_snapshots_evaluate_through_the_modules() {
    std::env::set_current_dir(root()).unwrap();
    let runtime = Runtime::new(Limits::default()).unwrap();
    let mut store = PolicyStore::new(&runtime, dist());
    for workload in Workload::all() {
        let policy = store.get(workload.policy).unwrap();
        let evaluation = policy
            .validate(
                &workload.request,
                &workload.settings,
                Arc::new(workload.snapshot),
            )
            .unwrap_or_else(|e| panic!("{}: {e}", workload.name));
        assert_eq!(
            evaluation.response.allowed,
            workload.expect_allowed,
            "{}: {}",
            workload.name,
            evaluation.response.message()
        );
    }
}
