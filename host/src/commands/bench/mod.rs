//! `olm-guard bench`: modules against the same rules compiled natively;
//! `scale` measures the scale series, `plot` draws it.

#[cfg(feature = "plot")]
mod plot;
mod scale;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;

use olm_guard_bench::{self as bench, Workload};
use olm_guard_evaluator::Policy;
use olm_guard_evaluator::scenario::PolicyStore;
use olm_guard_runtime::Runtime;

use crate::cluster::SnapshotArgs;
use crate::limits::LimitArgs;
use crate::modules::policies_dir;
use crate::{inputs, settings};
use scale::ms;

#[derive(Args)]
#[command(after_help = "\
Each evaluation runs the module in a fresh wasm instance (as policy-server
does) with its host calls answered from the snapshot, then the same rule
compiled natively on the same inputs; the table gives both and the ratio.
Figures from a debug build are not representative: use a release build
(`cargo run --release -p olm-guard-host -- bench`, or `make bench`).

Workloads (generated in memory, the verdict checked):
  cos-10k   revision-uniqueness, a CREATE against 10,000 ClusterObjectSets
  rbac-5k   aggregation-escalation, 5,000 ClusterRoles + 5,000 bindings
  og-2k     og-intersection, 2,000 OperatorGroups over 5,000 namespaces

Examples:
  olm-guard bench                                # every workload, 20 runs each way,
                                                 # and 10 one-shot `run` processes
  olm-guard bench --workload cos-10k --iterations 100
  olm-guard bench --scale --plot scale.png          # every context-aware module at 10..10,000 objects
  olm-guard bench --policy dist/catalog-union.wasm --request review.json

Exit codes: 0 measured; 2 a module is missing, a workload's verdict was not
the expected one, or an input could not be read.")]
pub struct BenchArgs {
    /// A built-in workload: cos-10k, rbac-5k, og-2k, or all (the default).
    #[arg(long, conflicts_with = "request")]
    pub workload: Option<String>,
    /// A module to measure on --request/--cluster instead of a workload.
    #[arg(long, requires = "request")]
    pub policy: Option<PathBuf>,
    /// The AdmissionReview or AdmissionRequest to evaluate with --policy.
    #[arg(long)]
    pub request: Option<PathBuf>,
    /// The settings for --policy, JSON or YAML (default: {}).
    #[arg(long)]
    pub settings: Option<PathBuf>,
    #[command(flatten)]
    pub snapshot: SnapshotArgs,
    /// Where workload modules (`<policy>.wasm`) are.
    #[arg(long, default_value = "dist")]
    pub dist: PathBuf,
    /// Evaluations each way.
    #[arg(long, default_value_t = 20)]
    pub iterations: usize,
    /// Also measure every context-aware module at 10, 100, 1,000 and 10,000
    /// objects, wasm and native (a table; see --plot).
    #[arg(long)]
    pub scale: bool,
    /// With --scale, draw the series as a log-log PNG here.
    #[arg(long, value_name = "FILE", requires = "scale")]
    pub plot: Option<PathBuf>,
    /// Also time whole `olm-guard run` processes, without and with the
    /// compile cache, this many each (0: skip); not with --policy.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub one_shot_runs: usize,
    #[command(flatten)]
    pub limits: LimitArgs,
}

pub fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    // Before minutes of measuring, not after.
    #[cfg(not(feature = "plot"))]
    if let Some(path) = &args.plot {
        anyhow::bail!(
            "--plot {}: this olm-guard was built without the `plot` cargo feature (which `make \
             examples` leaves out); build it with `cargo build -p olm-guard-host`",
            path.display()
        );
    }
    if cfg!(debug_assertions) {
        eprintln!(
            "olm-guard: warning: this is a debug build; its figures are not representative (use `make bench` or `cargo run --release -p olm-guard-host -- bench`)"
        );
    }
    let runtime = Runtime::new(args.limits.limits())?;
    let mut reports = Vec::new();
    if let (Some(module), Some(request)) = (&args.policy, &args.request) {
        let request = inputs::request_file(request)?;
        let settings = settings::read(args.settings.as_deref())?;
        let snapshot = args.snapshot.load()?;
        let policy = Policy::load(&runtime, module, None)?;
        reports.push(bench::measure(
            "input",
            &policy,
            &request,
            &settings,
            Arc::new(snapshot),
            args.iterations,
        )?);
    } else {
        let wanted = args.workload.as_deref().unwrap_or("all");
        // Say what will run before the (seconds-long) generation starts.
        for (name, about) in Workload::catalog() {
            if wanted == "all" || wanted == name {
                eprintln!(
                    "bench: {name}: {about}; runs each way: {}; module from {}",
                    args.iterations,
                    args.dist.display()
                );
            }
        }
        let workloads: Vec<Workload> = match wanted {
            "all" => Workload::all(),
            name => vec![Workload::by_name(name).with_context(|| {
                format!(
                    "no workload {name:?} ({}, all)",
                    Workload::names().join(", ")
                )
            })?],
        };
        let mut store = PolicyStore::new(&runtime, args.dist.clone())
            .with_metadata_dir(policies_dir(&args.dist));
        for workload in workloads {
            let policy = store.get(workload.policy)?;
            let report = bench::measure(
                workload.name,
                &policy,
                &workload.request,
                &workload.settings,
                Arc::new(workload.snapshot),
                args.iterations,
            )?;
            if report.allowed != workload.expect_allowed {
                anyhow::bail!(
                    "workload {} was {} by {}, expected the opposite",
                    workload.name,
                    if report.allowed { "allowed" } else { "denied" },
                    workload.policy
                );
            }
            reports.push(report);
        }
    }
    println!("{}", bench::Report::header());
    for report in &reports {
        println!("{}", report.row());
    }
    println!(
        "(each evaluation: fresh wasm instance + host calls answered from the snapshot, vs the same rule native; {} runs each)",
        args.iterations
    );
    if args.policy.is_none() && args.one_shot_runs > 0 {
        one_shot(&args.dist, args.one_shot_runs)?;
    }
    if args.scale {
        let mut store = PolicyStore::new(&runtime, args.dist.clone())
            .with_metadata_dir(policies_dir(&args.dist));
        let reports = scale::measure_all(&mut store)?;
        let machine = bench::machine();
        println!();
        println!("scale series ({machine}):");
        scale::print_table(&reports);
        #[cfg(feature = "plot")]
        if let Some(path) = &args.plot {
            plot::plot(&reports, path, &machine)?;
            eprintln!("bench: wrote {}", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The CatalogSource a one-shot run evaluates.
const ONE_SHOT_OBJECT: &str = "apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: operatorhubio-catalog, namespace: olm}
spec: {sourceType: grpc, image: quay.io/operatorhubio/catalog:latest}
";

/// Whole-process time of `olm-guard run catalog-union --object cs.yaml`, as
/// a user or a CI step runs it: compiling the module every time, and with
/// the compile cache warm (this binary, `runs` processes each, medians).
fn one_shot(dist: &Path, runs: usize) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("cannot find this binary to run it")?;
    let scratch = std::env::temp_dir().join(format!("olm-guard-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let object = scratch.join("cs.yaml");
    std::fs::write(&object, ONE_SHOT_OBJECT)?;
    let module = dist.join("catalog-union.wasm");
    let cache = scratch.join("compiled");
    let time = |cache_flags: &[&std::ffi::OsStr]| -> anyhow::Result<Duration> {
        let started = Instant::now();
        let status = std::process::Command::new(&exe)
            .arg("run")
            .arg(&module)
            .arg("--object")
            .arg(&object)
            .args(cache_flags)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()?;
        anyhow::ensure!(
            status.success(),
            "olm-guard run {} failed",
            module.display()
        );
        Ok(started.elapsed())
    };
    let median = |flags: &[&std::ffi::OsStr]| -> anyhow::Result<Duration> {
        let mut times = (0..runs)
            .map(|_| time(flags))
            .collect::<anyhow::Result<Vec<_>>>()?;
        times.sort();
        Ok(times[times.len() / 2])
    };
    let cold = median(&["--no-compile-cache".as_ref()])?;
    let warm_flags = ["--compile-cache-dir".as_ref(), cache.as_os_str()];
    time(&warm_flags)?; // fills the cache
    let warm = median(&warm_flags)?;
    let _ = std::fs::remove_dir_all(&scratch);
    println!();
    println!(
        "one-shot `olm-guard run catalog-union --object cs.yaml`, whole process, median of {runs}:"
    );
    println!(
        "  compiling the module every time (--no-compile-cache)  {:>8.1} ms",
        ms(cold)
    );
    println!(
        "  compile cache warm                                     {:>8.1} ms  ({:.3}x)",
        ms(warm),
        warm.as_secs_f64() / cold.as_secs_f64()
    );
    Ok(())
}
