//! The generated CRD patches, applied (RFC 6902, as `kubectl patch --type
//! json` applies them) to the upstream CRDs olm-guard ships: each keeps
//! every validation rule the CRD had, and the staged ClusterObjectSet
//! patches can be applied one after the other to a cluster with stored
//! revisions.

use serde_json::{Value, json};

use olm_guard_native::admission::evaluate_crd_rule;
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

#[test]
fn the_immutability_stage_lets_stored_revisions_gain_a_group_but_never_change_it() {
    let native = generate(
        "group-authorization",
        &json!({"requireSpecGroup": true}),
        None,
    )
    .unwrap();
    let immutable = &native.schema_patches[1].rules[0];
    let required = &native.schema_patches[2].rules[0];
    let judge = |new: Value, old: Option<Value>| {
        evaluate_crd_rule(immutable, &new, old.as_ref())
            .unwrap()
            .unwrap_or(true)
    };
    let without = json!({"revision": 1, "lifecycleState": "Active"});
    let with = |g: &str| json!({"revision": 1, "lifecycleState": "Archived", "group": g});
    // operator-controller archives a revision stored without a group.
    let mut archived = without.clone();
    archived["lifecycleState"] = json!("Archived");
    assert!(judge(archived, Some(without.clone())));
    // Backfill gives a stored revision its group.
    assert!(judge(with("a"), Some(without.clone())));
    assert!(judge(with("a"), Some(with("a"))));
    assert!(!judge(with("b"), Some(with("a"))), "a group cannot change");
    assert!(!judge(without.clone(), Some(with("a"))), "nor be removed");
    // The last stage, for when every revision has one.
    assert_eq!(
        evaluate_crd_rule(required, &without, None).unwrap(),
        Some(false)
    );
    assert_eq!(
        evaluate_crd_rule(required, &with("a"), None).unwrap(),
        Some(true)
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
