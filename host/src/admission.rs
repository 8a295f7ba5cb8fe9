//! AdmissionReview in, AdmissionReview out.

use std::path::Path;

use anyhow::{Context, bail};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Reads a JSON or YAML file.
pub fn read_document(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_document(&text).with_context(|| format!("{} is neither JSON nor YAML", path.display()))
}

pub fn parse_document(text: &str) -> anyhow::Result<Value> {
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(_) => Ok(serde_yaml::from_str(text)?),
    }
}

/// The AdmissionRequest of a full AdmissionReview, or the request itself.
pub fn admission_request(document: Value) -> anyhow::Result<Value> {
    let request = match document {
        Value::Object(mut map)
            if map.get("kind").and_then(Value::as_str) == Some("AdmissionReview") =>
        {
            map.remove("request")
                .filter(Value::is_object)
                .context("the AdmissionReview has no request object")?
        }
        Value::Object(map) => Value::Object(map),
        _ => bail!("expected an AdmissionReview or an AdmissionRequest object"),
    };
    if request.get("operation").and_then(Value::as_str).is_none() {
        bail!("the AdmissionRequest has no operation (CREATE, UPDATE, DELETE or CONNECT)");
    }
    Ok(request)
}

/// Settings as Kubewarden passes them: an object; absent or null is `{}`.
pub fn settings_object(settings: Option<Value>) -> anyhow::Result<Value> {
    match settings {
        None | Some(Value::Null) => Ok(json!({})),
        Some(v @ Value::Object(_)) => Ok(v),
        Some(_) => bail!("settings must be an object"),
    }
}

/// The module's `validate` answer (SDK `ValidationResponse`, snake_case).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ValidationResponse {
    pub accepted: bool,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub code: Option<u16>,
    #[serde(default)]
    pub mutated_object: Option<Value>,
    #[serde(default)]
    pub audit_annotations: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default)]
    pub warnings: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

/// `admission.k8s.io/v1` AdmissionResponse.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_annotations: Option<std::collections::BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

impl AdmissionResponse {
    /// policy-evaluator's conversion: the mutated object becomes an RFC 6902
    /// patch against the request's object.
    pub fn from_validation(request: &Value, response: ValidationResponse) -> AdmissionResponse {
        let uid = request
            .get("uid")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let object = request.get("object").cloned().unwrap_or(Value::Null);
        let mut admission = AdmissionResponse {
            uid,
            allowed: response.accepted,
            status: (response.message.is_some() || response.code.is_some()).then_some(Status {
                message: response.message,
                code: response.code,
            }),
            audit_annotations: response.audit_annotations,
            warnings: response.warnings.filter(|w| !w.is_empty()),
            ..Default::default()
        };
        if let Some(mutated) = response.mutated_object {
            if object.is_null() {
                admission.allowed = false;
                admission.status = Some(Status {
                    message: Some(
                        "Incoming object is null, which happens only with DELETE operations, \
                         but the policy is attempting a mutation. This is not allowed"
                            .into(),
                    ),
                    code: None,
                });
            } else {
                let patch = json_patch::diff(&object, &mutated);
                if !patch.0.is_empty() {
                    let bytes = serde_json::to_vec(&patch).unwrap_or_default();
                    admission.patch_type = Some("JSONPatch".into());
                    admission.patch = Some(base64::engine::general_purpose::STANDARD.encode(bytes));
                }
            }
        }
        admission
    }

    /// The JSON Patch operations, decoded.
    pub fn decoded_patch(&self) -> anyhow::Result<Option<json_patch::Patch>> {
        let Some(patch) = &self.patch else {
            return Ok(None);
        };
        let bytes = base64::engine::general_purpose::STANDARD.decode(patch)?;
        Ok(Some(serde_json::from_slice(&bytes)?))
    }

    /// The request's object with the patch applied.
    pub fn patched_object(&self, request: &Value) -> anyhow::Result<Option<Value>> {
        let Some(patch) = self.decoded_patch()? else {
            return Ok(None);
        };
        let mut object = request.get("object").cloned().unwrap_or(Value::Null);
        json_patch::patch(&mut object, &patch).context("the module's patch does not apply")?;
        Ok(Some(object))
    }

    pub fn message(&self) -> &str {
        self.status
            .as_ref()
            .and_then(|s| s.message.as_deref())
            .unwrap_or("")
    }

    pub fn into_review(self) -> Value {
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": self,
        })
    }
}
