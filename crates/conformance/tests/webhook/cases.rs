//! The scenarios made ready for the webhook path: each one's policy (the
//! module's ClusterAdmissionPolicy of `deploy/kubewarden/`, with the
//! scenario's settings), its request as kube-apiserver builds it, the
//! cluster it needs, and what the module answers on that request and that
//! cluster in our host, and in Kubewarden's evaluator as restated in
//! `olm_guard_conformance::policy_evaluator`.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use serde_json::{Value, json};

use olm_guard_conformance::requests::{as_the_server_sees, grant};
use olm_guard_conformance::served::Served;
use olm_guard_conformance::{Answer, ReferenceHost, Verdict, scenario};
use olm_guard_core::Capability;
use olm_guard_evaluator::scenario::PolicyStore;
use olm_guard_evaluator::{ClusterContext, PolicyError};
use olm_guard_kube_harness::cluster::Requester;
use olm_guard_kube_harness::{Admit, KubeHarness, kubewarden};
use olm_guard_snapshot::{LoadOptions, Location, Snapshot};

use super::workspace;

/// A scenario ready to be sent.
pub struct Case {
    /// Its directory, relative to the workspace.
    pub name: String,
    /// The CRD its request's kind is served by (`None`: a built-in kind).
    pub crd: Option<Value>,
    pub rule: String,
    /// Its ClusterAdmissionPolicy, by index into [`Prepared::policies`].
    pub policy: usize,
    /// The request as kube-apiserver builds it (object and old object
    /// decoded against the CRD, the user and groups it authenticates).
    pub request: Value,
    pub requester: Requester,
    /// The scenario's cluster objects.
    pub objects: Vec<Value>,
    /// The grant that lets the requester make the write at all.
    pub grant: Vec<Value>,
    /// The module's answer in our host, on the cluster policy-server reads.
    pub module: Verdict,
    /// Kubewarden's evaluator, as `policy_evaluator` restates it, on the
    /// same request and cluster (`ReferenceHost`).
    pub restated: Verdict,
    /// The cached questions policy-server will ask for it (`can_i`,
    /// `get_resource`: kept 5 s), each with the answer this cluster gives.
    pub cached: Vec<(String, String)>,
}

/// What the scenarios need, and those not sent, by reason.
pub struct Prepared {
    pub cases: Vec<Case>,
    /// The ClusterAdmissionPolicies: `deploy/kubewarden/<rule>.yaml`, with
    /// each scenario's settings (one per distinct settings), the module a
    /// `file://` URL of `dist/`.
    pub policies: Vec<Value>,
    pub not_covered: Vec<(String, String)>,
}

/// The cluster every scenario's cluster sits in, as the server holds it:
/// what kube-apiserver creates and keeps (its Namespaces, the discovery
/// RBAC the tests keep), Kubewarden's Namespace, its policy-server's
/// ServiceAccount and RBAC (`deploy/kubewarden/policy-server-rbac.yaml`).
pub struct Platform {
    pub objects: Vec<Value>,
}

impl Platform {
    /// `kept` is the default RBAC the cluster kept, as stored; `rbac` the
    /// documents of policy-server's RBAC manifest.
    pub fn new(kept: &[Value], rbac: &[Value]) -> Platform {
        let namespace = |name: &str| {
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name,
                "labels": {"kubernetes.io/metadata.name": name}}})
        };
        let mut objects: Vec<Value> = [
            "default",
            "kube-system",
            "kube-public",
            "kube-node-lease",
            kubewarden::NAMESPACE,
        ]
        .into_iter()
        .map(namespace)
        .collect();
        objects.push(
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {
            "name": kubewarden::SERVICE_ACCOUNT, "namespace": kubewarden::NAMESPACE}}),
        );
        objects.extend(kept.iter().cloned());
        objects.extend(rbac.iter().cloned());
        Platform { objects }
    }
}

/// `kind`, namespace and name: which object a document is.
fn identity(object: &Value) -> (Value, Value, Value, Value) {
    let group = object["apiVersion"]
        .as_str()
        .and_then(|v| v.split_once('/'))
        .map_or("", |(group, _)| group);
    (
        json!(group),
        object["kind"].clone(),
        object["metadata"]["namespace"].clone(),
        object["metadata"]["name"].clone(),
    )
}

/// The cluster the module is evaluated on: the scenario's objects and
/// those `also` in the server (the platform's, the grant, the stored old
/// object, the Namespaces the server needs for them), each once, the
/// scenario's version first.
fn cluster_of(objects: &[Value], also: &[Value]) -> anyhow::Result<Snapshot> {
    let mut all: Vec<Value> = Vec::new();
    for object in objects.iter().chain(also) {
        if !all.iter().any(|o| identity(o) == identity(object)) {
            all.push(object.clone());
        }
    }
    // A Namespace the objects live in that none of them is: the server
    // creates it (`add_namespaces_of`).
    let named: Vec<Value> = all
        .iter()
        .filter_map(|o| o["metadata"]["namespace"].as_str())
        .filter(|ns| !ns.is_empty())
        .map(|ns| {
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns,
                "labels": {"kubernetes.io/metadata.name": ns}}})
        })
        .collect();
    for namespace in named {
        if !all.iter().any(|o| identity(o) == identity(&namespace)) {
            all.push(namespace);
        }
    }
    let mut snapshot = Snapshot::new();
    snapshot.add_located(
        all.into_iter().map(|o| (Location::default(), o)),
        LoadOptions::STRICT,
    )?;
    Ok(snapshot)
}

/// The policy of `rule` with `settings`: its index in `policies`, added
/// when new (named `<rule>`, or `<rule>-<n>` for other settings).
fn policy_for(policies: &mut Vec<Value>, rule: &str, settings: &Value) -> anyhow::Result<usize> {
    let of_rule = |p: &Value| {
        p["spec"]["module"]
            .as_str()
            .is_some_and(|m| m.ends_with(&format!("/{rule}.wasm")))
    };
    if let Some(found) = policies
        .iter()
        .position(|p| of_rule(p) && p["spec"]["settings"] == *settings)
    {
        return Ok(found);
    }
    let path = workspace().join(format!("deploy/kubewarden/{rule}.yaml"));
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    let mut policy: Value = serde_yaml_ng::from_str(&text)?;
    let same = policies.iter().filter(|p| of_rule(p)).count();
    let name = if same == 0 && policy["spec"]["settings"] == *settings {
        rule.to_string()
    } else {
        format!("{rule}-{}", same + 1)
    };
    let module = workspace().join(format!("dist/{rule}.wasm"));
    let module = module.canonicalize().unwrap_or(module);
    policy["metadata"]["name"] = json!(name);
    policy["spec"]["module"] = json!(format!("file://{}", module.display()));
    policy["spec"]["settings"] = settings.clone();
    policies.push(policy);
    Ok(policies.len() - 1)
}

/// The questions policy-server keeps the answers of for 5 s
/// (`crates/policy-evaluator/src/callback_handler/kubernetes.rs`:
/// `can_i_cached` by the SubjectAccessReview, `get_resource_cached` by
/// apiVersion, kind, name and namespace) that an evaluation asked, each
/// with its answer.
fn cached_questions(calls: &[olm_guard_evaluator::CallRecord]) -> Vec<(String, String)> {
    calls
        .iter()
        .filter_map(|call| {
            let payload: Value = serde_json::from_str(&call.payload).ok()?;
            let key = match Capability::from_operation(call.capability.rsplit('/').next()?)? {
                Capability::CanI => format!("can_i {}", payload["subject_access_review"]),
                Capability::Get => format!(
                    "get {} {} {} {}",
                    payload["api_version"], payload["kind"], payload["name"], payload["namespace"]
                ),
                _ => return None,
            };
            let answer = match (&call.outcome, &call.answer) {
                (Ok(_), Some(bytes)) => String::from_utf8_lossy(bytes).into_owned(),
                (Err(e), _) => format!("error {e}"),
                (Ok(size), None) => format!("{size} bytes"),
            };
            Some((key, answer))
        })
        .collect()
}

/// Makes every scenario under `testdata/` ready, or says why it is not
/// sent.
pub struct Preparer<'a> {
    pub store: PolicyStore<'a>,
    pub served: Served,
    /// The CRDs the test clusters serve: a request's kind is decoded
    /// against its CRD there.
    pub installed: Vec<Value>,
    pub kube: KubeHarness,
    pub reference: ReferenceHost,
    pub platform: Platform,
    pub prepared: Prepared,
}

impl Preparer<'_> {
    /// The CRD the request's kind is served by on the test clusters: one
    /// installed, else the one `Served` gives (installed for it).
    fn crd_for(&self, request: &Value) -> Option<Value> {
        let group = request.pointer("/kind/group").and_then(Value::as_str)?;
        let kind = request.pointer("/kind/kind").and_then(Value::as_str)?;
        self.installed
            .iter()
            .find(|crd| crd["spec"]["group"] == group && crd["spec"]["names"]["kind"] == kind)
            .cloned()
            .or_else(|| self.served.crd_for(request, true))
    }

    pub fn prepare(&mut self, dir: &Path) -> anyhow::Result<()> {
        let name = dir
            .strip_prefix(workspace())
            .unwrap_or(dir)
            .display()
            .to_string();
        let not_covered = |prepared: &mut Prepared, reason: &str| {
            prepared
                .not_covered
                .push((name.clone(), reason.to_string()));
            Ok(())
        };
        let expect = olm_guard_evaluator::input::read_document(&dir.join("expect.json"))?;
        let rule = expect["policy"]
            .as_str()
            .context("expect.json names no policy")?
            .to_string();
        let settings = scenario::settings(dir)?;
        let policy = self.store.get(&rule)?;
        match policy.validate_settings(&settings) {
            Ok(()) => {}
            Err(PolicyError::InvalidSettings(_)) => {
                return not_covered(
                    &mut self.prepared,
                    "settings the module refuses (policy-server does not start with them)",
                );
            }
            Err(e) => anyhow::bail!("validate_settings: {e}"),
        }
        let request = scenario::request(dir)?;
        let objects: Vec<Value> = scenario::snapshot(dir)?.objects().cloned().collect();
        let crd = self.crd_for(&request);
        let decoded = self.kube.admit(&Admit {
            request: request.clone(),
            crds: crd.iter().cloned().collect(),
            ..Admit::default()
        })?;
        if decoded.refused.is_some() || decoded.schema_error.is_some() {
            return not_covered(
                &mut self.prepared,
                "an object the API server refuses before admission (CRD schema)",
            );
        }
        let mut request = request;
        request["object"] = decoded.object;
        request["oldObject"] = decoded.old_object;
        let operation = request["operation"].as_str().unwrap_or_default();
        if matches!(operation, "UPDATE" | "DELETE") && !request["oldObject"].is_object() {
            return not_covered(
                &mut self.prepared,
                "an UPDATE or DELETE without the stored object, which an API server always sends",
            );
        }
        // A CREATE makes its object: a cluster that holds it already would
        // refuse the request as a duplicate, after admission.
        let objects: Vec<Value> = if operation == "CREATE" {
            objects
                .into_iter()
                .filter(|o| identity(o) != identity(&request["object"]))
                .collect()
        } else {
            objects
        };
        let requester = as_the_server_sees(&request["userInfo"]);
        request["userInfo"] = json!({"username": requester.user, "groups": requester.groups});
        let grant = grant(&request, &requester);
        let mut also = self.platform.objects.clone();
        also.extend(grant.iter().cloned());
        if request["oldObject"].is_object() {
            also.push(request["oldObject"].clone());
        }
        let cluster: ClusterContext = Arc::new(cluster_of(&objects, &also)?);
        let evaluation = policy.validate_with(
            &request,
            &settings,
            policy.host(cluster.clone()).keeping_answers(),
        )?;
        let object = request.get("object").cloned().unwrap_or(Value::Null);
        let module = Verdict::of(&evaluation.response, &object)?;
        let wasm = workspace().join(format!("dist/{rule}.wasm"));
        let restated = match self
            .reference
            .evaluate(&policy, &wasm, &request, &settings, &mut || {
                Ok(cluster.clone())
            })?
            .answer
        {
            Answer::Response(verdict) => verdict,
            other => anyhow::bail!("Kubewarden's waPC host: {other}"),
        };
        let policy = policy_for(&mut self.prepared.policies, &rule, &settings)?;
        self.prepared.cases.push(Case {
            name,
            crd,
            rule,
            policy,
            request,
            requester,
            objects,
            grant,
            module,
            restated,
            cached: cached_questions(&evaluation.calls),
        });
        Ok(())
    }
}
