use super::*;
use crate::testing::{Probe, admission_request, assert_denied, has_warning, snapshot};
use olm_guard_core::NoCluster;
use olm_guard_olm::cluster_object_set::RESOURCE;
use olm_guard_snapshot::Snapshot;
use rstest::rstest;
use serde_json::json;

/// ClusterRoles and bindings in the shape of the grants proposed in
/// operator-framework/operator-controller issue #2722: alice manages
/// widget-operator, the installer ServiceAccount every group, and bob every
/// group but only through a RoleBinding (which a cluster-wide check ignores).
const RBAC: &str = include_str!("fixtures/rbac.yaml");

fn cluster() -> Snapshot {
    snapshot(&[RBAC])
}

fn user(name: &str, groups: &[&str]) -> Value {
    json!({"username": name, "groups": groups})
}

fn alice() -> Value {
    user("alice", &["system:authenticated"])
}

fn installer() -> Value {
    user(
        "system:serviceaccount:olmv1-system:installer",
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:olmv1-system",
        ],
    )
}

fn cos(name: &str, spec: Value, labels: Value) -> Value {
    json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterObjectSet",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    })
}

fn widget(spec_extra: Value) -> Value {
    let mut spec = json!({"revision": 1, "lifecycleState": "Active",
                          "collisionProtection": "Prevent", "group": "widget-operator"});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
        spec.extend(extra.clone());
    }
    cos("widget-operator-1", spec, json!({}))
}

fn request(operation: &str, user: Value, object: Value, old_object: Value) -> AdmissionRequest {
    admission_request(
        [GROUP, "v1", KIND],
        RESOURCE,
        json!({
            "name": "widget-operator-1",
            "operation": operation,
            "userInfo": user,
            "object": object,
            "oldObject": old_object,
        }),
    )
}

fn create(user: Value, object: Value) -> AdmissionRequest {
    request("CREATE", user, object, Value::Null)
}

fn run(request: &AdmissionRequest) -> Verdict {
    validate(request, &Settings::default(), &cluster())
}

/// The verdict with `requireSpecGroup`.
fn run_required(request: &AdmissionRequest) -> Verdict {
    validate(request, &require(), &cluster())
}

/// For a cluster whose CRD has spec.group.
fn require() -> Settings {
    Settings {
        require_spec_group: true,
        ..Settings::default()
    }
}

/// The same, migrating label-only revisions.
fn backfill() -> Settings {
    Settings {
        require_spec_group: true,
        backfill_group_from_label: true,
        ..Settings::default()
    }
}

/// Records the SubjectAccessReviews a rule asks for, allowing each.
fn recorder() -> Probe<'static> {
    Probe::new(&NoCluster).allowing_all()
}

/// The verdict on `request` when every SubjectAccessReview is allowed,
/// and the groups asked about, in order.
fn asked(request: &AdmissionRequest) -> (Verdict, Vec<Option<String>>) {
    let recorder = recorder();
    let verdict = validate(request, &Settings::default(), &recorder);
    (verdict, recorder.reviewed_names())
}

#[test]
fn other_kinds_subresources_and_connect_are_not_looked_at() {
    let mut pod = create(alice(), json!({"spec": {}}));
    pod.kind.group = String::new();
    pod.kind.kind = "Pod".into();
    assert!(validate(&pod, &Settings::default(), &NoCluster).allowed);

    let mut status = create(alice(), cos("x", json!({}), json!({})));
    status.sub_resource = Some("status".into());
    assert!(validate(&status, &Settings::default(), &NoCluster).allowed);

    let connect = request("CONNECT", alice(), Value::Null, Value::Null);
    assert!(validate(&connect, &Settings::default(), &NoCluster).allowed);
}

#[rstest]
#[case::missing(cos("x", json!({"revision": 1}), json!({})))]
#[case::empty(widget(json!({"group": ""})))]
#[case::null_spec(cos("x", Value::Null, json!({})))]
fn rule1_a_group_is_required(#[case] object: Value) {
    let verdict = run_required(&create(alice(), object));
    assert_denied(&verdict, &["spec.group is required", "set spec.group"]);
    assert_eq!(verdict.code, Some(403));
}

#[rstest]
#[case::number(json!(7), &["spec.group is a number (7)", "non-empty string"])]
#[case::list(json!(["a"]), &["spec.group is a list"])]
fn rule1_a_group_of_another_type_is_named(#[case] group: Value, #[case] parts: &[&str]) {
    let verdict = run(&create(alice(), widget(json!({ "group": group }))));
    assert_denied(&verdict, parts);
}

#[test]
fn rule1_label_only_objects_are_told_about_the_label_and_the_setting() {
    let legacy = cos(
        "widget-operator-1",
        json!({"revision": 1}),
        json!({OWNER_NAME_LABEL: "widget-operator"}),
    );
    let verdict = run_required(&create(alice(), legacy));
    assert_denied(
        &verdict,
        &[
            "spec.group is required",
            "set spec.group: widget-operator",
            "backfillGroupFromLabel",
        ],
    );
}

#[rstest]
#[case::spec_a_string(json!({"spec": "group: x"}), "spec is a string")]
#[case::a_list(json!([1, 2]), "the object is a list")]
#[case::null(Value::Null, "the object is null")]
fn unreadable_objects_are_bad_requests_naming_the_field(
    #[case] object: Value,
    #[case] problem: &str,
) {
    let verdict = run(&create(alice(), object));
    assert_denied(&verdict, &["cannot read the ClusterObjectSet", problem]);
    assert_eq!(verdict.code, Some(400));
}

#[test]
fn rule2_the_group_cannot_change() {
    let old = widget(json!({}));
    let new = widget(json!({"group": "gadget-operator"}));
    let verdict = run(&request("UPDATE", alice(), new, old.clone()));
    assert_denied(
        &verdict,
        &[
            "spec.group is immutable",
            "\"widget-operator\"",
            "\"gadget-operator\"",
        ],
    );

    let removed = widget(json!({"group": null}));
    let verdict = run(&request("UPDATE", alice(), removed, old.clone()));
    assert_denied(
        &verdict,
        &["spec.group is required", "keep spec.group: widget-operator"],
    );

    let unchanged = run(&request("UPDATE", alice(), old.clone(), old));
    assert!(unchanged.allowed, "{unchanged:?}");
}

#[test]
fn rule2_an_old_object_without_a_group_may_gain_one() {
    let old = cos("widget-operator-1", json!({"revision": 1}), json!({}));
    let verdict = run(&request("UPDATE", alice(), widget(json!({})), old));
    assert!(verdict.allowed, "{verdict:?}");
}

#[test]
fn rule3_the_owner_label_must_agree_with_the_group() {
    let forged = cos(
        "widget-operator-1",
        json!({"group": "widget-operator", "revision": 1}),
        json!({OWNER_NAME_LABEL: "cert-manager"}),
    );
    let verdict = run(&create(alice(), forged));
    assert_denied(
        &verdict,
        &[
            OWNER_NAME_LABEL,
            "\"cert-manager\"",
            "\"widget-operator\"",
            "remove it",
        ],
    );

    let agreeing = cos(
        "widget-operator-1",
        json!({"group": "widget-operator", "revision": 1}),
        json!({OWNER_NAME_LABEL: "widget-operator"}),
    );
    assert!(run(&create(alice(), agreeing)).allowed);
}

#[test]
fn rule4_asks_exactly_the_vaps_authorizer_question() {
    let recorder = recorder();
    let verdict = validate(
        &create(alice(), widget(json!({}))),
        &Settings::default(),
        &recorder,
    );
    assert!(verdict.allowed);
    let reviews = recorder.reviews.borrow();
    assert_eq!(reviews.len(), 1);
    let review = &reviews[0].subject_access_review;
    assert_eq!(review.user, "alice");
    assert_eq!(
        review.groups,
        Some(vec!["system:authenticated".to_string()])
    );
    let attributes = &review.resource_attributes;
    assert_eq!(attributes.verb, "manage");
    assert_eq!(
        attributes.group.as_deref(),
        Some("olm.operatorframework.io")
    );
    assert_eq!(attributes.resource, "clusterobjectsets");
    assert_eq!(attributes.subresource.as_deref(), Some("groups"));
    assert_eq!(attributes.name.as_deref(), Some("widget-operator"));
    assert_eq!(attributes.namespace, None);
}

#[test]
fn rule4_a_grant_by_resource_name_covers_only_that_group() {
    assert!(run(&create(alice(), widget(json!({})))).allowed);
    let other = run(&create(alice(), widget(json!({"group": "cert-manager"}))));
    assert_denied(
        &other,
        &[
            NOT_AUTHORIZED,
            "user \"alice\"",
            "group \"cert-manager\"",
            "resourceNames: [cert-manager]",
        ],
    );
    assert_eq!(other.code, Some(403));
}

#[rstest]
fn rule4_the_extension_service_account_manages_every_group(
    #[values("widget-operator", "cert-manager", "anything")] group: &str,
) {
    let verdict = run(&create(installer(), widget(json!({"group": group}))));
    assert!(verdict.allowed, "{group}: {verdict:?}");
}

#[test]
fn rule4_a_service_account_of_the_same_name_elsewhere_is_another_subject() {
    let impostor = user(
        "system:serviceaccount:default:installer",
        &["system:serviceaccounts"],
    );
    assert_denied(
        &run(&create(impostor, widget(json!({})))),
        &[NOT_AUTHORIZED],
    );
}

#[test]
fn rule4_system_masters_is_always_authorized() {
    let admin = user(
        "kubernetes-admin",
        &["system:masters", "system:authenticated"],
    );
    assert!(run(&create(admin, widget(json!({"group": "any-group"})))).allowed);
}

#[test]
fn rule4_a_namespaced_role_binding_grants_nothing_cluster_wide() {
    let bob = user("bob", &["system:authenticated"]);
    assert_denied(
        &run(&create(bob, widget(json!({})))),
        &[NOT_AUTHORIZED, "user \"bob\""],
    );
}

#[test]
fn rule4_an_unanswered_review_fails_closed() {
    let verdict = validate(
        &create(alice(), widget(json!({}))),
        &Settings::default(),
        &NoCluster,
    );
    assert_denied(
        &verdict,
        &[
            "kubernetes/can_i",
            "fails closed",
            "group \"widget-operator\"",
        ],
    );
    assert_eq!(verdict.code, Some(500));
}

#[test]
fn rule4_updates_are_checked_too() {
    let archived = widget(json!({"group": "cert-manager", "lifecycleState": "Archived"}));
    let old = widget(json!({"group": "cert-manager"}));
    assert_denied(
        &run(&request("UPDATE", alice(), archived, old)),
        &[NOT_AUTHORIZED],
    );
}

#[test]
fn rule5_deleting_a_revision_needs_the_grant_on_its_group() {
    let theirs = widget(json!({"group": "cert-manager"}));
    let verdict = run(&request("DELETE", alice(), Value::Null, theirs));
    assert_denied(&verdict, &[NOT_AUTHORIZED, "group \"cert-manager\""]);

    let own = run(&request("DELETE", alice(), Value::Null, widget(json!({}))));
    assert!(own.allowed, "{own:?}");
}

#[test]
fn rule5_a_label_only_revision_is_deleted_by_its_group_manager() {
    let theirs = legacy("cert-manager");
    let verdict = run(&request("DELETE", alice(), Value::Null, theirs.clone()));
    assert_denied(
        &verdict,
        &[
            NOT_AUTHORIZED,
            "may not manage group \"cert-manager\" (the group named by the label it is stored \
             with olm.operatorframework.io/owner-name=\"cert-manager\")",
        ],
    );
    let (verdict, asked) = asked(&request("DELETE", installer(), Value::Null, theirs));
    assert!(verdict.allowed, "{verdict:?}");
    assert_eq!(asked, vec![Some("cert-manager".to_string())]);
}

#[test]
fn rule5_revisions_in_no_group_are_deleted_unchecked() {
    let verdict = validate(
        &request("DELETE", alice(), Value::Null, legacy("")),
        &Settings::default(),
        &NoCluster,
    );
    assert!(verdict.allowed);
    let no_old = request("DELETE", alice(), Value::Null, Value::Null);
    assert!(validate(&no_old, &Settings::default(), &NoCluster).allowed);
}

#[rstest]
#[case::service_account_credentials("system:serviceaccount:kube-system:generic-garbage-collector")]
#[case::controller_manager_credentials("system:kube-controller-manager")]
fn rule5_the_garbage_collector_deletes_the_revisions_of_a_deleted_extension(
    #[case] collector: &str,
) {
    let gc = user(
        collector,
        &["system:serviceaccounts", "system:authenticated"],
    );
    let (verdict, asked) = asked(&request("DELETE", gc.clone(), Value::Null, legacy("x")));
    assert!(verdict.allowed, "{verdict:?}");
    assert!(asked.is_empty(), "{asked:?}");
    // Only on DELETE, and only for the users the setting names.
    assert_denied(
        &validate(
            &archive(gc.clone(), &legacy("x")),
            &Settings::default(),
            &cluster(),
        ),
        &[NOT_AUTHORIZED],
    );
    let none = Settings {
        garbage_collectors: Vec::new(),
        ..Settings::default()
    };
    let verdict = validate(
        &request("DELETE", gc, Value::Null, legacy("x")),
        &none,
        &cluster(),
    );
    assert_denied(&verdict, &[NOT_AUTHORIZED]);
}

#[test]
fn rule6_backfill_copies_the_label_then_checks_it() {
    let legacy = cos(
        "widget-operator-1",
        json!({"revision": 1, "lifecycleState": "Active"}),
        json!({OWNER_NAME_LABEL: "widget-operator"}),
    );
    let verdict = validate(&create(alice(), legacy.clone()), &backfill(), &cluster());
    assert!(verdict.allowed, "{verdict:?}");
    let mut expected = legacy;
    expected["spec"]["group"] = json!("widget-operator");
    assert_eq!(verdict.mutated_object, Some(expected));
    assert!(
        verdict
            .warnings
            .iter()
            .any(|w| w.contains("backfillGroupFromLabel"))
    );

    let theirs = cos(
        "cert-manager-1",
        json!({"revision": 1}),
        json!({OWNER_NAME_LABEL: "cert-manager"}),
    );
    let verdict = validate(&create(alice(), theirs), &backfill(), &cluster());
    assert_denied(&verdict, &[NOT_AUTHORIZED, "group \"cert-manager\""]);
    assert_eq!(verdict.mutated_object, None);
}

#[test]
fn rule6_backfill_on_update_respects_the_old_group() {
    let old = cos(
        "x",
        json!({"revision": 1}),
        json!({OWNER_NAME_LABEL: "widget-operator"}),
    );
    let verdict = validate(
        &request("UPDATE", alice(), old.clone(), old),
        &backfill(),
        &cluster(),
    );
    assert!(
        verdict.allowed && verdict.mutated_object.is_some(),
        "{verdict:?}"
    );

    let grouped = widget(json!({"group": "gadget"}));
    let relabelled = cos(
        "x",
        json!({"revision": 1}),
        json!({OWNER_NAME_LABEL: "widget-operator"}),
    );
    let verdict = validate(
        &request("UPDATE", alice(), relabelled, grouped),
        &backfill(),
        &cluster(),
    );
    assert_denied(&verdict, &["spec.group is immutable"]);
}

#[test]
fn rule6_backfill_creates_a_null_spec_and_leaves_grouped_objects_alone() {
    let bare = cos(
        "x",
        Value::Null,
        json!({OWNER_NAME_LABEL: "widget-operator"}),
    );
    let verdict = validate(&create(alice(), bare), &backfill(), &cluster());
    assert_eq!(
        verdict
            .mutated_object
            .as_ref()
            .and_then(|o| o.pointer("/spec/group")),
        Some(&json!("widget-operator"))
    );

    let grouped = validate(&create(alice(), widget(json!({}))), &backfill(), &cluster());
    assert!(grouped.allowed && grouped.mutated_object.is_none());

    let unlabelled = validate(
        &create(alice(), cos("x", json!({}), json!({}))),
        &backfill(),
        &cluster(),
    );
    assert_denied(&unlabelled, &["spec.group is required"]);
}

/// A revision created before spec.group, grouped by the label alone
/// (no label at all when `label` is empty).
fn legacy(label: &str) -> Value {
    let labels = if label.is_empty() {
        json!({})
    } else {
        json!({OWNER_NAME_LABEL: label, "olm.operatorframework.io/owner-kind": "ClusterExtension"})
    };
    cos(
        "legacy-1",
        json!({"revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent"}),
        labels,
    )
}

/// The stored object archived: the update operator-controller sends.
fn archive(user: Value, old: &Value) -> AdmissionRequest {
    let mut new = old.clone();
    new["spec"]["lifecycleState"] = json!("Archived");
    request("UPDATE", user, new, old.clone())
}

#[test]
fn legacy_update_is_authorized_by_its_label_and_warns() {
    let old = legacy("widget-operator");
    let verdict = run_required(&archive(alice(), &old));
    assert!(verdict.allowed, "{verdict:?}");
    assert_eq!(verdict.mutated_object, None);
    assert!(
        has_warning(
            &verdict,
            &[
                "no spec.group",
                "authorized by its label olm.operatorframework.io/owner-name=\"widget-operator\"",
                "set spec.group: widget-operator",
                "backfillGroupFromLabel",
            ]
        ),
        "{verdict:?}"
    );

    // The label is what rule 4 asks about.
    let recorder = recorder();
    let verdict = validate(&archive(alice(), &old), &Settings::default(), &recorder);
    assert!(verdict.allowed, "{verdict:?}");
    let reviews = recorder.reviews.borrow();
    assert_eq!(reviews.len(), 1);
    let attributes = &reviews[0].subject_access_review.resource_attributes;
    assert_eq!(attributes.verb, "manage");
    assert_eq!(attributes.subresource.as_deref(), Some("groups"));
    assert_eq!(attributes.name.as_deref(), Some("widget-operator"));

    // A CREATE of the same label-only object is still denied (rule 1).
    assert_denied(
        &run_required(&create(alice(), old)),
        &["spec.group is required", "set spec.group: widget-operator"],
    );
}

#[test]
fn legacy_update_of_another_groups_revision_is_denied() {
    let theirs = legacy("cert-manager");
    let verdict = run(&archive(alice(), &theirs));
    assert_denied(
        &verdict,
        &[
            NOT_AUTHORIZED,
            "user \"alice\"",
            "may not manage group \"cert-manager\" (the group named by its label \
             olm.operatorframework.io/owner-name=\"cert-manager\")",
            "resourceNames: [cert-manager]",
        ],
    );
    assert_eq!(verdict.code, Some(403));
    // The controller's ServiceAccount manages every group.
    let verdict = run(&archive(installer(), &theirs));
    assert!(verdict.allowed, "{verdict:?}");
}

#[test]
fn legacy_relabel_needs_the_old_and_the_new_group() {
    // alice manages widget-operator only: she can neither pull a
    // cert-manager revision into her group nor push hers out.
    let mut into_mine = legacy("widget-operator");
    let theirs = legacy("cert-manager");
    into_mine["spec"]["lifecycleState"] = json!("Archived");
    let verdict = run(&request("UPDATE", alice(), into_mine, theirs.clone()));
    assert_denied(
        &verdict,
        &[
            NOT_AUTHORIZED,
            "group \"cert-manager\" (the group this ClusterObjectSet is stored in, taken from \
             the label it is stored with olm.operatorframework.io/owner-name=\"cert-manager\"; \
             the update would move it to group \"widget-operator\"",
        ],
    );

    let verdict = run(&request(
        "UPDATE",
        alice(),
        theirs.clone(),
        legacy("widget-operator"),
    ));
    assert_denied(&verdict, &[NOT_AUTHORIZED, "group \"cert-manager\""]);

    // Removing the label still needs the group it had.
    let verdict = run(&request("UPDATE", alice(), legacy(""), theirs.clone()));
    assert_denied(
        &verdict,
        &[
            NOT_AUTHORIZED,
            "group \"cert-manager\"",
            "the update would take it out of that group",
        ],
    );
    let verdict = run(&request(
        "UPDATE",
        alice(),
        legacy(""),
        legacy("widget-operator"),
    ));
    assert!(
        verdict.allowed && verdict.warnings.is_empty(),
        "{verdict:?}"
    );
    // With requireSpecGroup, the same update is told to set spec.group.
    let verdict = run_required(&request(
        "UPDATE",
        alice(),
        legacy(""),
        legacy("widget-operator"),
    ));
    assert!(verdict.allowed, "{verdict:?}");
    assert!(
        has_warning(
            &verdict,
            &[
                "removes its label olm.operatorframework.io/owner-name=\"widget-operator\"",
                "no revision group",
                "set spec.group: widget-operator",
            ]
        ),
        "{verdict:?}"
    );

    // Whoever manages both may relabel; both groups are asked about.
    let (verdict, asked) = asked(&request(
        "UPDATE",
        installer(),
        legacy("widget-operator"),
        theirs,
    ));
    assert!(verdict.allowed, "{verdict:?}");
    assert_eq!(
        asked,
        vec![
            Some("widget-operator".to_string()),
            Some("cert-manager".to_string())
        ]
    );
}

#[test]
fn gaining_a_group_other_than_the_stored_label_needs_both_groups() {
    // alice manages widget-operator only: giving argocd-operator's
    // label-only revision spec.group widget-operator (and the matching
    // label) would pull it into her group.
    let theirs = legacy("argocd-operator");
    let mut into_mine = legacy("widget-operator");
    into_mine["spec"]["group"] = json!("widget-operator");
    let verdict = run(&request(
        "UPDATE",
        alice(),
        into_mine.clone(),
        theirs.clone(),
    ));
    assert_denied(
        &verdict,
        &[
            NOT_AUTHORIZED,
            "user \"alice\"",
            "may not manage group \"argocd-operator\" (the group this ClusterObjectSet is \
             stored in, taken from the label it is stored with \
             olm.operatorframework.io/owner-name=\"argocd-operator\"; the update would move \
             it to group \"widget-operator\", which needs the grant on both groups)",
            "resourceNames: [argocd-operator]",
        ],
    );
    assert_eq!(verdict.code, Some(403));

    // Whoever manages both may move it; the new group is asked first.
    let (verdict, asked) = asked(&request("UPDATE", installer(), into_mine, theirs));
    assert!(verdict.allowed, "{verdict:?}");
    assert_eq!(
        asked,
        vec![
            Some("widget-operator".to_string()),
            Some("argocd-operator".to_string())
        ]
    );
}

#[test]
fn gaining_the_group_of_the_stored_label_asks_once() {
    let old = legacy("widget-operator");
    let mut new = old.clone();
    new["spec"]["group"] = json!("widget-operator");
    let (verdict, asked) = asked(&request("UPDATE", alice(), new, old));
    assert!(verdict.allowed, "{verdict:?}");
    assert_eq!(asked, vec![Some("widget-operator".to_string())]);
}

#[test]
fn backfill_from_a_changed_label_needs_the_stored_group_too() {
    let theirs = legacy("argocd-operator");
    let relabelled = legacy("widget-operator");
    let verdict = validate(
        &request("UPDATE", alice(), relabelled.clone(), theirs.clone()),
        &backfill(),
        &cluster(),
    );
    assert_denied(
        &verdict,
        &[
            NOT_AUTHORIZED,
            "group \"argocd-operator\" (the group this ClusterObjectSet is stored in",
            "move it to group \"widget-operator\"",
        ],
    );
    assert_eq!(verdict.mutated_object, None);

    let verdict = validate(
        &request("UPDATE", installer(), relabelled, theirs),
        &backfill(),
        &cluster(),
    );
    assert!(
        verdict.allowed && verdict.mutated_object.is_some(),
        "{verdict:?}"
    );
}

/// A stored spec.group of the wrong type leaves the label as the group.
fn stored_group_of_the_wrong_type() -> Value {
    let mut odd_group = legacy("cert-manager");
    odd_group["spec"]["group"] = json!(7);
    odd_group
}

#[rstest]
#[case::group_of_the_wrong_type(stored_group_of_the_wrong_type())]
// An old object the typed reader refuses still names its group.
#[case::unreadable_spec(json!({
    "metadata": {"labels": {OWNER_NAME_LABEL: "cert-manager"}},
    "spec": "x",
}))]
fn the_stored_group_is_read_from_odd_old_objects_too(#[case] old: Value) {
    let verdict = run(&request("UPDATE", alice(), widget(json!({})), old));
    assert_denied(
        &verdict,
        &[
            NOT_AUTHORIZED,
            "group \"cert-manager\"",
            "move it to group \"widget-operator\"",
        ],
    );
}

#[test]
fn the_stored_group_check_fails_closed_like_every_other() {
    let verdict = validate(
        &request("UPDATE", alice(), widget(json!({})), legacy("cert-manager")),
        &Settings::default(),
        &NoCluster,
    );
    assert_denied(&verdict, &["kubernetes/can_i", "fails closed"]);
    assert_eq!(verdict.code, Some(500));
}

#[test]
fn legacy_update_that_adds_a_label_is_authorized_by_it() {
    let old = legacy("");
    assert_denied(
        &run(&request(
            "UPDATE",
            alice(),
            legacy("cert-manager"),
            old.clone(),
        )),
        &[NOT_AUTHORIZED, "group \"cert-manager\""],
    );
    let verdict = run_required(&request("UPDATE", alice(), legacy("widget-operator"), old));
    assert!(verdict.allowed, "{verdict:?}");
    assert!(has_warning(&verdict, &["set spec.group: widget-operator"]));
}

#[test]
fn legacy_update_with_a_label_fails_closed() {
    let verdict = validate(
        &archive(alice(), &legacy("widget-operator")),
        &Settings::default(),
        &NoCluster,
    );
    assert_denied(&verdict, &["kubernetes/can_i", "fails closed"]);
    assert_eq!(verdict.code, Some(500));
}

#[rstest]
#[case::required(require())]
#[case::backfill(backfill())]
fn ungrouped_update_is_accepted_with_a_warning(#[case] settings: Settings) {
    // Neither spec.group nor the label: no group to protect, nothing to
    // ask, so not even a failing authorizer stops it.
    let bob = user("bob", &["system:authenticated"]);
    let verdict = validate(&archive(bob.clone(), &legacy("")), &settings, &NoCluster);
    assert!(verdict.allowed, "{verdict:?}");
    assert_eq!(verdict.mutated_object, None);
    assert!(
        has_warning(
            &verdict,
            &[
                "neither spec.group nor label olm.operatorframework.io/owner-name",
                "no revision group to authorize against",
                "predates grouping",
                "set spec.group",
            ]
        ),
        "{verdict:?}"
    );
    // CREATE is still denied, with or without backfill.
    assert_denied(
        &run_required(&create(bob.clone(), legacy(""))),
        &["spec.group is required"],
    );
    let verdict = validate(&create(bob, legacy("")), &settings, &cluster());
    assert_denied(&verdict, &["spec.group is required"]);
}

#[test]
fn backfill_still_wins_on_a_legacy_update() {
    let verdict = validate(
        &archive(alice(), &legacy("widget-operator")),
        &backfill(),
        &cluster(),
    );
    assert!(verdict.allowed, "{verdict:?}");
    assert_eq!(
        verdict
            .mutated_object
            .as_ref()
            .and_then(|o| o.pointer("/spec/group")),
        Some(&json!("widget-operator"))
    );
    assert!(!has_warning(&verdict, &["label-only revisions"]));
}

#[rstest]
#[case::null(Value::Null)]
#[case::a_string(json!("x"))]
#[case::spec_a_list(json!({"spec": [1]}))]
fn the_legacy_exception_needs_a_readable_stored_object(#[case] old: Value) {
    // No readable stored object: judged like a CREATE.
    let verdict = run_required(&request("UPDATE", alice(), legacy("widget-operator"), old));
    assert_denied(&verdict, &["spec.group is required"]);
}

#[test]
fn the_legacy_exception_needs_a_stored_object_without_a_group() {
    let label_only = legacy("widget-operator");
    // A stored group of the wrong type is no proof of a legacy object.
    let mut odd_old = label_only.clone();
    odd_old["spec"]["group"] = json!(7);
    let verdict = run_required(&request("UPDATE", alice(), label_only.clone(), odd_old));
    assert_denied(&verdict, &["spec.group is required"]);
    // A stored group stays required (rule 2).
    let mut grouped_old = label_only.clone();
    grouped_old["spec"]["group"] = json!("widget-operator");
    let verdict = run_required(&request("UPDATE", alice(), label_only.clone(), grouped_old));
    assert_denied(&verdict, &["keep spec.group: widget-operator"]);
    // A new group of the wrong type is still named (rule 1).
    let mut odd_new = label_only.clone();
    odd_new["spec"]["group"] = json!(7);
    let verdict = run_required(&request("UPDATE", alice(), odd_new, label_only));
    assert_denied(&verdict, &["spec.group is a number (7)"]);
}

/// Shapes no API server would send; each gets a verdict, never a panic.
fn odd_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(-1.5),
        json!("spec"),
        json!([{"spec": {"group": "g"}}]),
        json!({"metadata": 1, "spec": {"group": "g"}}),
        json!({"metadata": {"labels": null, "name": null}, "spec": {"group": null}}),
        json!({"metadata": {"labels": {OWNER_NAME_LABEL: 7}}}),
        json!({"metadata": {"labels": {OWNER_NAME_LABEL: "g"}}, "spec": []}),
        json!({"spec": {"group": {"name": "g"}, "revision": "x"}}),
        json!({"spec": {"group": "widget-operator"}, "metadata": {"labels": []}}),
    ]
}

#[rstest]
fn odd_json_gets_a_verdict(
    #[values("CREATE", "UPDATE", "DELETE")] operation: &str,
    #[values(Settings::default(), backfill())] settings: Settings,
) {
    for object in odd_values() {
        for old in odd_values() {
            let r = request(operation, alice(), object.clone(), old.clone());
            let verdict = validate(&r, &settings, &cluster());
            if !verdict.allowed {
                assert_denied(&verdict, &[]);
            }
        }
    }
}

#[test]
fn settings_default_to_the_crd_operator_controller_ships_and_reject_unknown_keys() {
    let parsed: Settings = olm_guard_core::settings::parse(&Value::Null).unwrap();
    assert_eq!(parsed, Settings::default());
    assert!(!parsed.require_spec_group && !parsed.backfill_group_from_label);
    assert_eq!(
        parsed.garbage_collectors,
        GARBAGE_COLLECTORS.map(String::from)
    );
    let parsed: Settings = olm_guard_core::settings::parse(
        &json!({"requireSpecGroup": true, "backfillGroupFromLabel": true}),
    )
    .unwrap();
    assert_eq!(parsed, backfill());
    let err = olm_guard_core::settings::parse::<Settings>(&json!({"backfill": true})).unwrap_err();
    assert!(err.to_string().contains("backfill"), "{err}");
}

#[test]
fn settings_refuse_a_backfill_the_crd_would_drop_and_an_empty_collector() {
    let err = olm_guard_core::settings::parse::<Settings>(&json!({"backfillGroupFromLabel": true}))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("backfillGroupFromLabel: true needs requireSpecGroup: true"),
        "{err}"
    );
    let err =
        olm_guard_core::settings::parse::<Settings>(&json!({"garbageCollectors": ["gc", ""]}))
            .unwrap_err();
    assert!(
        err.to_string()
            .contains("settings.garbageCollectors[1] is empty"),
        "{err}"
    );
}

#[test]
fn label_only_revisions_are_authorized_by_their_label() {
    // What operator-controller creates on the CRD it ships: no spec.group,
    // the owner-name label naming the ClusterExtension.
    let (verdict, asked) = asked(&create(alice(), legacy("widget-operator")));
    assert!(
        verdict.allowed && verdict.warnings.is_empty(),
        "{verdict:?}"
    );
    assert_eq!(verdict.mutated_object, None);
    assert_eq!(asked, vec![Some("widget-operator".to_string())]);

    let verdict = run(&create(alice(), legacy("cert-manager")));
    assert_denied(
        &verdict,
        &[
            NOT_AUTHORIZED,
            "user \"alice\"",
            "may not manage group \"cert-manager\" (the group named by its label \
             olm.operatorframework.io/owner-name=\"cert-manager\")",
            "resourceNames: [cert-manager]",
        ],
    );
    assert_eq!(verdict.code, Some(403));
    assert!(run(&create(installer(), legacy("cert-manager"))).allowed);
    // Archiving by the controller's ServiceAccount: allowed, no warning.
    let verdict = run(&archive(installer(), &legacy("cert-manager")));
    assert!(
        verdict.allowed && verdict.warnings.is_empty(),
        "{verdict:?}"
    );
}

#[test]
fn revisions_in_no_group_are_admitted_without_a_review() {
    // operator-controller never lists a revision without the label as a
    // predecessor or successor (`listPreviousRevisions` returns nothing),
    // so it can take over no group's objects.
    let bob = user("bob", &["system:authenticated"]);
    for request in [
        create(bob.clone(), legacy("")),
        archive(bob.clone(), &legacy("")),
    ] {
        let (verdict, asked) = asked(&request);
        assert!(
            verdict.allowed && verdict.warnings.is_empty(),
            "{verdict:?}"
        );
        assert!(asked.is_empty(), "{asked:?}");
    }
}

#[test]
fn backfill_keeps_the_group_of_a_revision_re_applied_without_it() {
    // operator-controller re-applies a revision with server-side apply and
    // does not know spec.group: the apply drops the backfilled field, and
    // backfill writes it again from the label instead of refusing.
    let mut stored = legacy("widget-operator");
    stored["spec"]["group"] = json!("widget-operator");
    let reapplied = legacy("widget-operator");
    let verdict = validate(
        &request("UPDATE", alice(), reapplied, stored),
        &backfill(),
        &cluster(),
    );
    assert!(verdict.allowed, "{verdict:?}");
    assert_eq!(
        verdict
            .mutated_object
            .as_ref()
            .and_then(|o| o.pointer("/spec/group")),
        Some(&json!("widget-operator"))
    );
}
