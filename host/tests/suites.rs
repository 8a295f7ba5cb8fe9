//! `olm-guard test SUITE.yaml`: declarative suites (docs/test-suites.md)
//! through the built binary and the real modules — the shipped suites pass,
//! every kind of wrong expectation fails the run and says why, a broken
//! suite file is refused naming the field, and cases answer host calls from
//! inline objects or a recorded session.

use serde_json::Value;

mod common;
use common::{dist, module, olm_guard, root, text, write};

/// `test -o json` on `paths`: the report, and the exit code.
fn report(paths: &[&str]) -> (Value, Option<i32>) {
    let dist = dist().display().to_string();
    let mut args = vec!["test", "--dist", &dist, "-o", "json"];
    args.extend(paths);
    let out = olm_guard(&args);
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)));
    (report, out.status.code())
}

#[test]
fn every_shipped_suite_passes_and_covers_each_result() {
    let suites: Vec<String> = std::fs::read_dir(root().join("examples/suites"))
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".yaml"))
        .collect();
    // One per module, and two judging whole installs (suites_manifests.rs).
    assert_eq!(
        suites.len(),
        8,
        "one suite per module, two installs: {suites:?}"
    );
    let paths: Vec<&str> = suites.iter().map(String::as_str).collect();
    let (report, code) = report(&paths);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["failed"], 0);
    let results = report["results"].as_array().unwrap();
    assert_eq!(report["passed"].as_u64().unwrap() as usize, results.len());
    let verdicts: std::collections::BTreeSet<&str> = results
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    for verdict in ["pass", "warn", "fail", "skipped", "settings refused"] {
        assert!(
            verdicts.contains(verdict),
            "no case gives {verdict}: {verdicts:?}"
        );
    }
    for module in olm_guard_rules::registry::names() {
        assert!(
            results.iter().any(|r| r["policy"] == module),
            "no shipped case runs {module}"
        );
    }
}

const BROKEN: &str = "apiVersion: operators.coreos.com/v1alpha1
    kind: CatalogSource
    metadata: {name: broken, namespace: olm}
    spec: {sourceType: grpc}";

/// Each case expects something the module does not give; each must fail,
/// with the mismatch in its failure.
#[test]
fn every_wrong_expectation_fails_the_run_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "kind: TestSuite
module: catalog-union
cases:
- name: result
  object:
    {BROKEN}
  expect: {{result: pass}}
- name: message
  object:
    {BROKEN}
  expect: {{result: fail, message: no such words}}
- name: regex
  object:
    {BROKEN}
  expect: {{result: fail, messageRegex: '^configures none$'}}
- name: skip
  object:
    {BROKEN}
  expect: {{result: skip}}
- name: settings
  settings: {{migrateLegacy: true}}
  object:
    {BROKEN}
  expect: {{settingsError: migrateLegacy}}
- name: patched
  settings: {{migrateLegacy: true}}
  object:
    apiVersion: operators.coreos.com/v1alpha1
    kind: CatalogSource
    metadata: {{name: legacy, namespace: olm}}
    spec: {{sourceType: grpc, image: 'quay.io/x:1'}}
  expect:
    result: warn
    patchedObject: {{spec: {{catalogImageSource: {{catalogImage: 'quay.io/y:2'}}}}}}
- name: unstated patch
  settings: {{migrateLegacy: true}}
  object:
    apiVersion: operators.coreos.com/v1alpha1
    kind: CatalogSource
    metadata: {{name: legacy, namespace: olm}}
    spec: {{sourceType: grpc, image: 'quay.io/x:1'}}
  expect: {{result: warn}}
- name: right
  object:
    {BROKEN}
  expect: {{result: fail, messageRegex: 'configures none'}}
"
    );
    let path = write(dir.path(), "suite.yaml", &suite);
    let (report, code) = report(&[&path]);
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64()),
        (Some(1), Some(7))
    );
    let failure = |name: &str| -> String {
        let result = report["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| {
                r["scenario"]
                    .as_str()
                    .unwrap()
                    .ends_with(&format!("#{name}"))
            })
            .unwrap_or_else(|| panic!("no result for {name}"));
        result["failures"].to_string()
    };
    assert!(
        failure("result").contains("expected pass, got fail"),
        "{}",
        failure("result")
    );
    assert!(
        failure("message").contains("does not contain \\\"no such words\\\""),
        "{}",
        failure("message")
    );
    assert!(
        failure("regex").contains("does not match /^configures none$/"),
        "{}",
        failure("regex")
    );
    assert!(
        failure("skip").contains("expected skip, but catalog-union's metadata rules cover"),
        "{}",
        failure("skip")
    );
    assert!(
        failure("settings").contains("settings were accepted, expected a rejection"),
        "{}",
        failure("settings")
    );
    assert!(
        failure("patched")
            .contains("patched object differs at /spec/catalogImageSource/catalogImage"),
        "{}",
        failure("patched")
    );
    // A patch the case does not state is not expected.
    assert!(
        failure("unstated patch").contains("expected mutated=false"),
        "{}",
        failure("unstated patch")
    );
}

#[test]
fn a_broken_suite_file_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    for (content, expected) in [
        (
            "kind: TestSuite\ncases:\n- name: a\n  object: {kind: X}\n  expect: {result: maybe}\n",
            "suite.cases[0].expect.result: unknown variant `maybe`, expected one of `pass`, `warn`, `fail`, `skip`",
        ),
        (
            "kind: Suite\ncases: []\n",
            "kind is \"Suite\": a suite file declares `kind: TestSuite`",
        ),
        (
            "kind: TestSuite\ncases:\n- {name: a, expect: {result: pass}}\n- {name: a, expect: {result: pass}}\n",
            "cases[1].name \"a\" is used twice",
        ),
        (
            "kind: TestSuite\ncases:\n- {name: a, expects: {result: pass}}\n",
            "unknown field `expects`",
        ),
        // An expectation that states no verdict would pass whatever the
        // module answers.
        (
            "kind: TestSuite\nmodule: catalog-union\ncases:\n- {name: a, object: {kind: X}, expect: {message: x}}\n",
            "cases[0].expect.result is missing: pass (admitted, no warning), warn",
        ),
        (
            "kind: TestSuite\nmodule: catalog-union\ncases:\n- {name: a, object: {kind: X}, expect: {result: pass, settingsError: x}}\n",
            "cases[0].expect.settingsError: a case with refused settings has no result",
        ),
        (
            "kind: TestSuite\nmodule: catalog-union\ncases:\n- {name: a, object: {kind: X}, expect: {settingsError: x, message: y}}\n",
            "cases[0].expect.message: never checked when `settingsError` expects the settings refused",
        ),
        (
            "kind: TestSuite\nmodule: catalog-union\ncases:\n- {name: a, object: {kind: X}, expect: {result: pass, mutated: false, patchedObject: {}}}\n",
            "cases[0].expect.mutated: `false` contradicts `patchedObject`",
        ),
    ] {
        let path = write(dir.path(), "suite.yaml", content);
        let out = olm_guard(&["test", &path, "--dist", &dist().display().to_string()]);
        assert_eq!(out.status.code(), Some(2), "{content}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(expected), "{content}\n{stderr}");
        assert!(stderr.contains("suite.yaml"), "names the file: {stderr}");
    }
}

/// A case without input, or without a module, fails alone; the others run.
#[test]
fn a_case_that_cannot_run_fails_alone_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "kind: TestSuite
cases:
- name: no module
  object:
    {BROKEN}
  expect: {{result: fail}}
- name: no input
  module: catalog-union
  expect: {{result: fail}}
- name: fine
  module: catalog-union
  object:
    {BROKEN}
  expect: {{result: fail}}
"
    );
    let path = write(dir.path(), "suite.yaml", &suite);
    let (report, code) = report(&[&path]);
    assert_eq!(code, Some(1));
    let all = report["results"].to_string();
    assert!(
        all.contains("no module: set `module` on the case or on the suite"),
        "{all}"
    );
    assert!(all.contains("no input: give `object`"), "{all}");
    assert_eq!(report["passed"], 1);
}

/// The cluster inline, and the same evaluation replayed from a session
/// recorded by `run --record`: both give the scenario's verdict.
#[test]
fn cases_read_inline_clusters_and_recorded_sessions() {
    let scenario = root().join("testdata/revision-uniqueness/create-duplicate-of-active-denied");
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("session.yml");
    let recorded = olm_guard(&[
        "run",
        &module("revision-uniqueness").display().to_string(),
        "--request",
        &scenario.join("request.json").display().to_string(),
        "--cluster",
        &scenario.join("cluster.yaml").display().to_string(),
        "--record",
        &session.display().to_string(),
    ]);
    assert!(recorded.status.success(), "{}", text(&recorded.stderr));
    let cluster: Vec<Value> = serde_yaml_ng::Deserializer::from_str(
        &std::fs::read_to_string(scenario.join("cluster.yaml")).unwrap(),
    )
    .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
    .collect();
    let review: Value =
        serde_json::from_str(&std::fs::read_to_string(scenario.join("request.json")).unwrap())
            .unwrap();
    let request = review.get("request").unwrap_or(&review);
    let suite = serde_json::json!({
        "kind": "TestSuite",
        "module": "revision-uniqueness",
        "cases": [
            {"name": "inline", "request": request, "cluster": cluster,
             "expect": {"result": "fail", "message": "revision"}},
            {"name": "replayed", "request": request, "session": "session.yml",
             "expect": {"result": "fail", "message": "revision"}},
            {"name": "empty cluster", "request": request,
             "expect": {"result": "pass"}},
        ]
    });
    let path = write(dir.path(), "suite.json", &suite.to_string());
    let (report, code) = report(&[&path]);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["passed"], 3);
}

#[test]
fn run_pattern_picks_cases_across_suites_and_scenarios() {
    let suite = root().join("examples/suites/catalog-union.yaml");
    let dist = dist().display().to_string();
    let out = olm_guard(&[
        "test",
        &suite.display().to_string(),
        "testdata/catalog-union",
        "--dist",
        &dist,
        "--run",
        "migrate",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("catalog-union.yaml#with migrateLegacy"),
        "{stdout}"
    );
    assert!(
        stdout.contains("testdata/catalog-union/r6-migrate-grpc-image"),
        "{stdout}"
    );
    assert!(!stdout.contains("no source"), "{stdout}");
}

#[test]
fn the_report_is_yaml_too() {
    let suite = root().join("examples/suites/scope-rbac.yaml");
    let dist = dist().display().to_string();
    let out = olm_guard(&[
        "test",
        &suite.display().to_string(),
        "--dist",
        &dist,
        "-o",
        "yaml",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
    assert_eq!(report["failed"], 0);
    assert_eq!(
        report["passed"].as_u64(),
        Some(report["results"].as_array().unwrap().len() as u64)
    );
    assert!(text(&out.stderr).contains("passed, 0 failed"));
}
