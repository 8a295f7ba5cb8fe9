//! UPDATEs of objects stored before `spec.group` existed, which the update
//! leaves without one (*Objects that already exist* in the README).

use olm_guard_core::{Cluster, UserInfo, Verdict};

use super::authorize::require_manage;
use super::messages;

/// An UPDATE that leaves an object without `spec.group` as it was stored.
/// Rule 4 is asked for each group its owner-name label names, before and
/// after: the new label so that a forged one cannot be used, the old one so
/// that a revision cannot be relabelled out of a group the requester may
/// not manage.
pub(super) fn update_without_group(
    cluster: &dyn Cluster,
    user: &UserInfo,
    label: Option<&str>,
    old_label: Option<&str>,
) -> Verdict {
    let mut labels: Vec<&str> = label.into_iter().chain(old_label).collect();
    labels.dedup();
    for group in labels {
        let note = messages::group_from_label(label == Some(group), group);
        if let Err(denial) = require_manage(cluster, user, group, &note) {
            return denial;
        }
    }
    Verdict::accept().with_warning(messages::kept_without_group(label, old_label))
}
