//! Every scenario under `testdata/`, evaluated by two waPC hosts:
//!
//! - ours: `olm_guard_evaluator::Policy` on `olm_guard_runtime` (what
//!   `olm-guard run` and `olm-guard test` do);
//! - Kubewarden's: the `wapc` and `wasmtime-provider` crates driven the way
//!   kubewarden-controller's `crates/policy-evaluator` and
//!   `crates/policy-server` drive them (file and function named at each
//!   step below), with a fresh waPC instance per evaluation.
//!
//! Both hosts answer host calls through the same `ContextHost` (grants from
//! the module's metadata, policy-server's denial texts) over the scenario's
//! cluster, and the test requires the same settings verdict, `allowed`,
//! status message and code, warnings, and patched object. It prints
//! `reference waPC host: N/N agree` and fails listing every disagreement.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use anyhow::{Context, bail};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use olm_guard_core::response::{AdmissionResponse, Status, ValidationResponse};
use olm_guard_evaluator::scenario::{PolicyStore, discover};
use olm_guard_evaluator::{ClusterContext, ContextHost, Policy, PolicyError, input};
use olm_guard_runtime::{HostCallback, Limits, Runtime};
use olm_guard_snapshot::{LoadOptions, Snapshot};

use kubewarden_policy_sdk::response::ValidationResponse as SdkValidationResponse;
use kubewarden_policy_sdk::settings::SettingsValidationResponse;
use wasmtime_provider::wasmtime;
use wasmtime_provider::{EpochDeadlines, WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The cluster a scenario's host calls are answered from. Called once per
/// evaluation (never shared between the two hosts) so that a context that
/// is consumed as it answers, such as a recorded session replayed strictly
/// in order, can take this function's place unchanged.
fn cluster_context(dir: &Path) -> anyhow::Result<ClusterContext> {
    let mut snapshot = Snapshot::new();
    let path = dir.join("cluster.yaml");
    if path.is_file() {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        snapshot.add_source("cluster.yaml", &text, LoadOptions::STRICT)?;
    }
    Ok(Arc::new(snapshot))
}

// ---------------------------------------------------------------------------
// What each host answered, reduced to what must agree.

/// One host's answer to one scenario.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    /// `validate_settings` refused the settings with this message.
    SettingsRefused(String),
    /// The settings were accepted and `validate` answered.
    Response(Verdict),
    /// The host failed (trap, deadline, undecodable answer).
    Failed(String),
}

/// The parts of an AdmissionResponse that must agree.
#[derive(Debug, Clone, PartialEq)]
struct Verdict {
    allowed: bool,
    message: Option<String>,
    code: Option<u16>,
    /// `None` and `Some([])` are the same answer to a client.
    warnings: Vec<String>,
    /// The request's object with the response's patch applied; `None`
    /// when the response carries no patch.
    patched: Option<Value>,
}

impl Verdict {
    fn of(response: &AdmissionResponse, object: &Value) -> anyhow::Result<Verdict> {
        let status = response.status.clone().unwrap_or_default();
        Ok(Verdict {
            allowed: response.allowed,
            message: status.message,
            code: status.code,
            warnings: response.warnings.clone().unwrap_or_default(),
            patched: apply_patch(response.patch.as_deref(), object)?,
        })
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::SettingsRefused(message) => write!(f, "settings refused: {message:?}"),
            Answer::Failed(message) => write!(f, "host failure: {message}"),
            Answer::Response(v) => {
                write!(
                    f,
                    "allowed={} message={:?} code={:?}",
                    v.allowed, v.message, v.code
                )?;
                if !v.warnings.is_empty() {
                    write!(f, " warnings={:?}", v.warnings)?;
                }
                match &v.patched {
                    Some(object) => write!(f, " patched object={object}"),
                    None => write!(f, " no patch"),
                }
            }
        }
    }
}

/// Applies a base64 RFC 6902 patch to a copy of `object`, independently of
/// `olm_guard_core` (the code under test).
fn apply_patch(patch: Option<&str>, object: &Value) -> anyhow::Result<Option<Value>> {
    let Some(patch) = patch else {
        return Ok(None);
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(patch)
        .context("the patch is not base64")?;
    let patch: json_patch::Patch =
        serde_json::from_slice(&bytes).context("the patch is not a JSON Patch")?;
    let mut patched = object.clone();
    json_patch::patch(&mut patched, &patch).context("the patch does not apply")?;
    Ok(Some(patched))
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
// Kubewarden's host.

/// policy-server's default `--policy-timeout` (kubewarden-controller,
/// `crates/policy-server/src/cli.rs`): 2 seconds.
const POLICY_TIMEOUT_SECONDS: u64 = 2;

/// Advances the engine's epoch once a second, as policy-server's
/// `PolicyServer::new_from_config` (`crates/policy-server/src/lib.rs`) does
/// when timeout protection is on; stops when dropped.
struct EpochTicker(Arc<AtomicBool>);

impl EpochTicker {
    fn start(engine: &wasmtime::Engine) -> EpochTicker {
        let stop = Arc::new(AtomicBool::new(false));
        let (engine, stopped) = (engine.clone(), stop.clone());
        thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                // Short sleeps so the thread ends soon after the test.
                for _ in 0..10 {
                    thread::sleep(Duration::from_millis(100));
                    if stopped.load(Ordering::Relaxed) {
                        return;
                    }
                }
                engine.increment_epoch();
            }
        });
        EpochTicker(stop)
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// wasmtime's own error type is not a `std::error::Error`.
fn wasmtime_error(e: wasmtime::Error) -> anyhow::Error {
    anyhow::anyhow!("{e:#}")
}

/// Kubewarden's waPC stack over one engine.
struct Reference {
    engine: wasmtime::Engine,
    /// One `WasmtimeEngineProviderPre` per module, as policy-server keeps one
    /// `PolicyEvaluatorPre` per module digest
    /// (`crates/policy-server/src/evaluation/evaluation_environment.rs`,
    /// `EvaluationEnvironment::register`).
    modules: HashMap<String, WasmtimeEngineProviderPre>,
    _ticker: EpochTicker,
}

impl Reference {
    /// policy-server's engine: `wasmtime::Config::new()` with epoch
    /// interruption on, nothing else (`PolicyServer::new_from_config`).
    fn new() -> anyhow::Result<Reference> {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let engine = wasmtime::Engine::new(&config).map_err(wasmtime_error)?;
        let ticker = EpochTicker::start(&engine);
        Ok(Reference {
            engine,
            modules: HashMap::new(),
            _ticker: ticker,
        })
    }

    /// `StackPre::new` (`crates/policy-evaluator/src/runtimes/wapc/stack_pre.rs`):
    /// the builder gets the engine and the compiled module, and no WASI
    /// parameters (so wasmtime-provider's defaults: WASI preview 1 with
    /// inherited stdio, no arguments, no environment, no directories).
    fn pre(&mut self, name: &str, wasm: &Path) -> anyhow::Result<WasmtimeEngineProviderPre> {
        if let Some(pre) = self.modules.get(name) {
            return Ok(pre.clone());
        }
        let bytes =
            std::fs::read(wasm).with_context(|| format!("cannot read {}", wasm.display()))?;
        let module = wasmtime::Module::new(&self.engine, &bytes).map_err(wasmtime_error)?;
        let pre = WasmtimeEngineProviderBuilder::new()
            .engine(self.engine.clone())
            .module(module)
            .build_pre()?;
        self.modules.insert(name.to_string(), pre.clone());
        Ok(pre)
    }

    /// A fresh waPC host for one operation: `StackPre::rehydrate` with the
    /// policy timeout as both epoch deadlines, then `WapcHost::new` with the
    /// host callback (`crates/policy-evaluator/src/runtimes/wapc/stack.rs`,
    /// `WapcStack::wapc_host_from_pre`). policy-server rehydrates for every
    /// `validate` and `validate_settings` (`EvaluationEnvironment::rehydrate`).
    /// Also returns the host-call dispatcher, to count the calls it answered.
    fn host(
        pre: &WasmtimeEngineProviderPre,
        context: ContextHost,
    ) -> anyhow::Result<(wapc::WapcHost, Arc<ContextHost>)> {
        let provider = pre.rehydrate(Some(EpochDeadlines {
            wapc_init: POLICY_TIMEOUT_SECONDS,
            wapc_func: POLICY_TIMEOUT_SECONDS,
        }))?;
        let context = Arc::new(context);
        let dispatcher = context.clone();
        let callback = move |_id: u64,
                             binding: &str,
                             namespace: &str,
                             operation: &str,
                             payload: &[u8]|
              -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
            context
                .call(binding, namespace, operation, payload)
                .map_err(Into::into)
        };
        let host = wapc::WapcHost::new(Box::new(provider), Some(Box::new(callback)))?;
        Ok((host, dispatcher))
    }

    fn answer(
        &mut self,
        policy: &Policy,
        dir: &Path,
        request: &Value,
        settings: &Value,
    ) -> anyhow::Result<ReferenceAnswer> {
        let wasm = workspace()
            .join("dist")
            .join(format!("{}.wasm", policy.name));
        let pre = self.pre(&policy.name, &wasm)?;

        // `Runtime::validate_settings` (`crates/policy-evaluator/src/runtimes/wapc/runtime.rs`):
        // the settings as a JSON string, the answer decoded into the SDK's
        // `SettingsValidationResponse`, failures turned into `valid: false`.
        let (host, _) = Reference::host(&pre, policy.host(cluster_context(dir)?))?;
        let settings_answer = match host.call(
            "validate_settings",
            serde_json::to_string(settings)?.as_bytes(),
        ) {
            Ok(bytes) => serde_json::from_slice::<SettingsValidationResponse>(&bytes)
                .unwrap_or_else(|e| SettingsValidationResponse {
                    valid: false,
                    message: Some(format!("error: {e:?}")),
                }),
            Err(err) => SettingsValidationResponse {
                valid: false,
                message: Some(format!(
                    "Error invoking settings validation callback: {err:?}"
                )),
            },
        };
        if !settings_answer.valid {
            // Our host's words when a module refuses without a message.
            let message = settings_answer
                .message
                .unwrap_or_else(|| "no reason given".into());
            return Ok(ReferenceAnswer {
                answer: Answer::SettingsRefused(message),
                conversions: None,
                host_calls: 0,
            });
        }

        // policy-server deserialises the AdmissionReview's request into
        // policy-evaluator's typed `AdmissionRequest` and serialises it back
        // into the payload (`crates/policy-evaluator/src/admission_request.rs`).
        let typed: KubewardenAdmissionRequest = serde_json::from_value(request.clone())
            .context("policy-server would refuse this AdmissionRequest")?;
        let request = serde_json::to_value(&typed)?;
        let object = request.get("object");

        // `Runtime::validate`: payload `{"request": …, "settings": …}`, the
        // answer decoded into the SDK's `ValidationResponse`, then
        // `AdmissionResponse::from_policy_validation_response`; any failure
        // is a 500 `reject_internal_server_error`.
        let (host, dispatcher) = Reference::host(&pre, policy.host(cluster_context(dir)?))?;
        let payload = serde_json::to_string(&json!({"request": &request, "settings": settings}))?;
        let uid = typed.uid.clone();
        let (response, raw) = match host.call("validate", payload.as_bytes()) {
            Ok(bytes) => match serde_json::from_slice::<SdkValidationResponse>(&bytes) {
                Ok(answer) => match from_policy_validation_response(uid.clone(), object, &answer) {
                    Ok(response) => (response, Some(bytes)),
                    Err(e) => (reject_internal_server_error(uid, e.to_string()), None),
                },
                Err(e) => (reject_internal_server_error(uid, e.to_string()), None),
            },
            Err(e) => (reject_internal_server_error(uid, e.to_string()), None),
        };
        let object = object.cloned().unwrap_or(Value::Null);

        // Our `from_validation` on the very same answer, to check the claim
        // that it is policy-evaluator's conversion (before the mutation
        // constraint, which policy-server applies afterwards).
        let conversions = match raw {
            Some(bytes) => {
                let answer: ValidationResponse = serde_json::from_slice(&bytes)?;
                let ours = AdmissionResponse::from_validation(&request, answer);
                Some((
                    Verdict::of(&ours, &object)?,
                    Verdict::of(&response, &object)?,
                ))
            }
            None => None,
        };
        let response = apply_mutation_constraint(&policy.name, mutating(policy), response);
        Ok(ReferenceAnswer {
            answer: Answer::Response(Verdict::of(&response, &object)?),
            conversions,
            host_calls: dispatcher.calls().len(),
        })
    }
}

/// What Kubewarden's host answered.
struct ReferenceAnswer {
    /// The answer policy-server would send.
    answer: Answer,
    /// When the module answered `validate`: our `from_validation` and
    /// policy-evaluator's conversion of that same answer.
    conversions: Option<(Verdict, Verdict)>,
    /// How many host calls `validate` made through waPC's callback.
    host_calls: usize,
}

/// `mutating` from the module's metadata: what the Kubewarden controller
/// puts in policies.yml as `allowedToMutate`.
fn mutating(policy: &Policy) -> bool {
    policy.metadata.as_ref().is_some_and(|m| m.mutating)
}

/// policy-evaluator's `AdmissionRequest`, field for field
/// (`crates/policy-evaluator/src/admission_request.rs`): what survives the
/// round trip through it is what a module receives from policy-server.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KubewardenAdmissionRequest {
    uid: String,
    kind: GroupVersionKind,
    resource: GroupVersionResource,
    #[serde(skip_serializing_if = "Option::is_none")]
    sub_resource: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_kind: Option<GroupVersionKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_resource: Option<GroupVersionResource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_sub_resource: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
    operation: String,
    user_info: UserInfo,
    /// A `RawExtension` (any JSON); `null` reads as absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    old_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dry_run: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    options: Option<Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct GroupVersionKind {
    group: String,
    version: String,
    kind: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct GroupVersionResource {
    group: String,
    version: String,
    resource: String,
}

/// k8s-openapi's `authentication::v1::UserInfo`: every field optional and
/// left out when absent.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct UserInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<BTreeMap<String, Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    groups: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    username: Option<String>,
}

/// `AdmissionResponse::from_policy_validation_response`
/// (`crates/policy-evaluator/src/admission_response.rs`), restated here so
/// that our `olm_guard_core::response::AdmissionResponse::from_validation`
/// is checked against it rather than used for both hosts.
fn from_policy_validation_response(
    uid: String,
    req_obj: Option<&Value>,
    answer: &SdkValidationResponse,
) -> anyhow::Result<AdmissionResponse> {
    if answer.mutated_object.is_some() && req_obj.is_none() {
        return Ok(AdmissionResponse {
            uid,
            allowed: false,
            status: Some(Status {
                message: Some(
                    "Incoming object is null, which happens only with DELETE operations, but the policy is attempting a mutation. This is not allowed".into(),
                ),
                code: None,
            }),
            ..Default::default()
        });
    }
    let patch = match (&answer.mutated_object, req_obj) {
        (Some(mutated), Some(object)) => {
            let diff = json_patch::diff(object, mutated);
            if diff.0.is_empty() {
                None
            } else {
                Some(
                    base64::engine::general_purpose::STANDARD.encode(serde_json::to_string(&diff)?),
                )
            }
        }
        _ => None,
    };
    let status = (answer.message.is_some() || answer.code.is_some()).then(|| Status {
        message: answer.message.clone(),
        code: answer.code,
    });
    Ok(AdmissionResponse {
        uid,
        allowed: answer.accepted,
        status,
        patch_type: patch.as_ref().map(|_| "JSONPatch".to_string()),
        patch,
        audit_annotations: answer
            .audit_annotations
            .as_ref()
            .map(|a| a.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        warnings: answer.warnings.clone(),
    })
}

/// `AdmissionResponse::reject_internal_server_error`
/// (`crates/policy-evaluator/src/admission_response.rs`).
fn reject_internal_server_error(uid: String, message: String) -> AdmissionResponse {
    AdmissionResponse {
        uid,
        allowed: false,
        status: Some(Status {
            message: Some(format!("internal server error: {message}")),
            code: Some(500),
        }),
        ..Default::default()
    }
}

/// `AdmissionResponseHandler::apply_mutation_constraint`
/// (`crates/policy-evaluator/src/admission_response_handler.rs`), in the
/// default `protect` mode: a policy that may not mutate and answers with a
/// patch is a rejection.
fn apply_mutation_constraint(
    policy_id: &str,
    allowed_to_mutate: bool,
    response: AdmissionResponse,
) -> AdmissionResponse {
    if allowed_to_mutate || response.patch.is_none() {
        return response;
    }
    AdmissionResponse {
        allowed: false,
        status: Some(Status {
            message: Some(format!(
                "Request rejected by policy {policy_id}. The policy attempted to mutate the request, but it is currently configured to not allow mutations."
            )),
            code: None,
        }),
        patch: None,
        patch_type: None,
        ..response
    }
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
    let settings_path = dir.join("settings.json");
    let settings = input::settings_object(if settings_path.is_file() {
        Some(input::read_document(&settings_path)?)
    } else {
        None
    })?;
    let request = input::admission_request(input::read_document(&dir.join("request.json"))?)?;
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
    let mut reference = Reference::new()?;

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
            let theirs = reference.answer(
                &policy,
                &scenario.dir,
                &scenario.request,
                &scenario.settings,
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
    for kind in [
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
