//! group-authorization: who may write revisions of a ClusterObjectSet group.
//!
//! Seed 000 makes `spec.group` the grouping of revisions and gates it with
//! RBAC: `manage` on `clusterobjectsets/groups` named after the group. Without
//! the gate, anyone who may create a ClusterObjectSet can inject a revision
//! into another extension's group and take over its objects (domain.md §2.4).
//!
//! Contract rules (contracts.md, group-authorization):
//! 1. `spec.group` must be a non-empty string.
//! 2. UPDATE: a non-empty `oldObject.spec.group` cannot change.
//! 3. The owner-name label, when present, must equal `spec.group`.
//! 4. The requester must be authorized to `manage` `clusterobjectsets/groups`
//!    named after the group (cluster-scoped).
//! 5. DELETE: the same check on `oldObject.spec.group`, when it has one.
//! 6. `backfillGroupFromLabel`: a CREATE/UPDATE without `spec.group` but with
//!    the label gets `spec.group` from the label, then rules 1-4 apply.
//!
//! An UPDATE is judged by what it changes. An object stored without
//! `spec.group` (it predates grouping) that the update leaves without one is
//! not denied by rule 1, or controllers could no longer archive it or remove
//! its finalizers: rule 4 is asked for the group its owner-name label names
//! instead (old and new label, so a relabel cannot move it out of a group
//! the requester may not manage), and a warning asks for `spec.group`. With
//! neither a group nor a label there is no group to protect: it is accepted
//! with a warning, as rule 5 accepts its DELETE.
//!
//! An UPDATE that gives an object a group other than the one it is stored
//! in (`spec.group` when a non-empty string, else the owner-name label) also
//! asks rule 4 for the stored group: managing the new group alone must not
//! be enough to pull another group's revision into it.

use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_core::{
    AdmissionRequest, Cluster, ClusterExt, Operation, PolicySettings, UserInfo, Verdict,
};
use olm_guard_olm::cluster_object_set::{
    ClusterObjectSet, GROUP, GROUPS_SUBRESOURCE, KIND, MANAGE_VERB, OWNER_NAME_LABEL, RESOURCE,
    SpecGroup, describe_value, with_spec_field,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The seed's ValidatingAdmissionPolicy message; kept verbatim so that users
/// and alerts moving from the VAP recognise it.
pub const NOT_AUTHORIZED: &str = "user is not authorized to manage revisions in this group";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// Migration aid (seed 000, "Backfill spec.group from the existing label
    /// value"): copy the owner-name label into a missing `spec.group`.
    pub backfill_group_from_label: bool,
}

impl PolicySettings for Settings {}

pub fn validate(request: &AdmissionRequest, settings: &Settings, cluster: &dyn Cluster) -> Verdict {
    if !request.targets(GROUP, KIND) {
        return Verdict::accept();
    }
    match request.operation {
        Operation::Create | Operation::Update => validate_write(request, settings, cluster),
        Operation::Delete => validate_delete(request, cluster),
        Operation::Connect => Verdict::accept(),
    }
}

/// Rules 1-4 and 6 for CREATE and UPDATE.
fn validate_write(
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Verdict {
    let cos = match ClusterObjectSet::from_object(&request.object) {
        Ok(cos) => cos,
        Err(problem) => {
            return Verdict::bad_request(format!("cannot read the ClusterObjectSet: {problem}"));
        }
    };
    let old_group = match request.operation {
        Operation::Update => spec_group_of(&request.old_object),
        _ => None,
    };

    let (group, backfilled) = match (cos.spec_group(), cos.owner_label()) {
        (SpecGroup::Name(group), _) => (group, false),
        (SpecGroup::Unset, Some(label)) if settings.backfill_group_from_label => (label, true),
        (SpecGroup::Unset, label) => {
            if request.operation == Operation::Update
                && let Some(old) = stored_without_group(&request.old_object)
            {
                return update_without_group(cluster, &request.user_info, label, old.owner_label());
            }
            return Verdict::deny(missing_group_message(label, old_group));
        }
        (SpecGroup::Invalid(value), _) => {
            return Verdict::deny(invalid_group_message(value, old_group));
        }
    };

    if let Some(old) = old_group.filter(|old| *old != group) {
        return Verdict::deny(format!(
            "spec.group is immutable: this ClusterObjectSet belongs to group \"{old}\" and the \
             update would move it to \"{group}\"; keep spec.group: {old}, and create a new \
             ClusterObjectSet to add a revision to group \"{group}\""
        ));
    }

    if let Some(label) = cos.metadata.label(OWNER_NAME_LABEL).filter(|l| *l != group) {
        return Verdict::deny(format!(
            "label {OWNER_NAME_LABEL} is \"{label}\" but spec.group is \"{group}\": controllers \
             that still group revisions by the label would put this revision into group \
             \"{label}\"; set the label to \"{group}\" or remove it"
        ));
    }

    if let Err(denial) = require_manage(cluster, &request.user_info, group, "") {
        return denial;
    }

    // Moving a revision into a group takes it out of the one it is stored
    // in: whoever may write the new group must not be able to pull another
    // group's revision into it (a label-only object gaining spec.group, or a
    // backfill from a changed label).
    if request.operation == Operation::Update
        && let Some((stored, source)) =
            stored_group(&request.old_object).filter(|(g, _)| *g != group)
    {
        let note = format!(
            " (the group this ClusterObjectSet is stored in, taken from {source}; the update \
             would move it to group \"{group}\", which needs the grant on both groups)"
        );
        if let Err(denial) = require_manage(cluster, &request.user_info, stored, &note) {
            return denial;
        }
    }

    if !backfilled {
        return Verdict::accept();
    }
    match with_spec_field(&request.object, "group", Value::String(group.to_string())) {
        Some(object) => Verdict::mutate(object).with_warning(format!(
            "spec.group was set to \"{group}\" from label {OWNER_NAME_LABEL} \
             (setting backfillGroupFromLabel)"
        )),
        // from_object accepted the object, so it and its spec are maps.
        None => Verdict::bad_request("cannot set spec.group: spec is not a map of fields"),
    }
}

/// The stored object of an UPDATE when it is readable and has no
/// `spec.group` at all: an object that predates grouping. A `spec.group` of
/// the wrong type, or an unreadable old object, is no such proof.
fn stored_without_group(old_object: &Value) -> Option<ClusterObjectSet> {
    ClusterObjectSet::from_object(old_object)
        .ok()
        .filter(|old| old.spec_group() == SpecGroup::Unset)
}

/// An UPDATE that leaves an object without `spec.group` as it was stored.
/// Rule 4 is asked for each group its owner-name label names, before and
/// after: the new label so that a forged one cannot be used, the old one so
/// that a revision cannot be relabelled out of a group the requester may
/// not manage.
fn update_without_group(
    cluster: &dyn Cluster,
    user: &UserInfo,
    label: Option<&str>,
    old_label: Option<&str>,
) -> Verdict {
    let mut labels: Vec<&str> = label.into_iter().chain(old_label).collect();
    labels.dedup();
    for group in labels {
        let whose = if label == Some(group) {
            "its label"
        } else {
            "the label it is stored with"
        };
        let note = format!(
            " (this ClusterObjectSet has no spec.group; its group is taken from {whose} \
             {OWNER_NAME_LABEL}=\"{group}\")"
        );
        if let Err(denial) = require_manage(cluster, user, group, &note) {
            return denial;
        }
    }
    let warning = match (label, old_label) {
        (Some(label), _) => format!(
            "this ClusterObjectSet has no spec.group and was authorized by its label \
             {OWNER_NAME_LABEL}=\"{label}\"; label-only revisions are accepted on UPDATE only, \
             so that existing ones keep working: set spec.group: {label} (or enable the setting \
             backfillGroupFromLabel to copy the label automatically)"
        ),
        (None, Some(old)) => format!(
            "this ClusterObjectSet has no spec.group and the update removes its label \
             {OWNER_NAME_LABEL}=\"{old}\" (authorized as a revision of group \"{old}\"), which \
             leaves it in no revision group: set spec.group: {old} to keep it in its group"
        ),
        (None, None) => format!(
            "this ClusterObjectSet has neither spec.group nor label {OWNER_NAME_LABEL}, so there \
             is no revision group to authorize against; the update is allowed because the object \
             predates grouping: set spec.group to the revision group it belongs to (for \
             revisions of a ClusterExtension, the extension's name)"
        ),
    };
    Verdict::accept().with_warning(warning)
}

/// Rule 5: deleting a revision is managing its group. Objects that never
/// had `spec.group` are not gated: they belong to no group to protect.
fn validate_delete(request: &AdmissionRequest, cluster: &dyn Cluster) -> Verdict {
    let Some(group) = spec_group_of(&request.old_object) else {
        return Verdict::accept();
    };
    match require_manage(cluster, &request.user_info, group, "") {
        Ok(()) => Verdict::accept(),
        Err(denial) => denial,
    }
}

/// Rule 4: one SubjectAccessReview, exactly the seed's CEL
/// `authorizer.group(..).resource('clusterobjectsets').subresource('groups')
/// .name(group).check('manage')`, with no namespace: groups are cluster-wide.
/// `note` follows the group's name in a denial (where the group came from).
fn require_manage(
    cluster: &dyn Cluster,
    user: &UserInfo,
    group: &str,
    note: &str,
) -> Result<(), Verdict> {
    let attributes = ResourceAttributes::new(MANAGE_VERB, GROUP, RESOURCE)
        .subresource(GROUPS_SUBRESOURCE)
        .name(group);
    match cluster.authorized(user, attributes) {
        Ok(true) => Ok(()),
        Ok(false) => Err(Verdict::deny(format!(
            "{NOT_AUTHORIZED}: {} may not manage group \"{group}\"{note}; a cluster admin grants it \
             with a ClusterRole rule {{apiGroups: [{GROUP}], resources: \
             [{RESOURCE}/{GROUPS_SUBRESOURCE}], resourceNames: [{group}], verbs: [{MANAGE_VERB}]}} \
             bound to this user by a ClusterRoleBinding",
            user.describe()
        ))),
        Err(error) => Err(Verdict::context_unavailable(
            &format!(
                "whether {} may manage group \"{group}\" (kubernetes/can_i)",
                user.describe()
            ),
            error,
        )),
    }
}

/// The group a stored object counts in, with where it was read from:
/// `spec.group` when it is a non-empty string, else the owner-name label.
/// Read from the raw JSON so that an old object the typed reader refuses
/// still names its group.
fn stored_group(old_object: &Value) -> Option<(&str, String)> {
    if let Some(group) = spec_group_of(old_object) {
        return Some((group, "its spec.group".to_string()));
    }
    old_object
        .get("metadata")
        .and_then(|metadata| metadata.get("labels"))
        .and_then(|labels| labels.get(OWNER_NAME_LABEL))
        .and_then(Value::as_str)
        .filter(|label| !label.is_empty())
        .map(|label| {
            let source = format!("the label it is stored with {OWNER_NAME_LABEL}=\"{label}\"");
            (label, source)
        })
}

/// `spec.group` of a raw object when it is a non-empty string: the old
/// object of an UPDATE or DELETE, which the API server has already stored.
fn spec_group_of(object: &Value) -> Option<&str> {
    object
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .filter(|group| !group.is_empty())
}

fn missing_group_message(label: Option<&str>, old_group: Option<&str>) -> String {
    let fix = match (old_group, label) {
        (Some(old), _) => format!(
            "this ClusterObjectSet belongs to group \"{old}\" and the group cannot change: \
             keep spec.group: {old}"
        ),
        (None, Some(label)) => format!(
            "this ClusterObjectSet has label {OWNER_NAME_LABEL}=\"{label}\": set spec.group: \
             {label} (or enable the setting backfillGroupFromLabel to copy the label \
             automatically)"
        ),
        (None, None) => "set spec.group to the name of the revision group this \
                         ClusterObjectSet belongs to (for revisions of a ClusterExtension, the \
                         extension's name)"
            .to_string(),
    };
    format!("spec.group is required: {fix}")
}

fn invalid_group_message(value: &Value, old_group: Option<&str>) -> String {
    let fix = match old_group {
        Some(old) => format!("keep spec.group: {old}"),
        None => "write the group's name as a string, e.g. group: \"my-extension\"".to_string(),
    };
    format!(
        "spec.group is {}; it must be a non-empty string: {fix}",
        describe_value(value)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Probe, admission_request, assert_denied, has_warning, snapshot};
    use olm_guard_core::NoCluster;
    use olm_guard_snapshot::Snapshot;
    use serde_json::json;

    /// ClusterRoles and bindings in the shape of seed 000's examples.
    const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: widget-operator-revisions}
rules:
- apiGroups: [olm.operatorframework.io]
  resources: [clusterobjectsets/groups]
  resourceNames: [widget-operator]
  verbs: [manage]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-widget-operator-revisions}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-operator-revisions}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: all-revision-groups}
rules:
- apiGroups: [olm.operatorframework.io]
  resources: [clusterobjectsets/groups]
  verbs: [manage]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: installer-all-revision-groups}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: all-revision-groups}
subjects:
- {kind: ServiceAccount, name: installer, namespace: olmv1-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-all-groups-in-a-namespace, namespace: olmv1-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: all-revision-groups}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
"#;

    fn cluster() -> Snapshot {
        snapshot(&[RBAC])
    }

    fn user(name: &str, groups: &[&str]) -> Value {
        json!({"username": name, "groups": groups})
    }

    fn alice() -> Value {
        user("alice", &["system:authenticated"])
    }

    fn installer() -> Value {
        user(
            "system:serviceaccount:olmv1-system:installer",
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:olmv1-system",
            ],
        )
    }

    fn cos(name: &str, spec: Value, labels: Value) -> Value {
        json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterObjectSet",
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
        })
    }

    fn widget(spec_extra: Value) -> Value {
        let mut spec = json!({"revision": 1, "lifecycleState": "Active",
                              "collisionProtection": "Prevent", "group": "widget-operator"});
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
            spec.extend(extra.clone());
        }
        cos("widget-operator-1", spec, json!({}))
    }

    fn request(operation: &str, user: Value, object: Value, old_object: Value) -> AdmissionRequest {
        admission_request(
            [GROUP, "v1", KIND],
            RESOURCE,
            json!({
                "name": "widget-operator-1",
                "operation": operation,
                "userInfo": user,
                "object": object,
                "oldObject": old_object,
            }),
        )
    }

    fn create(user: Value, object: Value) -> AdmissionRequest {
        request("CREATE", user, object, Value::Null)
    }

    fn run(request: &AdmissionRequest) -> Verdict {
        validate(request, &Settings::default(), &cluster())
    }

    fn backfill() -> Settings {
        Settings {
            backfill_group_from_label: true,
        }
    }

    /// Records the SubjectAccessReviews a rule asks for, allowing each.
    fn recorder() -> Probe<'static> {
        Probe::new(&NoCluster).allowing_all()
    }

    /// The verdict on `request` when every SubjectAccessReview is allowed,
    /// and the groups asked about, in order.
    fn asked(request: &AdmissionRequest) -> (Verdict, Vec<Option<String>>) {
        let recorder = recorder();
        let verdict = validate(request, &Settings::default(), &recorder);
        (verdict, recorder.reviewed_names())
    }

    #[test]
    fn other_kinds_subresources_and_connect_are_not_looked_at() {
        let mut pod = create(alice(), json!({"spec": {}}));
        pod.kind.group = String::new();
        pod.kind.kind = "Pod".into();
        assert!(validate(&pod, &Settings::default(), &NoCluster).allowed);

        let mut status = create(alice(), cos("x", json!({}), json!({})));
        status.sub_resource = Some("status".into());
        assert!(validate(&status, &Settings::default(), &NoCluster).allowed);

        let connect = request("CONNECT", alice(), Value::Null, Value::Null);
        assert!(validate(&connect, &Settings::default(), &NoCluster).allowed);
    }

    #[test]
    fn rule1_a_group_is_required() {
        let missing = run(&create(
            alice(),
            cos("x", json!({"revision": 1}), json!({})),
        ));
        assert_denied(&missing, &["spec.group is required", "set spec.group"]);
        assert_eq!(missing.code, Some(403));

        let empty = run(&create(alice(), widget(json!({"group": ""}))));
        assert_denied(&empty, &["spec.group is required"]);

        let null_spec = run(&create(alice(), cos("x", Value::Null, json!({}))));
        assert_denied(&null_spec, &["spec.group is required"]);
    }

    #[test]
    fn rule1_a_group_of_another_type_is_named() {
        let number = run(&create(alice(), widget(json!({"group": 7}))));
        assert_denied(&number, &["spec.group is a number (7)", "non-empty string"]);
        let list = run(&create(alice(), widget(json!({"group": ["a"]}))));
        assert_denied(&list, &["spec.group is a list"]);
    }

    #[test]
    fn rule1_label_only_objects_are_told_about_the_label_and_the_setting() {
        let legacy = cos(
            "widget-operator-1",
            json!({"revision": 1}),
            json!({OWNER_NAME_LABEL: "widget-operator"}),
        );
        let verdict = run(&create(alice(), legacy));
        assert_denied(
            &verdict,
            &[
                "spec.group is required",
                "set spec.group: widget-operator",
                "backfillGroupFromLabel",
            ],
        );
    }

    #[test]
    fn unreadable_objects_are_bad_requests_naming_the_field() {
        let verdict = run(&create(alice(), json!({"spec": "group: x"})));
        assert_denied(&verdict, &["spec is a string"]);
        assert_eq!(verdict.code, Some(400));
        let verdict = run(&create(alice(), json!([1, 2])));
        assert_denied(&verdict, &["the object is a list"]);
        let verdict = run(&create(alice(), Value::Null));
        assert_denied(&verdict, &["the object is null"]);
    }

    #[test]
    fn rule2_the_group_cannot_change() {
        let old = widget(json!({}));
        let new = widget(json!({"group": "gadget-operator"}));
        let verdict = run(&request("UPDATE", alice(), new, old.clone()));
        assert_denied(
            &verdict,
            &[
                "spec.group is immutable",
                "\"widget-operator\"",
                "\"gadget-operator\"",
            ],
        );

        let removed = widget(json!({"group": null}));
        let verdict = run(&request("UPDATE", alice(), removed, old.clone()));
        assert_denied(
            &verdict,
            &["spec.group is required", "keep spec.group: widget-operator"],
        );

        let unchanged = run(&request("UPDATE", alice(), old.clone(), old));
        assert!(unchanged.allowed, "{unchanged:?}");
    }

    #[test]
    fn rule2_an_old_object_without_a_group_may_gain_one() {
        let old = cos("widget-operator-1", json!({"revision": 1}), json!({}));
        let verdict = run(&request("UPDATE", alice(), widget(json!({})), old));
        assert!(verdict.allowed, "{verdict:?}");
    }

    #[test]
    fn rule3_the_owner_label_must_agree_with_the_group() {
        let forged = cos(
            "widget-operator-1",
            json!({"group": "widget-operator", "revision": 1}),
            json!({OWNER_NAME_LABEL: "cert-manager"}),
        );
        let verdict = run(&create(alice(), forged));
        assert_denied(
            &verdict,
            &[
                OWNER_NAME_LABEL,
                "\"cert-manager\"",
                "\"widget-operator\"",
                "remove it",
            ],
        );

        let agreeing = cos(
            "widget-operator-1",
            json!({"group": "widget-operator", "revision": 1}),
            json!({OWNER_NAME_LABEL: "widget-operator"}),
        );
        assert!(run(&create(alice(), agreeing)).allowed);
    }

    #[test]
    fn rule4_asks_exactly_the_seeds_authorizer_question() {
        let recorder = recorder();
        let verdict = validate(
            &create(alice(), widget(json!({}))),
            &Settings::default(),
            &recorder,
        );
        assert!(verdict.allowed);
        let reviews = recorder.reviews.borrow();
        assert_eq!(reviews.len(), 1);
        let review = &reviews[0].subject_access_review;
        assert_eq!(review.user, "alice");
        assert_eq!(
            review.groups,
            Some(vec!["system:authenticated".to_string()])
        );
        let attributes = &review.resource_attributes;
        assert_eq!(attributes.verb, "manage");
        assert_eq!(
            attributes.group.as_deref(),
            Some("olm.operatorframework.io")
        );
        assert_eq!(attributes.resource, "clusterobjectsets");
        assert_eq!(attributes.subresource.as_deref(), Some("groups"));
        assert_eq!(attributes.name.as_deref(), Some("widget-operator"));
        assert_eq!(attributes.namespace, None);
    }

    #[test]
    fn rule4_a_grant_by_resource_name_covers_only_that_group() {
        assert!(run(&create(alice(), widget(json!({})))).allowed);
        let other = run(&create(alice(), widget(json!({"group": "cert-manager"}))));
        assert_denied(
            &other,
            &[
                NOT_AUTHORIZED,
                "user \"alice\"",
                "group \"cert-manager\"",
                "resourceNames: [cert-manager]",
            ],
        );
        assert_eq!(other.code, Some(403));
    }

    #[test]
    fn rule4_the_extension_service_account_manages_every_group() {
        for group in ["widget-operator", "cert-manager", "anything"] {
            let verdict = run(&create(installer(), widget(json!({"group": group}))));
            assert!(verdict.allowed, "{group}: {verdict:?}");
        }
        // A ServiceAccount of the same name in another namespace is another subject.
        let impostor = user(
            "system:serviceaccount:default:installer",
            &["system:serviceaccounts"],
        );
        assert_denied(
            &run(&create(impostor, widget(json!({})))),
            &[NOT_AUTHORIZED],
        );
    }

    #[test]
    fn rule4_system_masters_is_always_authorized() {
        let admin = user(
            "kubernetes-admin",
            &["system:masters", "system:authenticated"],
        );
        assert!(run(&create(admin, widget(json!({"group": "any-group"})))).allowed);
    }

    #[test]
    fn rule4_a_namespaced_role_binding_grants_nothing_cluster_wide() {
        let bob = user("bob", &["system:authenticated"]);
        assert_denied(
            &run(&create(bob, widget(json!({})))),
            &[NOT_AUTHORIZED, "user \"bob\""],
        );
    }

    #[test]
    fn rule4_an_unanswered_review_fails_closed() {
        let verdict = validate(
            &create(alice(), widget(json!({}))),
            &Settings::default(),
            &NoCluster,
        );
        assert_denied(
            &verdict,
            &[
                "kubernetes/can_i",
                "fails closed",
                "group \"widget-operator\"",
            ],
        );
        assert_eq!(verdict.code, Some(500));
    }

    #[test]
    fn rule4_updates_are_checked_too() {
        let archived = widget(json!({"group": "cert-manager", "lifecycleState": "Archived"}));
        let old = widget(json!({"group": "cert-manager"}));
        assert_denied(
            &run(&request("UPDATE", alice(), archived, old)),
            &[NOT_AUTHORIZED],
        );
    }

    #[test]
    fn rule5_deleting_a_revision_needs_the_grant_on_its_group() {
        let theirs = widget(json!({"group": "cert-manager"}));
        let verdict = run(&request("DELETE", alice(), Value::Null, theirs));
        assert_denied(&verdict, &[NOT_AUTHORIZED, "group \"cert-manager\""]);

        let own = run(&request("DELETE", alice(), Value::Null, widget(json!({}))));
        assert!(own.allowed, "{own:?}");
    }

    #[test]
    fn rule5_objects_without_a_group_are_deleted_unchecked() {
        let legacy = cos(
            "x",
            json!({"revision": 1}),
            json!({OWNER_NAME_LABEL: "cert-manager"}),
        );
        let verdict = validate(
            &request("DELETE", alice(), Value::Null, legacy),
            &Settings::default(),
            &NoCluster,
        );
        assert!(verdict.allowed);
        let no_old = request("DELETE", alice(), Value::Null, Value::Null);
        assert!(validate(&no_old, &Settings::default(), &NoCluster).allowed);
    }

    #[test]
    fn rule6_backfill_copies_the_label_then_checks_it() {
        let legacy = cos(
            "widget-operator-1",
            json!({"revision": 1, "lifecycleState": "Active"}),
            json!({OWNER_NAME_LABEL: "widget-operator"}),
        );
        let verdict = validate(&create(alice(), legacy.clone()), &backfill(), &cluster());
        assert!(verdict.allowed, "{verdict:?}");
        let mut expected = legacy;
        expected["spec"]["group"] = json!("widget-operator");
        assert_eq!(verdict.mutated_object, Some(expected));
        assert!(
            verdict
                .warnings
                .iter()
                .any(|w| w.contains("backfillGroupFromLabel"))
        );

        let theirs = cos(
            "cert-manager-1",
            json!({"revision": 1}),
            json!({OWNER_NAME_LABEL: "cert-manager"}),
        );
        let verdict = validate(&create(alice(), theirs), &backfill(), &cluster());
        assert_denied(&verdict, &[NOT_AUTHORIZED, "group \"cert-manager\""]);
        assert_eq!(verdict.mutated_object, None);
    }

    #[test]
    fn rule6_backfill_on_update_respects_the_old_group() {
        let old = cos(
            "x",
            json!({"revision": 1}),
            json!({OWNER_NAME_LABEL: "widget-operator"}),
        );
        let verdict = validate(
            &request("UPDATE", alice(), old.clone(), old),
            &backfill(),
            &cluster(),
        );
        assert!(
            verdict.allowed && verdict.mutated_object.is_some(),
            "{verdict:?}"
        );

        let grouped = widget(json!({"group": "gadget"}));
        let relabelled = cos(
            "x",
            json!({"revision": 1}),
            json!({OWNER_NAME_LABEL: "widget-operator"}),
        );
        let verdict = validate(
            &request("UPDATE", alice(), relabelled, grouped),
            &backfill(),
            &cluster(),
        );
        assert_denied(&verdict, &["spec.group is immutable"]);
    }

    #[test]
    fn rule6_backfill_creates_a_null_spec_and_leaves_grouped_objects_alone() {
        let bare = cos(
            "x",
            Value::Null,
            json!({OWNER_NAME_LABEL: "widget-operator"}),
        );
        let verdict = validate(&create(alice(), bare), &backfill(), &cluster());
        assert_eq!(
            verdict
                .mutated_object
                .as_ref()
                .and_then(|o| o.pointer("/spec/group")),
            Some(&json!("widget-operator"))
        );

        let grouped = validate(&create(alice(), widget(json!({}))), &backfill(), &cluster());
        assert!(grouped.allowed && grouped.mutated_object.is_none());

        let unlabelled = validate(
            &create(alice(), cos("x", json!({}), json!({}))),
            &backfill(),
            &cluster(),
        );
        assert_denied(&unlabelled, &["spec.group is required"]);
    }

    /// A revision created before spec.group, grouped by the label alone
    /// (no label at all when `label` is empty).
    fn legacy(label: &str) -> Value {
        let labels = if label.is_empty() {
            json!({})
        } else {
            json!({OWNER_NAME_LABEL: label, "olm.operatorframework.io/owner-kind": "ClusterExtension"})
        };
        cos(
            "legacy-1",
            json!({"revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent"}),
            labels,
        )
    }

    /// The stored object archived: the update operator-controller sends.
    fn archive(user: Value, old: &Value) -> AdmissionRequest {
        let mut new = old.clone();
        new["spec"]["lifecycleState"] = json!("Archived");
        request("UPDATE", user, new, old.clone())
    }

    #[test]
    fn legacy_update_is_authorized_by_its_label_and_warns() {
        let old = legacy("widget-operator");
        let verdict = run(&archive(alice(), &old));
        assert!(verdict.allowed, "{verdict:?}");
        assert_eq!(verdict.mutated_object, None);
        assert!(
            has_warning(
                &verdict,
                &[
                    "no spec.group",
                    "authorized by its label olm.operatorframework.io/owner-name=\"widget-operator\"",
                    "set spec.group: widget-operator",
                    "backfillGroupFromLabel",
                ]
            ),
            "{verdict:?}"
        );

        // The label is what rule 4 asks about.
        let recorder = recorder();
        let verdict = validate(&archive(alice(), &old), &Settings::default(), &recorder);
        assert!(verdict.allowed, "{verdict:?}");
        let reviews = recorder.reviews.borrow();
        assert_eq!(reviews.len(), 1);
        let attributes = &reviews[0].subject_access_review.resource_attributes;
        assert_eq!(attributes.verb, "manage");
        assert_eq!(attributes.subresource.as_deref(), Some("groups"));
        assert_eq!(attributes.name.as_deref(), Some("widget-operator"));

        // A CREATE of the same label-only object is still denied (rule 1).
        assert_denied(
            &run(&create(alice(), old)),
            &["spec.group is required", "set spec.group: widget-operator"],
        );
    }

    #[test]
    fn legacy_update_of_another_groups_revision_is_denied() {
        let theirs = legacy("cert-manager");
        let verdict = run(&archive(alice(), &theirs));
        assert_denied(
            &verdict,
            &[
                NOT_AUTHORIZED,
                "user \"alice\"",
                "may not manage group \"cert-manager\" (this ClusterObjectSet has no spec.group; \
                 its group is taken from its label olm.operatorframework.io/owner-name=\"cert-manager\")",
                "resourceNames: [cert-manager]",
            ],
        );
        assert_eq!(verdict.code, Some(403));
        // The controller's ServiceAccount manages every group.
        let verdict = run(&archive(installer(), &theirs));
        assert!(verdict.allowed, "{verdict:?}");
    }

    #[test]
    fn legacy_relabel_needs_the_old_and_the_new_group() {
        // alice manages widget-operator only: she can neither pull a
        // cert-manager revision into her group nor push hers out.
        let mut into_mine = legacy("widget-operator");
        let theirs = legacy("cert-manager");
        into_mine["spec"]["lifecycleState"] = json!("Archived");
        let verdict = run(&request("UPDATE", alice(), into_mine, theirs.clone()));
        assert_denied(
            &verdict,
            &[
                NOT_AUTHORIZED,
                "group \"cert-manager\" (this ClusterObjectSet has no spec.group; its group is \
                 taken from the label it is stored with",
            ],
        );

        let verdict = run(&request(
            "UPDATE",
            alice(),
            theirs.clone(),
            legacy("widget-operator"),
        ));
        assert_denied(&verdict, &[NOT_AUTHORIZED, "group \"cert-manager\""]);

        // Removing the label still needs the group it had.
        let verdict = run(&request("UPDATE", alice(), legacy(""), theirs.clone()));
        assert_denied(&verdict, &[NOT_AUTHORIZED, "group \"cert-manager\""]);
        let verdict = run(&request(
            "UPDATE",
            alice(),
            legacy(""),
            legacy("widget-operator"),
        ));
        assert!(verdict.allowed, "{verdict:?}");
        assert!(
            has_warning(
                &verdict,
                &[
                    "removes its label olm.operatorframework.io/owner-name=\"widget-operator\"",
                    "no revision group",
                    "set spec.group: widget-operator",
                ]
            ),
            "{verdict:?}"
        );

        // Whoever manages both may relabel; both groups are asked about.
        let (verdict, asked) = asked(&request(
            "UPDATE",
            installer(),
            legacy("widget-operator"),
            theirs,
        ));
        assert!(verdict.allowed, "{verdict:?}");
        assert_eq!(
            asked,
            vec![
                Some("widget-operator".to_string()),
                Some("cert-manager".to_string())
            ]
        );
    }

    #[test]
    fn gaining_a_group_other_than_the_stored_label_needs_both_groups() {
        // alice manages widget-operator only: giving argocd-operator's
        // label-only revision spec.group widget-operator (and the matching
        // label) would pull it into her group.
        let theirs = legacy("argocd-operator");
        let mut into_mine = legacy("widget-operator");
        into_mine["spec"]["group"] = json!("widget-operator");
        let verdict = run(&request(
            "UPDATE",
            alice(),
            into_mine.clone(),
            theirs.clone(),
        ));
        assert_denied(
            &verdict,
            &[
                NOT_AUTHORIZED,
                "user \"alice\"",
                "may not manage group \"argocd-operator\" (the group this ClusterObjectSet is \
                 stored in, taken from the label it is stored with \
                 olm.operatorframework.io/owner-name=\"argocd-operator\"; the update would move \
                 it to group \"widget-operator\", which needs the grant on both groups)",
                "resourceNames: [argocd-operator]",
            ],
        );
        assert_eq!(verdict.code, Some(403));

        // Whoever manages both may move it; the new group is asked first.
        let (verdict, asked) = asked(&request("UPDATE", installer(), into_mine, theirs));
        assert!(verdict.allowed, "{verdict:?}");
        assert_eq!(
            asked,
            vec![
                Some("widget-operator".to_string()),
                Some("argocd-operator".to_string())
            ]
        );
    }

    #[test]
    fn gaining_the_group_of_the_stored_label_asks_once() {
        let old = legacy("widget-operator");
        let mut new = old.clone();
        new["spec"]["group"] = json!("widget-operator");
        let (verdict, asked) = asked(&request("UPDATE", alice(), new, old));
        assert!(verdict.allowed, "{verdict:?}");
        assert_eq!(asked, vec![Some("widget-operator".to_string())]);
    }

    #[test]
    fn backfill_from_a_changed_label_needs_the_stored_group_too() {
        let theirs = legacy("argocd-operator");
        let relabelled = legacy("widget-operator");
        let verdict = validate(
            &request("UPDATE", alice(), relabelled.clone(), theirs.clone()),
            &backfill(),
            &cluster(),
        );
        assert_denied(
            &verdict,
            &[
                NOT_AUTHORIZED,
                "group \"argocd-operator\" (the group this ClusterObjectSet is stored in",
                "move it to group \"widget-operator\"",
            ],
        );
        assert_eq!(verdict.mutated_object, None);

        let verdict = validate(
            &request("UPDATE", installer(), relabelled, theirs),
            &backfill(),
            &cluster(),
        );
        assert!(
            verdict.allowed && verdict.mutated_object.is_some(),
            "{verdict:?}"
        );
    }

    #[test]
    fn the_stored_group_is_read_from_odd_old_objects_too() {
        // A stored spec.group of the wrong type leaves the label as the
        // group; an old object the typed reader refuses still names it.
        let mut odd_group = legacy("cert-manager");
        odd_group["spec"]["group"] = json!(7);
        let odd_spec = json!({
            "metadata": {"labels": {OWNER_NAME_LABEL: "cert-manager"}},
            "spec": "x",
        });
        for old in [odd_group, odd_spec] {
            let verdict = run(&request("UPDATE", alice(), widget(json!({})), old));
            assert_denied(
                &verdict,
                &[
                    NOT_AUTHORIZED,
                    "group \"cert-manager\"",
                    "move it to group \"widget-operator\"",
                ],
            );
        }
        // The check fails closed like every other.
        let verdict = validate(
            &request("UPDATE", alice(), widget(json!({})), legacy("cert-manager")),
            &Settings::default(),
            &NoCluster,
        );
        assert_denied(&verdict, &["kubernetes/can_i", "fails closed"]);
        assert_eq!(verdict.code, Some(500));
    }

    #[test]
    fn legacy_update_that_adds_a_label_is_authorized_by_it() {
        let old = legacy("");
        assert_denied(
            &run(&request(
                "UPDATE",
                alice(),
                legacy("cert-manager"),
                old.clone(),
            )),
            &[NOT_AUTHORIZED, "group \"cert-manager\""],
        );
        let verdict = run(&request("UPDATE", alice(), legacy("widget-operator"), old));
        assert!(verdict.allowed, "{verdict:?}");
        assert!(has_warning(&verdict, &["set spec.group: widget-operator"]));
    }

    #[test]
    fn legacy_update_with_a_label_fails_closed() {
        let verdict = validate(
            &archive(alice(), &legacy("widget-operator")),
            &Settings::default(),
            &NoCluster,
        );
        assert_denied(&verdict, &["kubernetes/can_i", "fails closed"]);
        assert_eq!(verdict.code, Some(500));
    }

    #[test]
    fn ungrouped_update_is_accepted_with_a_warning() {
        // Neither spec.group nor the label: no group to protect, nothing to
        // ask, so not even a failing authorizer stops it.
        let bob = user("bob", &["system:authenticated"]);
        for settings in [Settings::default(), backfill()] {
            let verdict = validate(&archive(bob.clone(), &legacy("")), &settings, &NoCluster);
            assert!(verdict.allowed, "{verdict:?}");
            assert_eq!(verdict.mutated_object, None);
            assert!(
                has_warning(
                    &verdict,
                    &[
                        "neither spec.group nor label olm.operatorframework.io/owner-name",
                        "no revision group to authorize against",
                        "predates grouping",
                        "set spec.group",
                    ]
                ),
                "{verdict:?}"
            );
        }
        // CREATE is still denied, with or without backfill.
        assert_denied(&run(&create(bob, legacy(""))), &["spec.group is required"]);
    }

    #[test]
    fn backfill_still_wins_on_a_legacy_update() {
        let verdict = validate(
            &archive(alice(), &legacy("widget-operator")),
            &backfill(),
            &cluster(),
        );
        assert!(verdict.allowed, "{verdict:?}");
        assert_eq!(
            verdict
                .mutated_object
                .as_ref()
                .and_then(|o| o.pointer("/spec/group")),
            Some(&json!("widget-operator"))
        );
        assert!(!has_warning(&verdict, &["label-only revisions"]));
    }

    #[test]
    fn the_legacy_exception_needs_a_stored_object_without_a_group() {
        let label_only = legacy("widget-operator");
        // No readable stored object: judged like a CREATE.
        for old in [Value::Null, json!("x"), json!({"spec": [1]})] {
            let verdict = run(&request("UPDATE", alice(), label_only.clone(), old));
            assert_denied(&verdict, &["spec.group is required"]);
        }
        // A stored group of the wrong type is no proof of a legacy object.
        let mut odd_old = label_only.clone();
        odd_old["spec"]["group"] = json!(7);
        let verdict = run(&request("UPDATE", alice(), label_only.clone(), odd_old));
        assert_denied(&verdict, &["spec.group is required"]);
        // A stored group stays required (rule 2).
        let mut grouped_old = label_only.clone();
        grouped_old["spec"]["group"] = json!("widget-operator");
        let verdict = run(&request("UPDATE", alice(), label_only.clone(), grouped_old));
        assert_denied(&verdict, &["keep spec.group: widget-operator"]);
        // A new group of the wrong type is still named (rule 1).
        let mut odd_new = label_only.clone();
        odd_new["spec"]["group"] = json!(7);
        let verdict = run(&request("UPDATE", alice(), odd_new, label_only));
        assert_denied(&verdict, &["spec.group is a number (7)"]);
    }

    /// Shapes no API server would send; each gets a verdict, never a panic.
    fn odd_values() -> Vec<Value> {
        vec![
            Value::Null,
            json!(true),
            json!(-1.5),
            json!("spec"),
            json!([{"spec": {"group": "g"}}]),
            json!({"metadata": 1, "spec": {"group": "g"}}),
            json!({"metadata": {"labels": null, "name": null}, "spec": {"group": null}}),
            json!({"metadata": {"labels": {OWNER_NAME_LABEL: 7}}}),
            json!({"metadata": {"labels": {OWNER_NAME_LABEL: "g"}}, "spec": []}),
            json!({"spec": {"group": {"name": "g"}, "revision": "x"}}),
            json!({"spec": {"group": "widget-operator"}, "metadata": {"labels": []}}),
        ]
    }

    #[test]
    fn odd_json_gets_a_verdict() {
        for operation in ["CREATE", "UPDATE", "DELETE"] {
            for object in odd_values() {
                for old in odd_values() {
                    for settings in [Settings::default(), backfill()] {
                        let r = request(operation, alice(), object.clone(), old.clone());
                        let verdict = validate(&r, &settings, &cluster());
                        if !verdict.allowed {
                            assert_denied(&verdict, &[]);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn settings_default_off_and_reject_unknown_keys() {
        let parsed: Settings = olm_guard_core::settings::parse(&Value::Null).unwrap();
        assert!(!parsed.backfill_group_from_label);
        let parsed: Settings =
            olm_guard_core::settings::parse(&json!({"backfillGroupFromLabel": true})).unwrap();
        assert!(parsed.backfill_group_from_label);
        let err =
            olm_guard_core::settings::parse::<Settings>(&json!({"backfill": true})).unwrap_err();
        assert!(err.contains("backfill"), "{err}");
    }
}
