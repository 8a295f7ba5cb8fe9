//! The audit itself: which modules apply to which snapshot object, the
//! request synthesised for each pair, and the result of each evaluation.
//!
//! It follows Kubewarden's audit scanner (kubewarden/kubewarden-controller,
//! `audit-scanner/internal/scanner/scanner.go`, `auditResource`): every
//! stored object a policy's rules cover is sent to the policy as a CREATE of
//! that object (`audit-scanner/internal/scanner/admission_request.go`,
//! `newAdmissionRequest`), and the answer becomes `pass`, `fail` or, for an
//! answer with code 500 or no answer at all, `error`
//! (`audit-scanner/internal/report/report.go`, `computePolicyResult`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use serde_json::{Value, json};

use olm_guard_evaluator::input::guess_resource;
use olm_guard_evaluator::{AdmissionResponse, ClusterContext};
use olm_guard_runtime::metadata::{RequestTarget, annotation};
use olm_guard_runtime::{CallError, Runtime};
use olm_guard_snapshot::{ApiResources, LoadOptions, ObjectRef, Snapshot, SnapshotWarning};

use crate::findings::{Finding, Outcome, SNAPSHOT_POLICY, Subject};
use crate::modules::{self, Loaded};
use crate::output::one_line;

/// The subject a snapshot reference names.
fn subject_of_ref(object: &ObjectRef, api_resources: &ApiResources) -> Subject {
    Subject {
        cluster_scoped: api_resources.is_cluster_scoped(&object.api_version, &object.kind),
        namespace: object.namespace.clone(),
        kind: object.kind.clone(),
        name: object.name.clone(),
        api_version: object.api_version.clone(),
        uid: String::new(),
        resource_version: String::new(),
    }
}

/// A module as the audit uses it: loaded once, with what its metadata says,
/// and whether its batches have failed.
pub struct AuditPolicy {
    /// The module, its metadata and settings.
    pub module: Loaded,
    /// Whether a batch of it has failed already (said once on stderr).
    batch_failed: AtomicBool,
}

impl From<Loaded> for AuditPolicy {
    fn from(module: Loaded) -> Self {
        AuditPolicy {
            module,
            batch_failed: AtomicBool::new(false),
        }
    }
}

impl AuditPolicy {
    /// Says once, on stderr, that this module's batches fall back to one
    /// evaluation per object, and why (a module without `validate_batch`,
    /// or a batch past a limit): the results stay exact, only slower.
    fn batch_failed(&self, error: &CallError) {
        if !self.batch_failed.swap(true, Ordering::Relaxed) {
            eprintln!(
                "olm-guard: {}: cannot evaluate in batches ({}); evaluating each object on its own",
                self.module.name,
                one_line(&error.to_string())
            );
        }
    }

    /// `io.kubewarden.policy.severity`, when the report CRDs accept it.
    pub fn severity(&self) -> Option<&str> {
        self.module
            .metadata
            .annotations
            .get(annotation::SEVERITY)
            .map(String::as_str)
            .filter(|s| ["critical", "high", "medium", "low", "info"].contains(s))
    }

    /// `io.kubewarden.policy.category`.
    pub fn category(&self) -> Option<&str> {
        self.module
            .metadata
            .annotations
            .get(annotation::CATEGORY)
            .map(String::as_str)
    }

    /// Whether the metadata's rules cover a CREATE of `resource` in
    /// `group`/`version`, as the API server matches webhook rules.
    fn covers(&self, group: &str, version: &str, resource: &str) -> bool {
        self.module.metadata.covers(&RequestTarget {
            group,
            version,
            resource,
            subresource: "",
            operation: "CREATE",
        })
    }
}

/// Who the synthesised requests come from.
#[derive(Debug, Clone, Default)]
pub struct Requester {
    /// `--as`.
    pub user: Option<String>,
    /// `--as-group`.
    pub groups: Vec<String>,
}

impl Requester {
    /// The `userInfo` of the requests: `--as` in its groups as the API
    /// server completes them; none without `--as`.
    pub fn user_info(&self) -> Option<Value> {
        // The groups the API server completes for the user (`run` sends
        // the same).
        self.user.as_ref().map(|user| {
            json!({"username": user, "groups": crate::requester::groups_of(user, &self.groups)})
        })
    }
}

/// How one module is evaluated on one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// As the audit scanner does (its request carries no `userInfo`), or as
    /// the `--as` user when given.
    Plain,
    /// A module whose verdict depends on the requester (`backgroundAudit:
    /// false`), without `--as`: evaluated as a member of `system:masters`,
    /// who passes every authorization check. A denial then comes from a
    /// check that holds for every requester and is a `fail`; an admission
    /// says nothing about an ordinary user and is a `skip`.
    RequesterFree,
}

const AUDIT_MASTER: &str = "olm-guard:audit";

/// The group every authorizer check allows.
const PRIVILEGED_GROUP: &str = "system:masters";

/// A live cluster whose `can_i` for a member of `system:masters` is
/// answered here, as the API server's authorizer answers it before any
/// other (kubernetes/kubernetes, `pkg/kubeapiserver/authorizer/config.go`:
/// `authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)`
/// comes first, and allows everything): a requester-free evaluation
/// (as `system:masters`) then creates no SubjectAccessReview, which an
/// auditor allowed to list only may not create. Everything else goes to
/// the cluster.
pub struct PrivilegedGroup(pub ClusterContext);

impl olm_guard_core::Cluster for PrivilegedGroup {
    fn list_all(
        &self,
        request: &olm_guard_core::protocol::ListAllResourcesRequest,
    ) -> Result<Vec<u8>, olm_guard_core::ContextError> {
        self.0.list_all(request)
    }

    fn list_by_namespace(
        &self,
        request: &olm_guard_core::protocol::ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, olm_guard_core::ContextError> {
        self.0.list_by_namespace(request)
    }

    fn get(
        &self,
        request: &olm_guard_core::protocol::GetResourceRequest,
    ) -> Result<Vec<u8>, olm_guard_core::ContextError> {
        self.0.get(request)
    }

    fn can_i(
        &self,
        request: &olm_guard_core::protocol::CanIRequest,
    ) -> Result<olm_guard_core::protocol::SubjectAccessReviewStatus, olm_guard_core::ContextError>
    {
        let privileged = request
            .subject_access_review
            .groups
            .iter()
            .flatten()
            .any(|group| group == PRIVILEGED_GROUP);
        if privileged {
            return Ok(olm_guard_core::protocol::SubjectAccessReviewStatus {
                allowed: true,
                ..Default::default()
            });
        }
        self.0.can_i(request)
    }

    fn shared_answers(&self) -> Option<&olm_guard_core::shared::SharedAnswers> {
        self.0.shared_answers()
    }
}

/// The most request bytes one `validate_batch` call carries: a module's
/// instance holds the batch, its decoded requests and the shared lists
/// within its memory limit (256 MiB by default).
const BATCH_BYTES: usize = 16 << 20;

/// Everything one audit run needs.
pub struct Audit {
    /// The objects audited: a snapshot's, or those read from a live
    /// cluster.
    pub snapshot: Arc<Snapshot>,
    /// What every evaluation's lookups are answered from: the snapshot
    /// itself, or the live cluster.
    pub context: ClusterContext,
    /// Results about the snapshot itself (unreadable documents).
    pub load_findings: Vec<Finding>,
    /// The modules, sorted by name.
    pub policies: Vec<AuditPolicy>,
    /// `--as` / `--as-group`.
    pub requester: Requester,
    /// Evaluate each module's objects in batches (`validate_batch`, each
    /// list decoded once per batch); `false` (`--no-batch`) gives every
    /// evaluation its own instance, as policy-server does per request.
    pub batched: bool,
    /// Judge the objects the cluster manages itself too
    /// (`--include-system`); left out otherwise ([`managed_by_cluster`]).
    pub include_system: bool,
}

/// The label Kubernetes puts on the RBAC objects it creates and
/// reconciles at every start (kubernetes/kubernetes,
/// `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`,
/// `bootstrapPolicyLabel`: `kubernetes.io/bootstrapping: rbac-defaults`).
const BOOTSTRAPPING_LABEL: &str = "kubernetes.io/bootstrapping";

/// Whether the cluster manages `object` itself: Kubernetes' bootstrap RBAC
/// (its label), or a `system:` name, the prefix Kubernetes reserves for
/// its own objects (`system:aggregate-to-edit`, `system:controller:...`).
/// Nobody creates them through admission, so an audit of them says
/// nothing a policy could act on.
pub fn managed_by_cluster(object: &Value) -> bool {
    let meta = olm_guard_core::ObjectMeta::of(object);
    meta.name.starts_with("system:")
        || object
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .is_some_and(|labels| labels.contains_key(BOOTSTRAPPING_LABEL))
}

/// One (object, module) evaluation to run.
struct Task<'a> {
    object: &'a Value,
    subject: Subject,
    group: String,
    version: String,
    resource: String,
    policy: usize,
    mode: Mode,
}

/// The snapshot of `files`, read leniently: every document that cannot be
/// used becomes an `error` result naming its file and document, so that an
/// audit never drops an object silently and never stops at the first one.
pub fn load_snapshot(
    files: &[PathBuf],
    api_resources: Option<&Path>,
    allow_empty: bool,
) -> anyhow::Result<(Snapshot, Vec<Finding>)> {
    let mut warnings: Vec<SnapshotWarning> = Vec::new();
    let snapshot = crate::cluster::load(
        files,
        api_resources,
        LoadOptions::LENIENT,
        allow_empty,
        &mut |w| warnings.push(w),
    )?;
    let findings = warnings
        .into_iter()
        .map(|warning| Finding {
            object: warning
                .error
                .object()
                .map(|o| subject_of_ref(o, snapshot.api_resources())),
            source: warning.error.at.to_string(),
            policy: SNAPSHOT_POLICY.into(),
            result: Outcome::Error,
            message: warning.to_string(),
        })
        .collect();
    Ok((snapshot, findings))
}

/// The metadata of each of `modules` (name, file), read without compiling
/// them: what a live audit lists while they compile.
pub fn metadata_of(
    modules: &[(String, PathBuf)],
) -> anyhow::Result<Vec<olm_guard_runtime::Metadata>> {
    modules
        .iter()
        .map(|(name, path)| modules::metadata_of(name, path))
        .collect()
}

/// The modules `modules` (name, file), compiled once, each with its
/// settings from `settings` (`name` → document) or `{}`; each module's
/// `validate_settings` runs first.
pub fn load_policies(
    runtime: &Runtime,
    modules: Vec<(String, PathBuf)>,
    settings: BTreeMap<String, Value>,
) -> anyhow::Result<Vec<AuditPolicy>> {
    let loaded = modules::load(runtime, modules, settings)?;
    Ok(loaded.into_iter().map(AuditPolicy::from).collect())
}

impl Audit {
    /// Runs every applicable evaluation over the cores; `progress` is called
    /// once with the number of evaluations, then once per evaluation done.
    /// The results are sorted: by object (namespace, kind, name), then
    /// policy; the snapshot's own errors first.
    pub fn run(&self, progress: &(dyn Fn(Progress) + Sync)) -> Vec<Finding> {
        let tasks = self.tasks();
        progress(Progress::Start(tasks.len()));
        // The context keeps each answer it serialises (a snapshot) or reads
        // (a live cluster, as policy-server's reflectors keep lists): every
        // evaluation of one module asks the same lists.
        let cluster: ClusterContext = self.context.clone();
        let mut findings: Vec<Finding> = self
            .shares(&tasks)
            .par_iter()
            .flat_map_iter(|share| self.evaluate_share(share, &cluster, progress))
            .collect();
        findings.sort_by(|a, b| {
            (&a.object, &a.policy, &a.source).cmp(&(&b.object, &b.policy, &b.source))
        });
        let mut all = self.load_findings.clone();
        all.sort_by(|a, b| (&a.source, &a.object).cmp(&(&b.source, &b.object)));
        all.extend(findings);
        all
    }

    /// The tasks of each module split in as many shares as there are
    /// threads, so every core has work. Each share is evaluated in batches
    /// ([`Audit::evaluate_share`]); a batch decodes each list once, so the
    /// fewer batches, the less decoding.
    fn shares<'t>(&self, tasks: &'t [Task<'t>]) -> Vec<Vec<&'t Task<'t>>> {
        let threads = rayon::current_num_threads().max(1);
        let mut shares = Vec::new();
        for policy in 0..self.policies.len() {
            let mine: Vec<&Task<'_>> = tasks.iter().filter(|t| t.policy == policy).collect();
            if mine.is_empty() {
                continue;
            }
            let size = mine.len().div_ceil(threads);
            shares.extend(mine.chunks(size).map(<[&Task<'_>]>::to_vec));
        }
        shares
    }

    /// One module's evaluations of `share`: in batches of at most
    /// [`BATCH_BYTES`] of requests (so an instance holds its batch within
    /// its memory limit), or one by one with `--no-batch`; `progress` hears
    /// of each result as its batch ends.
    fn evaluate_share(
        &self,
        share: &[&Task<'_>],
        cluster: &ClusterContext,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Vec<Finding> {
        let mut findings = Vec::with_capacity(share.len());
        let mut finish = |tasks: &[&Task<'_>], requests: &[Value]| {
            for finding in self.evaluate_batch(tasks, requests, cluster) {
                progress(Progress::Done);
                findings.push(finding);
            }
        };
        let (mut tasks, mut requests) = (Vec::new(), Vec::new());
        let mut bytes = 0;
        for &task in share {
            let request = self.request_of(task);
            if !self.batched {
                finish(&[task], &[request]);
                continue;
            }
            let size = serde_json::to_vec(&request).map_or(0, |b| b.len());
            if !tasks.is_empty() && bytes + size > BATCH_BYTES {
                finish(&tasks, &requests);
                (tasks, requests, bytes) = (Vec::new(), Vec::new(), 0);
            }
            bytes += size;
            tasks.push(task);
            requests.push(request);
        }
        finish(&tasks, &requests);
        findings
    }

    /// How many objects some module covers that the cluster manages
    /// itself and were left out (none with `--include-system`).
    pub fn left_out(&self) -> usize {
        if self.include_system {
            return 0;
        }
        self.snapshot
            .objects()
            .filter(|object| managed_by_cluster(object) && !self.covering(object).is_empty())
            .count()
    }

    /// The modules (their indices) whose rules cover `object`'s kind.
    fn covering(&self, object: &Value) -> Vec<usize> {
        let subject = Subject::of(object, self.snapshot.api_resources());
        let (group, version) = match subject.api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", subject.api_version.as_str()),
        };
        let resource = guess_resource(&subject.kind);
        (0..self.policies.len())
            .filter(|&index| self.policies[index].covers(group, version, &resource))
            .collect()
    }

    /// How many objects the snapshot holds, and how many some module covers.
    pub fn coverage(&self) -> (usize, usize) {
        let tasks = self.tasks();
        let mut covered: Vec<*const Value> = tasks.iter().map(|t| t.object as *const _).collect();
        covered.sort();
        covered.dedup();
        (self.snapshot.len(), covered.len())
    }

    fn tasks(&self) -> Vec<Task<'_>> {
        let mut tasks = Vec::new();
        for object in self.snapshot.objects() {
            if !self.include_system && managed_by_cluster(object) {
                continue;
            }
            let subject = Subject::of(object, self.snapshot.api_resources());
            let (group, version) = match subject.api_version.split_once('/') {
                Some((group, version)) => (group.to_string(), version.to_string()),
                None => (String::new(), subject.api_version.clone()),
            };
            let resource = guess_resource(&subject.kind);
            for (index, policy) in self.policies.iter().enumerate() {
                if !policy.covers(&group, &version, &resource) {
                    continue;
                }
                let mode =
                    if policy.module.metadata.background_audit || self.requester.user.is_some() {
                        Mode::Plain
                    } else {
                        Mode::RequesterFree
                    };
                tasks.push(Task {
                    object,
                    subject: subject.clone(),
                    group: group.clone(),
                    version: version.clone(),
                    resource: resource.clone(),
                    policy: index,
                    mode,
                });
            }
        }
        tasks
    }

    /// The CREATE the audit scanner sends for the task's object, from the
    /// requester the task's mode says.
    fn request_of(&self, task: &Task<'_>) -> Value {
        let user_info = match task.mode {
            Mode::Plain => self.requester.user_info(),
            Mode::RequesterFree => Some(json!({
                "username": AUDIT_MASTER,
                "groups": ["system:masters", "system:authenticated"],
            })),
        };
        synthesise(task, user_info)
    }

    /// One module's evaluations of `batch` in one instance
    /// ([`olm_guard_evaluator::Policy::validate_batch`]), or one by one when the module cannot
    /// (no `validate_batch`, or the batch hit a limit), so a result is never
    /// lost to its neighbours.
    fn evaluate_batch(
        &self,
        tasks: &[&Task<'_>],
        requests: &[Value],
        cluster: &ClusterContext,
    ) -> Vec<Finding> {
        let Some(first) = tasks.first() else {
            return Vec::new();
        };
        let policy = &self.policies[first.policy];
        let module = &policy.module;
        if self.batched {
            match module
                .policy
                .validate_batch(requests, &module.settings, cluster.clone())
            {
                Ok(responses) => {
                    return tasks
                        .iter()
                        .zip(responses)
                        .map(|(task, response)| self.finding(task, Ok(response)))
                        .collect();
                }
                Err(e) => policy.batch_failed(&e),
            }
        }
        tasks
            .iter()
            .zip(requests)
            .map(|(task, request)| {
                let answer = module
                    .policy
                    .validate(request, &module.settings, cluster.clone())
                    .map(|evaluation| evaluation.response);
                self.finding(task, answer)
            })
            .collect()
    }

    /// The result of one evaluation: what the module answered, or why it
    /// could not.
    fn finding(&self, task: &Task<'_>, answer: Result<AdmissionResponse, CallError>) -> Finding {
        let policy = &self.policies[task.policy].module;
        let location = self
            .snapshot
            .location(&ObjectRef {
                api_version: task.subject.api_version.clone(),
                kind: task.subject.kind.clone(),
                namespace: task.subject.namespace.clone(),
                name: task.subject.name.clone(),
            })
            .map(ToString::to_string)
            .unwrap_or_default();
        let (result, message) = match answer {
            Err(e) => (
                Outcome::Error,
                format!("{} failed: {e}", policy.path.display()),
            ),
            Ok(response) => {
                let status = response.status.unwrap_or_default();
                let message = status.message.unwrap_or_default();
                let warnings = response.warnings.unwrap_or_default();
                if status.code == Some(500) {
                    (Outcome::Error, message)
                } else if !response.allowed {
                    (Outcome::Fail, message)
                } else if !warnings.is_empty() {
                    (Outcome::Warn, warnings.join("; "))
                } else if task.mode == Mode::RequesterFree {
                    (Outcome::Skip, skip_reason(&policy.name))
                } else {
                    (Outcome::Pass, String::new())
                }
            }
        };
        Finding {
            object: Some(task.subject.clone()),
            source: location,
            policy: policy.name.clone(),
            result,
            message,
        }
    }
}

/// Why a requester-dependent module's admission is a `skip`.
fn skip_reason(policy: &str) -> String {
    format!(
        "needs a requester: {policy} decides by who creates the object (backgroundAudit: false), \
         and no --as was given; its checks that hold for every requester passed. Pass --as USER \
         [--as-group GROUP] to audit as that user"
    )
}

/// Progress of [`Audit::run`].
#[derive(Debug, Clone, Copy)]
pub enum Progress {
    /// This many evaluations will run.
    Start(usize),
    /// One more is done.
    Done,
}

/// The CREATE request the audit scanner sends for a stored object
/// (kubewarden/kubewarden-controller,
/// `audit-scanner/internal/scanner/admission_request.go`,
/// `newAdmissionRequest`): the object's uid, name, namespace, kind as
/// `kind` and `requestKind`, operation CREATE and the object. The scanner
/// puts the kind in `resource.resource`; here it is the plural resource
/// name, as the API server would send it. The scanner sends no `userInfo`;
/// here one is sent for `--as` and for requester-free evaluations.
fn synthesise(task: &Task<'_>, user_info: Option<Value>) -> Value {
    let kind = json!({"group": task.group, "version": task.version, "kind": task.subject.kind});
    let resource = json!({"group": task.group, "version": task.version, "resource": task.resource});
    let uid = if task.subject.uid.is_empty() {
        format!(
            "olm-guard-audit:{}:{}:{}",
            task.subject.kind, task.subject.namespace, task.subject.name
        )
    } else {
        task.subject.uid.clone()
    };
    let mut request = json!({
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": task.subject.name,
        "namespace": task.subject.namespace,
        "operation": "CREATE",
        "object": task.object,
        "dryRun": false,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    });
    if let (Some(user_info), Some(map)) = (user_info, request.as_object_mut()) {
        map.insert("userInfo".into(), user_info);
    }
    request
}
