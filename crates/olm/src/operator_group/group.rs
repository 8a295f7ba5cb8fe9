//! The OperatorGroup and the resolution of its target namespaces
//! (`getOperatorGroupTargets`, operatorgroup.go).

use std::collections::{BTreeMap, HashSet};

use olm_guard_core::ObjectMeta;
use olm_guard_core::listed::{Label, LabelKey, Labels, Str};
use olm_guard_core::selector::{LabelSelector, Selector, SelectorError};
use serde::Deserialize;
use serde_json::Value;
use serde_with::DefaultOnNull;

use super::{ApiSet, NAMESPACE_ALL, PROVIDED_APIS_ANNOTATION, read_object};

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
    pub fn from_object(object: &Value) -> Result<OperatorGroup, crate::ObjectError> {
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
    InvalidSelector(SelectorError),
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
            .map_err(TargetsError::InvalidSelector)?;
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

/// The `olm.providedAPIs` annotation, as [`Label`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProvidedApis;

impl LabelKey for ProvidedApis {
    const KEY: &'static str = PROVIDED_APIS_ANNOTATION;
}

/// An OperatorGroup of a list answer as a first reading sees it
/// (`olm_guard_core::listed`): its namespace and `olm.providedAPIs`,
/// borrowed from the answer, which is what decides whether a rule reads the
/// whole group (as an [`OperatorGroup`], `ListAnswer::pick`).
#[derive(Debug, Default, Deserialize)]
#[serde(default, expecting = "struct OperatorGroup")]
pub struct ListedOperatorGroup<'a> {
    #[serde(borrow)]
    metadata: Option<ListedGroupMeta<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, expecting = "struct ObjectMeta")]
struct ListedGroupMeta<'a> {
    #[serde(borrow)]
    namespace: Option<Str<'a>>,
    #[serde(borrow)]
    annotations: Label<'a, ProvidedApis>,
}

impl ListedOperatorGroup<'_> {
    /// `metadata.namespace`.
    pub fn namespace(&self) -> &str {
        self.metadata.as_ref().map_or("", |m| Str::of(&m.namespace))
    }

    /// Whether it provides one of `apis` ([`OperatorGroup::provided_apis`]
    /// intersects them), without parsing its annotation into a set.
    pub fn provides_any(&self, apis: &ApiSet) -> bool {
        self.metadata
            .as_ref()
            .and_then(|m| m.annotations.get())
            .is_some_and(|value| apis.intersects_annotation(value))
    }
}

/// A Namespace of a list answer: its name and labels, borrowed.
#[derive(Debug, Default, Deserialize)]
#[serde(default, expecting = "struct Namespace")]
pub struct ListedNamespace<'a> {
    #[serde(borrow)]
    metadata: Option<ListedNamespaceMeta<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, expecting = "struct ObjectMeta")]
struct ListedNamespaceMeta<'a> {
    #[serde(borrow)]
    name: Option<Str<'a>>,
    #[serde(borrow)]
    labels: Labels<'a>,
}

impl ListedNamespace<'_> {
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.metadata.as_ref().map_or("", |m| Str::of(&m.name))
    }

    /// Whether `selector` matches its labels.
    pub fn selected_by(&self, selector: &Selector) -> bool {
        match &self.metadata {
            Some(meta) => selector.matches_by(|key| meta.labels.get(key)),
            None => selector.matches_by(|_| None),
        }
    }

    /// The namespace, owned.
    pub fn to_namespace(&self) -> Namespace {
        match &self.metadata {
            Some(meta) => Namespace::named(Str::of(&meta.name), meta.labels.to_map()),
            None => Namespace::default(),
        }
    }
}

#[cfg(test)]
mod listed_tests {
    use super::*;
    use serde_json::json;

    /// What a first reading sees of a group is what the whole group says.
    #[test]
    fn a_listed_group_reads_as_the_group() {
        let objects = [
            json!({"metadata": {"name": "a", "namespace": "ns",
                                "annotations": {PROVIDED_APIS_ANNOTATION: "A.v1.x.io, B.v1.y.io", "o": "p"}}}),
            json!({"metadata": {"name": "b", "namespace": "ns",
                                "annotations": {PROVIDED_APIS_ANNOTATION: "B.v1.y.io.extra,C"}}}),
            json!({"metadata": {"name": "c", "namespace": "n2"}, "spec": null, "status": {}}),
            json!({"metadata": null}),
        ];
        let answer = serde_json::to_vec(&json!({ "items": objects })).unwrap();
        let apis = ApiSet::parse_annotation("B.v1.y.io");
        let mut read = Vec::new();
        olm_guard_core::listed::each_item(&answer, |item: ListedOperatorGroup<'_>| {
            read.push((item.namespace().to_string(), item.provides_any(&apis)))
        })
        .unwrap();
        for (object, (namespace, provides)) in objects.iter().zip(&read) {
            let whole = OperatorGroup::from_object(object).unwrap();
            assert_eq!(namespace, &whole.metadata.namespace);
            assert_eq!(*provides, whole.provided_apis().intersects(&apis));
        }
        assert_eq!(read.iter().filter(|(_, p)| *p).count(), 1);
    }

    #[test]
    fn a_listed_namespace_is_selected_as_the_namespace() {
        let answer = br#"{"items":[{"metadata":{"name":"a","labels":{"t":"1","u":"2"}}},
            {"metadata":{"name":"b"}},{"metadata":null}]}"#;
        let selector = Selector::from_label_selector(
            &serde_json::from_value(json!({"matchLabels": {"t": "1"}})).unwrap(),
        )
        .unwrap();
        let not = Selector::parse("t!=1").unwrap();
        let mut read = Vec::new();
        olm_guard_core::listed::each_item(answer, |item: ListedNamespace<'_>| {
            let owned = item.to_namespace();
            assert_eq!(
                item.selected_by(&selector),
                selector.matches(&owned.metadata.labels)
            );
            assert_eq!(item.selected_by(&not), not.matches(&owned.metadata.labels));
            read.push(item.name().to_string());
        })
        .unwrap();
        assert_eq!(read, ["a", "b", ""]);
    }
}
