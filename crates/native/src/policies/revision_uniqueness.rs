//! revision-uniqueness, natively: `spec.revision` a whole number from 1,
//! immutable, and unique in its group (rules 1, 2 and 4 of
//! `olm_guard_rules::revision_uniqueness`), with the name rule of
//! `requireNameSuffix` (rule 6). Uniqueness needs the other
//! ClusterObjectSets: the binding's `paramRef` selector makes every
//! ClusterObjectSet a param, so the API server evaluates that policy once
//! per existing ClusterObjectSet, each evaluation comparing the request with
//! one of them.

use olm_guard_olm::cluster_object_set::{
    API_VERSION, GROUP, KIND, OWNER_NAME_LABEL, RESOURCE, SET_GROUP_FIX, VERSION,
};
use olm_guard_rules::revision_uniqueness::{KEPT, Settings};

use super::{Check, Enforcement, GenerateError, Native, cel_string};
use crate::model::{
    BoundPolicy, MatchResources, NamedExpression, ParamKind, ParamRef, PolicySpec, Validation,
    named, rule_for,
};

/// The rule's name.
pub const RULE: &str = "revision-uniqueness";

/// Every check of the rule and where it is enforced.
pub const CHECKS: &[Check] = &[
    Check::new(
        "spec.revision a whole number from 1 (rule 1)",
        Enforcement::Policy,
        "the request alone decides it; the ClusterObjectSet CRD also has format int64 and \
         minimum 1",
    ),
    Check::new(
        "spec.revision immutable (rule 2)",
        Enforcement::Policy,
        "oldObject carries the stored revision; the CRD also has self == oldSelf",
    ),
    Check::new(
        "no two ClusterObjectSets with the same group and revision (rule 4); an update that \
         keeps its group and revision is warned about a duplicate, not denied",
        Enforcement::Params,
        "every ClusterObjectSet is a param (paramRef selector {}), so the API server evaluates \
         the policy once per ClusterObjectSet: N evaluations per request, from its informer \
         cache, as the module lists them; the denial cannot name the next free revision, which \
         needs the highest of all of them",
    ),
    Check::new(
        "autoIncrementRevision: number a revision without spec.revision (rule 5)",
        Enforcement::ModuleOnly,
        "a mutation that needs the highest revision of the group, an aggregate over all \
         ClusterObjectSets",
    ),
    Check::new(
        "listByOwnerLabel: only the revisions labelled with the group's name count (rule 4)",
        Enforcement::Params,
        "the param's owner-name label is compared with the group, as the module's label \
         selector asks the host for only those",
    ),
    Check::new(
        "requireNameSuffix: the name is <group>-<revision> (rule 6)",
        Enforcement::Policy,
        "name, group and revision are in the object",
    ),
];

/// The variables both policies read.
fn variables() -> Vec<NamedExpression> {
    let lbl = cel_string(OWNER_NAME_LABEL);
    // What reaches admission is typed by the CRD's schema (an int64 from
    // 1, strings), so only presence is checked.
    let group_of = |x: &str| {
        format!(
            "has({x}.spec) && has({x}.spec.group) ? {x}.spec.group : \
             has({x}.metadata.labels) && {lbl} in {x}.metadata.labels ? \
             {x}.metadata.labels[{lbl}] : ''"
        )
    };
    let revision_of =
        |x: &str| format!("has({x}.spec) && has({x}.spec.revision) ? {x}.spec.revision : null");
    vec![
        named("revision", &revision_of("object")),
        named("group", &group_of("object")),
        named(
            "name",
            "has(object.metadata.name) ? object.metadata.name : ''",
        ),
        named(
            "oldRevision",
            &format!(
                "request.operation == 'UPDATE' ? ({}) : null",
                revision_of("oldObject")
            ),
        ),
        // An UPDATE that keeps its (group, revision) creates no new duplicate.
        named(
            "keepsSlot",
            &format!(
                "request.operation == 'UPDATE' && variables.revision != null && \
                 variables.oldRevision == variables.revision && ({}) == variables.group",
                group_of("oldObject"),
            ),
        ),
        named(
            "expectedName",
            "variables.revision != null ? variables.group + '-' + string(variables.revision) : \
             ''",
        ),
    ]
}

/// The policies for `settings`.
pub fn generate(settings: &Settings) -> Result<Native, GenerateError> {
    if settings.auto_increment_revision {
        return Err(GenerateError::NotNative {
            rule: RULE,
            setting: "autoIncrementRevision: true",
            reason: "numbering a revision is a mutation that needs the highest revision of the \
                     group; run the module for it",
        });
    }
    let cos_rules = || MatchResources {
        resource_rules: vec![rule_for(GROUP, VERSION, RESOURCE, &["CREATE", "UPDATE"])],
    };
    // Rule 1's types and range never reach admission: the CRD's schema
    // (int64, minimum 1) refuses them first.
    let mut validations = vec![
        // Rule 2.
        Validation {
            expression: "variables.oldRevision == null || variables.revision == \
                         variables.oldRevision"
                .into(),
            message: Some("spec.revision is immutable".into()),
            message_expression: Some(
                "variables.revision == null ? 'spec.revision is immutable: this \
                 ClusterObjectSet is revision ' + string(variables.oldRevision) + ' and the \
                 update removes it; keep spec.revision: ' + string(variables.oldRevision) : \
                 'spec.revision is immutable: this ClusterObjectSet is revision ' + \
                 string(variables.oldRevision) + ' and the update would make it ' + \
                 string(variables.revision) + '; keep spec.revision: ' + \
                 string(variables.oldRevision) + ', and create a new ClusterObjectSet for \
                 revision ' + string(variables.revision)"
                    .into(),
            ),
            reason: Some("Forbidden".into()),
        },
        // Rule 1: a revision is required.
        Validation {
            expression: "variables.revision != null".into(),
            message: Some("spec.revision is required".into()),
            message_expression: Some(
                "'spec.revision is required: set spec.revision to the group\\'s highest revision \
                 + 1, or 1 for the first revision of a group' + (request.operation == 'CREATE' ? \
                 ' (or enable the setting autoIncrementRevision to have it numbered on \
                 creation)' : '')"
                    .into(),
            ),
            reason: Some("Forbidden".into()),
        },
    ];
    let mut warnings = Vec::new();
    if settings.require_name_suffix {
        validations.push(Validation {
            expression: "variables.keepsSlot || (variables.group != '' && variables.name == \
                         variables.expectedName)"
                .into(),
            message: Some("metadata.name must be <group>-<revision>".into()),
            message_expression: Some(format!(
                "variables.group == '' ? 'metadata.name must be <group>-<revision> (setting \
                 requireNameSuffix), but this ClusterObjectSet is in no revision group (it has \
                 neither spec.group nor the label {OWNER_NAME_LABEL}); {SET_GROUP_FIX}' : \
                 'metadata.name must be \"' + variables.expectedName + '\" \
                 (<group>-<revision>, setting requireNameSuffix) but ' + (variables.name == '' && \
                 has(object.metadata.generateName) && object.metadata.generateName != '' ? 'it is \
                 empty and generateName \"' + object.metadata.generateName + '\" cannot produce \
                 it' : 'it is \"' + variables.name + '\"') + ': ' + (request.operation == \
                 'CREATE' ? 'name it \"' + variables.expectedName + '\"' : 'names cannot change, \
                 so delete this ClusterObjectSet and create it again as \"' + \
                 variables.expectedName + '\"') + '; the API server then refuses a second \
                 revision ' + (variables.revision == null ? '' : string(variables.revision)) + ' \
                 of group \"' + variables.group + '\" even when two creates race'"
            )),
            reason: Some("Forbidden".into()),
        });
        warnings.push(Validation {
            expression: "!variables.keepsSlot || (variables.group != '' && variables.name == \
                         variables.expectedName)"
                .into(),
            message: Some("metadata.name should be <group>-<revision>".into()),
            message_expression: Some(format!(
                "variables.group == '' ? 'metadata.name should be <group>-<revision> (setting \
                 requireNameSuffix), but this ClusterObjectSet is in no revision group (it has \
                 neither spec.group nor the label {OWNER_NAME_LABEL}); {KEPT}. New revisions \
                 need a group and the name <group>-<revision>; names cannot change, so replace \
                 this one by a ClusterObjectSet created with both' : 'metadata.name should be \"' \
                 + variables.expectedName + '\" (<group>-<revision>, setting requireNameSuffix) \
                 but it is \"' + variables.name + '\"; {KEPT}. Names cannot change: to comply, \
                 delete this ClusterObjectSet and create it again as \"' + variables.expectedName \
                 + '\"'"
            )),
            reason: None,
        });
    }
    let plain = |name: &str, summary: &str, validations: Vec<Validation>, action: &str| {
        BoundPolicy::new(
            name,
            RULE,
            summary,
            PolicySpec::fail_closed(cos_rules(), variables(), validations),
            &[action],
        )
    };
    // One evaluation per other ClusterObjectSet (`params`).
    let param_variables = {
        let mut v = variables();
        // listByOwnerLabel: the module asks the host for the revisions
        // labelled with the group only, so an unlabelled one never clashes.
        let labelled = if settings.list_by_owner_label {
            let lbl = cel_string(OWNER_NAME_LABEL);
            format!(
                " && has(params.metadata.labels) && {lbl} in params.metadata.labels && \
                 params.metadata.labels[{lbl}] == variables.group"
            )
        } else {
            String::new()
        };
        v.push(named(
            "clash",
            &format!(
                "variables.group != '' && variables.revision != null && \
                 params.metadata.name != variables.name && has(params.spec) && \
                 has(params.spec.revision) && params.spec.revision == variables.revision && \
                 ({}) == variables.group{labelled}",
                "has(params.spec.group) ? params.spec.group : has(params.metadata.labels) && \
                 'olm.operatorframework.io/owner-name' in params.metadata.labels ? \
                 params.metadata.labels['olm.operatorframework.io/owner-name'] : ''"
            ),
        ));
        // In a variable, which the API server's type checker does not
        // report on: against the CRD operator-controller ships, which has
        // no spec.group, it would flag the field in the message that reads
        // it, although has() keeps the message right on both CRDs.
        v.push(named(
            "paramGrouped",
            "has(params.spec) && has(params.spec.group)",
        ));
        v
    };
    let with_params = |name: &str, summary: &str, validation: Validation, action: &str| {
        let mut bound = BoundPolicy::new(
            name,
            RULE,
            summary,
            PolicySpec {
                param_kind: Some(ParamKind {
                    api_version: API_VERSION.into(),
                    kind: KIND.into(),
                }),
                ..PolicySpec::fail_closed(cos_rules(), param_variables.clone(), vec![validation])
            },
            &[action],
        );
        bound.binding.spec.param_ref = Some(ParamRef {
            selector: serde_json::json!({}),
            parameter_not_found_action: "Allow".into(),
        });
        bound
    };
    let unique = with_params(
        "olm-guard-revision-uniqueness-duplicates",
        "no two ClusterObjectSets share a group and a revision (every ClusterObjectSet is a param)",
        Validation {
            expression: "variables.keepsSlot || !variables.clash".into(),
            message: Some("spec.revision is already used in this group".into()),
            message_expression: Some(
                "'spec.revision ' + string(variables.revision) + ' of group \"' + variables.group \
                 + '\" is already used by ClusterObjectSet \"' + params.metadata.name + '\": ' + \
                 (request.operation == 'CREATE' ? 'use a revision no ClusterObjectSet of the \
                 group has' : 'revisions cannot change, so delete one of the two \
                 ClusterObjectSets (\"' + variables.name + '\" or \"' + params.metadata.name + \
                 '\")')"
                    .into(),
            ),
            reason: Some("Forbidden".into()),
        },
        "Deny",
    );
    let kept_duplicate = with_params(
        "olm-guard-revision-uniqueness-kept-duplicates",
        "warns on an update of a ClusterObjectSet that shares its group and revision with another",
        Validation {
            expression: "!variables.keepsSlot || !variables.clash".into(),
            message: Some("spec.revision is also used by another ClusterObjectSet".into()),
            message_expression: Some(format!(
                "'spec.revision ' + string(variables.revision) + ' of group \"' + \
                     variables.group + '\" is also used by ClusterObjectSet \"' + \
                     params.metadata.name + '\"' + (has(params.spec.lifecycleState) ? ', \
                     lifecycleState ' + params.spec.lifecycleState : '') + \
                     (variables.paramGrouped ? '' : ', grouped by its label \
                     {OWNER_NAME_LABEL}') + ': two revisions with one number fight over the same \
                     objects without end; {KEPT}. Revisions cannot change, so delete one of the \
                     two ClusterObjectSets (\"' + variables.name + '\" or \"' + \
                     params.metadata.name + '\")'"
            )),
            reason: None,
        },
        "Warn",
    );
    let mut policies = vec![
        plain(
            "olm-guard-revision-uniqueness",
            "spec.revision a whole number from 1, required and immutable",
            validations,
            "Deny",
        ),
        unique,
        kept_duplicate,
    ];
    if !warnings.is_empty() {
        policies.push(plain(
            "olm-guard-revision-uniqueness-names",
            "warns on an update that keeps a ClusterObjectSet whose name is not \
             <group>-<revision>",
            warnings,
            "Warn",
        ));
    }
    Ok(Native {
        rule: RULE,
        policies,
        schema_patches: Vec::new(),
        mutations: Vec::new(),
        mutation_previews: Vec::new(),
        checks: CHECKS,
    })
}
