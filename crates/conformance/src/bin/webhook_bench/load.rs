//! One cluster size of the webhook bench: the objects stored, Kubewarden
//! installed as the README says, and the same requests sent with and
//! without the webhooks.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use olm_guard_bench::Samples;
use olm_guard_kube_harness::cluster::{Requester, TestCluster, Write};
use olm_guard_kube_harness::kubewarden::Kubewarden;

use super::{ms, proc};

/// How large the cluster is.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub name: &'static str,
    /// Groups of ClusterObjectSets, and revisions in each.
    pub groups: usize,
    pub revisions: usize,
    /// ClusterRoles besides kube-apiserver's own, of which `aggregated`
    /// aggregate the labels the others carry.
    pub roles: usize,
    pub aggregated: usize,
    /// Namespaces with one OperatorGroup each.
    pub operator_groups: usize,
}

impl Sizes {
    pub const LARGE: Sizes = Sizes {
        name: "large",
        groups: 1_000,
        revisions: 10,
        roles: 2_000,
        aggregated: 20,
        operator_groups: 2_000,
    };
    pub const REALISTIC: Sizes = Sizes {
        name: "realistic",
        groups: 50,
        revisions: 10,
        roles: 200,
        aggregated: 5,
        operator_groups: 50,
    };
}

/// The user the clients write as: allowed the writes and, for
/// group-authorization and aggregation-escalation, `manage` on every
/// group and `update` on ClusterRoles; holding what the labelled roles
/// grant (RBAC's own escalation check).
const WRITER: &str = "writer";

fn writer_rbac() -> Vec<Value> {
    vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "bench-writer"},
        "rules": [
            {"apiGroups": ["olm.operatorframework.io"], "resources": ["clusterobjectsets"],
                "verbs": ["create"]},
            {"apiGroups": ["olm.operatorframework.io"],
                "resources": ["clusterobjectsets/groups"], "verbs": ["manage"]},
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                "verbs": ["create", "update"]},
            {"apiGroups": ["operators.coreos.com"], "resources": ["operatorgroups"],
                "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
        ]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "bench-writer"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                "name": "bench-writer"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                "name": WRITER}]}),
    ]
}

/// Revision `revision` of group `group`, as operator-controller writes one.
fn revision(group: usize, name: &str, revision: usize) -> Value {
    let extension = format!("ext-{group}");
    json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterObjectSet",
        "metadata": {
            "name": name,
            "labels": {
                "olm.operatorframework.io/owner-kind": "ClusterExtension",
                "olm.operatorframework.io/owner-name": extension,
                "olm.operatorframework.io/package-name": extension,
                "olm.operatorframework.io/bundle-version": format!("1.0.{revision}"),
            },
        },
        "spec": {
            "revision": revision,
            "lifecycleState": "Active",
            "collisionProtection": "Prevent",
            "phases": [{"name": "deploy", "objects": [{"ref": {
                "name": format!("{name}-deploy"), "namespace": "olmv1-system",
                "key": "deployment"}}]}],
        },
    })
}

/// The label a ClusterRole carries to feed aggregated role `a`.
fn feeding_label(a: usize) -> String {
    format!("example.com/aggregate-to-team-{a}")
}

/// A ClusterRole that feeds aggregated role `a`.
fn feeder(name: &str, a: usize) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {feeding_label(a): "true"}},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]})
}

fn operator_group(namespace: &str) -> Value {
    json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": "og", "namespace": namespace},
        "spec": {"targetNamespaces": [namespace]}})
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// What the cluster holds before the requests.
fn stored(sizes: &Sizes) -> Vec<Value> {
    let mut objects = Vec::new();
    for group in 0..sizes.groups {
        for r in 1..=sizes.revisions {
            objects.push(revision(group, &format!("ext-{group}-{r}"), r));
        }
    }
    for a in 0..sizes.aggregated {
        objects.push(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": format!("team-aggregate-{a}")},
            "aggregationRule": {"clusterRoleSelectors": [
                {"matchLabels": {feeding_label(a): "true"}}]},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}),
        );
    }
    for i in sizes.aggregated..sizes.roles {
        objects.push(feeder(&format!("team-{i}"), i % sizes.aggregated.max(1)));
    }
    for i in 0..sizes.operator_groups {
        let name = format!("team-{i}");
        objects.push(namespace(&name));
        objects.push(operator_group(&name));
    }
    // Namespaces without an OperatorGroup, for the new ones.
    for i in 0..sizes.operator_groups.min(100) {
        objects.push(namespace(&format!("spare-{i}")));
    }
    objects.extend(writer_rbac());
    objects
}

/// One request of the mix, and whether the policies admit it.
struct Request {
    object: Value,
    admitted: bool,
}

/// Which requests a run sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mix {
    /// The four kinds in turn.
    All,
    /// Only the kind of [`request`]'s `i % 4 == k`.
    Only(usize),
}

impl Mix {
    /// The index into [`request`] of a run's `n`-th request.
    fn at(self, n: usize) -> usize {
        match self {
            Mix::All => n,
            Mix::Only(k) => 4 * n + k,
        }
    }
}

/// What each kind of [`request`] is, for the report.
const KINDS: [&str; 4] = [
    "new revision (revision-uniqueness, group-authorization)",
    "duplicate revision (denied by revision-uniqueness)",
    "ClusterRole feeding an aggregated one (aggregation-escalation)",
    "new OperatorGroup (og-intersection)",
];

/// The `i`-th request of the mix: a new revision (admitted), a duplicate
/// revision (denied by revision-uniqueness), a ClusterRole labelled to feed
/// an aggregated one (admitted: the writer may update it), a new
/// OperatorGroup in a Namespace without one (admitted).
fn request(sizes: &Sizes, i: usize) -> Request {
    let group = (i / 4) % sizes.groups;
    match i % 4 {
        0 => Request {
            object: revision(group, &format!("ext-{group}-next"), sizes.revisions + 1),
            admitted: true,
        },
        1 => Request {
            object: revision(group, &format!("ext-{group}-again"), sizes.revisions),
            admitted: false,
        },
        2 => Request {
            object: feeder(&format!("new-{i}"), i % sizes.aggregated.max(1)),
            admitted: true,
        },
        _ => Request {
            object: operator_group(&format!(
                "spare-{}",
                (i / 4) % sizes.operator_groups.min(100)
            )),
            admitted: true,
        },
    }
}

/// How one measured run went.
pub struct Run {
    latencies: Samples,
    elapsed: Duration,
    requests: usize,
}

impl Run {
    fn per_second(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    /// Several runs as one: their latencies together, their requests and
    /// time added up.
    fn pooled(runs: Vec<Run>) -> Run {
        let mut latencies = Vec::new();
        let (mut elapsed, mut requests) = (Duration::ZERO, 0);
        for run in runs {
            latencies.extend(run.latencies.into_vec());
            elapsed += run.elapsed;
            requests += run.requests;
        }
        Run {
            latencies: Samples::new(latencies),
            elapsed,
            requests,
        }
    }
}

/// How many times the alone and guarded runs alternate.
const ROUNDS: usize = 3;

/// Sends request `i` of the mix as the writer, a dry run: its latency, once
/// the answer is what the request is built to get (`guarded`: with the
/// policies in force; otherwise everything is admitted).
fn send_one(
    cluster: &TestCluster,
    sizes: &Sizes,
    i: usize,
    guarded: bool,
) -> anyhow::Result<Duration> {
    let writer = Requester {
        user: WRITER.into(),
        groups: vec!["system:authenticated".into()],
    };
    let request = request(sizes, i);
    let sent = Instant::now();
    let written = cluster.write_as(Some(&writer), Write::Create, &request.object, None, true)?;
    let latency = sent.elapsed();
    let expected = request.admitted || !guarded;
    match &written.answer {
        Ok(_) if expected => Ok(latency),
        Err(refusal) if !expected && refusal.message.contains("denied the request") => Ok(latency),
        answer => bail!(
            "{} {}: expected {}, got {answer:?}",
            request.object["kind"],
            request.object["metadata"]["name"],
            if expected { "admitted" } else { "denied" }
        ),
    }
}

/// Sends `count` requests of `mix` from `clients` threads ([`send_one`]).
fn send(
    cluster: &TestCluster,
    sizes: &Sizes,
    clients: usize,
    count: usize,
    mix: Mix,
    guarded: bool,
) -> anyhow::Result<Run> {
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    let results: Vec<anyhow::Result<Vec<Duration>>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..clients.max(1))
            .map(|_| {
                scope.spawn(|| -> anyhow::Result<Vec<Duration>> {
                    let mut latencies = Vec::new();
                    loop {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        if n >= count {
                            return Ok(latencies);
                        }
                        latencies.push(send_one(cluster, sizes, mix.at(n), guarded)?);
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| bail!("a client panicked")))
            .collect()
    });
    let elapsed = started.elapsed();
    let mut latencies = Vec::new();
    for result in results {
        latencies.extend(result?);
    }
    Ok(Run {
        latencies: Samples::new(latencies),
        elapsed,
        requests: count,
    })
}

/// Sends the run's requests once, one at a time, each until it is
/// answered: how many were refused for policy-server's deadline while the
/// reflector they opened made its first list.
fn warm_up(cluster: &TestCluster, sizes: &Sizes, requests: usize) -> anyhow::Result<usize> {
    let mut refused = 0;
    for n in 0..requests {
        let mut tries = 0;
        loop {
            match send_one(cluster, sizes, n, true) {
                Ok(_) => break,
                Err(e)
                    if tries < 5
                        && format!("{e:#}").contains("exceeded the allowed execution time") =>
                {
                    tries += 1;
                    refused += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(refused)
}

/// The warm-up: what opening policy-server's reflectors cost.
struct Warm {
    elapsed: Duration,
    apiserver_cpu: Duration,
    refused_cold: usize,
    reflectors: usize,
}

/// What one size measured.
pub struct Report {
    sizes: Sizes,
    objects: usize,
    clients: usize,
    alone: Run,
    guarded: Run,
    single: Run,
    /// policy-server's CPU over the guarded run, per request.
    server_cpu: Duration,
    /// ... and per request of each kind alone.
    by_kind: Vec<(&'static str, Duration)>,
    /// kube-apiserver's CPU per request, alone and guarded.
    apiserver_cpu: (Duration, Duration),
    /// policy-server's resident memory at its peak.
    peak_rss: u64,
    /// kube-apiserver's resident memory before policy-server's reflectors
    /// and after the bench.
    apiserver_rss: (u64, u64),
    reflectors: usize,
    warm: Warm,
}

impl Report {
    pub fn print(&self) {
        let s = &self.sizes;
        println!(
            "  {}: {} objects stored ({} ClusterObjectSets in {} groups, {} ClusterRoles besides \
             the default ones, {} OperatorGroups); {} dry-run creates each way ({ROUNDS} runs \
             alone and {ROUNDS} guarded, in turn), {} clients",
            s.name,
            self.objects,
            s.groups * s.revisions,
            s.groups,
            s.roles,
            s.operator_groups,
            self.alone.requests,
            self.clients
        );
        println!("    | | req/s | p50 | p99 | policy-server CPU per request |");
        println!("    |---|---:|---:|---:|---:|");
        for (what, run, cpu) in [
            ("kube-apiserver alone (webhooks removed)", &self.alone, None),
            (
                "with policy-server's webhooks",
                &self.guarded,
                Some(self.server_cpu),
            ),
        ] {
            println!(
                "    | {what} | {:.0} | {} | {} | {} |",
                run.per_second(),
                ms(run.latencies.median()),
                ms(run.latencies.percentile(0.99)),
                cpu.map_or("—".to_string(), ms)
            );
        }
        println!(
            "    | one client alone, with the webhooks | — | {} | — | — |",
            ms(self.single.latencies.median())
        );
        for (kind, cpu) in &self.by_kind {
            println!("    policy-server CPU per request, {kind}: {}", ms(*cpu));
        }
        println!(
            "    with the webhooks / alone: p99 {:.2}x, p50 {:.2}x; policy-server peak RSS {}; \
             reflectors (watches) it opened: {}",
            self.guarded.latencies.percentile(0.99).as_secs_f64()
                / self.alone.latencies.percentile(0.99).as_secs_f64(),
            self.guarded.latencies.median().as_secs_f64()
                / self.alone.latencies.median().as_secs_f64(),
            proc::mib(self.peak_rss),
            self.reflectors
        );
        println!(
            "    warming up ({} requests one at a time): {:.1} s, {} reflectors opened, \
             kube-apiserver CPU {:.1} s; {} first requests refused by policy-server's deadline \
             while their reflector made its first list (sent again)",
            self.alone.requests / ROUNDS,
            self.warm.elapsed.as_secs_f64(),
            self.warm.reflectors,
            self.warm.apiserver_cpu.as_secs_f64(),
            self.warm.refused_cold
        );
        println!(
            "    kube-apiserver: CPU per request {} alone, {} with the webhooks (SubjectAccessReviews \
             and watches included); RSS {} before policy-server's reflectors, {} after",
            ms(self.apiserver_cpu.0),
            ms(self.apiserver_cpu.1),
            proc::mib(self.apiserver_rss.0),
            proc::mib(self.apiserver_rss.1)
        );
    }
}

fn yaml(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut documents = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(&text) {
        let value: Value = serde::Deserialize::deserialize(document)?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    Ok(documents)
}

/// The cluster of `sizes`, Kubewarden on it, and the three runs.
pub fn measure(
    root: &Path,
    dist: &Path,
    sizes: &Sizes,
    clients: usize,
    requests: usize,
) -> anyhow::Result<Report> {
    eprintln!("webhook bench, {}: starting the cluster ...", sizes.name);
    let cluster = TestCluster::start()?;
    let mut crds = Vec::new();
    for path in [
        "crates/native/upstream/olm.operatorframework.io_clusterobjectsets.yaml",
        "crates/native/upstream/operators.coreos.com_catalogsources.yaml",
        "testdata/upstream/crds/operators.coreos.com_operatorgroups.yaml",
        "testdata/upstream/crds/policies.kubewarden.io_clusteradmissionpolicies.yaml",
    ] {
        crds.extend(yaml(&root.join(path))?);
    }
    cluster.install_crds(&crds)?;
    let objects = stored(sizes);
    eprintln!(
        "webhook bench, {}: storing {} objects ...",
        sizes.name,
        objects.len()
    );
    cluster.store_all(&objects, 32)?;
    // Kubewarden, as the README installs it: `kubectl apply -f
    // deploy/kubewarden/` (the six ClusterAdmissionPolicies and
    // policy-server's RBAC), then the controller's work.
    let deploy = root.join("deploy/kubewarden");
    let mut files: Vec<_> = std::fs::read_dir(&deploy)
        .with_context(|| format!("{}", deploy.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for file in files {
        for object in yaml(&file)? {
            if let Err(refusal) = cluster.create(&object)? {
                bail!("{}: {}", file.display(), refusal.message);
            }
        }
    }
    let apiserver = cluster
        .apiserver_pid()
        .context("kube-apiserver is not running")?;
    let rss_before = proc::memory(apiserver)?.0;
    let mut kubewarden = Kubewarden::reconcile(&cluster, |module| {
        let name = module
            .rsplit('/')
            .next()
            .and_then(|last| last.split(':').next())
            .unwrap_or_default();
        format!("file://{}", dist.join(format!("{name}.wasm")).display())
    })?;
    let server = kubewarden
        .server
        .pid()
        .context("policy-server is not running")?;

    // Warm: the runs' requests once, one at a time, so that every
    // reflector they need is open. A reflector's first list is waited for
    // inside the module's host call, which policy-server's 2 s deadline
    // counts: on a large cluster the first request that opens one can be
    // refused for it ("Policy execution interrupted"), and is sent again.
    eprintln!(
        "webhook bench, {}: warming policy-server up ...",
        sizes.name
    );
    let warm_cpu = proc::cpu(apiserver)?;
    let warm_started = Instant::now();
    let refused_cold = warm_up(&cluster, sizes, requests)?;
    let warm = Warm {
        elapsed: warm_started.elapsed(),
        apiserver_cpu: proc::cpu(apiserver)? - warm_cpu,
        refused_cold,
        reflectors: kubewarden.server.log_matches("creating new reflector"),
    };

    // Alone and guarded in turn, ROUNDS times, so that what the machine
    // does meanwhile falls on both; their samples pooled.
    eprintln!("webhook bench, {}: measuring ...", sizes.name);
    let (mut alone, mut guarded) = (Vec::new(), Vec::new());
    let (mut apiserver_alone, mut apiserver_guarded, mut server_cpu) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for _ in 0..ROUNDS {
        cluster.unregister_webhooks(&kubewarden.configurations)?;
        let cpu_before = proc::cpu(apiserver)?;
        alone.push(send(&cluster, sizes, clients, requests, Mix::All, false)?);
        apiserver_alone += proc::cpu(apiserver)? - cpu_before;
        cluster.register_webhooks(&kubewarden.configurations)?;
        let (server_before, apiserver_before) = (proc::cpu(server)?, proc::cpu(apiserver)?);
        guarded.push(send(&cluster, sizes, clients, requests, Mix::All, true)?);
        server_cpu += proc::cpu(server)? - server_before;
        apiserver_guarded += proc::cpu(apiserver)? - apiserver_before;
    }
    let sent = (requests * ROUNDS) as u32;
    let (alone, guarded) = (Run::pooled(alone), Run::pooled(guarded));
    let (server_cpu, apiserver_alone, apiserver_guarded) = (
        server_cpu / sent,
        apiserver_alone / sent,
        apiserver_guarded / sent,
    );
    let single = send(&cluster, sizes, 1, requests.min(200), Mix::All, true)?;
    // policy-server's CPU per request of each kind alone (the first quarter
    // of the run's requests of that kind, sent as the run sends them).
    let mut by_kind = Vec::new();
    for (k, kind) in KINDS.iter().enumerate() {
        let before = proc::cpu(server)?;
        send(&cluster, sizes, clients, requests / 4, Mix::Only(k), true)?;
        by_kind.push((
            *kind,
            (proc::cpu(server)? - before) / (requests / 4).max(1) as u32,
        ));
    }
    let peak_rss = proc::memory(server)?.1;
    let rss_after = proc::memory(apiserver)?.0;
    let reflectors = kubewarden.server.log_matches("creating new reflector");
    kubewarden.server.stop();
    Ok(Report {
        sizes: *sizes,
        objects: objects.len(),
        clients,
        alone,
        guarded,
        single,
        server_cpu,
        by_kind,
        apiserver_cpu: (apiserver_alone, apiserver_guarded),
        peak_rss,
        apiserver_rss: (rss_before, rss_after),
        reflectors,
        warm,
    })
}
