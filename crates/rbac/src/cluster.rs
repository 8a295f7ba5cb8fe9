//! Loading RBAC objects through the Kubewarden host capabilities, for rules
//! that evaluate RBAC themselves (Covers checks) instead of asking `can_i`.

use rustc_hash::FxHashMap;
use std::convert::Infallible;
use std::rc::Rc;

use olm_guard_core::UserInfo;
use olm_guard_core::listed::{Keyed, ListAnswer, Meta, Named, Str};
use olm_guard_core::protocol::ListAllResourcesRequest;
use olm_guard_core::selector::Selector;
use olm_guard_core::{Cluster, ClusterExt, ContextError};
use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};

use crate::resolver::subject_is;
use crate::{ClusterRole, RBAC_API_VERSION, RbacStore, Role, RoleBinding};

/// What a rule will ask of the store it loads. A single evaluation reads
/// whole only the objects these concern (the bindings of `user`, the roles
/// they grant, the roles `selected_by` selects, the aggregated roles), and
/// of the others what it takes to tell (a role's name, labels and whether
/// it aggregates; a binding's namespace and subjects), so a request on a
/// cluster of 10,000 RBAC objects does not decode them all
/// (`olm_guard_core::listed`); the wanted ones are then read from where
/// they start in the answer ([`olm_guard_core::listed::Keyed`]), not by a
/// second pass over it. For the questions it was loaded for, that store
/// answers exactly what the whole one answers.
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'w> {
    /// The user whose rules are asked for ([`RbacStore::rules_for`],
    /// [`RbacStore::authorize`]).
    pub user: &'w UserInfo,
    /// ClusterRoles whose labels one of these selects
    /// ([`crate::aggregation::selected`]).
    pub selected_by: &'w [Selector],
    /// Every ClusterRole with an aggregationRule
    /// ([`crate::aggregation::fed_by`]).
    pub aggregated: bool,
}

/// The RBAC objects a rule needs for `namespace`: every ClusterRole and
/// ClusterRoleBinding (`list_resources_all`) and, when `namespace` is not
/// empty, its Roles and RoleBindings (`list_resources_by_namespace`), all as
/// `rbac.authorization.k8s.io/v1`.
///
/// A module that calls this must declare those kinds in its
/// `contextAwareResources` (the Role kinds only when it passes a namespace).
///
/// A single evaluation reads whole only what `wanted` concerns. In a batch
/// ([`Cluster::shared_answers`]) the store holds every object, is built
/// once per namespace and shared by every evaluation of the batch. When it
/// cannot be built (an object does not read whole, a list fails), the batch
/// keeps that it has none, and each of its evaluations loads what it wants
/// as a single evaluation does: it fails only if it wants that object or
/// list, with its own message, so an audit and admission reach the same
/// verdict.
pub fn load(
    cluster: &dyn Cluster,
    namespace: &str,
    wanted: &Wanted<'_>,
) -> Result<Rc<RbacStore>, ContextError> {
    if let Some(shared) = cluster.shared_answers() {
        let Ok(whole) = shared.get_or_try_insert::<_, Infallible>(
            format!("RBAC objects for \"{namespace}\""),
            || Ok(build(cluster, namespace).ok().map(Rc::new)),
        );
        if let Some(store) = whole.as_ref() {
            return Ok(store.clone());
        }
    }
    build_wanted(cluster, namespace, wanted).map(Rc::new)
}

/// Every ClusterRole with an aggregationRule, and nothing else: what a rule
/// that asks only which aggregated roles a role's labels feed
/// ([`crate::aggregation::fed_by`]) needs. One evaluation lists the
/// ClusterRoles masked to their `aggregationRule` (no rules, no bindings):
/// policy-server builds each answer anew for each request, and a cluster
/// holds thousands of ClusterRoles but a handful of aggregated ones. A
/// batch shares the whole store [`load`] builds.
pub fn aggregated_roles(cluster: &dyn Cluster) -> Result<Rc<RbacStore>, ContextError> {
    let wanted = Wanted {
        user: &UserInfo::default(),
        selected_by: &[],
        aggregated: true,
    };
    if cluster.shared_answers().is_some() {
        return load(cluster, "", &wanted);
    }
    let answer = cluster
        .list_all_answer(
            &ListAllResourcesRequest::new(RBAC_API_VERSION, "ClusterRole")
                .field_masks(["aggregationRule"]),
        )
        .map_err(|e| failed(e, "ClusterRole", ""))?;
    let roles = read_roles(&answer, &wanted, "ClusterRole", "")?;
    let aggregated = roles.whole::<ClusterRole>(&answer, &[], "ClusterRole", "")?;
    Ok(Rc::new(RbacStore::new(
        aggregated,
        Vec::new(),
        Vec::new(),
        Vec::new(),
    )))
}

fn build(cluster: &dyn Cluster, namespace: &str) -> Result<RbacStore, ContextError> {
    let cluster_roles = list_all(cluster, "ClusterRole")?;
    let cluster_role_bindings = list_all(cluster, "ClusterRoleBinding")?;
    let (roles, role_bindings) = if namespace.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        (
            list_in(cluster, "Role", namespace)?,
            list_in(cluster, "RoleBinding", namespace)?,
        )
    };
    Ok(RbacStore::new(
        cluster_roles,
        roles,
        cluster_role_bindings,
        role_bindings,
    ))
}

/// The store for `wanted`, from the same host calls in the same order as
/// [`build`]; each answer is read lightly (what decides whether an item is
/// wanted) and then the wanted items whole.
fn build_wanted(
    cluster: &dyn Cluster,
    namespace: &str,
    wanted: &Wanted<'_>,
) -> Result<RbacStore, ContextError> {
    let cluster_roles = answer_all(cluster, "ClusterRole")?;
    let cluster_roles_read = read_roles(&cluster_roles, wanted, "ClusterRole", "")?;
    let cluster_role_bindings = answer_all(cluster, "ClusterRoleBinding")?;
    let cluster_bindings = read_bindings(&cluster_role_bindings, wanted, "ClusterRoleBinding", "")?;
    let (mut roles, mut role_bindings) = (Vec::new(), Vec::new());
    if !namespace.is_empty() {
        let role_answer = answer_in(cluster, "Role", namespace)?;
        let roles_read = read_roles(&role_answer, wanted, "Role", namespace)?;
        let binding_answer = answer_in(cluster, "RoleBinding", namespace)?;
        role_bindings = read_bindings(&binding_answer, wanted, "RoleBinding", namespace)?;
        let granted = granted_by(&role_bindings);
        roles = roles_read.whole::<Role>(&role_answer, &granted, "Role", namespace)?;
    }
    let granted = granted_by(cluster_bindings.iter().chain(&role_bindings));
    Ok(RbacStore::new(
        cluster_roles_read.whole::<ClusterRole>(&cluster_roles, &granted, "ClusterRole", "")?,
        roles,
        cluster_bindings,
        role_bindings,
    ))
}

/// The names of the roles `bindings` grant.
fn granted_by<'b>(bindings: impl IntoIterator<Item = &'b RoleBinding>) -> Vec<&'b str> {
    bindings
        .into_iter()
        .map(|binding| binding.role_ref.name.as_str())
        .collect()
}

/// A Role or ClusterRole as the first reading sees it: what decides
/// whether it is wanted. Read [`Keyed`], so that the few roles a request
/// needs whole are read from where they start instead of in a second
/// pass over every role of the answer.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase", expecting = "struct ClusterRole")]
struct ListedRole<'a> {
    #[serde(borrow)]
    metadata: Option<Meta<'a>>,
    aggregation_rule: Option<IgnoredAny>,
}

impl Named for ListedRole<'_> {
    const EXPECTING: &'static str = "struct ClusterRole";
}

/// The roles of an answer, each with whether it is wanted for itself
/// (selected, aggregated), in list order.
struct RolesRead<'a> {
    items: Vec<RoleRead<'a>>,
}

/// What is kept of a role after its light reading (its labels are
/// dropped once matched): enough to choose it and to read it whole.
struct RoleRead<'a> {
    namespace: Str<'a>,
    name: Str<'a>,
    first_key: Option<&'a str>,
    /// Wanted whatever the bindings grant (selected, aggregated).
    itself: bool,
    /// In the namespace asked about (or cluster-scoped).
    in_scope: bool,
}

impl RoleRead<'_> {
    fn key(&self) -> (&str, &str) {
        (self.namespace.as_str(), self.name.as_str())
    }
}

impl RolesRead<'_> {
    /// The positions of the roles to read whole: those wanted for
    /// themselves or `granted` by a wanted binding, each name (in its
    /// namespace) at its last position, as [`RbacStore::new`] keeps the
    /// last role of a name.
    fn wanted(&self, granted: &[&str]) -> Vec<usize> {
        let wanted_at = |at: usize| {
            self.items.get(at).is_some_and(|role| {
                role.in_scope && (role.itself || granted.contains(&role.name.as_str()))
            })
        };
        // Where each wanted role's name (in its namespace) last appears:
        // a later role of that name replaces it, wanted or not.
        // Hashed: every role's name is looked up, and a B-tree's string
        // comparisons cost more than the rest of the reading. Fx, not
        // SipHash, for the same reason; the keys stored are only those of
        // the roles the request wants.
        let mut last: FxHashMap<(&str, &str), usize> = (0..self.items.len())
            .filter(|&at| wanted_at(at))
            .filter_map(|at| self.items.get(at))
            .map(|role| (role.key(), 0))
            .collect();
        for (at, role) in self.items.iter().enumerate() {
            if let Some(position) = last.get_mut(&role.key()) {
                *position = at;
            }
        }
        let mut positions: Vec<usize> = last.into_values().filter(|&at| wanted_at(at)).collect();
        positions.sort_unstable();
        positions
    }

    /// The wanted roles (see [`RolesRead::wanted`]) read whole, in list
    /// order.
    fn whole<T: DeserializeOwned>(
        &self,
        answer: &ListAnswer,
        granted: &[&str],
        kind: &str,
        namespace: &str,
    ) -> Result<Vec<T>, ContextError> {
        let found = |at: usize| self.items.get(at).map(|role| (at, role.first_key));
        read_whole(
            answer,
            self.wanted(granted).into_iter().filter_map(found),
            kind,
            namespace,
        )
    }
}

fn read_roles<'a>(
    answer: &'a ListAnswer,
    wanted: &Wanted<'_>,
    kind: &str,
    namespace: &str,
) -> Result<RolesRead<'a>, ContextError> {
    let mut items = Vec::new();
    answer
        .each(|role: Keyed<'a, ListedRole<'a>>| {
            let meta = role.item.metadata.unwrap_or_default();
            let itself = (wanted.aggregated && role.item.aggregation_rule.is_some())
                || wanted
                    .selected_by
                    .iter()
                    .any(|s| s.matches_by(|key| meta.labels.get(key)));
            let role_namespace = meta.namespace.unwrap_or_default();
            // A Role of another namespace than the one asked about (the
            // answer holds every namespace's) is never wanted.
            let in_scope = namespace.is_empty() || role_namespace.as_str() == namespace;
            items.push(RoleRead {
                namespace: role_namespace,
                name: meta.name.unwrap_or_default(),
                first_key: role.first_key,
                itself,
                in_scope,
            });
        })
        .map_err(|e| failed(e, kind, namespace))?;
    Ok(RolesRead { items })
}

/// The items at the given positions of `answer`, each read whole as `T`
/// from where it starts (its first key). An item that does not read so,
/// or whose start is not known, is read by a pass over the answer, which
/// words a failure as a single reading of the answer does.
fn read_whole<'a, T: DeserializeOwned>(
    answer: &ListAnswer,
    items: impl Iterator<Item = (usize, Option<&'a str>)>,
    kind: &str,
    namespace: &str,
) -> Result<Vec<T>, ContextError> {
    let mut read = Vec::new();
    for (at, first_key) in items {
        match first_key.and_then(|key| answer.read_item(key)) {
            Some(Ok(item)) => read.push(item),
            _ => answer
                .pick(&[at], |item| read.push(item))
                .map_err(|e| failed(e, kind, namespace))?,
        }
    }
    Ok(read)
}

/// A RoleBinding or ClusterRoleBinding as the first reading sees it: what
/// decides whether it applies to the user. Read [`Keyed`]: only the
/// bindings of the user are read whole, as [`RoleBinding`]s.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase", expecting = "struct RoleBinding")]
struct ListedBinding<'a> {
    #[serde(borrow)]
    metadata: Option<BindingMeta<'a>>,
    #[serde(borrow)]
    subjects: Option<Vec<ListedSubject<'a>>>,
}

/// Of a binding's metadata, what decides whom its subjects name: the
/// namespace a ServiceAccount subject without one is in. (Not
/// [`Meta`]: a binding's name and labels would be read for nothing, on
/// every binding of the answer.)
#[derive(Default, Deserialize)]
#[serde(default, expecting = "struct ObjectMeta")]
struct BindingMeta<'a> {
    #[serde(borrow)]
    namespace: Option<Str<'a>>,
}

impl Named for ListedBinding<'_> {
    const EXPECTING: &'static str = "struct RoleBinding";
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase", expecting = "struct Subject")]
struct ListedSubject<'a> {
    #[serde(borrow)]
    kind: Option<Str<'a>>,
    #[serde(borrow)]
    name: Option<Str<'a>>,
    #[serde(borrow)]
    namespace: Option<Str<'a>>,
}

/// The bindings of an answer that grant the user something, read whole.
fn read_bindings(
    answer: &ListAnswer,
    wanted: &Wanted<'_>,
    kind: &str,
    namespace: &str,
) -> Result<Vec<RoleBinding>, ContextError> {
    let mut applying = Vec::new();
    let mut at = 0;
    answer
        .each(|binding: Keyed<'_, ListedBinding<'_>>| {
            let binding_namespace = binding
                .item
                .metadata
                .as_ref()
                .map_or("", |m| Str::of(&m.namespace));
            let in_scope = namespace.is_empty() || binding_namespace == namespace;
            let applies = in_scope
                && binding.item.subjects.iter().flatten().any(|subject| {
                    let subject = (
                        Str::of(&subject.kind),
                        Str::of(&subject.name),
                        Str::of(&subject.namespace),
                    );
                    subject_is(subject, binding_namespace, wanted.user)
                });
            if applies {
                applying.push((at, binding.first_key));
            }
            at += 1;
        })
        .map_err(|e| failed(e, kind, namespace))?;
    read_whole(answer, applying.into_iter(), kind, namespace)
}

fn answer_all(cluster: &dyn Cluster, kind: &str) -> Result<ListAnswer, ContextError> {
    cluster
        .list_all_answer(&ListAllResourcesRequest::new(RBAC_API_VERSION, kind))
        .map_err(|e| failed(e, kind, ""))
}

/// Every object of the namespaced `kind` (a Role or RoleBinding), of every
/// namespace, for a question about `namespace`: one list of the whole kind,
/// not one per namespace. policy-server keeps a watch-backed reflector per
/// distinct list request for as long as it runs, and every watch holds one
/// of the HTTP/2 streams kube-apiserver allows its one connection (100 by
/// default): a list per namespace would open one more watch for every
/// namespace a request names, until policy-server stops answering
/// (docs/performance.md, "The webhook path at scale"). The readers keep
/// the namespace's objects alone.
fn answer_in(
    cluster: &dyn Cluster,
    kind: &str,
    namespace: &str,
) -> Result<ListAnswer, ContextError> {
    cluster
        .list_all_answer(&ListAllResourcesRequest::new(RBAC_API_VERSION, kind))
        .map_err(|e| failed(e, kind, namespace))
}

/// A failed list, named as [`list_all`] and [`list_in`] name it.
fn failed(e: ContextError, kind: &str, namespace: &str) -> ContextError {
    let message = if namespace.is_empty() {
        format!("listing {kind}s: {e}")
    } else {
        format!("listing {kind}s in namespace \"{namespace}\": {e}")
    };
    e.with_message(message)
}

fn list_all<T: DeserializeOwned>(
    cluster: &dyn Cluster,
    kind: &str,
) -> Result<Vec<T>, ContextError> {
    cluster
        .list_all_as(&ListAllResourcesRequest::new(RBAC_API_VERSION, kind))
        .map_err(|e| failed(e, kind, ""))
}

/// The objects of the namespaced `kind` in `namespace`, from one list of
/// the whole kind (see [`answer_in`]).
fn list_in<T: DeserializeOwned + InNamespace>(
    cluster: &dyn Cluster,
    kind: &str,
    namespace: &str,
) -> Result<Vec<T>, ContextError> {
    let mut all: Vec<T> = cluster
        .list_all_as(&ListAllResourcesRequest::new(RBAC_API_VERSION, kind))
        .map_err(|e| failed(e, kind, namespace))?;
    all.retain(|object| object.namespace() == namespace);
    Ok(all)
}

/// The namespace a Role or RoleBinding is in.
trait InNamespace {
    fn namespace(&self) -> &str;
}

impl InNamespace for Role {
    fn namespace(&self) -> &str {
        &self.metadata.namespace
    }
}

impl InNamespace for RoleBinding {
    fn namespace(&self) -> &str {
        &self.metadata.namespace
    }
}

#[cfg(test)]
mod tests;
