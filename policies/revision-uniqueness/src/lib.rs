//! revision-uniqueness: one ClusterObjectSet per revision number in a group.
//!
//! Two ClusterObjectSets with the same group and revision both claim the
//! same objects and neither ever yields, so their controllers fight without
//! end. On CREATE and UPDATE of a ClusterObjectSet (`olm.operatorframework.io/v1`):
//!
//! 1. `spec.revision` must be a whole number of at least 1, written as a
//!    number (not `"3"`, `3.0`, `0` or `-1`), unless rule 5 fills it in.
//! 2. On UPDATE, `spec.revision` cannot change.
//! 3. The group of a ClusterObjectSet is its `spec.group`, or, for objects
//!    created before that field, its label `olm.operatorframework.io/owner-name`.
//! 4. No other ClusterObjectSet, active or archived, may have the same group
//!    and revision; the message names the one that has it and the next free
//!    revision.
//! 5. With the setting `autoIncrementRevision: true`, a created object
//!    without `spec.revision` gets the group's highest revision + 1 (1 for a
//!    new group).
//! 6. With the setting `requireNameSuffix: true`, `metadata.name` must be
//!    `<group>-<revision>`: the API server's unique names then rule out
//!    duplicates even when two creates race past the check in rule 4.
//!
//! On UPDATE, rules 4 and 6 deny only an update that gives the object
//! another group or revision than it is stored with (a label edit, a group
//! set on an ungrouped object). An update that keeps both, such as archiving
//! or removing a finalizer, is allowed even when the stored object already is
//! a duplicate or misnamed, with a warning that says so and what to do: the
//! policy stops new violations without blocking objects that already exist.
//!
//! Other kinds, subresources such as `status`, and DELETE pass untouched.
//! If the cluster's ClusterObjectSets cannot be listed, the request is denied
//! (an update that keeps its group and revision gets a warning instead).

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::revision_uniqueness::Settings,
    olm_guard_rules::revision_uniqueness::validate
);
