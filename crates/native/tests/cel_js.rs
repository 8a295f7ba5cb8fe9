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
//!
//! The CRD patches' rules go through the same check with `self` and
//! `oldSelf` typed by the patched CRD's structural schema, as
//! apiextensions-apiserver compiles `x-kubernetes-validations`, together
//! with the rules the upstream CRD already has (which must pass too: a
//! check that refused them would be wrong, not the CRD).

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use olm_guard_native::model::BoundPolicy;
use olm_guard_native::{Native, crd};

fn cel_js_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cel-js")
}

/// cel-js's answer for `policies` and `crd_rules` (the input
/// `tests/cel-js/check.mjs` reads). Fails, saying how to install it, when
/// cel-js is not there.
fn check(policies: &[Value], crd_rules: &[Value]) -> Value {
    let dir = cel_js_dir();
    let installed = || {
        dir.join("node_modules/@marcbachmann/cel-js").is_dir()
            && dir.join("node_modules/re2js").is_dir()
    };
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
    let input = json!({ "policies": policies, "crdRules": crd_rules }).to_string();
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

/// The CRDs `native`'s patches are written for, each with every patch
/// applied in order (as `kubectl patch --type json` applies them).
fn patched_crds(native: &Native) -> Vec<(String, Value)> {
    let mut crds: Vec<(String, Value)> = Vec::new();
    for patch in &native.schema_patches {
        if !crds.iter().any(|(name, _)| *name == patch.crd) {
            let found = crd::find(&patch.crd, None).unwrap_or_else(|e| panic!("{e}"));
            crds.push((patch.crd.clone(), found.document));
        }
        let (_, document) = crds
            .iter_mut()
            .find(|(name, _)| *name == patch.crd)
            .unwrap();
        common::apply_patch(document, &patch.patch, &patch.file);
    }
    crds
}

/// Every rule of every CRD the native forms patch, as `check.mjs` reads
/// them (one entry per schema node), without repeats.
fn crd_rules(forms: &[Native]) -> Vec<Value> {
    let mut entries: Vec<Value> = Vec::new();
    for native in forms {
        for (name, document) in patched_crds(native) {
            for (at, node) in common::validated_nodes(&document) {
                let mut expressions = Vec::new();
                for (i, rule) in node["x-kubernetes-validations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .enumerate()
                {
                    for field in ["rule", "messageExpression"] {
                        if let Some(expression) = rule[field].as_str() {
                            expressions.push(json!({
                                "where": format!("{at}/x-kubernetes-validations/{i}/{field}"),
                                "expression": expression,
                            }));
                        }
                    }
                }
                let entry = json!({"name": name, "schema": node, "expressions": expressions});
                if !entries.contains(&entry) {
                    entries.push(entry);
                }
            }
        }
    }
    entries
}

/// Each `has(self.a.b)` (or `oldSelf`) in `entry`'s rules names fields the
/// schema declares: cel-go refuses an undefined field in `has()`, which
/// cel-js lets through. Stops at a node whose fields are not declared
/// (maps, preserved unknown fields).
fn undeclared_has_fields(entry: &Value) -> Vec<String> {
    let pattern =
        regex::Regex::new(r"has\((?:self|oldSelf)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)\)").unwrap();
    let mut undeclared = Vec::new();
    for expression in entry["expressions"].as_array().unwrap() {
        let text = expression["expression"].as_str().unwrap();
        for found in pattern.captures_iter(text) {
            let mut node = &entry["schema"];
            for field in found[1].trim_start_matches('.').split('.') {
                match node.get("properties") {
                    Some(properties) => match properties.get(field) {
                        Some(next) => node = next,
                        None => {
                            undeclared.push(format!(
                                "{}: {}",
                                expression["where"].as_str().unwrap_or_default(),
                                &found[0]
                            ));
                            break;
                        }
                    },
                    None => break,
                }
            }
        }
    }
    undeclared
}

#[test]
fn every_generated_expression_type_checks_in_cel_js() {
    let forms = common::every_native_form();
    let policies: Vec<Value> = forms
        .iter()
        .flat_map(|native| native.policies.iter().map(input))
        .collect();
    let crd_rules = crd_rules(&forms);
    assert!(
        crd_rules.len() >= 3,
        "only {} CRD schema nodes with rules",
        crd_rules.len()
    );
    for entry in &crd_rules {
        let undeclared = undeclared_has_fields(entry);
        assert!(
            undeclared.is_empty(),
            "{}: has() of undeclared fields {undeclared:?}",
            entry["name"]
        );
    }
    let expected: usize = policies
        .iter()
        .map(|p| {
            ["matchConditions", "variables", "expressions"]
                .iter()
                .map(|k| p[k].as_array().unwrap().len())
                .sum::<usize>()
        })
        .sum::<usize>()
        + crd_rules
            .iter()
            .map(|r| r["expressions"].as_array().unwrap().len())
            .sum::<usize>();
    let answer = check(&policies, &crd_rules);
    let refused = answer["refused"].as_array().unwrap();
    assert!(
        refused.is_empty(),
        "{} expressions refused, the first: {:#}",
        refused.len(),
        Value::from(refused.iter().take(5).cloned().collect::<Vec<_>>())
    );
    assert_eq!(answer["checked"], json!(expected));
    println!(
        "cel-js: {expected} expressions of {} policies and {} CRD schema nodes type-check",
        policies.len(),
        crd_rules.len()
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
    let rule = json!({
        "name": "a CRD",
        "schema": {"type": "object", "properties": {
            "sourceType": {"type": "string"},
            "priority": {"type": "integer"},
        }},
        "expressions": [
            {"where": "crd fine", "expression": "!has(oldSelf.sourceType) || self.sourceType == oldSelf.sourceType"},
            {"where": "crd type", "expression": "self.priority + 'a' != ''"},
            {"where": "crd field", "expression": "self.address == ''"},
        ],
    });
    assert_eq!(
        undeclared_has_fields(&json!({"schema": rule["schema"], "expressions": [
            {"where": "has", "expression": "has(self.sourceType) && has(self.adress)"},
        ]})),
        ["has: has(self.adress)"]
    );
    let answer = check(&[policy], &[rule]);
    let refused: Vec<&str> = answer["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["where"].as_str().unwrap())
        .collect();
    assert_eq!(
        refused,
        [
            "mc",
            "variables.sum",
            "typo",
            "type",
            "check",
            "mixed",
            "crd type",
            "crd field"
        ],
        "{answer:#}"
    );
    assert_eq!(answer["checked"], json!(12));
}
