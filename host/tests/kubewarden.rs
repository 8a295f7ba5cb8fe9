//! Kubewarden installed as the README says, and the webhook path failing
//! closed: kube-apiserver (`olm_guard_kube_harness::cluster`) with
//! Kubewarden's policy-server as its admission webhook, registered the way
//! Kubewarden's controller registers the ClusterAdmissionPolicies that
//! `kubectl apply` stored (`olm_guard_kube_harness::kubewarden::Kubewarden`;
//! no controller runs, since no pods do), policy-server reading the cluster
//! as the ServiceAccount `deploy/kubewarden/policy-server-rbac.yaml` binds.
//!
//! policy-server loads each policy's module from the module built here
//! (`dist/<module>.wasm`, a `file://` URL) in place of the published
//! `registry://ghcr.io/olm-guard/policies/<module>:<version>`, which these
//! machines cannot reach: the same module, annotated the same way.

mod common;

use std::time::Instant;

use serde_json::{Value, json};

use common::readme::{Shell, readme_commands};
use olm_guard_kube_harness::cluster::{Changes, TestCluster, Write, Written};
use olm_guard_kube_harness::kubewarden::Kubewarden;

/// The URL policy-server loads a policy's `spec.module` from: the module
/// of that name built here.
fn built_module(module: &str) -> String {
    let name = module
        .rsplit('/')
        .next()
        .and_then(|last| last.split(':').next())
        .unwrap_or_default();
    let path = common::module(name);
    format!("file://{}", path.canonicalize().unwrap_or(path).display())
}

/// A cluster that runs OLM and Kubewarden: their CRDs.
fn kubewarden_cluster() -> TestCluster {
    let mut crds: Vec<&str> = common::cluster::OLM_CRDS.to_vec();
    crds.extend(common::cluster::ORIA_CRDS);
    crds.push("testdata/upstream/crds/policies.kubewarden.io_clusteradmissionpolicies.yaml");
    common::cluster::start(&crds)
}

/// The lines of the first `text` block after the README heading `heading`:
/// what a command of its `sh` block prints.
fn readme_output(heading: &str) -> String {
    let readme = std::fs::read_to_string(common::root().join("README.md")).expect("README.md");
    let after = readme
        .split_once(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("README.md has no heading {heading:?}"))
        .1;
    after
        .split_once("```text\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .unwrap_or_else(|| panic!("no text block after {heading:?}"))
        .0
        .to_string()
}

/// The README's heading of the Kubewarden install steps.
const INSTALL: &str = "### Install the policies";

#[test]
fn the_readme_installs_the_policies_on_kubewarden_as_written() {
    let cluster = kubewarden_cluster();
    let shell = Shell::new();
    let commands = readme_commands(INSTALL);
    assert!(
        commands
            .first()
            .is_some_and(|c| c.starts_with("kubectl apply -f deploy/kubewarden/")),
        "{commands:?}"
    );
    let mut refusals = Vec::new();
    let mut kubewarden = None;
    for command in &commands {
        if command.contains("refused") {
            let output = shell.run(command, cluster.kubeconfig());
            assert!(!output.status.success(), "`{command}` was not refused");
            refusals.push(common::text(&output.stderr).trim_end().to_string());
            eprintln!("refused as the README says: {command}");
        } else {
            shell.ok(command, cluster.kubeconfig());
        }
        // What the controller does once the policies are stored.
        if command.starts_with("kubectl apply -f deploy/kubewarden/") {
            kubewarden = Some(
                Kubewarden::reconcile(&cluster, built_module).unwrap_or_else(|e| panic!("{e}")),
            );
        }
    }
    let kubewarden = kubewarden.expect("reconciled");
    assert_eq!(
        kubewarden.policies.len(),
        olm_guard_rules::registry::RULES.len()
    );
    // kubectl's words, as the README shows them.
    assert_eq!(refusals, vec![readme_output(INSTALL)], "kubectl printed");
    let refusal = &refusals[0];
    assert!(
        refusal.contains(
            "admission webhook \"clusterwide-revision-uniqueness.kubewarden.admission\" denied \
             the request: "
        ),
        "{refusal}"
    );
    // The admitted revision is stored; the refused one is not.
    let revision = |name: &str| {
        json!({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
            "metadata": {"name": name}})
    };
    cluster.get(&revision("my-app-1")).expect("my-app-1 stored");
    assert!(cluster.get(&revision("my-app-1-again")).is_err());
}

/// One guarded write and how it is decided.
#[derive(Debug, PartialEq)]
enum Decided {
    Admitted,
    Refused(String),
}

fn decided(written: &Written) -> Decided {
    match &written.answer {
        Ok(_) => Decided::Admitted,
        Err(refusal) => Decided::Refused(refusal.message.clone()),
    }
}

/// The writes the policies guard (each a dry run, as the administrator),
/// each with the policy whose webhook kube-apiserver calls first: mutating
/// webhooks before validating ones, each kind in the order of the
/// configurations' names (a ClusterObjectSet: group-authorization, then
/// revision-uniqueness, which refuses this one).
fn guarded() -> Vec<(&'static str, Value)> {
    let example = |file: &str| -> Value {
        let path = common::root().join("examples/kubewarden").join(file);
        serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    vec![
        ("group-authorization", example("my-app-1-again.yaml")),
        (
            "catalog-union",
            json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
                "metadata": {"name": "no-source", "namespace": "default"},
                "spec": {"sourceType": "grpc"}}),
        ),
        (
            "aggregation-escalation",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "team-reader"},
                "aggregationRule": {"clusterRoleSelectors": [
                    {"matchLabels": {"example.com/aggregate-to-team": "true"}}]}}),
        ),
        (
            "og-intersection",
            json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
                "metadata": {"name": "team", "namespace": "default"},
                "spec": {"targetNamespaces": ["default"]}}),
        ),
    ]
}

/// Each guarded write, sent as a dry run.
fn decide_all(cluster: &TestCluster) -> Vec<Decided> {
    guarded()
        .iter()
        .map(|(_, object)| {
            decided(
                &cluster
                    .write_as(None, Write::Create, object, None, true)
                    .expect("answered"),
            )
        })
        .collect()
}

/// policy-server's ClusterRole of `deploy/kubewarden/policy-server-rbac.yaml`
/// without the rules `drop` says to leave out.
fn policy_server_role_without(drop: impl Fn(&Value) -> bool) -> Value {
    let text =
        std::fs::read_to_string(common::root().join("deploy/kubewarden/policy-server-rbac.yaml"))
            .unwrap();
    let mut role: Value = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .find(|d: &Value| d["kind"] == "ClusterRole")
        .unwrap();
    let rules: Vec<Value> = role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !drop(r))
        .cloned()
        .collect();
    role["rules"] = json!(rules);
    role
}

#[test]
fn the_webhook_path_fails_closed_and_decides_again_when_policy_server_is_back() {
    let cluster = kubewarden_cluster();
    let shell = Shell::new();
    shell.ok("kubectl apply -f deploy/kubewarden/", cluster.kubeconfig());
    let mut kubewarden =
        Kubewarden::reconcile(&cluster, built_module).unwrap_or_else(|e| panic!("{e}"));
    let mut changes = Changes::default();
    shell.ok(
        "kubectl create -f examples/kubewarden/my-app-1.yaml",
        cluster.kubeconfig(),
    );

    let before = decide_all(&cluster);
    let denied = before
        .iter()
        .filter(|d| matches!(d, Decided::Refused(_)))
        .count();
    assert!(
        (1..before.len()).contains(&denied),
        "some guarded writes are admitted and some denied: {before:#?}"
    );

    // policy-server gone: every guarded write refused (failurePolicy Fail),
    // each naming its webhook; a write no policy guards goes through.
    kubewarden.server.stop();
    let unreachable = decide_all(&cluster);
    for ((policy, object), decided) in guarded().iter().zip(&unreachable) {
        let webhook = format!("clusterwide-{policy}.kubewarden.admission");
        match decided {
            Decided::Refused(message) => assert!(
                message.contains(&format!("failed calling webhook \"{webhook}\"")),
                "{object}: {message}"
            ),
            Decided::Admitted => panic!("{object} was admitted without policy-server"),
        }
    }
    let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "unguarded", "namespace": "default"}});
    assert_eq!(
        decided(
            &cluster
                .write_as(None, Write::Create, &configmap, None, true)
                .unwrap()
        ),
        Decided::Admitted
    );

    // Back: the same requests, the same answers.
    kubewarden
        .server
        .restart()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(decide_all(&cluster), before, "decided again as before");

    // Without the right to ask SubjectAccessReviews: a request whose
    // module asks one (group-authorization, for a user it has not asked
    // about) is denied, the denial naming the lookup.
    let role = policy_server_role_without(|r| r["resources"] == json!(["subjectaccessreviews"]));
    cluster.put(&role, &mut changes).unwrap().unwrap();
    let bob = [
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "bob-writes-revisions"},
            "rules": [{"apiGroups": ["olm.operatorframework.io"],
                "resources": ["clusterobjectsets"], "verbs": ["create"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "bob-writes-revisions"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                "name": "bob-writes-revisions"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]}),
    ];
    for object in &bob {
        cluster.put(object, &mut changes).unwrap().unwrap();
    }
    cluster.wait_rbac_seen().unwrap();
    let mut second: Value = guarded()[0].1.clone();
    second["metadata"]["name"] = json!("my-app-2");
    second["spec"]["revision"] = json!(2);
    let as_bob = olm_guard_kube_harness::cluster::Requester {
        user: "bob".into(),
        groups: vec!["system:authenticated".into()],
    };
    let refused = decided(
        &cluster
            .write_as(Some(&as_bob), Write::Create, &second, None, true)
            .unwrap(),
    );
    match &refused {
        Decided::Refused(message) => assert!(
            message.contains(
                "admission webhook \"clusterwide-group-authorization.kubewarden.admission\" \
                 denied the request: "
            ) && message.contains("subjectaccessreviews"),
            "{message}"
        ),
        Decided::Admitted => panic!("admitted without the SubjectAccessReview it needs"),
    }
    eprintln!("without the SubjectAccessReview right: {refused:?}");

    // Without the right to list what a module reads: policy-server waits
    // for a list that is never answered, and kube-apiserver refuses the
    // write once the webhook's timeout has passed. Never admitted.
    let role = policy_server_role_without(|r| r["resources"] == json!(["clusterobjectsets"]));
    cluster.put(&role, &mut changes).unwrap().unwrap();
    cluster.wait_rbac_seen().unwrap();
    // A policy-server that has not listed ClusterObjectSets yet.
    kubewarden
        .server
        .restart()
        .unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    let refused = decided(
        &cluster
            .write_as(None, Write::Create, &second, None, true)
            .unwrap(),
    );
    match &refused {
        Decided::Refused(message) => assert!(
            message.contains(
                "failed calling webhook \"clusterwide-revision-uniqueness.kubewarden.admission\""
            ),
            "{message}"
        ),
        Decided::Admitted => panic!("admitted without the list it needs"),
    }
    eprintln!(
        "without the list right, refused after {:?}: {refused:?}",
        started.elapsed()
    );
}
