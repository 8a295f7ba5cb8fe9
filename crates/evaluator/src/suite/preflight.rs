//! Suite cases that judge manifests: `modules` (or `all`) on `objects` and
//! a `bundle`, admitted in order as `olm-guard run all` admits them
//! ([`crate::preflight`]), with the verdict of the whole install
//! (`expect.result`) and of single (object, module) pairs
//! (`expect.results`). The model is `kyverno test`: several policies,
//! several resources, an expected result per (policy, resource).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use olm_guard_core::decode;
use olm_guard_runtime::Metadata;
use olm_guard_snapshot::Snapshot;

use super::{ALL, Case, CaseResult, ModuleSource, PairExpect, Suite, inline_or_file, snapshot_of};
use crate::input::{self as admission, Requester};
use crate::policy::Policy;
use crate::preflight::{self, Module, Options, Pair, Report};
use crate::scenario::Outcome;

/// How many denials the case's message names before `(+N more)`.
const DENIALS_SHOWN: usize = 1;

/// A module of the case, loaded, with its metadata and settings.
struct Loaded {
    policy: Arc<Policy>,
    metadata: Metadata,
    settings: Value,
}

/// Runs one case judging manifests; what does not hold goes into
/// `outcome.failures`, what cannot be run is the `Err`, naming the field.
pub(super) fn evaluate(
    suite: &Suite,
    case: &Case,
    base: &Path,
    modules: &mut dyn ModuleSource,
    outcome: &mut Outcome,
) -> anyhow::Result<()> {
    let (loaded, label) = load_modules(suite, case, base, modules)?;
    outcome.policy = label;
    let documents = documents(case, base)?;
    let snapshot = match case.cluster.as_ref().or(suite.cluster.as_ref()) {
        Some(cluster) => snapshot_of(cluster, base).context("cluster")?,
        None => Snapshot::new(),
    };
    let options = Options {
        namespace: case.namespace.clone(),
        operation: case.operation.clone(),
        requester: Requester {
            username: case.user.clone().unwrap_or_default(),
            groups: case.groups.clone(),
        },
        old_object: None,
        independent: case.independent,
    };
    let mut views: Vec<Module> = loaded
        .iter()
        .map(|(name, module)| Module {
            name,
            policy: &module.policy,
            metadata: &module.metadata,
            settings: &module.settings,
        })
        .collect();
    preflight::call_order(&mut views, |m| *m);
    let report = preflight::admit_all(&views, snapshot, documents, &options)?;
    if let Some(namespace) = case.bundle.as_ref().and(case.namespace.as_deref())
        && !report.has_operator_group(namespace)
    {
        outcome.failures.push(format!(
            "namespace {namespace} has no OperatorGroup in the cluster or the objects: OLM would not install the bundle's CSV there (reason NoOperatorGroup); give one in `cluster` or `objects`"
        ));
    }

    let got = overall(&report);
    outcome.verdict = got.word().into();
    outcome.message = message(&report);
    outcome.evaluations = report.pairs.iter().map(evaluation_json).collect();
    let Some(expected) = case.expect.result else {
        bail!("expect.result is missing: pass, warn, fail or skip");
    };
    if got != expected {
        outcome.failures.push(format!(
            "expected {} of the whole install, got {}",
            expected.word(),
            got.word()
        ));
        // Say which evaluations made it so (a denial or a warning; a
        // missing one has no evaluation to name).
        let culprits = report
            .pairs
            .iter()
            .filter(|p| matches!(got, CaseResult::Fail | CaseResult::Warn) && result_of(p) == got);
        for pair in culprits {
            outcome.failures.push(format!(
                "{}: {} says {}: {}",
                named(pair),
                pair.policy,
                result_of(pair).word(),
                first_line(&said(pair))
            ));
        }
    }
    for (index, expect) in case.expect.results.iter().enumerate() {
        check_pair(&report, &loaded, index, expect, &mut outcome.failures)?;
    }
    Ok(())
}

/// The case's modules (case `modules`/`module`, else the suite's), each
/// with its settings (`settings` maps names to settings), and the label
/// reports give them: `all`, or the names.
fn load_modules(
    suite: &Suite,
    case: &Case,
    base: &Path,
    modules: &mut dyn ModuleSource,
) -> anyhow::Result<(BTreeMap<String, Loaded>, String)> {
    let given: Vec<String> = match (&case.modules, &case.module, &suite.modules, &suite.module) {
        (Some(list), ..) => list.names().into_iter().map(String::from).collect(),
        (None, Some(one), ..) => vec![one.clone()],
        (None, None, Some(list), _) => list.names().into_iter().map(String::from).collect(),
        (None, None, None, Some(one)) => vec![one.clone()],
        (None, None, None, None) => bail!("modules: no modules: set `modules: all` or a list"),
    };
    let mut names = Vec::new();
    for module in &given {
        if module == ALL {
            let every = modules.all().context("modules: all")?;
            if every.is_empty() {
                bail!("modules: all: --dist holds no .wasm module (build them with `make dist`)");
            }
            names.extend(every);
        } else {
            names.push(module.clone());
        }
    }
    let mut settings = case_settings(case, base)?;
    let mut loaded = BTreeMap::new();
    for name in names {
        let policy = modules
            .load(&name, base)
            .with_context(|| format!("modules: {name}"))?;
        if loaded.contains_key(&policy.name) {
            continue;
        }
        let Some(metadata) = policy.metadata.clone() else {
            bail!(
                "modules: {name} has no metadata, so which objects it applies to is unknown: annotate it (`olm-guard annotate`, or `make dist`)"
            );
        };
        let settings = admission::settings_object(settings.remove(&policy.name))
            .with_context(|| format!("settings.{}", policy.name))?;
        policy
            .validate_settings(&settings)
            .with_context(|| format!("settings.{}", policy.name))?;
        loaded.insert(
            policy.name.clone(),
            Loaded {
                policy,
                metadata,
                settings,
            },
        );
    }
    if let Some(name) = settings.keys().next() {
        bail!(
            "settings.{name}: no module {name} among the case's modules ({})",
            loaded.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    let label = if given.iter().any(|m| m == ALL) {
        ALL.to_string()
    } else {
        loaded.keys().cloned().collect::<Vec<_>>().join(",")
    };
    Ok((loaded, label))
}

/// `settings:` of a case judging manifests: module name → settings (a
/// mapping, or a file).
fn case_settings(case: &Case, base: &Path) -> anyhow::Result<BTreeMap<String, Value>> {
    let Some(settings) = &case.settings else {
        return Ok(BTreeMap::new());
    };
    let Value::Object(by_module) = settings else {
        bail!(
            "settings: in a case with modules, map each module's name to its settings (`settings: {{catalog-union: {{migrateLegacy: true}}}}`), got {}",
            decode::json_type(settings)
        );
    };
    by_module
        .iter()
        .map(|(name, value)| {
            let value = inline_or_file(value, base, &format!("settings.{name}"))?;
            Ok((name.clone(), value))
        })
        .collect()
}

/// The documents: `objects` (a file, or a list of files and inline
/// objects), then the `bundle`'s manifests in `namespace`.
fn documents(case: &Case, base: &Path) -> anyhow::Result<Vec<(String, Value)>> {
    let mut documents = Vec::new();
    match &case.objects {
        None => {}
        Some(Value::String(file)) => {
            documents.extend(preflight::read_manifest(&base.join(file)).context("objects")?)
        }
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                match item {
                    Value::String(file) => documents.extend(
                        preflight::read_manifest(&base.join(file))
                            .with_context(|| format!("objects[{index}]"))?,
                    ),
                    Value::Object(_) => documents.push((format!("objects[{index}]"), item.clone())),
                    other => bail!(
                        "objects[{index}]: expected a file name or an object, got {}",
                        decode::json_type(other)
                    ),
                }
            }
        }
        Some(other) => bail!(
            "objects: expected a file name or a list of files and objects, got {}",
            decode::json_type(other)
        ),
    }
    if let (Some(bundle), Some(namespace)) = (&case.bundle, &case.namespace) {
        documents
            .extend(preflight::bundle_documents(&base.join(bundle), namespace).context("bundle")?);
    }
    if documents.is_empty() {
        bail!("objects: no object to admit");
    }
    Ok(documents)
}

/// The verdict of the whole install: `fail` if any evaluation denied, else
/// `warn` if any warned, else `pass`; `skip` when no module applied to any
/// object.
fn overall(report: &Report) -> CaseResult {
    let results: Vec<CaseResult> = report.pairs.iter().map(result_of).collect();
    if results.is_empty() {
        CaseResult::Skip
    } else if results.contains(&CaseResult::Fail) {
        CaseResult::Fail
    } else if results.contains(&CaseResult::Warn) {
        CaseResult::Warn
    } else {
        CaseResult::Pass
    }
}

fn result_of(pair: &Pair) -> CaseResult {
    match (pair.response.allowed, pair.warned()) {
        (false, _) => CaseResult::Fail,
        (true, true) => CaseResult::Warn,
        (true, false) => CaseResult::Pass,
    }
}

/// `OperatorGroup nginx-b/nginx-b (file: document 4)`.
fn named(pair: &Pair) -> String {
    format!("{} ({})", pair.subject.display(), pair.document)
}

/// What the module said: its message, else its warnings.
fn said(pair: &Pair) -> String {
    let message = pair.response.message();
    let warnings = pair.response.warnings.as_deref().unwrap_or_default();
    match (pair.response.allowed, message.is_empty()) {
        (_, false) => message.to_string(),
        (false, true) => "denied, with no message".into(),
        (true, true) => warnings.join("; "),
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

/// The case's message: the first denial, else the counts.
fn message(report: &Report) -> String {
    let denied: Vec<&Pair> = report.denied().collect();
    let count = |n: usize, noun: &str| match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    };
    let counts = format!(
        "{}, {}, {} denied",
        count(report.order.len(), "object"),
        count(report.pairs.len(), "evaluation"),
        denied.len()
    );
    match denied.first() {
        None => counts,
        Some(first) => {
            let more = denied.len().saturating_sub(DENIALS_SHOWN);
            let more = if more > 0 {
                format!(" (+{more} more)")
            } else {
                String::new()
            };
            format!(
                "{} by {}: {}{more}",
                first.subject.display(),
                first.policy,
                first_line(first.response.message())
            )
        }
    }
}

/// One evaluation as `-o json` reports it.
fn evaluation_json(pair: &Pair) -> Value {
    json!({
        "source": pair.document,
        "object": pair.subject,
        "policy": pair.policy,
        "result": result_of(pair).word(),
        "message": pair.response.message(),
        "warnings": pair.response.warnings.clone().unwrap_or_default(),
    })
}

/// One `expect.results` entry against the report.
fn check_pair(
    report: &Report,
    loaded: &BTreeMap<String, Loaded>,
    index: usize,
    expect: &PairExpect,
    failures: &mut Vec<String>,
) -> anyhow::Result<()> {
    let field = format!("expect.results[{index}]");
    if !loaded.contains_key(&expect.module) {
        bail!(
            "{field}.module: {} is not among the case's modules ({})",
            expect.module,
            loaded.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    let objects: Vec<&(String, preflight::Subject)> = report
        .order
        .iter()
        .filter(|(_, subject)| subject.is_named(&expect.object))
        .collect();
    let (document, subject) = match objects.as_slice() {
        [one] => one,
        [] => bail!(
            "{field}.object: no document is {} (the documents: {})",
            expect.object,
            report
                .order
                .iter()
                .map(|(_, s)| format!("{}/{}", s.kind, s.name))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        many => bail!(
            "{field}.object: {} names {} documents: name it as Kind/namespace/name",
            expect.object,
            many.len()
        ),
    };
    let pair = report
        .pairs
        .iter()
        .find(|p| &p.document == document && p.policy == expect.module);
    let Some(pair) = pair else {
        if expect.result != CaseResult::Skip {
            failures.push(format!(
                "{field}: expected {} from {} on {}, but its metadata rules do not cover it (policy-server would not send it)",
                expect.result.word(),
                expect.module,
                subject.display()
            ));
        }
        return Ok(());
    };
    let got = result_of(pair);
    if got != expect.result {
        failures.push(format!(
            "{field}: expected {} from {} on {}, got {}: {}",
            expect.result.word(),
            expect.module,
            subject.display(),
            got.word(),
            first_line(&said(pair))
        ));
    }
    let message = pair.response.message();
    if let Some(part) = &expect.message
        && !message.contains(part.as_str())
    {
        failures.push(format!(
            "{field}.message: {}'s message on {} {message:?} does not contain {part:?}",
            expect.module,
            subject.display()
        ));
    }
    if let Some(pattern) = &expect.message_regex {
        let regex = regex::Regex::new(pattern).with_context(|| format!("{field}.messageRegex"))?;
        if !regex.is_match(message) {
            failures.push(format!(
                "{field}.messageRegex: {}'s message on {} {message:?} does not match /{pattern}/",
                expect.module,
                subject.display()
            ));
        }
    }
    let warnings = pair.response.warnings.as_deref().unwrap_or_default();
    for part in &expect.warnings {
        if !warnings.iter().any(|w| w.contains(part.as_str())) {
            failures.push(format!(
                "{field}.warnings: no warning of {} on {} contains {part:?} (warnings: {warnings:?})",
                expect.module,
                subject.display()
            ));
        }
    }
    Ok(())
}
