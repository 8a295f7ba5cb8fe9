//! Loading RBAC objects through the Kubewarden host capabilities, for rules
//! that evaluate RBAC themselves (Covers checks) instead of asking `can_i`.

use std::collections::HashMap;
use std::rc::Rc;

use olm_guard_core::UserInfo;
use olm_guard_core::listed::{ListAnswer, Str};
use olm_guard_core::protocol::{ListAllResourcesRequest, ListResourcesByNamespaceRequest};
use olm_guard_core::selector::Selector;
use olm_guard_core::{Cluster, ClusterExt, ContextError};
use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};

use crate::resolver::subject_is;
use crate::{ClusterRole, RBAC_API_VERSION, RbacStore, Role, RoleBinding, RoleRef, Subject};

/// What a rule will ask of the store it loads. A single evaluation reads
/// whole only the objects these concern (the bindings of `user`, the roles
/// they grant, the roles `selected_by` selects, the aggregated roles), and
/// of the others what it takes to tell (names, labels, subjects, role
/// references), so a request on a cluster of 10,000 RBAC objects does not
/// decode them all (`olm_guard_core::listed`). For the questions it was
/// loaded for, that store answers exactly what the whole one answers.
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
/// once per namespace and shared by every evaluation of the batch.
pub fn load(
    cluster: &dyn Cluster,
    namespace: &str,
    wanted: &Wanted<'_>,
) -> Result<Rc<RbacStore>, ContextError> {
    match cluster.shared_answers() {
        Some(shared) => shared
            .get_or_try_insert(format!("RBAC objects for \"{namespace}\""), || {
                build(cluster, namespace)
            }),
        None => build_wanted(cluster, namespace, wanted).map(Rc::new),
    }
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
    let cluster_bindings_read =
        read_bindings(&cluster_role_bindings, wanted, "ClusterRoleBinding", "")?;
    let mut granted: Vec<String> = cluster_bindings_read.granted.clone();
    let (mut roles, mut role_bindings) = (Vec::new(), Vec::new());
    if !namespace.is_empty() {
        let role_answer = answer_in(cluster, "Role", namespace)?;
        let roles_read = read_roles(&role_answer, wanted, "Role", namespace)?;
        let binding_answer = answer_in(cluster, "RoleBinding", namespace)?;
        let bindings_read = read_bindings(&binding_answer, wanted, "RoleBinding", namespace)?;
        granted.extend(bindings_read.granted.iter().cloned());
        roles = picked::<Role>(
            &role_answer,
            &roles_read.wanted(&bindings_read.granted),
            "Role",
            namespace,
        )?;
        role_bindings = bindings_read.bindings;
    }
    Ok(RbacStore::new(
        picked::<ClusterRole>(
            &cluster_roles,
            &cluster_roles_read.wanted(&granted),
            "ClusterRole",
            "",
        )?,
        roles,
        cluster_bindings_read.bindings,
        role_bindings,
    ))
}

/// A Role or ClusterRole as the first reading sees it: what decides
/// whether it is wanted.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase", expecting = "struct ClusterRole")]
struct ListedRole<'a> {
    #[serde(borrow)]
    metadata: Option<olm_guard_core::listed::Meta<'a>>,
    aggregation_rule: Option<IgnoredAny>,
}

/// The roles of an answer, each with whether it is wanted for itself
/// (selected, aggregated), in list order.
struct RolesRead<'a> {
    /// (namespace, name, wanted whatever the bindings).
    items: Vec<(Str<'a>, Str<'a>, bool)>,
}

impl RolesRead<'_> {
    /// The positions of the roles to read whole: those wanted for
    /// themselves or `granted` by a wanted binding, each name (in its
    /// namespace) at its last position, as [`RbacStore::new`] keeps the
    /// last role of a name.
    fn wanted(&self, granted: &[String]) -> Vec<usize> {
        let wanted_at = |at: usize| {
            self.items.get(at).is_some_and(|(_, name, itself)| {
                *itself || granted.iter().any(|g| g == name.as_str())
            })
        };
        // Where each wanted role's name (in its namespace) last appears:
        // a later role of that name replaces it, wanted or not.
        // Hashed: every role's name is looked up, and a B-tree's string
        // comparisons cost more than the rest of the reading.
        let mut last: HashMap<(&str, &str), usize> = (0..self.items.len())
            .filter(|&at| wanted_at(at))
            .filter_map(|at| self.items.get(at))
            .map(|(namespace, name, _)| ((namespace.as_str(), name.as_str()), 0))
            .collect();
        for (at, (namespace, name, _)) in self.items.iter().enumerate() {
            if let Some(position) = last.get_mut(&(namespace.as_str(), name.as_str())) {
                *position = at;
            }
        }
        let mut positions: Vec<usize> = last.into_values().filter(|&at| wanted_at(at)).collect();
        positions.sort_unstable();
        positions
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
        .each(|role: ListedRole<'a>| {
            let meta = role.metadata.unwrap_or_default();
            let itself = (wanted.aggregated && role.aggregation_rule.is_some())
                || wanted
                    .selected_by
                    .iter()
                    .any(|s| s.matches_by(|key| meta.labels.get(key)));
            items.push((
                meta.namespace.unwrap_or_default(),
                meta.name.unwrap_or_default(),
                itself,
            ));
        })
        .map_err(|e| failed(e, kind, namespace))?;
    Ok(RolesRead { items })
}

/// A RoleBinding or ClusterRoleBinding as a list answer gives it, read
/// whole but borrowed: a binding is small, and only those of the user
/// become [`RoleBinding`]s.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase", expecting = "struct RoleBinding")]
struct ListedBinding<'a> {
    #[serde(borrow)]
    metadata: Option<olm_guard_core::listed::Meta<'a>>,
    #[serde(borrow)]
    subjects: Option<Vec<ListedSubject<'a>>>,
    #[serde(borrow)]
    role_ref: Option<ListedRoleRef<'a>>,
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
    #[serde(borrow)]
    api_group: Option<Str<'a>>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase", expecting = "struct RoleRef")]
struct ListedRoleRef<'a> {
    #[serde(borrow)]
    api_group: Option<Str<'a>>,
    #[serde(borrow)]
    kind: Option<Str<'a>>,
    #[serde(borrow)]
    name: Option<Str<'a>>,
}

impl ListedBinding<'_> {
    /// The binding as [`RbacStore`] reads it: name, namespace, subjects
    /// and role reference (the rest of its metadata is never read).
    fn to_binding(&self) -> RoleBinding {
        let own = |text: &Option<Str<'_>>| Str::of(text).to_string();
        let mut binding = RoleBinding::default();
        if let Some(meta) = &self.metadata {
            binding.metadata.name = own(&meta.name);
            binding.metadata.namespace = own(&meta.namespace);
        }
        binding.subjects = self
            .subjects
            .iter()
            .flatten()
            .map(|subject| Subject {
                kind: own(&subject.kind),
                name: own(&subject.name),
                namespace: own(&subject.namespace),
                api_group: own(&subject.api_group),
            })
            .collect();
        if let Some(role_ref) = &self.role_ref {
            binding.role_ref = RoleRef {
                api_group: own(&role_ref.api_group),
                kind: own(&role_ref.kind),
                name: own(&role_ref.name),
            };
        }
        binding
    }
}

/// The bindings of an answer that grant the user something, and the names
/// of the roles they grant.
struct BindingsRead {
    bindings: Vec<RoleBinding>,
    granted: Vec<String>,
}

fn read_bindings(
    answer: &ListAnswer,
    wanted: &Wanted<'_>,
    kind: &str,
    namespace: &str,
) -> Result<BindingsRead, ContextError> {
    let mut read = BindingsRead {
        bindings: Vec::new(),
        granted: Vec::new(),
    };
    answer
        .each(|binding: ListedBinding<'_>| {
            let binding_namespace = binding
                .metadata
                .as_ref()
                .map_or("", |m| Str::of(&m.namespace));
            let applies = binding.subjects.iter().flatten().any(|subject| {
                let subject = (
                    Str::of(&subject.kind),
                    Str::of(&subject.name),
                    Str::of(&subject.namespace),
                );
                subject_is(subject, binding_namespace, wanted.user)
            });
            if applies {
                let binding = binding.to_binding();
                read.granted.push(binding.role_ref.name.clone());
                read.bindings.push(binding);
            }
        })
        .map_err(|e| failed(e, kind, namespace))?;
    Ok(read)
}

fn picked<T: DeserializeOwned>(
    answer: &ListAnswer,
    positions: &[usize],
    kind: &str,
    namespace: &str,
) -> Result<Vec<T>, ContextError> {
    let mut items = Vec::with_capacity(positions.len());
    answer
        .pick(positions, |item| items.push(item))
        .map_err(|e| failed(e, kind, namespace))?;
    Ok(items)
}

fn answer_all(cluster: &dyn Cluster, kind: &str) -> Result<ListAnswer, ContextError> {
    cluster
        .list_all_answer(&ListAllResourcesRequest::new(RBAC_API_VERSION, kind))
        .map_err(|e| failed(e, kind, ""))
}

fn answer_in(
    cluster: &dyn Cluster,
    kind: &str,
    namespace: &str,
) -> Result<ListAnswer, ContextError> {
    cluster
        .list_by_namespace_read(
            &ListResourcesByNamespaceRequest::new(RBAC_API_VERSION, kind, namespace),
            Ok,
        )
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

fn list_in<T: DeserializeOwned>(
    cluster: &dyn Cluster,
    kind: &str,
    namespace: &str,
) -> Result<Vec<T>, ContextError> {
    cluster
        .list_by_namespace_as(&ListResourcesByNamespaceRequest::new(
            RBAC_API_VERSION,
            kind,
            namespace,
        ))
        .map_err(|e| failed(e, kind, namespace))
}

#[cfg(test)]
mod tests {
    use super::*;
    use olm_guard_core::protocol::{CanIRequest, GetResourceRequest, SubjectAccessReviewStatus};
    use olm_guard_core::{ContextErrorKind, NoCluster};
    use serde_json::json;
    use std::cell::RefCell;

    /// Answers lists from fixed JSON and records what was asked, to check
    /// that `load` asks for exactly the kinds a module declares.
    struct Fake {
        asked: RefCell<Vec<String>>,
    }

    impl Cluster for Fake {
        fn list_all(&self, r: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
            self.asked
                .borrow_mut()
                .push(format!("{} {}", r.api_version, r.kind));
            let items = match r.kind.as_str() {
                "ClusterRole" => json!([{"metadata": {"name": "reader"},
                    "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}]),
                "ClusterRoleBinding" => json!([{"metadata": {"name": "b"},
                    "subjects": [{"kind": "User", "name": "alice"}],
                    "roleRef": {"kind": "ClusterRole", "name": "reader"}}]),
                _ => {
                    return Err(ContextError::new(
                        ContextErrorKind::NotFound,
                        format!("unexpected {}", r.kind),
                    ));
                }
            };
            Ok(serde_json::to_vec(&json!({"items": items})).unwrap())
        }
        fn list_by_namespace(
            &self,
            r: &ListResourcesByNamespaceRequest,
        ) -> Result<Vec<u8>, ContextError> {
            self.asked
                .borrow_mut()
                .push(format!("{} {} in {}", r.api_version, r.kind, r.namespace));
            let items = match r.kind.as_str() {
                "Role" => json!([{"metadata": {"name": "cm", "namespace": r.namespace},
                    "rules": [{"verbs": ["update"], "apiGroups": [""], "resources": ["configmaps"]}]}]),
                "RoleBinding" => json!([{"metadata": {"name": "rb", "namespace": r.namespace},
                    "subjects": [{"kind": "User", "name": "alice"}],
                    "roleRef": {"kind": "Role", "name": "cm"}}]),
                _ => json!(null),
            };
            Ok(serde_json::to_vec(&json!({"items": items})).unwrap())
        }
        fn get(&self, _: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
            Err(ContextError::new(ContextErrorKind::Unavailable, "no get"))
        }
        fn can_i(&self, _: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
            Err(ContextError::new(ContextErrorKind::Unavailable, "no can_i"))
        }
    }

    fn wanted(user: &UserInfo) -> Wanted<'_> {
        Wanted {
            user,
            selected_by: &[],
            aggregated: false,
        }
    }

    fn alice() -> UserInfo {
        UserInfo {
            username: "alice".into(),
            ..UserInfo::default()
        }
    }

    #[test]
    fn cluster_wide_load_lists_cluster_kinds_only() {
        let fake = Fake {
            asked: RefCell::new(vec![]),
        };
        let store = load(&fake, "", &wanted(&alice())).unwrap();
        assert_eq!(
            *fake.asked.borrow(),
            vec![
                "rbac.authorization.k8s.io/v1 ClusterRole",
                "rbac.authorization.k8s.io/v1 ClusterRoleBinding"
            ]
        );
        assert_eq!(store.rules_for(&alice(), "").len(), 1);
    }

    #[test]
    fn namespaced_load_adds_roles_and_bindings() {
        let fake = Fake {
            asked: RefCell::new(vec![]),
        };
        let store = load(&fake, "team", &wanted(&alice())).unwrap();
        assert_eq!(fake.asked.borrow().len(), 4);
        assert_eq!(store.rules_for(&alice(), "team").len(), 2);
    }

    #[test]
    fn failures_name_the_lookup() {
        let err = load(&NoCluster, "", &wanted(&alice())).unwrap_err();
        assert!(err.message.starts_with("listing ClusterRoles: "), "{err}");
    }

    /// Answers every list from fixed items.
    struct Lists(Vec<(&'static str, serde_json::Value)>);

    impl Cluster for Lists {
        fn list_all(&self, r: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
            self.items(&r.kind)
        }
        fn list_by_namespace(
            &self,
            r: &ListResourcesByNamespaceRequest,
        ) -> Result<Vec<u8>, ContextError> {
            self.items(&r.kind)
        }
        fn get(&self, _: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
            Err(ContextError::new(ContextErrorKind::Unavailable, "no get"))
        }
        fn can_i(&self, _: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
            Err(ContextError::new(ContextErrorKind::Unavailable, "no can_i"))
        }
    }

    impl Lists {
        fn items(&self, kind: &str) -> Result<Vec<u8>, ContextError> {
            let items = self
                .0
                .iter()
                .find(|(k, _)| *k == kind)
                .map_or(json!([]), |(_, items)| items.clone());
            Ok(serde_json::to_vec(&json!({ "items": items })).unwrap())
        }
    }

    /// For the questions it was loaded for, the store of a single
    /// evaluation answers what the whole store answers.
    #[test]
    fn the_wanted_store_answers_as_the_whole_one() {
        use crate::aggregation::{fed_by, selected};
        let rule = |verb: &str, resource: &str| json!([{"verbs": [verb], "apiGroups": [""], "resources": [resource]}]);
        let cluster = Lists(vec![
            (
                "ClusterRole",
                json!([
                    {"metadata": {"name": "reader", "labels": {"agg": "yes"}}, "rules": rule("get", "pods")},
                    {"metadata": {"name": "writer"}, "rules": rule("update", "pods")},
                    {"metadata": {"name": "esc\"aped"}, "rules": rule("list", "secrets")},
                    {"metadata": {"name": "twice"}, "rules": rule("get", "a")},
                    {"metadata": {"name": "big", "labels": {"agg": "no"}},
                     "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "yes"}}]},
                     "rules": rule("get", "pods")},
                    {"metadata": {"name": "twice", "labels": {"agg": "yes"}}, "rules": rule("get", "b")},
                    {"metadata": {"name": "reader"}, "rules": rule("watch", "pods")},
                ]),
            ),
            (
                "ClusterRoleBinding",
                json!([
                    {"metadata": {"name": "b1"}, "subjects": [{"kind": "User", "name": "alice"}],
                     "roleRef": {"kind": "ClusterRole", "name": "reader"}},
                    {"metadata": {"name": "b2"}, "subjects": [{"kind": "Group", "name": "devs"}],
                     "roleRef": {"kind": "ClusterRole", "name": "esc\"aped"}},
                    {"metadata": {"name": "b3"}, "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "ops"}],
                     "roleRef": {"kind": "ClusterRole", "name": "writer"}},
                    {"metadata": {"name": "b4"}, "subjects": [{"kind": "User", "name": "bob"}],
                     "roleRef": {"kind": "ClusterRole", "name": "twice"}},
                    {"metadata": {"name": "b5"}, "subjects": [{"kind": "Robot", "name": "alice"}],
                     "roleRef": {"kind": "ClusterRole", "name": "writer"}},
                ]),
            ),
            (
                "Role",
                json!([
                    {"metadata": {"name": "local", "namespace": "team"}, "rules": rule("create", "configmaps")},
                ]),
            ),
            (
                "RoleBinding",
                json!([
                    {"metadata": {"name": "rb", "namespace": "team"},
                     "subjects": [{"kind": "ServiceAccount", "name": "bot"}],
                     "roleRef": {"kind": "Role", "name": "local"}},
                    {"metadata": {"name": "rb2", "namespace": "team"},
                     "subjects": [{"kind": "User", "name": "alice"}],
                     "roleRef": {"kind": "ClusterRole", "name": "writer"}},
                ]),
            ),
        ]);
        let user = |name: &str, groups: &[&str]| UserInfo {
            username: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        };
        let selectors = [Selector::parse("agg=yes").unwrap()];
        let labels = std::collections::BTreeMap::from([("agg".to_string(), "yes".to_string())]);
        for user in [
            user("alice", &["devs"]),
            user("bob", &[]),
            user("system:serviceaccount:ops:bot", &[]),
            user("system:serviceaccount:team:bot", &[]),
            user("nobody", &["none"]),
        ] {
            for namespace in ["", "team"] {
                let whole = build(&cluster, namespace).unwrap();
                let wanted = Wanted {
                    user: &user,
                    selected_by: &selectors,
                    aggregated: true,
                };
                let read = build_wanted(&cluster, namespace, &wanted).unwrap();
                let what = format!("{} in {namespace:?}", user.username);
                assert_eq!(
                    read.rules_for(&user, namespace),
                    whole.rules_for(&user, namespace),
                    "{what}"
                );
                for (verb, resource) in [
                    ("get", "pods"),
                    ("update", "pods"),
                    ("create", "configmaps"),
                ] {
                    let attrs =
                        olm_guard_core::protocol::ResourceAttributes::new(verb, "", resource)
                            .namespace("team");
                    assert_eq!(
                        read.authorize(&user, &attrs),
                        whole.authorize(&user, &attrs),
                        "{what}"
                    );
                }
                let names = |roles: Vec<&ClusterRole>| -> Vec<(String, usize)> {
                    roles
                        .iter()
                        .map(|r| (r.metadata.name.clone(), r.rules.len()))
                        .collect()
                };
                assert_eq!(
                    names(selected(&read, &selectors, "x")),
                    names(selected(&whole, &selectors, "x")),
                    "{what}"
                );
                assert_eq!(
                    names(fed_by(&read, &labels, "x")),
                    names(fed_by(&whole, &labels, "x")),
                    "{what}"
                );
            }
        }
    }
}
