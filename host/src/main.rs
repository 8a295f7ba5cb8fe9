//! `olm-guard`: evaluate Kubewarden policy modules against AdmissionReviews
//! and cluster snapshots, run scenario suites, and annotate modules.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use olm_guard_bench::{self as bench, Workload};
use olm_guard_evaluator::Policy;
use olm_guard_evaluator::input as admission;
use olm_guard_evaluator::scenario::{self, PolicyStore};
use olm_guard_runtime::{Limits, Metadata, Runtime};
use olm_guard_snapshot::{ApiResources, LoadOptions, Snapshot};

#[derive(Parser)]
#[command(
    name = "olm-guard",
    version,
    about = "Run olm-guard (Kubewarden waPC) policy modules locally"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate one request; prints the AdmissionReview response.
    Run(RunArgs),
    /// Run every scenario directory below the given ones.
    Test(TestArgs),
    /// Measure modules against the same rules compiled natively (ratio of medians).
    Bench(BenchArgs),
    /// Embed metadata.yml into a module (`io.kubewarden.metadata`), as `kwctl annotate`.
    Annotate(AnnotateArgs),
}

#[derive(Args)]
struct LimitArgs {
    /// Memory cap for a module instance, in MiB.
    #[arg(long, default_value_t = 256)]
    memory_limit_mib: usize,
    /// Execution deadline for one call, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    timeout_ms: u64,
}

impl LimitArgs {
    fn limits(&self) -> Limits {
        Limits {
            memory_bytes: self.memory_limit_mib << 20,
            deadline: Duration::from_millis(self.timeout_ms),
        }
    }
}

/// The cluster snapshot an evaluation answers host calls from.
#[derive(Args)]
struct SnapshotArgs {
    /// Cluster snapshot: multi-document YAML or a List (`kubectl get ... -o
    /// yaml`); repeatable.
    #[arg(long)]
    cluster: Vec<PathBuf>,
    /// Which kinds are cluster-scoped: `kubectl api-resources -o wide` output
    /// or a YAML list of `{apiVersion, kind, namespaced}`; layered over the
    /// built-in table.
    #[arg(long, value_name = "FILE")]
    api_resources: Option<PathBuf>,
    /// Report unreadable snapshot objects on stderr and go on without them,
    /// instead of stopping at the first.
    #[arg(long)]
    lenient: bool,
}

impl SnapshotArgs {
    /// The snapshot of every `--cluster` file; problems are errors, or
    /// warnings on stderr with `--lenient`.
    fn load(&self) -> anyhow::Result<Snapshot> {
        let mut snapshot = Snapshot::new();
        if let Some(path) = &self.api_resources {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let table = ApiResources::parse(&text).with_context(|| path.display().to_string())?;
            snapshot.add_api_resources(table);
        }
        let options = if self.lenient {
            LoadOptions::LENIENT
        } else {
            LoadOptions::STRICT
        };
        for path in &self.cluster {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let source = path.display().to_string();
            for warning in snapshot.add_source(&source, &text, options)? {
                eprintln!("olm-guard: warning: {warning}");
            }
        }
        Ok(snapshot)
    }
}

#[derive(Args)]
struct RunArgs {
    /// The policy module (.wasm).
    #[arg(long)]
    policy: PathBuf,
    /// AdmissionReview or AdmissionRequest, JSON or YAML.
    #[arg(long)]
    request: PathBuf,
    /// Policy settings, JSON or YAML.
    #[arg(long)]
    settings: Option<PathBuf>,
    #[command(flatten)]
    snapshot: SnapshotArgs,
    /// metadata.yml to use instead of the module's embedded metadata.
    #[arg(long)]
    metadata: Option<PathBuf>,
    /// Print the module's host calls to stderr.
    #[arg(long)]
    trace: bool,
    #[command(flatten)]
    limits: LimitArgs,
}

#[derive(Args)]
struct TestArgs {
    /// Directories to search for scenarios (directories with expect.json).
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Where `<policy>.wasm` modules are.
    #[arg(long, default_value = "dist")]
    dist: PathBuf,
    /// `text`: a verdict table; `json`: every scenario's full result
    /// (response and patched object included) as one JSON document.
    #[arg(short, long, value_enum, default_value_t = TestOutput::Text)]
    output: TestOutput,
    #[command(flatten)]
    limits: LimitArgs,
}

/// How `test` reports.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum TestOutput {
    Text,
    Json,
}

#[derive(Args)]
struct BenchArgs {
    /// Built-in large inputs: cos-10k, rbac-5k, og-2k, or all.
    #[arg(long, conflicts_with = "request")]
    workload: Option<String>,
    /// A module to measure on --request/--cluster instead of a workload.
    #[arg(long, requires = "request")]
    policy: Option<PathBuf>,
    #[arg(long)]
    request: Option<PathBuf>,
    #[arg(long)]
    settings: Option<PathBuf>,
    #[command(flatten)]
    snapshot: SnapshotArgs,
    /// Where workload modules (`<policy>.wasm`) are.
    #[arg(long, default_value = "dist")]
    dist: PathBuf,
    /// Evaluations each way.
    #[arg(long, default_value_t = 20)]
    iterations: usize,
    #[command(flatten)]
    limits: LimitArgs,
}

#[derive(Args)]
struct AnnotateArgs {
    /// The module to annotate.
    module: PathBuf,
    #[arg(short, long)]
    metadata: PathBuf,
    /// README to embed as `io.kubewarden.policy.usage`.
    #[arg(short, long)]
    usage: Option<PathBuf>,
    #[arg(short, long)]
    output: PathBuf,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Test(args) => test(args),
        Command::Bench(args) => bench(args),
        Command::Annotate(args) => annotate(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("olm-guard: {}", one_line(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The request, settings and snapshot files every evaluating command takes.
fn read_inputs(
    request: &Path,
    settings: Option<&Path>,
    snapshot: &SnapshotArgs,
) -> anyhow::Result<(serde_json::Value, serde_json::Value, Snapshot)> {
    let request = admission::admission_request(admission::read_document(request)?)
        .with_context(|| request.display().to_string())?;
    let settings = admission::settings_object(match settings {
        Some(path) => Some(admission::read_document(path)?),
        None => None,
    })
    .context("--settings")?;
    Ok((request, settings, snapshot.load()?))
}

fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let (request, settings, snapshot) =
        read_inputs(&args.request, args.settings.as_deref(), &args.snapshot)?;
    let runtime = Runtime::new(args.limits.limits())?;
    let policy = Policy::load(&runtime, &args.policy, args.metadata.as_deref())?;
    if policy.metadata.is_none() {
        eprintln!(
            "olm-guard: warning: {} has no embedded metadata and no --metadata: it may read no cluster resources",
            args.policy.display()
        );
    }
    policy.validate_settings(&settings)?;
    let evaluation = policy
        .validate(&request, &settings, Arc::new(snapshot))
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.policy.display()))?;
    if args.trace {
        for call in &evaluation.calls {
            match &call.outcome {
                Ok(bytes) => eprintln!(
                    "host call {} {} -> {bytes} bytes",
                    call.capability, call.payload
                ),
                Err(e) => eprintln!(
                    "host call {} {} -> error: {e}",
                    call.capability, call.payload
                ),
            }
        }
    }
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &evaluation.response.into_review())?;
    writeln!(out)?;
    Ok(ExitCode::SUCCESS)
}

fn test(args: TestArgs) -> anyhow::Result<ExitCode> {
    let dirs = scenario::discover(&args.dirs)?;
    if dirs.is_empty() {
        anyhow::bail!("no scenarios (directories with expect.json) below the given directories");
    }
    let runtime = Runtime::new(args.limits.limits())?;
    let mut store =
        PolicyStore::new(&runtime, args.dist.clone()).with_metadata_dir(policies_dir(&args.dist));
    let outcomes: Vec<scenario::Outcome> = dirs
        .iter()
        .map(|dir| scenario::run(dir, &mut store))
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

fn print_table(outcomes: &[scenario::Outcome]) {
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
fn outcome_json(outcome: &scenario::Outcome) -> serde_json::Value {
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

/// `policies/` beside `dist/`: where a project's metadata.yml files are,
/// for modules built without embedded metadata.
fn policies_dir(dist: &Path) -> PathBuf {
    dist.parent()
        .map_or_else(|| PathBuf::from("policies"), |p| p.join("policies"))
}

fn display(dir: &Path) -> String {
    dir.display().to_string()
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
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

fn annotate(args: AnnotateArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.metadata)
        .with_context(|| format!("cannot read {}", args.metadata.display()))?;
    let metadata =
        Metadata::from_yaml(&text).with_context(|| args.metadata.display().to_string())?;
    let wasm = std::fs::read(&args.module)
        .with_context(|| format!("cannot read {}", args.module.display()))?;
    // Like kwctl: ask the module for its protocol version; this also proves
    // the module loads and speaks waPC.
    let runtime = Runtime::new(Limits::default())?;
    let name = args.module.display().to_string();
    let policy = Policy::from_bytes(&runtime, &name, &wasm, Some(metadata.clone()))?;
    let usage = match &args.usage {
        Some(usage) => Some(
            std::fs::read_to_string(usage)
                .with_context(|| format!("cannot read {}", usage.display()))?,
        ),
        None => None,
    };
    let annotator = format!("olm-guard {}", env!("CARGO_PKG_VERSION"));
    let annotated = metadata.annotate(&wasm, policy.protocol_version()?, usage, &annotator)?;
    std::fs::write(&args.output, annotated)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    Ok(ExitCode::SUCCESS)
}
