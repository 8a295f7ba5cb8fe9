//! The playground against the scenarios `make test` runs through the real
//! modules: the same verdicts, messages, warnings and patches, through the
//! page's own entry points (JSON in, JSON out).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::*;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata")
}

fn call(input: Value) -> Value {
    serde_json::from_str(&evaluate(&input.to_string())).unwrap()
}

/// Where `actual` does not contain `expected` (objects: subset; others:
/// equal), as the scenario runner checks `patched_object_contains`
/// (crates/evaluator/src/scenario.rs, `first_mismatch`).
fn first_mismatch(expected: &Value, actual: &Value, path: String) -> Option<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            e.iter().find_map(|(key, value)| match a.get(key) {
                Some(inner) => first_mismatch(value, inner, format!("{path}/{key}")),
                None => Some(format!("{path}/{key} (missing)")),
            })
        }
        _ if expected == actual => None,
        _ => Some(if path.is_empty() { "/".into() } else { path }),
    }
}

/// The differences between an answer of [`evaluate`] and a scenario's
/// `expect.json`, checked as crates/evaluator/src/scenario.rs `check` does.
fn failures(expect: &Value, answer: &Value) -> Vec<String> {
    let mut failures = Vec::new();
    if let Some(text) = expect
        .get("settings_error_contains")
        .and_then(Value::as_str)
    {
        let error = &answer["error"];
        if error["field"] != "settings" || !error["message"].as_str().unwrap_or("").contains(text) {
            failures.push(format!(
                "expected a settings error with {text:?}, got {answer}"
            ));
        }
        return failures;
    }
    if answer["ok"] != true {
        return vec![format!("not evaluated: {answer}")];
    }
    let Some(allowed) = expect.get("allowed") else {
        return vec![format!("expect.json states no verdict: {expect}")];
    };
    if answer["allowed"] != *allowed {
        failures.push(format!(
            "expected allowed={allowed}, got {}",
            answer["message"]
        ));
    }
    let message = answer["message"].as_str().unwrap_or("");
    if let Some(text) = expect.get("message_contains").and_then(Value::as_str)
        && !message.contains(text)
    {
        failures.push(format!("message {message:?} does not contain {text:?}"));
    }
    let warnings: Vec<&str> = answer["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let expected_warnings = expect["warnings_contain"].as_array();
    for text in expected_warnings.into_iter().flatten() {
        let text = text.as_str().unwrap();
        if !warnings.iter().any(|w| w.contains(text)) {
            failures.push(format!("no warning contains {text:?} ({warnings:?})"));
        }
    }
    // Warnings and a patch the expectation does not state are not expected.
    let stated: Vec<&str> = expected_warnings
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for warning in &warnings {
        if !stated.iter().any(|text| warning.contains(text)) {
            failures.push(format!("unexpected warning {warning:?}"));
        }
    }
    let mutated = !answer["patch"].as_array().unwrap().is_empty();
    let expected = expect
        .get("mutated")
        .and_then(Value::as_bool)
        .unwrap_or(expect.get("patched_object_contains").is_some());
    if mutated != expected {
        failures.push(format!(
            "expected mutated={expected}, got {}",
            answer["patch"]
        ));
    }
    if mutated == answer["diff"].as_str().unwrap().is_empty() {
        failures.push("a diff without a patch, or the reverse".into());
    }
    if let Some(subset) = expect.get("patched_object_contains") {
        match first_mismatch(subset, &answer["patchedObject"], String::new()) {
            None => {}
            Some(path) => failures.push(format!("patched object differs at {path}")),
        }
    }
    failures
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Every scenario of `testdata/`, its request given as it is: the page
/// reaches the verdict the module reaches, for all of them.
#[test]
fn every_scenario_gives_the_expected_answer_from_its_request() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for expect_path in scenario_files() {
        let dir = expect_path.parent().unwrap();
        let expect: Value = serde_json::from_str(&read(&expect_path)).unwrap();
        let answer = call(json!({
            "rule": expect["policy"],
            "request": read(&dir.join("request.json")),
            "settings": read(&dir.join("settings.json")),
            "cluster": read(&dir.join("cluster.yaml")),
        }));
        let found = failures(&expect, &answer);
        if !found.is_empty() {
            wrong.push(format!("{}: {}", dir.display(), found.join("; ")));
        }
        checked += 1;
    }
    assert!(checked > 300, "only {checked} scenarios found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `testdata/<rule>/<scenario>/expect.json`, sorted.
fn scenario_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![testdata()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "expect.json") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The examples the page offers, evaluated from the page's own form
/// fields (a bare object, operation, user): each still gives its
/// scenario's expected answer, so the form builds the request the
/// scenario records.
#[test]
fn every_example_gives_its_scenarios_answer_from_the_form() {
    let rules: Value = serde_json::from_str(&rules()).unwrap();
    let rules = rules.as_array().unwrap();
    assert_eq!(
        rules
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        registry::names().collect::<Vec<_>>()
    );
    for rule in rules {
        let examples = rule["examples"].as_array().unwrap();
        assert!(
            examples.len() >= 3,
            "{}: only {} examples",
            rule["name"],
            examples.len()
        );
        let verdicts: Vec<&Value> = examples.iter().map(|e| &e["expect"]["allowed"]).collect();
        assert!(
            verdicts.contains(&&json!(true)) && verdicts.contains(&&json!(false)),
            "{}",
            rule["name"]
        );
        assert!(!rule["description"].as_str().unwrap().is_empty());
        assert!(rule["settings"].is_object(), "{}", rule["name"]);
        for example in examples {
            let mut input = example.clone();
            let input = input.as_object_mut().unwrap();
            let expect = input.remove("expect").unwrap();
            let name = input.remove("name").unwrap();
            input.remove("description");
            input.insert("rule".into(), rule["name"].clone());
            let answer = call(Value::Object(input.clone()));
            let found = failures(&expect, &answer);
            assert!(
                found.is_empty(),
                "{} {name}: {}",
                rule["name"],
                found.join("; ")
            );
        }
    }
}

#[test]
fn a_context_aware_rule_lists_its_host_calls_with_their_answers() {
    let rules: Value = serde_json::from_str(&rules()).unwrap();
    let og = rules
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "og-intersection")
        .unwrap();
    let example = og["examples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| !e["cluster"].as_str().unwrap().is_empty())
        .unwrap();
    let mut input = example.clone();
    input["rule"] = json!("og-intersection");
    for key in ["expect", "name", "description"] {
        input.as_object_mut().unwrap().remove(key);
    }
    let answer = call(input);
    let calls = answer["hostCalls"].as_array().unwrap();
    assert!(!calls.is_empty(), "{answer}");
    for call in calls {
        assert!(
            call["capability"]
                .as_str()
                .unwrap()
                .starts_with("kubernetes/")
        );
        assert!(call["request"].is_object());
        assert!(
            call.get("answer").is_some() != call.get("error").is_some(),
            "{call}"
        );
    }
}

#[test]
fn a_mutation_comes_with_its_patch_patched_object_and_diff() {
    let answer = call(json!({
        "rule": "catalog-union",
        "object": "apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\nmetadata: {name: ops, namespace: olm}\nspec:\n  sourceType: grpc\n  image: quay.io/x/catalog:latest\n",
        "settings": "migrateLegacy: true",
        "user": "alice",
        "groups": "team-a, system:authenticated",
    }));
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(answer["allowed"], true);
    assert_eq!(answer["subject"], "CatalogSource olm/ops (CREATE)");
    assert_eq!(
        answer["patchedObject"]["spec"]["catalogImageSource"]["catalogImage"],
        "quay.io/x/catalog:latest"
    );
    assert!(
        answer["diff"]
            .as_str()
            .unwrap()
            .contains("+++ patched object")
    );
    assert_eq!(answer["review"]["response"]["patchType"], "JSONPatch");
    assert_eq!(
        answer["request"]["userInfo"],
        json!({"username": "alice", "groups": ["team-a", "system:authenticated"]})
    );
}

#[test]
fn each_bad_input_is_named_never_a_panic() {
    let object = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n";
    for (input, field) in [
        (json!("not an object"), "input"),
        (json!({"rule": "catalog-union", "colour": "red"}), "input"),
        (json!({"rule": "nope", "object": object}), "rule"),
        (
            json!({"rule": "catalog-union", "object": "a: [b"}),
            "object",
        ),
        (
            json!({"rule": "catalog-union", "object": "- a\n- b"}),
            "object",
        ),
        (json!({"rule": "catalog-union", "object": "a: b"}), "object"),
        (json!({"rule": "catalog-union"}), "object"),
        (
            json!({"rule": "catalog-union", "object": object, "operation": "PATCH"}),
            "operation",
        ),
        (
            json!({"rule": "catalog-union", "object": object, "operation": "UPDATE"}),
            "oldObject",
        ),
        (
            json!({"rule": "catalog-union", "object": object, "settings": "[1]"}),
            "settings",
        ),
        (
            json!({"rule": "catalog-union", "object": object, "settings": "allowLegacy: 1"}),
            "settings",
        ),
        (
            json!({"rule": "catalog-union", "object": object, "cluster": "kind: X"}),
            "cluster",
        ),
        (
            json!({"rule": "catalog-union", "request": object}),
            "request",
        ),
        (
            json!({"rule": "catalog-union", "request": "request: 1"}),
            "request",
        ),
    ] {
        let answer = call(input.clone());
        assert_eq!(answer["ok"], false, "{input}: {answer}");
        assert_eq!(answer["error"]["field"], field, "{input}: {answer}");
        assert!(!answer["error"]["message"].as_str().unwrap().is_empty());
    }
}
