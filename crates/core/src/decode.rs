//! Reading typed values from admission JSON, naming the field at fault:
//! serde alone reports only the type mismatch, and a user needs to know which
//! field to fix.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// A field whose JSON type is wrong, located by its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldTypeError {
    /// Dotted path below the value read, e.g. `rules[1].verbs`; `.` for the
    /// value itself.
    pub path: String,
    /// serde's account of the mismatch, e.g. "invalid type: integer `5`,
    /// expected a string".
    pub reason: String,
    /// The JSON type of the value found at `path` (`a string`, `null`, ...),
    /// when the path leads to one.
    pub found: Option<&'static str>,
}

impl FieldTypeError {
    /// The mismatch in the words of the field's documentation: `expected a
    /// boolean, got a string` where serde says `invalid type: string "no",
    /// expected a boolean`; serde's own words for any other fault (a missing
    /// or unknown field, a value out of range).
    pub fn plain_reason(&self) -> String {
        match (self.reason.strip_prefix("invalid type: "), self.found) {
            (Some(rest), Some(found)) => match rest.split_once(", expected ") {
                Some((_, expected)) => format!("expected {expected}, got {found}"),
                None => self.reason.clone(),
            },
            _ => self.reason.clone(),
        }
    }

    /// `<root>.<path>: <plain reason>`, e.g. `settings.allowLegacy: expected
    /// a boolean, got a string`: what a user reading a message about a whole
    /// document (settings, a request) needs to find the field.
    pub fn under(&self, root: &str) -> String {
        if self.path == "." {
            format!("{root}: {}", self.plain_reason())
        } else {
            format!("{root}.{}: {}", self.path, self.plain_reason())
        }
    }
}

/// `rules[1].verbs: invalid type: ...`, or the reason alone when the value
/// itself has the wrong type.
impl std::fmt::Display for FieldTypeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path == "." {
            f.write_str(&self.reason)
        } else {
            write!(f, "{}: {}", self.path, self.reason)
        }
    }
}

impl std::error::Error for FieldTypeError {}

/// `a string`, `a list`, ...: a JSON value's type as messages name it.
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Deserialises `value`, keeping the path to a field of the wrong type.
pub fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, FieldTypeError> {
    serde_path_to_error::deserialize(value).map_err(|e| FieldTypeError {
        path: e.path().to_string(),
        found: value_at(value, e.path()).map(json_type),
        reason: e.into_inner().to_string(),
    })
}

/// The value `path` leads to inside `value`, if it exists.
fn value_at<'v>(value: &'v Value, path: &serde_path_to_error::Path) -> Option<&'v Value> {
    use serde_path_to_error::Segment;
    path.iter().try_fold(value, |at, segment| match segment {
        Segment::Seq { index } => at.get(index),
        Segment::Map { key } => at.get(key.as_str()),
        Segment::Enum { .. } | Segment::Unknown => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        inner: Vec<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        name: String,
    }

    #[test]
    fn names_the_path_to_the_field() {
        let err = from_value::<Outer>(&json!({"inner": [{"name": "a"}, {"name": 5}]})).unwrap_err();
        assert_eq!(err.path, "inner[1].name");
        assert!(err.reason.contains("expected a string"), "{err}");
        assert!(err.to_string().starts_with("inner[1].name: "), "{err}");
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    #[serde(deny_unknown_fields)]
    struct Settings {
        #[serde(rename = "allowLegacy", default)]
        allow_legacy: bool,
    }

    #[test]
    fn under_a_root_it_says_what_was_expected_and_what_was_found() {
        let err = from_value::<Settings>(&json!({"allowLegacy": "no"})).unwrap_err();
        assert_eq!(err.found, Some("a string"));
        assert_eq!(
            err.under("settings"),
            "settings.allowLegacy: expected a boolean, got a string"
        );
        let err = from_value::<Outer>(&json!({"inner": [{"name": null}]})).unwrap_err();
        assert_eq!(
            err.under("x"),
            "x.inner[0].name: expected a string, got null"
        );
    }

    #[test]
    fn faults_other_than_a_type_keep_serdes_words() {
        let err = from_value::<Settings>(&json!({"allowlegacy": true})).unwrap_err();
        let message = err.under("settings");
        assert!(message.starts_with("settings"), "{message}");
        assert!(message.contains("unknown field `allowlegacy`"), "{message}");
    }

    #[test]
    fn a_value_of_the_wrong_type_is_its_reason_alone() {
        let err = from_value::<Outer>(&json!("x")).unwrap_err();
        assert_eq!(err.path, ".");
        assert_eq!(err.to_string(), err.reason);
    }
}
