//! Kubewarden's host capabilities, answered from any cluster context (a
//! snapshot, a recorded session, a live cluster), with policy-server's
//! access control: a module may only read the kinds its metadata lists in
//! `contextAwareResources`, and only call the capabilities it declares in
//! `hostCapabilities` (kubewarden/policy-evaluator,
//! `src/runtimes/wapc/callback.rs`, `host_callback`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use olm_guard_core::protocol::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
};
use olm_guard_core::{Capability, Cluster, ContextError};
use olm_guard_runtime::HostCallback;
use olm_guard_runtime::metadata::{ContextAwareResource, Metadata};
use serde::de::DeserializeOwned;

/// The cluster context a policy's host calls are answered from.
pub type ClusterContext = Arc<dyn Cluster + Send + Sync>;

/// What a module is allowed to do, from its metadata.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    resources: BTreeSet<ContextAwareResource>,
    /// `None`: every capability (kwctl's default `*`).
    capabilities: Option<Vec<String>>,
}

impl Grants {
    /// The grants of `metadata`; none at all without metadata.
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

/// One host call, for `--trace`, session recording and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    /// `namespace/operation`, e.g. `kubernetes/get_resource`.
    pub capability: String,
    /// The request payload the module sent (JSON text).
    pub payload: String,
    /// The answer's size in bytes, or the error text the module received.
    pub outcome: Result<usize, String>,
    /// The answer itself, kept only when the host was asked to
    /// ([`ContextHost::keeping_answers`]): large lists are not copied on
    /// every evaluation otherwise.
    pub answer: Option<Vec<u8>>,
}

/// The host side of `__host_call` for one evaluation.
pub struct ContextHost {
    cluster: ClusterContext,
    grants: Grants,
    keep_answers: bool,
    log: Mutex<Vec<CallRecord>>,
}

impl ContextHost {
    /// A host answering from `cluster` within `grants`.
    pub fn new(cluster: ClusterContext, grants: Grants) -> ContextHost {
        ContextHost {
            cluster,
            grants,
            keep_answers: false,
            log: Mutex::new(Vec::new()),
        }
    }

    /// The same host, keeping every answer's bytes in its [`CallRecord`]s
    /// (for traces and recorded sessions).
    pub fn keeping_answers(mut self) -> ContextHost {
        self.keep_answers = true;
        self
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
        let cluster = &self.cluster;
        let answer = match (namespace, Capability::from_operation(operation)) {
            ("kubernetes", Some(Capability::ListAll)) => {
                let r: ListAllResourcesRequest = parse(payload, &path)?;
                self.check_read(&r.api_version, &r.kind)?;
                cluster.list_all(&r)
            }
            ("kubernetes", Some(Capability::ListByNamespace)) => {
                let r: ListResourcesByNamespaceRequest = parse(payload, &path)?;
                self.check_read(&r.api_version, &r.kind)?;
                cluster.list_by_namespace(&r)
            }
            ("kubernetes", Some(Capability::Get)) => {
                let r: GetResourceRequest = parse(payload, &path)?;
                self.check_read(&r.api_version, &r.kind)?;
                cluster.get(&r)
            }
            ("kubernetes", Some(Capability::CanI)) => {
                let r: CanIRequest = parse(payload, &path)?;
                cluster.can_i(&r).and_then(|status| {
                    serde_json::to_vec(&status).map_err(|e| {
                        ContextError::new(olm_guard_core::ContextErrorKind::Decode, e.to_string())
                    })
                })
            }
            ("kubernetes", None) => return Err(format!("unknown operation: {operation}")),
            ("oci" | "net" | "crypto", _) => {
                return Err(format!(
                    "host capability '{path}' is not provided by olm-guard's local host"
                ));
            }
            _ => return Err(format!("unknown namespace: {namespace}")),
        };
        answer.map_err(|e| e.message)
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

impl HostCallback for ContextHost {
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
                answer: match (&outcome, self.keep_answers) {
                    (Ok(bytes), true) => Some(bytes.clone()),
                    _ => None,
                },
            });
        }
        outcome
    }
}
