//! `scaffold vap --actions warn`: the roll-out form of every rule's
//! policies, evaluated as the API server evaluates them, admits what the
//! Deny form refuses, with the refusal as a warning.

use std::sync::Arc;

use serde_json::{Value, json};

use olm_guard_core::UserInfo;
use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_native::admission::{NoParams, Outcome, Policies};
use olm_guard_native::authorizer::{Authorize, AuthorizerError};
use olm_guard_native::{generate, policies::rules};

/// An authorizer that grants nothing.
struct Nobody;

impl Authorize for Nobody {
    fn resource(&self, _: &UserInfo, _: &ResourceAttributes) -> Result<bool, AuthorizerError> {
        Ok(false)
    }

    fn non_resource(&self, _: &UserInfo, _: &str, _: &str) -> Result<bool, AuthorizerError> {
        Ok(false)
    }
}

/// A revision of group widget-operator, created by someone who may manage
/// no group.
fn revision_by_alice() -> Value {
    let kind =
        json!({"group": "olm.operatorframework.io", "version": "v1", "kind": "ClusterObjectSet"});
    json!({
        "uid": "1", "kind": kind, "requestKind": kind, "name": "widget-operator-1",
        "resource": {"group": "olm.operatorframework.io", "version": "v1", "resource": "clusterobjectsets"},
        "operation": "CREATE",
        "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
        "object": {
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
            "metadata": {"name": "widget-operator-1",
                         "labels": {"olm.operatorframework.io/owner-name": "widget-operator"}},
            "spec": {"revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent"},
        },
    })
}

#[test]
fn the_warn_form_admits_what_the_deny_form_refuses_with_the_refusal_as_a_warning() {
    let native = generate("group-authorization", &Value::Null, None).unwrap();
    let request = revision_by_alice();
    let deny = Policies::compile(&native.policies).unwrap();
    let Outcome::Denied { message } = deny.evaluate(&request, Arc::new(Nobody), &NoParams) else {
        panic!("the Deny form admits a revision alice may not manage");
    };
    let warn = Policies::compile(&native.warn_only().policies).unwrap();
    match warn.evaluate(&request, Arc::new(Nobody), &NoParams) {
        Outcome::Allowed { warnings } => {
            let refusal = message
                .split_once("denied request: ")
                .map(|(_, m)| m)
                .unwrap();
            assert!(
                warnings.iter().any(|w| w.ends_with(refusal)),
                "{warnings:?} does not carry {refusal}"
            );
        }
        other => panic!("the Warn form does not admit: {other:?}"),
    }
}

#[test]
fn no_binding_of_the_warn_form_denies_and_it_patches_no_crd() {
    for rule in rules() {
        let Ok(native) = generate(rule, &Value::Null, None) else {
            continue;
        };
        let warn = native.warn_only();
        assert!(warn.schema_patches.is_empty(), "{rule}");
        for bound in &warn.policies {
            let actions = &bound.binding.spec.validation_actions;
            assert!(!actions.iter().any(|a| a == "Deny"), "{rule}: {actions:?}");
            assert!(actions.iter().any(|a| a == "Warn"), "{rule}: {actions:?}");
        }
    }
}
