//! The denials and warnings of revision-uniqueness, each saying what is
//! wrong and how to fix it (*Messages* in the README).

use olm_guard_core::{ContextError, Verdict};
use olm_guard_olm::cluster_object_set::{
    API_VERSION, ClusterObjectSet, OWNER_NAME_LABEL, SET_GROUP_FIX, SpecGroup,
};

use super::naming::NameProblem;
use super::survey::GroupSurvey;

/// Why an UPDATE that keeps its slot is allowed despite a warning (the
/// native policy's warnings say it too).
pub const KEPT: &str = "the update is allowed because it changes neither the group nor the \
                    revision of this existing ClusterObjectSet";

/// Rule 1: no revision; the setting that would fill it is named on CREATE.
pub(super) fn missing_revision(creating: bool) -> String {
    let setting = if creating {
        " (or enable the setting autoIncrementRevision to have it numbered on creation)"
    } else {
        ""
    };
    format!(
        "spec.revision is required: set spec.revision to the group's highest revision + 1, or 1 \
         for the first revision of a group{setting}"
    )
}

/// Rule 2: the update gives the object another revision.
pub(super) fn revision_changed(old: i64, new: i64) -> String {
    format!(
        "spec.revision is immutable: this ClusterObjectSet is revision {old} and the update \
         would make it {new}; keep spec.revision: {old}, and create a new ClusterObjectSet \
         for revision {new}"
    )
}

/// Rule 2: the update removes the revision.
pub(super) fn revision_removed(old: i64) -> String {
    format!(
        "spec.revision is immutable: this ClusterObjectSet is revision {old} and the update \
         removes it; keep spec.revision: {old}"
    )
}

/// Rule 4's lookup, as a failed-lookup message names it.
pub(super) fn list_what(group: &str) -> String {
    format!(
        "the ClusterObjectSets ({API_VERSION}) of the cluster, to compare revisions of group \
         \"{group}\" (kubernetes/list_resources_all)"
    )
}

/// Rule 4: `clash` already holds the slot. A CREATE is told the next free
/// revision; an UPDATE (`updated`, the object's name) cannot change its
/// revision, so it is told to delete one of the two.
pub(super) fn clash(
    group: &str,
    revision: i64,
    clash: &ClusterObjectSet,
    survey: &GroupSurvey<'_>,
    updated: Option<&str>,
) -> String {
    let fix = match (updated, survey.highest.and_then(|h| h.checked_add(1))) {
        (None, Some(next)) => format!("use spec.revision: {next}, the next free revision"),
        (None, None) => "start a new group".to_string(),
        (Some(own), _) => format!(
            "revisions cannot change, so delete one of the two ClusterObjectSets \
             (\"{own}\" or \"{}\")",
            clash.name()
        ),
    };
    format!(
        "spec.revision {revision} is already used in group \"{group}\" by ClusterObjectSet \
         \"{}\"{}: two revisions with one number fight over the same objects without end; {fix}",
        clash.name(),
        holder_details(clash)
    )
}

/// Rule 5: the group's highest revision is the largest possible number.
pub(super) fn no_number_left(group: &str, highest: i64) -> String {
    format!(
        "spec.revision cannot be numbered automatically: group \"{group}\" already \
         has the largest possible revision ({highest}); start a new group"
    )
}

/// Rule 5 without a group to number in.
pub(super) fn cannot_number_ungrouped(cos: &ClusterObjectSet) -> String {
    let why = ungrouped_reason(cos);
    format!(
        "spec.revision is required: it cannot be numbered automatically because this \
         ClusterObjectSet is in no revision group ({why} {OWNER_NAME_LABEL}); {SET_GROUP_FIX}, \
         or set spec.revision yourself"
    )
}

/// Rule 6 without a group to name the object after.
pub(super) fn cannot_name_ungrouped(cos: &ClusterObjectSet) -> String {
    let why = ungrouped_reason(cos);
    format!(
        "metadata.name must be <group>-<revision> (setting requireNameSuffix), but this \
         ClusterObjectSet is in no revision group ({why} {OWNER_NAME_LABEL}); {SET_GROUP_FIX}"
    )
}

/// Rule 6: the name is not `<group>-<revision>`. Names cannot change, so an
/// UPDATE is told to recreate the object.
pub(super) fn misnamed(
    problem: &NameProblem,
    group: &str,
    revision: i64,
    creating: bool,
) -> String {
    let NameProblem { expected, found } = problem;
    let fix = if creating {
        format!("name it \"{expected}\"")
    } else {
        format!(
            "names cannot change, so delete this ClusterObjectSet and create it again as \
             \"{expected}\""
        )
    };
    format!(
        "metadata.name must be \"{expected}\" (<group>-<revision>, setting requireNameSuffix) but \
         {found}: {fix}; the API server then refuses a second revision {revision} of group \
         \"{group}\" even when two creates race"
    )
}

/// Rule 6's warning on an UPDATE that keeps an ungrouped object's slot.
pub(super) fn kept_ungrouped(cos: &ClusterObjectSet) -> String {
    let why = ungrouped_reason(cos);
    format!(
        "metadata.name should be <group>-<revision> (setting requireNameSuffix), but this \
         ClusterObjectSet is in no revision group ({why} {OWNER_NAME_LABEL}); {KEPT}. New \
         revisions need a group and the name <group>-<revision>; names cannot change, so \
         replace this one by a ClusterObjectSet created with both"
    )
}

/// Rule 6's warning on an UPDATE that keeps a misnamed revision's slot.
pub(super) fn kept_misnamed(name: &NameProblem) -> String {
    format!(
        "metadata.name should be \"{}\" (<group>-<revision>, setting requireNameSuffix) but \
         {}; {KEPT}. Names cannot change: to comply, delete this ClusterObjectSet and create \
         it again as \"{}\"",
        name.expected, name.found, name.expected
    )
}

/// Rule 4's warning on an UPDATE that keeps a duplicate's slot.
pub(super) fn kept_duplicate(
    cos: &ClusterObjectSet,
    group: &str,
    revision: i64,
    clash: &ClusterObjectSet,
) -> String {
    format!(
        "spec.revision {revision} of group \"{group}\" is also used by \
         ClusterObjectSet \"{}\"{}: two revisions with one number fight over the same \
         objects without end; {KEPT}. Revisions cannot change, so delete one of the \
         two ClusterObjectSets (\"{}\" or \"{}\")",
        clash.name(),
        holder_details(clash),
        cos.name(),
        clash.name()
    )
}

/// Rule 4's warning on an UPDATE that keeps its slot when the list failed.
pub(super) fn kept_unchecked(group: &str, revision: i64, error: &ContextError) -> String {
    format!(
        "could not check whether revision {revision} of group \"{group}\" is used by another \
         ClusterObjectSet: looking up {} failed ({error}); {KEPT}",
        list_what(group)
    )
}

/// Why [`ClusterObjectSet::group`] found none; the label's name follows.
fn ungrouped_reason(cos: &ClusterObjectSet) -> &'static str {
    match cos.spec_group() {
        SpecGroup::Invalid(_) => "spec.group is not a string and there is no label",
        _ => "it has neither spec.group nor the label",
    }
}

/// `, lifecycleState Archived, grouped by its label ...` for the object that
/// holds a slot; empty parts are left out.
fn holder_details(holder: &ClusterObjectSet) -> String {
    let state = match holder.lifecycle_state() {
        "" => String::new(),
        state => format!(", lifecycleState {state}"),
    };
    let via_label = match holder.spec_group() {
        SpecGroup::Name(_) => String::new(),
        _ => format!(", grouped by its label {OWNER_NAME_LABEL}"),
    };
    format!("{state}{via_label}")
}

/// Rule 6. Holds for an UPDATE that changes the (group, revision) too: a
/// label edit can move a label-only object into another group, and the name
/// then no longer proves uniqueness.
pub(super) fn misnamed_denial(
    cos: &ClusterObjectSet,
    group: &str,
    revision: i64,
    creating: bool,
) -> Option<Verdict> {
    let problem = NameProblem::of(cos, group, revision)?;
    Some(Verdict::deny(misnamed(&problem, group, revision, creating)))
}
