//! Pieces of the denial texts.

use olm_guard_rbac::PolicyRule;

/// Where oria would bind, as the denial names it.
pub(super) fn where_text(target: &str) -> String {
    if target.is_empty() {
        "cluster-wide (spec.namespaces is empty, so oria creates a ClusterRoleBinding)".to_string()
    } else {
        format!("in namespace \"{target}\"")
    }
}

/// Rules in the API server's compact RBAC text, as a Go-style list
/// (`[{..} {..}]`) so a rule's own commas stay unambiguous.
pub(super) fn rules_text(rules: &[PolicyRule]) -> String {
    let rules: Vec<String> = olm_guard_rbac::compact::compact(rules)
        .iter()
        .map(ToString::to_string)
        .collect();
    format!("[{}]", rules.join(" "))
}
