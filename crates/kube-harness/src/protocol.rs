//! The harness's protocol: every message the client writes or reads. Its
//! other half is `go/protocol.go`, the same messages in Go.
//!
//! Neither side takes the other's word for a field. The program reads each
//! request exactly (a field it does not know, or one of its own that is
//! missing, refuses the request, naming the field); the client reads each
//! answer the same way: every message here denies unknown fields and
//! defaults none (an optional field is written as `null`, and is required
//! to be there). A field renamed or added on one side fails the first
//! exchange with the field's name instead of quietly weakening a check.
//! [`PROTOCOL_VERSION`] names this set of messages: [`crate::KubeHarness::start`]
//! asks the program for its version first and refuses another.
//!
//! One line each way: `{"op": ..., "args": {...}}` in, `{"answer": ...,
//! "error": null}` or `{"answer": null, "error": "..."}` out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The version of these messages, `protocolVersion` in `go/protocol.go`;
/// the two change together.
pub const PROTOCOL_VERSION: u32 = 2;

/// One request line: the op and its arguments.
#[derive(Debug, Serialize)]
pub(crate) struct Request<'a, A: Serialize> {
    pub(crate) op: &'static str,
    pub(crate) args: &'a A,
}

/// One reply line: the answer, or why there is none; both always written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, bound(deserialize = "T: Deserialize<'de>"))]
pub(crate) struct Reply<T> {
    // `deserialize_with` makes an `Option` field required: serde's derive
    // otherwise reads a missing `Option` as `None`.
    #[serde(deserialize_with = "Option::deserialize")]
    pub(crate) answer: Option<T>,
    #[serde(deserialize_with = "Option::deserialize")]
    pub(crate) error: Option<String>,
}

/// `hello`'s arguments: none.
#[derive(Debug, Serialize)]
pub(crate) struct Hello {}

/// What `hello` answers.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HelloAnswer {
    pub(crate) protocol: u32,
}

/// `compile`'s arguments.
#[derive(Debug, Serialize)]
pub(crate) struct Compile<'a> {
    pub(crate) policy: &'a Value,
    pub(crate) versions: &'a [&'a str],
    pub(crate) crds: &'a [Value],
}

/// `crdUpdate`'s arguments.
#[derive(Debug, Serialize)]
pub(crate) struct CrdUpdateRequest<'a> {
    pub(crate) old: &'a Value,
    pub(crate) new: &'a Value,
    pub(crate) versions: &'a [&'a str],
}

/// What compiling a policy said.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Compiled {
    /// Per compatibility version, the field errors that refuse the policy.
    pub errors: BTreeMap<String, Vec<String>>,
    /// The type checker's warnings (`status.typeChecking`).
    pub type_checking: Vec<ExpressionWarning>,
    /// The matched kinds the type checker had a schema for (empty for a
    /// binding or a MutatingAdmissionPolicy, which are not type-checked).
    pub type_checked_kinds: Vec<String>,
}

/// One `status.typeChecking.expressionWarnings` entry.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpressionWarning {
    /// The expression's field (`spec.validations[0].expression`).
    pub field_ref: String,
    /// What the checker found.
    pub warning: String,
}

/// What validating a CRD update said.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrdUpdate {
    /// `ValidateCustomResourceDefinitionUpdate`'s errors.
    pub errors: Vec<String>,
    /// Per compatibility version, the rules that do not compile.
    pub rule_errors: BTreeMap<String, Vec<String>>,
    /// How many rules the new CRD has.
    pub rules: usize,
}

/// One write: the request and the cluster it meets (`admit`'s arguments).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Admit {
    /// The AdmissionRequest (its object and oldObject as sent and stored).
    pub request: Value,
    /// The CRDs served (the request's kind, params).
    pub crds: Vec<Value>,
    /// ValidatingAdmissionPolicies.
    pub validating_policies: Vec<Value>,
    /// Their bindings.
    pub validating_bindings: Vec<Value>,
    /// MutatingAdmissionPolicies.
    pub mutating_policies: Vec<Value>,
    /// Their bindings.
    pub mutating_bindings: Vec<Value>,
    /// The cluster's objects (params, namespaces).
    pub objects: Vec<Value>,
    /// The authorizer's answers; a check not among them fails the case.
    pub authorizer: Vec<AuthorizerAnswer>,
}

/// One authorizer answer.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizerAnswer {
    /// The user asked about.
    pub user: String,
    /// Its groups.
    pub groups: Vec<String>,
    /// The verb.
    pub verb: String,
    /// The namespace (resource checks).
    pub namespace: String,
    /// The API group (resource checks).
    pub api_group: String,
    /// The resource.
    pub resource: String,
    /// The subresource.
    pub subresource: String,
    /// The object's name.
    pub name: String,
    /// The non-resource URL (non-resource checks).
    pub path: String,
    /// The answer.
    pub allowed: bool,
    /// An authorizer that could not answer: its error.
    pub error: String,
}

/// A status the API server answers with.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Status {
    /// The message.
    pub message: String,
    /// The reason (`Forbidden`, `Invalid`).
    pub reason: String,
    /// The HTTP code.
    pub code: i32,
}

/// How the write went (`admit`'s answer). Every field is required; the
/// optional ones arrive as `null` when they do not apply.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Admitted {
    /// Refused before admission (an undecodable body), why.
    #[serde(deserialize_with = "Option::deserialize")]
    pub refused: Option<String>,
    /// Fields the decoder pruned.
    pub unknown_fields: Vec<String>,
    /// The object as admission saw it (after the mutating policies).
    pub object: Value,
    /// The stored object as admission saw it.
    pub old_object: Value,
    /// Whether a mutating policy changed the object.
    pub mutated: bool,
    /// The mutated object as its CRD would store it.
    #[serde(deserialize_with = "Option::deserialize")]
    pub pruned_object: Option<Value>,
    /// A mutating policy's failure.
    #[serde(deserialize_with = "Option::deserialize")]
    pub mutation_error: Option<Status>,
    /// The schema's refusal (OpenAPI schema, x-kubernetes-validations).
    #[serde(deserialize_with = "Option::deserialize")]
    pub schema_error: Option<Status>,
    /// The validating policies admitted it.
    pub allowed: bool,
    /// Their denial.
    #[serde(deserialize_with = "Option::deserialize")]
    pub status: Option<Status>,
    /// The warnings of the mutating policies and the schema (a CRD rule
    /// ratcheted on an UPDATE that leaves a failing value as stored).
    pub schema_warnings: Vec<String>,
    /// The validating policies' warnings (a client reads the schema's,
    /// then these).
    pub warnings: Vec<String>,
    /// Audit annotations.
    pub audit_annotations: BTreeMap<String, String>,
    /// Authorizer checks the table did not answer.
    pub unasked: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An `admit` answer as the program writes it when nothing applies.
    fn admitted() -> Value {
        json!({
            "refused": null, "unknownFields": [], "object": {"kind": "CatalogSource"},
            "oldObject": null, "mutated": false, "prunedObject": null,
            "mutationError": null, "schemaError": null, "allowed": true, "status": null,
            "schemaWarnings": [], "warnings": [], "auditAnnotations": {}, "unasked": [],
        })
    }

    #[test]
    fn an_answer_is_read_whole() {
        let read: Admitted = serde_json::from_value(admitted()).unwrap();
        assert!(read.allowed && read.refused.is_none() && read.status.is_none());
    }

    #[test]
    fn a_field_the_client_does_not_know_refuses_the_answer() {
        let mut answer = admitted();
        answer["allowedd"] = json!(true);
        let error = serde_json::from_value::<Admitted>(answer).unwrap_err();
        assert!(
            error.to_string().contains("unknown field `allowedd`"),
            "{error}"
        );
    }

    #[test]
    fn a_missing_field_refuses_the_answer_even_an_optional_one() {
        for field in ["allowed", "warnings", "status", "refused", "prunedObject"] {
            let mut answer = admitted();
            answer.as_object_mut().unwrap().remove(field);
            let error = serde_json::from_value::<Admitted>(answer).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains(&format!("missing field `{field}`")),
                "{field}: {error}"
            );
        }
    }

    #[test]
    fn a_reply_holds_both_its_fields() {
        let ok: Reply<HelloAnswer> =
            serde_json::from_value(json!({"answer": {"protocol": 2}, "error": null})).unwrap();
        assert_eq!(ok.answer.map(|a| a.protocol), Some(2));
        // The protocol-1 reply: a bare error, no answer field.
        let old = serde_json::from_value::<Reply<HelloAnswer>>(json!({"error": "unknown op"}));
        assert!(
            old.unwrap_err()
                .to_string()
                .contains("missing field `answer`")
        );
    }

    #[test]
    fn a_request_writes_every_field() {
        let admit = serde_json::to_value(Request {
            op: "admit",
            args: &Admit::default(),
        })
        .unwrap();
        let mut args: Vec<&str> = admit["args"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        args.sort_unstable();
        assert_eq!(
            args,
            [
                "authorizer",
                "crds",
                "mutatingBindings",
                "mutatingPolicies",
                "objects",
                "request",
                "validatingBindings",
                "validatingPolicies"
            ]
        );
    }
}
