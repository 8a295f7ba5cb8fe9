//! The denials and warnings of group-authorization, each saying what is
//! wrong and how to fix it (*Messages* in the README).

use olm_guard_core::UserInfo;
use olm_guard_olm::cluster_object_set::{
    GROUP, GROUPS_SUBRESOURCE, MANAGE_VERB, OWNER_NAME_LABEL, RESOURCE, describe_value,
};
use serde_json::Value;

use super::NOT_AUTHORIZED;
use super::read::{Group, Source};

/// The settings refusal of `backfillGroupFromLabel` alone.
pub(super) const BACKFILL_WITHOUT_SPEC_GROUP: &str = "settings.backfillGroupFromLabel: true needs requireSpecGroup: true: backfilling writes \
     spec.group, which only a ClusterObjectSet CRD that has the field keeps (the API server \
     prunes it from the CRD operator-controller ships); set requireSpecGroup: true once the \
     CRD has spec.group, or remove backfillGroupFromLabel";

/// The settings refusal of an empty name in `garbageCollectors`: it would
/// let through every DELETE that names no user.
pub(super) fn empty_garbage_collector(index: usize) -> String {
    format!(
        "settings.garbageCollectors[{index}] is empty: list user names, such as \
         system:serviceaccount:kube-system:generic-garbage-collector (an empty name would let \
         through every DELETE that names no user)"
    )
}

/// Rule 1: no `spec.group`; the fix depends on what the object still has.
pub(super) fn missing_group(label: Option<&str>, old_group: Option<&str>) -> String {
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

/// Rule 1: a `spec.group` that is not a string, named by its type.
pub(super) fn invalid_group(value: &Value, old_group: Option<&str>) -> String {
    let fix = match old_group {
        Some(old) => format!("keep spec.group: {old}"),
        None => "write the group's name as a string, e.g. group: \"my-extension\"".to_string(),
    };
    format!(
        "spec.group is {}; it must be a non-empty string: {fix}",
        describe_value(value)
    )
}

/// Rule 2.
pub(super) fn group_changed(old: &str, group: &str) -> String {
    format!(
        "spec.group is immutable: this ClusterObjectSet belongs to group \"{old}\" and the \
         update would move it to \"{group}\"; keep spec.group: {old}, and create a new \
         ClusterObjectSet to add a revision to group \"{group}\""
    )
}

/// Rule 3.
pub(super) fn label_disagrees(label: &str, group: &str) -> String {
    format!(
        "label {OWNER_NAME_LABEL} is \"{label}\" but spec.group is \"{group}\": \
         operator-controller groups revisions by this label and would put this revision into \
         group \"{label}\"; set the label to \"{group}\" or remove it"
    )
}

/// Rule 4's denial, with the ClusterRole rule that would grant it; `note`
/// follows the group's name.
pub(super) fn not_authorized(user: &UserInfo, group: &str, note: &str) -> String {
    format!(
        "{NOT_AUTHORIZED}: {} may not manage group \"{group}\"{note}; a cluster admin grants it \
         with a ClusterRole rule {{apiGroups: [{GROUP}], resources: \
         [{RESOURCE}/{GROUPS_SUBRESOURCE}], resourceNames: [{group}], verbs: [{MANAGE_VERB}]}} \
         bound to this user by a ClusterRoleBinding",
        user.describe()
    )
}

/// Rule 4's lookup, as a failed-lookup message names it.
pub(super) fn manage_lookup(user: &UserInfo, group: &str) -> String {
    format!(
        "whether {} may manage group \"{group}\" (kubernetes/can_i)",
        user.describe()
    )
}

/// Rule 4's note on where `group` was read: nothing for a `spec.group`,
/// the label otherwise (on the CRD operator-controller ships, always).
pub(super) fn source_note(group: Group<'_>) -> String {
    let name = group.name;
    match group.source {
        Source::SpecGroup | Source::StoredSpecGroup => String::new(),
        Source::Label => format!(" (the group named by its label {OWNER_NAME_LABEL}=\"{name}\")"),
        Source::StoredLabel => format!(
            " (the group named by the label it is stored with {OWNER_NAME_LABEL}=\"{name}\")"
        ),
    }
}

/// Rule 4's note for the group a revision is stored in (`stored`), when
/// the update moves it to `group` or, with `None`, out of every group.
pub(super) fn moved_note(stored: Group<'_>, group: Option<&str>) -> String {
    let source = match stored.source {
        Source::SpecGroup | Source::StoredSpecGroup => "its spec.group".to_string(),
        Source::Label | Source::StoredLabel => format!(
            "the label it is stored with {OWNER_NAME_LABEL}=\"{}\"",
            stored.name
        ),
    };
    let change = match group {
        Some(group) => format!(
            "the update would move it to group \"{group}\", which needs the grant on both groups"
        ),
        None => "the update would take it out of that group, which needs the grant on it".into(),
    };
    format!(" (the group this ClusterObjectSet is stored in, taken from {source}; {change})")
}

/// The warning on an allowed UPDATE of an object stored without
/// `spec.group` that the update leaves without one.
pub(super) fn kept_without_group(label: Option<&str>, old_label: Option<&str>) -> String {
    match (label, old_label) {
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
    }
}

/// Rule 6's warning: `spec.group` was written from the label.
pub(super) fn backfilled(group: &str) -> String {
    format!(
        "spec.group was set to \"{group}\" from label {OWNER_NAME_LABEL} \
         (setting backfillGroupFromLabel)"
    )
}
