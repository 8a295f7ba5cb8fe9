//! Adapter from olm-guard rules to Kubewarden's waPC guest protocol.
//!
//! A policy module is one line: [`policy_module!`] registers `validate`,
//! `validate_batch`, `validate_settings` and `protocol_version` for a rule
//! `fn(&AdmissionRequest, &Settings, &dyn Cluster) -> Verdict`, whose host
//! calls may use the host capabilities the module declares and no others
//! ([`HostCluster`]). Whatever JSON arrives, the handlers answer with a
//! verdict, never a trap.

use std::collections::BTreeMap;

use olm_guard_core::Verdict;
use olm_guard_core::evaluate::{check_settings, evaluate_batch_payload, evaluate_payload};
use olm_guard_core::settings::PolicySettings;
use serde::Serialize;
use serde_json::Value;
use wapc_guest::CallResult;

mod host;
pub use host::{Capabilities, HostCluster, capabilities, holds, undeclared};
pub use olm_guard_core::Capability;
pub use olm_guard_core::evaluate::Rule;
pub use wapc_guest::register_function;

/// Registers the three waPC operations Kubewarden calls, and
/// `validate_batch`, which only `olm-guard audit` calls, for `$rule` with
/// the host capabilities `host_capabilities` ([`Capability`] variants: the
/// module's metadata.yml `hostCapabilities`, e.g. `[ListAll, CanI]` for
/// `kubernetes/list_resources_all` and `kubernetes/can_i`). The module
/// contains the host calls of those capabilities only; a lookup of another
/// one fails closed ([`undeclared`]). `olm-guard annotate` refuses a module
/// whose code uses a capability its metadata does not declare.
///
/// ```text
/// olm_guard_kubewarden::policy_module!(
///     olm_guard_rules::og_intersection::Settings,
///     olm_guard_rules::og_intersection::validate,
///     host_capabilities: [ListAll]
/// );
/// ```
#[macro_export]
macro_rules! policy_module {
    ($settings:ty, $rule:path, host_capabilities: [$($capability:ident),* $(,)?] $(,)?) => {
        /// waPC start-up: registers `validate`, `validate_settings` and
        /// `protocol_version` (called by the host before every operation).
        #[cfg(target_arch = "wasm32")]
        #[unsafe(no_mangle)]
        pub extern "C" fn wapc_init() {
            const DECLARED: $crate::Capabilities =
                $crate::capabilities(&[$($crate::Capability::$capability),*]);
            $crate::register_function("validate", |payload| {
                $crate::validate::<$settings, DECLARED>(payload, $rule)
            });
            $crate::register_function("validate_batch", |payload| {
                $crate::validate_batch::<$settings, DECLARED>(payload, $rule)
            });
            $crate::register_function("validate_settings", $crate::validate_settings::<$settings>);
            $crate::register_function("protocol_version", $crate::protocol_version_guest);
        }
    };
}

/// The `validate` operation: `{"request": …, "settings": …}` in,
/// `ValidationResponse` out, with the host capabilities in `DECLARED`.
/// The evaluation itself is `olm_guard_core::evaluate`, shared with the
/// native baseline and every other front end.
pub fn validate<S: PolicySettings, const DECLARED: Capabilities>(
    payload: &[u8],
    rule: Rule<S>,
) -> CallResult {
    let verdict = evaluate_payload(payload, rule, &HostCluster::<DECLARED>);
    respond(&response_of(verdict))
}

/// The `validate_batch` operation: `validate` payloads as JSON Lines in, a
/// JSON array of `ValidationResponse`s out, one per line in order,
/// each what `validate` answers for that request alone (with the same
/// host capabilities)
/// (`olm_guard_core::evaluate::evaluate_batch_payload`). Kubewarden never
/// calls it; `olm-guard audit` does, so that one instance decodes each list
/// of an unchanging snapshot once instead of once per stored object.
pub fn validate_batch<S: PolicySettings, const DECLARED: Capabilities>(
    payload: &[u8],
    rule: Rule<S>,
) -> CallResult {
    let verdicts = evaluate_batch_payload(payload, rule, &HostCluster::<DECLARED>);
    let responses: Vec<ValidationResponse> = verdicts.into_iter().map(response_of).collect();
    respond(&responses)
}

/// What `validate` answers: kubewarden-policy-sdk 0.17's `ValidationResponse`
/// (kubewarden/policy-sdk-rust, `src/response.rs`) field for field, with
/// `None` written as `null` as the SDK writes it. The conformance tests read
/// every module's answers with the SDK's own type.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ValidationResponse {
    /// Whether the request is admitted.
    pub accepted: bool,
    /// Why not, for the user.
    pub message: Option<String>,
    /// The HTTP status code of a rejection.
    pub code: Option<u16>,
    /// The object to admit instead (a mutation).
    pub mutated_object: Option<Value>,
    /// Audit annotations; the rules set none.
    pub audit_annotations: Option<BTreeMap<String, String>>,
    /// Warnings for the client.
    pub warnings: Option<Vec<String>>,
}

/// The `protocol_version` operation: `"v1"`, the JSON of the SDK's
/// `ProtocolVersion::V1` (kubewarden/policy-sdk-rust, `src/lib.rs`,
/// `protocol_version_guest`), which policy-server asks before anything else.
pub fn protocol_version_guest(_payload: &[u8]) -> CallResult {
    Ok(serde_json::to_vec("v1")?)
}

/// The wire form of a verdict.
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
        .and_then(|value| check_settings::<S>(&value).map_err(|e| e.to_string()));
    respond(&SettingsValidationResponse {
        valid: outcome.is_ok(),
        message: outcome.err(),
    })
}

fn respond<T: Serialize>(value: &T) -> CallResult {
    Ok(serde_json::to_vec(value)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubewarden_policy_sdk::metadata::ProtocolVersion;
    use kubewarden_policy_sdk::response::ValidationResponse as Sdk;
    use serde_json::json;

    /// Every field the rules set, and none, against the SDK's own type.
    #[test]
    fn responses_are_written_as_the_sdk_writes_them() {
        let verdicts = [
            Verdict::accept(),
            Verdict::deny("no"),
            Verdict::bad_request("spec.group: expected a string"),
            Verdict::mutate(json!({"spec": {"group": "g"}})).with_warning("filled spec.group"),
        ];
        for verdict in verdicts {
            let ours = response_of(verdict.clone());
            let sdk = Sdk {
                accepted: verdict.allowed,
                message: verdict.message.clone(),
                code: verdict.code,
                mutated_object: verdict.mutated_object.clone(),
                audit_annotations: None,
                warnings: (!verdict.warnings.is_empty()).then(|| verdict.warnings.clone()),
            };
            assert_eq!(
                serde_json::to_string(&ours).unwrap(),
                serde_json::to_string(&sdk).unwrap()
            );
        }
    }

    #[test]
    fn the_protocol_version_is_the_sdks() {
        assert_eq!(
            protocol_version_guest(b"").unwrap(),
            serde_json::to_vec(&ProtocolVersion::default()).unwrap()
        );
    }
}
