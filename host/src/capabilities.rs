//! Kubewarden's host capabilities, answered from a cluster snapshot, with
//! policy-server's access control: a module may only read the kinds its
//! metadata lists in `contextAwareResources`, and only call the capabilities
//! it declares in `hostCapabilities`.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use olm_guard_core::Cluster;
use olm_guard_core::protocol::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
};
use olm_guard_snapshot::Snapshot;
use serde::de::DeserializeOwned;

use crate::metadata::{ContextAwareResource, Metadata};
use crate::runtime::HostCallback;

/// What a module is allowed to do, from its metadata.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    resources: BTreeSet<ContextAwareResource>,
    /// `None`: every capability (kwctl's default `*`).
    capabilities: Option<Vec<String>>,
}

impl Grants {
    pub fn from_metadata(metadata: Option<&Metadata>) -> Grants {
        match metadata {
            Some(m) => Grants {
                resources: m.context_aware_resources.iter().cloned().collect(),
                capabilities: m.host_capabilities.clone(),
            },
            None => Grants::default(),
        }
    }

    fn may_read(&self, api_version: &str, kind: &str) -> bool {
        self.resources.contains(&ContextAwareResource {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        })
    }

    /// Patterns as policy-server accepts them: `*`, `ns/*`, `ns/v1/*`, exact.
    fn may_call(&self, path: &str) -> bool {
        let Some(patterns) = &self.capabilities else {
            return true;
        };
        patterns.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => p == path,
        })
    }
}

/// One host call, for `--trace` output and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    pub capability: String,
    pub payload: String,
    pub outcome: Result<usize, String>,
}

/// The host side of `__host_call` for one module.
pub struct SnapshotHost {
    snapshot: Arc<Snapshot>,
    grants: Grants,
    log: Mutex<Vec<CallRecord>>,
}

impl SnapshotHost {
    pub fn new(snapshot: Arc<Snapshot>, grants: Grants) -> SnapshotHost {
        SnapshotHost {
            snapshot,
            grants,
            log: Mutex::new(Vec::new()),
        }
    }

    /// The host calls made so far.
    pub fn calls(&self) -> Vec<CallRecord> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    fn dispatch(
        &self,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, String> {
        let path = format!("{namespace}/{operation}");
        if namespace == "tracing" && operation == "log" {
            // Never gated, as in policy-server.
            return Ok(Vec::new());
        }
        if !self.grants.may_call(&path) {
            return Err(format!(
                "Policy has not been granted access to the '{path}' host capability. \
                 The violation has been reported."
            ));
        }
        let snapshot = &self.snapshot;
        let answer = match (namespace, operation) {
            ("kubernetes", "list_resources_all") => {
                let r: ListAllResourcesRequest = parse(payload, &path)?;
                self.check_read(&r.api_version, &r.kind)?;
                snapshot.list_all(&r)
            }
            ("kubernetes", "list_resources_by_namespace") => {
                let r: ListResourcesByNamespaceRequest = parse(payload, &path)?;
                self.check_read(&r.api_version, &r.kind)?;
                snapshot.list_by_namespace(&r)
            }
            ("kubernetes", "get_resource") => {
                let r: GetResourceRequest = parse(payload, &path)?;
                self.check_read(&r.api_version, &r.kind)?;
                snapshot.get(&r)
            }
            ("kubernetes", "can_i") => {
                let r: CanIRequest = parse(payload, &path)?;
                snapshot.can_i(&r).and_then(|status| {
                    serde_json::to_vec(&status)
                        .map_err(|e| olm_guard_core::ContextError(e.to_string()))
                })
            }
            ("kubernetes", _) => return Err(format!("unknown operation: {operation}")),
            ("oci" | "net" | "crypto", _) => {
                return Err(format!(
                    "host capability '{path}' is not provided by olm-guard's local host"
                ));
            }
            _ => return Err(format!("unknown namespace: {namespace}")),
        };
        answer.map_err(|e| e.0)
    }

    fn check_read(&self, api_version: &str, kind: &str) -> Result<(), String> {
        if self.grants.may_read(api_version, kind) {
            Ok(())
        } else {
            Err(format!(
                "Policy has not been granted access to Kubernetes {api_version}/{kind} resources. \
                 The violation has been reported."
            ))
        }
    }
}

fn parse<T: DeserializeOwned>(payload: &[u8], path: &str) -> Result<T, String> {
    serde_json::from_slice(payload).map_err(|e| format!("invalid {path} request: {e}"))
}

impl HostCallback for SnapshotHost {
    fn call(
        &self,
        binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, String> {
        let outcome = if binding == "kubewarden" {
            self.dispatch(namespace, operation, payload)
        } else {
            Err(format!("unknown binding: {binding}"))
        };
        if !(namespace == "tracing" && operation == "log")
            && let Ok(mut log) = self.log.lock()
        {
            log.push(CallRecord {
                capability: format!("{namespace}/{operation}"),
                payload: String::from_utf8_lossy(payload).into_owned(),
                outcome: outcome.as_ref().map(Vec::len).map_err(Clone::clone),
            });
        }
        outcome
    }
}
