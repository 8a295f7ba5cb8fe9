//! Every scenario under `testdata/`, judged twice: by the module (the wasm
//! module in olm-guard's host) and by the native policies generated from
//! the same rule with the same settings, evaluated as the API server
//! evaluates ValidatingAdmissionPolicies (`olm_guard_native::admission`,
//! a maintained CEL interpreter with Kubernetes' authorizer library answered
//! by the RBAC authorizer over the scenario's cluster).
//!
//! A covered scenario agrees when both allow or both deny, and an allowed
//! one carries the same warnings. A scenario the native form does not
//! cover (a rule or setting that only the module enforces, a mutation) is
//! counted as not covered, never as agreeing. The test prints
//! `native policies: N/N agree` and fails listing every disagreement.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::bail;
use serde_json::Value;

use olm_guard_conformance::admitted::Admission;
use olm_guard_conformance::native::SnapshotCluster;
use olm_guard_conformance::scenario;
use olm_guard_evaluator::scenario::{PolicyStore, discover};
use olm_guard_evaluator::suite;
use olm_guard_evaluator::{Policy, PolicyError, input};
use olm_guard_native::admission::{Outcome, Policies};
use olm_guard_native::{GenerateError, generate};
use olm_guard_runtime::{Limits, Runtime};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The module's answer, reduced to what a native policy can say.
#[derive(Debug)]
enum ModuleAnswer {
    SettingsRefused,
    Allowed(Vec<String>),
    /// The object as the module's patch leaves it.
    Mutated(Value),
    Denied(String),
}

fn module_answer(
    policy: &Policy,
    request: &Value,
    settings: &Value,
    cluster: Arc<olm_guard_snapshot::Snapshot>,
) -> anyhow::Result<ModuleAnswer> {
    match policy.validate_settings(settings) {
        Ok(()) => {}
        Err(PolicyError::InvalidSettings(_)) => return Ok(ModuleAnswer::SettingsRefused),
        Err(e) => bail!("validate_settings: {e}"),
    }
    let response = policy.validate(request, settings, cluster)?.response;
    Ok(if !response.allowed {
        ModuleAnswer::Denied(response.status.and_then(|s| s.message).unwrap_or_default())
    } else if response.patch.is_some() {
        let object = request.get("object").cloned().unwrap_or(Value::Null);
        let patched = olm_guard_conformance::apply_patch(response.patch.as_deref(), &object)?;
        ModuleAnswer::Mutated(patched.unwrap_or(object))
    } else {
        ModuleAnswer::Allowed(response.warnings.unwrap_or_default())
    })
}

/// A native warning without the API server's prefix
/// ("Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': ").
fn warning_text(warning: &str) -> &str {
    warning
        .split_once("': ")
        .map(|(_, text)| text)
        .unwrap_or(warning)
}

/// A native denial without the API server's prefix.
fn denial_text(message: &str) -> &str {
    message
        .split_once("denied request: ")
        .map(|(_, text)| text)
        .unwrap_or(message)
}

/// Whether the message a cluster shows is the module's, word for word.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Text {
    /// No message to compare (allowed, not matched, settings refused).
    None,
    /// A denial's message.
    Denial(bool),
    /// An admission's warnings, all of them.
    Warnings(bool),
}

enum Judged {
    Agree { text: Text, kind: &'static str },
    NotCovered(String),
    Disagree(String),
}

/// The suite files of `dir`, in name order.
fn suite_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.retain(|p| suite::is_suite_file(p));
    files.sort();
    Ok(files)
}

/// Compiled native policies, by rule and settings: each compiled once, as
/// the API server compiles a policy once for every request.
type Compiled = BTreeMap<String, Arc<Policies>>;

fn judge(
    store: &mut PolicyStore,
    compiled: &mut Compiled,
    admission: &Admission,
    dir: &Path,
) -> anyhow::Result<Judged> {
    let expect = input::read_document(&dir.join("expect.json"))?;
    let Some(rule) = expect.get("policy").and_then(Value::as_str) else {
        bail!("expect.json names no policy");
    };
    let settings = scenario::settings(dir)?;
    let request = scenario::request(dir)?;
    let snapshot = Arc::new(scenario::snapshot(dir)?);
    judge_inputs(
        store, compiled, admission, rule, &settings, &request, snapshot,
    )
}

/// One case's judgement: the module's answer and the native policies'.
fn judge_inputs(
    store: &mut PolicyStore,
    compiled: &mut Compiled,
    admission: &Admission,
    rule: &str,
    settings: &Value,
    request: &Value,
    snapshot: Arc<olm_guard_snapshot::Snapshot>,
) -> anyhow::Result<Judged> {
    // Both are asked about the object the API server lets through to
    // admission: pruned and typed as its schema says, or refused.
    // catalog-union's union settings are for a CRD with the union members.
    let union_members = rule == "catalog-union"
        && (settings.get("warnLegacy") == Some(&Value::Bool(true))
            || settings.get("allowLegacy") == Some(&Value::Bool(false)));
    let request = match admission.admitted(request, union_members) {
        Ok(admitted) => admitted,
        Err(_) => {
            return Ok(Judged::NotCovered(
                "an object the API server refuses before admission (a wrong type, a missing \
                 required field, a value its schema forbids)"
                    .into(),
            ));
        }
    };
    let request = &request;
    let policy = store.get(rule)?;
    let module = module_answer(&policy, request, settings, snapshot.clone())?;
    // Generated for the scenario's cluster, as `olm-guard scaffold vap
    // --cluster` generates for a cluster's snapshot.
    let objects: Vec<Value> = snapshot.objects().cloned().collect();
    let native = match generate(rule, settings, Some(&objects)) {
        Ok(native) => native,
        Err(GenerateError::Settings { problem, .. }) => {
            return Ok(match module {
                ModuleAnswer::SettingsRefused => Judged::Agree {
                    text: Text::None,
                    kind: "settings refused",
                },
                other => Judged::Disagree(format!(
                    "the generator refused the settings ({problem}); the module answered {other:?}"
                )),
            });
        }
        Err(e @ (GenerateError::NotNative { .. } | GenerateError::ModuleOnly { .. })) => {
            return Ok(Judged::NotCovered(e.to_string()));
        }
        Err(e) => bail!("{e}"),
    };
    if let Some(reason) = olm_guard_native::policies::not_covered(rule, request, &*snapshot) {
        return Ok(Judged::NotCovered(format!("{rule}: {reason}")));
    }
    let cluster = Arc::new(SnapshotCluster(snapshot));
    let key = format!("{rule} {settings} {}", serde_json::to_string(&objects)?);
    let policies = match compiled.get(&key) {
        Some(policies) => policies.clone(),
        None => {
            let policies = Arc::new(Policies::compile(&native.policies)?);
            compiled.insert(key, policies.clone());
            policies
        }
    };
    let outcome = policies.evaluate(request, cluster.clone(), cluster.as_ref());
    Ok(match (module, outcome) {
        (ModuleAnswer::SettingsRefused, _) => {
            Judged::Disagree("the module refused the settings; the generator accepted them".into())
        }
        (ModuleAnswer::Mutated(_), _) => {
            Judged::NotCovered(format!("{rule}: the module mutates the object"))
        }
        (ModuleAnswer::Denied(m), Outcome::Denied { message }) => Judged::Agree {
            text: Text::Denial(denial_text(&message) == m),
            kind: "denied",
        },
        (ModuleAnswer::Allowed(warnings), Outcome::NotMatched) if warnings.is_empty() => {
            Judged::Agree {
                text: Text::None,
                kind: "not matched",
            }
        }
        (ModuleAnswer::Allowed(expected), Outcome::Allowed { warnings }) => {
            // The same verdict; the same warnings, one for one, by text
            // (counted against a floor: a warning CEL cannot word as the
            // module does still warns).
            let got: Vec<&str> = warnings.iter().map(|w| warning_text(w)).collect();
            if got.len() != expected.len() {
                Judged::Disagree(format!(
                    "both allow, with other warnings: module {expected:?}, native (as the API \
                     server shows them) {got:?}"
                ))
            } else if expected.is_empty() {
                Judged::Agree {
                    text: Text::None,
                    kind: "allowed",
                }
            } else {
                Judged::Agree {
                    text: Text::Warnings(got == expected),
                    kind: "allowed with warnings",
                }
            }
        }
        (module, native) => Judged::Disagree(format!("module: {module:?}\n  native: {native:?}")),
    })
}

/// The covered scenarios at the last count.
const COVERED_FLOOR: usize = 326;
/// Covered denials whose message, as the API server shows it, is the
/// module's word for word.
const SAME_DENIALS_FLOOR: usize = 84;
/// Covered admissions with warnings whose warnings are the module's.
const SAME_WARNINGS_FLOOR: usize = 32;

#[test]
fn native_policies_agree_with_the_modules_on_every_scenario() -> anyhow::Result<()> {
    let root = workspace();
    let dist = root.join("dist");
    assert!(
        dist.is_dir(),
        "{} is missing: run make dist",
        dist.display()
    );
    let scenarios = discover(&[root.join("testdata")])?;
    assert!(!scenarios.is_empty(), "no scenario under testdata/");
    let runtime = Runtime::new(Limits::default())?;
    // Metadata from policies/ when the modules are not annotated yet, as
    // `olm-guard test` reads it.
    let mut store = PolicyStore::new(&runtime, dist).with_metadata_dir(root.join("policies"));
    let mut compiled = Compiled::new();
    let admission = Admission::load(&root)?;

    let mut agree = 0;
    let mut not_covered: BTreeMap<String, usize> = BTreeMap::new();
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    let mut disagreements = Vec::new();
    // Every scenario, then every case of the example suites that runs on a
    // cluster (a case replaying a recorded session has none to authorize
    // against) and that policy-server would send to the module.
    let mut cases: Vec<(String, anyhow::Result<Judged>)> = Vec::new();
    for dir in &scenarios {
        let name = dir.strip_prefix(&root).unwrap_or(dir).display().to_string();
        cases.push((name, judge(&mut store, &mut compiled, &admission, dir)));
    }
    for path in suite_files(&root.join("examples/suites"))? {
        let loaded = suite::load(&path)?;
        let base = path.parent().unwrap_or(&root).to_path_buf();
        for case in &loaded.cases {
            if case.expect.result == Some(suite::CaseResult::Skip) {
                continue;
            }
            let label = format!(
                "{}#{}",
                path.strip_prefix(&root).unwrap_or(&path).display(),
                case.name
            );
            if case.judges_manifests() {
                // Many requests in sequence, each into a growing snapshot:
                // the scenarios and single-request cases compare each step.
                cases.push((
                    label,
                    Ok(Judged::NotCovered(
                        "a suite case judging a manifest with several modules".into(),
                    )),
                ));
                continue;
            }
            let judged = suite::case_inputs(&loaded, case, &base).and_then(|inputs| {
                let Some(cluster) = inputs.cluster else {
                    return Ok(Judged::NotCovered(
                        "a suite case replaying a recorded session".into(),
                    ));
                };
                judge_inputs(
                    &mut store,
                    &mut compiled,
                    &admission,
                    &inputs.module,
                    &inputs.settings,
                    &inputs.request,
                    Arc::new(cluster),
                )
            });
            cases.push((label, judged));
        }
    }
    let (mut denials, mut warned) = ((0, 0), (0, 0));
    for (name, judged) in cases {
        match judged {
            Ok(Judged::Agree { text, kind }) => {
                agree += 1;
                *tally.entry(kind).or_default() += 1;
                let (count, same) = match text {
                    Text::None => continue,
                    Text::Denial(same) => (&mut denials, same),
                    Text::Warnings(same) => (&mut warned, same),
                };
                count.1 += 1;
                count.0 += usize::from(same);
            }
            Ok(Judged::NotCovered(reason)) => *not_covered.entry(reason).or_default() += 1,
            Ok(Judged::Disagree(problem)) => disagreements.push(format!("{name}:\n  {problem}")),
            Err(e) => disagreements.push(format!("{name}: {e:#}")),
        }
    }
    let covered = agree + disagreements.len();
    eprintln!("native policies: {agree}/{covered} agree");
    eprintln!(
        "native policies: the message the API server shows is the module's in {}/{} denials and \
         {}/{} warned admissions",
        denials.0, denials.1, warned.0, warned.1
    );
    let uncovered: usize = not_covered.values().sum();
    eprintln!("native policies: {uncovered} scenarios not covered:");
    for (reason, count) in &not_covered {
        eprintln!("  {count:4}  {reason}");
    }
    assert!(
        disagreements.is_empty(),
        "{} of {covered} covered scenarios disagree between the module and its native policies:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    eprintln!("native policies: agreed answers: {tally:?}");
    // Floors: coverage and message agreement may only grow. Raise them
    // when they do (the test prints the figures).
    assert!(
        covered >= COVERED_FLOOR,
        "only {covered} scenarios are covered, fewer than the {COVERED_FLOOR} recorded: a change \
         made the native policies cover less"
    );
    assert!(
        denials.0 >= SAME_DENIALS_FLOOR && warned.0 >= SAME_WARNINGS_FLOOR,
        "the API server would show the module's message in {}/{} denials and {}/{} warned \
         admissions, fewer than the {SAME_DENIALS_FLOOR} and {SAME_WARNINGS_FLOOR} recorded",
        denials.0,
        denials.1,
        warned.0,
        warned.1
    );
    for kind in ["allowed", "allowed with warnings", "denied", "not matched"] {
        assert!(
            tally.get(kind).copied().unwrap_or(0) > 0,
            "no covered scenario was `{kind}` by both: the comparison would be vacuous"
        );
    }
    Ok(())
}

/// The value at `path` (`spec`, `spec.group`) of `object`, if present, as
/// a CRD rule sees it: null values of fields that are not `nullable` are
/// dropped by the API server before validation (structural schema pruning),
/// and none of these CRDs' fields is.
fn at(object: &Value, path: &str) -> Option<Value> {
    use olm_guard_native::admission::without_nulls;
    path.split('.')
        .try_fold(object, |value, key| value.get(key))
        .filter(|v| !v.is_null())
        .map(without_nulls)
}

/// The CRD rules hold no exception for objects stored before them, so they
/// are held to this: every object they refuse on a CREATE, the module
/// refuses too; and some CREATE is refused by both, or the check is vacuous.
#[test]
fn crd_rules_refuse_nothing_the_module_allows_on_create() -> anyhow::Result<()> {
    let root = workspace();
    let dist = root.join("dist");
    assert!(
        dist.is_dir(),
        "{} is missing: run make dist",
        dist.display()
    );
    let runtime = Runtime::new(Limits::default())?;
    let mut store = PolicyStore::new(&runtime, dist).with_metadata_dir(root.join("policies"));
    let (mut refused, mut passed, mut wrong) = (0, 0, Vec::new());
    for dir in discover(&[root.join("testdata")])? {
        let expect = input::read_document(&dir.join("expect.json"))?;
        let rule = expect
            .get("policy")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let request = scenario::request(&dir)?;
        if request.get("operation").and_then(Value::as_str) != Some("CREATE") {
            continue;
        }
        let Ok(native) = generate(rule, &Value::Null, None) else {
            continue;
        };
        if native.schema_patches.is_empty() {
            continue;
        }
        let resource = format!(
            "{}.{}",
            request
                .pointer("/resource/resource")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            request
                .pointer("/resource/group")
                .and_then(Value::as_str)
                .unwrap_or_default()
        );
        let subresource = request
            .get("subResource")
            .and_then(Value::as_str)
            .unwrap_or("");
        let settings = scenario::settings(&dir)?;
        let policy = store.get(rule)?;
        let snapshot = Arc::new(scenario::snapshot(&dir)?);
        let module = module_answer(&policy, &request, &settings, snapshot)?;
        // The schema validates the object the mutating admission left.
        let object = match &module {
            ModuleAnswer::Mutated(patched) => patched.clone(),
            _ => request.get("object").cloned().unwrap_or(Value::Null),
        };
        let mut problems = Vec::new();
        for patch in native.schema_patches.iter().filter(|p| p.crd == resource) {
            if !subresource.is_empty() {
                continue;
            }
            for rule in &patch.rules {
                let Some(value) = at(&object, rule.path) else {
                    continue;
                };
                match olm_guard_native::admission::evaluate_crd_rule(rule, &value, None) {
                    Ok(Some(false)) => problems.push(rule.message.clone()),
                    Err(e) => problems.push(e.to_string()),
                    _ => {}
                }
            }
        }
        match (problems.is_empty(), &module) {
            (true, _) => passed += 1,
            (false, ModuleAnswer::Denied(_) | ModuleAnswer::SettingsRefused) => refused += 1,
            (false, answer) => wrong.push(format!(
                "{}: the CRD rules refuse ({}) what the module answers {answer:?}",
                dir.display(),
                problems.join("; ")
            )),
        }
    }
    eprintln!("CRD rules: {refused} CREATEs refused (the module refuses them too), {passed} pass");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(refused > 0 && passed > 0, "the comparison would be vacuous");
    Ok(())
}
