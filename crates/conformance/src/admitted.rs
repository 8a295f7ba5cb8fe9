//! What reaches admission on a real cluster: the API server decodes every
//! object before any admission webhook or policy sees it. A custom
//! resource is pruned and type-checked against its CRD's structural schema
//! (`olm_guard_native::schema::admit`); a ClusterRole is decoded into its
//! typed API object, which drops unknown fields and refuses wrong types.
//! The module and the native policies are compared on that object, and a
//! request the API server would refuse is compared on neither.

use std::path::Path;

use anyhow::Context;
use serde_json::Value;

use olm_guard_native::schema::{admit, version_schema};

/// The schemas of the kinds the native policies judge.
pub struct Admission {
    /// `kind` and the CRD (a CustomResourceDefinition object).
    crds: Vec<(&'static str, Value)>,
}

impl Admission {
    /// The shipped upstream CRDs of `olm_guard_native::crd` (the
    /// ClusterObjectSet CRD with `spec.group` added, as on a cluster that
    /// adopts it: the default policies judge both worlds) and oria's CRDs
    /// from `testdata/upstream/crds/` under `root`.
    pub fn load(root: &Path) -> anyhow::Result<Admission> {
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
        let oria = |file: &str| -> anyhow::Result<Value> {
            let path = root.join("testdata/upstream/crds").join(file);
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            serde_yaml_ng::from_str(&text).with_context(|| format!("{} is no YAML", path.display()))
        };
        Ok(Admission {
            crds: vec![
                ("ClusterObjectSet", cos.document),
                ("CatalogSource", catalog.document),
                (
                    "ScopeTemplate",
                    oria("operators.io.operator-framework_scopetemplates.yaml")?,
                ),
                (
                    "ScopeInstance",
                    oria("operators.io.operator-framework_scopeinstances.yaml")?,
                ),
            ],
        })
    }

    /// `request` with `object` and `oldObject` as the API server passes
    /// them to admission, or why it refuses them (one line).
    pub fn admitted(&self, request: &Value) -> Result<Value, String> {
        let kind = request
            .pointer("/kind/kind")
            .and_then(Value::as_str)
            .unwrap_or("");
        let version = request.pointer("/kind/version").and_then(Value::as_str);
        let decode = |object: &Value| -> Result<Value, String> {
            if object.is_null() {
                return Ok(object.clone());
            }
            if kind == "ClusterRole" {
                let role: k8s_openapi::api::rbac::v1::ClusterRole =
                    serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
                return serde_json::to_value(role).map_err(|e| e.to_string());
            }
            let Some((_, crd)) = self.crds.iter().find(|(k, _)| *k == kind) else {
                return Ok(object.clone());
            };
            let schema = version_schema(crd, version)
                .ok_or_else(|| format!("the {kind} CRD has no version {version:?}"))?;
            admit(schema, object).map_err(|refusal| refusal.to_string())
        };
        let mut request = request.clone();
        for field in ["object", "oldObject"] {
            if let Some(object) = request.get_mut(field) {
                *object = decode(object).map_err(|why| format!("{field}: {why}"))?;
            }
        }
        Ok(request)
    }
}
