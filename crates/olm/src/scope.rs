//! `ScopeTemplate` and `ScopeInstance` of oria (awgreene/oria-operator), the
//! operator that grants an operator's RBAC in chosen namespaces only.
//!
//! A ScopeTemplate lists ClusterRoles an operator needs; oria creates each
//! one literally NAMED `generateName` (not a generated name) with the entry's
//! `rules`. A ScopeInstance names a template and a set of namespaces; oria then
//! binds every ClusterRole of the template to the entry's `subjects` with one
//! RoleBinding per namespace, or one ClusterRoleBinding when `namespaces` is
//! empty. Both kinds are cluster-scoped and exist in two API groups: oria's
//! own `operators.io.operator-framework` and OLM's `operators.coreos.com`,
//! both at `v1alpha1`.

use olm_guard_core::ObjectMeta;
use olm_guard_rbac::{PolicyRule, Subject};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_with::DefaultOnNull;

/// The API group oria's CRDs use.
pub const ORIA_GROUP: &str = "operators.io.operator-framework";
/// OLM's API group, in which the policies accept the same kinds.
pub const OLM_GROUP: &str = "operators.coreos.com";
/// Both groups serve the kinds; a policy treats them alike.
pub const GROUPS: [&str; 2] = [OLM_GROUP, ORIA_GROUP];
/// The only version either group serves.
pub const VERSION: &str = "v1alpha1";

/// The ScopeTemplate kind.
pub const SCOPE_TEMPLATE: &str = "ScopeTemplate";
/// The ScopeInstance kind.
pub const SCOPE_INSTANCE: &str = "ScopeInstance";

/// `apiVersion` of the kinds in `group`.
pub fn api_version(group: &str) -> String {
    format!("{group}/{VERSION}")
}

/// A ScopeTemplate: the ClusterRoles an operator needs, to be bound by
/// ScopeInstances.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ScopeTemplate {
    /// The template's metadata; ScopeInstances name it by `name`.
    #[serde_as(as = "DefaultOnNull")]
    pub metadata: ObjectMeta,
    /// The ClusterRoles.
    #[serde_as(as = "DefaultOnNull")]
    pub spec: ScopeTemplateSpec,
}

/// `spec` of a ScopeTemplate.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ScopeTemplateSpec {
    /// The ClusterRoles oria creates, each with the subjects to bind.
    #[serde_as(as = "DefaultOnNull")]
    pub cluster_roles: Vec<ClusterRoleTemplate>,
}

/// One `spec.clusterRoles[]` entry: a ClusterRole oria creates and the
/// subjects a ScopeInstance binds to it.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ClusterRoleTemplate {
    /// Despite its name, the literal name of the ClusterRole oria creates.
    #[serde_as(as = "DefaultOnNull")]
    pub generate_name: String,
    /// The ClusterRole's rules.
    #[serde_as(as = "DefaultOnNull")]
    pub rules: Vec<PolicyRule>,
    /// Who a ScopeInstance binds the ClusterRole to.
    #[serde_as(as = "DefaultOnNull")]
    pub subjects: Vec<Subject>,
}

impl ClusterRoleTemplate {
    /// `spec.clusterRoles[1] ("manager-role")`: how messages name an entry,
    /// by position (always unique) and by the ClusterRole it becomes.
    pub fn describe(&self, index: usize) -> String {
        format!("spec.clusterRoles[{index}] (\"{}\")", self.generate_name)
    }
}

/// A ScopeInstance: binds a ScopeTemplate's ClusterRoles in namespaces (or
/// cluster-wide).
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ScopeInstance {
    /// The instance's metadata.
    #[serde_as(as = "DefaultOnNull")]
    pub metadata: ObjectMeta,
    /// The template and namespaces.
    #[serde_as(as = "DefaultOnNull")]
    pub spec: ScopeInstanceSpec,
}

/// `spec` of a ScopeInstance.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ScopeInstanceSpec {
    /// The ScopeTemplate whose ClusterRoles are bound.
    #[serde_as(as = "DefaultOnNull")]
    pub scope_template_name: String,
    /// Empty means cluster-wide: oria creates a ClusterRoleBinding.
    #[serde_as(as = "DefaultOnNull")]
    pub namespaces: Vec<String>,
}

impl ScopeTemplate {
    /// Reads a ScopeTemplate from an admission object; the error names the field
    /// of the wrong type (`spec.clusterRoles[0].rules has the wrong type ...`).
    pub fn from_object(object: &Value) -> Result<ScopeTemplate, crate::ObjectError> {
        read(object)
    }
}

impl ScopeInstance {
    /// Reads a ScopeInstance from an admission object; the error names the field
    /// of the wrong type (`spec.clusterRoles[0].rules has the wrong type ...`).
    pub fn from_object(object: &Value) -> Result<ScopeInstance, crate::ObjectError> {
        read(object)
    }
}

/// Reads an object, naming the field at fault (`spec.clusterRoles[0].rules`).
fn read<T: DeserializeOwned>(object: &Value) -> Result<T, crate::ObjectError> {
    crate::read_custom_resource(object, "")
}

/// Why `name` cannot be a ClusterRole name, if it cannot. RBAC names are
/// validated as path segments only (apimachinery `ValidatePathSegmentName`,
/// used by `ValidateRBACName`), so a name like `fooClusterRole-` is legal.
pub fn cluster_role_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".to_string());
    }
    if name == "." || name == ".." {
        return Some(format!("\"{name}\" is not allowed"));
    }
    ['/', '%']
        .into_iter()
        .find(|c| name.contains(*c))
        .map(|c| format!("it contains '{c}'"))
}

/// Why `name` cannot be a namespace name, if it cannot: namespaces are
/// RFC 1123 labels (at most 63 of `a-z`, `0-9`, `-`, alphanumeric at both
/// ends). oria would fail to create a RoleBinding in anything else.
pub fn namespace_name_problem(name: &str) -> Option<String> {
    const MAX: usize = 63;
    if name.is_empty() {
        return Some("it is empty".to_string());
    }
    if name.len() > MAX {
        return Some(format!("it is longer than {MAX} characters"));
    }
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    if let Some(c) = name.chars().find(|c| !allowed(*c)) {
        return Some(format!(
            "it contains '{c}' (only lowercase letters, digits and '-' are allowed)"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Some("it must start and end with a letter or digit".to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The ScopeTemplate of oria's `docs/tutorial.md` (awgreene/oria-operator).
    fn tutorial() -> Value {
        serde_json::from_str(include_str!(
            "../tests/fixtures/oria-tutorial-scopetemplate.json"
        ))
        .unwrap()
    }

    #[test]
    fn reads_the_tutorial_template() {
        let template = ScopeTemplate::from_object(&tutorial()).unwrap();
        assert_eq!(template.metadata.name, "scopetemplate-sample-manager");
        let [entry] = template.spec.cluster_roles.as_slice() else {
            panic!("one entry expected")
        };
        assert_eq!(entry.generate_name, "manager-role");
        assert_eq!(entry.rules.len(), 3);
        assert_eq!(entry.rules[0].api_groups, ["*"]);
        assert_eq!(entry.subjects[0].kind, "ServiceAccount");
        assert_eq!(entry.subjects[0].namespace, "memcached-operator-system");
        assert_eq!(entry.describe(0), "spec.clusterRoles[0] (\"manager-role\")");
    }

    #[test]
    fn nulls_and_missing_fields_read_as_empty() {
        let template = ScopeTemplate::from_object(&json!({
            "metadata": null,
            "spec": {"clusterRoles": [{"generateName": null, "rules": null, "subjects": null}]}
        }))
        .unwrap();
        assert_eq!(
            template.spec.cluster_roles,
            [ClusterRoleTemplate::default()]
        );
        assert_eq!(
            ScopeTemplate::from_object(&json!({})).unwrap(),
            ScopeTemplate::default()
        );

        let instance = ScopeInstance::from_object(&json!({
            "spec": {"scopeTemplateName": "t", "namespaces": null}
        }))
        .unwrap();
        assert_eq!(instance.spec.scope_template_name, "t");
        assert!(instance.spec.namespaces.is_empty());
    }

    #[test]
    fn wrong_types_name_the_field() {
        let error = ScopeTemplate::from_object(&json!({
            "spec": {"clusterRoles": [{"generateName": "a"}, {"rules": [{"verbs": "get"}]}]}
        }))
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("spec.clusterRoles[1].rules[0].verbs has the wrong type"),
            "{error}"
        );

        let error = ScopeInstance::from_object(&json!({"spec": {"namespaces": "default"}}))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("spec.namespaces has the wrong type"),
            "{error}"
        );

        let error = ScopeInstance::from_object(&json!({"spec": {"scopeTemplateName": 7}}))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("spec.scopeTemplateName has the wrong type"),
            "{error}"
        );

        for not_an_object in [Value::Null, json!("x"), json!([])] {
            let error = ScopeInstance::from_object(&not_an_object)
                .unwrap_err()
                .to_string();
            assert!(error.contains("not a JSON object"), "{error}");
        }
    }

    #[test]
    fn cluster_role_names_are_path_segments() {
        for good in ["manager-role", "fooClusterRole-", "a.b", "system:x", "..."] {
            assert_eq!(cluster_role_name_problem(good), None, "{good}");
        }
        for bad in ["", ".", "..", "a/b", "a%2f"] {
            assert!(cluster_role_name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn namespaces_are_rfc1123_labels() {
        for good in [
            "default",
            "a",
            "memcached-operator-system",
            "a1",
            &"a".repeat(63),
        ] {
            assert_eq!(namespace_name_problem(good), None, "{good}");
        }
        for bad in ["", "-a", "a-", "Foo", "a.b", "a_b", &"a".repeat(64)] {
            assert!(namespace_name_problem(bad).is_some(), "{bad}");
        }
    }
}
