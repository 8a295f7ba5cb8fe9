//! Recorded host-capability sessions (kwctl's format) through the binary and
//! the real modules in dist/: every scenario recorded and replayed, answers
//! edited by hand, and requests that do not match.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use olm_guard_evaluator::scenario;
use olm_guard_evaluator::session::{CallbackRequest, KubernetesRequest, Response, Session};
use serde_json::Value;

mod common;
use common::{dist, root};

fn olm_guard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .args(args)
        .output()
        .expect("olm-guard runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn succeeded(output: &Output) -> &Output {
    assert!(
        output.status.success(),
        "olm-guard failed: {}\n{}",
        text(&output.stderr),
        text(&output.stdout)
    );
    output
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// `olm-guard test testdata -o json` with extra arguments: every result.
fn test_json(extra: &[&str]) -> Vec<Value> {
    let testdata = path(&root().join("testdata"));
    let dist = path(&dist());
    let mut args = vec![
        "test",
        testdata.as_str(),
        "--dist",
        dist.as_str(),
        "-o",
        "json",
    ];
    args.extend_from_slice(extra);
    let output = olm_guard(&args);
    let document: Value = serde_json::from_slice(&succeeded(&output).stdout).unwrap();
    document["results"].as_array().unwrap().clone()
}

#[test]
fn every_scenario_recorded_replays_to_the_same_response() {
    let sessions = tempfile::tempdir().unwrap();
    let dir = path(sessions.path());
    let recorded = test_json(&["--record-dir", &dir]);
    let replayed = test_json(&["--replay-dir", &dir]);

    let scenarios = scenario::discover(&[root().join("testdata")]).unwrap();
    assert_eq!(recorded.len(), scenarios.len());
    assert_eq!(replayed.len(), scenarios.len());

    let mut exchanges = 0;
    for (before, after) in recorded.iter().zip(&replayed) {
        let name = before["scenario"].as_str().unwrap();
        assert_eq!(after["scenario"], before["scenario"]);
        assert_eq!(after["passed"], true, "{name}: {}", after["failures"]);
        // allowed, status (message and code), patch, warnings: the whole
        // response, and the object after the patch.
        assert_eq!(after["response"], before["response"], "{name}");
        assert_eq!(after["patchedObject"], before["patchedObject"], "{name}");

        let file = scenario::session_path(
            sessions.path(),
            before["policy"].as_str().unwrap(),
            Path::new(name),
        );
        if before["response"].is_null() {
            // Settings refused: `validate` never ran, nothing to record.
            assert!(!file.exists(), "{}", file.display());
        } else {
            exchanges += Session::load(&file).unwrap().exchanges.len();
        }
    }
    assert!(exchanges > 0, "no scenario made a host call");
}

/// A scenario whose verdict hangs on one `can_i` answer: escalate on
/// clusterroles waves the CREATE through.
fn escalate_scenario() -> PathBuf {
    root().join("testdata/aggregation-escalation/escalate-create-aggregated-allowed")
}

fn module() -> String {
    path(&dist().join("aggregation-escalation.wasm"))
}

fn run_replay(session: &Path) -> Output {
    olm_guard(&[
        "run",
        "-o",
        "json",
        "--policy",
        &module(),
        "--request",
        &path(&escalate_scenario().join("request.json")),
        "--replay",
        &path(session),
    ])
}

/// `run --cluster … --record`, checked against the same run without
/// recording; returns the session file.
fn record(dir: &Path) -> PathBuf {
    let scenario = escalate_scenario();
    let request = path(&scenario.join("request.json"));
    let cluster = path(&scenario.join("cluster.yaml"));
    let session = dir.join("session.yml");
    let plain = olm_guard(&[
        "run",
        "-o",
        "json",
        "--policy",
        &module(),
        "--request",
        &request,
        "--cluster",
        &cluster,
    ]);
    let recorded = olm_guard(&[
        "run",
        "-o",
        "json",
        "--policy",
        &module(),
        "--request",
        &request,
        "--cluster",
        &cluster,
        "--record",
        &path(&session),
    ]);
    assert_eq!(succeeded(&recorded).stdout, succeeded(&plain).stdout);
    session
}

fn allowed(output: &Output) -> bool {
    let review: Value = serde_json::from_slice(&succeeded(output).stdout).unwrap();
    review["response"]["allowed"].as_bool().unwrap()
}

#[test]
fn run_replays_a_recorded_session_without_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let session = record(dir.path());
    let replayed = run_replay(&session);
    assert!(allowed(&replayed));

    let scenario = escalate_scenario();
    let with_cluster = olm_guard(&[
        "run",
        "-o",
        "json",
        "--policy",
        &module(),
        "--request",
        &path(&scenario.join("request.json")),
        "--cluster",
        &path(&scenario.join("cluster.yaml")),
    ]);
    assert_eq!(replayed.stdout, with_cluster.stdout);

    let both = olm_guard(&[
        "run",
        "-o",
        "json",
        "--policy",
        &module(),
        "--request",
        &path(&scenario.join("request.json")),
        "--cluster",
        &path(&scenario.join("cluster.yaml")),
        "--replay",
        &path(&session),
    ]);
    assert!(!both.status.success());
    assert!(
        text(&both.stderr).contains("cannot be used with"),
        "{}",
        text(&both.stderr)
    );
}

#[test]
fn a_hand_edited_answer_changes_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let session_file = record(dir.path());
    let session = Session::load(&session_file).unwrap();
    assert!(allowed(&run_replay(&session_file)));

    // The escalate check answered "allowed": answer "not allowed" instead.
    let mut edited = session.clone();
    let can_i = edited
        .exchanges
        .iter_mut()
        .find(|e| {
            matches!(
                e.request,
                CallbackRequest::Kubernetes(KubernetesRequest::KubernetesCanI { .. })
            )
        })
        .expect("the scenario asks can_i");
    assert!(
        matches!(&can_i.response, Response::Success { payload } if payload.contains("\"allowed\":true"))
    );
    can_i.response = Response::Success {
        payload: r#"{"allowed":false,"reason":"edited by hand"}"#.into(),
    };
    let flipped = dir.path().join("flipped.yml");
    edited.save(&flipped).unwrap();
    assert!(!allowed(&run_replay(&flipped)));

    // A lookup that failed: the module fails closed, quoting the host.
    let mut failing = session;
    failing.exchanges[0].response = Response::Error {
        message: "the API server is on fire".into(),
    };
    let failed = dir.path().join("failed.yml");
    failing.save(&failed).unwrap();
    let output = run_replay(&failed);
    assert!(!allowed(&output));
    assert!(text(&output.stdout).contains("the API server is on fire"));
}

#[test]
fn a_request_that_does_not_match_fails_naming_expected_and_actual() {
    let dir = tempfile::tempdir().unwrap();
    let session_file = record(dir.path());
    let mut session = Session::load(&session_file).unwrap();
    let CallbackRequest::Kubernetes(KubernetesRequest::KubernetesListResourceAll { kind, .. }) =
        &mut session.exchanges[0].request
    else {
        panic!("the first call lists: {:?}", session.exchanges[0].request);
    };
    let actual_kind = kind.clone();
    *kind = "Role".into();
    let mismatched = dir.path().join("mismatched.yml");
    session.save(&mismatched).unwrap();

    let output = run_replay(&mismatched);
    assert!(!output.status.success());
    let err = text(&output.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("unexpected request at exchange 1")
            && err.contains("expected !KubernetesListResourceAll {\"api_version\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\"")
            && err.contains(&format!(
                "got !KubernetesListResourceAll {{\"api_version\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"{actual_kind}\""
            )),
        "{err}"
    );

    // Past the end of the session.
    let empty = dir.path().join("empty.yml");
    std::fs::write(&empty, "[]\n").unwrap();
    let output = run_replay(&empty);
    assert!(!output.status.success());
    let err = text(&output.stderr);
    assert!(
        err.contains("no exchange left (0 recorded), got !KubernetesListResourceAll"),
        "{err}"
    );

    // Not a session at all.
    let bad = dir.path().join("bad.yml");
    std::fs::write(&bad, "request: x\n").unwrap();
    let err = text(&run_replay(&bad).stderr);
    assert!(
        err.contains("bad.yml: not a host-capabilities session"),
        "{err}"
    );
}
