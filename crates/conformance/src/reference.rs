//! [`ReferenceHost`]: Kubewarden's waPC stack (the `wapc` and
//! `wasmtime-provider` crates) over one engine, driven the way
//! kubewarden-controller's `crates/policy-evaluator` and
//! `crates/policy-server` drive it (file and function named at each step).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};

use kubewarden_policy_sdk::response::ValidationResponse as SdkValidationResponse;
use kubewarden_policy_sdk::settings::SettingsValidationResponse;
use olm_guard_core::response::{AdmissionResponse, ValidationResponse};
use olm_guard_evaluator::{ClusterContext, ContextHost, Policy};
use olm_guard_runtime::HostCallback;
use wasmtime_provider::wasmtime;
use wasmtime_provider::{EpochDeadlines, WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre};

use crate::policy_evaluator::{
    KubewardenAdmissionRequest, apply_mutation_constraint, from_policy_validation_response,
    reject_internal_server_error,
};
use crate::verdict::{Answer, Verdict};

/// policy-server's default `--policy-timeout` (kubewarden-controller,
/// `crates/policy-server/src/cli.rs`): 2 seconds.
pub const POLICY_TIMEOUT_SECONDS: u64 = 2;

/// The epoch deadlines policy-server gives every waPC instance: the policy
/// timeout, in one-second ticks, for both initialisation and each call.
const DEADLINES: EpochDeadlines = EpochDeadlines {
    wapc_init: POLICY_TIMEOUT_SECONDS,
    wapc_func: POLICY_TIMEOUT_SECONDS,
};

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
                // Short sleeps so the thread ends soon after its owner.
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
pub struct ReferenceHost {
    engine: wasmtime::Engine,
    /// One `WasmtimeEngineProviderPre` per module, as policy-server keeps one
    /// `PolicyEvaluatorPre` per module digest
    /// (`crates/policy-server/src/evaluation/evaluation_environment.rs`,
    /// `EvaluationEnvironment::register`).
    modules: HashMap<String, WasmtimeEngineProviderPre>,
    _ticker: EpochTicker,
}

/// What Kubewarden's host answered to one scenario
/// ([`ReferenceHost::evaluate`]).
pub struct ReferenceAnswer {
    /// The answer policy-server would send.
    pub answer: Answer,
    /// When the module answered `validate`: our `from_validation` and
    /// policy-evaluator's conversion of that same answer.
    pub conversions: Option<(Verdict, Verdict)>,
    /// How many host calls `validate` made through waPC's callback.
    pub host_calls: usize,
}

impl ReferenceHost {
    /// policy-server's engine: `wasmtime::Config::new()` with epoch
    /// interruption on, nothing else (`PolicyServer::new_from_config`),
    /// and its epoch ticker.
    pub fn new() -> anyhow::Result<ReferenceHost> {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let engine = wasmtime::Engine::new(&config).map_err(wasmtime_error)?;
        let ticker = EpochTicker::start(&engine);
        Ok(ReferenceHost {
            engine,
            modules: HashMap::new(),
            _ticker: ticker,
        })
    }

    /// Compiles `wasm` as module `name` once (later calls with the same
    /// name return the same one), as `StackPre::new`
    /// (`crates/policy-evaluator/src/runtimes/wapc/stack_pre.rs`) does: the
    /// builder gets the engine and the compiled module, and no WASI
    /// parameters (so wasmtime-provider's defaults: WASI preview 1 with
    /// inherited stdio, no arguments, no environment, no directories).
    pub fn load(&mut self, name: &str, wasm: &Path) -> anyhow::Result<WasmtimeEngineProviderPre> {
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
    pub fn fresh_host(
        pre: &WasmtimeEngineProviderPre,
        context: ContextHost,
    ) -> anyhow::Result<(wapc::WapcHost, Arc<ContextHost>)> {
        let provider = pre.rehydrate(Some(DEADLINES))?;
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

    /// One scenario as policy-server evaluates it: `validate_settings`,
    /// then `validate`, each on a fresh waPC instance of `wasm` (compiled
    /// once, as module `policy.name`). `cluster` is called once per
    /// operation for the context its host calls are answered from, so
    /// that a context consumed as it answers (a recorded session replayed
    /// strictly in order) can be given unchanged.
    pub fn evaluate(
        &mut self,
        policy: &Policy,
        wasm: &Path,
        request: &Value,
        settings: &Value,
        cluster: &mut dyn FnMut() -> anyhow::Result<ClusterContext>,
    ) -> anyhow::Result<ReferenceAnswer> {
        let pre = self.load(&policy.name, wasm)?;

        let (host, _) = ReferenceHost::fresh_host(&pre, policy.host(cluster()?))?;
        let settings_answer = validate_settings(&host, settings)?;
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

        let (uid, request) = typed_round_trip(request)?;
        let (host, dispatcher) = ReferenceHost::fresh_host(&pre, policy.host(cluster()?))?;
        let (response, raw) = validate(&host, &uid, &request, settings)?;
        let object = request.get("object").cloned().unwrap_or(Value::Null);

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

    /// One waPC instance of `wasm` (compiled once, as module `policy.name`)
    /// to be reused for every evaluation, as `kwctl bench` measures:
    /// `pull_and_bench` (kubewarden/kwctl, `src/command/bench.rs`) builds
    /// one `Evaluator` (`src/run/evaluator.rs`, `Evaluator::new`:
    /// `PolicyEvaluatorBuilder::build_pre()?.rehydrate(..)`, one waPC
    /// stack) and times `Evaluator::evaluate` on it again and again. The
    /// instance keeps policy-server's engine and deadlines.
    pub fn instance(&mut self, policy: &Policy, wasm: &Path) -> anyhow::Result<LongLivedInstance> {
        let pre = self.load(&policy.name, wasm)?;
        let provider = pre.rehydrate(Some(DEADLINES))?;
        let current: Arc<Mutex<Option<ContextHost>>> = Arc::new(Mutex::new(None));
        let dispatcher = current.clone();
        let callback = move |_id: u64,
                             binding: &str,
                             namespace: &str,
                             operation: &str,
                             payload: &[u8]|
              -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
            let current = dispatcher
                .lock()
                .map_err(|_| "the host-call dispatcher is poisoned")?;
            match current.as_ref() {
                Some(context) => context
                    .call(binding, namespace, operation, payload)
                    .map_err(Into::into),
                None => Err("a host call outside any evaluation".into()),
            }
        };
        let host = wapc::WapcHost::new(Box::new(provider), Some(Box::new(callback)))?;
        Ok(LongLivedInstance {
            host,
            current,
            name: policy.name.clone(),
            mutating: mutating(policy),
        })
    }
}

/// One waPC instance reused across evaluations ([`ReferenceHost::instance`]).
/// Each evaluation's host calls are answered by the [`ContextHost`] it is
/// given, so every evaluation does the same host-side work as one on a
/// fresh instance; only the instance is kept.
pub struct LongLivedInstance {
    host: wapc::WapcHost,
    current: Arc<Mutex<Option<ContextHost>>>,
    name: String,
    mutating: bool,
}

impl LongLivedInstance {
    /// `validate_settings` on this instance, as policy-evaluator's
    /// `Runtime::validate_settings` answers it.
    pub fn validate_settings(
        &self,
        settings: &Value,
    ) -> anyhow::Result<SettingsValidationResponse> {
        validate_settings(&self.host, settings)
    }

    /// `validate` on this instance, host calls answered by `context`:
    /// `request` as policy-server hands it over (see [`typed_round_trip`]),
    /// the answer converted and constrained as policy-evaluator does.
    pub fn validate(
        &self,
        uid: &str,
        request: &Value,
        settings: &Value,
        context: ContextHost,
    ) -> anyhow::Result<AdmissionResponse> {
        *self
            .current
            .lock()
            .map_err(|_| anyhow::anyhow!("the host-call dispatcher is poisoned"))? = Some(context);
        let outcome = validate(&self.host, uid, request, settings);
        if let Ok(mut current) = self.current.lock() {
            *current = None;
        }
        let (response, _) = outcome?;
        Ok(apply_mutation_constraint(
            &self.name,
            self.mutating,
            response,
        ))
    }
}

/// policy-server deserialises the AdmissionReview's request into
/// policy-evaluator's typed `AdmissionRequest` and serialises it back into
/// the payload (`crates/policy-evaluator/src/admission_request.rs`): the
/// request's uid and what a module receives.
pub fn typed_round_trip(request: &Value) -> anyhow::Result<(String, Value)> {
    let typed: KubewardenAdmissionRequest = serde_json::from_value(request.clone())
        .context("policy-server would refuse this AdmissionRequest")?;
    let request = serde_json::to_value(&typed)?;
    Ok((typed.uid, request))
}

/// `Runtime::validate_settings` (`crates/policy-evaluator/src/runtimes/wapc/runtime.rs`):
/// the settings as a JSON string, the answer decoded into the SDK's
/// `SettingsValidationResponse`, failures turned into `valid: false`.
fn validate_settings(
    host: &wapc::WapcHost,
    settings: &Value,
) -> anyhow::Result<SettingsValidationResponse> {
    Ok(
        match host.call(
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
        },
    )
}

/// `Runtime::validate`: payload `{"request": …, "settings": …}`, the
/// answer decoded into the SDK's `ValidationResponse`, then
/// `AdmissionResponse::from_policy_validation_response`; any failure is a
/// 500 `reject_internal_server_error`. Also returns the module's raw
/// answer when it was a ValidationResponse.
fn validate(
    host: &wapc::WapcHost,
    uid: &str,
    request: &Value,
    settings: &Value,
) -> anyhow::Result<(AdmissionResponse, Option<Vec<u8>>)> {
    let object = request.get("object");
    let payload = serde_json::to_string(&json!({"request": request, "settings": settings}))?;
    let uid = uid.to_string();
    Ok(match host.call("validate", payload.as_bytes()) {
        Ok(bytes) => match serde_json::from_slice::<SdkValidationResponse>(&bytes) {
            Ok(answer) => match from_policy_validation_response(uid.clone(), object, &answer) {
                Ok(response) => (response, Some(bytes)),
                Err(e) => (reject_internal_server_error(uid, e.to_string()), None),
            },
            Err(e) => (reject_internal_server_error(uid, e.to_string()), None),
        },
        Err(e) => (reject_internal_server_error(uid, e.to_string()), None),
    })
}

/// `mutating` from the module's metadata: what the Kubewarden controller
/// puts in policies.yml as `allowedToMutate`.
fn mutating(policy: &Policy) -> bool {
    policy.metadata.as_ref().is_some_and(|m| m.mutating)
}
