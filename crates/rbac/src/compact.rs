//! Rules as the API server prints them in escalation errors
//! (kubernetes `pkg/registry/rbac/validation/policy_compact.go` `CompactRules`
//! and `PolicyRule.CompactString`), so our messages read like upstream's and
//! a user can paste the missing rules into a Role.

use std::fmt;

use crate::PolicyRule;

/// Merges rules that differ only in their verbs: a "simple" rule is one API
/// group, one resource, at most one name and no URLs, which is what
/// [`crate::breakdown`] produces. Other rules are kept as they are.
/// Order is first appearance, so messages are stable.
pub fn compact(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::with_capacity(rules.len());
    let mut simple_at: std::collections::HashMap<SimpleKey<'_>, usize> = Default::default();
    for rule in rules {
        let Some(key) = SimpleKey::of(rule) else {
            out.push(rule.clone());
            continue;
        };
        match simple_at.get(&key) {
            Some(&i) => {
                if let Some(merged) = out.get_mut(i) {
                    for verb in &rule.verbs {
                        if !merged.verbs.contains(verb) {
                            merged.verbs.push(verb.clone());
                        }
                    }
                }
            }
            None => {
                simple_at.insert(key, out.len());
                out.push(rule.clone());
            }
        }
    }
    out
}

#[derive(Hash, PartialEq, Eq)]
struct SimpleKey<'a> {
    group: &'a str,
    resource: &'a str,
    name: Option<&'a str>,
}

impl<'a> SimpleKey<'a> {
    fn of(rule: &'a PolicyRule) -> Option<Self> {
        if !rule.non_resource_urls.is_empty() || rule.resource_names.len() > 1 {
            return None;
        }
        match (rule.api_groups.as_slice(), rule.resources.as_slice()) {
            ([group], [resource]) => Some(SimpleKey {
                group,
                resource,
                name: rule.resource_names.first().map(String::as_str),
            }),
            _ => None,
        }
    }
}

/// `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}`:
/// Go's `%q` of a string slice, empty lists left out.
impl fmt::Display for PolicyRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts = [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ];
        f.write_str("{")?;
        let mut first = true;
        for (label, values) in parts {
            if values.is_empty() {
                continue;
            }
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            let quoted: Vec<String> = values.iter().map(|v| quote(v)).collect();
            write!(f, "{label}:[{}]", quoted.join(" "))?;
        }
        f.write_str("}")
    }
}

/// A double-quoted string with JSON escapes, which agree with Go's `%q` for
/// every character valid in Kubernetes names.
fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breakdown;

    #[test]
    fn display_matches_upstream_compact_string() {
        let rule = PolicyRule::resource(&["get", "list"], &["apps"], &["deployments"]);
        assert_eq!(
            rule.to_string(),
            r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}"#
        );
        let url = PolicyRule::non_resource(&["get"], &["/healthz"]);
        assert_eq!(
            url.to_string(),
            r#"{NonResourceURLs:["/healthz"], Verbs:["get"]}"#
        );
        let named = PolicyRule::resource(&["update"], &[""], &["configmaps"]).with_names(&["a\"b"]);
        assert_eq!(
            named.to_string(),
            r#"{APIGroups:[""], Resources:["configmaps"], ResourceNames:["a\"b"], Verbs:["update"]}"#
        );
        assert_eq!(PolicyRule::default().to_string(), "{}");
    }

    #[test]
    fn compacts_atoms_back_by_verbs() {
        let rules = [
            PolicyRule::resource(&["get", "list"], &["apps"], &["deployments", "replicasets"]),
            PolicyRule::resource(&["watch"], &["apps"], &["deployments"]),
            PolicyRule::resource(&["get"], &[""], &["secrets"]).with_names(&["a", "b"]),
            PolicyRule::non_resource(&["get", "post"], &["/healthz"]),
        ];
        let atoms: Vec<PolicyRule> = rules.iter().flat_map(breakdown).collect();
        let compacted = compact(&atoms);
        let text: Vec<String> = compacted.iter().map(|r| r.to_string()).collect();
        assert_eq!(
            text,
            vec![
                r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list" "watch"]}"#,
                r#"{APIGroups:["apps"], Resources:["replicasets"], Verbs:["get" "list"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], ResourceNames:["a"], Verbs:["get"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], ResourceNames:["b"], Verbs:["get"]}"#,
                r#"{NonResourceURLs:["/healthz"], Verbs:["get"]}"#,
                r#"{NonResourceURLs:["/healthz"], Verbs:["post"]}"#,
            ]
        );
        let wide = PolicyRule::resource(&["get"], &["", "apps"], &["pods"]);
        assert_eq!(compact(std::slice::from_ref(&wide)), vec![wide]);
    }
}
