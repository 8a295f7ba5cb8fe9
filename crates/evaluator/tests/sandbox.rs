//! The host's sandbox and waPC plumbing, exercised with tiny hand-written
//! guests (WAT), independent of the policy modules.

use std::sync::Arc;
use std::time::Duration;

use olm_guard_evaluator::{ContextHost, Grants};
use olm_guard_runtime::metadata::{ContextAwareResource, Metadata};
use olm_guard_runtime::{CallError, HostCallback, Limits, Runtime};
use olm_guard_snapshot::Snapshot;

/// A waPC guest whose behaviour is chosen by the operation name:
/// `echo` answers the payload, `loop` spins forever, `grow` allocates until
/// stopped, `fail` answers a guest error, `host` forwards the payload as a
/// host call to kubewarden/kubernetes/<payload-named op> and answers the result.
const GUEST: &str = r#"
(module
  (import "wapc" "__guest_request" (func $guest_request (param i32 i32)))
  (import "wapc" "__guest_response" (func $guest_response (param i32 i32)))
  (import "wapc" "__guest_error" (func $guest_error (param i32 i32)))
  (import "wapc" "__host_call" (func $host_call (param i32 i32 i32 i32 i32 i32 i32 i32) (result i32)))
  (import "wapc" "__host_response_len" (func $host_response_len (result i32)))
  (import "wapc" "__host_response" (func $host_response (param i32)))
  (import "wapc" "__host_error_len" (func $host_error_len (result i32)))
  (import "wapc" "__host_error" (func $host_error (param i32)))
  (memory (export "memory") 2)
  (data (i32.const 0) "kubewardenkubernetes")
  (data (i32.const 32) "failed on purpose")
  ;; op at 1024, payload at 4096
  (func $op_is (param $len i32) (param $c0 i32) (result i32)
    (i32.eq (i32.load8_u (i32.const 1024)) (local.get $c0)))
  (func (export "__guest_call") (param $op_len i32) (param $len i32) (result i32)
    (local $n i32)
    (call $guest_request (i32.const 1024) (i32.const 4096))
    ;; 'e'cho
    (if (call $op_is (local.get $op_len) (i32.const 101))
      (then (call $guest_response (i32.const 4096) (local.get $len)) (return (i32.const 1))))
    ;; 'l'oop
    (if (call $op_is (local.get $op_len) (i32.const 108))
      (then (loop $forever (br $forever))))
    ;; 'g'row
    (if (call $op_is (local.get $op_len) (i32.const 103))
      (then (loop $more
        (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
        unreachable))
    ;; 'f'ail
    (if (call $op_is (local.get $op_len) (i32.const 102))
      (then (call $guest_error (i32.const 32) (i32.const 17)) (return (i32.const 0))))
    ;; 'h'ost: operation name = op after "h:" e.g. "h:can_i", payload = request
    (if (call $op_is (local.get $op_len) (i32.const 104))
      (then
        (if (call $host_call (i32.const 0) (i32.const 10) (i32.const 10) (i32.const 10)
                             (i32.const 1026) (i32.sub (local.get $op_len) (i32.const 2))
                             (i32.const 4096) (local.get $len))
          (then
            (local.set $n (call $host_response_len))
            (call $host_response (i32.const 65536))
            (call $guest_response (i32.const 65536) (local.get $n))
            (return (i32.const 1)))
          (else
            (local.set $n (call $host_error_len))
            (call $host_error (i32.const 65536))
            (call $guest_error (i32.const 65536) (local.get $n))
            (return (i32.const 0))))))
    (i32.const 0))
)
"#;

struct Silent;
impl HostCallback for Silent {
    fn call(&self, _: &str, _: &str, _: &str, _: &[u8]) -> Result<Vec<u8>, String> {
        Err("no host".into())
    }
}

/// [`GUEST`] as a binary module.
fn guest() -> Vec<u8> {
    wat::parse_str(GUEST).unwrap()
}

fn runtime(limits: Limits) -> Runtime {
    Runtime::new(limits).expect("runtime")
}

#[test]
fn echo_round_trips_payload() {
    let rt = runtime(Limits::default());
    let module = rt.load(&guest()).unwrap();
    let answer = module.call("echo", b"{\"x\":1}", Arc::new(Silent)).unwrap();
    assert_eq!(answer, b"{\"x\":1}");
}

#[test]
fn guest_error_is_reported() {
    let rt = runtime(Limits::default());
    let module = rt.load(&guest()).unwrap();
    let err = module.call("fail", b"", Arc::new(Silent)).unwrap_err();
    assert_eq!(err, CallError::Guest("failed on purpose".into()));
    assert_eq!(err.to_string(), "guest call failure: failed on purpose");
}

/// The epoch ticker lives as long as any module: a module kept after its
/// runtime is dropped still stops at its deadline instead of spinning.
#[test]
fn a_module_that_outlives_its_runtime_still_has_a_deadline() {
    let deadline = Duration::from_millis(100);
    let module = {
        let rt = runtime(Limits {
            deadline,
            ..Limits::default()
        });
        rt.load(&guest()).unwrap()
    };
    let err = module.call("loop", b"", Arc::new(Silent)).unwrap_err();
    assert_eq!(err, CallError::DeadlineExceeded(deadline));
}

#[test]
fn endless_loop_is_stopped_at_the_deadline() {
    let limits = Limits {
        deadline: Duration::from_millis(100),
        ..Limits::default()
    };
    let rt = runtime(limits);
    let module = rt.load(&guest()).unwrap();
    let err = module.call("loop", b"", Arc::new(Silent)).unwrap_err();
    assert_eq!(err, CallError::DeadlineExceeded(Duration::from_millis(100)));
    assert!(
        err.to_string().contains("execution deadline of 100 ms"),
        "{err}"
    );
    // The module stays usable: every call gets a fresh instance.
    assert_eq!(module.call("echo", b"ok", Arc::new(Silent)).unwrap(), b"ok");
}

#[test]
fn unbounded_allocation_is_stopped_at_the_memory_limit() {
    let limits = Limits {
        memory_bytes: 8 << 20,
        ..Limits::default()
    };
    let rt = runtime(limits);
    let module = rt.load(&guest()).unwrap();
    let err = module.call("grow", b"", Arc::new(Silent)).unwrap_err();
    assert_eq!(err, CallError::MemoryLimitExceeded(8 << 20));
    assert!(err.to_string().contains("memory limit of 8 MiB"), "{err}");
}

#[test]
fn a_non_wapc_module_is_refused_with_a_reason() {
    let rt = runtime(Limits::default());
    let err = rt.load(b"not wasm").err().expect("refused");
    assert!(
        err.to_string().contains("not a WebAssembly module"),
        "{err}"
    );
    let err = rt.load(b"\0asm garbage").err().expect("refused");
    assert!(
        err.to_string().contains("not a loadable wasm module"),
        "{err}"
    );
    let no_exports = wat::parse_str("(module (import \"env\" \"f\" (func)))").unwrap();
    let err = rt.load(&no_exports).err().expect("refused");
    assert!(err.to_string().contains("cannot be linked"), "{err}");
}

const CLUSTER: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: a, labels: {team: x}}
---
apiVersion: v1
kind: Namespace
metadata: {name: b, labels: {team: y}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ns-reader}
rules: [{apiGroups: [""], resources: [namespaces], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-reads}
subjects: [{kind: User, name: alice}]
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ns-reader}
"#;

fn host_with(resources: &[(&str, &str)], capabilities: Option<Vec<&str>>) -> Arc<ContextHost> {
    let metadata = Metadata {
        context_aware_resources: resources
            .iter()
            .map(|(v, k)| ContextAwareResource {
                api_version: v.to_string(),
                kind: k.to_string(),
            })
            .collect(),
        host_capabilities: capabilities.map(|c| c.into_iter().map(String::from).collect()),
        ..Metadata::default()
    };
    let snapshot = Arc::new(Snapshot::from_yaml(CLUSTER).unwrap());
    Arc::new(ContextHost::new(
        snapshot,
        Grants::from_metadata(Some(&metadata)),
    ))
}

fn item_names(answer: &[u8]) -> Vec<String> {
    let list: serde_json::Value = serde_json::from_slice(answer).unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn list_with_label_selector_through_the_guest() {
    let rt = runtime(Limits::default());
    let module = rt.load(&guest()).unwrap();
    let host = host_with(&[("v1", "Namespace")], None);
    let all = module
        .call(
            "h:list_resources_all",
            br#"{"api_version":"v1","kind":"Namespace"}"#,
            host.clone(),
        )
        .unwrap();
    assert_eq!(item_names(&all), ["a", "b"]);
    let selected = module
        .call(
            "h:list_resources_all",
            br#"{"api_version":"v1","kind":"Namespace","label_selector":"team in (y)"}"#,
            host.clone(),
        )
        .unwrap();
    assert_eq!(item_names(&selected), ["b"]);
    let by_name = module
        .call(
            "h:list_resources_all",
            br#"{"api_version":"v1","kind":"Namespace","field_selector":"metadata.name!=b"}"#,
            host,
        )
        .unwrap();
    assert_eq!(item_names(&by_name), ["a"]);
}

#[test]
fn undeclared_kind_gets_kubewardens_denial() {
    let rt = runtime(Limits::default());
    let module = rt.load(&guest()).unwrap();
    let host = host_with(&[], None);
    let err = module
        .call(
            "h:list_resources_all",
            br#"{"api_version":"v1","kind":"Namespace"}"#,
            host,
        )
        .unwrap_err();
    assert_eq!(
        err,
        CallError::Guest(
            "Policy has not been granted access to Kubernetes v1/Namespace resources. \
             The violation has been reported."
                .into()
        )
    );
}

#[test]
fn undeclared_capability_is_refused_and_unknown_ones_error() {
    let rt = runtime(Limits::default());
    let module = rt.load(&guest()).unwrap();
    let host = host_with(&[("v1", "Namespace")], Some(vec!["kubernetes/can_i"]));
    let err = module
        .call(
            "h:list_resources_all",
            br#"{"api_version":"v1","kind":"Namespace"}"#,
            host.clone(),
        )
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "not been granted access to the 'kubernetes/list_resources_all' host capability"
        ),
        "{err}"
    );
    let err = module
        .call("h:no_such_op", b"{}", host_with(&[], None))
        .unwrap_err();
    assert_eq!(
        err,
        CallError::Guest("unknown operation: no_such_op".into())
    );
}

#[test]
fn can_i_is_answered_from_the_snapshot_rbac() {
    let rt = runtime(Limits::default());
    let module = rt.load(&guest()).unwrap();
    let host = host_with(&[], Some(vec!["kubernetes/*"]));
    let ask = |user: &str, verb: &str, groups: &str| {
        let payload = format!(
            r#"{{"subject_access_review":{{"groups":{groups},"resource_attributes":{{"group":"","resource":"namespaces","verb":"{verb}"}},"user":"{user}"}},"disable_cache":false}}"#
        );
        let answer = module
            .call("h:can_i", payload.as_bytes(), host.clone())
            .unwrap();
        let status: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        status["allowed"].as_bool().unwrap()
    };
    assert!(ask("alice", "list", "null"));
    assert!(!ask("alice", "delete", "null"));
    assert!(!ask("bob", "list", "[]"));
    assert!(ask("bob", "delete", r#"["system:masters"]"#));
    assert_eq!(host.calls().len(), 4);
}
