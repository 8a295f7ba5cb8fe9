//! Reading the stored object of an UPDATE or DELETE: which group it is in.

use olm_guard_olm::cluster_object_set::{ClusterObjectSet, OWNER_NAME_LABEL, SpecGroup};
use serde_json::Value;

/// `spec.group` of a raw object when it is a non-empty string: the old
/// object of an UPDATE or DELETE, which the API server has already stored.
pub(super) fn spec_group_of(object: &Value) -> Option<&str> {
    object
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .filter(|group| !group.is_empty())
}

/// The group a stored object counts in, with where it was read from:
/// `spec.group` when it is a non-empty string, else the owner-name label.
/// Read from the raw JSON so that an old object the typed reader refuses
/// still names its group.
pub(super) fn stored_group(old_object: &Value) -> Option<(&str, String)> {
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

/// The stored object of an UPDATE when it is readable and has no
/// `spec.group` at all: an object that predates grouping. A `spec.group` of
/// the wrong type, or an unreadable old object, is no such proof.
pub(super) fn stored_without_group(old_object: &Value) -> Option<ClusterObjectSet> {
    ClusterObjectSet::from_object(old_object)
        .ok()
        .filter(|old| old.spec_group() == SpecGroup::Unset)
}
