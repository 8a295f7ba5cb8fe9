//! Does one set of rules grant everything another set grants? Kubernetes'
//! `Covers` (kubernetes/component-helpers `auth/rbac/validation/policy_comparator.go`),
//! the check behind role escalation prevention.
//!
//! The comparison is syntactic, not semantic: a servant `*` is covered only
//! by an owner `*`, never by an enumeration of every verb, because the
//! wildcard also grants verbs and resources that do not exist yet.

use rustc_hash::FxHashSet;

use crate::PolicyRule;

const ALL: &str = "*";

/// Splits a rule into atoms of one group, resource, verb (and name), or one
/// URL and verb. A rule with an empty verbs, apiGroups or resources list
/// grants nothing and so yields no resource atoms.
pub fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    atoms(rule).into_iter().map(Atom::to_rule).collect()
}

/// One atom of a rule ([`breakdown`]), borrowed from it: checking atoms
/// copies nothing, and only those no owner rule covers become rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Atom<'a> {
    /// One verb on one resource of one group, of one name or of all.
    Resource {
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        name: Option<&'a str>,
    },
    /// One verb on one non-resource URL.
    Url { verb: &'a str, url: &'a str },
}

/// The atoms of `rule`, in [`breakdown`]'s order: groups, then resources,
/// then verbs, then names; then the URLs with their verbs.
fn atoms(rule: &PolicyRule) -> Vec<Atom<'_>> {
    // No name is one atom for all names.
    let names: Vec<Option<&str>> = if rule.resource_names.is_empty() {
        vec![None]
    } else {
        rule.resource_names
            .iter()
            .map(|n| Some(n.as_str()))
            .collect()
    };
    let mut atoms = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                atoms.extend(names.iter().map(|&name| Atom::Resource {
                    verb,
                    group,
                    resource,
                    name,
                }));
            }
        }
    }
    for url in &rule.non_resource_urls {
        atoms.extend(rule.verbs.iter().map(|verb| Atom::Url { verb, url }));
    }
    atoms
}

impl Atom<'_> {
    /// The atom as the rule it stands for.
    fn to_rule(self) -> PolicyRule {
        match self {
            Atom::Resource {
                verb,
                group,
                resource,
                name,
            } => {
                let rule = PolicyRule::resource(&[verb], &[group], &[resource]);
                match name {
                    Some(name) => rule.with_names(&[name]),
                    None => rule,
                }
            }
            Atom::Url { verb, url } => PolicyRule::non_resource(&[verb], &[url]),
        }
    }
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
            .flat_map(atoms)
            .filter(|atom| !self.rules.iter().any(|o| o.covers(atom)))
            .map(Atom::to_rule)
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
/// large owner rules stays linear in the atoms. Fx-hashed: every atom's
/// strings are looked up, SipHash cost more than the rest of the check,
/// and the keys stored are the holder's own rules, so a request cannot
/// crowd a set it is checked against.
struct OwnerRule<'a> {
    /// Whether `verbs`, `groups`, `resources` hold `*`: asked of every
    /// atom, so answered once.
    all_verbs: bool,
    all_groups: bool,
    all_resources: bool,
    verbs: FxHashSet<&'a str>,
    groups: FxHashSet<&'a str>,
    resources: FxHashSet<&'a str>,
    /// The subresources of its `*/sub` resources (`sub`).
    any_resources_sub: FxHashSet<&'a str>,
    names: FxHashSet<&'a str>,
    urls: &'a [String],
}

impl<'a> OwnerRule<'a> {
    fn new(rule: &'a PolicyRule) -> Self {
        let set = |v: &'a [String]| v.iter().map(String::as_str).collect::<FxHashSet<_>>();
        let has_all = |v: &[String]| v.iter().any(|item| item == ALL);
        OwnerRule {
            all_verbs: has_all(&rule.verbs),
            all_groups: has_all(&rule.api_groups),
            all_resources: has_all(&rule.resources),
            verbs: set(&rule.verbs),
            groups: set(&rule.api_groups),
            resources: set(&rule.resources),
            any_resources_sub: rule
                .resources
                .iter()
                .filter_map(|r| r.strip_prefix("*/"))
                .collect(),
            names: set(&rule.resource_names),
            urls: &rule.non_resource_urls,
        }
    }

    /// `ruleCovers` of `policy_comparator.go`, for one atom.
    fn covers(&self, atom: &Atom<'_>) -> bool {
        let any_or = |all: bool, set: &FxHashSet<&str>, item: &str| all || set.contains(item);
        match *atom {
            Atom::Resource {
                verb,
                group,
                resource,
                name,
            } => {
                any_or(self.all_verbs, &self.verbs, verb)
                    && any_or(self.all_groups, &self.groups, group)
                    && self.resource_covers(resource)
                    && (self.names.is_empty() || name.is_some_and(|n| self.names.contains(n)))
            }
            // A URL atom has no groups, resources or names: an owner rule
            // restricted to names covers no URL.
            Atom::Url { verb, url } => {
                any_or(self.all_verbs, &self.verbs, verb)
                    && self.names.is_empty()
                    && self.urls.iter().any(|o| url_covers(o, url))
            }
        }
    }

    /// `x/sub` is also covered by `*/sub`; a servant `*/sub` only by
    /// `*/sub` itself or `*`.
    fn resource_covers(&self, resource: &str) -> bool {
        self.all_resources
            || self.resources.contains(resource)
            || resource
                .split_once('/')
                .is_some_and(|(_, sub)| self.any_resources_sub.contains(sub))
    }
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
                "servant x/sub by owner */sub",
                vec![r(&["get"], &[""], &["*/status"])],
                vec![r(&["get"], &[""], &["pods/status", "deployments/status"])],
                true,
            ),
            (
                "servant x/sub/more by owner */sub/more, not */sub",
                vec![r(&["get"], &[""], &["*/a/b", "*/a"])],
                vec![r(&["get"], &[""], &["x/a/b", "x/b"])],
                false,
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
                "an owner restricted to names covers no url",
                vec![url(&["get"], &["/healthz"]).with_names(&["a"])],
                vec![url(&["get"], &["/healthz"])],
                false,
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
