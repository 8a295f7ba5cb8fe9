//! The CustomResourceDefinitions the scenarios' kinds are served by, as
//! upstream ships them: what the API server decodes, prunes and validates a
//! custom resource against before any admission webhook or policy sees it
//! (Kubernetes' own code does that, through `olm_guard_kube_harness`). A
//! ClusterRole is a built-in type and has none.

use std::path::Path;

use anyhow::Context;
use serde_json::Value;

/// The CRDs of the kinds the rules judge.
pub struct Served {
    /// `group/kind` (with `+union` for the CatalogSource CRD with the
    /// union members) and the CRD.
    crds: Vec<(String, Value)>,
}

impl Served {
    /// The shipped upstream CRDs of `olm_guard_native::crd` (the
    /// ClusterObjectSet CRD with `spec.group` added, as on a cluster that
    /// adopts it: the default policies judge both worlds, and a scenario
    /// without the field reads the same on both) and oria's CRDs from
    /// `testdata/upstream/crds/` under `root`.
    pub fn load(root: &Path) -> anyhow::Result<Served> {
        let mut cos =
            olm_guard_native::crd::find("clusterobjectsets.olm.operatorframework.io", None)
                .map_err(anyhow::Error::msg)?;
        let group = serde_json::json!({"type": "string", "minLength": 1});
        let add = cos
            .add_property(&["spec"], "group", &group)
            .map_err(anyhow::Error::msg)?;
        cos.apply(&add).map_err(anyhow::Error::msg)?;
        let catalog = olm_guard_native::crd::find("catalogsources.operators.coreos.com", None)
            .map_err(anyhow::Error::msg)?;
        // The CRD the CatalogSource union enhancement proposes, which
        // catalog-union's union settings are for.
        let union =
            olm_guard_native::crd::with_union_members(&catalog).map_err(anyhow::Error::msg)?;
        let oria = |file: &str| -> anyhow::Result<Value> {
            let path = root.join("testdata/upstream/crds").join(file);
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            serde_yaml_ng::from_str(&text).with_context(|| format!("{} is no YAML", path.display()))
        };
        let mut crds = vec![
            (
                "olm.operatorframework.io/ClusterObjectSet".to_string(),
                cos.document,
            ),
            (
                "operators.coreos.com/CatalogSource".to_string(),
                catalog.document,
            ),
            (
                "operators.coreos.com/CatalogSource+union".to_string(),
                union.document,
            ),
        ];
        for file in [
            "operators.io.operator-framework_scopetemplates.yaml",
            "operators.io.operator-framework_scopeinstances.yaml",
        ] {
            let crd = oria(file)?;
            // The rules accept oria's kinds in OLM's group too
            // (`olm_guard_olm::scope::GROUPS`): the same CRD, served there.
            for group in olm_guard_olm::scope::GROUPS {
                let mut served = crd.clone();
                let plural = served["spec"]["names"]["plural"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                served["spec"]["group"] = Value::String(group.to_string());
                served["metadata"]["name"] = Value::String(format!("{plural}.{group}"));
                let kind = served["spec"]["names"]["kind"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                crds.push((format!("{group}/{kind}"), served));
            }
        }
        Ok(Served { crds })
    }

    /// The CRD of `group/kind` (`olm.operatorframework.io/ClusterObjectSet`;
    /// `+union` for the CatalogSource CRD with the union members).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.crds.iter().find(|(k, _)| k == key).map(|(_, crd)| crd)
    }

    /// The CRD serving the kind of `request` (an AdmissionRequest), `None`
    /// for a built-in kind (ClusterRole). With `union_members`, a
    /// CatalogSource is served by the CRD that has the union members. A
    /// custom resource no rule judges natively (an OperatorGroup, a
    /// Subscription) is served by a CRD that keeps whatever it is given,
    /// so that it reaches admission as written.
    pub fn crd_for(&self, request: &Value, union_members: bool) -> Option<Value> {
        let text = |pointer: &str| request.pointer(pointer).and_then(Value::as_str);
        let group = text("/kind/group")?;
        let kind = text("/kind/kind")?;
        // Kubernetes' own groups: built-in types.
        if group.is_empty() || group.ends_with(".k8s.io") {
            return None;
        }
        let mut key = format!("{group}/{kind}");
        if union_members && kind == "CatalogSource" {
            key.push_str("+union");
        }
        if let Some((_, crd)) = self.crds.iter().find(|(k, _)| *k == key) {
            return Some(crd.clone());
        }
        let version = text("/kind/version").unwrap_or("v1");
        let plural = text("/resource/resource").unwrap_or_default();
        let namespaced = request
            .pointer("/namespace")
            .and_then(Value::as_str)
            .is_some_and(|ns| !ns.is_empty());
        Some(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {
                "group": group,
                "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(),
                    "listKind": format!("{kind}List")},
                "scope": if namespaced { "Namespaced" } else { "Cluster" },
                "versions": [{"name": version, "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}],
            },
        }))
    }
}
