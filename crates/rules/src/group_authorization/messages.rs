//! The denials and warnings of group-authorization, each saying what is
//! wrong and how to fix it (*Messages* in the README).

use olm_guard_core::UserInfo;
use olm_guard_olm::cluster_object_set::{
    GROUP, GROUPS_SUBRESOURCE, MANAGE_VERB, OWNER_NAME_LABEL, RESOURCE, describe_value,
};
use serde_json::Value;

use super::NOT_AUTHORIZED;

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
        "label {OWNER_NAME_LABEL} is \"{label}\" but spec.group is \"{group}\": controllers \
         that still group revisions by the label would put this revision into group \
         \"{label}\"; set the label to \"{group}\" or remove it"
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

/// Rule 4's note for the stored group of an UPDATE that moves the object
/// into `group`; `source` says where the stored group was read.
pub(super) fn moved_from_stored_group(source: &str, group: &str) -> String {
    format!(
        " (the group this ClusterObjectSet is stored in, taken from {source}; the update \
         would move it to group \"{group}\", which needs the grant on both groups)"
    )
}

/// Rule 4's note for an object without `spec.group`, authorized by its new
/// label (`new_label`) or by the label it is stored with.
pub(super) fn group_from_label(new_label: bool, group: &str) -> String {
    let whose = if new_label {
        "its label"
    } else {
        "the label it is stored with"
    };
    format!(
        " (this ClusterObjectSet has no spec.group; its group is taken from {whose} \
         {OWNER_NAME_LABEL}=\"{group}\")"
    )
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
