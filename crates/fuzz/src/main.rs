//! `olm-guard-fuzz`: mutation fuzzing of the modules through the host
//! (`make fuzz` for the long run; a bounded run is part of `make test`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use olm_guard_fuzz::Budget;
use olm_guard_rules::registry;
use olm_guard_runtime::{Limits, Runtime};

/// Fuzz policy modules through the host with mutated scenario inputs.
///
/// Examples:
///   olm-guard-fuzz --iterations 1000 --seed 7
///   olm-guard-fuzz --module catalog-union --executions 1000000 --findings target/findings
#[derive(Parser)]
#[command(name = "olm-guard-fuzz", version, verbatim_doc_comment)]
struct Args {
    /// A module name (repeatable); all registered modules when absent.
    #[arg(long)]
    module: Vec<String>,
    /// Mutated inputs per module (at least).
    #[arg(long, default_value_t = 1_000)]
    iterations: u64,
    /// Evaluations per module (at least); the long run asks for 1,000,000.
    #[arg(long, default_value_t = 0)]
    executions: u64,
    /// No progress bar (it is drawn on stderr only when that is a terminal).
    #[arg(long)]
    quiet: bool,
    /// The random seed: the same seed gives the same inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where the modules are.
    #[arg(long, default_value = "dist")]
    dist: PathBuf,
    /// Where the scenarios to mutate are.
    #[arg(long, default_value = "testdata")]
    testdata: PathBuf,
    /// Write each finding as a scenario directory below this one.
    #[arg(long)]
    findings: Option<PathBuf>,
}

fn main() -> ExitCode {
    match fuzz(Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("olm-guard-fuzz: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// `Ok(true)` when no module had a finding.
fn fuzz(args: Args) -> anyhow::Result<bool> {
    let runtime = Runtime::new(Limits::default())?;
    let modules: Vec<String> = if args.module.is_empty() {
        registry::names().map(String::from).collect()
    } else {
        args.module.clone()
    };
    println!(
        "{:<24} {:>10} {:>10} {:>10} {:>10} {:>9}",
        "module", "inputs", "executions", "refused", "seconds", "findings"
    );
    let mut clean = true;
    for module in &modules {
        let policy = olm_guard_fuzz::load(&runtime, &args.dist, module)?;
        let seeds = olm_guard_fuzz::seeds(&args.testdata, module)?;
        let budget = Budget {
            inputs: args.iterations,
            executions: args.executions,
        };
        let bar = progress_bar(module, &budget, args.quiet);
        let report = olm_guard_fuzz::run_with_progress(&policy, &seeds, budget, args.seed, |r| {
            if r.inputs % 256 == 0 {
                bar.set_position(r.executions.max(r.inputs));
                bar.set_message(format!("{} findings", r.findings.len()));
            }
        });
        bar.finish_and_clear();
        println!(
            "{:<24} {:>10} {:>10} {:>10} {:>10.1} {:>9}",
            module,
            report.inputs,
            report.executions,
            report.refused_snapshots,
            report.elapsed.as_secs_f64(),
            report.findings.len()
        );
        for (index, finding) in report.findings.iter().enumerate() {
            eprintln!(
                "  finding {index}: {} (from {})",
                finding.property,
                finding.origin.display()
            );
            if let Some(dir) = &args.findings {
                olm_guard_fuzz::write_finding(&dir.join(module).join(index.to_string()), finding)?;
            }
        }
        clean &= report.findings.is_empty();
    }
    Ok(clean)
}

/// A bar over the larger of the budget's two counts. indicatif draws it only
/// when stderr is a terminal, so CI logs get the summary table alone.
fn progress_bar(module: &str, budget: &Budget, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(budget.inputs.max(budget.executions));
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix:<24} {wide_bar} {pos}/{len} {per_sec} eta {eta} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(module.to_string());
    bar
}
