//! The pure step every front end shares: a `validate` payload (or a request
//! and settings) in, a [`Verdict`] out. It needs no waPC guest imports, so the
//! same code runs inside a policy module (through `olm-guard-kubewarden`), as
//! the native speed baseline, and in a `wasm32-unknown-unknown` build.

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::settings::{self, PolicySettings};
use crate::shared::Batch;
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

/// Evaluates a batch payload (`{"settings": …, "requests": [AdmissionRequest,
/// …]}`, what `olm-guard audit` sends to a module's `validate_batch`
/// operation, settings first): one verdict per request, in order, each the
/// verdict [`evaluate`] gives it alone, with the decoded lists shared
/// through [`crate::shared::Batch`]. Requests are decoded one at a time as
/// the payload is read, so a batch holds one decoded request at a time.
/// `Err` when the payload itself cannot be read (the host then evaluates
/// the requests one by one).
pub fn evaluate_batch_payload<S: PolicySettings>(
    payload: &[u8],
    rule: Rule<S>,
    cluster: &dyn Cluster,
) -> Result<Vec<Verdict>, String> {
    let batch = Batch::new(cluster);
    let mut reader = serde_json::Deserializer::from_slice(payload);
    BatchPayload {
        rule,
        cluster: &batch,
    }
    .deserialize(&mut reader)
    .and_then(|verdicts| reader.end().map(|()| verdicts))
    .map_err(|e| format!("the batch payload cannot be read: {e}"))
}

/// Reads a batch payload's object: `settings`, then `requests`, each
/// request evaluated as it is read.
struct BatchPayload<'a, S> {
    rule: Rule<S>,
    cluster: &'a dyn Cluster,
}

impl<'de, S: PolicySettings> DeserializeSeed<'de> for BatchPayload<'_, S> {
    type Value = Vec<Verdict>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Verdict>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, S: PolicySettings> Visitor<'de> for BatchPayload<'_, S> {
    type Value = Vec<Verdict>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(r#"{"settings": …, "requests": […]}"#)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<Verdict>, A::Error> {
        let mut settings = None;
        let mut verdicts = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "settings" => settings = Some(map.next_value::<Value>()?),
                "requests" => {
                    let Some(settings) = settings.as_ref() else {
                        return Err(de::Error::custom("`settings` must come before `requests`"));
                    };
                    verdicts = Some(map.next_value_seed(Requests {
                        settings,
                        rule: self.rule,
                        cluster: self.cluster,
                    })?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        verdicts.ok_or_else(|| de::Error::missing_field("requests"))
    }
}

/// A batch's `requests`, each evaluated as soon as it is read.
struct Requests<'a, S> {
    settings: &'a Value,
    rule: Rule<S>,
    cluster: &'a dyn Cluster,
}

impl<'de, S: PolicySettings> DeserializeSeed<'de> for Requests<'_, S> {
    type Value = Vec<Verdict>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Verdict>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, S: PolicySettings> Visitor<'de> for Requests<'_, S> {
    type Value = Vec<Verdict>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of AdmissionRequests")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Verdict>, A::Error> {
        let mut verdicts = Vec::new();
        while let Some(request) = seq.next_element::<Value>()? {
            verdicts.push(evaluate(request, self.settings, self.rule, self.cluster));
        }
        Ok(verdicts)
    }
}

/// Kubewarden's `validate_settings`: `Ok` when `settings` are valid for `S`,
/// else the reason naming the field.
pub fn check_settings<S: PolicySettings>(settings: &Value) -> Result<(), String> {
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
    fn a_batch_answers_each_request_in_order_as_alone() {
        let payload = br#"{"settings": {}, "requests": [
            {"operation": "CREATE", "name": "a"}, {"operation": "CREATE"}, {"uid": 7}]}"#;
        let verdicts = evaluate_batch_payload::<Settings>(payload, rule, &NoCluster).unwrap();
        let allowed: Vec<bool> = verdicts.iter().map(|v| v.allowed).collect();
        assert_eq!(allowed, [true, false, false]);
        assert_eq!(
            verdicts[2].code,
            Some(400),
            "a request that cannot be read is its own 400"
        );
        let strict = br#"{"settings": {"strict": true}, "requests": [{"name": "a"}]}"#;
        assert!(!evaluate_batch_payload::<Settings>(strict, rule, &NoCluster).unwrap()[0].allowed);
        // Settings refused: every request gets the refusal, as alone.
        let refused = br#"{"settings": {"nope": 1}, "requests": [{"name": "a"}, {"name": "b"}]}"#;
        let verdicts = evaluate_batch_payload::<Settings>(refused, rule, &NoCluster).unwrap();
        assert!(verdicts.iter().all(|v| v.code == Some(400)));
    }

    #[test]
    fn a_payload_that_cannot_be_read_is_an_error() {
        for payload in [
            &br#"{"requests": [{"name": "a"}], "settings": {}}"#[..],
            br#"{"settings": {}}"#,
            br#"{"settings": {}, "requests": [] } trailing"#,
            b"[",
        ] {
            let error = evaluate_batch_payload::<Settings>(payload, rule, &NoCluster).unwrap_err();
            assert!(
                error.starts_with("the batch payload cannot be read"),
                "{error}"
            );
        }
    }
}
