//! Rule 7: an UPDATE is judged on what it changes, so a CatalogSource stored
//! before the policy (or under other settings) can still be relabelled,
//! repaired or deleted.

use serde_json::{Map, Value};

use olm_guard_core::{AdmissionRequest, Operation};

use super::{Judgement, Settings, judge_object};

/// Rule 7: an UPDATE of a CatalogSource that already broke the rule when it
/// was stored (created before the policy, or under other settings) is let
/// through when it leaves the catalog configuration as it was, or when every
/// problem it has was already a problem of the stored object: labels,
/// annotations, owner references and finalizers must stay writable, or the
/// object could never be repaired or deleted. The warning says what is still
/// wrong. `None` means deny as for a CREATE.
pub(super) fn stored_breakage(
    request: &AdmissionRequest,
    object: &Map<String, Value>,
    settings: &Settings,
    problems: &[String],
) -> Option<String> {
    if request.operation != Operation::Update {
        return None;
    }
    // An oldObject that is missing or cannot be read stands for nothing
    // stored: the request is judged like a CREATE.
    let stored = request.old_object.as_object()?;
    let Judgement::Broken(stored_problems) = judge_object(stored, settings) else {
        return None;
    };
    let problems_text = problems.join("; ");
    if configuration(object) == configuration(stored) {
        Some(format!(
            "this CatalogSource already breaks catalog-union and this update leaves its catalog \
             configuration as it was, so the update is allowed; fix it: {problems_text}"
        ))
    } else if problems.iter().all(|p| stored_problems.contains(p)) {
        Some(format!(
            "this update fixes part of what this CatalogSource breaks in catalog-union, so it \
             is allowed; still to fix: {problems_text}"
        ))
    } else {
        None
    }
}

/// The spec keys the rule reads, the catalog configuration, with `null`
/// values left out as the rule counts them absent.
pub(super) const CONFIGURATION: [&str; 8] = [
    "sourceType",
    "image",
    "address",
    "configMap",
    "grpcPodConfig",
    "catalogImageSource",
    "catalogServiceSource",
    "configMapSource",
];

pub(super) fn configuration(object: &Map<String, Value>) -> Vec<(&'static str, &Value)> {
    let spec = object.get("spec").and_then(Value::as_object);
    CONFIGURATION
        .into_iter()
        .filter_map(|key| {
            spec.and_then(|s| s.get(key))
                .filter(|v| !v.is_null())
                .map(|v| (key, v))
        })
        .collect()
}
