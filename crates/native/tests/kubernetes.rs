//! What olm-guard's own evaluator (the one `olm-guard` runs) needs of the
//! generated policies: every expression parses for it, and no authorizer
//! check runs once per element of a list (a cost that grows with the
//! object; the runtime cost itself is measured by
//! `olm_guard_native::admission::Policies::evaluate_detailed`). That
//! Kubernetes takes every generated object (its fields, its expressions in
//! each version's environment, the order of its variables) is
//! `kube_apiserver.rs`'s, asked of Kubernetes' own code.

use serde_json::Value;

use olm_guard_native::admission::Policies;
use olm_guard_native::cost;
use olm_guard_native::generate;
use olm_guard_native::model::BoundPolicy;

mod common;

use common::every_native_form;

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
fn every_expression_parses_and_no_check_runs_per_element() {
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
