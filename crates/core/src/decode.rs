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
        reason: e.into_inner().to_string(),
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

    #[test]
    fn a_value_of_the_wrong_type_is_its_reason_alone() {
        let err = from_value::<Outer>(&json!("x")).unwrap_err();
        assert_eq!(err.path, ".");
        assert_eq!(err.to_string(), err.reason);
    }
}
