//! Mutation fuzzing of the policy modules through the host, the way
//! policy-server runs them: a fresh instance per evaluation, host calls
//! answered from a snapshot within the module's grants.
//!
//! Inputs start from the module's own scenarios (`testdata/<module>/`) and
//! are mutated: any field of the request, its object or old object replaced
//! by a value of another JSON type (null, huge strings and arrays, deep
//! nesting, unicode and NUL bytes), fields removed, operations, kinds and
//! subresources changed, settings of wrong types, snapshot objects with
//! wrong-typed or missing fields. Each evaluation must keep five properties:
//!
//! 1. the module answers with a verdict (no trap, no guest error, no host
//!    failure);
//! 2. the same input gives the same response twice;
//! 3. a denial stays a denial when the keys of every JSON object are sent in
//!    reverse order;
//! 4. a CREATE the module accepts, seen again as an UPDATE of itself (the
//!    patched object when it mutated), is accepted: nothing it admitted is
//!    bricked;
//! 5. the same input twice in one `validate_batch` call (the audit's batch,
//!    the second evaluation reading the rule's index over the shared lists)
//!    gets the response `validate` gave, twice.
//!
//! A property that does not hold is a [`Finding`], with the input that
//! broke it, ready to become a regression scenario.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use olm_guard_evaluator::{AdmissionResponse, Policy, input, scenario};
use olm_guard_runtime::Runtime;
use olm_guard_snapshot::Snapshot;
use serde::Deserialize;
use serde_json::{Value, json};

/// One seed input: a scenario's request, settings and cluster objects.
#[derive(Debug, Clone)]
pub struct Seed {
    /// The scenario directory it came from.
    pub origin: PathBuf,
    /// The AdmissionRequest.
    pub request: Value,
    /// The policy settings.
    pub settings: Value,
    /// The snapshot's objects.
    pub objects: Vec<Value>,
}

/// The seeds of `module`: every scenario under `testdata/<module>/` with a
/// request (settings-only scenarios have none).
pub fn seeds(testdata: &Path, module: &str) -> anyhow::Result<Vec<Seed>> {
    let mut seeds = Vec::new();
    for dir in scenario::discover(&[testdata.join(module)])? {
        // Each file JSON or YAML, as `olm-guard test` reads them.
        let Some(request_path) = scenario::input_file(&dir, "request")? else {
            continue;
        };
        let request = input::admission_request(input::read_document(&request_path)?)?;
        let settings = input::settings_object(
            scenario::input_file(&dir, "settings")?
                .map(|path| input::read_document(&path))
                .transpose()?,
        )?;
        let mut objects = Vec::new();
        if let Some(cluster_path) = scenario::input_file(&dir, "cluster")? {
            let text = std::fs::read_to_string(&cluster_path)?;
            for document in serde_yaml_ng::Deserializer::from_str(&text) {
                let value = Value::deserialize(document)?;
                match value {
                    Value::Object(ref map) if map.contains_key("items") => {
                        if let Some(items) = map.get("items").and_then(Value::as_array) {
                            objects.extend(items.iter().cloned());
                        }
                    }
                    Value::Object(_) => objects.push(value),
                    _ => {}
                }
            }
        }
        seeds.push(Seed {
            origin: dir,
            request,
            settings,
            objects,
        });
    }
    Ok(seeds)
}

/// A property that did not hold, with the input that broke it.
#[derive(Debug, Clone)]
pub struct Finding {
    /// Which property (1-4 in the crate doc) and how.
    pub property: String,
    /// The scenario the input was mutated from.
    pub origin: PathBuf,
    /// The request, settings and cluster objects, as JSON.
    pub input: Value,
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The module fuzzed.
    pub module: String,
    /// Module evaluations made (all properties counted).
    pub executions: u64,
    /// Mutated inputs tried.
    pub inputs: u64,
    /// Inputs whose snapshot the loader refused (reported, not evaluated).
    pub refused_snapshots: u64,
    /// Wall-clock time.
    pub elapsed: Duration,
    /// Every property that did not hold.
    pub findings: Vec<Finding>,
}

/// Values of every JSON type, several of them hostile.
fn odd_value(rng: &mut fastrand::Rng) -> Value {
    match rng.u8(0..12) {
        0 => Value::Null,
        1 => json!(rng.bool()),
        2 => json!(rng.i64(..)),
        3 => json!(f64::MAX),
        4 => json!("\u{0}nul\u{0}\u{202e}ünïcödé\u{10ffff}"),
        5 => json!("x".repeat(rng.usize(1_000..100_000))),
        6 => Value::Array(vec![json!(1); rng.usize(0..5_000)]),
        7 => {
            let mut deep = json!("bottom");
            for _ in 0..rng.usize(10..120) {
                deep = json!({ "d": [deep] });
            }
            deep
        }
        8 => json!({}),
        9 => json!([]),
        10 => json!(""),
        _ => json!({"unexpected": {"shape": [null, true, 1.5]}}),
    }
}

/// Every path (object keys and array indexes) below `value`, up to `depth`.
fn paths(value: &Value, depth: usize, prefix: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    if depth == 0 {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                prefix.push(PathStep::Key(key.clone()));
                out.push(prefix.clone());
                paths(inner, depth - 1, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) => {
            for (index, inner) in items.iter().enumerate().take(8) {
                prefix.push(PathStep::Index(index));
                out.push(prefix.clone());
                paths(inner, depth - 1, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

#[derive(Debug, Clone)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn at_mut<'a>(value: &'a mut Value, path: &[PathStep]) -> Option<&'a mut Value> {
    let mut cursor = value;
    for step in path {
        cursor = match step {
            PathStep::Key(key) => cursor.get_mut(key.as_str())?,
            PathStep::Index(index) => cursor.get_mut(*index)?,
        };
    }
    Some(cursor)
}

/// One random change to `value`: a replaced, removed or duplicated field.
fn mutate(value: &mut Value, rng: &mut fastrand::Rng) {
    let mut all = Vec::new();
    paths(value, 6, &mut Vec::new(), &mut all);
    let Some(path) = (!all.is_empty()).then(|| all.swap_remove(rng.usize(..all.len()))) else {
        *value = odd_value(rng);
        return;
    };
    match rng.u8(0..4) {
        0 | 1 => {
            let replacement = odd_value(rng);
            if let Some(slot) = at_mut(value, &path) {
                *slot = replacement;
            }
        }
        2 => {
            let (Some(last), parent) = (path.last(), &path[..path.len() - 1]) else {
                return;
            };
            match (at_mut(value, parent), last) {
                (Some(Value::Object(map)), PathStep::Key(key)) => {
                    map.remove(key);
                }
                (Some(Value::Array(items)), PathStep::Index(index)) if *index < items.len() => {
                    items.remove(*index);
                }
                _ => {}
            }
        }
        _ => {
            if let Some(slot) = at_mut(value, &path) {
                let copy = slot.clone();
                *slot = json!([copy.clone(), copy]);
            }
        }
    }
}

/// The request-level changes a real API server could send.
fn mutate_envelope(request: &mut Value, rng: &mut fastrand::Rng) {
    let Some(map) = request.as_object_mut() else {
        return;
    };
    match rng.u8(0..5) {
        0 => {
            let operation = ["CREATE", "UPDATE", "DELETE", "CONNECT"][rng.usize(0..4)];
            map.insert("operation".into(), json!(operation));
        }
        1 => {
            map.insert(
                "subResource".into(),
                json!(["status", "scale", ""][rng.usize(0..3)]),
            );
        }
        2 => {
            let kinds = [
                "ConfigMap",
                "ClusterRole",
                "CatalogSource",
                "OperatorGroup",
                "Pod",
            ];
            if let Some(kind) = map.get_mut("kind").and_then(Value::as_object_mut) {
                kind.insert("kind".into(), json!(kinds[rng.usize(0..kinds.len())]));
            }
        }
        3 => {
            let side = ["object", "oldObject"][rng.usize(0..2)];
            map.remove(side);
        }
        _ => {
            map.insert("userInfo".into(), odd_value(rng));
        }
    }
}

/// `value` as JSON text with the keys of every object in reverse order.
fn reversed_json(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let fields: Vec<String> = map
                .iter()
                .rev()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), reversed_json(v)))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(reversed_json).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

/// The fields of a response that make a verdict.
fn verdict_of(response: &AdmissionResponse) -> Value {
    json!({
        "allowed": response.allowed,
        "status": response.status,
        "patch": response.patch,
        "warnings": response.warnings,
    })
}

/// How long a run goes on: until both counts are reached. The long run asks
/// for executions (the goal in `docs/reliability.md` is counted in them); the
/// bounded test asks for inputs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Budget {
    /// Mutated inputs to generate at least.
    pub inputs: u64,
    /// Evaluations to make at least.
    pub executions: u64,
}

impl Budget {
    /// A budget of `inputs` mutated inputs.
    pub fn inputs(inputs: u64) -> Self {
        Budget {
            inputs,
            executions: 0,
        }
    }

    fn spent(&self, report: &Report) -> bool {
        // Inputs whose snapshot is refused make no execution; the input cap
        // stops a run whose seeds are all refused instead of looping forever.
        let cap = self.inputs.max(self.executions).saturating_mul(100);
        (report.inputs >= self.inputs && report.executions >= self.executions)
            || report.inputs >= cap
    }
}

/// Fuzzes `policy` for `iterations` mutated inputs from `seeds`, seeded by
/// `seed` (the same seed gives the same inputs).
pub fn run(policy: &Policy, seeds: &[Seed], iterations: u64, seed: u64) -> Report {
    run_with_progress(policy, seeds, Budget::inputs(iterations), seed, |_| {})
}

/// Fuzzes `policy` until `budget` is spent, calling `progress` after every
/// input (the long run draws a progress bar with it).
pub fn run_with_progress(
    policy: &Policy,
    seeds: &[Seed],
    budget: Budget,
    seed: u64,
    mut progress: impl FnMut(&Report),
) -> Report {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut report = Report {
        module: policy.name.clone(),
        ..Report::default()
    };
    let start = Instant::now();
    if seeds.is_empty() {
        return report;
    }
    while !budget.spent(&report) {
        progress(&report);
        let Some(base) = seeds.get(rng.usize(..seeds.len())) else {
            break;
        };
        let mut request = base.request.clone();
        let mut settings = base.settings.clone();
        let mut objects = base.objects.clone();
        for _ in 0..rng.usize(1..4) {
            match rng.u8(0..10) {
                0..=5 => mutate(&mut request, &mut rng),
                6 => mutate_envelope(&mut request, &mut rng),
                7 => mutate(&mut settings, &mut rng),
                _ => {
                    let index = rng.usize(..objects.len().max(1));
                    if let Some(object) = objects.get_mut(index) {
                        mutate(object, &mut rng);
                    }
                }
            }
        }
        report.inputs += 1;
        let input = json!({"request": request, "settings": settings, "cluster": objects});
        let snapshot = match Snapshot::try_from_objects(objects) {
            Ok(snapshot) => Arc::new(snapshot),
            Err(_) => {
                report.refused_snapshots += 1;
                continue;
            }
        };
        let finding = |property: String| Finding {
            property,
            origin: base.origin.clone(),
            input: input.clone(),
        };
        // Settings the module refuses never reach `validate` in
        // policy-server; the module must still answer them.
        let first = policy.validate(&request, &settings, snapshot.clone());
        report.executions += 1;
        let first = match first {
            Ok(evaluation) => evaluation.response,
            Err(e) => {
                report.findings.push(finding(format!("1: no verdict: {e}")));
                continue;
            }
        };
        if rng.u8(0..4) == 0 {
            report.executions += 1;
            match policy.validate(&request, &settings, snapshot.clone()) {
                Ok(again) if verdict_of(&again.response) == verdict_of(&first) => {}
                Ok(again) => report.findings.push(finding(format!(
                    "2: a second evaluation differs: {} then {}",
                    verdict_of(&first),
                    verdict_of(&again.response)
                ))),
                Err(e) => report
                    .findings
                    .push(finding(format!("2: no verdict the second time: {e}"))),
            }
        }
        if rng.u8(0..4) == 0 {
            // The audit's batch: twice in one instance (the second through
            // the rule's index over the shared lists) answers as alone.
            report.executions += 1;
            let pair = [request.clone(), request.clone()];
            match policy.validate_batch(&pair, &settings, snapshot.clone()) {
                Ok(batched) if batched.iter().all(|b| verdict_of(b) == verdict_of(&first)) => {}
                Ok(batched) => report.findings.push(finding(format!(
                    "5: validate_batch differs from validate: {} then {:?}",
                    verdict_of(&first),
                    batched.iter().map(verdict_of).collect::<Vec<_>>()
                ))),
                Err(e) => report
                    .findings
                    .push(finding(format!("5: no verdict from validate_batch: {e}"))),
            }
        }
        if !first.allowed {
            let payload = format!(
                "{{\"settings\":{},\"request\":{}}}",
                reversed_json(&settings),
                reversed_json(&request)
            );
            report.executions += 1;
            match policy.validate_payload(payload.as_bytes(), &request, snapshot.clone()) {
                Ok(reordered) if !reordered.allowed => {}
                Ok(_) => report.findings.push(finding(
                    "3: allowed once the object keys were reordered".into(),
                )),
                Err(e) => report
                    .findings
                    .push(finding(format!("3: no verdict reordered: {e}"))),
            }
        }
        if first.allowed && request.get("operation") == Some(&json!("CREATE")) {
            let stored = match first.patched_object(&request) {
                Ok(Some(patched)) => patched,
                _ => request.get("object").cloned().unwrap_or(Value::Null),
            };
            if stored.is_object() {
                let mut update = request.clone();
                if let Some(map) = update.as_object_mut() {
                    map.insert("operation".into(), json!("UPDATE"));
                    map.insert("object".into(), stored.clone());
                    map.insert("oldObject".into(), stored);
                }
                report.executions += 1;
                match policy.validate(&update, &settings, snapshot.clone()) {
                    Ok(again) if again.response.allowed => {}
                    Ok(again) => report.findings.push(finding(format!(
                        "4: an accepted CREATE is refused as an UPDATE of itself: {}",
                        again.response.message()
                    ))),
                    Err(e) => report.findings.push(finding(format!("4: no verdict: {e}"))),
                }
            }
        }
    }
    report.elapsed = start.elapsed();
    report
}

/// Writes a finding as a scenario directory (`request.json`,
/// `settings.json`, `cluster.yaml`, a `finding.txt` with the property) so it
/// can become a regression scenario under `testdata/`.
pub fn write_finding(dir: &Path, finding: &Finding) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let field = |key: &str| finding.input.get(key).cloned().unwrap_or(Value::Null);
    std::fs::write(
        dir.join("request.json"),
        serde_json::to_string_pretty(&field("request"))?,
    )?;
    std::fs::write(
        dir.join("settings.json"),
        serde_json::to_string_pretty(&field("settings"))?,
    )?;
    let objects = field("cluster");
    let documents: Vec<String> = objects
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|o| serde_yaml_ng::to_string(o).ok())
                .collect()
        })
        .unwrap_or_default();
    std::fs::write(dir.join("cluster.yaml"), documents.join("---\n"))?;
    std::fs::write(
        dir.join("finding.txt"),
        format!("{}\nfrom {}\n", finding.property, finding.origin.display()),
    )?;
    Ok(())
}

/// Loads `dist/<module>.wasm` with `runtime`.
pub fn load(runtime: &Runtime, dist: &Path, module: &str) -> anyhow::Result<Policy> {
    Ok(Policy::load(
        runtime,
        &dist.join(format!("{module}.wasm")),
        None,
    )?)
}
