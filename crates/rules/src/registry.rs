//! Every rule, written once: its name, its settings, its evaluation (type
//! erased) and its module's metadata. The native speed baseline, the
//! scenario runner, the benchmarks, the native policy generator
//! (`olm_guard_native::policies::rules`) and every front end iterate
//! [`RULES`]; a seventh rule is one more line here (HACKING.md, "Adding a
//! seventh rule", lists the rest).

use serde_json::Value;

use olm_guard_core::evaluate::{self, Rule};
use olm_guard_core::{Cluster, PolicySettings, SettingsError, Verdict};

/// One rule as the front ends see it.
pub struct RuleEntry {
    /// The policy's name: its module `dist/<name>.wasm`, its crate
    /// `policies/<name>`, its scenarios `testdata/<name>/`.
    pub name: &'static str,
    /// The module's `metadata.yml`, as `kwctl annotate` would embed it.
    pub metadata_yaml: &'static str,
    /// The module's README: the rule's contract, settings and examples.
    pub readme: &'static str,
    evaluate: fn(Value, &Value, &dyn Cluster) -> Verdict,
    check_settings: fn(&Value) -> Result<(), SettingsError>,
    evaluate_payload: fn(&[u8], &dyn Cluster) -> Verdict,
    default_settings: fn() -> Value,
}

impl RuleEntry {
    /// Evaluates `request` (an AdmissionRequest as JSON) with `settings`
    /// (JSON; `null` for the defaults), exactly as the module does.
    pub fn evaluate(&self, request: Value, settings: &Value, cluster: &dyn Cluster) -> Verdict {
        (self.evaluate)(request, settings, cluster)
    }

    /// Evaluates a waPC `validate` payload (`{"request", "settings"}`), the
    /// module's own entry point.
    pub fn evaluate_payload(&self, payload: &[u8], cluster: &dyn Cluster) -> Verdict {
        (self.evaluate_payload)(payload, cluster)
    }

    /// The settings a policy runs with when given none, as JSON.
    pub fn default_settings(&self) -> Value {
        (self.default_settings)()
    }

    /// The module's `validate_settings`.
    pub fn check_settings(&self, settings: &Value) -> Result<(), SettingsError> {
        (self.check_settings)(settings)
    }
}

/// A registry line for the rule module `$module` (`Settings` + `validate`)
/// of policy `$name`.
macro_rules! rule {
    ($name:literal, $module:ident) => {
        RuleEntry {
            name: $name,
            metadata_yaml: include_str!(concat!("../../../policies/", $name, "/metadata.yml")),
            readme: include_str!(concat!("../../../policies/", $name, "/README.md")),
            evaluate: |request, settings, cluster| {
                evaluate_as::<crate::$module::Settings>(
                    request,
                    settings,
                    cluster,
                    crate::$module::validate,
                )
            },
            check_settings: evaluate::check_settings::<crate::$module::Settings>,
            default_settings: || {
                serde_json::to_value(crate::$module::Settings::default()).unwrap_or(Value::Null)
            },
            evaluate_payload: |payload, cluster| {
                evaluate::evaluate_payload::<crate::$module::Settings>(
                    payload,
                    crate::$module::validate,
                    cluster,
                )
            },
        }
    };
}

fn evaluate_as<S: PolicySettings>(
    request: Value,
    settings: &Value,
    cluster: &dyn Cluster,
    rule: Rule<S>,
) -> Verdict {
    evaluate::evaluate(request, settings, rule, cluster)
}

/// The six rules of olm-guard.
pub static RULES: &[RuleEntry] = &[
    rule!("group-authorization", group_authorization),
    rule!("revision-uniqueness", revision_uniqueness),
    rule!("catalog-union", catalog_union),
    rule!("aggregation-escalation", aggregation_escalation),
    rule!("og-intersection", og_intersection),
    rule!("scope-rbac", scope_rbac),
];

/// The rule named `name`.
///
/// ```
/// let rule = olm_guard_rules::registry::find("catalog-union").unwrap();
/// assert!(rule.check_settings(&serde_json::json!({"allowLegacy": 1})).is_err());
/// ```
pub fn find(name: &str) -> Option<&'static RuleEntry> {
    RULES.iter().find(|rule| rule.name == name)
}

/// The rule names, in registry order.
pub fn names() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|rule| rule.name)
}
