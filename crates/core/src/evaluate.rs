//! The pure step every front end shares: a `validate` payload (or a request
//! and settings) in, a [`Verdict`] out. It needs no waPC guest imports, so the
//! same code runs inside a policy module (through `olm-guard-kubewarden`), as
//! the native speed baseline, and in a `wasm32-unknown-unknown` build.

use serde::Deserialize;
use serde_json::Value;

use crate::settings::{self, PolicySettings, SettingsError};
use crate::shared::Batch;
use crate::{AdmissionRequest, Cluster, Verdict};

/// Kubewarden's `ValidationRequest`: the payload of `validate`.
#[derive(Deserialize)]
struct Payload {
    #[serde(default)]
    request: Value,
    #[serde(default)]
    settings: Value,
}

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
        Err(e) => return Verdict::bad_request(e.to_string()),
    };
    rule(&request, &settings, cluster)
}

/// Evaluates a batch payload, what `olm-guard audit` sends to a module's
/// `validate_batch` operation: `validate` payloads (`{"request": …,
/// "settings": …}`) as JSON Lines, one compact payload per line. Each line
/// is evaluated exactly as `validate` evaluates its payload
/// ([`evaluate_payload`]: the same reader, the same limits, the same answer
/// to a line that is not JSON), one at a time, with the decoded lists
/// shared through [`crate::shared::Batch`]. One verdict per non-blank line,
/// in order.
///
/// ```
/// use olm_guard_core::evaluate::evaluate_batch_payload;
/// use olm_guard_core::{AdmissionRequest, Cluster, NoCluster, PolicySettings, Verdict};
///
/// #[derive(Default, serde::Deserialize)]
/// struct Settings {}
/// impl PolicySettings for Settings {}
/// fn rule(request: &AdmissionRequest, _: &Settings, _: &dyn Cluster) -> Verdict {
///     if request.name.is_empty() { Verdict::deny("name it") } else { Verdict::accept() }
/// }
///
/// let payload = b"{\"request\": {\"name\": \"x\"}}\n{\"request\": {}}\n";
/// let verdicts = evaluate_batch_payload::<Settings>(payload, rule, &NoCluster);
/// assert_eq!(verdicts.iter().map(|v| v.allowed).collect::<Vec<_>>(), [true, false]);
/// ```
pub fn evaluate_batch_payload<S: PolicySettings>(
    payload: &[u8],
    rule: Rule<S>,
    cluster: &dyn Cluster,
) -> Vec<Verdict> {
    let batch = Batch::new(cluster);
    payload
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.trim_ascii().is_empty())
        .map(|line| evaluate_payload(line, rule, &batch))
        .collect()
}

/// Kubewarden's `validate_settings`: `Ok` when `settings` are valid for `S`,
/// else the reason naming the field.
pub fn check_settings<S: PolicySettings>(settings: &Value) -> Result<(), SettingsError> {
    settings::parse::<S>(settings).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoCluster;

    #[derive(Default, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Settings {
        #[serde(default)]
        strict: bool,
    }
    impl PolicySettings for Settings {}

    fn rule(request: &AdmissionRequest, settings: &Settings, cluster: &dyn Cluster) -> Verdict {
        assert!(
            cluster.shared_answers().is_some(),
            "a batch shares its answers"
        );
        if request.name.is_empty() || settings.strict {
            Verdict::deny(format!("no to {:?}", request.name))
        } else {
            Verdict::accept()
        }
    }

    #[test]
    fn a_batch_answers_each_line_in_order_as_alone() {
        let lines = [
            r#"{"settings": {}, "request": {"operation": "CREATE", "name": "a"}}"#,
            r#"{"request": {"operation": "CREATE"}}"#,
            r#"{"request": {"uid": 7}, "settings": {}}"#,
            r#"{"settings": {"strict": true}, "request": {"name": "a"}}"#,
            r#"{"settings": {"nope": 1}, "request": {"name": "a"}}"#,
            r#"{"request": "#,
            &format!(
                r#"{{"request": {{"name": "a", "object": {}1{}}}}}"#,
                "[".repeat(127),
                "]".repeat(127)
            ),
        ];
        let batch = format!("{}\n\n", lines.join("\n"));
        let batched = evaluate_batch_payload::<Settings>(batch.as_bytes(), rule, &NoCluster);
        assert_eq!(batched.len(), lines.len());
        for (line, verdict) in lines.iter().zip(&batched) {
            let alone = evaluate_payload::<Settings>(line.as_bytes(), plain, &NoCluster);
            assert_eq!(verdict, &alone, "{line}");
        }
        let allowed: Vec<bool> = batched.iter().map(|v| v.allowed).collect();
        assert_eq!(allowed, [true, false, false, false, false, false, false]);
        assert!(evaluate_batch_payload::<Settings>(b"\n", rule, &NoCluster).is_empty());
    }

    /// `rule` without the batch's own check, for the evaluations alone.
    fn plain(request: &AdmissionRequest, settings: &Settings, _: &dyn Cluster) -> Verdict {
        if request.name.is_empty() || settings.strict {
            Verdict::deny(format!("no to {:?}", request.name))
        } else {
            Verdict::accept()
        }
    }
}
