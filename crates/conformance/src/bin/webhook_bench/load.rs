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
}

/// Sends `count` requests of the mix from `clients` threads as the writer,
/// each a dry run; every answer must be what the request is built to get
/// (`guarded`: with the policies in force; otherwise everything is
/// admitted).
fn send(
    cluster: &TestCluster,
    sizes: &Sizes,
    clients: usize,
    count: usize,
    first: usize,
    guarded: bool,
) -> anyhow::Result<Run> {
    let writer = Requester {
        user: WRITER.into(),
        groups: vec!["system:authenticated".into()],
    };
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
                        let request = request(sizes, first + n);
                        let sent = Instant::now();
                        let written = cluster.write_as(
                            Some(&writer),
                            Write::Create,
                            &request.object,
                            None,
                            true,
                        )?;
                        latencies.push(sent.elapsed());
                        let expected = request.admitted || !guarded;
                        match &written.answer {
                            Ok(_) if expected => {}
                            Err(refusal)
                                if !expected && refusal.message.contains("denied the request") => {}
                            answer => bail!(
                                "{} {}: expected {}, got {answer:?}",
                                request.object["kind"],
                                request.object["metadata"]["name"],
                                if expected { "admitted" } else { "denied" }
                            ),
                        }
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
    /// kube-apiserver's CPU per request, alone and guarded.
    apiserver_cpu: (Duration, Duration),
    /// policy-server's resident memory at its peak.
    peak_rss: u64,
    /// kube-apiserver's resident memory before policy-server's reflectors
    /// and after the bench.
    apiserver_rss: (u64, u64),
    reflectors: usize,
}

impl Report {
    pub fn print(&self) {
        let s = &self.sizes;
        println!(
            "  {}: {} objects stored ({} ClusterObjectSets in {} groups, {} ClusterRoles besides \
             the default ones, {} OperatorGroups); {} dry-run creates per run, {} clients",
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
        println!(
            "    p99 with the webhooks / alone: {:.2}x; policy-server peak RSS {}; reflectors \
             (watches) it opened: {}",
            self.guarded.latencies.percentile(0.99).as_secs_f64()
                / self.alone.latencies.percentile(0.99).as_secs_f64(),
            proc::mib(self.peak_rss),
            self.reflectors
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

    // Warm: a request of each kind for every group, ClusterRole and
    // Namespace the runs ask about, so that every reflector is open.
    eprintln!(
        "webhook bench, {}: warming policy-server up ...",
        sizes.name
    );
    let warm = sizes.groups.max(sizes.operator_groups.min(100)) * 4;
    send(&cluster, sizes, clients, warm, 0, true)?;

    eprintln!("webhook bench, {}: measuring ...", sizes.name);
    cluster.unregister_webhooks(&kubewarden.configurations)?;
    let cpu_before = proc::cpu(apiserver)?;
    let alone = send(&cluster, sizes, clients, requests, 0, false)?;
    let apiserver_alone = (proc::cpu(apiserver)? - cpu_before) / requests as u32;
    cluster.register_webhooks(&kubewarden.configurations)?;
    let (server_before, apiserver_before) = (proc::cpu(server)?, proc::cpu(apiserver)?);
    let guarded = send(&cluster, sizes, clients, requests, 0, true)?;
    let server_cpu = (proc::cpu(server)? - server_before) / requests as u32;
    let apiserver_guarded = (proc::cpu(apiserver)? - apiserver_before) / requests as u32;
    let single = send(&cluster, sizes, 1, requests.min(200), 0, true)?;
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
        apiserver_cpu: (apiserver_alone, apiserver_guarded),
        peak_rss,
        apiserver_rss: (rss_before, rss_after),
        reflectors,
    })
}
