//! Which revision group a request is about: the group of the object as
//! written and the group it is stored in, each with where it was read.

use olm_guard_olm::cluster_object_set::{ClusterObjectSet, OWNER_NAME_LABEL, SpecGroup};
use serde_json::Value;

/// Where a group's name was read, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    /// The object's `spec.group`.
    SpecGroup,
    /// The object's owner-name label (it has no `spec.group`).
    Label,
    /// The stored object's `spec.group`.
    StoredSpecGroup,
    /// The stored object's owner-name label (it has no `spec.group`).
    StoredLabel,
}

/// A revision group, named by a request, and where it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Group<'a> {
    /// The group's name: a non-empty string.
    pub name: &'a str,
    /// Where it was read.
    pub source: Source,
}

impl<'a> Group<'a> {
    /// The group of the object as written: `spec.group` when it is a
    /// non-empty string, else the owner-name label when that is one. On
    /// the ClusterObjectSet CRD operator-controller ships, `spec.group` does
    /// not exist (the API server prunes it), so the label decides, as it
    /// does for operator-controller (`listPreviousRevisions`).
    pub fn of_object(spec_group: SpecGroup<'a>, label: Option<&'a str>) -> Option<Group<'a>> {
        match spec_group {
            SpecGroup::Name(name) => Some(Group {
                name,
                source: Source::SpecGroup,
            }),
            _ => label.map(|name| Group {
                name,
                source: Source::Label,
            }),
        }
    }

    /// The group a stored object counts in: its `spec.group` when that is
    /// a non-empty string, else its owner-name label. Read from the raw
    /// JSON so that an old object the typed reader refuses still names its
    /// group.
    pub fn stored(old_object: &'a Value) -> Option<Group<'a>> {
        if let Some(name) = spec_group_of(old_object) {
            return Some(Group {
                name,
                source: Source::StoredSpecGroup,
            });
        }
        old_object
            .get("metadata")
            .and_then(|metadata| metadata.get("labels"))
            .and_then(|labels| labels.get(OWNER_NAME_LABEL))
            .and_then(Value::as_str)
            .filter(|label| !label.is_empty())
            .map(|name| Group {
                name,
                source: Source::StoredLabel,
            })
    }
}

/// `spec.group` of a raw object when it is a non-empty string: the old
/// object of an UPDATE or DELETE, which the API server has already stored.
pub(super) fn spec_group_of(object: &Value) -> Option<&str> {
    object
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .filter(|group| !group.is_empty())
}

/// Whether the stored object of an UPDATE is readable and has no
/// `spec.group` (absent, `null` or `""`): a revision written on a CRD
/// without the field, or before the field was added. A `spec.group` of the
/// wrong type, or an unreadable old object, is no such proof.
pub(super) fn stored_without_group(old_object: &Value) -> bool {
    ClusterObjectSet::from_object(old_object).is_ok_and(|old| old.spec_group() == SpecGroup::Unset)
}
