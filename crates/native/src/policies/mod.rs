//! The native form of each rule: what [`generate`] writes for a module and
//! its settings, and the table of its checks ([`Check`]), native or not.

pub mod aggregation_escalation;
pub mod catalog_union;
pub mod group_authorization;
pub mod og_intersection;
pub mod revision_uniqueness;
pub mod scope_rbac;

use serde_json::Value as Json;

use crate::crd::CrdError;
use crate::model::{BoundMutation, BoundPolicy};

/// A rule's CRD patches and their rules are the CRD module's types,
/// named here too, beside the [`Native`] form that holds them.
pub use crate::crd::{CrdRule, SchemaPatch};

/// Where one check of a rule is enforced on a cluster without Kubewarden.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforcement {
    /// A generated ValidatingAdmissionPolicy decides it from the request.
    Policy,
    /// A generated policy whose binding brings other objects in as params.
    Params,
    /// A generated CRD validation rule (`x-kubernetes-validations`).
    Schema,
    /// A generated MutatingAdmissionPolicy changes the object before the
    /// validating policies judge it.
    Mutation,
    /// Only the module can: it needs what CEL cannot see or do.
    ModuleOnly,
}

impl Enforcement {
    /// The table's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Enforcement::Policy => "native policy",
            Enforcement::Params => "native policy with params",
            Enforcement::Schema => "CRD rule",
            Enforcement::Mutation => "native mutating policy",
            Enforcement::ModuleOnly => "module only",
        }
    }
}

/// One check of a rule, where it is enforced, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    /// What the check is, in the module README's terms.
    pub check: &'static str,
    /// Where it is enforced natively.
    pub enforcement: Enforcement,
    /// Why there (for a module-only check: what CEL lacks).
    pub reason: &'static str,
}

impl Check {
    /// A table row.
    pub const fn new(check: &'static str, enforcement: Enforcement, reason: &'static str) -> Self {
        Check {
            check,
            enforcement,
            reason,
        }
    }
}

/// A rule's native form.
#[derive(Debug, Clone)]
pub struct Native {
    /// The rule (module) name.
    pub rule: &'static str,
    /// The generated policies, each with its binding.
    pub policies: Vec<BoundPolicy>,
    /// CRD patches.
    pub schema_patches: Vec<SchemaPatch>,
    /// MutatingAdmissionPolicies (for settings that rewrite the object),
    /// in `admissionregistration.k8s.io/v1`.
    pub mutations: Vec<BoundMutation>,
    /// For the roll-out's first look (`--actions warn`): a validating
    /// policy per mutation that warns and audits where the mutation would
    /// change an object, in its place.
    pub mutation_previews: Vec<BoundPolicy>,
    /// Every check of the rule, native or not.
    pub checks: &'static [Check],
}

impl Native {
    /// The same policies for a first look on a cluster (`scaffold vap
    /// --actions warn`): every binding that denies warns and audits instead
    /// (`validationActions: [Warn, Audit]`), so that a request the policy
    /// would deny is admitted with a warning to its client and an
    /// annotation in the API server's audit log
    /// (`validation.policy.admission.k8s.io/validation_failure`). Bindings
    /// that only warn stay as they are; CRD patches are left out, since a
    /// schema has no warn-only mode; each mutation is replaced by its
    /// preview, which warns where it would change the object.
    pub fn warn_only(mut self) -> Native {
        for bound in &mut self.policies {
            let actions = &mut bound.binding.spec.validation_actions;
            if actions.iter().any(|a| a == "Deny") {
                *actions = vec!["Warn".into(), "Audit".into()];
            }
        }
        self.schema_patches.clear();
        self.mutations.clear();
        self.policies.append(&mut self.mutation_previews);
        self
    }

    /// The mutations in the API version the cluster serves.
    pub fn mutations_in(mut self, version: crate::model::MutatingApiVersion) -> Native {
        self.mutations = self
            .mutations
            .into_iter()
            .map(|m| m.in_version(version))
            .collect();
        self
    }
}

/// Why no native form can be written.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// Not one of the modules.
    #[error(
        "unknown rule \"{0}\": the rules are {rules}",
        rules = rules().collect::<Vec<_>>().join(", ")
    )]
    UnknownRule(String),
    /// A registered rule the native generator has no entry for: a rule
    /// added to the registry without its native entry (HACKING.md, "Adding
    /// a seventh rule").
    #[error(
        "{rule} has no entry in olm_guard_native's list of native generators \
         (crates/native/src/policies/mod.rs, NATIVE): add one, with GenerateError::ModuleOnly \
         and the reason if CEL can decide none of its checks"
    )]
    NoEntry {
        /// The rule.
        rule: &'static str,
    },
    /// The settings are not the module's.
    #[error("{rule}: the settings are invalid: {problem}")]
    Settings {
        /// The rule.
        rule: &'static str,
        /// What the module's settings reader said.
        problem: String,
    },
    /// The settings ask for something only the module does.
    #[error("{rule}: {setting} cannot be enforced natively: {reason}")]
    NotNative {
        /// The rule.
        rule: &'static str,
        /// The setting.
        setting: &'static str,
        /// Why, and what to do instead.
        reason: &'static str,
    },
    /// The CRD to patch cannot take the patch.
    #[error("{rule}: {problem}")]
    Crd {
        /// The rule.
        rule: &'static str,
        /// What is wrong with the CRD, in one line (in this message, so
        /// not also a source).
        problem: CrdError,
    },
    /// The rule has no check CEL can decide from the request.
    #[error("{rule} has no native form: {reason}")]
    ModuleOnly {
        /// The rule.
        rule: &'static str,
        /// Why.
        reason: &'static str,
    },
}

/// One registered rule's native generator: its table of checks and how
/// its native form is written. A rule with no native form has an entry
/// too, whose generator says why ([`GenerateError::ModuleOnly`]), so that
/// every rule of the registry is accounted for.
struct NativeRule {
    /// The rule's name in `olm_guard_rules::registry`.
    rule: &'static str,
    checks: &'static [Check],
    generate: fn(&Json, Option<&[Json]>) -> Result<Native, GenerateError>,
}

/// The native entry of every rule; `olm_guard_rules::registry::RULES`
/// names the rules and their order, and a test holds this table to it
/// (one entry per registered rule, none for another name).
const NATIVE: &[NativeRule] = &[
    NativeRule {
        rule: group_authorization::RULE,
        checks: group_authorization::CHECKS,
        generate: |settings, cluster| {
            group_authorization::generate(&read(group_authorization::RULE, settings)?, cluster)
        },
    },
    NativeRule {
        rule: revision_uniqueness::RULE,
        checks: revision_uniqueness::CHECKS,
        generate: |settings, _| {
            revision_uniqueness::generate(&read(revision_uniqueness::RULE, settings)?)
        },
    },
    NativeRule {
        rule: catalog_union::RULE,
        checks: catalog_union::CHECKS,
        generate: |settings, cluster| {
            catalog_union::generate(&read(catalog_union::RULE, settings)?, cluster)
        },
    },
    NativeRule {
        rule: aggregation_escalation::RULE,
        checks: aggregation_escalation::CHECKS,
        generate: |settings, cluster| {
            aggregation_escalation::generate(
                &read(aggregation_escalation::RULE, settings)?,
                cluster,
            )
        },
    },
    NativeRule {
        rule: og_intersection::RULE,
        checks: og_intersection::CHECKS,
        generate: |settings, _| og_intersection::generate(&read(og_intersection::RULE, settings)?),
    },
    NativeRule {
        rule: scope_rbac::RULE,
        checks: scope_rbac::CHECKS,
        generate: |settings, _| scope_rbac::generate(&read(scope_rbac::RULE, settings)?),
    },
];

/// The rules, in the registry's order (the order the docs list them).
pub fn rules() -> impl Iterator<Item = &'static str> {
    olm_guard_rules::registry::names()
}

/// The native entry of the registered rule `rule`.
fn native_rule(rule: &str) -> Result<&'static NativeRule, GenerateError> {
    let registered = olm_guard_rules::registry::find(rule)
        .ok_or_else(|| GenerateError::UnknownRule(rule.into()))?;
    NATIVE
        .iter()
        .find(|entry| entry.rule == registered.name)
        .ok_or(GenerateError::NoEntry {
            rule: registered.name,
        })
}

/// The native form of `rule` with its module `settings` (JSON, as the
/// module takes them; `null` or `{}` for the defaults). `cluster`, the
/// objects of a cluster snapshot, is read by the rules whose policies name
/// cluster objects (the aggregated ClusterRoles of aggregation-escalation)
/// and by those whose CRD patches are written against the CRD the cluster
/// runs (a `CustomResourceDefinition` among them); without it they use
/// Kubernetes' defaults and the shipped upstream CRDs.
pub fn generate(
    rule: &str,
    settings: &Json,
    cluster: Option<&[Json]>,
) -> Result<Native, GenerateError> {
    (native_rule(rule)?.generate)(settings, cluster)
}

/// The table of checks of `rule`.
pub fn checks(rule: &str) -> Option<&'static [Check]> {
    native_rule(rule).ok().map(|entry| entry.checks)
}

/// The module's settings, read and checked as the module reads them.
fn read<T: serde::de::DeserializeOwned + Default + olm_guard_core::PolicySettings>(
    rule: &str,
    settings: &Json,
) -> Result<T, GenerateError> {
    let rule = olm_guard_rules::registry::find(rule).map_or("rule", |r| r.name);
    let problem = |problem: String| GenerateError::Settings { rule, problem };
    let settings: T = match settings {
        Json::Null => T::default(),
        other => serde_json::from_value(other.clone()).map_err(|e| problem(e.to_string()))?,
    };
    settings.validate().map_err(|e| problem(e.to_string()))?;
    Ok(settings)
}

/// `text` as a CEL string literal.
pub(crate) fn cel_string(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The requester as the modules name them: `user "alice" (groups=[a, b])`.
pub(crate) fn user_text() -> &'static str {
    "('user \"' + request.userInfo.username + '\" (groups=[' + \
     (has(request.userInfo.groups) ? \
     request.userInfo.groups.join(', ') : '') + '])')"
}

/// Why the native form of `rule` cannot be held to the module's answer on
/// `request` in `cluster`, when the answer depends on something the
/// generated policies do not see (see each rule's table of checks).
pub fn not_covered(
    rule: &str,
    request: &Json,
    cluster: &dyn olm_guard_core::Cluster,
) -> Option<&'static str> {
    let kind = request.pointer("/kind/kind").and_then(Json::as_str);
    match (rule, kind) {
        (scope_rbac::RULE, Some("ScopeInstance")) => Some(
            "ScopeInstances are the module's: their bindings are judged against the \
             ScopeTemplate they name, which CEL cannot read",
        ),
        (scope_rbac::RULE, Some("ScopeTemplate"))
            if scope_rbac::template_atoms(request) > scope_rbac::MAX_ATOMS
                && !scope_rbac::author_may_grant_anything(request, cluster) =>
        {
            Some(
                "a ScopeTemplate of more rule atoms than the native policy checks, from a \
                 requester who may not escalate clusterroles: the module's (the native policy \
                 fails closed)",
            )
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_rule_has_one_native_entry_and_no_other_rule_has_one() {
        for rule in rules() {
            let entries = NATIVE.iter().filter(|entry| entry.rule == rule).count();
            assert_eq!(
                entries, 1,
                "{rule}: {entries} native entries; a registered rule has one (its native form, or \
                 GenerateError::ModuleOnly with the reason)"
            );
            match generate(rule, &Json::Null, None) {
                Ok(native) => assert_eq!(native.rule, rule),
                Err(GenerateError::ModuleOnly { rule: said, reason }) => {
                    assert_eq!(said, rule);
                    assert!(!reason.is_empty(), "{rule}: no reason given");
                }
                Err(other) => panic!("{rule} with its default settings: {other}"),
            }
            assert!(
                !checks(rule).unwrap_or_default().is_empty(),
                "{rule}: no checks"
            );
        }
        for entry in NATIVE {
            assert!(
                olm_guard_rules::registry::find(entry.rule).is_some(),
                "{}: a native entry for a rule the registry does not have",
                entry.rule
            );
        }
    }

    #[test]
    fn an_unknown_rule_is_refused_naming_the_rules() {
        let error = generate("no-such-rule", &Json::Null, None).unwrap_err();
        assert!(matches!(error, GenerateError::UnknownRule(_)));
        assert!(
            error
                .to_string()
                .contains("group-authorization, revision-uniqueness"),
            "{error}"
        );
    }
}
