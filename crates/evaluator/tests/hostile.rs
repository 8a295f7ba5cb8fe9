//! Hostile modules: each is stopped with a clear one-line error, the host
//! does not crash, and the next evaluation in the same process still works.

use std::sync::Arc;
use std::time::Duration;

use olm_guard_evaluator::{Policy, PolicyError};
use olm_guard_runtime::{Limits, Runtime};
use olm_guard_snapshot::Snapshot;
use serde_json::json;

/// A waPC guest whose `__guest_call` runs `body` and then answers `answer`
/// (placed at offset 2048). `$len` is the payload length.
fn guest(imports: &str, body: &str, answer: &str, extra: &str) -> Vec<u8> {
    let escaped: String = answer.bytes().map(|b| format!("\\{b:02x}")).collect();
    wat::parse_str(format!(
        r#"(module
          (import "wapc" "__guest_request" (func $guest_request (param i32 i32)))
          (import "wapc" "__guest_response" (func $guest_response (param i32 i32)))
          {imports}
          (memory (export "memory") 1)
          (data (i32.const 2048) "{escaped}")
          {extra}
          (func (export "__guest_call") (param $op_len i32) (param $len i32) (result i32)
            (call $guest_request (i32.const 0) (i32.const 1024))
            {body}
            (call $guest_response (i32.const 2048) (i32.const {answer_len}))
            (i32.const 1)))"#,
        answer_len = answer.len()
    ))
    .unwrap()
}

const VALID: &str = r#"{"accepted":true}"#;

fn runtime() -> Runtime {
    Runtime::new(Limits {
        memory_bytes: 8 << 20,
        deadline: Duration::from_millis(200),
    })
    .unwrap()
}

/// Loads `wasm`, expects `validate` to fail with a one-line error that
/// contains `expected`, then checks a well-behaved module still evaluates
/// in the same runtime.
#[track_caller]
fn assert_stopped(runtime: &Runtime, wasm: &[u8], expected: &str) -> String {
    let policy = Policy::from_bytes(runtime, "hostile", wasm, None).unwrap();
    let request = json!({"uid": "1", "operation": "CREATE", "object": {}});
    let err = policy
        .validate(&request, &json!({}), Arc::new(Snapshot::new()))
        .err()
        .expect("the hostile module must fail");
    let text = err.to_string();
    assert!(text.contains(expected), "{expected:?} not in: {text}");
    assert!(!text.contains('\n'), "not one line: {text}");
    let good = Policy::from_bytes(runtime, "good", &guest("", "", VALID, ""), None).unwrap();
    let answer = good
        .validate(&request, &json!({}), Arc::new(Snapshot::new()))
        .unwrap();
    assert!(answer.response.allowed);
    text
}

#[test]
fn an_endless_loop_is_stopped_at_the_deadline() {
    let rt = runtime();
    let wasm = guest("", "(loop $forever (br $forever))", VALID, "");
    assert_stopped(&rt, &wasm, "execution deadline of 200 ms");
}

#[test]
fn growing_memory_past_the_cap_is_stopped() {
    let rt = runtime();
    let body = "(loop $more (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))";
    let err = assert_stopped(&rt, &guest("", body, VALID, ""), "memory limit of 8 MiB");
    assert!(err.contains("was stopped"), "{err}");
}

#[test]
fn endless_recursion_is_a_trap_not_a_crash() {
    let rt = runtime();
    let extra =
        "(func $down (param i32) (result i32) (call $down (i32.add (local.get 0) (i32.const 1))))";
    let wasm = guest("", "(drop (call $down (i32.const 0)))", VALID, extra);
    assert_stopped(&rt, &wasm, "the module trapped");
}

#[test]
fn an_unknown_host_function_is_refused_at_load() {
    let rt = runtime();
    let wasm = guest(
        r#"(import "wapc" "__launch_missiles" (func $nope))"#,
        "(call $nope)",
        VALID,
        "",
    );
    let err = Policy::from_bytes(&rt, "hostile", &wasm, None)
        .err()
        .expect("refused");
    assert!(matches!(err, PolicyError::Load { .. }), "{err}");
    assert!(err.to_string().contains("cannot load hostile"), "{err}");
    let source = std::error::Error::source(&err)
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(
        source.contains("cannot be linked as a waPC policy"),
        "{source}"
    );
}

#[test]
fn an_answer_that_is_not_json_is_an_error() {
    let rt = runtime();
    assert_stopped(
        &rt,
        &guest("", "", "not json at all", ""),
        "validate answer is not valid",
    );
}

#[test]
fn a_verdict_of_the_wrong_shape_is_an_error() {
    let rt = runtime();
    let wasm = guest("", "", r#"{"accepted":"yes","warnings":7}"#, "");
    assert_stopped(&rt, &wasm, "validate answer is not valid");
}

#[test]
fn writing_to_stdout_and_stderr_goes_nowhere_and_harms_nothing() {
    let rt = runtime();
    // fd_write(fd, iovs=4096 -> {ptr 2048, len 17}, 1 iov, nwritten at 4104)
    let imports = r#"(import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))"#;
    let body = "(i32.store (i32.const 4096) (i32.const 2048)) \
                (i32.store (i32.const 4100) (i32.const 17)) \
                (drop (call $fd_write (i32.const 1) (i32.const 4096) (i32.const 1) (i32.const 4104))) \
                (drop (call $fd_write (i32.const 2) (i32.const 4096) (i32.const 1) (i32.const 4104)))";
    let wasm = guest(imports, body, VALID, "");
    let policy = Policy::from_bytes(&rt, "chatty", &wasm, None).unwrap();
    let request = json!({"uid": "1", "operation": "CREATE", "object": {}});
    for _ in 0..3 {
        let evaluation = policy
            .validate(&request, &json!({}), Arc::new(Snapshot::new()))
            .unwrap();
        assert!(evaluation.response.allowed);
    }
}

#[test]
fn a_guest_error_is_reported_and_the_module_stays_usable() {
    let rt = runtime();
    let imports = r#"(import "wapc" "__guest_error" (func $guest_error (param i32 i32)))"#;
    let body = "(call $guest_error (i32.const 2048) (i32.const 17)) (return (i32.const 0))";
    let wasm = guest(imports, body, "failed on purpose", "");
    assert_stopped(&rt, &wasm, "guest call failure: failed on purpose");
}
