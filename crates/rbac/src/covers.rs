//! Does one set of rules grant everything another set grants? Kubernetes'
//! `Covers` (kubernetes/component-helpers `auth/rbac/validation/policy_comparator.go`),
//! the check behind role escalation prevention.
//!
//! The comparison is syntactic, not semantic: a servant `*` is covered only
//! by an owner `*`, never by an enumeration of every verb, because the
//! wildcard also grants verbs and resources that do not exist yet.

use std::collections::HashSet;

use crate::PolicyRule;

const ALL: &str = "*";

/// Splits a rule into atoms of one group, resource, verb (and name), or one
/// URL and verb. A rule with an empty verbs, apiGroups or resources list
/// grants nothing and so yields no resource atoms.
pub fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut atoms = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let atom = |names: Vec<String>| PolicyRule {
                    verbs: vec![verb.clone()],
                    api_groups: vec![group.clone()],
                    resources: vec![resource.clone()],
                    resource_names: names,
                    non_resource_urls: Vec::new(),
                };
                if rule.resource_names.is_empty() {
                    atoms.push(atom(Vec::new()));
                } else {
                    atoms.extend(rule.resource_names.iter().map(|n| atom(vec![n.clone()])));
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            atoms.push(PolicyRule::non_resource(&[verb], &[url]));
        }
    }
    atoms
}

/// Whether `owner` grants everything `servant` grants: `Ok(())` when every
/// atom of `servant` (see [`breakdown`]) is covered by one owner rule, else
/// the atoms that are not.
///
/// Atoms are checked against single owner rules, never a combination, as
/// `Covers` does: owner rules `{get on pods}` and `{list on pods}` cover a
/// servant `{get, list on pods}` because the servant is split first.
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> Result<(), Vec<PolicyRule>> {
    let uncovered = Holder::new(owner).uncovered(servant);
    if uncovered.is_empty() {
        Ok(())
    } else {
        Err(uncovered)
    }
}

/// The rules someone holds, prepared once for many [`covers`] checks (one
/// per role a policy compares against).
pub struct Holder<'a> {
    rules: Vec<OwnerRule<'a>>,
}

impl<'a> Holder<'a> {
    /// Prepares `owner`'s rules for checks.
    pub fn new(owner: &'a [PolicyRule]) -> Self {
        Holder {
            rules: owner.iter().map(OwnerRule::new).collect(),
        }
    }

    /// The atoms of `servant` no single held rule covers; empty = covered.
    pub fn uncovered(&self, servant: &[PolicyRule]) -> Vec<PolicyRule> {
        servant
            .iter()
            .flat_map(breakdown)
            .filter(|atom| !self.rules.iter().any(|o| o.covers(atom)))
            .collect()
    }
}

/// What `cluster-admin` holds: every verb on every resource of every group,
/// and every verb on every non-resource URL (`fullAuthority` in kubernetes
/// `pkg/registry/rbac/clusterrole/policybased/storage.go`).
pub fn full_authority() -> Vec<PolicyRule> {
    vec![
        PolicyRule::resource(&[ALL], &[ALL], &[ALL]),
        PolicyRule::non_resource(&[ALL], &[ALL]),
    ]
}

/// An owner rule with its lists as sets, so covering many atoms against
/// large owner rules stays linear in the atoms.
struct OwnerRule<'a> {
    verbs: HashSet<&'a str>,
    groups: HashSet<&'a str>,
    resources: HashSet<&'a str>,
    names: HashSet<&'a str>,
    urls: &'a [String],
}

impl<'a> OwnerRule<'a> {
    fn new(rule: &'a PolicyRule) -> Self {
        let set = |v: &'a [String]| v.iter().map(String::as_str).collect::<HashSet<_>>();
        OwnerRule {
            verbs: set(&rule.verbs),
            groups: set(&rule.api_groups),
            resources: set(&rule.resources),
            names: set(&rule.resource_names),
            urls: &rule.non_resource_urls,
        }
    }

    /// `ruleCovers` of `policy_comparator.go`, for any servant rule (atoms
    /// in practice).
    fn covers(&self, servant: &PolicyRule) -> bool {
        let names = if servant.resource_names.is_empty() {
            self.names.is_empty()
        } else {
            self.names.is_empty() || has_all(&self.names, &servant.resource_names)
        };
        (self.verbs.contains(ALL) || has_all(&self.verbs, &servant.verbs))
            && (self.groups.contains(ALL) || has_all(&self.groups, &servant.api_groups))
            && self.resources_cover(&servant.resources)
            && names
            && servant
                .non_resource_urls
                .iter()
                .all(|path| self.urls.iter().any(|o| url_covers(o, path)))
    }

    /// `x/sub` is also covered by `*/sub`; a servant `*/sub` only by
    /// `*/sub` itself or `*`.
    fn resources_cover(&self, servant: &[String]) -> bool {
        if self.resources.contains(ALL) {
            return true;
        }
        servant.iter().all(|r| {
            self.resources.contains(r.as_str())
                || r.split_once('/')
                    .is_some_and(|(_, sub)| self.resources.contains(format!("*/{sub}").as_str()))
        })
    }
}

fn has_all(set: &HashSet<&str>, items: &[String]) -> bool {
    items.iter().all(|i| set.contains(i.as_str()))
}

/// An owner URL ending in `*` covers the URLs it is a prefix of; so `/*`
/// covers `/healthz` but not the servant URL `*`.
fn url_covers(owner: &str, path: &str) -> bool {
    owner == path || (owner.ends_with('*') && path.starts_with(owner.trim_end_matches('*')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule::resource(verbs, groups, resources)
    }

    fn url(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule::non_resource(verbs, urls)
    }

    #[test]
    fn breakdown_makes_atoms() {
        let rule = r(&["get", "list"], &["", "apps"], &["pods"]).with_names(&["a", "b"]);
        let atoms = breakdown(&rule);
        assert_eq!(atoms.len(), 8);
        assert!(atoms.contains(&r(&["list"], &["apps"], &["pods"]).with_names(&["b"])));
        assert_eq!(
            breakdown(&url(&["get", "post"], &["/healthz"])),
            vec![url(&["get"], &["/healthz"]), url(&["post"], &["/healthz"])]
        );
        assert!(breakdown(&r(&[], &["*"], &["*"])).is_empty());
        assert!(breakdown(&r(&["*"], &[], &["*"])).is_empty());
        assert!(breakdown(&r(&["*"], &["*"], &[])).is_empty());
    }

    /// The cases of kubernetes/component-helpers
    /// `auth/rbac/validation/policy_comparator_test.go`, and the narrow
    /// wildcards of this module's doc.
    #[test]
    fn covers_table() {
        let cases: Vec<(&str, Vec<PolicyRule>, Vec<PolicyRule>, bool)> = vec![
            (
                "exact",
                vec![r(&["get"], &[""], &["pods"])],
                vec![r(&["get"], &[""], &["pods"])],
                true,
            ),
            (
                "split servant across owner rules",
                vec![
                    r(&["get"], &[""], &["pods"]),
                    r(&["list"], &[""], &["pods"]),
                ],
                vec![r(&["get", "list"], &[""], &["pods"])],
                true,
            ),
            (
                "missing verb",
                vec![r(&["get"], &[""], &["pods"])],
                vec![r(&["get", "delete"], &[""], &["pods"])],
                false,
            ),
            (
                "owner verb * covers any verb",
                vec![r(&["*"], &[""], &["pods"])],
                vec![r(&["escalate"], &[""], &["pods"])],
                true,
            ),
            (
                "servant verb * needs owner *",
                vec![r(
                    &[
                        "get",
                        "list",
                        "watch",
                        "create",
                        "update",
                        "patch",
                        "delete",
                        "deletecollection",
                    ],
                    &[""],
                    &["pods"],
                )],
                vec![r(&["*"], &[""], &["pods"])],
                false,
            ),
            (
                "owner group *",
                vec![r(&["get"], &["*"], &["pods"])],
                vec![r(&["get"], &["apps", "batch"], &["pods"])],
                true,
            ),
            (
                "servant group * needs owner *",
                vec![r(&["get"], &["", "apps"], &["pods"])],
                vec![r(&["get"], &["*"], &["pods"])],
                false,
            ),
            (
                "owner resource *",
                vec![r(&["get"], &[""], &["*"])],
                vec![r(&["get"], &[""], &["pods", "pods/log"])],
                true,
            ),
            (
                "*/sub covers x/sub",
                vec![r(&["get"], &[""], &["*/status"])],
                vec![r(&["get"], &[""], &["pods/status", "nodes/status"])],
                true,
            ),
            (
                "*/sub not the parent",
                vec![r(&["get"], &[""], &["*/status"])],
                vec![r(&["get"], &[""], &["pods"])],
                false,
            ),
            (
                "*/sub not another sub",
                vec![r(&["get"], &[""], &["*/status"])],
                vec![r(&["get"], &[""], &["pods/log"])],
                false,
            ),
            (
                "servant */sub by owner */sub",
                vec![r(&["get"], &[""], &["*/status"])],
                vec![r(&["get"], &[""], &["*/status"])],
                true,
            ),
            (
                "servant */sub not by x/sub",
                vec![r(&["get"], &[""], &["pods/status"])],
                vec![r(&["get"], &[""], &["*/status"])],
                false,
            ),
            (
                "servant */sub by owner *",
                vec![r(&["get"], &[""], &["*"])],
                vec![r(&["get"], &[""], &["*/status"])],
                true,
            ),
            (
                "parent does not cover sub",
                vec![r(&["get"], &[""], &["pods"])],
                vec![r(&["get"], &[""], &["pods/log"])],
                false,
            ),
            (
                "servant * needs owner *",
                vec![r(&["get"], &[""], &["pods", "*/status"])],
                vec![r(&["get"], &[""], &["*"])],
                false,
            ),
            (
                "unrestricted owner covers a name",
                vec![r(&["get"], &[""], &["secrets"])],
                vec![r(&["get"], &[""], &["secrets"]).with_names(&["a"])],
                true,
            ),
            (
                "named owner covers the name",
                vec![r(&["get"], &[""], &["secrets"]).with_names(&["a", "b"])],
                vec![r(&["get"], &[""], &["secrets"]).with_names(&["a"])],
                true,
            ),
            (
                "named owner misses other name",
                vec![r(&["get"], &[""], &["secrets"]).with_names(&["a"])],
                vec![r(&["get"], &[""], &["secrets"]).with_names(&["c"])],
                false,
            ),
            (
                "named owner never covers unrestricted",
                vec![r(&["get"], &[""], &["secrets"]).with_names(&["a"])],
                vec![r(&["get"], &[""], &["secrets"])],
                false,
            ),
            (
                "url exact",
                vec![url(&["get"], &["/healthz"])],
                vec![url(&["get"], &["/healthz"])],
                true,
            ),
            (
                "url prefix",
                vec![url(&["get"], &["/apis/*"])],
                vec![url(&["get"], &["/apis/apps", "/apis/"])],
                true,
            ),
            (
                "url prefix miss",
                vec![url(&["get"], &["/apis/*"])],
                vec![url(&["get"], &["/api"])],
                false,
            ),
            (
                "owner /* covers /x",
                vec![url(&["get"], &["/*"])],
                vec![url(&["get"], &["/healthz"])],
                true,
            ),
            (
                "owner /* does not cover *",
                vec![url(&["*"], &["/*"])],
                vec![url(&["get"], &["*"])],
                false,
            ),
            (
                "owner * covers *",
                vec![url(&["*"], &["*"])],
                vec![url(&["get"], &["*"])],
                true,
            ),
            (
                "url owner never covers resources",
                vec![url(&["*"], &["*"])],
                vec![r(&["get"], &[""], &["pods"])],
                false,
            ),
            (
                "resource owner never covers urls",
                vec![r(&["*"], &["*"], &["*"])],
                vec![url(&["get"], &["/healthz"])],
                false,
            ),
            ("empty servant list", vec![], vec![], true),
            (
                "servant rule without verbs is vacuous",
                vec![],
                vec![r(&[], &[""], &["pods"])],
                true,
            ),
            (
                "servant rule without groups is vacuous",
                vec![],
                vec![r(&["get"], &[], &["pods"])],
                true,
            ),
            (
                "servant rule without resources is vacuous",
                vec![],
                vec![r(&["get"], &[""], &[])],
                true,
            ),
            (
                "no owner rules",
                vec![],
                vec![r(&["get"], &[""], &["pods"])],
                false,
            ),
            (
                "full authority covers itself",
                full_authority(),
                full_authority(),
                true,
            ),
        ];
        for (what, owner, servant, want) in cases {
            assert_eq!(covers(&owner, &servant).is_ok(), want, "{what}");
        }
    }

    #[test]
    fn uncovered_atoms_are_returned() {
        let owner = vec![r(&["get"], &[""], &["pods"])];
        let servant = vec![r(&["get", "list"], &[""], &["pods", "secrets"])];
        let missing = covers(&owner, &servant).unwrap_err();
        assert_eq!(
            missing,
            vec![
                r(&["list"], &[""], &["pods"]),
                r(&["get"], &[""], &["secrets"]),
                r(&["list"], &[""], &["secrets"]),
            ]
        );
        let missing = covers(&[r(&["*"], &["*"], &["*"])], &full_authority()).unwrap_err();
        assert_eq!(missing, vec![url(&["*"], &["*"])]);
    }
}
