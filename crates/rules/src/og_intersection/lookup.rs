//! The cluster context both halves of the rule read: every OperatorGroup
//! (one list call per request), the Namespaces a selector needs (listed at
//! most once), and the targets of a group resolved from them.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use olm_guard_core::protocol::ListAllResourcesRequest;
use olm_guard_core::selector::Selector;
use olm_guard_core::shared::{Index, IndexedOnReuse};
use olm_guard_core::{Cluster, ClusterExt, ContextError, Verdict};
use olm_guard_olm::operator_group::{
    ApiSet, GroupSurface, Namespace, NamespaceSet, OperatorGroup, select_namespaces, target_set,
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

/// Every OperatorGroup, as listed, and (when the list is shared by the
/// evaluations of a batch) indexes of them by namespace and by provided API.
pub(super) struct OperatorGroups {
    groups: Vec<OperatorGroup>,
    by_namespace: IndexedOnReuse<Index>,
    /// Keyed by each API of `olm.providedAPIs`, as text.
    by_api: IndexedOnReuse<Index>,
}

impl OperatorGroups {
    fn new(groups: Vec<OperatorGroup>) -> OperatorGroups {
        OperatorGroups {
            groups,
            by_namespace: IndexedOnReuse::new(),
            by_api: IndexedOnReuse::new(),
        }
    }

    /// The groups in `namespace`, in list order.
    pub(super) fn in_namespace<'a>(&'a self, namespace: &str) -> Vec<&'a OperatorGroup> {
        let index = self
            .by_namespace
            .get(|| Index::of(&self.groups, |group| [group.metadata.namespace.clone()]));
        match index {
            Some(index) => self.at(index.get(namespace).iter().copied()),
            None => self
                .groups
                .iter()
                .filter(|group| group.metadata.namespace == namespace)
                .collect(),
        }
    }

    /// The groups that may provide one of `apis`, in list order: every group
    /// on a scan, only those whose annotation names one of them through the
    /// index. Callers still intersect each group's APIs with theirs, so both
    /// give the same answer.
    pub(super) fn providing_any(&self, apis: &ApiSet) -> Vec<&OperatorGroup> {
        let index = self.by_api.get(|| {
            Index::of(&self.groups, |group| {
                group
                    .provided_apis()
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
            })
        });
        match index {
            Some(index) => {
                let mut positions: Vec<usize> = apis
                    .iter()
                    .flat_map(|api| index.get(&api.to_string()).to_vec())
                    .collect();
                positions.sort_unstable();
                positions.dedup();
                self.at(positions)
            }
            None => self.groups.iter().collect(),
        }
    }

    fn at(&self, positions: impl IntoIterator<Item = usize>) -> Vec<&OperatorGroup> {
        positions
            .into_iter()
            .filter_map(|at| self.groups.get(at))
            .collect()
    }
}

/// Every OperatorGroup: one list call per request, whatever the cluster
/// size (decoded once per batch).
pub(super) fn list_operator_groups(
    cluster: &dyn Cluster,
) -> Result<Rc<OperatorGroups>, ContextError> {
    // What the rule reads of a group: its spec (targets, selector, static
    // APIs), its status (synced namespaces) and its `olm.providedAPIs`
    // annotation, which a mask always keeps with the rest of metadata.
    cluster.list_all_shared(
        &ListAllResourcesRequest::new(OPERATOR_GROUP_API_VERSION, OPERATOR_GROUP_KIND)
            .field_masks(["spec", "status"]),
        OperatorGroups::new,
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
    listed: OnceCell<Rc<Vec<Namespace>>>,
    selected: RefCell<HashMap<String, Vec<String>>>,
}

impl<'c> NamespaceList<'c> {
    pub(super) fn new(cluster: &'c dyn Cluster) -> Self {
        NamespaceList {
            cluster,
            listed: OnceCell::new(),
            selected: RefCell::new(HashMap::new()),
        }
    }

    fn get(&self) -> Result<&[Namespace], ContextError> {
        if let Some(listed) = self.listed.get() {
            return Ok(listed);
        }
        let listed = self
            .cluster
            // Selectors read labels only: metadata, no spec or status.
            .list_all_shared(
                &ListAllResourcesRequest::new("v1", "Namespace").field_masks(["metadata"]),
                |namespaces: Vec<Namespace>| namespaces,
            )?;
        Ok(self.listed.get_or_init(|| listed))
    }

    /// The names `selector` matches; its canonical text is the cache key.
    pub(super) fn select(&self, selector: &Selector) -> Result<Vec<String>, ContextError> {
        let key = selector.to_string();
        if let Some(names) = self.selected.borrow().get(&key) {
            return Ok(names.clone());
        }
        let names = select_namespaces(selector, self.get()?);
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
