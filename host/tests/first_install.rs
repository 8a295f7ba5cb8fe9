//! What a new user meets installing olm-guard and wiring it into CI, each
//! command run as they would type it: one rule for a file with no
//! Kubernetes object, a flag that does nothing refused, a limit named as the
//! limit, a directory of suite files, the playground found where the
//! modules are, a registry that does not answer, the help of every flag,
//! JUnit with its errors, and what to do without a kubeconfig.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use common::{dist, olm_guard, olm_guard_at_home, refused, refused_in_one_line, succeeds, write};

const NOT_KUBERNETES: &str = "hello: world\nitems: [1, 2]\n";

/// A file that holds no Kubernetes object is refused by every command that
/// reads one, as an empty file is (exit 2, naming it), never audited as a
/// cluster of nothing.
#[test]
fn a_file_with_no_kubernetes_object_is_refused_alike_by_audit_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "notk8s.yaml", NOT_KUBERNETES);
    let dist = dist().display().to_string();
    let audit = refused_in_one_line(&olm_guard(&["audit", "--dist", &dist, "--cluster", &file]));
    assert!(
        audit.contains(&format!(
            "--cluster {file}: no document in it is a Kubernetes object"
        )) && audit.contains("has no apiVersion and kind"),
        "{audit}"
    );
    let run = refused(&olm_guard(&[
        "run",
        "--dist",
        &dist,
        "og-intersection",
        "--object",
        &file,
        "--no-cluster",
    ]));
    assert!(run.contains("apiVersion"), "{run}");
    // --allow-empty says an empty cluster is meant: the document is then
    // reported, as any unreadable one in a dump.
    let allowed = olm_guard(&[
        "audit",
        "--dist",
        &dist,
        "--cluster",
        &file,
        "--allow-empty",
    ]);
    assert!(succeeds(&allowed).contains("has no apiVersion and kind"));
}

/// `--report-kind` chooses the kind of reports `-o report` prints and
/// `--write-reports` writes: without either it would do nothing, so it is
/// refused, saying which flag it goes with.
#[test]
fn a_report_kind_without_reports_is_refused() {
    let dist = dist().display().to_string();
    let line = refused_in_one_line(&olm_guard(&[
        "audit",
        "--dist",
        &dist,
        "--cluster",
        "examples/audit/cluster.yaml",
        "--report-kind",
        "policyreport",
    ]));
    assert!(
        line.contains("add -o report (or --write-reports)"),
        "{line}"
    );
    let reports = succeeds(&olm_guard(&[
        "audit",
        "--dist",
        &dist,
        "--cluster",
        "examples/audit/cluster.yaml",
        "--report-kind",
        "policyreport",
        "-o",
        "report",
    ]));
    assert!(reports.contains("kind: PolicyReport"), "{reports}");
}

/// A module that runs out of memory validating its settings is named with
/// the limit it hit, not blamed on settings nobody gave.
#[test]
fn a_limit_hit_before_any_evaluation_names_the_limit() {
    let dist = dist().display().to_string();
    let line = refused_in_one_line(&olm_guard(&[
        "audit",
        "--dist",
        &dist,
        "--cluster",
        "examples/audit/cluster.yaml",
        "--memory-limit-mib",
        "1",
    ]));
    assert!(
        line.contains("exceeded the memory limit of 1 MiB")
            && line.contains("while validating its settings")
            && line.contains("raise --memory-limit-mib"),
        "{line}"
    );
    assert!(!line.contains("--settings"), "{line}");
    let zero = refused(&olm_guard(&[
        "run",
        "--dist",
        &dist,
        "catalog-union",
        "--object",
        "examples/kubewarden/my-app-1.yaml",
        "--timeout-ms",
        "0",
    ]));
    assert!(zero.contains("'0' for '--timeout-ms"), "{zero}");
}

/// `test DIR` of a directory of suite files runs them, as the shell's
/// `DIR/*.yaml` would.
#[test]
fn a_directory_of_suite_files_is_its_suites() {
    let dist = dist().display().to_string();
    let dir = succeeds(&olm_guard(&["test", "--dist", &dist, "examples/suites/"]));
    let files: Vec<String> = std::fs::read_dir(common::root().join("examples/suites"))
        .unwrap()
        .map(|e| {
            format!(
                "examples/suites/{}",
                e.unwrap().file_name().to_string_lossy()
            )
        })
        .collect();
    let mut args = vec!["test", "--dist", &dist];
    args.extend(files.iter().map(String::as_str));
    let each = succeeds(&olm_guard(&args));
    let tally = |text: &str| text.lines().last().unwrap_or("").to_string();
    assert_eq!(tally(&dir), tally(&each));
    assert!(tally(&dir).ends_with(" passed, 0 failed"), "{dir}");
}

/// `test -o junit` counts errors (a module that could not answer) apart
/// from failures, as `run -o junit` does; a case's message counts in the
/// singular when there is one.
#[test]
fn junit_of_test_counts_errors_and_one_is_singular() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "suite.yaml",
        "kind: TestSuite\nname: one\nmodules: [catalog-union]\ncases:\n\
         - name: one object\n  objects:\n  - apiVersion: operators.coreos.com/v1alpha1\n    \
         kind: CatalogSource\n    metadata: {name: c, namespace: olm}\n    \
         spec: {sourceType: grpc, image: quay.io/x/y:1}\n  expect: {result: pass}\n",
    );
    let dist = dist().display().to_string();
    let junit = succeeds(&olm_guard(&[
        "test", "--dist", &dist, &suite, "-o", "junit",
    ]));
    assert!(
        junit.contains("<testsuites name=\"olm-guard\" tests=\"1\" failures=\"0\" errors=\"0\">"),
        "{junit}"
    );
    assert!(
        junit.contains("1 object, 1 evaluation, 0 denied"),
        "{junit}"
    );
}

/// `<binary> playground --port 0` with `env`, in `cwd`: the line it prints
/// first (its address), or what it said when it stopped.
fn playground(binary: &Path, cwd: &Path, env: &[(&str, &str)]) -> Result<String, String> {
    let mut child = Command::new(binary)
        .args(["playground", "--port", "0"])
        .current_dir(cwd)
        .env_remove("OLM_GUARD_DIST")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("olm-guard playground starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    if line.is_empty() {
        return Err(common::text(&output.stderr));
    }
    Ok(line)
}

/// The playground is found where the modules are: `$OLM_GUARD_DIST`'s
/// `playground/`, and, installed, `share/olm-guard/playground` beside the
/// modules (what `make install` writes).
#[test]
fn the_playground_is_found_where_the_modules_are() {
    let dir = tempfile::tempdir().unwrap();
    let modules = dir.path().join("modules");
    std::fs::create_dir_all(modules.join("playground")).unwrap();
    std::fs::write(modules.join("playground/index.html"), "<html></html>").unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let served = playground(
        Path::new(env!("CARGO_BIN_EXE_olm-guard")),
        elsewhere.path(),
        &[("OLM_GUARD_DIST", modules.to_str().unwrap())],
    )
    .unwrap();
    assert!(
        served.contains(&format!("serving {}", modules.join("playground").display())),
        "{served}"
    );

    // Installed: <prefix>/bin/olm-guard, <prefix>/share/olm-guard/{modules,playground}.
    let prefix = dir.path().join("prefix");
    let share = prefix.join("share/olm-guard");
    std::fs::create_dir_all(share.join("modules")).unwrap();
    std::fs::create_dir_all(share.join("playground")).unwrap();
    std::fs::write(share.join("playground/index.html"), "<html></html>").unwrap();
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    let installed = prefix.join("bin/olm-guard");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_olm-guard"), &installed).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_olm-guard"), &installed).unwrap();
    }
    let line = playground(&installed, elsewhere.path(), &[]).unwrap();
    assert!(
        line.contains(&format!("serving {}", share.join("playground").display())),
        "{line}"
    );

    // Nothing built: the fix is named.
    let empty = tempfile::tempdir().unwrap();
    let said = playground(
        Path::new(env!("CARGO_BIN_EXE_olm-guard")),
        elsewhere.path(),
        &[("OLM_GUARD_DIST", empty.path().to_str().unwrap())],
    )
    .unwrap_err();
    assert!(
        said.contains("has no index.html") && said.contains("make playground"),
        "{said}"
    );
}

/// A registry where nothing listens: one line naming it and what to check,
/// not the HTTP client's chain of errors.
#[test]
fn a_registry_that_does_not_answer_is_one_line_naming_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let reference = format!("registry://127.0.0.1:{port}/olm-guard/catalog-union:v1");
    let want = format!(
        "olm-guard: {reference}: cannot reach the registry at 127.0.0.1:{port} (connection \
         refused): check that it runs and that the host and port are right"
    );
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("m.wasm");
    let module = dist().join("catalog-union.wasm");
    let pull = ["pull", &reference, "--output-file", file.to_str().unwrap()];
    let push = ["push", module.to_str().unwrap(), &reference];
    for args in [&pull[..], &push[..]] {
        assert_eq!(refused_in_one_line(&olm_guard(args)), want, "{args:?}");
    }
}

/// Every flag of `annotate` says what it takes.
#[test]
fn every_flag_of_annotate_has_its_help() {
    let help = succeeds(&olm_guard(&["annotate", "--help"]));
    let line = help
        .lines()
        .find(|l| l.trim_start().starts_with("-m, --metadata"))
        .unwrap_or_else(|| panic!("{help}"));
    assert!(line.contains("metadata.yml to embed"), "{line}");
}

/// With no kubeconfig anywhere, `audit` says both ways to give it a
/// cluster: a live one, or files.
#[test]
fn an_audit_without_any_cluster_names_both_ways_to_give_one() {
    let home = tempfile::tempdir().unwrap();
    let line = refused_in_one_line(&olm_guard_at_home(home.path(), &["audit"], &[]));
    assert!(
        line.contains("pass --kubeconfig PATH for a live cluster, or --cluster FILE"),
        "{line}"
    );
}
