//! Field selectors and field masks, as far as Kubewarden's host supports
//! them for arbitrary kinds: `metadata.name` and `metadata.namespace`.

use olm_guard_core::ObjectMeta;
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<Requirement>,
}

impl FieldSelector {
    pub fn parse(text: &str) -> Result<FieldSelector, String> {
        let mut requirements = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, equals, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = term.split_once('=') {
                (f, true, v)
            } else {
                return Err(format!(
                    "{term:?} is not of the form field=value or field!=value"
                ));
            };
            let field = match field.trim() {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                other => {
                    return Err(format!(
                        "field {other:?} is not supported (only metadata.name and metadata.namespace)"
                    ));
                }
            };
            requirements.push(Requirement {
                field,
                equals,
                value: value.trim().to_string(),
            });
        }
        Ok(FieldSelector { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

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

/// Applies Kubewarden `field_masks`: keep `apiVersion`, `kind`, `metadata`
/// and the masked paths (dot-separated, arrays traversed implicitly).
/// No masks: the whole object.
pub fn mask(object: &Value, masks: &[String]) -> Value {
    if masks.is_empty() {
        return object.clone();
    }
    let mut kept = Map::new();
    for key in ["apiVersion", "kind", "metadata"] {
        if let Some(value) = object.get(key) {
            kept.insert(key.to_string(), value.clone());
        }
    }
    let mut result = Value::Object(kept);
    for path in masks {
        let segments: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
        if let Some(picked) = pick(object, &segments) {
            merge(&mut result, picked);
        }
    }
    result
}

/// The sub-tree of `value` along `path`, shaped like the original.
fn pick(value: &Value, path: &[&str]) -> Option<Value> {
    let Some((head, rest)) = path.split_first() else {
        return Some(value.clone());
    };
    match value {
        Value::Object(map) => {
            let inner = pick(map.get(*head)?, rest)?;
            Some(Value::Object(Map::from_iter([(head.to_string(), inner)])))
        }
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .map(|item| pick(item, path).unwrap_or(Value::Null))
                .collect(),
        )),
        _ => None,
    }
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in b {
                match a.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        a.insert(key, value);
                    }
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (slot, value) in a.iter_mut().zip(b) {
                merge(slot, value);
            }
        }
        (slot, value) => {
            if slot.is_null() {
                *slot = value;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert!(err.contains("spec.group"), "{err}");
        assert!(FieldSelector::parse("metadata.name").is_err());
    }

    #[test]
    fn masks_keep_metadata_and_paths_through_arrays() {
        let object = json!({
            "apiVersion": "v1", "kind": "X", "metadata": {"name": "a"},
            "spec": {"group": "g", "revision": 3, "phases": [{"name": "p", "objects": [1]}]},
            "status": {"x": 1}
        });
        let masked = mask(&object, &["spec.group".into(), "spec.phases.name".into()]);
        assert_eq!(
            masked,
            json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "a"},
                   "spec": {"group": "g", "phases": [{"name": "p"}]}})
        );
        assert_eq!(mask(&object, &[]), object);
    }
}
