//! kubewarden-controller's `crates/policy-evaluator`, the parts a waPC
//! module's answer goes through on its way to the API server, restated
//! here (file and function named on each) so that olm-guard's
//! `olm_guard_core::response::AdmissionResponse::from_validation` is
//! checked against them rather than used for both hosts.
//!
//! The real policy-server now answers every scenario it can be given
//! (`tests/webhook/`: its own answer to a direct `POST /validate/<policy>`
//! is compared with this restatement's, 419 of 419, and kube-apiserver's
//! answer with the module's). The restatement stays for what policy-server
//! cannot be given there: settings a module refuses (policy-server does not
//! start with them, so the refusal is only this restatement's and the
//! module's), requests for kinds the test cluster does not serve, the
//! audit's `validate_batch` operation (policy-server never calls it), and
//! the reference waPC host's run of every scenario without a cluster
//! (`reference_host.rs`), which needs no policy-server build.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use kubewarden_policy_sdk::response::ValidationResponse as SdkValidationResponse;
use olm_guard_core::response::{AdmissionResponse, Status};

/// policy-evaluator's `AdmissionRequest`, field for field
/// (`crates/policy-evaluator/src/admission_request.rs`): what survives the
/// round trip through it is what a module receives from policy-server.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct KubewardenAdmissionRequest {
    pub uid: String,
    pub kind: GroupVersionKind,
    pub resource: GroupVersionResource,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_kind: Option<GroupVersionKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_resource: Option<GroupVersionResource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_sub_resource: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub operation: String,
    pub user_info: UserInfo,
    /// A `RawExtension` (any JSON); `null` reads as absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
}

/// A group, version and kind.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

/// A group, version and resource.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct GroupVersionResource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

/// k8s-openapi's `authentication::v1::UserInfo`: every field optional and
/// left out when absent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct UserInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<BTreeMap<String, Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
}

/// `AdmissionResponse::from_policy_validation_response`
/// (`crates/policy-evaluator/src/admission_response.rs`).
pub fn from_policy_validation_response(
    uid: String,
    req_obj: Option<&Value>,
    answer: &SdkValidationResponse,
) -> anyhow::Result<AdmissionResponse> {
    if answer.mutated_object.is_some() && req_obj.is_none() {
        return Ok(AdmissionResponse {
            uid,
            allowed: false,
            status: Some(Status {
                message: Some(
                    "Incoming object is null, which happens only with DELETE operations, but the policy is attempting a mutation. This is not allowed".into(),
                ),
                code: None,
            }),
            ..Default::default()
        });
    }
    let patch = match (&answer.mutated_object, req_obj) {
        (Some(mutated), Some(object)) => {
            let diff = json_patch::diff(object, mutated);
            if diff.0.is_empty() {
                None
            } else {
                Some(
                    base64::engine::general_purpose::STANDARD.encode(serde_json::to_string(&diff)?),
                )
            }
        }
        _ => None,
    };
    let status = (answer.message.is_some() || answer.code.is_some()).then(|| Status {
        message: answer.message.clone(),
        code: answer.code,
    });
    Ok(AdmissionResponse {
        uid,
        allowed: answer.accepted,
        status,
        patch_type: patch.as_ref().map(|_| "JSONPatch".to_string()),
        patch,
        audit_annotations: answer
            .audit_annotations
            .as_ref()
            .map(|a| a.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        warnings: answer.warnings.clone(),
    })
}

/// `AdmissionResponse::reject_internal_server_error`
/// (`crates/policy-evaluator/src/admission_response.rs`).
pub fn reject_internal_server_error(uid: String, message: String) -> AdmissionResponse {
    AdmissionResponse {
        uid,
        allowed: false,
        status: Some(Status {
            message: Some(format!("internal server error: {message}")),
            code: Some(500),
        }),
        ..Default::default()
    }
}

/// `AdmissionResponseHandler::apply_mutation_constraint`
/// (`crates/policy-evaluator/src/admission_response_handler.rs`), in the
/// default `protect` mode: a policy that may not mutate and answers with a
/// patch is a rejection.
pub fn apply_mutation_constraint(
    policy_id: &str,
    allowed_to_mutate: bool,
    response: AdmissionResponse,
) -> AdmissionResponse {
    if allowed_to_mutate || response.patch.is_none() {
        return response;
    }
    AdmissionResponse {
        allowed: false,
        status: Some(Status {
            message: Some(format!(
                "Request rejected by policy {policy_id}. The policy attempted to mutate the request, but it is currently configured to not allow mutations."
            )),
            code: None,
        }),
        patch: None,
        patch_type: None,
        ..response
    }
}
