//! Suite cases that judge a whole manifest or an operator bundle with every
//! module (`modules: all`, `objects`, `bundle`; docs/test-suites.md),
//! through the built binary and the real modules in `dist/`: the shipped
//! install suites pass, an install that must pass but conflicts fails the
//! run naming the denial, per-object expectations are checked, and bad
//! input is refused naming the file and the field.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

mod common;
use common::{dist, olm_guard, root, text};

const CONFLICT: &str = "examples/preflight/conflicting-operatorgroups.yaml";
const BUNDLE: &str = "examples/bundles/memcached-operator";

/// A suite file `suite.yaml` in `dir`.
fn suite(dir: &Path, content: &str) -> String {
    let path = dir.join("suite.yaml");
    std::fs::write(&path, content).unwrap();
    path.display().to_string()
}

/// `olm-guard test --dist DIST` with `args`.
fn test(args: &[&str]) -> Output {
    let dist = dist().display().to_string();
    let mut all = vec!["test", "--dist", dist.as_str()];
    all.extend_from_slice(args);
    olm_guard(&all)
}

/// `test -o json` on `paths`: the report, and the exit code.
fn report(paths: &[&str]) -> (Value, Option<i32>) {
    let mut args = vec!["-o", "json"];
    args.extend_from_slice(paths);
    let out = test(&args);
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)));
    (report, out.status.code())
}

/// A repository file as an absolute path, for suites written elsewhere.
fn repo(path: &str) -> String {
    root().join(path).display().to_string()
}

/// The result labelled `…#name`.
fn result<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["scenario"]
                .as_str()
                .unwrap()
                .ends_with(&format!("#{name}"))
        })
        .unwrap_or_else(|| panic!("no case {name}: {report:#}"))
}

/// The shipped install suites pass: the memcached bundle beside its
/// OperatorGroup, the same bundle refused beside a rival group, OLM's
/// quickstart (a warning: catalog-union migrates its CatalogSource) and the
/// conflicting pair; each case reports every (object, module) evaluated.
#[test]
fn the_shipped_install_suites_pass_and_report_every_evaluation() {
    let (report, code) = report(&[
        "examples/suites/preflight-memcached.yaml",
        "examples/suites/preflight-olm.yaml",
    ]);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["failed"], 0, "{report:#}");
    assert_eq!(report["passed"], 5, "{report:#}");

    let installs = result(
        &report,
        "the bundle installs next to its own global OperatorGroup",
    );
    assert_eq!(installs["verdict"], "pass");
    assert_eq!(installs["policy"], "all");
    let evaluated: Vec<(&str, &str)> = installs["evaluations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["object"]["kind"].as_str().unwrap(),
                e["policy"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        evaluated,
        [
            ("OperatorGroup", "og-intersection"),
            ("ClusterServiceVersion", "og-intersection")
        ]
    );

    let rival = result(
        &report,
        "another global group already provides Memcached, so the CSV is refused",
    );
    assert_eq!(rival["verdict"], "fail");
    let message = rival["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "ClusterServiceVersion memcached/memcached-operator.v0.0.1 by og-intersection:"
        ),
        "{message}"
    );

    let quickstart = result(
        &report,
        "the quickstart installs, its legacy CatalogSource migrated",
    );
    assert_eq!(quickstart["verdict"], "warn");
    assert_eq!(quickstart["evaluations"].as_array().unwrap().len(), 7);
    assert_eq!(quickstart["message"], "13 objects, 7 evaluations, 0 denied");
    assert_eq!(
        result(
            &report,
            "two global OperatorGroups providing the same API conflict"
        )["verdict"],
        "fail"
    );
}

/// An install that must pass but does not: the run exits 1 and names the
/// denial (object, document, module, message); a wrong per-object
/// expectation says what was expected and what the module said. The text
/// table and JUnit carry the same.
#[test]
fn an_install_that_must_pass_but_conflicts_fails_the_run_naming_the_denial() {
    let dir = tempfile::tempdir().unwrap();
    let path = suite(
        dir.path(),
        &format!(
            "kind: TestSuite
modules: all
cases:
- name: the pair must install
  objects: {conflict}
  expect: {{result: pass}}
- name: the wrong group is blamed
  objects: [{conflict}]
  expect:
    result: fail
    results:
    - {{object: OperatorGroup/nginx-a, module: og-intersection, result: fail}}
    - {{object: OperatorGroup/nginx-b/nginx-b, module: og-intersection, result: fail, message: no such text}}
    - {{object: Namespace/nginx-a, module: og-intersection, result: pass}}
",
            conflict = repo(CONFLICT)
        ),
    );
    let (report, code) = report(&[&path]);
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["failed"], 2, "{report:#}");

    let gate = result(&report, "the pair must install");
    assert_eq!(gate["verdict"], "fail");
    let failures: Vec<&str> = gate["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert_eq!(failures[0], "expected pass of the whole install, got fail");
    assert!(
        failures[1].starts_with(&format!(
            "OperatorGroup nginx-b/nginx-b ({}: document 4): og-intersection says fail: ",
            repo(CONFLICT)
        )),
        "{failures:?}"
    );
    assert!(
        failures[1].contains("NginxIngressController.v1alpha1.k8s.nginx.org"),
        "{failures:?}"
    );

    let blamed = result(&report, "the wrong group is blamed")["failures"].to_string();
    for expected in [
        "expect.results[0]: expected fail from og-intersection on OperatorGroup nginx-a/nginx-a, got pass",
        "expect.results[1].message: og-intersection's message on OperatorGroup nginx-b/nginx-b",
        "expect.results[2]: expected pass from og-intersection on Namespace nginx-a, but its metadata rules do not cover it",
    ] {
        assert!(blamed.contains(expected), "{expected}\n{blamed}");
    }

    let table = test(&[&path, "--run", "must install"]);
    assert_eq!(table.status.code(), Some(1));
    let stdout = text(&table.stdout);
    assert!(
        stdout.contains("FAIL  ") && stdout.contains("suite.yaml#the pair must install  fail"),
        "{stdout}"
    );
    assert!(stdout.contains("og-intersection says fail"), "{stdout}");
    assert!(stdout.contains("0 passed, 1 failed"), "{stdout}");

    let junit = text(&test(&[&path, "-o", "junit"]).stdout);
    assert!(
        junit.contains("<testsuite name=\"all\" tests=\"2\" failures=\"2\" errors=\"0\">"),
        "{junit}"
    );
    assert!(
        junit.contains("<failure message=\"expected pass of the whole install, got fail; OperatorGroup nginx-b/nginx-b"),
        "{junit}"
    );
}

/// Settings by module name reach that module: with `migrateLegacy`,
/// catalog-union rewrites the quickstart's legacy CatalogSource and warns,
/// so the same manifest that passes without it gives `warn`.
#[test]
fn settings_are_given_per_module() {
    let dir = tempfile::tempdir().unwrap();
    let path = suite(
        dir.path(),
        &format!(
            "kind: TestSuite
cases:
- name: without migrateLegacy
  modules: [catalog-union, og-intersection]
  objects: {quickstart}
  expect:
    result: pass
    results:
    - {{object: CatalogSource/operatorhubio-catalog, module: catalog-union, result: pass}}
    - {{object: OperatorGroup/olm-operators, module: og-intersection, result: pass}}
- name: with it
  modules: [catalog-union, og-intersection]
  objects: {quickstart}
  settings: {{catalog-union: {{migrateLegacy: true}}}}
  expect:
    result: warn
    results:
    - object: CatalogSource/olm/operatorhubio-catalog
      module: catalog-union
      result: warn
      warnings: [spec.catalogImageSource (migrateLegacy)]
",
            quickstart = repo("examples/preflight/quickstart-olm.yaml")
        ),
    );
    let (report, code) = report(&[&path]);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["passed"], 2, "{report:#}");
    assert_eq!(
        result(&report, "with it")["policy"],
        "catalog-union,og-intersection"
    );
}

/// What a suite file cannot mean is refused before anything runs (exit 2),
/// one line naming the file and the field; what only running can tell (a
/// module not in dist/, a bundle without manifests, settings for no module)
/// fails that case alone, naming the field.
#[test]
fn bad_input_is_refused_naming_the_file_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let objects = repo(CONFLICT);
    for (case, expected) in [
        (
            format!(
                "  modules: all\n  bundle: {}\n  expect: {{result: pass}}",
                repo(BUNDLE)
            ),
            "cases[0].bundle: give `namespace`, the namespace OLM would install the bundle in",
        ),
        (
            format!("  objects: {objects}\n  expect: {{result: pass}}"),
            "cases[0].modules: no modules: set `modules: all`",
        ),
        (
            format!(
                "  modules: all\n  objects: {objects}\n  request: review.json\n  expect: {{result: pass}}"
            ),
            "cases[0].request: a case judging manifests takes `objects` or `bundle`",
        ),
        (
            format!("  modules: all\n  objects: {objects}\n  expect: {{result: fail, message: x}}"),
            "cases[0].expect.message: in a case judging manifests, say what one module says of one object under `expect.results`",
        ),
        (
            format!(
                "  modules: all\n  objects: {objects}\n  expect:\n    result: fail\n    results: [{{object: nginx-b, module: og-intersection, result: fail}}]"
            ),
            "cases[0].expect.results[0].object: \"nginx-b\": name the object as Kind/name or Kind/namespace/name",
        ),
    ] {
        let path = suite(
            dir.path(),
            &format!("kind: TestSuite\ncases:\n- name: bad\n{case}\n"),
        );
        let out = test(&[&path]);
        assert_eq!(out.status.code(), Some(2), "{case}\n{}", text(&out.stdout));
        let stderr = text(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(
            stderr.starts_with(&format!("olm-guard: {path}: {expected}")),
            "{case}\n{stderr}"
        );
    }

    // A bundle directory with metadata but no manifests.
    let empty = dir.path().join("empty-bundle");
    std::fs::create_dir_all(empty.join("metadata")).unwrap();
    std::fs::write(
        empty.join("metadata/annotations.yaml"),
        "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n",
    )
    .unwrap();
    let path = suite(
        dir.path(),
        &format!(
            "kind: TestSuite
modules: all
cases:
- name: unknown module
  modules: [og-intersection, no-such-module]
  objects: {objects}
  expect: {{result: pass}}
- name: no manifests
  bundle: empty-bundle
  namespace: ns
  expect: {{result: pass}}
- name: not a bundle
  bundle: {preflight}
  namespace: ns
  expect: {{result: pass}}
- name: settings for no module
  modules: [og-intersection]
  objects: {objects}
  settings: {{catalog-union: {{migrateLegacy: true}}}}
  expect: {{result: fail}}
- name: a module the case does not run
  modules: [og-intersection]
  objects: {objects}
  expect:
    result: fail
    results: [{{object: OperatorGroup/nginx-b, module: catalog-union, result: skip}}]
- name: fine
  objects: {objects}
  expect: {{result: fail}}
",
            preflight = repo("examples/preflight"),
        ),
    );
    let (report, code) = report(&[&path]);
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["passed"], 1, "{report:#}");
    let failure = |name: &str| -> String {
        let failures = result(&report, name)["failures"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(failures.len(), 1, "{name}: {failures:?}");
        failures[0].as_str().unwrap().to_string()
    };
    assert!(
        failure("unknown module").starts_with(&format!(
            "cases[0] (unknown module): modules: no-such-module: no module \"no-such-module\" in {} (--dist): its modules are aggregation-escalation, catalog-union,",
            dist().display()
        )),
        "{}",
        failure("unknown module")
    );
    assert_eq!(
        failure("no manifests"),
        format!(
            "cases[1] (no manifests): bundle: cannot read the bundle's manifests, {}: No such file or directory (os error 2)",
            dir.path().join("empty-bundle/manifests/").display()
        )
    );
    assert!(
        failure("not a bundle").starts_with(&format!(
            "cases[2] (not a bundle): bundle: {}: not a registry+v1 bundle",
            repo("examples/preflight")
        )),
        "{}",
        failure("not a bundle")
    );
    assert_eq!(
        failure("settings for no module"),
        "cases[3] (settings for no module): settings.catalog-union: no module catalog-union among the case's modules (og-intersection)"
    );
    assert_eq!(
        failure("a module the case does not run"),
        "cases[4] (a module the case does not run): expect.results[0].module: catalog-union is not among the case's modules (og-intersection)"
    );
}

/// `--run` matches the case labels of install suites as of any other.
#[test]
fn run_pattern_picks_install_cases() {
    let (report, code) = report(&[
        "examples/suites/preflight-olm.yaml",
        "--run",
        "OperatorGroups|alone",
    ]);
    assert_eq!(code, Some(0), "{report:#}");
    let labels: Vec<&str> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "examples/suites/preflight-olm.yaml#two global OperatorGroups providing the same API conflict",
            "examples/suites/preflight-olm.yaml#judged each alone, the same two groups pass"
        ]
    );
}
