//! The pure step every front end shares: a `validate` payload (or a request
//! and settings) in, a [`Verdict`] out. It needs no waPC guest imports, so the
//! same code runs inside a policy module (through `olm-guard-kubewarden`), as
//! the native speed baseline, and in a `wasm32-unknown-unknown` build.

use serde::Deserialize;
use serde_json::Value;

use crate::settings::{self, PolicySettings};
use crate::{AdmissionRequest, Cluster, Verdict};

/// A rule as every olm-guard policy writes it.
pub type Rule<S> = fn(&AdmissionRequest, &S, &dyn Cluster) -> Verdict;

/// Evaluates Kubewarden's `validate` payload (`{"request": …, "settings": …}`)
/// with `rule`; whatever the bytes, the answer is a verdict.
///
/// ```
/// use olm_guard_core::evaluate::evaluate_payload;
/// use olm_guard_core::{AdmissionRequest, Cluster, NoCluster, PolicySettings, Verdict};
///
/// #[derive(Default, serde::Deserialize)]
/// struct Settings {}
/// impl PolicySettings for Settings {}
/// fn rule(request: &AdmissionRequest, _: &Settings, _: &dyn Cluster) -> Verdict {
///     if request.name.is_empty() { Verdict::deny("name it") } else { Verdict::accept() }
/// }
///
/// let payload = br#"{"request": {"operation": "CREATE", "name": "x"}, "settings": {}}"#;
/// assert!(evaluate_payload::<Settings>(payload, rule, &NoCluster).allowed);
/// assert_eq!(evaluate_payload::<Settings>(b"{", rule, &NoCluster).code, Some(400));
/// ```
pub fn evaluate_payload<S: PolicySettings>(
    payload: &[u8],
    rule: Rule<S>,
    cluster: &dyn Cluster,
) -> Verdict {
    #[derive(Deserialize)]
    struct Payload {
        #[serde(default)]
        request: Value,
        #[serde(default)]
        settings: Value,
    }
    match serde_json::from_slice::<Payload>(payload) {
        Ok(p) => evaluate(p.request, &p.settings, rule, cluster),
        Err(e) => Verdict::bad_request(format!("the validation payload is not JSON: {e}")),
    }
}

/// Evaluates a request (an AdmissionRequest as JSON) with `settings` (JSON;
/// `null` means the defaults).
pub fn evaluate<S: PolicySettings>(
    request: Value,
    settings: &Value,
    rule: Rule<S>,
    cluster: &dyn Cluster,
) -> Verdict {
    // The path-keeping decoder, so `uid: 1234` says `request.uid: expected
    // a string, got a number`.
    let request: AdmissionRequest = match crate::decode::from_value(&request) {
        Ok(r) => r,
        Err(e) => {
            return Verdict::bad_request(format!(
                "the AdmissionRequest cannot be read: {}",
                e.under("request")
            ));
        }
    };
    let settings = match settings::parse::<S>(settings) {
        Ok(s) => s,
        Err(e) => return Verdict::bad_request(e),
    };
    rule(&request, &settings, cluster)
}

/// Kubewarden's `validate_settings`: `Ok` when `settings` are valid for `S`,
/// else the reason naming the field.
pub fn check_settings<S: PolicySettings>(settings: &Value) -> Result<(), String> {
    settings::parse::<S>(settings).map(|_| ())
}
