//! OperatorGroups, ClusterServiceVersions and OLM's provided-API intersection
//! algorithm, ported from OLM (operator-framework/operator-lifecycle-manager;
//! `groups.go`, `operatorgroup.go` and `labeler.go` are in
//! `pkg/controller/operators/olm/`, `cache.APISet` in
//! `pkg/controller/registry/resolver/cache/`) so a policy decides exactly
//! what OLM would:
//!
//! * [`ApiKey`] / [`ApiSet`]: `cache.APISet` and the `olm.providedAPIs`
//!   annotation parser/printer (`GVKStringToProvidedAPISet`, `APISet.String`);
//! * [`NamespaceSet`]: the namespace-set algebra of `groups.go`, where the
//!   single entry `""` means all namespaces;
//! * [`OperatorGroupSpec::targets`]: target resolution of
//!   `getOperatorGroupTargets` (operatorgroup.go);
//! * [`GroupSurface`] / [`reconcile_api_intersection`]: `NewOperatorGroup`,
//!   `GroupIntersection` and `ReconcileAPIIntersection` (groups.go);
//! * [`ClusterServiceVersion::provided_apis`] / [`ClusterServiceVersion::is_copied`]:
//!   `apiSurfaceOfCSV` (labeler.go) and `IsCopied` (operator-framework/api);
//!   [`ClusterServiceVersion::provides_same_apis`] compares two versions of
//!   a CSV by that surface (admission of UPDATEs).
//!
//! The types are lenient (`null` = absent) because a policy must answer any
//! JSON with a message, not a parse error.

use std::collections::{BTreeMap, HashSet};
use std::fmt;

use olm_guard_core::ObjectMeta;
use olm_guard_core::selector::{LabelSelector, Selector};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_with::DefaultOnNull;

/// The annotation OLM keeps the union of a group's member CSVs' APIs in.
pub const PROVIDED_APIS_ANNOTATION: &str = "olm.providedAPIs";
/// Set on CSVs copied into target namespaces: the namespace of the original.
pub const OPERATOR_NAMESPACE_ANNOTATION: &str = "olm.operatorNamespace";
/// Label OLM puts on copied CSVs.
pub const COPIED_LABEL: &str = "olm.copiedFrom";
/// `status.reason` of a copied CSV.
pub const COPIED_REASON: &str = "Copied";
/// `metav1.NamespaceAll`: as the only target, it means every namespace.
pub const NAMESPACE_ALL: &str = "";

// ---------------------------------------------------------------------------
// Provided APIs
// ---------------------------------------------------------------------------

/// One API as OLM compares them: group, version and kind. OLM's key also
/// carries a plural, but strips it (`StripPlural`) before every comparison,
/// so it is never stored here.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ApiKey {
    /// The API group (`""` for the core group).
    pub group: String,
    /// The version, e.g. `v1alpha1`.
    pub version: String,
    /// The kind, e.g. `EtcdCluster`.
    pub kind: String,
}

impl ApiKey {
    /// The key of `kind` in `group`/`version`.
    pub fn new(group: &str, version: &str, kind: &str) -> ApiKey {
        ApiKey {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
        }
    }

    /// apimachinery `schema.ParseKindArg`: only a string with at least two
    /// dots names a GVK; it splits into at most three parts, so the group
    /// keeps any further dots (`Kind.v1.example.com`).
    pub fn parse_kind_arg(text: &str) -> Option<ApiKey> {
        if text.matches('.').count() < 2 {
            return None;
        }
        let mut parts = text.splitn(3, '.');
        let kind = parts.next()?;
        let version = parts.next()?;
        let group = parts.next()?;
        Some(ApiKey::new(group, version, kind))
    }
}

/// `Kind.version.group`, the annotation form (`APIKeyToGVKString`).
impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.kind, self.version, self.group)
    }
}

/// A set of APIs (`cache.APISet`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiSet(HashSet<ApiKey>);

impl ApiSet {
    /// The empty set.
    pub fn new() -> ApiSet {
        ApiSet::default()
    }

    /// `GVKStringToProvidedAPISet`: every space is deleted, the value split
    /// at commas, and pieces that are not `Kind.version.group` are dropped
    /// silently (OLM does the same, so a typo simply provides nothing).
    /// Comparison stays case-sensitive, as in OLM.
    pub fn parse_annotation(value: &str) -> ApiSet {
        value
            .replace(' ', "")
            .split(',')
            .filter_map(ApiKey::parse_kind_arg)
            .collect()
    }

    /// Adds `key`; `false` when it was already there.
    pub fn insert(&mut self, key: ApiKey) -> bool {
        self.0.insert(key)
    }

    /// Whether `key` is in the set.
    pub fn contains(&self, key: &ApiKey) -> bool {
        self.0.contains(key)
    }

    /// Number of APIs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set holds no API.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The APIs, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &ApiKey> {
        self.0.iter()
    }

    /// The APIs in either set (`APISet.Union`).
    pub fn union(&self, other: &ApiSet) -> ApiSet {
        self.0.union(&other.0).cloned().collect()
    }

    /// The APIs in both sets (`APISet.Intersection`).
    pub fn intersection(&self, other: &ApiSet) -> ApiSet {
        self.0.intersection(&other.0).cloned().collect()
    }

    /// The APIs of this set that are not in `other` (`APISet.Difference`).
    pub fn difference(&self, other: &ApiSet) -> ApiSet {
        self.0.difference(&other.0).cloned().collect()
    }

    /// Whether some API is in both, without building the intersection.
    pub fn intersects(&self, other: &ApiSet) -> bool {
        !self.0.is_disjoint(&other.0)
    }

    /// `APISet.IsSubset`; the empty set is a subset of everything.
    pub fn is_subset(&self, other: &ApiSet) -> bool {
        self.0.is_subset(&other.0)
    }

    /// The keys as `Kind.version.group`, sorted like `APISet.String`.
    pub fn sorted_strings(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.0.iter().map(ApiKey::to_string).collect();
        keys.sort();
        keys
    }
}

/// The annotation value OLM writes: sorted keys joined by commas.
impl fmt::Display for ApiSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sorted_strings().join(","))
    }
}

impl FromIterator<ApiKey> for ApiSet {
    fn from_iter<I: IntoIterator<Item = ApiKey>>(iter: I) -> Self {
        ApiSet(iter.into_iter().collect())
    }
}

// ---------------------------------------------------------------------------
// Namespace sets
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// OperatorGroup
// ---------------------------------------------------------------------------

/// `operators.coreos.com/v1` OperatorGroup, the fields OLM's intersection
/// logic reads.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OperatorGroup {
    /// The group's metadata; the `olm.providedAPIs` annotation lives here.
    #[serde_as(as = "DefaultOnNull")]
    pub metadata: ObjectMeta,
    /// How the group chooses its target namespaces.
    #[serde_as(as = "DefaultOnNull")]
    pub spec: OperatorGroupSpec,
    /// What OLM last wrote; `None` before OLM synced the group.
    pub status: Option<OperatorGroupStatus>,
}

/// `spec` of an OperatorGroup.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OperatorGroupSpec {
    /// Targets the namespaces whose labels match, when `targetNamespaces`
    /// is empty.
    pub selector: Option<LabelSelector>,
    /// Targets these namespaces; wins over `selector`.
    #[serde_as(as = "DefaultOnNull")]
    pub target_namespaces: Vec<String>,
    /// Whether OLM leaves the `olm.providedAPIs` annotation as the user
    /// wrote it instead of computing it.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(rename = "staticProvidedAPIs")]
    pub static_provided_apis: bool,
}

/// `status` of an OperatorGroup, as OLM writes it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OperatorGroupStatus {
    /// `None` when the key is absent or null; OLM omits an empty list.
    pub namespaces: Option<Vec<String>>,
    /// Required by the CRD, so every status OLM has written carries it.
    pub last_updated: Option<Value>,
}

impl OperatorGroup {
    /// Reads `request.object`; the error names the field at fault.
    pub fn from_object(object: &Value) -> Result<OperatorGroup, String> {
        read_object(object)
    }

    /// `namespace/name`, the way messages name a group.
    pub fn display_name(&self) -> String {
        format!("{}/{}", self.metadata.namespace, self.metadata.name)
    }

    /// Same name and namespace: OLM's identity for groups.
    pub fn is_same_group(&self, namespace: &str, name: &str) -> bool {
        self.metadata.namespace == namespace && self.metadata.name == name
    }

    /// The `olm.providedAPIs` annotation, parsed (absent = no APIs).
    pub fn provided_apis(&self) -> ApiSet {
        self.metadata
            .annotation(PROVIDED_APIS_ANNOTATION)
            .map(ApiSet::parse_annotation)
            .unwrap_or_default()
    }

    /// `status.namespaces` once OLM has synced the group (it always writes
    /// `lastUpdated`, and omits an empty `namespaces`); `None` for a group
    /// OLM has not written a status for yet.
    pub fn synced_namespaces(&self) -> Option<&[String]> {
        let status = self.status.as_ref()?;
        match &status.namespaces {
            Some(namespaces) => Some(namespaces),
            None if status.last_updated.is_some() => Some(&[]),
            None => None,
        }
    }
}

/// Where a group's targets come from according to its spec.
pub enum SpecTargets {
    /// `spec.targetNamespaces`, deduplicated, in order.
    Explicit(Vec<String>),
    /// No selector, or one that selects everything: `[""]`.
    AllNamespaces,
    /// The namespaces whose labels match.
    Selected(Selector),
}

/// Why OLM cannot resolve a group's targets (its sync fails).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetsError {
    /// `spec.targetNamespaces` contains `""`.
    ContainsNamespaceAll,
    /// `spec.selector` does not convert to a label selector.
    InvalidSelector(String),
}

impl OperatorGroupSpec {
    /// `getOperatorGroupTargets`, without the namespace lookup. Like OLM it
    /// converts the selector first, so an invalid selector fails even when
    /// `targetNamespaces` would make it irrelevant.
    pub fn targets(&self) -> Result<SpecTargets, TargetsError> {
        let selector = self
            .selector
            .as_ref()
            .map(Selector::from_label_selector)
            .transpose()
            .map_err(|e| TargetsError::InvalidSelector(e.0))?;
        if !self.target_namespaces.is_empty() {
            if self.target_namespaces.iter().any(|ns| ns == NAMESPACE_ALL) {
                return Err(TargetsError::ContainsNamespaceAll);
            }
            return Ok(SpecTargets::Explicit(dedup(&self.target_namespaces)));
        }
        match selector {
            Some(selector) if !selector.is_everything() => Ok(SpecTargets::Selected(selector)),
            _ => Ok(SpecTargets::AllNamespaces),
        }
    }
}

impl SpecTargets {
    /// The target list OLM writes to `status.namespaces`. `select` lists
    /// the namespaces a selector matches ([`select_namespaces`]); it is only
    /// called for a selector, so callers list Namespaces only when needed.
    pub fn resolve<E>(
        &self,
        select: impl FnOnce(&Selector) -> Result<Vec<String>, E>,
    ) -> Result<Vec<String>, E> {
        match self {
            SpecTargets::Explicit(names) => Ok(names.clone()),
            SpecTargets::AllNamespaces => Ok(vec![NAMESPACE_ALL.to_string()]),
            SpecTargets::Selected(selector) => select(selector),
        }
    }
}

/// The names of the namespaces whose labels match `selector`, what OLM's
/// namespace lister returns for a group's selector.
pub fn select_namespaces(selector: &Selector, namespaces: &[Namespace]) -> Vec<String> {
    namespaces
        .iter()
        .filter(|ns| selector.matches(&ns.metadata.labels))
        .map(|ns| ns.metadata.name.clone())
        .collect()
}

fn dedup(names: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    names
        .iter()
        .filter(|name| seen.insert(name.as_str()))
        .cloned()
        .collect()
}

/// A `v1` Namespace: only its name and labels matter here.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Namespace {
    /// The namespace's name and labels.
    #[serde_as(as = "DefaultOnNull")]
    pub metadata: ObjectMeta,
}

impl Namespace {
    /// A namespace called `name` with `labels`.
    pub fn named(name: &str, labels: BTreeMap<String, String>) -> Namespace {
        Namespace {
            metadata: ObjectMeta {
                name: name.to_string(),
                labels,
                ..ObjectMeta::default()
            },
        }
    }
}

// ---------------------------------------------------------------------------
// Intersection
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// ClusterServiceVersion
// ---------------------------------------------------------------------------

/// `operators.coreos.com/v1alpha1` ClusterServiceVersion: what decides
/// its provided APIs and whether it is a copy.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ClusterServiceVersion {
    /// The CSV's metadata; copies carry OLM's annotation and label.
    #[serde_as(as = "DefaultOnNull")]
    pub metadata: ObjectMeta,
    /// The owned and required APIs.
    #[serde_as(as = "DefaultOnNull")]
    pub spec: CsvSpec,
    /// `status.reason`, which marks copies.
    #[serde_as(as = "DefaultOnNull")]
    pub status: CsvStatus,
}

/// `spec` of a ClusterServiceVersion: its API descriptions.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CsvSpec {
    /// `spec.customresourcedefinitions`: CRD-backed APIs.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(rename = "customresourcedefinitions")]
    pub custom_resource_definitions: CrdDescriptions,
    /// `spec.apiservicedefinitions`: APIService-backed APIs.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(rename = "apiservicedefinitions")]
    pub api_service_definitions: ApiServiceDescriptions,
}

/// The CRD-backed APIs a CSV owns and requires.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CrdDescriptions {
    /// APIs the operator provides.
    #[serde_as(as = "DefaultOnNull")]
    pub owned: Vec<CrdDescription>,
    /// APIs the operator needs from others.
    #[serde_as(as = "DefaultOnNull")]
    pub required: Vec<CrdDescription>,
}

/// One CRD-backed API of a CSV.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CrdDescription {
    /// `<plural>.<group>`, the CRD's name.
    #[serde_as(as = "DefaultOnNull")]
    pub name: String,
    /// The API version served.
    #[serde_as(as = "DefaultOnNull")]
    pub version: String,
    /// The kind.
    #[serde_as(as = "DefaultOnNull")]
    pub kind: String,
}

/// The APIService-backed APIs a CSV owns and requires.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ApiServiceDescriptions {
    /// APIs the operator provides.
    #[serde_as(as = "DefaultOnNull")]
    pub owned: Vec<ApiServiceDescription>,
    /// APIs the operator needs from others.
    #[serde_as(as = "DefaultOnNull")]
    pub required: Vec<ApiServiceDescription>,
}

/// One APIService-backed API of a CSV.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ApiServiceDescription {
    /// The APIService's name.
    #[serde_as(as = "DefaultOnNull")]
    pub name: String,
    /// The API group.
    #[serde_as(as = "DefaultOnNull")]
    pub group: String,
    /// The API version.
    #[serde_as(as = "DefaultOnNull")]
    pub version: String,
    /// The kind.
    #[serde_as(as = "DefaultOnNull")]
    pub kind: String,
}

/// `status` of a ClusterServiceVersion, as far as copies are concerned.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CsvStatus {
    /// `Copied` on the copies OLM makes in target namespaces.
    #[serde_as(as = "DefaultOnNull")]
    pub reason: String,
}

/// An owned CRD whose name has no dot, so OLM cannot tell its group: OLM
/// fails the whole CSV (`error parsing crd name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrdNameError {
    /// Index in `spec.customresourcedefinitions.owned`.
    pub index: usize,
    /// The name as written.
    pub name: String,
}

impl ClusterServiceVersion {
    /// Reads `request.object`; the error names the field at fault.
    pub fn from_object(object: &Value) -> Result<ClusterServiceVersion, String> {
        read_object(object)
    }

    /// `IsCopied`: reason `Copied`, an `olm.operatorNamespace` annotation
    /// naming another namespace, or an `olm.copiedFrom` label. Copies never
    /// count as providers.
    pub fn is_copied(&self) -> bool {
        self.status.reason == COPIED_REASON
            || self
                .metadata
                .annotation(OPERATOR_NAMESPACE_ANNOTATION)
                .is_some_and(|ns| ns != self.metadata.namespace)
            || self.metadata.labels.contains_key(COPIED_LABEL)
    }

    /// `apiSurfaceOfCSV` provided APIs, plural stripped: owned CRDs (name
    /// split at the first dot into plural and group) and owned API
    /// services. `required` entries are required APIs, not provided ones.
    pub fn provided_apis(&self) -> Result<ApiSet, CrdNameError> {
        let mut apis = ApiSet::new();
        for (index, crd) in self
            .spec
            .custom_resource_definitions
            .owned
            .iter()
            .enumerate()
        {
            let Some((_plural, group)) = crd.name.split_once('.') else {
                return Err(CrdNameError {
                    index,
                    name: crd.name.clone(),
                });
            };
            apis.insert(ApiKey::new(group, &crd.version, &crd.kind));
        }
        for api in &self.spec.api_service_definitions.owned {
            apis.insert(ApiKey::new(&api.group, &api.version, &api.kind));
        }
        Ok(apis)
    }

    /// Whether `other` provides the same APIs, the way OLM sees them: the
    /// same [`provided_apis`](Self::provided_apis) set, so order,
    /// descriptions and plurals do not matter. When a CRD name cannot be
    /// parsed, the owned entries themselves must be equal: the same broken
    /// entry is the same problem, any other edit is a change.
    pub fn provides_same_apis(&self, other: &ClusterServiceVersion) -> bool {
        match (self.provided_apis(), other.provided_apis()) {
            (Ok(mine), Ok(theirs)) => mine == theirs,
            (Err(_), Err(_)) => {
                self.spec.custom_resource_definitions.owned
                    == other.spec.custom_resource_definitions.owned
                    && self.spec.api_service_definitions.owned
                        == other.spec.api_service_definitions.owned
            }
            _ => false,
        }
    }
}

/// Deserialises an admission object, naming the field at fault
/// (`spec.targetNamespaces`): serde alone reports only the type mismatch.
fn read_object<T: DeserializeOwned>(object: &Value) -> Result<T, String> {
    crate::read_custom_resource(object, "field ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(group: &str, version: &str, kind: &str) -> ApiKey {
        ApiKey::new(group, version, kind)
    }

    fn apis(annotation: &str) -> ApiSet {
        ApiSet::parse_annotation(annotation)
    }

    fn ns(names: &[&str]) -> NamespaceSet {
        NamespaceSet::new(names.iter().copied())
    }

    fn strings(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    /// groups_test.go `buildOperatorGroup`: a group whose status lists
    /// `targets` and whose annotation is the `gvks` joined by commas.
    fn group(namespace: &str, name: &str, targets: &[&str], gvks: &[&str]) -> GroupSurface {
        GroupSurface::from_status(&og(namespace, name, Some(targets), &gvks.join(",")))
    }

    fn og(namespace: &str, name: &str, status: Option<&[&str]>, annotation: &str) -> OperatorGroup {
        let mut object = json!({
            "apiVersion": "operators.coreos.com/v1",
            "kind": "OperatorGroup",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "annotations": {PROVIDED_APIS_ANNOTATION: annotation},
            },
        });
        if let Some(targets) = status {
            object["status"] =
                json!({"namespaces": targets, "lastUpdated": "2024-01-01T00:00:00Z"});
        }
        OperatorGroup::from_object(&object).unwrap()
    }

    // --- ApiKey / ApiSet -------------------------------------------------

    #[test]
    fn parse_kind_arg_needs_two_dots_and_keeps_dots_in_the_group() {
        assert_eq!(
            ApiKey::parse_kind_arg("Goose.v1alpha1.birds.com"),
            Some(key("birds.com", "v1alpha1", "Goose"))
        );
        assert_eq!(ApiKey::parse_kind_arg("Goose.v1alpha1"), None);
        assert_eq!(ApiKey::parse_kind_arg("Goose"), None);
        assert_eq!(ApiKey::parse_kind_arg(""), None);
        // ParseKindArg does not validate the parts: empty ones are kept.
        assert_eq!(
            ApiKey::parse_kind_arg("Goose..birds"),
            Some(key("birds", "", "Goose"))
        );
    }

    #[test]
    fn annotation_one_api() {
        assert_eq!(
            apis("Goose.v1alpha1.birds.com"),
            [key("birds.com", "v1alpha1", "Goose")]
                .into_iter()
                .collect()
        );
    }

    #[test]
    fn annotation_bad_provided_api_is_dropped() {
        // groups_test.go "OneTargetNamespace/BadProvidedAPI"
        assert!(apis("Goose.v1alpha1").is_empty());
    }

    #[test]
    fn annotation_multiple_provided_apis_one_bad() {
        // groups_test.go "OneTargetNamespace/MultipleProvidedAPIs/OneBad"
        assert_eq!(
            apis("Goose.v1alpha1,Moose.v1alpha1.mammals.com"),
            [key("mammals.com", "v1alpha1", "Moose")]
                .into_iter()
                .collect()
        );
    }

    #[test]
    fn annotation_multiple_provided_apis() {
        assert_eq!(
            apis("Goose.v1alpha1.birds.com,Moose.v1alpha1.mammals.com"),
            [
                key("birds.com", "v1alpha1", "Goose"),
                key("mammals.com", "v1alpha1", "Moose")
            ]
            .into_iter()
            .collect()
        );
    }

    #[test]
    fn annotation_spaces_and_empty_pieces_are_ignored_case_is_kept() {
        let set = apis(" Goose.v1alpha1.birds.com , ,Moose.v1alpha1.mammals.com,,");
        assert_eq!(set.len(), 2);
        assert!(set.contains(&key("birds.com", "v1alpha1", "Goose")));
        // Comparison is case-sensitive: OLM has a TODO, no lower-casing.
        assert!(!set.contains(&key("birds.com", "v1alpha1", "goose")));
        assert!(apis("").is_empty());
    }

    #[test]
    fn version_is_part_of_the_identity() {
        let v1 = apis("Widget.v1.example.com");
        let v1beta1 = apis("Widget.v1beta1.example.com");
        assert!(!v1.intersects(&v1beta1));
    }

    #[test]
    fn annotation_printer_sorts_and_round_trips() {
        let set = apis("Prometheus.v1.monitoring.coreos.com,Alertmanager.v1.monitoring.coreos.com");
        let printed = set.to_string();
        assert_eq!(
            printed,
            "Alertmanager.v1.monitoring.coreos.com,Prometheus.v1.monitoring.coreos.com"
        );
        assert_eq!(apis(&printed), set);
        assert_eq!(ApiSet::new().to_string(), "");
    }

    #[test]
    fn api_set_algebra() {
        let ab = apis("A.v1.g,B.v1.g");
        let bc = apis("B.v1.g,C.v1.g");
        assert_eq!(ab.union(&bc), apis("A.v1.g,B.v1.g,C.v1.g"));
        assert_eq!(ab.intersection(&bc), apis("B.v1.g"));
        assert_eq!(ab.difference(&bc), apis("A.v1.g"));
        assert!(ab.intersects(&bc));
        assert!(!ab.intersects(&apis("C.v1.g")));
        assert!(apis("A.v1.g").is_subset(&ab));
        assert!(!bc.is_subset(&ab));
        assert!(ApiSet::new().is_subset(&ApiSet::new()));
    }

    // --- NamespaceSet (groups_test.go TestNamespaceSet*) ------------------

    /// (name, left, right, want)
    type SetCase<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [&'a str]);

    #[test]
    fn namespace_set_intersection_table() {
        let cases: &[SetCase] = &[
            ("EmptySets", &[], &[], &[]),
            (
                "EmptyLeft/MultipleRight/NoIntersection",
                &[],
                &["ns", "ns-1", "ns-2"],
                &[],
            ),
            (
                "MultipleLeft/EmptyRight/NoIntersection",
                &["ns", "ns-1", "ns-2"],
                &[],
                &[],
            ),
            ("OneLeft/OneRight/Intersection", &["ns"], &["ns"], &["ns"]),
            (
                "MultipleLeft/MultipleRight/SomeIntersect",
                &["ns", "ns-1", "ns-2"],
                &["ns", "ns-1", "ns-3"],
                &["ns", "ns-1"],
            ),
            (
                "MultipleLeft/MultipleRight/AllIntersect",
                &["ns", "ns-1", "ns-2"],
                &["ns", "ns-1", "ns-2"],
                &["ns", "ns-1", "ns-2"],
            ),
            (
                "AllLeft/MultipleRight/RightIsIntersection",
                &[""],
                &["ns", "ns-1", "ns-2"],
                &["ns", "ns-1", "ns-2"],
            ),
            (
                "MultipleLeft/AllRight/LeftIsIntersection",
                &["ns", "ns-1", "ns-2"],
                &[""],
                &["ns", "ns-1", "ns-2"],
            ),
            ("AllLeft/EmptyRight/NoIntersection", &[""], &[], &[]),
            ("EmptyLeft/AllRight/NoIntersection", &[], &[""], &[]),
            ("AllLeft/AllRight/Intersection", &[""], &[""], &[""]),
        ];
        for (name, left, right, want) in cases {
            let got = ns(left).intersection(&ns(right));
            assert_eq!(got, ns(want), "{name}");
            assert_eq!(
                ns(left).intersects(&ns(right)),
                !want.is_empty(),
                "{name} (intersects)"
            );
        }
    }

    #[test]
    fn namespace_set_union_table() {
        let cases: &[SetCase] = &[
            ("EmptySets", &[], &[], &[]),
            (
                "EmptyLeft/MultipleRight",
                &[],
                &["ns", "ns-1"],
                &["ns", "ns-1"],
            ),
            (
                "MultipleLeft/EmptyRight",
                &["ns", "ns-1"],
                &[],
                &["ns", "ns-1"],
            ),
            ("OneLeft/SameRight", &["ns"], &["ns"], &["ns"]),
            (
                "MultipleLeft/MultipleRight/Differ",
                &["ns", "ns-1", "ns-2"],
                &["ns", "ns-1", "ns-3"],
                &["ns", "ns-1", "ns-2", "ns-3"],
            ),
            ("AllLeft/MultipleRight", &[""], &["ns", "ns-1"], &[""]),
            ("MultipleLeft/AllRight", &["ns", "ns-1"], &[""], &[""]),
            ("AllLeft/EmptyRight", &[""], &[], &[""]),
            ("EmptyLeft/AllRight", &[], &[""], &[""]),
            ("AllLeft/AllRight", &[""], &[""], &[""]),
        ];
        for (name, left, right, want) in cases {
            assert_eq!(ns(left).union(&ns(right)), ns(want), "{name}");
        }
    }

    #[test]
    fn namespace_set_is_all_and_contains() {
        assert!(NamespaceSet::all().is_all_namespaces());
        assert!(!ns(&["a"]).is_all_namespaces());
        assert!(!ns(&["a", "b", "c"]).is_all_namespaces());
        // "" among others is a literal member, not "all".
        assert!(!ns(&["", "a"]).is_all_namespaces());
        assert!(NamespaceSet::all().contains("any"));
        assert!(ns(&["a", "b"]).contains("a"));
        assert!(ns(&["a", "b"]).contains("b"));
        assert!(!ns(&["a", "b"]).contains("c"));
        assert_eq!(ns(&["b", "a"]).sorted(), vec!["a", "b"]);
    }

    // --- target sets (groups_test.go TestNewOperatorGroup) -----------------

    /// (name, status.namespaces, annotation, want targets, want APIs)
    type GroupCase<'a> = (
        &'a str,
        Option<&'a [&'a str]>,
        &'a str,
        &'a [&'a str],
        ApiSet,
    );

    #[test]
    fn new_operator_group_table() {
        let cases: &[GroupCase] = &[
            (
                "NoTargetNamespaces/NoProvidedAPIs",
                Some(&[]),
                "",
                &[],
                ApiSet::new(),
            ),
            (
                "OneTargetNamespace/NoProvidedAPIs",
                Some(&["ns-1"]),
                "",
                &["ns", "ns-1"],
                ApiSet::new(),
            ),
            (
                "OwnTargetNamespace/NoProvidedAPIs",
                Some(&["ns"]),
                "",
                &["ns"],
                ApiSet::new(),
            ),
            (
                "MultipleTargetNamespaces/NoProvidedAPIs",
                Some(&["ns-1", "ns-2"]),
                "",
                &["ns", "ns-1", "ns-2"],
                ApiSet::new(),
            ),
            (
                "AllTargetNamespaces/NoProvidedAPIs",
                Some(&[""]),
                "",
                &[""],
                ApiSet::new(),
            ),
            (
                "OneTargetNamespace/OneProvidedAPI",
                Some(&["ns-1"]),
                "Goose.v1alpha1.birds.com",
                &["ns", "ns-1"],
                apis("Goose.v1alpha1.birds.com"),
            ),
            (
                "OneTargetNamespace/BadProvidedAPI",
                Some(&["ns-1"]),
                "Goose.v1alpha1",
                &["ns", "ns-1"],
                ApiSet::new(),
            ),
            (
                "OneTargetNamespace/MultipleProvidedAPIs/OneBad",
                Some(&["ns-1"]),
                "Goose.v1alpha1,Moose.v1alpha1.mammals.com",
                &["ns", "ns-1"],
                apis("Moose.v1alpha1.mammals.com"),
            ),
            ("Unsynced/NoStatus", None, "", &[], ApiSet::new()),
        ];
        for (name, status, annotation, targets, provided) in cases {
            let surface = GroupSurface::from_status(&og("ns", "group", *status, annotation));
            assert_eq!(surface.namespace, "ns", "{name}");
            assert_eq!(surface.name, "group", "{name}");
            assert_eq!(surface.targets, ns(targets), "{name}");
            assert_eq!(&surface.provided_apis, provided, "{name}");
        }
    }

    #[test]
    fn target_set_appends_own_namespace_unless_empty_or_all() {
        assert_eq!(target_set(&strings(&["a"]), "own"), ns(&["a", "own"]));
        assert_eq!(target_set(&[], "own"), ns(&[]));
        assert_eq!(target_set(&strings(&[""]), "own"), NamespaceSet::all());
        // Only the first element is looked at, as in OLM.
        assert_eq!(target_set(&strings(&["", "a"]), "own"), ns(&["", "a"]));
        assert_eq!(
            target_set(&strings(&["a", ""]), "own"),
            ns(&["a", "", "own"])
        );
    }

    #[test]
    fn synced_namespaces_distinguishes_unsynced_from_empty() {
        let unsynced = OperatorGroup::from_object(&json!({"metadata": {"name": "g"}})).unwrap();
        assert_eq!(unsynced.synced_namespaces(), None);
        let empty_status = OperatorGroup::from_object(&json!({"status": {}})).unwrap();
        assert_eq!(empty_status.synced_namespaces(), None);
        let null_status = OperatorGroup::from_object(&json!({"status": null})).unwrap();
        assert_eq!(null_status.synced_namespaces(), None);
        // OLM omits an empty `namespaces` but always writes lastUpdated.
        let synced_empty =
            OperatorGroup::from_object(&json!({"status": {"lastUpdated": "2024-01-01T00:00:00Z"}}))
                .unwrap();
        assert_eq!(synced_empty.synced_namespaces(), Some(&[][..]));
        let synced = OperatorGroup::from_object(&json!({"status": {"namespaces": [""]}})).unwrap();
        assert_eq!(synced.synced_namespaces(), Some(&strings(&[""])[..]));
    }

    // --- spec target resolution (getOperatorGroupTargets) ------------------

    fn spec(value: Value) -> OperatorGroupSpec {
        OperatorGroup::from_object(&json!({ "spec": value }))
            .unwrap()
            .spec
    }

    fn namespaces() -> Vec<Namespace> {
        vec![
            Namespace::named("prod-a", BTreeMap::from([("env".into(), "prod".into())])),
            Namespace::named("prod-b", BTreeMap::from([("env".into(), "prod".into())])),
            Namespace::named("dev", BTreeMap::from([("env".into(), "dev".into())])),
        ]
    }

    fn resolve(spec: &OperatorGroupSpec) -> Result<Vec<String>, TargetsError> {
        let listed = namespaces();
        Ok(spec
            .targets()?
            .resolve(|selector| Ok::<_, ()>(select_namespaces(selector, &listed)))
            .unwrap_or_default())
    }

    #[test]
    fn explicit_target_namespaces_win_over_the_selector() {
        let s = spec(
            json!({"targetNamespaces": ["b", "a", "b"], "selector": {"matchLabels": {"env": "prod"}}}),
        );
        assert_eq!(resolve(&s), Ok(strings(&["b", "a"])));
    }

    #[test]
    fn target_namespaces_with_namespace_all_fail() {
        let s = spec(json!({"targetNamespaces": ["a", ""]}));
        assert_eq!(resolve(&s), Err(TargetsError::ContainsNamespaceAll));
    }

    #[test]
    fn no_selector_or_empty_selector_means_all_namespaces() {
        for value in [
            json!({}),
            json!({"selector": null}),
            json!({"selector": {}}),
            json!({"selector": {"matchLabels": {}}}),
            json!({"targetNamespaces": [], "selector": {"matchExpressions": []}}),
            json!({"targetNamespaces": null}),
        ] {
            assert_eq!(resolve(&spec(value.clone())), Ok(strings(&[""])), "{value}");
        }
    }

    #[test]
    fn a_selector_picks_matching_namespaces_without_listing_otherwise() {
        let s = spec(json!({"selector": {"matchLabels": {"env": "prod"}}}));
        assert_eq!(resolve(&s), Ok(strings(&["prod-a", "prod-b"])));
        let none = spec(json!({"selector": {"matchLabels": {"env": "staging"}}}));
        assert_eq!(resolve(&none), Ok(vec![]));
        let expr = spec(
            json!({"selector": {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}}),
        );
        assert_eq!(resolve(&expr), Ok(strings(&["dev"])));
        // Explicit targets never ask for the namespace list.
        let explicit = spec(json!({"targetNamespaces": ["x"]})).targets().unwrap();
        let listed: Result<Vec<String>, &str> = explicit.resolve(|_| Err("listed"));
        assert_eq!(listed, Ok(strings(&["x"])));
    }

    #[test]
    fn an_invalid_selector_fails_even_with_target_namespaces() {
        let s = spec(json!({
            "targetNamespaces": ["a"],
            "selector": {"matchExpressions": [{"key": "env", "operator": "Equals", "values": ["x"]}]}
        }));
        assert!(matches!(resolve(&s), Err(TargetsError::InvalidSelector(_))));
    }

    // --- GroupIntersection (groups_test.go TestGroupIntersection) ----------

    #[test]
    fn group_intersection_table() {
        type Case<'a> = (&'a str, GroupSurface, Vec<GroupSurface>, Vec<&'a str>);
        let cases: Vec<Case> = vec![
            (
                "NoTargets/NilGroups/NoIntersection",
                group("ns", "empty-group", &[], &[]),
                vec![],
                vec![],
            ),
            (
                "MatchingTarget/SingleOtherGroup/Intersection",
                group("ns", "group-a", &["ns-1"], &[]),
                vec![group("ns-2", "group-b", &["ns-1"], &[])],
                vec!["group-b/ns-2"],
            ),
            (
                "TargetIsOperatorNamespace/SingleOtherGroup/Intersection",
                group("ns", "group-a", &["ns-1"], &[]),
                vec![group("ns-2", "group-b", &["ns"], &[])],
                vec!["group-b/ns-2"],
            ),
            (
                "MatchingOperatorNamespaces/SingleOtherGroup/Intersection",
                group("ns", "group-a", &["ns-1"], &[]),
                vec![group("ns", "group-b", &["ns-2"], &[])],
                vec!["group-b/ns"],
            ),
            (
                "MatchingTarget/MultipleOtherGroups/Intersection",
                group("ns", "group-a", &["ns-1"], &[]),
                vec![
                    group("ns-2", "group-b", &["ns-1"], &[]),
                    group("ns-3", "group-c", &["ns-1"], &[]),
                ],
                vec!["group-b/ns-2", "group-c/ns-3"],
            ),
            (
                "NonMatchingTargets/MultipleOtherGroups/NoIntersection",
                group("ns", "group-a", &["ns-1", "ns-2", "ns-3"], &[]),
                vec![
                    group("ns-4", "group-b", &["ns-6", "ns-7", "ns-8"], &[]),
                    group("ns-5", "group-c", &["ns-6", "ns-7", "ns-8"], &[]),
                ],
                vec![],
            ),
            (
                "AllNamespaces/MultipleTargets/Intersection",
                group("ns", "group-a", &[""], &[]),
                vec![
                    group("ns-4", "group-b", &["ns-6", "ns-7", "ns-8"], &[]),
                    group("ns-5", "group-c", &["ns-9", "ns-10", "ns-11"], &[]),
                    group("ns-6", "group-d", &["ns-11", "ns-12"], &[]),
                ],
                vec!["group-b/ns-4", "group-c/ns-5", "group-d/ns-6"],
            ),
            (
                "MatchingTargetAllNamespace/MultipleTargets/Intersection",
                group("ns", "group-a", &["ns-1", "ns-2", "ns-3"], &[]),
                vec![
                    group("ns-4", "group-b", &[""], &[]),
                    group("ns-5", "group-c", &["ns-9", "ns-10", "ns-11"], &[]),
                    group("ns-6", "group-d", &["ns-11", "ns-12"], &[]),
                ],
                vec!["group-b/ns-4"],
            ),
            (
                "AllNamespace/MultipleTargets/OneAllNamespace/Intersection",
                group("ns", "group-a", &[""], &[]),
                vec![
                    group("ns-4", "group-b", &[""], &[]),
                    group("ns-5", "group-c", &["ns-9", "ns-10", "ns-11"], &[]),
                    group("ns-6", "group-d", &["ns-11", "ns-12"], &[]),
                ],
                vec!["group-b/ns-4", "group-c/ns-5", "group-d/ns-6"],
            ),
            (
                "AllNamespace/AllNamespace/Intersection",
                group("ns", "group-a", &[""], &[]),
                vec![group("ns-4", "group-b", &[""], &[])],
                vec!["group-b/ns-4"],
            ),
            (
                "Self/Skipped",
                group("ns", "group-a", &[""], &[]),
                vec![group("ns", "group-a", &[""], &[])],
                vec![],
            ),
            (
                "All/UnsyncedOther/NoIntersection",
                group("ns", "group-a", &[""], &[]),
                vec![GroupSurface::from_status(&og("ns-2", "group-b", None, ""))],
                vec![],
            ),
        ];
        for (name, left, right, want) in cases {
            let got: Vec<String> = left
                .group_intersection(&right)
                .iter()
                .map(|g| g.identifier())
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }

    // --- ReconcileAPIIntersection (groups_test.go apiIntersectionReconcilerSuite)

    #[test]
    fn reconcile_api_intersection_table() {
        use ApiReconciliation::*;
        let goose = "Goose.v1alpha1.birds.com";
        let goose_moose = "Goose.v1alpha1.birds.com,Moose.v1alpha1.mammals.com";
        type Case<'a> = (
            &'a str,
            &'a str,
            GroupSurface,
            Vec<GroupSurface>,
            ApiReconciliation,
        );
        let cases: Vec<Case> = vec![
            (
                "Empty/NoAPIConflict",
                "",
                group("ns", "g1", &["ns"], &[]),
                vec![],
                NoApiConflict,
            ),
            (
                "NoNamespaceIntersection/APIIntersection/NoAPIConflict",
                goose,
                group("ns", "g1", &["ns-1"], &[goose]),
                vec![group("ns-2", "g1", &["ns-3"], &[goose])],
                NoApiConflict,
            ),
            (
                "NamespaceIntersection/NoAPIIntersection/NoAPIConflict",
                goose,
                group("ns", "g1", &["ns-1"], &[goose]),
                vec![group(
                    "ns-2",
                    "g1",
                    &["ns-1"],
                    &["Moose.v1alpha1.mammals.com"],
                )],
                NoApiConflict,
            ),
            (
                "MultipleNamespaceIntersections/NoAPIIntersection/NoAPIConflict",
                goose,
                group("ns", "g1", &["ns-1"], &[goose]),
                vec![
                    group("ns-2", "g1", &["ns-1"], &["Moose.v1alpha1.mammals.com"]),
                    group("ns-2", "g1", &["ns"], &["Egret.v1alpha1.birds.com"]),
                ],
                NoApiConflict,
            ),
            (
                "SomeNamespaceIntersection/NoAPIIntersection/NoAPIConflict",
                goose_moose,
                group("ns", "g1", &["ns-1", "ns-2", "ns-3"], &[goose_moose]),
                vec![
                    group("ns-7", "g1", &["ns-4"], &["Moose.v1alpha1.mammals.com"]),
                    group("ns-8", "g1", &["ns-5"], &[goose]),
                    group("ns-9", "g1", &[""], &["Goat.v1alpha1.mammals.com"]),
                ],
                NoApiConflict,
            ),
            (
                "AllNamespaceIntersection/NoAPIIntersection/NoAPIConflict",
                goose,
                group("ns", "g1", &[""], &[goose]),
                vec![group(
                    "ns-2",
                    "g1",
                    &["ns-1"],
                    &["Moose.v1alpha1.mammals.com"],
                )],
                NoApiConflict,
            ),
            (
                "AllNamespaceIntersectionOnOther/NoAPIIntersection/NoAPIConflict",
                goose,
                group("ns", "g1", &["ns-1"], &[goose]),
                vec![group("ns-2", "g1", &[""], &["Moose.v1alpha1.mammals.com"])],
                NoApiConflict,
            ),
            (
                "AllNamespaceInstersectionOnOther/NoAPIIntersection/NoAPIConflict",
                goose,
                group("ns", "g1", &[""], &[goose]),
                vec![group("ns-2", "g1", &[""], &["Moose.v1alpha1.mammals.com"])],
                NoApiConflict,
            ),
            (
                "NamespaceIntersection/NoAPIIntersection/NoAPIConflict (no annotation)",
                goose,
                group("ns", "g1", &["ns-1"], &[goose]),
                vec![group("ns-2", "g1", &["ns-1"], &[])],
                NoApiConflict,
            ),
            (
                "NamespaceIntersection/APIIntersection/APIConflict",
                goose,
                group("ns", "g1", &["ns-1"], &[]),
                vec![group("ns-2", "g1", &["ns-1"], &[goose])],
                ApiConflict,
            ),
            (
                "AllNamespaceIntersection/APIIntersection/APIConflict",
                goose,
                group("ns", "g1", &[""], &[]),
                vec![group("ns-2", "g1", &["ns-1"], &[goose])],
                ApiConflict,
            ),
            (
                "AllNamespaceIntersectionOnOther/APIIntersection/APIConflict",
                goose,
                group("ns", "g1", &["ns-1"], &[]),
                vec![group("ns-2", "g1", &[""], &[goose])],
                ApiConflict,
            ),
            (
                "AllNamespaceIntersectionOnBoth/APIIntersection/APIConflict",
                goose,
                group("ns", "g1", &[""], &[]),
                vec![group("ns-2", "g1", &[""], &[goose])],
                ApiConflict,
            ),
            (
                "NamespaceIntersection/SomeAPIIntersection/APIConflict",
                goose,
                group("ns", "g1", &["ns-1"], &[]),
                vec![
                    group("ns-2", "g1", &["ns-1"], &["Moose.v1alpha1.birds.com"]),
                    group(
                        "ns-3",
                        "g1",
                        &["ns-1"],
                        &["Goose.v1alpha1.birds.com,Egret.v1alpha1.birds.com"],
                    ),
                ],
                ApiConflict,
            ),
            (
                "NamespaceIntersectionOnOperatorNamespace/SomeAPIIntersection/APIConflict",
                goose,
                group("ns", "g1", &["ns-1"], &[]),
                vec![group(
                    "ns-3",
                    "g1",
                    &["ns"],
                    &["Goose.v1alpha1.birds.com,Egret.v1alpha1.birds.com"],
                )],
                ApiConflict,
            ),
            (
                "NoNamespaceIntersection/NoAPIIntersection/AddAPIs",
                goose,
                group("ns", "g1", &["ns-1"], &[]),
                vec![group("ns-2", "g1", &["ns-2"], &[goose])],
                AddApis,
            ),
            (
                "NamespaceIntersection/NoAPIIntersection/AddAPIs",
                goose,
                group("ns", "g1", &["ns-1"], &[]),
                vec![group(
                    "ns-2",
                    "g1",
                    &["ns-1"],
                    &["Moose.v1alpha1.mammals.com"],
                )],
                AddApis,
            ),
            (
                "OperatorNamespaceIntersection/NoAPIIntersection/AddAPIs",
                goose,
                group("ns", "g1", &["ns-1"], &[]),
                vec![group(
                    "ns-2",
                    "g1",
                    &["ns"],
                    &["Moose.v1alpha1.mammals.com"],
                )],
                AddApis,
            ),
            (
                "AllNamespaceIntersection/NoAPIIntersection/AddAPIs",
                goose,
                group("ns", "g1", &[""], &[]),
                vec![
                    group("ns-2", "g1", &["ns-1"], &["Moose.v1alpha1.mammals.com"]),
                    group(
                        "ns-3",
                        "g1",
                        &["ns-1"],
                        &["Goat.v1alpha1.mammals.com,Egret.v1alpha1.birds.com"],
                    ),
                ],
                AddApis,
            ),
            (
                "AllNamespaceIntersectionOnOthers/NoAPIIntersection/AddAPIs",
                goose,
                group("ns", "g1", &["ns-1"], &[]),
                vec![
                    group("ns-2", "g1", &[""], &["Moose.v1alpha1.mammals.com"]),
                    group(
                        "ns-3",
                        "g1",
                        &[""],
                        &["Goat.v1alpha1.mammals.com,Egret.v1alpha1.birds.com"],
                    ),
                ],
                AddApis,
            ),
            (
                "AllNamespaceIntersectionOnOthers/NoAPIIntersection/AddAPIs/PrexistingAddition",
                "Goose.v1alpha1.birds.com,Cow.v1alpha1.mammals.com",
                group("ns", "g1", &["ns-1"], &["Cow.v1alpha1.mammals.com"]),
                vec![
                    group("ns-2", "g1", &[""], &["Moose.v1alpha1.mammals.com"]),
                    group(
                        "ns-3",
                        "g1",
                        &[""],
                        &["Goat.v1alpha1.mammals.com,Egret.v1alpha1.birds.com"],
                    ),
                ],
                AddApis,
            ),
            (
                "NamespaceInstersection/APIIntersection/RemoveAPIs",
                goose,
                group("ns", "g1", &["ns-1"], &[goose]),
                vec![group("ns-2", "g1", &["ns-1"], &[goose])],
                RemoveApis,
            ),
            (
                "AllNamespaceInstersection/APIIntersection/RemoveAPIs",
                goose,
                group("ns", "g1", &[""], &[goose]),
                vec![group("ns-2", "g1", &["ns-1"], &[goose])],
                RemoveApis,
            ),
            (
                "AllNamespaceInstersectionOnOther/APIIntersection/RemoveAPIs",
                goose,
                group("ns", "g1", &[""], &[goose]),
                vec![group("ns-2", "g1", &[""], &[goose])],
                RemoveApis,
            ),
            (
                "MultipleNamespaceIntersections/APIIntersection/RemoveAPIs",
                goose,
                group("ns", "g1", &["ns-1"], &[goose]),
                vec![
                    group("ns-2", "g1", &["ns-1"], &[goose]),
                    group("ns-2", "g1", &["ns"], &[goose]),
                ],
                RemoveApis,
            ),
            (
                "SomeNamespaceIntersection/APIIntersection/RemoveAPIs",
                goose_moose,
                group("ns", "g1", &["ns-1", "ns-2", "ns-3"], &[goose_moose]),
                vec![
                    group("ns-7", "g1", &["ns-4"], &["Moose.v1alpha1.mammals.com"]),
                    group("ns-8", "g1", &["ns-5", "ns-3"], &[goose]),
                    group("ns-9", "g1", &[""], &["Goat.v1alpha1.mammals.com"]),
                ],
                RemoveApis,
            ),
            (
                "UnsyncedOther/APIIntersection/AddAPIs",
                goose,
                group("ns", "g1", &[""], &[]),
                vec![GroupSurface::from_status(&og("ns-2", "g2", None, goose))],
                AddApis,
            ),
        ];
        for (name, add, own, others, want) in cases {
            assert_eq!(
                reconcile_api_intersection(&apis(add), &own, &others),
                want,
                "{name}"
            );
        }
    }

    // --- OperatorGroup reading ---------------------------------------------

    #[test]
    fn reads_the_real_operator_group_from_operator_framework_api() {
        // operator-framework/api pkg/validation/internal/testdata/correct.og.yaml
        let object = json!({
            "apiVersion": "operators.coreos.com/v1",
            "kind": "OperatorGroup",
            "metadata": {
                "annotations": {"olm.providedAPIs": "NginxIngressController.v1alpha1.k8s.nginx.org"},
                "generateName": "nginx-",
                "name": "nginx-hbvsw",
                "namespace": "nginx",
            },
            "spec": {"targetNamespaces": ["nginx"]},
        });
        let og = OperatorGroup::from_object(&object).unwrap();
        assert_eq!(
            og.provided_apis(),
            apis("NginxIngressController.v1alpha1.k8s.nginx.org")
        );
        assert_eq!(og.display_name(), "nginx/nginx-hbvsw");
        assert!(og.is_same_group("nginx", "nginx-hbvsw"));
        assert!(!og.spec.static_provided_apis);
        // badAnnotationNames.og.yaml: the mis-cased key is not the annotation.
        let mut bad = object.clone();
        bad["metadata"]["annotations"] =
            json!({"olm.providedapis": "NginxIngressController.v1alpha1.k8s.nginx.org"});
        assert!(
            OperatorGroup::from_object(&bad)
                .unwrap()
                .provided_apis()
                .is_empty()
        );
    }

    #[test]
    fn reads_static_provided_apis_and_nulls() {
        let og = OperatorGroup::from_object(&json!({
            "metadata": {"annotations": null},
            "spec": {"staticProvidedAPIs": true, "targetNamespaces": null, "selector": null},
            "status": null,
        }))
        .unwrap();
        assert!(og.spec.static_provided_apis);
        assert!(og.spec.target_namespaces.is_empty());
        assert!(og.provided_apis().is_empty());
        assert!(OperatorGroup::from_object(&json!({"spec": null})).is_ok());
    }

    #[test]
    fn wrong_types_name_the_field() {
        let err = OperatorGroup::from_object(&json!({"spec": {"targetNamespaces": "nginx"}}))
            .unwrap_err();
        assert!(err.contains("spec.targetNamespaces"), "{err}");
        let err = OperatorGroup::from_object(&json!({"spec": {"staticProvidedAPIs": "yes"}}))
            .unwrap_err();
        assert!(err.contains("spec.staticProvidedAPIs"), "{err}");
        let err = OperatorGroup::from_object(&json!("text")).unwrap_err();
        assert!(err.contains("not a JSON object"), "{err}");
        let err = ClusterServiceVersion::from_object(
            &json!({"spec": {"customresourcedefinitions": {"owned": [{"name": 7}]}}}),
        )
        .unwrap_err();
        assert!(
            err.contains("spec.customresourcedefinitions.owned"),
            "{err}"
        );
    }

    // --- ClusterServiceVersion ---------------------------------------------

    fn csv(value: Value) -> ClusterServiceVersion {
        ClusterServiceVersion::from_object(&value).unwrap()
    }

    #[test]
    fn provided_apis_of_owned_crds_split_at_the_first_dot() {
        // etcdoperator.v0.9.4 (operator-framework/api testdata)
        let etcd = csv(json!({"spec": {"customresourcedefinitions": {"owned": [
            {"name": "etcdclusters.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster"},
            {"name": "etcdbackups.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdBackup"},
            {"name": "etcdrestores.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdRestore"},
        ]}}}));
        assert_eq!(
            etcd.provided_apis().unwrap().to_string(),
            "EtcdBackup.v1beta2.etcd.database.coreos.com,EtcdCluster.v1beta2.etcd.database.coreos.com,EtcdRestore.v1beta2.etcd.database.coreos.com"
        );
    }

    #[test]
    fn provided_apis_include_owned_api_services_not_required_ones() {
        // OLM quickstart packageserver CSV
        let packageserver = csv(json!({"spec": {
            "apiservicedefinitions": {"owned": [{
                "group": "packages.operators.coreos.com", "version": "v1",
                "kind": "PackageManifest", "name": "packagemanifests"
            }]},
            "customresourcedefinitions": {"required": [
                {"name": "catalogsources.operators.coreos.com", "version": "v1alpha1", "kind": "CatalogSource"}
            ]},
        }}));
        assert_eq!(
            packageserver.provided_apis().unwrap(),
            apis("PackageManifest.v1.packages.operators.coreos.com")
        );
    }

    #[test]
    fn same_gvk_with_another_plural_is_one_api() {
        let c = csv(json!({"spec": {
            "customresourcedefinitions": {"owned": [
                {"name": "widgets.example.com", "version": "v1", "kind": "Widget"},
            ]},
            "apiservicedefinitions": {"owned": [
                {"name": "widgetz", "group": "example.com", "version": "v1", "kind": "Widget"},
            ]},
        }}));
        assert_eq!(c.provided_apis().unwrap().len(), 1);
    }

    #[test]
    fn an_owned_crd_name_without_a_dot_is_an_error() {
        let c = csv(json!({"spec": {"customresourcedefinitions": {"owned": [
            {"name": "widgets.example.com", "version": "v1", "kind": "Widget"},
            {"name": "gadgets", "version": "v1", "kind": "Gadget"},
        ]}}}));
        assert_eq!(
            c.provided_apis(),
            Err(CrdNameError {
                index: 1,
                name: "gadgets".to_string()
            })
        );
    }

    #[test]
    fn empty_and_null_definitions_provide_nothing() {
        // kiali.v1.4.2 and memcached write `apiservicedefinitions: {}`.
        let c =
            csv(json!({"spec": {"apiservicedefinitions": {}, "customresourcedefinitions": null}}));
        assert!(c.provided_apis().unwrap().is_empty());
        assert!(csv(json!({})).provided_apis().unwrap().is_empty());
    }

    #[test]
    fn provides_same_apis_compares_the_surface_not_the_text() {
        let etcd = json!({"spec": {"customresourcedefinitions": {"owned": [
            {"name": "etcdclusters.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster", "displayName": "etcd Cluster"},
            {"name": "etcdbackups.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdBackup"},
        ]}}});
        // Reordered, another description, another plural: the same APIs.
        let reworded = json!({"spec": {"customresourcedefinitions": {"owned": [
            {"name": "etcdbackupz.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdBackup"},
            {"name": "etcdclusters.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster", "displayName": "Cluster"},
        ]}}});
        assert!(csv(etcd.clone()).provides_same_apis(&csv(reworded)));
        let mut new_version = etcd.clone();
        new_version["spec"]["customresourcedefinitions"]["owned"][1]["version"] = json!("v1");
        assert!(!csv(etcd.clone()).provides_same_apis(&csv(new_version)));
        let mut with_api_service = etcd.clone();
        with_api_service["spec"]["apiservicedefinitions"] = json!({"owned": [
            {"group": "packages.operators.coreos.com", "version": "v1", "kind": "PackageManifest", "name": "packagemanifests"}
        ]});
        assert!(!csv(etcd.clone()).provides_same_apis(&csv(with_api_service)));
        // `required` entries are not provided APIs.
        let mut with_required = etcd.clone();
        with_required["spec"]["customresourcedefinitions"]["required"] = json!([
            {"name": "widgets.example.com", "version": "v1", "kind": "Widget"}
        ]);
        assert!(csv(etcd).provides_same_apis(&csv(with_required)));
    }

    #[test]
    fn provides_same_apis_with_an_unparsable_crd_name() {
        let broken = json!({"spec": {"customresourcedefinitions": {"owned": [
            {"name": "widgets.example.com", "version": "v1", "kind": "Widget"},
            {"name": "gadgets", "version": "v1", "kind": "Gadget"},
        ]}}});
        assert!(csv(broken.clone()).provides_same_apis(&csv(broken.clone())));
        let mut fixed = broken.clone();
        fixed["spec"]["customresourcedefinitions"]["owned"][1]["name"] =
            json!("gadgets.example.com");
        assert!(!csv(broken.clone()).provides_same_apis(&csv(fixed.clone())));
        assert!(!csv(fixed).provides_same_apis(&csv(broken.clone())));
        // Still broken, but another entry changed: a change.
        let mut edited = broken.clone();
        edited["spec"]["customresourcedefinitions"]["owned"][0]["kind"] = json!("Widget2");
        assert!(!csv(broken).provides_same_apis(&csv(edited)));
    }

    #[test]
    fn is_copied_table() {
        let cases = [
            ("plain", json!({"metadata": {"namespace": "a"}}), false),
            (
                "reason Copied",
                json!({"metadata": {"namespace": "a"}, "status": {"reason": "Copied"}}),
                true,
            ),
            (
                "other reason",
                json!({"metadata": {"namespace": "a"}, "status": {"reason": "InstallSucceeded"}}),
                false,
            ),
            (
                "operatorNamespace elsewhere",
                json!({"metadata": {"namespace": "a", "annotations": {"olm.operatorNamespace": "b"}}}),
                true,
            ),
            (
                "operatorNamespace here",
                json!({"metadata": {"namespace": "a", "annotations": {"olm.operatorNamespace": "a"}}}),
                false,
            ),
            (
                "copiedFrom label",
                json!({"metadata": {"namespace": "a", "labels": {"olm.copiedFrom": "b"}}}),
                true,
            ),
        ];
        for (name, value, want) in cases {
            assert_eq!(csv(value).is_copied(), want, "{name}");
        }
    }
}
