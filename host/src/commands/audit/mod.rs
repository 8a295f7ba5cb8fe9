//! `olm-guard audit`: what in a cluster snapshot breaks the policies today,
//! evaluated as Kubewarden's audit scanner evaluates stored objects
//! (docs/audit.md).

mod engine;
mod html;
mod report;

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use crate::findings::{Finding, Outcome, table};
use crate::limits::LimitArgs;
use crate::live::{self, LiveArgs, LiveContext, Session, Wanted};
use crate::modules::{self, ALL, DistArgs};
use crate::output::{count, one_line, write_json, write_yaml};
use crate::registry::RegistryArgs;
use engine::{Audit, Progress, Requester};

/// What needs the permissions of writing reports, as said when they are
/// missing.
const WRITE_REPORTS: &str = "--write-reports";

/// Exit codes, as `--help` lists them.
const EXIT_VIOLATION: u8 = 1;
const EXIT_UNUSABLE: u8 = 2;

#[derive(Args)]
#[command(after_long_help = concat!("\
Examples:
  olm-guard audit                                   # the cluster of the current kubeconfig context
  olm-guard audit og-intersection catalog-union --context prod   # two modules, not all
  olm-guard audit --context prod --chunk-size 100 -o json
  olm-guard audit --kubeconfig k.yaml --cluster rbac.yaml   # rbac.yaml for kinds the server lacks
  olm-guard audit --cluster cluster.yaml
  kubectl get catalogsources,operatorgroups,clusterserviceversions -A -o yaml > olm.yaml
  kubectl get clusterobjectsets,clusterroles,clusterrolebindings,rolebindings,roles -A -o yaml > rest.yaml
  olm-guard audit --cluster olm.yaml --cluster rest.yaml --as alice --as-group team-a
  olm-guard audit --cluster olm.yaml --settings catalog-union=cu.yaml -o json
  olm-guard audit --cluster olm.yaml -o html > audit.html
  olm-guard audit --cluster olm.yaml -o report | kubectl apply -f -
  olm-guard audit --cluster olm.yaml -o report --report-kind policyreport
  olm-guard audit --context prod --write-reports   # Report/ClusterReport objects in the cluster
  kubectl get reports,clusterreports -A -l app.kubernetes.io/managed-by=olm-guard

What is audited: without --cluster, or with --kubeconfig or --context, a
live cluster (the kubeconfig resolved as kubectl resolves it): every kind the
modules' rules cover is listed page by page (--chunk-size), and the modules'
lookups are answered by the API server, as policy-server answers them; the
objects of --cluster files complete it with the kinds the server does not
serve. With --cluster alone, the files. A list or lookup that fails (the
server stopped, credentials refused, a timeout) stops the audit with exit 2:
no report is printed as complete.

Which modules: the MODULEs named (names in the module directory, .wasm paths
or registry:// references), by default every module in the module directory:
--dist DIR, else $OLM_GUARD_DIST, else ./dist when it holds modules, else the
modules installed with olm-guard (<prefix>/share/olm-guard/modules). Which
apply to an object: those whose metadata rules cover a CREATE of the
object's kind. Modules with backgroundAudit: true are evaluated as
Kubewarden's audit scanner does. Modules with backgroundAudit: false decide
by who creates the object: with --as they are evaluated as that user;
without it, a denial that holds for every requester is still a `fail`, and
anything else is a `skip` saying why. A snapshot document that cannot be
read is an `error` result naming its file and document; a --cluster or
--api-resources file that holds no object stops the audit (exit 2) unless
--allow-empty says an empty cluster is meant (an empty live cluster is
audited as it is).

Reports in the cluster (--write-reports): as Kubewarden's audit scanner
writes them, one Report per audited namespaced object (in its namespace)
and one ClusterReport per cluster-scoped object, named after the object's
uid and owned by it, labelled app.kubernetes.io/managed-by=olm-guard and
olm-guard.io/audit-run=<this audit>; an existing report of that name is
overwritten, and the reports of earlier audits this one did not write are
deleted. The kubeconfig's user needs get, list, create, update and
deletecollection on reports and clusterreports (openreports.io), asked
before the audit starts; when the audit fails, nothing is written.

What the cluster manages itself is left out: Kubernetes' bootstrap RBAC
(label kubernetes.io/bootstrapping: admin, edit, view, ...) and objects named
system:*, which nobody creates through admission; how many is said, and
--include-system audits them. The table sums skips up by reason, one line
each with its count (-o json lists every result).

Needs from RBAC (a live cluster): list, at the cluster scope (every
namespace), on every kind the modules judge and read; for the six modules of
olm-guard:
", modules_kinds_help!(), "and, with --as, create on subjectaccessreviews.authorization.k8s.io for the
modules that call can_i (aggregation-escalation, group-authorization,
scope-rbac); without --as they create none. Each permission is checked first
(SelfSubjectAccessReviews, as `kubectl auth can-i` asks), and every one
missing is named at once, with the modules that can be audited without it.

Exit codes:
  0  the audit ran; nothing failed, or something did without --fail-on-deny
  1  --fail-on-deny, and at least one result is fail or error
  2  the audit could not run: a file or module that cannot be read, an
     empty --cluster file (without --allow-empty), settings a module
     refuses, a --settings for no module, a cluster that cannot be read
     (kubeconfig, connection, credentials, timeout), a permission the
     kubeconfig's user lacks (each named), or invalid arguments"))]
pub struct AuditArgs {
    /// The modules to audit with: names in the module directory (--dist),
    /// .wasm files or registry references; `all` (the default) for every
    /// module in the module directory.
    #[arg(value_name = "MODULE")]
    pub modules: Vec<String>,
    #[command(flatten)]
    pub dist: DistArgs,
    /// The module directory, or one module file (an older spelling of
    /// --dist and MODULE, kept for scripts).
    #[arg(long, value_name = "PATH", hide = true, conflicts_with_all = ["dist", "modules"])]
    pub policies: Option<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Cluster snapshot: multi-document YAML or a List (`kubectl get ... -A
    /// -o yaml`); repeatable. With a live cluster, it completes it with the
    /// kinds the server does not serve.
    #[arg(long, value_name = "FILE")]
    pub cluster: Vec<PathBuf>,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Which kinds are cluster-scoped: `kubectl api-resources -o wide`
    /// output or a YAML list of `{apiVersion, kind, namespaced}`.
    #[arg(long, value_name = "FILE")]
    pub api_resources: Option<PathBuf>,
    /// Accept a --cluster or --api-resources file that holds no object (an
    /// empty cluster is meant); without it such a file is an error, as an
    /// empty file is most often a `kubectl get` that failed.
    #[arg(long)]
    pub allow_empty: bool,
    /// Policy settings, JSON or YAML: MODULE=FILE (repeatable), or FILE
    /// when one module is audited.
    #[arg(long, value_name = "[MODULE=]FILE")]
    pub settings: Vec<String>,
    /// Evaluate as this user (the requester of the synthesised CREATEs).
    #[arg(long = "as", value_name = "USER")]
    pub as_user: Option<String>,
    /// A group of the --as user; repeatable.
    #[arg(long = "as-group", value_name = "GROUP", requires = "as_user")]
    pub as_groups: Vec<String>,
    /// Output format.
    #[arg(short, long, value_name = "FORMAT", default_value = "table", value_parser = crate::output::format::<Output>())]
    pub output: Output,
    /// With `-o report` and --write-reports: openreports.io/v1alpha1
    /// Report/ClusterReport (the default), or wgpolicyk8s.io/v1alpha2
    /// PolicyReport/ClusterPolicyReport; refused with any other output.
    #[arg(long, value_enum)]
    pub report_kind: Option<ReportKind>,
    /// Write the results into the live cluster as report objects
    /// (--report-kind), as Kubewarden's audit scanner does: one per audited
    /// object, created or overwritten in place; then the reports an earlier
    /// audit wrote and this one did not (their objects gone) are deleted.
    /// Nothing is written when the audit fails.
    #[arg(long)]
    pub write_reports: bool,
    /// In the table, list passing results too (JSON, HTML and reports
    /// always hold every result).
    #[arg(long)]
    pub show_pass: bool,
    /// Audit the objects the cluster manages itself too: Kubernetes'
    /// bootstrap RBAC (label kubernetes.io/bootstrapping: admin, edit,
    /// view, ...) and objects named system:*, left out otherwise (their
    /// number is said).
    #[arg(long)]
    pub include_system: bool,
    /// Exit 1 when a result is fail or error, as `run --fail-on-deny`.
    // `--fail-on-violation`, this command's spelling before, is read too.
    #[arg(long, alias = "fail-on-violation")]
    pub fail_on_deny: bool,
    /// Give every evaluation its own module instance, as policy-server does
    /// per request, instead of evaluating each module's objects in batches
    /// that decode every list once (same results, slower on large snapshots).
    #[arg(long)]
    pub no_batch: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// The results by object, skips summed up by reason, and the counts
    /// per policy.
    Table,
    /// The same table (`text` is the table here, as `run`'s `text` is
    /// with several modules).
    Text,
    /// One document: the summary and every result.
    Json,
    /// The same document as YAML.
    Yaml,
    /// One self-contained HTML page.
    Html,
    /// Report CRs (--report-kind), for kubectl apply.
    Report,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportKind {
    Openreports,
    Policyreport,
}

pub fn audit(args: AuditArgs) -> anyhow::Result<ExitCode> {
    // Exit 1 is kept for violations, so anything that stops the audit is 2.
    match run(&args) {
        Ok(code) => Ok(code),
        // The reader of stdout left (`| head`): main ends quietly.
        Err(e) if crate::output::is_broken_pipe(&e) => Err(e),
        Err(e) => {
            eprintln!("olm-guard: {}", one_line(&format!("{e:#}")));
            Ok(ExitCode::from(EXIT_UNUSABLE))
        }
    }
}

fn run(args: &AuditArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    // A cluster that cannot be reached, or files that cannot be read, are
    // said before the modules compile.
    if args.report_kind.is_some() && args.output != Output::Report && !args.write_reports {
        anyhow::bail!(
            "--report-kind chooses the kind of the reports -o report prints and --write-reports \
             writes, and this audit does neither: add -o report (or --write-reports), or drop \
             --report-kind"
        );
    }
    let report_kind = args.report_kind.unwrap_or(ReportKind::Openreports);
    let live_cluster = args.live.given() || args.cluster.is_empty();
    if args.write_reports && !live_cluster {
        anyhow::bail!(
            "--write-reports writes into a live cluster, and --cluster alone audits files: add \
             --kubeconfig or --context (the files then complete the cluster), or print the \
             reports with -o report"
        );
    }
    let (session, files) = if live_cluster {
        (Some(args.live.session()?), None)
    } else {
        let files = engine::load_snapshot(
            &args.cluster,
            args.api_resources.as_deref(),
            args.allow_empty,
        )?;
        (None, Some(files))
    };
    // Where the reports go, and whether they may be written there, before
    // any work.
    let report_target = match (&session, args.write_reports) {
        (Some(session), true) => {
            let (api_version, namespaced, cluster) = report::kinds(report_kind);
            Some(session.report_target(api_version, (namespaced, cluster))?)
        }
        _ => None,
    };
    let modules = modules_of(args)?;
    let names: Vec<String> = modules.iter().map(|(name, _)| name.clone()).collect();
    let settings = {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        crate::settings::by_module(&args.settings, &names)?
    };
    let runtime = args.limits.runtime()?;
    // Read before `modules` moves into the compilation below.
    let metadata = if session.is_some() {
        engine::metadata_of(&modules)?
    } else {
        Vec::new()
    };
    let load = || engine::load_policies(&runtime, modules, settings);
    let requester = Requester {
        user: args.as_user.clone(),
        groups: args.as_groups.clone(),
    };
    let mut live_context = None;
    let audit = if let Some(session) = &session {
        // Every permission the audit needs is checked before anything is
        // listed, and all those missing are named at once.
        let modules: Vec<(&str, &olm_guard_runtime::Metadata)> = names
            .iter()
            .map(String::as_str)
            .zip(metadata.iter())
            .collect();
        let judged = judged_kinds(session, &metadata)?;
        check_access(args, session, &modules, &judged, report_target.as_ref())?;
        // The cluster is listed while the modules compile: each takes a
        // while, and they need nothing of each other (the kinds come from
        // the metadata, read without compiling).
        let (policies, lists) = std::thread::scope(|scope| {
            let listing = scope.spawn(|| {
                live::read(session, &judged, args.live.chunk_size)
                    .map(|lists| (judged.clone(), lists))
            });
            let policies = load();
            let lists = listing
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("listing the cluster panicked")));
            (policies, lists)
        });
        let (audit, context) = read_live(args, session, policies?, lists?, requester)?;
        live_context = Some(context);
        audit
    } else {
        let policies = load()?;
        let (snapshot, load_findings) = files.unwrap_or_default();
        let snapshot = Arc::new(snapshot);
        Audit {
            context: snapshot.clone(),
            snapshot,
            load_findings,
            policies,
            requester,
            batched: !args.no_batch,
            include_system: args.include_system,
        }
    };
    let findings = audit.run(&progress_bar());
    let left_out = audit.left_out();
    if let Some(failure) = live_context.as_ref().and_then(LiveContext::failure) {
        anyhow::bail!("{failure}; the audit is incomplete, so no report is printed");
    }
    let run_id = report::run_id();
    // Built once: the reports written into the cluster and the ones printed
    // are the same objects, down to the timestamp (two builds a second
    // apart would differ).
    let built = std::cell::OnceCell::new();
    let reports = || built.get_or_init(|| report::reports(&audit, &findings, report_kind, &run_id));
    if let (Some(session), Some(target)) = (&session, &report_target) {
        let reports = reports();
        let owner = format!("{}={}", report::OWNER.0, report::OWNER.1);
        let run = format!("{}={run_id}", report::RUN_LABEL);
        let written = session.write_reports(target, reports, &owner, &run)?;
        eprintln!(
            "olm-guard audit: wrote {} into {} ({} created, {} updated); deleted {} of an earlier \
             audit",
            count(reports.len(), "report"),
            session.server(),
            written.created,
            written.updated,
            written.deleted
        );
    }
    let elapsed = started.elapsed();

    let mut out = std::io::stdout().lock();
    match args.output {
        Output::Table | Output::Text => {
            let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            let names: Vec<&str> = audit
                .policies
                .iter()
                .map(|p| p.module.name.as_str())
                .collect();
            table::write(
                &mut out,
                &names,
                &findings,
                args.show_pass,
                table::Skips::ByReason,
                colour,
            )?;
            if left_out > 0 {
                writeln!(out, "\n{}", left_out_line(left_out))?;
            }
        }
        Output::Json => write_json(&mut out, &to_json(&audit, &findings))?,
        Output::Yaml => write_yaml(&mut out, &to_json(&audit, &findings))?,
        Output::Html => html::write(&mut out, &audit, &findings)?,
        Output::Report => report::write(&mut out, reports())?,
    }
    out.flush()?;
    if left_out > 0 && !matches!(args.output, Output::Table | Output::Text) {
        eprintln!("olm-guard: note: {}", left_out_line(left_out));
    }
    let counts = counts(&findings);
    eprintln!(
        "olm-guard audit: {}, {} ({}) in {:.2?} on {} threads",
        count(audit.snapshot.len(), "object"),
        count(findings.len(), "result"),
        Outcome::ALL
            .iter()
            .map(|o| format!("{} {}", counts.get(o).copied().unwrap_or(0), o.word()))
            .collect::<Vec<_>>()
            .join(", "),
        elapsed,
        rayon::current_num_threads(),
    );
    let violated = findings
        .iter()
        .any(|f| matches!(f.result, Outcome::Fail | Outcome::Error));
    Ok(if args.fail_on_deny && violated {
        ExitCode::from(EXIT_VIOLATION)
    } else {
        ExitCode::SUCCESS
    })
}

/// The modules audited with: the MODULEs, every module in the module
/// directory without any, or the older `--policies PATH` (a directory, or
/// one module file).
fn modules_of(args: &AuditArgs) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let (names, dist) = match &args.policies {
        Some(path) if path.is_dir() => (
            vec![ALL.to_string()],
            DistArgs {
                dist: Some(path.clone()),
            },
        ),
        Some(path) => (vec![path.display().to_string()], args.dist.clone()),
        None if args.modules.is_empty() => (vec![ALL.to_string()], args.dist.clone()),
        None => (args.modules.clone(), args.dist.clone()),
    };
    modules::named(&names, &dist, &args.registry)
}

/// The kinds a live audit judges, and each one's objects as listed.
type Listed = (Vec<live::Kind>, Vec<(live::Kind, Vec<Value>)>);

/// Every kind the modules judge (from their metadata) that the server
/// serves; the others are said on stderr.
fn judged_kinds(
    session: &Session,
    metadata: &[olm_guard_runtime::Metadata],
) -> anyhow::Result<Vec<live::Kind>> {
    let metadata: Vec<&olm_guard_runtime::Metadata> = metadata.iter().collect();
    let (judged, wildcards) = live::kinds_judged(&metadata);
    for rule in wildcards {
        eprintln!(
            "olm-guard: note: a rule covers {rule}, which names no kind to list: audit those \
             objects from a file (--cluster)"
        );
    }
    let wanted: Vec<Wanted> = judged
        .into_iter()
        .map(|(api_version, plural)| Wanted::Resource(api_version, plural))
        .collect();
    let (kinds, missing) = live::resolve(session, &wanted)?;
    if !missing.is_empty() {
        eprintln!(
            "olm-guard: note: the API server {} does not serve {missing}: there is none of them to audit",
            session.server()
        );
    }
    Ok(kinds)
}

/// Refuses, naming every one at once, when the kubeconfig's user lacks a
/// permission the audit needs: list on every kind judged (`judged`) and
/// read by the `modules` (name, metadata), and, with --as, create
/// subjectaccessreviews for the modules that call can_i (without --as they
/// are evaluated as `system:masters`, whom every check allows, and need no
/// review: [`engine::PrivilegedGroup`]); and what writing the reports
/// needs with --write-reports. The modules whose needs are all
/// granted, and those that never call can_i, are named as what can still
/// run.
fn check_access(
    args: &AuditArgs,
    session: &Session,
    modules: &[(&str, &olm_guard_runtime::Metadata)],
    judged: &[live::Kind],
    reports: Option<&live::ReportTarget>,
) -> anyhow::Result<()> {
    let mut needs = Vec::new();
    for kind in reports.iter().flat_map(|target| &target.kinds) {
        needs.extend(live::Permission::write_reports(kind, WRITE_REPORTS));
    }
    for (name, metadata) in modules {
        let (covered, _) = live::kinds_judged(&[*metadata]);
        for kind in judged {
            if covered
                .iter()
                .any(|(v, plural)| *v == kind.api_version && *plural == kind.plural)
            {
                needs.push(live::Permission::list(kind, format!("judged by {name}")));
            }
        }
        for (api_version, kind) in live::kinds_read(&[*metadata]) {
            if let Some(kind) = session.kind(&api_version, &kind)? {
                needs.push(live::Permission::list(&kind, format!("read by {name}")));
            }
        }
        if let Some(user) = &args.as_user
            && live::calls_can_i(metadata)
        {
            needs.push(live::Permission::create_subject_access_reviews(format!(
                "can_i for --as {user} by {name}"
            )));
        }
    }
    let needs = live::merge(needs);
    let Some(missing) = live::missing(session, &needs) else {
        return Ok(());
    };
    if missing.is_empty() {
        return Ok(());
    }
    // Each reason ends with the module's name (`judged by NAME`).
    let blocked = |name: &str| {
        missing.iter().any(|p| {
            p.needed_by
                .iter()
                .any(|why| why.ends_with(&format!(" {name}")))
        })
    };
    let runnable: Vec<&str> = modules
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| !blocked(name))
        .collect();
    let without_can_i: Vec<&str> = modules
        .iter()
        .filter(|(_, metadata)| !live::calls_can_i(metadata))
        .map(|(name, _)| *name)
        .collect();
    let mut line = live::missing_line(session, &missing);
    let for_reports = |p: &live::Permission| p.needed_by.iter().all(|why| why == WRITE_REPORTS);
    if missing.iter().all(for_reports) {
        anyhow::bail!(
            "{line}; nothing was written (the audit without --write-reports prints its reports \
             with -o report)"
        );
    }
    if runnable.is_empty() {
        line.push_str("; no module can be audited without them");
    } else {
        line.push_str(&format!(
            "; the modules that need none of them can be audited alone: olm-guard audit {}",
            runnable.join(" ")
        ));
    }
    if missing.iter().any(|p| p.resource == "subjectaccessreviews") {
        // The modules without can_i are named once: above, when they are
        // exactly the ones that can run.
        if without_can_i != runnable {
            line.push_str(&format!(
                "; modules that run without can_i: {}",
                if without_can_i.is_empty() {
                    "none".to_string()
                } else {
                    without_can_i.join(", ")
                }
            ));
        }
        line.push_str(
            "; without --as, the modules that call can_i are judged for every requester and \
             create no SubjectAccessReview",
        );
    }
    anyhow::bail!("{line}")
}

/// The audit of a live cluster: the kinds the modules judge, as listed,
/// completed by the `--cluster` files' objects of kinds the server does not
/// serve; the lookups answered by the server (and those files).
fn read_live(
    args: &AuditArgs,
    session: &Session,
    policies: Vec<engine::AuditPolicy>,
    (kinds, lists): Listed,
    requester: Requester,
) -> anyhow::Result<(Audit, LiveContext)> {
    let (files, mut load_findings) = if args.cluster.is_empty() {
        (None, Vec::new())
    } else {
        let (files, findings) = engine::load_snapshot(
            &args.cluster,
            args.api_resources.as_deref(),
            args.allow_empty,
        )?;
        (Some(files), findings)
    };
    let mut snapshot = olm_guard_snapshot::Snapshot::new();
    if let Some(path) = &args.api_resources {
        snapshot.add_api_resources(crate::cluster::read_api_resources(path, args.allow_empty)?);
    }
    // The server's discovery says the scope of what it serves.
    snapshot.add_api_resources(live::api_resources(&kinds));
    let server = session.server();
    let at = olm_guard_snapshot::Location {
        source: server.clone(),
        ..Default::default()
    };
    let unserved = match &files {
        Some(files) => live::unserved_objects(session, files)?,
        None => Vec::new(),
    };
    let context = session.context(files);
    let mut located: Vec<(olm_guard_snapshot::Location, Value)> = Vec::new();
    for (kind, objects) in lists {
        // The lookups of these kinds are answered from this very read.
        context.seed(&kind, &objects)?;
        located.extend(objects.into_iter().map(|object| (at.clone(), object)));
    }
    located.extend(unserved);
    let warnings = snapshot.add_located(located, olm_guard_snapshot::LoadOptions::LENIENT)?;
    load_findings.extend(warnings.into_iter().map(|warning| Finding {
        object: None,
        source: warning.error.at.to_string(),
        policy: crate::findings::SNAPSHOT_POLICY.into(),
        result: Outcome::Error,
        message: warning.to_string(),
    }));
    Ok((
        Audit {
            snapshot: Arc::new(snapshot),
            // A requester-free evaluation's can_i (as system:masters) is
            // answered here, so a list-only auditor gets its report.
            context: Arc::new(engine::PrivilegedGroup(context.cluster())),
            load_findings,
            policies,
            requester,
            batched: !args.no_batch,
            include_system: args.include_system,
        },
        context,
    ))
}

/// What the audit says of the objects it left out: how many, which, and the
/// flag that judges them.
fn left_out_line(left_out: usize) -> String {
    format!(
        "{} the cluster manages itself (label kubernetes.io/bootstrapping, or a system: name) \
         left out; --include-system audits them",
        count(left_out, "object")
    )
}

/// How many results of each kind.
fn counts(findings: &[Finding]) -> BTreeMap<Outcome, usize> {
    let mut counts = BTreeMap::new();
    for finding in findings {
        *counts.entry(finding.result).or_insert(0) += 1;
    }
    counts
}

fn summary_json(findings: &[Finding]) -> Value {
    let counts = counts(findings);
    let mut summary = serde_json::Map::new();
    for outcome in Outcome::ALL {
        summary.insert(
            outcome.word().into(),
            json!(counts.get(&outcome).copied().unwrap_or(0)),
        );
    }
    Value::Object(summary)
}

/// `-o json`: the policies and how they were used, the summary, and every
/// result.
fn to_json(audit: &Audit, findings: &[Finding]) -> Value {
    let (objects, covered) = audit.coverage();
    json!({
        "objects": objects,
        "objectsAudited": covered,
        "systemObjectsLeftOut": audit.left_out(),
        "requester": audit.requester.user_info(),
        "policies": audit.policies.iter().map(|p| json!({
            "name": p.module.name,
            "backgroundAudit": p.module.metadata.background_audit,
            "severity": p.severity(),
            "category": p.category(),
            "summary": summary_json(&findings.iter().filter(|f| f.policy == p.module.name).cloned().collect::<Vec<_>>()),
        })).collect::<Vec<_>>(),
        "summary": summary_json(findings),
        "results": findings,
    })
}

/// A progress bar on stderr, only when stderr is a terminal and the audit
/// is large enough to wait for.
fn progress_bar() -> impl Fn(Progress) + Sync {
    let bar = indicatif::ProgressBar::hidden();
    let on_terminal = std::io::stderr().is_terminal();
    move |progress| match progress {
        Progress::Start(total) => {
            if on_terminal && total >= 500 {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                bar.set_length(total as u64);
                if let Ok(style) = indicatif::ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} evaluations, {per_sec}, {eta} left",
                ) {
                    bar.set_style(style);
                }
            }
        }
        Progress::Done => {
            bar.inc(1);
            if bar.length() == Some(bar.position()) {
                bar.finish_and_clear();
            }
        }
    }
}
