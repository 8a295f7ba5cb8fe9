//! `olm-guard bench`: modules against the same rules compiled natively.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;

use olm_guard_bench::{self as bench, Workload};
use olm_guard_evaluator::Policy;
use olm_guard_evaluator::scenario::PolicyStore;
use olm_guard_runtime::Runtime;

use crate::common::{LimitArgs, SnapshotArgs, policies_dir, read_inputs};

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
  olm-guard bench                                # every workload, 20 runs each way
  olm-guard bench --workload cos-10k --iterations 100
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
    #[command(flatten)]
    pub limits: LimitArgs,
}

pub fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    if cfg!(debug_assertions) {
        eprintln!(
            "olm-guard: warning: this is a debug build; its figures are not representative (use `make bench` or `cargo run --release -p olm-guard-host -- bench`)"
        );
    }
    let runtime = Runtime::new(args.limits.limits())?;
    let mut reports = Vec::new();
    if let (Some(module), Some(request)) = (&args.policy, &args.request) {
        let (request, settings, snapshot) =
            read_inputs(request, args.settings.as_deref(), &args.snapshot)?;
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
        let workloads: Vec<Workload> = match wanted {
            "all" => Workload::all(),
            name => vec![Workload::by_name(name).with_context(|| {
                format!(
                    "no workload {name:?} ({}, all)",
                    Workload::names().join(", ")
                )
            })?],
        };
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
    Ok(ExitCode::SUCCESS)
}
