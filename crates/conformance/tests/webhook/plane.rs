//! One control plane of the webhook test: kube-apiserver on etcd, and
//! Kubewarden's policy-server registered as its webhook the way
//! Kubewarden's controller registers it, reading the cluster under its
//! ServiceAccount, which holds `deploy/kubewarden/policy-server-rbac.yaml`
//! and nothing else. The scenarios of one share are sent one after the
//! other, policy by policy.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use olm_guard_conformance::Verdict;
use olm_guard_conformance::requests::{self, Put, put_order, written_fields};
use olm_guard_core::response::AdmissionResponse;
use olm_guard_kube_harness::cluster::{Changes, TestCluster, Write, Written};
use olm_guard_kube_harness::kubewarden::{self, PolicyServer};

use super::cases::Case;
use super::workspace;

/// How long an answer may take to settle: policy-server's reflectors and
/// kube-apiserver's RBAC authorizer follow the cluster through watches.
const SETTLE_WITHIN: Duration = Duration::from_secs(10);

/// How long policy-server keeps a `can_i` or `get_resource` answer (5 s,
/// `cached(time = 5)`), with a margin.
const CACHED_FOR: Duration = Duration::from_millis(5_500);

/// How a case ended.
pub enum Outcome {
    /// kube-apiserver's answer is the module's: `kind` of answer.
    Agree(&'static str),
    /// Not decided by admission: why.
    NotReached(String),
    Disagree(String),
}

/// What a plane did with its share.
pub struct Share {
    /// Each case's name and how it ended.
    pub outcomes: Vec<(String, Outcome)>,
    /// Each case's name and whether policy-server's own answer, asked
    /// directly, was the restated evaluator's (`None`: not asked).
    pub direct: Vec<(String, Result<(), String>)>,
    pub spent: BTreeMap<&'static str, Duration>,
    /// The reflectors (watches) policy-server opened, from its log.
    pub reflectors: usize,
}

/// A control plane with policy-server as its webhook.
pub struct Plane {
    pub cluster: TestCluster,
    pub server: PolicyServer,
    /// The policies as stored (their defaults filled in by the CRD).
    policies: Vec<Value>,
    /// Which policy's webhook is registered now, and its configuration.
    registered: Option<(usize, Value)>,
    changes: Changes,
    /// When policy-server last asked each cached question, and the answer.
    asked: HashMap<String, (String, Instant)>,
    spent: BTreeMap<&'static str, Duration>,
}

impl Plane {
    /// Starts a control plane with `crds`, its default RBAC gone but for
    /// discovery: the cluster, and the RBAC objects kept, as stored.
    pub fn cluster(crds: &[Value]) -> anyhow::Result<(TestCluster, Vec<Value>)> {
        let cluster = TestCluster::start()?;
        cluster.install_crds(crds)?;
        let (_, kept) = cluster.remove_default_rbac_keeping(&["system:discovery"])?;
        Ok((cluster, kept))
    }

    /// Kubewarden on `cluster`: policy-server's RBAC applied with kubectl as
    /// the README says, `policies` created as ClusterAdmissionPolicies and
    /// handed to policy-server as the controller hands them over, and
    /// policy-server started under its ServiceAccount.
    pub fn serve(cluster: TestCluster, policies: &[Value]) -> anyhow::Result<Plane> {
        let root = workspace();
        let mut kubectl = cluster.kubectl(&root)?;
        kubectl.args(["apply", "-f", "deploy/kubewarden/policy-server-rbac.yaml"]);
        run(kubectl)?;
        let identity = cluster
            .service_account_kubeconfig(kubewarden::NAMESPACE, kubewarden::SERVICE_ACCOUNT)?;
        let mut stored = Vec::new();
        for policy in policies {
            match cluster.create(policy)? {
                Ok(policy) => stored.push(policy),
                Err(refusal) => bail!(
                    "the ClusterAdmissionPolicy {}: {}",
                    policy["metadata"]["name"],
                    refusal.message
                ),
            }
        }
        cluster.wait_rbac_seen()?;
        let server = PolicyServer::start(&kubewarden::policies_yml(&stored), &identity)?;
        Ok(Plane {
            cluster,
            server,
            policies: stored,
            registered: None,
            changes: Changes::default(),
            asked: HashMap::new(),
            spent: BTreeMap::new(),
        })
    }

    fn timed<T>(&mut self, what: &'static str, step: impl FnOnce(&mut Plane) -> T) -> T {
        let started = Instant::now();
        let result = step(self);
        *self.spent.entry(what).or_default() += started.elapsed();
        result
    }

    /// The webhook configuration of policy `index`.
    fn configuration(&self, index: usize) -> Value {
        kubewarden::webhook_configuration(
            &self.policies[index],
            &self.server.base_url(),
            self.server.ca_pem(),
        )
    }

    /// Registers policy `index`'s webhook (and no other).
    fn register(&mut self, index: usize) -> anyhow::Result<()> {
        if self.registered.as_ref().is_some_and(|(i, _)| *i == index) {
            return Ok(());
        }
        self.unregister()?;
        let configuration = self.configuration(index);
        self.cluster
            .register_webhooks(std::slice::from_ref(&configuration))?;
        self.registered = Some((index, configuration));
        Ok(())
    }

    fn unregister(&mut self) -> anyhow::Result<()> {
        if let Some((_, configuration)) = self.registered.take() {
            self.cluster.unregister_webhooks(&[configuration])?;
        }
        Ok(())
    }

    fn is_mutating(&self, index: usize) -> bool {
        self.policies[index]["spec"]["mutating"].as_bool() == Some(true)
    }

    /// Deletes what the scenario before put in: with the webhook
    /// registered, unless it refuses a delete.
    fn undo(&mut self) -> anyhow::Result<()> {
        if self.cluster.undo(&mut self.changes).is_err() {
            self.timed("webhook unregistered", Plane::unregister)?;
            self.cluster.undo(&mut self.changes)?;
        }
        Ok(())
    }

    fn put_all(
        &mut self,
        objects: &[Value],
        also: &[Value],
        policy: usize,
    ) -> anyhow::Result<(Put, usize)> {
        let mut unserved = 0;
        let bound = self.registered.is_some();
        let mutating = self.is_mutating(policy);
        let put = requests::put_all(
            &self.cluster,
            &mut self.changes,
            objects,
            also,
            (bound, mutating),
            &mut unserved,
        )?;
        Ok((put, unserved))
    }

    /// How long to wait before `case` can be sent without policy-server
    /// answering one of its cached questions with the answer of an earlier
    /// scenario's cluster.
    fn cache_wait(&self, case: &Case) -> Duration {
        case.cached
            .iter()
            .filter_map(|(question, answer)| {
                let (before, at) = self.asked.get(question)?;
                (before != answer).then(|| CACHED_FOR.saturating_sub(at.elapsed()))
            })
            .max()
            .unwrap_or_default()
    }

    /// Sends `case` as its requester, a dry run until the answer settles,
    /// then policy-server asked directly, then the real request.
    fn send(&mut self, case: &Case) -> anyhow::Result<(Outcome, Option<Result<(), String>>)> {
        self.timed("the scenario before deleted", Plane::undo)?;
        let request = &case.request;
        let mut objects = case.objects.clone();
        objects.sort_by_key(put_order);
        objects.extend(case.grant.iter().cloned());
        if request["oldObject"].is_object() {
            objects.push(request["oldObject"].clone());
        }
        let also = [request["object"].clone()];
        let (mut put, mut unserved) = self.timed("the scenario's cluster put in", |plane| {
            plane.put_all(&objects, &also, case.policy)
        })?;
        if matches!(put, Put::PolicyInTheWay) {
            self.timed("webhook unregistered", Plane::unregister)?;
            self.timed("the scenario before deleted", Plane::undo)?;
            (put, unserved) = self.timed("the scenario's cluster put in", |plane| {
                plane.put_all(&objects, &also, case.policy)
            })?;
        }
        if unserved > 0 {
            return Ok((
                Outcome::NotReached("objects of kinds the test cluster does not serve".into()),
                None,
            ));
        }
        if let Put::Refused(reason) = put {
            return Ok((
                Outcome::NotReached(format!(
                    "a cluster object or stored object the API server refuses ({reason})"
                )),
                None,
            ));
        }
        // policy-server's SubjectAccessReviews are decided by the RBAC
        // authorizer, which must have seen this cluster's RBAC before the
        // first is asked (its answer is kept 5 s).
        self.timed("RBAC seen", |plane| plane.cluster.wait_rbac_seen())?;
        self.timed("webhook registered", |plane| plane.register(case.policy))?;
        let wait = self.cache_wait(case);
        if !wait.is_zero() {
            *self.spent.entry("cached answers expired").or_default() += wait;
            std::thread::sleep(wait);
        }

        let started = Instant::now();
        let webhook = kubewarden::webhook_name(&self.policies[case.policy]);
        let subresource = request["subResource"].as_str().filter(|s| !s.is_empty());
        let (write, object) = match request["operation"].as_str() {
            Some("UPDATE") => {
                let stored = self.cluster.get(&request["oldObject"])?;
                (
                    Write::Update,
                    TestCluster::update_of(&request["object"], &stored),
                )
            }
            Some("DELETE") => (Write::Delete, request["oldObject"].clone()),
            _ => (Write::Create, TestCluster::create_of(&request["object"])),
        };
        let settling = Instant::now();
        loop {
            let dry =
                self.cluster
                    .write_as(Some(&case.requester), write, &object, subresource, true)?;
            let outcome = judge(case, &webhook, write, &dry);
            if !matches!(outcome, Outcome::Disagree(_)) || settling.elapsed() > SETTLE_WITHIN {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let direct = self.direct(case);
        let written =
            self.cluster
                .write_as(Some(&case.requester), write, &object, subresource, false)?;
        if write == Write::Create
            && let Ok(stored) = &written.answer
        {
            self.changes.created(stored.clone());
        }
        let now = Instant::now();
        for (question, answer) in &case.cached {
            self.asked.insert(question.clone(), (answer.clone(), now));
        }
        *self.spent.entry("requests sent").or_default() += started.elapsed();
        Ok((judge(case, &webhook, write, &written), Some(direct)))
    }

    /// policy-server's answer to the request sent straight to it, held to
    /// Kubewarden's evaluator as `olm_guard_conformance::policy_evaluator`
    /// restates it.
    fn direct(&self, case: &Case) -> Result<(), String> {
        let id = kubewarden::unique_name(&self.policies[case.policy]);
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": case.request});
        let answered = self
            .server
            .validate(&id, &review)
            .map_err(|e| e.to_string())?;
        let response: AdmissionResponse = serde_json::from_value(answered["response"].clone())
            .map_err(|e| format!("{e}: {answered}"))?;
        let object = case.request.get("object").cloned().unwrap_or(Value::Null);
        let theirs = Verdict::of(&response, &object).map_err(|e| e.to_string())?;
        if theirs == case.restated {
            Ok(())
        } else {
            Err(format!(
                "policy-server: {theirs:?}\n  restated:      {:?}",
                case.restated
            ))
        }
    }

    /// The reflectors policy-server opened: its log's "creating new
    /// reflector" lines.
    fn reflectors(&self) -> usize {
        self.server.log_matches("creating new reflector")
    }
}

/// kube-apiserver's answer to `case` held to the module's: admitted or
/// denied, the denial in kube-apiserver's words around the module's
/// message and with its code, every warning, and the object as stored.
pub fn judge(case: &Case, webhook: &str, write: Write, written: &Written) -> Outcome {
    let module = &case.module;
    match &written.answer {
        Err(refusal)
            if refusal.code == 403
                && !refusal.message.contains("denied the request")
                && requests::escalation_refused(&refusal.message) =>
        {
            Outcome::NotReached(
                "a ClusterRole write RBAC's own escalation check refuses before admission".into(),
            )
        }
        Err(refusal) if refusal.code == 422 && !refusal.message.contains("admission webhook") => {
            Outcome::NotReached(format!(
                "an object the API server's validation refuses before admission ({})",
                refusal.reason
            ))
        }
        Err(refusal) if !module.allowed => {
            let expected = match module.message.as_deref().filter(|m| !m.is_empty()) {
                Some(message) => {
                    format!("admission webhook \"{webhook}\" denied the request: {message}")
                }
                None => format!(
                    "admission webhook \"{webhook}\" denied the request without explanation"
                ),
            };
            let code = module.code.filter(|c| *c >= 400).unwrap_or(400);
            if refusal.message != expected {
                Outcome::Disagree(format!(
                    "denied with other words:\n  module:         {expected}\n  kube-apiserver: {}",
                    refusal.message
                ))
            } else if refusal.code != code {
                Outcome::Disagree(format!(
                    "denied with code {} where the module says {code}",
                    refusal.code
                ))
            } else if written.warnings != module.warnings {
                Outcome::Disagree(format!(
                    "denied with other warnings: module {:?}, kube-apiserver {:?}",
                    module.warnings, written.warnings
                ))
            } else {
                Outcome::Agree("denied")
            }
        }
        Ok(stored) if module.allowed => {
            if written.warnings != module.warnings {
                return Outcome::Disagree(format!(
                    "admitted with other warnings: module {:?}, kube-apiserver {:?}",
                    module.warnings, written.warnings
                ));
            }
            if write == Write::Delete {
                return Outcome::Agree("admitted");
            }
            let expected = module.patched.as_ref().unwrap_or(&case.request["object"]);
            if written_fields(stored) != written_fields(expected) {
                return Outcome::Disagree(format!(
                    "stored otherwise:\n  module:         {}\n  kube-apiserver: {}",
                    written_fields(expected),
                    written_fields(stored)
                ));
            }
            Outcome::Agree(match (&module.patched, module.warnings.is_empty()) {
                (Some(_), _) => "mutated",
                (None, true) => "admitted",
                (None, false) => "admitted with warnings",
            })
        }
        answer => Outcome::Disagree(format!(
            "module: {module:?}\n  kube-apiserver: {answer:?} warnings {:?}",
            written.warnings
        )),
    }
}

/// Runs a kubectl command; its output when it succeeds.
pub fn run(mut command: std::process::Command) -> anyhow::Result<String> {
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

/// Starts Kubewarden on `cluster` and sends `cases` (one share), policy by
/// policy, each case when policy-server's cached answers cannot mislead it.
pub fn run_share(
    cluster: TestCluster,
    policies: &[Value],
    cases: &[&Case],
) -> anyhow::Result<Share> {
    let mut plane = Plane::serve(cluster, policies)?;
    let mut outcomes = Vec::new();
    let mut direct = Vec::new();
    let mut left: Vec<&Case> = cases.to_vec();
    left.sort_by_key(|case| case.policy);
    while !left.is_empty() {
        // The next case whose cached questions are free, of the policy
        // registered now if one is (registering another costs a moment);
        // failing that, the one free soonest.
        let current = plane.registered.as_ref().map(|(i, _)| *i);
        let next = left
            .iter()
            .enumerate()
            .min_by_key(|(at, c)| (plane.cache_wait(c), Some(c.policy) != current, *at))
            .map(|(at, _)| at)
            .unwrap_or(0);
        let case = left.remove(next);
        let (outcome, asked) = plane.send(case).with_context(|| {
            format!(
                "{}\n--- policy-server ---\n{}",
                case.name,
                plane.server.log_tail()
            )
        })?;
        outcomes.push((case.name.clone(), outcome));
        if let Some(asked) = asked {
            direct.push((case.name.clone(), asked));
        }
    }
    plane.unregister()?;
    Ok(Share {
        outcomes,
        direct,
        reflectors: plane.reflectors(),
        spent: plane.spent,
    })
}
