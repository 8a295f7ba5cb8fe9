//! UPDATEs that keep the (group, revision) slot the object is stored in:
//! rules 4 and 6 only warn about them (*What it enforces* in the README).

use olm_guard_core::{AdmissionRequest, Cluster, Verdict};
use olm_guard_olm::cluster_object_set::ClusterObjectSet;

use super::Settings;
use super::messages;
use super::naming::NameProblem;
use super::survey::{GroupSurvey, siblings};

/// Whether an UPDATE leaves the object in the (group, revision) slot the
/// stored object already had. An old object that cannot be read proves
/// nothing, so the update is then checked like any other.
pub(super) fn keeps_its_slot(
    request: &AdmissionRequest,
    cos: &ClusterObjectSet,
    revision: i64,
) -> bool {
    let Ok(old) = ClusterObjectSet::from_object(&request.old_object) else {
        return false;
    };
    old.revision() == Ok(Some(revision)) && old.group() == cos.group()
}

/// An UPDATE that keeps its slot creates no duplicate and no new misnamed
/// revision, so rules 4 and 6 only warn about what the object already was:
/// denying would stop controllers from archiving it or removing its
/// finalizers, and users from repairing it. The list serves the warning
/// only, so a failed list does not deny either.
pub(super) fn unchanged_slot(
    cos: &ClusterObjectSet,
    settings: &Settings,
    cluster: &dyn Cluster,
    revision: i64,
) -> Verdict {
    let Some(group) = cos.group() else {
        if !settings.require_name_suffix {
            return Verdict::accept();
        }
        return Verdict::accept().with_warning(messages::kept_ungrouped(cos));
    };

    let mut warnings = Vec::new();
    if settings.require_name_suffix
        && let Some(name) = NameProblem::of(cos, group, revision)
    {
        warnings.push(messages::kept_misnamed(&name));
    }
    match siblings(cluster, group, settings) {
        Ok(siblings) => {
            if let Some(clash) = GroupSurvey::of(&siblings, cos.name(), Some(revision)).clash {
                warnings.push(messages::kept_duplicate(cos, group, revision, clash));
            }
        }
        Err(error) => warnings.push(messages::kept_unchecked(group, revision, &error)),
    }
    Verdict::accept().with_warnings(warnings)
}
