//! The path every Kubewarden user runs, for every scenario of `testdata/`:
//! the request sent to kube-apiserver by its requester, kube-apiserver
//! calling Kubewarden's policy-server as its admission webhook (registered
//! as Kubewarden's controller registers the ClusterAdmissionPolicies of
//! `deploy/kubewarden/`, with each scenario's settings), policy-server
//! evaluating the module and reading the cluster from that same API server
//! under its own ServiceAccount (watch-backed lists, SubjectAccessReviews),
//! which holds `deploy/kubewarden/policy-server-rbac.yaml` and nothing else.
//! No snapshot file is on this path.
//!
//! For each scenario, on one of two control planes (each its own
//! kube-apiserver, etcd and policy-server):
//!
//! 1. the cluster of the scenario before is deleted, and this scenario's put
//!    in (its Namespaces, RBAC and custom resources, the stored object of an
//!    UPDATE or DELETE, a grant that lets the requester make the write);
//! 2. its policy's webhook is registered (and no other), and the request is
//!    sent as the requester (kubectl's `--as`/`--as-group`): dry runs until
//!    the answer settles (policy-server's reflectors follow the cluster
//!    through watches), the request straight to policy-server
//!    (`POST /validate/<policy>`), then the real one;
//! 3. kube-apiserver's answer is held to the module's in our host on the
//!    same request (decoded as kube-apiserver decodes it, with the user and
//!    groups it authenticates) and the same cluster: admitted or denied, the
//!    denial in kube-apiserver's words (`admission webhook "…" denied the
//!    request: <the module's message>`) and code, every warning (`Warning:`
//!    headers), and the object as stored after a mutation;
//! 4. policy-server's own answer is held to Kubewarden's evaluator as
//!    `olm_guard_conformance::policy_evaluator` restates it (`ReferenceHost`):
//!    `allowed`, message, code, warnings and patched object.
//!
//! policy-server keeps `can_i` and `get_resource` answers 5 s: a scenario
//! that asks what an earlier one asked, on another cluster, is sent once
//! that answer has expired. A scenario that never reaches admission (RBAC's
//! own escalation check of a ClusterRole write, an object the server's
//! schema refuses, settings policy-server will not start with) is counted
//! by reason, never as agreeing. The test prints `webhook: N/N scenarios
//! decided by policy-server as the module decides`.

mod cases;
mod plane;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

use olm_guard_conformance::ReferenceHost;
use olm_guard_conformance::requests::documents;
use olm_guard_conformance::served::Served;
use olm_guard_evaluator::scenario::{PolicyStore, discover};
use olm_guard_kube_harness::KubeHarness;
use olm_guard_kube_harness::cluster::TestCluster;
use olm_guard_runtime::{Limits, Runtime};

use cases::{Platform, Prepared, Preparer};
use plane::{Outcome, Plane, Share};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn yaml(path: &str) -> anyhow::Result<Value> {
    let path = workspace().join(path);
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    serde_yaml_ng::from_str(&text).with_context(|| format!("{}", path.display()))
}

/// The CRDs of the test clusters: OLM's, the ClusterObjectSet CRD with
/// `spec.group` and the CatalogSource CRD with the union members (so that
/// every scenario's object reaches admission with its fields: `Served`),
/// oria's in both groups the rules accept, and Kubewarden's
/// ClusterAdmissionPolicy.
fn crds() -> anyhow::Result<Vec<Value>> {
    let served = Served::load(&workspace())?;
    let mut crds = vec![
        yaml("testdata/upstream/crds/operators.coreos.com_operatorgroups.yaml")?,
        yaml("testdata/upstream/crds/operators.coreos.com_clusterserviceversions.yaml")?,
        yaml("testdata/upstream/crds/policies.kubewarden.io_clusteradmissionpolicies.yaml")?,
    ];
    for key in [
        "olm.operatorframework.io/ClusterObjectSet",
        "operators.coreos.com/CatalogSource+union",
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

/// policy-server's RBAC as shipped.
fn policy_server_rbac() -> anyhow::Result<Vec<Value>> {
    let path = workspace().join("deploy/kubewarden/policy-server-rbac.yaml");
    documents(&std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?)
}

/// `deploy/kubewarden/policy-server-rbac.yaml` grants get, list and watch on
/// exactly the kinds the modules' metadata names in `contextAwareResources`
/// (by their served resources), create on subjectaccessreviews (the
/// modules that call `can_i`), and nothing else, to the ServiceAccount the
/// tests run policy-server as.
#[test]
fn policy_server_rbac_grants_what_the_modules_read_and_nothing_else() -> anyhow::Result<()> {
    let rbac = policy_server_rbac()?;
    let role = rbac
        .iter()
        .find(|d| d["kind"] == "ClusterRole")
        .context("no ClusterRole")?;
    let mut granted: BTreeSet<(String, String, String)> = BTreeSet::new();
    for rule in role["rules"].as_array().context("no rules")? {
        for group in rule["apiGroups"].as_array().into_iter().flatten() {
            for resource in rule["resources"].as_array().into_iter().flatten() {
                for verb in rule["verbs"].as_array().into_iter().flatten() {
                    granted.insert((
                        group.as_str().unwrap_or_default().into(),
                        resource.as_str().unwrap_or_default().into(),
                        verb.as_str().unwrap_or_default().into(),
                    ));
                }
            }
        }
    }
    // The served resource of each kind a module reads.
    let plurals: BTreeMap<&str, &str> = [
        ("ClusterObjectSet", "clusterobjectsets"),
        ("OperatorGroup", "operatorgroups"),
        ("ScopeTemplate", "scopetemplates"),
        ("ClusterRole", "clusterroles"),
        ("ClusterRoleBinding", "clusterrolebindings"),
        ("Role", "roles"),
        ("RoleBinding", "rolebindings"),
        ("Namespace", "namespaces"),
    ]
    .into_iter()
    .collect();
    let mut needed = BTreeSet::new();
    for rule in olm_guard_rules::registry::RULES {
        let metadata: Value = serde_yaml_ng::from_str(rule.metadata_yaml)?;
        for resource in metadata["contextAwareResources"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let api_version = resource["apiVersion"].as_str().unwrap_or_default();
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let kind = resource["kind"].as_str().unwrap_or_default();
            let plural = plurals
                .get(kind)
                .with_context(|| format!("{}: the resource of {kind}", rule.name))?;
            for verb in ["get", "list", "watch"] {
                needed.insert((group.to_string(), plural.to_string(), verb.to_string()));
            }
        }
        let capabilities = metadata["hostCapabilities"].to_string();
        if capabilities.contains("kubernetes/can_i") {
            needed.insert((
                "authorization.k8s.io".into(),
                "subjectaccessreviews".into(),
                "create".into(),
            ));
        }
    }
    assert_eq!(
        granted, needed,
        "deploy/kubewarden/policy-server-rbac.yaml must grant what the modules read, no more"
    );
    let binding = rbac
        .iter()
        .find(|d| d["kind"] == "ClusterRoleBinding")
        .context("no ClusterRoleBinding")?;
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount",
            "name": olm_guard_kube_harness::kubewarden::SERVICE_ACCOUNT,
            "namespace": olm_guard_kube_harness::kubewarden::NAMESPACE}])
    );
    Ok(())
}

/// The floors: coverage and agreement may only grow.
const DECIDED_FLOOR: usize = 1;

#[test]
fn every_scenario_is_decided_by_policy_server_as_the_module_decides() -> anyhow::Result<()> {
    let root = workspace();
    let dist = root.join("dist");
    anyhow::ensure!(
        dist.is_dir(),
        "{} is missing: run make dist",
        dist.display()
    );
    let started = Instant::now();
    let crds = crds()?;
    // The two control planes start while the scenarios are made ready.
    let clusters: Vec<anyhow::Result<(TestCluster, Vec<Value>)>> = std::thread::scope(|scope| {
        let starting: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| Plane::cluster(&crds)))
            .collect();
        starting
            .into_iter()
            .map(|s| {
                s.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a control plane panicked")))
            })
            .collect()
    });
    let mut clusters = clusters.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    let platform = Platform::new(&clusters[0].1, &policy_server_rbac()?);
    let runtime = Runtime::new(Limits::default())?;
    let mut preparer = Preparer {
        store: PolicyStore::new(&runtime, dist.clone()),
        served: Served::load(&root)?,
        installed: crds.clone(),
        kube: KubeHarness::start()?,
        reference: ReferenceHost::new()?,
        platform,
        prepared: Prepared {
            cases: Vec::new(),
            policies: Vec::new(),
            not_covered: Vec::new(),
        },
    };
    for dir in discover(&[root.join("testdata")])? {
        preparer
            .prepare(&dir)
            .with_context(|| dir.display().to_string())?;
    }
    let prepared = preparer.prepared;
    // The kinds of requests no CRD of the clusters serves yet (a
    // Subscription, say): served as `Served` serves them.
    let mut more: Vec<Value> = Vec::new();
    for crd in prepared.cases.iter().filter_map(|c| c.crd.as_ref()) {
        let name = &crd["metadata"]["name"];
        if !crds
            .iter()
            .chain(&more)
            .any(|c| c["metadata"]["name"] == *name)
        {
            more.push(crd.clone());
        }
    }
    for (cluster, _) in &clusters {
        cluster.install_crds(&more)?;
    }
    let ready = started.elapsed();

    // Two shares, each of whole policies (a policy's scenarios one after
    // the other), about as large.
    let mut shares: [Vec<&cases::Case>; 2] = [Vec::new(), Vec::new()];
    for index in 0..prepared.policies.len() {
        let of: Vec<&cases::Case> = prepared
            .cases
            .iter()
            .filter(|c| c.policy == index)
            .collect();
        let smaller = usize::from(shares[1].len() < shares[0].len());
        shares[smaller].extend(of);
    }
    let runs: Vec<anyhow::Result<Share>> = std::thread::scope(|scope| {
        let handles: Vec<_> = shares
            .iter()
            .zip(clusters.drain(..))
            .map(|(share, (cluster, _))| {
                let policies = &prepared.policies;
                scope.spawn(move || plane::run_share(cluster, policies, share))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a share panicked")))
            })
            .collect()
    });

    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    // By reason, the scenarios' names.
    let mut not_reached: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, reason) in &prepared.not_covered {
        not_reached
            .entry(reason.clone())
            .or_default()
            .push(name.clone());
    }
    let mut disagreements = Vec::new();
    let (mut direct_asked, mut direct_differ) = (0, Vec::new());
    let mut spent: BTreeMap<&'static str, Duration> = BTreeMap::new();
    spent.insert("scenarios made ready", ready);
    let mut reflectors = Vec::new();
    let mut by_rule: BTreeMap<String, usize> = BTreeMap::new();
    for run in runs {
        let share = run?;
        for (what, time) in share.spent {
            *spent.entry(what).or_default() += time;
        }
        reflectors.push(share.reflectors);
        for (name, outcome) in share.outcomes {
            match outcome {
                Outcome::Agree(kind) => {
                    *tally.entry(kind).or_default() += 1;
                    if let Some(case) = prepared.cases.iter().find(|c| c.name == name) {
                        *by_rule.entry(case.rule.clone()).or_default() += 1;
                    }
                }
                Outcome::NotReached(reason) => not_reached.entry(reason).or_default().push(name),
                Outcome::Disagree(problem) => disagreements.push(format!("{name}:\n  {problem}")),
            }
        }
        for (name, answer) in share.direct {
            direct_asked += 1;
            if let Err(problem) = answer {
                direct_differ.push(format!("{name}:\n  {problem}"));
            }
        }
    }
    let agree: usize = tally.values().sum();
    let decided = agree + disagreements.len();
    eprintln!(
        "webhook: {agree}/{decided} scenarios decided by policy-server as the module decides, \
         by rule {by_rule:?}, by answer {tally:?}"
    );
    eprintln!(
        "webhook: {}/{direct_asked} answers of policy-server asked directly equal Kubewarden's \
         evaluator as restated (crates/conformance/src/policy_evaluator.rs)",
        direct_asked - direct_differ.len()
    );
    eprintln!(
        "webhook: {} ClusterAdmissionPolicies ({} rules, deploy/kubewarden/ with each scenario's \
         settings); reflectors policy-server opened per control plane: {reflectors:?}",
        prepared.policies.len(),
        olm_guard_rules::registry::RULES.len()
    );
    let unreached: usize = not_reached.values().map(Vec::len).sum();
    eprintln!("webhook: {unreached} scenarios not decided by admission:");
    for (reason, names) in &not_reached {
        let shown: Vec<&str> = names.iter().take(3).map(String::as_str).collect();
        let more = if names.len() > 3 { ", ..." } else { "" };
        eprintln!("  {:4}  {reason}: {}{more}", names.len(), shown.join(", "));
    }
    eprintln!("webhook: time spent, the two control planes' added up: {spent:?}");
    assert!(
        disagreements.is_empty(),
        "{} of {decided} scenarios: kube-apiserver's answer through policy-server is not the \
         module's:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    assert!(
        direct_differ.is_empty(),
        "{} of {direct_asked} answers of policy-server are not the restated evaluator's:\n{}",
        direct_differ.len(),
        direct_differ.join("\n")
    );
    assert!(
        decided >= DECIDED_FLOOR,
        "only {decided} scenarios were decided, fewer than the {DECIDED_FLOOR} recorded"
    );
    for kind in ["admitted", "denied", "mutated", "admitted with warnings"] {
        assert!(
            tally.get(kind).is_some_and(|n| *n > 0),
            "no scenario was `{kind}` by both: the comparison would be vacuous"
        );
    }
    Ok(())
}
