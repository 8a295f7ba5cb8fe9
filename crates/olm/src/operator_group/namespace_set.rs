//! Namespace sets: the namespace-set algebra of OLM's `groups.go`, where
//! the single entry `""` means all namespaces.

use std::collections::HashSet;

use super::NAMESPACE_ALL;

/// A set of namespace names (`NamespaceSet`, groups.go). The set holding only
/// `""` stands for all namespaces and gets special treatment in
/// [`NamespaceSet::intersection`] and [`NamespaceSet::union`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespaceSet(HashSet<String>);

impl NamespaceSet {
    /// The set of `namespaces`; `[""]` is all namespaces.
    pub fn new<I, S>(namespaces: I) -> NamespaceSet
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        NamespaceSet(namespaces.into_iter().map(Into::into).collect())
    }

    /// `{""}`: every namespace.
    pub fn all() -> NamespaceSet {
        NamespaceSet::new([NAMESPACE_ALL])
    }

    /// Exactly one element, and it is `""`.
    pub fn is_all_namespaces(&self) -> bool {
        self.0.len() == 1 && self.0.contains(NAMESPACE_ALL)
    }

    /// all ∩ b = b and a ∩ all = a, so all ∩ all = `{""}` (two global
    /// groups intersect) while all ∩ {} = {} (an empty group intersects
    /// nothing, not even a global one).
    pub fn intersection(&self, other: &NamespaceSet) -> NamespaceSet {
        if self.is_all_namespaces() {
            return other.clone();
        }
        if other.is_all_namespaces() {
            return self.clone();
        }
        NamespaceSet(self.0.intersection(&other.0).cloned().collect())
    }

    /// `!intersection(other).is_empty()` without building the set: the
    /// admission path tests thousands of groups against one.
    pub fn intersects(&self, other: &NamespaceSet) -> bool {
        if self.is_all_namespaces() {
            return !other.is_empty();
        }
        if other.is_all_namespaces() {
            return !self.is_empty();
        }
        !self.0.is_disjoint(&other.0)
    }

    /// all ∪ anything = all.
    pub fn union(&self, other: &NamespaceSet) -> NamespaceSet {
        if self.is_all_namespaces() {
            return self.clone();
        }
        if other.is_all_namespaces() {
            return other.clone();
        }
        NamespaceSet(self.0.union(&other.0).cloned().collect())
    }

    /// All namespaces contain every namespace.
    pub fn contains(&self, namespace: &str) -> bool {
        self.is_all_namespaces() || self.0.contains(namespace)
    }

    /// Number of names (1 for all namespaces).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set holds no namespace (a group that targets nothing).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The names in sorted order, for stable messages.
    pub fn sorted(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.0.iter().map(String::as_str).collect();
        names.sort_unstable();
        names
    }
}

/// The target set OLM intersects for a group whose target list is
/// `namespaces` (`NewOperatorGroup`): the group's own namespace is added
/// unless the list is empty or starts with `""`. So a group targeting
/// nothing stays empty and a global group stays `{""}`.
pub fn target_set(namespaces: &[String], own_namespace: &str) -> NamespaceSet {
    let mut set = NamespaceSet::new(namespaces.iter().map(String::as_str));
    if namespaces
        .first()
        .is_some_and(|first| first.as_str() != NAMESPACE_ALL)
    {
        set.0.insert(own_namespace.to_string());
    }
    set
}
