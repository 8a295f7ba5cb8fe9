//! group-authorization, natively: `manage` on `clusterobjectsets/groups`
//! through the authorizer for the group of every revision written or
//! deleted (its `spec.group` where the CRD has the field, else its
//! owner-name label, as operator-controller groups revisions), and for the
//! group a revision is stored in when an update moves it; a `spec.group`
//! that is a name, immutable and agreeing with the label; with
//! `requireSpecGroup`, `spec.group` required and a staged CRD patch adding
//! the field. The same rules as `olm_guard_rules::group_authorization` (the
//! numbers are its README's).

use olm_guard_olm::cluster_object_set::{
    GROUP, GROUPS_SUBRESOURCE, MANAGE_VERB, OWNER_NAME_LABEL, RESOURCE, VERSION,
};
use olm_guard_rules::group_authorization::{NOT_AUTHORIZED, Settings};
use serde_json::Value as Json;

use super::{Check, Enforcement, GenerateError, Native, cel_string, user_text};
use crate::crd::{CrdError, CrdRule, SchemaPatch};
use crate::model::{
    BoundMutation, BoundPolicy, JsonPatch, MatchResources, MutatingPolicySpec, Mutation,
    PolicySpec, Validation, json_patch_op, named, rule_for,
};

/// The rule's name.
pub const RULE: &str = "group-authorization";

/// Every check of the rule and where it is enforced.
pub const CHECKS: &[Check] = &[
    Check::new(
        "manage on clusterobjectsets/groups for the group of a revision written (its spec.group, \
         else its owner-name label), and for the group it is stored in when an update moves it \
         or takes it out (rule 4)",
        Enforcement::Policy,
        "CEL's authorizer library asks the API server's authorizer the same question as the \
         module's SubjectAccessReview; a revision in no group has nothing to authorize",
    ),
    Check::new(
        "DELETE needs manage on the group the revision is stored in, except from the garbage \
         collector (rule 5)",
        Enforcement::Policy,
        "oldObject carries the stored group, userInfo the requester",
    ),
    Check::new(
        "a spec.group, where the CRD has the field, is immutable (rule 2) and agrees with the \
         owner-name label (rule 3)",
        Enforcement::Policy,
        "object and oldObject carry both; on the CRD operator-controller ships spec.group is \
         pruned before admission and these never fire",
    ),
    Check::new(
        "a spec.group is a non-empty string (rule 1)",
        Enforcement::Schema,
        "the CRD's schema: a CRD that adopts spec.group types it (minLength 1), and the one \
         operator-controller ships prunes it, before any admission policy runs",
    ),
    Check::new(
        "requireSpecGroup: spec.group required on CREATE (rule 6); an UPDATE of a revision \
         stored without one is allowed, authorized by its labels, with a warning",
        Enforcement::Policy,
        "the request alone decides it; a second policy with a Warn binding gives the warning",
    ),
    Check::new(
        "requireSpecGroup: spec.group in the CRD's schema, added, then immutable, then \
         (optionally) required",
        Enforcement::Schema,
        "three CRD patches, applied in order, written against the CRD given (--crd) or the \
         shipped upstream copy; rules the CRD has are kept",
    ),
    Check::new(
        "backfillGroupFromLabel: copy the owner-name label into a missing spec.group (rule 7)",
        Enforcement::Mutation,
        "a MutatingAdmissionPolicy adds spec.group from the label before the validating \
         policies judge the object (Kubernetes 1.36, or 1.34-1.35 with the v1beta1 API); the \
         module's warning that it copied the label has no native counterpart",
    ),
];

/// The ClusterObjectSet CRD's name.
const CRD: &str = "clusterobjectsets.olm.operatorframework.io";

/// `manage` on `clusterobjectsets/groups` named by the CEL string `group`.
fn manage(group: &str) -> String {
    format!(
        "authorizer.group({}).resource({}).subresource({}).name({group}).check({}).allowed()",
        cel_string(GROUP),
        cel_string(RESOURCE),
        cel_string(GROUPS_SUBRESOURCE),
        cel_string(MANAGE_VERB),
    )
}

/// The module's rule-4 denial for the CEL string `group`, followed by the
/// CEL string `note`.
fn not_authorized(group: &str, note: &str) -> String {
    format!(
        "{} + ': ' + {} + ' may not manage group \"' + {group} + '\"' + {note} + '; a cluster \
         admin grants it with a ClusterRole rule {{apiGroups: [{GROUP}], resources: \
         [{RESOURCE}/{GROUPS_SUBRESOURCE}], resourceNames: [' + {group} + '], verbs: \
         [{MANAGE_VERB}]}} bound to this user by a ClusterRoleBinding'",
        cel_string(NOT_AUTHORIZED),
        user_text(),
    )
}

/// The policies for `settings`; `cluster` may hold the ClusterObjectSet CRD
/// the staged patches are written against.
pub fn generate(settings: &Settings, cluster: Option<&[Json]>) -> Result<Native, GenerateError> {
    let lbl = cel_string(OWNER_NAME_LABEL);
    let collectors = settings
        .garbage_collectors
        .iter()
        .map(|user| cel_string(user))
        .collect::<Vec<_>>()
        .join(", ");
    let mut variables = vec![
        // spec.group, '' when absent: always absent on the CRD
        // operator-controller ships, which prunes the field; a CRD that
        // adopts it types it as a non-empty string.
        named(
            "specGroup",
            "request.operation != 'DELETE' && has(object.spec) && has(object.spec.group) ? \
             object.spec.group : ''",
        ),
        // The stored object's spec.group when a non-empty string, else ''.
        named(
            "oldSpecGroup",
            "request.operation != 'CREATE' && has(oldObject.spec) && \
             has(oldObject.spec.group) ? oldObject.spec.group : ''",
        ),
        // The owner-name label, '' when absent.
        named(
            "labelGroup",
            &format!(
                "request.operation != 'DELETE' && has(object.metadata.labels) && \
                 {lbl} in object.metadata.labels ? object.metadata.labels[{lbl}] : ''"
            ),
        ),
        named(
            "hasLabel",
            &format!(
                "request.operation != 'DELETE' && has(object.metadata.labels) && \
                 {lbl} in object.metadata.labels"
            ),
        ),
        named(
            "oldLabel",
            &format!(
                "request.operation != 'CREATE' && has(oldObject.metadata.labels) && \
                 {lbl} in oldObject.metadata.labels ? oldObject.metadata.labels[{lbl}] : ''"
            ),
        ),
        // The group of the revision written: spec.group, else its label.
        named(
            "group",
            "variables.specGroup != '' ? variables.specGroup : variables.labelGroup",
        ),
        // The group a stored revision counts in: spec.group, else its label.
        named(
            "storedGroup",
            "variables.oldSpecGroup != '' ? variables.oldSpecGroup : variables.oldLabel",
        ),
    ];
    if settings.require_spec_group {
        // An UPDATE that leaves a revision stored without spec.group
        // without one: allowed, with a warning.
        variables.push(named(
            "keptWithoutGroup",
            "request.operation == 'UPDATE' && variables.specGroup == '' && \
             variables.oldSpecGroup == ''",
        ));
    }
    // Rule 1 (a spec.group of the wrong type) and unreadable objects
    // never reach admission: the CRD's schema refuses them first.
    let mut validations = vec![
        // Rule 2.
        Validation {
            expression: "request.operation == 'DELETE' || variables.oldSpecGroup == '' || \
                         variables.specGroup == variables.oldSpecGroup"
                .into(),
            message: Some("spec.group is immutable".into()),
            message_expression: Some(
                "variables.specGroup == '' ? 'spec.group is required: this ClusterObjectSet \
                 belongs to group \"' + variables.oldSpecGroup + '\" and the group cannot \
                 change: keep spec.group: ' + variables.oldSpecGroup : 'spec.group is \
                 immutable: this ClusterObjectSet belongs to group \"' + variables.oldSpecGroup \
                 + '\" and the update would move it to \"' + variables.specGroup + '\"; keep \
                 spec.group: ' + variables.oldSpecGroup + ', and create a new ClusterObjectSet \
                 to add a revision to group \"' + variables.specGroup + '\"'"
                    .into(),
            ),
            reason: Some("Forbidden".into()),
        },
        // Rule 3.
        Validation {
            expression: "variables.specGroup == '' || !variables.hasLabel || \
                         variables.labelGroup == variables.specGroup"
                .into(),
            message: Some(format!(
                "label {OWNER_NAME_LABEL} disagrees with spec.group"
            )),
            message_expression: Some(format!(
                "'label {OWNER_NAME_LABEL} is \"' + variables.labelGroup + \
                 '\" but spec.group is \"' + variables.specGroup + '\": operator-controller \
                 groups revisions by this label and would put this revision into group \"' + \
                 variables.labelGroup + '\"; set the label to \"' + variables.specGroup + \
                 '\" or remove it'"
            )),
            reason: Some("Forbidden".into()),
        },
    ];
    if settings.require_spec_group {
        // Rule 6.
        validations.push(Validation {
            expression: "request.operation == 'DELETE' || variables.specGroup != '' || \
                         variables.keptWithoutGroup"
                .into(),
            message: Some("spec.group is required".into()),
            message_expression: Some(format!(
                "'spec.group is required: ' + (variables.labelGroup != '' ? 'this \
                 ClusterObjectSet has label {OWNER_NAME_LABEL}=\"' + variables.labelGroup + \
                 '\": set spec.group: ' + variables.labelGroup + ' (or enable the setting \
                 backfillGroupFromLabel to copy the label automatically)' : 'set spec.group to \
                 the name of the revision group this ClusterObjectSet belongs to (for revisions \
                 of a ClusterExtension, the extension\\'s name)')"
            )),
            reason: Some("Forbidden".into()),
        });
    }
    validations.extend([
        // Rule 4: the group of the revision written.
        Validation {
            expression: format!(
                "request.operation == 'DELETE' || variables.group == '' || {}",
                manage("variables.group")
            ),
            message: Some(NOT_AUTHORIZED.into()),
            message_expression: Some(not_authorized(
                "variables.group",
                &format!(
                    "(variables.specGroup != '' ? '' : ' (the group named by its label \
                     {OWNER_NAME_LABEL}=\"' + variables.group + '\")')"
                ),
            )),
            reason: Some("Forbidden".into()),
        },
        // Rule 4: the group it is stored in, when the update moves it out.
        Validation {
            expression: format!(
                "request.operation != 'UPDATE' || variables.storedGroup == '' || \
                 variables.storedGroup == variables.group || {}",
                manage("variables.storedGroup")
            ),
            message: Some(NOT_AUTHORIZED.into()),
            message_expression: Some(not_authorized(
                "variables.storedGroup",
                &format!(
                    "' (the group this ClusterObjectSet is stored in, taken from ' + \
                     (variables.oldSpecGroup != '' ? 'its spec.group' : 'the label it is \
                     stored with {OWNER_NAME_LABEL}=\"' + variables.oldLabel + '\"') + '; ' + \
                     (variables.group != '' ? 'the update would move it to group \"' + \
                     variables.group + '\", which needs the grant on both groups)' : 'the \
                     update would take it out of that group, which needs the grant on it)')"
                ),
            )),
            reason: Some("Forbidden".into()),
        },
        // Rule 5.
        Validation {
            expression: format!(
                "request.operation != 'DELETE' || variables.storedGroup == '' || \
                 request.userInfo.username in [{collectors}] || {}",
                manage("variables.storedGroup")
            ),
            message: Some(NOT_AUTHORIZED.into()),
            message_expression: Some(not_authorized(
                "variables.storedGroup",
                &format!(
                    "(variables.oldSpecGroup != '' ? '' : ' (the group named by the label it is \
                     stored with {OWNER_NAME_LABEL}=\"' + variables.storedGroup + '\")')"
                ),
            )),
            reason: Some("Forbidden".into()),
        },
    ]);
    let match_constraints = MatchResources {
        resource_rules: vec![rule_for(
            GROUP,
            VERSION,
            RESOURCE,
            &["CREATE", "UPDATE", "DELETE"],
        )],
    };
    let deny = BoundPolicy::new(
        "olm-guard-group-authorization",
        RULE,
        "ClusterObjectSet revision groups: manage on clusterobjectsets/groups for the group of \
         every revision written or deleted (spec.group, else the owner-name label), and a \
         spec.group that is a name, immutable and agreeing with the label",
        PolicySpec::fail_closed(match_constraints, variables.clone(), validations),
        &["Deny"],
    );
    let mut policies = vec![deny];
    let mut schema_patches = Vec::new();
    if settings.require_spec_group {
        policies.push(kept_without_group_warning(variables));
        schema_patches = staged_schema_patches(cluster)?;
    }
    // backfillGroupFromLabel is refused by the settings without
    // requireSpecGroup, as the module refuses it.
    let (mutations, mutation_previews) = if settings.backfill_group_from_label {
        let (mutation, preview) = backfill();
        (vec![mutation], vec![preview])
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(Native {
        rule: RULE,
        policies,
        schema_patches,
        mutations,
        mutation_previews,
        checks: CHECKS,
    })
}

/// The name of the mutating policy that backfills `spec.group`.
const BACKFILL: &str = "olm-guard-group-authorization-backfill";

/// Rule 7 as a MutatingAdmissionPolicy: a ClusterObjectSet written without
/// `spec.group` but with the owner-name label gets `spec.group` set to the
/// label (the proposal's "Backfill spec.group from the existing label
/// value"), on CREATE and UPDATE, before the validating policies judge it;
/// and the roll-out's preview of it, a validating policy that warns where
/// the mutation would change an object.
fn backfill() -> (BoundMutation, BoundPolicy) {
    let lbl = cel_string(OWNER_NAME_LABEL);
    let match_constraints = MatchResources {
        resource_rules: vec![rule_for(GROUP, VERSION, RESOURCE, &["CREATE", "UPDATE"])],
    };
    // The conditions select exactly the objects the module backfills, so
    // that the mutation never runs as an empty patch (which would still
    // make the API server reinvoke the mutating chain).
    let conditions = vec![
        named(
            "without-spec-group",
            "!has(object.spec) || !has(object.spec.group)",
        ),
        named(
            "with-owner-label",
            &format!("has(object.metadata.labels) && {lbl} in object.metadata.labels"),
        ),
    ];
    let label = format!("string(object.metadata.labels[{lbl}])");
    let patch = format!(
        "has(object.spec) ? [{}] : [{}]",
        json_patch_op("add", "'/spec/group'", Some(&label)),
        json_patch_op("add", "'/spec'", Some(&format!("{{'group': {label}}}"))),
    );
    let mutation = BoundMutation::new(
        BACKFILL,
        RULE,
        "backfillGroupFromLabel: spec.group copied from the owner-name label where it is missing",
        MutatingPolicySpec {
            // A mutation that cannot be applied fails the write with its
            // error, rather than letting the object through unchanged to
            // be judged without the group the setting promises.
            failure_policy: "Fail".into(),
            match_constraints: match_constraints.clone(),
            match_conditions: conditions.clone(),
            variables: Vec::new(),
            mutations: vec![Mutation {
                patch_type: "JSONPatch".into(),
                json_patch: JsonPatch { expression: patch },
            }],
            // Idempotent (its conditions are false once it ran), so
            // running it again costs nothing; and a later mutation (a
            // webhook adding the label) is then backfilled too.
            reinvocation_policy: "IfNeeded".into(),
        },
    );
    let preview = BoundPolicy::new(
        &format!("{BACKFILL}-preview"),
        RULE,
        "roll-out preview of backfillGroupFromLabel: warns where the mutation would set spec.group",
        PolicySpec {
            match_conditions: conditions,
            ..PolicySpec::fail_closed(
                match_constraints,
                Vec::new(),
                vec![Validation {
                    expression: "false".into(),
                    message: Some(format!(
                        "MutatingAdmissionPolicy {BACKFILL} would set spec.group"
                    )),
                    message_expression: Some(format!(
                        "'MutatingAdmissionPolicy {BACKFILL} would set spec.group: ' + {label} + \
                         ' (the value of label {OWNER_NAME_LABEL})'"
                    )),
                    reason: None,
                }],
            )
        },
        &["Warn", "Audit"],
    );
    (mutation, preview)
}

/// Under `requireSpecGroup`, the module's warning on an UPDATE that leaves
/// a revision stored without `spec.group` without one.
fn kept_without_group_warning(variables: Vec<crate::model::NamedExpression>) -> BoundPolicy {
    BoundPolicy::new(
        "olm-guard-group-authorization-ungrouped",
        RULE,
        "warns on an update that leaves a ClusterObjectSet stored before spec.group without one",
        PolicySpec::fail_closed(
            MatchResources {
                resource_rules: vec![rule_for(GROUP, VERSION, RESOURCE, &["UPDATE"])],
            },
            variables,
            vec![Validation {
                expression: "!variables.keptWithoutGroup".into(),
                message: Some("this ClusterObjectSet has no spec.group".into()),
                message_expression: Some(format!(
                    "variables.labelGroup != '' ? 'this ClusterObjectSet has no spec.group and \
                     was authorized by its label {OWNER_NAME_LABEL}=\"' + variables.labelGroup + \
                     '\"; label-only revisions are accepted on UPDATE only, so that existing \
                     ones keep working: set spec.group: ' + variables.labelGroup + ' (or enable \
                     the setting backfillGroupFromLabel to copy the label automatically)' : \
                     variables.oldLabel != '' ? 'this ClusterObjectSet has no spec.group and \
                     the update removes its label {OWNER_NAME_LABEL}=\"' + variables.oldLabel + \
                     '\" (authorized as a revision of group \"' + variables.oldLabel + '\"), \
                     which leaves it in no revision group: set spec.group: ' + \
                     variables.oldLabel + ' to keep it in its group' : 'this ClusterObjectSet \
                     has neither spec.group nor label {OWNER_NAME_LABEL}, so there is no \
                     revision group to authorize against; the update is allowed because the \
                     object predates grouping: set spec.group to the revision group it belongs \
                     to (for revisions of a ClusterExtension, the extension\\'s name)'"
                )),
                reason: None,
            }],
        ),
        &["Warn"],
    )
}

/// `spec.group` in the ClusterObjectSet CRD, for clusters that adopt it,
/// in three patches applied in order, each safe on a cluster with stored
/// revisions: the property (revisions without it stay valid), then the
/// rule that keeps a group once set (a revision without one may still gain
/// one, as backfill does), then, once every stored revision has a group,
/// the rule that requires it. Each is written against the CRD the cluster
/// runs (`cluster`) or the shipped upstream copy, and only adds.
fn staged_schema_patches(cluster: Option<&[Json]>) -> Result<Vec<SchemaPatch>, GenerateError> {
    let crd_error = |problem: CrdError| GenerateError::Crd {
        rule: RULE,
        problem,
    };
    let mut crd = crate::crd::find(CRD, cluster).map_err(crd_error)?;
    let property = serde_json::json!({
        "type": "string",
        "minLength": 1,
        "description": "The revision group this ClusterObjectSet belongs to; once set it \
                        cannot change or be removed. Writing revisions of a group needs the \
                        verb manage on clusterobjectsets/groups with the group's name.",
    });
    let add_field = crd
        .add_property(&["spec"], "group", &property)
        .map_err(crd_error)?;
    let immutable = CrdRule {
        path: "spec",
        rule: "!has(oldSelf.group) || has(self.group) && self.group == oldSelf.group".into(),
        message: "spec.group is immutable: keep the group this ClusterObjectSet was given, and \
                  create a new ClusterObjectSet to add a revision to another group"
            .into(),
        message_expression: None,
    };
    let required = CrdRule {
        path: "spec",
        rule: "has(self.group)".into(),
        message: "spec.group is required: set spec.group to the name of the revision group this \
                  ClusterObjectSet belongs to (for revisions of a ClusterExtension, the \
                  extension's name)"
            .into(),
        message_expression: None,
    };
    let source = crd.source.clone();
    // Each stage is written against the CRD the stages before it leave.
    crd.apply(&add_field).map_err(crd_error)?;
    let keep = crd
        .add_rules(&["spec"], std::slice::from_ref(&immutable))
        .map_err(crd_error)?;
    crd.apply(&keep).map_err(crd_error)?;
    let require = crd
        .add_rules(&["spec"], std::slice::from_ref(&required))
        .map_err(crd_error)?;
    let stage =
        |n: u8, what: &str, step: String, patch: Vec<Json>, rules: Vec<CrdRule>| SchemaPatch {
            crd: CRD.into(),
            file: format!("{RULE}.crd-patch-{n}-{what}.json"),
            step,
            patch: Json::Array(patch),
            rules,
        };
    Ok(vec![
        stage(
            1,
            "field",
            format!(
                "first: adds spec.group (optional) to {source}; stored revisions stay valid{}",
                if add_field.is_empty() {
                    " (the CRD has it already: nothing to apply)"
                } else {
                    ""
                }
            ),
            add_field,
            Vec::new(),
        ),
        stage(
            2,
            "immutable",
            "second: a spec.group, once set, cannot change or be removed; a revision without one \
             may still gain one"
                .into(),
            keep,
            vec![immutable],
        ),
        stage(
            3,
            "required",
            "last, optional, once every stored ClusterObjectSet has spec.group (kubectl get \
             clusterobjectsets -o custom-columns=NAME:.metadata.name,GROUP:.spec.group shows \
             <none> for those without): every write needs spec.group"
                .into(),
            require,
            vec![required],
        ),
    ])
}
