//! The resolver on the RBAC objects of small clusters: bindings, aggregation, what each subject holds.

use super::*;
use crate::RoleRef;
use olm_guard_core::ObjectMeta;

fn meta(namespace: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: name.into(),
        namespace: namespace.into(),
        ..ObjectMeta::default()
    }
}

fn cluster_role(name: &str, rules: Vec<PolicyRule>) -> ClusterRole {
    ClusterRole {
        metadata: meta("", name),
        rules,
        aggregation_rule: None,
    }
}

fn role(namespace: &str, name: &str, rules: Vec<PolicyRule>) -> Role {
    Role {
        metadata: meta(namespace, name),
        rules,
    }
}

fn subject(kind: &str, name: &str, namespace: &str) -> Subject {
    Subject {
        kind: kind.into(),
        name: name.into(),
        namespace: namespace.into(),
        api_group: String::new(),
    }
}

fn binding(
    namespace: &str,
    name: &str,
    kind: &str,
    role: &str,
    subjects: Vec<Subject>,
) -> RoleBinding {
    RoleBinding {
        metadata: meta(namespace, name),
        subjects,
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: kind.into(),
            name: role.into(),
        },
    }
}

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        username: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..UserInfo::default()
    }
}

fn get_pods(namespace: &str) -> ResourceAttributes {
    ResourceAttributes::new("get", "", "pods").namespace(namespace)
}

fn store() -> RbacStore {
    RbacStore::new(
        vec![
            cluster_role(
                "pod-reader",
                vec![PolicyRule::resource(&["get"], &[""], &["pods"])],
            ),
            cluster_role(
                "secret-reader",
                vec![PolicyRule::resource(&["get"], &[""], &["secrets"])],
            ),
            cluster_role(
                "healthz",
                vec![PolicyRule::non_resource(&["get"], &["/healthz"])],
            ),
        ],
        vec![role(
            "team",
            "cm-editor",
            vec![PolicyRule::resource(&["update"], &[""], &["configmaps"])],
        )],
        vec![
            binding(
                "",
                "readers",
                "ClusterRole",
                "pod-reader",
                vec![
                    subject("Group", "readers", ""),
                    subject("User", "alice", ""),
                ],
            ),
            binding(
                "",
                "sa-no-ns",
                "ClusterRole",
                "secret-reader",
                vec![subject("ServiceAccount", "bot", "")],
            ),
            binding(
                "",
                "sa-with-ns",
                "ClusterRole",
                "healthz",
                vec![subject("ServiceAccount", "bot", "ops")],
            ),
            binding(
                "",
                "dangling",
                "ClusterRole",
                "missing",
                vec![subject("User", "alice", "")],
            ),
            binding(
                "",
                "role-in-crb",
                "Role",
                "cm-editor",
                vec![subject("User", "alice", "")],
            ),
            binding(
                "",
                "odd-kind",
                "ClusterRole",
                "secret-reader",
                vec![subject("Robot", "alice", "")],
            ),
        ],
        vec![
            binding(
                "team",
                "edit-cm",
                "Role",
                "cm-editor",
                vec![subject("User", "bob", "")],
            ),
            binding(
                "team",
                "team-sa",
                "ClusterRole",
                "secret-reader",
                vec![subject("ServiceAccount", "builder", "")],
            ),
            binding(
                "team",
                "other-sa",
                "ClusterRole",
                "pod-reader",
                vec![subject("ServiceAccount", "x", "elsewhere")],
            ),
            binding(
                "team",
                "dangling-role",
                "Role",
                "missing",
                vec![subject("User", "bob", "")],
            ),
        ],
    )
}

#[test]
fn subject_matching_table() {
    let s = store();
    let secrets = |ns: &str| ResourceAttributes::new("get", "", "secrets").namespace(ns);
    let cm = |ns: &str| ResourceAttributes::new("update", "", "configmaps").namespace(ns);
    let cases = [
        ("user subject", user("alice", &[]), get_pods(""), true),
        (
            "user is case-sensitive",
            user("Alice", &[]),
            get_pods(""),
            false,
        ),
        (
            "group subject",
            user("carol", &["readers"]),
            get_pods("x"),
            true,
        ),
        (
            "other group",
            user("carol", &["writers"]),
            get_pods(""),
            false,
        ),
        (
            "SA without ns in CRB matches nobody",
            user("system:serviceaccount::bot", &[]),
            secrets(""),
            false,
        ),
        (
            "SA without ns in CRB matches no namespace",
            user("system:serviceaccount:team:bot", &[]),
            secrets("team"),
            false,
        ),
        (
            "SA with ns in CRB",
            user("system:serviceaccount:ops:bot", &[]),
            get_pods(""),
            false,
        ),
        (
            "SA ns defaults to the RoleBinding's",
            user("system:serviceaccount:team:builder", &[]),
            secrets("team"),
            true,
        ),
        (
            "SA in RoleBinding only in its namespace",
            user("system:serviceaccount:team:builder", &[]),
            secrets("other"),
            false,
        ),
        (
            "SA RoleBinding ignored cluster-wide",
            user("system:serviceaccount:team:builder", &[]),
            secrets(""),
            false,
        ),
        (
            "SA subject namespace wins",
            user("system:serviceaccount:elsewhere:x", &[]),
            get_pods("team"),
            true,
        ),
        (
            "SA subject namespace is exact",
            user("system:serviceaccount:team:x", &[]),
            get_pods("team"),
            false,
        ),
        ("Role via RoleBinding", user("bob", &[]), cm("team"), true),
        (
            "RoleBindings ignored for namespace \"\"",
            user("bob", &[]),
            cm(""),
            false,
        ),
        (
            "RoleBinding of another namespace",
            user("bob", &[]),
            cm("other"),
            false,
        ),
        (
            "Role in a ClusterRoleBinding grants nothing",
            user("alice", &[]),
            cm("team"),
            false,
        ),
        (
            "unknown subject kind",
            user("alice", &[]),
            secrets(""),
            false,
        ),
        (
            "system:masters",
            user("root", &["system:masters"]),
            ResourceAttributes::new("escalate", "rbac.authorization.k8s.io", "clusterroles"),
            true,
        ),
        ("nobody", user("", &[]), get_pods(""), false),
    ];
    for (what, u, attrs, want) in cases {
        let d = s.authorize(&u, &attrs);
        assert_eq!(d.allowed, want, "{what}: {}", d.reason);
    }
    let sa = user("system:serviceaccount:ops:bot", &[]);
    assert!(s.authorize_non_resource(&sa, "get", "/healthz").allowed);
    assert!(!s.authorize_non_resource(&sa, "get", "/metrics").allowed);
}

#[test]
fn rules_for_resolves_and_skips_dangling_refs() {
    let s = store();
    assert_eq!(
        s.rules_for(&user("alice", &[]), "team"),
        vec![PolicyRule::resource(&["get"], &[""], &["pods"])]
    );
    assert_eq!(
        s.rules_for(&user("bob", &[]), "team"),
        vec![PolicyRule::resource(&["update"], &[""], &["configmaps"])]
    );
    assert!(s.rules_for(&user("bob", &[]), "").is_empty());
    // A user matched by two subjects of one binding gets its rules once.
    assert_eq!(s.rules_for(&user("alice", &["readers"]), "").len(), 1);
}

#[test]
fn reasons_name_the_grant() {
    let s = store();
    let d = s.authorize(&user("carol", &["readers"]), &get_pods(""));
    assert_eq!(
        d.reason,
        "RBAC: allowed by ClusterRoleBinding \"readers\" of ClusterRole \"pod-reader\" to Group \"readers\""
    );
    let d = s.authorize(
        &user("system:serviceaccount:team:builder", &[]),
        &ResourceAttributes::new("get", "", "secrets").namespace("team"),
    );
    assert_eq!(
        d.reason,
        "RBAC: allowed by RoleBinding \"team-sa/team\" of ClusterRole \"secret-reader\" to ServiceAccount \"builder/team\""
    );
    let d = s.authorize(
        &user("dave", &["devs"]),
        &ResourceAttributes::new("update", "rbac.authorization.k8s.io", "clusterroles")
            .name("admin"),
    );
    assert!(!d.allowed);
    assert_eq!(
        d.reason,
        "RBAC: no role bound to user \"dave\" (groups=[devs]) allows update on clusterroles.rbac.authorization.k8s.io \"admin\" cluster-wide"
    );
    let d = s.authorize(&user("root", &["system:masters"]), &get_pods(""));
    assert!(d.reason.contains("system:masters"), "{}", d.reason);
}

#[test]
fn accessors() {
    let s = store();
    let names: Vec<&str> = s
        .cluster_roles()
        .map(|r| r.metadata.name.as_str())
        .collect();
    assert_eq!(names, vec!["healthz", "pod-reader", "secret-reader"]);
    assert!(s.cluster_role("pod-reader").is_some());
    assert!(s.role("team", "cm-editor").is_some());
    assert!(s.role("", "cm-editor").is_none());
    assert_eq!(s.cluster_role_bindings().len(), 6);
    assert_eq!(s.role_bindings("team").len(), 4);
    assert!(s.role_bindings("nowhere").is_empty());
}

/// Through the subject index, each of 5,000 users gets exactly its own
/// grant and no other (speed is measured by `olm-guard bench`, not here).
#[test]
fn large_store_answers_each_user_by_its_own_bindings() {
    let n = 5000;
    let roles = (0..n)
        .map(|i| {
            cluster_role(
                &format!("role-{i}"),
                vec![PolicyRule::resource(&["get"], &["g"], &[&format!("r{i}")])],
            )
        })
        .collect();
    let bindings = (0..n)
        .map(|i| {
            binding(
                "",
                &format!("b-{i}"),
                "ClusterRole",
                &format!("role-{i}"),
                vec![subject("User", &format!("u-{i}"), "")],
            )
        })
        .collect();
    let s = RbacStore::new(roles, vec![], bindings, vec![]);
    for i in 0..n {
        let u = user(&format!("u-{i}"), &["system:authenticated"]);
        assert!(
            s.authorize(&u, &ResourceAttributes::new("get", "g", &format!("r{i}")))
                .allowed
        );
        assert!(
            !s.authorize(&u, &ResourceAttributes::new("get", "g", "other"))
                .allowed
        );
    }
}
