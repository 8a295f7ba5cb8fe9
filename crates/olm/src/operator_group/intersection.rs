//! The provided-API intersection of OperatorGroups (`NewOperatorGroup`,
//! `GroupIntersection`, `ReconcileAPIIntersection` in groups.go).

use super::{ApiSet, NamespaceSet, OperatorGroup, target_set};

/// What OLM's intersection logic knows of a group (`OperatorGroupSurface`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupSurface {
    /// The group's namespace.
    pub namespace: String,
    /// The group's name.
    pub name: String,
    /// The target set OLM intersects ([`target_set`]).
    pub targets: NamespaceSet,
    /// The APIs the group provides (its `olm.providedAPIs`).
    pub provided_apis: ApiSet,
}

impl GroupSurface {
    /// A group targeting `target_namespaces` (its own namespace added as
    /// [`target_set`] does).
    pub fn new(
        namespace: &str,
        name: &str,
        target_namespaces: &[String],
        provided_apis: ApiSet,
    ) -> GroupSurface {
        GroupSurface {
            namespace: namespace.to_string(),
            name: name.to_string(),
            targets: target_set(target_namespaces, namespace),
            provided_apis,
        }
    }

    /// `NewOperatorGroup`: targets from `status.namespaces` only, APIs from
    /// the annotation. An unsynced group therefore targets nothing.
    pub fn from_status(group: &OperatorGroup) -> GroupSurface {
        GroupSurface::new(
            &group.metadata.namespace,
            &group.metadata.name,
            group.synced_namespaces().unwrap_or_default(),
            group.provided_apis(),
        )
    }

    /// `name/namespace`, OLM's `Identifier()`.
    pub fn identifier(&self) -> String {
        format!("{}/{}", self.name, self.namespace)
    }

    fn is_same_group(&self, other: &GroupSurface) -> bool {
        self.name == other.name && self.namespace == other.namespace
    }

    /// `GroupIntersection`: the other groups (self skipped) whose targets
    /// intersect this group's, in input order.
    pub fn group_intersection<'a>(&self, others: &'a [GroupSurface]) -> Vec<&'a GroupSurface> {
        others
            .iter()
            .filter(|other| !self.is_same_group(other) && self.targets.intersects(&other.targets))
            .collect()
    }
}

/// `APIReconciliationResult`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiReconciliation {
    /// The CSV's APIs are in its group's annotation but an intersecting
    /// group provides some of them: OLM removes them from the annotation.
    RemoveApis,
    /// New APIs no intersecting group provides: OLM adds them.
    AddApis,
    /// New APIs an intersecting group already provides.
    ApiConflict,
    /// Already in the annotation, no intersecting group provides them.
    NoApiConflict,
}

/// `ReconcileAPIIntersection(add, group, others)`. Note it intersects the
/// CSV's own APIs (`add`) with the other groups' annotations, not the
/// group's whole annotation.
pub fn reconcile_api_intersection(
    add: &ApiSet,
    group: &GroupSurface,
    others: &[GroupSurface],
) -> ApiReconciliation {
    let provided_by_intersecting = group
        .group_intersection(others)
        .into_iter()
        .fold(ApiSet::new(), |acc, other| acc.union(&other.provided_apis));
    let intersecting = add.intersects(&provided_by_intersecting);
    let subset = add.is_subset(&group.provided_apis);
    match (subset, intersecting) {
        (true, true) => ApiReconciliation::RemoveApis,
        (false, true) => ApiReconciliation::ApiConflict,
        (false, false) => ApiReconciliation::AddApis,
        (true, false) => ApiReconciliation::NoApiConflict,
    }
}
