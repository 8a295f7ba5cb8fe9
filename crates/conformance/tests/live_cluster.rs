//! Every scenario that reads the cluster, for all six rules, answered by a
//! whole control plane: kube-apiserver on etcd
//! (`olm_guard_kube_harness::cluster`), with the upstream CRDs installed
//! over HTTP.
//!
//! Each scenario's cluster file is put into the API server, object by
//! object (Namespaces, RBAC, custom resources, with their `status` written
//! through the status subresource, as their controller writes it), and the
//! module is evaluated twice: with its lookups answered by the server
//! through `olm_guard_live::LiveCluster` (what `olm-guard run
//! --kubeconfig` does: lists, gets, and `can_i` as a SubjectAccessReview
//! that the server's RBAC authorizer decides, as Kubewarden's
//! policy-server asks them); and with every lookup answered by the file.
//! Both must give the same verdict, message, warnings and patch. Then the
//! scenario's objects are deleted again, for the next.
//!
//! The cluster is the file's, not the file's plus the API server's own: the
//! default RBAC kube-apiserver creates at start is deleted first (a file
//! lists the RBAC it means). What a cluster always has and cannot lose is
//! left: the Namespaces `default`, `kube-system`, `kube-public` and
//! `kube-node-lease`; a Namespace the file's objects live in but the file
//! does not list is created (a cluster holds no object outside a
//! Namespace). Objects of kinds the server does not serve (an oria kind in
//! a group no CRD serves) are answered from the rest of the file, as
//! `--cluster` completes a live cluster. The test prints `live cluster: N/N
//! scenarios agree` with those counts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use serde_json::Value;

use olm_guard_conformance::served::Served;
use olm_guard_conformance::{Answer, Verdict, scenario};
use olm_guard_evaluator::scenario::{PolicyStore, discover};
use olm_guard_evaluator::{Policy, PolicyError};
use olm_guard_kube_harness::cluster::{Changes, TestCluster};
use olm_guard_live::{Answered, Live, LiveCluster, Target};
use olm_guard_runtime::{Limits, Runtime};
use olm_guard_snapshot::{LoadOptions, Snapshot};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A CRD file of the repository, as YAML.
fn crd(path: &str) -> anyhow::Result<Value> {
    let path = workspace().join(path);
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    serde_yaml_ng::from_str(&text).with_context(|| format!("{}", path.display()))
}

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
#[derive(Default)]
struct Seen {
    /// How the two answers differ, if they do.
    difference: Option<String>,
    answered: Answered,
    /// Objects of the file put into the API server.
    created: usize,
    /// Namespaces created because the file's objects live in them.
    namespaces_added: usize,
    /// Objects of kinds the server does not serve, answered from the file.
    unserved: usize,
}

/// The order objects are put in: Namespaces and CRDs before what lives in
/// them or is served by them.
fn order(object: &Value) -> u8 {
    match object["kind"].as_str() {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        _ => 2,
    }
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
    served.sort_by_key(order);
    let mut seen = Seen {
        unserved: rest.len(),
        ..Seen::default()
    };
    let mut changes = Changes::default();
    let result = (|| -> anyhow::Result<()> {
        seen.namespaces_added = cluster.add_namespaces_of(&served, &mut changes)?.len();
        for object in &served {
            if let Err(refusal) = cluster.put(object, &mut changes)? {
                bail!(
                    "the API server refuses an object of cluster.yaml ({} {}): {}",
                    object["kind"],
                    object["metadata"]["name"],
                    refusal.message
                );
            }
            seen.created += 1;
        }
        // The rules ask the server's RBAC authorizer (can_i), which sees
        // these objects, and the scenario before's taken away, a moment
        // after they are stored.
        cluster.wait_rbac_seen()?;
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
        seen.answered = live_cluster.answered();
        seen.difference = (from_server != from_file)
            .then(|| format!("  the live cluster: {from_server}\n  the file:         {from_file}"));
        Ok(())
    })();
    // The cluster emptied for the next scenario, whatever happened.
    cluster.undo(&mut changes)?;
    result.map(|()| seen)
}

/// A scenario's directory, relative to the workspace, and what it gave.
type Named = (String, anyhow::Result<Seen>);

/// The CRDs the scenarios' clusters need: OLM's, the ClusterObjectSet CRD
/// with `spec.group` (`Served`: the scenarios' clusters have both worlds,
/// and a scenario without the field reads the same on both; without it
/// the server would prune spec.group), and oria's in both groups the rules
/// accept.
fn crds(root: &Path) -> anyhow::Result<Vec<Value>> {
    let served = Served::load(root)?;
    let mut crds = vec![
        crd("testdata/upstream/crds/operators.coreos.com_operatorgroups.yaml")?,
        crd("testdata/upstream/crds/operators.coreos.com_clusterserviceversions.yaml")?,
    ];
    for key in [
        "olm.operatorframework.io/ClusterObjectSet",
        "operators.coreos.com/CatalogSource",
    ] {
        crds.push(served.get(key).context(key)?.clone());
    }
    for group in olm_guard_olm::scope::GROUPS {
        for kind in ["ScopeTemplate", "ScopeInstance"] {
            let key = format!("{group}/{kind}");
            crds.push(served.get(&key).context(key)?.clone());
        }
    }
    Ok(crds)
}

#[test]
fn every_scenario_reading_the_cluster_agrees_on_a_whole_control_plane() -> anyhow::Result<()> {
    let root = workspace();
    let crds = crds(&root)?;
    let runtime = Runtime::new(Limits::default())?;
    let mut store = PolicyStore::new(&runtime, root.join("dist"));
    let mut scenarios = Vec::new();
    let mut rules = BTreeSet::new();
    for rule in olm_guard_rules::registry::RULES.iter().map(|r| r.name) {
        let policy = store.get(rule).context(rule)?;
        for dir in discover(&[root.join("testdata").join(rule)])? {
            if dir.join("cluster.yaml").is_file() {
                rules.insert(rule);
                scenarios.push((policy.clone(), dir));
            }
        }
    }
    let total = scenarios.len();

    // Two clusters, each with half of the scenarios, one after the other
    // in each: a scenario undoes what it put in.
    let shares: Vec<_> = scenarios.chunks(total.div_ceil(2).max(1)).collect();
    let seen: Vec<anyhow::Result<(usize, Vec<Named>)>> = std::thread::scope(|scope| {
        let runs: Vec<_> = shares
            .iter()
            .map(|share| {
                let (root, crds) = (&root, &crds);
                scope.spawn(move || -> anyhow::Result<_> {
                    let cluster = TestCluster::start()?;
                    cluster.install_crds(crds)?;
                    let removed = cluster.remove_default_rbac()?;
                    let live = Arc::new(Live::connect(&Target {
                        kubeconfig: Some(cluster.kubeconfig().to_path_buf()),
                        ..Target::default()
                    })?);
                    let named = share
                        .iter()
                        .map(|(policy, dir)| {
                            let name = dir.strip_prefix(root).unwrap_or(dir);
                            let seen = one_scenario(&cluster, &live, policy, dir);
                            (name.display().to_string(), seen)
                        })
                        .collect();
                    Ok((removed, named))
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
    let (mut created, mut namespaces_added, mut unserved, mut removed) = (0, 0, 0, 0);
    let mut per_rule: BTreeMap<&str, usize> = BTreeMap::new();
    for share in seen {
        let (default_rbac, share) = share?;
        removed += default_rbac;
        for (name, seen) in share {
            match seen {
                Ok(seen) => {
                    answered.by_server += seen.answered.by_server;
                    answered.by_snapshot += seen.answered.by_snapshot;
                    created += seen.created;
                    namespaces_added += seen.namespaces_added;
                    unserved += seen.unserved;
                    if let Some(difference) = seen.difference {
                        disagreements.push(format!("{name}:\n{difference}"));
                    } else if let Some(rule) =
                        rules.iter().find(|r| name.contains(&format!("/{r}/")))
                    {
                        *per_rule.entry(rule).or_default() += 1;
                    }
                }
                Err(e) => disagreements.push(format!("{name}: {e:#}")),
            }
        }
    }
    eprintln!(
        "live cluster: {}/{total} scenarios agree on kube-apiserver, by rule {per_rule:?} \
         ({created} objects of the files created in it, {namespaces_added} Namespaces added for \
         objects whose file lists none, {unserved} objects of kinds it does not serve left to \
         the files; {} lookups answered by it, {} by the files; {removed} objects of its default \
         RBAC deleted first)",
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
    // lookup falling back to the files) or leaves rules out fails here.
    assert_eq!(
        rules.len(),
        olm_guard_rules::registry::RULES.len() - 1,
        "the rules with a cluster: {rules:?} (catalog-union reads none)"
    );
    assert!(total >= 270, "only {total} scenarios read the cluster");
    assert!(created >= 2000, "only {created} objects were created");
    assert!(
        answered.by_server >= 300,
        "the server answered only {} lookups",
        answered.by_server
    );
    Ok(())
}
