//! The test cluster itself: kube-apiserver on etcd, started, serving an
//! upstream CRD, storing and refusing objects as a cluster does (its
//! Namespaces' lifecycle, its schema), deciding ordinary users by RBAC and
//! answering SubjectAccessReviews, enforcing a ValidatingAdmissionPolicy on
//! an impersonated user's request with its warnings, brought back to where
//! it was by undoing a test's changes, and gone with its processes when
//! dropped.

use std::time::{Duration, Instant};

use olm_guard_kube_harness::cluster::{Changes, Requester, TestCluster, Write};
use serde_json::{Value, json};

fn upstream_crd(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../native/upstream")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn catalog_source(name: &str, namespace: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "CatalogSource",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    })
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

#[test]
fn the_test_cluster_stores_and_refuses_objects_as_a_cluster_does() {
    let cluster = TestCluster::start().expect("the test cluster starts");
    assert!(cluster.server().starts_with("https://127.0.0.1:"));
    cluster
        .install_crds(&[upstream_crd("operators.coreos.com_catalogsources.yaml")])
        .expect("the upstream CatalogSource CRD is Established");
    let grpc = json!({"sourceType": "grpc", "image": "quay.io/operatorhubio/catalog:latest"});

    // NamespaceLifecycle: no object in a Namespace that does not exist.
    let refusal = cluster
        .create(&catalog_source("operatorhubio", "olm", grpc.clone()))
        .expect("the request is answered")
        .expect_err("no Namespace olm yet");
    assert_eq!(refusal.code, 404, "{refusal:?}");
    assert!(
        refusal.message.contains("namespaces \"olm\" not found"),
        "{}",
        refusal.message
    );

    let mut changes = Changes::default();
    cluster
        .put(&namespace("olm"), &mut changes)
        .expect("answered")
        .expect("a Namespace is stored");
    let stored = cluster
        .put(
            &catalog_source("operatorhubio", "olm", grpc.clone()),
            &mut changes,
        )
        .expect("the request is answered")
        .expect("a valid CatalogSource is stored");
    assert!(
        stored["metadata"]["uid"]
            .as_str()
            .is_some_and(|uid| !uid.is_empty())
    );
    assert!(stored["metadata"]["resourceVersion"].is_string());

    // The CRD's schema requires spec.sourceType: the API server's own 422.
    let refusal = cluster
        .create(&catalog_source(
            "no-type",
            "olm",
            json!({"image": "quay.io/x/y:1"}),
        ))
        .expect("the request is answered")
        .expect_err("the API server refuses a CatalogSource without sourceType");
    assert_eq!(refusal.code, 422, "{refusal:?}");
    assert_eq!(refusal.reason, "Invalid");
    assert!(
        refusal.message.contains("spec.sourceType: Required value"),
        "{}",
        refusal.message
    );

    // `default` exists: putting it replaces it, and undoing puts it back.
    let mut labelled = namespace("default");
    labelled["metadata"]["labels"] = json!({"team": "a"});
    cluster
        .put(&labelled, &mut changes)
        .expect("answered")
        .expect("default is replaced");
    assert_eq!(
        cluster.get(&namespace("default")).expect("read")["metadata"]["labels"]["team"],
        "a"
    );
    assert_eq!(changes.len(), 3);
    cluster.undo(&mut changes).expect("undone");
    assert!(changes.is_empty());
    let default = cluster.get(&namespace("default")).expect("read");
    assert!(
        default["metadata"]["labels"].get("team").is_none(),
        "{default}"
    );
    // Namespace olm is gone (finalized, since no controller runs), and
    // with it the CatalogSource.
    let error = cluster
        .get(&namespace("olm"))
        .expect_err("olm is gone")
        .to_string();
    assert!(error.contains("not found"), "{error}");
}

/// Lists the ConfigMaps of `default` with the client certificate of
/// `kubeconfig`.
fn list_configmaps(kubeconfig: &std::path::Path) -> Result<(), kube::Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(kubeconfig).expect("a kubeconfig"),
            &Default::default(),
        )
        .await
        .expect("a client config");
        let client = kube::Client::try_from(config)?;
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(client, "default");
        api.list(&Default::default()).await.map(|_| ())
    })
}

#[test]
fn ordinary_users_are_decided_by_rbac_and_policies_by_admission() {
    let cluster = TestCluster::start().expect("the test cluster starts");
    let mut changes = Changes::default();
    let put = |object: Value, changes: &mut Changes| {
        cluster
            .put(&object, changes)
            .expect("answered")
            .unwrap_or_else(|refusal| panic!("{refusal:?}"))
    };
    put(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "configmap-writer"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                "verbs": ["create", "list"]}]}),
        &mut changes,
    );
    put(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "team-a-writes"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                "name": "configmap-writer"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                "name": "team-a"}]}),
        &mut changes,
    );
    cluster.wait_rbac_seen().expect("the authorizer catches up");

    // A SubjectAccessReview, answered by the cluster's RBAC.
    let review = |user: &str, group: &str| {
        allows(
            &cluster,
            json!({"user": user, "groups": [group],
                "resourceAttributes": {"verb": "create", "resource": "configmaps",
                    "namespace": "default"}}),
        )
    };
    assert!(review("alice", "team-a"));
    assert!(!review("bob", "team-b"));

    // A user's own client certificate: the user and groups RBAC decides.
    for (user, group, allowed) in [("alice", "team-a", true), ("bob", "team-b", false)] {
        let kubeconfig = cluster
            .kubeconfig_for_user(user, &[group])
            .expect("a kubeconfig");
        let listed = list_configmaps(&kubeconfig);
        match (allowed, listed) {
            (true, Ok(())) => {}
            (false, Err(kube::Error::Api(status))) => {
                assert_eq!(status.code, 403, "{status:?}");
                assert!(
                    status
                        .message
                        .contains("User \"bob\" cannot list resource \"configmaps\""),
                    "{}",
                    status.message
                );
            }
            (_, other) => panic!("{user} listing ConfigMaps: {other:?}"),
        }
    }

    // A policy in force on an impersonated user's request, with a warning
    // from a second binding in Warn mode.
    let configmap = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}})
    };
    put(
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "no-no"},
            "spec": {"failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"]}]},
                "validations": [{"expression": "!object.metadata.name.startsWith('no')",
                    "message": "say \"yes\" instead"}]}}),
        &mut changes,
    );
    put(
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "no-no"},
            "spec": {"policyName": "no-no", "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {}, "objectSelector": {
                    "matchExpressions": [{"key": "warn", "operator": "DoesNotExist"}]}}}}),
        &mut changes,
    );
    put(
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "no-no-warn"},
            "spec": {"policyName": "no-no", "validationActions": ["Warn"],
                "matchResources": {"objectSelector": {"matchLabels": {"warn": "true"}}}}}),
        &mut changes,
    );
    let alice = Requester {
        user: "alice".into(),
        groups: vec!["team-a".into()],
    };
    // The policy takes effect once the API server's informers saw it.
    let started = Instant::now();
    let denied = loop {
        let written = cluster
            .write_as(
                Some(&alice),
                Write::Create,
                &configmap("no-thanks"),
                None,
                true,
            )
            .expect("answered");
        match written.answer {
            Err(refusal) => break refusal,
            Ok(_) if started.elapsed() < Duration::from_secs(30) => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(stored) => panic!("the policy never took effect: {stored}"),
        }
    };
    assert_eq!(denied.code, 422, "{denied:?}");
    assert_eq!(
        denied.message,
        "configmaps \"no-thanks\" is forbidden: ValidatingAdmissionPolicy 'no-no' with binding \
         'no-no' denied request: say \"yes\" instead"
    );
    let mut warned = configmap("no-but-warned");
    warned["metadata"]["labels"] = json!({"warn": "true"});
    let started = Instant::now();
    let written = loop {
        let written = cluster
            .write_as(Some(&alice), Write::Create, &warned, None, false)
            .expect("answered");
        if !written.warnings.is_empty() || started.elapsed() > Duration::from_secs(30) {
            break written;
        }
        changes.created(written.answer.expect("stored"));
        cluster.undo(&mut changes).expect("undone");
    };
    let stored = written.answer.expect("a warned ConfigMap is stored");
    changes.created(stored.clone());
    // A dry-run DELETE answers as a delete would, and deletes nothing.
    let dry = cluster
        .write_as(Some(&alice), Write::Delete, &stored, None, true)
        .expect("answered");
    assert!(dry.answer.is_err(), "alice may not delete: {dry:?}");
    let dry = cluster
        .write_as(None, Write::Delete, &stored, None, true)
        .expect("answered");
    assert!(dry.answer.is_ok(), "{dry:?}");
    cluster
        .get(&stored)
        .expect("still there after a dry-run delete");
    assert_eq!(
        written.warnings,
        [
            "Validation failed for ValidatingAdmissionPolicy 'no-no' with binding 'no-no-warn': \
          say \"yes\" instead"
        ]
    );
    // bob may create no ConfigMap at all: RBAC's 403 before admission.
    let bob_writes = cluster
        .write_as(
            Some(&Requester {
                user: "bob".into(),
                groups: vec!["team-b".into()],
            }),
            Write::Create,
            &configmap("yes"),
            None,
            true,
        )
        .expect("answered");
    let refusal = bob_writes
        .answer
        .expect_err("bob may not create ConfigMaps");
    assert_eq!((refusal.code, refusal.reason.as_str()), (403, "Forbidden"));
    assert!(
        refusal
            .message
            .contains("User \"bob\" cannot create resource \"configmaps\""),
        "{}",
        refusal.message
    );
    cluster.undo(&mut changes).expect("undone");
}

/// Whether the cluster allows the SubjectAccessReview of `spec`.
fn allows(cluster: &TestCluster, spec: Value) -> bool {
    let written = cluster
        .write_as(
            None,
            Write::Create,
            &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": spec}),
            None,
            false,
        )
        .expect("answered");
    written.answer.expect("a review is answered")["status"]["allowed"] == true
}

/// Whether the RBAC authorizer lets `user` get pods cluster-wide.
fn may_get_pods(cluster: &TestCluster, user: &str) -> bool {
    allows(
        cluster,
        json!({"user": user, "resourceAttributes": {"verb": "get", "resource": "pods"}}),
    )
}

/// A grant written, or taken away, is what the authorizer decides with
/// once `wait_rbac_seen` returns, round after round; and the sentinels it
/// writes are gone again. The authorizer's caches follow the stored
/// objects a moment later: on a busy machine (three busy loops on two
/// cores) this test without the wait failed one run in three ("round 6:
/// granted"), with it none in five.
#[test]
fn rbac_written_is_in_force_once_the_authorizer_has_seen_it() {
    let cluster = TestCluster::start().expect("the test cluster starts");
    for round in 0..10 {
        let user = format!("user-{round}");
        let mut changes = Changes::default();
        for object in [
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": format!("pod-reader-{round}")},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": format!("pod-reader-{round}")},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": format!("pod-reader-{round}")},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                    "name": user}]}),
        ] {
            cluster
                .put(&object, &mut changes)
                .expect("answered")
                .expect("stored");
        }
        cluster.wait_rbac_seen().expect("the authorizer catches up");
        assert!(may_get_pods(&cluster, &user), "round {round}: granted");
        cluster.undo(&mut changes).expect("undone");
        cluster.wait_rbac_seen().expect("the authorizer catches up");
        assert!(!may_get_pods(&cluster, &user), "round {round}: taken away");
    }
    let listed = cluster
        .kubectl(cluster.dir())
        .expect("kubectl")
        .args([
            "get",
            "clusterroles,clusterrolebindings,roles,rolebindings",
            "-A",
            "-o",
            "name",
        ])
        .output()
        .expect("kubectl runs");
    assert!(listed.status.success(), "{listed:?}");
    let names = String::from_utf8_lossy(&listed.stdout);
    assert!(
        names.contains("clusterrole.rbac.authorization.k8s.io/cluster-admin"),
        "{names}"
    );
    assert!(!names.contains("sentinel"), "{names}");
}

#[test]
fn the_default_rbac_can_be_removed_for_a_scenario_that_lists_its_own() {
    let cluster = TestCluster::start().expect("the test cluster starts");
    let removed = cluster.remove_default_rbac().expect("removed");
    // kube-apiserver's bootstrap policy: dozens of roles and bindings.
    assert!(removed > 100, "only {removed} default RBAC objects");
    assert_eq!(cluster.remove_default_rbac().expect("removed"), 0);
}

#[test]
fn dropping_the_test_cluster_stops_its_processes() {
    let cluster = TestCluster::start().expect("the test cluster starts");
    let kubeconfig = cluster.kubeconfig().to_path_buf();
    let dir = cluster.dir().to_path_buf();
    assert!(kubeconfig.is_file());
    let address = cluster.server().trim_start_matches("https://").to_string();
    drop(cluster);
    assert!(!dir.exists(), "the cluster's directory is removed");
    assert!(
        std::net::TcpStream::connect(&address).is_err(),
        "nothing listens at {address} once the cluster is dropped"
    );
}
