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

/// Answers by request, one table per capability. Errors are not kept: they
/// are cheap and rare, and a later [`Answers::clear`] could not make them
/// right anyway.
#[derive(Default)]
pub(crate) struct Answers {
    pub(crate) list_all: Kept<ListAllResourcesRequest>,
    pub(crate) list_by_namespace: Kept<ListResourcesByNamespaceRequest>,
    /// `disable_cache` asks a live host to skip its 5 s TTL cache; a
    /// snapshot never changes while it answers, so the kept answer is the
    /// one it would compute.
    pub(crate) get: Kept<GetResourceRequest>,
}

impl Answers {
    /// Forgets every answer: the snapshot changed.
    pub(crate) fn clear(&mut self) {
        *self = Answers::default();
    }
}

/// Serialised answers keyed by request.
pub(crate) struct Kept<K>(RwLock<HashMap<K, Arc<[u8]>>>);

impl<K> Default for Kept<K> {
    fn default() -> Self {
        Kept(RwLock::default())
    }
}

impl<K: Hash + Eq + Clone> Kept<K> {
    /// The answer to `request`, kept or from `compute` (kept when it
    /// succeeds). A poisoned lock only means another evaluation panicked
    /// while holding it: the answer is computed again rather than failing
    /// this one.
    pub(crate) fn answer(
        &self,
        request: &K,
        compute: impl FnOnce() -> Result<Vec<u8>, ContextError>,
    ) -> Result<Vec<u8>, ContextError> {
        if let Ok(map) = self.0.read()
            && let Some(bytes) = map.get(request)
        {
            return Ok(bytes.to_vec());
        }
        let bytes = compute()?;
        if let Ok(mut map) = self.0.write() {
            map.insert(request.clone(), Arc::from(bytes.as_slice()));
        }
        Ok(bytes)
    }
}
