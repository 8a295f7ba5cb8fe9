//! One label requirement: its validation (apimachinery `NewRequirement`),
//! its string form and its match.

use std::collections::BTreeSet;
use std::fmt;

use super::RequirementError;

/// One requirement on one key: what a selector is a conjunction of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Requirement {
    pub(super) key: String,
    operator: Operator,
    values: BTreeSet<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// The operators of both forms, `>` and `<` being the string form's only.
pub(super) enum Operator {
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
    pub(super) fn new(
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

    /// Whether a label `value` (`None`: no such key) meets the requirement.
    pub(super) fn matches(&self, value: Option<&str>) -> bool {
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
