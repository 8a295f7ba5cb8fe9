//! The generated CRD patches, applied (RFC 6902, as `kubectl patch --type
//! json` applies them) to the upstream CRDs olm-guard ships: each keeps
//! every validation rule the CRD had, and the staged ClusterObjectSet
//! patches can be applied one after the other to a cluster with stored
//! revisions, whose writes Kubernetes' own CRD validation then judges.

use serde_json::{Value, json};

use olm_guard_kube_harness::{Admit, KubeHarness};
use olm_guard_native::{crd, generate};

mod common;

/// Every `x-kubernetes-validations` rule anywhere in `crd`.
fn all_rules(crd: &Value) -> Vec<Value> {
    common::validated_nodes(crd)
        .into_iter()
        .flat_map(|(_, node)| node["x-kubernetes-validations"].as_array().cloned())
        .flatten()
        .collect()
}

fn apply(crd: &mut Value, patch: &Value) {
    common::apply_patch(crd, patch, "the generated patch");
}

#[test]
fn the_staged_cluster_object_set_patches_apply_in_order_and_keep_the_crds_rules() {
    let native = generate(
        "group-authorization",
        &json!({"requireSpecGroup": true}),
        None,
    )
    .unwrap();
    let stages = &native.schema_patches;
    assert_eq!(stages.len(), 3);
    let mut document = crd::find("clusterobjectsets.olm.operatorframework.io", None)
        .unwrap()
        .document;
    let before = all_rules(&document);
    assert!(before.len() >= 10, "the shipped CRD has its own rules");
    let spec = "/spec/versions/0/schema/openAPIV3Schema/properties/spec";

    apply(&mut document, &stages[0].patch);
    assert_eq!(
        document.pointer(&format!("{spec}/properties/group/type")),
        Some(&json!("string"))
    );
    assert_eq!(all_rules(&document), before, "stage 1 adds no rule");

    apply(&mut document, &stages[1].patch);
    let after = all_rules(&document);
    assert!(
        before.iter().all(|rule| after.contains(rule)),
        "a rule was lost"
    );
    assert_eq!(after.len(), before.len() + 1);

    apply(&mut document, &stages[2].patch);
    let last = all_rules(&document);
    assert!(before.iter().all(|rule| last.contains(rule)));
    assert_eq!(last.len(), before.len() + 2);
}

/// A ClusterObjectSet write as the API server receives it: `object` over
/// `old` (an UPDATE) or new (a CREATE).
fn revision_write(spec: Value, old: Option<Value>) -> Value {
    let object = |spec: Value| {
        json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterObjectSet",
            "metadata": {"name": "widget-1", "resourceVersion": "7",
                "labels": {"olm.operatorframework.io/owner-name": "widget"}},
            "spec": spec,
        })
    };
    let kind =
        json!({"group": "olm.operatorframework.io", "version": "v1", "kind": "ClusterObjectSet"});
    json!({
        "uid": "1",
        "kind": kind,
        "resource": {"group": "olm.operatorframework.io", "version": "v1", "resource": "clusterobjectsets"},
        "name": "widget-1",
        "operation": if old.is_some() { "UPDATE" } else { "CREATE" },
        "userInfo": {"username": "alice"},
        "object": object(spec),
        "oldObject": old.map(object),
    })
}

/// The staged patches, applied to the shipped CRD and asked of the API
/// server's own CRD validation (its `x-kubernetes-validations`, with
/// `oldSelf` and ratcheting on UPDATE): a stored revision without a group
/// can be archived and given one, but a group never changes or goes away;
/// the last stage requires one on CREATE.
#[test]
fn the_immutability_stage_lets_stored_revisions_gain_a_group_but_never_change_it() {
    let native = generate(
        "group-authorization",
        &json!({"requireSpecGroup": true}),
        None,
    )
    .unwrap();
    let mut crd = crd::find("clusterobjectsets.olm.operatorframework.io", None)
        .unwrap()
        .document;
    apply(&mut crd, &native.schema_patches[0].patch);
    apply(&mut crd, &native.schema_patches[1].patch);
    let mut required = crd.clone();
    apply(&mut required, &native.schema_patches[2].patch);

    let mut kube = KubeHarness::start().unwrap_or_else(|e| panic!("{e}"));
    let mut refused = |crd: &Value, request: Value| {
        let answer = kube
            .admit(&Admit {
                request,
                crds: vec![crd.clone()],
                ..Admit::default()
            })
            .unwrap();
        assert!(answer.refused.is_none(), "{answer:?}");
        answer.schema_error.map(|s| s.message)
    };
    let without =
        json!({"revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent"});
    let with = |g: &str, state: &str| json!({"revision": 1, "lifecycleState": state, "collisionProtection": "Prevent", "group": g});
    // operator-controller archives a revision stored without a group.
    let mut archived = without.clone();
    archived["lifecycleState"] = json!("Archived");
    assert_eq!(
        refused(&crd, revision_write(archived, Some(without.clone()))),
        None
    );
    // Backfill gives a stored revision its group.
    assert_eq!(
        refused(
            &crd,
            revision_write(with("a", "Active"), Some(without.clone()))
        ),
        None
    );
    assert_eq!(
        refused(
            &crd,
            revision_write(with("a", "Archived"), Some(with("a", "Active")))
        ),
        None
    );
    let changed = refused(
        &crd,
        revision_write(with("b", "Active"), Some(with("a", "Active"))),
    );
    assert!(changed.is_some(), "a group cannot change");
    let removed = refused(
        &crd,
        revision_write(without.clone(), Some(with("a", "Active"))),
    );
    assert!(removed.is_some(), "nor be removed");
    // The last stage, for when every revision has one.
    assert_eq!(refused(&crd, revision_write(without.clone(), None)), None);
    let missing = refused(&required, revision_write(without, None));
    assert!(
        missing.is_some_and(|m| m.contains("spec")),
        "required on CREATE"
    );
    assert_eq!(
        refused(&required, revision_write(with("a", "Active"), None)),
        None
    );
}

#[test]
fn the_catalog_source_patch_appends_to_the_crd_it_is_given() {
    let native = generate("catalog-union", &Value::Null, None).unwrap();
    let mut document = crd::find("catalogsources.operators.coreos.com", None)
        .unwrap()
        .document;
    let before = all_rules(&document);
    apply(&mut document, &native.schema_patches[0].patch);
    assert_eq!(all_rules(&document).len(), before.len() + 1);

    // A CRD that already has a rule on spec keeps it.
    let spec = "/spec/versions/0/schema/openAPIV3Schema/properties/spec";
    let mut given = document.clone();
    *given
        .pointer_mut(&format!("{spec}/x-kubernetes-validations"))
        .unwrap() = json!([{"rule": "true", "message": "theirs"}]);
    let native = generate(
        "catalog-union",
        &Value::Null,
        Some(std::slice::from_ref(&given)),
    )
    .unwrap();
    let mut patched = given.clone();
    apply(&mut patched, &native.schema_patches[0].patch);
    let list = patched
        .pointer(&format!("{spec}/x-kubernetes-validations"))
        .and_then(Value::as_array)
        .unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["message"], "theirs");
}
