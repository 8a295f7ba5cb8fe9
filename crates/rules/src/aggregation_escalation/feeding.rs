//! Rule 4: a role whose labels another ClusterRole aggregates feeds it.

use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_core::selector::Selector;
use olm_guard_core::{Cluster, ClusterExt, Verdict};
use olm_guard_rbac::aggregation::{fed_by, selectors_of};
use olm_guard_rbac::{ClusterRole, RBAC_GROUP, RbacStore};

use super::Settings;
use super::change::Change;

/// One aggregated role T the object would feed, and why it is checked.
pub(super) struct Feed<'a> {
    pub(super) target: &'a ClusterRole,
    /// T's first selector matching the object, for the message.
    pub(super) selector: Selector,
}

impl Change<'_> {
    /// The aggregated roles this change feeds and must be checked for.
    pub(super) fn feeds<'s>(&self, store: &'s RbacStore, settings: &Settings) -> Vec<Feed<'s>> {
        let labels = &self.new.metadata.labels;
        let adds_rules = self.old.as_ref().is_none_or(|old| self.adds_rules(old));
        fed_by(store, labels, self.name())
            .into_iter()
            .filter(|t| !settings.allow_feeding.contains(&t.metadata.name))
            .filter_map(|target| {
                let selectors = selectors_of(target).ok()?;
                let fed_before = self
                    .old
                    .as_ref()
                    .is_some_and(|old| selectors.iter().any(|s| s.matches(&old.metadata.labels)));
                if fed_before && !adds_rules {
                    return None;
                }
                let selector = selectors.into_iter().find(|s| s.matches(labels))?;
                Some(Feed { target, selector })
            })
            .collect()
    }

    /// Rule 4: for each fed role, `update` on it; the ones denied.
    pub(super) fn feeds_without_update_right<'f, 's>(
        &self,
        cluster: &dyn Cluster,
        feeds: &'f [Feed<'s>],
    ) -> Result<Vec<&'f Feed<'s>>, Verdict> {
        let mut denied = Vec::new();
        for feed in feeds {
            let name = &feed.target.metadata.name;
            let attrs = ResourceAttributes::new("update", RBAC_GROUP, "clusterroles").name(name);
            let allowed = cluster
                .authorized(&self.request.user_info, attrs)
                .map_err(|e| {
                    Verdict::context_unavailable(
                        &format!(
                            "whether the user may update ClusterRole \"{name}\" (kubernetes/can_i)"
                        ),
                        e,
                    )
                })?;
            if !allowed {
                denied.push(feed);
            }
        }
        Ok(denied)
    }
}
