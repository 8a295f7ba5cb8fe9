//! Field selectors: `metadata.name` and `metadata.namespace`, the fields
//! the API server supports for every kind.

use super::SelectorError;
use crate::ObjectMeta;

/// One `field=value` or `field!=value` term of a [`FieldSelector`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldRequirement {
    field: Field,
    equals: bool,
    value: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Name,
    Namespace,
}

/// A parsed `fieldSelector` (`metadata.name=x,metadata.namespace!=y`).
///
/// Only the fields the API server supports for every kind are accepted
/// (kubernetes/apimachinery `pkg/fields/selector.go` for the grammar,
/// `DefaultMetaV1FieldSelectorConversion` in `pkg/runtime/conversion.go`
/// for the fields); kind-specific fields
/// such as a Pod's `spec.nodeName` are refused, as Kubewarden's host does not
/// serve them either.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses `field=value`, `field==value` and `field!=value` terms joined
    /// by commas; `""` selects everything.
    ///
    /// ```
    /// use olm_guard_core::ObjectMeta;
    /// use olm_guard_core::selector::FieldSelector;
    ///
    /// let selector = FieldSelector::parse("metadata.namespace!=kube-system").unwrap();
    /// let meta = ObjectMeta { name: "a".into(), namespace: "olm".into(), ..Default::default() };
    /// assert!(selector.matches(&meta));
    /// assert!(FieldSelector::parse("spec.nodeName=n1").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<FieldSelector, SelectorError> {
        let mut requirements = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, equals, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = term.split_once('=') {
                (f, true, v)
            } else {
                return Err(SelectorError::FieldTerm { term: term.into() });
            };
            let field = match field.trim() {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                other => {
                    return Err(SelectorError::Field {
                        field: other.into(),
                    });
                }
            };
            requirements.push(FieldRequirement {
                field,
                equals,
                value: value.trim().to_string(),
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// Whether the selector has no term and so matches every object.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object with `meta` meets every term.
    pub fn matches(&self, meta: &ObjectMeta) -> bool {
        self.requirements.iter().all(|r| {
            let actual = match r.field {
                Field::Name => &meta.name,
                Field::Namespace => &meta.namespace,
            };
            (actual == &r.value) == r.equals
        })
    }
}
