//! Rule 4's one list of every ClusterObjectSet and the one pass over it.

use std::collections::BTreeMap;
use std::rc::Rc;

use olm_guard_core::listed::ListAnswer;
use olm_guard_core::protocol::ListAllResourcesRequest;
use olm_guard_core::shared::IndexedOnReuse;
use olm_guard_core::{Cluster, ClusterExt, ContextError};
use olm_guard_olm::cluster_object_set::{
    API_VERSION, ClusterObjectSet, KIND, ListedClusterObjectSet, OWNER_NAME_LABEL,
};

use super::Settings;

/// The fields rule 4 reads of the other ClusterObjectSets (besides
/// metadata). A ClusterObjectSet carries its phases' whole manifests; asking
/// for these alone keeps a 10,000-object list small.
const FIELDS_READ: [&str; 3] = ["spec.group", "spec.revision", "spec.lifecycleState"];

/// Every ClusterObjectSet, as the host answered, and (when the answer is
/// shared by the evaluations of a batch) the objects of each group.
pub(super) struct ClusterObjectSets {
    answer: ListAnswer,
    /// Group → its objects, in list order.
    by_group: IndexedOnReuse<Result<BTreeMap<String, Vec<ClusterObjectSet>>, ContextError>>,
}

impl ClusterObjectSets {
    fn new(answer: ListAnswer) -> ClusterObjectSets {
        ClusterObjectSets {
            answer,
            by_group: IndexedOnReuse::new(),
        }
    }

    /// The objects in `group` (rule 3's group), in list order: one pass
    /// over the answer keeping only them, or the index once the answer is
    /// used again. An answer the rule cannot read fails the lookup.
    pub(super) fn in_group(&self, group: &str) -> Result<Vec<ClusterObjectSet>, ContextError> {
        let index = self.by_group.try_get(|| {
            let mut by_group: BTreeMap<String, Vec<ClusterObjectSet>> = BTreeMap::new();
            self.answer.each(|listed: ListedClusterObjectSet<'_>| {
                if let Some(group) = listed.group() {
                    by_group
                        .entry(group.to_string())
                        .or_default()
                        .push(listed.to_object());
                }
            })?;
            Ok(by_group)
        });
        match index? {
            Some(by_group) => Ok(by_group.get(group).cloned().unwrap_or_default()),
            None => {
                let mut members = Vec::new();
                self.answer.each(|listed: ListedClusterObjectSet<'_>| {
                    if listed.group() == Some(group) {
                        members.push(listed.to_object());
                    }
                })?;
                Ok(members)
            }
        }
    }
}

/// Rule 4's one list of every ClusterObjectSet (kept once per batch), or,
/// with `listByOwnerLabel`, of those labelled with `group`.
fn list_all(
    cluster: &dyn Cluster,
    group: &str,
    settings: &Settings,
) -> Result<Rc<ClusterObjectSets>, ContextError> {
    let mut request = ListAllResourcesRequest::new(API_VERSION, KIND).field_masks(FIELDS_READ);
    if settings.list_by_owner_label {
        request = request.label_selector(format!("{OWNER_NAME_LABEL}={group}"));
    }
    cluster.list_all_read(&request, |answer| Ok(ClusterObjectSets::new(answer)))
}

/// The objects of `group` among every ClusterObjectSet (or those the label
/// selector of `listByOwnerLabel` answers): rule 4's one list and one pass.
pub(super) fn siblings(
    cluster: &dyn Cluster,
    group: &str,
    settings: &Settings,
) -> Result<Vec<ClusterObjectSet>, ContextError> {
    list_all(cluster, group, settings)?.in_group(group)
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
    /// The siblings of `own_name` among `group` (the objects of rule 3's
    /// group, [`siblings`]), surveyed for `revision`.
    pub(super) fn of(
        group: &'a [ClusterObjectSet],
        own_name: &str,
        revision: Option<i64>,
    ) -> GroupSurvey<'a> {
        let mut survey = GroupSurvey {
            highest: None,
            clash: None,
        };
        let siblings = group.iter().filter(|other| other.name() != own_name);
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
    use olm_guard_core::Capability;
    use serde_json::json;

    fn cos(name: &str, group: &str, revision: i64) -> serde_json::Value {
        json!({
            "metadata": {"name": name},
            "spec": {"group": group, "revision": revision},
        })
    }

    fn listed(items: serde_json::Value) -> ClusterObjectSets {
        let bytes = serde_json::to_vec(&json!({ "items": items })).unwrap();
        ClusterObjectSets::new(ListAnswer::new(
            bytes,
            "listing ClusterObjectSet".into(),
            Capability::ListAll,
            "olm.operatorframework.io/v1/ClusterObjectSet".into(),
        ))
    }

    /// The scan (a single evaluation) and the index (later evaluations of
    /// a batch) find the same siblings in the same order.
    #[test]
    fn the_index_finds_what_the_scan_finds() {
        let items = || {
            json!([
                cos("a-2", "a", 2),
                cos("b-1", "b", 1),
                cos("a-1", "a", 1),
                cos("a-1-copy", "a", 1),
                {"metadata": {"name": "loose"}},
            ])
        };
        let names = |objects: &ClusterObjectSets, group| -> Vec<String> {
            objects
                .in_group(group)
                .unwrap()
                .iter()
                .map(|o| o.name().to_string())
                .collect()
        };
        let shared = listed(items());
        names(&shared, "warm-up");
        for group in ["a", "b", "none"] {
            assert_eq!(
                names(&listed(items()), group),
                names(&shared, group),
                "{group}"
            );
        }
        assert_eq!(names(&shared, "a"), ["a-2", "a-1", "a-1-copy"]);
        let group = shared.in_group("a").unwrap();
        let survey = GroupSurvey::of(&group, "a-1", Some(1));
        assert_eq!(
            (survey.highest, survey.clash.map(|c| c.name())),
            (Some(2), Some("a-1-copy"))
        );
    }

    /// An answer the rule cannot read fails the lookup, on a scan and on
    /// the index alike, naming the position.
    #[test]
    fn an_unreadable_answer_fails_both_ways() {
        let items = json!([cos("a-1", "a", 1), {"metadata": {"name": 5}}]);
        let shared = listed(items.clone());
        let scan = shared.in_group("a").unwrap_err();
        let index = shared.in_group("a").unwrap_err();
        assert_eq!(scan, index);
        assert_eq!(listed(items).in_group("b").unwrap_err(), scan);
        assert!(
            scan.message.starts_with(
                "the host's answer to listing ClusterObjectSet is not valid: \
                 invalid type: integer `5`, expected a string at line 1 column"
            ),
            "{scan}"
        );
    }
}
