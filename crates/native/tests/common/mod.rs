//! What several of this crate's test files share. Each test file is a
//! binary of its own that uses part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use olm_guard_kube_harness::authorizer::admit_answering;
use olm_guard_kube_harness::{Admit, Admitted, AuthorizerAnswer, KubeHarness};
use olm_guard_native::policies::{GenerateError, rules};
use olm_guard_native::{Native, crd, generate};

/// The settings of each native form [`every_native_form`] returns, in its
/// order.
pub fn every_native_form_settings() -> Vec<Value> {
    every_form()
        .into_iter()
        .map(|(settings, _)| settings)
        .collect()
}

/// Each rule's native form with its default settings and with every
/// setting the native form honours turned on.
pub fn every_native_form() -> Vec<Native> {
    let forms: Vec<Native> = every_form().into_iter().map(|(_, native)| native).collect();
    assert!(forms.len() >= 9, "only {} native forms", forms.len());
    forms
}

fn every_form() -> Vec<(Value, Native)> {
    let variants = [
        json!(null),
        json!({"warnLegacy": true}),
        json!({"allowLegacy": false}),
        json!({"requireNameSuffix": true}),
        json!({"forbidClusterScopedResources": true}),
        json!({"allowFeeding": ["admin"]}),
        json!({"requireSpecGroup": true}),
        json!({"requireSpecGroup": true, "backfillGroupFromLabel": true}),
        json!({"migrateLegacy": true}),
    ];
    let mut forms = Vec::new();
    for rule in rules() {
        for settings in &variants {
            match generate(rule, settings, None) {
                Ok(native) => forms.push((settings.clone(), native)),
                Err(GenerateError::Settings { .. } | GenerateError::ModuleOnly { .. }) => {}
                Err(e) => panic!("{rule} {settings}: {e}"),
            }
        }
    }
    forms
}

/// `patch` (RFC 6902) applied to `crd`, as `kubectl patch --type json`
/// applies it; `what` names the patch when it does not apply.
pub fn apply_patch(crd: &mut Value, patch: &Value, what: &str) {
    let operations: json_patch::Patch = serde_json::from_value(patch.clone())
        .unwrap_or_else(|e| panic!("{what}: not a JSON patch: {e}"));
    json_patch::patch(crd, &operations).unwrap_or_else(|e| panic!("{what}: {e}"));
}

/// Every node of `schema` that has an `x-kubernetes-validations` list,
/// with its JSON pointer.
pub fn validated_nodes(schema: &Value) -> Vec<(String, &Value)> {
    fn walk<'a>(schema: &'a Value, at: String, out: &mut Vec<(String, &'a Value)>) {
        match schema {
            Value::Object(map) => {
                if map.contains_key("x-kubernetes-validations") {
                    out.push((at.clone(), schema));
                }
                for (key, value) in map {
                    walk(value, format!("{at}/{key}"), out);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(schema, String::new(), &mut out);
    out
}

/// The repository.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The documents of a YAML file.
pub fn yaml_documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| {
            serde::Deserialize::deserialize(d)
                .unwrap_or_else(|e| panic!("{}: not YAML: {e}", path.display()))
        })
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// The CRDs of the kinds the policies match, as a cluster serves them:
/// oria's from `testdata/upstream/crds/`, and the ClusterObjectSet and
/// CatalogSource CRDs as `native`'s patches leave the shipped copies.
pub fn crds_for(native: Option<&Native>) -> Vec<Value> {
    // catalog-union's union settings are for the CRD with the union members.
    let union = native.is_some_and(|n| {
        n.rule == "catalog-union"
            && n.policies.iter().any(|b| {
                serde_json::to_string(&b.policy)
                    .unwrap()
                    .contains("catalogImageSource")
            })
    });
    let mut crds = Vec::new();
    for name in [
        "clusterobjectsets.olm.operatorframework.io",
        "catalogsources.operators.coreos.com",
    ] {
        let mut found = crd::find(name, None).unwrap();
        if union && name.starts_with("catalogsources") {
            found = crd::with_union_members(&found).unwrap();
        }
        let mut document = found.document;
        for patch in native
            .into_iter()
            .flat_map(|n| &n.schema_patches)
            .filter(|p| p.crd == name)
        {
            apply_patch(&mut document, &patch.patch, &patch.file);
        }
        crds.push(document);
    }
    for file in [
        "operators.io.operator-framework_scopetemplates.yaml",
        "operators.io.operator-framework_scopeinstances.yaml",
    ] {
        crds.extend(yaml_documents(
            &root().join("testdata/upstream/crds").join(file),
        ));
    }
    crds
}

/// `request` (an AdmissionRequest) through Kubernetes' admission path on a
/// cluster that applied `native`: its CRD patches, its mutating and
/// validating policies, every authorizer check Kubernetes makes answered
/// by `authorize`: Kubernetes' answer, and the checks it made. The answer
/// of a write the API server could not decode, or whose mutation failed,
/// fails the test.
pub fn admitted(
    kube: &mut KubeHarness,
    native: &Native,
    request: Value,
    authorize: &mut dyn FnMut(&AuthorizerAnswer) -> Result<bool, String>,
) -> (Admitted, Vec<AuthorizerAnswer>) {
    let mut admit = Admit {
        request,
        crds: crds_for(Some(native)),
        ..Admit::default()
    };
    for bound in &native.mutations {
        admit
            .mutating_policies
            .push(serde_json::to_value(&bound.policy).unwrap());
        admit
            .mutating_bindings
            .push(serde_json::to_value(&bound.binding).unwrap());
    }
    for bound in &native.policies {
        admit
            .validating_policies
            .push(serde_json::to_value(&bound.policy).unwrap());
        admit
            .validating_bindings
            .push(serde_json::to_value(&bound.binding).unwrap());
    }
    let admitted = admit_answering(kube, &mut admit, authorize).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        admitted.refused.is_none() && admitted.mutation_error.is_none(),
        "{admitted:?}"
    );
    (admitted, admit.authorizer)
}
