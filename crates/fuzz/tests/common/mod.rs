//! What this crate's test files share: the workspace's built modules and
//! the scenarios the fuzzer starts from. Each test file is a binary of its
//! own.

use std::path::PathBuf;

use olm_guard_evaluator::Policy;
use olm_guard_fuzz::Seed;
use olm_guard_runtime::Runtime;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `dist/<module>.wasm`, as `make test` builds it; a test without it says
/// how to build it.
pub fn module(runtime: &Runtime, module: &str) -> Policy {
    olm_guard_fuzz::load(runtime, &root().join("dist"), module)
        .unwrap_or_else(|e| panic!("{module}: {e:#}; run make dist"))
}

/// The module's scenarios in `testdata/`, the fuzzer's seeds.
pub fn seeds(module: &str) -> Vec<Seed> {
    olm_guard_fuzz::seeds(&root().join("testdata"), module).unwrap()
}
