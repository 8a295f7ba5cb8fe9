//! What a user reads: every subcommand's `--help` and `run`'s readable
//! output, pinned as insta snapshots (`tests/snapshots/`), so a change to
//! either shows up in review. Update them with `INSTA_UPDATE=always cargo
//! test -p olm-guard-host --test help` and read the diff.

use std::process::{Command, Output};

mod common;
use common::{dist, output_with_stdin, root};

fn olm_guard(args: &[&str], stdin: &str) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_olm-guard"));
    command.args(args).current_dir(root());
    output_with_stdin(command, stdin)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every command a user runs, by its words after `olm-guard`.
const COMMANDS: &[&[&str]] = &[
    &["run"],
    &["test"],
    &["audit"],
    &["snapshot"],
    &["bench"],
    &["annotate"],
    &["inspect"],
    &["push"],
    &["pull"],
    &["keygen"],
    &["sign"],
    &["verify"],
    &["scaffold", "manifest"],
    &["scaffold", "policies"],
    &["scaffold", "artifacthub"],
    &["scaffold", "vap"],
    &["playground"],
];

#[test]
fn every_command_help_teaches_by_example_and_names_its_exit_codes() {
    let top = olm_guard(&["--help"], "");
    assert!(top.status.success());
    insta::assert_snapshot!("help", stdout(&top));
    for words in COMMANDS {
        let mut args = words.to_vec();
        args.push("--help");
        let out = olm_guard(&args, "");
        assert!(out.status.success(), "{words:?} --help failed");
        let help = stdout(&out);
        for section in ["Examples:", "Exit codes:"] {
            assert!(
                help.contains(section),
                "`{}` --help has no {section}\n{help}",
                words.join(" ")
            );
        }
        insta::assert_snapshot!(format!("help-{}", words.join("-")), help);
    }
}

/// The readable default of `run` on the real module: a denial, and a
/// migration shown as a diff.
#[test]
fn run_prints_a_readable_verdict_and_a_diff_of_the_mutation() {
    let module = dist().join("catalog-union.wasm").display().to_string();
    let broken = "apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  name: broken
  namespace: olm
spec:
  sourceType: grpc
";
    let out = olm_guard(&["run", &module, "--object", "-"], broken);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    insta::assert_snapshot!("run-denied", stdout(&out));

    let legacy = "apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  name: operatorhubio-catalog
  namespace: olm
spec:
  sourceType: grpc
  image: quay.io/operatorhubio/catalog:latest
  displayName: Community Operators
";
    let settings = root().join("testdata/catalog-union/r6-migrate-grpc-image/settings.json");
    let out = olm_guard(
        &[
            "run",
            &module,
            "--object",
            "-",
            "--settings",
            settings.to_str().unwrap(),
        ],
        legacy,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    assert!(text.contains("allowed, mutated"), "{text}");
    insta::assert_snapshot!("run-mutated", text);
}

/// `bench` says what it will run before the slow part, and warns that a
/// debug build's figures mean nothing (these tests run the debug binary).
#[test]
fn bench_says_what_it_runs_and_warns_on_a_debug_build() {
    let dist = dist().display().to_string();
    let out = olm_guard(
        &[
            "bench",
            "--workload",
            "og-2k",
            "--iterations",
            "1",
            "--one-shot-runs",
            "2",
            "--dist",
            &dist,
        ],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: this is a debug build; its figures are not representative"),
        "{stderr}"
    );
    assert!(
        stderr.contains("bench: og-2k: og-intersection: an OperatorGroup CREATE among 2,000 groups over 5,000 namespaces; runs each way: 1"),
        "{stderr}"
    );
    let table = stdout(&out);
    assert!(table.contains("og-2k"), "{table}");
    assert!(table.contains("whole process, median of 2"), "{table}");
    assert!(table.contains("compile cache warm"), "{table}");
}
