//! What several of this crate's test files share.

use serde_json::json;

use olm_guard_native::policies::{GenerateError, RULES};
use olm_guard_native::{Native, generate};

/// Each rule's native form with its default settings and with every
/// setting the native form honours turned on.
pub fn every_native_form() -> Vec<Native> {
    let variants = [
        json!(null),
        json!({"warnLegacy": true}),
        json!({"allowLegacy": false}),
        json!({"requireNameSuffix": true}),
        json!({"forbidClusterScopedResources": true}),
        json!({"allowFeeding": ["admin"]}),
        json!({"requireSpecGroup": true}),
    ];
    let mut forms = Vec::new();
    for rule in RULES {
        for settings in &variants {
            match generate(rule, settings, None) {
                Ok(native) => forms.push(native),
                Err(GenerateError::Settings { .. } | GenerateError::ModuleOnly { .. }) => {}
                Err(e) => panic!("{rule} {settings}: {e}"),
            }
        }
    }
    assert!(forms.len() >= 9, "only {} native forms", forms.len());
    forms
}
