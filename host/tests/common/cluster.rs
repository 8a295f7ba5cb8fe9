//! The test control plane as the host's tests start it: kube-apiserver on
//! etcd (`olm_guard_kube_harness::cluster::TestCluster`) with upstream CRDs
//! of the repository installed.

use serde_json::Value;

use olm_guard_kube_harness::cluster::TestCluster;

/// The upstream CRDs of OLM the tests judge and read: CatalogSources,
/// ClusterObjectSets, OperatorGroups.
pub const OLM_CRDS: [&str; 3] = [
    "crates/native/upstream/operators.coreos.com_catalogsources.yaml",
    "crates/native/upstream/olm.operatorframework.io_clusterobjectsets.yaml",
    "testdata/upstream/crds/operators.coreos.com_operatorgroups.yaml",
];

/// oria's ScopeTemplates and ScopeInstances, in their own group.
pub const ORIA_CRDS: [&str; 2] = [
    "testdata/upstream/crds/operators.io.operator-framework_scopetemplates.yaml",
    "testdata/upstream/crds/operators.io.operator-framework_scopeinstances.yaml",
];

/// A YAML file of the repository (a CRD), read or the test fails naming it.
pub fn crd(path: &str) -> Value {
    let path = super::root().join(path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A control plane of its own, serving the CRDs of `paths`.
pub fn start(paths: &[&str]) -> TestCluster {
    let cluster = TestCluster::start().expect("the test cluster starts");
    let crds: Vec<Value> = paths.iter().map(|path| crd(path)).collect();
    cluster.install_crds(&crds).expect("the CRDs are served");
    cluster
}
