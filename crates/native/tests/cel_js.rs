//! Every generated expression type-checks in a second CEL implementation,
//! cel-js (`tests/cel-js`, installed by `scripts/test-deps.sh` with `npm
//! ci`), declared as kube-apiserver declares a ValidatingAdmissionPolicy's
//! environment: `request` typed as its AdmissionRequest, `authorizer` as its
//! authorizer library, `variables` with the types their expressions check to
//! (`k8s.io/apiserver` `pkg/admission/plugin/cel/compile.go`,
//! `pkg/cel/library/authz.go`). The API server refuses a policy whose
//! expression does not compile there; our own evaluator (the `cel` crate's
//! parser) does not type-check, so a wrong overload, a misspelt request
//! field or a variable used as another type would otherwise be found only
//! by the cluster.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use olm_guard_native::model::BoundPolicy;

fn cel_js_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cel-js")
}

/// cel-js's answer for `policies` (the input `tests/cel-js/check.mjs`
/// reads). Fails, saying how to install it, when cel-js is not there.
fn check(policies: &[Value]) -> Value {
    let dir = cel_js_dir();
    let installed = || dir.join("node_modules/@marcbachmann/cel-js").is_dir();
    if !installed() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let _ = Command::new(root.join("scripts/test-deps.sh")).status();
    }
    assert!(
        installed(),
        "cel-js is not installed in crates/native/tests/cel-js: run scripts/test-deps.sh (it runs npm ci there; node and npm come from apt-get install -y nodejs npm)"
    );
    let mut child = Command::new("node")
        .arg(dir.join("check.mjs"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs (apt-get install -y nodejs)");
    let input = json!({ "policies": policies }).to_string();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
        panic!(
            "cel-js check.mjs: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// One policy as `check.mjs` reads it.
fn input(bound: &BoundPolicy) -> Value {
    let spec = &bound.policy.spec;
    let named = |prefix: &str, list: &[olm_guard_native::model::NamedExpression]| {
        list.iter()
            .map(|n| json!({"where": format!("{prefix}.{}", n.name), "expression": n.expression}))
            .collect::<Vec<_>>()
    };
    let mut expressions = Vec::new();
    for (i, validation) in spec.validations.iter().enumerate() {
        expressions.push(json!({
            "where": format!("validations[{i}].expression"),
            "expression": validation.expression,
        }));
        if let Some(message) = &validation.message_expression {
            expressions.push(json!({
                "where": format!("validations[{i}].messageExpression"),
                "expression": message,
            }));
        }
    }
    json!({
        "name": bound.policy.metadata.name,
        "matchConditions": named("matchConditions", &spec.match_conditions),
        "variables": spec.variables.iter()
            .map(|v| json!({"name": v.name, "expression": v.expression}))
            .collect::<Vec<_>>(),
        "expressions": expressions,
    })
}

#[test]
fn every_generated_expression_type_checks_in_cel_js() {
    let policies: Vec<Value> = common::every_native_form()
        .iter()
        .flat_map(|native| native.policies.iter().map(input))
        .collect();
    let expected: usize = policies
        .iter()
        .map(|p| {
            ["matchConditions", "variables", "expressions"]
                .iter()
                .map(|k| p[k].as_array().unwrap().len())
                .sum::<usize>()
        })
        .sum();
    let answer = check(&policies);
    let refused = answer["refused"].as_array().unwrap();
    assert!(
        refused.is_empty(),
        "{} expressions refused, the first: {:#}",
        refused.len(),
        Value::from(refused.iter().take(5).cloned().collect::<Vec<_>>())
    );
    assert_eq!(answer["checked"], json!(expected));
    println!(
        "cel-js: {expected} expressions of {} policies type-check",
        policies.len()
    );
}

/// The checker refuses what cel-go refuses: a wrong overload, a request field
/// that does not exist, a variable used as another type, a variable in a
/// match condition, an authorizer call that is not in the library, a list
/// literal of two types; and takes what cel-go takes, such as a list literal
/// that mixes `dyn` with a string.
#[test]
fn cel_js_refuses_what_the_api_server_would() {
    let policy = json!({
        "name": "wrong",
        "matchConditions": [
            {"where": "mc", "expression": "variables.count > 0"},
        ],
        "variables": [
            {"name": "count", "expression": "size(object.spec.rules)"},
            {"name": "sum", "expression": "'rules: ' + size(object.spec.rules)"},
        ],
        "expressions": [
            {"where": "fine", "expression": "variables.count > 2 && request.userInfo.username != ''"},
            {"where": "typo", "expression": "request.userInfo.usrname == 'alice'"},
            {"where": "type", "expression": "variables.count.startsWith('a')"},
            {"where": "check", "expression": "authorizer.group('').resource('x').allowed()"},
            {"where": "mixed", "expression": "size([1, 'a']) == 2"},
            {"where": "dyn mixed", "expression": "[object.kind, 'a'].join('/') != ''"},
        ],
    });
    let answer = check(&[policy]);
    let refused: Vec<&str> = answer["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["where"].as_str().unwrap())
        .collect();
    assert_eq!(
        refused,
        ["mc", "variables.sum", "typo", "type", "check", "mixed"],
        "{answer:#}"
    );
    assert_eq!(answer["checked"], json!(9));
}
