//! What the API server does with a custom resource before any admission
//! policy sees it: it decodes the object against its CRD version's
//! structural schema, drops `null` from fields that are not nullable,
//! prunes the fields the schema does not know, and refuses a value of the
//! wrong type, outside an `enum`, or missing where `required`
//! (kubernetes `staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/
//! schema/pruning/algorithm.go`, `.../schema/objectmeta`, and the OpenAPI
//! validation of `pkg/apiserver/validation`). A generated policy never sees
//! what this refuses, so it carries no guard against it.
//!
//! Modelled: `type` (with `x-kubernetes-int-or-string`), `nullable`,
//! `properties`, `additionalProperties`, `items`,
//! `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-embedded-resource`,
//! `required`, `enum`, `minimum`/`maximum`, `minLength`/`maxLength`,
//! `minItems`/`maxItems` and `pattern`. Not modelled: `format`, defaults,
//! the schema's own `x-kubernetes-validations` rules, and `metadata`
//! beyond its being a map (the API server validates it as ObjectMeta).

use serde_json::{Map, Value as Json};

/// Why the API server refuses an object, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct Refusal {
    /// The field, from the object's root (`spec.revision`).
    pub path: String,
    /// What is wrong, in the API server's terms.
    pub problem: String,
}

/// The object as it reaches admission: `object` pruned and with nulls of
/// non-nullable fields dropped, or why it is refused. `schema` is a CRD
/// version's `openAPIV3Schema`.
pub fn admit(schema: &Json, object: &Json) -> Result<Json, Refusal> {
    let mut object = object.clone();
    // The root keeps what every object has, whatever its schema says.
    walk(schema, &mut object, "", true)?;
    Ok(object)
}

/// The `openAPIV3Schema` of `version` in a CRD (the first served version
/// when `version` is `None`).
pub fn version_schema<'a>(crd: &'a Json, version: Option<&str>) -> Option<&'a Json> {
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| match version {
            Some(name) => v.get("name").and_then(Json::as_str) == Some(name),
            None => v.get("served").and_then(Json::as_bool).unwrap_or(true),
        })?
        .pointer("/schema/openAPIV3Schema")
}

fn refuse(path: &str, problem: String) -> Refusal {
    Refusal {
        path: if path.is_empty() {
            "<root>".into()
        } else {
            path.into()
        },
        problem,
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn flag(schema: &Json, name: &str) -> bool {
    schema.get(name).and_then(Json::as_bool).unwrap_or(false)
}

/// The JSON type of `value` in the API server's words.
fn type_name(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

fn walk(schema: &Json, value: &mut Json, path: &str, root: bool) -> Result<(), Refusal> {
    check_type(schema, value, path)?;
    match value {
        Json::Object(map) => walk_object(schema, map, path, root)?,
        Json::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item_schema, item, &format!("{path}[{i}]"), false)?;
                }
            }
        }
        _ => {}
    }
    check_bounds(schema, value, path)
}

fn check_type(schema: &Json, value: &Json, path: &str) -> Result<(), Refusal> {
    let Some(expected) = schema.get("type").and_then(Json::as_str) else {
        return Ok(());
    };
    let found = type_name(value);
    let fits = match expected {
        "number" => matches!(found, "number" | "integer"),
        "string" if flag(schema, "x-kubernetes-int-or-string") => {
            matches!(found, "string" | "integer")
        }
        expected => expected == found,
    };
    if fits || (found == "null" && flag(schema, "nullable")) {
        return Ok(());
    }
    Err(refuse(
        path,
        format!("Invalid value: \"{found}\": {path} in body must be of type {expected}"),
    ))
}

fn walk_object(
    schema: &Json,
    map: &mut Map<String, Json>,
    path: &str,
    root: bool,
) -> Result<(), Refusal> {
    let properties = schema.get("properties").and_then(Json::as_object);
    let additional = schema.get("additionalProperties").filter(|a| a.is_object());
    let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
    let embedded = root || flag(schema, "x-kubernetes-embedded-resource");
    let keys: Vec<String> = map.keys().cloned().collect();
    for key in keys {
        let keep_as_is = embedded && matches!(key.as_str(), "apiVersion" | "kind" | "metadata");
        let field_schema = properties.and_then(|p| p.get(&key)).or(additional);
        match field_schema {
            _ if keep_as_is => {
                if key == "metadata" && !matches!(map.get(&key), Some(Json::Object(_))) {
                    return Err(refuse(
                        &child(path, &key),
                        "must be an object (ObjectMeta)".into(),
                    ));
                }
            }
            Some(field_schema) => {
                let field_path = child(path, &key);
                // A null in a field that is not nullable is dropped, not an
                // error (apiextensions v1).
                if map.get(&key).is_some_and(Json::is_null) && !flag(field_schema, "nullable") {
                    map.remove(&key);
                    continue;
                }
                if let Some(field) = map.get_mut(&key) {
                    walk(field_schema, field, &field_path, false)?;
                }
            }
            None if preserve || (properties.is_none() && additional.is_none()) => {}
            None => {
                map.remove(&key);
            }
        }
    }
    for required in schema
        .get("required")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(Json::as_str)
    {
        if !map.contains_key(required) {
            return Err(refuse(&child(path, required), "Required value".into()));
        }
    }
    Ok(())
}

fn check_bounds(schema: &Json, value: &Json, path: &str) -> Result<(), Refusal> {
    let number = |name: &str| schema.get(name).and_then(Json::as_f64);
    if let Some(allowed) = schema.get("enum").and_then(Json::as_array)
        && !value.is_null()
        && !allowed.contains(value)
    {
        let listed: Vec<String> = allowed.iter().map(Json::to_string).collect();
        return Err(refuse(
            path,
            format!(
                "Unsupported value: {value}: supported values: {}",
                listed.join(", ")
            ),
        ));
    }
    let too = |what: &str, bound: f64| {
        Err(refuse(
            path,
            format!("Invalid value: {value}: {path} in body should be {what} {bound}"),
        ))
    };
    match value {
        Json::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if let Some(min) = number("minimum").filter(|min| x < *min) {
                return too("greater than or equal to", min);
            }
            if let Some(max) = number("maximum").filter(|max| x > *max) {
                return too("less than or equal to", max);
            }
        }
        Json::String(s) => {
            let length = s.chars().count() as f64;
            if let Some(min) = number("minLength").filter(|min| length < *min) {
                return too("at least", min).map_err(|r| Refusal {
                    problem: format!("{} chars long", r.problem),
                    ..r
                });
            }
            if let Some(max) = number("maxLength").filter(|max| length > *max) {
                return too("at most", max).map_err(|r| Refusal {
                    problem: format!("{} chars long", r.problem),
                    ..r
                });
            }
            if let Some(pattern) = schema.get("pattern").and_then(Json::as_str)
                && let Ok(re) = regex::Regex::new(pattern)
                && !re.is_match(s)
            {
                return Err(refuse(
                    path,
                    format!("Invalid value: {value}: {path} in body should match '{pattern}'"),
                ));
            }
        }
        Json::Array(items) => {
            let length = items.len() as f64;
            if let Some(min) = number("minItems").filter(|min| length < *min) {
                return too("at least items:", min);
            }
            if let Some(max) = number("maxItems").filter(|max| length > *max) {
                return too("at most items:", max);
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Json {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["revision"],
                    "properties": {
                        "revision": {"type": "integer", "minimum": 1},
                        "state": {"type": "string", "enum": ["Active", "Archived"]},
                        "name": {"type": "string", "minLength": 1, "pattern": "^[a-z]+$"},
                        "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "port": {"x-kubernetes-int-or-string": true},
                        "items": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                        "maybe": {"type": "string", "nullable": true},
                    },
                },
            },
        })
    }

    #[test]
    fn unknown_fields_are_pruned_and_nulls_of_non_nullable_fields_dropped() {
        let admitted = admit(
            &schema(),
            &json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"},
                    "spec": {"revision": 1, "group": "g", "state": null, "maybe": null,
                             "open": {"any": [1]}, "labels": {"a": "b"}}, "extra": 1}),
        )
        .unwrap();
        assert_eq!(
            admitted,
            json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"},
                   "spec": {"revision": 1, "maybe": null, "open": {"any": [1]},
                            "labels": {"a": "b"}}})
        );
    }

    #[test]
    fn wrong_types_missing_required_fields_and_bounds_are_refused_naming_the_field() {
        let refused = |spec: Json| admit(&schema(), &json!({"spec": spec})).unwrap_err();
        assert_eq!(
            refused(json!({"revision": "3"})).to_string(),
            "spec.revision: Invalid value: \"string\": spec.revision in body must be of type integer"
        );
        assert_eq!(refused(json!({"revision": 2.5})).path, "spec.revision");
        assert_eq!(
            refused(json!({})).to_string(),
            "spec.revision: Required value"
        );
        assert!(
            refused(json!({"revision": 0}))
                .problem
                .contains("greater than or equal to 1")
        );
        assert!(
            refused(json!({"revision": 1, "state": "Gone"}))
                .problem
                .contains("supported values")
        );
        assert!(
            refused(json!({"revision": 1, "name": ""}))
                .problem
                .contains("at least 1 chars")
        );
        assert!(
            refused(json!({"revision": 1, "name": "A"}))
                .problem
                .contains("should match")
        );
        assert!(refused(json!({"revision": 1, "labels": {"a": 1}})).path == "spec.labels.a");
        assert!(refused(json!({"revision": 1, "items": ["a", 1]})).path == "spec.items[1]");
        assert!(
            refused(json!({"revision": 1, "items": ["a", "b", "c"]}))
                .problem
                .contains("at most")
        );
        let spec_a_list = admit(&schema(), &json!({"spec": [1]})).unwrap_err();
        assert!(
            spec_a_list.problem.contains("must be of type object"),
            "{spec_a_list}"
        );
        let metadata = admit(&schema(), &json!({"metadata": "x"})).unwrap_err();
        assert_eq!(metadata.path, "metadata");
        // int-or-string takes both.
        assert!(admit(&schema(), &json!({"spec": {"revision": 1, "port": 80}})).is_ok());
        assert!(admit(&schema(), &json!({"spec": {"revision": 1, "port": "http"}})).is_ok());
    }

    #[test]
    fn the_shipped_crds_admit_their_own_upstream_samples() {
        let cos = crate::crd::find("clusterobjectsets.olm.operatorframework.io", None).unwrap();
        let schema = version_schema(&cos.document, Some("v1")).unwrap();
        let sample = json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
            "metadata": {"name": "my-app-rev1"},
            "spec": {"revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent",
                     "group": "pruned", "phases": [{"name": "crds", "objects": [
                         {"object": {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "c"}, "data": {"a": "b"}}}]}]},
        });
        let admitted = admit(schema, &sample).unwrap();
        assert_eq!(
            admitted.pointer("/spec/group"),
            None,
            "today's CRD prunes spec.group"
        );
        assert_eq!(
            admitted.pointer("/spec/phases/0/objects/0/object/data/a"),
            Some(&json!("b")),
            "an embedded object keeps its fields"
        );
        let mut no_revision = sample.clone();
        no_revision["spec"]
            .as_object_mut()
            .unwrap()
            .remove("revision");
        assert_eq!(
            admit(schema, &no_revision).unwrap_err().path,
            "spec.revision"
        );
    }
}
