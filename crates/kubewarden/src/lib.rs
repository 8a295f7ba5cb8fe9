//! Adapter from olm-guard rules to Kubewarden's waPC guest protocol.
//!
//! A policy module is one line: [`policy_module!`] registers `validate`,
//! `validate_settings` and `protocol_version` for a rule
//! `fn(&AdmissionRequest, &Settings, &dyn Cluster) -> Verdict`.
//! Whatever JSON arrives, the handlers answer with a verdict, never a trap.

use kubewarden_policy_sdk::response::ValidationResponse;
use kubewarden_policy_sdk::wapc_guest::{self, CallResult};
use olm_guard_core::evaluate::{check_settings, evaluate_payload};
use olm_guard_core::protocol::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    SubjectAccessReviewStatus,
};
use olm_guard_core::settings::PolicySettings;
use olm_guard_core::{Capability, Cluster, ContextError, ContextErrorKind, Verdict};
use serde::Serialize;
use serde_json::Value;

pub use kubewarden_policy_sdk::protocol_version_guest;
pub use kubewarden_policy_sdk::wapc_guest::register_function;
pub use olm_guard_core::evaluate::Rule;

/// Registers the three waPC operations Kubewarden calls.
#[macro_export]
macro_rules! policy_module {
    ($settings:ty, $rule:path) => {
        /// waPC start-up: registers `validate`, `validate_settings` and
        /// `protocol_version` (called by the host before every operation).
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
/// The evaluation itself is `olm_guard_core::evaluate`, shared with the
/// native baseline and every other front end.
pub fn validate<S: PolicySettings>(payload: &[u8], rule: Rule<S>) -> CallResult {
    let verdict = evaluate_payload(payload, rule, &HostCluster);
    respond(&response_of(verdict))
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
        .and_then(|value| check_settings::<S>(&value));
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
    fn call<T: Serialize>(
        &self,
        capability: Capability,
        target: String,
        request: &T,
    ) -> Result<Vec<u8>, ContextError> {
        let operation = capability.operation();
        let payload = serde_json::to_vec(request).map_err(|e| {
            ContextError::new(
                ContextErrorKind::InvalidRequest,
                format!("cannot encode the {operation} request: {e}"),
            )
            .on(capability, target.clone())
        })?;
        wapc_guest::host_call("kubewarden", "kubernetes", operation, &payload).map_err(|e| {
            ContextError::from_host(format!(
                "host capability kubernetes/{operation} failed: {e}"
            ))
            .on(capability, target)
        })
    }
}

impl Cluster for HostCluster {
    fn list_all(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
        let target = format!("{}/{}", request.api_version, request.kind);
        self.call(Capability::ListAll, target, request)
    }

    fn list_by_namespace(
        &self,
        request: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, ContextError> {
        let target = format!(
            "{}/{} in namespace \"{}\"",
            request.api_version, request.kind, request.namespace
        );
        self.call(Capability::ListByNamespace, target, request)
    }

    fn get(&self, request: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
        let target = format!(
            "{}/{} \"{}\"",
            request.api_version, request.kind, request.name
        );
        self.call(Capability::Get, target, request)
    }

    fn can_i(&self, request: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
        let attributes = &request.subject_access_review.resource_attributes;
        let target = format!("{} {}", attributes.verb, attributes.resource);
        let bytes = self.call(Capability::CanI, target.clone(), request)?;
        serde_json::from_slice(&bytes).map_err(|e| {
            ContextError::new(
                ContextErrorKind::Decode,
                format!("the host's can_i answer is not valid: {e}"),
            )
            .on(Capability::CanI, target)
        })
    }
}
