//! Adapter from olm-guard rules to Kubewarden's waPC guest protocol.
//!
//! A policy module is one line: [`policy_module!`] registers `validate`,
//! `validate_settings` and `protocol_version` for a rule
//! `fn(&AdmissionRequest, &Settings, &dyn Cluster) -> Verdict`.
//! Whatever JSON arrives, the handlers answer with a verdict, never a trap.

use kubewarden_policy_sdk::response::ValidationResponse;
use kubewarden_policy_sdk::wapc_guest::{self, CallResult};
use olm_guard_core::protocol::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    SubjectAccessReviewStatus,
};
use olm_guard_core::settings::{self, PolicySettings};
use olm_guard_core::{AdmissionRequest, Cluster, ContextError, Verdict};
use serde::Serialize;
use serde_json::Value;

pub use kubewarden_policy_sdk::protocol_version_guest;
pub use kubewarden_policy_sdk::wapc_guest::register_function;

/// A rule as every olm-guard policy writes it.
pub type Rule<S> = fn(&AdmissionRequest, &S, &dyn Cluster) -> Verdict;

/// Registers the three waPC operations Kubewarden calls.
#[macro_export]
macro_rules! policy_module {
    ($settings:ty, $rule:path) => {
        #[cfg(target_arch = "wasm32")]
        #[unsafe(no_mangle)]
        pub extern "C" fn wapc_init() {
            $crate::register_function("validate", |payload| {
                $crate::validate::<$settings>(payload, $rule)
            });
            $crate::register_function("validate_settings", $crate::validate_settings::<$settings>);
            $crate::register_function("protocol_version", $crate::protocol_version_guest);
        }
    };
}

/// The `validate` operation: `{"request": …, "settings": …}` in,
/// `ValidationResponse` out.
pub fn validate<S: PolicySettings>(payload: &[u8], rule: Rule<S>) -> CallResult {
    let verdict = evaluate(payload, rule, &HostCluster);
    respond(&response_of(verdict))
}

/// Parses the payload and runs the rule. Split from [`validate`] so native
/// code (the speed baseline) runs exactly what the module runs.
pub fn evaluate<S: PolicySettings>(
    payload: &[u8],
    rule: Rule<S>,
    cluster: &dyn Cluster,
) -> Verdict {
    #[derive(serde::Deserialize)]
    struct Payload {
        #[serde(default)]
        request: Value,
        #[serde(default)]
        settings: Value,
    }
    let payload: Payload = match serde_json::from_slice(payload) {
        Ok(p) => p,
        Err(e) => return Verdict::bad_request(format!("the validation payload is not JSON: {e}")),
    };
    let request: AdmissionRequest = match serde_json::from_value(payload.request) {
        Ok(r) => r,
        Err(e) => {
            return Verdict::bad_request(format!("the AdmissionRequest cannot be read: {e}"));
        }
    };
    let settings = match settings::parse::<S>(&payload.settings) {
        Ok(s) => s,
        Err(e) => return Verdict::bad_request(e),
    };
    rule(&request, &settings, cluster)
}

/// The SDK's response type, so the wire format stays Kubewarden's.
pub fn response_of(verdict: Verdict) -> ValidationResponse {
    ValidationResponse {
        accepted: verdict.allowed,
        message: verdict.message,
        code: verdict.code,
        mutated_object: verdict.mutated_object,
        audit_annotations: None,
        warnings: (!verdict.warnings.is_empty()).then_some(verdict.warnings),
    }
}

/// The `validate_settings` operation. Unlike the SDK's, a type error is an
/// answer (`valid: false` naming the field), not a guest error.
pub fn validate_settings<S: PolicySettings>(payload: &[u8]) -> CallResult {
    #[derive(Serialize)]
    struct SettingsValidationResponse {
        valid: bool,
        message: Option<String>,
    }
    let outcome = serde_json::from_slice::<Value>(payload)
        .map_err(|e| format!("settings are not JSON: {e}"))
        .and_then(|value| settings::parse::<S>(&value).map(|_| ()));
    respond(&SettingsValidationResponse {
        valid: outcome.is_ok(),
        message: outcome.err(),
    })
}

fn respond<T: Serialize>(value: &T) -> CallResult {
    Ok(serde_json::to_vec(value)?)
}

/// The cluster as the Kubewarden host exposes it (`kubernetes/*` capabilities).
pub struct HostCluster;

impl HostCluster {
    fn call<T: Serialize>(&self, operation: &str, request: &T) -> Result<Vec<u8>, ContextError> {
        let payload = serde_json::to_vec(request)
            .map_err(|e| ContextError(format!("cannot encode the {operation} request: {e}")))?;
        wapc_guest::host_call("kubewarden", "kubernetes", operation, &payload).map_err(|e| {
            ContextError(format!(
                "host capability kubernetes/{operation} failed: {e}"
            ))
        })
    }
}

impl Cluster for HostCluster {
    fn list_all(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
        self.call("list_resources_all", request)
    }

    fn list_by_namespace(
        &self,
        request: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, ContextError> {
        self.call("list_resources_by_namespace", request)
    }

    fn get(&self, request: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
        self.call("get_resource", request)
    }

    fn can_i(&self, request: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
        let bytes = self.call("can_i", request)?;
        serde_json::from_slice(&bytes)
            .map_err(|e| ContextError(format!("the host's can_i answer is not valid: {e}")))
    }
}
