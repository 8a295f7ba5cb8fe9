//! A scenario's request as kube-apiserver makes and admits it, shared by the
//! tests that send scenarios to a whole control plane (`tests/control_plane.rs`,
//! native policies; `tests/webhook.rs`, policy-server as the webhook): who
//! the server says the requester is, the grant that lets the requester make
//! the write at all, what of a stored object a client wrote, and the
//! refusals that come before any admission.

use serde_json::{Value, json};

use olm_guard_kube_harness::cluster::{Changes, ClusterError, Requester, TestCluster};

/// The groups the API server gives an impersonated user
/// (k8s.io/apiserver `pkg/endpoints/filters/impersonation.go`,
/// `WithImpersonation`): those asked for, the service-account groups of a
/// service account asked for without any, and `system:authenticated`
/// unless `system:authenticated` or `system:unauthenticated` is among them.
pub fn as_the_server_sees(user_info: &Value) -> Requester {
    let user = user_info["username"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut groups: Vec<String> = user_info["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g.as_str().map(str::to_string))
        .collect();
    if groups.is_empty()
        && let Some(account) = user.strip_prefix("system:serviceaccount:")
        && let Some((namespace, _)) = account.split_once(':')
    {
        groups = vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
        ];
    }
    if user != "system:anonymous"
        && !groups
            .iter()
            .any(|g| g == "system:authenticated" || g == "system:unauthenticated")
    {
        groups.push("system:authenticated".into());
    }
    Requester { user, groups }
}

/// A ClusterRole and binding that let `requester` send `request` at all:
/// its verb on its resource, nothing else.
pub fn grant(request: &Value, requester: &Requester) -> Vec<Value> {
    let verb = match request["operation"].as_str() {
        Some("UPDATE") => "update",
        Some("DELETE") => "delete",
        _ => "create",
    };
    let mut resource = request["resource"]["resource"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if let Some(sub) = request["subResource"].as_str().filter(|s| !s.is_empty()) {
        resource = format!("{resource}/{sub}");
    }
    let group = request["resource"]["group"].as_str().unwrap_or_default();
    vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "olm-guard-test-requester"},
            "rules": [{"apiGroups": [group], "resources": [resource], "verbs": [verb]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "olm-guard-test-requester"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                "name": "olm-guard-test-requester"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                "name": requester.user}]}),
    ]
}

/// What the tests compare of a stored object: what a client wrote.
pub fn written_fields(object: &Value) -> Value {
    json!({
        "name": object["metadata"]["name"],
        "labels": object["metadata"]["labels"],
        "annotations": object["metadata"]["annotations"],
        "spec": object["spec"],
    })
}

/// Whether RBAC's own escalation check refused a ClusterRole write (its
/// message), before any admission (kubernetes
/// `pkg/registry/rbac/clusterrole/policybased/storage.go`).
pub fn escalation_refused(message: &str) -> bool {
    message.contains("attempting to grant RBAC permissions not currently held")
        || message.contains("must have cluster-admin privileges to use the aggregationRule")
}

/// Whether `a` and `b` are the same object: group, kind, namespace, name.
fn same_object(a: &Value, b: &Value) -> bool {
    let group = |o: &Value| {
        o["apiVersion"]
            .as_str()
            .and_then(|v| v.rsplit_once('/'))
            .map_or("", |(group, _)| group)
            .to_string()
    };
    group(a) == group(b)
        && a["kind"] == b["kind"]
        && a["metadata"]["namespace"] == b["metadata"]["namespace"]
        && a["metadata"]["name"] == b["metadata"]["name"]
}

/// The documents of a YAML file.
pub fn documents(text: &str) -> anyhow::Result<Vec<Value>> {
    let mut documents = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        let value: Value = serde::Deserialize::deserialize(document)?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    Ok(documents)
}

/// The order a scenario's objects are put in: Namespaces and CRDs before
/// what lives in them or is served by them.
pub fn put_order(object: &Value) -> u8 {
    match object["kind"].as_str() {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        _ => 2,
    }
}

/// How putting a scenario's objects in went ([`put_all`]).
pub enum Put {
    /// Every object was stored as sent.
    Stored,
    /// An admission check in force refused or rewrote one: put them in
    /// again without it.
    PolicyInTheWay,
    /// The API server refused one (its reason) for another cause.
    Refused(String),
}

/// Puts `objects` into `cluster` (recorded in `changes`), the Namespaces
/// they and `also` live in first, then `objects` in the order given (as
/// [`put_order`] sorts them: the Namespaces and CRDs among them one after
/// the other, the rest at once). Objects of kinds the server does not
/// serve are skipped and counted in `unserved`. While the policies are
/// `bound`, a refusal whose message contains `denied` (an admission
/// webhook's or policy's) or, when they are `mutating`, an object stored
/// with other written fields than sent, is [`Put::PolicyInTheWay`].
pub fn put_all(
    cluster: &TestCluster,
    changes: &mut Changes,
    objects: &[Value],
    also: &[Value],
    (bound, mutating): (bool, bool),
    unserved: &mut usize,
) -> Result<Put, ClusterError> {
    let mut namespaced = objects.to_vec();
    namespaced.extend(also.iter().cloned());
    cluster.add_namespaces_of(&namespaced, changes)?;
    let mut served = Vec::new();
    for object in objects {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        if cluster.serves(api_version, object["kind"].as_str().unwrap_or_default()) {
            served.push(object.clone());
        } else {
            // A kind no CRD of this cluster serves: nothing an admission
            // check of these tests reads from the server.
            *unserved += 1;
        }
    }
    // The Namespaces and CRDs first, one after the other (what follows
    // lives in them or is served by them); then the rest at once, but for
    // an object put a second time (a stored old object the cluster lists
    // too), which follows the first.
    let holders = served.iter().take_while(|o| put_order(o) < 2).count();
    let (mut first, mut again): (Vec<Value>, Vec<Value>) = (Vec::new(), Vec::new());
    for object in served.drain(holders..) {
        if first.iter().any(|o| same_object(o, &object)) {
            again.push(object);
        } else {
            first.push(object);
        }
    }
    let mut answers = Vec::with_capacity(served.len() + first.len() + again.len());
    for object in &served {
        answers.push(cluster.put(object, changes));
    }
    answers.extend(cluster.put_at_once(&first, changes));
    for object in &again {
        answers.push(cluster.put(object, changes));
    }
    served.extend(first);
    served.extend(again);
    for (object, answer) in served.iter().zip(answers) {
        match answer? {
            Ok(stored)
                if bound && mutating && written_fields(&stored) != written_fields(object) =>
            {
                return Ok(Put::PolicyInTheWay);
            }
            Ok(_) => {}
            Err(refusal) if bound && refusal.message.contains("denied") => {
                return Ok(Put::PolicyInTheWay);
            }
            Err(refusal) => return Ok(Put::Refused(refusal.reason)),
        }
    }
    Ok(Put::Stored)
}
