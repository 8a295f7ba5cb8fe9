//! The native policies evaluated by two CEL implementations on every
//! covered scenario: `olm_guard_native::admission` (ours, on the `cel`
//! crate's parser) and cel-js (`crates/native/tests/cel-js/evaluate.mjs`),
//! each as kube-apiserver's validator evaluates a policy. Every decision
//! (admit, deny with its message, or error) must be the same, so that a
//! verdict or message we predict does not rest on a quirk of one
//! interpreter. cel-js answers authorizer checks from those our evaluation
//! made (a check it asks that ours did not is a difference too); costs are
//! ours alone (`crates/native/tests/cost.rs`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use olm_guard_conformance::admitted::Admission;
use olm_guard_conformance::native::SnapshotCluster;
use olm_guard_conformance::scenario;
use olm_guard_core::UserInfo;
use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_evaluator::input;
use olm_guard_evaluator::scenario::discover;
use olm_guard_native::admission::{Evaluation, EvaluationReport, Options, Params, Policies};
use olm_guard_native::authorizer::{Authorize, AuthorizerError};
use olm_guard_native::generate;
use olm_guard_native::model::BoundPolicy;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A check's key, as `evaluate.mjs` writes it.
fn resource_key(a: &ResourceAttributes) -> String {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    json!([
        text(&a.group),
        a.resource,
        text(&a.subresource),
        text(&a.namespace),
        text(&a.name),
        a.verb
    ])
    .to_string()
}

/// The scenario's authorizer, with every answer it gave written down.
struct Recorder {
    cluster: Arc<SnapshotCluster>,
    answers: Mutex<BTreeMap<String, Result<bool, String>>>,
}

impl Recorder {
    fn record(
        &self,
        key: String,
        answer: Result<bool, AuthorizerError>,
    ) -> Result<bool, AuthorizerError> {
        let kept = answer.as_ref().map(|b| *b).map_err(|e| e.to_string());
        self.answers.lock().unwrap().insert(key, kept);
        answer
    }
}

impl Authorize for Recorder {
    fn resource(&self, user: &UserInfo, a: &ResourceAttributes) -> Result<bool, AuthorizerError> {
        self.record(resource_key(a), self.cluster.resource(user, a))
    }

    fn non_resource(
        &self,
        user: &UserInfo,
        verb: &str,
        path: &str,
    ) -> Result<bool, AuthorizerError> {
        let key = json!(["path", path, verb]).to_string();
        self.record(key, self.cluster.non_resource(user, verb, path))
    }
}

/// `value` with every integer as `{"$int": "N"}`: JSON numbers do not say
/// int or double, and cel-js (like cel-go over unstructured objects) needs
/// to know.
fn with_ints(value: &Value) -> Value {
    match value {
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"$int": n.to_string()}),
        Value::Array(items) => Value::Array(items.iter().map(with_ints).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), with_ints(v))).collect())
        }
        other => other.clone(),
    }
}

/// One policy as `evaluate.mjs` reads it.
fn policy_input(bound: &BoundPolicy) -> Value {
    let spec = &bound.policy.spec;
    json!({
        "matchConditions": spec.match_conditions.iter()
            .map(|c| json!({"expression": c.expression}))
            .collect::<Vec<_>>(),
        "variables": spec.variables.iter()
            .map(|v| json!({"name": v.name, "expression": v.expression}))
            .collect::<Vec<_>>(),
        "validations": spec.validations.iter()
            .map(|v| json!({
                "expression": v.expression,
                "message": v.message,
                "messageExpression": v.message_expression,
            }))
            .collect::<Vec<_>>(),
    })
}

/// Our evaluation of one policy, as `evaluate.mjs` answers: whether the
/// match conditions held, and each decision (a denial with its message).
fn ours(evaluation: &EvaluationReport) -> Value {
    json!({
        "matched": evaluation.conditions_matched,
        "decisions": evaluation.decisions.iter().map(|d| match d.evaluation {
            Evaluation::Admit => json!({"evaluation": "Admit"}),
            Evaluation::Deny => json!({"evaluation": "Deny", "message": d.message}),
            Evaluation::Error => json!({"evaluation": "Error"}),
        }).collect::<Vec<_>>(),
    })
}

/// cel-js's answer in the same form (an error's text is the
/// implementation's own, so only the kind is compared).
fn theirs(evaluation: &Value) -> Value {
    let decisions: Vec<Value> = evaluation["decisions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| match d["evaluation"].as_str() {
            Some("Deny") => json!({"evaluation": "Deny", "message": d["message"]}),
            other => json!({"evaluation": other}),
        })
        .collect();
    json!({"matched": evaluation["matched"], "decisions": decisions})
}

/// Runs `evaluate.mjs` on `cases`.
fn cel_js(cases: &[Value]) -> Value {
    let dir = workspace().join("crates/native/tests/cel-js");
    let installed = || {
        dir.join("node_modules/@marcbachmann/cel-js").is_dir()
            && dir.join("node_modules/re2js").is_dir()
    };
    if !installed() {
        let _ = Command::new(workspace().join("scripts/test-deps.sh")).status();
    }
    assert!(
        installed(),
        "cel-js is not installed in crates/native/tests/cel-js: run scripts/test-deps.sh (it runs npm ci there; node and npm come from apt-get install -y nodejs npm)"
    );
    let mut child = Command::new("node")
        .arg(dir.join("evaluate.mjs"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs (apt-get install -y nodejs)");
    let input = json!({ "cases": cases }).to_string();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
        panic!(
            "cel-js evaluate.mjs: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// One scenario's cases for cel-js, with our evaluations of them.
fn scenario_cases(
    admission: &Admission,
    dir: &Path,
    name: &str,
    cases: &mut Vec<Value>,
    expected: &mut Vec<Vec<Value>>,
) -> anyhow::Result<()> {
    let expect = input::read_document(&dir.join("expect.json"))?;
    let Some(rule) = expect.get("policy").and_then(Value::as_str) else {
        anyhow::bail!("{name}: expect.json names no policy");
    };
    let settings = scenario::settings(dir)?;
    let union_members = rule == "catalog-union"
        && (settings.get("warnLegacy") == Some(&Value::Bool(true))
            || settings.get("allowLegacy") == Some(&Value::Bool(false)));
    let Ok(request) = admission.admitted(&scenario::request(dir)?, union_members) else {
        return Ok(());
    };
    let snapshot = Arc::new(scenario::snapshot(dir)?);
    let objects: Vec<Value> = snapshot.objects().cloned().collect();
    let Ok(native) = generate(rule, &settings, Some(&objects)) else {
        return Ok(());
    };
    if olm_guard_native::policies::not_covered(rule, &request, &*snapshot).is_some() {
        return Ok(());
    }
    let cluster = Arc::new(SnapshotCluster(snapshot));
    let recorder = Arc::new(Recorder {
        cluster: cluster.clone(),
        answers: Mutex::default(),
    });
    let policies = Policies::compile(&native.policies)?;
    let report =
        policies.evaluate_detailed(&request, recorder.clone(), &*cluster, Options::default());
    let answers = recorder.answers.lock().unwrap().clone();
    if answers.values().any(Result::is_err) {
        // A failed lookup: how each implementation words the error is its
        // own; the fail-closed tests hold our answer.
        return Ok(());
    }
    let checks: BTreeMap<String, bool> = answers
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or(false)))
        .collect();
    for policy in report.policies.iter().filter(|p| p.matched) {
        let bound = native
            .policies
            .iter()
            .find(|b| b.policy.metadata.name == policy.policy)
            .expect("a reported policy is generated");
        let params = match (&bound.policy.spec.param_kind, &bound.binding.spec.param_ref) {
            (Some(kind), Some(param_ref)) => {
                Some(cluster.params(&kind.api_version, &kind.kind, &param_ref.selector))
            }
            _ => None,
        };
        let evaluated = params.as_ref().map_or(1, Vec::len);
        // A whole evaluation that failed on cost, or a binding without
        // params, is decided before any expression: nothing to compare.
        if policy.evaluations.len() != evaluated
            || policy.evaluations.iter().any(|e| e.out_of_budget.is_some())
        {
            continue;
        }
        cases.push(json!({
            "name": format!("{name} {}", policy.policy),
            "policy": policy_input(bound),
            "request": with_ints(&request),
            "params": params.map(|p| with_ints(&Value::Array(p))),
            "checks": checks,
        }));
        expected.push(policy.evaluations.iter().map(ours).collect());
    }
    Ok(())
}

#[test]
fn cel_js_evaluates_every_covered_scenario_as_we_do() -> anyhow::Result<()> {
    let root = workspace();
    let admission = Admission::load(&root)?;
    let mut cases = Vec::new();
    let mut expected = Vec::new();
    let scenarios = discover(&[root.join("testdata")])?;
    for dir in &scenarios {
        let name = dir.strip_prefix(&root).unwrap_or(dir).display().to_string();
        scenario_cases(&admission, dir, &name, &mut cases, &mut expected)?;
    }
    let answer = cel_js(&cases);
    let answered = answer["cases"].as_array().expect("a list of cases");
    assert_eq!(answered.len(), cases.len());
    let mut differences = Vec::new();
    let (mut evaluations, mut decisions) = (0, 0);
    for ((case, ours), theirs_case) in cases.iter().zip(&expected).zip(answered) {
        let unanswered = &theirs_case["unanswered"];
        if unanswered.as_array().is_some_and(|u| !u.is_empty()) {
            differences.push(format!(
                "{}: cel-js asked checks our evaluation did not make: {unanswered}",
                case["name"]
            ));
        }
        let theirs: Vec<Value> = theirs_case["evaluations"]
            .as_array()
            .into_iter()
            .flatten()
            .map(theirs)
            .collect();
        if &theirs != ours {
            differences.push(format!(
                "{}:\n  ours:   {}\n  cel-js: {}",
                case["name"],
                Value::from(ours.clone()),
                Value::from(theirs)
            ));
        }
        evaluations += ours.len();
        decisions += ours
            .iter()
            .map(|e| e["decisions"].as_array().map_or(0, Vec::len))
            .sum::<usize>();
    }
    println!(
        "cel-js evaluation: {} policy evaluations ({decisions} decisions) on {} scenarios, {} differ",
        evaluations,
        scenarios.len(),
        differences.len()
    );
    assert!(
        differences.is_empty(),
        "{} differ:\n{}",
        differences.len(),
        differences.join("\n")
    );
    assert!(
        evaluations >= 300,
        "only {evaluations} evaluations compared"
    );
    Ok(())
}
