//! Scenario tests: a directory with `request.json`, optional `settings.json`
//! and `cluster.yaml`, and `expect.json`, evaluated through the real module.
//! Each file may be JSON or YAML, named `.json`, `.yaml` or `.yml`
//! ([`input_file`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use serde::Deserialize;
use serde_json::Value;

use olm_guard_core::response::AdmissionResponse;
use olm_guard_runtime::Runtime;
use olm_guard_snapshot::{LoadOptions, Snapshot};

use crate::input as admission;
use crate::policy::{Evaluation, Policy};
use crate::session::{SessionRecorder, SessionReplay};

/// `expect.json`: what a scenario's evaluation must give (HACKING.md,
/// "Scenario format"). It states a verdict, `allowed` or
/// `settings_error_contains`; what it leaves out of the response's warnings
/// and patch is expected absent: no warning that no `warnings_contain` entry
/// is in, no patch without `mutated: true` or `patched_object_contains`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The module to run (`<dist>/<policy>.wasm`).
    pub policy: String,
    /// The verdict; required unless `settings_error_contains` is given.
    #[serde(default)]
    pub allowed: Option<bool>,
    /// A substring of `status.message`.
    #[serde(default)]
    pub message_contains: Option<String>,
    /// Substrings each found in some warning, every warning holding one of
    /// them. Empty: the response must carry no warning.
    #[serde(default)]
    pub warnings_contain: Vec<String>,
    /// No warning at all: what an empty `warnings_contain` checks anyway,
    /// said explicitly.
    #[serde(default)]
    pub no_warnings: bool,
    /// Whether the module patched the object; absent, it must not have,
    /// unless `patched_object_contains` is given.
    #[serde(default)]
    pub mutated: Option<bool>,
    /// A JSON subset of the patched object.
    #[serde(default)]
    pub patched_object_contains: Option<Value>,
    /// The settings must be refused by `validate_settings` with this text.
    #[serde(default)]
    pub settings_error_contains: Option<String>,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
}

impl Expect {
    /// Reads the expect file at `path` (JSON or YAML): known fields only,
    /// and checked by [`Expect::problem`]; an error names the file and the
    /// field.
    pub fn read(path: &Path) -> anyhow::Result<Expect> {
        let name = file_name(path);
        let expect: Expect = serde_json::from_value(admission::read_document(path)?)
            .with_context(|| name.clone())?;
        if let Some(problem) = expect.problem() {
            anyhow::bail!("{name}: {problem}");
        }
        Ok(expect)
    }

    /// What makes this expectation unable to fail, or unable to pass: no
    /// verdict, or fields that contradict each other; as `what: the fix`.
    pub fn problem(&self) -> Option<String> {
        if self.settings_error_contains.is_some() {
            let checked_after_settings = [
                ("allowed", self.allowed.is_some()),
                ("message_contains", self.message_contains.is_some()),
                ("warnings_contain", !self.warnings_contain.is_empty()),
                ("no_warnings", self.no_warnings),
                ("mutated", self.mutated.is_some()),
                (
                    "patched_object_contains",
                    self.patched_object_contains.is_some(),
                ),
            ];
            return checked_after_settings
                .iter()
                .find(|(_, given)| *given)
                .map(|(field, _)| {
                    format!(
                        "\"{field}\" is never checked when \"settings_error_contains\" expects the settings refused (no request is evaluated): remove one of them"
                    )
                });
        }
        if self.allowed.is_none() {
            return Some(
                "states no verdict: add \"allowed\": true or false (or \"settings_error_contains\" when the settings must be refused)"
                    .into(),
            );
        }
        if self.no_warnings && !self.warnings_contain.is_empty() {
            return Some(
                "\"no_warnings\": true contradicts \"warnings_contain\": keep one of them".into(),
            );
        }
        if self.mutated == Some(false) && self.patched_object_contains.is_some() {
            return Some(
                "\"mutated\": false contradicts \"patched_object_contains\": keep one of them"
                    .into(),
            );
        }
        None
    }

    /// What [`check`] compares a response with: an absent `mutated` is
    /// `patched_object_contains` given, no `warnings_contain` is no warning,
    /// and a warning no entry of `warnings_contain` is in is not expected.
    pub(crate) fn checks(&self) -> Checks<'_> {
        Checks {
            allowed: self.allowed,
            message_contains: self.message_contains.as_deref(),
            warnings: if self.warnings_contain.is_empty() {
                Warnings::None
            } else {
                Warnings::Exactly(&self.warnings_contain)
            },
            mutated: self
                .mutated
                .unwrap_or(self.patched_object_contains.is_some()),
            patched_object_contains: self.patched_object_contains.as_ref(),
        }
    }
}

/// What [`check`] compares a response with, every default resolved.
pub(crate) struct Checks<'a> {
    /// The verdict, when the caller has not checked it otherwise.
    pub allowed: Option<bool>,
    /// A substring of the message.
    pub message_contains: Option<&'a str>,
    /// What the warnings must be.
    pub warnings: Warnings<'a>,
    /// Whether the module must have patched the object.
    pub mutated: bool,
    /// A JSON subset of the patched object.
    pub patched_object_contains: Option<&'a Value>,
}

/// What a response's warnings must be.
pub(crate) enum Warnings<'a> {
    /// None at all.
    None,
    /// Each substring found in some warning.
    Contain(&'a [String]),
    /// Each substring found in some warning, and each warning holding one
    /// of them: a warning nobody stated is not expected.
    Exactly(&'a [String]),
}

/// The extensions a scenario file may have, in the order they are looked for.
const EXTENSIONS: [&str; 3] = ["json", "yaml", "yml"];

/// The scenario file `<stem>.json`, `<stem>.yaml` or `<stem>.yml` in `dir`,
/// if there is one; two of them is an error (which one counts would be a
/// guess).
pub fn input_file(dir: &Path, stem: &str) -> anyhow::Result<Option<PathBuf>> {
    let found: Vec<PathBuf> = EXTENSIONS
        .iter()
        .map(|ext| dir.join(format!("{stem}.{ext}")))
        .filter(|path| path.is_file())
        .collect();
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        [first, second, ..] => anyhow::bail!(
            "{} holds both {} and {}: keep one",
            dir.display(),
            file_name(first),
            file_name(second)
        ),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What a walk of scenario trees found.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Scenario directories (holding an `expect` file), sorted.
    pub scenarios: Vec<PathBuf>,
    /// Directories that hold scenario inputs (`request`, `settings`,
    /// `cluster`) but no `expect` file: a broken case, which fails a run.
    pub incomplete: Vec<(PathBuf, String)>,
    /// Directories with no scenario in or below them (fixtures, notes),
    /// the topmost of each such tree, with the reason they were skipped.
    pub skipped: Vec<(PathBuf, String)>,
}

/// Every scenario directory (one holding `expect.json` or `expect.yaml`)
/// below `roots`, sorted.
pub fn discover(roots: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    Ok(discover_all(roots)?.scenarios)
}

/// Every scenario directory below `roots`, and every directory that is not
/// one, with the reason: nothing is skipped unsaid.
pub fn discover_all(roots: &[PathBuf]) -> anyhow::Result<Discovery> {
    let mut found = Discovery::default();
    for root in roots {
        if !root.exists() {
            anyhow::bail!(
                "{}: no such file or directory: give a directory of scenarios or a suite file (`kind: TestSuite`, .yaml, .yml or .json)",
                root.display()
            );
        }
        if !root.is_dir() {
            anyhow::bail!(
                "{} is neither a directory of scenarios nor a suite file (`kind: TestSuite`, named .yaml, .yml or .json)",
                root.display()
            );
        }
        walk(root, &mut found)?;
    }
    found.scenarios.sort();
    found.incomplete.sort();
    found.skipped.sort();
    Ok(found)
}

/// Walks `dir`; true when a scenario was found in or below it.
fn walk(dir: &Path, found: &mut Discovery) -> anyhow::Result<bool> {
    if input_file(dir, "expect")?.is_some() {
        found.scenarios.push(dir.to_path_buf());
        return Ok(true);
    }
    let inputs: Vec<String> = ["request", "settings", "cluster"]
        .iter()
        .filter_map(|stem| input_file(dir, stem).ok().flatten())
        .map(|path| file_name(&path))
        .collect();
    if !inputs.is_empty() {
        found.incomplete.push((
            dir.to_path_buf(),
            format!(
                "holds {} but no expect.json or expect.yaml: add one saying what the evaluation must give",
                inputs.join(", ")
            ),
        ));
        return Ok(true);
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .with_context(|| format!("cannot list {}", dir.display()))?;
    entries.sort();
    let skipped_before = found.skipped.len();
    let mut any = false;
    for path in entries.iter().filter(|p| p.is_dir()) {
        any |= walk(path, found)?;
    }
    if !any {
        // One line for a whole tree without scenarios (`testdata/upstream`,
        // not also each directory below it).
        found.skipped.truncate(skipped_before);
        found.skipped.push((
            dir.to_path_buf(),
            "no scenario (no expect.json or expect.yaml) in or below it".into(),
        ));
    }
    Ok(any)
}

/// Modules by policy name, compiled once per run.
pub struct PolicyStore<'a> {
    runtime: &'a Runtime,
    dist: PathBuf,
    metadata_dir: Option<PathBuf>,
    loaded: HashMap<String, Arc<Policy>>,
}

impl<'a> PolicyStore<'a> {
    /// Modules from `dist/<name>.wasm`.
    pub fn new(runtime: &'a Runtime, dist: PathBuf) -> Self {
        PolicyStore {
            runtime,
            dist,
            metadata_dir: None,
            loaded: HashMap::new(),
        }
    }

    /// Where `<name>/metadata.yml` is found for modules that embed none
    /// (e.g. a project's `policies/`).
    pub fn with_metadata_dir(mut self, dir: PathBuf) -> Self {
        self.metadata_dir = Some(dir);
        self
    }

    /// `dist/<name>.wasm`; metadata embedded, or else
    /// `<metadata dir>/<name>/metadata.yml`.
    pub fn get(&mut self, name: &str) -> anyhow::Result<Arc<Policy>> {
        if let Some(policy) = self.loaded.get(name) {
            return Ok(policy.clone());
        }
        let module = self.dist.join(format!("{name}.wasm"));
        let mut policy = Policy::load(self.runtime, &module, None)?;
        if policy.metadata.is_none()
            && let Some(dir) = &self.metadata_dir
        {
            let fallback = dir.join(name).join("metadata.yml");
            if fallback.is_file() {
                policy = Policy::load(self.runtime, &module, Some(&fallback))?;
            }
        }
        let policy = Arc::new(policy);
        self.loaded.insert(name.to_string(), policy.clone());
        Ok(policy)
    }
}

/// What one scenario gave.
pub struct Outcome {
    /// The scenario directory.
    pub dir: PathBuf,
    /// The policy it ran.
    pub policy: String,
    /// `allowed`, `mutated`, `denied`, `settings refused` or `error`.
    pub verdict: String,
    /// The response's message (or the settings error).
    pub message: String,
    /// Every expectation that did not hold.
    pub failures: Vec<String>,
    /// The full response, when the module answered.
    pub response: Option<AdmissionResponse>,
    /// The request's object with the response's patch applied, when the
    /// module mutated it.
    pub patched_object: Option<Value>,
    /// A suite case judging manifests with several modules: one entry per
    /// (object, module) evaluated (`source`, `object`, `policy`, `result`,
    /// `message`, `warnings`); empty otherwise.
    pub evaluations: Vec<Value>,
}

impl Outcome {
    /// An outcome labelled `dir` that nothing has been recorded in yet: an
    /// `error` verdict until the evaluation says otherwise.
    pub fn pending(dir: PathBuf) -> Outcome {
        Outcome {
            dir,
            policy: String::new(),
            verdict: "error".into(),
            message: String::new(),
            failures: Vec::new(),
            response: None,
            patched_object: None,
            evaluations: Vec::new(),
        }
    }

    /// No expectation failed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Where scenarios' host calls are answered from, and whether they are kept
/// (recorded host-capability sessions in kwctl's format, [`crate::session`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Sessions {
    /// From each scenario's `cluster.yaml`.
    #[default]
    Snapshot,
    /// From `cluster.yaml`, every exchange written to
    /// [`session_path`]`(dir, policy, scenario)`.
    Record(PathBuf),
    /// From the session at [`session_path`]`(dir, policy, scenario)`;
    /// `cluster.yaml` is not read.
    Replay(PathBuf),
}

/// A scenario's session file below `root`: `<root>/<policy>/<scenario>.yml`.
pub fn session_path(root: &Path, policy: &str, scenario: &Path) -> PathBuf {
    let name = scenario
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    root.join(policy).join(format!("{name}.yml"))
}

/// Runs the scenario in `dir`; every failure (including unreadable files) is
/// in the outcome, never an `Err`.
pub fn run(dir: &Path, store: &mut PolicyStore) -> Outcome {
    run_with(dir, store, &Sessions::Snapshot)
}

/// [`run`], answering host calls as `sessions` says.
pub fn run_with(dir: &Path, store: &mut PolicyStore, sessions: &Sessions) -> Outcome {
    let mut outcome = Outcome::pending(dir.to_path_buf());
    if let Err(e) = evaluate(dir, store, sessions, &mut outcome) {
        outcome.failures.push(format!("{e:#}"));
    }
    outcome
}

fn evaluate(
    dir: &Path,
    store: &mut PolicyStore,
    sessions: &Sessions,
    outcome: &mut Outcome,
) -> anyhow::Result<()> {
    let expect_path = input_file(dir, "expect")?
        .with_context(|| format!("{}: no expect.json or expect.yaml", dir.display()))?;
    let expect = Expect::read(&expect_path)?;
    outcome.policy = expect.policy.clone();
    let policy = store.get(&expect.policy)?;
    let settings = admission::settings_object(match input_file(dir, "settings")? {
        Some(path) => Some(admission::read_document(&path)?),
        None => None,
    })?;

    if check_settings(
        &policy,
        &settings,
        expect.settings_error_contains.as_deref(),
        outcome,
    )? {
        return Ok(());
    }

    let request_path = input_file(dir, "request")?
        .with_context(|| format!("{}: no request.json or request.yaml", dir.display()))?;
    let request = admission::admission_request(admission::read_document(&request_path)?)
        .with_context(|| file_name(&request_path))?;
    let evaluation = validate_in_context(
        &policy,
        &request,
        &settings,
        dir,
        sessions,
        &mut outcome.failures,
    )?;
    let response = evaluation.response;
    outcome.verdict = verdict_word(&response).into();
    outcome.message = response.message().to_string();
    check(&expect.checks(), &request, &response, &mut outcome.failures)?;
    outcome.patched_object = response.patched_object(&request)?;
    outcome.response = Some(response);
    Ok(())
}

fn load_snapshot(dir: &Path) -> anyhow::Result<Snapshot> {
    let mut snapshot = Snapshot::new();
    if let Some(cluster_path) = input_file(dir, "cluster")? {
        let text = std::fs::read_to_string(&cluster_path)?;
        snapshot.add_source(&file_name(&cluster_path), &text, LoadOptions::STRICT)?;
    }
    Ok(snapshot)
}

/// `validate` with host calls answered from the snapshot (recording them) or
/// from the recorded session; a replay that does not match the calls, or is
/// not used up, is a failure of the scenario.
fn validate_in_context(
    policy: &Policy,
    request: &Value,
    settings: &Value,
    dir: &Path,
    sessions: &Sessions,
    failures: &mut Vec<String>,
) -> anyhow::Result<Evaluation> {
    Ok(match sessions {
        Sessions::Snapshot => policy.validate(request, settings, Arc::new(load_snapshot(dir)?))?,
        Sessions::Record(root) => {
            let recorder = Arc::new(SessionRecorder::new(Arc::new(load_snapshot(dir)?)));
            let evaluation = policy.validate(request, settings, recorder.clone())?;
            recorder
                .session()
                .save(&session_path(root, &policy.name, dir))?;
            evaluation
        }
        Sessions::Replay(root) => {
            let path = session_path(root, &policy.name, dir);
            let replay = Arc::new(SessionReplay::load(&path).with_context(|| {
                format!(
                    "record the sessions first: olm-guard test --record-dir {}",
                    root.display()
                )
            })?);
            let evaluation = policy.validate(request, settings, replay.clone())?;
            failures.extend(replay.problems());
            let left = replay.remaining();
            if left > 0 {
                failures.push(format!(
                    "{}: {left} recorded exchange(s) not replayed: the module made fewer host calls than recorded",
                    path.display()
                ));
            }
            evaluation
        }
    })
}

/// Runs `validate_settings`. With `expected_error`, the settings must be
/// refused with a message containing it: the outcome records the refusal
/// (or its absence) and `true` says the case ends there. Without it, a
/// refusal is the case's error.
pub(crate) fn check_settings(
    policy: &Policy,
    settings: &Value,
    expected_error: Option<&str>,
    outcome: &mut Outcome,
) -> anyhow::Result<bool> {
    let settings_check = policy.validate_settings(settings);
    let Some(expected) = expected_error else {
        settings_check?;
        return Ok(false);
    };
    match settings_check {
        Ok(()) => outcome
            .failures
            .push("settings were accepted, expected a rejection".into()),
        Err(e) => {
            let text = e.to_string();
            outcome.verdict = "settings refused".into();
            outcome.message = text.clone();
            if !text.contains(expected) {
                outcome.failures.push(format!(
                    "settings error {text:?} does not contain {expected:?}"
                ));
            }
        }
    }
    Ok(true)
}

fn verdict_word(response: &AdmissionResponse) -> &'static str {
    match (response.allowed, response.patch.is_some()) {
        (true, true) => "mutated",
        (true, false) => "allowed",
        (false, _) => "denied",
    }
}

/// Every way `response` (to `request`) differs from `checks`, into
/// `failures`.
pub(crate) fn check(
    checks: &Checks,
    request: &Value,
    response: &AdmissionResponse,
    failures: &mut Vec<String>,
) -> anyhow::Result<()> {
    if let Some(allowed) = checks.allowed
        && response.allowed != allowed
    {
        failures.push(format!(
            "expected allowed={allowed}, got allowed={} ({:?})",
            response.allowed,
            response.message()
        ));
    }
    if let Some(text) = checks.message_contains
        && !response.message().contains(text)
    {
        failures.push(format!(
            "message {:?} does not contain {text:?}",
            response.message()
        ));
    }
    let warnings = response.warnings.clone().unwrap_or_default();
    match checks.warnings {
        Warnings::None => {
            if !warnings.is_empty() {
                failures.push(format!(
                    "expected no warnings (none are expected unless listed in warnings_contain), got {warnings:?}"
                ));
            }
        }
        Warnings::Contain(texts) | Warnings::Exactly(texts) => {
            for text in texts {
                if !warnings.iter().any(|w| w.contains(text.as_str())) {
                    failures.push(format!(
                        "no warning contains {text:?} (warnings: {warnings:?})"
                    ));
                }
            }
        }
    }
    if let Warnings::Exactly(texts) = checks.warnings {
        for warning in &warnings {
            if !texts.iter().any(|text| warning.contains(text.as_str())) {
                failures.push(format!(
                    "unexpected warning {warning:?}: no entry of warnings_contain is in it; add one"
                ));
            }
        }
    }
    if response.patch.is_some() != checks.mutated {
        failures.push(format!(
            "expected mutated={}, got patch {:?}",
            checks.mutated,
            response.decoded_patch()?
        ));
    }
    if let Some(subset) = checks.patched_object_contains {
        match response.patched_object(request)? {
            // `mutated` is true with a subset to match: reported above.
            None => {}
            Some(patched) => {
                if let Some(path) = first_mismatch(subset, &patched, String::new()) {
                    failures.push(format!("patched object differs at {path}: {patched}"));
                }
            }
        }
    }
    Ok(())
}

/// Where `actual` does not contain `expected` (objects: subset; others: equal).
pub fn first_mismatch(expected: &Value, actual: &Value, path: String) -> Option<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            e.iter().find_map(|(key, value)| match a.get(key) {
                Some(inner) => first_mismatch(value, inner, format!("{path}/{key}")),
                None => Some(format!("{path}/{key} (missing)")),
            })
        }
        _ if expected == actual => None,
        _ => Some(if path.is_empty() { "/".into() } else { path }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn expect(value: Value) -> Expect {
        serde_json::from_value(value).unwrap()
    }

    /// An admitted response with these warnings and, with `patched`, a
    /// patch (`[]` in base64).
    fn response(warnings: &[&str], patched: bool) -> AdmissionResponse {
        AdmissionResponse {
            allowed: true,
            warnings: Some(warnings.iter().map(|w| w.to_string()).collect()),
            patch_type: patched.then(|| "JSONPatch".into()),
            patch: patched.then(|| "W10=".into()),
            ..Default::default()
        }
    }

    fn failures(expect: &Expect, response: &AdmissionResponse) -> Vec<String> {
        let mut failures = Vec::new();
        let request = json!({"object": {}});
        check(&expect.checks(), &request, response, &mut failures).unwrap();
        failures
    }

    #[test]
    fn an_expectation_without_a_verdict_is_refused_naming_the_field() {
        let problem = expect(json!({"policy": "p"})).problem().unwrap();
        assert!(
            problem.contains("states no verdict: add \"allowed\""),
            "{problem}"
        );
        assert!(problem.contains("settings_error_contains"), "{problem}");
        assert_eq!(
            expect(json!({"policy": "p", "allowed": true})).problem(),
            None
        );
        assert_eq!(
            expect(json!({"policy": "p", "settings_error_contains": "x"})).problem(),
            None
        );
        let unchecked =
            expect(json!({"policy": "p", "settings_error_contains": "x", "mutated": false}))
                .problem()
                .unwrap();
        assert!(
            unchecked.contains("\"mutated\" is never checked"),
            "{unchecked}"
        );
        let contradiction = expect(
            json!({"policy": "p", "allowed": true, "no_warnings": true, "warnings_contain": ["a"]}),
        )
        .problem()
        .unwrap();
        assert!(contradiction.contains("contradicts"), "{contradiction}");
        let patch = expect(json!({"policy": "p", "allowed": true, "mutated": false, "patched_object_contains": {}}))
            .problem()
            .unwrap();
        assert!(
            patch.contains("contradicts \"patched_object_contains\""),
            "{patch}"
        );
    }

    #[test]
    fn warnings_and_patches_left_unstated_are_expected_absent() {
        let plain = expect(json!({"policy": "p", "allowed": true}));
        assert!(failures(&plain, &response(&[], false)).is_empty());
        let warned = failures(&plain, &response(&["careful"], false));
        assert!(warned[0].contains("expected no warnings"), "{warned:?}");
        let patched = failures(&plain, &response(&[], true));
        assert!(patched[0].contains("expected mutated=false"), "{patched:?}");
        // `patched_object_contains` implies a patch.
        let subset = expect(json!({"policy": "p", "allowed": true, "patched_object_contains": {}}));
        let unpatched = failures(&subset, &response(&[], false));
        assert_eq!(unpatched.len(), 1, "{unpatched:?}");
        assert!(
            unpatched[0].contains("expected mutated=true"),
            "{unpatched:?}"
        );
        assert!(failures(&subset, &response(&[], true)).is_empty());
    }

    #[test]
    fn every_warning_is_stated_and_every_stated_warning_is_given() {
        let one = expect(json!({"policy": "p", "allowed": true, "warnings_contain": ["renamed"]}));
        assert!(failures(&one, &response(&["x was renamed to y"], false)).is_empty());
        let extra = failures(&one, &response(&["x was renamed to y", "and z"], false));
        assert_eq!(extra.len(), 1, "{extra:?}");
        assert!(
            extra[0].contains("unexpected warning \"and z\""),
            "{extra:?}"
        );
        let missing = failures(&one, &response(&[], false));
        assert!(
            missing[0].contains("no warning contains \"renamed\""),
            "{missing:?}"
        );
    }
}
