use super::messages::listing;
use super::*;
use crate::testing::{
    Probe, admission_request, assert_allowed, assert_denied, assert_no_debug_output, snapshot,
};
use olm_guard_olm::operator_group::PROVIDED_APIS_ANNOTATION;
use olm_guard_snapshot::Snapshot;
use rstest::rstest;
use serde_json::{Value, json};

const PROMETHEUS_APIS: &str = "Alertmanager.v1.monitoring.coreos.com,Prometheus.v1.monitoring.coreos.com,PrometheusRule.v1.monitoring.coreos.com,ServiceMonitor.v1.monitoring.coreos.com";
const NGINX_API: &str = "NginxIngressController.v1alpha1.k8s.nginx.org";

fn request(operation: &str, kind: &str, object: Value) -> AdmissionRequest {
    let version = if kind == OPERATOR_GROUP_KIND {
        "v1"
    } else {
        "v1alpha1"
    };
    let resource = if kind == OPERATOR_GROUP_KIND {
        "operatorgroups"
    } else {
        "clusterserviceversions"
    };
    admission_request(
        [OPERATORS_GROUP, version, kind],
        resource,
        json!({
            "uid": "test",
            "name": object["metadata"]["name"],
            "namespace": object["metadata"]["namespace"],
            "operation": operation,
            "userInfo": {"username": "kubernetes-admin", "groups": ["system:authenticated"]},
            "object": object,
        }),
    )
}

fn cluster(yaml: &str) -> Snapshot {
    snapshot(&[yaml])
}

fn check(request: &AdmissionRequest, cluster: &dyn Cluster) -> Verdict {
    validate(request, &Settings::default(), cluster)
}

fn og(namespace: &str, name: &str, spec: Value, annotation: Option<&str>) -> Value {
    let mut object = json!({
        "apiVersion": OPERATOR_GROUP_API_VERSION,
        "kind": OPERATOR_GROUP_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    });
    if let Some(apis) = annotation {
        object["metadata"]["annotations"] = json!({PROVIDED_APIS_ANNOTATION: apis});
    }
    object
}

fn with_status(mut group: Value, namespaces: &[&str]) -> Value {
    group["status"] = json!({"namespaces": namespaces, "lastUpdated": "2024-05-01T10:00:00Z"});
    group
}

fn with_raw_status(mut group: Value, status: Value) -> Value {
    group["status"] = status;
    group
}

/// `object` with `value` at the `path` of nested fields, created as needed.
fn with_field(mut object: Value, path: &[&str], value: Value) -> Value {
    let mut slot = &mut object;
    for key in path {
        slot = &mut slot[*key];
    }
    *slot = value;
    object
}

fn snapshot_of(objects: Vec<Value>) -> Snapshot {
    Snapshot::from_objects(objects)
}

fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

/// An UPDATE from `old` to `new`, as the API server sends it.
fn update(kind: &str, old: Value, new: Value) -> AdmissionRequest {
    let mut request = request("UPDATE", kind, new);
    request.old_object = old;
    request
}

/// The one warning containing every part.
fn assert_warned(verdict: &Verdict, parts: &[&str]) {
    assert!(
        verdict
            .warnings
            .iter()
            .any(|w| parts.iter().all(|p| w.contains(p))),
        "no warning contains all of {parts:?}: {:?}",
        verdict.warnings
    );
    for warning in &verdict.warnings {
        assert_no_debug_output(warning);
    }
}

fn assert_no_warnings(verdict: &Verdict) {
    assert!(
        verdict.warnings.is_empty(),
        "warnings: {:?}",
        verdict.warnings
    );
}

// --- scope -------------------------------------------------------------

/// A spec rule 1 denies, on a cluster whose OperatorGroups cannot be
/// listed: only a request the rule ignores is allowed.
#[rstest]
#[case::delete("DELETE", None, OPERATOR_GROUP_KIND)]
#[case::connect("CONNECT", None, OPERATOR_GROUP_KIND)]
#[case::status_subresource("UPDATE", Some("status"), OPERATOR_GROUP_KIND)]
#[case::other_kind("CREATE", None, "Subscription")]
fn other_kinds_operations_and_subresources_are_accepted_untouched(
    #[case] operation: &str,
    #[case] sub_resource: Option<&str>,
    #[case] kind: &str,
) {
    let empty = Snapshot::new();
    let broken = Probe::new(&empty).failing_lists_of(OPERATOR_GROUP_KIND);
    let bad = og("ns", "g", json!({"targetNamespaces": [""]}), None);
    let mut request = request(operation, OPERATOR_GROUP_KIND, bad);
    request.sub_resource = sub_resource.map(Into::into);
    request.kind.kind = kind.into();
    assert_allowed(&check(&request, &broken));
}

#[test]
fn settings_reject_unknown_keys() {
    assert!(serde_json::from_value::<Settings>(json!({})).is_ok());
    assert!(serde_json::from_value::<Settings>(json!({"strict": true})).is_err());
}

// --- rule 1 --------------------------------------------------------------

#[test]
fn target_namespaces_with_namespace_all_is_rejected() {
    let verdict = check(
        &request(
            "CREATE",
            OPERATOR_GROUP_KIND,
            og("ns", "g", json!({"targetNamespaces": ["a", ""]}), None),
        ),
        &Snapshot::new(),
    );
    assert_denied(
        &verdict,
        &[
            "spec.targetNamespaces",
            "TargetNamespaces cannot contain NamespaceAll",
            "omit both",
        ],
    );
}

#[test]
fn an_invalid_selector_is_rejected() {
    let spec = json!({"selector": {"matchExpressions": [{"key": "env", "operator": "Equals", "values": ["x"]}]}});
    let verdict = check(
        &request("UPDATE", OPERATOR_GROUP_KIND, og("ns", "g", spec, None)),
        &Snapshot::new(),
    );
    assert_denied(&verdict, &["spec.selector", "Equals", "In or NotIn"]);
}

#[test]
fn malformed_objects_are_bad_requests_naming_the_field() {
    let verdict = check(
        &request(
            "CREATE",
            OPERATOR_GROUP_KIND,
            og("ns", "g", json!({"targetNamespaces": "nginx"}), None),
        ),
        &Snapshot::new(),
    );
    assert_eq!(verdict.code, Some(400));
    assert_denied(&verdict, &["spec.targetNamespaces"]);
    let mut no_object = request("CREATE", CSV_KIND, json!({"metadata": {"namespace": "ns"}}));
    no_object.object = Value::Null;
    assert_denied(
        &check(&no_object, &Snapshot::new()),
        &["request.object", "ClusterServiceVersion"],
    );
    let no_namespace = request(
        "CREATE",
        OPERATOR_GROUP_KIND,
        json!({"metadata": {"name": "g"}}),
    );
    assert_denied(
        &check(&no_namespace, &Snapshot::new()),
        &["metadata.namespace"],
    );
}

// --- rule 2 --------------------------------------------------------------

fn quickstart_groups() -> Snapshot {
    cluster(include_str!("fixtures/quickstart_groups.yaml"))
}

#[test]
fn a_second_group_in_a_namespace_is_too_many() {
    let second = og("olm", "extra", json!({"targetNamespaces": ["olm"]}), None);
    let verdict = check(
        &request("CREATE", OPERATOR_GROUP_KIND, second),
        &quickstart_groups(),
    );
    assert_denied(
        &verdict,
        &[
            "TooManyOperatorGroups",
            "\"olm-operators\"",
            "namespace \"olm\"",
        ],
    );
}

#[rstest]
#[case::update_of_the_existing_group(
    "UPDATE",
    og("olm", "olm-operators", json!({"targetNamespaces": ["olm", "default"]}), None)
)]
#[case::first_group_in_its_namespace("CREATE", og("team-a", "team-a", json!({}), None))]
fn an_update_of_the_same_group_is_not_a_second_group(
    #[case] operation: &str,
    #[case] group: Value,
) {
    assert_allowed(&check(
        &request(operation, OPERATOR_GROUP_KIND, group),
        &quickstart_groups(),
    ));
}

// --- rule 3 --------------------------------------------------------------

fn nginx_group() -> Value {
    // operator-framework/api pkg/validation/internal/testdata/correct.og.yaml
    og(
        "nginx",
        "nginx-hbvsw",
        json!({"targetNamespaces": ["nginx"]}),
        Some(NGINX_API),
    )
}

#[test]
fn a_group_sharing_apis_in_shared_namespaces_conflicts() {
    let global = with_status(
        og("operators", "global-operators", json!({}), Some(NGINX_API)),
        &[""],
    );
    let verdict = check(
        &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
        &snapshot_of(vec![global]),
    );
    assert_denied(
        &verdict,
        &[
            "InterOperatorGroupOwnerConflict",
            "\"operators/global-operators\"",
            NGINX_API,
            "namespaces [nginx]",
        ],
    );
}

#[test]
fn two_global_groups_sharing_apis_conflict_in_all_namespaces() {
    let other = with_status(
        og("operators", "global-operators", json!({}), Some(NGINX_API)),
        &[""],
    );
    let mine = og("nginx", "nginx-hbvsw", json!({}), Some(NGINX_API));
    let verdict = check(
        &request("CREATE", OPERATOR_GROUP_KIND, mine),
        &snapshot_of(vec![other]),
    );
    assert_denied(
        &verdict,
        &["InterOperatorGroupOwnerConflict", "in all namespaces"],
    );
}

#[rstest]
#[case::other_api(with_status(
    og("operators", "global", json!({}), Some("Widget.v1.example.com")),
    &[""],
))]
#[case::other_namespace(with_status(
    og("edge", "edge", json!({}), Some(NGINX_API)),
    &["edge"],
))]
// Versions are part of an API's identity.
#[case::other_version(with_status(
    og("operators", "global", json!({}), Some("NginxIngressController.v1.k8s.nginx.org")),
    &[""],
))]
fn disjoint_apis_or_disjoint_namespaces_do_not_conflict(#[case] other: Value) {
    assert_allowed(&check(
        &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
        &snapshot_of(vec![other]),
    ));
}

#[test]
fn the_mis_cased_annotation_provides_nothing() {
    // operator-framework/api pkg/validation/internal/testdata/badAnnotationNames.og.yaml
    let mut mine = nginx_group();
    mine["metadata"]["annotations"] = json!({"olm.providedapis": NGINX_API});
    let global = with_status(
        og("operators", "global-operators", json!({}), Some(NGINX_API)),
        &[""],
    );
    assert_allowed(&check(
        &request("CREATE", OPERATOR_GROUP_KIND, mine),
        &snapshot_of(vec![global]),
    ));
}

#[test]
fn the_other_groups_own_namespace_counts_as_a_target() {
    // The other group targets "b" only, but lives in "nginx".
    let other = with_status(
        og("nginx-system", "other", json!({}), Some(NGINX_API)),
        &["b"],
    );
    let mine = og(
        "nginx",
        "nginx-hbvsw",
        json!({"targetNamespaces": ["nginx-system"]}),
        Some(NGINX_API),
    );
    let verdict = check(
        &request("CREATE", OPERATOR_GROUP_KIND, mine),
        &snapshot_of(vec![other]),
    );
    assert_denied(&verdict, &["namespaces [nginx-system]"]);
}

#[rstest]
// Spec says nginx, but OLM resolved it to "edge" (status is truth).
#[case::synced_elsewhere(with_status(
    og("edge", "edge", json!({"targetNamespaces": ["nginx"]}), Some(NGINX_API)),
    &["edge"],
))]
// Synced to nothing (lastUpdated only): targets nothing.
#[case::synced_to_nothing(with_raw_status(
    og("edge", "edge", json!({}), Some(NGINX_API)),
    json!({"lastUpdated": "2024-05-01T10:00:00Z"}),
))]
fn other_groups_status_wins_over_their_spec(#[case] other: Value) {
    assert_allowed(&check(
        &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
        &snapshot_of(vec![other]),
    ));
}

#[test]
fn unsynced_other_groups_fall_back_to_their_spec() {
    let unsynced = og(
        "edge",
        "edge",
        json!({"targetNamespaces": ["nginx"]}),
        Some(NGINX_API),
    );
    let verdict = check(
        &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
        &snapshot_of(vec![unsynced]),
    );
    assert_denied(
        &verdict,
        &["InterOperatorGroupOwnerConflict", "\"edge/edge\""],
    );
    // A spec OLM can never resolve never syncs: it targets nothing.
    let broken = og(
        "edge",
        "edge",
        json!({"targetNamespaces": [""]}),
        Some(NGINX_API),
    );
    assert_allowed(&check(
        &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
        &snapshot_of(vec![broken]),
    ));
}

#[test]
fn selectors_are_resolved_against_namespace_labels() {
    // The "cluster-monitoring" static group of operator-framework/operator-lifecycle-manager
    // doc/design/operatorgroups.md.
    let monitoring = og(
        "cluster-monitoring",
        "cluster-monitoring",
        json!({"staticProvidedAPIs": true, "selector": {"matchLabels": {"something.cool.io/cluster-monitoring": "true"}}}),
        Some(PROMETHEUS_APIS),
    );
    let team = with_status(
        og(
            "team-a",
            "team-a",
            json!({}),
            Some("Prometheus.v1.monitoring.coreos.com"),
        ),
        &["team-a"],
    );
    let labelled = snapshot_of(vec![
        team.clone(),
        namespace(
            "team-a",
            json!({"something.cool.io/cluster-monitoring": "true"}),
        ),
        namespace("team-b", json!({})),
    ]);
    let verdict = check(
        &request("CREATE", OPERATOR_GROUP_KIND, monitoring.clone()),
        &labelled,
    );
    assert_denied(
        &verdict,
        &[
            "\"team-a/team-a\"",
            "Prometheus.v1.monitoring.coreos.com",
            "namespaces [team-a]",
        ],
    );
    // A selector matching no namespace targets nothing: not even its own
    // namespace is added (OLM adds it only to a non-empty list).
    let unlabelled = snapshot_of(vec![
        team,
        namespace("team-a", json!({})),
        namespace("cluster-monitoring", json!({})),
    ]);
    assert_allowed(&check(
        &request("CREATE", OPERATOR_GROUP_KIND, monitoring),
        &unlabelled,
    ));
}

#[test]
fn an_unsynced_selector_group_is_resolved_too() {
    let other = og(
        "edge",
        "edge",
        json!({"selector": {"matchLabels": {"ingress": "nginx"}}}),
        Some(NGINX_API),
    );
    let cluster = snapshot_of(vec![other, namespace("nginx", json!({"ingress": "nginx"}))]);
    assert_denied(
        &check(
            &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
            &cluster,
        ),
        &["\"edge/edge\""],
    );
}

#[test]
fn namespaces_are_not_listed_when_no_selector_needs_them() {
    let base = snapshot_of(vec![with_status(
        og("edge", "edge", json!({}), Some(NGINX_API)),
        &["nginx"],
    )]);
    let no_namespaces = Probe::new(&base).failing_lists_of("Namespace");
    assert_denied(
        &check(
            &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
            &no_namespaces,
        ),
        &["\"edge/edge\""],
    );
    let selector_group = og(
        "nginx",
        "nginx-hbvsw",
        json!({"selector": {"matchLabels": {"a": "b"}}}),
        Some(NGINX_API),
    );
    let verdict = check(
        &request("CREATE", OPERATOR_GROUP_KIND, selector_group),
        &no_namespaces,
    );
    assert_eq!(verdict.code, Some(500));
    assert_denied(
        &verdict,
        &["Namespaces", "Namespace is forbidden", "fails closed"],
    );
}

// --- OperatorGroup UPDATE ---------------------------------------------------

fn global_nginx() -> Value {
    with_status(
        og("operators", "global-operators", json!({}), Some(NGINX_API)),
        &[""],
    )
}

fn nginx_with(annotation: Option<&str>) -> Value {
    og(
        "nginx",
        "nginx-hbvsw",
        json!({"targetNamespaces": ["nginx"]}),
        annotation,
    )
}

#[test]
fn an_update_keeping_an_existing_conflict_is_allowed_with_a_warning() {
    // OLM adding an API nobody else provides to a group that already
    // conflicts (AddAPIs), with a plain UPDATE.
    let old = nginx_with(Some(NGINX_API));
    let new = nginx_with(Some(&format!("{NGINX_API},Widget.v1.example.com")));
    let verdict = check(
        &update(OPERATOR_GROUP_KIND, old.clone(), new),
        &snapshot_of(vec![global_nginx()]),
    );
    assert_allowed(&verdict);
    assert_eq!(verdict.warnings.len(), 1, "{:?}", verdict.warnings);
    assert_warned(
        &verdict,
        &[
            "InterOperatorGroupOwnerConflict (existing before this UPDATE",
            "\"operators/global-operators\" provides [NginxIngressController.v1alpha1.k8s.nginx.org] in namespaces [nginx]",
        ],
    );
    // A metadata-only edit (a label) of a conflicting group.
    let mut labelled = old.clone();
    labelled["metadata"]["labels"] = json!({"team": "edge"});
    let verdict = check(
        &update(OPERATOR_GROUP_KIND, old, labelled),
        &snapshot_of(vec![global_nginx()]),
    );
    assert_allowed(&verdict);
    assert_warned(&verdict, &["InterOperatorGroupOwnerConflict", NGINX_API]);
}

#[test]
fn an_update_starting_to_provide_a_shared_api_is_denied() {
    let old = nginx_with(Some("Widget.v1.example.com"));
    let verdict = check(
        &update(OPERATOR_GROUP_KIND, old, nginx_with(Some(NGINX_API))),
        &snapshot_of(vec![global_nginx()]),
    );
    assert_denied(
        &verdict,
        &[
            "InterOperatorGroupOwnerConflict: this UPDATE of OperatorGroup \"nginx/nginx-hbvsw\"",
            "\"operators/global-operators\" provides [NginxIngressController.v1alpha1.k8s.nginx.org] in namespaces [nginx]",
        ],
    );
    assert_no_warnings(&verdict);
}

#[test]
fn an_update_adding_a_shared_api_to_an_existing_conflict_denies_only_the_new_one() {
    let widget = "Widget.v1.example.com";
    let global = with_status(
        og(
            "operators",
            "global-operators",
            json!({}),
            Some(&format!("{NGINX_API},{widget}")),
        ),
        &[""],
    );
    let old = nginx_with(Some(NGINX_API));
    let new = nginx_with(Some(&format!("{NGINX_API},{widget}")));
    let verdict = check(
        &update(OPERATOR_GROUP_KIND, old, new),
        &snapshot_of(vec![global]),
    );
    assert_denied(
        &verdict,
        &[
            "this UPDATE",
            "\"operators/global-operators\" provides [Widget.v1.example.com]",
        ],
    );
    let message = verdict.message.as_deref().unwrap_or("");
    assert!(!message.contains(NGINX_API), "{message}");
    // The part that was there before is reported, not blamed.
    assert_warned(&verdict, &["existing before this UPDATE", NGINX_API]);
}

#[test]
fn an_update_widening_targets_into_another_group_is_denied() {
    // The other group targets "b" but lives in "nginx-system".
    let other = with_status(
        og("nginx-system", "ingress", json!({}), Some(NGINX_API)),
        &["b"],
    );
    let old = nginx_with(Some(NGINX_API));
    let mut new = old.clone();
    new["spec"]["targetNamespaces"] = json!(["nginx", "nginx-system"]);
    let verdict = check(
        &update(OPERATOR_GROUP_KIND, old, new),
        &snapshot_of(vec![other]),
    );
    assert_denied(
        &verdict,
        &[
            "this UPDATE",
            "\"nginx-system/ingress\"",
            "namespaces [nginx-system]",
        ],
    );
}

#[test]
fn an_update_adding_a_conflict_with_a_second_group_names_only_that_group() {
    let edge = with_status(
        og("edge", "edge", json!({}), Some(NGINX_API)),
        &["edge", "lab"],
    );
    let old = nginx_with(Some(NGINX_API));
    let mut new = old.clone();
    new["spec"]["targetNamespaces"] = json!(["nginx", "lab"]);
    let verdict = check(
        &update(OPERATOR_GROUP_KIND, old, new),
        &snapshot_of(vec![global_nginx(), edge]),
    );
    assert_denied(&verdict, &["\"edge/edge\"", "namespaces [lab]"]);
    let message = verdict.message.as_deref().unwrap_or("");
    assert!(!message.contains("global-operators"), "{message}");
    assert_warned(&verdict, &["\"operators/global-operators\""]);
}

#[test]
fn an_existing_conflict_in_more_namespaces_is_the_same_conflict() {
    // A conflict is (other group, shared APIs): OLM fails the same CSVs
    // whichever namespaces the overlap covers.
    let other = with_status(og("o", "other", json!({}), Some(NGINX_API)), &["a", "b"]);
    let old = og(
        "nginx",
        "nginx-hbvsw",
        json!({"targetNamespaces": ["a"]}),
        Some(NGINX_API),
    );
    let mut new = old.clone();
    new["spec"]["targetNamespaces"] = json!(["a", "b"]);
    let verdict = check(
        &update(OPERATOR_GROUP_KIND, old, new),
        &snapshot_of(vec![other]),
    );
    assert_allowed(&verdict);
    assert_warned(&verdict, &["\"o/other\"", "namespaces [a, b]"]);
}

#[test]
fn an_update_resolving_or_narrowing_a_conflict_is_allowed() {
    let widget = "Widget.v1.example.com";
    let global = with_status(
        og(
            "operators",
            "global-operators",
            json!({}),
            Some(&format!("{NGINX_API},{widget}")),
        ),
        &[""],
    );
    let both = nginx_with(Some(&format!("{NGINX_API},{widget}")));
    // Resolved: nothing left to warn about.
    let verdict = check(
        &update(OPERATOR_GROUP_KIND, both.clone(), nginx_with(None)),
        &snapshot_of(vec![global.clone()]),
    );
    assert_allowed(&verdict);
    assert_no_warnings(&verdict);
    // Narrowed: the rest is still reported.
    let verdict = check(
        &update(OPERATOR_GROUP_KIND, both, nginx_with(Some(widget))),
        &snapshot_of(vec![global]),
    );
    assert_allowed(&verdict);
    assert_warned(&verdict, &["provides [Widget.v1.example.com]"]);
    assert!(!verdict.warnings.join(" ").contains(NGINX_API));
}

#[test]
fn an_update_without_conflicts_has_no_warning() {
    let verdict = check(
        &update(
            OPERATOR_GROUP_KIND,
            nginx_with(None),
            nginx_with(Some(NGINX_API)),
        ),
        &snapshot_of(vec![with_status(
            og("edge", "edge", json!({}), Some(NGINX_API)),
            &["edge"],
        )]),
    );
    assert_allowed(&verdict);
    assert_no_warnings(&verdict);
}

#[test]
fn an_old_spec_olm_cannot_resolve_targeted_nothing() {
    // OLM never synced the old group, so none of its conflicts existed.
    let old = og(
        "nginx",
        "nginx-hbvsw",
        json!({"targetNamespaces": [""]}),
        Some(NGINX_API),
    );
    let verdict = check(
        &update(OPERATOR_GROUP_KIND, old, nginx_with(Some(NGINX_API))),
        &snapshot_of(vec![global_nginx()]),
    );
    assert_denied(&verdict, &["this UPDATE", "\"operators/global-operators\""]);
}

#[test]
fn an_update_without_an_old_object_is_judged_like_a_create() {
    let verdict = check(
        &request("UPDATE", OPERATOR_GROUP_KIND, nginx_with(Some(NGINX_API))),
        &snapshot_of(vec![global_nginx()]),
    );
    assert_denied(
        &verdict,
        &["InterOperatorGroupOwnerConflict: OperatorGroup \"nginx/nginx-hbvsw\" provides"],
    );
}

#[test]
fn an_unreadable_old_object_is_a_bad_request() {
    let old = og(
        "nginx",
        "nginx-hbvsw",
        json!({"targetNamespaces": "nginx"}),
        None,
    );
    let verdict = check(
        &update(OPERATOR_GROUP_KIND, old, nginx_with(None)),
        &Snapshot::new(),
    );
    assert_eq!(verdict.code, Some(400));
    assert_denied(&verdict, &["request.oldObject", "spec.targetNamespaces"]);
}

#[test]
fn too_many_groups_on_update_is_a_warning() {
    let extra = og("olm", "extra", json!({"targetNamespaces": ["olm"]}), None);
    let mut cluster = quickstart_groups();
    cluster.add(extra.clone()).unwrap();
    let mut relabelled = extra.clone();
    relabelled["metadata"]["labels"] = json!({"owner": "platform"});
    let verdict = check(&update(OPERATOR_GROUP_KIND, extra, relabelled), &cluster);
    assert_allowed(&verdict);
    assert_warned(
        &verdict,
        &[
            "TooManyOperatorGroups",
            "namespace \"olm\"",
            "\"olm-operators\"",
            "adds no group",
        ],
    );
}

#[test]
fn too_many_groups_on_update_still_checks_new_conflicts() {
    let mut cluster = snapshot_of(vec![global_nginx()]);
    cluster
        .add(og("nginx", "sibling", json!({}), None))
        .unwrap();
    let verdict = check(
        &update(
            OPERATOR_GROUP_KIND,
            nginx_with(None),
            nginx_with(Some(NGINX_API)),
        ),
        &cluster,
    );
    assert_denied(&verdict, &["this UPDATE", "\"operators/global-operators\""]);
    assert_warned(&verdict, &["TooManyOperatorGroups", "\"sibling\""]);
}

#[test]
fn old_conflicts_reuse_the_lists_of_the_request() {
    let selector = |team: &str| json!({"selector": {"matchLabels": {"team": team}}});
    let base = snapshot_of(vec![
        namespace("a", json!({"team": "x"})),
        namespace("b", json!({"team": "y"})),
        og("g1", "g1", selector("x"), Some(NGINX_API)),
        og("g2", "g2", selector("y"), Some(NGINX_API)),
    ]);
    let counting = Probe::new(&base);
    let old = og("nginx", "nginx-hbvsw", selector("x"), Some(NGINX_API));
    let new = og("nginx", "nginx-hbvsw", selector("y"), Some(NGINX_API));
    let verdict = check(&update(OPERATOR_GROUP_KIND, old, new), &counting);
    assert_denied(&verdict, &["\"g2/g2\""]);
    assert_no_warnings(&verdict);
    assert!(!verdict.message.as_deref().unwrap_or("").contains("g1/g1"));
    assert_eq!(counting.lists_of(OPERATOR_GROUP_KIND), 1);
    assert_eq!(counting.lists_of("Namespace"), 1);
}

#[test]
fn each_kind_is_listed_at_most_once_per_request() {
    let selector = |team: &str| json!({"selector": {"matchLabels": {"team": team}}});
    let base = snapshot_of(vec![
        namespace("a", json!({"team": "x"})),
        namespace("b", json!({"team": "y"})),
        og("g1", "g1", selector("x"), Some(NGINX_API)),
        og("g2", "g2", selector("x"), Some(NGINX_API)),
        og("g3", "g3", selector("y"), Some(NGINX_API)),
    ]);
    let counting = Probe::new(&base);
    let mine = og("nginx", "nginx-hbvsw", selector("x"), Some(NGINX_API));
    let verdict = check(&request("CREATE", OPERATOR_GROUP_KIND, mine), &counting);
    assert_denied(&verdict, &["\"g1/g1\"", "\"g2/g2\""]);
    assert!(!verdict.message.as_deref().unwrap_or("").contains("g3/g3"));
    assert_eq!(counting.lists_of(OPERATOR_GROUP_KIND), 1);
    assert_eq!(counting.lists_of("Namespace"), 1);
}

#[test]
fn failing_to_list_operator_groups_fails_closed() {
    let empty = Snapshot::new();
    let broken = Probe::new(&empty).failing_lists_of(OPERATOR_GROUP_KIND);
    let verdict = check(
        &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
        &broken,
    );
    assert_eq!(verdict.code, Some(500));
    assert_denied(&verdict, &["OperatorGroups", "fails closed"]);
    let verdict = check(
        &request("CREATE", CSV_KIND, prometheus_csv("team-a")),
        &broken,
    );
    assert_denied(&verdict, &["OperatorGroups", "fails closed"]);
}

#[test]
fn long_conflicts_are_listed_briefly() {
    let names: Vec<String> = (0..25).map(|i| format!("ns-{i:02}")).collect();
    let other = with_status(og("operators", "global", json!({}), Some(NGINX_API)), &[""]);
    let mine = og(
        "nginx",
        "wide",
        json!({"targetNamespaces": names}),
        Some(NGINX_API),
    );
    let verdict = check(
        &request("CREATE", OPERATOR_GROUP_KIND, mine),
        &snapshot_of(vec![other]),
    );
    assert_denied(&verdict, &["ns-00", "and 16 more"]);
}

#[test]
fn thousands_of_groups_and_namespaces_reach_the_right_verdicts() {
    let mut objects = Vec::new();
    for i in 0..5000 {
        objects.push(namespace(
            &format!("ns-{i}"),
            json!({"team": format!("t{}", i % 50)}),
        ));
    }
    for i in 0..2000 {
        let spec = if i % 2 == 0 {
            json!({"selector": {"matchLabels": {"team": format!("t{}", i % 50)}}})
        } else {
            json!({"targetNamespaces": [format!("ns-{}", i + 1)]})
        };
        objects.push(og(
            &format!("ns-{i}"),
            "og",
            spec,
            Some(&format!("Kind{i}.v1.example.com,Shared.v1.example.com")),
        ));
    }
    let cluster = snapshot_of(objects);
    let mine = og(
        "ns-4999",
        "og",
        json!({"selector": {"matchLabels": {"team": "t7"}}}),
        Some("Shared.v1.example.com"),
    );
    assert_denied(
        &check(&request("CREATE", OPERATOR_GROUP_KIND, mine), &cluster),
        &["InterOperatorGroupOwnerConflict"],
    );
    let csv = json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": CSV_KIND,
        "metadata": {"name": "x.v1", "namespace": "ns-3"},
        "spec": {"customresourcedefinitions": {"owned": [{"name": "things.example.com", "version": "v1", "kind": "Kind3"}]}},
    });
    assert_allowed(&check(&request("UPDATE", CSV_KIND, csv.clone()), &cluster));
    assert_allowed(&check(&update(CSV_KIND, csv.clone(), csv), &cluster));
    // An UPDATE computes the old object's conflicts too: existing ones
    // (through "Shared") are kept, so only warned about.
    let old = og(
        "ns-4999",
        "og",
        json!({"selector": {"matchLabels": {"team": "t7"}}}),
        Some("Shared.v1.example.com"),
    );
    let new = og(
        "ns-4999",
        "og",
        json!({"selector": {"matchLabels": {"team": "t8"}}}),
        Some("Shared.v1.example.com"),
    );
    let verdict = check(&update(OPERATOR_GROUP_KIND, old, new), &cluster);
    assert_denied(&verdict, &["this UPDATE", "and 90 more"]);
    assert_warned(&verdict, &["existing before this UPDATE"]);
}

// --- ClusterServiceVersion -------------------------------------------------

fn prometheus_csv(namespace: &str) -> Value {
    let mut csv: Value =
        serde_yaml_ng::from_str(include_str!("fixtures/prometheus_csv.yaml")).unwrap();
    csv["metadata"]["namespace"] = json!(namespace);
    csv
}

fn csv_check(csv: Value, objects: Vec<Value>) -> Verdict {
    check(&request("CREATE", CSV_KIND, csv), &snapshot_of(objects))
}

fn monitoring_group(static_apis: bool, annotation: Option<&str>) -> Value {
    with_status(
        og(
            "monitoring",
            "monitoring",
            json!({"staticProvidedAPIs": static_apis, "targetNamespaces": ["monitoring"]}),
            annotation,
        ),
        &["monitoring"],
    )
}

fn global_with(apis: &str) -> Value {
    with_status(
        og("operators", "global-operators", json!({}), Some(apis)),
        &[""],
    )
}

#[test]
fn csv_add_to_a_non_static_group_is_allowed() {
    assert_allowed(&csv_check(
        prometheus_csv("monitoring"),
        vec![monitoring_group(false, None)],
    ));
}

#[rstest]
#[case::non_static_group(false)]
// A static group reserving exactly these APIs (operator-framework/operator-lifecycle-manager
// doc/design/operatorgroups.md).
#[case::static_reservation(true)]
fn csv_with_apis_already_listed_and_no_rival_is_allowed(#[case] static_apis: bool) {
    assert_allowed(&csv_check(
        prometheus_csv("monitoring"),
        vec![monitoring_group(static_apis, Some(PROMETHEUS_APIS))],
    ));
}

#[test]
fn csv_add_to_a_static_group_is_denied() {
    let verdict = csv_check(
        prometheus_csv("monitoring"),
        vec![monitoring_group(
            true,
            Some("Prometheus.v1.monitoring.coreos.com"),
        )],
    );
    assert_denied(
        &verdict,
        &[
            "CannotModifyStaticOperatorGroupProvidedAPIs",
            "\"monitoring/monitoring\"",
            "Alertmanager.v1.monitoring.coreos.com",
            "it lists: [Prometheus.v1.monitoring.coreos.com]",
            "spec.staticProvidedAPIs: true",
        ],
    );
}

#[rstest]
#[case::non_static_group(false)]
#[case::static_group(true)]
fn csv_conflicting_with_an_intersecting_group_is_denied(#[case] static_apis: bool) {
    let verdict = csv_check(
        prometheus_csv("monitoring"),
        vec![
            monitoring_group(static_apis, None),
            global_with("Prometheus.v1.monitoring.coreos.com"),
        ],
    );
    assert_denied(
        &verdict,
        &[
            "InterOperatorGroupOwnerConflict:",
            "\"operators/global-operators\" provides [Prometheus.v1.monitoring.coreos.com]",
            "namespaces [monitoring]",
        ],
    );
}

#[test]
fn csv_whose_listed_apis_a_rival_provides_is_denied_as_a_future_conflict() {
    let verdict = csv_check(
        prometheus_csv("monitoring"),
        vec![
            monitoring_group(false, Some(PROMETHEUS_APIS)),
            global_with("ServiceMonitor.v1.monitoring.coreos.com"),
        ],
    );
    assert_denied(
        &verdict,
        &[
            "at OLM's next sync",
            "ServiceMonitor.v1.monitoring.coreos.com",
            "\"operators/global-operators\"",
        ],
    );
}

#[test]
fn csv_remove_from_a_static_group_is_denied() {
    let verdict = csv_check(
        prometheus_csv("monitoring"),
        vec![
            monitoring_group(true, Some(PROMETHEUS_APIS)),
            global_with("ServiceMonitor.v1.monitoring.coreos.com"),
        ],
    );
    assert_denied(
        &verdict,
        &[
            "CannotModifyStaticOperatorGroupProvidedAPIs",
            "reserves",
            "ServiceMonitor.v1.monitoring.coreos.com",
        ],
    );
}

#[test]
fn csv_rivals_outside_the_targets_or_with_other_apis_do_not_matter() {
    let elsewhere = with_status(
        og("edge", "edge", json!({}), Some(PROMETHEUS_APIS)),
        &["edge"],
    );
    assert_allowed(&csv_check(
        prometheus_csv("monitoring"),
        vec![monitoring_group(false, None), elsewhere],
    ));
    assert_allowed(&csv_check(
        prometheus_csv("monitoring"),
        vec![
            monitoring_group(false, None),
            global_with("Kiali.v1alpha1.kiali.io"),
        ],
    ));
    // Unsynced global rival: its spec (no selector) makes it global.
    let unsynced = og(
        "operators",
        "global-operators",
        json!({}),
        Some(PROMETHEUS_APIS),
    );
    assert_denied(
        &csv_check(
            prometheus_csv("monitoring"),
            vec![monitoring_group(false, None), unsynced],
        ),
        &["InterOperatorGroupOwnerConflict"],
    );
}

#[test]
fn csv_owned_api_services_count() {
    // The packageserver CSV of OLM's quickstart, in "olm" (apiservicedefinitions):
    // operator-framework/operator-lifecycle-manager deploy/upstream/quickstart/olm.yaml.
    let packageserver = json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": CSV_KIND,
        "metadata": {"name": "packageserver", "namespace": "olm", "labels": {"olm.version": "0.18.3"}},
        "spec": {"apiservicedefinitions": {"owned": [{
            "group": "packages.operators.coreos.com", "version": "v1", "kind": "PackageManifest",
            "name": "packagemanifests", "deploymentName": "packageserver", "containerPort": 5443
        }]}},
    });
    let olm_group = og(
        "olm",
        "olm-operators",
        json!({"targetNamespaces": ["olm"]}),
        None,
    );
    assert_allowed(&csv_check(packageserver.clone(), vec![olm_group.clone()]));
    let verdict = csv_check(
        packageserver,
        vec![
            olm_group,
            global_with("PackageManifest.v1.packages.operators.coreos.com"),
        ],
    );
    assert_denied(
        &verdict,
        &[
            "InterOperatorGroupOwnerConflict",
            "PackageManifest.v1.packages.operators.coreos.com",
        ],
    );
}

#[rstest]
#[case::operator_namespace_annotation(
    &["metadata", "annotations"],
    json!({"olm.operatorNamespace": "operators"}),
)]
#[case::copied_from_label(&["metadata", "labels"], json!({"olm.copiedFrom": "operators"}))]
#[case::copied_status_reason(&["status"], json!({"phase": "Succeeded", "reason": "Copied"}))]
fn copied_csvs_are_not_checked(#[case] field: &[&str], #[case] value: Value) {
    let rival = global_with("Prometheus.v1.monitoring.coreos.com");
    let copy = with_field(prometheus_csv("monitoring"), field, value);
    assert_allowed(&csv_check(
        copy,
        vec![monitoring_group(false, None), rival.clone()],
    ));
}

#[test]
fn a_csv_naming_its_own_namespace_as_operator_namespace_is_not_a_copy() {
    let rival = global_with("Prometheus.v1.monitoring.coreos.com");
    // Its own namespace in olm.operatorNamespace: not a copy.
    let mut original = prometheus_csv("monitoring");
    original["metadata"]["annotations"] = json!({"olm.operatorNamespace": "monitoring"});
    assert_denied(
        &csv_check(original, vec![monitoring_group(false, None), rival]),
        &["InterOperatorGroupOwnerConflict"],
    );
}

#[rstest]
#[case::no_group(vec![global_with("Prometheus.v1.monitoring.coreos.com")])]
#[case::two_groups(vec![
    monitoring_group(false, None),
    with_status(og("monitoring", "second", json!({}), None), &["monitoring"]),
    global_with("Prometheus.v1.monitoring.coreos.com"),
])]
fn csvs_without_exactly_one_group_are_not_checked(#[case] objects: Vec<Value>) {
    assert_allowed(&csv_check(prometheus_csv("monitoring"), objects));
}

#[test]
fn an_owned_crd_name_without_a_dot_is_rejected() {
    let mut csv = prometheus_csv("monitoring");
    csv["spec"]["customresourcedefinitions"]["owned"][2]["name"] = json!("servicemonitors");
    let verdict = csv_check(csv, vec![monitoring_group(false, None)]);
    assert_denied(
        &verdict,
        &[
            "spec.customresourcedefinitions.owned[2].name",
            "\"servicemonitors\"",
            "no dot",
        ],
    );
}

/// Rule 5 needs no lookup and comes before rule 4's group count (rule 5 in
/// policies/og-intersection/README.md).
#[test]
fn an_owned_crd_name_without_a_dot_is_rejected_whatever_the_group_count() {
    let mut csv = prometheus_csv("monitoring");
    csv["spec"]["customresourcedefinitions"]["owned"][2]["name"] = json!("servicemonitors");
    assert_denied(
        &csv_check(csv, vec![]),
        &["spec.customresourcedefinitions.owned[2].name", "no dot"],
    );
}

#[test]
fn a_csv_providing_nothing_is_allowed_even_in_a_static_group() {
    let empty = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": CSV_KIND, "metadata": {"name": "x", "namespace": "monitoring"}});
    assert_allowed(&csv_check(
        empty,
        vec![monitoring_group(true, None), global_with(PROMETHEUS_APIS)],
    ));
}

// --- ClusterServiceVersion UPDATE --------------------------------------------

fn relabelled(mut csv: Value) -> Value {
    csv["metadata"]["labels"] = json!({"operators.coreos.com/prometheus.team-a": ""});
    csv
}

fn csv_update(old: Value, new: Value, objects: Vec<Value>) -> Verdict {
    check(&update(CSV_KIND, old, new), &snapshot_of(objects))
}

// Each cluster would deny the CSV on CREATE.
#[rstest]
#[case::non_static_remove_apis(
    vec![
        monitoring_group(false, Some(PROMETHEUS_APIS)),
        global_with("ServiceMonitor.v1.monitoring.coreos.com"),
    ],
    "InterOperatorGroupOwnerConflict at OLM's next sync",
)]
#[case::api_conflict(
    vec![
        monitoring_group(false, None),
        global_with("Prometheus.v1.monitoring.coreos.com"),
    ],
    "InterOperatorGroupOwnerConflict: ClusterServiceVersion",
)]
#[case::static_add_apis(
    vec![monitoring_group(true, Some("Prometheus.v1.monitoring.coreos.com"))],
    "CannotModifyStaticOperatorGroupProvidedAPIs",
)]
fn a_csv_update_keeping_its_apis_is_allowed_with_the_reason_as_warning(
    #[case] objects: Vec<Value>,
    #[case] reason: &str,
) {
    let csv = prometheus_csv("monitoring");
    assert_denied(&csv_check(csv.clone(), objects.clone()), &[reason]);
    let verdict = csv_update(csv.clone(), relabelled(csv.clone()), objects);
    assert_allowed(&verdict);
    assert_eq!(verdict.warnings.len(), 1, "{:?}", verdict.warnings);
    assert_warned(
        &verdict,
        &[
            reason,
            "\"monitoring/prometheusoperator.0.22.2\"",
            "does not change the APIs",
        ],
    );
}

#[test]
fn a_csv_update_with_reordered_or_redescribed_apis_keeps_them() {
    let old = prometheus_csv("monitoring");
    let mut new = old.clone();
    new["spec"]["customresourcedefinitions"]["owned"]
        .as_array_mut()
        .unwrap()
        .reverse();
    new["spec"]["customresourcedefinitions"]["owned"][0]["description"] = json!("new text");
    let verdict = csv_update(
        old,
        new,
        vec![
            monitoring_group(false, None),
            global_with("Prometheus.v1.monitoring.coreos.com"),
        ],
    );
    assert_allowed(&verdict);
    assert_warned(&verdict, &["InterOperatorGroupOwnerConflict"]);
}

#[test]
fn a_csv_update_changing_its_apis_is_judged() {
    let mut old = prometheus_csv("monitoring");
    old["spec"]["customresourcedefinitions"]["owned"]
        .as_array_mut()
        .unwrap()
        .truncate(1);
    let verdict = csv_update(
        old,
        prometheus_csv("monitoring"),
        vec![
            monitoring_group(false, None),
            global_with("ServiceMonitor.v1.monitoring.coreos.com"),
        ],
    );
    assert_denied(
        &verdict,
        &[
            "InterOperatorGroupOwnerConflict",
            "ServiceMonitor.v1.monitoring.coreos.com",
        ],
    );
    assert_no_warnings(&verdict);
}

#[test]
fn a_copy_turning_into_an_original_is_judged() {
    let mut copy = prometheus_csv("monitoring");
    copy["metadata"]["labels"] = json!({"olm.copiedFrom": "operators"});
    let objects = vec![
        monitoring_group(false, None),
        global_with("Prometheus.v1.monitoring.coreos.com"),
    ];
    assert_denied(
        &csv_update(copy.clone(), prometheus_csv("monitoring"), objects.clone()),
        &["InterOperatorGroupOwnerConflict"],
    );
    // And an original turning into a copy is a copy: not checked.
    let verdict = csv_update(prometheus_csv("monitoring"), copy, objects);
    assert_allowed(&verdict);
    assert_no_warnings(&verdict);
}

#[test]
fn a_csv_update_without_problems_has_no_warning() {
    let csv = prometheus_csv("monitoring");
    let verdict = csv_update(
        csv.clone(),
        relabelled(csv),
        vec![monitoring_group(false, Some(PROMETHEUS_APIS))],
    );
    assert_allowed(&verdict);
    assert_no_warnings(&verdict);
}

#[test]
fn a_csv_update_keeping_a_broken_crd_name_is_allowed_with_a_warning() {
    let mut broken = prometheus_csv("monitoring");
    broken["spec"]["customresourcedefinitions"]["owned"][2]["name"] = json!("servicemonitors");
    let objects = vec![monitoring_group(false, None)];
    let verdict = csv_update(broken.clone(), relabelled(broken.clone()), objects.clone());
    assert_allowed(&verdict);
    assert_warned(
        &verdict,
        &["spec.customresourcedefinitions.owned[2].name", "no dot"],
    );
    // Breaking it is a change.
    assert_denied(
        &csv_update(prometheus_csv("monitoring"), broken, objects),
        &["spec.customresourcedefinitions.owned[2].name"],
    );
}

#[test]
fn a_failed_lookup_blocks_only_csv_updates_that_need_it() {
    let empty = Snapshot::new();
    let broken = Probe::new(&empty).failing_lists_of(OPERATOR_GROUP_KIND);
    let csv = prometheus_csv("monitoring");
    let verdict = check(
        &update(CSV_KIND, csv.clone(), relabelled(csv.clone())),
        &broken,
    );
    assert_allowed(&verdict);
    assert_warned(
        &verdict,
        &[
            "was not checked",
            "OperatorGroups of all namespaces",
            "forbidden",
        ],
    );
    let mut fewer = csv.clone();
    fewer["spec"]["customresourcedefinitions"]["owned"]
        .as_array_mut()
        .unwrap()
        .truncate(1);
    let verdict = check(&update(CSV_KIND, fewer, csv), &broken);
    assert_eq!(verdict.code, Some(500));
    assert_denied(&verdict, &["OperatorGroups", "fails closed"]);
}

#[test]
fn a_csv_update_without_an_old_object_or_with_an_unreadable_one() {
    let objects = vec![
        monitoring_group(false, None),
        global_with("Prometheus.v1.monitoring.coreos.com"),
    ];
    assert_denied(
        &check(
            &request("UPDATE", CSV_KIND, prometheus_csv("monitoring")),
            &snapshot_of(objects.clone()),
        ),
        &["InterOperatorGroupOwnerConflict"],
    );
    let mut unreadable = prometheus_csv("monitoring");
    unreadable["spec"]["customresourcedefinitions"]["owned"] = json!({"name": "x"});
    let verdict = csv_update(unreadable, prometheus_csv("monitoring"), objects);
    assert_eq!(verdict.code, Some(400));
    assert_denied(
        &verdict,
        &[
            "request.oldObject",
            "ClusterServiceVersion",
            "spec.customresourcedefinitions.owned",
        ],
    );
}

#[test]
fn listing_truncates() {
    assert_eq!(listing(&["a", "b"]), "a, b");
    let many: Vec<String> = (0..12).map(|i| i.to_string()).collect();
    assert_eq!(listing(&many), "0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 2 more");
}

/// An audit evaluates a batch in one instance: the first evaluation reads
/// the groups it keeps in one pass, the later ones through an index of
/// every group read whole. A group that does not read whole must change no
/// verdict there that it does not change alone: when no question keeps it,
/// it fails neither; when one does, both fail closed in the same words.
/// (The fuzzer's fifth property found the batch failing where one
/// evaluation passed.)
#[test]
fn a_batch_reads_an_unreadable_group_as_one_evaluation_does() {
    const WIDGET_API: &str = "Widget.v1.widgets.example.com";
    let new = request(
        "CREATE",
        OPERATOR_GROUP_KIND,
        og(
            "team",
            "team",
            json!({"targetNamespaces": ["team"]}),
            Some(WIDGET_API),
        ),
    );
    let other = og(
        "other",
        "other",
        json!({"targetNamespaces": ["other"]}),
        Some(WIDGET_API),
    );
    let broken_spec = json!({"targetNamespaces": [["olm"], ["olm"]]});
    let unkept = og("olm", "olm-operators", broken_spec.clone(), None);
    let kept = og("olm", "olm-operators", broken_spec, Some(WIDGET_API));
    for (objects, allowed) in [
        (vec![other.clone(), unkept], true),
        (vec![other, kept], false),
    ] {
        let cluster = snapshot_of(objects);
        let alone = check(&new, &cluster);
        assert_eq!(alone.allowed, allowed, "{alone:?}");
        let batch = olm_guard_core::shared::Batch::new(&cluster);
        for evaluation in 1..=3 {
            assert_eq!(
                check(&new, &batch),
                alone,
                "evaluation {evaluation} of the batch"
            );
        }
    }
}
