//! What the integration tests of `olm-guard` share: where the project is,
//! and its built modules. Each test binary uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub mod cluster;
pub mod oci_registry;
pub mod readme;

use olm_guard_rules::registry;

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `olm-guard` run in the repository's root with `args`, its output
/// captured (the paths a failure message shows are the ones to type there).
pub fn olm_guard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .current_dir(root())
        .args(args)
        .output()
        .expect("olm-guard runs")
}

/// The compile cache the tests share, kept when a test replaces HOME (each
/// command would otherwise compile every module again).
pub fn compile_cache() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("olm-guard/compiled")
}

/// `olm-guard` in the repository with `args` and `env`, as a user whose
/// HOME is `home` (its ~/.kube/config, if any) and who has no KUBECONFIG,
/// unless `env` sets them.
pub fn olm_guard_at_home(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .current_dir(root())
        .env_remove("KUBECONFIG")
        .env("HOME", home)
        .env("OLM_GUARD_DIST", dist())
        .env("OLM_GUARD_COMPILE_CACHE_DIR", compile_cache())
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .args(args)
        .output()
        .expect("olm-guard runs")
}

/// `command` run with `stdin` written to it and its output captured. The
/// input is written on a thread of its own, so that a process that answers
/// before reading all of it cannot block the test; a run that never reads
/// stdin closes it early, which is fine.
pub fn output_with_stdin(mut command: Command, stdin: &str) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("olm-guard runs");
    let mut pipe = child.stdin.take().expect("stdin");
    let input = stdin.to_string();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = pipe.write_all(input.as_bytes());
    });
    let output = child.wait_with_output().expect("olm-guard finishes");
    writer.join().expect("stdin written");
    output
}

/// Writes `content` to `dir/name` and gives the path, as an argument.
pub fn write(dir: &Path, name: &str, content: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path.display().to_string()
}

/// A CatalogSource as OperatorHub's install ships it: one source, allowed.
pub const CATALOG_SOURCE: &str = "apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  name: operatorhubio-catalog
  namespace: olm
spec:
  sourceType: grpc
  image: quay.io/operatorhubio/catalog:latest
";

/// A process's output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The one JSON document a `-o json` printed (a test fails on anything
/// else: two documents one after the other are not JSON), and its items:
/// those of a `List`, or the document itself.
pub fn json_items(stdout: &[u8]) -> Vec<serde_json::Value> {
    let document: serde_json::Value = serde_json::from_slice(stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document: {e}\n{}", text(stdout)));
    list_items(document)
}

/// The one YAML document a `-o yaml` printed, and its items, as
/// [`json_items`].
pub fn yaml_items(stdout: &[u8]) -> Vec<serde_json::Value> {
    let document: serde_json::Value = serde_yaml_ng::from_slice(stdout)
        .unwrap_or_else(|e| panic!("stdout is not one YAML document: {e}\n{}", text(stdout)));
    list_items(document)
}

fn list_items(document: serde_json::Value) -> Vec<serde_json::Value> {
    if document["kind"] == "List" {
        return document["items"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("a List without items: {document}"));
    }
    vec![document]
}

/// The built modules: `dist/` (or `$OLM_GUARD_DIST`), checked to hold a
/// module for every registered rule so a missing build fails with the fix.
pub fn dist() -> PathBuf {
    let dist = std::env::var_os("OLM_GUARD_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("dist"));
    for name in registry::names() {
        assert!(
            dist.join(format!("{name}.wasm")).is_file(),
            "{}/{name}.wasm is missing: build the modules first (make dist)",
            dist.display()
        );
    }
    dist
}

/// The built module `name`.
pub fn module(name: &str) -> PathBuf {
    dist().join(format!("{name}.wasm"))
}

/// The first of `names` found on `PATH` (Debian's `chromium`, say, where
/// `scripts/test-deps.sh` installs it).
pub fn on_path(names: &[&str]) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    names.iter().find_map(|name| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    })
}

/// The first of `names` on `PATH`, for a test that needs the tool: when
/// none is there the test fails naming the tool and Debian's `package` that
/// installs it. A missing tool is a failure, never a pass.
pub fn required_tool(names: &[&str], package: &str) -> PathBuf {
    on_path(names).unwrap_or_else(|| panic!("{}", missing_tool(names, package)))
}

/// The line that names a missing tool and how to install it.
pub fn missing_tool(names: &[&str], package: &str) -> String {
    format!(
        "{} is not installed (looked for {} on PATH): install Debian's {package} with \
         `sudo scripts/test-deps.sh` (every test tool) or `sudo apt-get install -y {package}`",
        names.first().copied().unwrap_or(package),
        names.join(", ")
    )
}

/// The upstream file `path` below `testdata/upstream/`, copied there
/// verbatim (testdata/upstream/README.md names its source); a missing file
/// fails the test rather than skipping it.
pub fn upstream(path: &str) -> PathBuf {
    let file = root().join("testdata/upstream").join(path);
    assert!(
        file.is_file(),
        "testdata/upstream/{path} is missing: it belongs to the repository \
         (testdata/upstream/README.md names its source); restore it with \
         `git checkout -- testdata/upstream`"
    );
    file
}

/// The stdout of a command that must have succeeded (its exit code and
/// stderr said when it did not).
pub fn succeeds(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}: {}",
        output.status.code(),
        text(&output.stderr)
    );
    text(&output.stdout)
}

/// The stderr of a command that exited 2 and wrote nothing on stdout.
pub fn refused(output: &Output) -> String {
    let stderr = text(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(2),
        "exit {:?}\nstdout: {}\nstderr: {stderr}",
        output.status.code(),
        text(&output.stdout)
    );
    assert!(output.stdout.is_empty(), "stdout: {}", text(&output.stdout));
    stderr
}

/// The one line a command that exited 2, writing nothing on stdout, said
/// on stderr (the progress lines of what it read, and its notes, aside).
pub fn refused_in_one_line(output: &Output) -> String {
    let stderr = refused(output);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("olm-guard: read ") && !l.starts_with("olm-guard: note: "))
        .collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    lines[0].to_string()
}
