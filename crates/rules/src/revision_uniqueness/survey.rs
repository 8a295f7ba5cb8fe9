//! Rule 4's one list of every ClusterObjectSet and the one pass over it.

use std::rc::Rc;

use olm_guard_core::protocol::ListAllResourcesRequest;
use olm_guard_core::shared::{Index, IndexedOnReuse};
use olm_guard_core::{Cluster, ClusterExt, ContextError};
use olm_guard_olm::cluster_object_set::{API_VERSION, ClusterObjectSet, KIND};

/// The fields rule 4 reads of the other ClusterObjectSets (besides
/// metadata). A ClusterObjectSet carries its phases' whole manifests; asking
/// for these alone keeps a 10,000-object list small.
const FIELDS_READ: [&str; 3] = ["spec.group", "spec.revision", "spec.lifecycleState"];

/// Every ClusterObjectSet, as listed, and (when the list is shared by the
/// evaluations of a batch) an index of them by group.
pub(super) struct ClusterObjectSets {
    objects: Vec<ClusterObjectSet>,
    /// Group → positions in `objects`, ascending.
    by_group: IndexedOnReuse<Index>,
}

impl ClusterObjectSets {
    fn new(objects: Vec<ClusterObjectSet>) -> ClusterObjectSets {
        ClusterObjectSets {
            objects,
            by_group: IndexedOnReuse::new(),
        }
    }

    /// The objects in `group` (rule 3's group), in list order: a scan of the
    /// list, or the index once the list is used again.
    fn in_group<'a>(
        &'a self,
        group: &'a str,
    ) -> Box<dyn Iterator<Item = &'a ClusterObjectSet> + 'a> {
        let index = self
            .by_group
            .get(|| Index::of(&self.objects, |object| object.group().map(str::to_string)));
        match index {
            Some(index) => Box::new(
                index
                    .get(group)
                    .iter()
                    .filter_map(|&at| self.objects.get(at)),
            ),
            None => Box::new(
                self.objects
                    .iter()
                    .filter(move |object| object.group() == Some(group)),
            ),
        }
    }
}

/// Rule 4's one list of every ClusterObjectSet (decoded once per batch).
pub(super) fn list_all(cluster: &dyn Cluster) -> Result<Rc<ClusterObjectSets>, ContextError> {
    cluster.list_all_shared(
        &ListAllResourcesRequest::new(API_VERSION, KIND).field_masks(FIELDS_READ),
        ClusterObjectSets::new,
    )
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
        objects: &'a ClusterObjectSets,
        group: &'a str,
        own_name: &str,
        revision: Option<i64>,
    ) -> GroupSurvey<'a> {
        let mut survey = GroupSurvey {
            highest: None,
            clash: None,
        };
        let siblings = objects
            .in_group(group)
            .filter(|other| other.name() != own_name);
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cos(name: &str, group: &str, revision: i64) -> ClusterObjectSet {
        ClusterObjectSet::from_object(&json!({
            "metadata": {"name": name},
            "spec": {"group": group, "revision": revision},
        }))
        .unwrap()
    }

    /// The scan (a single evaluation) and the index (later evaluations of
    /// a batch) find the same siblings in the same order.
    #[test]
    fn the_index_finds_what_the_scan_finds() {
        let listed = || {
            ClusterObjectSets::new(vec![
                cos("a-2", "a", 2),
                cos("b-1", "b", 1),
                cos("a-1", "a", 1),
                cos("a-1-copy", "a", 1),
                ClusterObjectSet::from_object(&json!({"metadata": {"name": "loose"}})).unwrap(),
            ])
        };
        let names = |objects: &ClusterObjectSets, group| -> Vec<String> {
            objects
                .in_group(group)
                .map(|o| o.name().to_string())
                .collect()
        };
        let shared = listed();
        names(&shared, "warm-up");
        for group in ["a", "b", "none"] {
            assert_eq!(names(&listed(), group), names(&shared, group), "{group}");
        }
        assert_eq!(names(&shared, "a"), ["a-2", "a-1", "a-1-copy"]);
        let survey = GroupSurvey::of(&shared, "a", "a-1", Some(1));
        assert_eq!(
            (survey.highest, survey.clash.map(|c| c.name())),
            (Some(2), Some("a-1-copy"))
        );
    }
}
