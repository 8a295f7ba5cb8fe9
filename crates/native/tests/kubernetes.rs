//! Every generated object is a Kubernetes object: it reads as k8s-openapi's
//! `admissionregistration.k8s.io/v1` types and writes back the same JSON (so
//! no field is unknown to Kubernetes), every expression compiles, and every
//! expression's authorizer checks stay within the API server's per-expression
//! limit, the whole policy within its per-evaluation budget.

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use serde_json::{Value, json};

use olm_guard_native::admission::{Policies, evaluate_crd_rule};
use olm_guard_native::cost::{self, RUNTIME_BUDGET};
use olm_guard_native::policies::{GenerateError, RULES};
use olm_guard_native::{Native, generate};

/// Each rule's native form with its default settings and with every
/// setting the native form honours turned on.
fn every_native_form() -> Vec<Native> {
    let variants = [
        json!(null),
        json!({"warnLegacy": true}),
        json!({"allowLegacy": false}),
        json!({"requireNameSuffix": true}),
        json!({"forbidClusterScopedResources": true}),
        json!({"allowFeeding": ["admin"]}),
    ];
    let mut forms = Vec::new();
    for rule in RULES {
        for settings in &variants {
            match generate(rule, settings, None) {
                Ok(native) => forms.push(native),
                Err(GenerateError::Settings { .. } | GenerateError::ModuleOnly { .. }) => {}
                Err(e) => panic!("{rule} {settings}: {e}"),
            }
        }
    }
    assert!(forms.len() >= 9, "only {} native forms", forms.len());
    forms
}

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

#[test]
fn every_expression_compiles_and_stays_within_the_cost_limits() {
    for native in every_native_form() {
        Policies::compile(&native.policies).unwrap_or_else(|e| panic!("{}: {e}", native.rule));
        for bound in &native.policies {
            let name = &bound.policy.metadata.name;
            for estimate in cost::estimate(bound) {
                assert!(
                    estimate.within_limit(),
                    "{name} {}: {} authorizer checks{} cost up to {} of {}",
                    estimate.field,
                    estimate.checks,
                    if estimate.in_comprehension {
                        ", one in a comprehension,"
                    } else {
                        ""
                    },
                    estimate.worst_case(),
                    cost::PER_CALL_LIMIT
                );
            }
            let worst = cost::worst_case_evaluation(bound).expect("bounded");
            assert!(
                worst <= RUNTIME_BUDGET,
                "{name}: {worst} > {RUNTIME_BUDGET}"
            );
        }
        for patch in &native.schema_patches {
            for rule in &patch.rules {
                // Compiles, and gives a bool on an empty spec.
                let result = evaluate_crd_rule(rule, &json!({"sourceType": "grpc"}), None);
                assert!(
                    !matches!(&result, Err(e) if e.contains("Syntax")),
                    "{}: {result:?}",
                    patch.file
                );
            }
        }
    }
}

#[test]
fn a_comprehension_of_checks_is_refused_by_the_estimate() {
    let mut native = generate("group-authorization", &Value::Null, None).unwrap();
    let validation = &mut native.policies[0].policy.spec.validations[0];
    validation.expression =
        "['a', 'b', 'c'].all(g, authorizer.group(g).resource('r').check('get').allowed())".into();
    let estimates = cost::estimate(&native.policies[0]);
    assert!(estimates.iter().any(|e| !e.within_limit()));
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
