//! Label and field selectors, kept with the object types as kube-core does.
//!
//! * [`Selector`]: label selectors in both forms, the structured
//!   [`LabelSelector`] of an object (`matchLabels`/`matchExpressions`) and the
//!   string of `kubectl -l` and list calls, turned into one requirement model
//!   (kubernetes/apimachinery `pkg/labels/selector.go` and
//!   `LabelSelectorAsSelector` in `pkg/apis/meta/v1/helpers.go`), so that what
//!   a selector in an object matches and what the same selector sent to a
//!   list call returns agree.
//! * [`FieldSelector`]: the field selectors the Kubewarden host supports for
//!   every kind, `metadata.name` and `metadata.namespace`.

mod error;
mod field;
mod parse;
mod requirement;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_with::DefaultOnNull;

pub use error::{RequirementError, SelectorError, SyntaxError};
pub use field::FieldSelector;

use parse::Parser;
use requirement::{Operator, Requirement};

/// `metav1.LabelSelector`, as written in objects. Evaluate it through
/// [`Selector::from_label_selector`].
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct LabelSelector {
    /// `key: value` pairs that must all be present (each is an `In` of one
    /// value).
    #[serde_as(as = "DefaultOnNull")]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Requirements that must all hold.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// `metav1.LabelSelectorRequirement`: one entry of `matchExpressions`.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    /// The label key the requirement is about.
    #[serde_as(as = "DefaultOnNull")]
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`; anything else is refused
    /// by [`Selector::from_label_selector`].
    #[serde_as(as = "DefaultOnNull")]
    pub operator: String,
    /// The values of `In`/`NotIn`; empty for `Exists`/`DoesNotExist`.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// A label selector: a conjunction of requirements on an object's labels.
/// No requirement matches everything.
///
/// Built from either form, [`Selector::parse`] for strings and
/// [`Selector::from_label_selector`] for objects; printed
/// ([`Display`](fmt::Display)) in the string form the API server accepts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// The structured form, as `LabelSelectorAsSelector`
    /// (kubernetes/apimachinery `pkg/apis/meta/v1/helpers.go`): an empty
    /// selector (no labels, no expressions) selects everything.
    ///
    /// An operator other than `In`, `NotIn`, `Exists` or `DoesNotExist`, or
    /// a key or value the API server would refuse, is an error saying which
    /// key and why.
    pub fn from_label_selector(s: &LabelSelector) -> Result<Selector, SelectorError> {
        Selector::requirements_of(s)
            .map(Selector::sorted)
            .map_err(SelectorError::Requirement)
    }

    fn requirements_of(s: &LabelSelector) -> Result<Vec<Requirement>, RequirementError> {
        let mut requirements = Vec::new();
        for (key, value) in &s.match_labels {
            requirements.push(Requirement::new(key, Operator::Equals, [value.clone()])?);
        }
        for expr in &s.match_expressions {
            let operator = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(RequirementError::Operator {
                        key: expr.key.clone(),
                        operator: other.to_string(),
                    });
                }
            };
            requirements.push(Requirement::new(
                &expr.key,
                operator,
                expr.values.iter().cloned(),
            )?);
        }
        Ok(requirements)
    }

    /// The string grammar of `kubectl -l` and the list APIs:
    /// `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`,
    /// `a>1`, `a<1`; a comma joins requirements (AND); `""` selects everything.
    /// The error quotes the selector and says what was expected where.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use olm_guard_core::selector::Selector;
    ///
    /// let selector = Selector::parse("app in (web, api), !legacy").unwrap();
    /// let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
    /// assert!(selector.matches(&labels));
    /// // Printed in canonical order, in the form the API server accepts.
    /// assert_eq!(selector.to_string(), "app in (api,web),!legacy");
    ///
    /// let err = Selector::parse("app in (web").unwrap_err();
    /// assert!(err.to_string().starts_with("invalid label selector \"app in (web\""));
    /// ```
    pub fn parse(s: &str) -> Result<Selector, SelectorError> {
        Parser::new(s)
            .parse()
            .map(Selector::sorted)
            .map_err(|problem| SelectorError::Syntax {
                selector: s.to_string(),
                problem,
            })
    }

    /// Whether `labels` meet every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_by(|key| labels.get(key).map(String::as_str))
    }

    /// [`Selector::matches`] on labels read by `label` (the value of a
    /// key), e.g. [`crate::listed::Labels::get`]: no map is built.
    pub fn matches_by<'l>(&self, label: impl Fn(&str) -> Option<&'l str>) -> bool {
        self.requirements.iter().all(|r| r.matches(label(&r.key)))
    }

    /// Whether the selector has no requirement and so matches every object.
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Canonical order (by key) so two spellings of one selector compare
    /// equal and print the same, as apimachinery does.
    fn sorted(mut requirements: Vec<Requirement>) -> Selector {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Selector { requirements }
    }
}

/// The string form, parseable by [`Selector::parse`] and by the API server
/// (so it can be sent as a list call's `label_selector`).
impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}
