//! Serialised answers kept for a snapshot's life.
//!
//! Kubewarden's policy-server serves lists from a reflector per
//! (resource, namespace, selectors, masks) (kubewarden-controller,
//! `crates/policy-evaluator/src/callback_handler/kubernetes/reflector.rs`):
//! a list is built once and every request reads it. A snapshot does the same
//! for its answers. Evaluations ask the same lists over and over (every
//! ClusterObjectSet, every OperatorGroup), and serialising 10,000 objects
//! costs more than the rule that reads them.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, RwLock};

use olm_guard_core::ContextError;
use olm_guard_core::protocol::{
    GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
};

/// Answers by request. Errors are not kept: they are cheap and rare, and a
/// later [`Answers::clear`] could not make them right anyway.
#[derive(Default)]
pub(crate) struct Answers {
    list_all: RwLock<HashMap<ListAllResourcesRequest, Arc<[u8]>>>,
    list_by_namespace: RwLock<HashMap<ListResourcesByNamespaceRequest, Arc<[u8]>>>,
    get: RwLock<HashMap<GetResourceRequest, Arc<[u8]>>>,
}

impl Answers {
    /// Forgets every answer: the snapshot changed.
    pub(crate) fn clear(&mut self) {
        *self = Answers::default();
    }

    pub(crate) fn list_all(
        &self,
        request: &ListAllResourcesRequest,
        compute: impl FnOnce() -> Result<Vec<u8>, ContextError>,
    ) -> Result<Vec<u8>, ContextError> {
        cached(&self.list_all, request, compute)
    }

    pub(crate) fn list_by_namespace(
        &self,
        request: &ListResourcesByNamespaceRequest,
        compute: impl FnOnce() -> Result<Vec<u8>, ContextError>,
    ) -> Result<Vec<u8>, ContextError> {
        cached(&self.list_by_namespace, request, compute)
    }

    pub(crate) fn get(
        &self,
        request: &GetResourceRequest,
        compute: impl FnOnce() -> Result<Vec<u8>, ContextError>,
    ) -> Result<Vec<u8>, ContextError> {
        // `disable_cache` asks a live host to skip its 5 s TTL cache; a
        // snapshot never changes while it answers, so the answer is the same.
        cached(&self.get, request, compute)
    }
}

/// The answer to `request` from `cache`, or from `compute` (kept when it
/// succeeds). A poisoned lock only means another evaluation panicked while
/// holding it: the answer is computed again rather than failing this one.
fn cached<K: Hash + Eq + Clone>(
    cache: &RwLock<HashMap<K, Arc<[u8]>>>,
    request: &K,
    compute: impl FnOnce() -> Result<Vec<u8>, ContextError>,
) -> Result<Vec<u8>, ContextError> {
    if let Ok(map) = cache.read()
        && let Some(bytes) = map.get(request)
    {
        return Ok(bytes.to_vec());
    }
    let bytes = compute()?;
    if let Ok(mut map) = cache.write() {
        map.insert(request.clone(), Arc::from(bytes.as_slice()));
    }
    Ok(bytes)
}
