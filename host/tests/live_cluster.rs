//! `olm-guard` against a running control plane: kube-apiserver on etcd
//! (`olm_guard_kube_harness::cluster`, one per test), with the upstream
//! CatalogSource, OperatorGroup and ClusterObjectSet CRDs installed over
//! HTTP.
//!
//! - `run --kubeconfig` answers as `run --cluster` with the same objects,
//!   and as `run --cluster` with `olm-guard snapshot`'s file of the cluster,
//!   for a scenario of each rule that reads the cluster (`can_i` allowed
//!   and denied by the server's own SubjectAccessReviews);
//! - a user whom the cluster's RBAC lets list nothing gets the server's
//!   403, said in one line naming the permission, exit 2;
//! - `audit --kubeconfig` of more than 2,000 objects, read in pages of 100,
//!   gives the results of `audit --cluster` on the snapshot taken from it;
//! - every way of not reaching the cluster (a server stopped in the middle
//!   of an audit, an expired or foreign client certificate, a server the
//!   kubeconfig does not trust, an unknown context, a missing kubeconfig, a
//!   server that never answers) is exit 2 and one line naming the server or
//!   the kubeconfig and the cause, with nothing on stdout and no credential
//!   anywhere.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use olm_guard_kube_harness::cluster::{Changes, Identity, TestCluster};

/// A cluster serving OLM's and oria's CRDs.
fn cluster() -> TestCluster {
    let crds: Vec<&str> = common::cluster::OLM_CRDS
        .into_iter()
        .chain(common::cluster::ORIA_CRDS)
        .collect();
    common::cluster::start(&crds)
}

/// `olm-guard` with `args`, in the repository, reading no kubeconfig of the
/// user running the tests.
fn olm_guard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .current_dir(common::root())
        .env_remove("KUBECONFIG")
        .env("HOME", std::env::temp_dir())
        .args(args)
        .output()
        .expect("olm-guard runs")
}

fn text(bytes: &[u8]) -> String {
    common::text(bytes)
}

/// The `response` of every AdmissionReview `run -o json` printed.
fn responses(output: &Output) -> Vec<Value> {
    assert!(
        output.status.success(),
        "olm-guard failed: {}",
        text(&output.stderr)
    );
    common::json_items(&output.stdout)
        .into_iter()
        .map(|review| review["response"].clone())
        .collect()
}

/// A scenario's objects put into the cluster (recorded in `changes`):
/// those of the kinds it serves, the Namespaces they live in first. The
/// rest (kinds no CRD of the test serves) is written to a file beside
/// `dir`: the `--cluster` arguments that give it, none when every object
/// is served, as an empty file is refused.
fn split_cluster(
    cluster: &TestCluster,
    scenario: &Path,
    name: &str,
    changes: &mut Changes,
) -> Vec<String> {
    let text = std::fs::read_to_string(scenario.join("cluster.yaml")).expect("cluster.yaml");
    let mut served = Vec::new();
    let mut rest = String::new();
    let mut objects = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(&text) {
        let object: Value = serde::Deserialize::deserialize(document).expect("YAML");
        match object["kind"].as_str() {
            // `kubectl get -o yaml`'s Lists, unpacked as --cluster reads them.
            Some("List") => objects.extend(object["items"].as_array().cloned().unwrap_or_default()),
            _ if object.is_null() => {}
            _ => objects.push(object),
        }
    }
    for object in objects {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        if cluster.serves(api_version, object["kind"].as_str().unwrap_or_default()) {
            served.push(object);
        } else {
            rest.push_str("---\n");
            rest.push_str(&serde_yaml_ng::to_string(&object).expect("YAML"));
        }
    }
    // Namespaces before what lives in them.
    served.sort_by_key(|object| object["kind"] != "Namespace");
    cluster
        .add_namespaces_of(&served, changes)
        .expect("the Namespaces are created");
    for object in &served {
        cluster
            .put(object, changes)
            .expect("the request is answered")
            .unwrap_or_else(|refusal| panic!("{name}: {refusal:?}"));
    }
    // can_i is decided by the server's RBAC authorizer, which sees these
    // objects (and the scenario before's taken away) a moment later.
    cluster
        .wait_rbac_seen()
        .expect("the RBAC authorizer catches up");
    if rest.is_empty() {
        return Vec::new();
    }
    let path = cluster.dir().join(format!("{name}-rest.yaml"));
    std::fs::write(&path, rest).expect("written");
    vec!["--cluster".into(), path.display().to_string()]
}

#[test]
fn run_with_a_kubeconfig_answers_as_run_with_the_cluster_file_and_its_snapshot() {
    let dist = common::dist();
    let dist = dist.to_str().expect("UTF-8");
    // One cluster, emptied for each scenario; its own default RBAC
    // removed, so that the scenario's is the cluster's whole RBAC.
    let cluster = cluster();
    cluster.remove_default_rbac().expect("removed");
    for (rule, scenario, settings) in [
        // Its OperatorGroups and Namespaces (their labels) from the server.
        ("og-intersection", "og-r3-selector-conflict-denied", None),
        // A mutation: the next free revision, from the server's list.
        (
            "revision-uniqueness",
            "auto-increment-mutated",
            Some("settings.json"),
        ),
        // can_i, a SubjectAccessReview the server's RBAC allows ...
        ("group-authorization", "label-agrees-allowed", None),
        // ... and one it denies.
        (
            "group-authorization",
            "authz-group-subject-unlisted-group-denied",
            None,
        ),
        // The ClusterRoles and bindings listed, `escalate` asked.
        (
            "aggregation-escalation",
            "feed-cert-manager-edit-denied",
            None,
        ),
        // A ScopeTemplate got, the requester's rights asked.
        (
            "scope-rbac",
            "instance-tutorial-own-namespace-allowed",
            None,
        ),
    ] {
        let mut changes = Changes::default();
        let dir = common::root().join("testdata").join(rule).join(scenario);
        let rest = split_cluster(&cluster, &dir, scenario, &mut changes);
        let request = dir.join("request.json");
        let mut args: Vec<String> = ["run", rule, "--dist", dist, "--request"]
            .iter()
            .map(ToString::to_string)
            .collect();
        args.push(request.display().to_string());
        if let Some(file) = settings {
            args.push("--settings".into());
            args.push(dir.join(file).display().to_string());
        }
        args.extend(["-o".into(), "json".into()]);
        let with = |extra: &[String]| {
            let mut all = args.clone();
            all.extend(extra.iter().cloned());
            let all: Vec<&str> = all.iter().map(String::as_str).collect();
            olm_guard(&all)
        };
        let kubeconfig = cluster.kubeconfig().display().to_string();
        let mut live_args = vec!["--kubeconfig".to_string(), kubeconfig.clone()];
        live_args.extend(rest.iter().cloned());
        let live = responses(&with(&live_args));
        let file = responses(&with(&[
            "--cluster".into(),
            dir.join("cluster.yaml").display().to_string(),
        ]));
        assert_eq!(live, file, "{rule}/{scenario}: live cluster and its file");

        let snapshot = cluster.dir().join(format!("{scenario}-snapshot.yaml"));
        let taken = olm_guard(&[
            "snapshot",
            rule,
            "--dist",
            dist,
            "--kubeconfig",
            &kubeconfig,
            "--output-file",
            snapshot.to_str().expect("UTF-8"),
        ]);
        assert!(taken.status.success(), "{}", text(&taken.stderr));
        // A snapshot of a cluster that serves objects of none of the
        // module's kinds holds no object, and says to read it so.
        let mut replay_args = vec!["--cluster".to_string(), snapshot.display().to_string()];
        if text(&taken.stderr).contains("the snapshot holds no object") {
            replay_args.push("--allow-empty".into());
        }
        replay_args.extend(rest);
        let replayed = responses(&with(&replay_args));
        assert_eq!(
            live, replayed,
            "{rule}/{scenario}: live cluster and its snapshot"
        );
        cluster
            .undo(&mut changes)
            .expect("the scenario's objects are deleted");
    }
}

#[test]
fn a_user_the_cluster_lets_list_nothing_gets_its_403_in_one_line() {
    let cluster = cluster();
    let bob = cluster
        .kubeconfig_for_user("bob", &["team-b"])
        .expect("a kubeconfig for bob");
    let dist = common::dist();
    let object = common::root()
        .join("testdata/revision-uniqueness")
        .join("create-duplicate-of-active-denied/request.json");
    let output = olm_guard(&[
        "run",
        "revision-uniqueness",
        "--dist",
        dist.to_str().expect("UTF-8"),
        "--request",
        object.to_str().expect("UTF-8"),
        "--kubeconfig",
        bob.to_str().expect("UTF-8"),
    ]);
    refused_in_one_line(
        &output,
        &bob,
        &[
            &cluster.server(),
            "403 Forbidden",
            "User \"bob\" cannot list resource \"clusterobjectsets\"",
        ],
    );
}

/// More than 2,000 objects (`olm_guard_bench::stored::olm_objects`), stored.
const OBJECTS: usize = 2150;

fn populate(cluster: &TestCluster) -> usize {
    let objects = olm_guard_bench::stored::olm_objects(OBJECTS);
    cluster
        .store_all(&objects, 16)
        .expect("every object is stored, in its Namespace");
    objects.len()
}

/// What the test cluster does not serve, for `--cluster`: ClusterServiceVersions
/// (no CRD of theirs is installed), which og-intersection reads.
fn rest_file(cluster: &TestCluster) -> PathBuf {
    let path = cluster.dir().join("rest.yaml");
    std::fs::write(
        &path,
        "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\n\
         metadata: {name: widgets.v1.0.0, namespace: team-0}\n\
         spec: {displayName: Widgets, install: {strategy: deployment}}\n",
    )
    .expect("written");
    path
}

/// The audit's results without where each object was read (the server's
/// URL for one, the snapshot file for the other).
fn results(output: &Output) -> (Value, Vec<Value>) {
    assert!(
        output.status.success(),
        "the audit failed: {}",
        text(&output.stderr)
    );
    let mut report: Value = serde_json::from_slice(&output.stdout).expect("-o json is JSON");
    let results = report["results"]
        .as_array_mut()
        .expect("results")
        .iter_mut()
        .map(|result| {
            result.as_object_mut().expect("a result").remove("source");
            result.clone()
        })
        .collect();
    (report, results)
}

#[test]
fn an_audit_of_a_live_cluster_equals_the_audit_of_its_snapshot() {
    let cluster = cluster();
    let created = populate(&cluster);
    assert!(created >= 2000);
    let dist = common::dist();
    let dist = dist.to_str().expect("UTF-8");
    let kubeconfig = cluster.kubeconfig().to_str().expect("UTF-8").to_string();
    let rest = rest_file(&cluster);
    let rest = rest.to_str().expect("UTF-8");

    let live = olm_guard(&[
        "audit",
        "--kubeconfig",
        &kubeconfig,
        "--cluster",
        rest,
        "--chunk-size",
        "100",
        "--policies",
        dist,
        "-o",
        "json",
    ]);
    let stderr = text(&live.stderr);
    for kind in [
        "catalogsources.operators.coreos.com",
        "operatorgroups.operators.coreos.com",
        "clusterobjectsets.olm.operatorframework.io",
    ] {
        assert!(
            stderr.contains("read ") && stderr.contains(kind),
            "{stderr}"
        );
    }
    let (live_report, live_results) = results(&live);

    let snapshot = cluster.dir().join("cluster.yaml");
    let snapshot = snapshot.to_str().expect("UTF-8");
    let taken = olm_guard(&[
        "snapshot",
        "--dist",
        dist,
        "--kubeconfig",
        &kubeconfig,
        "--chunk-size",
        "100",
        "--output-file",
        snapshot,
    ]);
    assert!(taken.status.success(), "{}", text(&taken.stderr));
    let offline = olm_guard(&[
        "audit",
        "--cluster",
        snapshot,
        "--cluster",
        rest,
        "--policies",
        dist,
        "-o",
        "json",
    ]);
    let (offline_report, offline_results) = results(&offline);

    assert!(
        live_report["objects"].as_u64().unwrap_or(0) >= 2000,
        "{}",
        live_report["objects"]
    );
    // What was judged: the snapshot file also holds the kinds the modules
    // only read (RBAC, Namespaces), which the live audit reads through
    // its lookups instead.
    assert_eq!(
        live_report["objectsAudited"],
        offline_report["objectsAudited"]
    );
    assert_eq!(live_report["summary"], offline_report["summary"]);
    assert_eq!(live_results.len(), offline_results.len());
    for (live, offline) in live_results.iter().zip(&offline_results) {
        assert_eq!(live, offline);
    }
    // The populated faults are found: the audit is not vacuous.
    let summary = &live_report["summary"];
    eprintln!(
        "live audit: {} objects read in pages of 100, {} results, {summary}: equal to the audit \
         of its snapshot",
        live_report["objects"],
        live_results.len()
    );
    assert!(
        summary["fail"].as_u64().unwrap_or(0) >= 90 + 30 + 100,
        "{summary}"
    );
}

/// Exit 2, nothing on stdout, one line on stderr (besides progress and
/// notes) that says `expected`, and
/// no credential of the kubeconfig anywhere.
fn refused_in_one_line(output: &Output, kubeconfig: &Path, expected: &[&str]) -> String {
    let line = common::refused_in_one_line(output);
    let stderr = text(&output.stderr);
    for word in expected {
        assert!(line.contains(word), "{word:?} in {stderr}");
    }
    if let Ok(config) = std::fs::read_to_string(kubeconfig) {
        let config: Value = serde_json::from_str(&config).expect("our kubeconfigs are JSON");
        let user = &config["users"][0]["user"];
        for secret in ["client-key-data", "client-certificate-data"] {
            let data = user[secret].as_str().expect("data");
            assert!(!stderr.contains(&data[..40]), "{secret} leaked: {stderr}");
        }
        assert!(!stderr.contains("PRIVATE KEY"), "{stderr}");
    }
    eprintln!("refused: {line}");
    line
}

/// `olm-guard audit --kubeconfig K --chunk-size 1 ARGS` with every module,
/// the API server stopped once it has read a kind (an empty one, read at
/// once, while a large kind has pages to come): its exit, stdout, and the
/// stderr said after that kind.
fn audit_stopped_midway(cluster: &mut TestCluster, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .current_dir(common::root())
        .env_remove("KUBECONFIG")
        .env("HOME", std::env::temp_dir())
        .args(["audit", "--kubeconfig"])
        .arg(cluster.kubeconfig())
        .args(["--chunk-size", "1", "--dist"])
        .arg(common::dist())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("olm-guard starts");
    let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).expect("stderr") == 0 {
            panic!("the audit ended before reading a kind: {seen}");
        }
        seen.push_str(&line);
        if line.starts_with("olm-guard: read ") {
            break;
        }
    }
    cluster.stop_apiserver();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).expect("stderr");
    let output = child.wait_with_output().expect("olm-guard ends");
    Output {
        status: output.status,
        stdout: output.stdout,
        stderr: rest.into_bytes(),
    }
}

#[test]
fn an_audit_whose_server_stops_midway_reports_nothing_as_complete() {
    let mut cluster = cluster();
    // CatalogSources alone, read one per page: the two empty kinds are read
    // at once, and the server stops with hundreds of pages still to come.
    let catalogs: Vec<Value> = olm_guard_bench::stored::olm_objects(1000)
        .into_iter()
        .filter(|object| object["kind"] == "CatalogSource")
        .collect();
    assert!(catalogs.len() >= 400);
    cluster
        .store_all(&catalogs, 16)
        .expect("every object is stored, in its Namespace");
    let output = audit_stopped_midway(&mut cluster, &["-o", "json"]);
    let line = refused_in_one_line(
        &output,
        cluster.kubeconfig(),
        &["cannot reach the API server", &cluster.server(), "listing"],
    );
    assert!(
        ["connection refused", "closed the connection"]
            .iter()
            .any(|cause| line.contains(cause)),
        "{line}"
    );
}

#[test]
fn every_way_of_not_reaching_the_cluster_is_one_line_and_exit_2() {
    let cluster = cluster();
    let dist = common::dist();
    let dist = dist.to_str().expect("UTF-8");
    let server = cluster.server();
    let audit = |kubeconfig: &Path, extra: &[&str]| {
        let mut args = vec![
            "audit",
            "--kubeconfig",
            kubeconfig.to_str().expect("UTF-8"),
            "--policies",
            dist,
        ];
        args.extend_from_slice(extra);
        olm_guard(&args)
    };
    for (identity, expected) in [
        (
            Identity::ExpiredCertificate,
            vec![server.as_str(), "401 Unauthorized", "expired"],
        ),
        (
            Identity::ForeignCertificate,
            vec![server.as_str(), "401 Unauthorized"],
        ),
        (
            Identity::UntrustedServer,
            vec![server.as_str(), "not trusted", "certificate-authority"],
        ),
    ] {
        let kubeconfig = cluster.kubeconfig_for(identity).expect("written");
        refused_in_one_line(&audit(&kubeconfig, &[]), &kubeconfig, &expected);
    }

    let kubeconfig = cluster.kubeconfig().to_path_buf();
    refused_in_one_line(
        &audit(&kubeconfig, &["--context", "production"]),
        &kubeconfig,
        &["no context \"production\"", "olm-guard-test", "--context"],
    );
    let missing = cluster.dir().join("missing-kubeconfig");
    refused_in_one_line(
        &audit(&missing, &[]),
        &missing,
        &["missing-kubeconfig", "no such file"],
    );

    // A server that accepts the connection and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let silent = listener.local_addr().expect("its address");
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(&kubeconfig).expect("the kubeconfig"))
            .expect("JSON");
    let mut silent_config = config.clone();
    silent_config["clusters"][0]["cluster"]["server"] = json!(format!("https://{silent}"));
    let silent_kubeconfig = cluster.dir().join("silent-kubeconfig");
    std::fs::write(&silent_kubeconfig, silent_config.to_string()).expect("written");
    let line = refused_in_one_line(
        &audit(&silent_kubeconfig, &["--request-timeout", "1s"]),
        &silent_kubeconfig,
        &["did not answer", "within 1s", "--request-timeout"],
    );
    assert!(line.contains(&silent.to_string()), "{line}");
    drop(listener);

    // Nothing listens: refused, and `run` says so as `audit` does.
    let mut closed_config = config;
    closed_config["clusters"][0]["cluster"]["server"] = json!(format!("https://{silent}"));
    let closed_kubeconfig = cluster.dir().join("closed-kubeconfig");
    std::fs::write(&closed_kubeconfig, closed_config.to_string()).expect("written");
    let object =
        common::root().join("testdata/og-intersection/og-r3-selector-conflict-denied/request.json");
    let run = olm_guard(&[
        "run",
        "og-intersection",
        "--dist",
        dist,
        "--request",
        object.to_str().expect("UTF-8"),
        "--kubeconfig",
        closed_kubeconfig.to_str().expect("UTF-8"),
    ]);
    refused_in_one_line(
        &run,
        &closed_kubeconfig,
        &["connection refused", &silent.to_string()],
    );
}

#[test]
fn a_lookup_nobody_can_answer_fails_closed_naming_it() {
    // oria's CRDs are served in their own group only, and no --cluster
    // file gives the ScopeTemplate of OLM's group the ScopeInstance names:
    // the instance is denied, the lookup named.
    let cluster = cluster();
    let dir = common::root().join("testdata/scope-rbac/instance-bind-permission-allowed");
    split_cluster(&cluster, &dir, "closed", &mut Changes::default());
    let dist = common::dist();
    let output = olm_guard(&[
        "run",
        "scope-rbac",
        "--dist",
        dist.to_str().expect("UTF-8"),
        "--request",
        dir.join("request.json").to_str().expect("UTF-8"),
        "--kubeconfig",
        cluster.kubeconfig().to_str().expect("UTF-8"),
        "-o",
        "json",
    ]);
    let response = &responses(&output)[0];
    assert_eq!(response["allowed"], false, "{response}");
    let message = response["status"]["message"].as_str().expect("a message");
    assert!(
        message.contains("does not serve operators.coreos.com/v1alpha1 ScopeTemplate")
            && message.contains("--cluster"),
        "{message}"
    );
}

#[test]
fn run_with_several_modules_reads_the_live_cluster_once() {
    // An OperatorGroup stored in team-x: a second one there is what OLM
    // refuses (og-intersection), seen from the live cluster.
    let cluster = cluster();
    let existing = json!({
        "apiVersion": "operators.coreos.com/v1",
        "kind": "OperatorGroup",
        "metadata": {"name": "existing", "namespace": "team-x"},
        "spec": {"targetNamespaces": ["team-x"]},
    });
    cluster
        .store_all(std::slice::from_ref(&existing), 1)
        .expect("stored, in Namespace team-x");
    let manifest = cluster.dir().join("second.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: operators.coreos.com/v1\nkind: OperatorGroup\n\
         metadata: {name: second, namespace: team-x}\nspec: {targetNamespaces: [team-x]}\n",
    )
    .expect("written");
    let rest = rest_file(&cluster);
    let dist = common::dist();
    let run = |source: &[&str]| {
        let mut args = vec![
            "run",
            "all",
            "--dist",
            dist.to_str().expect("UTF-8"),
            "--object",
            manifest.to_str().expect("UTF-8"),
            "--cluster",
            rest.to_str().expect("UTF-8"),
            "-o",
            "json",
        ];
        args.extend_from_slice(source);
        olm_guard(&args)
    };
    let live = run(&[
        "--kubeconfig",
        cluster.kubeconfig().to_str().expect("UTF-8"),
    ]);
    let stderr = text(&live.stderr);
    assert!(
        stderr.contains("objects read from") && stderr.contains(&cluster.server()),
        "{stderr}"
    );
    let live = responses(&live);
    let denied: Vec<&Value> = live.iter().filter(|r| r["allowed"] == false).collect();
    assert_eq!(denied.len(), 1, "{live:?}");
    let message = denied[0]["status"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("existing"), "{message}");

    let snapshot = cluster.dir().join("several.yaml");
    let taken = olm_guard(&[
        "snapshot",
        "all",
        "--dist",
        dist.to_str().expect("UTF-8"),
        "--kubeconfig",
        cluster.kubeconfig().to_str().expect("UTF-8"),
        "--output-file",
        snapshot.to_str().expect("UTF-8"),
    ]);
    assert!(taken.status.success(), "{}", text(&taken.stderr));
    let offline = responses(&run(&["--cluster", snapshot.to_str().expect("UTF-8")]));
    assert_eq!(live, offline);
}

/// A live cluster with none of the kinds the modules judge is audited as it
/// is: an empty cluster read from the API server is no empty file, which
/// only `--allow-empty` lets through.
#[test]
fn an_empty_live_cluster_is_audited_as_it_is() {
    let cluster = cluster();
    // Its own default ClusterRoles are objects the modules judge.
    cluster.remove_default_rbac().expect("removed");
    let dist = common::dist();
    let output = olm_guard(&[
        "audit",
        "--dist",
        dist.to_str().expect("UTF-8"),
        "--kubeconfig",
        cluster.kubeconfig().to_str().expect("UTF-8"),
        "--fail-on-violation",
        "-o",
        "json",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report = &common::json_items(&output.stdout)[0];
    assert_eq!(report["objects"], 0, "{report}");
    assert_eq!(report["results"], json!([]), "{report}");
}

/// OpenReports' CRDs, Report and ClusterReport.
fn report_crds() -> Vec<Value> {
    [
        "openreports.io_reports.yaml",
        "openreports.io_clusterreports.yaml",
    ]
    .iter()
    .map(|file| common::cluster::crd(&format!("testdata/upstream/crds/{file}")))
    .collect()
}

/// The report objects of olm-guard in the cluster, as a user reads them
/// back (`kubectl get reports,clusterreports -A -l ...`), without what the
/// server sets, in the order `-o report` prints them.
fn reports_in(cluster: &TestCluster) -> Vec<Value> {
    let mut reports = Vec::new();
    for (resource, namespaced) in [("clusterreports", false), ("reports", true)] {
        let mut kubectl = cluster.kubectl(cluster.dir()).expect("kubectl");
        kubectl.args([
            "get",
            &format!("{resource}.openreports.io"),
            "-l",
            "app.kubernetes.io/managed-by=olm-guard",
            "-o",
            "json",
        ]);
        if namespaced {
            kubectl.arg("-A");
        }
        let output = kubectl.output().expect("kubectl runs");
        assert!(output.status.success(), "{}", text(&output.stderr));
        let list: Value = serde_json::from_slice(&output.stdout).expect("JSON");
        for mut report in list["items"].as_array().cloned().unwrap_or_default() {
            let metadata = report["metadata"].as_object_mut().expect("metadata");
            for field in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "generation",
                "managedFields",
            ] {
                metadata.remove(field);
            }
            reports.push(report);
        }
    }
    reports
}

/// What `audit -o report` printed, and wrote: its report objects.
fn printed_reports(output: &Output) -> Vec<Value> {
    assert!(output.status.success(), "{}", text(&output.stderr));
    serde_yaml_ng::Deserializer::from_slice(&output.stdout)
        .map(|document| serde::Deserialize::deserialize(document).expect("YAML"))
        .filter(|report: &Value| !report.is_null())
        .collect()
}

/// Sorted by kind, namespace and name, as a user compares two listings.
fn by_name(mut reports: Vec<Value>) -> Vec<Value> {
    reports.sort_by_key(|r| {
        (
            r["kind"].as_str().unwrap_or_default().to_string(),
            r["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            r["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    });
    reports
}

/// The result of `module` for the object named `name` in `reports`.
fn result_of<'a>(reports: &'a [Value], name: &str, module: &str) -> Option<&'a str> {
    reports
        .iter()
        .filter(|r| r["scope"]["name"] == name)
        .flat_map(|r| r["results"].as_array().into_iter().flatten())
        .find(|result| result["rule"] == module)
        .and_then(|result| result["result"].as_str())
}

#[test]
fn an_audit_writes_its_reports_into_the_cluster_and_a_later_one_replaces_them() {
    let mut cluster = cluster();
    cluster
        .install_crds(&report_crds())
        .expect("the report CRDs are served");
    let catalog = |name: &str, spec: Value| {
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": name, "namespace": "olm"}, "spec": spec})
    };
    let grpc = json!({"sourceType": "grpc", "image": "quay.io/operatorhubio/catalog:latest"});
    // A source of none of the kinds: catalog-union fails it.
    let broken = json!({"sourceType": "grpc"});
    let mut changes = Changes::default();
    for object in [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "olm"}}),
        catalog("good", grpc.clone()),
        catalog("to-fix", broken.clone()),
        catalog("to-delete", broken.clone()),
    ] {
        cluster
            .put(&object, &mut changes)
            .expect("answered")
            .unwrap_or_else(|refusal| panic!("{refusal:?}"));
    }
    let dist = common::dist();
    let kubeconfig = cluster.kubeconfig().to_str().expect("UTF-8").to_string();
    let audit = || {
        olm_guard(&[
            "audit",
            "catalog-union",
            "--dist",
            dist.to_str().expect("UTF-8"),
            "--kubeconfig",
            &kubeconfig,
            "--write-reports",
            "-o",
            "report",
        ])
    };

    let first = audit();
    let first_reports = printed_reports(&first);
    assert!(
        text(&first.stderr).contains("3 created, 0 updated); deleted 0"),
        "{}",
        text(&first.stderr)
    );
    assert_eq!(
        by_name(reports_in(&cluster)),
        by_name(first_reports.clone())
    );
    assert_eq!(
        result_of(&first_reports, "to-fix", "catalog-union"),
        Some("fail")
    );

    // Fix one violation, add another, delete an object.
    cluster
        .replace(&catalog("to-fix", grpc.clone()))
        .expect("answered")
        .expect("replaced");
    cluster
        .create(&catalog("new-broken", broken.clone()))
        .expect("answered")
        .expect("created");
    cluster
        .remove(&catalog("to-delete", json!({})))
        .expect("deleted");

    let second = audit();
    let second_reports = printed_reports(&second);
    let stderr = text(&second.stderr);
    assert!(
        stderr.contains("1 created, 2 updated); deleted 1 of an earlier audit"),
        "{stderr}"
    );
    let in_cluster = by_name(reports_in(&cluster));
    assert_eq!(in_cluster, by_name(second_reports.clone()));
    assert_eq!(
        result_of(&in_cluster, "to-fix", "catalog-union"),
        Some("pass")
    );
    assert_eq!(
        result_of(&in_cluster, "new-broken", "catalog-union"),
        Some("fail")
    );
    assert_eq!(result_of(&in_cluster, "to-delete", "catalog-union"), None);
    for report in &in_cluster {
        // Owned by the object it reports on, in its namespace.
        assert_eq!(
            report["metadata"]["ownerReferences"][0]["uid"],
            report["scope"]["uid"]
        );
        assert_eq!(report["metadata"]["namespace"], "olm");
    }

    // An audit that fails midway (the server stops while it lists) writes
    // nothing: the second audit's reports stay as they were.
    cluster
        .create_all(
            &(0..300)
                .map(|i| catalog(&format!("many-{i}"), grpc.clone()))
                .collect::<Vec<_>>(),
            16,
        )
        .expect("stored");
    // Every module: the kinds with no object are read at once, and the
    // server stops with hundreds of pages of CatalogSources still to come.
    let output = audit_stopped_midway(&mut cluster, &["--write-reports"]);
    let stderr = text(&output.stderr);
    assert!(!stderr.contains("wrote"), "{stderr}");
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    cluster
        .restart_apiserver()
        .expect("the API server answers again");
    assert_eq!(by_name(reports_in(&cluster)), by_name(second_reports));
}

#[test]
fn an_auditor_who_may_not_write_reports_is_told_every_permission_before_anything_runs() {
    let cluster = cluster();
    cluster
        .install_crds(&report_crds())
        .expect("the report CRDs are served");
    let mut changes = Changes::default();
    // Reads everything, writes nothing (the built-in `view` role's reach,
    // and more).
    for object in [
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "read-all"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "reader-reads"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                "name": "read-all"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                "name": "reader"}]}),
    ] {
        cluster
            .put(&object, &mut changes)
            .expect("answered")
            .unwrap_or_else(|refusal| panic!("{refusal:?}"));
    }
    cluster
        .wait_rbac_seen()
        .expect("the RBAC authorizer catches up");
    let reader = cluster
        .kubeconfig_for_user("reader", &[])
        .expect("a kubeconfig");
    let dist = common::dist();
    let output = olm_guard(&[
        "audit",
        "--dist",
        dist.to_str().expect("UTF-8"),
        "--kubeconfig",
        reader.to_str().expect("UTF-8"),
        "--write-reports",
    ]);
    let line = refused_in_one_line(
        &output,
        &reader,
        &[
            &cluster.server(),
            "create reports.openreports.io (--write-reports)",
            "update clusterreports.openreports.io (--write-reports)",
            "deletecollection reports.openreports.io (--write-reports)",
            "grants them in the ClusterRole olm-guard-report-writer: kubectl apply -f \
             deploy/audit-rbac.yaml, then kubectl create clusterrolebinding \
             olm-guard-report-writer --clusterrole olm-guard-report-writer --user USER",
            "nothing was written",
        ],
    );
    // Nothing but the permissions it lacks: get and list it holds.
    assert!(!line.contains("list reports"), "{line}");
    assert!(!line.contains("get reports"), "{line}");
}
