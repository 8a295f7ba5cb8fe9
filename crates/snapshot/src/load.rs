//! Reading snapshot files.

use serde::Deserialize;
use serde_json::Value;

/// Every object of a multi-document YAML (JSON is YAML too); `List`
/// documents (`kind: List` or `kind: <Kind>List` with `items`) are unpacked.
pub fn objects_from_yaml(text: &str) -> Result<Vec<Value>, String> {
    let mut objects = Vec::new();
    for (index, document) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value = Value::deserialize(document)
            .map_err(|e| format!("document {}: not valid YAML: {e}", index + 1))?;
        match value {
            Value::Null => {}
            Value::Object(ref map) if is_list(map) => {
                let items = map
                    .get("items")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                objects.extend(items);
            }
            Value::Object(_) => objects.push(value),
            _ => {
                return Err(format!(
                    "document {}: expected a Kubernetes object",
                    index + 1
                ));
            }
        }
    }
    Ok(objects)
}

fn is_list(map: &serde_json::Map<String, Value>) -> bool {
    map.get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k.ends_with("List"))
        && map
            .get("items")
            .is_some_and(|items| items.is_array() || items.is_null())
}

/// `(apiVersion, kind)` of an object, or why it cannot be served.
pub fn type_of(object: &Value) -> Result<(String, String), String> {
    let field = |key: &str| {
        object
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("<unnamed>");
    match (field("apiVersion"), field("kind")) {
        (Some(api_version), Some(kind)) => Ok((api_version, kind)),
        _ => Err(format!("object {name:?} has no apiVersion and kind")),
    }
}

/// What policy-server strips from served objects, so policies see the same.
pub fn strip_server_noise(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
        if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
}
