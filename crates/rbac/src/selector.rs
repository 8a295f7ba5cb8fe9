//! Label selectors: the structured form (`matchLabels`/`matchExpressions`)
//! and the string form of `kubectl -l` and list calls, both turned into one
//! requirement model (apimachinery `pkg/labels/selector.go` and
//! `metav1.LabelSelectorAsSelector`), so that what a selector in an object
//! matches and what the same selector sent to a list call returns agree.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::LabelSelector;

/// A conjunction of requirements. No requirement = matches everything.
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
    /// `metav1.LabelSelectorAsSelector`: an empty selector (no labels, no
    /// expressions) selects everything.
    pub fn from_label_selector(s: &LabelSelector) -> Result<Selector, String> {
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
                    return Err(format!(
                        "\"{other}\" is not a valid label selector operator for key \"{}\"; \
                         use In, NotIn, Exists or DoesNotExist",
                        expr.key
                    ));
                }
            };
            requirements.push(Requirement::new(
                &expr.key,
                operator,
                expr.values.iter().cloned(),
            )?);
        }
        Ok(Selector::sorted(requirements))
    }

    /// The string grammar of `kubectl -l` and the list APIs:
    /// `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`,
    /// `a>1`, `a<1`; a comma joins requirements (AND); `""` selects everything.
    pub fn parse(s: &str) -> Result<Selector, String> {
        Parser::new(s)
            .parse()
            .map(Selector::sorted)
            .map_err(|e| format!("invalid label selector \"{s}\": {e}"))
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

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
    ) -> Result<Requirement, String> {
        validate_key(key)?;
        let values: BTreeSet<String> = values.into_iter().collect();
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                return Err(format!(
                    "key \"{key}\": the In and NotIn operators need at least one value"
                ));
            }
            Operator::Equals | Operator::NotEquals if values.len() != 1 => {
                return Err(format!("key \"{key}\": = and != need exactly one value"));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                return Err(format!(
                    "key \"{key}\": the Exists and DoesNotExist operators take no values"
                ));
            }
            Operator::GreaterThan | Operator::LessThan => {
                let single = values.len() == 1 && values.iter().all(|v| v.parse::<i64>().is_ok());
                if !single {
                    return Err(format!(
                        "key \"{key}\": > and < need exactly one integer value"
                    ));
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
fn validate_key(key: &str) -> Result<(), String> {
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
            return Err(format!(
                "label key \"{key}\": the prefix before \"/\" must be a lower-case DNS subdomain"
            ));
        }
    }
    if name.is_empty() || !is_label_name(name) {
        return Err(format!(
            "label key \"{key}\" is not valid: the name part must be 1-63 characters of \
             letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
        ));
    }
    Ok(())
}

fn validate_value(key: &str, value: &str) -> Result<(), String> {
    if value.is_empty() || is_label_name(value) {
        Ok(())
    } else {
        Err(format!(
            "key \"{key}\": value \"{value}\" is not a valid label value (at most 63 \
             letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"
        ))
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

    fn parse(mut self) -> Result<Vec<Requirement>, String> {
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
                return Err(format!("expected \",\" before \"{}\"", self.rest));
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        self.skip_space();
        if self.eat("!") {
            let key = self.word()?;
            return Requirement::new(&key, Operator::DoesNotExist, []);
        }
        let key = self.word()?;
        self.skip_space();
        if self.rest.is_empty() || self.rest.starts_with(',') {
            return Requirement::new(&key, Operator::Exists, []);
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
            return Err(format!(
                "after key \"{key}\" expected =, ==, !=, in, notin, > or <, found \"{}\"",
                self.rest
            ));
        };
        let values = match operator {
            Operator::In | Operator::NotIn => self.value_list()?,
            _ => vec![self.value()],
        };
        Requirement::new(&key, operator, values)
    }

    /// `(a, b)`; `()` is one empty value, as in apimachinery.
    fn value_list(&mut self) -> Result<Vec<String>, String> {
        self.skip_space();
        if !self.eat("(") {
            return Err(format!(
                "expected \"(\" to start a value list, found \"{}\"",
                self.rest
            ));
        }
        let mut values = Vec::new();
        loop {
            values.push(self.value());
            self.skip_space();
            if self.eat(")") {
                return Ok(values);
            }
            if !self.eat(",") {
                return Err(format!(
                    "expected \",\" or \")\" in a value list, found \"{}\"",
                    self.rest
                ));
            }
        }
    }

    /// A value may be empty (`a=` selects `a: ""`).
    fn value(&mut self) -> String {
        self.skip_space();
        self.take_word()
    }

    fn word(&mut self) -> Result<String, String> {
        self.skip_space();
        let word = self.take_word();
        if word.is_empty() {
            Err(if self.rest.is_empty() {
                "a label key is missing at the end".to_string()
            } else {
                format!("expected a label key, found \"{}\"", self.rest)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LabelSelectorRequirement;

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
            assert!(err.contains(bad), "{bad}: {err}");
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
            err.contains("\"Equals\" is not a valid label selector operator"),
            "{err}"
        );
        let err = Selector::from_label_selector(&with(expr("a", "In", &[]))).unwrap_err();
        assert!(err.contains("need at least one value"), "{err}");
        let err = Selector::from_label_selector(&with(expr("a", "Exists", &["x"]))).unwrap_err();
        assert!(err.contains("take no values"), "{err}");
        let err = Selector::from_label_selector(&with(expr("", "Exists", &[]))).unwrap_err();
        assert!(err.contains("label key \"\""), "{err}");
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
}
