//! `olm-guard test`: run scenario directories.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use olm_guard_evaluator::scenario::{self, PolicyStore};
use olm_guard_runtime::Runtime;

use crate::common::{LimitArgs, display, one_line, policies_dir, truncate};
use crate::session::SessionDirArgs;

#[derive(Args)]
pub struct TestArgs {
    /// Directories to search for scenarios (directories with expect.json).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where `<policy>.wasm` modules are.
    #[arg(long, default_value = "dist")]
    pub dist: PathBuf,
    /// `text`: a verdict table; `json`: every scenario's full result
    /// (response and patched object included) as one JSON document.
    #[arg(short, long, value_enum, default_value_t = TestOutput::Text)]
    pub output: TestOutput,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub sessions: SessionDirArgs,
}

/// How `test` reports.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TestOutput {
    Text,
    Json,
}

pub fn test(args: TestArgs) -> anyhow::Result<ExitCode> {
    let dirs = scenario::discover(&args.dirs)?;
    if dirs.is_empty() {
        anyhow::bail!("no scenarios (directories with expect.json) below the given directories");
    }
    let sessions = args.sessions.sessions()?;
    let runtime = Runtime::new(args.limits.limits())?;
    let mut store =
        PolicyStore::new(&runtime, args.dist.clone()).with_metadata_dir(policies_dir(&args.dist));
    let outcomes: Vec<scenario::Outcome> = dirs
        .iter()
        .map(|dir| scenario::run_with(dir, &mut store, &sessions))
        .collect();
    let failed = outcomes.iter().filter(|o| !o.passed()).count();
    let passed = outcomes.len() - failed;
    match args.output {
        TestOutput::Text => print_table(&outcomes),
        TestOutput::Json => {
            let results: Vec<serde_json::Value> = outcomes.iter().map(outcome_json).collect();
            let document = serde_json::json!({
                "results": results,
                "passed": passed,
                "failed": failed,
            });
            println!("{}", serde_json::to_string_pretty(&document)?);
        }
    }
    // The summary CI systems read; on stderr when stdout is data.
    let summary = format!("{passed} passed, {failed} failed");
    match args.output {
        TestOutput::Text => println!("{summary}"),
        TestOutput::Json => eprintln!("{summary}"),
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub fn print_table(outcomes: &[scenario::Outcome]) {
    let width = outcomes
        .iter()
        .map(|o| display(&o.dir).len())
        .max()
        .unwrap_or(0)
        .min(70);
    for outcome in outcomes {
        let status = if outcome.passed() { "PASS" } else { "FAIL" };
        println!(
            "{status}  {:<width$}  {:<8}  {}",
            display(&outcome.dir),
            outcome.verdict,
            truncate(&one_line(&outcome.message), 100),
        );
        for failure in &outcome.failures {
            println!("      - {}", one_line(failure));
        }
    }
}

/// One scenario's result as data: what was expected to hold, what failed,
/// and the full response with the patch applied.
pub fn outcome_json(outcome: &scenario::Outcome) -> serde_json::Value {
    serde_json::json!({
        "scenario": display(&outcome.dir),
        "policy": outcome.policy,
        "passed": outcome.passed(),
        "verdict": outcome.verdict,
        "message": outcome.message,
        "failures": outcome.failures,
        "response": outcome.response,
        "patchedObject": outcome.patched_object,
    })
}
