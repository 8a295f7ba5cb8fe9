//! Verdict → `admission.k8s.io/v1` AdmissionResponse, as Kubewarden's
//! policy-evaluator builds it (kubewarden/policy-evaluator,
//! `src/admission_response.rs`, `AdmissionResponse::from_policy_validation_response`):
//! a mutated object becomes an RFC 6902 JSON Patch against the request's
//! object. Behind the `response` feature so policy modules do not carry the
//! patch machinery.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Verdict;

/// A module's `validate` answer (the SDK's `ValidationResponse`, snake_case).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ValidationResponse {
    /// Whether the request is admitted.
    pub accepted: bool,
    /// Why not, or a note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// HTTP-like status code of a rejection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    /// The whole object after mutation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutated_object: Option<Value>,
    /// Audit annotations to record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_annotations: Option<BTreeMap<String, String>>,
    /// Warnings returned to the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

impl From<Verdict> for ValidationResponse {
    fn from(verdict: Verdict) -> Self {
        ValidationResponse {
            accepted: verdict.allowed,
            message: verdict.message,
            code: verdict.code,
            mutated_object: verdict.mutated_object,
            audit_annotations: None,
            warnings: (!verdict.warnings.is_empty()).then_some(verdict.warnings),
        }
    }
}

/// Why a response's patch could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// `patch` is not base64.
    #[error("the patch is not base64")]
    Base64(#[from] base64::DecodeError),
    /// The decoded patch is not an RFC 6902 JSON Patch.
    #[error("the patch is not a JSON Patch")]
    Json(#[from] serde_json::Error),
    /// The patch does not apply to the request's object.
    #[error("the module's patch does not apply")]
    Apply(#[from] json_patch::PatchError),
}

/// The `status` of a response: the rejection's message and code.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The message shown to the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The HTTP-like status code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

/// `admission.k8s.io/v1` AdmissionResponse.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    /// The request's `uid`.
    pub uid: String,
    /// Whether the request is admitted.
    pub allowed: bool,
    /// Message and code of a rejection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// `JSONPatch` when [`AdmissionResponse::patch`] is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    /// The base64 RFC 6902 patch of a mutation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// Audit annotations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_annotations: Option<BTreeMap<String, String>>,
    /// Warnings returned to the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

impl AdmissionResponse {
    /// policy-server's mutation constraint, for a policy it is not allowed to
    /// mutate with (`mutating: false`): a response that carries a patch is
    /// turned into a rejection with policy-server's own message, and the patch
    /// is dropped (a validating webhook must not send one). Anything else is
    /// left as it is. kubewarden/kubewarden-controller,
    /// `crates/policy-server/src/evaluation/admission_response_handler.rs`
    /// (`AdmissionResponseHandler::apply_mutation_constraint`).
    ///
    /// ```
    /// use olm_guard_core::response::AdmissionResponse;
    ///
    /// let patched = AdmissionResponse {
    ///     allowed: true,
    ///     patch_type: Some("JSONPatch".into()),
    ///     patch: Some("W10=".into()),
    ///     ..Default::default()
    /// };
    /// let refused = patched.refusing_mutation("catalog-union");
    /// assert!(!refused.allowed && refused.patch.is_none());
    /// assert!(refused.message().contains("configured to not allow mutations"));
    /// ```
    pub fn refusing_mutation(self, policy_id: &str) -> AdmissionResponse {
        if self.patch.is_none() {
            return self;
        }
        AdmissionResponse {
            allowed: false,
            status: Some(Status {
                message: Some(format!(
                    "Request rejected by policy {policy_id}. The policy attempted to mutate the \
                     request, but it is currently configured to not allow mutations."
                )),
                code: None,
            }),
            patch: None,
            patch_type: None,
            ..self
        }
    }

    /// policy-evaluator's conversion: the mutated object becomes an RFC 6902
    /// patch against the request's object.
    pub fn from_validation(request: &Value, response: ValidationResponse) -> AdmissionResponse {
        let uid = request
            .get("uid")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        // Borrowed: only a mutation reads it, and a deep copy of the object
        // on every evaluation was a measurable part of a small request's
        // cost (docs/performance.md, "Against Kubewarden's waPC host").
        let object = request.get("object").unwrap_or(&Value::Null);
        let mut admission = AdmissionResponse {
            uid,
            allowed: response.accepted,
            status: (response.message.is_some() || response.code.is_some()).then_some(Status {
                message: response.message,
                code: response.code,
            }),
            audit_annotations: response.audit_annotations,
            // Kept as the module sent it, an empty list included, as
            // policy-evaluator's `AdmissionResponse::from_policy_validation_response`
            // (kubewarden-controller `crates/policy-evaluator/src/admission_response.rs`)
            // keeps it.
            warnings: response.warnings,
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
                let patch = json_patch::diff(object, &mutated);
                if !patch.0.is_empty() {
                    let bytes = serde_json::to_vec(&patch).unwrap_or_default();
                    admission.patch_type = Some("JSONPatch".into());
                    admission.patch = Some(base64::engine::general_purpose::STANDARD.encode(bytes));
                }
            }
        }
        admission
    }

    /// [`AdmissionResponse::from_validation`] for a verdict reached natively.
    pub fn from_verdict(request: &Value, verdict: Verdict) -> AdmissionResponse {
        AdmissionResponse::from_validation(request, verdict.into())
    }

    /// The JSON Patch operations, decoded.
    pub fn decoded_patch(&self) -> Result<Option<json_patch::Patch>, PatchError> {
        let Some(patch) = &self.patch else {
            return Ok(None);
        };
        let bytes = base64::engine::general_purpose::STANDARD.decode(patch)?;
        Ok(Some(serde_json::from_slice(&bytes)?))
    }

    /// The request's object with the patch applied.
    pub fn patched_object(&self, request: &Value) -> Result<Option<Value>, PatchError> {
        let Some(patch) = self.decoded_patch()? else {
            return Ok(None);
        };
        let mut object = request.get("object").cloned().unwrap_or(Value::Null);
        json_patch::patch(&mut object, &patch)?;
        Ok(Some(object))
    }

    /// The rejection's message, or `""`.
    pub fn message(&self) -> &str {
        self.status
            .as_ref()
            .and_then(|s| s.message.as_deref())
            .unwrap_or("")
    }

    /// The response wrapped in an `admission.k8s.io/v1` AdmissionReview.
    pub fn into_review(self) -> Value {
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": self,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn answer(warnings: Option<Vec<String>>) -> Value {
        let response = ValidationResponse {
            accepted: true,
            message: None,
            code: None,
            mutated_object: None,
            audit_annotations: None,
            warnings,
        };
        serde_json::to_value(AdmissionResponse::from_validation(
            &json!({"uid": "u"}),
            response,
        ))
        .unwrap()
    }

    /// policy-server sends the warnings a module sent, an empty list as an
    /// empty list, and leaves the field out when the module did.
    #[test]
    fn warnings_are_kept_as_the_module_sent_them() {
        assert_eq!(answer(Some(vec![]))["warnings"], json!([]));
        assert_eq!(answer(Some(vec!["w".into()]))["warnings"], json!(["w"]));
        assert!(answer(None).get("warnings").is_none());
    }
}
