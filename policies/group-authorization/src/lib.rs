//! group-authorization: only the owners of a revision group may write its
//! revisions.
//!
//! A ClusterObjectSet (`olm.operatorframework.io/v1`) is one revision of a
//! group of revisions. Whoever adds a revision to a group takes over the
//! objects of that group, so writing to a group is a permission of its own:
//! the verb `manage` on `clusterobjectsets/groups`, named after the group.
//! On CREATE, UPDATE and DELETE of a ClusterObjectSet:
//!
//! 1. `spec.group` must be set to a non-empty string (see below for objects
//!    stored without one).
//! 2. On UPDATE, `spec.group` cannot change once it is set (an object without
//!    one may gain one). When the object is stored in another group than the
//!    one the update gives it (its owner-name label, or a backfill from a
//!    changed label), the requester needs rule 4's permission for the stored
//!    group as well, so a revision cannot be pulled out of a group the
//!    requester may not manage.
//! 3. If the label `olm.operatorframework.io/owner-name` is present it must
//!    equal `spec.group`, so a forged label cannot steer controllers that
//!    still group revisions by the label.
//! 4. The requester must be allowed to `manage` `clusterobjectsets/groups`
//!    (API group `olm.operatorframework.io`) with the group as resource name,
//!    cluster-wide; otherwise: "user is not authorized to manage revisions in
//!    this group", naming the user and the group.
//! 5. On DELETE, the same permission is needed for the group of the deleted
//!    object, when it has one.
//! 6. With the setting `backfillGroupFromLabel: true`, a created or updated
//!    object without `spec.group` but with the owner-name label gets
//!    `spec.group` copied from the label, and is then checked as above.
//!
//! The policy judges what a request changes, so objects that already exist
//! keep working. An UPDATE of an object stored without `spec.group` (created
//! before grouping) that leaves it without one is not denied by rule 1:
//! when the object has the owner-name label (before or after the update),
//! rule 4 is checked for the label's group, so a forged label still cannot be
//! used, and the update passes with a warning to set `spec.group` (or enable
//! `backfillGroupFromLabel`). With neither a group nor a label there is no
//! group to check, and the update passes with a warning. A CREATE without
//! `spec.group` is still denied unless backfilled.
//!
//! Other kinds, subresources such as `status`, and CONNECT pass untouched.
//! If the authorization check cannot be made, the request is denied.

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::group_authorization::Settings,
    olm_guard_rules::group_authorization::validate
);
