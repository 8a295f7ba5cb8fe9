//! Scale series: each context-aware module on snapshots of 10, 100, 1,000
//! and 10,000 objects, to show how its latency grows with the cluster
//! (`olm-guard bench --scale`). Three series grow the built-in workloads;
//! group-authorization and scope-rbac evaluate a real scenario of
//! `testdata/` in a cluster padded with RBAC objects for other users, which
//! is what their `can_i` lookups have to search through.

use serde_json::{Value, json};

use olm_guard_snapshot::Snapshot;

use crate::workloads::{self, Workload};

/// The cluster sizes of every series.
pub const SIZES: [usize; 4] = [10, 100, 1_000, 10_000];

/// One module's series.
pub struct Series {
    /// The module measured.
    pub policy: &'static str,
    /// What grows.
    pub about: &'static str,
    /// The workload with about `n` objects in its snapshot.
    pub generate: fn(usize) -> anyhow::Result<Workload>,
}

/// The series of every context-aware module.
pub fn series() -> Vec<Series> {
    vec![
        Series {
            policy: "group-authorization",
            about: "a scoped grant among n/2 ClusterRoles + n/2 bindings for other users",
            generate: |n| padded_scenario(GROUP_AUTHORIZATION, n),
        },
        Series {
            policy: "revision-uniqueness",
            about: "n ClusterObjectSets in groups of five revisions",
            generate: |n| Ok(workloads::cluster_object_sets(n)),
        },
        Series {
            policy: "aggregation-escalation",
            about: "n/2 ClusterRoles + n/2 bindings",
            generate: |n| Ok(workloads::aggregation_rbac((n / 2).max(1), (n / 2).max(1))),
        },
        Series {
            policy: "og-intersection",
            about: "2n/7 OperatorGroups over 5n/7 Namespaces",
            generate: |n| {
                Ok(workloads::operator_groups(
                    (2 * n / 7).max(1),
                    (5 * n / 7).max(1),
                ))
            },
        },
        Series {
            policy: "scope-rbac",
            about: "oria's sample ScopeTemplate among n/2 ClusterRoles + n/2 bindings for other users",
            generate: |n| padded_scenario(SCOPE_RBAC, n),
        },
    ]
}

/// A scenario of `testdata/`: the module, the request, the cluster.
struct Scenario {
    policy: &'static str,
    request: &'static str,
    cluster: &'static str,
}

const GROUP_AUTHORIZATION: Scenario = Scenario {
    policy: "group-authorization",
    request: include_str!(
        "../../../testdata/group-authorization/authz-scoped-grant-allowed/request.json"
    ),
    cluster: include_str!(
        "../../../testdata/group-authorization/authz-scoped-grant-allowed/cluster.yaml"
    ),
};

const SCOPE_RBAC: Scenario = Scenario {
    policy: "scope-rbac",
    request: include_str!(
        "../../../testdata/scope-rbac/template-sample-edit-rules-allowed/request.json"
    ),
    cluster: include_str!(
        "../../../testdata/scope-rbac/template-sample-edit-rules-allowed/cluster.yaml"
    ),
};

/// The scenario's cluster with RBAC objects for other users added until it
/// holds `n` objects (none when it already holds that many); both scenarios
/// are admitted, so the padding must not change the verdict.
fn padded_scenario(scenario: Scenario, n: usize) -> anyhow::Result<Workload> {
    let mut snapshot = Snapshot::from_yaml(scenario.cluster)?;
    let padding = n.saturating_sub(snapshot.len());
    for object in other_users_rbac(padding) {
        snapshot.add(object)?;
    }
    let review: Value = serde_json::from_str(scenario.request)?;
    let request = review.get("request").cloned().unwrap_or(review);
    Ok(Workload {
        name: scenario.policy,
        policy: scenario.policy,
        snapshot,
        request,
        settings: json!({}),
        expect_allowed: true,
    })
}

/// `count` RBAC objects, half ClusterRoles and half ClusterRoleBindings
/// granting them to users no scenario names.
fn other_users_rbac(count: usize) -> Vec<Value> {
    let roles = count / 2;
    let mut objects: Vec<Value> = (0..roles)
        .map(|i| {
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": format!("padding-role-{i}")},
                "rules": [{"apiGroups": [format!("group-{}.example.com", i % 50)],
                           "resources": [format!("res-{}", i % 200)],
                           "verbs": ["get", "list", "watch"]}],
            })
        })
        .collect();
    objects.extend((0..count - roles).map(|i| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": format!("padding-binding-{i}")},
            "subjects": [{"kind": "User", "name": format!("padding-user-{}", i % 1000)}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": format!("padding-role-{}", i % roles.max(1))},
        })
    }));
    objects
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_reaches_each_size_and_names_a_registered_rule() {
        for series in series() {
            assert!(olm_guard_rules::registry::find(series.policy).is_some());
            for n in [10, 1_000] {
                let workload = (series.generate)(n).unwrap();
                assert_eq!(workload.policy, series.policy);
                // About n objects, or more where the scenario's own
                // cluster is larger than n.
                assert!(
                    workload.snapshot.len() + 3 >= n,
                    "{}: {} objects for n={n}",
                    series.policy,
                    workload.snapshot.len()
                );
            }
        }
    }
}
