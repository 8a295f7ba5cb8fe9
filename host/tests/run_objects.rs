//! `olm-guard run` as a Kubernetes user drives it: bare manifests in
//! (`--object`, stdin, multi-document files, typed lists), request
//! detection, field names in type errors, `--trace`, the routing warning and
//! limit hints; and `olm-guard test` from anywhere. Everything goes through
//! the built binary and the real modules in `dist/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

mod common;
use common::{CATALOG_SOURCE, dist, module, output_with_stdin, root, write};

/// `olm-guard` with `args`, run in `cwd` (the test process's own directory
/// is never changed).
fn olm_guard_in(cwd: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_olm-guard"));
    command.args(args).current_dir(cwd);
    output_with_stdin(command, stdin.unwrap_or(""))
}

fn olm_guard(args: &[&str]) -> Output {
    olm_guard_in(&root(), args, None)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The AdmissionReviews printed on stdout: one JSON document, the review of
/// a `--request` or a List of one per object.
fn reviews(output: &Output) -> Vec<Value> {
    common::json_items(&output.stdout)
}

const BROKEN_CATALOG_SOURCE: &str = "apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  name: broken
  namespace: olm
spec:
  sourceType: grpc
";

/// The AdmissionRequest for a CREATE of the CatalogSource `manifest`,
/// written out by hand (not by the code under test).
fn create_request(manifest: &str) -> Value {
    let object: Value = serde_yaml_ng::from_str(manifest).unwrap();
    json!({"uid": "u", "operation": "CREATE",
        "kind": {"group": "operators.coreos.com", "version": "v1alpha1", "kind": "CatalogSource"},
        "resource": {"group": "operators.coreos.com", "version": "v1alpha1", "resource": "catalogsources"},
        "name": object["metadata"]["name"], "namespace": object["metadata"]["namespace"],
        "object": object})
}

/// Every scenario whose request is about one object, evaluated once as the
/// scenario's AdmissionReview and once from its bare objects with the flags
/// a user would give: the verdicts and messages are the same.
#[test]
fn bare_objects_get_the_same_verdict_as_the_scenarios_review() {
    let dir = tempfile::tempdir().unwrap();
    let mut compared = 0;
    for name in olm_guard_rules::registry::names() {
        let module_dir = root().join("testdata").join(name);
        let mut cases: Vec<PathBuf> = std::fs::read_dir(&module_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("request.json").is_file() && p.join("expect.json").is_file())
            .collect();
        cases.sort();
        let mut per_module = 0;
        for case in cases {
            if per_module == 6 {
                break;
            }
            let review: Value =
                serde_json::from_str(&std::fs::read_to_string(case.join("request.json")).unwrap())
                    .unwrap();
            let request = review.get("request").unwrap_or(&review);
            let Some(args) = object_args(request, dir.path(), &case) else {
                continue;
            };
            let expect: Value =
                serde_json::from_str(&std::fs::read_to_string(case.join("expect.json")).unwrap())
                    .unwrap();
            let policy = module(expect["policy"].as_str().unwrap())
                .display()
                .to_string();
            let mut common = vec!["run".to_string(), "-o".into(), "json".into(), policy];
            for (file, flag) in [
                ("settings.json", "--settings"),
                ("cluster.yaml", "--cluster"),
            ] {
                if case.join(file).is_file() {
                    common.push(flag.into());
                    common.push(case.join(file).display().to_string());
                }
            }
            if case.join("settings.json").is_file()
                && expect.get("settings_error_contains").is_some()
            {
                continue;
            }
            // A scenario without a cluster file is judged against an empty
            // cluster, which `run` is told.
            if !case.join("cluster.yaml").is_file() {
                common.push("--no-cluster".into());
            }
            let from_review = run_strings(
                &common,
                &[
                    "--request".into(),
                    case.join("request.json").display().to_string(),
                ],
            );
            let from_objects = run_strings(&common, &args);
            assert!(
                from_review.status.success(),
                "{}: {}",
                case.display(),
                text(&from_review.stderr)
            );
            assert!(
                from_objects.status.success(),
                "{}: {}",
                case.display(),
                text(&from_objects.stderr)
            );
            let (a, b) = (
                &reviews(&from_review)[0]["response"],
                &reviews(&from_objects)[0]["response"],
            );
            assert_eq!(a["allowed"], b["allowed"], "{}", case.display());
            assert_eq!(
                a["status"]["message"],
                b["status"]["message"],
                "{}",
                case.display()
            );
            assert_eq!(a["patch"], b["patch"], "{}", case.display());
            per_module += 1;
            compared += 1;
        }
        assert!(
            per_module > 0,
            "no scenario of {} could be run from bare objects",
            module_dir.display()
        );
    }
    assert!(compared >= 24, "compared {compared} scenarios");
}

fn run_strings(common: &[String], more: &[String]) -> Output {
    let args: Vec<&str> = common.iter().chain(more).map(String::as_str).collect();
    olm_guard(&args)
}

/// The `run` flags that rebuild `request` from its objects, when the request
/// is one the API server would send as such (resource named as its kind,
/// no subresource, name and namespace from the object).
fn object_args(request: &Value, tmp: &Path, case: &Path) -> Option<Vec<String>> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    if !text(request, "subResource").is_empty() {
        return None;
    }
    let subject = request
        .get("object")
        .filter(|o| o.is_object())
        .or_else(|| request.get("oldObject").filter(|o| o.is_object()))?;
    let kind = text(subject, "kind");
    let resource = request.get("resource").map(|r| text(r, "resource"))?;
    let meta = subject.get("metadata")?;
    if kind.is_empty()
        || resource != olm_guard_evaluator::input::guess_resource(&kind)
        || text(meta, "name") != text(request, "name")
        || text(meta, "namespace") != text(request, "namespace")
    {
        return None;
    }
    let stem = case.file_name()?.to_string_lossy().into_owned();
    let mut args = vec!["--operation".to_string(), text(request, "operation")];
    for (key, flag) in [("object", "--object"), ("oldObject", "--old-object")] {
        if let Some(object) = request.get(key).filter(|o| o.is_object()) {
            let path = write(tmp, &format!("{stem}-{key}.json"), &object.to_string());
            args.extend([flag.to_string(), path]);
        }
    }
    let user = request.get("userInfo").cloned().unwrap_or(json!({}));
    if let Some(name) = user.get("username").and_then(Value::as_str) {
        args.extend(["--user".to_string(), name.to_string()]);
    }
    for group in user
        .get("groups")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        args.extend(["--group".to_string(), group.as_str()?.to_string()]);
    }
    Some(args)
}

#[test]
fn a_manifest_from_stdin_with_several_documents_is_evaluated_per_object() {
    let stdin = format!("{CATALOG_SOURCE}---\n{BROKEN_CATALOG_SOURCE}");
    let out = olm_guard_in(
        &root(),
        &["run", "-o", "json", "catalog-union", "--object", "-"],
        Some(&stdin),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let reviews = reviews(&out);
    assert_eq!(reviews.len(), 2, "{}", text(&out.stdout));
    assert_eq!(reviews[0]["response"]["allowed"], true);
    assert_eq!(reviews[1]["response"]["allowed"], false);
    assert!(
        reviews[1]["response"]["status"]["message"]
            .as_str()
            .unwrap()
            .contains("image"),
        "{}",
        reviews[1]
    );
}

#[test]
fn a_typed_list_as_kubectl_prints_it_is_unpacked() {
    let dir = tempfile::tempdir().unwrap();
    let list = "apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSourceList\nitems:\n- metadata: {name: a, namespace: olm}\n  spec: {sourceType: grpc, image: quay.io/x/y:1}\n- metadata: {name: b, namespace: olm}\n  spec: {sourceType: grpc}\n";
    let path = write(dir.path(), "list.yaml", list);
    let out = olm_guard(&["run", "catalog-union", "--object", &path, "-o", "yaml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let documents = common::yaml_items(&out.stdout);
    assert_eq!(documents.len(), 2);
    assert_eq!(documents[0]["response"]["allowed"], true);
    assert_eq!(documents[1]["response"]["allowed"], false);
}

#[test]
fn an_update_from_old_and_new_objects_is_judged_as_an_update() {
    let dir = tempfile::tempdir().unwrap();
    // A stored CatalogSource that already breaks the rule, updated without
    // touching its catalog configuration: rule 7 accepts it with a warning.
    let old = write(dir.path(), "old.yaml", BROKEN_CATALOG_SOURCE);
    let new = write(
        dir.path(),
        "new.yaml",
        &format!("{BROKEN_CATALOG_SOURCE}  displayName: Broken\n"),
    );
    let out = olm_guard(&[
        "run",
        "-o",
        "json",
        "catalog-union",
        "--object",
        &new,
        "--old-object",
        &old,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let create = olm_guard(&["run", "-o", "json", "catalog-union", "--object", &new]);
    assert_eq!(reviews(&create)[0]["response"]["allowed"], false);
    let update = &reviews(&out)[0]["response"];
    assert_eq!(update["allowed"], true, "{update}");
    assert!(update["warnings"].is_array(), "{update}");
}

#[test]
fn request_files_are_recognised_by_their_request_key_and_json_errors_are_jsons() {
    let dir = tempfile::tempdir().unwrap();
    let review = json!({"request": create_request(CATALOG_SOURCE)});
    let path = write(dir.path(), "review.json", &review.to_string());
    let out = olm_guard(&["run", "-o", "json", "catalog-union", "--request", &path]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(reviews(&out)[0]["response"]["allowed"], true);

    let cut = write(
        dir.path(),
        "cut.json",
        "{\n  \"request\": {\n    \"uid\": \n",
    );
    let out = olm_guard(&["run", "-o", "json", "catalog-union", "--request", &cut]);
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("cut.json is not valid JSON"), "{err}");
    assert!(err.contains("line 4"), "the JSON parser's position: {err}");

    let object = write(dir.path(), "cs.yaml", CATALOG_SOURCE);
    let out = olm_guard(&["run", "-o", "json", "catalog-union", "--request", &object]);
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("this is a CatalogSource object"), "{err}");
    assert!(err.contains("--object"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
}

#[test]
fn type_errors_name_the_setting_and_the_request_field() {
    let dir = tempfile::tempdir().unwrap();
    let object = write(dir.path(), "cs.yaml", CATALOG_SOURCE);
    let settings = write(dir.path(), "settings.yaml", "allowLegacy: \"no\"\n");
    let out = olm_guard(&[
        "run",
        "-o",
        "json",
        "catalog-union",
        "--object",
        &object,
        "--settings",
        &settings,
    ]);
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("settings.allowLegacy: expected a boolean, got a string"),
        "{err}"
    );

    // A request field of a type the API server never sends is refused
    // before any module sees it, naming the field.
    let review = json!({"request": {"uid": 1234, "operation": "CREATE",
        "kind": {"group": "operators.coreos.com", "version": "v1alpha1", "kind": "CatalogSource"},
        "object": serde_yaml_ng::from_str::<Value>(CATALOG_SOURCE).unwrap()}});
    let path = write(dir.path(), "review.json", &review.to_string());
    let out = olm_guard(&["run", "-o", "json", "catalog-union", "--request", &path]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains("the AdmissionRequest's uid is a number, not a string"),
        "{err}"
    );
}

#[test]
fn trace_shows_each_host_call_with_its_request_and_answer() {
    let case = root().join("testdata/revision-uniqueness");
    let scenario = std::fs::read_dir(&case)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("cluster.yaml").is_file())
        .min()
        .expect("a revision-uniqueness scenario with a cluster");
    let out = olm_guard(&[
        "run",
        "-o",
        "json",
        "revision-uniqueness",
        "--request",
        scenario.join("request.json").to_str().unwrap(),
        "--cluster",
        scenario.join("cluster.yaml").to_str().unwrap(),
        "--trace",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let call = err
        .lines()
        .find(|l| l.starts_with("trace: call 1: kubernetes/"))
        .unwrap_or_else(|| panic!("a traced call: {err}"));
    assert!(call.contains("\"kind\""), "the request payload: {call}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("trace:   answer, ") && l.contains(" bytes: {")),
        "the answer's size and first bytes: {err}"
    );
}

/// A module that makes a host call and then spins: the call is traced
/// although the module is stopped, and the deadline error says which flag
/// lifts it.
#[test]
fn trace_is_printed_when_the_module_fails_and_the_deadline_names_its_flag() {
    let dir = tempfile::tempdir().unwrap();
    let strings = [
        (100, "kubewarden"),
        (200, "kubernetes"),
        (300, "list_resources_all"),
        (400, r#"{"api_version":"v1","kind":"Namespace"}"#),
    ];
    let data: String = strings
        .iter()
        .map(|(at, s)| format!("(data (i32.const {at}) \"{}\")\n", s.replace('"', "\\\"")))
        .collect();
    let wat = format!(
        r#"(module
  (import "wapc" "__guest_request" (func $request (param i32 i32)))
  (import "wapc" "__guest_response" (func $respond (param i32 i32)))
  (import "wapc" "__host_call" (func $host_call (param i32 i32 i32 i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  {data}
  (data (i32.const 1024) "{{\"valid\":true}}")
  (func (export "__guest_call") (param $op_len i32) (param $len i32) (result i32)
    (call $request (i32.const 2048) (i32.const 8192))
    (if (i32.eq (local.get $op_len) (i32.const 17))
      (then (call $respond (i32.const 1024) (i32.const 14)) (return (i32.const 1))))
    (drop (call $host_call (i32.const 100) (i32.const 10) (i32.const 200) (i32.const 10)
      (i32.const 300) (i32.const 18) (i32.const 400) (i32.const {payload_len})))
    (loop $forever (br $forever))
    (i32.const 0)))"#,
        payload_len = strings[3].1.len(),
    );
    let module = dir.path().join("calls-then-spins.wasm");
    std::fs::write(&module, wat::parse_str(&wat).expect("valid WAT")).unwrap();
    let object = write(dir.path(), "cs.yaml", CATALOG_SOURCE);
    let out = olm_guard(&[
        "run",
        "-o",
        "json",
        module.to_str().unwrap(),
        "--object",
        &object,
        "--trace",
        "--timeout-ms",
        "100",
    ]);
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("trace: call 1: kubewarden/kubernetes/list_resources_all")
            || err.contains("trace: call 1: kubernetes/list_resources_all"),
        "{err}"
    );
    assert!(
        err.contains("exceeded the execution deadline of 100 ms"),
        "{err}"
    );
    assert!(err.contains("--timeout-ms"), "{err}");
}

#[test]
fn a_request_the_module_would_never_be_sent_is_said_so_and_still_evaluated() {
    let dir = tempfile::tempdir().unwrap();
    let config_map = write(
        dir.path(),
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n",
    );
    let out = olm_guard(&[
        "run",
        "-o",
        "json",
        "catalog-union",
        "--object",
        &config_map,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("policy-server would not send this request to catalog-union")
            && err.contains("CREATE v1/configmaps"),
        "{err}"
    );
    assert_eq!(reviews(&out)[0]["response"]["allowed"], true);
    let cs = write(dir.path(), "cs.yaml", CATALOG_SOURCE);
    let out = olm_guard(&["run", "-o", "json", "catalog-union", "--object", &cs]);
    assert!(
        !text(&out.stderr).contains("would not send"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_module_name_that_is_not_in_dist_says_how_to_get_it() {
    let out = olm_guard(&["run", "-o", "json", "no-such-policy", "--object", "-"]);
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("no module \"no-such-policy\""), "{err}");
    assert!(err.contains("--dist"), "{err}");
    // The modules that are there, and the closest name to a misspelt one.
    assert!(
        err.contains("its modules are aggregation-escalation, catalog-union, group-authorization"),
        "{err}"
    );
    let misspelt = olm_guard(&["run", "catalog-unoin", "--object", "-"]);
    let err = text(&misspelt.stderr);
    assert_eq!(misspelt.status.code(), Some(2));
    assert!(err.ends_with("Did you mean catalog-union?\n"), "{err}");
}

#[test]
fn a_namespace_that_contradicts_the_object_is_refused() {
    let out = olm_guard_in(
        &root(),
        &[
            "run",
            "-o",
            "json",
            "catalog-union",
            "--object",
            "-",
            "-n",
            "other",
        ],
        Some(CATALOG_SOURCE),
    );
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("does not match --namespace \"other\""),
        "{err}"
    );
}

/// `olm-guard test` on a suite outside the project: `dist/` is found from
/// the scenarios' project, or the error says to pass `--dist`; YAML inputs
/// work; a case without `expect` fails the run; other directories are listed
/// as skipped.
#[test]
fn test_runs_from_anywhere_and_fails_loud_on_broken_suites() {
    let elsewhere = tempfile::tempdir().unwrap();
    // A project scenario, from a working directory outside the project.
    let scenario = root()
        .join("testdata/catalog-union/realworld-marketplace-certified-operators-create-accepted");
    let out = olm_guard_in(
        elsewhere.path(),
        &["test", scenario.to_str().unwrap()],
        None,
    );
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("1 passed, 0 failed"),
        "{}",
        text(&out.stdout)
    );

    // A suite of the user's own, in YAML, outside any project.
    let suite = elsewhere.path().join("suite");
    let case = suite.join("broken-catalog");
    std::fs::create_dir_all(&case).unwrap();
    write(
        &case,
        "expect.yaml",
        "policy: catalog-union\nallowed: false\nmessage_contains: image\n",
    );
    let request = create_request(BROKEN_CATALOG_SOURCE);
    write(
        &case,
        "request.yaml",
        &serde_yaml_ng::to_string(&request).unwrap(),
    );
    std::fs::create_dir_all(suite.join("notes")).unwrap();
    write(&suite.join("notes"), "README.md", "not a scenario");

    let out = olm_guard_in(elsewhere.path(), &["test", "suite"], None);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("pass --dist DIR"),
        "{}",
        text(&out.stderr)
    );

    let dist = dist().display().to_string();
    let out = olm_guard_in(elsewhere.path(), &["test", "suite", "--dist", &dist], None);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("1 passed, 0 failed"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains("skipped suite/notes: no scenario"),
        "{}",
        text(&out.stderr)
    );

    // A case without its expect file fails the run, naming what is missing.
    let incomplete = suite.join("forgot-expect");
    std::fs::create_dir_all(&incomplete).unwrap();
    write(&incomplete, "request.json", &request.to_string());
    let out = olm_guard_in(
        elsewhere.path(),
        &["test", "suite", "--dist", &dist, "-o", "json"],
        None,
    );
    assert!(!out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["failed"], 1, "{report}");
    assert_eq!(report["passed"], 1, "{report}");
    assert!(
        report["incomplete"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("holds request.json but no expect.json"),
        "{report}"
    );
    assert_eq!(report["skipped"][0]["dir"], "suite/notes", "{report}");
}

/// An expect file must state a verdict: one that does not is refused,
/// naming the file and the field to add, rather than passing whatever the
/// module answers. What a verdict leaves unstated is expected absent: a
/// warning or a patch the module gives fails the scenario.
#[test]
fn a_scenario_states_its_verdict_and_what_it_leaves_out_is_expected_absent() {
    let dir = tempfile::tempdir().unwrap();
    // A legacy CatalogSource: with warnLegacy it is admitted with a
    // warning; with migrateLegacy it is also rewritten (a patch).
    let request = create_request(CATALOG_SOURCE).to_string();
    let cases = [
        ("no-verdict", r#"{"policy": "catalog-union"}"#, None),
        (
            "unstated-warning",
            r#"{"policy": "catalog-union", "allowed": true}"#,
            Some(r#"{"warnLegacy": true}"#),
        ),
        (
            "unstated-patch",
            r#"{"policy": "catalog-union", "allowed": true, "warnings_contain": ["migrateLegacy"]}"#,
            Some(r#"{"migrateLegacy": true}"#),
        ),
        (
            "stated",
            r#"{"policy": "catalog-union", "allowed": true, "warnings_contain": ["migrateLegacy"], "mutated": true}"#,
            Some(r#"{"migrateLegacy": true}"#),
        ),
        (
            "contradiction",
            r#"{"policy": "catalog-union", "allowed": true, "no_warnings": true, "warnings_contain": ["x"]}"#,
            None,
        ),
    ];
    for (name, expect, settings) in cases {
        let case = dir.path().join(name);
        std::fs::create_dir_all(&case).unwrap();
        write(&case, "expect.json", expect);
        write(&case, "request.json", &request);
        if let Some(settings) = settings {
            write(&case, "settings.json", settings);
        }
    }
    let dist = dist().display().to_string();
    let out = olm_guard_in(
        dir.path(),
        &["test", ".", "--dist", &dist, "-o", "json"],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (report["passed"].as_u64(), report["failed"].as_u64()),
        (Some(1), Some(4)),
        "{report:#}"
    );
    let failures = |name: &str| -> String {
        let result = report["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["scenario"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("no result for {name}: {report:#}"));
        result["failures"].to_string()
    };
    assert!(
        failures("no-verdict").contains(
            r#"expect.json: states no verdict: add \"allowed\": true or false (or \"settings_error_contains\""#
        ),
        "{}",
        failures("no-verdict")
    );
    assert!(
        failures("unstated-warning").contains("expected no warnings"),
        "{}",
        failures("unstated-warning")
    );
    assert!(
        failures("unstated-patch").contains("expected mutated=false"),
        "{}",
        failures("unstated-patch")
    );
    assert!(
        failures("contradiction")
            .contains(r#"\"no_warnings\": true contradicts \"warnings_contain\""#),
        "{}",
        failures("contradiction")
    );
    assert_eq!(failures("stated"), "[]");
}

#[test]
fn fail_on_deny_gates_a_pipeline_and_errors_are_told_apart() {
    let broken = olm_guard_in(
        &root(),
        &[
            "run",
            "-o",
            "json",
            "catalog-union",
            "--object",
            "-",
            "--fail-on-deny",
        ],
        Some(BROKEN_CATALOG_SOURCE),
    );
    assert_eq!(broken.status.code(), Some(1), "{}", text(&broken.stderr));
    assert!(
        text(&broken.stderr).contains("1 of 1 requests denied"),
        "{}",
        text(&broken.stderr)
    );
    let good = olm_guard_in(
        &root(),
        &[
            "run",
            "-o",
            "json",
            "catalog-union",
            "--object",
            "-",
            "--fail-on-deny",
        ],
        Some(CATALOG_SOURCE),
    );
    assert_eq!(good.status.code(), Some(0), "{}", text(&good.stderr));
    // Without the flag a denial is an answer, not a failure.
    let answered = olm_guard_in(
        &root(),
        &["run", "-o", "json", "catalog-union", "--object", "-"],
        Some(BROKEN_CATALOG_SOURCE),
    );
    assert_eq!(answered.status.code(), Some(0));
    let error = olm_guard(&[
        "run",
        "-o",
        "json",
        "catalog-union",
        "--object",
        "/nonexistent.yaml",
    ]);
    assert_eq!(error.status.code(), Some(2), "{}", text(&error.stderr));
}

#[test]
fn what_the_evaluation_cannot_see_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let cos = write(
        dir.path(),
        "cos.yaml",
        "apiVersion: olm.operatorframework.io/v1\nkind: ClusterObjectSet\nmetadata: {name: a}\nspec: {group: g, revision: 1}\n",
    );
    // A module that reads the cluster, given none, is refused (the cluster
    // kubectl would choose: none here), naming how to give one.
    let out = olm_guard(&["run", "-o", "json", "group-authorization", "--object", &cos]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("group-authorization (can_i) reads the cluster")
            && err.contains("--kubeconfig")
            && err.contains("--no-cluster"),
        "{err}"
    );
    let out = olm_guard(&[
        "run",
        "-o",
        "json",
        "group-authorization",
        "--object",
        &cos,
        "--no-cluster",
    ]);
    let err = text(&out.stderr);
    assert!(
        err.contains("the verdict is about an anonymous request"),
        "{err}"
    );
    let out = olm_guard(&[
        "run",
        "-o",
        "json",
        "group-authorization",
        "--object",
        &cos,
        "--user",
        "alice",
        "--no-cluster",
    ]);
    assert!(
        !text(&out.stderr).contains("anonymous"),
        "{}",
        text(&out.stderr)
    );
}

/// `-o junit` is well-formed JUnit XML with a case per scenario and the
/// failures marked; `--run` picks scenarios by path.
#[test]
fn test_reports_junit_and_picks_cases_with_run() {
    let elsewhere = tempfile::tempdir().unwrap();
    let suite = elsewhere.path().join("suite");
    for (name, allowed) in [("good-create", true), ("bad-expectation", false)] {
        let case = suite.join(name);
        std::fs::create_dir_all(&case).unwrap();
        write(
            &case,
            "expect.yaml",
            &format!("policy: catalog-union\nallowed: {allowed}\n"),
        );
        let request = create_request(CATALOG_SOURCE);
        write(&case, "request.json", &request.to_string());
    }
    let dist = dist().display().to_string();
    let out = olm_guard_in(
        elsewhere.path(),
        &["test", "suite", "--dist", &dist, "-o", "junit"],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let xml = text(&out.stdout);
    let document = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(root.attribute("tests"), Some("2"));
    assert_eq!(root.attribute("failures"), Some("1"));
    let failed: Vec<&str> = document
        .descendants()
        .filter(|n| n.has_tag_name("testcase") && n.children().any(|c| c.has_tag_name("failure")))
        .filter_map(|n| n.attribute("name"))
        .collect();
    assert_eq!(failed, ["suite/bad-expectation"]);

    let out = olm_guard_in(
        elsewhere.path(),
        &["test", "suite", "--dist", &dist, "--run", "good"],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("1 passed, 0 failed"),
        "{}",
        text(&out.stdout)
    );
    let out = olm_guard_in(
        elsewhere.path(),
        &[
            "test",
            "suite",
            "--dist",
            &dist,
            "--run",
            "nothing-like-this",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no scenario matches --run"),
        "{}",
        text(&out.stderr)
    );
}
