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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_with::DefaultOnNull;

use crate::ObjectMeta;

/// A selector the API server would refuse; the text says which key or term
/// and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A requirement of a structured selector ([`LabelSelector`]) is
    /// invalid.
    #[error(transparent)]
    Requirement(#[from] RequirementError),
    /// A string selector does not parse ([`Selector::parse`]).
    #[error("invalid label selector \"{selector}\": {problem}")]
    Syntax {
        /// The selector as given.
        selector: String,
        /// Where and why it does not parse (in this message, so not also a
        /// source).
        problem: SyntaxError,
    },
    /// A field selector term is not `field=value` or `field!=value`.
    #[error("{term:?} is not of the form field=value or field!=value")]
    FieldTerm {
        /// The term.
        term: String,
    },
    /// A field selector names a field other than `metadata.name` and
    /// `metadata.namespace`.
    #[error("field {field:?} is not supported (only metadata.name and metadata.namespace)")]
    Field {
        /// The field.
        field: String,
    },
}

/// One label requirement the API server would refuse (apimachinery
/// `NewRequirement`, `LabelSelectorAsSelector`), naming its key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequirementError {
    /// A `matchExpressions` operator other than the four.
    #[error(
        "\"{operator}\" is not a valid label selector operator for key \"{key}\"; \
         use In, NotIn, Exists or DoesNotExist"
    )]
    Operator {
        /// The key.
        key: String,
        /// The operator given.
        operator: String,
    },
    /// `In` or `NotIn` without a value.
    #[error("key \"{key}\": the In and NotIn operators need at least one value")]
    NoValues {
        /// The key.
        key: String,
    },
    /// `=` or `!=` with other than one value.
    #[error("key \"{key}\": = and != need exactly one value")]
    NotOneValue {
        /// The key.
        key: String,
    },
    /// `Exists` or `DoesNotExist` with values.
    #[error("key \"{key}\": the Exists and DoesNotExist operators take no values")]
    ValuesGiven {
        /// The key.
        key: String,
    },
    /// `>` or `<` with other than one integer.
    #[error("key \"{key}\": > and < need exactly one integer value")]
    NotOneInteger {
        /// The key.
        key: String,
    },
    /// A key whose prefix is not a DNS subdomain.
    #[error("label key \"{key}\": the prefix before \"/\" must be a lower-case DNS subdomain")]
    KeyPrefix {
        /// The key.
        key: String,
    },
    /// A key whose name part is not a label name.
    #[error(
        "label key \"{key}\" is not valid: the name part must be 1-63 characters of \
         letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    )]
    KeyName {
        /// The key.
        key: String,
    },
    /// A value that is not a label value.
    #[error(
        "key \"{key}\": value \"{value}\" is not a valid label value (at most 63 \
         letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"
    )]
    Value {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
}

/// Where the string grammar of [`Selector::parse`] stops, and what it
/// expected there (`found` is the rest of the selector).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxError {
    /// A requirement is not followed by a comma.
    #[error("expected \",\" before \"{found}\"")]
    Comma {
        /// The rest of the selector.
        found: String,
    },
    /// A key is not followed by an operator.
    #[error("after key \"{key}\" expected =, ==, !=, in, notin, > or <, found \"{found}\"")]
    Operator {
        /// The key.
        key: String,
        /// The rest of the selector.
        found: String,
    },
    /// `in`/`notin` not followed by `(`.
    #[error("expected \"(\" to start a value list, found \"{found}\"")]
    ValueList {
        /// The rest of the selector.
        found: String,
    },
    /// A value list item not followed by `,` or `)`.
    #[error("expected \",\" or \")\" in a value list, found \"{found}\"")]
    ListSeparator {
        /// The rest of the selector.
        found: String,
    },
    /// The selector ends where a key was expected.
    #[error("a label key is missing at the end")]
    KeyAtEnd,
    /// No key where one was expected.
    #[error("expected a label key, found \"{found}\"")]
    Key {
        /// The rest of the selector.
        found: String,
    },
    /// A requirement that parses but is invalid.
    #[error(transparent)]
    Requirement(#[from] RequirementError),
}

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

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    operator: Operator,
    values: BTreeSet<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    /// `=`/`==` and `matchLabels`: exactly one value.
    Equals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
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
        self.requirements.iter().all(|r| r.matches(labels))
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

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values = self.values.iter().cloned().collect::<Vec<_>>().join(",");
        match self.operator {
            Operator::Equals => write!(f, "{}={values}", self.key),
            Operator::NotEquals => write!(f, "{}!={values}", self.key),
            Operator::In => write!(f, "{} in ({values})", self.key),
            Operator::NotIn => write!(f, "{} notin ({values})", self.key),
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::GreaterThan => write!(f, "{}>{values}", self.key),
            Operator::LessThan => write!(f, "{}<{values}", self.key),
        }
    }
}

impl Requirement {
    /// apimachinery `NewRequirement`: the same validation, so a selector the
    /// API server would refuse is refused here with the reason.
    fn new(
        key: &str,
        operator: Operator,
        values: impl IntoIterator<Item = String>,
    ) -> Result<Requirement, RequirementError> {
        validate_key(key)?;
        let values: BTreeSet<String> = values.into_iter().collect();
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                return Err(RequirementError::NoValues { key: key.into() });
            }
            Operator::Equals | Operator::NotEquals if values.len() != 1 => {
                return Err(RequirementError::NotOneValue { key: key.into() });
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                return Err(RequirementError::ValuesGiven { key: key.into() });
            }
            Operator::GreaterThan | Operator::LessThan => {
                let single = values.len() == 1 && values.iter().all(|v| v.parse::<i64>().is_ok());
                if !single {
                    return Err(RequirementError::NotOneInteger { key: key.into() });
                }
            }
            _ => {}
        }
        if !matches!(operator, Operator::GreaterThan | Operator::LessThan) {
            for v in &values {
                validate_value(key, v)?;
            }
        }
        Ok(Requirement {
            key: key.to_string(),
            operator,
            values,
        })
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::Equals | Operator::In => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotEquals | Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(have), Some(bound)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values
                        .iter()
                        .next()
                        .and_then(|v| v.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    have > bound
                } else {
                    have < bound
                }
            }
        }
    }
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name of at
/// most 63 alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric.
fn validate_key(key: &str) -> Result<(), RequirementError> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let dns = !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            });
        if !dns {
            return Err(RequirementError::KeyPrefix { key: key.into() });
        }
    }
    if name.is_empty() || !is_label_name(name) {
        return Err(RequirementError::KeyName { key: key.into() });
    }
    Ok(())
}

fn validate_value(key: &str, value: &str) -> Result<(), RequirementError> {
    if value.is_empty() || is_label_name(value) {
        Ok(())
    } else {
        Err(RequirementError::Value {
            key: key.into(),
            value: value.into(),
        })
    }
}

fn is_label_name(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    s.len() <= 63
        && s.starts_with(alnum)
        && s.ends_with(alnum)
        && s.chars().all(|c| alnum(c) || matches!(c, '-' | '_' | '.'))
}

/// Recursive-descent parser over the string grammar.
struct Parser<'a> {
    rest: &'a str,
}

impl<'a> Parser<'a> {
    fn new(input: &'a str) -> Self {
        Parser { rest: input }
    }

    fn parse(mut self) -> Result<Vec<Requirement>, SyntaxError> {
        let mut requirements = Vec::new();
        self.skip_space();
        if self.rest.is_empty() {
            return Ok(requirements);
        }
        loop {
            requirements.push(self.requirement()?);
            self.skip_space();
            if self.rest.is_empty() {
                return Ok(requirements);
            }
            if !self.eat(",") {
                return Err(SyntaxError::Comma {
                    found: self.rest.to_string(),
                });
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, SyntaxError> {
        self.skip_space();
        if self.eat("!") {
            let key = self.word()?;
            return Ok(Requirement::new(&key, Operator::DoesNotExist, [])?);
        }
        let key = self.word()?;
        self.skip_space();
        if self.rest.is_empty() || self.rest.starts_with(',') {
            return Ok(Requirement::new(&key, Operator::Exists, [])?);
        }
        let operator = if self.eat("==") || self.eat("=") {
            Operator::Equals
        } else if self.eat("!=") {
            Operator::NotEquals
        } else if self.eat(">") {
            Operator::GreaterThan
        } else if self.eat("<") {
            Operator::LessThan
        } else if self.eat_keyword("notin") {
            Operator::NotIn
        } else if self.eat_keyword("in") {
            Operator::In
        } else {
            return Err(SyntaxError::Operator {
                key,
                found: self.rest.to_string(),
            });
        };
        let values = match operator {
            Operator::In | Operator::NotIn => self.value_list()?,
            _ => vec![self.value()],
        };
        Ok(Requirement::new(&key, operator, values)?)
    }

    /// `(a, b)`; `()` is one empty value, as in apimachinery.
    fn value_list(&mut self) -> Result<Vec<String>, SyntaxError> {
        self.skip_space();
        if !self.eat("(") {
            return Err(SyntaxError::ValueList {
                found: self.rest.to_string(),
            });
        }
        let mut values = Vec::new();
        loop {
            values.push(self.value());
            self.skip_space();
            if self.eat(")") {
                return Ok(values);
            }
            if !self.eat(",") {
                return Err(SyntaxError::ListSeparator {
                    found: self.rest.to_string(),
                });
            }
        }
    }

    /// A value may be empty (`a=` selects `a: ""`).
    fn value(&mut self) -> String {
        self.skip_space();
        self.take_word()
    }

    fn word(&mut self) -> Result<String, SyntaxError> {
        self.skip_space();
        let word = self.take_word();
        if word.is_empty() {
            Err(if self.rest.is_empty() {
                SyntaxError::KeyAtEnd
            } else {
                SyntaxError::Key {
                    found: self.rest.to_string(),
                }
            })
        } else {
            Ok(word)
        }
    }

    fn take_word(&mut self) -> String {
        let end = self
            .rest
            .find(|c: char| c.is_whitespace() || "=!(),<>".contains(c))
            .unwrap_or(self.rest.len());
        let (word, rest) = self.rest.split_at(end);
        self.rest = rest;
        word.to_string()
    }

    /// `in`/`notin` only as whole words, so a key named `inx` is not split.
    fn eat_keyword(&mut self, keyword: &str) -> bool {
        let Some(after) = self.rest.strip_prefix(keyword) else {
            return false;
        };
        if after.starts_with(|c: char| c.is_whitespace() || c == '(') {
            self.rest = after;
            true
        } else {
            false
        }
    }

    fn eat(&mut self, token: &str) -> bool {
        match self.rest.strip_prefix(token) {
            Some(after) => {
                self.rest = after;
                true
            }
            None => false,
        }
    }

    fn skip_space(&mut self) {
        self.rest = self.rest.trim_start();
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn string_grammar_table() {
        let app_web = labels(&[("app", "web"), ("tier", "front")]);
        let app_db = labels(&[("app", "db")]);
        let none = labels(&[]);
        let cases = [
            ("", [true, true, true]),
            ("app=web", [true, false, false]),
            ("app==web", [true, false, false]),
            ("app = web", [true, false, false]),
            ("app!=web", [false, true, true]),
            ("app in (web, db)", [true, true, false]),
            ("app in(web)", [true, false, false]),
            ("app notin (web)", [false, true, true]),
            ("app", [true, true, false]),
            ("!app", [false, false, true]),
            ("app,!tier", [false, true, false]),
            ("app=db, tier", [false, false, false]),
            ("tier=", [false, false, false]),
        ];
        for (s, want) in cases {
            let sel = Selector::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
            let got = [
                sel.matches(&app_web),
                sel.matches(&app_db),
                sel.matches(&none),
            ];
            assert_eq!(got, want, "{s:?}");
        }
        assert!(Selector::parse("").unwrap().is_everything());
        assert!(Selector::parse("  ").unwrap().is_everything());
        assert!(!Selector::parse("a").unwrap().is_everything());
        let empty_value = Selector::parse("tier=").unwrap();
        assert!(empty_value.matches(&labels(&[("tier", "")])));
    }

    #[test]
    fn numeric_comparisons() {
        let sel = Selector::parse("replicas>2,replicas<5").unwrap();
        assert!(sel.matches(&labels(&[("replicas", "3")])));
        assert!(!sel.matches(&labels(&[("replicas", "5")])));
        assert!(!sel.matches(&labels(&[("replicas", "x")])));
        assert!(Selector::parse("replicas>x").is_err());
    }

    #[test]
    fn string_grammar_errors() {
        for bad in [
            "app in web",
            "app in (web",
            "app=web tier=x",
            ",app",
            "app,",
            "=web",
            "app in ()x",
            "-app=x",
            "app=-x-",
            "bad_Prefix.io/app=x",
        ] {
            let err = Selector::parse(bad).expect_err(bad);
            assert!(err.to_string().contains(bad), "{bad}: {err}");
        }
    }

    #[test]
    fn structured_form() {
        let s = LabelSelector {
            match_labels: labels(&[("rbac.authorization.k8s.io/aggregate-to-admin", "true")]),
            match_expressions: vec![
                expr("tier", "In", &["front", "back"]),
                expr("legacy", "DoesNotExist", &[]),
                expr("env", "NotIn", &["prod"]),
                expr("app", "Exists", &[]),
            ],
        };
        let sel = Selector::from_label_selector(&s).unwrap();
        let base = [
            ("rbac.authorization.k8s.io/aggregate-to-admin", "true"),
            ("tier", "front"),
            ("app", "x"),
        ];
        assert!(sel.matches(&labels(&base)));
        let mut with_env = base.to_vec();
        with_env.push(("env", "prod"));
        assert!(!sel.matches(&labels(&with_env)));
        let mut legacy = base.to_vec();
        legacy.push(("legacy", ""));
        assert!(!sel.matches(&labels(&legacy)));
        assert!(!sel.matches(&labels(&base[..2])));
        assert!(
            Selector::from_label_selector(&LabelSelector::default())
                .unwrap()
                .is_everything()
        );
    }

    #[test]
    fn structured_form_errors() {
        let with = |e: LabelSelectorRequirement| LabelSelector {
            match_expressions: vec![e],
            ..LabelSelector::default()
        };
        let err = Selector::from_label_selector(&with(expr("a", "Equals", &["x"]))).unwrap_err();
        assert!(
            err.to_string()
                .contains("\"Equals\" is not a valid label selector operator"),
            "{err}"
        );
        let err = Selector::from_label_selector(&with(expr("a", "In", &[]))).unwrap_err();
        assert!(err.to_string().contains("need at least one value"), "{err}");
        let err = Selector::from_label_selector(&with(expr("a", "Exists", &["x"]))).unwrap_err();
        assert!(err.to_string().contains("take no values"), "{err}");
        let err = Selector::from_label_selector(&with(expr("", "Exists", &[]))).unwrap_err();
        assert!(err.to_string().contains("label key \"\""), "{err}");
    }

    #[test]
    fn both_forms_agree_and_print_parseably() {
        let structured = Selector::from_label_selector(&LabelSelector {
            match_labels: labels(&[("b", "1")]),
            match_expressions: vec![expr("a", "In", &["y", "x"]), expr("c", "DoesNotExist", &[])],
        })
        .unwrap();
        let text = structured.to_string();
        assert_eq!(text, "a in (x,y),b=1,!c");
        assert_eq!(Selector::parse(&text).unwrap(), structured);
        assert_eq!(Selector::parse("!c, b==1, a in (y,x)").unwrap(), structured);
    }

    #[test]
    fn field_selector_forms() {
        let meta = ObjectMeta {
            name: "a".into(),
            namespace: "ns".into(),
            ..Default::default()
        };
        assert!(
            FieldSelector::parse("metadata.name=a")
                .unwrap()
                .matches(&meta)
        );
        assert!(
            FieldSelector::parse("metadata.name==a,metadata.namespace=ns")
                .unwrap()
                .matches(&meta)
        );
        assert!(
            !FieldSelector::parse("metadata.namespace!=ns")
                .unwrap()
                .matches(&meta)
        );
        assert!(FieldSelector::parse("").unwrap().matches(&meta));
        let err = FieldSelector::parse("spec.group=x").unwrap_err();
        assert!(err.to_string().contains("spec.group"), "{err}");
        assert!(FieldSelector::parse("metadata.name").is_err());
    }
}
