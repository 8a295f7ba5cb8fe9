//! The cluster context both halves of the rule read: every OperatorGroup
//! (one list call per request), the Namespaces a selector needs (listed at
//! most once), and the targets of a group resolved from them.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use olm_guard_core::listed::ListAnswer;
use olm_guard_core::protocol::ListAllResourcesRequest;
use olm_guard_core::selector::Selector;
use olm_guard_core::shared::{Index, IndexedOnReuse};
use olm_guard_core::{Cluster, ClusterExt, ContextError, Verdict};
use olm_guard_olm::operator_group::{
    ApiSet, GroupSurface, ListedNamespace, ListedOperatorGroup, Namespace, NamespaceSet,
    OperatorGroup, select_namespaces, target_set,
};

use super::{OPERATOR_GROUP_API_VERSION, OPERATOR_GROUP_KIND};

pub(super) const OPERATOR_GROUPS_LOOKUP: &str =
    "the OperatorGroups of all namespaces (operators.coreos.com/v1)";
pub(super) const NAMESPACES_LOOKUP: &str =
    "the Namespaces (v1), needed to resolve an OperatorGroup's spec.selector";

/// A context lookup that did not answer.
pub(super) struct LookupFailed {
    pub(super) what: &'static str,
    pub(super) error: ContextError,
}

/// Every OperatorGroup, as the host answered, and (when the answer is
/// shared by the evaluations of a batch) every group read, with indexes by
/// namespace and by provided API.
pub(super) struct OperatorGroups {
    answer: ListAnswer,
    /// Each kind of question reads the answer on its first use: a single
    /// evaluation asks each once.
    by_namespace_used: IndexedOnReuse<()>,
    by_api_used: IndexedOnReuse<()>,
    /// `None` when a group does not read whole ([`OperatorGroups::kept`]).
    indexed: OnceCell<Option<IndexedGroups>>,
}

/// Every group of the answer, and where to find them.
struct IndexedGroups {
    groups: Vec<OperatorGroup>,
    by_namespace: Index,
    /// Keyed by each API of `olm.providedAPIs`, as text.
    by_api: Index,
}

impl OperatorGroups {
    fn new(answer: ListAnswer) -> OperatorGroups {
        OperatorGroups {
            answer,
            by_namespace_used: IndexedOnReuse::new(),
            by_api_used: IndexedOnReuse::new(),
            indexed: OnceCell::new(),
        }
    }

    /// The groups of the answer that `keep` keeps, in list order: one pass
    /// over the answer on the first question of its kind (`used`); on a
    /// later one (a batch), the positions `lookup` finds in the index, each
    /// group checked by `still` all the same.
    ///
    /// The pass reads whole only the groups it keeps; the index reads every
    /// group whole. When a group does not read whole, the index is not
    /// built and every question is answered by the pass instead, so that an
    /// evaluation in a batch reaches the verdict it reaches alone (a group
    /// no question keeps fails neither).
    fn kept(
        &self,
        used: &IndexedOnReuse<()>,
        keep: impl Fn(&ListedOperatorGroup<'_>) -> bool,
        lookup: impl FnOnce(&IndexedGroups) -> Vec<usize>,
        still: impl Fn(&OperatorGroup) -> bool,
    ) -> Result<Vec<OperatorGroup>, ContextError> {
        let indexed = used.get(|| ()).and_then(|()| {
            self.indexed
                .get_or_init(|| {
                    let mut groups = Vec::new();
                    self.answer
                        .each(|group: OperatorGroup| groups.push(group))
                        .ok()?;
                    Some(IndexedGroups {
                        by_namespace: Index::of(&groups, |group| {
                            [group.metadata.namespace.clone()]
                        }),
                        by_api: Index::of(&groups, |group| {
                            group
                                .provided_apis()
                                .iter()
                                .map(ToString::to_string)
                                .collect::<Vec<_>>()
                        }),
                        groups,
                    })
                })
                .as_ref()
        });
        match indexed {
            Some(indexed) => Ok(lookup(indexed)
                .into_iter()
                .filter_map(|at| indexed.groups.get(at))
                .filter(|group| still(group))
                .cloned()
                .collect()),
            None => {
                let (mut positions, mut at) = (Vec::new(), 0);
                self.answer.each(|listed: ListedOperatorGroup<'_>| {
                    if keep(&listed) {
                        positions.push(at);
                    }
                    at += 1;
                })?;
                let mut kept = Vec::with_capacity(positions.len());
                self.answer.pick(&positions, |group| kept.push(group))?;
                Ok(kept)
            }
        }
    }

    /// The groups in `namespace`, in list order.
    pub(super) fn in_namespace(&self, namespace: &str) -> Result<Vec<OperatorGroup>, ContextError> {
        self.kept(
            &self.by_namespace_used,
            |listed| listed.namespace() == namespace,
            |indexed| indexed.by_namespace.get(namespace).to_vec(),
            |group| group.metadata.namespace == namespace,
        )
    }

    /// The groups whose `olm.providedAPIs` names one of `apis`, in list
    /// order. Callers still intersect each group's APIs with theirs.
    pub(super) fn providing_any(&self, apis: &ApiSet) -> Result<Vec<OperatorGroup>, ContextError> {
        self.kept(
            &self.by_api_used,
            |listed| listed.provides_any(apis),
            |indexed| {
                let mut positions: Vec<usize> = apis
                    .iter()
                    .flat_map(|api| indexed.by_api.get(&api.to_string()).to_vec())
                    .collect();
                positions.sort_unstable();
                positions.dedup();
                positions
            },
            |group| group.provided_apis().intersects(apis),
        )
    }
}

/// Every OperatorGroup: one list call per request, whatever the cluster
/// size (kept once per batch).
pub(super) fn list_operator_groups(
    cluster: &dyn Cluster,
) -> Result<Rc<OperatorGroups>, ContextError> {
    // What the rule reads of a group: its spec (targets, selector, static
    // APIs), its status (synced namespaces) and its `olm.providedAPIs`
    // annotation, which a mask always keeps with the rest of metadata.
    cluster.list_all_read(
        &ListAllResourcesRequest::new(OPERATOR_GROUP_API_VERSION, OPERATOR_GROUP_KIND)
            .field_masks(["spec", "status"]),
        |answer| Ok(OperatorGroups::new(answer)),
    )
}

pub(super) fn operator_groups_unavailable(error: ContextError) -> Verdict {
    Verdict::context_unavailable(OPERATOR_GROUPS_LOOKUP, error)
}

pub(super) fn namespaces_unavailable(error: ContextError) -> Verdict {
    Verdict::context_unavailable(NAMESPACES_LOOKUP, error)
}

/// The cluster's Namespaces, listed at most once and only when a selector
/// must be resolved: most groups have explicit or synced targets. Groups
/// often share a selector, so each distinct one is matched once.
pub(super) struct NamespaceList<'c> {
    cluster: &'c dyn Cluster,
    listed: OnceCell<Rc<Namespaces>>,
    selected: RefCell<HashMap<String, Vec<String>>>,
}

/// The Namespaces as the host answered, and (when the answer is shared by
/// the evaluations of a batch) every one read.
struct Namespaces {
    answer: ListAnswer,
    read: IndexedOnReuse<Result<Vec<Namespace>, ContextError>>,
}

impl Namespaces {
    /// The names `selector` matches, in list order: one pass over the
    /// answer, or over the namespaces read once the answer is used again.
    fn select(&self, selector: &Selector) -> Result<Vec<String>, ContextError> {
        let read = self.read.try_get(|| {
            let mut namespaces = Vec::new();
            self.answer
                .each(|listed: ListedNamespace<'_>| namespaces.push(listed.to_namespace()))?;
            Ok(namespaces)
        });
        match read? {
            Some(namespaces) => Ok(select_namespaces(selector, namespaces)),
            None => {
                let mut names = Vec::new();
                self.answer.each(|listed: ListedNamespace<'_>| {
                    if listed.selected_by(selector) {
                        names.push(listed.name().to_string());
                    }
                })?;
                Ok(names)
            }
        }
    }
}

impl<'c> NamespaceList<'c> {
    pub(super) fn new(cluster: &'c dyn Cluster) -> Self {
        NamespaceList {
            cluster,
            listed: OnceCell::new(),
            selected: RefCell::new(HashMap::new()),
        }
    }

    fn get(&self) -> Result<&Namespaces, ContextError> {
        if let Some(listed) = self.listed.get() {
            return Ok(listed);
        }
        let listed = self
            .cluster
            // Selectors read labels only: metadata, no spec or status.
            .list_all_read(
                &ListAllResourcesRequest::new("v1", "Namespace").field_masks(["metadata"]),
                |answer| {
                    Ok(Namespaces {
                        answer,
                        read: IndexedOnReuse::new(),
                    })
                },
            )?;
        Ok(self.listed.get_or_init(|| listed))
    }

    /// The names `selector` matches; its canonical text is the cache key.
    pub(super) fn select(&self, selector: &Selector) -> Result<Vec<String>, ContextError> {
        let key = selector.to_string();
        if let Some(names) = self.selected.borrow().get(&key) {
            return Ok(names.clone());
        }
        let names = self.get()?.select(selector)?;
        self.selected.borrow_mut().insert(key, names.clone());
        Ok(names)
    }
}

/// The targets a group's spec resolves to (its own namespace added). A spec
/// OLM cannot resolve targets nothing: OLM never syncs it.
pub(super) fn spec_target_set(
    group: &OperatorGroup,
    namespaces: &NamespaceList,
) -> Result<NamespaceSet, ContextError> {
    match group.spec.targets() {
        Ok(targets) => Ok(target_set(
            &targets.resolve(|selector| namespaces.select(selector))?,
            &group.metadata.namespace,
        )),
        Err(_) => Ok(NamespaceSet::default()),
    }
}

/// The targets of a group already in the cluster: what OLM last wrote to
/// `status.namespaces`; for a group OLM has not synced yet, what its spec
/// resolves to, so a conflict shows before the first sync. A spec OLM cannot
/// resolve never syncs, and such a group keeps targeting nothing.
pub(super) fn listed_targets(
    group: &OperatorGroup,
    namespaces: &NamespaceList,
) -> Result<NamespaceSet, ContextError> {
    match group.synced_namespaces() {
        Some(synced) => Ok(target_set(synced, &group.metadata.namespace)),
        None => spec_target_set(group, namespaces),
    }
}

/// A group as `reconcile_api_intersection` sees it: its listed targets and
/// its `olm.providedAPIs`.
pub(super) fn surface_of(
    group: &OperatorGroup,
    namespaces: &NamespaceList,
) -> Result<GroupSurface, ContextError> {
    Ok(GroupSurface {
        namespace: group.metadata.namespace.clone(),
        name: group.metadata.name.clone(),
        targets: listed_targets(group, namespaces)?,
        provided_apis: group.provided_apis(),
    })
}
