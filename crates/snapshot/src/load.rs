//! Reading snapshot sources into located objects.

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Location, Problem, SnapshotError};

/// Every object of a multi-document YAML (JSON is YAML too), with where it
/// was read; `List` documents (`kind: List` or `kind: <Kind>List` with
/// `items`) are unpacked. The items of a typed list (`CatalogSourceList`, as
/// the API server answers a list call) carry no `apiVersion` or `kind`; they
/// get the list's, as client-go's decoder gives them. Problems come in order among the objects; after a
/// YAML syntax error nothing more can be read (the parser would repeat it).
pub(crate) fn objects_from_yaml(
    source: &str,
    text: &str,
) -> Vec<Result<(Location, Value), SnapshotError>> {
    let mut read = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let at = Location {
            source: source.to_string(),
            document: Some(index + 1),
            item: None,
        };
        let value = match Value::deserialize(document) {
            Ok(value) => value,
            Err(e) => {
                read.push(Err(SnapshotError {
                    at,
                    problem: Problem::NotYaml(e.to_string()),
                }));
                break;
            }
        };
        match value {
            Value::Null => {}
            Value::Object(mut map) if is_list(&map) => {
                let items = match map.remove("items") {
                    Some(Value::Array(items)) => items,
                    _ => Vec::new(),
                };
                let item_type = item_type_of_list(&map);
                for (item, mut object) in items.into_iter().enumerate() {
                    if let (Some((api_version, kind)), Some(fields)) =
                        (&item_type, object.as_object_mut())
                    {
                        fields
                            .entry("apiVersion")
                            .or_insert_with(|| Value::String(api_version.clone()));
                        fields
                            .entry("kind")
                            .or_insert_with(|| Value::String(kind.clone()));
                    }
                    read.push(object_at(
                        Location {
                            item: Some(item),
                            ..at.clone()
                        },
                        object,
                    ));
                }
            }
            value => read.push(object_at(at, value)),
        }
    }
    read
}

/// `value` if it is an object, else why not.
pub(crate) fn object_at(at: Location, value: Value) -> Result<(Location, Value), SnapshotError> {
    let found = match value {
        Value::Object(_) => return Ok((at, value)),
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
    };
    Err(SnapshotError {
        at,
        problem: Problem::NotAnObject(found),
    })
}

/// `(apiVersion, kind)` the items of a typed list `<Kind>List` have, e.g.
/// `operators.coreos.com/v1alpha1`, `CatalogSource`; `None` for a plain
/// `List`, whose items each name their own type.
fn item_type_of_list(map: &serde_json::Map<String, Value>) -> Option<(String, String)> {
    let kind = map.get("kind")?.as_str()?.strip_suffix("List")?;
    let api_version = map.get("apiVersion")?.as_str()?;
    (!kind.is_empty() && !api_version.is_empty())
        .then(|| (api_version.to_string(), kind.to_string()))
}

fn is_list(map: &serde_json::Map<String, Value>) -> bool {
    map.get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k.ends_with("List"))
        && map
            .get("items")
            .is_some_and(|items| items.is_array() || items.is_null())
}

/// `(apiVersion, kind)` of an object, or the problem naming it.
pub(crate) fn type_of(object: &Value) -> Result<(String, String), Problem> {
    let field = |key: &str| {
        object
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    match (field("apiVersion"), field("kind")) {
        (Some(api_version), Some(kind)) => Ok((api_version, kind)),
        _ => {
            let meta = olm_guard_core::ObjectMeta::of(object);
            let name = match (meta.namespace.as_str(), meta.name.as_str()) {
                (_, "") => "<unnamed>".to_string(),
                ("", name) => name.to_string(),
                (namespace, name) => format!("{namespace}/{name}"),
            };
            Err(Problem::NoType(name))
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_of_a_typed_list_get_its_type() {
        // As `kubectl get catalogsources -o yaml` prints a list read with
        // `--raw`, or as the API server answers a list call.
        let text = "apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSourceList\nitems:\n- metadata: {name: a, namespace: olm}\n- apiVersion: operators.coreos.com/v1\n  kind: CatalogSource\n  metadata: {name: b}\n";
        let read: Vec<Value> = objects_from_yaml("cs.yaml", text)
            .into_iter()
            .map(|r| r.expect("readable").1)
            .collect();
        assert_eq!(read[0]["kind"], "CatalogSource");
        assert_eq!(read[0]["apiVersion"], "operators.coreos.com/v1alpha1");
        // An item that names its type keeps it.
        assert_eq!(read[1]["apiVersion"], "operators.coreos.com/v1");
    }

    #[test]
    fn items_of_a_plain_list_are_not_given_a_type() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- metadata: {name: a}\n";
        let read = objects_from_yaml("l.yaml", text);
        let (_, object) = read[0].as_ref().expect("an object");
        assert!(object.get("kind").is_none());
    }
}
