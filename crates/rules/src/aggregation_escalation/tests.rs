use super::change::Change;
use super::*;
use crate::testing::{Probe, admission_request, assert_allowed, assert_denied, snapshot};
use olm_guard_core::protocol::ListAllResourcesRequest;
use olm_guard_core::{NoCluster, UserInfo};
use olm_guard_snapshot::Snapshot;
use rstest::rstest;
use serde_json::{Value, json};

/// Kubernetes' bootstrap ClusterRoles (admin/edit/view aggregation) and
/// bindings, the cert-manager bundle roles, and the test users' grants.
const BOOTSTRAP_ROLES: &str = include_str!("../../../rbac/tests/fixtures/cluster-roles.yaml");
const BOOTSTRAP_BINDINGS: &str =
    include_str!("../../../rbac/tests/fixtures/cluster-role-bindings.openshift-kubernetes.yaml");
const CERT_MANAGER_EDIT: &str =
    include_str!("../../../../testdata/aggregation-escalation/_fixtures/cert-manager-edit.yaml");
const CERT_MANAGER_VIEW: &str =
    include_str!("../../../../testdata/aggregation-escalation/_fixtures/cert-manager-view.yaml");
const CERT_MANAGER_CLUSTER_VIEW: &str = include_str!(
    "../../../../testdata/aggregation-escalation/_fixtures/cert-manager-cluster-view.yaml"
);
const USERS: &str =
    include_str!("../../../../testdata/aggregation-escalation/_fixtures/users.yaml");

fn cluster() -> Snapshot {
    snapshot(&[
        BOOTSTRAP_ROLES,
        BOOTSTRAP_BINDINGS,
        CERT_MANAGER_VIEW,
        CERT_MANAGER_CLUSTER_VIEW,
        USERS,
    ])
}

fn yaml(text: &str) -> Value {
    serde_yaml_ng::from_str(text).unwrap()
}

fn user(name: &str) -> UserInfo {
    UserInfo {
        username: name.into(),
        groups: vec!["system:authenticated".into()],
        ..UserInfo::default()
    }
}

fn request(operation: Operation, who: UserInfo, object: Value, old: Value) -> AdmissionRequest {
    let name = olm_guard_core::ObjectMeta::of(&object).name;
    admission_request(
        ["rbac.authorization.k8s.io", "v1", "ClusterRole"],
        "clusterroles",
        json!({
            "name": if operation == Operation::Create { String::new() } else { name },
            "operation": operation,
            "userInfo": who,
            "object": object,
            "oldObject": old,
        }),
    )
}

fn create(who: &str, object: Value) -> AdmissionRequest {
    request(Operation::Create, user(who), object, Value::Null)
}

fn update(who: &str, object: Value, old: Value) -> AdmissionRequest {
    request(Operation::Update, user(who), object, old)
}

fn strict() -> Settings {
    Settings::default()
}

fn covers_mode() -> Settings {
    Settings {
        mode: Mode::Covers,
        ..Settings::default()
    }
}

fn run(req: &AdmissionRequest, settings: &Settings) -> Verdict {
    validate(req, settings, &cluster())
}

fn aggregated(name: &str, selectors: Value) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name},
        "aggregationRule": {"clusterRoleSelectors": selectors},
        "rules": [],
    })
}

fn cert_manager_aggregate() -> Value {
    aggregated(
        "cert-manager-all",
        json!([{"matchLabels": {"app.kubernetes.io/name": "cert-manager"}}]),
    )
}

// --- scope --------------------------------------------------------------

fn another_kind() -> AdmissionRequest {
    let mut req = create("nobody", aggregated("x", json!([{}])));
    req.kind.kind = "Role".into();
    req
}

fn a_subresource() -> AdmissionRequest {
    let mut req = create("nobody", aggregated("x", json!([{}])));
    req.sub_resource = Some("status".into());
    req
}

fn a_delete() -> AdmissionRequest {
    request(
        Operation::Delete,
        user("nobody"),
        Value::Null,
        aggregated("x", json!([{}])),
    )
}

/// No cluster at all: acceptance proves these requests are not looked at.
#[rstest]
#[case::another_kind(another_kind())]
#[case::a_subresource(a_subresource())]
#[case::a_delete(a_delete())]
fn other_kinds_subresources_and_deletes_are_untouched(#[case] req: AdmissionRequest) {
    assert_allowed(&validate(&req, &strict(), &NoCluster));
}

// --- rule 1: bypasses -----------------------------------------------------

#[test]
fn system_masters_bypasses_everything() {
    let mut who = user("root");
    who.groups.push(SYSTEM_MASTERS.into());
    let req = request(
        Operation::Create,
        who,
        aggregated("x", json!([{}])),
        Value::Null,
    );
    // No lookup at all: NoCluster would fail any.
    assert_allowed(&validate(&req, &strict(), &NoCluster));
}

#[test]
fn escalate_on_clusterroles_bypasses() {
    assert_allowed(&run(
        &create("escalator", aggregated("x", json!([{}]))),
        &strict(),
    ));
    let edit = yaml(CERT_MANAGER_EDIT);
    assert_allowed(&run(&create("escalator", edit), &strict()));
}

#[test]
fn escalate_restricted_by_name_helps_on_update_only() {
    let old = aggregated("team-agg", json!([{"matchLabels": {"team": "a"}}]));
    let new = aggregated("team-agg", json!([{"matchLabels": {"team": "b"}}]));
    assert_allowed(&run(
        &update("named-escalator", new.clone(), old),
        &strict(),
    ));
    // A CREATE has no name, so the grant on "team-agg" does not apply.
    assert_denied(
        &run(&create("named-escalator", new), &strict()),
        &["aggregationRule"],
    );
    // On another role's update it does not apply either.
    let other_old = aggregated("other", json!([{"matchLabels": {"team": "a"}}]));
    let other_new = aggregated("other", json!([{"matchLabels": {"team": "b"}}]));
    assert_denied(
        &run(&update("named-escalator", other_new, other_old), &strict()),
        &["\"other\""],
    );
}

#[test]
fn owner_references_and_finalizers_only_updates_pass() {
    let old = aggregated("team-agg", json!([{"matchLabels": {"team": "a"}}]));
    let mut new = old.clone();
    new["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "u"}]);
    new["metadata"]["finalizers"] = json!(["example.com/cleanup"]);
    new["metadata"]["resourceVersion"] = json!("42");
    assert_allowed(&validate(
        &update("nobody", new.clone(), old.clone()),
        &strict(),
        &NoCluster,
    ));
    // Anything else changing is checked.
    new["metadata"]["labels"] = json!({"x": "y"});
    assert_denied(
        &run(&update("nobody", new, old), &strict()),
        &["aggregationRule"],
    );
}

// --- rule 2: strict -------------------------------------------------------

#[test]
fn strict_needs_full_authority() {
    let v = run(&create("rbac-editor", cert_manager_aggregate()), &strict());
    let message = assert_denied(
        &v,
        &[
            "ClusterRole \"cert-manager-all\" sets aggregationRule",
            "must have cluster-admin privileges to use the aggregationRule",
            "user \"rbac-editor\" (groups=[system:authenticated])",
            r#"{APIGroups:["*"], Resources:["*"], Verbs:["*"]}"#,
            r#"{NonResourceURLs:["*"], Verbs:["*"]}"#,
            "Remove aggregationRule",
        ],
    );
    assert_eq!(v.code, Some(403), "{message}");
}

#[test]
fn strict_checks_the_old_object_too() {
    let old = aggregated("team-agg", json!([{"matchLabels": {"team": "a"}}]));
    let new = json!({"metadata": {"name": "team-agg"}, "rules": []});
    assert_denied(
        &run(&update("rbac-editor", new, old), &strict()),
        &["ClusterRole \"team-agg\" had an aggregationRule, so changing it"],
    );
}

/// Whoever holds full authority also holds `escalate` and is waved
/// through by rule 1, so the check itself is tested directly.
#[test]
fn full_authority_check() {
    let user = olm_guard_core::UserInfo::default();
    let wanted = olm_guard_rbac::cluster::Wanted {
        user: &user,
        selected_by: &[],
        aggregated: false,
    };
    // The whole store, as a batch loads it.
    let cluster = cluster();
    let batch = olm_guard_core::shared::Batch::new(&cluster);
    let store = olm_guard_rbac::cluster::load(&batch, "", &wanted).unwrap();
    let check = |who: &str| {
        let req = create(who, cert_manager_aggregate());
        let change = Change::new(&req, parse_role(&req.object, "object").unwrap(), None);
        change.check_full_authority(&store)
    };
    assert_eq!(check("cluster-admin-user"), None);
    assert!(check("rbac-editor").is_some());
    assert_allowed(&run(
        &create("cluster-admin-user", cert_manager_aggregate()),
        &strict(),
    ));
}

#[test]
fn empty_selector_list_needs_nothing() {
    let role = aggregated("empty", json!([]));
    assert_allowed(&run(&create("creator", role.clone()), &strict()));
    assert_allowed(&run(
        &create(
            "creator",
            json!({"metadata": {"name": "plain"}, "rules": []}),
        ),
        &strict(),
    ));
}

// --- rule 3: covers -------------------------------------------------------

#[test]
fn covers_mode_allows_collecting_held_rules() {
    let mut s = cluster();
    s.add_yaml(CERT_MANAGER_EDIT).unwrap();
    let req = create("cert-manager-installer", cert_manager_aggregate());
    assert_allowed(&validate(&req, &covers_mode(), &s));
    // Strict mode still refuses it.
    assert!(!validate(&req, &strict(), &s).allowed);
}

#[test]
fn covers_mode_lists_the_missing_rules_and_their_roles() {
    let role = aggregated(
        "views",
        json!([{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]),
    );
    let v = run(&create("cert-manager-installer", role), &covers_mode());
    let message = assert_denied(
        &v,
        &[
            "ClusterRole \"views\" sets aggregationRule",
            "(mode covers)",
            "selected ClusterRole \"system:aggregate-to-view\":",
            r#"{APIGroups:[""], Resources:["configmaps"], Verbs:["get" "list" "watch"]}"#,
            "aggregationRule.clusterRoleSelectors",
        ],
    );
    // cert-manager-view is selected too, but its rules are held.
    assert!(!message.contains("cert-manager-view"), "{message}");
}

#[test]
fn covers_mode_empty_selector_selects_everything() {
    let v = run(
        &create("cert-manager-installer", aggregated("all", json!([{}]))),
        &covers_mode(),
    );
    assert_denied(
        &v,
        &[
            "selected ClusterRoles \"cluster-admin\", \"system:aggregate-to-admin\"",
            "and 19 more:",
            r#"{APIGroups:["*"], Resources:["*"], Verbs:["*""#,
            r#"{NonResourceURLs:["*"], Verbs:["*"]}"#,
        ],
    );
}

#[test]
fn covers_mode_expressions() {
    let role = aggregated(
        "cm",
        json!([{"matchExpressions": [
            {"key": "app.kubernetes.io/name", "operator": "In", "values": ["cert-manager"]},
            {"key": "rbac.authorization.k8s.io/aggregate-to-edit", "operator": "DoesNotExist"},
        ]}]),
    );
    // Selects only cert-manager-cluster-view, whose rules the user holds.
    assert_allowed(&run(
        &create("cert-manager-installer", role),
        &covers_mode(),
    ));
    let role = aggregated(
        "cm",
        json!([{"matchExpressions": [
            {"key": "kubernetes.io/bootstrapping", "operator": "Exists"},
            {"key": "rbac.authorization.k8s.io/aggregate-to-edit", "operator": "NotIn", "values": ["false"]},
            {"key": "rbac.authorization.k8s.io/aggregate-to-edit", "operator": "Exists"},
        ]}]),
    );
    // Selects system:aggregate-to-edit (and view): not held.
    assert_denied(
        &run(&create("cert-manager-installer", role), &covers_mode()),
        &["\"system:aggregate-to-edit\""],
    );
}

#[test]
fn covers_mode_rejects_invalid_selectors() {
    let role = aggregated(
        "bad",
        json!([{"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["b"]}]}]),
    );
    let v = run(&create("cert-manager-installer", role), &covers_mode());
    assert_denied(
        &v,
        &[
            "object.aggregationRule.clusterRoleSelectors[0]",
            "\"Equals\" is not a valid",
        ],
    );
    assert_eq!(v.code, Some(400));
}

#[test]
fn covers_mode_ignores_the_role_itself() {
    // An update of an existing aggregated role that selects itself
    // needs nothing for its own rules.
    let old = json!({"metadata": {"name": "self-agg", "labels": {"agg": "me"}},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "me"}}]},
        "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]});
    let mut new = old.clone();
    new["metadata"]["annotations"] = json!({"note": "x"});
    let mut s = cluster();
    s.add(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": old["metadata"], "aggregationRule": old["aggregationRule"], "rules": old["rules"]})).unwrap();
    assert_allowed(&validate(
        &update("cert-manager-installer", new, old),
        &covers_mode(),
        &s,
    ));
}

// --- rule 4: feeding ------------------------------------------------------

#[test]
fn creating_a_feeding_role_needs_update_on_the_targets() {
    let v = run(
        &create("cert-manager-installer", yaml(CERT_MANAGER_EDIT)),
        &strict(),
    );
    assert_denied(
        &v,
        &[
            "ClusterRole \"cert-manager-edit\" would feed the aggregated ClusterRoles \"admin\", \"edit\"",
            "\"admin\" aggregates roles matching \"rbac.authorization.k8s.io/aggregate-to-admin=true\"",
            "may not update ClusterRoles \"admin\", \"edit\"",
            "metadata.labels",
            "allowFeeding",
        ],
    );
    assert_allowed(&run(
        &create("role-maintainer", yaml(CERT_MANAGER_EDIT)),
        &strict(),
    ));
}

/// A role that only may feed others is judged from one list of the
/// ClusterRoles masked to their aggregationRule: no rules, no bindings.
#[test]
fn a_feeding_role_lists_the_aggregated_roles_alone() {
    let snapshot = cluster();
    let probe = Probe::new(&snapshot);
    let request = create("cert-manager-installer", yaml(CERT_MANAGER_EDIT));
    let verdict = validate(&request, &strict(), &probe);
    assert_eq!(verdict, run(&request, &strict()));
    assert_eq!(
        *probe.list_all_requests.borrow(),
        vec![
            ListAllResourcesRequest::new("rbac.authorization.k8s.io/v1", "ClusterRole")
                .field_masks(["aggregationRule"])
        ]
    );
}

#[test]
fn allow_feeding_exempts_targets() {
    let settings = Settings {
        allow_feeding: vec!["admin".into(), "edit".into()],
        ..Settings::default()
    };
    assert_allowed(&run(
        &create("cert-manager-installer", yaml(CERT_MANAGER_EDIT)),
        &settings,
    ));
    let only_admin = Settings {
        allow_feeding: vec!["admin".into()],
        ..Settings::default()
    };
    let v = run(
        &create("cert-manager-installer", yaml(CERT_MANAGER_EDIT)),
        &only_admin,
    );
    let message = assert_denied(&v, &["the aggregated ClusterRole \"edit\" ("]);
    assert!(!message.contains("\"admin\""), "{message}");
}

#[test]
fn labels_nobody_aggregates_are_free() {
    // aggregate-to-cluster-reader is an OpenShift role absent here.
    assert_allowed(&run(
        &create("cert-manager-installer", yaml(CERT_MANAGER_CLUSTER_VIEW)),
        &strict(),
    ));
}

#[test]
fn feeding_updates() {
    let old = yaml(CERT_MANAGER_VIEW);
    // Metadata-only change of an existing feeder: nothing new flows.
    let mut annotated = old.clone();
    annotated["metadata"]["annotations"] = json!({"note": "x"});
    assert_allowed(&run(
        &update("cert-manager-installer", annotated, old.clone()),
        &strict(),
    ));
    // Removing a rule adds nothing either.
    let mut fewer = old.clone();
    fewer["rules"] = json!([fewer["rules"][0].clone()]);
    assert_allowed(&run(
        &update("cert-manager-installer", fewer, old.clone()),
        &strict(),
    ));
    // Adding a rule flows into admin, edit and view.
    let mut more = old.clone();
    more["rules"]
        .as_array_mut()
        .unwrap()
        .push(json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}));
    assert_denied(
        &run(
            &update("cert-manager-installer", more, old.clone()),
            &strict(),
        ),
        &["adds rules that flow into the aggregated ClusterRoles \"admin\", \"edit\", \"view\""],
    );
    // Relabelling to feed one more role: only that role is checked.
    let mut edit_old = yaml(CERT_MANAGER_EDIT);
    edit_old["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove("rbac.authorization.k8s.io/aggregate-to-admin");
    let v = run(
        &update("cert-manager-installer", yaml(CERT_MANAGER_EDIT), edit_old),
        &strict(),
    );
    let message = assert_denied(
        &v,
        &["is relabelled to feed the aggregated ClusterRole \"admin\""],
    );
    assert!(!message.contains("\"edit\""), "{message}");
}

#[test]
fn both_problems_are_reported_together() {
    let mut role = cert_manager_aggregate();
    role["metadata"]["labels"] = json!({"rbac.authorization.k8s.io/aggregate-to-view": "true"});
    let v = run(&create("rbac-editor-no-update", role), &strict());
    assert_denied(
        &v,
        &[
            "must have cluster-admin privileges",
            " Also: ",
            "would feed the aggregated ClusterRole \"view\"",
        ],
    );
}

// --- bad input and failing lookups ---------------------------------------

#[rstest]
#[case::object_not_an_object(
    create("rbac-editor", json!("role")),
    "request.object must be a ClusterRole object"
)]
#[case::verbs_not_a_list(
    create("rbac-editor", json!({"metadata": {"name": "x"}, "rules": [{"verbs": "get"}]})),
    "rules[0].verbs: invalid type"
)]
#[case::selectors_not_a_list(
    create(
        "rbac-editor",
        json!({"aggregationRule": {"clusterRoleSelectors": {"matchLabels": {}}}})
    ),
    "aggregationRule.clusterRoleSelectors: invalid type"
)]
#[case::old_object_missing(
    update("rbac-editor", aggregated("x", json!([{}])), Value::Null),
    "request.oldObject must be a ClusterRole object"
)]
fn malformed_objects_are_named(#[case] req: AdmissionRequest, #[case] expected: &str) {
    let v = validate(&req, &strict(), &NoCluster);
    assert_denied(&v, &[expected]);
    assert_eq!(v.code, Some(400));
}

#[test]
fn nulls_are_absent_not_errors() {
    let req = create(
        "creator",
        json!({"metadata": {"name": "n", "labels": null}, "rules": null, "aggregationRule": null}),
    );
    assert_allowed(&run(&req, &strict()));
}

#[test]
fn failing_lookups_fail_closed() {
    let v = validate(
        &create("rbac-editor", cert_manager_aggregate()),
        &strict(),
        &NoCluster,
    );
    assert_denied(
        &v,
        &[
            "the cluster's ClusterRoles and ClusterRoleBindings",
            "fails closed",
        ],
    );
    assert_eq!(v.code, Some(500));

    // Lists from a snapshot, but every can_i fails.
    let snapshot = cluster();
    let no_can_i = Probe::new(&snapshot).failing_can_i("can_i is down");
    let v = validate(
        &create("rbac-editor", cert_manager_aggregate()),
        &strict(),
        &no_can_i,
    );
    assert_denied(
        &v,
        &[
            "whether the user may escalate ClusterRoles",
            "can_i is down",
        ],
    );
    // A plain role feeding nothing needs no can_i at all.
    let plain = json!({"metadata": {"name": "plain"}, "rules": []});
    assert_allowed(&validate(
        &create("rbac-editor", plain),
        &strict(),
        &no_can_i,
    ));
}

#[test]
fn settings() {
    use olm_guard_core::settings::parse;
    assert_eq!(
        parse::<Settings>(&Value::Null).unwrap(),
        Settings::default()
    );
    let s: Settings = parse(&json!({"mode": "covers", "allowFeeding": ["admin"]})).unwrap();
    assert_eq!(s.mode, Mode::Covers);
}

#[rstest]
#[case::unknown_mode(json!({"mode": "loose"}), "unknown variant `loose`")]
#[case::misspelt_field(json!({"allowFeding": []}), "unknown field `allowFeding`")]
#[case::empty_name(json!({"allowFeeding": [""]}), "allowFeeding contains an empty name")]
fn invalid_settings_are_refused(#[case] settings: Value, #[case] expected: &str) {
    let err = olm_guard_core::settings::parse::<Settings>(&settings).unwrap_err();
    assert!(err.to_string().contains(expected), "{err}");
}

/// 5,000 ClusterRoles and 5,000 bindings still reach the right verdicts
/// (speed is measured by `olm-guard bench --workload rbac-5k`, not here).
#[test]
fn large_cluster_reaches_the_right_verdicts() {
    let mut objects = Vec::new();
    for i in 0..5000 {
        objects.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": format!("role-{i}"), "labels": {"team": format!("t{}", i % 50)}},
            "rules": [{"verbs": ["get"], "apiGroups": ["example.com"], "resources": [format!("r{i}")]}]}));
        objects.push(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": format!("b-{i}")},
            "subjects": [{"kind": "User", "name": format!("u-{}", i % 100)}],
            "roleRef": {"kind": "ClusterRole", "name": format!("role-{i}")}}),
        );
    }
    for i in 0..20 {
        objects.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": format!("agg-{i}")},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"team": format!("t{i}")}}]}}));
    }
    let s = Snapshot::from_objects(objects);
    let everything = aggregated("everything", json!([{}]));
    let v = validate(&create("u-1", everything), &covers_mode(), &s);
    assert_denied(&v, &["and 4930 more"]);
    let feeder = json!({"metadata": {"name": "feeder", "labels": {"team": "t3"}}, "rules": []});
    assert_denied(
        &validate(&create("u-1", feeder), &strict(), &s),
        &["\"agg-3\""],
    );
}
