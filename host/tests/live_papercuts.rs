//! What a user of a live cluster tripped over, against a running control
//! plane (`olm_guard_kube_harness::cluster`: kube-apiserver on etcd, RBAC
//! and SubjectAccessReviews real), with users whose RBAC each test sets:
//!
//! - `run` reads the cluster kubectl would choose (KUBECONFIG, else
//!   ~/.kube/config) as `audit` and `snapshot` do, so the duplicate revision
//!   the cluster holds is seen however the kubeconfig was given, and an
//!   object the cluster holds is an UPDATE of it for one module as for
//!   several;
//! - `audit` and `snapshot` check every permission they need first and name
//!   all the missing ones at once; an auditor allowed to list only gets its
//!   report without `--as`; Kubernetes' own objects are left out, skips
//!   summed up by reason;
//! - `--as alice` is in `system:authenticated` for the server's
//!   SubjectAccessReviews, in `run` and in `audit`;
//! - `snapshot -o json|yaml` and `--output-file`, its counts, and what the
//!   server does not serve, named by resource.
//!
//! Offline parts of the same issues: tests/papercuts.rs.

mod common;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use olm_guard_kube_harness::cluster::TestCluster;

/// A cluster serving OLM's CRDs (no ClusterServiceVersion: its kind stays
/// unserved, as on a cluster without OLM v0).
fn cluster() -> TestCluster {
    common::cluster::start(&common::cluster::OLM_CRDS)
}

/// Stores `objects` as the administrator, their Namespaces first.
fn store(cluster: &TestCluster, objects: &[Value]) {
    cluster
        .store_all(objects, 1)
        .unwrap_or_else(|e| panic!("{objects:?}: {e}"));
}

/// A ClusterRole of `rules` bound to `subject` (`User`/`Group`, name).
fn grant(cluster: &TestCluster, name: &str, rules: Value, subject: (&str, &str)) {
    store(
        cluster,
        &[
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": name}, "rules": rules}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": name},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": subject.0, "name": subject.1}]}),
        ],
    );
}

/// [`common::olm_guard_at_home`] in a HOME without a kubeconfig.
fn olm_guard(args: &[&str], env: &[(&str, &str)]) -> Output {
    let home = tempfile::tempdir().unwrap();
    common::olm_guard_at_home(home.path(), args, env)
}

fn text(bytes: &[u8]) -> String {
    common::text(bytes)
}

/// The `response` of each review `run -o json` printed.
fn responses(output: &Output) -> Vec<Value> {
    common::json_items(common::succeeds(output).as_bytes())
        .into_iter()
        .map(|review| review["response"].clone())
        .collect()
}

/// A revision of the `widgets` group (operator-controller groups revisions
/// by the owner-name label; this CRD has no spec.group).
fn revision(name: &str, number: u64) -> Value {
    json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterObjectSet",
        "metadata": {"name": name, "labels": {"olm.operatorframework.io/owner-name": "widgets"}},
        "spec": {"revision": number, "lifecycleState": "Active", "collisionProtection": "Prevent"},
    })
}

fn write_yaml(dir: &Path, name: &str, objects: &[Value]) -> String {
    let text: Vec<String> = objects
        .iter()
        .map(|o| serde_yaml_ng::to_string(o).unwrap())
        .collect();
    common::write(dir, name, &text.join("---\n"))
}

#[test]
fn run_reads_the_cluster_kubectl_would_choose_and_stored_objects_are_updates() {
    let cluster = cluster();
    store(&cluster, &[revision("widgets-1", 1)]);
    // bob may read ClusterObjectSets, and nothing else.
    grant(
        &cluster,
        "revision-reader",
        json!([{"apiGroups": ["olm.operatorframework.io"], "resources": ["clusterobjectsets"],
                "verbs": ["get", "list"]}]),
        ("User", "bob"),
    );
    let bob = cluster
        .kubeconfig_for_user("bob", &[])
        .expect("bob's kubeconfig");
    let bob = bob.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A new revision with the stored one's number: the duplicate the
    // cluster holds denies it.
    let copy = write_yaml(dir.path(), "copy.yaml", &[revision("widgets-1-copy", 1)]);
    let run = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = vec![
            "run",
            "revision-uniqueness",
            "--object",
            &copy,
            "-o",
            "json",
        ];
        args.extend_from_slice(extra);
        olm_guard(&args, env)
    };
    let by_flag = responses(&run(&["--kubeconfig", bob], &[]));
    assert_eq!(by_flag[0]["allowed"], false, "{by_flag:?}");
    let by_variable = responses(&run(&[], &[("KUBECONFIG", bob)]));
    assert_eq!(
        by_variable, by_flag,
        "KUBECONFIG is the cluster, as --kubeconfig"
    );
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".kube")).unwrap();
    std::fs::copy(bob, home.path().join(".kube/config")).unwrap();
    let by_home = responses(&common::olm_guard_at_home(
        home.path(),
        &[
            "run",
            "revision-uniqueness",
            "--object",
            &copy,
            "-o",
            "json",
        ],
        &[],
    ));
    assert_eq!(by_home, by_flag, "~/.kube/config is the cluster too");
    // --cluster FILE alone is the cluster, offline, KUBECONFIG or not.
    let files = write_yaml(
        dir.path(),
        "files.yaml",
        &[json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "elsewhere"}})],
    );
    let offline = responses(&run(&["--cluster", &files], &[("KUBECONFIG", bob)]));
    assert_eq!(offline[0]["allowed"], true, "{offline:?}");

    // The stored revision itself, sent again: an UPDATE of it (nothing
    // changed), for one module as for several; beside it the copy, a
    // CREATE.
    let both = write_yaml(
        dir.path(),
        "both.yaml",
        &[revision("widgets-1", 1), revision("widgets-1-copy", 1)],
    );
    let operations = |modules: &[&str]| -> Vec<(String, bool)> {
        let mut args = vec!["run"];
        args.extend_from_slice(modules);
        args.extend(["--object", &both, "-o", "json", "--independent"]);
        let output = olm_guard(&args, &[("KUBECONFIG", bob)]);
        common::json_items(common::succeeds(&output).as_bytes())
            .into_iter()
            .filter(|item| item["policy"] == "revision-uniqueness")
            .map(|item| {
                (
                    item["operation"].as_str().unwrap().to_string(),
                    item["response"]["allowed"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    let one = operations(&["revision-uniqueness"]);
    assert_eq!(
        one,
        [("UPDATE".to_string(), true), ("CREATE".to_string(), false)]
    );
    assert_eq!(operations(&["revision-uniqueness", "catalog-union"]), one);
}

/// What every module of olm-guard lists, for a ClusterRole's rules.
fn list_everything() -> Value {
    json!([
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]},
        {"apiGroups": ["operators.coreos.com", "operators.io.operator-framework"],
         "resources": ["catalogsources", "operatorgroups", "clusterserviceversions",
                       "scopetemplates", "scopeinstances"], "verbs": ["list"]},
        {"apiGroups": ["olm.operatorframework.io"], "resources": ["clusterobjectsets"], "verbs": ["list"]},
        {"apiGroups": ["rbac.authorization.k8s.io"],
         "resources": ["clusterroles", "clusterrolebindings", "roles", "rolebindings"],
         "verbs": ["list"]},
    ])
}

#[test]
fn permissions_are_checked_first_and_a_list_only_auditor_gets_its_report() {
    let cluster = cluster();
    store(
        &cluster,
        &[
            // catalog-union fails it: the image wins, the address is ignored.
            json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
                   "metadata": {"name": "confused", "namespace": "olm"},
                   "spec": {"sourceType": "grpc", "image": "quay.io/example/catalog:v1",
                            "address": "catalog.olm.svc:50051"}}),
            revision("widgets-1", 1),
            // A ClusterRole someone wrote, beside Kubernetes' own.
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "widgets-viewer"},
                   "rules": [{"apiGroups": ["widgets.example.com"], "resources": ["widgets"],
                              "verbs": ["get", "list"]}]}),
        ],
    );
    grant(&cluster, "auditor", list_everything(), ("User", "dave"));
    let dave = cluster.kubeconfig_for_user("dave", &[]).expect("dave");
    let dave = dave.to_str().unwrap();
    let carol = cluster
        .kubeconfig_for_user("carol", &["nobody"])
        .expect("carol");
    let carol = carol.to_str().unwrap();

    // carol may do nothing: every permission named in one line, at once.
    for command in ["audit", "snapshot"] {
        let line = common::refused_in_one_line(&olm_guard(&[command, "--kubeconfig", carol], &[]));
        for permission in [
            "list namespaces",
            "list catalogsources.operators.coreos.com",
            "list operatorgroups.operators.coreos.com",
            "list clusterobjectsets.olm.operatorframework.io",
            "list clusterroles.rbac.authorization.k8s.io",
            "list clusterrolebindings.rbac.authorization.k8s.io",
            "list roles.rbac.authorization.k8s.io",
            "list rolebindings.rbac.authorization.k8s.io",
        ] {
            assert!(line.contains(permission), "{command}: {permission}: {line}");
        }
        assert!(line.contains("SelfSubjectAccessReview"), "{line}");
        assert!(line.contains(&cluster.server()), "{line}");
        if command == "audit" {
            assert!(
                line.contains("no module can be audited without them"),
                "{line}"
            );
            assert!(line.contains("judged by catalog-union"), "{line}");
        }
    }

    // dave may list everything and create no SubjectAccessReview: without
    // --as the audit runs, the modules that call can_i judging for every
    // requester.
    let output = olm_guard(&["audit", "--kubeconfig", dave, "-o", "json"], &[]);
    let report = &common::json_items(common::succeeds(&output).as_bytes())[0];
    let result = |name: &str, policy: &str| -> String {
        report["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["object"]["name"] == name && r["policy"] == policy)
            .unwrap_or_else(|| panic!("{name} {policy}: {report}"))["result"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(result("confused", "catalog-union"), "fail");
    assert_eq!(result("widgets-viewer", "aggregation-escalation"), "skip");
    assert_eq!(result("widgets-1", "group-authorization"), "skip");
    assert_eq!(result("widgets-1", "revision-uniqueness"), "pass");
    // Kubernetes' own ClusterRoles (admin, edit, view, system:...) are not
    // judged, and how many were left out is said.
    let judged_roles: Vec<&str> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["object"]["kind"] == "ClusterRole")
        .map(|r| r["object"]["name"].as_str().unwrap())
        .collect();
    // The two this test wrote: dave's and the one someone wrote.
    assert_eq!(judged_roles, ["auditor", "widgets-viewer"], "{report}");
    let left_out = report["systemObjectsLeftOut"].as_u64().unwrap();
    assert!(left_out > 40, "{report}");
    let table = common::succeeds(&olm_guard(&["audit", "--kubeconfig", dave], &[]));
    assert!(
        table.contains(&format!(
            "{left_out} objects the cluster manages itself (label kubernetes.io/bootstrapping, or a system: name) left out"
        )),
        "{table}"
    );
    let reasons: Vec<&str> = table
        .lines()
        .skip_while(|l| *l != "Skipped, by reason:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(reasons.len(), 2, "one line per module and reason: {table}");
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("aggregation-escalation")
                && r.contains("2 objects  needs a requester")),
        "{table}"
    );
    assert!(!table.contains("ClusterRole admin"), "{table}");
    let all = common::succeeds(&olm_guard(
        &[
            "audit",
            "--kubeconfig",
            dave,
            "--include-system",
            "-o",
            "json",
        ],
        &[],
    ));
    let all = &common::json_items(all.as_bytes())[0];
    assert!(
        all["results"].as_array().unwrap().len() as u64 > left_out,
        "--include-system judges them"
    );

    // With --as, can_i asks the server for alice: dave may not, which is
    // named, with what can still run.
    let line = common::refused_in_one_line(&olm_guard(
        &["audit", "--kubeconfig", dave, "--as", "alice"],
        &[],
    ));
    assert!(
        line.contains("create subjectaccessreviews.authorization.k8s.io (can_i for --as alice by aggregation-escalation; can_i for --as alice by group-authorization; can_i for --as alice by scope-rbac)"),
        "{line}"
    );
    assert!(
        line.contains("olm-guard audit catalog-union og-intersection revision-uniqueness"),
        "{line}"
    );
    // Named once: they are both the ones without can_i and the runnable.
    assert_eq!(
        line.matches("catalog-union").count(),
        1,
        "the modules named once: {line}"
    );
    assert!(
        line.contains(
            "deploy/audit-rbac.yaml (olm-guard's repository) grants it in the ClusterRole \
             olm-guard-auditor: kubectl apply -f deploy/audit-rbac.yaml, then kubectl create \
             clusterrolebinding olm-guard-auditor --clusterrole olm-guard-auditor --user USER"
        ),
        "{line}"
    );
    assert!(!line.contains("list "), "every list is granted: {line}");
    // ... and they can.
    let some = olm_guard(
        &[
            "audit",
            "catalog-union",
            "revision-uniqueness",
            "--kubeconfig",
            dave,
            "--as",
            "alice",
            "-o",
            "json",
        ],
        &[],
    );
    common::succeeds(&some);
}

#[test]
fn as_alice_is_in_system_authenticated_for_the_servers_reviews() {
    let cluster = cluster();
    // manage on every revision group, for every authenticated user: alice
    // holds it only as the API server sees her.
    grant(
        &cluster,
        "everyone-manages-groups",
        json!([{"apiGroups": ["olm.operatorframework.io"], "resources": ["clusterobjectsets/groups"],
                "verbs": ["manage"]}]),
        ("Group", "system:authenticated"),
    );
    store(&cluster, &[revision("widgets-1", 1)]);
    let admin = cluster.kubeconfig().to_str().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let next = write_yaml(dir.path(), "next.yaml", &[revision("widgets-2", 2)]);
    let run = responses(&olm_guard(
        &[
            "run",
            "group-authorization",
            "--object",
            &next,
            "--kubeconfig",
            &admin,
            "--as",
            "alice",
            "-o",
            "json",
        ],
        &[],
    ));
    assert_eq!(run[0]["allowed"], true, "{run:?}");
    let audit = common::succeeds(&olm_guard(
        &[
            "audit",
            "group-authorization",
            "--kubeconfig",
            &admin,
            "--as",
            "alice",
            "-o",
            "json",
        ],
        &[],
    ));
    let report = &common::json_items(audit.as_bytes())[0];
    assert_eq!(report["summary"]["pass"], 1, "{report}");
    assert_eq!(report["summary"]["fail"], 0, "{report}");

    // snapshot: -o is the format, --output-file the file; its counts and
    // what the server does not serve, named by resource.
    let yaml = olm_guard(
        &[
            "snapshot",
            "revision-uniqueness",
            "og-intersection",
            "--kubeconfig",
            &admin,
        ],
        &[],
    );
    let printed = common::succeeds(&yaml);
    assert!(printed.starts_with("# olm-guard snapshot of "), "{printed}");
    let stderr = text(&yaml.stderr);
    assert!(
        stderr.contains("does not serve operators.coreos.com/v1alpha1 clusterserviceversions"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("ClusterServiceVersion"),
        "kinds and resources mixed: {stderr}"
    );
    let json_list = olm_guard(
        &[
            "snapshot",
            "revision-uniqueness",
            "og-intersection",
            "--kubeconfig",
            &admin,
            "-o",
            "json",
        ],
        &[],
    );
    let list: Value = serde_json::from_slice(&json_list.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&json_list.stderr)));
    assert_eq!(list["kind"], "List");
    let objects = list["items"].as_array().unwrap().len();
    let documents = serde_yaml_ng::Deserializer::from_str(&printed)
        .map(|document| <Value as serde::Deserialize>::deserialize(document).unwrap())
        .filter(|document| !document.is_null())
        .count();
    assert_eq!(documents, objects, "{printed}");
    let file = dir.path().join("cluster.yaml");
    let written = olm_guard(
        &[
            "snapshot",
            "revision-uniqueness",
            "og-intersection",
            "--kubeconfig",
            &admin,
            "--output-file",
            file.to_str().unwrap(),
        ],
        &[],
    );
    common::succeeds(&written);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), printed);
    // The kinds listed: ClusterObjectSets, OperatorGroups and Namespaces;
    // only two have objects (no OperatorGroup is stored).
    assert!(
        text(&written.stderr).contains(&format!(
            "wrote {objects} objects of 2 kinds (3 listed) to {}",
            file.display()
        )),
        "{}",
        text(&written.stderr)
    );
}
