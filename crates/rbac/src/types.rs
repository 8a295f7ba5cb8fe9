//! RBAC objects (`rbac.authorization.k8s.io/v1`), lenient on input.
//!
//! Every field defaults and every `null` reads as absent, as the API server
//! treats them, so a policy reasons about odd but legal objects instead of
//! failing to parse them. Serialisation writes Kubernetes JSON back (empty
//! optional lists omitted), so these types can be handed to the host too.

use olm_guard_core::selector::LabelSelector;
use olm_guard_core::{ObjectMeta, decode};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::DefaultOnNull;

/// Reads an RBAC object from JSON. The error names the offending field
/// (`rules[1].verbs: invalid type: string "get", expected a sequence`), so a
/// policy can tell the user exactly what to fix.
pub fn from_json<T: DeserializeOwned>(value: &Value) -> Result<T, decode::FieldTypeError> {
    decode::from_value(value)
}

/// One rule of a Role or ClusterRole.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PolicyRule {
    /// The verbs allowed (`get`, `list`, ...), or `*` for all.
    #[serde_as(as = "DefaultOnNull")]
    pub verbs: Vec<String>,
    /// The API groups of `resources` (`""` is the core group), or `*`.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    /// The resources (`pods`), subresources (`pods/log`, `*/scale`), or `*`.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// The object names the rule is restricted to; empty for all.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    /// Non-resource URLs (`/healthz`, `/api/*`); only in ClusterRoles, and
    /// only without `resources`.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(rename = "nonResourceURLs", skip_serializing_if = "Vec::is_empty")]
    pub non_resource_urls: Vec<String>,
}

/// A ClusterRole's `aggregationRule`: the controller sets the role's rules to
/// the union of the rules of the ClusterRoles its selectors match.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AggregationRule {
    /// Label selectors over ClusterRoles; a role matched by any of them is
    /// aggregated.
    #[serde_as(as = "DefaultOnNull")]
    pub cluster_role_selectors: Vec<LabelSelector>,
}

/// A ClusterRole: rules that hold in every namespace when bound by a
/// ClusterRoleBinding, or in one namespace when bound by a RoleBinding.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ClusterRole {
    /// The role's metadata; `labels` are what aggregation selects on.
    #[serde_as(as = "DefaultOnNull")]
    pub metadata: ObjectMeta,
    /// The rules granted (for an aggregated role, as the controller last
    /// wrote them).
    #[serde_as(as = "DefaultOnNull")]
    pub rules: Vec<PolicyRule>,
    /// Present on aggregated roles; see [`ClusterRole::has_aggregation_rule`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregation_rule: Option<AggregationRule>,
}

impl ClusterRole {
    /// Whether the role is aggregated, as `hasAggregationRule` (kubernetes
    /// `pkg/registry/rbac/clusterrole/policybased/storage.go`) decides: a
    /// rule with no selectors aggregates nothing and so needs no privilege.
    pub fn has_aggregation_rule(&self) -> bool {
        self.aggregation_rule
            .as_ref()
            .is_some_and(|a| !a.cluster_role_selectors.is_empty())
    }
}

/// A Role: rules that hold in its own namespace.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Role {
    /// The role's metadata; `namespace` is where its rules hold.
    #[serde_as(as = "DefaultOnNull")]
    pub metadata: ObjectMeta,
    /// The rules granted.
    #[serde_as(as = "DefaultOnNull")]
    pub rules: Vec<PolicyRule>,
}

/// A subject of a binding. `kind` is `User`, `Group` or `ServiceAccount`.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`; any other kind matches nobody.
    #[serde_as(as = "DefaultOnNull")]
    pub kind: String,
    /// The user, group or ServiceAccount name.
    #[serde_as(as = "DefaultOnNull")]
    pub name: String,
    /// The ServiceAccount's namespace; defaults to the binding's.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// `rbac.authorization.k8s.io` for users and groups, `""` for
    /// ServiceAccounts; not checked.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
}

/// The role a binding grants.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RoleRef {
    /// Always `rbac.authorization.k8s.io`; not checked.
    #[serde_as(as = "DefaultOnNull")]
    pub api_group: String,
    /// `ClusterRole` or `Role` (a Role only in a RoleBinding, from its own
    /// namespace).
    #[serde_as(as = "DefaultOnNull")]
    pub kind: String,
    /// The role's name.
    #[serde_as(as = "DefaultOnNull")]
    pub name: String,
}

/// A RoleBinding or a ClusterRoleBinding: the two have the same shape, and a
/// ClusterRoleBinding simply has no namespace.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RoleBinding {
    /// The binding's metadata; `namespace` is empty for a ClusterRoleBinding.
    #[serde_as(as = "DefaultOnNull")]
    pub metadata: ObjectMeta,
    /// Who is granted the role.
    #[serde_as(as = "DefaultOnNull")]
    pub subjects: Vec<Subject>,
    /// The role granted.
    #[serde_as(as = "DefaultOnNull")]
    pub role_ref: RoleRef,
}

impl PolicyRule {
    /// A resource rule (`verbs` on `apiGroups`/`resources`).
    pub fn resource(verbs: &[&str], api_groups: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: strings(verbs),
            api_groups: strings(api_groups),
            resources: strings(resources),
            ..PolicyRule::default()
        }
    }

    /// A non-resource rule (`verbs` on `nonResourceURLs`).
    pub fn non_resource(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: strings(verbs),
            non_resource_urls: strings(urls),
            ..PolicyRule::default()
        }
    }

    /// The same rule restricted to `names`.
    pub fn with_names(mut self, names: &[&str]) -> PolicyRule {
        self.resource_names = strings(names);
        self
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nulls_read_as_absent() {
        let role: ClusterRole = serde_json::from_value(json!({
            "metadata": {"name": "admin", "labels": null},
            "rules": null,
            "aggregationRule": {"clusterRoleSelectors": null}
        }))
        .unwrap();
        assert_eq!(role.metadata.name, "admin");
        assert!(role.rules.is_empty());
        assert!(!role.has_aggregation_rule());

        let rule: PolicyRule = serde_json::from_value(json!({
            "verbs": ["get"], "apiGroups": null, "resources": ["pods"],
            "resourceNames": null, "nonResourceURLs": null
        }))
        .unwrap();
        assert_eq!(rule, PolicyRule::resource(&["get"], &[], &["pods"]));

        let binding: RoleBinding = serde_json::from_value(json!({
            "metadata": null, "subjects": null, "roleRef": null
        }))
        .unwrap();
        assert_eq!(binding, RoleBinding::default());
    }

    #[test]
    fn errors_name_the_field() {
        let err =
            from_json::<ClusterRole>(&json!({"rules": [{"verbs": ["get"]}, {"verbs": "get"}]}))
                .unwrap_err()
                .to_string();
        assert!(
            err.starts_with("rules[1].verbs: invalid type: string"),
            "{err}"
        );
        let err = from_json::<ClusterRole>(&json!({"aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {"a": 1}}]}}))
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("aggregationRule.clusterRoleSelectors[0].matchLabels.a: "),
            "{err}"
        );
        let err = from_json::<ClusterRole>(&json!("role"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("invalid type: string"), "{err}");
    }

    #[test]
    fn aggregation_rule_needs_a_selector() {
        let with = |selectors: serde_json::Value| -> ClusterRole {
            serde_json::from_value(json!({"aggregationRule": {"clusterRoleSelectors": selectors}}))
                .unwrap()
        };
        assert!(with(json!([{}])).has_aggregation_rule());
        assert!(!with(json!([])).has_aggregation_rule());
        assert!(!ClusterRole::default().has_aggregation_rule());
    }

    #[test]
    fn serialises_kubernetes_json() {
        let rule = PolicyRule::non_resource(&["get"], &["/healthz"]);
        assert_eq!(
            serde_json::to_value(&rule).unwrap(),
            json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]})
        );
        let subject = Subject {
            kind: "ServiceAccount".into(),
            name: "default".into(),
            namespace: "ns".into(),
            api_group: String::new(),
        };
        assert_eq!(
            serde_json::to_value(&subject).unwrap(),
            json!({"kind": "ServiceAccount", "name": "default", "namespace": "ns"})
        );
        let round: PolicyRule =
            serde_json::from_value(serde_json::to_value(&rule).unwrap()).unwrap();
        assert_eq!(round, rule);
    }
}
