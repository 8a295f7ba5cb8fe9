//! group-authorization: only the owners of a revision group may write its
//! revisions.
//!
//! A ClusterObjectSet (`olm.operatorframework.io/v1`) is one revision of a
//! group of revisions. Whoever adds a revision to a group takes over the
//! objects of that group, so writing to a group is a permission of its own:
//! the verb `manage` on `clusterobjectsets/groups`, named after the group.
//! On CREATE, UPDATE and DELETE of a ClusterObjectSet:
//!
//! 1. `spec.group` must be set to a non-empty string.
//! 2. On UPDATE, `spec.group` cannot change once it is set (an object without
//!    one may gain one).
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
//! Other kinds, subresources such as `status`, and CONNECT pass untouched.
//! If the authorization check cannot be made, the request is denied.

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::group_authorization::Settings,
    olm_guard_rules::group_authorization::validate
);
