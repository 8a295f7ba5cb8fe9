//! Rules 2 and 3: what the author of an aggregationRule must hold.

use std::collections::HashSet;

use olm_guard_core::Verdict;
use olm_guard_core::selector::Selector;
use olm_guard_rbac::aggregation::{selected, selectors_of};
use olm_guard_rbac::{Holder, PolicyRule, RbacStore, covers, full_authority};

use super::change::Change;

impl Change<'_> {
    /// Rule 2: the user's cluster-wide rules must cover full authority.
    pub(super) fn check_full_authority(&self, store: &RbacStore) -> Option<String> {
        let held = store.rules_for(&self.request.user_info, "");
        let missing = covers(&held, &full_authority()).err()?;
        Some(self.full_authority_message(&missing))
    }

    /// The selectors rule 3 checks the roles of: the object's, and the old
    /// object's (an invalid one selects nothing here; rule 3 refuses it).
    pub(super) fn selectors(&self) -> Vec<Selector> {
        let mut selectors = selectors_of(&self.new).unwrap_or_default();
        if let Some(old) = &self.old {
            selectors.extend(selectors_of(old).unwrap_or_default());
        }
        selectors
    }

    /// Rule 3: cover the rules of every role the selectors match now. The
    /// selectors of the old object count too: removing an aggregationRule
    /// leaves the rules it collected in the object.
    pub(super) fn check_covers_selected(
        &self,
        store: &RbacStore,
    ) -> Result<Option<String>, Verdict> {
        let mut selectors = selectors_of(&self.new).map_err(|e| {
            Verdict::bad_request(format!(
                "object.{e}; write a valid label selector (operators In, NotIn, Exists, DoesNotExist)"
            ))
        })?;
        if let Some(old) = &self.old {
            selectors.extend(selectors_of(old).unwrap_or_default());
        }
        let held = store.rules_for(&self.request.user_info, "");
        let holder = Holder::new(&held);
        let mut missing: Vec<PolicyRule> = Vec::new();
        let mut seen: HashSet<PolicyRule> = HashSet::new();
        let mut sources: Vec<&str> = Vec::new();
        for role in selected(store, &selectors, self.name()) {
            let uncovered = holder.uncovered(&role.rules);
            if uncovered.is_empty() {
                continue;
            }
            sources.push(&role.metadata.name);
            missing.extend(
                uncovered
                    .into_iter()
                    .filter(|atom| seen.insert(atom.clone())),
            );
        }
        if missing.is_empty() {
            return Ok(None);
        }
        Ok(Some(self.covers_message(&sources, &missing)))
    }
}
