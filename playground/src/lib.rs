//! The olm-guard playground: the rules the modules ship, evaluated in the
//! browser. The page (`www/`) hands [`evaluate`] the text of its
//! editors as one JSON document and shows the JSON it answers; nothing
//! leaves the browser. Both functions are the module's exports, through
//! wasm-bindgen (its glue, `olm_guard_playground.js`, is what the page
//! imports: strings cross as strings, and the glue allocates and frees).
//!
//! The evaluation is the one `olm-guard run` performs, natively rather than
//! through the module: the rule from [`olm_guard_rules::registry`] (the code
//! each module registers), the request built from a bare object by
//! [`olm_guard_core::object_request::request_for_object`] (the builder of
//! `run --object`), the cluster from [`olm_guard_snapshot::Snapshot`], and
//! the response by [`AdmissionResponse::from_verdict`], the conversion
//! policy-server applies. What differs: no module sandbox, and host calls
//! are not filtered by the module's `contextAwareResources` grants (the
//! rules only ask for what their metadata declares).
//!
//! Strings in, strings out (JSON), so the JavaScript side stays small and
//! every error comes back as `{"ok": false, "error": {"field", "message"}}`
//! naming the input to fix; no input makes it panic.

#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

pub mod input;
pub mod recording;

use serde::Serialize;
use serde_json::{Value, json};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen::prelude::wasm_bindgen;

use olm_guard_core::display::{subject, yaml_diff};
use olm_guard_core::response::AdmissionResponse;
use olm_guard_rules::registry::{self, RuleEntry};
use olm_guard_snapshot::{LoadOptions, Snapshot};

use crate::input::{Input, InputError};
use crate::recording::{HostCall, Recording};

/// The examples build.rs took from `testdata/`, by rule name.
const EXAMPLES: &str = include_str!(concat!(env!("OUT_DIR"), "/examples.json"));

/// Every rule, as JSON: `[{name, description, mutating, contextAware,
/// settings, readme, examples}]`. `settings` holds the defaults the rule
/// runs with when given none; each example holds the page's inputs
/// (`object`, `oldObject`, `operation`, `namespace`, `user`, `groups`,
/// `settings`, `cluster`, all text) and the scenario's `expect.json`.
#[cfg_attr(target_arch = "wasm32", wasm_bindgen)]
pub fn rules() -> String {
    let examples: Value = serde_json::from_str(EXAMPLES).unwrap_or(Value::Null);
    let rules: Vec<Value> = registry::RULES
        .iter()
        .map(|rule| describe(rule, examples.get(rule.name)))
        .collect();
    Value::Array(rules).to_string()
}

fn describe(rule: &RuleEntry, examples: Option<&Value>) -> Value {
    let metadata: Value = serde_yaml_ng::from_str(rule.metadata_yaml).unwrap_or(Value::Null);
    let description = metadata
        .pointer("/annotations/io.kubewarden.policy.description")
        .and_then(Value::as_str)
        .unwrap_or("");
    let context_aware = metadata
        .get("contextAwareResources")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty());
    json!({
        "name": rule.name,
        "description": description,
        "mutating": metadata.get("mutating").and_then(Value::as_bool).unwrap_or(false),
        "contextAware": context_aware,
        "settings": rule.default_settings(),
        "readme": rule.readme,
        "examples": examples.cloned().unwrap_or_else(|| json!([])),
    })
}

/// What [`evaluate`] answers when the inputs could be evaluated.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Evaluation {
    /// Always `true`: an evaluation, not an input error.
    pub ok: bool,
    /// `CatalogSource olm/ops (CREATE)`: what the request is about.
    pub subject: String,
    /// Whether the request is admitted.
    pub allowed: bool,
    /// The response's `status.message`, if any.
    pub message: Option<String>,
    /// The response's `status.code`, if any.
    pub code: Option<u16>,
    /// Warnings returned to the client.
    pub warnings: Vec<String>,
    /// The RFC 6902 operations of a mutation (empty when none).
    pub patch: Value,
    /// The object with the patch applied, when mutated.
    pub patched_object: Option<Value>,
    /// A unified diff of the object's YAML before and after the patch, as
    /// `olm-guard run` prints it; empty when not mutated.
    pub diff: String,
    /// Every host call the rule made, in order, with its answer or error.
    pub host_calls: Vec<HostCall>,
    /// The AdmissionRequest evaluated (built from the object, or as given).
    pub request: Value,
    /// The `admission.k8s.io/v1` AdmissionReview policy-server would answer.
    pub review: Value,
}

/// Evaluates one set of inputs (see [`input::Input`] for the fields); answers
/// an [`Evaluation`] or `{"ok": false, "error": {"field", "message"}}`.
#[cfg_attr(target_arch = "wasm32", wasm_bindgen)]
pub fn evaluate(input_json: &str) -> String {
    let answer = match run(input_json) {
        Ok(evaluation) => serde_json::to_value(evaluation),
        Err(error) => serde_json::to_value(error.into_answer()),
    };
    answer
        .unwrap_or_else(|e| {
            json!({"ok": false, "error": {"field": "", "message": format!("cannot encode the answer: {e}")}})
        })
        .to_string()
}

/// [`evaluate`] before encoding.
pub fn run(input_json: &str) -> Result<Evaluation, InputError> {
    let input = Input::parse(input_json)?;
    let rule = registry::find(&input.rule).ok_or_else(|| {
        InputError::new(
            "rule",
            format!(
                "no rule named \"{}\"; the rules are {}",
                input.rule,
                registry::names().collect::<Vec<_>>().join(", ")
            ),
        )
    })?;
    let settings = input.settings()?;
    rule.check_settings(&settings)
        .map_err(|e| InputError::new("settings", format!("the settings are not valid: {e}")))?;
    let mut snapshot = Snapshot::new();
    snapshot
        .add_source("cluster", &input.cluster, LoadOptions::STRICT)
        .map_err(|e| InputError::new("cluster", e.to_string()))?;
    let request = input.request()?;

    let recording = Recording::new(&snapshot);
    let verdict = rule.evaluate(request.clone(), &settings, &recording);
    let host_calls = recording.into_calls();
    let response = AdmissionResponse::from_verdict(&request, verdict);
    let patch = response
        .decoded_patch()
        .map_err(|e| InputError::new("", format!("the rule's patch: {e}")))?;
    let patched_object = response
        .patched_object(&request)
        .map_err(|e| InputError::new("", format!("the rule's patch: {e}")))?;
    let diff = match &patched_object {
        Some(patched) => yaml_diff(request.get("object").unwrap_or(&Value::Null), patched)
            .map_err(|e| InputError::new("", format!("the patched object as YAML: {e}")))?,
        None => String::new(),
    };
    Ok(Evaluation {
        ok: true,
        subject: subject(&request),
        allowed: response.allowed,
        message: response.status.as_ref().and_then(|s| s.message.clone()),
        code: response.status.as_ref().and_then(|s| s.code),
        warnings: response.warnings.clone().unwrap_or_default(),
        patch: patch
            .and_then(|p| serde_json::to_value(p).ok())
            .unwrap_or_else(|| json!([])),
        patched_object,
        diff,
        host_calls,
        request,
        review: response.into_review(),
    })
}

#[cfg(test)]
mod tests;
