//! The page's inputs: one JSON document holding the text of each editor.
//! Each text is YAML (or JSON, which YAML reads too) and is parsed here, so
//! the page needs no YAML library and every error names its editor.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use olm_guard_core::object_request::{
    ObjectRequest, ObjectRequestError, Requester, request_for_object,
};

/// What [`crate::evaluate`] reads. Every field may be left out.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Input {
    /// The rule's name, e.g. `catalog-union`.
    pub rule: String,
    /// An AdmissionReview or AdmissionRequest (YAML/JSON). When given, the
    /// object fields below are not used: the request is evaluated as it is.
    pub request: String,
    /// The object as sent (YAML/JSON); empty for a DELETE.
    pub object: String,
    /// The stored object (YAML/JSON), for UPDATE and DELETE.
    pub old_object: String,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`; empty infers it as
    /// `olm-guard run --object` does (UPDATE with an old object, else CREATE).
    pub operation: String,
    /// The namespace of the request, for an object that names none.
    pub namespace: String,
    /// The requester's user name.
    pub user: String,
    /// The requester's groups, separated by commas or new lines.
    pub groups: String,
    /// The settings (YAML/JSON mapping); empty for the defaults.
    pub settings: String,
    /// The cluster snapshot: multi-document YAML or a `List`, any kinds.
    pub cluster: String,
}

/// An input that cannot be evaluated: which field, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InputError {
    /// The input field to fix (`object`, `settings`, ...); empty when the
    /// fault is not in one field.
    pub field: String,
    /// What is wrong, and how to fix it.
    pub message: String,
}

impl InputError {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> InputError {
        InputError {
            field: field.into(),
            message: message.into(),
        }
    }

    /// `{"ok": false, "error": {"field", "message"}}`, the page's answer.
    pub fn into_answer(self) -> Value {
        json!({"ok": false, "error": self})
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// The YAML (or JSON) document in `text`; `None` when the text is blank.
fn document(field: &str, text: &str) -> Result<Option<Value>, InputError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let value: Value = serde_yaml_ng::from_str(text)
        .map_err(|e| InputError::new(field, format!("not valid YAML or JSON: {e}")))?;
    Ok((!value.is_null()).then_some(value))
}

impl Input {
    /// Reads the page's JSON document.
    pub fn parse(json: &str) -> Result<Input, InputError> {
        serde_json::from_str(json)
            .map_err(|e| InputError::new("input", format!("the inputs are not readable: {e}")))
    }

    /// The settings: a mapping; blank or `null` is `{}`, as Kubewarden
    /// passes a policy without settings.
    pub fn settings(&self) -> Result<Value, InputError> {
        match document("settings", &self.settings)? {
            None => Ok(json!({})),
            Some(v @ Value::Object(_)) => Ok(v),
            Some(_) => Err(InputError::new(
                "settings",
                "settings must be a mapping, e.g. `migrateLegacy: true`",
            )),
        }
    }

    /// The AdmissionRequest to evaluate: [`Input::request`] as given, or
    /// the one the API server would send for the object fields.
    pub fn request(&self) -> Result<Value, InputError> {
        if let Some(document) = document("request", &self.request)? {
            return admission_request(document);
        }
        let object = document("object", &self.object)?;
        let old_object = document("oldObject", &self.old_object)?;
        for (field, value) in [("object", &object), ("oldObject", &old_object)] {
            if value.as_ref().is_some_and(|v| !v.is_object()) {
                return Err(InputError::new(
                    field,
                    "a Kubernetes object is a mapping with apiVersion, kind and metadata",
                ));
            }
        }
        let operation = self.operation.trim();
        let namespace = self.namespace.trim();
        request_for_object(ObjectRequest {
            object,
            old_object,
            operation: (!operation.is_empty()).then(|| operation.to_string()),
            namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
            user: Requester {
                username: self.user.trim().to_string(),
                groups: self
                    .groups
                    .split([',', '\n'])
                    .map(str::trim)
                    .filter(|g| !g.is_empty())
                    .map(str::to_string)
                    .collect(),
            },
        })
        .map_err(object_error)
    }
}

/// The builder's errors in the page's words (its own name the CLI flags).
fn object_error(error: ObjectRequestError) -> InputError {
    match error {
        ObjectRequestError::NoObject => InputError::new(
            "object",
            "give an object or, for a DELETE, the stored object (old object)",
        ),
        ObjectRequestError::NoType(key) => InputError::new(
            "object",
            format!("the object has no {key}: a Kubernetes object names its apiVersion and kind"),
        ),
        ObjectRequestError::NamespaceMismatch { object, requested } => InputError::new(
            "namespace",
            format!(
                "the object's namespace \"{object}\" does not match the namespace \"{requested}\" (as kubectl refuses it)"
            ),
        ),
        ObjectRequestError::Operation(op) => InputError::new(
            "operation",
            format!("unknown operation {op:?}: use CREATE, UPDATE, DELETE or CONNECT"),
        ),
        ObjectRequestError::UpdateWithoutOld => InputError::new(
            "oldObject",
            "an UPDATE needs the stored object: fill in the old object",
        ),
    }
}

/// The AdmissionRequest of an AdmissionReview, or the request itself, as
/// `olm-guard run --request` reads it (crates/evaluator/src/input.rs,
/// `admission_request`).
fn admission_request(document: Value) -> Result<Value, InputError> {
    let request = match document {
        Value::Object(mut map)
            if map.contains_key("request")
                || map.get("kind").and_then(Value::as_str) == Some("AdmissionReview") =>
        {
            map.remove("request")
                .filter(Value::is_object)
                .ok_or_else(|| {
                    InputError::new("request", "the AdmissionReview has no request object")
                })?
        }
        v @ Value::Object(_) => v,
        _ => {
            return Err(InputError::new(
                "request",
                "expected an AdmissionReview or an AdmissionRequest mapping",
            ));
        }
    };
    if request.get("operation").and_then(Value::as_str).is_none() {
        let message = match request.get("kind").and_then(Value::as_str) {
            Some(kind) if request.get("apiVersion").is_some() => format!(
                "this is a {kind} object, not an AdmissionReview or AdmissionRequest: put it in the object editor"
            ),
            _ => "the AdmissionRequest has no operation (CREATE, UPDATE, DELETE or CONNECT)"
                .to_string(),
        };
        return Err(InputError::new("request", message));
    }
    Ok(request)
}
