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
///
/// Every typed read in a module goes through serde_json's slice
/// deserializer: the host's answers arrive as bytes and are read that way
/// (`context.rs`), and so is `value` here, written out compactly first. One
/// deserializer means one copy of each type's `Deserialize` code in the
/// module; tracking the path while decoding (`serde_path_to_error`) made a
/// second copy of every type, 70-85 KB per module (`docs/performance.md`).
/// The path is found only on failure, from the byte offset serde_json
/// reports, in [`path_at`].
pub fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, FieldTypeError> {
    // Writing a `Value` cannot fail (its keys are strings); if it ever did,
    // the error is still a named rejection, never a panic.
    let bytes = serde_json::to_vec(value).map_err(|e| FieldTypeError {
        path: ".".to_string(),
        reason: e.to_string(),
        found: None,
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        let (path, at) = path_at(value, e.column());
        FieldTypeError {
            reason: without_position(&e),
            found: at.map(json_type),
            path: path.unwrap_or_else(|| ".".to_string()),
        }
    })
}

/// serde_json's message without its ` at line 1 column N` suffix: the
/// position is in the compact text we wrote, which the user never saw.
fn without_position(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    message
        .strip_suffix(&suffix)
        .map(str::to_string)
        .unwrap_or(message)
}

/// The path of the innermost value of `value` (written compactly, as
/// `serde_json::to_vec` writes it) whose text ends at, or surrounds,
/// byte offset `offset`, and that value.
///
/// serde_json reports a type mismatch just after the value it read (after
/// `5` in `"name":5`), a missing field just after the object's `}`, and a
/// container where it wanted another type at its opening bracket: in each
/// case the innermost value spanning `[start, end]` is the one at fault (no
/// two values touch: a `,` or a key always lies between them). The path reads as serde_path_to_error's did: `inner[1].name`, and
/// `None` for the value itself.
pub fn path_at(value: &Value, offset: usize) -> (Option<String>, Option<&Value>) {
    let mut best: Option<(Vec<Step<'_>>, &Value)> = None;
    let mut steps = Vec::new();
    walk(value, 0, offset, &mut steps, &mut best);
    match best {
        Some((steps, at)) if !steps.is_empty() => (Some(render(&steps)), Some(at)),
        Some((_, at)) => (None, Some(at)),
        None => (None, None),
    }
}

/// One step of a path: a field or a list index.
#[derive(Clone, Copy)]
enum Step<'v> {
    Field(&'v str),
    Index(usize),
}

fn render(steps: &[Step<'_>]) -> String {
    let mut path = String::new();
    for step in steps {
        match step {
            Step::Field(name) if path.is_empty() => path.push_str(name),
            Step::Field(name) => {
                path.push('.');
                path.push_str(name);
            }
            Step::Index(i) => path.push_str(&format!("[{i}]")),
        }
    }
    path
}

/// The compact length of a scalar or key, as serde_json writes it.
fn written_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    serde_json::to_vec(value).map(|b| b.len()).unwrap_or(0)
}

/// Walks `value`, written from byte `start`, recording in `best` the
/// innermost value whose span `[start, end]` holds `offset`; returns the
/// offset just after `value`.
fn walk<'v>(
    value: &'v Value,
    start: usize,
    offset: usize,
    steps: &mut Vec<Step<'v>>,
    best: &mut Option<(Vec<Step<'v>>, &'v Value)>,
) -> usize {
    let end = match value {
        Value::Array(items) => {
            let mut at = start + 1; // `[`
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    at += 1; // `,`
                }
                steps.push(Step::Index(i));
                at = walk(item, at, offset, steps, best);
                steps.pop();
            }
            at + 1 // `]`
        }
        Value::Object(fields) => {
            let mut at = start + 1; // `{`
            for (i, (key, item)) in fields.iter().enumerate() {
                if i > 0 {
                    at += 1; // `,`
                }
                at += written_len(key.as_str()) + 1; // `"key":`
                steps.push(Step::Field(key));
                at = walk(item, at, offset, steps, best);
                steps.pop();
            }
            at + 1 // `}`
        }
        scalar => start + written_len(scalar),
    };
    // Children are visited first, so the first span recorded is the
    // innermost; an enclosing value never replaces it.
    if start <= offset && offset <= end && best.is_none() {
        *best = Some((steps.clone(), value));
    }
    end
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

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Required {
        spec: Spec,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Spec {
        group: String,
        revisions: Vec<u32>,
    }

    /// Each place serde_json reports a fault at maps to the field at fault:
    /// after a scalar, at the bracket of a container of the wrong kind, after
    /// the `}` of an object missing a field.
    #[test]
    fn the_path_is_found_from_where_serde_json_stopped() {
        let at = |value: Value| from_value::<Required>(&value).unwrap_err();
        let err = at(json!({"spec": {"group": "g", "revisions": [1, "two", 3]}}));
        assert_eq!(
            (err.path.as_str(), err.found),
            ("spec.revisions[1]", Some("a string"))
        );
        let err = at(json!({"spec": {"group": {"name": "g"}, "revisions": []}}));
        assert_eq!(
            (err.path.as_str(), err.found),
            ("spec.group", Some("an object"))
        );
        let err = at(json!({"spec": {"group": "g", "revisions": [[1]]}}));
        assert_eq!(
            (err.path.as_str(), err.found),
            ("spec.revisions[0]", Some("a list"))
        );
        let err = at(json!({"spec": {"group": "g"}}));
        assert_eq!(err.path, "spec");
        assert!(err.reason.contains("missing field `revisions`"), "{err}");
        assert!(
            !err.reason.contains("column"),
            "no position in our text: {err}"
        );
        let err = at(json!({"spec": {"revisions": [1], "group": null}}));
        assert_eq!((err.path.as_str(), err.found), ("spec.group", Some("null")));
        // A key that needs escaping, written before the fault, is measured
        // as written.
        let err = at(json!({"a\"b\né": [true], "spec": {"group": 5, "revisions": []}}));
        assert_eq!(
            (err.path.as_str(), err.found),
            ("spec.group", Some("a number"))
        );
    }
}
