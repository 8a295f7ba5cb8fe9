//! What several of this crate's test files share. Each test file is a
//! binary of its own that uses part of this module.
#![allow(dead_code)]

use serde_json::{Value, json};

use olm_guard_native::policies::{GenerateError, rules};
use olm_guard_native::{Native, generate};

/// The settings of each native form [`every_native_form`] returns, in its
/// order.
pub fn every_native_form_settings() -> Vec<Value> {
    every_form()
        .into_iter()
        .map(|(settings, _)| settings)
        .collect()
}

/// Each rule's native form with its default settings and with every
/// setting the native form honours turned on.
pub fn every_native_form() -> Vec<Native> {
    let forms: Vec<Native> = every_form().into_iter().map(|(_, native)| native).collect();
    assert!(forms.len() >= 9, "only {} native forms", forms.len());
    forms
}

fn every_form() -> Vec<(Value, Native)> {
    let variants = [
        json!(null),
        json!({"warnLegacy": true}),
        json!({"allowLegacy": false}),
        json!({"requireNameSuffix": true}),
        json!({"forbidClusterScopedResources": true}),
        json!({"allowFeeding": ["admin"]}),
        json!({"requireSpecGroup": true}),
        json!({"requireSpecGroup": true, "backfillGroupFromLabel": true}),
        json!({"migrateLegacy": true}),
    ];
    let mut forms = Vec::new();
    for rule in rules() {
        for settings in &variants {
            match generate(rule, settings, None) {
                Ok(native) => forms.push((settings.clone(), native)),
                Err(GenerateError::Settings { .. } | GenerateError::ModuleOnly { .. }) => {}
                Err(e) => panic!("{rule} {settings}: {e}"),
            }
        }
    }
    forms
}

/// `patch` (RFC 6902) applied to `crd`, as `kubectl patch --type json`
/// applies it; `what` names the patch when it does not apply.
pub fn apply_patch(crd: &mut Value, patch: &Value, what: &str) {
    let operations: json_patch::Patch = serde_json::from_value(patch.clone())
        .unwrap_or_else(|e| panic!("{what}: not a JSON patch: {e}"));
    json_patch::patch(crd, &operations).unwrap_or_else(|e| panic!("{what}: {e}"));
}

/// Every node of `schema` that has an `x-kubernetes-validations` list,
/// with its JSON pointer.
pub fn validated_nodes(schema: &Value) -> Vec<(String, &Value)> {
    fn walk<'a>(schema: &'a Value, at: String, out: &mut Vec<(String, &'a Value)>) {
        match schema {
            Value::Object(map) => {
                if map.contains_key("x-kubernetes-validations") {
                    out.push((at.clone(), schema));
                }
                for (key, value) in map {
                    walk(value, format!("{at}/{key}"), out);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(schema, String::new(), &mut out);
    out
}
