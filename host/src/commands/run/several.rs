//! `olm-guard run` with several modules (`all`, or more than one): would
//! this install pass? Every document of the manifests is admitted in order,
//! as `kubectl apply -f` sends them, and goes only to the modules whose
//! metadata rules cover it, as policy-server's webhook configurations route
//! it. The sequence (routing, mutating modules first in name order, the
//! growing snapshot, bundles) is the evaluator's `preflight`; this is the
//! command line and the printing.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::Value;

use olm_guard_evaluator::preflight::{self, Module, Pair, PreflightError, Report, Unrouted};

use super::{RunArgs, RunOutput, one, show};
use crate::findings::{Finding, Outcome, Subject, table};
use crate::live::{self, Wanted};
use crate::modules::{self, ALL, Loaded};
use crate::output::{count, list, write_json, write_yaml, xml_escape};
use crate::{inputs, settings};

/// The policy column of an object no module applies to (counted nowhere).
const NO_MODULE: &str = "(none)";

/// Whether `run` takes this path: several modules, `all`, or an output only
/// it has.
pub fn applies(args: &RunArgs) -> bool {
    args.modules.len() > 1
        || args.modules.iter().any(|m| m == ALL)
        || args.bundle.is_some()
        || matches!(args.output, RunOutput::Table | RunOutput::Junit)
}

/// How many documents `args` give to evaluate (`--object`, then
/// `--old-object` alone counts one): several take the admission sequence
/// with one module as with several, so that each sees the ones before it.
pub fn documents_in(args: &RunArgs) -> anyhow::Result<usize> {
    if args.request.is_some() {
        return Ok(1);
    }
    let mut documents = 0;
    for path in &args.objects {
        documents += inputs::objects_of(path)?.len();
    }
    Ok(documents)
}

/// What a pair says, in the audit's words: a denial with code 500 (a
/// lookup failed) is an error.
fn outcome_of(pair: &Pair) -> Outcome {
    let code = pair.response.status.as_ref().and_then(|s| s.code);
    if !pair.response.allowed && code == Some(500) {
        Outcome::Error
    } else if !pair.response.allowed {
        Outcome::Fail
    } else if pair.warned() {
        Outcome::Warn
    } else {
        Outcome::Pass
    }
}

/// The table's message: the denial's first line; for an admission, the
/// mutation and the first warning.
fn summary(pair: &Pair) -> String {
    if !pair.response.allowed {
        let message = first_line(pair.response.message());
        return if message.is_empty() {
            "denied, with no message".into()
        } else {
            message
        };
    }
    let mut parts = Vec::new();
    let operations = pair
        .response
        .decoded_patch()
        .ok()
        .flatten()
        .map_or(0, |p| p.0.len());
    if operations > 0 {
        parts.push(format!(
            "mutated ({operations} patch operation{})",
            if operations == 1 { "" } else { "s" }
        ));
    }
    let warnings = pair.response.warnings.as_deref().unwrap_or_default();
    if let Some(first) = warnings.first() {
        let more = match warnings.len() {
            1 => String::new(),
            n => format!(" (+{} more warnings)", n - 1),
        };
        parts.push(format!("warning: {}{more}", first_line(first)));
    }
    parts.join("; ")
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").trim().to_string()
}

/// `run` with several modules: load, admit every document in order, print,
/// exit 1 with `--fail-on-deny` when a pair was denied.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    if args.request.is_some() {
        bail!(
            "--request takes one module; with several, give the objects (--object FILE) and each becomes the request the API server would send"
        );
    }
    if args.session.record.is_some() || args.session.replay.is_some() {
        bail!(
            "--record and --replay take one module and one evaluation; drop them, or run one module"
        );
    }
    if args.trace || args.metadata.is_some() {
        bail!(
            "{} follows one module on one document; the input holds several documents, which \
             are admitted in order as kubectl apply -f sends them: give one document",
            if args.trace { "--trace" } else { "--metadata" }
        );
    }
    let given = match &args.policy {
        Some(path) => vec![path.display().to_string()],
        None => args.modules.clone(),
    };
    let modules = modules::named(&given, &args.dist, &args.registry)?;
    let names: Vec<&str> = modules.iter().map(|(name, _)| name.as_str()).collect();
    let settings = settings::by_module(&args.settings, &names)?;
    let mut documents = Vec::new();
    for path in &args.objects {
        documents.extend(inputs::objects_of(path)?);
    }
    if let (Some(dir), Some(namespace)) = (&args.bundle, &args.namespace) {
        documents.extend(preflight::bundle_documents(dir, namespace)?);
    }
    let old = match &args.old_object {
        Some(path) => Some(inputs::old_object(path)?.1),
        None => None,
    };
    if documents.is_empty() {
        bail!(
            "no object to evaluate: give the manifests with --object FILE, or a bundle with --bundle DIR"
        );
    }
    let snapshot = args.snapshot.load()?;
    let runtime = args.limits.runtime()?;
    let mut policies = modules::load(&runtime, modules, settings)?;
    preflight::call_order(&mut policies, Loaded::as_module);
    // The cluster kubectl would choose (`run --help`), as with one module.
    let source = one::Source::of(&args)?;
    let snapshot = if source == one::Source::Live {
        live_snapshot(&args, &policies, &documents, snapshot)?
    } else {
        snapshot
    };
    let options = preflight::Options {
        namespace: args.namespace.clone(),
        operation: args.operation.clone(),
        requester: crate::requester::of(args.user.as_deref(), &args.groups),
        old_object: old,
        independent: args.independent,
    };
    let modules: Vec<Module> = policies.iter().map(Loaded::as_module).collect();
    let report =
        preflight::admit_all(&modules, snapshot, documents, &options).map_err(|e| match e {
            // The flag that lifts a limit the module hit.
            PreflightError::Evaluate {
                module,
                document,
                source,
            } => args
                .limits
                .with_hint(source)
                .context(format!("{module}: {document}")),
            other => other.into(),
        })?;
    let blockers = install_blockers(&args, &report);
    for blocker in &blockers {
        eprintln!("olm-guard: {}", blocker.message);
    }
    let Report {
        pairs,
        unrouted,
        order,
        ..
    } = report;
    if source == one::Source::None && !args.no_cluster {
        // The modules that judged a document and read the cluster, given
        // none: refused as with one module, before anything is printed.
        let reads: Vec<(String, &olm_guard_runtime::Metadata)> = policies
            .iter()
            .filter(|p| live::reads_cluster(&p.metadata))
            .filter(|p| pairs.iter().any(|pair| pair.policy == p.name))
            .map(|p| (p.name.clone(), &p.metadata))
            .collect();
        one::no_cluster_for(&reads)?;
    }

    let mut out = std::io::stdout().lock();
    match args.output {
        RunOutput::Text | RunOutput::Table => {
            let listed = if policies.len() == 1 && !args.verbose {
                Unlisted::Summed
            } else {
                Unlisted::EachOnALine
            };
            write_table(&mut out, &policies, &pairs, &unrouted, &order, listed)?;
            for blocker in &blockers {
                writeln!(out, "\n{}", blocker.message)?;
            }
        }
        RunOutput::Json | RunOutput::Yaml => {
            let reviews = pairs.iter().map(review).collect::<anyhow::Result<_>>()?;
            let mut document = list(reviews);
            if !blockers.is_empty() {
                document["wouldNotInstall"] = blockers.iter().map(Blocker::json).collect();
            }
            if args.output == RunOutput::Json {
                write_json(&mut out, &document)?;
            } else {
                write_yaml(&mut out, &document)?;
            }
        }
        RunOutput::Junit => write!(out, "{}", junit(&pairs, &blockers))?,
    }
    out.flush()?;
    let denied = pairs.iter().filter(|p| !p.response.allowed).count();
    eprintln!(
        "olm-guard run: {}, {}: {} allowed, {denied} denied; {} no module applies to",
        count(order.len(), "object"),
        count(pairs.len(), "evaluation"),
        pairs.len() - denied,
        count(unrouted.len(), "object"),
    );
    if args.fail_on_deny && denied > 0 {
        eprintln!(
            "olm-guard: {} denied (--fail-on-deny)",
            count(denied, "evaluation")
        );
        return Ok(ExitCode::FAILURE);
    }
    if args.fail_on_deny && !blockers.is_empty() {
        let reasons: Vec<&str> = blockers.iter().map(|b| b.reason).collect();
        eprintln!(
            "olm-guard: OLM would not install the bundle ({}) (--fail-on-deny)",
            reasons.join(", ")
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Why OLM would not install the bundle whatever the modules say: the
/// verdict of a suite's `bundle:` case, so that `run --bundle` gives the
/// same one (in the report, and in the exit status with `--fail-on-deny`).
struct Blocker {
    /// OLM's reason on the CSV (`NoOperatorGroup`).
    reason: &'static str,
    /// What to fix, in one line.
    message: String,
}

impl Blocker {
    /// As `-o json|yaml` gives it.
    fn json(&self) -> Value {
        serde_json::json!({"reason": self.reason, "message": self.message})
    }
}

/// The [`Blocker`]s of a `--bundle` run into `--namespace`: a namespace with
/// no OperatorGroup once every document is admitted (OLM fails the CSV with
/// reason NoOperatorGroup).
fn install_blockers(args: &RunArgs, report: &Report) -> Vec<Blocker> {
    match (&args.bundle, &args.namespace) {
        (Some(_), Some(namespace)) if !report.has_operator_group(namespace) => vec![Blocker {
            reason: "NoOperatorGroup",
            message: format!(
                "OLM would not install the bundle's CSV: namespace {namespace} has no \
                 OperatorGroup in the snapshot (reason NoOperatorGroup); give one with --cluster \
                 or --object"
            ),
        }],
        _ => Vec::new(),
    }
}

/// The starting snapshot of a live cluster: what the modules read (and its
/// RBAC, for `can_i`) and the stored objects of the documents' kinds (an
/// object already there is an UPDATE of it), listed once; the --cluster
/// files complete it with the kinds the server does not serve.
fn live_snapshot(
    args: &RunArgs,
    policies: &[Loaded],
    documents: &[(String, Value)],
    files: olm_guard_snapshot::Snapshot,
) -> anyhow::Result<olm_guard_snapshot::Snapshot> {
    let metadata: Vec<&olm_guard_runtime::Metadata> =
        policies.iter().map(|p| &p.metadata).collect();
    let mut wanted: Vec<Wanted> = live::kinds_read(&metadata)
        .into_iter()
        .map(|(v, kind)| Wanted::Kind(v, kind))
        .collect();
    if metadata.iter().any(|m| live::calls_can_i(m)) {
        wanted.extend(
            live::RBAC_KINDS
                .iter()
                .map(|(v, kind)| Wanted::Kind(v.to_string(), kind.to_string())),
        );
    }
    for (_, document) in documents {
        if let (Some(api_version), Some(kind)) =
            (document["apiVersion"].as_str(), document["kind"].as_str())
        {
            wanted.push(Wanted::Kind(api_version.into(), kind.into()));
        }
    }
    wanted.sort();
    wanted.dedup();
    let session = args.live.session()?;
    let files = (!args.snapshot.cluster.is_empty()).then_some(&files);
    let snapshot = live::snapshot_of(&session, &wanted, args.live.chunk_size, files)?;
    eprintln!(
        "olm-guard: several modules: {} read from {} once; each admitted document joins them \
         for the documents after it",
        count(snapshot.len(), "object"),
        session.server()
    );
    Ok(snapshot)
}

/// The AdmissionReview of one pair, as `run -o json` prints one, with the
/// module's name, the document, the operation and the object beside
/// `response` (the API server reads only `response`).
fn review(pair: &Pair) -> anyhow::Result<Value> {
    let mut review = show::review_document(&pair.request, pair.response.clone())
        .with_context(|| format!("{}: {}", pair.policy, pair.document))?;
    show::name_in_list(&mut review, &pair.policy, &pair.document, &pair.request);
    Ok(review)
}

/// How the table gives the documents no module's rules cover.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unlisted {
    /// A `(none)` line under each.
    EachOnALine,
    /// One line after the table: how many, of which kinds (one module on a
    /// manifest of many kinds, where they would outnumber its own).
    Summed,
}

/// The table: one block per document, in the order admitted, one line per
/// module that evaluated it (in the order called), `(none)` when no module's
/// rules cover it (or those summed up in one line); then the counts per
/// module.
fn write_table(
    out: &mut impl Write,
    policies: &[Loaded],
    pairs: &[Pair],
    unrouted: &[Unrouted],
    order: &[(String, Subject)],
    listed: Unlisted,
) -> anyhow::Result<()> {
    let mut findings = Vec::new();
    for (source, subject) in order {
        let of_document = pairs.iter().filter(|p| &p.document == source);
        findings.extend(of_document.map(|pair| Finding {
            object: Some(pair.subject.clone()),
            source: pair.document.clone(),
            policy: pair.policy.clone(),
            result: outcome_of(pair),
            message: summary(pair),
        }));
        if let Some(none) = unrouted.iter().find(|u| &u.document == source)
            && listed == Unlisted::EachOnALine
        {
            findings.push(Finding {
                object: Some(subject.clone()),
                source: none.document.clone(),
                policy: NO_MODULE.into(),
                result: Outcome::Skip,
                message: format!("no module's rules cover {}", none.route),
            });
        }
    }
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut names: Vec<&str> = policies.iter().map(|p| p.name.as_str()).collect();
    names.sort_unstable();
    table::write(out, &names, &findings, true, table::Skips::Inline, colour)?;
    let mutating: Vec<&str> = policies
        .iter()
        .filter(|p| p.metadata.mutating)
        .map(|p| p.name.as_str())
        .collect();
    if listed == Unlisted::Summed && !unrouted.is_empty() {
        writeln!(
            out,
            "\n{} not covered by {}'s rules (policy-server would not send {}): {}; -v lists them",
            count(unrouted.len(), "document"),
            names.join(", "),
            if unrouted.len() == 1 { "it" } else { "them" },
            kinds_counted(unrouted.iter().map(|u| u.subject.kind.as_str())),
        )?;
    }
    if mutating.len() > 1 {
        writeln!(
            out,
            "\nMutating modules run first, in this order, each on the object as the ones before it patched it: {}; the others then judge the final object.",
            mutating.join(", ")
        )?;
    }
    Ok(())
}

/// `Namespace ×2, Deployment`: each kind once, in the order first seen,
/// with how many when more than one.
fn kinds_counted<'a>(kinds: impl Iterator<Item = &'a str>) -> String {
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for kind in kinds {
        match counted.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => counted.push((kind, 1)),
        }
    }
    counted
        .iter()
        .map(|(kind, n)| match n {
            1 => kind.to_string(),
            n => format!("{kind} ×{n}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// JUnit XML: a test suite per document, a test case per module that
/// evaluated it; a denial is a failure, an answer with code 500 (a lookup
/// failed) an error; warnings and the mutation are the case's output. Each
/// reason OLM would not install the bundle is a failed case of its own
/// suite, `OLM install`.
fn junit(pairs: &[Pair], blockers: &[Blocker]) -> String {
    use std::fmt::Write as _;

    let mut suites: Vec<(String, Vec<&Pair>)> = Vec::new();
    for pair in pairs {
        let name = format!("{} ({})", pair.subject.display(), pair.document);
        match suites.iter_mut().find(|(n, _)| *n == name) {
            Some((_, cases)) => cases.push(pair),
            None => suites.push((name, vec![pair])),
        }
    }
    let count = |outcome: Outcome| pairs.iter().filter(|p| outcome_of(p) == outcome).count();
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"olm-guard run\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n",
        pairs.len() + blockers.len(),
        count(Outcome::Fail) + blockers.len(),
        count(Outcome::Error),
    );
    if !blockers.is_empty() {
        let _ = writeln!(
            xml,
            "  <testsuite name=\"OLM install\" tests=\"{0}\" failures=\"{0}\" errors=\"0\">",
            blockers.len()
        );
        for blocker in blockers {
            let _ = writeln!(
                xml,
                "    <testcase name=\"{0}\" classname=\"OLM install\">\n      <failure message=\"{0}\">{1}</failure>\n    </testcase>",
                blocker.reason,
                xml_escape(&blocker.message),
            );
        }
        xml.push_str("  </testsuite>\n");
    }
    for (name, cases) in &suites {
        let of = |outcome: Outcome| cases.iter().filter(|p| outcome_of(p) == outcome).count();
        let _ = writeln!(
            xml,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">",
            xml_escape(name),
            cases.len(),
            of(Outcome::Fail),
            of(Outcome::Error),
        );
        for pair in cases {
            let _ = writeln!(
                xml,
                "    <testcase name=\"{}\" classname=\"{}\">",
                xml_escape(&pair.policy),
                xml_escape(&pair.subject.display()),
            );
            let element = match outcome_of(pair) {
                Outcome::Fail => Some("failure"),
                Outcome::Error => Some("error"),
                _ => None,
            };
            if let Some(element) = element {
                let _ = writeln!(
                    xml,
                    "      <{element} message=\"{}\">{}</{element}>",
                    xml_escape(&summary(pair)),
                    xml_escape(pair.response.message()),
                );
            } else if !summary(pair).is_empty() {
                let _ = writeln!(
                    xml,
                    "      <system-out>{}</system-out>",
                    xml_escape(&summary(pair))
                );
            }
            xml.push_str("    </testcase>\n");
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}
