//! The test cluster itself: Kubernetes' CRD API server on etcd, started,
//! serving an upstream CRD, storing and refusing custom resources as the API
//! server does, and gone with its processes when dropped.

use olm_guard_kube_harness::cluster::TestCluster;
use serde_json::{Value, json};

fn upstream_crd(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../native/upstream")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn catalog_source(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "CatalogSource",
        "metadata": {"name": name, "namespace": "olm"},
        "spec": spec,
    })
}

#[test]
fn the_test_cluster_stores_and_refuses_custom_resources_as_the_api_server_does() {
    let cluster = TestCluster::start().expect("the test cluster starts");
    assert!(cluster.server().starts_with("https://127.0.0.1:"));
    cluster
        .install_crds(&[upstream_crd("operators.coreos.com_catalogsources.yaml")])
        .expect("the upstream CatalogSource CRD is Established");

    let stored = cluster
        .create(&catalog_source(
            "operatorhubio",
            json!({"sourceType": "grpc", "image": "quay.io/operatorhubio/catalog:latest"}),
        ))
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
