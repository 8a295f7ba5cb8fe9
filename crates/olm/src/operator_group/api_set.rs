//! Provided APIs: `cache.APISet` and the `olm.providedAPIs` annotation
//! (operator-framework/operator-lifecycle-manager
//! `pkg/controller/registry/resolver/cache/`).

use std::collections::HashSet;
use std::fmt;

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
        let (kind, version, group) = split_kind_arg(text)?;
        Some(ApiKey::new(group, version, kind))
    }

    /// Whether this is the API `(kind, version, group)`.
    fn is(&self, (kind, version, group): (&str, &str, &str)) -> bool {
        self.kind == kind && self.version == version && self.group == group
    }
}

/// [`ApiKey::parse_kind_arg`] borrowing its parts: `(kind, version, group)`.
fn split_kind_arg(text: &str) -> Option<(&str, &str, &str)> {
    if text.matches('.').count() < 2 {
        return None;
    }
    let mut parts = text.splitn(3, '.');
    Some((parts.next()?, parts.next()?, parts.next()?))
}

/// Whether `each` holds for one API of an `olm.providedAPIs` annotation
/// `value`, read as `GVKStringToProvidedAPISet` reads it: every space
/// deleted, split at commas, pieces that are not `Kind.version.group`
/// dropped. Borrowed: a value without spaces is not copied.
fn any_annotated_api(value: &str, each: impl FnMut((&str, &str, &str)) -> bool) -> bool {
    let unspaced;
    let value = if value.contains(' ') {
        unspaced = value.replace(' ', "");
        unspaced.as_str()
    } else {
        value
    };
    value.split(',').filter_map(split_kind_arg).any(each)
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
        let mut set = ApiSet::new();
        any_annotated_api(value, |(kind, version, group)| {
            set.insert(ApiKey::new(group, version, kind));
            false
        });
        set
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

    /// Whether the APIs of an `olm.providedAPIs` annotation `value` share
    /// one with this set: `ApiSet::parse_annotation(value).intersects(self)`,
    /// without building the parsed set (a list of groups is read this way).
    pub fn intersects_annotation(&self, value: &str) -> bool {
        any_annotated_api(value, |api| self.0.iter().any(|key| key.is(api)))
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
