//! `olm-guard-reference-bench` through its real path, cheaply: the six
//! modules of `dist/` on both hosts at a hundredth of the workloads' size,
//! one run each. Only the output's shape is checked, never a time (speed
//! is measured in benchmarks, not asserted in tests).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const MODULES: [&str; 6] = [
    "revision-uniqueness",
    "aggregation-escalation",
    "og-intersection",
    "catalog-union",
    "group-authorization",
    "scope-rbac",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_olm-guard-reference-bench"))
}

#[test]
fn help_has_examples_and_exit_codes() {
    let output = bench().arg("--help").output().unwrap();
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    for section in [
        "Examples:",
        "Exit codes:",
        "--iterations",
        "--dist",
        "--output",
    ] {
        assert!(help.contains(section), "--help lacks {section}:\n{help}");
    }
}

#[test]
fn every_module_on_both_hosts_as_json() {
    let root = workspace();
    let dist = root.join("dist");
    for module in MODULES {
        let wasm = dist.join(format!("{module}.wasm"));
        assert!(
            wasm.is_file(),
            "{} is missing: run make dist",
            wasm.display()
        );
    }
    let output = bench()
        .args(["--small", "--iterations", "1", "-o", "json", "--dist"])
        .arg(&dist)
        .arg("--testdata")
        .arg(root.join("testdata"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr:\n{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "-o json is not JSON ({e}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    assert!(
        report["machine"]
            .as_str()
            .is_some_and(|m| m.contains("cores"))
    );
    let rows = report["modules"].as_array().expect("a modules array");
    let named: Vec<&str> = rows.iter().filter_map(|r| r["policy"].as_str()).collect();
    assert_eq!(named, MODULES, "every module, in order");
    for row in rows {
        // Every input is admitted, and both hosts agreed before timing.
        assert_eq!(row["allowed"], true, "{row}");
        for field in ["ours_p50_ms", "reference_p50_ms", "ratio"] {
            assert!(row[field].is_number(), "{field} missing in {row}");
        }
        assert!(row["goal_met"].is_boolean(), "{row}");
    }
}

#[test]
fn table_names_the_machine_and_the_ratio() {
    let root = workspace();
    let output = bench()
        .args(["--iterations", "1", "--module", "catalog-union", "--dist"])
        .arg(root.join("dist"))
        .arg("--testdata")
        .arg(root.join("testdata"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("machine: "), "{stdout}");
    assert!(stdout.contains("catalog-union"), "{stdout}");
    assert!(stdout.contains("ratio"), "{stdout}");
}

#[test]
fn unknown_module_exits_2() {
    let output = bench()
        .args(["--module", "no-such-module"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no-such-module"));
}
