//! `olm-guard-reference-bench`: every policy module on olm-guard's host, a
//! fresh instance per evaluation (as policy-server evaluates), against
//! Kubewarden's reference waPC host (`wapc` + `wasmtime-provider`) with one
//! long-lived instance (as `kwctl bench` measures), in the same process and
//! the same run. Figures are the ours/reference ratio of medians: absolute
//! times depend on the machine, which the header names.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Parser, ValueEnum};
use serde_json::{Value, json};

use olm_guard_bench::{Samples, Workload, workloads};
use olm_guard_conformance::reference::typed_round_trip;
use olm_guard_conformance::{ReferenceHost, scenario};
use olm_guard_evaluator::input;
use olm_guard_evaluator::scenario::PolicyStore;
use olm_guard_runtime::{Limits, Runtime};
use olm_guard_snapshot::Snapshot;

/// Every module, in the order of the table: the three big workloads of
/// `olm-guard bench`, then a real scenario of `testdata/` for the others.
const MODULES: [&str; 6] = [
    "revision-uniqueness",
    "aggregation-escalation",
    "og-intersection",
    "catalog-union",
    "group-authorization",
    "scope-rbac",
];

/// The scenario of `testdata/<module>/` measured for the modules without a
/// big workload: admitted requests, so the whole rule runs.
const SCENARIOS: [(&str, &str); 3] = [
    ("catalog-union", "r2-image-source-accepted"),
    ("group-authorization", "authz-scoped-grant-allowed"),
    ("scope-rbac", "template-sample-edit-rules-allowed"),
];

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Output {
    Table,
    Json,
}

#[derive(Parser)]
#[command(
    name = "olm-guard-reference-bench",
    version,
    about = "Every module on olm-guard's host (a fresh instance per evaluation, as policy-server \
             evaluates) against Kubewarden's waPC host (wapc + wasmtime-provider, one long-lived \
             instance, as `kwctl bench` measures), and the ratio ours / reference.",
    after_help = "\
Both hosts run in this process on the same request, settings and snapshot;
host calls are answered from the snapshot through olm-guard's ContextHost on
both (a new one per evaluation). Before timing, both must reach the same
verdict (allowed or not). Evaluations alternate between the two hosts; the
table gives the medians (p50), the 90th percentiles and ours / reference of
the medians, against the goal of 1.0 or less (docs/performance.md). Figures from a debug
build are not representative: use a release build (`make bench`).

Inputs:
  revision-uniqueness     cos-10k: a ClusterObjectSet CREATE against 10,000 stored ones
  aggregation-escalation  rbac-5k: an aggregated ClusterRole CREATE, 5,000 roles + 5,000 bindings
  og-intersection         og-2k: an OperatorGroup CREATE among 2,000 groups over 5,000 namespaces
  catalog-union           testdata/catalog-union/r2-image-source-accepted
  group-authorization     testdata/group-authorization/authz-scoped-grant-allowed
  scope-rbac              testdata/scope-rbac/template-sample-edit-rules-allowed

Examples:
  cargo run --release -p olm-guard-conformance --bin olm-guard-reference-bench
  olm-guard-reference-bench --iterations 50 --dist dist
  olm-guard-reference-bench --module catalog-union --module scope-rbac -o json
  olm-guard-reference-bench --small --iterations 1 -o json   # a quick check of the path

Exit codes: 0 measured (whether or not the goal is met: speed is reported,
not asserted); 2 a module or input is missing or unreadable, a host failed,
the two hosts reached different verdicts, or an input's verdict was not the
expected one."
)]
struct Args {
    /// Evaluations on each host, after one warm-up each.
    #[arg(long, default_value_t = 20, value_name = "N")]
    iterations: usize,
    /// Where the modules (`<module>.wasm`) are.
    #[arg(long, default_value = "dist", value_name = "DIR")]
    dist: PathBuf,
    /// Where the scenarios (`<module>/<scenario>/`) are.
    #[arg(long, default_value = "testdata", value_name = "DIR")]
    testdata: PathBuf,
    /// Only this module (repeatable; default: all six).
    #[arg(long, value_name = "NAME")]
    module: Vec<String>,
    /// The three workloads at about a hundredth of their size: a quick
    /// check of the path, not figures to report.
    #[arg(long)]
    small: bool,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    output: Output,
}

/// One module's input.
struct Case {
    label: String,
    policy: &'static str,
    request: Value,
    settings: Value,
    snapshot: Arc<Snapshot>,
    expect_allowed: Option<bool>,
}

/// One module measured on both hosts.
struct Row {
    case: Case,
    allowed: bool,
    ours: Samples,
    reference: Samples,
}

impl Row {
    fn ratio(&self) -> f64 {
        let reference = self.reference.median().as_secs_f64();
        if reference == 0.0 {
            return f64::NAN;
        }
        self.ours.median().as_secs_f64() / reference
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("olm-guard-reference-bench: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &Args) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!(
            "olm-guard-reference-bench: warning: this is a debug build; its figures are not representative (use `make bench`)"
        );
    }
    for name in &args.module {
        if !MODULES.contains(&name.as_str()) {
            bail!("no module {name:?} ({})", MODULES.join(", "));
        }
    }
    let wanted: Vec<&'static str> = MODULES
        .into_iter()
        .filter(|m| args.module.is_empty() || args.module.iter().any(|w| w == m))
        .collect();
    for module in &wanted {
        let wasm = args.dist.join(format!("{module}.wasm"));
        if !wasm.is_file() {
            bail!("{} is missing: run make dist", wasm.display());
        }
    }

    // Named before the run, so the load average is the one it started in.
    let machine = machine();
    let runtime = Runtime::new(Limits::default())?;
    let mut store =
        PolicyStore::new(&runtime, args.dist.clone()).with_metadata_dir(policies_dir(&args.dist));
    let mut reference = ReferenceHost::new()?;
    let mut rows = Vec::new();
    for module in wanted {
        let case = case(module, args)?;
        eprintln!(
            "reference-bench: {module}: {} ({} objects), {} runs on each host",
            case.label,
            case.snapshot.len(),
            args.iterations.max(1)
        );
        let wasm = args.dist.join(format!("{module}.wasm"));
        rows.push(measure(
            &mut store,
            &mut reference,
            &wasm,
            case,
            args.iterations,
        )?);
    }
    match args.output {
        Output::Table => print_table(&rows, &machine, args.iterations),
        Output::Json => println!(
            "{}",
            serde_json::to_string_pretty(&to_json(&rows, &machine, args))?
        ),
    }
    Ok(())
}

/// The input of `module`.
fn case(module: &'static str, args: &Args) -> anyhow::Result<Case> {
    let workload = |workload: Workload, label: String| Case {
        label,
        policy: workload.policy,
        request: workload.request,
        settings: workload.settings,
        snapshot: Arc::new(workload.snapshot),
        expect_allowed: Some(workload.expect_allowed),
    };
    // The sizes of `olm-guard bench`'s workloads, or a hundredth of them.
    let scale = if args.small { 100 } else { 1 };
    match module {
        "revision-uniqueness" => {
            let n = 10_000 / scale;
            Ok(workload(
                workloads::cluster_object_sets(n),
                format!("cos-{}", size(n)),
            ))
        }
        "aggregation-escalation" => {
            let n = 5_000 / scale;
            Ok(workload(
                workloads::aggregation_rbac(n, n),
                format!("rbac-{}", size(n)),
            ))
        }
        "og-intersection" => {
            let (groups, namespaces) = (2_000 / scale, 5_000 / scale);
            Ok(workload(
                workloads::operator_groups(groups, namespaces),
                format!("og-{}", size(groups)),
            ))
        }
        _ => {
            let (_, scenario) = SCENARIOS
                .iter()
                .find(|(m, _)| *m == module)
                .with_context(|| format!("no input for module {module}"))?;
            scenario_case(module, &args.testdata.join(module).join(scenario))
        }
    }
}

/// `10k` for 10,000, `50` for 50.
fn size(n: usize) -> String {
    if n >= 1_000 && n.is_multiple_of(1_000) {
        format!("{}k", n / 1_000)
    } else {
        n.to_string()
    }
}

/// A scenario directory: request.json, optional settings.json and
/// cluster.yaml, and the verdict from expect.json.
fn scenario_case(policy: &'static str, dir: &Path) -> anyhow::Result<Case> {
    let request = scenario::request(dir)?;
    let settings = scenario::settings(dir)?;
    let snapshot = scenario::snapshot(dir)?;
    let expect = input::read_document(&dir.join("expect.json"))?;
    Ok(Case {
        label: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        policy,
        request,
        settings,
        snapshot: Arc::new(snapshot),
        expect_allowed: expect.get("allowed").and_then(Value::as_bool),
    })
}

/// Checks that both hosts reach the same verdict, then times `iterations`
/// evaluations on each, alternating.
fn measure(
    store: &mut PolicyStore,
    reference: &mut ReferenceHost,
    wasm: &Path,
    case: Case,
    iterations: usize,
) -> anyhow::Result<Row> {
    let policy = store.get(case.policy)?;
    let (request, settings, snapshot) = (&case.request, &case.settings, &case.snapshot);

    // Ours, as `olm-guard bench` (olm_guard_bench::measure) evaluates: the
    // settings checked once, then `Policy::validate`, which instantiates
    // the module afresh for every evaluation.
    policy
        .validate_settings(settings)
        .with_context(|| format!("{}: olm-guard's host", case.policy))?;
    // The reference: one instance for the settings and every evaluation.
    let instance = reference.instance(&policy, wasm)?;
    let settings_answer = instance.validate_settings(settings)?;
    if !settings_answer.valid {
        bail!(
            "{}: Kubewarden's waPC host refused the settings: {}",
            case.policy,
            settings_answer.message.unwrap_or_default()
        );
    }
    let (uid, typed) = typed_round_trip(request)?;

    let ours_verdict = policy
        .validate(request, settings, snapshot.clone())
        .with_context(|| format!("{}: olm-guard's host", case.policy))?
        .response;
    let reference_verdict =
        instance.validate(&uid, &typed, settings, policy.host(snapshot.clone()))?;
    if ours_verdict.allowed != reference_verdict.allowed {
        bail!(
            "{} on {}: the hosts disagree: olm-guard allowed={} ({:?}), Kubewarden's waPC host allowed={} ({:?})",
            case.policy,
            case.label,
            ours_verdict.allowed,
            ours_verdict.message(),
            reference_verdict.allowed,
            reference_verdict.message()
        );
    }
    if let Some(expected) = case.expect_allowed
        && expected != ours_verdict.allowed
    {
        bail!(
            "{} on {}: {}, expected {} ({:?})",
            case.policy,
            case.label,
            if ours_verdict.allowed {
                "allowed"
            } else {
                "denied"
            },
            if expected { "allowed" } else { "denied" },
            ours_verdict.message()
        );
    }

    let mut ours = Vec::with_capacity(iterations.max(1));
    let mut theirs = Vec::with_capacity(iterations.max(1));
    for _ in 0..iterations.max(1) {
        let start = Instant::now();
        std::hint::black_box(policy.validate(request, settings, snapshot.clone())?);
        ours.push(start.elapsed());
        let start = Instant::now();
        std::hint::black_box(instance.validate(
            &uid,
            &typed,
            settings,
            policy.host(snapshot.clone()),
        )?);
        theirs.push(start.elapsed());
    }
    Ok(Row {
        allowed: ours_verdict.allowed,
        case,
        ours: Samples::new(ours),
        reference: Samples::new(theirs),
    })
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn build() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

fn print_table(rows: &[Row], machine: &str, iterations: usize) {
    println!(
        "ours: olm-guard's host, a fresh instance per evaluation (as policy-server evaluates)"
    );
    println!(
        "reference: wapc + wasmtime-provider, one long-lived instance (as `kwctl bench` measures)"
    );
    println!(
        "machine: {machine}; {} build; {} runs on each host, alternating",
        build(),
        iterations.max(1)
    );
    println!(
        "{:<36} {:<24} {:>8} {:>8} {:>11} {:>11} {:>11} {:>11} {:>7} {:>6}",
        "input",
        "policy",
        "objects",
        "verdict",
        "ours p50",
        "ours p90",
        "ref p50",
        "ref p90",
        "ratio",
        "≤ 1.0"
    );
    for row in rows {
        println!(
            "{:<36} {:<24} {:>8} {:>8} {:>8.3} ms {:>8.3} ms {:>8.3} ms {:>8.3} ms {:>7.2} {:>6}",
            row.case.label,
            row.case.policy,
            row.case.snapshot.len(),
            if row.allowed { "allowed" } else { "denied" },
            ms(row.ours.median()),
            ms(row.ours.p90()),
            ms(row.reference.median()),
            ms(row.reference.p90()),
            row.ratio(),
            if row.ratio() <= 1.0 { "yes" } else { "no" },
        );
    }
    let met = rows.iter().filter(|r| r.ratio() <= 1.0).count();
    println!(
        "(ratio: ours p50 / reference p50; goal ≤ 1.0 met by {met} of {} modules)",
        rows.len()
    );
}

fn to_json(rows: &[Row], machine: &str, args: &Args) -> Value {
    json!({
        "machine": machine,
        "build": build(),
        "iterations": args.iterations.max(1),
        "ours": "olm-guard's host, a fresh instance per evaluation",
        "reference": "wapc + wasmtime-provider, one long-lived instance",
        "modules": rows.iter().map(|row| json!({
            "policy": row.case.policy,
            "input": row.case.label,
            "objects": row.case.snapshot.len(),
            "allowed": row.allowed,
            "ours_p50_ms": ms(row.ours.median()),
            "ours_p90_ms": ms(row.ours.p90()),
            "reference_p50_ms": ms(row.reference.median()),
            "reference_p90_ms": ms(row.reference.p90()),
            "ratio": row.ratio(),
            "goal_met": row.ratio() <= 1.0,
        })).collect::<Vec<_>>(),
    })
}

/// The machine as `olm-guard bench` names it (`<cores> cores, <CPU
/// model>`), and the load average when the run started.
fn machine() -> String {
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .map(|l| format!(", load average {l}"))
        .unwrap_or_default();
    format!("{}{load}", olm_guard_bench::machine())
}

/// `policies/` beside `dist/`, for modules without embedded metadata (as
/// `olm-guard bench` looks them up).
fn policies_dir(dist: &Path) -> PathBuf {
    dist.parent()
        .map_or_else(|| PathBuf::from("policies"), |p| p.join("policies"))
}
