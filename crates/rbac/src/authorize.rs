//! Does one rule allow one request? The API server's RBAC matching
//! (kubernetes `pkg/apis/rbac/v1/evaluation_helpers.go`, used by
//! `plugin/pkg/auth/authorizer/rbac/rbac.go` `RuleAllows`).
//!
//! Wildcards are deliberately narrow: `*` matches anything only where the
//! whole entry is `*`; `*/sub` matches one subresource of any resource; and
//! `pods/*` or `*/*` are literal names, not patterns. A policy that was more
//! generous than this would allow what the API server forbids.

use olm_guard_core::protocol::ResourceAttributes;

use crate::PolicyRule;

const ALL: &str = "*";

/// Whether `rule` allows the resource request `attrs`. `None` and `""` in
/// `attrs` mean the same (the core API group, no subresource, no name).
pub fn rule_allows(rule: &PolicyRule, attrs: &ResourceAttributes) -> bool {
    let group = attrs.group.as_deref().unwrap_or("");
    let subresource = attrs.subresource.as_deref().unwrap_or("");
    let name = attrs.name.as_deref().unwrap_or("");
    verb_matches(rule, &attrs.verb)
        && api_group_matches(rule, group)
        && resource_matches(rule, &attrs.resource, subresource)
        && resource_name_matches(rule, name)
}

/// Whether `rule` allows `verb` on the non-resource URL `path` (`/healthz`).
pub fn rule_allows_non_resource(rule: &PolicyRule, verb: &str, path: &str) -> bool {
    verb_matches(rule, verb) && non_resource_url_matches(rule, path)
}

/// Whether the rule lists `verb` or `*`.
pub fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

/// Whether the rule lists the API group `group` (`""` is the core group)
/// or `*`.
pub fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == ALL || g == group)
}

/// A bare parent (`pods`) does not match a subresource request (`pods/log`):
/// access to a subresource must be granted as such.
pub fn resource_matches(rule: &PolicyRule, resource: &str, subresource: &str) -> bool {
    let combined = if subresource.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}/{subresource}")
    };
    rule.resources.iter().any(|r| {
        r == ALL
            || *r == combined
            || (!subresource.is_empty() && r.strip_prefix("*/") == Some(subresource))
    })
}

/// An empty list allows every name. Otherwise the request's name must be
/// listed exactly, so requests without a name (create, list,
/// deletecollection) are not allowed by a name-restricted rule.
pub fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name)
}

/// A URL rule ending in `*` is a prefix (`/apis/*` allows `/apis/apps`);
/// elsewhere `*` is literal.
pub fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls.iter().any(|url| {
        url == ALL
            || url == path
            || (url.ends_with('*') && path.starts_with(url.trim_end_matches('*')))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> ResourceAttributes {
        ResourceAttributes::new(verb, group, resource)
            .subresource(sub)
            .name(name)
    }

    #[test]
    fn resource_rule_matching_table() {
        let pods_get = PolicyRule::resource(&["get"], &[""], &["pods"]);
        let any = PolicyRule::resource(&["*"], &["*"], &["*"]);
        let star_status = PolicyRule::resource(&["update"], &["apps"], &["*/status"]);
        let pods_star = PolicyRule::resource(&["get"], &[""], &["pods/*"]);
        let pods_log = PolicyRule::resource(&["get"], &[""], &["pods/log"]);
        let named =
            PolicyRule::resource(&["get", "update"], &[""], &["configmaps"]).with_names(&["cfg"]);
        let custom = PolicyRule::resource(
            &["manage"],
            &["olm.operatorframework.io"],
            &["clusterobjectsets/groups"],
        );
        let cases: Vec<(&str, &PolicyRule, ResourceAttributes, bool)> = vec![
            (
                "exact verb/group/resource",
                &pods_get,
                attrs("get", "", "pods", "", ""),
                true,
            ),
            (
                "other verb",
                &pods_get,
                attrs("list", "", "pods", "", ""),
                false,
            ),
            (
                "other group",
                &pods_get,
                attrs("get", "apps", "pods", "", ""),
                false,
            ),
            (
                "other resource",
                &pods_get,
                attrs("get", "", "secrets", "", ""),
                false,
            ),
            (
                "group None is core",
                &pods_get,
                ResourceAttributes {
                    group: None,
                    ..attrs("get", "", "pods", "", "")
                },
                true,
            ),
            (
                "bare parent vs subresource",
                &pods_get,
                attrs("get", "", "pods", "log", ""),
                false,
            ),
            (
                "exact subresource",
                &pods_log,
                attrs("get", "", "pods", "log", ""),
                true,
            ),
            (
                "subresource rule vs parent",
                &pods_log,
                attrs("get", "", "pods", "", ""),
                false,
            ),
            (
                "*/status matches any status",
                &star_status,
                attrs("update", "apps", "deployments", "status", ""),
                true,
            ),
            (
                "*/status not the parent",
                &star_status,
                attrs("update", "apps", "deployments", "", ""),
                false,
            ),
            (
                "*/status not another sub",
                &star_status,
                attrs("update", "apps", "deployments", "scale", ""),
                false,
            ),
            (
                "pods/* is literal",
                &pods_star,
                attrs("get", "", "pods", "log", ""),
                false,
            ),
            (
                "pods/* matches sub named *",
                &pods_star,
                attrs("get", "", "pods", "*", ""),
                true,
            ),
            (
                "wildcards allow all",
                &any,
                attrs(
                    "escalate",
                    "rbac.authorization.k8s.io",
                    "clusterroles",
                    "",
                    "x",
                ),
                true,
            ),
            (
                "wildcards allow subresources",
                &any,
                attrs("get", "", "pods", "exec", ""),
                true,
            ),
            (
                "name listed",
                &named,
                attrs("update", "", "configmaps", "", "cfg"),
                true,
            ),
            (
                "name not listed",
                &named,
                attrs("update", "", "configmaps", "", "other"),
                false,
            ),
            (
                "no name vs names rule",
                &named,
                attrs("get", "", "configmaps", "", ""),
                false,
            ),
            (
                "names are not prefixes",
                &named,
                attrs("get", "", "configmaps", "", "cfg-2"),
                false,
            ),
            (
                "custom verb and subresource",
                &custom,
                attrs(
                    "manage",
                    "olm.operatorframework.io",
                    "clusterobjectsets",
                    "groups",
                    "g",
                ),
                true,
            ),
            (
                "custom verb is exact",
                &custom,
                attrs(
                    "get",
                    "olm.operatorframework.io",
                    "clusterobjectsets",
                    "groups",
                    "g",
                ),
                false,
            ),
        ];
        for (what, rule, a, want) in cases {
            assert_eq!(rule_allows(rule, &a), want, "{what}");
        }
    }

    #[test]
    fn url_rules_never_allow_resources_and_vice_versa() {
        let url = PolicyRule::non_resource(&["*"], &["*"]);
        assert!(!rule_allows(&url, &attrs("get", "", "pods", "", "")));
        let res = PolicyRule::resource(&["*"], &["*"], &["*"]);
        assert!(!rule_allows_non_resource(&res, "get", "/healthz"));
    }

    #[test]
    fn non_resource_url_table() {
        let rule = PolicyRule::non_resource(&["get"], &["/healthz", "/apis/*", "/version"]);
        let cases = [
            ("get", "/healthz", true),
            ("get", "/healthz/ready", false),
            ("get", "/apis", false),
            ("get", "/apis/", true),
            ("get", "/apis/apps/v1", true),
            ("get", "/version", true),
            ("post", "/healthz", false),
            ("get", "/metrics", false),
        ];
        for (verb, path, want) in cases {
            assert_eq!(
                rule_allows_non_resource(&rule, verb, path),
                want,
                "{verb} {path}"
            );
        }
        let all = PolicyRule::non_resource(&["*"], &["*"]);
        assert!(rule_allows_non_resource(&all, "delete", "/anything"));
        let stars = PolicyRule::non_resource(&["get"], &["/logs**"]);
        assert!(rule_allows_non_resource(&stars, "get", "/logs/kube"));
    }
}
