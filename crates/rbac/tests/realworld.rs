//! The bootstrap RBAC of a real cluster (kubernetes bootstrappolicy
//! testdata, see fixtures/SOURCES.md) evaluated with this crate: facts any
//! Kubernetes admin knows must hold.

use olm_guard_core::UserInfo;
use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_rbac::aggregation::{aggregate, fed_by};
use olm_guard_rbac::{
    ClusterRole, PolicyRule, RbacStore, Role, RoleBinding, covers, full_authority,
};
use serde::de::DeserializeOwned;

fn items<T: DeserializeOwned>(file: &str) -> Vec<T> {
    #[derive(serde::Deserialize)]
    struct List<T> {
        items: Vec<T>,
    }
    let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml_ng::from_str::<List<T>>(&text)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .items
}

fn cluster_roles() -> Vec<ClusterRole> {
    let mut roles: Vec<ClusterRole> = items("cluster-roles.yaml");
    roles.extend(items::<ClusterRole>("controller-roles.yaml"));
    roles
}

fn store_with(cluster_roles: Vec<ClusterRole>) -> RbacStore {
    let mut crbs: Vec<RoleBinding> = items("cluster-role-bindings.openshift-kubernetes.yaml");
    crbs.extend(items::<RoleBinding>("controller-role-bindings.yaml"));
    let roles: Vec<Role> = items("namespace-roles.yaml");
    let rbs: Vec<RoleBinding> = items("namespace-role-bindings.yaml");
    RbacStore::new(cluster_roles, roles, crbs, rbs)
}

/// Runs the aggregation controller to a fixed point, as a live cluster has.
fn aggregated_store() -> RbacStore {
    let mut roles = cluster_roles();
    loop {
        let store = store_with(roles.clone());
        let mut changed = false;
        for role in roles.iter_mut().filter(|r| r.has_aggregation_rule()) {
            let rules = aggregate(&store, role).unwrap();
            if rules != role.rules {
                role.rules = rules;
                changed = true;
            }
        }
        if !changed {
            return store;
        }
    }
}

fn rules_of(store: &RbacStore, name: &str) -> Vec<PolicyRule> {
    store
        .cluster_role(name)
        .unwrap_or_else(|| panic!("no {name}"))
        .rules
        .clone()
}

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        username: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..UserInfo::default()
    }
}

#[test]
fn default_aggregation_labels() {
    let store = store_with(cluster_roles());
    let fed = |name: &str| -> Vec<String> {
        let role = store.cluster_role(name).unwrap();
        fed_by(&store, &role.metadata.labels, name)
            .iter()
            .map(|r| r.metadata.name.clone())
            .collect()
    };
    assert_eq!(fed("edit"), vec!["admin"]);
    assert_eq!(fed("view"), vec!["edit"]);
    assert_eq!(fed("system:aggregate-to-admin"), vec!["admin"]);
    assert_eq!(fed("system:aggregate-to-edit"), vec!["edit"]);
    assert_eq!(fed("system:aggregate-to-view"), vec!["view"]);
    assert!(fed("cluster-admin").is_empty());
    for name in ["admin", "edit", "view"] {
        assert!(
            store.cluster_role(name).unwrap().has_aggregation_rule(),
            "{name}"
        );
        assert!(
            rules_of(&store, name).is_empty(),
            "{name} ships with rules: null"
        );
    }
}

#[test]
fn cluster_admin_holds_full_authority() {
    let store = store_with(cluster_roles());
    assert_eq!(
        covers(&rules_of(&store, "cluster-admin"), &full_authority()),
        Ok(())
    );
    // Bound to system:masters; RBAC alone, without the privileged-group
    // bypass, grants that group full authority too.
    let masters_rules = store.rules_for(&user("someone", &["system:masters"]), "");
    assert_eq!(covers(&masters_rules, &full_authority()), Ok(()));
    assert!(
        covers(
            &rules_of(
                &store,
                "system:controller:clusterrole-aggregation-controller"
            ),
            &full_authority()
        )
        .is_err()
    );
}

#[test]
fn aggregated_roles_nest_admin_over_edit_over_view() {
    let store = aggregated_store();
    let (admin, edit, view) = (
        rules_of(&store, "admin"),
        rules_of(&store, "edit"),
        rules_of(&store, "view"),
    );
    assert!(!view.is_empty());
    assert_eq!(covers(&admin, &edit), Ok(()));
    assert_eq!(covers(&edit, &view), Ok(()));
    assert!(covers(&view, &edit).is_err());
    assert!(covers(&edit, &admin).is_err());
    // None of them may touch RBAC escalation or hold full authority.
    assert!(covers(&admin, &full_authority()).is_err());
    let escalate = [PolicyRule::resource(
        &["escalate"],
        &["rbac.authorization.k8s.io"],
        &["clusterroles"],
    )];
    assert!(covers(&admin, &escalate).is_err());
}

#[test]
fn bootstrap_bindings_authorize_like_a_cluster() {
    let store = aggregated_store();
    let escalate = ResourceAttributes::new("escalate", "rbac.authorization.k8s.io", "clusterroles")
        .name("admin");
    let controller = user(
        "system:serviceaccount:kube-system:clusterrole-aggregation-controller",
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:kube-system",
            "system:authenticated",
        ],
    );
    let d = store.authorize(&controller, &escalate);
    assert!(d.allowed, "{}", d.reason);
    assert_eq!(
        d.reason,
        "RBAC: allowed by ClusterRoleBinding \"system:controller:clusterrole-aggregation-controller\" of ClusterRole \"system:controller:clusterrole-aggregation-controller\" to ServiceAccount \"clusterrole-aggregation-controller/kube-system\""
    );
    let alice = user("alice", &["system:authenticated"]);
    assert!(!store.authorize(&alice, &escalate).allowed);
    // system:basic-user and system:discovery are bound to every authenticated user.
    let review =
        ResourceAttributes::new("create", "authorization.k8s.io", "selfsubjectaccessreviews");
    assert!(store.authorize(&alice, &review).allowed);
    assert!(
        store
            .authorize_non_resource(&alice, "get", "/apis/apps/v1")
            .allowed
    );
    assert!(
        !store
            .authorize_non_resource(&alice, "get", "/metrics")
            .allowed
    );
    // A namespaced Role grant only inside its namespace.
    let signer = user("system:serviceaccount:kube-system:bootstrap-signer", &[]);
    let cm = ResourceAttributes::new("update", "", "configmaps").name("cluster-info");
    assert!(
        store
            .authorize(&signer, &cm.clone().namespace("kube-public"))
            .allowed
    );
    assert!(
        !store
            .authorize(&signer, &cm.clone().namespace("default"))
            .allowed
    );
    assert!(!store.authorize(&signer, &cm).allowed);
}
