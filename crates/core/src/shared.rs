//! Answers shared by the evaluations of one batch.
//!
//! A module evaluates one request per waPC call, as policy-server sends
//! them; every call decodes the lists it asks for. `olm-guard audit`
//! evaluates thousands of stored objects against one unchanging snapshot,
//! where that decoding grows with the square of the largest kind (each
//! ClusterObjectSet evaluation decoding every ClusterObjectSet). A batch
//! (the module's `validate_batch` operation) evaluates many requests in one
//! instance through a [`Cluster`] whose [`Cluster::shared_answers`] keeps
//! each decoded list, so the batch decodes it once.
//!
//! The rules ask exactly what they ask in a single evaluation, and decide
//! from the same items in the same order: a shared list is the same list.
//! What a rule may add is an index over it, built on the list's second use
//! ([`IndexedOnReuse`]): a single evaluation scans (cheaper than hashing
//! every item), a batch builds the index once and each evaluation then
//! reads only the items its object concerns.

use std::any::{Any, TypeId};
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use crate::protocol::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    SubjectAccessReviewStatus,
};
use crate::{Cluster, ContextError};

/// Decoded answers kept for the evaluations of one batch, keyed by the
/// host request (its JSON) and the type it was decoded into. A batch keeps
/// a handful (one per list a rule reads), so a list is all it needs.
#[derive(Default)]
pub struct SharedAnswers {
    kept: RefCell<Vec<Kept>>,
}

/// One kept answer: its request, the type it was decoded into, the value.
type Kept = (String, TypeId, Rc<dyn Any>);

impl SharedAnswers {
    /// Nothing kept yet.
    pub fn new() -> SharedAnswers {
        SharedAnswers::default()
    }

    /// The value kept for `key` as a `D`, or the one `make` returns (kept
    /// when it is `Ok`). A failed lookup is not kept: the next evaluation
    /// asks again and names its own failure.
    pub fn get_or_try_insert<D: 'static, E>(
        &self,
        key: String,
        make: impl FnOnce() -> Result<D, E>,
    ) -> Result<Rc<D>, E> {
        let kept = self.find(&key, TypeId::of::<D>());
        if let Some(value) = kept.and_then(|kept| kept.downcast::<D>().ok()) {
            return Ok(value);
        }
        let value = Rc::new(make()?);
        self.kept
            .borrow_mut()
            .push((key, TypeId::of::<D>(), value.clone()));
        Ok(value)
    }

    fn find(&self, key: &str, type_id: TypeId) -> Option<Rc<dyn Any>> {
        self.kept
            .borrow()
            .iter()
            .find(|(k, t, _)| k == key && *t == type_id)
            .map(|(_, _, value)| value.clone())
    }

    /// How many answers are kept.
    pub fn len(&self) -> usize {
        self.kept.borrow().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Positions of a list's items by a text key (a group, a namespace, an
/// API), each position list ascending, so reading it keeps list order.
#[derive(Default)]
pub struct Index(BTreeMap<String, Vec<usize>>);

impl Index {
    /// The index of `items` under the keys `keys` gives each item (none,
    /// one or several).
    pub fn of<T, K: IntoIterator<Item = String>>(items: &[T], keys: impl Fn(&T) -> K) -> Index {
        let mut index = Index::default();
        for (at, item) in items.iter().enumerate() {
            for key in keys(item) {
                index.0.entry(key).or_default().push(at);
            }
        }
        index
    }

    /// The positions under `key`, ascending.
    pub fn get(&self, key: &str) -> &[usize] {
        self.0.get(key).map_or(&[], Vec::as_slice)
    }
}

/// An index over a (possibly shared) list, built on the list's second use.
///
/// ```
/// use olm_guard_core::shared::IndexedOnReuse;
///
/// let index: IndexedOnReuse<Vec<usize>> = IndexedOnReuse::new();
/// assert!(index.get(|| vec![1]).is_none()); // the first use scans
/// assert_eq!(index.get(|| vec![2]), Some(&vec![2])); // later uses share one index
/// assert_eq!(index.get(|| vec![3]), Some(&vec![2]));
/// ```
pub struct IndexedOnReuse<I> {
    used: Cell<bool>,
    index: OnceCell<I>,
}

impl<I> Default for IndexedOnReuse<I> {
    fn default() -> Self {
        IndexedOnReuse {
            used: Cell::new(false),
            index: OnceCell::new(),
        }
    }
}

impl<I> IndexedOnReuse<I> {
    /// Not used yet.
    pub fn new() -> IndexedOnReuse<I> {
        IndexedOnReuse::default()
    }

    /// `None` on the first use (the caller scans the list); the index,
    /// built by `build` once, on every later use.
    pub fn get(&self, build: impl FnOnce() -> I) -> Option<&I> {
        if self.used.replace(true) {
            Some(self.index.get_or_init(build))
        } else {
            None
        }
    }
}

impl<T, E: Clone> IndexedOnReuse<Result<T, E>> {
    /// [`IndexedOnReuse::get`] for an index whose building can fail (it
    /// reads the answer): `Ok(None)` on the first use; on every later use the
    /// index, or the failure of its one building.
    pub fn try_get(&self, build: impl FnOnce() -> Result<T, E>) -> Result<Option<&T>, E> {
        match self.get(build) {
            None => Ok(None),
            Some(Ok(index)) => Ok(Some(index)),
            Some(Err(error)) => Err(error.clone()),
        }
    }
}

/// A cluster for the evaluations of one batch: every lookup goes to
/// `cluster`, and [`crate::ClusterExt::list_all_shared`] keeps what it
/// decodes for the next evaluation.
pub struct Batch<'c> {
    cluster: &'c dyn Cluster,
    answers: SharedAnswers,
}

impl<'c> Batch<'c> {
    /// A batch over `cluster`, nothing kept yet.
    pub fn new(cluster: &'c dyn Cluster) -> Batch<'c> {
        Batch {
            cluster,
            answers: SharedAnswers::new(),
        }
    }
}

impl Cluster for Batch<'_> {
    fn list_all(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
        self.cluster.list_all(request)
    }

    fn list_by_namespace(
        &self,
        request: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, ContextError> {
        self.cluster.list_by_namespace(request)
    }

    fn get(&self, request: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
        self.cluster.get(request)
    }

    fn can_i(&self, request: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
        self.cluster.can_i(request)
    }

    fn shared_answers(&self) -> Option<&SharedAnswers> {
        Some(&self.answers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_made_once_per_key_and_type() {
        let shared = SharedAnswers::new();
        let made = Cell::new(0);
        let make = || {
            made.set(made.get() + 1);
            Ok::<_, ()>(vec![1, 2])
        };
        let first = shared.get_or_try_insert("a".into(), make).unwrap();
        let again = shared.get_or_try_insert("a".into(), make).unwrap();
        assert!(Rc::ptr_eq(&first, &again));
        assert_eq!(made.get(), 1);
        // Another key, or the same key decoded as another type, is another answer.
        shared.get_or_try_insert("b".into(), make).unwrap();
        let other_type = shared
            .get_or_try_insert("a".into(), || Ok::<_, ()>(String::from("x")))
            .unwrap();
        assert_eq!(*other_type, "x");
        assert_eq!((made.get(), shared.len()), (2, 3));
    }

    #[test]
    fn a_failed_lookup_is_not_kept() {
        let shared = SharedAnswers::new();
        let failed: Result<Rc<u8>, &str> = shared.get_or_try_insert("a".into(), || Err("down"));
        assert_eq!(failed.unwrap_err(), "down");
        assert!(shared.is_empty());
        assert_eq!(
            *shared
                .get_or_try_insert::<u8, ()>("a".into(), || Ok(7))
                .unwrap(),
            7
        );
    }
}
