//! `olm-guard-live-bench`: an audit of a live cluster against the same
//! audit of its dump, in one run (`make bench`).
//!
//! It starts kube-apiserver on etcd (the test cluster of
//! `olm_guard_kube_harness::cluster`), installs the upstream CRDs, stores
//! `--objects` CatalogSources, OperatorGroups and ClusterObjectSets
//! (`olm_guard_bench::stored`) in their Namespaces, dumps the cluster with
//! `olm-guard snapshot` (what the modules judge and read, the server's own
//! default RBAC among it), and times `olm-guard audit --kubeconfig` (every
//! kind listed page by page, every lookup answered by the server,
//! SubjectAccessReviews included) against `olm-guard audit --cluster
//! <dump>` (the same objects read from the file), alternately, after one
//! unmeasured run of each (the compile cache filled). Both audits must give
//! the same results. Figures: the median of each and their ratio, with the
//! machine named.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use serde_json::Value;

use olm_guard_bench::{Samples, machine, stored};
use olm_guard_kube_harness::cluster::TestCluster;

#[derive(Parser)]
#[command(
    name = "olm-guard-live-bench",
    version,
    about = "An audit of a live API server (kube-apiserver on etcd) against the same audit \
             of its dump, and the ratio live / dump."
)]
struct Args {
    /// The olm-guard binary to time.
    #[arg(long, default_value = "target/release/olm-guard")]
    olm_guard: PathBuf,
    /// The modules' directory.
    #[arg(long, default_value = "dist")]
    dist: PathBuf,
    /// The repository (for the CRDs it installs).
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// How many objects the cluster holds.
    #[arg(long, default_value_t = 10_000)]
    objects: usize,
    /// Timed runs of each audit.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// The live audit's page size (its `--chunk-size`).
    #[arg(long, default_value_t = 500)]
    chunk_size: u32,
}

fn crd(root: &Path, path: &str) -> anyhow::Result<Value> {
    let path = root.join(path);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    serde_yaml_ng::from_str(&text).with_context(|| format!("{}", path.display()))
}

/// One audit, timed; its results without where each object was read, and
/// what it said of its own time on stderr.
fn audit(
    olm_guard: &Path,
    dist: &Path,
    source: &[&str],
) -> anyhow::Result<(Duration, Value, String)> {
    let started = Instant::now();
    let output = Command::new(olm_guard)
        .arg("audit")
        .args(source)
        .arg("--dist")
        .arg(dist)
        .args(["-o", "json"])
        .output()
        .with_context(|| format!("cannot run {}", olm_guard.display()))?;
    let elapsed = started.elapsed();
    if !output.status.success() {
        bail!(
            "olm-guard audit {source:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let mut report: Value = serde_json::from_slice(&output.stdout)?;
    if let Some(results) = report["results"].as_array_mut() {
        for result in results {
            if let Some(result) = result.as_object_mut() {
                result.remove("source");
            }
        }
    }
    let said = String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|l| l.starts_with("olm-guard: read ") || l.starts_with("olm-guard audit: "))
        .map(|l| format!("    {l}\n"))
        .collect();
    Ok((elapsed, report, said))
}

fn run(args: &Args) -> anyhow::Result<()> {
    eprintln!(
        "live bench: starting the cluster, storing {} objects ...",
        args.objects
    );
    let cluster = TestCluster::start()?;
    cluster.install_crds(&[
        crd(
            &args.root,
            "crates/native/upstream/operators.coreos.com_catalogsources.yaml",
        )?,
        crd(
            &args.root,
            "crates/native/upstream/olm.operatorframework.io_clusterobjectsets.yaml",
        )?,
        crd(
            &args.root,
            "testdata/upstream/crds/operators.coreos.com_operatorgroups.yaml",
        )?,
    ])?;
    let objects = stored::olm_objects(args.objects);
    cluster.store_all(&objects, 16)?;
    let kubeconfig = cluster.kubeconfig().display().to_string();
    let dump = cluster.dir().join("dump.yaml");
    let taken = Command::new(&args.olm_guard)
        .args(["snapshot", "--kubeconfig", &kubeconfig, "--dist"])
        .arg(&args.dist)
        .arg("--output-file")
        .arg(&dump)
        .output()?;
    if !taken.status.success() {
        bail!(
            "olm-guard snapshot failed: {}",
            String::from_utf8_lossy(&taken.stderr)
        );
    }
    let dump = dump.display().to_string();
    let chunk_size = args.chunk_size.to_string();
    let live_source = [
        "--kubeconfig",
        kubeconfig.as_str(),
        "--chunk-size",
        chunk_size.as_str(),
    ];
    let dump_source = ["--cluster", dump.as_str()];

    // One unmeasured run of each fills the compile cache; their reports
    // must agree.
    let (_, live_report, _) = audit(&args.olm_guard, &args.dist, &live_source)?;
    let (_, dump_report, _) = audit(&args.olm_guard, &args.dist, &dump_source)?;
    if live_report["results"] != dump_report["results"] {
        let empty = Vec::new();
        let live = live_report["results"].as_array().unwrap_or(&empty);
        let dump = dump_report["results"].as_array().unwrap_or(&empty);
        let first = live
            .iter()
            .zip(dump)
            .find(|(a, b)| a != b)
            .map(|(a, b)| format!("live: {a}\n  dump: {b}"))
            .unwrap_or_default();
        bail!(
            "the live audit ({} results) and the audit of its dump ({} results) disagree; first:\n  {first}",
            live.len(),
            dump.len()
        );
    }
    let (mut live, mut file) = (Vec::new(), Vec::new());
    let (mut live_said, mut dump_said) = (String::new(), String::new());
    for _ in 0..args.runs.max(1) {
        let (elapsed, _, said) = audit(&args.olm_guard, &args.dist, &live_source)?;
        live.push(elapsed);
        live_said = said;
        let (elapsed, _, said) = audit(&args.olm_guard, &args.dist, &dump_source)?;
        file.push(elapsed);
        dump_said = said;
    }
    let (live, file) = (Samples::new(live), Samples::new(file));
    let ratio = live.median().as_secs_f64() / file.median().as_secs_f64();
    println!(
        "live audit ({}; {} objects, {} results, pages of {}, {} runs each, whole command):",
        machine(),
        live_report["objects"],
        live_report["results"].as_array().map_or(0, Vec::len),
        args.chunk_size,
        args.runs.max(1)
    );
    println!(
        "  from the live API server (--kubeconfig): median {:.2?}; its last run said:\n{live_said}",
        live.median()
    );
    println!(
        "  from its dump (--cluster):               median {:.2?}; its last run said:\n{dump_said}",
        file.median()
    );
    println!("  live / dump: {ratio:.2}x (goal: within 2x)");
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("olm-guard-live-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
