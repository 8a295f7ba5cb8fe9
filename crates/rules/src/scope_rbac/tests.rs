use olm_guard_core::{AdmissionRequest, NoCluster, Verdict};
use olm_guard_olm::scope::{self, ScopeInstance};
use olm_guard_snapshot::Snapshot;
use rstest::rstest;
use serde_json::{Value, json};

use super::cluster_scoped::is_cluster_scoped;
use super::instance::targets;
use super::{Settings, validate};
use crate::testing::{Probe, admission_request, assert_allowed, message, snapshot};

/// RBAC of the tests: oria's real manager ClusterRole bound to its
/// ServiceAccount, and users holding the tutorial template's rules in
/// different places.
const RBAC: &str = include_str!("fixtures/rbac.yaml");

const ORIA_SA: &str = "system:serviceaccount:oria-system:oria-controller-manager";

/// The tutorial ScopeTemplate of the oria operator (awgreene/oria-operator),
/// as stored in crates/olm, in `group`.
fn tutorial_template(group: &str) -> Value {
    let mut template: Value = serde_json::from_str(include_str!(
        "../../../olm/tests/fixtures/oria-tutorial-scopetemplate.json"
    ))
    .unwrap();
    template["apiVersion"] = json!(scope::api_version(group));
    template
}

/// A template whose second entry asks for secrets nobody but masters holds.
fn two_entry_template(group: &str) -> Value {
    let mut template = tutorial_template(group);
    template["metadata"]["name"] = json!("two-entries");
    template["spec"]["clusterRoles"]
        .as_array_mut()
        .unwrap()
        .push(json!({
            "generateName": "secret-reader",
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "watch", "list"]}],
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]
        }));
    template
}

fn cluster_with(templates: &[Value]) -> Snapshot {
    let mut snapshot = snapshot(&[RBAC]);
    for template in templates {
        snapshot.add(template.clone()).unwrap();
    }
    snapshot
}

fn user(name: &str) -> Value {
    let groups: Vec<&str> = match name {
        "root" => vec!["system:masters", "system:authenticated"],
        ORIA_SA => vec![
            "system:serviceaccounts",
            "system:serviceaccounts:oria-system",
            "system:authenticated",
        ],
        _ => vec!["system:authenticated"],
    };
    json!({"username": name, "groups": groups})
}

fn request(operation: &str, object: &Value, username: &str) -> AdmissionRequest {
    let api_version = object["apiVersion"]
        .as_str()
        .unwrap_or("operators.coreos.com/v1alpha1");
    let (group, version) = api_version.split_once('/').unwrap();
    let kind = object["kind"].as_str().unwrap_or("");
    admission_request(
        [group, version, kind],
        &format!("{}s", kind.to_lowercase()),
        json!({
            "name": object["metadata"]["name"],
            "operation": operation,
            "userInfo": user(username),
            "object": object,
        }),
    )
}

fn instance(group: &str, template: &str, namespaces: &[&str]) -> Value {
    json!({
        "apiVersion": scope::api_version(group),
        "kind": "ScopeInstance",
        "metadata": {"name": "instance"},
        "spec": {"scopeTemplateName": template, "namespaces": namespaces}
    })
}

fn settings() -> Settings {
    Settings::default()
}

fn forbid_cluster_scoped() -> Settings {
    Settings {
        forbid_cluster_scoped_resources: true,
        ..Settings::default()
    }
}

fn pending_allowed() -> Settings {
    Settings {
        allow_pending_template: true,
        ..Settings::default()
    }
}

#[track_caller]
fn assert_denied(verdict: &Verdict, code: u16, parts: &[&str]) {
    crate::testing::assert_denied(verdict, parts);
    assert_eq!(verdict.code, Some(code), "{}", message(verdict));
}

// ------------------------------------------------------------ scope of the policy

/// A request by erin for the two-entry template, changed by `change`.
fn untouched(operation: &str, change: fn(&mut AdmissionRequest)) -> AdmissionRequest {
    let template = two_entry_template(scope::ORIA_GROUP);
    let mut request = request(operation, &template, "erin");
    change(&mut request);
    request
}

/// No cluster at all: any lookup would fail closed, so acceptance proves
/// these requests are not looked at.
#[rstest]
#[case::delete(untouched("DELETE", |r| r.old_object = two_entry_template(scope::ORIA_GROUP)))]
#[case::connect(untouched("CONNECT", |_| {}))]
#[case::status(untouched("UPDATE", |r| r.sub_resource = Some("status".into())))]
#[case::other_group(untouched("CREATE", |r| r.kind.group = "example.com".into()))]
#[case::other_kind(untouched("CREATE", |r| r.kind.kind = "ClusterRole".into()))]
fn other_requests_pass_untouched(#[case] request: AdmissionRequest) {
    assert_allowed(&validate(&request, &settings(), &NoCluster));
}

#[test]
fn settings_are_camel_case_and_strict() {
    let parsed: Settings = olm_guard_core::settings::parse(&json!({
        "forbidClusterScopedResources": true, "allowPendingTemplate": true
    }))
    .unwrap();
    assert_eq!(
        parsed,
        Settings {
            forbid_cluster_scoped_resources: true,
            allow_pending_template: true
        }
    );
    assert_eq!(
        olm_guard_core::settings::parse::<Settings>(&Value::Null).unwrap(),
        Settings::default()
    );
    let error = olm_guard_core::settings::parse::<Settings>(&json!({"forbidClusterScoped": true}))
        .unwrap_err();
    assert!(error.to_string().contains("forbidClusterScoped"), "{error}");
}

// ------------------------------------------------------------ ScopeTemplate

#[rstest]
#[case::oria_group(scope::ORIA_GROUP)]
#[case::olm_group(scope::OLM_GROUP)]
fn template_needs_rules_held_cluster_wide(#[case] group: &str) {
    let cluster = cluster_with(&[]);
    let template = tutorial_template(group);
    // alice holds the tutorial's rules through a ClusterRoleBinding.
    assert_allowed(&validate(
        &request("CREATE", &template, "alice"),
        &settings(),
        &cluster,
    ));
    assert_allowed(&validate(
        &request("UPDATE", &template, "alice"),
        &settings(),
        &cluster,
    ));
    // bob holds them only in team-a: ClusterRoles are cluster-wide.
    let verdict = validate(&request("CREATE", &template, "bob"), &settings(), &cluster);
    assert_denied(
        &verdict,
        403,
        &[
            "ScopeTemplate \"scopetemplate-sample-manager\"",
            "user \"bob\" (groups=[system:authenticated])",
            "spec.clusterRoles[0] (\"manager-role\") needs",
            r#"{APIGroups:["*"], Resources:["deployments"], Verbs:["create" "delete" "get" "list" "patch" "update" "watch"]}"#,
            r#"{APIGroups:["cache.example.com"], Resources:["memcacheds/finalizers"], Verbs:["update"]}"#,
        ],
    );
    assert_denied(
        &validate(&request("UPDATE", &template, "erin"), &settings(), &cluster),
        403,
        &["user \"erin\""],
    );
}

#[test]
fn template_denial_names_only_the_uncovered_entry() {
    let cluster = cluster_with(&[]);
    let template = two_entry_template(scope::OLM_GROUP);
    let verdict = validate(
        &request("CREATE", &template, "alice"),
        &settings(),
        &cluster,
    );
    assert_denied(
        &verdict,
        403,
        &[
            "spec.clusterRoles[1] (\"secret-reader\") needs [{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"watch\" \"list\"]}]",
        ],
    );
    assert!(
        !message(&verdict).contains("manager-role"),
        "{}",
        message(&verdict)
    );
}

#[test]
fn escalate_or_system_masters_may_create_any_template() {
    let cluster = cluster_with(&[]);
    let template = two_entry_template(scope::ORIA_GROUP);
    assert_allowed(&validate(
        &request("CREATE", &template, "dave"),
        &settings(),
        &cluster,
    ));
    assert_allowed(&validate(
        &request("CREATE", &template, ORIA_SA),
        &settings(),
        &cluster,
    ));
    // system:masters needs no lookup at all.
    assert_allowed(&validate(
        &request("CREATE", &template, "root"),
        &settings(),
        &NoCluster,
    ));
}

#[test]
fn escalate_restricted_by_name_does_not_count() {
    // A ClusterRole CREATE has no name, so only an unrestricted escalate
    // lets oria create ClusterRoles of any name on the user's behalf.
    let mut cluster = cluster_with(&[]);
    cluster
        .add_yaml(include_str!("fixtures/escalate-one.yaml"))
        .unwrap();
    let template = tutorial_template(scope::ORIA_GROUP);
    assert_denied(
        &validate(
            &request("CREATE", &template, "frank"),
            &settings(),
            &cluster,
        ),
        403,
        &["user \"frank\""],
    );
}

#[rstest]
#[case::empty(json!(""), "it is empty")]
#[case::null(json!(null), "it is empty")]
#[case::slash(json!("a/b"), "'/'")]
#[case::dot_dot(json!(".."), "\"..\" is not allowed")]
fn generate_name_must_be_a_cluster_role_name_even_for_masters(
    #[case] bad: Value,
    #[case] why: &str,
) {
    let mut template = tutorial_template(scope::ORIA_GROUP);
    template["spec"]["clusterRoles"][0]["generateName"] = bad;
    let verdict = validate(
        &request("CREATE", &template, "root"),
        &settings(),
        &NoCluster,
    );
    assert_denied(
        &verdict,
        403,
        &[
            "spec.clusterRoles[0].generateName is not a valid ClusterRole name",
            why,
        ],
    );
}

#[test]
fn generate_name_is_required_even_for_masters() {
    let mut template = tutorial_template(scope::ORIA_GROUP);
    template["spec"]["clusterRoles"][0]
        .as_object_mut()
        .unwrap()
        .remove("generateName");
    assert_denied(
        &validate(
            &request("CREATE", &template, "root"),
            &settings(),
            &NoCluster,
        ),
        403,
        &["generateName"],
    );
}

#[test]
fn service_account_subjects_need_a_namespace() {
    let mut template = tutorial_template(scope::OLM_GROUP);
    template["spec"]["clusterRoles"][0]["subjects"] = json!([
        {"kind": "User", "name": "jane"},
        {"kind": "Group", "name": "devs"},
        {"kind": "ServiceAccount", "name": "fooServiceAccount", "namespace": null}
    ]);
    let verdict = validate(
        &request("CREATE", &template, "root"),
        &settings(),
        &NoCluster,
    );
    assert_denied(
        &verdict,
        403,
        &[
            "spec.clusterRoles[0].subjects[2] (ServiceAccount \"fooServiceAccount\") has no namespace",
            "set spec.clusterRoles[0].subjects[2].namespace",
        ],
    );
    assert!(
        !message(&verdict).contains("subjects[0]") && !message(&verdict).contains("subjects[1]")
    );

    template["spec"]["clusterRoles"][0]["subjects"][2]["namespace"] = json!("foo");
    assert_allowed(&validate(
        &request("CREATE", &template, "root"),
        &settings(),
        &NoCluster,
    ));
}

#[test]
fn shape_problems_are_reported_together() {
    let mut template = two_entry_template(scope::OLM_GROUP);
    template["spec"]["clusterRoles"][0]["generateName"] = json!("");
    template["spec"]["clusterRoles"][1]["subjects"][0]["namespace"] = json!("");
    let verdict = validate(
        &request("CREATE", &template, "root"),
        &settings(),
        &NoCluster,
    );
    assert_denied(
        &verdict,
        403,
        &[
            "spec.clusterRoles[0].generateName",
            "spec.clusterRoles[1].subjects[0]",
        ],
    );
}

#[rstest]
#[case::nodes("", "nodes", true)]
#[case::a_subresource_of_nodes("", "nodes/proxy", true)]
#[case::namespaces("", "namespaces", true)]
#[case::namespaces_in_any_group("*", "namespaces", true)]
#[case::clusterroles("rbac.authorization.k8s.io", "clusterroles", true)]
#[case::oria_scopetemplates("operators.io.operator-framework", "scopetemplates", true)]
#[case::any_resource("apps", "*", true)]
#[case::any_status_subresource("", "*/status", true)]
#[case::pods("", "pods", false)]
#[case::deployments_in_any_group("*", "deployments", false)]
#[case::rolebindings("rbac.authorization.k8s.io", "rolebindings", false)]
// The resource name alone does not make it cluster-scoped.
#[case::nodes_of_another_group("example.com", "nodes", false)]
#[case::namespaces_of_another_group("apps", "namespaces", false)]
fn cluster_scoped_resources_are_known_by_group_and_name(
    #[case] group: &str,
    #[case] resource: &str,
    #[case] cluster_scoped: bool,
) {
    assert_eq!(
        is_cluster_scoped(group, resource),
        cluster_scoped,
        "{group} {resource}"
    );
}

#[test]
fn forbid_cluster_scoped_resources_accepts_namespaced_rules() {
    let cluster = cluster_with(&[]);
    let tutorial = tutorial_template(scope::ORIA_GROUP);
    // The tutorial only names namespaced resources.
    assert_allowed(&validate(
        &request("CREATE", &tutorial, "alice"),
        &forbid_cluster_scoped(),
        &cluster,
    ));
}

#[rstest]
#[case::nodes(
    json!({"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}),
    "cluster-scoped resources nodes"
)]
#[case::namespaces_in_any_group(
    json!({"apiGroups": ["*"], "resources": ["namespaces", "pods"], "verbs": ["get"]}),
    "cluster-scoped resources namespaces"
)]
#[case::any_resource(
    json!({"apiGroups": ["apps"], "resources": ["*"], "verbs": ["get"]}),
    "cluster-scoped resources *"
)]
#[case::clusterroles(
    json!({"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["get"]}),
    "clusterroles"
)]
#[case::non_resource_urls(
    json!({"nonResourceURLs": ["/metrics"], "verbs": ["get"]}),
    "non-resource URLs /metrics"
)]
fn forbid_cluster_scoped_resources_setting(#[case] rule: Value, #[case] expected: &str) {
    let mut template = tutorial_template(scope::ORIA_GROUP);
    template["spec"]["clusterRoles"][0]["rules"]
        .as_array_mut()
        .unwrap()
        .push(rule);
    // Even system:masters: it is about what oria would create.
    let verdict = validate(
        &request("CREATE", &template, "root"),
        &forbid_cluster_scoped(),
        &NoCluster,
    );
    assert_denied(
        &verdict,
        403,
        &[
            "spec.clusterRoles[0].rules[3] (of ClusterRole \"manager-role\") grants",
            expected,
            "forbidClusterScopedResources",
        ],
    );
    assert!(!message(&verdict).contains("pods"), "{}", message(&verdict));
    // Off by default.
    assert_allowed(&validate(
        &request("CREATE", &template, "root"),
        &settings(),
        &NoCluster,
    ));
}

#[rstest]
#[case::cluster_roles_not_a_list(
    json!({"spec": {"clusterRoles": "manager-role"}}),
    "spec.clusterRoles has the wrong type"
)]
#[case::rules_not_a_list(
    json!({"spec": {"clusterRoles": [{"rules": {"verbs": ["get"]}}]}}),
    "spec.clusterRoles[0].rules has the wrong type"
)]
#[case::subject_kind_not_a_string(
    json!({"spec": {"clusterRoles": [{"subjects": [{"kind": 3}]}]}}),
    "spec.clusterRoles[0].subjects[0].kind has the wrong type"
)]
#[case::spec_not_an_object(json!({"spec": "manager-role"}), "spec has the wrong type")]
fn unreadable_templates_are_bad_requests_naming_the_field(
    #[case] object: Value,
    #[case] expected: &str,
) {
    let mut object = object;
    object["apiVersion"] = json!("operators.coreos.com/v1alpha1");
    object["kind"] = json!("ScopeTemplate");
    let verdict = validate(&request("CREATE", &object, "root"), &settings(), &NoCluster);
    assert_denied(
        &verdict,
        400,
        &["ScopeTemplate", "cannot be read", expected],
    );
}

#[test]
fn a_missing_template_object_is_a_bad_request() {
    let mut missing = request("CREATE", &tutorial_template(scope::OLM_GROUP), "root");
    missing.object = Value::Null;
    assert_denied(
        &validate(&missing, &settings(), &NoCluster),
        400,
        &["not a JSON object"],
    );
}

#[test]
fn template_checks_fail_closed() {
    let snapshot = cluster_with(&[]);
    let template = tutorial_template(scope::ORIA_GROUP);
    let cluster = Probe::new(&snapshot).failing_can_i("SubjectAccessReview refused");
    assert_denied(
        &validate(
            &request("CREATE", &template, "alice"),
            &settings(),
            &cluster,
        ),
        500,
        &["escalate", "SubjectAccessReview refused", "fails closed"],
    );
    let cluster = Probe::new(&snapshot).failing_lists("list refused");
    assert_denied(
        &validate(
            &request("CREATE", &template, "alice"),
            &settings(),
            &cluster,
        ),
        500,
        &["the cluster's RBAC", "list refused"],
    );
}

// ------------------------------------------------------------ ScopeInstance

#[test]
fn instance_needs_its_template_in_the_same_group() {
    let cluster = cluster_with(&[tutorial_template(scope::ORIA_GROUP)]);
    let missing = instance(scope::ORIA_GROUP, "nope", &[]);
    let verdict = validate(&request("CREATE", &missing, "root"), &settings(), &cluster);
    assert_denied(
        &verdict,
        403,
        &[
            "ScopeTemplateNotFound",
            "ScopeTemplate \"nope\"",
            "spec.scopeTemplateName",
            "operators.io.operator-framework/v1alpha1",
            "create the ScopeTemplate first",
        ],
    );
    // The template exists only in the other API group.
    let other_group = instance(scope::OLM_GROUP, "scopetemplate-sample-manager", &[]);
    assert_denied(
        &validate(
            &request("CREATE", &other_group, "root"),
            &settings(),
            &cluster,
        ),
        403,
        &["ScopeTemplateNotFound", "operators.coreos.com/v1alpha1"],
    );
    let same_group = instance(scope::ORIA_GROUP, "scopetemplate-sample-manager", &[]);
    assert_allowed(&validate(
        &request("CREATE", &same_group, "root"),
        &settings(),
        &cluster,
    ));
}

#[test]
fn allow_pending_template_accepts_with_a_warning() {
    let cluster = cluster_with(&[]);
    let pending = instance(scope::OLM_GROUP, "foo", &["foo", "bar"]);
    let verdict = validate(
        &request("CREATE", &pending, "erin"),
        &pending_allowed(),
        &cluster,
    );
    assert_allowed(&verdict);
    assert_eq!(verdict.warnings.len(), 1);
    assert!(
        verdict.warnings[0].contains("ScopeTemplate \"foo\""),
        "{:?}",
        verdict.warnings
    );
    assert!(
        verdict.warnings[0].contains("allowPendingTemplate"),
        "{:?}",
        verdict.warnings
    );

    // Once the template exists, the bindings are checked as usual.
    let cluster = cluster_with(&[tutorial_template(scope::OLM_GROUP)]);
    let real = instance(scope::OLM_GROUP, "scopetemplate-sample-manager", &["foo"]);
    assert_denied(
        &validate(
            &request("CREATE", &real, "erin"),
            &pending_allowed(),
            &cluster,
        ),
        403,
        &["user \"erin\""],
    );
}

#[rstest]
#[case::oria_group(scope::ORIA_GROUP)]
#[case::olm_group(scope::OLM_GROUP)]
fn instance_bind_checks_per_target(#[case] group: &str) {
    let cluster = cluster_with(&[tutorial_template(group)]);
    let check = |user: &str, namespaces: &[&str]| {
        let object = instance(group, "scopetemplate-sample-manager", namespaces);
        validate(&request("CREATE", &object, user), &settings(), &cluster)
    };
    // alice holds the rules cluster-wide: anywhere is fine.
    assert_allowed(&check("alice", &[]));
    assert_allowed(&check("alice", &["team-a", "team-b"]));
    // bob holds them in team-a only.
    assert_allowed(&check("bob", &["team-a"]));
    let verdict = check("bob", &["team-a", "team-b"]);
    assert_denied(
        &verdict,
        403,
        &[
            "ScopeInstance \"instance\"",
            "ScopeTemplate \"scopetemplate-sample-manager\"",
            "user \"bob\"",
            "spec.clusterRoles[0] (\"manager-role\") of the template in namespace \"team-b\"",
            "not authorized to bind clusterroles \"manager-role\" there",
            r#"{APIGroups:["cache.example.com"], Resources:["memcacheds/status"], Verbs:["get" "patch" "update"]}"#,
            "remove the namespaces from spec.namespaces",
        ],
    );
    assert!(
        !message(&verdict).contains("team-a"),
        "{}",
        message(&verdict)
    );
    assert_denied(
        &check("bob", &[]),
        403,
        &[
            "cluster-wide (spec.namespaces is empty, so oria creates a ClusterRoleBinding)",
            "list in spec.namespaces only the namespaces where you may bind them",
        ],
    );
    // carol may bind manager-role (by name) in team-b only.
    assert_allowed(&check("carol", &["team-b"]));
    assert_denied(
        &check("carol", &["team-a"]),
        403,
        &["in namespace \"team-a\""],
    );
    assert_denied(&check("carol", &[]), 403, &["cluster-wide"]);
    // oria itself holds bind; masters hold everything.
    assert_allowed(&check(ORIA_SA, &[]));
    assert_allowed(&check("root", &["anywhere"]));
    assert_denied(&check("erin", &["team-a"]), 403, &["user \"erin\""]);
    // UPDATE is checked like CREATE.
    let object = instance(group, "scopetemplate-sample-manager", &["team-b"]);
    assert_denied(
        &validate(&request("UPDATE", &object, "bob"), &settings(), &cluster),
        403,
        &["team-b"],
    );
}

#[test]
fn instance_denial_lists_every_entry_and_target() {
    let cluster = cluster_with(&[two_entry_template(scope::ORIA_GROUP)]);
    let object = instance(scope::ORIA_GROUP, "two-entries", &["team-a", "team-b"]);
    let verdict = validate(&request("CREATE", &object, "carol"), &settings(), &cluster);
    let text = message(&verdict);
    assert_denied(
        &verdict,
        403,
        &[
            "spec.clusterRoles[0] (\"manager-role\") of the template in namespace \"team-a\"",
            "spec.clusterRoles[1] (\"secret-reader\") of the template in namespace \"team-a\"",
            "spec.clusterRoles[1] (\"secret-reader\") of the template in namespace \"team-b\"",
        ],
    );
    // carol may bind manager-role in team-b.
    assert!(
        !text.contains("(\"manager-role\") of the template in namespace \"team-b\""),
        "{text}"
    );
}

#[test]
fn rbac_is_loaded_once_per_target() {
    let snapshot = cluster_with(&[two_entry_template(scope::ORIA_GROUP)]);
    let cluster = Probe::new(&snapshot);
    let object = instance(
        scope::ORIA_GROUP,
        "two-entries",
        &["team-a", "team-b", "team-a"],
    );
    let verdict = validate(&request("CREATE", &object, "erin"), &settings(), &cluster);
    assert_denied(&verdict, 403, &["team-a", "team-b"]);
    // Two entries, two distinct targets: one RBAC load per target.
    assert_eq!(
        cluster.lists_of("ClusterRoleBinding"),
        2,
        "{:?}",
        cluster.listed_kinds()
    );
    assert_eq!(
        cluster.lists_of("RoleBinding"),
        2,
        "{:?}",
        cluster.listed_kinds()
    );

    // Nothing is loaded when bind already allows every entry.
    let cluster = Probe::new(&snapshot);
    assert_allowed(&validate(
        &request("CREATE", &object, ORIA_SA),
        &settings(),
        &cluster,
    ));
    assert_eq!(
        cluster.lists_of("ClusterRoleBinding"),
        0,
        "{:?}",
        cluster.listed_kinds()
    );
}

#[test]
fn instance_fields_are_checked() {
    let cluster = cluster_with(&[tutorial_template(scope::OLM_GROUP)]);
    let no_template = instance(scope::OLM_GROUP, "", &[]);
    assert_denied(
        &validate(
            &request("CREATE", &no_template, "root"),
            &settings(),
            &cluster,
        ),
        403,
        &["spec.scopeTemplateName is required"],
    );
    let bad_namespace = instance(
        scope::OLM_GROUP,
        "scopetemplate-sample-manager",
        &["team-a", "", "Team_B"],
    );
    let verdict = validate(
        &request("CREATE", &bad_namespace, "root"),
        &settings(),
        &cluster,
    );
    assert_denied(
        &verdict,
        403,
        &[
            "spec.namespaces[1] \"\" is not a namespace name (it is empty)",
            "spec.namespaces[2] \"Team_B\"",
        ],
    );
    let mut wrong_type = instance(scope::OLM_GROUP, "x", &[]);
    wrong_type["spec"]["namespaces"] = json!("team-a");
    assert_denied(
        &validate(
            &request("CREATE", &wrong_type, "root"),
            &settings(),
            &cluster,
        ),
        400,
        &["spec.namespaces has the wrong type"],
    );
}

#[test]
fn instance_lookups_fail_closed() {
    let snapshot = cluster_with(&[tutorial_template(scope::OLM_GROUP)]);
    let object = instance(
        scope::OLM_GROUP,
        "scopetemplate-sample-manager",
        &["team-a"],
    );
    let missing = instance(scope::OLM_GROUP, "nope", &["team-a"]);

    // get and list both fail: not "not found", even when pending is allowed.
    let cluster = Probe::new(&snapshot)
        .failing_get("connection reset")
        .failing_lists("list refused");
    for (object, settings) in [(&object, settings()), (&missing, pending_allowed())] {
        let verdict = validate(&request("CREATE", object, "bob"), &settings, &cluster);
        assert_denied(
            &verdict,
            500,
            &[
                "ScopeTemplate",
                "connection reset",
                "list refused",
                "fails closed",
            ],
        );
    }
    // A failed get confirmed by a list that has the template: checked normally.
    let cluster = Probe::new(&snapshot).failing_get("connection reset");
    assert_allowed(&validate(
        &request("CREATE", &object, "bob"),
        &settings(),
        &cluster,
    ));
    assert_denied(
        &validate(&request("CREATE", &missing, "bob"), &settings(), &cluster),
        403,
        &["ScopeTemplateNotFound"],
    );

    let cluster = Probe::new(&snapshot).failing_can_i("SubjectAccessReview refused");
    assert_denied(
        &validate(&request("CREATE", &object, "bob"), &settings(), &cluster),
        500,
        &[
            "bind permission in namespace \"team-a\"",
            "SubjectAccessReview refused",
        ],
    );

    // can_i answers, RBAC lists do not.
    assert_denied(
        &validate(
            &request("CREATE", &object, "bob"),
            &settings(),
            &Probe::new(&snapshot).failing_lists("list refused"),
        ),
        500,
        &["the RBAC of namespace \"team-a\"", "list refused"],
    );
}

#[test]
fn a_stored_template_that_cannot_be_read_fails_closed() {
    let mut broken = tutorial_template(scope::OLM_GROUP);
    broken["spec"]["clusterRoles"] = json!("manager-role");
    let cluster = cluster_with(&[broken]);
    let object = instance(scope::OLM_GROUP, "scopetemplate-sample-manager", &[]);
    assert_denied(
        &validate(&request("CREATE", &object, "alice"), &settings(), &cluster),
        500,
        &[
            "ScopeTemplate \"scopetemplate-sample-manager\"",
            "spec.clusterRoles has the wrong type",
        ],
    );
}

#[test]
fn messages_name_generated_objects_by_their_prefix() {
    let mut template = tutorial_template(scope::OLM_GROUP);
    template["metadata"] = json!({"generateName": "memcached-"});
    template["spec"]["clusterRoles"][0]["generateName"] = json!("");
    let verdict = validate(
        &request("CREATE", &template, "root"),
        &settings(),
        &NoCluster,
    );
    assert_denied(&verdict, 403, &["ScopeTemplate \"memcached-\" is invalid"]);
}

#[test]
fn targets_are_the_namespaces_or_the_cluster() {
    let parse = |namespaces: &[&str]| {
        ScopeInstance::from_object(&instance(scope::OLM_GROUP, "t", namespaces)).unwrap()
    };
    assert_eq!(targets(&parse(&[])), [""]);
    assert_eq!(targets(&parse(&["a", "b", "a"])), ["a", "b"]);
}
