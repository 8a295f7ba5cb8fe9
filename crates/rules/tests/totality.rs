//! Every rule in the registry answers every JSON with a verdict: no panic,
//! no Rust debug output in a message, whatever the request or settings.
//!
//! The requests are the rule's own scenarios (`testdata/<rule>/`), each
//! field of the request, its object, old object and spec replaced by a value
//! of every other JSON type; the settings are the rule's defaults with each
//! key given every wrong type. A new rule in the registry is covered without
//! touching this file.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use olm_guard_core::{NoCluster, Verdict};
use olm_guard_rules::registry::{RULES, RuleEntry};
use olm_guard_snapshot::Snapshot;
use serde_json::{Map, Value, json};

/// What Rust's debug output looks like; no message may contain it.
const DEBUG_OUTPUT: [&str; 6] = [
    "Some(", "None)", "Object {", "String(", "Number(", "Array [",
];

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// One value of every JSON type, some of them hostile.
fn odd_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(-1),
        json!(1.5e300),
        json!("\u{0}\u{202e}ünïcödé"),
        json!("x".repeat(10_000)),
        json!([]),
        json!([null, 1, "a", {}]),
        json!({}),
        json!({"a": {"b": {"c": {"d": [[[[]]]]}}}}),
    ]
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The rule's scenario requests (the AdmissionRequest inside each) and
/// cluster snapshots. A scenario is a directory with an expect file; one
/// whose request or cluster cannot be read fails the test, naming it,
/// rather than being left out.
fn scenarios(rule: &RuleEntry) -> Vec<(Value, Snapshot)> {
    let tree = testdata().join(rule.name);
    let entries =
        std::fs::read_dir(&tree).unwrap_or_else(|e| panic!("cannot list {}: {e}", tree.display()));
    let mut dirs: Vec<PathBuf> = entries
        .map(|entry| {
            entry
                .unwrap_or_else(|e| panic!("{}: {e}", tree.display()))
                .path()
        })
        .filter(|dir| {
            ["expect.json", "expect.yaml", "expect.yml"]
                .iter()
                .any(|name| dir.join(name).is_file())
        })
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "{} holds no scenario", tree.display());
    dirs.iter()
        .map(|dir| {
            let review = read_json(&dir.join("request.json"));
            let request = review.get("request").cloned().unwrap_or(review);
            let cluster = dir.join("cluster.yaml");
            let snapshot = if cluster.is_file() {
                let text = std::fs::read_to_string(&cluster)
                    .unwrap_or_else(|e| panic!("cannot read {}: {e}", cluster.display()));
                Snapshot::from_yaml(&text).unwrap_or_else(|e| panic!("{}: {e}", cluster.display()))
            } else {
                Snapshot::default()
            };
            (request, snapshot)
        })
        .collect()
}

/// The request with the value at `path` (a list of object keys) replaced.
fn replaced(request: &Value, path: &[&str], value: &Value) -> Option<Value> {
    let mut copy = request.clone();
    let mut cursor = &mut copy;
    for key in &path[..path.len() - 1] {
        cursor = cursor.get_mut(*key)?;
    }
    cursor
        .as_object_mut()?
        .insert(path.last()?.to_string(), value.clone());
    Some(copy)
}

/// Every key path worth breaking: the request's top level, and the top
/// level of its object, old object, their specs and metadata.
fn paths(request: &Value) -> Vec<Vec<String>> {
    let keys = |value: Option<&Value>| -> Vec<String> {
        value
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let mut paths: Vec<Vec<String>> = keys(Some(request)).into_iter().map(|k| vec![k]).collect();
    for side in ["object", "oldObject"] {
        let Some(object) = request.get(side) else {
            continue;
        };
        for key in keys(Some(object)) {
            paths.push(vec![side.into(), key.clone()]);
        }
        for inner in ["spec", "metadata", "aggregationRule"] {
            for key in keys(object.get(inner)) {
                paths.push(vec![side.into(), inner.into(), key]);
            }
        }
    }
    paths
}

#[track_caller]
fn assert_answers(rule: &RuleEntry, what: &str, evaluate: impl FnOnce() -> Verdict) {
    let verdict = catch_unwind(AssertUnwindSafe(evaluate))
        .unwrap_or_else(|_| panic!("{} panicked on {what}", rule.name));
    let message = verdict.message.unwrap_or_default();
    for debug in DEBUG_OUTPUT {
        assert!(
            !message.contains(debug),
            "{}: debug output {debug:?} on {what}: {message}",
            rule.name
        );
    }
    if !verdict.allowed {
        assert!(
            !message.is_empty(),
            "{}: a denial without a message on {what}",
            rule.name
        );
    }
}

#[test]
fn every_rule_has_scenarios_to_mutate() {
    for rule in RULES {
        assert!(
            scenarios(rule).len() >= 10,
            "{} has fewer than 10 scenario requests under testdata/",
            rule.name
        );
    }
}

#[test]
fn every_rule_answers_odd_requests_with_a_verdict() {
    for rule in RULES {
        let scenarios = scenarios(rule);
        let evaluations: usize = on_every_core(&scenarios, |(request, snapshot)| {
            odd_requests_answered(rule, request, snapshot)
        });
        assert!(
            evaluations > 1_000,
            "{}: only {evaluations} evaluations",
            rule.name
        );
    }
}

/// Every odd value as the whole request, and in place of each of the
/// request's fields (with the scenario's cluster, and with none); answers
/// how many evaluations that made.
fn odd_requests_answered(rule: &RuleEntry, request: &Value, snapshot: &Snapshot) -> usize {
    let settings = Value::Null;
    let mut evaluations = 0;
    for value in odd_values() {
        assert_answers(rule, &format!("request {value}"), || {
            rule.evaluate(value.clone(), &settings, &NoCluster)
        });
        for path in paths(request) {
            let path: Vec<&str> = path.iter().map(String::as_str).collect();
            let Some(odd) = replaced(request, &path, &value) else {
                continue;
            };
            let what = format!("{} = {value}", path.join("."));
            assert_answers(rule, &what, || {
                rule.evaluate(odd.clone(), &settings, snapshot)
            });
            assert_answers(rule, &what, || rule.evaluate(odd, &settings, &NoCluster));
            evaluations += 2;
        }
    }
    evaluations
}

/// `work` on every item, the items shared out over the machine's cores (the
/// rules are unoptimised in a test build, and a rule's scenarios are
/// independent); answers the sum. A failing assertion in a worker fails the
/// test with its own message.
fn on_every_core<T: Sync>(items: &[T], work: impl Fn(&T) -> usize + Sync) -> usize {
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|worker| {
                let work = &work;
                scope.spawn(move || -> usize {
                    items.iter().skip(worker).step_by(workers).map(work).sum()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| -> usize {
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .sum::<usize>()
    })
}

/// A value of a JSON type other than `default`'s.
fn wrong_types(default: &Value) -> Vec<Value> {
    odd_values()
        .into_iter()
        .filter(|v| !v.is_null())
        .filter(|v| std::mem::discriminant(v) != std::mem::discriminant(default))
        .filter(|v| !(v.is_number() && default.is_number()))
        .collect()
}

#[test]
fn every_rule_refuses_settings_of_the_wrong_type() {
    for rule in RULES {
        let defaults = rule.default_settings();
        let Some(defaults) = defaults.as_object() else {
            panic!(
                "{}: default settings are not an object: {defaults}",
                rule.name
            );
        };
        assert!(
            rule.check_settings(&Value::Object(defaults.clone()))
                .is_ok()
        );
        for (key, default) in defaults {
            for value in wrong_types(default) {
                let mut settings: Map<String, Value> = defaults.clone();
                settings.insert(key.clone(), value.clone());
                let settings = Value::Object(settings);
                let refused = catch_unwind(|| rule.check_settings(&settings))
                    .unwrap_or_else(|_| panic!("{}: check_settings panicked", rule.name));
                assert!(
                    refused.is_err(),
                    "{}: settings {key} = {value} were accepted",
                    rule.name
                );
                // The module's validate refuses them too, as a 400.
                let (request, _) = scenarios(rule).into_iter().next().expect("a scenario");
                let verdict = rule.evaluate(request, &settings, &NoCluster);
                assert_eq!(verdict.code, Some(400), "{}: {key} = {value}", rule.name);
            }
        }
        for settings in odd_values()
            .into_iter()
            .filter(|v| !v.is_object() && !v.is_null())
        {
            assert!(
                rule.check_settings(&settings).is_err(),
                "{}: settings {settings} were accepted",
                rule.name
            );
        }
    }
}
