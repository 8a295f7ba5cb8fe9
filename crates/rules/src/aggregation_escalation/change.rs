//! The ClusterRole change a request makes, and rule 1: the bypasses, and
//! whether anything is left for rules 2 to 4 to check.

use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_core::{AdmissionRequest, Cluster, ClusterExt, Verdict};
use olm_guard_rbac::{ClusterRole, RBAC_GROUP, covers};

pub(super) struct Change<'r> {
    pub(super) request: &'r AdmissionRequest,
    pub(super) new: ClusterRole,
    pub(super) old: Option<ClusterRole>,
}

impl<'r> Change<'r> {
    pub(super) fn new(
        request: &'r AdmissionRequest,
        new: ClusterRole,
        old: Option<ClusterRole>,
    ) -> Self {
        Change { request, new, old }
    }

    /// The object's name; on CREATE with generateName it may be empty.
    pub(super) fn name(&self) -> &str {
        if self.new.metadata.name.is_empty() {
            &self.request.name
        } else {
            &self.new.metadata.name
        }
    }

    pub(super) fn user_text(&self) -> String {
        self.request.user_info.describe()
    }

    /// upstream `IsOnlyMutatingGCFields`: with ownerReferences and finalizers
    /// (and uid, which only the server sets) taken from the old object the
    /// objects are equal. Fields this type does not model are server-managed
    /// (resourceVersion, managedFields, timestamps) and ignored as upstream
    /// ignores them.
    pub(super) fn only_gc_fields_changed(&self) -> bool {
        let Some(old) = &self.old else {
            return false;
        };
        let mut new = self.new.clone();
        new.metadata.owner_references = old.metadata.owner_references.clone();
        new.metadata.finalizers = old.metadata.finalizers.clone();
        new.metadata.uid = old.metadata.uid.clone();
        new == *old
    }

    /// upstream `hasAggregationRule` on the new object, or the old one: a
    /// role that had one carries controller-written rules its editor may not hold.
    pub(super) fn involves_aggregation_rule(&self) -> bool {
        self.new.has_aggregation_rule()
            || self
                .old
                .as_ref()
                .is_some_and(ClusterRole::has_aggregation_rule)
    }

    /// Whether the object could newly feed some role, before listing any:
    /// every CREATE; an UPDATE only if its labels or its rules grow.
    pub(super) fn may_feed(&self) -> bool {
        match &self.old {
            None => true,
            Some(old) => old.metadata.labels != self.new.metadata.labels || self.adds_rules(old),
        }
    }

    /// New rules grant something the old ones did not (reordering or
    /// splitting a rule adds nothing).
    pub(super) fn adds_rules(&self, old: &ClusterRole) -> bool {
        covers(&old.rules, &self.new.rules).is_err()
    }

    /// Rule 1's `escalate` bypass. The name is the request's on UPDATE; a
    /// CREATE is a POST to the collection and has none, so an `escalate`
    /// grant restricted by resourceNames does not help there, as upstream.
    pub(super) fn holds_escalate(&self, cluster: &dyn Cluster) -> Result<bool, Verdict> {
        let name = match self.old {
            Some(_) if !self.request.name.is_empty() => self.request.name.as_str(),
            Some(_) => self.new.metadata.name.as_str(),
            None => "",
        };
        let attrs = ResourceAttributes::new("escalate", RBAC_GROUP, "clusterroles").name(name);
        cluster
            .authorized(&self.request.user_info, attrs)
            .map_err(|e| {
                Verdict::context_unavailable(
                    "whether the user may escalate ClusterRoles (kubernetes/can_i)",
                    e,
                )
            })
    }
}
