//! A policy module ready to evaluate: compiled code plus its metadata.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use olm_guard_core::response::{AdmissionResponse, ValidationResponse};
use olm_guard_runtime::metadata::{Metadata, MetadataError};
use olm_guard_runtime::{CallError, HostCallback, LoadError, Module, Runtime};

use crate::host::{CallRecord, ClusterContext, ContextHost, Grants};

/// Why a policy could not be loaded or asked something.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A file could not be read.
    #[error("cannot read {what} {}", path.display())]
    Read {
        /// `module` or `metadata`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The module could not be compiled or linked.
    #[error("cannot load {}", path.display())]
    Load {
        /// The module file (or its name).
        path: PathBuf,
        /// Why.
        #[source]
        source: LoadError,
    },
    /// Metadata (embedded or given) is not valid.
    #[error("{}", path.display())]
    Metadata {
        /// Where the metadata came from.
        path: PathBuf,
        /// Why it is not valid.
        #[source]
        source: MetadataError,
    },
    /// An operation failed inside the module (trap, deadline, memory).
    /// (The error is in the message, not also a source, which `{:#}`
    /// would print a second time.)
    #[error("{operation}: {error}")]
    Call {
        /// The waPC operation.
        operation: &'static str,
        /// What went wrong.
        error: CallError,
    },
    /// The module answered something that is not the operation's JSON.
    #[error("{operation} answer is not valid")]
    Answer {
        /// The waPC operation.
        operation: &'static str,
        /// The decoding error.
        #[source]
        source: serde_json::Error,
    },
    /// `validate_settings` refused the settings.
    #[error("settings are not valid: {0}")]
    InvalidSettings(String),
}

/// A loaded policy module.
pub struct Policy {
    /// The module's name (its file stem, e.g. `catalog-union`).
    pub name: String,
    /// Its metadata: embedded, or given when loading.
    pub metadata: Option<Metadata>,
    module: Module,
}

/// The outcome of one `validate`.
pub struct Evaluation {
    /// The response policy-server would send.
    pub response: AdmissionResponse,
    /// The host calls the module made, in order.
    pub calls: Vec<CallRecord>,
}

/// A host that refuses everything, for operations that must not look up
/// anything (`protocol_version`, `validate_settings`).
struct NoHost;

impl HostCallback for NoHost {
    fn call(&self, _: &str, ns: &str, op: &str, _: &[u8]) -> Result<Vec<u8>, String> {
        if ns == "tracing" {
            return Ok(Vec::new());
        }
        Err(format!("host capability '{ns}/{op}' is not available here"))
    }
}

impl Policy {
    /// Loads `path`; metadata from `metadata_file` when given, else the
    /// module's embedded `io.kubewarden.metadata` section.
    pub fn load(
        runtime: &Runtime,
        path: &Path,
        metadata_file: Option<&Path>,
    ) -> Result<Policy, PolicyError> {
        let wasm = std::fs::read(path).map_err(|source| PolicyError::Read {
            what: "module",
            path: path.to_path_buf(),
            source,
        })?;
        let metadata = match metadata_file {
            Some(file) => {
                let text = std::fs::read_to_string(file).map_err(|source| PolicyError::Read {
                    what: "metadata",
                    path: file.to_path_buf(),
                    source,
                })?;
                Some(
                    Metadata::from_yaml(&text).map_err(|source| PolicyError::Metadata {
                        path: file.to_path_buf(),
                        source,
                    })?,
                )
            }
            None => None,
        };
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Policy::from_bytes(runtime, &name, &wasm, metadata).map_err(|e| match e {
            PolicyError::Load { source, .. } => PolicyError::Load {
                path: path.to_path_buf(),
                source,
            },
            PolicyError::Metadata { source, .. } => PolicyError::Metadata {
                path: path.to_path_buf(),
                source,
            },
            other => other,
        })
    }

    /// Compiles `wasm` as policy `name`; `metadata`, when given, replaces
    /// what the module embeds.
    pub fn from_bytes(
        runtime: &Runtime,
        name: &str,
        wasm: &[u8],
        metadata: Option<Metadata>,
    ) -> Result<Policy, PolicyError> {
        let module = runtime.load(wasm).map_err(|source| PolicyError::Load {
            path: PathBuf::from(name),
            source,
        })?;
        let metadata = match metadata {
            Some(m) => Some(m),
            None => Metadata::from_module(wasm).map_err(|source| PolicyError::Metadata {
                path: PathBuf::from(name),
                source,
            })?,
        };
        Ok(Policy {
            name: name.to_string(),
            metadata,
            module,
        })
    }

    /// `protocol_version`: a Kubewarden waPC module answers `"v1"`.
    pub fn protocol_version(&self) -> Result<String, PolicyError> {
        const OPERATION: &str = "protocol_version";
        let bytes = self
            .module
            .call(OPERATION, &[], Arc::new(NoHost))
            .map_err(|error| PolicyError::Call {
                operation: OPERATION,
                error,
            })?;
        serde_json::from_slice(&bytes).map_err(|source| PolicyError::Answer {
            operation: OPERATION,
            source,
        })
    }

    /// `validate_settings`; `InvalidSettings` carries the module's message.
    pub fn validate_settings(&self, settings: &Value) -> Result<(), PolicyError> {
        const OPERATION: &str = "validate_settings";
        #[derive(Deserialize)]
        struct Answer {
            valid: bool,
            #[serde(default)]
            message: Option<String>,
        }
        let payload = serde_json::to_vec(settings).map_err(|source| PolicyError::Answer {
            operation: OPERATION,
            source,
        })?;
        let bytes = self
            .module
            .call(OPERATION, &payload, Arc::new(NoHost))
            .map_err(|error| PolicyError::Call {
                operation: OPERATION,
                error,
            })?;
        let answer: Answer =
            serde_json::from_slice(&bytes).map_err(|source| PolicyError::Answer {
                operation: OPERATION,
                source,
            })?;
        if !answer.valid {
            return Err(PolicyError::InvalidSettings(
                answer.message.unwrap_or_else(|| "no reason given".into()),
            ));
        }
        Ok(())
    }

    /// `validate`, answering host calls from `cluster`.
    pub fn validate(
        &self,
        request: &Value,
        settings: &Value,
        cluster: ClusterContext,
    ) -> Result<Evaluation, CallError> {
        self.validate_with(request, settings, self.host(cluster))
    }

    /// `validate` through a host the caller built (e.g. one that keeps the
    /// answers, [`ContextHost::keeping_answers`]).
    pub fn validate_with(
        &self,
        request: &Value,
        settings: &Value,
        host: ContextHost,
    ) -> Result<Evaluation, CallError> {
        let host = Arc::new(host);
        let response = self.validate_with_callback(request, settings, host.clone())?;
        Ok(Evaluation {
            response,
            calls: host.calls(),
        })
    }

    /// `validate` on a payload the caller serialised itself (e.g. with its
    /// keys in another order); `request` is the request it holds, for the
    /// response's uid and patch.
    pub fn validate_payload(
        &self,
        payload: &[u8],
        request: &Value,
        cluster: ClusterContext,
    ) -> Result<AdmissionResponse, CallError> {
        let bytes = self
            .module
            .call("validate", payload, Arc::new(self.host(cluster)))?;
        self.response_of(request, &bytes)
    }

    /// `validate` with every host call answered by `host` as it is: no
    /// grants are applied here. For custom hosts and fault injection.
    pub fn validate_with_callback(
        &self,
        request: &Value,
        settings: &Value,
        host: Arc<dyn HostCallback>,
    ) -> Result<AdmissionResponse, CallError> {
        let payload = serde_json::to_vec(&ValidationPayload { request, settings })
            .map_err(|e| CallError::Guest(e.to_string()))?;
        let bytes = self.module.call("validate", &payload, host)?;
        self.response_of(request, &bytes)
    }

    /// The module's `validate_batch` (an olm-guard module's operation that
    /// Kubewarden never calls): every request of `requests` evaluated with
    /// `settings` in one instance that decodes each list answer once, one
    /// response per request, in order, each the response `validate` gives
    /// that request alone. The call gets the deadline of as many
    /// evaluations. Each list is read once per batch, so `cluster` must not
    /// change during the call (the audit's snapshot does not; a sequence in
    /// which admitted objects join the cluster, as `run all` has, cannot be
    /// a batch). A module without the operation answers with a guest
    /// error; callers then evaluate the requests one by one.
    pub fn validate_batch(
        &self,
        requests: &[Value],
        settings: &Value,
        cluster: ClusterContext,
    ) -> Result<Vec<AdmissionResponse>, CallError> {
        // JSON Lines of `validate` payloads: compact JSON escapes every
        // newline inside strings, so each line is one payload, which the
        // module evaluates exactly as `validate` would.
        let mut payload = Vec::new();
        for request in requests {
            serde_json::to_writer(&mut payload, &ValidationPayload { request, settings })
                .map_err(|e| CallError::Guest(e.to_string()))?;
            payload.push(b'\n');
        }
        let count = u32::try_from(requests.len()).unwrap_or(u32::MAX).max(1);
        let deadline = self.module.limits().deadline.saturating_mul(count);
        let bytes = self.module.call_within(
            "validate_batch",
            &payload,
            Arc::new(self.host(cluster)),
            deadline,
        )?;
        let responses: Vec<ValidationResponse> = serde_json::from_slice(&bytes).map_err(|e| {
            CallError::Guest(format!(
                "the module's validate_batch answer is not valid: {e}"
            ))
        })?;
        if responses.len() != requests.len() {
            return Err(CallError::Guest(format!(
                "the module's validate_batch answered {} responses for {} requests",
                responses.len(),
                requests.len()
            )));
        }
        Ok(requests
            .iter()
            .zip(responses)
            .map(|(request, response)| {
                self.admission_response(AdmissionResponse::from_validation(request, response))
            })
            .collect())
    }

    /// Whether this policy may mutate: its metadata's `mutating`, which
    /// policy-server takes as the policy's `mutating` setting by default
    /// (and `scaffold manifest` writes into it). A module without metadata
    /// has nothing that forbids it, so its patches stand.
    pub fn allowed_to_mutate(&self) -> bool {
        self.metadata.as_ref().is_none_or(|m| m.mutating)
    }

    /// The AdmissionResponse for the module's `validate` answer `bytes`, as
    /// policy-server sends it: a patch from a policy that may not mutate is
    /// a rejection ([`AdmissionResponse::refusing_mutation`]).
    fn response_of(&self, request: &Value, bytes: &[u8]) -> Result<AdmissionResponse, CallError> {
        Ok(self.admission_response(response_of(request, bytes)?))
    }

    /// `response`, refused if it mutates and this policy may not.
    fn admission_response(&self, response: AdmissionResponse) -> AdmissionResponse {
        if self.allowed_to_mutate() {
            response
        } else {
            response.refusing_mutation(&self.name)
        }
    }

    /// A host for this policy's grants over `cluster`.
    pub fn host(&self, cluster: ClusterContext) -> ContextHost {
        ContextHost::new(cluster, Grants::from_metadata(self.metadata.as_ref()))
    }
}

/// The AdmissionResponse for the module's `validate` answer `bytes`; an
/// answer that is not a ValidationResponse is the module's failure.
/// The `validate` payload (Kubewarden's `ValidationRequest`), borrowing
/// the request and settings: building a `json!` value would deep-copy the
/// whole AdmissionRequest on every evaluation.
#[derive(serde::Serialize)]
struct ValidationPayload<'a> {
    request: &'a Value,
    settings: &'a Value,
}

fn response_of(request: &Value, bytes: &[u8]) -> Result<AdmissionResponse, CallError> {
    let response: ValidationResponse = serde_json::from_slice(bytes)
        .map_err(|e| CallError::Guest(format!("the module's validate answer is not valid: {e}")))?;
    Ok(AdmissionResponse::from_validation(request, response))
}
