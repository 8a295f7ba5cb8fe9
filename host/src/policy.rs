//! A policy module ready to evaluate: compiled code plus its metadata.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use serde::Deserialize;
use serde_json::{Value, json};

use olm_guard_snapshot::Snapshot;

use crate::admission::{AdmissionResponse, ValidationResponse};
use crate::capabilities::{CallRecord, Grants, SnapshotHost};
use crate::metadata::Metadata;
use crate::runtime::{CallError, HostCallback, Module, Runtime};

pub struct Policy {
    pub name: String,
    pub metadata: Option<Metadata>,
    module: Module,
}

/// The outcome of one `validate`.
pub struct Evaluation {
    pub response: AdmissionResponse,
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
    ) -> anyhow::Result<Policy> {
        let wasm = std::fs::read(path)
            .with_context(|| format!("cannot read module {}", path.display()))?;
        let module = runtime
            .load(&wasm)
            .with_context(|| format!("cannot load {}", path.display()))?;
        let metadata = match metadata_file {
            Some(file) => {
                let text = std::fs::read_to_string(file)
                    .with_context(|| format!("cannot read metadata {}", file.display()))?;
                Some(Metadata::from_yaml(&text).with_context(|| file.display().to_string())?)
            }
            None => Metadata::from_module(&wasm)?,
        };
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Policy {
            name,
            metadata,
            module,
        })
    }

    /// `protocol_version`: a Kubewarden waPC module answers `"v1"`.
    pub fn protocol_version(&self) -> anyhow::Result<String> {
        let bytes = self
            .module
            .call("protocol_version", &[], Arc::new(NoHost))
            .map_err(|e| anyhow::anyhow!("protocol_version: {e}"))?;
        serde_json::from_slice(&bytes).context("protocol_version answer is not a JSON string")
    }

    /// `validate_settings`; Err carries the module's message.
    pub fn validate_settings(&self, settings: &Value) -> anyhow::Result<()> {
        #[derive(Deserialize)]
        struct Answer {
            valid: bool,
            #[serde(default)]
            message: Option<String>,
        }
        let payload = serde_json::to_vec(settings)?;
        let bytes = self
            .module
            .call("validate_settings", &payload, Arc::new(NoHost))
            .map_err(|e| anyhow::anyhow!("validate_settings: {e}"))?;
        let answer: Answer =
            serde_json::from_slice(&bytes).context("validate_settings answer is not valid")?;
        if !answer.valid {
            bail!(
                "settings are not valid: {}",
                answer.message.unwrap_or_else(|| "no reason given".into())
            );
        }
        Ok(())
    }

    /// `validate` against a snapshot.
    pub fn validate(
        &self,
        request: &Value,
        settings: &Value,
        snapshot: Arc<Snapshot>,
    ) -> Result<Evaluation, CallError> {
        let host = Arc::new(SnapshotHost::new(
            snapshot,
            Grants::from_metadata(self.metadata.as_ref()),
        ));
        let payload = serde_json::to_vec(&json!({"request": request, "settings": settings}))
            .map_err(|e| CallError::Guest(e.to_string()))?;
        let bytes = self.module.call("validate", &payload, host.clone())?;
        let response: ValidationResponse = serde_json::from_slice(&bytes).map_err(|e| {
            CallError::Guest(format!("the module's validate answer is not valid: {e}"))
        })?;
        Ok(Evaluation {
            response: AdmissionResponse::from_validation(request, response),
            calls: host.calls(),
        })
    }
}
