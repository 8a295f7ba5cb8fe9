//! Large, deterministic cluster snapshots for benchmarks and scale tests:
//! the sizes the issues name (10,000 ClusterObjectSets; 5,000 ClusterRoles
//! and 5,000 bindings; 2,000 OperatorGroups over 5,000 namespaces).

use serde_json::{Value, json};

use olm_guard_snapshot::Snapshot;

/// One benchmark input: a snapshot, a request, settings and the verdict the
/// rule must reach (so a benchmark that measures a wrong answer fails).
pub struct Workload {
    /// `cos-10k`, `rbac-5k` or `og-2k`.
    pub name: &'static str,
    /// The policy it exercises.
    pub policy: &'static str,
    /// The cluster context.
    pub snapshot: Snapshot,
    /// The AdmissionRequest.
    pub request: Value,
    /// The policy settings.
    pub settings: Value,
    /// The verdict the rule must reach.
    pub expect_allowed: bool,
}

type Generator = fn() -> Workload;

/// The built-in workloads by name, with what each measures, each generated
/// only when asked for.
const WORKLOADS: &[(&str, &str, Generator)] = &[
    (
        "cos-10k",
        "revision-uniqueness: a ClusterObjectSet CREATE against 10,000 stored ones",
        || cluster_object_sets(10_000),
    ),
    (
        "rbac-5k",
        "aggregation-escalation: an aggregated ClusterRole CREATE, 5,000 roles + 5,000 bindings",
        || aggregation_rbac(5_000, 5_000),
    ),
    (
        "og-2k",
        "og-intersection: an OperatorGroup CREATE among 2,000 groups over 5,000 namespaces",
        || operator_groups(2_000, 5_000),
    ),
];

impl Workload {
    /// The names `olm-guard bench --workload` accepts (besides `all`).
    pub fn names() -> Vec<&'static str> {
        WORKLOADS.iter().map(|(name, _, _)| *name).collect()
    }

    /// Every workload's name and what it measures, without generating any.
    pub fn catalog() -> Vec<(&'static str, &'static str)> {
        WORKLOADS
            .iter()
            .map(|(name, about, _)| (*name, *about))
            .collect()
    }

    /// Every workload, generated.
    pub fn all() -> Vec<Workload> {
        WORKLOADS
            .iter()
            .map(|(_, _, generate)| generate())
            .collect()
    }

    /// The workload `name`, generated.
    pub fn by_name(name: &str) -> Option<Workload> {
        WORKLOADS
            .iter()
            .find(|(known, _, _)| *known == name)
            .map(|(_, _, generate)| generate())
    }
}

fn request(uid: &str, group: &str, version: &str, kind: &str, user: &str, object: Value) -> Value {
    let name = object["metadata"]["name"].clone();
    let namespace = object["metadata"]["namespace"].clone();
    json!({
        "uid": uid,
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": format!("{}s", kind.to_lowercase())},
        "name": name,
        "namespace": namespace,
        "operation": "CREATE",
        "userInfo": {"username": user, "groups": ["system:authenticated"]},
        "object": object,
    })
}

/// `n` ClusterObjectSets in groups of five revisions (older ones Archived,
/// every fifth group still label-only); the request adds revision 6 to a
/// group with auto-increment on.
pub fn cluster_object_sets(n: usize) -> Workload {
    let objects: Vec<Value> = (0..n)
        .map(|i| {
            let (group, revision) = (format!("ext-{}", i / 5), i % 5 + 1);
            let label_only = (i / 5) % 5 == 4;
            let mut spec = json!({
                "revision": revision,
                "lifecycleState": if revision == 5 { "Active" } else { "Archived" },
                "collisionProtection": "Prevent",
            });
            if !label_only {
                spec["group"] = json!(group);
            }
            json!({
                "apiVersion": "olm.operatorframework.io/v1",
                "kind": "ClusterObjectSet",
                "metadata": {
                    "name": format!("{group}-{revision}"),
                    "labels": {"olm.operatorframework.io/owner-name": group},
                },
                "spec": spec,
            })
        })
        .collect();
    // Revision 6 of a group that holds five (ext-1234 from 6,175 objects
    // up, as the 10k workload has always used; else the last full group),
    // so every size gives the same verdict.
    let group = format!("ext-{}", (n / 5).saturating_sub(1).min(1234));
    let new = json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterObjectSet",
        "metadata": {"name": format!("{group}-6")},
        "spec": {"group": group, "lifecycleState": "Active", "collisionProtection": "Prevent"},
    });
    Workload {
        name: "cos-10k",
        policy: "revision-uniqueness",
        snapshot: Snapshot::from_objects(objects),
        request: request(
            "cos",
            "olm.operatorframework.io",
            "v1",
            "ClusterObjectSet",
            "installer",
            new,
        ),
        settings: json!({"autoIncrementRevision": true, "requireNameSuffix": true}),
        expect_allowed: true,
    }
}

/// `roles` ClusterRoles (every tenth labelled to feed `big-aggregate`) and
/// `bindings` ClusterRoleBindings over 1,000 users; a user with broad but
/// not `escalate` rights creates a covers-mode aggregated role.
pub fn aggregation_rbac(roles: usize, bindings: usize) -> Workload {
    let mut objects: Vec<Value> = (0..roles)
        .map(|i| {
            let mut labels = json!({"app": format!("app-{}", i % 100)});
            if i % 10 == 0 {
                labels["example.com/aggregate-to-big"] = json!("true");
            }
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": format!("role-{i}"), "labels": labels},
                "rules": [
                    {"apiGroups": [format!("group-{}.example.com", i % 50)],
                     "resources": [format!("res-{}", i % 200), format!("res-{}/status", i % 200)],
                     "verbs": ["get", "list", "watch"]},
                    {"apiGroups": [""], "resources": ["configmaps"],
                     "resourceNames": [format!("cm-{i}")], "verbs": ["get", "update"]},
                ],
            })
        })
        .collect();
    objects.extend((0..bindings).map(|i| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": format!("binding-{i}")},
            "subjects": [{"kind": "User", "name": format!("user-{}", i % 1000)}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": format!("role-{}", i % roles.max(1))},
        })
    }));
    objects.push(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "platform-operator"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"],
                   "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}],
    }));
    objects.push(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "platform-operator"},
        "subjects": [{"kind": "User", "name": "platform"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "platform-operator"},
    }));
    let new = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "big-aggregate"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"example.com/aggregate-to-big": "true"}}]},
        "rules": [],
    });
    Workload {
        name: "rbac-5k",
        policy: "aggregation-escalation",
        snapshot: Snapshot::from_objects(objects),
        request: request(
            "rbac",
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "platform",
            new,
        ),
        settings: json!({"mode": "covers"}),
        expect_allowed: true,
    }
}

/// `groups` synced OperatorGroups (each targeting its namespace and the
/// next two, providing one API) over `namespaces` labelled namespaces; a new
/// group selects a team's namespaces by label.
pub fn operator_groups(groups: usize, namespaces: usize) -> Workload {
    let mut objects: Vec<Value> = (0..namespaces)
        .map(|i| {
            json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": format!("ns-{i}"), "labels": {"team": format!("t{}", i % 50)}},
            })
        })
        .collect();
    objects.extend((0..groups).map(|i| {
        let targets: Vec<String> = (i..i + 3).map(|t| format!("ns-{}", t % namespaces.max(1))).collect();
        json!({
            "apiVersion": "operators.coreos.com/v1",
            "kind": "OperatorGroup",
            "metadata": {
                "name": format!("og-{i}"),
                "namespace": format!("ns-{i}"),
                "annotations": {"olm.providedAPIs": format!("Widget{i}.v1.widgets{}.example.com", i % 7)},
            },
            "spec": {"targetNamespaces": targets},
            "status": {"namespaces": targets, "lastUpdated": "2026-11-01T00:00:00Z"},
        })
    }));
    let new = json!({
        "apiVersion": "operators.coreos.com/v1",
        "kind": "OperatorGroup",
        "metadata": {
            "name": "team-3",
            "namespace": format!("ns-{}", namespaces.saturating_sub(1)),
            "annotations": {"olm.providedAPIs": "Gadget.v1.gadgets.example.com"},
        },
        "spec": {"selector": {"matchLabels": {"team": "t3"}}},
    });
    Workload {
        name: "og-2k",
        policy: "og-intersection",
        snapshot: Snapshot::from_objects(objects),
        request: request(
            "og",
            "operators.coreos.com",
            "v1",
            "OperatorGroup",
            "admin",
            new,
        ),
        settings: json!({}),
        expect_allowed: true,
    }
}
