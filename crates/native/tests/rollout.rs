//! `scaffold vap --actions warn`: the roll-out form of every rule's
//! policies, run by Kubernetes' own admission code
//! (`olm_guard_kube_harness`), admits what the Deny form refuses, with the
//! refusal as a warning.

mod common;

use serde_json::{Value, json};

use olm_guard_kube_harness::{AuthorizerAnswer, KubeHarness};
use olm_guard_native::{generate, policies::rules};

use common::admitted;

/// An authorizer that grants nothing.
fn nobody(_: &AuthorizerAnswer) -> Result<bool, String> {
    Ok(false)
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
    let mut kube = KubeHarness::start().unwrap_or_else(|e| panic!("{e}"));
    let native = generate("group-authorization", &Value::Null, None).unwrap();
    let (deny, _) = admitted(&mut kube, &native, revision_by_alice(), &mut nobody);
    let Some(status) = deny.status.filter(|_| !deny.allowed) else {
        panic!("the Deny form admits a revision alice may not manage");
    };
    let refusal = status
        .message
        .split_once("denied request: ")
        .map(|(_, m)| m)
        .unwrap();
    let (warn, _) = admitted(
        &mut kube,
        &native.warn_only(),
        revision_by_alice(),
        &mut nobody,
    );
    assert!(warn.allowed, "the Warn form does not admit: {warn:?}");
    assert!(
        warn.warnings.iter().any(|w| w.ends_with(refusal)),
        "{:?} does not carry {refusal}",
        warn.warnings
    );
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
