//! Rule 4's one list of every ClusterObjectSet and the one pass over it.

use olm_guard_core::protocol::ListAllResourcesRequest;
use olm_guard_core::{Cluster, ClusterExt, ContextError};
use olm_guard_olm::cluster_object_set::{API_VERSION, ClusterObjectSet, KIND};

/// The fields rule 4 reads of the other ClusterObjectSets (besides
/// metadata). A ClusterObjectSet carries its phases' whole manifests; asking
/// for these alone keeps a 10,000-object list small.
const FIELDS_READ: [&str; 3] = ["spec.group", "spec.revision", "spec.lifecycleState"];

/// Rule 4's one list of every ClusterObjectSet.
pub(super) fn list_all(cluster: &dyn Cluster) -> Result<Vec<ClusterObjectSet>, ContextError> {
    cluster.list_all_as(&ListAllResourcesRequest::new(API_VERSION, KIND).field_masks(FIELDS_READ))
}

/// What one pass over the cluster's ClusterObjectSets says about a group:
/// its highest valid revision and, for a given revision, the object that
/// already has it. Linear, so a cluster with many revisions stays cheap.
pub(super) struct GroupSurvey<'a> {
    pub(super) highest: Option<i64>,
    /// Among several, the one with the smallest name, so the message does
    /// not depend on list order.
    pub(super) clash: Option<&'a ClusterObjectSet>,
}

impl<'a> GroupSurvey<'a> {
    /// The siblings of `own_name` in `group` among `objects` (rule 3's
    /// group), surveyed for `revision`.
    pub(super) fn of(
        objects: &'a [ClusterObjectSet],
        group: &str,
        own_name: &str,
        revision: Option<i64>,
    ) -> GroupSurvey<'a> {
        let mut survey = GroupSurvey {
            highest: None,
            clash: None,
        };
        let siblings = objects
            .iter()
            .filter(|other| other.name() != own_name && other.group() == Some(group));
        for other in siblings {
            // A sibling with an unreadable revision cannot clash or be
            // counted on; the API server's schema keeps these out anyway.
            let Ok(Some(theirs)) = other.revision() else {
                continue;
            };
            survey.highest = survey.highest.max(Some(theirs));
            let first_clash = survey.clash.is_none_or(|c| other.name() < c.name());
            if revision == Some(theirs) && first_clash {
                survey.clash = Some(other);
            }
        }
        survey
    }
}
