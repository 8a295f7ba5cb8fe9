use olm_guard_core::ClusterExt;
use olm_guard_core::protocol::ResourceAttributes;
use serde_json::json;

use super::*;

const OBJECTS: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: a
    namespace: ns1
    labels: {app: web, tier: front}
    managedFields: [{manager: kubectl}]
    annotations:
      kubectl.kubernetes.io/last-applied-configuration: "{}"
      keep: "yes"
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: b, namespace: ns2, labels: {app: db}}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns1}
---
"#;

fn names(list: Vec<Value>) -> Vec<String> {
    list.iter().map(|o| ObjectMeta::of(o).name).collect()
}

#[test]
fn lists_unpack_and_server_noise_is_stripped() {
    let snapshot = Snapshot::from_yaml(OBJECTS).unwrap();
    assert_eq!(snapshot.len(), 3);
    let all: Vec<Value> = snapshot
        .list_all_as(&ListAllResourcesRequest::new("v1", "ConfigMap"))
        .unwrap();
    assert_eq!(names(all.clone()), ["a", "b"]);
    assert!(all[0]["metadata"].get("managedFields").is_none());
    assert_eq!(all[0]["metadata"]["annotations"], json!({"keep": "yes"}));
}

/// Answers are kept for the snapshot's life, and forgotten when it
/// changes: a list asked again after an object was added includes it,
/// a get of the new object finds it, and a cluster-scope table layered
/// on later is obeyed.
#[test]
fn kept_answers_follow_every_change() {
    let mut snapshot = Snapshot::from_yaml(OBJECTS).unwrap();
    let all = ListAllResourcesRequest::new("v1", "ConfigMap");
    let first = snapshot.list_all(&all).unwrap();
    assert_eq!(
        snapshot.list_all(&all).unwrap(),
        first,
        "the same bytes again"
    );
    let get = GetResourceRequest {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "c".into(),
        namespace: Some("ns1".into()),
        ..Default::default()
    };
    assert!(snapshot.get(&get).is_err());

    snapshot
        .add(json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "c", "namespace": "ns1"}}))
        .unwrap();
    let listed: Vec<Value> = snapshot.list_all_as(&all).unwrap();
    assert_eq!(names(listed), ["a", "b", "c"]);
    assert!(snapshot.get(&get).is_ok());

    let in_ns1 = ListResourcesByNamespaceRequest::new("v1", "ConfigMap", "ns1");
    assert!(snapshot.list_by_namespace(&in_ns1).is_ok());
    let table = ApiResources::parse(
        "NAME         SHORTNAMES   APIVERSION   NAMESPACED   KIND\n\
             configmaps   cm           v1           false        ConfigMap\n",
    )
    .unwrap();
    snapshot.add_api_resources(table);
    assert!(
        snapshot.list_by_namespace(&in_ns1).is_err(),
        "now cluster-scoped"
    );
}

#[test]
fn namespaced_lists_and_selectors() {
    let snapshot = Snapshot::from_yaml(OBJECTS).unwrap();
    let in_ns2: Vec<Value> = snapshot
        .list_by_namespace_as(&ListResourcesByNamespaceRequest::new(
            "v1",
            "ConfigMap",
            "ns2",
        ))
        .unwrap();
    assert_eq!(names(in_ns2), ["b"]);
    let front: Vec<Value> = snapshot
        .list_all_as(
            &ListAllResourcesRequest::new("v1", "ConfigMap").label_selector("app=web,tier"),
        )
        .unwrap();
    assert_eq!(names(front), ["a"]);
    let not_a: Vec<Value> = snapshot
        .list_all_as(
            &ListAllResourcesRequest::new("v1", "ConfigMap").field_selector("metadata.name!=a"),
        )
        .unwrap();
    assert_eq!(names(not_a), ["b"]);
    let err = snapshot
        .list_all(&ListAllResourcesRequest::new("v1", "ConfigMap").label_selector("app in (web"))
        .unwrap_err();
    assert!(err.message.starts_with("invalid label selector"), "{err}");
    let err = snapshot
        .list_by_namespace(&ListResourcesByNamespaceRequest::new(
            "v1",
            "Namespace",
            "ns1",
        ))
        .unwrap_err();
    assert!(err.message.contains("cluster-scoped"), "{err}");
}

#[test]
fn get_finds_by_name_and_namespace_or_says_kubewardens_words() {
    let snapshot = Snapshot::from_yaml(OBJECTS).unwrap();
    let request = |name: &str, namespace: Option<&str>| GetResourceRequest {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: name.into(),
        namespace: namespace.map(String::from),
        ..Default::default()
    };
    let found: Value = snapshot.get_as(&request("b", Some("ns2"))).unwrap();
    assert_eq!(ObjectMeta::of(&found).name, "b");
    let err = snapshot.get(&request("b", Some("ns1"))).unwrap_err();
    assert_eq!(
        err.message,
        "Cannot find v1/ConfigMap named 'b' inside of namespace 'Some(\"ns1\")'"
    );
}

#[test]
fn objects_need_a_type_and_documents_must_be_objects() {
    let err = Snapshot::from_yaml("metadata: {name: x}").err().unwrap();
    assert_eq!(
        err.to_string(),
        "document 1: object \"x\" has no apiVersion and kind"
    );
    let err = Snapshot::from_yaml("- 1\n- 2").err().unwrap();
    assert_eq!(
        err.to_string(),
        "document 1: expected a Kubernetes object, found a sequence"
    );
    let err = Snapshot::new()
        .add_source(
            "c.yaml",
            "apiVersion: v1\nkind: List\nitems: [{kind: ConfigMap}, 3]",
            LoadOptions::STRICT,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "c.yaml: document 1: items[0]: object \"<unnamed>\" has no apiVersion and kind"
    );
    let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\nb: [\n";
    let err = Snapshot::from_yaml(text).err().unwrap();
    assert_eq!(err.at.document, Some(2));
    assert!(matches!(err.problem, Problem::NotYaml(_)), "{err}");
}

const ALICE_READS: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm, namespace: ns1}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-cm, namespace: ns1}
subjects: [{kind: User, name: alice}]
roleRef: {kind: Role, name: cm}
"#;

const BOB_BROKEN: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ns1}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-cm, namespace: ns1}
subjects: bob
roleRef: {kind: Role, name: cm}
"#;

fn can_read(snapshot: &Snapshot, user: &str) -> bool {
    let user = UserInfo {
        username: user.into(),
        ..Default::default()
    };
    let read = ResourceAttributes::new("get", "", "configmaps").namespace("ns1");
    snapshot.authorized(&user, read).unwrap()
}

#[test]
fn an_unreadable_rbac_object_is_an_error_naming_source_document_object_and_field() {
    let mut snapshot = Snapshot::from_yaml(ALICE_READS).unwrap();
    let err = snapshot
        .add_source("extra.yaml", BOB_BROKEN, LoadOptions::STRICT)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "extra.yaml: document 2: rbac.authorization.k8s.io/v1 RoleBinding ns1/bob-cm: \
             field subjects has the wrong type (invalid type: string \"bob\", expected a \
             sequence); the API server would refuse this object, so its RBAC cannot be evaluated"
    );
    assert_eq!(err.object().unwrap().name, "bob-cm");
    // A failed strict load adds nothing, not even the ConfigMap before it.
    assert_eq!(snapshot.len(), 2);
    assert!(can_read(&snapshot, "alice"));
}

#[test]
fn lenient_loading_lists_an_unreadable_rbac_object_but_grants_nothing_and_says_so() {
    let mut snapshot = Snapshot::from_yaml(ALICE_READS).unwrap();
    let warnings = snapshot
        .add_source("extra.yaml", BOB_BROKEN, LoadOptions::LENIENT)
        .unwrap();
    assert_eq!(warnings.len(), 1);
    let warning = warnings[0].to_string();
    assert!(
            warning.starts_with("extra.yaml: document 2: rbac.authorization.k8s.io/v1 RoleBinding ns1/bob-cm: field subjects"),
            "{warning}"
        );
    assert!(
        warning.ends_with("; it is listed but grants nothing in can_i"),
        "{warning}"
    );
    assert_eq!(snapshot.len(), 4);
    let bindings: Vec<Value> = snapshot
        .list_all_as(&ListAllResourcesRequest::new(
            RBAC_API_VERSION,
            "RoleBinding",
        ))
        .unwrap();
    assert_eq!(names(bindings), ["alice-cm", "bob-cm"]);
    assert!(can_read(&snapshot, "alice"));
    assert!(!can_read(&snapshot, "bob"));
}

#[test]
fn other_rbac_versions_are_reported_not_ignored() {
    let text = ALICE_READS.replace(
        "rbac.authorization.k8s.io/v1\nkind: RoleBinding",
        "rbac.authorization.k8s.io/v1beta1\nkind: RoleBinding",
    );
    let err = Snapshot::from_yaml(&text).err().unwrap();
    assert!(
        matches!(err.problem, Problem::UnservedRbacVersion { .. }),
        "{err}"
    );
    assert!(err.to_string().starts_with("document 2: rbac.authorization.k8s.io/v1beta1 RoleBinding ns1/alice-cm: only rbac.authorization.k8s.io/v1"), "{err}");
    let mut snapshot = Snapshot::new();
    let warnings = snapshot
        .add_source("c.yaml", &text, LoadOptions::LENIENT)
        .unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(!can_read(&snapshot, "alice"));
}

#[test]
fn duplicates_are_errors_or_keep_the_first() {
    let err = Snapshot::new()
        .add_source(
            "c.yaml",
            &format!("{OBJECTS}\n---\n{ALICE_READS}\n---\n{ALICE_READS}"),
            LoadOptions::STRICT,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "c.yaml: document 6: rbac.authorization.k8s.io/v1 Role ns1/cm was already read (at \
             c.yaml: document 4); an object may appear only once in a snapshot"
    );
    // (Document 3 is the empty one between OBJECTS' last `---` and the
    // next.) Across sources too, and inside a List.
    let mut snapshot = Snapshot::new();
    snapshot
        .add_source("a.yaml", OBJECTS, LoadOptions::STRICT)
        .unwrap();
    let again = "apiVersion: v1\nkind: ConfigMapList\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: ns2, labels: {app: other}}}\n";
    let err = snapshot
        .add_source("b.yaml", again, LoadOptions::STRICT)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "b.yaml: document 1: items[1]: v1 ConfigMap ns2/b was already read (at a.yaml: \
             document 1: items[1]); an object may appear only once in a snapshot"
    );
    let warnings = snapshot
        .add_source("b.yaml", again, LoadOptions::LENIENT)
        .unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].to_string().ends_with("; the first one is kept"));
    let b: Vec<Value> = snapshot
        .list_all_as(
            &ListAllResourcesRequest::new("v1", "ConfigMap").field_selector("metadata.name=b"),
        )
        .unwrap();
    assert_eq!(ObjectMeta::of(&b[0]).labels["app"], "db");
    // Same name in another namespace, kind or version: different objects;
    // objects with generateName only cannot be told apart.
    let distinct = "\
apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: ns3}\n---
apiVersion: v1\nkind: Secret\nmetadata: {name: b, namespace: ns2}\n---
apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-}\n---
apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-}\n";
    assert!(
        snapshot
            .add_source("d.yaml", distinct, LoadOptions::STRICT)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn lenient_loading_skips_what_cannot_be_served_and_reports_each() {
    let text = "\
apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---
just text\n---
metadata: {name: untyped}\n---
apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n---
broken: [\n";
    let mut snapshot = Snapshot::new();
    let warnings = snapshot
        .add_source("c.yaml", text, LoadOptions::LENIENT)
        .unwrap();
    let warnings: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 3, "{warnings:#?}");
    assert_eq!(
        warnings[0],
        "c.yaml: document 2: expected a Kubernetes object, found a string; it was skipped"
    );
    assert_eq!(
        warnings[1],
        "c.yaml: document 3: object \"untyped\" has no apiVersion and kind; it was skipped"
    );
    assert!(
        warnings[2].starts_with("c.yaml: document 5: not valid YAML: "),
        "{}",
        warnings[2]
    );
    assert!(warnings[2].ends_with("; the rest of the source was skipped"));
    assert_eq!(snapshot.len(), 2);
}

#[test]
fn objects_from_code() {
    let ok = Snapshot::try_from_objects(vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
    ])
    .unwrap();
    assert_eq!(ok.len(), 1);
    let err = Snapshot::try_from_objects(vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
    ])
    .err()
    .unwrap();
    assert_eq!(
        err.to_string(),
        "items[1]: v1 Namespace a was already read (at items[0]); an object may appear only once in a snapshot"
    );
    let err = Snapshot::new().add(json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": {"name": "r"}, "rules": [{"verbs": "get"}]})).unwrap_err();
    assert!(
        err.to_string().starts_with(
            "rbac.authorization.k8s.io/v1 ClusterRole r: field rules[0].verbs has the wrong type"
        ),
        "{err}"
    );
}

#[test]
#[should_panic(
    expected = "Snapshot::from_objects: items[0]: object \"<unnamed>\" has no apiVersion and kind"
)]
fn from_objects_refuses_loudly() {
    Snapshot::from_objects(vec![json!({"kind": "Namespace"})]);
}

#[test]
fn cluster_scope_comes_from_the_discovery_table() {
    let text = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n";
    let mut snapshot = Snapshot::from_yaml(text).unwrap();
    let by_namespace = ListResourcesByNamespaceRequest::new("example.com/v1", "Widget", "ns1");
    assert!(snapshot.list_by_namespace(&by_namespace).is_ok());
    snapshot.add_api_resources(
        ApiResources::parse("- {apiVersion: example.com/v1, kind: Widget, namespaced: false}")
            .unwrap(),
    );
    let err = snapshot.list_by_namespace(&by_namespace).unwrap_err();
    assert_eq!(
        err.message,
        "resource example.com/v1/Widget is cluster-scoped: use list_resources_all"
    );
    // The built-in entries still answer.
    assert!(
        snapshot
            .api_resources()
            .is_cluster_scoped("v1", "Namespace")
    );
    snapshot.set_api_resources(ApiResources::empty());
    assert!(snapshot.list_by_namespace(&by_namespace).is_ok());
}

#[test]
fn can_i_uses_the_snapshot_rbac_and_sees_new_objects() {
    let mut snapshot = Snapshot::from_yaml(OBJECTS).unwrap();
    let alice = UserInfo {
        username: "alice".into(),
        ..Default::default()
    };
    let read = || ResourceAttributes::new("get", "", "configmaps").namespace("ns1");
    assert!(!snapshot.authorized(&alice, read()).unwrap());
    snapshot
        .add_yaml(
            r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm, namespace: ns1}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-cm, namespace: ns1}
subjects: [{kind: User, name: alice}]
roleRef: {kind: Role, name: cm}
"#,
        )
        .unwrap();
    assert!(snapshot.authorized(&alice, read()).unwrap());
    // RoleBindings never grant cluster-scoped requests.
    let cluster_wide = ResourceAttributes::new("get", "", "configmaps");
    assert!(!snapshot.authorized(&alice, cluster_wide).unwrap());
}
