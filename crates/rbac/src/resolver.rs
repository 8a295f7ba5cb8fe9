//! Which rules does a user hold? Kubernetes' `DefaultRuleResolver`
//! (kubernetes `pkg/registry/rbac/validation/rule.go`) over an in-memory
//! set of RBAC objects, and the RBAC authorizer on top of it.
//!
//! Bindings are indexed by the usernames and groups their subjects match,
//! so a lookup costs the bindings that apply to the user, not every binding
//! in the cluster: the host answers many `can_i` calls against snapshots of
//! thousands of bindings.

use std::collections::{BTreeMap, HashMap};

use olm_guard_core::UserInfo;
use olm_guard_core::protocol::ResourceAttributes;

use crate::authorize::{rule_allows, rule_allows_non_resource};
use crate::{ClusterRole, PolicyRule, Role, RoleBinding, SYSTEM_MASTERS, Subject};

/// An authorization answer and, as the API server gives it, why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request is allowed.
    pub allowed: bool,
    /// The binding that allowed it, or what no bound role allows, in the
    /// words of a SubjectAccessReview's `reason`.
    pub reason: String,
}

/// The RBAC objects of a cluster (or of the part a policy loaded), indexed.
#[derive(Debug, Clone, Default)]
pub struct RbacStore {
    cluster_roles: BTreeMap<String, ClusterRole>,
    roles: HashMap<String, HashMap<String, Role>>,
    cluster_role_bindings: Bindings,
    role_bindings: HashMap<String, Bindings>,
}

/// Bindings of one scope (all ClusterRoleBindings, or one namespace's
/// RoleBindings) with their subjects indexed.
#[derive(Debug, Clone, Default)]
struct Bindings {
    items: Vec<RoleBinding>,
    /// username -> (binding, subject) for User and ServiceAccount subjects;
    /// a ServiceAccount subject is the user `system:serviceaccount:<ns>:<name>`.
    by_user: HashMap<String, Vec<(usize, usize)>>,
    by_group: HashMap<String, Vec<(usize, usize)>>,
}

impl Bindings {
    /// `namespace` is the binding's own namespace ("" for
    /// ClusterRoleBindings): the default namespace of ServiceAccount subjects.
    fn new(items: Vec<RoleBinding>, namespace: &str) -> Bindings {
        let mut by_user: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        let mut by_group: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        for (b, binding) in items.iter().enumerate() {
            for (s, subject) in binding.subjects.iter().enumerate() {
                match subject.kind.as_str() {
                    "User" => by_user
                        .entry(subject.name.clone())
                        .or_default()
                        .push((b, s)),
                    "Group" => by_group
                        .entry(subject.name.clone())
                        .or_default()
                        .push((b, s)),
                    "ServiceAccount" => {
                        if let Some(username) = service_account_username(subject, namespace) {
                            by_user.entry(username).or_default().push((b, s));
                        }
                    }
                    // Any other kind matches nobody, as in `appliesToUser` of `rule.go`.
                    _ => {}
                }
            }
        }
        Bindings {
            items,
            by_user,
            by_group,
        }
    }

    /// The bindings that apply to `user`, in list order, each with the first
    /// subject that matched (the API server names that one in its reason).
    fn applying_to(&self, user: &UserInfo) -> Vec<(&RoleBinding, &Subject)> {
        let mut first_subject: BTreeMap<usize, usize> = BTreeMap::new();
        let hits = self
            .by_user
            .get(&user.username)
            .into_iter()
            .chain(user.groups.iter().filter_map(|g| self.by_group.get(g)))
            .flatten();
        for &(b, s) in hits {
            first_subject
                .entry(b)
                .and_modify(|old| *old = (*old).min(s))
                .or_insert(s);
        }
        first_subject
            .into_iter()
            .filter_map(|(b, s)| {
                let binding = self.items.get(b)?;
                Some((binding, binding.subjects.get(s)?))
            })
            .collect()
    }
}

/// Whether a subject (`kind`, `name`, `namespace`) of a binding in
/// `binding_namespace` ("" for a ClusterRoleBinding) is `user`, as
/// [`RbacStore`]'s index of bindings decides it (`appliesToUser` of
/// `rule.go`): a User by name, a Group by the user's groups, a
/// ServiceAccount by its username `system:serviceaccount:<ns>:<name>`.
pub(crate) fn subject_is(
    (kind, name, namespace): (&str, &str, &str),
    binding_namespace: &str,
    user: &UserInfo,
) -> bool {
    match kind {
        "User" => name == user.username,
        "Group" => user.groups.iter().any(|group| group == name),
        "ServiceAccount" => {
            let namespace = service_account_namespace(namespace, binding_namespace);
            !namespace.is_empty()
                && user
                    .username
                    .strip_prefix("system:serviceaccount:")
                    .and_then(|rest| rest.strip_prefix(namespace))
                    .and_then(|rest| rest.strip_prefix(':'))
                    == Some(name)
        }
        _ => false,
    }
}

/// A ServiceAccount subject's namespace: its own, else the binding's
/// (`""` for a ClusterRoleBinding).
fn service_account_namespace<'a>(
    subject_namespace: &'a str,
    binding_namespace: &'a str,
) -> &'a str {
    if subject_namespace.is_empty() {
        binding_namespace
    } else {
        subject_namespace
    }
}

/// A ServiceAccount subject's username; without a namespace (its own or
/// the binding's) it matches nobody (in the API server, a ServiceAccount
/// subject without a namespace in a ClusterRoleBinding is inert).
fn service_account_username(subject: &Subject, binding_namespace: &str) -> Option<String> {
    let namespace = service_account_namespace(&subject.namespace, binding_namespace);
    (!namespace.is_empty()).then(|| format!("system:serviceaccount:{namespace}:{}", subject.name))
}

/// One way a user reaches rules: a binding, its role and the subject that
/// matched; it explains a decision.
struct Grant<'a> {
    binding: &'a RoleBinding,
    subject: &'a Subject,
    /// "" for ClusterRoleBindings.
    namespace: &'a str,
    rules: &'a [PolicyRule],
}

impl Grant<'_> {
    /// The wording of `clusterRoleBindingDescriber`/`roleBindingDescriber`
    /// in `rule.go`.
    fn describe(&self) -> String {
        let subject = match self.subject.kind.as_str() {
            "ServiceAccount" => {
                let ns = service_account_namespace(&self.subject.namespace, self.namespace);
                format!("ServiceAccount \"{}/{ns}\"", self.subject.name)
            }
            kind => format!("{kind} \"{}\"", self.subject.name),
        };
        let role_ref = &self.binding.role_ref;
        if self.namespace.is_empty() {
            format!(
                "ClusterRoleBinding \"{}\" of {} \"{}\" to {subject}",
                self.binding.metadata.name, role_ref.kind, role_ref.name
            )
        } else {
            format!(
                "RoleBinding \"{}/{}\" of {} \"{}\" to {subject}",
                self.binding.metadata.name, self.namespace, role_ref.kind, role_ref.name
            )
        }
    }
}

impl RbacStore {
    /// Indexes the objects. A later Role or ClusterRole of the same name
    /// (and namespace) replaces an earlier one; bindings are all kept.
    pub fn new(
        cluster_roles: Vec<ClusterRole>,
        roles: Vec<Role>,
        cluster_role_bindings: Vec<RoleBinding>,
        role_bindings: Vec<RoleBinding>,
    ) -> Self {
        let cluster_roles = cluster_roles
            .into_iter()
            .map(|r| (r.metadata.name.clone(), r))
            .collect();
        let mut by_namespace: HashMap<String, HashMap<String, Role>> = HashMap::new();
        for role in roles {
            by_namespace
                .entry(role.metadata.namespace.clone())
                .or_default()
                .insert(role.metadata.name.clone(), role);
        }
        let mut bindings_by_namespace: HashMap<String, Vec<RoleBinding>> = HashMap::new();
        for binding in role_bindings {
            bindings_by_namespace
                .entry(binding.metadata.namespace.clone())
                .or_default()
                .push(binding);
        }
        RbacStore {
            cluster_roles,
            roles: by_namespace,
            cluster_role_bindings: Bindings::new(cluster_role_bindings, ""),
            role_bindings: bindings_by_namespace
                .into_iter()
                .map(|(ns, items)| {
                    let bindings = Bindings::new(items, &ns);
                    (ns, bindings)
                })
                .collect(),
        }
    }

    /// Every ClusterRole, ordered by name (the aggregation controller's order).
    pub fn cluster_roles(&self) -> impl Iterator<Item = &ClusterRole> {
        self.cluster_roles.values()
    }

    /// The ClusterRole `name`, if there is one.
    pub fn cluster_role(&self, name: &str) -> Option<&ClusterRole> {
        self.cluster_roles.get(name)
    }

    /// The Role `name` of `namespace`, if there is one.
    pub fn role(&self, namespace: &str, name: &str) -> Option<&Role> {
        self.roles.get(namespace)?.get(name)
    }

    /// Every ClusterRoleBinding, in the order given.
    pub fn cluster_role_bindings(&self) -> &[RoleBinding] {
        &self.cluster_role_bindings.items
    }

    /// The RoleBindings of `namespace`.
    pub fn role_bindings(&self, namespace: &str) -> &[RoleBinding] {
        self.role_bindings
            .get(namespace)
            .map(|b| b.items.as_slice())
            .unwrap_or_default()
    }

    /// The rules `user` holds in `namespace`: those of the roles bound to
    /// them by ClusterRoleBindings and, when `namespace` is not empty, by
    /// the RoleBindings of `namespace`. A binding whose role does not exist
    /// contributes nothing.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> Vec<PolicyRule> {
        self.grants(user, namespace)
            .into_iter()
            .flat_map(|g| g.rules.iter().cloned())
            .collect()
    }

    /// The RBAC authorizer's answer to a resource request, as the API server
    /// gives it to a SubjectAccessReview: members of `system:masters` are
    /// allowed everything (the privileged-group authorizer that runs before
    /// RBAC); anyone else is allowed when one rule of
    /// [`RbacStore::rules_for`] in the request's namespace allows it
    /// (kubernetes `plugin/pkg/auth/authorizer/rbac/rbac.go`, `Authorize`
    /// and `RuleAllows`).
    ///
    /// ```
    /// use olm_guard_core::UserInfo;
    /// use olm_guard_core::protocol::ResourceAttributes;
    /// use olm_guard_rbac::{PolicyRule, RbacStore, Role, RoleBinding, RoleRef, Subject};
    ///
    /// let mut reader = Role::default();
    /// reader.metadata.name = "config-reader".into();
    /// reader.metadata.namespace = "team-a".into();
    /// reader.rules = vec![PolicyRule::resource(&["get", "list"], &[""], &["configmaps"])];
    /// let mut binding = RoleBinding::default();
    /// binding.metadata.name = "alice-reads-config".into();
    /// binding.metadata.namespace = "team-a".into();
    /// binding.subjects = vec![Subject { kind: "User".into(), name: "alice".into(), ..Default::default() }];
    /// binding.role_ref = RoleRef { kind: "Role".into(), name: "config-reader".into(), ..Default::default() };
    /// let store = RbacStore::new(vec![], vec![reader], vec![], vec![binding]);
    ///
    /// let alice = UserInfo { username: "alice".into(), ..Default::default() };
    /// let get = ResourceAttributes::new("get", "", "configmaps").namespace("team-a");
    /// let decision = store.authorize(&alice, &get);
    /// assert!(decision.allowed);
    /// assert_eq!(
    ///     decision.reason,
    ///     "RBAC: allowed by RoleBinding \"alice-reads-config/team-a\" of Role \"config-reader\" to User \"alice\""
    /// );
    /// // A RoleBinding grants nothing outside its namespace.
    /// let elsewhere = ResourceAttributes::new("get", "", "configmaps").namespace("team-b");
    /// assert!(!store.authorize(&alice, &elsewhere).allowed);
    /// ```
    pub fn authorize(&self, user: &UserInfo, attrs: &ResourceAttributes) -> Decision {
        let namespace = attrs.namespace.as_deref().unwrap_or("");
        self.decide(
            user,
            namespace,
            |rule| rule_allows(rule, attrs),
            || describe_request(attrs),
        )
    }

    /// The same for a non-resource request (`get` on `/healthz`); only
    /// ClusterRoleBindings can grant those.
    pub fn authorize_non_resource(&self, user: &UserInfo, verb: &str, path: &str) -> Decision {
        self.decide(
            user,
            "",
            |rule| rule_allows_non_resource(rule, verb, path),
            || format!("{verb} on the non-resource URL \"{path}\""),
        )
    }

    fn decide(
        &self,
        user: &UserInfo,
        namespace: &str,
        allows: impl Fn(&PolicyRule) -> bool,
        request: impl FnOnce() -> String,
    ) -> Decision {
        if user.in_group(SYSTEM_MASTERS) {
            return Decision {
                allowed: true,
                reason: format!(
                    "allowed: {} is in the {SYSTEM_MASTERS} group",
                    user.describe()
                ),
            };
        }
        match self
            .grants(user, namespace)
            .into_iter()
            .find(|g| g.rules.iter().any(&allows))
        {
            Some(grant) => Decision {
                allowed: true,
                reason: format!("RBAC: allowed by {}", grant.describe()),
            },
            None => Decision {
                allowed: false,
                reason: format!(
                    "RBAC: no role bound to {} allows {}",
                    user.describe(),
                    request()
                ),
            },
        }
    }

    /// ClusterRoleBindings first, then the RoleBindings of `namespace`,
    /// as `VisitRulesFor` of `rule.go`. A binding whose role does not exist
    /// grants nothing, as in the API server (the error is not fatal).
    fn grants<'a>(&'a self, user: &UserInfo, namespace: &'a str) -> Vec<Grant<'a>> {
        let cluster = self
            .cluster_role_bindings
            .applying_to(user)
            .into_iter()
            .map(|(binding, subject)| (binding, subject, ""));
        let local = (!namespace.is_empty())
            .then(|| self.role_bindings.get(namespace))
            .flatten()
            .into_iter()
            .flat_map(|b| b.applying_to(user))
            .map(|(binding, subject)| (binding, subject, namespace));
        cluster
            .chain(local)
            .filter_map(|(binding, subject, ns)| {
                Some(Grant {
                    binding,
                    subject,
                    namespace: ns,
                    rules: self.role_ref_rules(binding, ns)?,
                })
            })
            .collect()
    }

    /// `GetRoleReferenceRules` of `rule.go`: by `roleRef.kind` only; a Role is
    /// looked up in the binding's namespace ("" for a ClusterRoleBinding,
    /// where no Role lives).
    fn role_ref_rules(&self, binding: &RoleBinding, namespace: &str) -> Option<&[PolicyRule]> {
        let name = &binding.role_ref.name;
        match binding.role_ref.kind.as_str() {
            "ClusterRole" => self.cluster_role(name).map(|r| r.rules.as_slice()),
            "Role" => self.role(namespace, name).map(|r| r.rules.as_slice()),
            _ => None,
        }
    }
}

/// `update on clusterroles.rbac.authorization.k8s.io "admin"`, the request
/// in the words `kubectl auth can-i` uses.
fn describe_request(attrs: &ResourceAttributes) -> String {
    let group = attrs.group.as_deref().unwrap_or("");
    let mut what = attrs.resource.clone();
    if !group.is_empty() {
        what = format!("{what}.{group}");
    }
    if let Some(sub) = attrs.subresource.as_deref().filter(|s| !s.is_empty()) {
        what = format!("{what}/{sub}");
    }
    let mut text = format!("{} on {what}", attrs.verb);
    if let Some(name) = attrs.name.as_deref().filter(|s| !s.is_empty()) {
        text.push_str(&format!(" \"{name}\""));
    }
    match attrs.namespace.as_deref().filter(|s| !s.is_empty()) {
        Some(ns) => text.push_str(&format!(" in namespace \"{ns}\"")),
        None => text.push_str(" cluster-wide"),
    }
    text
}

#[cfg(test)]
mod tests;
