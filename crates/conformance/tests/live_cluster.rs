//! Every scenario that reads the cluster, answered by a running API server:
//! Kubernetes' CRD API server on etcd (`olm_guard_kube_harness::cluster`),
//! with the upstream CRDs installed over HTTP.
//!
//! For each scenario of og-intersection, revision-uniqueness and
//! group-authorization with a cluster file, the objects of the kinds the
//! server serves are created in it (their `status` written through the
//! status subresource, as their controller writes it), and the module is
//! evaluated twice: with its lookups answered by the server through
//! `olm_guard_live::LiveCluster` (what `olm-guard run --kubeconfig` does:
//! lists, gets and `can_i` as Kubewarden's policy-server asks them), the
//! kinds the server does not serve (Namespaces, RBAC, SubjectAccessReviews)
//! answered from the rest of the file; and with every lookup answered by the
//! file. Both must give the same verdict, message, warnings and patch. The
//! test prints `live cluster: N/N scenarios agree` and how many lookups the
//! server answered.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use serde_json::Value;

use olm_guard_conformance::served::Served;
use olm_guard_conformance::{Answer, Verdict, scenario};
use olm_guard_evaluator::scenario::{PolicyStore, discover};
use olm_guard_evaluator::{Policy, PolicyError};
use olm_guard_kube_harness::cluster::TestCluster;
use olm_guard_live::{Answered, Live, LiveCluster, Target};
use olm_guard_runtime::{Limits, Runtime};
use olm_guard_snapshot::{LoadOptions, Snapshot};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A CRD file of the repository, as YAML.
fn crd(path: &str) -> Value {
    let path = workspace().join(path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The rules whose scenarios read the cluster, and the kinds of their
/// cluster files the test server serves once the upstream CRDs are in.
const RULES: [&str; 3] = [
    "og-intersection",
    "revision-uniqueness",
    "group-authorization",
];

/// One evaluation's answer, as the conformance tests compare them.
fn answer(
    policy: &Policy,
    request: &Value,
    settings: &Value,
    cluster: olm_guard_evaluator::ClusterContext,
) -> anyhow::Result<Answer> {
    match policy.validate_settings(settings) {
        Ok(()) => {}
        Err(PolicyError::InvalidSettings(message)) => return Ok(Answer::SettingsRefused(message)),
        Err(e) => bail!("validate_settings: {e}"),
    }
    let evaluation = policy.validate(request, settings, cluster)?;
    let object = request.get("object").cloned().unwrap_or(Value::Null);
    Ok(Answer::Response(Verdict::of(
        &evaluation.response,
        &object,
    )?))
}

/// What one scenario showed.
struct Seen {
    agree: Option<String>,
    answered: Answered,
    created: usize,
}

fn one_scenario(
    cluster: &TestCluster,
    live: &Arc<Live>,
    policy: &Policy,
    dir: &Path,
) -> anyhow::Result<Seen> {
    let request = scenario::request(dir)?;
    let settings = scenario::settings(dir)?;
    let path = dir.join("cluster.yaml");
    let text = std::fs::read_to_string(&path)?;
    let mut served = Vec::new();
    let mut rest = Vec::new();
    for read in Snapshot::read_objects("cluster.yaml", &text) {
        let (at, object) = read?;
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        if live.resource(api_version, kind)?.is_some() {
            served.push(object);
        } else {
            rest.push((at, object));
        }
    }
    // The cluster emptied for every scenario: what the one before created goes.
    for (api_version, kind) in [
        ("operators.coreos.com/v1", "OperatorGroup"),
        ("olm.operatorframework.io/v1", "ClusterObjectSet"),
    ] {
        cluster.delete_all(api_version, kind)?;
    }
    for object in &served {
        if let Err(refusal) = cluster.create(object)? {
            bail!(
                "the API server refuses an object of cluster.yaml ({} {}): {}",
                object["kind"],
                object["metadata"]["name"],
                refusal.message
            );
        }
    }
    let mut rest_snapshot = Snapshot::new();
    rest_snapshot.add_located(rest, LoadOptions::STRICT)?;
    let live_cluster = Arc::new(LiveCluster::new(live.clone(), Some(rest_snapshot)));
    let from_server = answer(policy, &request, &settings, live_cluster.clone())?;
    if let Some(failure) = live_cluster.access_failure() {
        bail!("a lookup could not be answered by the server: {failure}");
    }
    let from_file = answer(
        policy,
        &request,
        &settings,
        Arc::new(scenario::snapshot(dir)?),
    )?;
    Ok(Seen {
        agree: (from_server != from_file)
            .then(|| format!("  the live cluster: {from_server}\n  the file:         {from_file}")),
        answered: live_cluster.answered(),
        created: served.len(),
    })
}

/// A scenario's directory, relative to the workspace, and what it gave.
type Named = (String, anyhow::Result<Seen>);

#[test]
fn every_scenario_reading_the_cluster_agrees_on_a_live_api_server() -> anyhow::Result<()> {
    let root = workspace();
    // The ClusterObjectSet CRD with spec.group, as the scenarios' clusters
    // are (`Served`: both worlds, a scenario without the field reads the
    // same on both); without it, the server would prune spec.group.
    let served = Served::load(&root)?;
    let crds = [
        crd("testdata/upstream/crds/operators.coreos.com_operatorgroups.yaml"),
        served
            .get("olm.operatorframework.io/ClusterObjectSet")
            .context("the ClusterObjectSet CRD")?
            .clone(),
    ];
    let runtime = Runtime::new(Limits::default())?;
    let mut store = PolicyStore::new(&runtime, root.join("dist"));
    let mut scenarios = Vec::new();
    for rule in RULES {
        let policy = store.get(rule).context(rule)?;
        for dir in discover(&[root.join("testdata").join(rule)])? {
            if dir.join("cluster.yaml").is_file() {
                scenarios.push((policy.clone(), dir));
            }
        }
    }
    let total = scenarios.len();

    // Two clusters, each with half of the scenarios, one after the other
    // in each: a scenario empties its cluster of what the one before
    // created.
    let shares: Vec<_> = scenarios.chunks(total.div_ceil(2).max(1)).collect();
    let seen: Vec<anyhow::Result<Vec<Named>>> = std::thread::scope(|scope| {
        let runs: Vec<_> = shares
            .iter()
            .map(|share| {
                let (root, crds) = (&root, &crds);
                scope.spawn(move || -> anyhow::Result<_> {
                    let cluster = TestCluster::start()?;
                    cluster.install_crds(crds)?;
                    let live = Arc::new(Live::connect(&Target {
                        kubeconfig: Some(cluster.kubeconfig().to_path_buf()),
                        ..Target::default()
                    })?);
                    Ok(share
                        .iter()
                        .map(|(policy, dir)| {
                            let name = dir.strip_prefix(root).unwrap_or(dir);
                            let seen = one_scenario(&cluster, &live, policy, dir);
                            (name.display().to_string(), seen)
                        })
                        .collect())
                })
            })
            .collect();
        runs.into_iter()
            .map(|run| {
                run.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a share panicked")))
            })
            .collect()
    });

    let mut disagreements = Vec::new();
    let mut answered = Answered::default();
    let mut created = 0;
    for share in seen {
        for (name, seen) in share? {
            match seen {
                Ok(seen) => {
                    answered.by_server += seen.answered.by_server;
                    answered.by_snapshot += seen.answered.by_snapshot;
                    created += seen.created;
                    if let Some(difference) = seen.agree {
                        disagreements.push(format!("{name}:\n{difference}"));
                    }
                }
                Err(e) => disagreements.push(format!("{name}: {e:#}")),
            }
        }
    }
    eprintln!(
        "live cluster: {}/{total} scenarios agree ({created} objects created in the API server; \
         {} lookups answered by it, {} by the rest of the cluster files)",
        total - disagreements.len(),
        answered.by_server,
        answered.by_snapshot,
    );
    assert!(
        disagreements.is_empty(),
        "{} of {total} scenarios answer differently from a live API server than from their \
         cluster files:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    // Floors, so that a change that stops the server from answering (every
    // lookup falling back to the files) fails here.
    assert!(total >= 210, "only {total} scenarios read the cluster");
    assert!(created >= 500, "only {created} objects were created");
    assert!(
        answered.by_server >= 60,
        "the server answered only {} lookups",
        answered.by_server
    );
    Ok(())
}
