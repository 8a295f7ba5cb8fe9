//! Kubewarden field masks: which parts of a served object a module asked for.
//! (Field selectors, which choose objects, are
//! [`olm_guard_core::selector::FieldSelector`].)

use serde_json::{Map, Value};

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
