//! The scenario tree's shape, and the large snapshots through the real wasm
//! modules in dist/ (build them with `make dist`; `make test` does). The
//! scenarios themselves run once, through the binary: `olm-guard test
//! testdata` in `make test`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use olm_guard_bench::Workload;
use olm_guard_evaluator::scenario::{self, Expect, PolicyStore};
use olm_guard_rules::registry;
use olm_guard_runtime::{Limits, Runtime};

mod common;
use common::{dist, root};

fn directories(path: PathBuf) -> BTreeSet<String> {
    std::fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The directory of `testdata/` that is no rule's scenario tree: upstream
/// files the tests validate against (testdata/upstream/README.md).
const UPSTREAM: &str = "upstream";

/// The registry is the one list of rules: every policy crate and every
/// scenario tree belongs to a registered rule, and every rule has both.
#[test]
fn registry_policies_and_testdata_name_the_same_rules() {
    let registered: BTreeSet<String> = registry::names().map(String::from).collect();
    assert_eq!(directories(root().join("policies")), registered);
    let mut trees = directories(root().join("testdata"));
    assert!(trees.remove(UPSTREAM), "testdata/{UPSTREAM} is missing");
    assert_eq!(trees, registered);
    assert!(
        scenario::discover(&[root().join("testdata").join(UPSTREAM)])
            .unwrap()
            .is_empty(),
        "testdata/{UPSTREAM} holds upstream files, not scenarios"
    );
}

/// Every expect file of `testdata/` states its verdict, and says in so many
/// words what it expects of warnings (`warnings_contain`, or
/// `no_warnings: true`) and of a patch (`mutated`), so a reader needs no
/// defaults (HACKING.md, "Scenario format"). `scripts/state-expectations.py`
/// writes the defaults into files that leave them out.
#[test]
fn every_testdata_expectation_is_explicit() {
    let mut vague = Vec::new();
    let scenarios = scenario::discover(&[root().join("testdata")]).unwrap();
    assert!(scenarios.len() > 300, "{} scenarios", scenarios.len());
    for dir in scenarios {
        let path = scenario::input_file(&dir, "expect").unwrap().unwrap();
        let expect = match Expect::read(&path) {
            Ok(expect) => expect,
            Err(e) => {
                vague.push(format!("{}: {e:#}", dir.display()));
                continue;
            }
        };
        if expect.settings_error_contains.is_some() {
            continue;
        }
        let mut unsaid = Vec::new();
        if expect.warnings_contain.is_empty() && !expect.no_warnings {
            unsaid.push("warnings_contain or \"no_warnings\": true");
        }
        if expect.mutated.is_none() {
            unsaid.push("mutated");
        }
        if !unsaid.is_empty() {
            vague.push(format!("{}: add {}", path.display(), unsaid.join(" and ")));
        }
    }
    assert!(
        vague.is_empty(),
        "{}\n(scripts/state-expectations.py writes the defaults: no warning, no patch)",
        vague.join("\n")
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
