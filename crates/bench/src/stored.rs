//! Objects as a cluster stores them, for audits of a live cluster and of its
//! dump (the live-cluster tests and `olm-guard-live-bench`): CatalogSources,
//! OperatorGroups and ClusterObjectSets, each kind with a known share that
//! breaks a rule, so that an audit that finds nothing is wrong.

use serde_json::{Value, json};

/// `n` objects (CatalogSources 42%, OperatorGroups 28%, ClusterObjectSets
/// 30%), as a client creates them (no server-set metadata):
///
/// - every tenth CatalogSource configures an image and an address
///   (catalog-union denies it);
/// - in every twentieth pair of OperatorGroups, the second targets the
///   first's namespace and provides the same API (og-intersection denies
///   both);
/// - in every group of six ClusterObjectSets, the sixth reuses the fifth's
///   revision (revision-uniqueness denies both).
pub fn olm_objects(n: usize) -> Vec<Value> {
    let catalogs = n * 42 / 100;
    let groups = n * 28 / 100;
    let sets = n - catalogs - groups;
    let mut objects = Vec::with_capacity(n);
    for i in 0..catalogs {
        let mut spec =
            json!({"sourceType": "grpc", "image": format!("quay.io/olm-guard/catalog:v{i}")});
        if i % 10 == 0 {
            spec["address"] = json!("catalog.olm.svc:50051");
        }
        objects.push(json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": {"name": format!("catalog-{i}"), "namespace": format!("team-{}", i % 30)},
            "spec": spec,
        }));
    }
    for i in 0..groups {
        // The second of every twentieth pair shares the first's target
        // namespace and provided API.
        let owner = if i % 20 == 1 { i - 1 } else { i };
        objects.push(json!({
            "apiVersion": "operators.coreos.com/v1",
            "kind": "OperatorGroup",
            "metadata": {
                "name": format!("og-{i}"),
                "namespace": format!("team-{i}"),
                "annotations": {"olm.providedAPIs": format!("Widget.v1.team{owner}.example.com")},
            },
            "spec": {"targetNamespaces": [format!("team-{owner}")]},
        }));
    }
    for i in 0..sets {
        let group = format!("extension-{}", i / 6);
        let revision = if i % 6 == 5 { 5 } else { i % 6 + 1 };
        objects.push(json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterObjectSet",
            "metadata": {
                "name": format!("{group}-{}", i % 6 + 1),
                "labels": {"olm.operatorframework.io/owner-name": group},
            },
            "spec": {
                "revision": revision,
                "lifecycleState": "Active",
                "collisionProtection": "Prevent",
                "phases": [{"name": "deploy", "objects": [{"ref": {
                    "name": format!("{group}-objects"),
                    "namespace": "olmv1-system",
                    "key": "deployment",
                }}]}],
            },
        }));
    }
    objects
}

/// How many of [`olm_objects`]`(n)` the modules deny, at least: the
/// CatalogSources, the OperatorGroup pairs and the ClusterObjectSet pairs
/// built to break a rule.
pub fn olm_objects_denied(n: usize) -> usize {
    let catalogs = n * 42 / 100;
    let groups = n * 28 / 100;
    let sets = n - catalogs - groups;
    let count = |len: usize, every: usize, at: usize| (0..len).filter(|i| i % every == at).count();
    count(catalogs, 10, 0) + 2 * count(groups, 20, 1) + 2 * count(sets, 6, 5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_objects_are_as_many_as_asked_and_named_once() {
        let objects = olm_objects(2150);
        assert_eq!(objects.len(), 2150);
        let mut names: Vec<String> = objects
            .iter()
            .map(|o| {
                format!(
                    "{} {} {}",
                    o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]
                )
            })
            .collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 2150);
        assert!(olm_objects_denied(2150) > 200);
    }
}
