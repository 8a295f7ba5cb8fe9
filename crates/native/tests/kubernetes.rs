//! Every generated object is a Kubernetes object: it reads as k8s-openapi's
//! `admissionregistration.k8s.io/v1` types and writes back the same JSON (so
//! no field is unknown to Kubernetes), every expression compiles, and no
//! authorizer check runs once per element of a list (a cost that grows
//! with the object; the runtime cost itself is measured by
//! `olm_guard_native::admission::Policies::evaluate_detailed`).

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use serde_json::{Value, json};

use olm_guard_native::admission::{Policies, RuleError, evaluate_crd_rule};
use olm_guard_native::cost;
use olm_guard_native::generate;
use olm_guard_native::model::BoundPolicy;

mod common;

use common::every_native_form;

/// `value` read as `T` and written back: equal to `value` when every field
/// is one Kubernetes knows.
fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(value: &Value) -> Value {
    let typed: T = serde_json::from_value(value.clone()).expect("reads as the Kubernetes type");
    serde_json::to_value(typed).unwrap()
}

#[test]
fn generated_objects_are_kubernetes_admissionregistration_v1() {
    for native in every_native_form() {
        for bound in &native.policies {
            let policy = serde_json::to_value(&bound.policy).unwrap();
            assert_eq!(
                round_trip::<ValidatingAdmissionPolicy>(&policy),
                policy,
                "{}: a field Kubernetes does not know",
                bound.policy.metadata.name
            );
            let binding = serde_json::to_value(&bound.binding).unwrap();
            assert_eq!(
                round_trip::<ValidatingAdmissionPolicyBinding>(&binding),
                binding,
                "{}: a field Kubernetes does not know",
                bound.binding.metadata.name
            );
            assert_eq!(bound.binding.spec.policy_name, bound.policy.metadata.name);
            assert_eq!(
                bound.policy.spec.param_kind.is_some(),
                bound.binding.spec.param_ref.is_some()
            );
        }
    }
}

/// Every expression of `bound` that writes an authorizer check inside a
/// comprehension.
fn checks_in_comprehensions(bound: &BoundPolicy) -> Vec<String> {
    let spec = &bound.policy.spec;
    spec.variables
        .iter()
        .map(|v| (format!("variables.{}", v.name), &v.expression))
        .chain(
            spec.validations
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("validations[{i}].expression"), &v.expression)),
        )
        .filter(|(_, expression)| cost::checks_written(expression).1)
        .map(|(field, _)| field)
        .collect()
}

#[test]
fn every_expression_compiles_and_no_check_runs_per_element() {
    for native in every_native_form() {
        Policies::compile(&native.policies).unwrap_or_else(|e| panic!("{}: {e}", native.rule));
        for bound in &native.policies {
            let name = &bound.policy.metadata.name;
            let found = checks_in_comprehensions(bound);
            assert!(
                found.is_empty(),
                "{name}: an authorizer check inside a comprehension in {found:?}"
            );
        }
        for patch in &native.schema_patches {
            for rule in &patch.rules {
                // Compiles, and gives a bool on an empty spec.
                let result = evaluate_crd_rule(rule, &json!({"sourceType": "grpc"}), None);
                assert!(
                    !matches!(&result, Err(RuleError::Compile(_))),
                    "{}: {result:?}",
                    patch.file
                );
            }
        }
    }
}

#[test]
fn a_comprehension_of_checks_is_found() {
    let mut native = generate("group-authorization", &Value::Null, None).unwrap();
    let validation = &mut native.policies[0].policy.spec.validations[0];
    validation.expression =
        "['a', 'b', 'c'].all(g, authorizer.group(g).resource('r').check('get').allowed())".into();
    assert_eq!(
        checks_in_comprehensions(&native.policies[0]),
        ["validations[0].expression"]
    );
}

/// The API server lets a variable read only the variables before it.
#[test]
fn variables_read_only_earlier_variables() {
    for native in every_native_form() {
        for bound in &native.policies {
            let variables = &bound.policy.spec.variables;
            for (i, variable) in variables.iter().enumerate() {
                for later in &variables[i..] {
                    let reference = format!("variables.{}", later.name);
                    let reads = variable
                        .expression
                        .match_indices(&reference)
                        .any(|(at, _)| {
                            !variable.expression[at + reference.len()..]
                                .starts_with(|c: char| c.is_alphanumeric() || c == '_')
                        });
                    assert!(
                        !reads,
                        "{}: variable {} reads {reference}, defined at or after it",
                        bound.policy.metadata.name, variable.name
                    );
                }
            }
        }
    }
}
