//! Every scenario under `testdata/`, evaluated by two waPC hosts:
//!
//! - ours: `olm_guard_evaluator::Policy` on `olm_guard_runtime` (what
//!   `olm-guard run` and `olm-guard test` do);
//! - Kubewarden's: the `wapc` and `wasmtime-provider` crates driven the way
//!   kubewarden-controller's `crates/policy-evaluator` and
//!   `crates/policy-server` drive them (`olm_guard_conformance::ReferenceHost`,
//!   file and function named at each step there), with a fresh waPC
//!   instance per evaluation.
//!
//! Both hosts answer host calls through the same `ContextHost` (grants from
//! the module's metadata, policy-server's denial texts) over the scenario's
//! cluster, and the test requires the same settings verdict, `allowed`,
//! status message and code, warnings, and patched object. It prints
//! `reference waPC host: N/N agree` and fails listing every disagreement.
//! Each admitted scenario is also evaluated three times in one
//! `validate_batch` call (what `olm-guard audit` sends), which must answer
//! exactly what `validate` answers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::bail;
use serde_json::Value;

use olm_guard_conformance::{Answer, ReferenceHost, Verdict, scenario};
use olm_guard_evaluator::scenario::{PolicyStore, discover};
use olm_guard_evaluator::{ClusterContext, Policy, PolicyError, input};
use olm_guard_runtime::{Limits, Runtime};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The cluster a scenario's host calls are answered from. Called once per
/// evaluation (never shared between the two hosts) so that a context that
/// is consumed as it answers, such as a recorded session replayed strictly
/// in order, can take this function's place unchanged.
fn cluster_context(dir: &Path) -> anyhow::Result<ClusterContext> {
    Ok(Arc::new(scenario::snapshot(dir)?))
}

// ---------------------------------------------------------------------------
// Our host.

fn ours(policy: &Policy, dir: &Path, request: &Value, settings: &Value) -> anyhow::Result<Answer> {
    match policy.validate_settings(settings) {
        Ok(()) => {}
        Err(PolicyError::InvalidSettings(message)) => return Ok(Answer::SettingsRefused(message)),
        Err(e) => return Ok(Answer::Failed(format!("validate_settings: {e}"))),
    }
    let evaluation = match policy.validate(request, settings, cluster_context(dir)?) {
        Ok(evaluation) => evaluation,
        Err(e) => return Ok(Answer::Failed(format!("validate: {e}"))),
    };
    let object = request.get("object").cloned().unwrap_or(Value::Null);
    Ok(Answer::Response(Verdict::of(
        &evaluation.response,
        &object,
    )?))
}

// ---------------------------------------------------------------------------
// The comparison.

struct Scenario {
    dir: PathBuf,
    policy: String,
    request: Value,
    settings: Value,
}

fn read_scenario(dir: &Path) -> anyhow::Result<Scenario> {
    let expect = input::read_document(&dir.join("expect.json"))?;
    let Some(policy) = expect.get("policy").and_then(Value::as_str) else {
        bail!("{}: expect.json names no policy", dir.display());
    };
    let settings = scenario::settings(dir)?;
    let request = scenario::request(dir)?;
    Ok(Scenario {
        dir: dir.to_path_buf(),
        policy: policy.to_string(),
        request,
        settings,
    })
}

#[test]
fn every_scenario_agrees_with_kubewardens_wapc_host() -> anyhow::Result<()> {
    let root = workspace();
    let dist = root.join("dist");
    if !dist.is_dir() {
        panic!("{} is missing: run make dist", dist.display());
    }
    let scenarios = discover(&[root.join("testdata")])?;
    assert!(!scenarios.is_empty(), "no scenario under testdata/");

    let runtime = Runtime::new(Limits::default())?;
    let mut store = PolicyStore::new(&runtime, dist.clone());
    let mut reference = ReferenceHost::new()?;

    let mut disagreements = Vec::new();
    // What Kubewarden's host answered, so that agreement is never vacuous:
    // every kind of answer and the host-call path must have been exercised.
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    for dir in &scenarios {
        let name = dir.strip_prefix(&root).unwrap_or(dir).display().to_string();
        let outcome = (|| -> anyhow::Result<Option<String>> {
            let scenario = read_scenario(dir)?;
            let module = dist.join(format!("{}.wasm", scenario.policy));
            if !module.is_file() {
                bail!("{} is missing: run make dist", module.display());
            }
            let policy = store.get(&scenario.policy)?;
            let ours = ours(
                &policy,
                &scenario.dir,
                &scenario.request,
                &scenario.settings,
            )?;
            let theirs = reference.evaluate(
                &policy,
                &module,
                &scenario.request,
                &scenario.settings,
                &mut || cluster_context(&scenario.dir),
            )?;
            let kind = match &theirs.answer {
                Answer::SettingsRefused(_) => "settings refused",
                Answer::Failed(_) => "host failure",
                Answer::Response(v) if !v.allowed => "denied",
                Answer::Response(v) if v.patched.is_some() => "mutated",
                Answer::Response(_) => "allowed",
            };
            *tally.entry(kind).or_default() += 1;
            *tally.entry("host calls").or_default() += theirs.host_calls;
            let mut problems = Vec::new();
            // The audit's `validate_batch`: the same request three times in
            // one instance (the first scans the shared lists, the others use
            // their indexes) must give `validate`'s answer each time.
            if matches!(ours, Answer::Response(_)) {
                let request = &scenario.request;
                let requests = [request.clone(), request.clone(), request.clone()];
                let object = request.get("object").cloned().unwrap_or(Value::Null);
                let responses = policy.validate_batch(
                    &requests,
                    &scenario.settings,
                    cluster_context(&scenario.dir)?,
                )?;
                for (at, response) in responses.iter().enumerate() {
                    let batched = Answer::Response(Verdict::of(response, &object)?);
                    if batched != ours {
                        problems.push(format!(
                            "  validate:          {ours}\n  validate_batch[{at}]: {batched}"
                        ));
                    }
                }
                *tally.entry("batched").or_default() += responses.len();
            }
            if ours != theirs.answer {
                problems.push(format!(
                    "  olm-guard:  {ours}\n  Kubewarden: {}",
                    theirs.answer
                ));
            }
            if let Some((converted, expected)) = theirs.conversions
                && converted != expected
            {
                problems.push(format!(
                    "  from_validation:  {}\n  policy-evaluator: {}",
                    Answer::Response(converted),
                    Answer::Response(expected)
                ));
            }
            Ok((!problems.is_empty()).then(|| problems.join("\n")))
        })();
        match outcome {
            Ok(None) => {}
            Ok(Some(problem)) => disagreements.push(format!("{name}:\n{problem}")),
            Err(e) => disagreements.push(format!("{name}: {e:#}")),
        }
    }

    let total = scenarios.len();
    eprintln!(
        "reference waPC host: {}/{total} agree",
        total - disagreements.len()
    );
    eprintln!("reference waPC host answers: {tally:?}");
    assert!(
        disagreements.is_empty(),
        "{} of {total} scenarios disagree between olm-guard's host and Kubewarden's waPC host \
         (wapc + wasmtime-provider):\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    eprintln!(
        "validate_batch: {} batched answers, each equal to validate's",
        tally.get("batched").copied().unwrap_or(0)
    );
    for kind in [
        "batched",
        "allowed",
        "denied",
        "mutated",
        "settings refused",
        "host calls",
    ] {
        assert!(
            tally.get(kind).copied().unwrap_or(0) > 0,
            "no scenario gave `{kind}` through Kubewarden's waPC host: the comparison would be vacuous"
        );
    }
    Ok(())
}
