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

/// The RBAC `audit --help` and `snapshot --help` tell a user to grant is
/// written out by hand (a literal, for clap's attribute): it must name
/// exactly the kinds the modules judge (their metadata's `rules`) and read
/// (their `contextAwareResources`), so that a new or changed module cannot
/// leave the help behind.
#[test]
fn the_rbac_the_help_asks_for_is_what_the_modules_judge_and_read() {
    use std::collections::BTreeSet;
    let mut wanted: BTreeSet<(String, String)> = BTreeSet::new();
    let policies = root().join("policies");
    for entry in std::fs::read_dir(&policies).unwrap() {
        let path = entry.unwrap().path().join("metadata.yml");
        let text = std::fs::read_to_string(&path).unwrap();
        let metadata: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
        let strings = |value: &serde_yaml_ng::Value| -> Vec<String> {
            value
                .as_sequence()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        };
        for rule in metadata["rules"].as_sequence().into_iter().flatten() {
            for group in strings(&rule["apiGroups"]) {
                for resource in strings(&rule["resources"]) {
                    wanted.insert((group.clone(), resource));
                }
            }
        }
        for read in metadata["contextAwareResources"]
            .as_sequence()
            .into_iter()
            .flatten()
        {
            let api_version = read["apiVersion"].as_str().unwrap();
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            // Every kind the modules read has a regular plural.
            let resource = format!("{}s", read["kind"].as_str().unwrap().to_lowercase());
            wanted.insert((group.to_string(), resource));
        }
    }
    let wanted: BTreeSet<(String, String)> = wanted
        .into_iter()
        .map(|(group, resource)| {
            let group = if group.is_empty() {
                "core".into()
            } else {
                group
            };
            (group, resource)
        })
        .collect();
    for (command, before, after) in [
        (
            "audit",
            "for the six modules of\nolm-guard:\n",
            "and, with --as",
        ),
        (
            "snapshot",
            "for the six modules of olm-guard:\n",
            "Each is checked first",
        ),
    ] {
        let help = stdout(&olm_guard(&[command, "--help"], ""));
        let start = help.find(before).unwrap_or_else(|| panic!("{help}")) + before.len();
        let end = start
            + help[start..]
                .find(after)
                .unwrap_or_else(|| panic!("{help}"));
        let mut named: BTreeSet<(String, String)> = BTreeSet::new();
        let mut group = String::new();
        for line in help[start..end].lines() {
            let line = line.trim();
            let resources = match line.split_once(": ") {
                Some((g, rest)) => {
                    group = g.to_string();
                    rest
                }
                None => line,
            };
            for resource in resources
                .split(',')
                .map(str::trim)
                .filter(|r| !r.is_empty())
            {
                named.insert((group.clone(), resource.to_string()));
            }
        }
        assert_eq!(named, wanted, "{command} --help");
    }
}
