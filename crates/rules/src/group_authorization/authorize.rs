//! The one SubjectAccessReview that decides who may write a group.

use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_core::{Cluster, ClusterExt, UserInfo, Verdict};
use olm_guard_olm::cluster_object_set::{GROUP, GROUPS_SUBRESOURCE, MANAGE_VERB, RESOURCE};

use super::messages;

/// Whether `user` may `manage` `clusterobjectsets/groups` named `group`:
/// exactly the CEL check
/// `authorizer.group(..).resource('clusterobjectsets').subresource('groups')
/// .name(group).check('manage')` of the ValidatingAdmissionPolicy proposed in
/// operator-framework/operator-controller#2722, with no namespace: groups
/// are cluster-wide. `note` follows the group's name in a denial (where the
/// group came from).
pub(super) fn require_manage(
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
        Ok(false) => Err(Verdict::deny(messages::not_authorized(user, group, note))),
        Err(error) => Err(Verdict::context_unavailable(
            &messages::manage_lookup(user, group),
            error,
        )),
    }
}
