//! What Kubewarden's controller makes of a `ClusterAdmissionPolicy`, done
//! by hand: the one place that translates a policy into what policy-server
//! and kube-apiserver are given. Each function follows the controller's Go
//! code in `kubewarden/kubewarden-controller` (1.36, `internal/controller/`),
//! named on it; the tests run no controller, since no pods run.
//!
//! - [`policies_yml`]: policy-server's `--policies` file, as
//!   `buildPoliciesMap` (`policyserver_controller_configmap.go`) writes the
//!   ConfigMap key `policies.yml`.
//! - [`webhook_configuration`]: the Validating- or
//!   MutatingWebhookConfiguration of `reconcileValidatingWebhookConfiguration`
//!   and `reconcileMutatingWebhookConfiguration`
//!   (`policy_subreconciler_webhook.go`), with a `url` in place of the
//!   policy-server Service.

use serde_json::{Map, Value, json};

/// The namespace Kubewarden runs in (its Helm charts' default), which every
/// cluster-wide policy's webhook leaves out (`namespaceSelector`, below).
pub const NAMESPACE: &str = "kubewarden";

/// The ServiceAccount the default PolicyServer runs as (Kubewarden's Helm
/// chart `kubewarden-defaults`: `serviceAccountName: policy-server`), whom
/// `deploy/kubewarden/policy-server-rbac.yaml` grants what the modules read.
pub const SERVICE_ACCOUNT: &str = "policy-server";

/// The id policy-server and the webhook know a ClusterAdmissionPolicy by:
/// `clusterwide-<name>` (`GetUniqueName` of `api/policies/v1`).
pub fn unique_name(policy: &Value) -> String {
    format!(
        "clusterwide-{}",
        policy["metadata"]["name"].as_str().unwrap_or_default()
    )
}

/// The `policies.yml` entry of one ClusterAdmissionPolicy, as
/// `buildPoliciesMap` and `policyServerConfigEntry.MarshalJSON` write it:
/// `namespacedName`, `module`, `policyMode` (the policy's `mode`),
/// `allowedToMutate` (its `mutating`), `contextAwareResources` and
/// `settings` when it has them, `message` and `timeoutEvalSeconds` when
/// set, and `hostCapabilities: ["*"]`, which the controller gives every
/// cluster-wide policy.
pub fn policies_entry(policy: &Value) -> Value {
    let spec = &policy["spec"];
    let mut entry = Map::new();
    entry.insert(
        "namespacedName".into(),
        json!({"Namespace": "", "Name": policy["metadata"]["name"]}),
    );
    entry.insert("module".into(), spec["module"].clone());
    entry.insert(
        "policyMode".into(),
        json!(spec["mode"].as_str().unwrap_or("protect")),
    );
    entry.insert(
        "allowedToMutate".into(),
        json!(spec["mutating"].as_bool().unwrap_or(false)),
    );
    if spec["contextAwareResources"]
        .as_array()
        .is_some_and(|r| !r.is_empty())
    {
        entry.insert(
            "contextAwareResources".into(),
            spec["contextAwareResources"].clone(),
        );
    }
    for key in ["settings", "message", "timeoutEvalSeconds"] {
        if !spec[key].is_null() {
            entry.insert(key.into(), spec[key].clone());
        }
    }
    entry.insert("hostCapabilities".into(), json!(["*"]));
    Value::Object(entry)
}

/// policy-server's `--policies` file for `policies` (ClusterAdmissionPolicies
/// as stored): each entry ([`policies_entry`]) under its [`unique_name`].
pub fn policies_yml(policies: &[Value]) -> Value {
    Value::Object(
        policies
            .iter()
            .map(|policy| (unique_name(policy), policies_entry(policy)))
            .collect(),
    )
}

/// The webhook configuration the controller registers for `policy` (a
/// ClusterAdmissionPolicy as stored, its defaults filled in): a
/// MutatingWebhookConfiguration when `spec.mutating`, else a
/// ValidatingWebhookConfiguration, named [`unique_name`], with one webhook
/// `<that>.kubewarden.admission` that calls `<base_url>/validate/<that>`
/// (the controller names the Service `policy-server-<name>` in
/// [`NAMESPACE`], port 443, instead) trusting `ca_bundle` (PEM). `rules`,
/// `failurePolicy`, `matchPolicy`, `objectSelector`, `timeoutSeconds` and
/// `matchConditions` are the policy's (kube-apiserver defaults those left
/// out: `Fail`, `Equivalent`); `sideEffects` is the policy's or `None`;
/// `admissionReviewVersions` `[v1]`; the namespace selector leaves
/// [`NAMESPACE`] out and adds the policy's own expressions
/// (`namespaceSelector` of `policySubReconciler`).
pub fn webhook_configuration(policy: &Value, base_url: &str, ca_bundle: &str) -> Value {
    let spec = &policy["spec"];
    let name = unique_name(policy);
    let kind = if spec["mutating"].as_bool().unwrap_or(false) {
        "MutatingWebhookConfiguration"
    } else {
        "ValidatingWebhookConfiguration"
    };
    let mut expressions = vec![json!({
        "key": "kubernetes.io/metadata.name",
        "operator": "NotIn",
        "values": [NAMESPACE],
    })];
    if let Some(own) = spec["namespaceSelector"]["matchExpressions"].as_array() {
        expressions.extend(own.iter().cloned());
    }
    let mut webhook = Map::new();
    webhook.insert("name".into(), json!(format!("{name}.kubewarden.admission")));
    webhook.insert(
        "clientConfig".into(),
        json!({
            "url": format!("{}/validate/{name}", base_url.trim_end_matches('/')),
            "caBundle": base64(ca_bundle),
        }),
    );
    webhook.insert("rules".into(), spec["rules"].clone());
    for key in [
        "failurePolicy",
        "matchPolicy",
        "objectSelector",
        "timeoutSeconds",
        "matchConditions",
    ] {
        if !spec[key].is_null() {
            webhook.insert(key.into(), spec[key].clone());
        }
    }
    webhook.insert(
        "namespaceSelector".into(),
        json!({"matchExpressions": expressions}),
    );
    webhook.insert(
        "sideEffects".into(),
        json!(spec["sideEffects"].as_str().unwrap_or("None")),
    );
    webhook.insert("admissionReviewVersions".into(), json!(["v1"]));
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "labels": {
                "app.kubernetes.io/part-of": "kubewarden",
                "kubewardenPolicyScope": "cluster",
            },
            "annotations": {
                "kubewardenPolicyName": policy["metadata"]["name"],
                "kubewardenPolicyNamespace": "",
            },
        },
        "webhooks": [Value::Object(webhook)],
    })
}

/// The name of the webhook in `policy`'s configuration, as kube-apiserver
/// quotes it in a denial (`admission webhook "<name>" denied the request:
/// ...`).
pub fn webhook_name(policy: &Value) -> String {
    format!("{}.kubewarden.admission", unique_name(policy))
}

fn base64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(mutating: bool) -> Value {
        json!({
            "apiVersion": "policies.kubewarden.io/v1",
            "kind": "ClusterAdmissionPolicy",
            "metadata": {"name": "revision-uniqueness"},
            "spec": {
                "module": "file:///dist/revision-uniqueness.wasm",
                "mode": "protect",
                "mutating": mutating,
                "settings": {"autoIncrementRevision": false},
                "rules": [{"apiGroups": ["olm.operatorframework.io"], "apiVersions": ["v1"],
                    "resources": ["clusterobjectsets"], "operations": ["CREATE", "UPDATE"]}],
                "contextAwareResources": [
                    {"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet"}],
                "timeoutSeconds": 10,
                "namespaceSelector": {"matchExpressions": [
                    {"key": "team", "operator": "In", "values": ["a"]}]},
            },
        })
    }

    #[test]
    fn a_policy_becomes_the_entry_and_webhook_the_controller_writes() {
        let policy = policy(true);
        let entry = &policies_yml(std::slice::from_ref(&policy))["clusterwide-revision-uniqueness"];
        assert_eq!(
            entry,
            &json!({
                "namespacedName": {"Namespace": "", "Name": "revision-uniqueness"},
                "module": "file:///dist/revision-uniqueness.wasm",
                "policyMode": "protect",
                "allowedToMutate": true,
                "contextAwareResources": [
                    {"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet"}],
                "settings": {"autoIncrementRevision": false},
                "hostCapabilities": ["*"],
            })
        );
        let config = webhook_configuration(&policy, "https://127.0.0.1:8443/", "PEM");
        assert_eq!(config["kind"], "MutatingWebhookConfiguration");
        assert_eq!(
            config["metadata"]["name"],
            "clusterwide-revision-uniqueness"
        );
        let webhook = &config["webhooks"][0];
        assert_eq!(webhook["name"], webhook_name(&policy));
        assert_eq!(
            webhook["clientConfig"]["url"],
            "https://127.0.0.1:8443/validate/clusterwide-revision-uniqueness"
        );
        assert_eq!(webhook["clientConfig"]["caBundle"], "UEVN");
        assert_eq!(webhook["sideEffects"], "None");
        assert_eq!(webhook["timeoutSeconds"], 10);
        assert!(webhook.get("failurePolicy").is_none(), "{webhook}");
        assert_eq!(
            webhook["namespaceSelector"]["matchExpressions"],
            json!([
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kubewarden"]},
                {"key": "team", "operator": "In", "values": ["a"]},
            ])
        );
        assert_eq!(webhook["rules"], policy["spec"]["rules"]);
        assert_eq!(
            webhook_configuration(&super::tests::policy(false), "https://x", "PEM")["kind"],
            "ValidatingWebhookConfiguration"
        );
    }
}
