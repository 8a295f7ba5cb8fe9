//! The native objects this crate writes, as the fields of
//! `admissionregistration.k8s.io/v1` define them (kubernetes
//! `staging/src/k8s.io/api/admissionregistration/v1/types.go`). Only the
//! fields the generated policies use are modelled; the tests hand every
//! generated object to Kubernetes' own code, which reads it strictly (an
//! unknown field is refused) and compiles it (`tests/kube_apiserver.rs`).

use serde::{Deserialize, Serialize};

/// `metadata` of a generated object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Metadata {
    /// The object's name.
    pub name: String,
    /// Labels naming the rule the object was generated from.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub labels: std::collections::BTreeMap<String, String>,
    /// What the object enforces and what it leaves to the module, for a
    /// reader of `kubectl get -o yaml`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub annotations: std::collections::BTreeMap<String, String>,
}

/// A `ValidatingAdmissionPolicy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidatingAdmissionPolicy {
    /// `admissionregistration.k8s.io/v1`.
    pub api_version: String,
    /// `ValidatingAdmissionPolicy`.
    pub kind: String,
    /// Name, labels, annotations.
    pub metadata: Metadata,
    /// The policy.
    pub spec: PolicySpec,
}

/// `spec` of a ValidatingAdmissionPolicy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicySpec {
    /// `Fail` or `Ignore`: what an expression error or a failed
    /// authorizer call does. Always `Fail` here, so that nothing the
    /// policy cannot decide is let through.
    pub failure_policy: String,
    /// The kind each binding's `paramRef` selects, when the policy compares
    /// the request with other objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param_kind: Option<ParamKind>,
    /// Which requests the policy sees.
    pub match_constraints: MatchResources,
    /// Preconditions; a request failing one is not judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_conditions: Vec<NamedExpression>,
    /// Named sub-expressions, `variables.<name>` in the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variables: Vec<NamedExpression>,
    /// The checks.
    pub validations: Vec<Validation>,
}

impl PolicySpec {
    /// A policy that fails closed (`failurePolicy: Fail`: an expression
    /// error or a failed authorizer call denies), with no params and no
    /// match conditions.
    pub fn fail_closed(
        match_constraints: MatchResources,
        variables: Vec<NamedExpression>,
        validations: Vec<Validation>,
    ) -> Self {
        PolicySpec {
            failure_policy: "Fail".into(),
            param_kind: None,
            match_constraints,
            match_conditions: Vec::new(),
            variables,
            validations,
        }
    }
}

/// `paramKind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParamKind {
    /// The params' `apiVersion`.
    pub api_version: String,
    /// The params' `kind`.
    pub kind: String,
}

/// `matchConstraints` / `matchResources`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatchResources {
    /// The resources and operations matched.
    pub resource_rules: Vec<ResourceRule>,
}

/// One `resourceRules` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceRule {
    /// API groups; `*` for all.
    pub api_groups: Vec<String>,
    /// API versions; `*` for all.
    pub api_versions: Vec<String>,
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT` or `*`.
    pub operations: Vec<String>,
    /// Resources (`clusterroles`, `pods/status`); `*` for all.
    pub resources: Vec<String>,
}

/// A `{name, expression}` pair: a match condition or a variable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NamedExpression {
    /// The name.
    pub name: String,
    /// The CEL expression.
    pub expression: String,
}

/// One `validations` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Validation {
    /// A CEL expression that is true when the request passes.
    pub expression: String,
    /// The fixed message; also what the API server says when the
    /// `messageExpression` fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A CEL expression giving the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_expression: Option<String>,
    /// The HTTP reason of a denial: `Forbidden` for every validation here.
    /// (`Invalid` would be the apter word for a malformed object, but a
    /// ValidatingAdmissionPolicy's validation has no field path to give it,
    /// so kubectl prints `... is invalid: : ValidatingAdmissionPolicy ...`.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A `ValidatingAdmissionPolicyBinding`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidatingAdmissionPolicyBinding {
    /// `admissionregistration.k8s.io/v1`.
    pub api_version: String,
    /// `ValidatingAdmissionPolicyBinding`.
    pub kind: String,
    /// Name, labels.
    pub metadata: Metadata,
    /// The binding.
    pub spec: BindingSpec,
}

/// `spec` of a binding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BindingSpec {
    /// The policy bound.
    pub policy_name: String,
    /// `Deny`, `Warn` and/or `Audit`.
    pub validation_actions: Vec<String>,
    /// The params, for a policy with a `paramKind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param_ref: Option<ParamRef>,
}

/// `paramRef`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParamRef {
    /// Every object of the param kind this selector matches is a param;
    /// the policy is evaluated once per param.
    pub selector: serde_json::Value,
    /// `Allow` or `Deny` when no param matches.
    pub parameter_not_found_action: String,
}

/// A policy with its binding: what `kubectl apply` takes together.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundPolicy {
    /// The policy.
    pub policy: ValidatingAdmissionPolicy,
    /// Its one binding.
    pub binding: ValidatingAdmissionPolicyBinding,
}

impl BoundPolicy {
    /// A policy named `name` with a binding of the same name taking
    /// `actions` (`Deny`, `Warn`).
    pub fn new(name: &str, rule: &str, summary: &str, spec: PolicySpec, actions: &[&str]) -> Self {
        let labels = [(RULE_LABEL.to_string(), rule.to_string())].into();
        let annotations = [(SUMMARY_ANNOTATION.to_string(), summary.to_string())].into();
        BoundPolicy {
            policy: ValidatingAdmissionPolicy {
                api_version: API_VERSION.into(),
                kind: "ValidatingAdmissionPolicy".into(),
                metadata: Metadata {
                    name: name.into(),
                    labels,
                    annotations,
                },
                spec,
            },
            binding: ValidatingAdmissionPolicyBinding {
                api_version: API_VERSION.into(),
                kind: "ValidatingAdmissionPolicyBinding".into(),
                metadata: Metadata {
                    name: name.into(),
                    labels: [(RULE_LABEL.to_string(), rule.to_string())].into(),
                    annotations: Default::default(),
                },
                spec: BindingSpec {
                    policy_name: name.into(),
                    validation_actions: actions.iter().map(|a| a.to_string()).collect(),
                    param_ref: None,
                },
            },
        }
    }
}

/// A `MutatingAdmissionPolicy` (kubernetes `staging/src/k8s.io/api/
/// admissionregistration/v1/types.go`; the same fields in `v1beta1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MutatingAdmissionPolicy {
    /// [`MutatingApiVersion::as_str`].
    pub api_version: String,
    /// `MutatingAdmissionPolicy`.
    pub kind: String,
    /// Name, labels, annotations.
    pub metadata: Metadata,
    /// The policy.
    pub spec: MutatingPolicySpec,
}

/// `spec` of a MutatingAdmissionPolicy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MutatingPolicySpec {
    /// `Fail` or `Ignore`: what a mutation that cannot be applied does.
    pub failure_policy: String,
    /// Which requests the policy sees.
    pub match_constraints: MatchResources,
    /// Preconditions; a request failing one is not mutated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_conditions: Vec<NamedExpression>,
    /// Named sub-expressions, `variables.<name>` in the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variables: Vec<NamedExpression>,
    /// The mutations, applied in order.
    pub mutations: Vec<Mutation>,
    /// `Never` or `IfNeeded`: whether the policy runs again when a later
    /// mutation changed the object.
    pub reinvocation_policy: String,
}

/// One `mutations` entry: a JSON patch built by CEL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Mutation {
    /// `JSONPatch`.
    pub patch_type: String,
    /// The CEL expression giving the patch's operations.
    pub json_patch: JsonPatch,
}

/// `jsonPatch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JsonPatch {
    /// A list of `JSONPatch{op, path, value}`.
    pub expression: String,
}

/// A `MutatingAdmissionPolicyBinding`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MutatingAdmissionPolicyBinding {
    /// [`MutatingApiVersion::as_str`].
    pub api_version: String,
    /// `MutatingAdmissionPolicyBinding`.
    pub kind: String,
    /// Name, labels.
    pub metadata: Metadata,
    /// The binding.
    pub spec: MutatingBindingSpec,
}

/// `spec` of a MutatingAdmissionPolicyBinding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MutatingBindingSpec {
    /// The policy bound.
    pub policy_name: String,
}

/// The API versions that serve MutatingAdmissionPolicy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MutatingApiVersion {
    /// `admissionregistration.k8s.io/v1`: Kubernetes 1.36 and later (GA).
    #[default]
    V1,
    /// `admissionregistration.k8s.io/v1beta1`: Kubernetes 1.34 and 1.35,
    /// with the `MutatingAdmissionPolicy` feature gate and the v1beta1 API
    /// enabled.
    V1Beta1,
}

impl MutatingApiVersion {
    /// The `apiVersion`.
    pub fn as_str(self) -> &'static str {
        match self {
            MutatingApiVersion::V1 => API_VERSION,
            MutatingApiVersion::V1Beta1 => "admissionregistration.k8s.io/v1beta1",
        }
    }

    /// The Kubernetes versions that serve it, in words.
    pub fn served_by(self) -> &'static str {
        match self {
            MutatingApiVersion::V1 => "Kubernetes 1.36 and later",
            MutatingApiVersion::V1Beta1 => {
                "Kubernetes 1.34 and 1.35, with the MutatingAdmissionPolicy feature gate and \
                 the admissionregistration.k8s.io/v1beta1 API enabled"
            }
        }
    }
}

/// A mutating policy with its binding.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundMutation {
    /// The policy.
    pub policy: MutatingAdmissionPolicy,
    /// Its one binding.
    pub binding: MutatingAdmissionPolicyBinding,
}

impl BoundMutation {
    /// A policy named `name` with a binding of the same name, in the API
    /// version `v1`.
    pub fn new(name: &str, rule: &str, summary: &str, spec: MutatingPolicySpec) -> Self {
        let labels: std::collections::BTreeMap<String, String> =
            [(RULE_LABEL.to_string(), rule.to_string())].into();
        BoundMutation {
            policy: MutatingAdmissionPolicy {
                api_version: API_VERSION.into(),
                kind: "MutatingAdmissionPolicy".into(),
                metadata: Metadata {
                    name: name.into(),
                    labels: labels.clone(),
                    annotations: [(SUMMARY_ANNOTATION.to_string(), summary.to_string())].into(),
                },
                spec,
            },
            binding: MutatingAdmissionPolicyBinding {
                api_version: API_VERSION.into(),
                kind: "MutatingAdmissionPolicyBinding".into(),
                metadata: Metadata {
                    name: name.into(),
                    labels,
                    annotations: Default::default(),
                },
                spec: MutatingBindingSpec {
                    policy_name: name.into(),
                },
            },
        }
    }

    /// The same objects in `version`.
    pub fn in_version(mut self, version: MutatingApiVersion) -> Self {
        self.policy.api_version = version.as_str().into();
        self.binding.api_version = version.as_str().into();
        self
    }
}

/// `JSONPatch{op: ..., path: ..., value: ...}` as CEL writes it in a
/// mutation; `path` and `value` are CEL expressions.
pub fn json_patch_op(op: &str, path: &str, value: Option<&str>) -> String {
    match value {
        Some(value) => format!("JSONPatch{{op: '{op}', path: {path}, value: {value}}}"),
        None => format!("JSONPatch{{op: '{op}', path: {path}}}"),
    }
}

/// The API version of every generated admission object: GA since
/// Kubernetes 1.30.
pub const API_VERSION: &str = "admissionregistration.k8s.io/v1";
/// The label naming the olm-guard rule an object was generated from.
pub const RULE_LABEL: &str = "olm-guard.io/rule";
/// The annotation saying what a generated policy enforces.
pub const SUMMARY_ANNOTATION: &str = "olm-guard.io/enforces";

/// `resourceRules` for `operations` on one resource, in the version the
/// policy's expressions are written for. A named version (not `*`) is what
/// lets the API server's type checker check the expressions against the
/// kind's schema (`status.typeChecking`; it gives up on wildcards); with
/// the default `matchPolicy: Equivalent`, requests for the resource in
/// another version still match, their objects converted to this one.
pub fn rule_for(group: &str, version: &str, resource: &str, operations: &[&str]) -> ResourceRule {
    ResourceRule {
        api_groups: vec![group.into()],
        api_versions: vec![version.into()],
        operations: operations.iter().map(|o| o.to_string()).collect(),
        resources: vec![resource.into()],
    }
}

/// A `{name, expression}` pair.
pub fn named(name: &str, expression: &str) -> NamedExpression {
    NamedExpression {
        name: name.into(),
        expression: expression.into(),
    }
}
