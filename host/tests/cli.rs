//! The `olm-guard` command line: what a user sees for bad inputs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::write;

fn olm_guard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .args(args)
        .output()
        .expect("olm-guard runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A waPC guest whose `validate_settings` answers `settings_answer` and
/// whose `validate` spins forever (`loop`) or answers `validate_answer`.
fn guest(dir: &Path, settings_answer: &str, validate_answer: Option<&str>) -> PathBuf {
    let escape = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let validate = match validate_answer {
        Some(answer) => format!(
            "(call $respond (i32.const 2048) (i32.const {})) (return (i32.const 1))",
            answer.len()
        ),
        None => "(loop $forever (br $forever))".to_string(),
    };
    let wat = format!(
        r#"(module
  (import "wapc" "__guest_request" (func $request (param i32 i32)))
  (import "wapc" "__guest_response" (func $respond (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{settings}")
  (data (i32.const 2048) "{validate_data}")
  (func (export "__guest_call") (param $op_len i32) (param $len i32) (result i32)
    (call $request (i32.const 0) (i32.const 4096))
    ;; validate_settings has 17 bytes, validate 8
    (if (i32.eq (local.get $op_len) (i32.const 17))
      (then (call $respond (i32.const 1024) (i32.const {settings_len})) (return (i32.const 1))))
    {validate}
    (i32.const 0)))"#,
        settings = escape(settings_answer),
        settings_len = settings_answer.len(),
        validate_data = escape(validate_answer.unwrap_or("")),
    );
    let path = dir.join("guest.wasm");
    std::fs::write(&path, wat::parse_str(&wat).expect("valid WAT")).unwrap();
    path
}

const REQUEST: &str = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
 "request":{"uid":"u-1","operation":"CREATE","kind":{"group":"","version":"v1","kind":"ConfigMap"},
 "userInfo":{"username":"alice"},"object":{"metadata":{"name":"x"}}}}"#;

#[test]
fn missing_request_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let module = guest(
        dir.path(),
        r#"{"valid":true}"#,
        Some(r#"{"accepted":true}"#),
    );
    let out = olm_guard(&[
        "run",
        "--policy",
        module.to_str().unwrap(),
        "--request",
        "/nonexistent/req.json",
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.starts_with("olm-guard: cannot read /nonexistent/req.json"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
}

#[test]
fn unparsable_and_incomplete_requests_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let module = guest(
        dir.path(),
        r#"{"valid":true}"#,
        Some(r#"{"accepted":true}"#),
    );
    let garbage = write(dir.path(), "garbage.json", "{not: [valid");
    let out = olm_guard(&[
        "run",
        "--policy",
        module.to_str().unwrap(),
        "--request",
        &garbage,
    ]);
    assert!(!out.status.success());
    // A .json file gets the JSON parser's account, with its position.
    assert!(
        stderr(&out).contains("garbage.json is not valid JSON") && stderr(&out).contains("line 1"),
        "{}",
        stderr(&out)
    );

    let no_op = write(dir.path(), "noop.json", r#"{"uid":"1","object":{}}"#);
    let out = olm_guard(&[
        "run",
        "--policy",
        module.to_str().unwrap(),
        "--request",
        &no_op,
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("has no operation"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_module_and_bad_cluster_files_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let request = write(dir.path(), "req.json", REQUEST);
    let not_wasm = write(dir.path(), "x.wasm", "\u{0}asm garbage");
    let out = olm_guard(&["run", "--policy", &not_wasm, "--request", &request]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("not a loadable wasm module"),
        "{}",
        stderr(&out)
    );

    let module = guest(
        dir.path(),
        r#"{"valid":true}"#,
        Some(r#"{"accepted":true}"#),
    );
    let cluster = write(
        dir.path(),
        "cluster.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: a\n",
    );
    let out = olm_guard(&[
        "run",
        "--policy",
        module.to_str().unwrap(),
        "--request",
        &request,
        "--cluster",
        &cluster,
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("cluster.yaml: document 1: not valid YAML"),
        "{err}"
    );

    let kindless = write(dir.path(), "kindless.yaml", "metadata: {name: a}\n");
    let out = olm_guard(&[
        "run",
        "--policy",
        module.to_str().unwrap(),
        "--request",
        &request,
        "--cluster",
        &kindless,
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("object \"a\" has no apiVersion and kind"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn invalid_settings_stop_with_the_modules_message() {
    let dir = tempfile::tempdir().unwrap();
    let request = write(dir.path(), "req.json", REQUEST);
    let module = guest(
        dir.path(),
        r#"{"valid":false,"message":"allowFeeding must be a list of names"}"#,
        Some(r#"{"accepted":true}"#),
    );
    let settings = write(dir.path(), "s.yaml", "allowFeeding: yes\n");
    let out = olm_guard(&[
        "run",
        "--policy",
        module.to_str().unwrap(),
        "--request",
        &request,
        "--settings",
        &settings,
    ]);
    assert!(!out.status.success());
    // The last line is the reason (a warning about missing metadata precedes it).
    assert_eq!(
        stderr(&out).trim_end().lines().last(),
        Some("olm-guard: settings are not valid: allowFeeding must be a list of names")
    );

    let list = write(dir.path(), "list.yaml", "- a\n- b\n");
    let out = olm_guard(&[
        "run",
        "--policy",
        module.to_str().unwrap(),
        "--request",
        &request,
        "--settings",
        &list,
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("settings must be an object"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_looping_module_is_stopped_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let request = write(dir.path(), "req.json", REQUEST);
    let module = guest(dir.path(), r#"{"valid":true}"#, None);
    let out = olm_guard(&[
        "run",
        "--policy",
        module.to_str().unwrap(),
        "--request",
        &request,
        "--timeout-ms",
        "50",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("exceeded the execution deadline of 50 ms"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_evaluated_request_prints_an_admission_review() {
    let dir = tempfile::tempdir().unwrap();
    let request = write(dir.path(), "req.json", REQUEST);
    let module = guest(
        dir.path(),
        r#"{"valid":true}"#,
        Some(r#"{"accepted":false,"message":"no","code":403,"warnings":["w"]}"#),
    );
    let out = olm_guard(&[
        "run",
        "-o",
        "json",
        "--policy",
        module.to_str().unwrap(),
        "--request",
        &request,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let review: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["kind"], "AdmissionReview");
    assert_eq!(
        review["response"],
        serde_json::json!({"uid": "u-1", "allowed": false,
            "status": {"message": "no", "code": 403}, "warnings": ["w"]})
    );
}

/// A snapshot object that cannot be read stops the run naming the file, the
/// document and the object; `--lenient` reports it and goes on without it.
#[test]
fn a_malformed_snapshot_object_is_named_with_its_file_and_document() {
    let dir = tempfile::tempdir().unwrap();
    let request = write(dir.path(), "req.json", REQUEST);
    let module = guest(
        dir.path(),
        r#"{"valid":true}"#,
        Some(r#"{"accepted":true}"#),
    );
    let cluster = write(
        dir.path(),
        "rbac.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n\
         metadata: {name: bob, namespace: a}\nsubjects: alice\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}\n",
    );
    let args = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--policy",
            module.to_str().unwrap(),
            "--request",
            &request,
            "--cluster",
            &cluster,
        ];
        args.extend_from_slice(extra);
        olm_guard(&args)
    };
    let out = args(&[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    for part in ["rbac.yaml: document 2", "RoleBinding", "a/bob", "subjects"] {
        assert!(err.contains(part), "{part:?} not in {err}");
    }
    let out = args(&["--lenient"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning: ") && err.contains("rbac.yaml: document 2"),
        "{err}"
    );
}

/// A text file is not taken for a module (wasmtime would parse it as WAT).
#[test]
fn a_text_file_is_not_a_webassembly_module() {
    let dir = tempfile::tempdir().unwrap();
    let request = write(dir.path(), "req.json", REQUEST);
    let text = write(dir.path(), "policy.wasm", "hello\n");
    let out = olm_guard(&["run", "--policy", &text, "--request", &request]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("not a WebAssembly module"),
        "{}",
        stderr(&out)
    );
}

/// Hostile snapshot and request files: each stops with one line naming the
/// file and the document, and nothing is dropped silently.
#[test]
fn hostile_files_are_refused_naming_file_and_document() {
    let dir = tempfile::tempdir().unwrap();
    let request = write(dir.path(), "req.json", REQUEST);
    let module = guest(
        dir.path(),
        r#"{"valid":true}"#,
        Some(r#"{"accepted":true}"#),
    );
    let module = module.to_str().unwrap();
    let mut bomb = String::from("a: &a [x,x,x,x,x,x,x,x,x]\n");
    for (previous, name) in ('a'..='i').zip('b'..='j') {
        let refs = vec![format!("*{previous}"); 9].join(",");
        bomb.push_str(&format!("{name}: &{name} [{refs}]\n"));
    }
    let cases = [
        ("bomb.yaml", bomb.as_str(), "bomb.yaml: document 1"),
        (
            "dup.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n",
            "dup.yaml: document 2: v1 ConfigMap x/a was already read",
        ),
        (
            "nokind.yaml",
            "apiVersion: v1\nmetadata: {name: a}\n",
            "nokind.yaml: document 1",
        ),
        ("scalar.yaml", "just a string\n", "scalar.yaml: document 1"),
        (
            "tabs.yaml",
            "apiVersion: v1\n\tkind: ConfigMap\n",
            "tabs.yaml: document 1",
        ),
    ];
    for (name, text, expected) in cases {
        let cluster = write(dir.path(), name, text);
        let out = olm_guard(&[
            "run",
            "--policy",
            module,
            "--request",
            &request,
            "--cluster",
            &cluster,
        ]);
        assert!(!out.status.success(), "{name} was accepted");
        let err = stderr(&out);
        assert!(err.contains(expected), "{name}: {expected:?} not in {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{name}: not one line: {err}"
        );
    }
    let broken = write(dir.path(), "broken.json", "{\"request\": {\"operation\": ");
    let out = olm_guard(&["run", "--policy", module, "--request", &broken]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("broken.json"), "{}", stderr(&out));
}
