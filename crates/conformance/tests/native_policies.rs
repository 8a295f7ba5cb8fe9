//! Every scenario under `testdata/` (and every single-request case of
//! `examples/suites/`), judged twice:
//!
//! - by the module (the wasm module in olm-guard's host), on the object the
//!   API server admits;
//! - by Kubernetes' own admission code (`olm_guard_kube_harness`:
//!   `k8s.io/apiserver` and `k8s.io/apiextensions-apiserver` v0.36): the
//!   request's objects decoded, pruned, defaulted and validated against the
//!   CRD in play (the upstream CRD with the rule's CRD patches applied, its
//!   `x-kubernetes-validations` rules with `oldSelf` on UPDATE), then every
//!   matching generated ValidatingAdmissionPolicy and binding through the
//!   validating policy dispatcher (variables, messages, warnings, runtime
//!   cost, failure policy, params from the scenario's cluster), every
//!   authorizer check Kubernetes makes answered from the scenario's cluster
//!   by olm-guard's RBAC engine (`admit_answering`).
//!
//! A covered scenario agrees when the cluster (its CRD rules, then its
//! policies) and the module both allow or both deny, and an allowed one
//! carries the same warnings. A scenario the native form does not cover (a
//! rule or setting only the module enforces, a mutation, an object the API
//! server refuses before admission) is counted as such, never as agreeing.
//! The test prints `native policies: N/N agree` and fails listing every
//! disagreement.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::bail;
use serde_json::Value;

use olm_guard_conformance::native::{
    ModuleAnswer, SnapshotAuthorizer, denial_text, module_answer, warning_text,
};
use olm_guard_conformance::scenario;
use olm_guard_conformance::served::Served;
use olm_guard_evaluator::scenario::{PolicyStore, discover};
use olm_guard_evaluator::suite;
use olm_guard_evaluator::{PolicyError, input};
use olm_guard_kube_harness::authorizer::admit_answering;
use olm_guard_kube_harness::{Admit, Admitted, AuthorizerAnswer, KubeHarness};
use olm_guard_native::{GenerateError, Native, generate};
use olm_guard_runtime::{Limits, Runtime};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The first problem the CRD's message (`schema`, as the API server words a
/// rule's failure) calls a field ignored in that the module's message
/// `module` does not list among its problems.
fn ignored_beyond_the_module<'a>(schema: &'a str, module: &str) -> Option<&'a str> {
    let own: Vec<&str> = module.split("; ").collect();
    schema
        .split(": Invalid value: ")
        .flat_map(|rule| rule.split_once(": ").map(|(_, text)| text))
        .flat_map(|text| text.split("; "))
        .map(|part| part.trim_end_matches(['"', ']', ' ']))
        .find(|part| part.contains(" ignored") && !own.iter().any(|o| o.contains(part)))
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

/// What a case needs besides its inputs.
struct Judges<'a> {
    store: PolicyStore<'a>,
    served: Served,
    kube: KubeHarness,
    /// Authorizer checks Kubernetes made and the scenarios' clusters
    /// answered.
    checks_answered: usize,
    /// Mutations of the module that Kubernetes' mutating policies made
    /// the same, idempotently.
    mutations_compared: usize,
}

fn judge(judges: &mut Judges, dir: &Path) -> anyhow::Result<Judged> {
    let expect = input::read_document(&dir.join("expect.json"))?;
    let Some(rule) = expect.get("policy").and_then(Value::as_str) else {
        bail!("expect.json names no policy");
    };
    let settings = scenario::settings(dir)?;
    let request = scenario::request(dir)?;
    let snapshot = Arc::new(scenario::snapshot(dir)?);
    judge_inputs(judges, rule, &settings, &request, snapshot)
}

/// The CRD in play with `native`'s patches applied, as a cluster that
/// applied them serves it.
fn patched(crd: &Value, native: &Native) -> anyhow::Result<Value> {
    let name = crd.pointer("/metadata/name").and_then(Value::as_str);
    let mut document = crd.clone();
    for patch in native
        .schema_patches
        .iter()
        .filter(|p| Some(p.crd.as_str()) == name)
    {
        let operations: json_patch::Patch = serde_json::from_value(patch.patch.clone())?;
        json_patch::patch(&mut document, &operations)
            .map_err(|e| anyhow::anyhow!("{}: {e}", patch.file))?;
    }
    Ok(document)
}

/// The cluster objects Kubernetes' evaluation reads: namespaces, and the
/// params of `native`'s policies.
fn objects_read(objects: &[Value], native: &Native) -> Vec<Value> {
    let param_kinds: Vec<(&str, &str)> = native
        .policies
        .iter()
        .filter_map(|b| b.policy.spec.param_kind.as_ref())
        .map(|k| (k.api_version.as_str(), k.kind.as_str()))
        .collect();
    objects
        .iter()
        .filter(|o| {
            let api_version = o.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let kind = o.get("kind").and_then(Value::as_str).unwrap_or("");
            (api_version == "v1" && kind == "Namespace")
                || param_kinds.contains(&(api_version, kind))
        })
        .cloned()
        .collect()
}

/// Whether Kubernetes' mutating policies did what the module did: mutate
/// every object the module patches into the object its patch leaves (as
/// the CRD stores it, unknown fields pruned), change nothing when run again
/// on their own output (idempotent, as reinvocation needs), and leave alone
/// every object the module admits unpatched.
fn mutation_difference(
    judges: &mut Judges,
    admit: &Admit,
    mutated: &Admitted,
    module: &ModuleAnswer,
    authorize: &mut dyn FnMut(&AuthorizerAnswer) -> Result<bool, String>,
) -> anyhow::Result<Option<String>> {
    let stored = mutated.pruned_object.as_ref().unwrap_or(&mutated.object);
    match module {
        ModuleAnswer::Mutated { object, .. } => {
            if !mutated.mutated {
                return Ok(Some(format!(
                    "the module patches the object into {object}; the mutating policies \
                     leave it as it is"
                )));
            }
            if stored != object {
                return Ok(Some(format!(
                    "the module patches the object into {object}\n  the mutating policies \
                     into {stored}"
                )));
            }
            let mut again = admit.clone();
            again.request["object"] = mutated.object.clone();
            let twice = admit_answering(&mut judges.kube, &mut again, authorize)?;
            if twice.mutated {
                return Ok(Some(format!(
                    "the mutating policies change their own output again: {}",
                    twice.object
                )));
            }
            judges.mutations_compared += 1;
            Ok(None)
        }
        // The module admits the object as it is: the mutation must leave
        // it so. (When the module denies, it patches nothing whatever the
        // object needs; the validating policies are then held to deny.)
        ModuleAnswer::Allowed(_) if mutated.mutated => Ok(Some(format!(
            "the module admits the object as it is; the mutating policies change it into \
             {stored}"
        ))),
        _ => Ok(None),
    }
}

/// Whether any of the validating policies of `admit` is evaluated on its
/// request, as Kubernetes' dispatcher decides it (match constraints, match
/// conditions, params): each policy is sent again with one validation that
/// always fails and nothing else that could, and Kubernetes denies if one
/// of them was evaluated.
fn any_policy_evaluated(
    judges: &mut Judges,
    admit: &Admit,
    authorize: &mut dyn FnMut(&AuthorizerAnswer) -> Result<bool, String>,
) -> anyhow::Result<bool> {
    let mut probe = admit.clone();
    probe.mutating_policies.clear();
    probe.mutating_bindings.clear();
    for policy in &mut probe.validating_policies {
        let spec = policy
            .get_mut("spec")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| anyhow::anyhow!("a generated policy without a spec"))?;
        for field in ["variables", "auditAnnotations"] {
            spec.remove(field);
        }
        spec.insert(
            "validations".into(),
            serde_json::json!([{"expression": "false", "message": "evaluated"}]),
        );
    }
    for binding in &mut probe.validating_bindings {
        binding["spec"]["validationActions"] = serde_json::json!(["Deny"]);
    }
    let probed = admit_answering(&mut judges.kube, &mut probe, authorize)?;
    Ok(!probed.allowed)
}

/// One case's judgement: the module's answer and Kubernetes'.
fn judge_inputs(
    judges: &mut Judges,
    rule: &str,
    settings: &Value,
    request: &Value,
    snapshot: Arc<olm_guard_snapshot::Snapshot>,
) -> anyhow::Result<Judged> {
    // catalog-union's union settings are for a CRD with the union members.
    let union_members = rule == "catalog-union"
        && (settings.get("warnLegacy") == Some(&Value::Bool(true))
            || settings.get("migrateLegacy") == Some(&Value::Bool(true))
            || settings.get("allowLegacy") == Some(&Value::Bool(false)));
    let served = judges.served.crd_for(request, union_members);
    // Generated for the scenario's cluster, as `olm-guard scaffold vap
    // --cluster` generates for a cluster's snapshot that holds its CRDs.
    let objects: Vec<Value> = snapshot.objects().cloned().collect();
    let mut generated_for = objects.clone();
    generated_for.extend(served.iter().cloned());
    let native = match generate(rule, settings, Some(&generated_for)) {
        Ok(native) => native,
        Err(GenerateError::Settings { problem, .. }) => {
            let policy = judges.store.get(rule)?;
            return Ok(match policy.validate_settings(settings) {
                Err(PolicyError::InvalidSettings(_)) => Judged::Agree {
                    text: Text::None,
                    kind: "settings refused",
                },
                other => Judged::Disagree(format!(
                    "the generator refused the settings ({problem}); the module's \
                     validate_settings answered {other:?}"
                )),
            });
        }
        Err(e @ (GenerateError::NotNative { .. } | GenerateError::ModuleOnly { .. })) => {
            return Ok(Judged::NotCovered(e.to_string()));
        }
        Err(e) => bail!("{e}"),
    };
    // What reaches admission: the objects as the API server decodes them
    // against the CRD as upstream ships it, or its refusal.
    let decoded = judges.kube.admit(&Admit {
        request: request.clone(),
        crds: served.iter().cloned().collect(),
        ..Admit::default()
    })?;
    if decoded.refused.is_some() || decoded.schema_error.is_some() {
        return Ok(Judged::NotCovered(
            "an object the API server refuses before admission (a wrong type, a missing \
             required field, a value its schema forbids)"
                .into(),
        ));
    }
    let mut request = request.clone();
    request["object"] = decoded.object;
    request["oldObject"] = decoded.old_object;
    let request = &request;
    let policy = judges.store.get(rule)?;
    let module = module_answer(&policy, request, settings, snapshot.clone())?;
    if let Some(reason) = olm_guard_native::policies::not_covered(rule, request, &*snapshot) {
        return Ok(Judged::NotCovered(format!("{rule}: {reason}")));
    }
    // Kubernetes sees the CRD as the rule's patches leave it, the
    // generated mutating policies, then the validating ones.
    let authorizer = SnapshotAuthorizer(snapshot.clone());
    let mut authorize = |check: &AuthorizerAnswer| authorizer.answer(check);
    let mut admit = Admit {
        request: request.clone(),
        crds: served
            .as_ref()
            .map(|crd| patched(crd, &native))
            .transpose()?
            .into_iter()
            .collect(),
        objects: objects_read(&objects, &native),
        ..Admit::default()
    };
    for bound in &native.mutations {
        admit
            .mutating_policies
            .push(serde_json::to_value(&bound.policy)?);
        admit
            .mutating_bindings
            .push(serde_json::to_value(&bound.binding)?);
    }
    // What the mutating policies do on their own, to compare with the
    // module's patch.
    let mutation = if native.mutations.is_empty() {
        None
    } else {
        let mutated = admit_answering(&mut judges.kube, &mut admit, &mut authorize)?;
        if let Some(error) = &mutated.mutation_error {
            return Ok(Judged::Disagree(format!(
                "the mutating policies failed the request: {}",
                error.message
            )));
        }
        Some(mutated)
    };
    for bound in &native.policies {
        admit
            .validating_policies
            .push(serde_json::to_value(&bound.policy)?);
        admit
            .validating_bindings
            .push(serde_json::to_value(&bound.binding)?);
    }
    let kube = admit_answering(&mut judges.kube, &mut admit, &mut authorize)?;
    judges.checks_answered += admit.authorizer.len();
    if let Some(mutated) = &mutation
        && let Some(problem) =
            mutation_difference(judges, &admit, mutated, &module, &mut authorize)?
    {
        return Ok(Judged::Disagree(problem));
    }
    let operation = request.get("operation").and_then(Value::as_str);
    Ok(match (module, kube) {
        (ModuleAnswer::SettingsRefused, _) => {
            Judged::Disagree("the module refused the settings; the generator accepted them".into())
        }
        // The mutation's object was compared above; the verdict is the
        // validating policies' on it. The module's warning that it
        // rewrote the object has no native counterpart (a mutating policy
        // cannot warn, and the validating ones see only the result).
        (ModuleAnswer::Mutated { .. }, kube) if mutation.is_some() => {
            if kube.allowed && kube.schema_error.is_none() {
                Judged::Agree {
                    text: Text::None,
                    kind: "mutated",
                }
            } else {
                Judged::Disagree(format!(
                    "the module mutates and allows; Kubernetes, after the mutating policies, \
                     answers {}",
                    kube.schema_error
                        .as_ref()
                        .or(kube.status.as_ref())
                        .map_or("nothing".into(), |s| s.message.clone())
                ))
            }
        }
        (ModuleAnswer::Mutated { .. }, _) => {
            Judged::NotCovered(format!("{rule}: the module mutates the object"))
        }
        // The CRD's rules come first: the policies are never asked on a
        // cluster with the CRD patch. Their own denial (what a cluster
        // that applied the policies alone shows) is still compared.
        (
            ModuleAnswer::Denied(m),
            Admitted {
                schema_error: Some(schema),
                status,
                ..
            },
        ) => match ignored_beyond_the_module(&schema.message, &m) {
            // What kubectl shows is the CRD's message: a field it calls
            // ignored is one the module names too, so one the object has.
            Some(part) => Judged::Disagree(format!(
                "the CRD's rules say `{part}`, which the module does not: {}",
                schema.message
            )),
            None => Judged::Agree {
                text: match status {
                    Some(status) => Text::Denial(denial_text(&status.message) == m),
                    None => Text::None,
                },
                kind: "denied by the CRD's rules",
            },
        },
        (
            answer,
            Admitted {
                schema_error: Some(status),
                ..
            },
        ) if operation != Some("CREATE") => {
            // A schema has no exception for objects stored before its
            // rules: on an update it may be stricter than the module.
            let _ = (answer, status);
            Judged::NotCovered(
                "an update the CRD's rules refuse and the module lets through (a schema has no \
                 exception for objects stored before it)"
                    .into(),
            )
        }
        (
            answer,
            Admitted {
                schema_error: Some(status),
                ..
            },
        ) => Judged::Disagree(format!(
            "the CRD's rules refuse ({}) what the module answers {answer:?}",
            status.message
        )),
        (
            ModuleAnswer::Denied(m),
            Admitted {
                status: Some(status),
                ..
            },
        ) => Judged::Agree {
            text: Text::Denial(denial_text(&status.message) == m),
            kind: "denied",
        },
        (ModuleAnswer::Allowed(expected), kube) if kube.allowed => {
            // The same verdict; the same warnings, one for one, by text
            // (counted against a floor: a warning CEL cannot word as the
            // module does still warns).
            let got: Vec<&str> = kube.warnings.iter().map(|w| warning_text(w)).collect();
            if got.len() != expected.len() {
                Judged::Disagree(format!(
                    "both allow, with other warnings: module {expected:?}, Kubernetes {got:?}"
                ))
            } else if expected.is_empty() {
                Judged::Agree {
                    text: Text::None,
                    kind: if any_policy_evaluated(judges, &admit, &mut authorize)? {
                        "allowed"
                    } else {
                        "not matched"
                    },
                }
            } else {
                Judged::Agree {
                    text: Text::Warnings(got == expected),
                    kind: "allowed with warnings",
                }
            }
        }
        (module, kube) => Judged::Disagree(format!(
            "module: {module:?}\n  Kubernetes: {}",
            match &kube.status {
                Some(status) => format!("denied: {}", status.message),
                None => format!("allowed, warnings {:?}", kube.warnings),
            }
        )),
    })
}

/// The covered scenarios at the last count.
const COVERED_FLOOR: usize = 373;
/// Covered denials whose message, as the API server shows it, is the
/// module's word for word.
const SAME_DENIALS_FLOOR: usize = 89;
/// Module mutations Kubernetes' mutating policies made the same.
const MUTATIONS_FLOOR: usize = 24;
/// Covered admissions with warnings whose warnings are the module's.
const SAME_WARNINGS_FLOOR: usize = 36;

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
    let mut judges = Judges {
        store: PolicyStore::new(&runtime, dist).with_metadata_dir(root.join("policies")),
        served: Served::load(&root)?,
        kube: KubeHarness::start()?,
        checks_answered: 0,
        mutations_compared: 0,
    };

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
        cases.push((name, judge(&mut judges, dir)));
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
                    &mut judges,
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
        "native policies: Kubernetes asked the authorizer {} checks, answered from each \
         scenario's cluster by olm-guard's RBAC engine",
        judges.checks_answered
    );
    eprintln!(
        "native policies: Kubernetes' mutating policies patch the object as the module does, \
         idempotently, on {} cases",
        judges.mutations_compared
    );
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
    assert!(
        judges.mutations_compared >= MUTATIONS_FLOOR,
        "Kubernetes' mutating policies were compared with the module's mutations on only {} \
         cases, fewer than the {MUTATIONS_FLOOR} recorded",
        judges.mutations_compared
    );
    assert!(
        judges.checks_answered > 0,
        "Kubernetes asked the authorizer nothing: the authorization checks went untested"
    );
    for kind in ["allowed", "allowed with warnings", "denied", "not matched"] {
        assert!(
            tally.get(kind).copied().unwrap_or(0) > 0,
            "no covered scenario was `{kind}` by both: the comparison would be vacuous"
        );
    }
    Ok(())
}

/// The CRD message check catches a field called ignored that the object
/// lacks (the CRD rule once named both spec.image and spec.address for an
/// object with spec.image alone).
#[test]
fn a_crd_message_naming_a_field_the_module_does_not_is_caught() {
    let module = "spec.image is ignored with spec.sourceType \"configmap\": remove it, or set \
                  spec.sourceType \"grpc\" if the catalog comes from it";
    let before = "CatalogSource.operators.coreos.com \"c\" is invalid: spec: Invalid value: \
                  \"object\": spec.image and spec.address are ignored with spec.sourceType \
                  \"configmap\": remove them";
    assert_eq!(
        ignored_beyond_the_module(before, module),
        Some(
            "spec.image and spec.address are ignored with spec.sourceType \"configmap\": remove \
             them"
        )
    );
    let now = format!(
        "CatalogSource.operators.coreos.com \"c\" is invalid: spec: Invalid value: \"object\": \
         {module}"
    );
    assert_eq!(ignored_beyond_the_module(&now, module), None);
}
