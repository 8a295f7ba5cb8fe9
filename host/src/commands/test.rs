//! `olm-guard test`: run scenario directories.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use olm_guard_evaluator::scenario::{self, PolicyStore};
use olm_guard_evaluator::suite;

use crate::limits::LimitArgs;
use crate::modules::{DistArgs, ModuleDir, SuiteModules, has_modules, policies_dir};
use crate::output::{self, one_line, truncate, write_json, write_yaml, xml_escape};
use crate::registry::RegistryArgs;
use crate::session::SessionDirArgs;

#[derive(Args)]
#[command(after_help = "\
A scenario is a directory holding (each file JSON or YAML, named .json, .yaml
or .yml):
  expect     what the evaluation must give (required):
             {\"policy\": \"catalog-union\", \"allowed\": true,
              \"message_contains\": \"...\", \"warnings_contain\": [\"...\"],
              \"mutated\": true, \"patched_object_contains\": {...}}
             `policy` and a verdict are required: `allowed`, or
             `settings_error_contains` to expect validate_settings to refuse
             the settings with that text. What is not stated is expected
             absent: each warning must hold a `warnings_contain` entry (none
             without them; `no_warnings: true` says it explicitly), and no
             patch without `mutated: true` or `patched_object_contains`
  request    an AdmissionReview, or a bare AdmissionRequest (required unless
             the settings are expected to be refused)
  settings   the policy's settings (default: {})
  cluster    the cluster snapshot the module's host calls are answered from
A directory with a request, settings or cluster file but no expect file
fails the run; directories with no scenario in or below them are listed as
skipped. The full format: HACKING.md, \"Scenario format\".

A suite file (YAML or JSON, `kind: TestSuite`) lists cases instead: a module,
settings, a bare object with operation and user (or a request), the cluster
or a recorded session, and the expected result, pass | warn | fail | skip,
with message, warnings and patched object. A case with `modules: all` (or a
list) and `objects: FILE` or `bundle: DIR` + `namespace:` judges a whole
install as `olm-guard run all` does, every document with every module that
applies, and expects the install's result (`fail` if any evaluation denied)
and per-object `results`. Format: docs/test-suites.md.

Examples:
  olm-guard test testdata
  olm-guard test examples/suites/catalog-union.yaml     # a suite file
  olm-guard test examples/suites/preflight-memcached.yaml -o junit  # an install gate
  olm-guard test testdata/catalog-union -o json > results.json
  olm-guard test testdata -o junit > junit.xml           # for CI test reports
  olm-guard test testdata --run 'catalog-union/.*update' # only matching scenarios
  olm-guard test ~/my-cases --dist ~/olm-guard/dist

Modules named by name come from --dist DIR, else $OLM_GUARD_DIST, else the
dist/ of the project the scenarios are in (the nearest directory above them
that holds modules), else ./dist, else the modules installed with olm-guard
(<prefix>/share/olm-guard/modules beside <prefix>/bin/olm-guard).

Exit codes: 0 every scenario passed; 1 a scenario failed or a directory is an
incomplete scenario; 2 no scenario was found or the run could not start (no
modules, unreadable --replay-dir).")]
pub struct TestArgs {
    /// Directories to search for scenarios (directories with an expect
    /// file), or suite files (`kind: TestSuite`).
    #[arg(required = true, value_name = "PATH")]
    pub dirs: Vec<PathBuf>,
    #[command(flatten)]
    pub dist: DistArgs,
    /// Output format.
    #[arg(short, long, value_name = "FORMAT", default_value = "text", value_parser = output::format::<TestOutput>())]
    pub output: TestOutput,
    /// Run only the scenarios whose directory path matches this regular
    /// expression (searched for anywhere in the path, as `go test -run`).
    #[arg(long, value_name = "PATTERN")]
    pub run: Option<regex::Regex>,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub sessions: SessionDirArgs,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// How `test` reports.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TestOutput {
    /// The verdict table, one line per scenario, and the count of passed
    /// and failed.
    Text,
    /// The same table (`text` is a table here, as `run`'s `table` is).
    Table,
    /// Every scenario's full result (response and patched object included)
    /// as one JSON document.
    Json,
    /// The same document as YAML.
    Yaml,
    /// JUnit XML, a test case per scenario, for CI systems.
    Junit,
}

/// The suite files directly in `dir` (YAML whose `kind` is `TestSuite`),
/// sorted by name.
fn suites_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| suite::is_suite_file(path))
        .filter(|path| {
            std::fs::read_to_string(path)
                .ok()
                .and_then(|text| serde_yaml_ng::from_str::<serde_json::Value>(&text).ok())
                .is_some_and(|doc| doc.get("kind").and_then(|k| k.as_str()) == Some("TestSuite"))
        })
        .collect();
    files.sort();
    files
}

pub fn test(args: TestArgs) -> anyhow::Result<ExitCode> {
    let (suite_files, dirs): (Vec<PathBuf>, Vec<PathBuf>) = args
        .dirs
        .iter()
        .cloned()
        .partition(|p| suite::is_suite_file(p));
    let mut found = if dirs.is_empty() {
        scenario::Discovery::default()
    } else {
        scenario::discover_all(&dirs)?
    };
    // A directory with no scenario that holds suite files (`test
    // examples/suites/`) stands for them, as `test examples/suites/*.yaml`.
    let mut suite_files = suite_files;
    found.skipped.retain(|(dir, _)| {
        let held = suites_in(dir);
        let none = held.is_empty();
        suite_files.extend(held);
        none
    });
    let suites = suite_files
        .iter()
        .map(|path| Ok((path.clone(), suite::load(path)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if !suites.is_empty()
        && (args.sessions.record_dir.is_some() || args.sessions.replay_dir.is_some())
    {
        anyhow::bail!(
            "--record-dir and --replay-dir apply to scenario directories; a suite case replays a session with `session: FILE`"
        );
    }
    let matches = |label: &PathBuf| {
        args.run
            .as_ref()
            .is_none_or(|p| p.is_match(&display(label)))
    };
    found.scenarios.retain(matches);
    found.incomplete.retain(|(dir, _)| matches(dir));
    let cases: usize = suites
        .iter()
        .map(|(path, suite)| {
            suite
                .cases
                .iter()
                .filter(|c| matches(&suite::case_label(path, c)))
                .count()
        })
        .sum();
    if let Some(pattern) = &args.run
        && found.scenarios.is_empty()
        && found.incomplete.is_empty()
        && cases == 0
    {
        anyhow::bail!("no scenario matches --run {pattern}");
    }
    for (dir, reason) in &found.skipped {
        eprintln!("olm-guard: skipped {}: {reason}", display(dir));
    }
    if found.scenarios.is_empty() && found.incomplete.is_empty() && cases == 0 {
        anyhow::bail!(
            "no scenarios (directories with expect.json) below the given directories, and no suite cases"
        );
    }
    let dist = args.dist.locate_with(project_dist(&args))?;
    let sessions = args.sessions.sessions()?;
    let runtime = args.limits.runtime()?;
    let mut store =
        PolicyStore::new(&runtime, dist.dir.clone()).with_metadata_dir(policies_dir(&dist.dir));
    let mut outcomes: Vec<scenario::Outcome> = found
        .scenarios
        .iter()
        .map(|dir| scenario::run_with(dir, &mut store, &sessions))
        .collect();
    let mut modules = SuiteModules::new(store, &runtime, &dist, &args.registry);
    for (path, suite) in &suites {
        let selected = |label: &Path| matches(&label.to_path_buf());
        outcomes.extend(suite::run(path, suite, &selected, &mut modules));
    }
    let failed = outcomes.iter().filter(|o| !o.passed()).count() + found.incomplete.len();
    let passed = outcomes.len() + found.incomplete.len() - failed;
    let mut out = std::io::stdout().lock();
    match args.output {
        TestOutput::Text | TestOutput::Table => {
            print_table(&mut out, &outcomes)?;
            for (dir, reason) in &found.incomplete {
                writeln!(out, "FAIL  {}  {reason}", display(dir))?;
            }
        }
        TestOutput::Json | TestOutput::Yaml => {
            let results: Vec<serde_json::Value> = outcomes.iter().map(outcome_json).collect();
            let pairs = |list: &[(PathBuf, String)]| -> Vec<serde_json::Value> {
                list.iter()
                    .map(|(dir, reason)| serde_json::json!({"dir": display(dir), "reason": reason}))
                    .collect()
            };
            let document = serde_json::json!({
                "results": results,
                "incomplete": pairs(&found.incomplete),
                "skipped": pairs(&found.skipped),
                "passed": passed,
                "failed": failed,
            });
            if args.output == TestOutput::Json {
                write_json(&mut out, &document)?;
            } else {
                write_yaml(&mut out, &document)?;
            }
        }
        TestOutput::Junit => write!(out, "{}", junit(&outcomes, &found.incomplete))?,
    }
    // The summary CI systems read; on stderr when stdout is data.
    let summary = format!("{passed} passed, {failed} failed");
    match args.output {
        TestOutput::Text | TestOutput::Table => writeln!(out, "{summary}")?,
        TestOutput::Json | TestOutput::Yaml | TestOutput::Junit => eprintln!("{summary}"),
    }
    out.flush()?;
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The `dist/` of the project the first scenario tree is in: the nearest
/// directory above it that holds modules (so `olm-guard test
/// ../olm-guard/testdata` works from anywhere).
fn project_dist(args: &TestArgs) -> Option<ModuleDir> {
    let first = args.dirs.first()?;
    let start = first.canonicalize().ok()?;
    start
        .ancestors()
        .map(|dir| dir.join("dist"))
        .find(|dist| has_modules(dist))
        .map(|dir| ModuleDir {
            chosen_by: format!("the project of {}", first.display()),
            dir,
        })
}

/// The verdict table: one line per scenario, its failures below it.
pub fn print_table(out: &mut impl Write, outcomes: &[scenario::Outcome]) -> std::io::Result<()> {
    let width = outcomes
        .iter()
        .map(|o| display(&o.dir).len())
        .max()
        .unwrap_or(0)
        .min(70);
    for outcome in outcomes {
        let status = if outcome.passed() { "PASS" } else { "FAIL" };
        writeln!(
            out,
            "{status}  {:<width$}  {:<8}  {}",
            display(&outcome.dir),
            outcome.verdict,
            truncate(&one_line(&outcome.message), 100),
        )?;
        for failure in &outcome.failures {
            writeln!(out, "      - {}", one_line(failure))?;
        }
    }
    Ok(())
}

/// One scenario's result as data: what was expected to hold, what failed,
/// and the full response with the patch applied.
pub fn outcome_json(outcome: &scenario::Outcome) -> serde_json::Value {
    let mut json = serde_json::json!({
        "scenario": display(&outcome.dir),
        "policy": outcome.policy,
        "passed": outcome.passed(),
        "verdict": outcome.verdict,
        "message": outcome.message,
        "failures": outcome.failures,
        "response": outcome.response,
        "patchedObject": outcome.patched_object,
    });
    // A suite case judging manifests: each (object, module) evaluated.
    if !outcome.evaluations.is_empty() {
        json["evaluations"] = serde_json::Value::Array(outcome.evaluations.clone());
    }
    json
}

/// JUnit XML as CI systems read it (the Ant schema's `testsuites` /
/// `testsuite` / `testcase` / `failure`): a suite per policy, a case per
/// scenario, the verdict and message as the case's output; an incomplete
/// scenario directory is a failed case of the suite `incomplete`.
pub fn junit(outcomes: &[scenario::Outcome], incomplete: &[(PathBuf, String)]) -> String {
    use std::collections::BTreeMap;
    use std::fmt::Write;

    let mut suites: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut failures: BTreeMap<&str, usize> = BTreeMap::new();
    // A scenario whose module could not answer (a trap, a limit, a lookup
    // that failed) is an error, as `run -o junit` counts one; one that
    // answered otherwise than expected, a failure.
    let mut errors: BTreeMap<&str, usize> = BTreeMap::new();
    for outcome in outcomes {
        let suite = if outcome.policy.is_empty() {
            "unknown"
        } else {
            outcome.policy.as_str()
        };
        let mut case = format!(
            "    <testcase name=\"{}\" classname=\"{}\">\n",
            xml_escape(&display(&outcome.dir)),
            xml_escape(suite)
        );
        if !outcome.passed() {
            let element = if outcome.verdict == "error" {
                *errors.entry(suite).or_default() += 1;
                "error"
            } else {
                *failures.entry(suite).or_default() += 1;
                "failure"
            };
            let _ = writeln!(
                case,
                "      <{element} message=\"{}\">{}</{element}>",
                xml_escape(&one_line(&outcome.failures.join("; "))),
                xml_escape(&outcome.failures.join("\n"))
            );
        }
        let _ = writeln!(
            case,
            "      <system-out>{}: {}</system-out>\n    </testcase>",
            xml_escape(&outcome.verdict),
            xml_escape(&outcome.message)
        );
        suites.entry(suite).or_default().push(case);
    }
    for (dir, reason) in incomplete {
        *failures.entry("incomplete").or_default() += 1;
        suites.entry("incomplete").or_default().push(format!(
            "    <testcase name=\"{}\" classname=\"incomplete\">\n      <failure message=\"{}\"/>\n    </testcase>\n",
            xml_escape(&display(dir)),
            xml_escape(reason)
        ));
    }
    let total: usize = suites.values().map(Vec::len).sum();
    let failed: usize = failures.values().sum();
    let errored: usize = errors.values().sum();
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"olm-guard\" tests=\"{total}\" failures=\"{failed}\" errors=\"{errored}\">\n"
    );
    for (suite, cases) in &suites {
        let _ = writeln!(
            xml,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">",
            xml_escape(suite),
            cases.len(),
            failures.get(suite).copied().unwrap_or(0),
            errors.get(suite).copied().unwrap_or(0)
        );
        for case in cases {
            xml.push_str(case);
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}

/// A scenario directory as reports name it.
fn display(dir: &Path) -> String {
    dir.display().to_string()
}
