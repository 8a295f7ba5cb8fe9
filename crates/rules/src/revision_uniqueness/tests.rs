use super::*;
use crate::testing::{Probe, admission_request, assert_denied, has_warning};
use olm_guard_core::NoCluster;
use olm_guard_core::protocol::ListAllResourcesRequest;
use olm_guard_olm::cluster_object_set::OWNER_NAME_LABEL;
use olm_guard_snapshot::Snapshot;
use rstest::rstest;
use serde_json::json;

fn cos(name: &str, spec: Value, labels: Value) -> Value {
    json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterObjectSet",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    })
}

/// `<group>-<revision>` in group `group`, as `spec.group`.
fn grouped(group: &str, revision: Value, state: &str) -> Value {
    let name = format!("{group}-{revision}");
    cos(
        &name,
        json!({"group": group, "revision": revision, "lifecycleState": state,
               "collisionProtection": "Prevent"}),
        json!({}),
    )
}

/// A revision created before `spec.group`: grouped by the label only.
fn labelled(name: &str, extension: &str, revision: i64, state: &str) -> Value {
    cos(
        name,
        json!({"revision": revision, "lifecycleState": state}),
        json!({OWNER_NAME_LABEL: extension, "olm.operatorframework.io/owner-kind": "ClusterExtension"}),
    )
}

fn cluster() -> Snapshot {
    Snapshot::from_objects(vec![
        grouped("widget", json!(1), "Archived"),
        grouped("widget", json!(2), "Archived"),
        grouped("widget", json!(3), "Active"),
        labelled("argocd-operator-1", "argocd-operator", 1, "Archived"),
        labelled("argocd-operator-2", "argocd-operator", 2, "Active"),
        grouped("gadget", json!(1), "Active"),
    ])
}

fn request(operation: &str, object: Value, old_object: Value) -> AdmissionRequest {
    admission_request(
        ["olm.operatorframework.io", "v1", "ClusterObjectSet"],
        "clusterobjectsets",
        json!({
            "operation": operation,
            "userInfo": {"username": "system:serviceaccount:olmv1-system:operator-controller-controller-manager"},
            "object": object,
            "oldObject": old_object,
        }),
    )
}

fn create(object: Value) -> AdmissionRequest {
    request("CREATE", object, Value::Null)
}

fn run(request: &AdmissionRequest) -> Verdict {
    validate(request, &Settings::default(), &cluster())
}

fn with(auto: bool, suffix: bool) -> Settings {
    Settings {
        auto_increment_revision: auto,
        require_name_suffix: suffix,
        ..Settings::default()
    }
}

#[test]
fn other_kinds_subresources_and_deletes_are_not_looked_at() {
    let mut other = create(json!({"spec": {"revision": "x"}}));
    other.kind.kind = "ClusterExtension".into();
    assert!(validate(&other, &Settings::default(), &NoCluster).allowed);

    let mut status = create(grouped("widget", json!(3), "Active"));
    status.sub_resource = Some("status".into());
    assert!(validate(&status, &Settings::default(), &NoCluster).allowed);

    let delete = request("DELETE", Value::Null, grouped("widget", json!(3), "Active"));
    assert!(validate(&delete, &Settings::default(), &NoCluster).allowed);
}

#[rstest]
#[case::a_string(
    json!("4"),
    "is the string \"4\"; write it as a number without quotes: revision: 4"
)]
#[case::a_decimal(json!(4.0), "write the whole number 4 instead")]
#[case::a_fraction(json!(4.5), "4.5, which is not a whole number")]
#[case::zero(json!(0), "is 0; revisions start at 1")]
#[case::negative(json!(-2), "is -2; revisions start at 1")]
#[case::a_bool(json!(true), "is true")]
#[case::a_map(json!({"n": 4}), "is a map")]
fn rule1_revision_must_be_an_integer_of_at_least_one(#[case] value: Value, #[case] expected: &str) {
    let verdict = validate(
        &create(grouped("widget", value, "Active")),
        &Settings::default(),
        &NoCluster,
    );
    assert_denied(&verdict, &["spec.revision", expected]);
    assert_eq!(verdict.code, Some(403));
}

#[test]
fn rule1_a_missing_revision_is_denied_without_the_setting() {
    let missing = cos("widget-4", json!({"group": "widget"}), json!({}));
    let verdict = validate(&create(missing.clone()), &Settings::default(), &NoCluster);
    assert_denied(
        &verdict,
        &["spec.revision is required", "autoIncrementRevision"],
    );

    let null = cos(
        "widget-4",
        json!({"group": "widget", "revision": null}),
        json!({}),
    );
    assert_denied(&run(&create(null)), &["spec.revision is required"]);

    // autoIncrementRevision numbers creations only.
    let verdict = validate(
        &request("UPDATE", missing.clone(), missing),
        &with(true, false),
        &NoCluster,
    );
    assert_denied(&verdict, &["spec.revision is required"]);
}

#[test]
fn unreadable_objects_are_bad_requests() {
    let verdict = run(&create(json!({"metadata": "x"})));
    assert_denied(&verdict, &["metadata is a string"]);
    assert_eq!(verdict.code, Some(400));
}

#[test]
fn rule2_the_revision_cannot_change() {
    let old = grouped("widget", json!(3), "Active");
    let mut new = old.clone();
    new["spec"]["revision"] = json!(4);
    let verdict = run(&request("UPDATE", new, old.clone()));
    assert_denied(
        &verdict,
        &["spec.revision is immutable", "revision 3", "make it 4"],
    );

    let mut removed = old.clone();
    removed["spec"]["revision"] = Value::Null;
    let verdict = run(&request("UPDATE", removed, old.clone()));
    assert_denied(
        &verdict,
        &[
            "spec.revision is immutable",
            "removes it",
            "keep spec.revision: 3",
        ],
    );

    let mut archived = old.clone();
    archived["spec"]["lifecycleState"] = json!("Archived");
    let verdict = run(&request("UPDATE", archived, old));
    assert!(verdict.allowed, "{verdict:?}");
}

#[test]
fn rule2_an_old_object_without_a_revision_imposes_nothing() {
    let old = cos("widget-9", json!({"group": "widget"}), json!({}));
    let verdict = run(&request(
        "UPDATE",
        grouped("widget", json!(9), "Active"),
        old,
    ));
    assert!(verdict.allowed, "{verdict:?}");
}

#[test]
fn rule3_label_only_objects_count_in_their_group() {
    // A new object using spec.group clashes with a label-only one.
    let again = cos(
        "argocd-operator-two",
        json!({"group": "argocd-operator", "revision": 2}),
        json!({}),
    );
    let verdict = run(&create(again));
    assert_denied(
        &verdict,
        &[
            "\"argocd-operator-2\"",
            "grouped by its label",
            "use spec.revision: 3",
        ],
    );
    // And a label-only new object clashes with a spec.group one.
    let legacy = labelled("widget-rev2", "widget", 2, "Active");
    assert_denied(&run(&create(legacy)), &["\"widget-2\""]);
    // spec.group wins over the label.
    let both = cos(
        "gadget-2",
        json!({"group": "gadget", "revision": 2}),
        json!({OWNER_NAME_LABEL: "widget"}),
    );
    assert!(run(&create(both)).allowed);
}

#[test]
fn rule4_duplicates_are_denied_whatever_the_lifecycle_state() {
    let verdict = run(&create(cos(
        "widget-again",
        json!({"group": "widget", "revision": 1}),
        json!({}),
    )));
    assert_denied(
        &verdict,
        &[
            "spec.revision 1 is already used in group \"widget\"",
            "\"widget-1\"",
            "lifecycleState Archived",
            "use spec.revision: 4",
        ],
    );
    assert_denied(
        &run(&create(cos(
            "w",
            json!({"group": "widget", "revision": 3}),
            json!({}),
        ))),
        &["\"widget-3\"", "lifecycleState Active"],
    );
}

#[rstest]
#[case::the_next_revision("widget", 4)]
#[case::a_later_revision("widget", 7)]
#[case::the_next_in_another_group("gadget", 3)]
#[case::a_new_group("new-group", 1)]
fn rule4_new_revisions_and_other_groups_pass(#[case] group: &str, #[case] revision: i64) {
    let verdict = run(&create(grouped(group, json!(revision), "Active")));
    assert!(verdict.allowed, "{verdict:?}");
}

#[test]
fn rule4_the_object_itself_is_no_duplicate() {
    let own = grouped("widget", json!(3), "Active");
    let verdict = run(&request("UPDATE", own.clone(), own));
    assert!(verdict.allowed, "{verdict:?}");
}

#[test]
fn rule4_an_update_into_a_taken_slot_is_denied() {
    // A label edit moves a label-only revision into group "widget".
    let old = labelled("stray-2", "stray", 2, "Active");
    let new = labelled("stray-2", "widget", 2, "Active");
    let verdict = run(&request("UPDATE", new, old));
    assert_denied(&verdict, &["\"widget-2\"", "delete one of the two"]);
}

#[test]
fn rule4_lists_once_and_fails_closed() {
    let snapshot = cluster();
    let counting = Probe::new(&snapshot);
    validate(
        &create(grouped("widget", json!(4), "Active")),
        &with(false, true),
        &counting,
    );
    let lists = counting.list_all_requests.borrow();
    assert_eq!(lists.len(), 1);
    // Only the fields the rule reads: a ClusterObjectSet's phases carry
    // whole manifests.
    assert_eq!(
        lists[0],
        ListAllResourcesRequest::new("olm.operatorframework.io/v1", "ClusterObjectSet")
            .field_masks(["spec.group", "spec.revision", "spec.lifecycleState"])
    );

    let verdict = validate(
        &create(grouped("widget", json!(4), "Active")),
        &Settings::default(),
        &NoCluster,
    );
    assert_denied(&verdict, &["ClusterObjectSets", "fails closed"]);
    assert_eq!(verdict.code, Some(500));
}

/// `listByOwnerLabel` asks for the group's labelled revisions only: the
/// same verdicts where every revision carries the label, and, as its
/// README says, no sight of a sibling grouped by `spec.group` alone.
#[test]
fn rule4_by_owner_label_lists_the_group_only() {
    let by_label = Settings {
        list_by_owner_label: true,
        ..Settings::default()
    };
    let snapshot = cluster();
    let counting = Probe::new(&snapshot);
    let duplicate = labelled("argocd-operator-3", "argocd-operator", 2, "Active");
    let verdict = validate(&create(duplicate.clone()), &by_label, &counting);
    assert_eq!(verdict, run(&create(duplicate)));
    assert!(!verdict.allowed);
    assert_eq!(
        counting.list_all_requests.borrow()[0],
        ListAllResourcesRequest::new("olm.operatorframework.io/v1", "ClusterObjectSet")
            .field_masks(["spec.group", "spec.revision", "spec.lifecycleState"])
            .label_selector(format!("{OWNER_NAME_LABEL}=argocd-operator"))
    );
    // widget's revisions carry spec.group but no label.
    let clash = cos(
        "widget-again",
        json!({"group": "widget", "revision": 3}),
        json!({}),
    );
    assert!(!run(&create(clash.clone())).allowed);
    assert!(validate(&create(clash), &by_label, &cluster()).allowed);
}

#[test]
fn ungrouped_objects_have_no_siblings() {
    // The upstream sample has neither spec.group nor the label.
    let sample = cos(
        "my-app-rev1",
        json!({"revision": 1, "lifecycleState": "Active"}),
        json!({}),
    );
    assert!(validate(&create(sample.clone()), &Settings::default(), &NoCluster).allowed);
    let verdict = validate(&create(sample), &with(false, true), &NoCluster);
    assert_denied(
        &verdict,
        &[
            "requireNameSuffix",
            "no revision group",
            "set the label olm.operatorframework.io/owner-name",
        ],
    );
    let unnumbered = cos("x", json!({"lifecycleState": "Active"}), json!({}));
    let verdict = validate(&create(unnumbered), &with(true, false), &NoCluster);
    assert_denied(
        &verdict,
        &[
            "cannot be numbered automatically",
            "set the label olm.operatorframework.io/owner-name",
        ],
    );
}

#[test]
fn rule5_numbers_after_the_highest_revision_of_the_group() {
    let new = cos(
        "widget-next",
        json!({"group": "widget", "lifecycleState": "Active"}),
        json!({}),
    );
    let verdict = validate(&create(new.clone()), &with(true, false), &cluster());
    assert!(verdict.allowed, "{verdict:?}");
    let mut expected = new;
    expected["spec"]["revision"] = json!(4);
    assert_eq!(verdict.mutated_object, Some(expected));
    assert!(
        verdict
            .warnings
            .iter()
            .any(|w| w.contains("highest revision of group \"widget\" is 3"))
    );

    let legacy = labelled("argocd-operator-next", "argocd-operator", 1, "Active");
    let mut legacy_unnumbered = legacy.clone();
    legacy_unnumbered["spec"]["revision"] = Value::Null;
    let verdict = validate(&create(legacy_unnumbered), &with(true, false), &cluster());
    assert_eq!(
        verdict
            .mutated_object
            .as_ref()
            .and_then(|o| o.pointer("/spec/revision")),
        Some(&json!(3))
    );
}

#[test]
fn rule5_a_new_group_starts_at_one_even_without_a_spec() {
    let new = cos("fresh", Value::Null, json!({OWNER_NAME_LABEL: "fresh"}));
    let verdict = validate(&create(new), &with(true, false), &cluster());
    assert_eq!(
        verdict.mutated_object.as_ref().and_then(|o| o.get("spec")),
        Some(&json!({"revision": 1}))
    );
    assert!(
        verdict
            .warnings
            .iter()
            .any(|w| w.contains("first revision of group \"fresh\""))
    );
}

#[test]
fn rule5_leaves_numbered_objects_alone() {
    let verdict = validate(
        &create(grouped("widget", json!(4), "Active")),
        &with(true, false),
        &cluster(),
    );
    assert!(
        verdict.allowed && verdict.mutated_object.is_none(),
        "{verdict:?}"
    );
}

#[test]
fn rule5_refuses_to_overflow() {
    let full = Snapshot::from_objects(vec![grouped("full", json!(i64::MAX), "Active")]);
    let new = cos("full-next", json!({"group": "full"}), json!({}));
    let verdict = validate(&create(new), &with(true, false), &full);
    assert_denied(&verdict, &["largest possible revision"]);
}

#[test]
fn rule6_names_must_be_group_dash_revision() {
    let settings = with(false, true);
    let good = grouped("widget", json!(4), "Active");
    assert!(validate(&create(good), &settings, &cluster()).allowed);

    let bad = cos(
        "widget-rev4",
        json!({"group": "widget", "revision": 4}),
        json!({}),
    );
    let verdict = validate(&create(bad.clone()), &settings, &NoCluster);
    assert_denied(
        &verdict,
        &[
            "metadata.name must be \"widget-4\"",
            "it is \"widget-rev4\"",
            "name it \"widget-4\"",
        ],
    );
    assert!(validate(&create(bad), &Settings::default(), &cluster()).allowed);

    let generated = json!({"metadata": {"generateName": "widget-"},
                           "spec": {"group": "widget", "revision": 4}});
    let verdict = validate(&create(generated), &settings, &NoCluster);
    assert_denied(&verdict, &["generateName \"widget-\""]);
}

#[test]
fn rule6_on_update_explains_that_names_are_fixed() {
    let old = labelled("widget-rev9", "old-group", 9, "Active");
    let new = labelled("widget-rev9", "widget-x", 9, "Active");
    let verdict = validate(&request("UPDATE", new, old), &with(false, true), &cluster());
    assert_denied(
        &verdict,
        &[
            "\"widget-x-9\"",
            "delete this ClusterObjectSet and create it again",
        ],
    );
}

#[test]
fn rule6_with_rule5_checks_the_name_against_the_new_number() {
    let settings = with(true, true);
    let right = cos("widget-4", json!({"group": "widget"}), json!({}));
    let verdict = validate(&create(right), &settings, &cluster());
    assert!(
        verdict.allowed && verdict.mutated_object.is_some(),
        "{verdict:?}"
    );

    let stale = cos("widget-7", json!({"group": "widget"}), json!({}));
    let verdict = validate(&create(stale), &settings, &cluster());
    assert_denied(&verdict, &["metadata.name must be \"widget-4\""]);
}

/// An update that moves nothing: the stored object with a new
/// lifecycleState, as operator-controller archives revisions.
fn archive(object: &Value) -> AdmissionRequest {
    let mut archived = object.clone();
    archived["spec"]["lifecycleState"] = json!("Archived");
    request("UPDATE", archived, object.clone())
}

#[test]
fn update_keeping_its_slot_is_allowed_and_warns_about_an_existing_duplicate() {
    // Two revisions 3 of "widget" stored before the policy was installed.
    let duplicate = cos(
        "widget-3-dup",
        json!({"group": "widget", "revision": 3, "lifecycleState": "Active"}),
        json!({}),
    );
    let mut objects = vec![duplicate.clone()];
    for revision in 1..=3 {
        objects.push(grouped("widget", json!(revision), "Active"));
    }
    let with_duplicate = Snapshot::from_objects(objects);

    let verdict = validate(&archive(&duplicate), &Settings::default(), &with_duplicate);
    assert!(verdict.allowed, "{verdict:?}");
    assert_eq!(verdict.mutated_object, None);
    assert!(
        has_warning(
            &verdict,
            &[
                "spec.revision 3 of group \"widget\" is also used by ClusterObjectSet \
                 \"widget-3\", lifecycleState Active:",
                "changes neither the group nor the revision",
                "delete one of the two ClusterObjectSets (\"widget-3-dup\" or \"widget-3\")",
            ]
        ),
        "{verdict:?}"
    );
    assert_eq!(verdict.warnings.len(), 1, "{verdict:?}");

    // The other holder of the slot is told the same.
    let own = grouped("widget", json!(3), "Active");
    let verdict = validate(&archive(&own), &Settings::default(), &with_duplicate);
    assert!(verdict.allowed, "{verdict:?}");
    assert!(has_warning(
        &verdict,
        &["also used by ClusterObjectSet \"widget-3-dup\""]
    ));

    // A CREATE into the slot is still denied.
    let third = cos(
        "widget-3-again",
        json!({"group": "widget", "revision": 3}),
        json!({}),
    );
    let verdict = validate(&create(third), &Settings::default(), &with_duplicate);
    assert_denied(&verdict, &["spec.revision 3 is already used"]);
}

#[test]
fn update_keeping_its_slot_warns_about_a_label_only_duplicate() {
    // A label-only stray that shares argocd-operator's revision 2.
    let stray = labelled("argocd-operator-2-copy", "argocd-operator", 2, "Archived");
    let mut objects = vec![stray.clone()];
    objects.push(labelled(
        "argocd-operator-2",
        "argocd-operator",
        2,
        "Active",
    ));
    let verdict = validate(
        &archive(&stray),
        &Settings::default(),
        &Snapshot::from_objects(objects),
    );
    assert!(verdict.allowed, "{verdict:?}");
    assert!(has_warning(
        &verdict,
        &[
            "also used by ClusterObjectSet \"argocd-operator-2\", lifecycleState Active, grouped by its label"
        ]
    ));
}

#[test]
fn update_keeping_its_slot_is_allowed_and_warns_about_an_existing_misnamed_revision() {
    let misnamed = cos(
        "widget-rev9",
        json!({"group": "widget", "revision": 9, "lifecycleState": "Active"}),
        json!({}),
    );
    let verdict = validate(&archive(&misnamed), &with(false, true), &cluster());
    assert!(verdict.allowed, "{verdict:?}");
    assert!(
        has_warning(
            &verdict,
            &[
                "metadata.name should be \"widget-9\" (<group>-<revision>, setting \
                 requireNameSuffix) but it is \"widget-rev9\"",
                "changes neither the group nor the revision",
                "create it again as \"widget-9\"",
            ]
        ),
        "{verdict:?}"
    );
    assert_eq!(verdict.warnings.len(), 1, "{verdict:?}");
    // Without the setting the name is nobody's business.
    let verdict = run(&archive(&misnamed));
    assert!(
        verdict.allowed && verdict.warnings.is_empty(),
        "{verdict:?}"
    );
    // A CREATE with that name is still denied.
    let verdict = validate(&create(misnamed), &with(false, true), &cluster());
    assert_denied(&verdict, &["metadata.name must be \"widget-9\""]);
}

#[test]
fn update_keeping_its_slot_can_carry_both_warnings() {
    let misnamed_duplicate = cos(
        "widget-three",
        json!({"group": "widget", "revision": 3, "lifecycleState": "Active"}),
        json!({}),
    );
    let verdict = validate(&archive(&misnamed_duplicate), &with(true, true), &cluster());
    assert!(verdict.allowed, "{verdict:?}");
    assert_eq!(verdict.mutated_object, None);
    assert!(has_warning(
        &verdict,
        &["metadata.name should be \"widget-3\""]
    ));
    assert!(has_warning(
        &verdict,
        &["also used by ClusterObjectSet \"widget-3\", lifecycleState Active"]
    ));
    assert_eq!(verdict.warnings.len(), 2, "{verdict:?}");
}

#[test]
fn update_of_an_ungrouped_object_keeps_working_with_the_name_setting() {
    let sample = cos(
        "my-app-rev1",
        json!({"revision": 1, "lifecycleState": "Active"}),
        json!({}),
    );
    let verdict = validate(&archive(&sample), &with(false, true), &NoCluster);
    assert!(verdict.allowed, "{verdict:?}");
    assert!(
        has_warning(
            &verdict,
            &[
                "setting requireNameSuffix",
                "in no revision group",
                "changes neither the group nor the revision",
                "spec.group",
            ]
        ),
        "{verdict:?}"
    );
    let verdict = validate(&archive(&sample), &Settings::default(), &NoCluster);
    assert!(
        verdict.allowed && verdict.warnings.is_empty(),
        "{verdict:?}"
    );
}

#[test]
fn update_keeping_its_slot_is_not_denied_when_the_list_fails() {
    // The list only feeds a warning here, so it cannot brick the object.
    let own = grouped("widget", json!(3), "Active");
    let verdict = validate(&archive(&own), &Settings::default(), &NoCluster);
    assert!(verdict.allowed, "{verdict:?}");
    assert!(
        has_warning(
            &verdict,
            &[
                "could not check whether revision 3 of group \"widget\"",
                "kubernetes/list_resources_all",
            ]
        ),
        "{verdict:?}"
    );
}

#[test]
fn a_clean_update_has_no_warnings() {
    let own = grouped("widget", json!(3), "Active");
    let verdict = validate(&archive(&own), &with(true, true), &cluster());
    assert!(
        verdict.allowed && verdict.warnings.is_empty() && verdict.mutated_object.is_none(),
        "{verdict:?}"
    );
    let legacy = labelled("argocd-operator-2", "argocd-operator", 2, "Active");
    let verdict = validate(&archive(&legacy), &with(false, true), &cluster());
    assert!(
        verdict.allowed && verdict.warnings.is_empty(),
        "{verdict:?}"
    );
}

#[test]
fn backfilling_spec_group_from_the_label_keeps_the_slot() {
    // group-authorization's backfill writes the label into spec.group:
    // the effective group (rule 3) stays the same, so nothing is re-judged.
    let old = labelled("argocd-operator-2", "argocd-operator", 2, "Active");
    let mut new = old.clone();
    new["spec"]["group"] = json!("argocd-operator");
    let verdict = validate(&request("UPDATE", new, old), &with(false, true), &NoCluster);
    assert!(verdict.allowed, "{verdict:?}");
    assert!(has_warning(&verdict, &["could not check"]));
}

#[test]
fn update_gaining_a_group_is_checked_like_a_create() {
    // An ungrouped revision 1 is given spec.group "widget", whose
    // revision 1 exists: the update makes the duplicate, so it is denied.
    let old = cos(
        "my-app-rev1",
        json!({"revision": 1, "lifecycleState": "Active"}),
        json!({}),
    );
    let mut new = old.clone();
    new["spec"]["group"] = json!("widget");
    let verdict = run(&request("UPDATE", new.clone(), old.clone()));
    assert_denied(
        &verdict,
        &[
            "spec.revision 1 is already used in group \"widget\"",
            "delete one of the two ClusterObjectSets (\"my-app-rev1\" or \"widget-1\")",
        ],
    );
    // And under requireNameSuffix the name no longer fits the new group.
    new["spec"]["group"] = json!("my-app");
    let verdict = validate(&request("UPDATE", new, old), &with(false, true), &NoCluster);
    assert_denied(
        &verdict,
        &[
            "metadata.name must be \"my-app-1\"",
            "delete this ClusterObjectSet and create it again",
        ],
    );
}

#[test]
fn update_dropping_the_group_is_checked_like_a_create() {
    // The label is removed from a label-only revision: it leaves its slot
    // for no group, which requireNameSuffix cannot name.
    let old = labelled("argocd-operator-2", "argocd-operator", 2, "Active");
    let new = cos(
        "argocd-operator-2",
        json!({"revision": 2, "lifecycleState": "Active"}),
        json!({}),
    );
    let verdict = validate(
        &request("UPDATE", new.clone(), old.clone()),
        &with(false, true),
        &cluster(),
    );
    assert_denied(&verdict, &["metadata.name must be <group>-<revision>"]);
    assert!(run(&request("UPDATE", new, old)).allowed);
}

#[rstest]
#[case::null(Value::Null)]
#[case::a_string(json!("x"))]
#[case::spec_a_list(json!({"spec": [1]}))]
fn an_unreadable_old_object_proves_no_slot(#[case] old: Value) {
    let taken = cos(
        "widget-again",
        json!({"group": "widget", "revision": 1}),
        json!({}),
    );
    let verdict = run(&request("UPDATE", taken, old));
    assert_denied(&verdict, &["spec.revision 1 is already used"]);
}

/// Shapes no API server would send; each gets a verdict, never a panic.
fn odd_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(false),
        json!(1e300),
        json!("widget-3"),
        json!([{"spec": {"revision": 1}}]),
        json!({"metadata": [], "spec": {"revision": 1}}),
        json!({"metadata": {"name": null, "labels": null}, "spec": null}),
        json!({"metadata": {"generateName": 3}, "spec": {"revision": 1}}),
        json!({"metadata": {"labels": {OWNER_NAME_LABEL: "widget"}}, "spec": "x"}),
        json!({"spec": {"group": "widget", "revision": -9223372036854775808i64}}),
        json!({"spec": {"group": "widget", "revision": 18446744073709551615u64}}),
        json!({"spec": {"group": ["widget"], "revision": {"n": 1}}}),
        json!({"spec": {"group": "widget"}}),
    ]
}

#[rstest]
fn odd_json_gets_a_verdict(
    #[values("CREATE", "UPDATE")] operation: &str,
    #[values(with(false, false), with(true, true))] settings: Settings,
) {
    for object in odd_values() {
        for old in odd_values() {
            let r = request(operation, object.clone(), old.clone());
            let verdict = validate(&r, &settings, &cluster());
            if !verdict.allowed {
                assert_denied(&verdict, &[]);
            }
        }
    }
}

#[test]
fn settings_default_off_and_reject_unknown_keys() {
    let parsed: Settings = olm_guard_core::settings::parse(&Value::Null).unwrap();
    assert_eq!(parsed, with(false, false));
    let parsed: Settings = olm_guard_core::settings::parse(
        &json!({"autoIncrementRevision": true, "requireNameSuffix": true}),
    )
    .unwrap();
    assert_eq!(parsed, with(true, true));
    assert!(olm_guard_core::settings::parse::<Settings>(&json!({"autoIncrement": true})).is_err());
    assert!(
        olm_guard_core::settings::parse::<Settings>(&json!({"requireNameSuffix": "yes"})).is_err()
    );
}

/// 10,000 revisions in 100 groups: the single pass still answers, for a
/// clash at the end of the list, a free slot and automatic numbering.
#[test]
fn ten_thousand_revisions_still_evaluate() {
    let objects = (0..10_000)
        .map(|i| {
            let group = format!("extension-{}", i % 100);
            let revision = i / 100 + 1;
            let state = if revision == 100 {
                "Active"
            } else {
                "Archived"
            };
            if i % 2 == 0 {
                grouped(&group, json!(revision), state)
            } else {
                labelled(&format!("{group}-{revision}"), &group, revision, state)
            }
        })
        .collect();
    let big = Snapshot::from_objects(objects);

    let taken = cos(
        "again",
        json!({"group": "extension-99", "revision": 100}),
        json!({}),
    );
    let verdict = validate(&create(taken), &Settings::default(), &big);
    assert_denied(
        &verdict,
        &["\"extension-99-100\"", "use spec.revision: 101"],
    );

    let free = grouped("extension-42", json!(101), "Active");
    assert!(validate(&create(free), &with(false, true), &big).allowed);

    let unnumbered = cos(
        "extension-7-101",
        json!({"group": "extension-7"}),
        json!({}),
    );
    let verdict = validate(&create(unnumbered), &with(true, true), &big);
    assert_eq!(
        verdict
            .mutated_object
            .as_ref()
            .and_then(|o| o.pointer("/spec/revision")),
        Some(&json!(101))
    );
}
