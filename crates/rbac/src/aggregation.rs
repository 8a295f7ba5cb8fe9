//! ClusterRole aggregation as the controller performs it (kubernetes
//! `pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go`):
//! which roles an aggregationRule selects, and which aggregated roles a
//! role's labels feed.

use olm_guard_core::selector::Selector;

use crate::{ClusterRole, PolicyRule, RbacStore};

/// The selectors of `role`'s aggregationRule, in order; none without one.
/// An invalid selector is an error naming its index, which is how a
/// policy can point at the field to fix.
pub fn selectors_of(role: &ClusterRole) -> Result<Vec<Selector>, String> {
    let Some(rule) = &role.aggregation_rule else {
        return Ok(Vec::new());
    };
    rule.cluster_role_selectors
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Selector::from_label_selector(s)
                .map_err(|e| format!("aggregationRule.clusterRoleSelectors[{i}]: {e}"))
        })
        .collect()
}

/// The ClusterRoles other than one named `self_name` that any of
/// `selectors` matches, each once, in name order.
pub fn selected<'a>(
    store: &'a RbacStore,
    selectors: &[Selector],
    self_name: &str,
) -> Vec<&'a ClusterRole> {
    store
        .cluster_roles()
        .filter(|r| r.metadata.name != self_name)
        .filter(|r| selectors.iter().any(|s| s.matches(&r.metadata.labels)))
        .collect()
}

/// The rules the controller would write into `role`: for each selector in
/// order, the rules of the roles it matches (name order, `role` itself
/// skipped), each rule once.
pub fn aggregate(store: &RbacStore, role: &ClusterRole) -> Result<Vec<PolicyRule>, String> {
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in selectors_of(role)? {
        for source in selected(store, std::slice::from_ref(&selector), &role.metadata.name) {
            for rule in &source.rules {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    Ok(rules)
}

/// The aggregated ClusterRoles (other than `self_name`) whose
/// aggregationRule selects a role with `labels`: the roles such a role
/// feeds. Roles with an invalid selector aggregate nothing, as the
/// controller fails on them.
pub fn fed_by<'a>(
    store: &'a RbacStore,
    labels: &std::collections::BTreeMap<String, String>,
    self_name: &str,
) -> Vec<&'a ClusterRole> {
    store
        .cluster_roles()
        .filter(|t| t.metadata.name != self_name && t.has_aggregation_rule())
        .filter(|t| {
            selectors_of(t).is_ok_and(|selectors| selectors.iter().any(|s| s.matches(labels)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn role(value: serde_json::Value) -> ClusterRole {
        serde_json::from_value(value).unwrap()
    }

    fn store() -> RbacStore {
        RbacStore::new(
            vec![
                role(
                    json!({"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": [
                    {"matchLabels": {"feed": "agg"}},
                    {"matchExpressions": [{"key": "extra", "operator": "Exists"}]}]}}),
                ),
                role(json!({"metadata": {"name": "b", "labels": {"feed": "agg"}},
                    "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]})),
                role(
                    json!({"metadata": {"name": "a", "labels": {"feed": "agg", "extra": ""}},
                    "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
                              {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}]}),
                ),
                role(json!({"metadata": {"name": "c", "labels": {"extra": "1"}},
                    "rules": [{"verbs": ["watch"], "apiGroups": [""], "resources": ["pods"]}]})),
                role(
                    json!({"metadata": {"name": "everything"}, "aggregationRule": {"clusterRoleSelectors": [{}]}}),
                ),
                role(
                    json!({"metadata": {"name": "broken"}, "aggregationRule": {"clusterRoleSelectors": [
                    {"matchExpressions": [{"key": "feed", "operator": "Equals", "values": ["agg"]}]}]}}),
                ),
            ],
            vec![],
            vec![],
            vec![],
        )
    }

    #[test]
    fn aggregates_in_selector_then_name_order_without_duplicates() {
        let s = store();
        let agg = s.cluster_role("agg").unwrap();
        let verbs: Vec<String> = aggregate(&s, agg)
            .unwrap()
            .into_iter()
            .flat_map(|r| r.verbs)
            .collect();
        assert_eq!(verbs, vec!["get", "list", "watch"]);
    }

    #[test]
    fn empty_selector_selects_every_other_role() {
        let s = store();
        let all = s.cluster_role("everything").unwrap();
        let names: Vec<&str> = selected(&s, &selectors_of(all).unwrap(), "everything")
            .iter()
            .map(|r| r.metadata.name.as_str())
            .collect();
        assert_eq!(names, vec!["a", "agg", "b", "broken", "c"]);
    }

    #[test]
    fn fed_by_finds_the_aggregators() {
        let s = store();
        let labels = s.cluster_role("b").unwrap().metadata.labels.clone();
        let names: Vec<&str> = fed_by(&s, &labels, "b")
            .iter()
            .map(|r| r.metadata.name.as_str())
            .collect();
        assert_eq!(names, vec!["agg", "everything"]);
        let names: Vec<&str> = fed_by(&s, &labels, "agg")
            .iter()
            .map(|r| r.metadata.name.as_str())
            .collect();
        assert_eq!(names, vec!["everything"]);
    }

    #[test]
    fn invalid_selectors_are_named() {
        let s = store();
        let err = selectors_of(s.cluster_role("broken").unwrap()).unwrap_err();
        assert!(
            err.starts_with("aggregationRule.clusterRoleSelectors[0]: \"Equals\""),
            "{err}"
        );
    }
}
