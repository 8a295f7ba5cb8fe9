//! group-authorization, natively: `spec.group` required, immutable, agreeing
//! with the owner-name label, and `manage` on `clusterobjectsets/groups`
//! through the authorizer, for CREATE, UPDATE and DELETE, with the
//! module's messages. The same rules as
//! `olm_guard_rules::group_authorization` (the numbers are its README's).

use olm_guard_olm::cluster_object_set::{
    GROUP, GROUPS_SUBRESOURCE, MANAGE_VERB, OWNER_NAME_LABEL, RESOURCE,
};
use olm_guard_rules::group_authorization::{NOT_AUTHORIZED, Settings};

use super::{
    Check, CrdRule, Enforcement, GenerateError, Native, SchemaPatch, cel_string, readable,
    user_text,
};
use crate::model::{BoundPolicy, MatchResources, PolicySpec, Validation, named, rule_for};

/// The rule's name.
pub const RULE: &str = "group-authorization";

/// Every check of the rule and where it is enforced.
pub const CHECKS: &[Check] = &[
    Check::new(
        "spec.group a non-empty string, required and immutable, in the CRD's schema",
        Enforcement::Schema,
        "x-kubernetes-validations on spec (has(self.group)) and spec.group (self == oldSelf); \
         apply once every stored ClusterObjectSet has a group, since the schema has no \
         exception for older objects",
    ),
    Check::new(
        "spec.group required on CREATE (rule 1)",
        Enforcement::Policy,
        "the request alone decides it; the CRD patch adds the same rule for clusters that \
         store ClusterObjectSets without this policy",
    ),
    Check::new(
        "spec.group immutable (rule 2)",
        Enforcement::Policy,
        "oldObject carries the stored group; also a CRD transition rule (self == oldSelf)",
    ),
    Check::new(
        "owner-name label agrees with spec.group (rule 3)",
        Enforcement::Policy,
        "both are in the object",
    ),
    Check::new(
        "manage on clusterobjectsets/groups for the group (rule 4), and for the stored group \
         when an update moves a revision",
        Enforcement::Policy,
        "CEL's authorizer library asks the API server's authorizer the same question as the \
         module's SubjectAccessReview",
    ),
    Check::new(
        "DELETE needs manage on the stored group (rule 5)",
        Enforcement::Policy,
        "oldObject carries the stored group",
    ),
    Check::new(
        "UPDATE of a revision stored without spec.group: allowed with a warning, authorized by \
         its labels",
        Enforcement::Policy,
        "a second policy with a Warn binding gives the module's warning",
    ),
    Check::new(
        "backfillGroupFromLabel: copy the owner-name label into a missing spec.group (rule 6)",
        Enforcement::ModuleOnly,
        "a mutation: a ValidatingAdmissionPolicy cannot change the object (a \
         MutatingAdmissionPolicy could, but it is beta and off by default before Kubernetes \
         1.34)",
    ),
];

/// The policies for `settings`.
pub fn generate(settings: &Settings) -> Result<Native, GenerateError> {
    if settings.backfill_group_from_label {
        return Err(GenerateError::NotNative {
            rule: RULE,
            setting: "backfillGroupFromLabel: true",
            reason: "filling spec.group from the label is a mutation; run the module, or leave \
                     the setting off and have clients set spec.group",
        });
    }
    let lbl = cel_string(OWNER_NAME_LABEL);
    let manage = |group: &str| {
        format!(
            "authorizer.group({}).resource({}).subresource({}).name({group}).check({}).allowed()",
            cel_string(GROUP),
            cel_string(RESOURCE),
            cel_string(GROUPS_SUBRESOURCE),
            cel_string(MANAGE_VERB),
        )
    };
    let not_authorized = |group: &str, note: &str| {
        format!(
            "{} + ': ' + {} + ' may not manage group \"' + {group} + '\"' + {note} + '; a cluster \
             admin grants it with a ClusterRole rule {{apiGroups: [{GROUP}], resources: \
             [{RESOURCE}/{GROUPS_SUBRESOURCE}], resourceNames: [' + {group} + '], verbs: \
             [{MANAGE_VERB}]}} bound to this user by a ClusterRoleBinding'",
            cel_string(NOT_AUTHORIZED),
            user_text(),
        )
    };
    let variables = vec![
        // spec.group as written (any type), null when absent.
        named(
            "newGroup",
            "request.operation != 'DELETE' && has(object.spec) && object.spec != null && \
             has(object.spec.group) ? object.spec.group : null",
        ),
        // spec.group when it is a non-empty string, else ''.
        named(
            "group",
            "type(variables.newGroup) == string ? variables.newGroup : ''",
        ),
        // The stored object's spec.group when a non-empty string, else ''.
        named(
            "oldGroup",
            "request.operation != 'CREATE' && oldObject != null && has(oldObject.spec) && \
             oldObject.spec != null && has(oldObject.spec.group) && \
             type(oldObject.spec.group) == string ? oldObject.spec.group : ''",
        ),
        // The owner-name label as written, null when absent.
        named(
            "label",
            &format!(
                "request.operation != 'DELETE' && has(object.metadata) && \
                 object.metadata != null && has(object.metadata.labels) && \
                 object.metadata.labels != null && {lbl} in object.metadata.labels ? \
                 object.metadata.labels[{lbl}] : null"
            ),
        ),
        // The label when a non-empty string, else ''.
        named(
            "labelGroup",
            "type(variables.label) == string ? variables.label : ''",
        ),
        named(
            "oldLabel",
            &format!(
                "request.operation != 'CREATE' && oldObject != null && \
                 has(oldObject.metadata) && oldObject.metadata != null && \
                 has(oldObject.metadata.labels) && oldObject.metadata.labels != null && \
                 {lbl} in oldObject.metadata.labels && \
                 type(oldObject.metadata.labels[{lbl}]) == string ? \
                 oldObject.metadata.labels[{lbl}] : ''"
            ),
        ),
        // An UPDATE that leaves a revision stored before grouping without a
        // group: allowed, authorized by its labels, with a warning.
        named(
            "legacyUpdate",
            "request.operation == 'UPDATE' && \
             (variables.newGroup == null || variables.newGroup == '') && \
             oldObject != null && (!has(oldObject.spec) || oldObject.spec == null || \
             !has(oldObject.spec.group) || oldObject.spec.group == null || \
             oldObject.spec.group == '')",
        ),
        // The group a stored revision counts in: spec.group, else its label.
        named(
            "storedGroup",
            "variables.oldGroup != '' ? variables.oldGroup : variables.oldLabel",
        ),
    ];
    let missing = format!(
        "'spec.group is required: ' + (variables.oldGroup != '' ? \
         'this ClusterObjectSet belongs to group \"' + variables.oldGroup + \
         '\" and the group cannot change: keep spec.group: ' + variables.oldGroup : \
         variables.labelGroup != '' ? 'this ClusterObjectSet has label {OWNER_NAME_LABEL}=\"' + \
         variables.labelGroup + '\": set spec.group: ' + variables.labelGroup + \
         ' (or enable the setting backfillGroupFromLabel to copy the label automatically)' : \
         'set spec.group to the name of the revision group this ClusterObjectSet belongs to \
         (for revisions of a ClusterExtension, the extension\\'s name)')"
    );
    let invalid = "'spec.group is ' + (type(variables.newGroup) == int || \
                   type(variables.newGroup) == double ? 'a number (' + \
                   string(variables.newGroup) + ')' : type(variables.newGroup) == list ? \
                   'a list' : type(variables.newGroup) == map ? 'a map' : \
                   type(variables.newGroup) == bool ? 'a boolean' : 'not a string') + \
                   '; it must be a non-empty string: ' + (variables.oldGroup != '' ? \
                   'keep spec.group: ' + variables.oldGroup : \
                   'write the group\\'s name as a string, e.g. group: \"my-extension\"')";
    let validations = vec![
        // What the module cannot read, it refuses.
        readable("ClusterObjectSet"),
        // Rule 1.
        Validation {
            expression: "request.operation == 'DELETE' || variables.legacyUpdate || \
                         variables.group != ''"
                .into(),
            message: Some("spec.group is required".into()),
            message_expression: Some(format!(
                "variables.newGroup == null || variables.newGroup == '' ? {missing} : {invalid}"
            )),
            reason: Some("Invalid".into()),
        },
        // Rule 2.
        Validation {
            expression: "variables.oldGroup == '' || variables.group == '' || \
                         variables.group == variables.oldGroup"
                .into(),
            message: Some("spec.group is immutable".into()),
            message_expression: Some(
                "'spec.group is immutable: this ClusterObjectSet belongs to group \"' + \
                 variables.oldGroup + '\" and the update would move it to \"' + \
                 variables.group + '\"; keep spec.group: ' + variables.oldGroup + \
                 ', and create a new ClusterObjectSet to add a revision to group \"' + \
                 variables.group + '\"'"
                    .into(),
            ),
            reason: Some("Invalid".into()),
        },
        // Rule 3.
        Validation {
            expression: "variables.group == '' || variables.label == null || \
                         variables.label == variables.group"
                .into(),
            message: Some(format!(
                "label {OWNER_NAME_LABEL} disagrees with spec.group"
            )),
            message_expression: Some(format!(
                "'label {OWNER_NAME_LABEL} is \"' + string(variables.label) + \
                 '\" but spec.group is \"' + variables.group + '\": controllers that still \
                 group revisions by the label would put this revision into group \"' + \
                 string(variables.label) + '\"; set the label to \"' + variables.group + \
                 '\" or remove it'"
            )),
            reason: Some("Invalid".into()),
        },
        // Rule 4 on CREATE and UPDATE, rule 5 on DELETE.
        Validation {
            expression: format!(
                "request.operation == 'DELETE' ? (variables.oldGroup == '' || {}) : \
                 (variables.group == '' || {})",
                manage("variables.oldGroup"),
                manage("variables.group"),
            ),
            message: Some(NOT_AUTHORIZED.into()),
            message_expression: Some(format!(
                "request.operation == 'DELETE' ? {} : {}",
                not_authorized("variables.oldGroup", "''"),
                not_authorized("variables.group", "''"),
            )),
            reason: Some("Forbidden".into()),
        },
        // Rule 2's second half: moving a revision out of its stored group
        // needs the grant on that group too.
        Validation {
            expression: format!(
                "request.operation != 'UPDATE' || variables.group == '' || \
                 variables.storedGroup == '' || variables.storedGroup == variables.group || {}",
                manage("variables.storedGroup")
            ),
            message: Some(NOT_AUTHORIZED.into()),
            message_expression: Some(not_authorized(
                "variables.storedGroup",
                &format!(
                    "' (the group this ClusterObjectSet is stored in, taken from ' + \
                     (variables.oldGroup != '' ? 'its spec.group' : 'the label it is stored \
                     with {OWNER_NAME_LABEL}=\"' + variables.oldLabel + '\"') + '; the update \
                     would move it to group \"' + variables.group + '\", which needs the grant \
                     on both groups)'"
                ),
            )),
            reason: Some("Forbidden".into()),
        },
        // Revisions stored before grouping: each label names a group to
        // authorize, the new one first.
        Validation {
            expression: format!(
                "!variables.legacyUpdate || variables.labelGroup == '' || {}",
                manage("variables.labelGroup")
            ),
            message: Some(NOT_AUTHORIZED.into()),
            message_expression: Some(not_authorized(
                "variables.labelGroup",
                &format!(
                    "' (this ClusterObjectSet has no spec.group; its group is taken from its \
                     label {OWNER_NAME_LABEL}=\"' + variables.labelGroup + '\")'"
                ),
            )),
            reason: Some("Forbidden".into()),
        },
        Validation {
            expression: format!(
                "!variables.legacyUpdate || variables.oldLabel == '' || \
                 variables.oldLabel == variables.labelGroup || {}",
                manage("variables.oldLabel")
            ),
            message: Some(NOT_AUTHORIZED.into()),
            message_expression: Some(not_authorized(
                "variables.oldLabel",
                &format!(
                    "' (this ClusterObjectSet has no spec.group; its group is taken from the \
                     label it is stored with {OWNER_NAME_LABEL}=\"' + variables.oldLabel + \
                     '\")'"
                ),
            )),
            reason: Some("Forbidden".into()),
        },
    ];
    let match_constraints = MatchResources {
        resource_rules: vec![rule_for(GROUP, RESOURCE, &["CREATE", "UPDATE", "DELETE"])],
    };
    let deny = BoundPolicy::new(
        "olm-guard-group-authorization",
        RULE,
        "ClusterObjectSet spec.group: required, immutable, agreeing with the owner-name label, \
         and manage on clusterobjectsets/groups for the group",
        PolicySpec::fail_closed(match_constraints.clone(), variables.clone(), validations),
        &["Deny"],
    );
    let warn = BoundPolicy::new(
        "olm-guard-group-authorization-ungrouped",
        RULE,
        "warns on an update that leaves a ClusterObjectSet stored before spec.group without one",
        PolicySpec::fail_closed(
            MatchResources {
                resource_rules: vec![rule_for(GROUP, RESOURCE, &["UPDATE"])],
            },
            variables,
            vec![Validation {
                expression: "!variables.legacyUpdate".into(),
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
    );
    Ok(Native {
        rule: RULE,
        policies: vec![deny, warn],
        schema_patches: vec![schema_patch()],
        checks: CHECKS,
    })
}

/// `spec.group` in the ClusterObjectSet CRD (operator-framework
/// operator-controller `helm/olmv1/base/operator-controller/crd/experimental/
/// olm.operatorframework.io_clusterobjectsets.yaml`, one version, v1, whose
/// spec has no `group` yet and no rules of its own): a non-empty string,
/// required, immutable once set. Objects created before it exist without a
/// group: apply it once every ClusterObjectSet has one.
fn schema_patch() -> SchemaPatch {
    let required = CrdRule {
        path: "spec",
        rule: "has(self.group)".into(),
        message: "spec.group is required: set spec.group to the name of the revision group this \
                  ClusterObjectSet belongs to (for revisions of a ClusterExtension, the \
                  extension's name)"
            .into(),
        message_expression: None,
    };
    let immutable = CrdRule {
        path: "spec.group",
        rule: "self == oldSelf".into(),
        message: "spec.group is immutable: keep the group this ClusterObjectSet was created \
                  with, and create a new ClusterObjectSet to add a revision to another group"
            .into(),
        message_expression: None,
    };
    let spec = "/spec/versions/0/schema/openAPIV3Schema/properties/spec";
    SchemaPatch {
        crd: format!("{RESOURCE}.{GROUP}"),
        file: format!("{RULE}.crd-patch.json"),
        patch: serde_json::json!([
            {"op": "add", "path": format!("{spec}/properties/group"), "value": {
                "type": "string",
                "minLength": 1,
                "description": "The revision group this ClusterObjectSet belongs to: \
                                required and immutable; managing a group needs the verb \
                                manage on clusterobjectsets/groups with the group's name.",
                "x-kubernetes-validations": [immutable.to_json()],
            }},
            {"op": "add", "path": format!("{spec}/x-kubernetes-validations"),
             "value": [required.to_json()]},
        ]),
        rules: vec![required, immutable],
    }
}
