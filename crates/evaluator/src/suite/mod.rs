//! Test suites: one YAML (or JSON) file listing cases — a module, its
//! settings, a request or a bare object with operation and user, the cluster
//! snapshot or a recorded session, and the expected result — so a user
//! tests their own settings without building scenario directories. The
//! format is `docs/test-suites.md`; `olm-guard test suite.yaml` runs one.
//!
//! A case that names `modules` (or `all`) and `objects` or a `bundle`
//! judges a whole manifest as the API server would admit it, every document
//! with every module policy-server would route it to ([`crate::preflight`]):
//! "this install must pass" in an operator's CI (`preflight`).
//!
//! Results are named as `kyverno test` names them: `pass` (admitted, no
//! warning), `warn` (admitted with a warning), `fail` (denied) and `skip`
//! (the module's metadata rules do not cover the request, so policy-server
//! would never send it).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use serde::Deserialize;
use serde_json::Value;

use olm_guard_core::decode;
use olm_guard_snapshot::{LoadOptions, Snapshot};

use crate::input::{self as admission, ObjectRequest, Requester, Route};
use crate::policy::Policy;
use crate::scenario::{self, Outcome};
use crate::session::SessionReplay;

mod preflight;

/// The `kind` a suite file must declare, so a stray YAML file is not read as
/// an empty suite.
pub const SUITE_KIND: &str = "TestSuite";

/// A suite file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Suite {
    /// Always [`SUITE_KIND`].
    pub kind: String,
    /// What the suite is about (the JUnit suite name).
    #[serde(default)]
    pub name: Option<String>,
    /// The module of every case that names none: a name in `--dist`, a
    /// `.wasm` path (relative to the suite file) or `registry://…`.
    #[serde(default)]
    pub module: Option<String>,
    /// The modules of every case judging manifests (`objects` or `bundle`)
    /// that names none: `all` (every module in `--dist`) or a list.
    #[serde(default)]
    pub modules: Option<ModuleList>,
    /// Settings of every case that gives none: inline, or a file.
    #[serde(default)]
    pub settings: Option<Value>,
    /// The cluster of every case that gives none: a snapshot file, or the
    /// objects inline.
    #[serde(default)]
    pub cluster: Option<Value>,
    /// The cases, run in order.
    pub cases: Vec<Case>,
}

/// One case of a suite.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Case {
    /// Unique within the suite; the case's label in reports.
    pub name: String,
    /// The module, overriding the suite's.
    #[serde(default)]
    pub module: Option<String>,
    /// For a case judging manifests: `all` or a list of modules, each
    /// document sent to those whose metadata rules cover it.
    #[serde(default)]
    pub modules: Option<ModuleList>,
    /// Manifests admitted in order, as `kubectl apply -f` sends them: a
    /// file (many documents), or a list of files and inline objects.
    #[serde(default)]
    pub objects: Option<Value>,
    /// A registry+v1 operator bundle directory, admitted after `objects`
    /// as OLM would create it in `namespace`.
    #[serde(default)]
    pub bundle: Option<String>,
    /// For a case judging manifests: judge every document against the
    /// cluster alone, rather than adding each admitted one to it for the
    /// documents after it.
    #[serde(default)]
    pub independent: bool,
    /// The settings, overriding the suite's: a mapping, or a file. In a
    /// case with `modules`, a mapping from module name to its settings.
    #[serde(default)]
    pub settings: Option<Value>,
    /// An AdmissionReview or AdmissionRequest (inline or a file), instead of
    /// `object`/`oldObject`.
    #[serde(default)]
    pub request: Option<Value>,
    /// The object as sent (inline or a file).
    #[serde(default)]
    pub object: Option<Value>,
    /// The stored object, for an UPDATE or DELETE (inline or a file).
    #[serde(default)]
    pub old_object: Option<Value>,
    /// CREATE, UPDATE, DELETE or CONNECT; by default UPDATE with
    /// `oldObject`, DELETE with `oldObject` alone, else CREATE.
    #[serde(default)]
    pub operation: Option<String>,
    /// The requester's user name.
    #[serde(default)]
    pub user: Option<String>,
    /// The requester's groups.
    #[serde(default)]
    pub groups: Vec<String>,
    /// The namespace, for objects that name none.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The cluster, overriding the suite's: a snapshot file, or the objects
    /// inline.
    #[serde(default)]
    pub cluster: Option<Value>,
    /// A recorded host-capabilities session (kwctl's format) to answer the
    /// module's host calls from, instead of a cluster.
    #[serde(default)]
    pub session: Option<String>,
    /// What the evaluation must give.
    pub expect: CaseExpect,
}

/// A case's expected result.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CaseExpect {
    /// `pass`, `warn`, `fail` or `skip`; absent only with `settingsError`.
    #[serde(default)]
    pub result: Option<CaseResult>,
    /// A substring of the response's message.
    #[serde(default)]
    pub message: Option<String>,
    /// A regular expression the message must match.
    #[serde(default)]
    pub message_regex: Option<String>,
    /// Substrings each found in some warning.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Whether the module patched the object; absent, it must not have,
    /// unless `patched_object` is given.
    #[serde(default)]
    pub mutated: Option<bool>,
    /// A subset of the patched object (mappings: subset; other values: equal).
    #[serde(default)]
    pub patched_object: Option<Value>,
    /// The settings must be refused with a message containing this.
    #[serde(default)]
    pub settings_error: Option<String>,
    /// In a case with `modules`: what one module must say of one object.
    #[serde(default)]
    pub results: Vec<PairExpect>,
}

/// What one module must say of one object, in a case judging manifests.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PairExpect {
    /// The object: `Kind/name`, or `Kind/namespace/name`.
    pub object: String,
    /// The module's name.
    pub module: String,
    /// `pass`, `warn`, `fail`, or `skip` (the module's rules do not cover
    /// the object, so it was not sent).
    pub result: CaseResult,
    /// A substring of the module's message.
    #[serde(default)]
    pub message: Option<String>,
    /// A regular expression the message must match.
    #[serde(default)]
    pub message_regex: Option<String>,
    /// Substrings each found in some warning.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// `modules:` — one name or `all`, or a list of them (`all` among them
/// stands for every module in `--dist`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ModuleList {
    /// `modules: all`, or one module.
    One(String),
    /// `modules: [og-intersection, catalog-union]`.
    Many(Vec<String>),
}

impl ModuleList {
    /// The names as written.
    pub fn names(&self) -> Vec<&str> {
        match self {
            ModuleList::One(name) => vec![name.as_str()],
            ModuleList::Many(names) => names.iter().map(String::as_str).collect(),
        }
    }
}

/// The word that stands for every module in `--dist`, as in `olm-guard run
/// all`.
pub const ALL: &str = "all";

impl Case {
    /// Whether the case judges manifests (`objects` or `bundle`) with
    /// several modules, rather than one request with one module.
    pub fn judges_manifests(&self) -> bool {
        self.objects.is_some() || self.bundle.is_some() || self.modules.is_some()
    }
}

/// The result of a case, as `kyverno test` names results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaseResult {
    /// Admitted with no warning.
    Pass,
    /// Admitted with at least one warning.
    Warn,
    /// Denied.
    Fail,
    /// Not sent to the module: its metadata rules do not cover the request.
    Skip,
}

impl CaseResult {
    /// `pass`, `warn`, `fail` or `skip`.
    pub fn word(self) -> &'static str {
        match self {
            CaseResult::Pass => "pass",
            CaseResult::Warn => "warn",
            CaseResult::Fail => "fail",
            CaseResult::Skip => "skip",
        }
    }
}

/// Reads and checks a suite file: the kind, unique case names, and every
/// field's type, named by its path (`cases[2].expect.result: unknown
/// variant …`).
pub fn load(path: &Path) -> anyhow::Result<Suite> {
    let document = match admission::read_document(path) {
        Err(admission::InputError::Documents { count, .. }) => bail!(
            "{}: this is not a test suite: it holds {count} YAML documents, a manifest perhaps (a suite is one document declaring `kind: {SUITE_KIND}` and listing `cases`, docs/test-suites.md); to evaluate the objects, run `olm-guard run <module> --object {}`",
            path.display(),
            path.display()
        ),
        document => document?,
    };
    refuse_other_kinds(path, &document)?;
    let suite: Suite = decode::from_value(&document)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.under("suite")))?;
    if suite.kind != SUITE_KIND {
        bail!(
            "{}: kind is {:?}: a suite file declares `kind: {SUITE_KIND}`",
            path.display(),
            suite.kind
        );
    }
    let mut names = HashSet::new();
    for (index, case) in suite.cases.iter().enumerate() {
        if !names.insert(case.name.as_str()) {
            bail!(
                "{}: cases[{index}].name {:?} is used twice: give each case its own name",
                path.display(),
                case.name
            );
        }
        if let Err(problem) = check_case(&suite, case) {
            bail!("{}: cases[{index}].{problem}", path.display());
        }
    }
    Ok(suite)
}

/// Refuses a document that declares another `kind` before its fields are
/// read, so that a Kubernetes object or a manifest named by mistake is
/// called what it is rather than refused for its first unknown field.
fn refuse_other_kinds(path: &Path, document: &Value) -> anyhow::Result<()> {
    let kind = document.get("kind").and_then(Value::as_str);
    if document.is_null() {
        bail!(
            "{}: empty: a suite file declares `kind: {SUITE_KIND}` and lists `cases` (docs/test-suites.md)",
            path.display()
        );
    }
    match kind {
        Some(SUITE_KIND) | None => Ok(()),
        Some(kind) if document.get("apiVersion").is_some() => bail!(
            "{}: this is not a test suite but a Kubernetes {kind} object (a suite declares `kind: {SUITE_KIND}` and lists `cases`, docs/test-suites.md); to evaluate it, run `olm-guard run <module> {} {}`",
            path.display(),
            if kind == "AdmissionReview" {
                "--request"
            } else {
                "--object"
            },
            path.display()
        ),
        Some(kind) => bail!(
            "{}: kind is {kind:?}: a suite file declares `kind: {SUITE_KIND}`",
            path.display()
        ),
    }
}

/// What is wrong with a case, at the field to fix: `field: why and the
/// fix`, the field below `cases[N]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct CaseProblem {
    /// The field, as the suite file spells it (`expect.result`).
    pub field: String,
    /// Why it cannot be, and what to write instead.
    pub problem: String,
}

impl CaseProblem {
    fn at(field: impl Into<String>, problem: impl Into<String>) -> CaseProblem {
        CaseProblem {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// What a case's fields cannot mean together, as `field: why and the fix`.
fn check_case(suite: &Suite, case: &Case) -> Result<(), CaseProblem> {
    if case.module.is_some() && case.modules.is_some() {
        return Err(CaseProblem::at(
            "modules",
            "give `module` (one) or `modules`, not both",
        ));
    }
    if !case.judges_manifests() {
        if !case.expect.results.is_empty() {
            return Err(CaseProblem::at(
                "expect.results",
                "per-object results need a case judging manifests: give `objects` or `bundle`, and `modules`",
            ));
        }
        return check_expect(&case.expect);
    }
    if case.objects.is_none() && case.bundle.is_none() {
        return Err(CaseProblem::at(
            "modules",
            "a case with modules judges manifests: give `objects` (a file or a list) or `bundle` (with `namespace`)",
        ));
    }
    for (field, given) in [
        ("request", case.request.is_some()),
        ("object", case.object.is_some()),
        ("oldObject", case.old_object.is_some()),
        ("session", case.session.is_some()),
    ] {
        if given {
            return Err(CaseProblem::at(
                field,
                format!(
                    "a case judging manifests takes `objects` or `bundle`; put `{field}` in a case of its own"
                ),
            ));
        }
    }
    if case.bundle.is_some() && case.namespace.is_none() {
        return Err(CaseProblem::at(
            "bundle",
            "give `namespace`, the namespace OLM would install the bundle in",
        ));
    }
    if case.modules.is_none()
        && case.module.is_none()
        && suite.modules.is_none()
        && suite.module.is_none()
    {
        return Err(CaseProblem::at(
            "modules",
            "no modules: set `modules: all` (every module in --dist) or a list, on the case or the suite",
        ));
    }
    let expect = &case.expect;
    for (field, given) in [
        ("settingsError", expect.settings_error.is_some()),
        ("message", expect.message.is_some()),
        ("messageRegex", expect.message_regex.is_some()),
        ("warnings", !expect.warnings.is_empty()),
        ("mutated", expect.mutated.is_some()),
        ("patchedObject", expect.patched_object.is_some()),
    ] {
        if given {
            return Err(CaseProblem::at(
                format!("expect.{field}"),
                "in a case judging manifests, say what one module says of one object under `expect.results`",
            ));
        }
    }
    if expect.result.is_none() {
        return Err(CaseProblem::at(
            "expect.result is missing",
            "pass (every evaluation admitted, no warning), warn, fail (some evaluation denied) or skip (no module applies)",
        ));
    }
    for (index, result) in expect.results.iter().enumerate() {
        if result.object.split('/').count() < 2 || result.object.split('/').count() > 3 {
            return Err(CaseProblem::at(
                format!("expect.results[{index}].object"),
                format!(
                    "{:?}: name the object as Kind/name or Kind/namespace/name",
                    result.object
                ),
            ));
        }
    }
    Ok(())
}

/// What a single-request case's `expect` cannot mean: no verdict, or
/// fields that contradict each other or would never be checked; as
/// `field: why and the fix`.
fn check_expect(expect: &CaseExpect) -> Result<(), CaseProblem> {
    match (expect.result, &expect.settings_error) {
        (None, None) => Err(CaseProblem::at(
            "expect.result is missing",
            "pass (admitted, no warning), warn (admitted with a warning), fail (denied) or skip (not sent to the module); or settingsError when the settings must be refused",
        )),
        (Some(_), Some(_)) => Err(CaseProblem::at(
            "expect.settingsError",
            "a case with refused settings has no result: keep `result` or `settingsError`",
        )),
        (None, Some(_)) => {
            let unchecked = [
                ("message", expect.message.is_some()),
                ("messageRegex", expect.message_regex.is_some()),
                ("warnings", !expect.warnings.is_empty()),
                ("mutated", expect.mutated.is_some()),
                ("patchedObject", expect.patched_object.is_some()),
            ];
            match unchecked.iter().find(|(_, given)| *given) {
                Some((field, _)) => Err(CaseProblem::at(
                    format!("expect.{field}"),
                    "never checked when `settingsError` expects the settings refused (no request is evaluated): remove it",
                )),
                None => Ok(()),
            }
        }
        (Some(_), None) => {
            if expect.mutated == Some(false) && expect.patched_object.is_some() {
                return Err(CaseProblem::at(
                    "expect.mutated",
                    "`false` contradicts `patchedObject`: keep one of them",
                ));
            }
            Ok(())
        }
    }
}

/// Whether `path` is meant as a suite file rather than a scenario tree.
pub fn is_suite_file(path: &Path) -> bool {
    path.is_file()
        && path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| ["yaml", "yml", "json"].contains(&e.to_ascii_lowercase().as_str()))
}

/// The label of a case in reports: `<suite file>#<case name>`.
pub fn case_label(suite: &Path, case: &Case) -> PathBuf {
    PathBuf::from(format!("{}#{}", suite.display(), case.name))
}

/// Where a suite's modules come from: the host resolves names in `--dist`,
/// paths and registry references, and compiles each once per run.
pub trait ModuleSource {
    /// The module a case names (a name, a path relative to the suite's
    /// directory `base`, or a registry reference).
    fn load(&mut self, module: &str, base: &Path) -> anyhow::Result<Arc<Policy>>;
    /// The names of every module in `--dist`, sorted: what `all` stands for.
    fn all(&mut self) -> anyhow::Result<Vec<String>>;
}

/// Runs the cases of the suite at `path` whose [`case_label`] `selected`
/// accepts; every failure is in an outcome, never an `Err`.
pub fn run(
    path: &Path,
    suite: &Suite,
    selected: &dyn Fn(&Path) -> bool,
    modules: &mut dyn ModuleSource,
) -> Vec<Outcome> {
    let base = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    suite
        .cases
        .iter()
        .enumerate()
        .filter(|(_, case)| selected(&case_label(path, case)))
        .map(|(index, case)| {
            let mut outcome = Outcome::pending(case_label(path, case));
            let evaluated = if case.judges_manifests() {
                preflight::evaluate(suite, case, &base, modules, &mut outcome)
            } else {
                evaluate(suite, case, &base, modules, &mut outcome)
            };
            if let Err(e) = evaluated {
                outcome
                    .failures
                    .push(format!("cases[{index}] ({}): {e:#}", case.name));
            }
            outcome
        })
        .collect()
}

fn evaluate(
    suite: &Suite,
    case: &Case,
    base: &Path,
    modules: &mut dyn ModuleSource,
    outcome: &mut Outcome,
) -> anyhow::Result<()> {
    let expect = &case.expect;
    // `load` refuses such a case; a suite built in code is held to the same.
    check_expect(expect)?;
    let module = case
        .module
        .as_deref()
        .or(suite.module.as_deref())
        .context("no module: set `module` on the case or on the suite")?;
    let policy = modules.load(module, base)?;
    outcome.policy = policy.name.clone();

    let settings = match case.settings.as_ref().or(suite.settings.as_ref()) {
        Some(settings) => {
            admission::settings_object(Some(inline_or_file(settings, base, "settings")?))?
        }
        None => admission::settings_object(None)?,
    };
    if scenario::check_settings(
        &policy,
        &settings,
        expect.settings_error.as_deref(),
        outcome,
    )? {
        return Ok(());
    }

    let request = request_of(case, base)?;
    let Some(result) = expect.result else {
        bail!("expect.result is missing: pass, warn, fail or skip");
    };
    let covered = match (&policy.metadata, Route::of(&request)) {
        (Some(metadata), Some(route)) => metadata.covers(&route.target()),
        _ => true,
    };
    if !covered {
        outcome.verdict = "skipped".into();
        outcome.message = "not in the module's metadata rules".into();
        if result != CaseResult::Skip {
            outcome.failures.push(format!(
                "expected {}, but policy-server would not send this request to {} (its metadata rules do not cover it)",
                result.word(),
                policy.name
            ));
        }
        return Ok(());
    }
    if result == CaseResult::Skip {
        outcome.failures.push(format!(
            "expected skip, but {}'s metadata rules cover this request",
            policy.name
        ));
    }

    let evaluation = match &case.session {
        Some(session) => {
            if case.cluster.is_some() {
                bail!("give either `cluster` or `session`, not both");
            }
            let path = base.join(session);
            let replay = Arc::new(SessionReplay::load(&path)?);
            let evaluation = policy.validate(&request, &settings, replay.clone())?;
            outcome.failures.extend(replay.problems());
            if replay.remaining() > 0 {
                outcome.failures.push(format!(
                    "{}: {} recorded exchange(s) not replayed: the module made fewer host calls than recorded",
                    path.display(),
                    replay.remaining()
                ));
            }
            evaluation
        }
        None => {
            let snapshot = match case.cluster.as_ref().or(suite.cluster.as_ref()) {
                Some(cluster) => snapshot_of(cluster, base)?,
                None => Snapshot::new(),
            };
            policy.validate(&request, &settings, Arc::new(snapshot))?
        }
    };
    let response = evaluation.response;
    let warnings = response.warnings.clone().unwrap_or_default();
    let got = match (response.allowed, warnings.is_empty()) {
        (false, _) => CaseResult::Fail,
        (true, true) => CaseResult::Pass,
        (true, false) => CaseResult::Warn,
    };
    outcome.verdict = got.word().into();
    outcome.message = response.message().to_string();
    if got != result && result != CaseResult::Skip {
        outcome.failures.push(format!(
            "expected {}, got {} (message {:?}, warnings {warnings:?})",
            result.word(),
            got.word(),
            response.message()
        ));
    }
    if let Some(pattern) = &expect.message_regex {
        let regex = regex::Regex::new(pattern).context("expect.messageRegex")?;
        if !regex.is_match(response.message()) {
            outcome.failures.push(format!(
                "message {:?} does not match /{pattern}/",
                response.message()
            ));
        }
    }
    let checks = scenario::Checks {
        // The result word, checked above, says the verdict and whether
        // there are warnings; `warnings` names some of them.
        allowed: None,
        message_contains: expect.message.as_deref(),
        warnings: scenario::Warnings::Contain(&expect.warnings),
        mutated: expect.mutated.unwrap_or(expect.patched_object.is_some()),
        patched_object_contains: expect.patched_object.as_ref(),
    };
    scenario::check(&checks, &request, &response, &mut outcome.failures)?;
    outcome.patched_object = response.patched_object(&request)?;
    outcome.response = Some(response);
    Ok(())
}

/// The case's AdmissionRequest: `request` as given, or built from `object`
/// and `oldObject` as the API server would send it.
/// One case's inputs, read as [`run`] reads them.
pub struct CaseInputs {
    /// The module the case names (a name, a path or a registry reference).
    pub module: String,
    /// Its settings object.
    pub settings: Value,
    /// The AdmissionRequest.
    pub request: Value,
    /// The cluster; `None` when the case replays a recorded session.
    pub cluster: Option<Snapshot>,
}

/// The inputs of `case` of `suite`, whose file is in `base`.
pub fn case_inputs(suite: &Suite, case: &Case, base: &Path) -> anyhow::Result<CaseInputs> {
    let module = case
        .module
        .as_deref()
        .or(suite.module.as_deref())
        .context("no module: set `module` on the case or on the suite")?;
    let settings = match case.settings.as_ref().or(suite.settings.as_ref()) {
        Some(settings) => {
            admission::settings_object(Some(inline_or_file(settings, base, "settings")?))?
        }
        None => admission::settings_object(None)?,
    };
    let cluster = match (
        &case.session,
        case.cluster.as_ref().or(suite.cluster.as_ref()),
    ) {
        (Some(_), _) => None,
        (None, Some(cluster)) => Some(snapshot_of(cluster, base)?),
        (None, None) => Some(Snapshot::new()),
    };
    Ok(CaseInputs {
        module: module.to_string(),
        settings,
        request: request_of(case, base)?,
        cluster,
    })
}

fn request_of(case: &Case, base: &Path) -> anyhow::Result<Value> {
    if let Some(request) = &case.request {
        if case.object.is_some() || case.old_object.is_some() {
            bail!("give either `request` or `object`/`oldObject`, not both");
        }
        return Ok(admission::admission_request(inline_or_file(
            request, base, "request",
        )?)?);
    }
    if case.object.is_none() && case.old_object.is_none() {
        bail!("no input: give `object` (and `oldObject` for an UPDATE) or `request`");
    }
    let object = |value: &Option<Value>, field: &str| -> anyhow::Result<Option<Value>> {
        value
            .as_ref()
            .map(|v| inline_or_file(v, base, field))
            .transpose()
    };
    Ok(admission::request_for_object(ObjectRequest {
        object: object(&case.object, "object")?,
        old_object: object(&case.old_object, "oldObject")?,
        operation: case.operation.clone(),
        namespace: case.namespace.clone(),
        user: Requester {
            username: case.user.clone().unwrap_or_default(),
            groups: case.groups.clone(),
        },
    })?)
}

/// A field given inline (a mapping) or as a file name relative to the
/// suite's directory (a string).
pub(crate) fn inline_or_file(value: &Value, base: &Path, field: &str) -> anyhow::Result<Value> {
    match value {
        Value::Object(_) => Ok(value.clone()),
        Value::String(file) => Ok(admission::read_document(&base.join(file))?),
        other => bail!(
            "{field}: expected a mapping or a file name, got {}",
            decode::json_type(other)
        ),
    }
}

/// A cluster given as a snapshot file (a string) or inline objects (a list).
pub(crate) fn snapshot_of(cluster: &Value, base: &Path) -> anyhow::Result<Snapshot> {
    match cluster {
        Value::String(file) => {
            let path = base.join(file);
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let mut snapshot = Snapshot::new();
            snapshot.add_source(&path.display().to_string(), &text, LoadOptions::STRICT)?;
            Ok(snapshot)
        }
        Value::Array(objects) => {
            Ok(Snapshot::try_from_objects(objects.clone()).context("cluster")?)
        }
        other => bail!(
            "cluster: expected a snapshot file name or a list of objects, got {}",
            decode::json_type(other)
        ),
    }
}
