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
pub struct BenchArgs {
    /// Built-in large inputs: cos-10k, rbac-5k, og-2k, or all.
    #[arg(long, conflicts_with = "request")]
    pub workload: Option<String>,
    /// A module to measure on --request/--cluster instead of a workload.
    #[arg(long, requires = "request")]
    pub policy: Option<PathBuf>,
    #[arg(long)]
    pub request: Option<PathBuf>,
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
