//! The native policies enforced by a whole control plane: kube-apiserver on
//! etcd (`olm_guard_kube_harness::cluster`), the policies installed with
//! kubectl as a user installs them, and every native scenario of
//! `testdata/` sent to it as the real request, by the scenario's requester.
//!
//! For each rule and settings, the deployment is what `olm-guard scaffold
//! vap` writes for them: the files of `deploy/native/`,
//! `deploy/native-spec-group/` and `deploy/native-mutating/` themselves
//! where the settings are theirs (the README's `kubectl apply -f
//! deploy/native/<rule>.yaml`, `kubectl patch crd ... --patch-file`), a file
//! rendered the same way otherwise. Scenarios are sent deployment by
//! deployment; for each:
//!
//! 1. the policies' bindings are taken away (a sentinel policy bound after
//!    them says when the API server's informers saw it), the cluster of the
//!    scenario before is deleted, and this scenario's put in: its
//!    Namespaces, RBAC and custom resources (the API server's own default
//!    RBAC is deleted once, so that the scenario's RBAC is the cluster's),
//!    the stored object of an UPDATE or DELETE, and a grant that lets the
//!    requester make the request at all (RBAC authorizes the request before
//!    any admission policy sees it);
//! 2. the bindings are put back (the sentinel again), and the request is
//!    sent as the requester (kubectl's `--as`/`--as-group` impersonation):
//!    a dry run until the answer has settled (RBAC, params and Namespaces
//!    reach the admission plugins through informers), then the real one;
//! 3. the answer is held to the module's on the same request (decoded as
//!    the API server decodes it, with the user and groups the API server
//!    sees) and the same cluster: admitted or denied; the denial's message,
//!    warnings (Warn and Audit roll-out) and mutated object (as stored)
//!    compared word for word and counted.
//!
//! Every scenario the module denies is sent again to the roll-out form of
//! its deployment (`scaffold vap --actions warn`: its bindings Warn and
//! Audit, no CRD patch, each mutation a preview): it must be admitted with
//! the denial as a warning, whose words are compared and counted too.
//!
//! A scenario the native form does not cover (a rule or setting only the
//! module enforces, an object the API server refuses before admission) is
//! counted as such, never as agreeing. The test prints `control plane: N/N
//! native scenarios enforced as the module decides`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use olm_guard_conformance::native::{ModuleAnswer, denial_text, module_answer, warning_text};
use olm_guard_conformance::requests::{
    self, Put, as_the_server_sees, documents, grant, put_order, written_fields,
};
use olm_guard_conformance::scenario;
use olm_guard_conformance::served::Served;
use olm_guard_evaluator::scenario::{PolicyStore, discover};
use olm_guard_kube_harness::cluster::{Changes, Requester, TestCluster, Write, Written};
use olm_guard_kube_harness::{Admit, KubeHarness};
use olm_guard_native::render;
use olm_guard_native::{GenerateError, Native, generate};
use olm_guard_runtime::{Limits, Runtime};
use olm_guard_snapshot::{LoadOptions, Snapshot};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// How long an answer may take to settle: informers are eventually
/// consistent, and a busy machine is slow.
const SETTLE_WITHIN: Duration = Duration::from_secs(10);

/// What one deployment installs.
struct Deployment {
    /// The rule.
    rule: String,
    /// The files applied with `kubectl apply -f`, in order.
    files: Vec<PathBuf>,
    /// The CRD patches applied with `kubectl patch crd NAME --type json
    /// --patch-file FILE`: (CRD name, file).
    patches: Vec<(String, PathBuf)>,
    /// The CRD of the judged kind before the patches, when it is a custom
    /// resource.
    crd: Option<Value>,
    /// The bindings of the files, taken away and put back around each
    /// scenario's set-up when a policy is in its way.
    bindings: Vec<Value>,
    /// Its mutating policies' file, if it has one.
    mutations: Option<PathBuf>,
}

/// A scenario, ready to be sent.
#[derive(Clone)]
struct Case {
    name: String,
    deployment: usize,
    /// The request as the API server builds it.
    request: Value,
    requester: Requester,
    /// The scenario's cluster objects of kinds the server serves.
    objects: Vec<Value>,
    /// The grant that lets the requester make the request.
    grant: Vec<Value>,
    module: ModuleAnswer,
    /// Sent to the roll-out form of the policies (`scaffold vap --actions
    /// warn`): what the module denies is admitted, with the denial as a
    /// warning.
    rollout: bool,
}

/// Why a scenario is not sent, or its cases: one for the policies, and one
/// for their roll-out form when the module denies.
enum Prepared {
    Cases(Vec<Case>),
    NotCovered(String),
}

/// The shipped file of `deploy/` whose text is `text`, if one is.
fn shipped(rule: &str, text: &str) -> Option<PathBuf> {
    let root = workspace().join("deploy");
    ["native", "native-spec-group", "native-mutating"]
        .iter()
        .flat_map(|dir| {
            [
                root.join(dir).join(format!("{rule}.yaml")),
                root.join(dir).join(format!("{rule}.mutating.yaml")),
            ]
        })
        .find(|path| std::fs::read_to_string(path).is_ok_and(|shipped| shipped == text))
}

/// The shipped CRD patch of `deploy/` named `file` whose text is `text`,
/// if one is.
fn shipped_patch(file: &str, text: &str) -> Option<PathBuf> {
    let root = workspace().join("deploy");
    ["native", "native-spec-group", "native-mutating"]
        .iter()
        .map(|dir| root.join(dir).join(file))
        .find(|path| std::fs::read_to_string(path).is_ok_and(|shipped| shipped == text))
}

/// Prepares the scenarios and their deployments.
struct Preparer<'a> {
    store: PolicyStore<'a>,
    served: Served,
    kube: KubeHarness,
    dir: PathBuf,
    deployments: Vec<(String, Deployment)>,
}

impl Preparer<'_> {
    fn deployment(
        &mut self,
        rule: &str,
        native: &Native,
        crd: Option<Value>,
    ) -> anyhow::Result<usize> {
        // `scaffold vap`'s header names the command; the same for all.
        let command = format!("olm-guard scaffold vap {rule}");
        let policies = render::policies_yaml(native, &command);
        let mutations = render::mutations_yaml(native, &command);
        let patches: Vec<(String, String, String)> = native
            .schema_patches
            .iter()
            .map(|p| (p.crd.clone(), p.file.clone(), render::schema_patch_json(p)))
            .collect();
        let key = format!(
            "{rule}\n{policies}\n{mutations:?}\n{patches:?}\n{}",
            crd.as_ref().map(Value::to_string).unwrap_or_default()
        );
        if let Some(index) = self.deployments.iter().position(|(k, _)| *k == key) {
            return Ok(index);
        }
        let index = self.deployments.len();
        let mut files = Vec::new();
        let mut bindings = Vec::new();
        for text in std::iter::once(&policies).chain(mutations.as_ref()) {
            let path = match shipped(rule, text) {
                Some(path) => path,
                None => {
                    let path = self
                        .dir
                        .join(format!("deployment-{index}-{}.yaml", files.len()));
                    std::fs::write(&path, text)?;
                    path
                }
            };
            bindings.extend(
                documents(text)?
                    .into_iter()
                    .filter(|d| d["kind"].as_str().is_some_and(|k| k.ends_with("Binding"))),
            );
            files.push(path);
        }
        let mut patch_files = Vec::new();
        for (crd_name, file, text) in patches {
            let path = match shipped_patch(&file, &text) {
                Some(path) => path,
                None => {
                    let path = self.dir.join(format!("deployment-{index}-{file}"));
                    std::fs::write(&path, text)?;
                    path
                }
            };
            patch_files.push((crd_name, path));
        }
        let mutations = mutations.as_ref().and_then(|_| files.last().cloned());
        self.deployments.push((
            key,
            Deployment {
                rule: rule.to_string(),
                files,
                patches: patch_files,
                crd,
                bindings,
                mutations,
            },
        ));
        Ok(index)
    }

    fn prepare(&mut self, dir: &Path) -> anyhow::Result<Prepared> {
        let expect = olm_guard_evaluator::input::read_document(&dir.join("expect.json"))?;
        let rule = expect["policy"]
            .as_str()
            .context("expect.json names no policy")?;
        let settings = scenario::settings(dir)?;
        let request = scenario::request(dir)?;
        let snapshot = scenario::snapshot(dir)?;
        let objects: Vec<Value> = snapshot.objects().cloned().collect();
        // catalog-union's union settings are for a CRD with the union members.
        let union_members = rule == "catalog-union"
            && (["warnLegacy", "migrateLegacy"]
                .iter()
                .any(|s| settings.get(s) == Some(&Value::Bool(true)))
                || settings.get("allowLegacy") == Some(&Value::Bool(false)));
        let crd = self.served.crd_for(&request, union_members);
        let mut generated_for = objects.clone();
        generated_for.extend(crd.iter().cloned());
        let native = match generate(rule, &settings, Some(&generated_for)) {
            Ok(native) => native,
            Err(GenerateError::Settings { .. }) => {
                return Ok(Prepared::NotCovered(
                    "settings the generator refuses".into(),
                ));
            }
            Err(e @ (GenerateError::NotNative { .. } | GenerateError::ModuleOnly { .. })) => {
                return Ok(Prepared::NotCovered(e.to_string()));
            }
            Err(e) => bail!("{e}"),
        };
        if let Some(reason) = olm_guard_native::policies::not_covered(rule, &request, &snapshot) {
            return Ok(Prepared::NotCovered(format!("{rule}: {reason}")));
        }
        // The objects as the API server decodes them (pruned, defaulted
        // against the CRD), or its refusal before any admission.
        let decoded = self.kube.admit(&Admit {
            request: request.clone(),
            crds: crd.iter().cloned().collect(),
            ..Admit::default()
        })?;
        if decoded.refused.is_some() || decoded.schema_error.is_some() {
            return Ok(Prepared::NotCovered(
                "an object the API server refuses before admission".into(),
            ));
        }
        let mut request = request.clone();
        request["object"] = decoded.object;
        request["oldObject"] = decoded.old_object;
        let requester = as_the_server_sees(&request["userInfo"]);
        request["userInfo"] = json!({"username": requester.user, "groups": requester.groups});
        let grant = grant(&request, &requester);
        // The module's cluster: the file's, with the grant.
        let mut with_grant = Snapshot::new();
        with_grant.add_api_resources(snapshot.api_resources().clone());
        let located: Vec<(olm_guard_snapshot::Location, Value)> = objects
            .iter()
            .chain(&grant)
            .map(|o| (olm_guard_snapshot::Location::default(), o.clone()))
            .collect();
        with_grant.add_located(located, LoadOptions::STRICT)?;
        let policy = self.store.get(rule)?;
        let module = module_answer(&policy, &request, &settings, Arc::new(with_grant))?;
        match &module {
            ModuleAnswer::SettingsRefused => {
                return Ok(Prepared::NotCovered("settings the module refuses".into()));
            }
            ModuleAnswer::Mutated { .. } if native.mutations.is_empty() => {
                return Ok(Prepared::NotCovered(format!(
                    "{rule}: the module mutates the object"
                )));
            }
            _ => {}
        }
        let deployment = self.deployment(rule, &native, crd.clone())?;
        let case = Case {
            name: dir
                .strip_prefix(workspace())
                .unwrap_or(dir)
                .display()
                .to_string(),
            deployment,
            request,
            requester,
            objects,
            grant,
            module,
            rollout: false,
        };
        let mut cases = vec![case.clone()];
        if matches!(case.module, ModuleAnswer::Denied(_)) {
            cases.push(Case {
                deployment: self.deployment(rule, &native.warn_only(), crd)?,
                rollout: true,
                ..case
            });
        }
        Ok(Prepared::Cases(cases))
    }
}

/// Runs a kubectl command; its output when it succeeds.
fn run(mut command: Command) -> anyhow::Result<String> {
    let output = command.output().context("kubectl runs")?;
    if !output.status.success() {
        bail!(
            "{command:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The sentinel policies: bound after a deployment's bindings (and taken
/// away after them), they say when the API server's informers have seen
/// those: a ConfigMap `olm-guard-sentinel-deny` is refused, and one named
/// `olm-guard-sentinel-mutate` labelled, while they are bound.
fn sentinels() -> (Vec<Value>, Vec<Value>) {
    let rules = json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
        "operations": ["CREATE"], "resources": ["configmaps"]}]});
    let policies = vec![
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "olm-guard-test-sentinel"},
            "spec": {"failurePolicy": "Fail", "matchConstraints": rules,
                "matchConditions": [{"name": "sentinel",
                    "expression": "object.metadata.name == 'olm-guard-sentinel-deny'"}],
                "validations": [{"expression": "false", "message": "sentinel"}]}}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingAdmissionPolicy", "metadata": {"name": "olm-guard-test-sentinel"},
            "spec": {"failurePolicy": "Fail", "matchConstraints": rules,
                "reinvocationPolicy": "Never",
                "matchConditions": [{"name": "sentinel",
                    "expression": "object.metadata.name == 'olm-guard-sentinel-mutate'"}],
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                    "expression": "Object{metadata: Object.metadata{labels: \
                        {'olm-guard-sentinel': 'mutated'}}}"}}]}}),
    ];
    let bindings = vec![
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "olm-guard-test-sentinel"},
            "spec": {"policyName": "olm-guard-test-sentinel", "validationActions": ["Deny"]}}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": "olm-guard-test-sentinel"},
            "spec": {"policyName": "olm-guard-test-sentinel"}}),
    ];
    (policies, bindings)
}

/// The control plane and what is bound in it.
struct Plane {
    cluster: TestCluster,
    sentinel_bindings: Vec<Value>,
    /// The bindings of the deployment installed.
    bindings: Vec<Value>,
    /// Whether they (and the sentinels) are bound now.
    bound: bool,
    changes: Changes,
    /// Objects of the scenarios' clusters of kinds the server does not
    /// serve, left out.
    unserved: usize,
    /// Where the time went, by step.
    spent: BTreeMap<&'static str, Duration>,
}

impl Plane {
    /// Runs `step`, adding its time to `what`'s.
    fn timed<T>(&mut self, what: &'static str, step: impl FnOnce(&mut Plane) -> T) -> T {
        let started = Instant::now();
        let result = step(self);
        *self.spent.entry(what).or_default() += started.elapsed();
        result
    }
}

impl Plane {
    /// Puts `objects` in ([`requests::put_all`]), with this plane's
    /// bindings in force or not.
    fn put_all(
        &mut self,
        objects: &[Value],
        also: &[Value],
        mutating: bool,
    ) -> anyhow::Result<Put> {
        Ok(requests::put_all(
            &self.cluster,
            &mut self.changes,
            objects,
            also,
            (self.bound, mutating),
            &mut self.unserved,
        )?)
    }

    /// Whether the sentinels answer as bound (`true`) or unbound.
    fn sentinels_are(&self, bound: bool) -> anyhow::Result<bool> {
        let configmap = |name: &str| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "default"}})
        };
        let deny = self.cluster.write_as(
            None,
            Write::Create,
            &configmap("olm-guard-sentinel-deny"),
            None,
            true,
        )?;
        let mutate = self.cluster.write_as(
            None,
            Write::Create,
            &configmap("olm-guard-sentinel-mutate"),
            None,
            true,
        )?;
        let denied = deny.answer.is_err();
        let mutated = mutate
            .answer
            .as_ref()
            .is_ok_and(|o| o["metadata"]["labels"]["olm-guard-sentinel"] == "mutated");
        Ok(denied == bound && mutated == bound)
    }

    fn wait_sentinels(&self, bound: bool) -> anyhow::Result<()> {
        let started = Instant::now();
        while !self.sentinels_are(bound)? {
            if started.elapsed() > SETTLE_WITHIN * 3 {
                bail!(
                    "the sentinel policies are still not {} after {:?}",
                    if bound { "in force" } else { "gone" },
                    SETTLE_WITHIN * 3
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Takes the deployment's bindings away, the sentinels last, and waits
    /// until the API server has seen it.
    fn unbind(&mut self) -> anyhow::Result<()> {
        if !self.bound {
            return Ok(());
        }
        for binding in self.bindings.iter().chain(&self.sentinel_bindings) {
            self.cluster.remove(binding)?;
        }
        self.bound = false;
        self.wait_sentinels(false)
    }

    /// Binds the deployment's bindings, then the sentinels, and waits until
    /// the API server has seen them.
    fn bind(&mut self) -> anyhow::Result<()> {
        if self.bound {
            return Ok(());
        }
        for binding in self.bindings.iter().chain(&self.sentinel_bindings) {
            match self.cluster.create(binding)? {
                // kubectl apply created the deployment's.
                Err(refusal) if refusal.reason != "AlreadyExists" => {
                    bail!(
                        "binding {}: {}",
                        binding["metadata"]["name"],
                        refusal.message
                    );
                }
                _ => {}
            }
        }
        self.bound = true;
        self.wait_sentinels(true)
    }

    /// Deletes what the scenario before put in: with the policies bound,
    /// unless one of them refuses a delete.
    fn undo(&mut self) -> anyhow::Result<()> {
        if self.cluster.undo(&mut self.changes).is_err() {
            self.timed("bindings taken away", Plane::unbind)?;
            self.cluster.undo(&mut self.changes)?;
        }
        Ok(())
    }
}

/// A server's answer reduced to what is compared.
#[derive(Debug)]
enum Seen {
    Admitted {
        object: Value,
        warnings: Vec<String>,
    },
    /// Denied by a policy (or the CRD's rules): the message.
    Denied(String),
    /// Refused before admission: by RBAC's escalation check of a ClusterRole
    /// write, or the requester's own authorization.
    Refused(String),
}

fn seen(written: &Written) -> Seen {
    match &written.answer {
        Ok(object) => Seen::Admitted {
            object: object.clone(),
            warnings: written.warnings.clone(),
        },
        Err(refusal) if refusal.code == 403 && !refusal.message.contains("denied request") => {
            Seen::Refused(refusal.message.clone())
        }
        Err(refusal) => Seen::Denied(refusal.message.clone()),
    }
}

/// Whether RBAC's own escalation check refused a ClusterRole write, before
/// any admission policy.
fn escalation_refused(seen: &Seen) -> bool {
    matches!(seen, Seen::Refused(message) if requests::escalation_refused(message))
}

/// Whether the decision is the one expected of `case` (and not the
/// requester's own authorization still on its way to the RBAC
/// authorizer's informers): the module's, or, in the roll-out form, an
/// admission with a warning.
fn same_decision(case: &Case, seen: &Seen) -> bool {
    if case.rollout {
        return matches!(seen, Seen::Admitted { warnings, .. } if !warnings.is_empty());
    }
    matches!(
        (&case.module, seen),
        (ModuleAnswer::Denied(_), Seen::Denied(_))
            | (
                ModuleAnswer::Allowed(_) | ModuleAnswer::Mutated { .. },
                Seen::Admitted { .. }
            )
    )
}

/// How a case ended.
enum Outcome {
    Agree {
        kind: &'static str,
        same_text: Option<bool>,
    },
    NotCovered(String),
    Disagree(String),
}

fn send(plane: &mut Plane, deployment: &Deployment, case: &Case) -> anyhow::Result<Outcome> {
    plane.timed("the scenario before deleted", Plane::undo)?;
    let request = &case.request;
    let mut objects: Vec<Value> = case.objects.clone();
    objects.sort_by_key(put_order);
    objects.extend(case.grant.iter().cloned());
    let operation = request["operation"].as_str().unwrap_or_default();
    match operation {
        "UPDATE" | "DELETE" if request["oldObject"].is_object() => {
            objects.push(request["oldObject"].clone());
        }
        "UPDATE" | "DELETE" => {
            return Ok(Outcome::NotCovered(
                "an UPDATE or DELETE without the stored object, which an API server always \
                 sends"
                    .into(),
            ));
        }
        _ => {}
    }
    // Put in with the policies bound (no wait for informers), unless one
    // of them refuses or rewrites an object: then without them.
    let also = [request["object"].clone()];
    let mutating = deployment.mutations.is_some();
    let mut put = plane.timed("the scenario's cluster put in", |plane| {
        plane.put_all(&objects, &also, mutating)
    })?;
    if matches!(put, Put::PolicyInTheWay) {
        plane.timed("bindings taken away", Plane::unbind)?;
        plane.timed("the scenario before deleted", Plane::undo)?;
        put = plane.timed("the scenario's cluster put in", |plane| {
            plane.put_all(&objects, &also, mutating)
        })?;
    }
    if let Put::Refused(reason) = put {
        return Ok(Outcome::NotCovered(format!(
            "a cluster object or stored object the API server refuses ({reason})"
        )));
    }
    plane.timed("bindings put back", Plane::bind)?;
    let started = Instant::now();
    let subresource = request["subResource"].as_str().filter(|s| !s.is_empty());

    let (write, object) = match operation {
        "UPDATE" => {
            let stored = plane.cluster.get(&request["oldObject"])?;
            (
                Write::Update,
                TestCluster::update_of(&request["object"], &stored),
            )
        }
        "DELETE" => (Write::Delete, request["oldObject"].clone()),
        // As a client creates it: a stored object read back (as the audit
        // scanner sends one) carries a resourceVersion, which a create
        // must not.
        _ => (Write::Create, TestCluster::create_of(&request["object"])),
    };
    // A dry run until the answer settles, then the real request.
    let settling = Instant::now();
    loop {
        let dry =
            plane
                .cluster
                .write_as(Some(&case.requester), write, &object, subresource, true)?;
        let answer = seen(&dry);
        if same_decision(case, &answer)
            || escalation_refused(&answer)
            || settling.elapsed() > SETTLE_WITHIN
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let written =
        plane
            .cluster
            .write_as(Some(&case.requester), write, &object, subresource, false)?;
    if write == Write::Create
        && let Ok(stored) = &written.answer
    {
        plane.changes.created(stored.clone());
    }
    *plane.spent.entry("the request sent").or_default() += started.elapsed();
    let seen = seen(&written);
    if case.rollout {
        return Ok(match (&case.module, seen) {
            (ModuleAnswer::Denied(message), Seen::Admitted { warnings, .. })
                if !warnings.is_empty() =>
            {
                Outcome::Agree {
                    kind: "warned by the roll-out form",
                    same_text: Some(warnings.iter().any(|w| warning_text(w) == message)),
                }
            }
            (_, seen) if escalation_refused(&seen) => Outcome::NotCovered(
                "a ClusterRole write RBAC's own escalation check refuses before admission".into(),
            ),
            (module, seen) => Outcome::Disagree(format!(
                "the roll-out form: module {module:?}\n  the API server: {seen:?}"
            )),
        });
    }
    Ok(match (&case.module, seen) {
        (_, Seen::Denied(server))
            if deployment.crd.is_none() && !server.contains("denied request: ") =>
        {
            // A built-in kind's own validation runs before the validating
            // admission policies (k8s.io/apiserver `registry/rest`,
            // `BeforeCreate`), which the module has no part in.
            let _ = server;
            Outcome::NotCovered(
                "an object of a built-in kind the API server's own validation refuses before \
                 admission"
                    .into(),
            )
        }
        // An `Invalid` denial whose validation names no field: kubectl
        // prints `is invalid: : ValidatingAdmissionPolicy ...`.
        (ModuleAnswer::Denied(_), Seen::Denied(server)) if server.contains(" is invalid: : ") => {
            Outcome::Disagree(format!(
                "the denial names no field (a validation with reason Invalid and no fieldPath): \
                 {server}"
            ))
        }
        (ModuleAnswer::Denied(message), Seen::Denied(server))
            if server.contains("denied request: ") || server.contains(" is invalid: ") =>
        {
            let policy_denial = server.contains("denied request: ");
            Outcome::Agree {
                kind: if policy_denial {
                    "denied"
                } else {
                    "denied by the CRD's rules"
                },
                same_text: policy_denial.then(|| denial_text(&server) == message),
            }
        }
        (ModuleAnswer::Allowed(expected), Seen::Admitted { warnings, .. }) => {
            let got: Vec<&str> = warnings.iter().map(|w| warning_text(w)).collect();
            if got.len() != expected.len() {
                Outcome::Disagree(format!(
                    "both admit, with other warnings: module {expected:?}, the API server {got:?}"
                ))
            } else if expected.is_empty() {
                Outcome::Agree {
                    kind: "admitted",
                    same_text: None,
                }
            } else {
                Outcome::Agree {
                    kind: "admitted with warnings",
                    same_text: Some(got == *expected),
                }
            }
        }
        (ModuleAnswer::Mutated { object: patched }, Seen::Admitted { object: stored, .. }) => {
            Outcome::Agree {
                kind: "mutated",
                same_text: Some(written_fields(&stored) == written_fields(patched)),
            }
        }
        (_, Seen::Refused(message)) if requests::escalation_refused(&message) => {
            Outcome::NotCovered(
                "a ClusterRole write RBAC's own escalation check refuses before admission".into(),
            )
        }
        (module, seen) => {
            Outcome::Disagree(format!("module: {module:?}\n  the API server: {seen:?}"))
        }
    })
}

/// Installs `deployment`, as the README says: its CRD back to as upstream
/// ships it (a deployment before may have patched it), `kubectl apply -f`
/// of its files, `kubectl patch crd` of its patches.
fn install(
    plane: &mut Plane,
    deployment: &Deployment,
    installed: &mut BTreeMap<String, Value>,
) -> anyhow::Result<()> {
    if let Some(crd) = &deployment.crd {
        let name = crd["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if installed.get(&name) != Some(crd) || !deployment.patches.is_empty() {
            if let Err(refusal) = plane.cluster.replace(crd)? {
                bail!("putting CRD {name} back: {}", refusal.message);
            }
            installed.insert(name, crd.clone());
        }
    }
    let root = workspace();
    for file in &deployment.files {
        let mut kubectl = plane.cluster.kubectl(&root)?;
        kubectl.arg("apply").arg("-f").arg(file);
        run(kubectl)?;
    }
    for (crd, file) in &deployment.patches {
        let mut kubectl = plane.cluster.kubectl(&root)?;
        kubectl
            .args(["patch", "crd", crd, "--type", "json", "--patch-file"])
            .arg(file);
        run(kubectl)?;
        // Patched: the next deployment of this CRD puts it back.
        installed.remove(crd);
    }
    plane.bindings = deployment.bindings.clone();
    plane.bound = false;
    plane.bind()
}

/// Deletes `deployment`'s files' objects (`kubectl delete -f`).
fn uninstall(plane: &mut Plane, deployment: &Deployment) -> anyhow::Result<()> {
    plane.unbind()?;
    let root = workspace();
    for file in deployment.files.iter().rev() {
        let mut kubectl = plane.cluster.kubectl(&root)?;
        kubectl
            .args(["delete", "--ignore-not-found", "-f"])
            .arg(file);
        run(kubectl)?;
    }
    Ok(())
}

/// What one control plane did with its share of the scenarios.
struct Share {
    /// Each case's name, rule, whether it was the roll-out form's, and
    /// outcome.
    outcomes: Vec<(String, String, bool, Outcome)>,
    removed: usize,
    unserved: usize,
    spent: BTreeMap<&'static str, Duration>,
}

/// Starts a control plane, installs `crds`, and sends `cases`, deployment
/// by deployment.
fn run_share(cases: &[&Case], deployments: &[Deployment], crds: &[Value]) -> anyhow::Result<Share> {
    let cluster = TestCluster::start()?;
    cluster.install_crds(crds)?;
    let mut installed: BTreeMap<String, Value> = crds
        .iter()
        .map(|c| {
            (
                c["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                c.clone(),
            )
        })
        .collect();
    let removed = cluster.remove_default_rbac()?;
    let (sentinel_policies, sentinel_bindings) = sentinels();
    for policy in &sentinel_policies {
        if let Err(refusal) = cluster.create(policy)? {
            bail!("the sentinel policy: {}", refusal.message);
        }
    }
    let mut plane = Plane {
        cluster,
        sentinel_bindings,
        bindings: Vec::new(),
        bound: false,
        changes: Changes::default(),
        unserved: 0,
        spent: BTreeMap::new(),
    };
    let mut outcomes = Vec::new();
    let mut current: Option<usize> = None;
    for case in cases {
        let deployment = &deployments[case.deployment];
        if current != Some(case.deployment) {
            if let Some(previous) = current {
                plane.timed("deployments installed", |plane| {
                    uninstall(plane, &deployments[previous])
                })?;
            }
            plane
                .timed("deployments installed", |plane| {
                    install(plane, deployment, &mut installed)
                })
                .with_context(|| format!("installing the deployment of {}", case.name))?;
            current = Some(case.deployment);
        }
        let outcome = send(&mut plane, deployment, case).with_context(|| case.name.clone())?;
        outcomes.push((
            case.name.clone(),
            deployment.rule.clone(),
            case.rollout,
            outcome,
        ));
    }
    Ok(Share {
        outcomes,
        removed,
        unserved: plane.unserved,
        spent: plane.spent,
    })
}

/// The floors: coverage and agreement may only grow.
const ENFORCED_FLOOR: usize = 295;
/// Denials whose message is the module's, word for word.
const SAME_DENIALS_FLOOR: usize = 55;
/// Warned admissions whose warnings are the module's.
const SAME_WARNINGS_FLOOR: usize = 16;
/// Mutations that store the object as the module's patch leaves it.
const MUTATIONS_FLOOR: usize = 21;
/// Denials the roll-out form admits with a warning instead.
const ROLLOUT_FLOOR: usize = 99;
/// ... whose warning is the module's message, word for word.
const SAME_ROLLOUT_FLOOR: usize = 76;

#[test]
fn native_policies_are_enforced_by_kube_apiserver_as_the_modules_decide() -> anyhow::Result<()> {
    let root = workspace();
    let runtime = Runtime::new(Limits::default())?;
    let rendered = tempfile::tempdir()?;
    let served = Served::load(&root)?;
    let mut preparer = Preparer {
        store: PolicyStore::new(&runtime, root.join("dist"))
            .with_metadata_dir(root.join("policies")),
        served,
        kube: KubeHarness::start()?,
        dir: rendered.path().to_path_buf(),
        deployments: Vec::new(),
    };
    let started = Instant::now();
    let mut not_covered: BTreeMap<String, usize> = BTreeMap::new();
    let mut cases = Vec::new();
    for dir in discover(&[root.join("testdata")])? {
        match preparer
            .prepare(&dir)
            .with_context(|| dir.display().to_string())?
        {
            Prepared::Cases(more) => cases.extend(more),
            Prepared::NotCovered(reason) => *not_covered.entry(reason).or_default() += 1,
        }
    }
    cases.sort_by_key(|case| case.deployment);
    let prepared = started.elapsed();
    let deployments: Vec<Deployment> = preparer.deployments.into_iter().map(|(_, d)| d).collect();

    // The CRDs the scenarios' kinds are served by, as upstream ships them
    // (the ClusterObjectSet CRD with spec.group, as in
    // native_policies.rs), and OLM's others the clusters hold.
    let mut crds: Vec<Value> = Vec::new();
    for deployment in &deployments {
        if let Some(crd) = &deployment.crd
            && !crds
                .iter()
                .any(|c| c["metadata"]["name"] == crd["metadata"]["name"])
        {
            crds.push(crd.clone());
        }
    }
    for file in [
        "operators.coreos.com_operatorgroups.yaml",
        "operators.coreos.com_clusterserviceversions.yaml",
    ] {
        let path = root.join("testdata/upstream/crds").join(file);
        let crd: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&path)?)?;
        if !crds
            .iter()
            .any(|c| c["metadata"]["name"] == crd["metadata"]["name"])
        {
            crds.push(crd);
        }
    }

    // Two control planes, each with half of the deployments (whole: a
    // deployment's scenarios one after the other): most of a scenario's
    // time is the API server's informers catching up, which two servers
    // wait out side by side.
    let mut shares: [Vec<&Case>; 2] = [Vec::new(), Vec::new()];
    for index in 0..deployments.len() {
        let of: Vec<&Case> = cases.iter().filter(|c| c.deployment == index).collect();
        let smaller = usize::from(shares[1].len() < shares[0].len());
        shares[smaller].extend(of);
    }
    let runs: Vec<anyhow::Result<Share>> = std::thread::scope(|scope| {
        let handles: Vec<_> = shares
            .iter()
            .map(|share| {
                let (deployments, crds) = (&deployments, &crds);
                scope.spawn(move || run_share(share, deployments, crds))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a share panicked")))
            })
            .collect()
    });
    let (mut agree, mut rolled_out, mut rollout_disagree) = (0, 0, 0);
    let mut tally: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    let mut disagreements = Vec::new();
    let (mut removed, mut unserved) = (0, 0);
    let mut spent: BTreeMap<&'static str, Duration> = BTreeMap::new();
    spent.insert("scenarios prepared", prepared);
    for run in runs {
        let share = run?;
        removed += share.removed;
        unserved += share.unserved;
        for (what, time) in share.spent {
            *spent.entry(what).or_default() += time;
        }
        for (name, rule, rollout, outcome) in share.outcomes {
            match outcome {
                Outcome::Agree { kind, same_text } => {
                    if rollout {
                        rolled_out += 1;
                    } else {
                        agree += 1;
                    }
                    let entry = tally.entry(kind).or_default();
                    entry.0 += 1;
                    if let Some(same) = same_text {
                        entry.1 += 1;
                        entry.2 += usize::from(same);
                    }
                }
                Outcome::NotCovered(_) if rollout => {}
                Outcome::NotCovered(reason) => *not_covered.entry(reason).or_default() += 1,
                Outcome::Disagree(problem) => {
                    disagreements.push(format!("{name} ({rule}):\n  {problem}"));
                    if rollout {
                        rollout_disagree += 1;
                    }
                }
            }
        }
    }
    let enforced = agree + disagreements.len() - rollout_disagree;
    eprintln!("control plane: {agree}/{enforced} native scenarios enforced as the module decides");
    eprintln!(
        "control plane: {rolled_out}/{} of their denials admitted with a warning by the roll-out \
         form (`scaffold vap --actions warn`: Warn and Audit)",
        rolled_out + rollout_disagree
    );
    eprintln!(
        "control plane: {} deployments installed with kubectl (the files of deploy/ where the \
         settings are theirs, below; rendered as `olm-guard scaffold vap` writes them otherwise), \
         {removed} objects of the default RBAC deleted first, {} objects of the scenarios' \
         clusters of kinds it does not serve left out",
        deployments.len(),
        unserved
    );
    for (index, deployment) in deployments.iter().enumerate() {
        let sent = cases.iter().filter(|c| c.deployment == index).count();
        let files: Vec<String> = deployment
            .files
            .iter()
            .chain(deployment.patches.iter().map(|(_, file)| file))
            .map(|file| {
                file.strip_prefix(&root)
                    .map(|f| f.display().to_string())
                    .unwrap_or_else(|_| "(rendered)".into())
            })
            .collect();
        eprintln!(
            "control plane:   {} {sent} scenarios: {}",
            deployment.rule,
            files.join(" ")
        );
    }
    for (kind, (count, compared, same)) in &tally {
        eprintln!(
            "control plane: {count} {kind}; the API server's words are the module's in {same}/{compared}"
        );
    }
    eprintln!("control plane: time spent, the two control planes' added up: {spent:?}");
    let uncovered: usize = not_covered.values().sum();
    eprintln!("control plane: {uncovered} scenarios not covered:");
    for (reason, count) in &not_covered {
        eprintln!("  {count:4}  {reason}");
    }
    assert!(
        disagreements.is_empty(),
        "{} of {enforced} native scenarios: kube-apiserver's answer is not the module's:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    assert!(
        enforced >= ENFORCED_FLOOR,
        "only {enforced} scenarios were enforced, fewer than the {ENFORCED_FLOOR} recorded"
    );
    // The words: may only grow (the test prints them).
    let same = |kind: &str| tally.get(kind).map_or(0, |t| t.2);
    assert!(
        rolled_out >= ROLLOUT_FLOOR,
        "only {rolled_out} denials were warned by the roll-out form, fewer than the \
         {ROLLOUT_FLOOR} recorded"
    );
    assert!(
        same("denied") >= SAME_DENIALS_FLOOR
            && same("warned by the roll-out form") >= SAME_ROLLOUT_FLOOR
            && same("admitted with warnings") >= SAME_WARNINGS_FLOOR
            && same("mutated") >= MUTATIONS_FLOOR,
        "the API server's words are the module's in {} denials ({} in the roll-out form's \
         warnings), {} warned admissions and {} mutations, fewer than the {SAME_DENIALS_FLOOR} \
         ({SAME_ROLLOUT_FLOOR}), {SAME_WARNINGS_FLOOR} and {MUTATIONS_FLOOR} recorded",
        same("denied"),
        same("warned by the roll-out form"),
        same("admitted with warnings"),
        same("mutated"),
    );
    for kind in [
        "admitted",
        "admitted with warnings",
        "denied",
        "mutated",
        "warned by the roll-out form",
    ] {
        assert!(
            tally.get(kind).is_some_and(|t| t.0 > 0),
            "no scenario was `{kind}` by both: the comparison would be vacuous"
        );
    }
    Ok(())
}
