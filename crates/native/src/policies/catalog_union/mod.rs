//! catalog-union, natively: a CatalogSource configures exactly one catalog
//! source (rules 1-4 of `olm_guard_rules::catalog_union`, on today's CRD and
//! on the union the enhancement proposes), a valid legacy spec is accepted
//! (rule 5, with `warnLegacy`'s warning), and an UPDATE is judged by what it
//! changes (rule 7), so that a CatalogSource stored before the policy stays
//! writable. The problems are computed for `object` and `oldObject` by the
//! same expressions, so rule 7 compares them as the module does.
//!
//! `problems` writes the CEL that finds what is wrong with a spec,
//! `union` the part of it only a CRD with the union members needs, and
//! `migration` the MutatingAdmissionPolicy of `migrateLegacy`.

mod migration;
mod problems;
mod union;

use olm_guard_olm::catalog_source::{GROUP, VERSION};
use olm_guard_rules::catalog_union::Settings;
use serde_json::Value as Json;

use super::{Check, Enforcement, GenerateError, Native};
use crate::crd::{CrdRule, SchemaPatch};
use crate::model::{BoundPolicy, MatchResources, PolicySpec, Validation, named};

use migration::migration;
use problems::{HOW_TO_CONFIGURE_LEGACY, problems_of};

/// The rule's name.
pub const RULE: &str = "catalog-union";

/// Every check of the rule and where it is enforced.
pub const CHECKS: &[Check] = &[
    Check::new(
        "exactly one catalog source, in today's CRD's fields, in the CRD's schema",
        Enforcement::Schema,
        "x-kubernetes-validations on spec; it checks presence only (not an address's form, \
         empty values or grpcPodConfig), and a schema has no rule 7: an update that changes \
         the spec of a CatalogSource stored broken must fix it",
    ),
    Check::new(
        "exactly one catalog source: none or several are denied (rules 1 and 2)",
        Enforcement::Policy,
        "presence of keys in the object; the CRD patch carries the same rule for the API \
         server's schema validation",
    ),
    Check::new(
        "no deprecated key beside a union member, and a legacy spec OLM runs as written \
         (rule 3)",
        Enforcement::Policy,
        "keys and values of the object",
    ),
    Check::new(
        "the source names something: a non-empty image or ConfigMap, an address that is \
         host:port with a port in 1-65535 (rule 4)",
        Enforcement::Policy,
        "CEL's matches() with RE2 expressions equivalent to the module's address reader",
    ),
    Check::new(
        "a valid legacy spec is accepted; with warnLegacy, with a warning naming its union \
         member (rule 5)",
        Enforcement::Policy,
        "a second policy with a Warn binding",
    ),
    Check::new(
        "migrateLegacy: rewrite a legacy spec into its union member (rule 6), on a CRD with the \
         members",
        Enforcement::Mutation,
        "a MutatingAdmissionPolicy rewrites the spec before the validating policies judge it \
         (Kubernetes 1.36, or 1.34-1.35 with the v1beta1 API); with allowLegacy: false, and \
         for the module's warning that it rewrote the spec, run the module",
    ),
    Check::new(
        "an UPDATE of a CatalogSource stored broken is allowed, with a warning, when it leaves \
         the catalog configuration as it was or fixes part of it (rule 7)",
        Enforcement::Policy,
        "oldObject's problems are computed by the same expressions and compared",
    ),
];

/// The longest source field (`address`, `image`, `configMap`, `sourceType`)
/// the native policy judges: an address costs about five units of cel-go's
/// cost per character to read, and one expression may spend 1,000,000
/// (`crates/native/tests/limits.rs` has Kubernetes decide an address of
/// this length and refuse a longer one). Real ones are host names
/// and image references, a few hundred characters at most.
pub const MAX_SOURCE_LENGTH: usize = 100_000;

/// Rust's `char::is_whitespace` in RE2 (`\s` lacks `\v` and U+0085; `\pZ`
/// holds the Unicode spaces).
const WS: &str = "[\\\\s\\\\x{0B}\\\\x{85}\\\\pZ]";

/// The policies for `settings`.
pub fn generate(settings: &Settings, cluster: Option<&[Json]>) -> Result<Native, GenerateError> {
    if settings.migrate_legacy && !settings.allow_legacy {
        return Err(GenerateError::NotNative {
            rule: RULE,
            setting: "migrateLegacy: true with allowLegacy: false",
            reason: "a legacy spec the migration cannot rewrite is then denied, with a message \
                     the native policies do not write; run the module for it, or keep \
                     allowLegacy at its default (true) natively",
        });
    }
    let mut variables = Vec::new();
    variables.extend(problems_of("object", "n", settings));
    variables.extend(problems_of("oldObject", "o", settings));
    variables.push(named(
        "sameConfiguration",
        "variables.nConfiguration == variables.oConfiguration",
    ));
    // Rule 7: a stored object that was already broken, updated without a
    // new problem.
    variables.push(named(
        "storedBroken",
        "request.operation == 'UPDATE' && size(variables.oProblems) > 0",
    ));
    variables.push(named(
        "tolerated",
        "size(variables.nProblems) > 0 && variables.storedBroken && \
         (variables.sameConfiguration || variables.nProblems.all(p, p in variables.oProblems))",
    ));
    // Above the lengths the policy can judge within the API server's cost
    // limits, it says so instead of judging.
    let judgeable = Validation {
        expression: "size(variables.nTooLong) == 0".into(),
        message: Some(format!(
            "a catalog source field is longer than the native policy can check \
             ({MAX_SOURCE_LENGTH} characters): run olm-guard's catalog-union module"
        )),
        message_expression: Some(format!(
            "variables.nTooLong.join(', ') + ' ' + (size(variables.nTooLong) == 1 ? 'is' : \
             'are') + ' longer than the {MAX_SOURCE_LENGTH} characters this \
             ValidatingAdmissionPolicy can check within the API server\\'s CEL cost limits: run \
             olm-guard\\'s catalog-union module to judge this CatalogSource'"
        )),
        reason: Some("Forbidden".into()),
    };
    let one_source = Validation {
        expression: "size(variables.nProblems) == 0 || variables.tolerated".into(),
        message: Some("spec must configure exactly one catalog source".into()),
        message_expression: Some("variables.nProblems.join('; ')".into()),
        reason: Some("Forbidden".into()),
    };
    let rules = vec![crate::model::rule_for(
        GROUP,
        VERSION,
        "catalogsources",
        &["CREATE", "UPDATE"],
    )];
    let deny = BoundPolicy::new(
        "olm-guard-catalog-union",
        RULE,
        "a CatalogSource configures exactly one catalog source, as OLM runs it",
        PolicySpec::fail_closed(
            MatchResources {
                resource_rules: rules.clone(),
            },
            variables.clone(),
            vec![judgeable, one_source],
        ),
        &["Deny"],
    );
    let mut warnings = vec![Validation {
        expression: "!variables.tolerated".into(),
        message: Some("this CatalogSource already breaks catalog-union".into()),
        message_expression: Some(
            "variables.sameConfiguration ? 'this CatalogSource already breaks catalog-union and \
             this update leaves its catalog configuration as it was, so the update is allowed; \
             fix it: ' + variables.nProblems.join('; ') : 'this update fixes part of what this \
             CatalogSource breaks in catalog-union, so it is allowed; still to fix: ' + \
             variables.nProblems.join('; ')"
                .into(),
        ),
        reason: None,
    }];
    if settings.migrate_legacy {
        // The mutation has rewritten every legacy spec it could before the
        // policies see it: a legacy spec left is one it could not, which
        // the module admits with these two warnings.
        warnings.push(Validation {
            expression: "!(size(variables.nProblems) == 0 && \
                         variables.nAlternatives == ['legacy'])"
                .into(),
            message: Some("the deprecated legacy fields configure this catalog".into()),
            message_expression: Some(format!(
                "'the deprecated ' + {keys} + ' configure this catalog; write ' + \
                 variables.nReplacement + ' instead'",
                keys = join_and("variables.nLegacyKeys.map(k, 'spec.' + k)"),
            )),
            reason: None,
        });
        warnings.push(Validation {
            expression: "!(size(variables.nProblems) == 0 && \
                         variables.nAlternatives == ['legacy'] && variables.nUnportable != '')"
                .into(),
            message: Some("this spec was not migrated".into()),
            message_expression: Some(
                "'this spec was not migrated: ' + variables.nUnportableReason + '; remove ' + \
                 variables.nUnportable + ' to let it be migrated'"
                    .into(),
            ),
            reason: None,
        });
    } else if settings.warn_legacy {
        warnings.push(Validation {
            expression: "!(size(variables.nProblems) == 0 && \
                         variables.nAlternatives == ['legacy'])"
                .into(),
            message: Some("the deprecated legacy fields configure this catalog".into()),
            message_expression: Some(format!(
                "'the deprecated ' + {keys} + ' configure this catalog; write ' + \
                 {replacement} + ' instead' + (variables.nUnportable != '' ? '; but ' + \
                 variables.nUnportableReason + ', so that form would drop ' + \
                 variables.nUnportable : '')",
                keys = join_and("variables.nLegacyKeys.map(k, 'spec.' + k)"),
                replacement = "variables.nReplacement",
            )),
            reason: None,
        });
    }
    let warn = BoundPolicy::new(
        "olm-guard-catalog-union-warnings",
        RULE,
        "warns where the module allows with a warning",
        PolicySpec::fail_closed(
            MatchResources {
                resource_rules: rules,
            },
            variables,
            warnings,
        ),
        &["Warn"],
    );
    let (mutations, mutation_previews) = if settings.migrate_legacy {
        let (mutation, preview) = migration(settings);
        (vec![mutation], vec![preview])
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(Native {
        rule: RULE,
        policies: vec![deny, warn],
        schema_patches: vec![schema_patch(cluster)?],
        mutations,
        mutation_previews,
        checks: CHECKS,
    })
}

/// The one-source rule in the CatalogSource CRD of today (operator-framework
/// api `crds/operators.coreos.com_catalogsources.yaml`: one version,
/// v1alpha1, `sourceType` required, no union members, no rules of its own),
/// with messages that name the fields rather than the proposal's `oneOf`.
fn schema_patch(cluster: Option<&[Json]>) -> Result<SchemaPatch, GenerateError> {
    let one_source = CrdRule {
        path: "spec",
        // The schema already requires sourceType; without it (a CRD with the
        // union members) the rule has nothing to say.
        rule: "!has(self.sourceType) || (self.sourceType == 'grpc' ? has(self.image) != \
               has(self.address) && !has(self.configMap) : (self.sourceType == 'configmap' || \
               self.sourceType == 'internal') && has(self.configMap) && !has(self.image) && \
               !has(self.address))"
            .into(),
        message: format!(
            "spec must configure exactly one catalog source: set {HOW_TO_CONFIGURE_LEGACY}"
        ),
        // Each field the object has that OLM ignores, in the module's words
        // (catalog_union::judge), so that kubectl's message names no field
        // the object lacks. Joined by hand, and with the source type as a
        // literal, since a list joined or a string of unbounded length
        // repeated would pass the CRD's cost budget.
        message_expression: Some(format!(
            "self.sourceType == 'grpc' ? (has(self.configMap) ? 'spec.configMap is ignored with \
             spec.sourceType \"grpc\": remove it, or set spec.sourceType \"configmap\" if the \
             catalog is in that ConfigMap' : '') + (has(self.configMap) && has(self.image) == \
             has(self.address) ? '; ' : '') + (has(self.image) && has(self.address) ? \
             'spec.address is ignored because spec.image is set (OLM runs the image): remove \
             spec.address, or remove spec.image to use the running registry' : '') + \
             (!has(self.image) && !has(self.address) ? 'spec.sourceType \"grpc\" needs \
             spec.image (an operator-registry image) or spec.address (host:port of a running \
             registry)' : '') : self.sourceType == 'configmap' || self.sourceType == \
             'internal' ? (has(self.image) ? 'spec.image is ignored with spec.sourceType \"' + \
             (self.sourceType == 'configmap' ? 'configmap' : 'internal') + '\": remove it, or \
             set spec.sourceType \"grpc\" if the catalog comes from it' : '') + \
             (has(self.image) && (has(self.address) || !has(self.configMap)) ? '; ' : '') + \
             (has(self.address) ? 'spec.address is ignored with spec.sourceType \"' + \
             (self.sourceType == 'configmap' ? 'configmap' : 'internal') + '\": remove it, or \
             set spec.sourceType \"grpc\" if the catalog comes from it' : '') + \
             (has(self.address) && !has(self.configMap) ? '; ' : '') + (!has(self.configMap) ? \
             'spec.sourceType \"' + (self.sourceType == 'configmap' ? 'configmap' : \
             'internal') + '\" needs spec.configMap (the name of the ConfigMap that holds the \
             catalog)' : '') : 'spec.sourceType \"' + self.sourceType + '\" is not a source \
             type OLM knows: set {HOW_TO_CONFIGURE_LEGACY}'"
        )),
    };
    let crd = crate::crd::find(CRD, cluster).map_err(|problem| GenerateError::Crd {
        rule: RULE,
        problem,
    })?;
    let patch = crd
        .add_rules(&["spec"], std::slice::from_ref(&one_source))
        .map_err(|problem| GenerateError::Crd {
            rule: RULE,
            problem,
        })?;
    Ok(SchemaPatch {
        crd: CRD.into(),
        file: format!("{RULE}.crd-patch.json"),
        step: format!(
            "written against {}; rules the CRD has are kept (appended to)",
            crd.source
        ),
        patch: Json::Array(patch),
        rules: vec![one_source],
    })
}

/// The CatalogSource CRD's name.
const CRD: &str = "catalogsources.operators.coreos.com";

/// `items` (a CEL list of distinct strings) as "a", "a and b", "a, b and c".
fn join_and(items: &str) -> String {
    format!(
        "(size({items}) == 0 ? '' : size({items}) == 1 ? {items}[0] : \
         {items}.filter(x, x != {items}[size({items}) - 1]).join(', ') + ' and ' + \
         {items}[size({items}) - 1])"
    )
}
