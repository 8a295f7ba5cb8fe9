//! The RBAC store read from host answers: lists, masks, the namespaces in scope, failed lookups.

use super::*;
use olm_guard_core::protocol::{
    CanIRequest, GetResourceRequest, ListResourcesByNamespaceRequest, SubjectAccessReviewStatus,
};
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
            // Every namespace's: a load for "team" keeps team's alone.
            "Role" => json!(["team", "other"].map(|ns| json!({
                "metadata": {"name": "cm", "namespace": ns},
                "rules": [{"verbs": [format!("update-{ns}")], "apiGroups": [""],
                    "resources": ["configmaps"]}]}))),
            "RoleBinding" => json!(["team", "other"].map(|ns| json!({
                "metadata": {"name": "rb", "namespace": ns},
                "subjects": [{"kind": "User", "name": "alice"}],
                "roleRef": {"kind": "Role", "name": "cm"}}))),
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
        Err(ContextError::new(
            ContextErrorKind::InvalidRequest,
            format!(
                "a list of {} by namespace: one of the whole kind is expected",
                r.kind
            ),
        ))
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
    user("alice")
}

fn user(name: &str) -> UserInfo {
    UserInfo {
        username: name.into(),
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

/// A namespace's Roles and RoleBindings come from one list of each
/// whole kind (a bounded number of policy-server reflectors, whatever
/// the namespaces asked about), the namespace's kept alone.
#[test]
fn namespaced_load_adds_roles_and_bindings_of_that_namespace() {
    let fake = Fake {
        asked: RefCell::new(vec![]),
    };
    let store = load(&fake, "team", &wanted(&alice())).unwrap();
    assert_eq!(
        *fake.asked.borrow(),
        [
            "rbac.authorization.k8s.io/v1 ClusterRole",
            "rbac.authorization.k8s.io/v1 ClusterRoleBinding",
            "rbac.authorization.k8s.io/v1 Role",
            "rbac.authorization.k8s.io/v1 RoleBinding",
        ]
    );
    let rules = store.rules_for(&alice(), "team");
    assert_eq!(rules.len(), 2, "{rules:?}");
    assert!(!format!("{rules:?}").contains("update-other"), "{rules:?}");
    let shared = olm_guard_core::shared::Batch::new(&fake);
    let whole = load(&shared, "team", &wanted(&alice())).unwrap();
    assert_eq!(whole.rules_for(&alice(), "team"), rules);
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

/// A wanted role or binding that does not read whole fails as the
/// whole reading fails, word for word; one the user's request does not
/// need is not read whole.
#[test]
fn a_wanted_item_that_does_not_read_fails_as_a_whole_reading_does() {
    let binding = json!({"metadata": {"name": "b"}, "subjects": [{"kind": "User", "name": "alice"}],
        "roleRef": {"kind": "ClusterRole", "name": "bad"}});
    let fine_role = json!({"metadata": {"name": "fine"}});
    let bad_role = |bad: serde_json::Value| json!([fine_role, bad]);
    let bad_binding = |mut bad: serde_json::Value| {
        bad["subjects"] = binding["subjects"].clone();
        json!([binding, bad])
    };
    for (roles, bindings) in [
        (
            bad_role(json!({"metadata": {"name": "bad"}, "rules": [{"verbs": "get"}]})),
            json!([binding]),
        ),
        (
            bad_role(
                json!({"metadata": {"name": "bad"}, "aggregationRule": {"clusterRoleSelectors": 5}}),
            ),
            json!([binding]),
        ),
        (
            bad_role(json!({"metadata": {"name": "bad"}})),
            bad_binding(json!({"roleRef": {"name": 5}})),
        ),
        (
            bad_role(json!({"metadata": {"name": "bad"}})),
            bad_binding(json!({"metadata": {"name": "c", "annotations": {"a": 1}}})),
        ),
    ] {
        let cluster = Lists(vec![
            ("ClusterRole", roles),
            ("ClusterRoleBinding", bindings),
        ]);
        let Err(whole) = build(&cluster, "") else {
            panic!("the whole reading fails");
        };
        let Err(read) = build_wanted(&cluster, "", &wanted(&alice())) else {
            panic!("the wanted reading fails");
        };
        assert_eq!(read.message, whole.message);
        assert!(read.message.contains("line 1 column"), "{}", read.message);
        let bob = user("bob");
        assert!(build_wanted(&cluster, "", &wanted(&bob)).is_ok());
    }
}

/// In a batch, an object that does not read whole fails only the
/// evaluations that want it, as each alone, in the same words; the
/// others load what they want.
#[test]
fn a_batch_fails_on_an_unreadable_object_only_where_one_evaluation_does() {
    let cluster = Lists(vec![
        (
            "ClusterRole",
            json!([{"metadata": {"name": "reader"},
                    "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]},
                   {"metadata": {"name": "bad"}, "rules": [{"verbs": "get"}]}]),
        ),
        (
            "ClusterRoleBinding",
            json!([{"metadata": {"name": "a"}, "subjects": [{"kind": "User", "name": "alice"}],
                    "roleRef": {"kind": "ClusterRole", "name": "bad"}},
                   {"metadata": {"name": "b"}, "subjects": [{"kind": "User", "name": "bob"}],
                    "roleRef": {"kind": "ClusterRole", "name": "reader"}}]),
        ),
    ]);
    let bob = user("bob");
    let batch = olm_guard_core::shared::Batch::new(&cluster);
    for _ in 0..2 {
        let alone = load(&cluster, "", &wanted(&bob)).unwrap();
        let batched = load(&batch, "", &wanted(&bob)).unwrap();
        assert_eq!(batched.rules_for(&bob, ""), alone.rules_for(&bob, ""));
        assert_eq!(batched.rules_for(&bob, "").len(), 1);
        let Err(alone) = load(&cluster, "", &wanted(&alice())) else {
            panic!("alice wants the role that does not read");
        };
        let Err(batched) = load(&batch, "", &wanted(&alice())) else {
            panic!("alice wants the role that does not read, in a batch too");
        };
        assert_eq!(batched.message, alone.message);
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
                let attrs = olm_guard_core::protocol::ResourceAttributes::new(verb, "", resource)
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
