//! The bounded, seeded fuzz run of `make test`: every registered module,
//! through the host, keeps its five properties on mutated scenario inputs.

mod common;

use olm_guard_rules::registry;
use olm_guard_runtime::{Limits, Runtime};

const ITERATIONS: u64 = 300;
const SEED: u64 = 20261123;

#[test]
fn every_module_keeps_its_properties_under_mutation() {
    let runtime = Runtime::new(Limits::default()).unwrap();
    let mut failures = Vec::new();
    for module in registry::names() {
        let policy = common::module(&runtime, module);
        let seeds = common::seeds(module);
        assert!(
            !seeds.is_empty(),
            "{module} has no scenario requests to mutate"
        );
        let report = olm_guard_fuzz::run(&policy, &seeds, ITERATIONS, SEED);
        eprintln!(
            "fuzz {module}: {} inputs, {} executions, {} refused snapshots, {:.1} s, {} findings",
            report.inputs,
            report.executions,
            report.refused_snapshots,
            report.elapsed.as_secs_f64(),
            report.findings.len()
        );
        assert!(
            report.executions >= ITERATIONS / 2,
            "{module}: too few executions"
        );
        for finding in &report.findings {
            failures.push(format!(
                "{module}: {} (from {}): {}",
                finding.property,
                finding.origin.display(),
                finding.input
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
