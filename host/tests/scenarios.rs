//! Every scenario in testdata/, through the real wasm modules in dist/
//! (build them with `make dist`; `make test` does).

use std::path::PathBuf;

use olm_guard_host::runtime::{Limits, Runtime};
use olm_guard_host::scenario::{self, PolicyStore};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn every_scenario_passes_through_its_module() {
    let root = root();
    let dist = std::env::var_os("OLM_GUARD_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("dist"));
    assert!(
        dist.is_dir(),
        "{} is missing: build the modules first (make dist)",
        dist.display()
    );
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
