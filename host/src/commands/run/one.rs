//! `olm-guard run` with one module: each request (the `--request` file, or
//! one per object of `--object`, an UPDATE of an object the cluster holds)
//! evaluated by the module, against the cluster kubectl would choose
//! ([`Source`]), with what the evaluation will not see said on stderr,
//! `--trace`, `--record` and `--replay`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use olm_guard_core::ContextErrorKind;
use olm_guard_core::protocol::GetResourceRequest;
use olm_guard_evaluator::input::{self as admission, ObjectRequest, Route};
use olm_guard_evaluator::{CallRecord, ClusterContext, Policy};

use super::{RunArgs, RunOutput, show};
use crate::output::{count, list, truncate, write_json, write_yaml};
use crate::{inputs, live, modules, registry, settings};

/// How much of each host-call answer `--trace` shows.
const TRACE_ANSWER_CHARS: usize = 400;

/// Loads the module, evaluates every request, prints each answer; exit 1
/// with `--fail-on-deny` when one was denied.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    // The module first: a misspelt name is the likelier fault, and stdin
    // should not be consumed for nothing.
    let (module_name, module_path) = module_path(&args)?;
    let input = input(&args)?;
    let settings_file = settings::for_one_module(&args.settings, &module_name)?;
    let settings = settings::read(settings_file.as_deref())?;
    let snapshot = args.snapshot.load()?;
    if input.len() > 1 && (args.session.record.is_some() || args.session.replay.is_some()) {
        bail!(
            "--record and --replay take one evaluation; the object file holds {}",
            count(input.len(), "object")
        );
    }
    let runtime = args.limits.runtime()?;
    let module = registry::local_module(&module_path, &args.registry)?;
    let policy = Policy::load(&runtime, &module, args.metadata.as_deref())?;
    if policy.metadata.is_none() {
        eprintln!(
            "olm-guard: warning: {} has no embedded metadata and no --metadata: it may read no cluster resources",
            module_path.display()
        );
    }
    policy.validate_settings(&settings)?;
    let reads = policy
        .metadata
        .as_ref()
        .filter(|m| live::reads_cluster(m))
        .map(|m| vec![(policy.name.clone(), m)])
        .unwrap_or_default();
    let source = Source::of(&args)?;
    if source == Source::None && !args.no_cluster {
        no_cluster_for(&reads)?;
    }
    // Whether a kind is cluster-scoped: the server's discovery, else the
    // files' table (built in, or --api-resources).
    let api_resources = snapshot.api_resources().clone();
    // A live cluster answers the lookups; the --cluster files, then, only
    // what it does not serve.
    let (base, live, session): (ClusterContext, _, _) = if source == Source::Live {
        let session = args.live.session()?;
        let files = (!args.snapshot.cluster.is_empty()).then_some(snapshot);
        let live = session.context(files);
        (live.cluster(), Some(live), Some(session))
    } else {
        (Arc::new(snapshot), None, None)
    };
    let cluster_scoped = |api_version: &str, kind: &str| match &session {
        Some(session) => match session.kind(api_version, kind) {
            Ok(Some(served)) => !served.namespaced,
            _ => api_resources.is_cluster_scoped(api_version, kind),
        },
        None => api_resources.is_cluster_scoped(api_version, kind),
    };
    // The stored object an object of the manifest would replace: looked up
    // in the cluster unless the user said what is stored (--old-object) or
    // which operation it is, or there is no cluster to look in.
    let look_up = args.old_object.is_none()
        && args.operation.is_none()
        && matches!(source, Source::Live | Source::Files);
    let stored = |label: &str, object: &Value| -> anyhow::Result<Option<Value>> {
        if !look_up {
            return Ok(None);
        }
        stored_object(&base, object, args.namespace.as_deref(), &cluster_scoped)
            .with_context(|| label.to_string())
    };
    let requests = requests(&args, input, &stored)?;
    let (cluster, context) = args.session.context(base.clone())?;
    warn_about_missing_context(&policy, &requests);
    let mut out = std::io::stdout().lock();
    let mut denied = 0;
    let mut reviews = Vec::new();
    for (label, request) in &requests {
        warn_if_not_routed(&policy, request, label);
        // Answers are copied into the call log only when they are printed.
        let host = policy.host(cluster.clone());
        let host = Arc::new(if args.trace {
            host.keeping_answers()
        } else {
            host
        });
        let result = policy.validate_with_callback(request, &settings, host.clone());
        if args.trace {
            print_trace(&host.calls());
        }
        let response = result
            .map_err(|e| args.limits.with_hint(e))
            .with_context(|| format!("{}: {label}", module_path.display()))?;
        // A verdict reached on a lookup the cluster could not answer says
        // nothing about the object: it is not printed as one.
        if let Some(failure) = live.as_ref().and_then(|live| live.failure()) {
            bail!("{label}: {failure}; no verdict is printed");
        }
        if !response.allowed {
            denied += 1;
        }
        let label_context = || format!("{}: {label}", module_path.display());
        match args.output {
            // `table` and `junit` go to the several-module path.
            RunOutput::Text | RunOutput::Table | RunOutput::Junit => {
                show::write_text(&mut out, request, &response).with_context(label_context)?
            }
            RunOutput::Json | RunOutput::Yaml => {
                let mut review =
                    show::review_document(request, response).with_context(label_context)?;
                if requests.len() > 1 {
                    show::name_in_list(&mut review, &policy.name, label, request);
                }
                reviews.push(review);
            }
        }
    }
    // One document: the review itself for one request (as `kubectl get x
    // -o json` prints the object), else a List of every object's, each
    // naming its object, document and operation, as `run all`'s.
    let document = match reviews.len() {
        1 => reviews.pop(),
        _ => Some(list(reviews)),
    };
    match (args.output, document) {
        (RunOutput::Json, Some(document)) => write_json(&mut out, &document)?,
        (RunOutput::Yaml, Some(document)) => write_yaml(&mut out, &document)?,
        _ => {}
    }
    out.flush()?;
    context.finish()?;
    if args.fail_on_deny && denied > 0 {
        eprintln!(
            "olm-guard: {denied} of {} requests denied (--fail-on-deny)",
            requests.len()
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Where the lookups of `run` are answered from, as kubectl chooses the
/// cluster (`run --help`, "Which cluster").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The API server of the kubeconfig: `--kubeconfig` or `--context`,
    /// else `KUBECONFIG`, else `~/.kube/config`, when no `--cluster` file
    /// is given without them.
    Live,
    /// The `--cluster` files, offline.
    Files,
    /// A `--replay` session.
    Replay,
    /// No cluster: `--no-cluster`, or nothing to read.
    None,
}

impl Source {
    /// The source `args` name.
    pub fn of(args: &RunArgs) -> anyhow::Result<Source> {
        Ok(if args.no_cluster {
            Source::None
        } else if args.live.given() {
            Source::Live
        } else if args.session.replay.is_some() {
            Source::Replay
        } else if !args.snapshot.cluster.is_empty() {
            Source::Files
        } else if args.live.available() {
            Source::Live
        } else {
            Source::None
        })
    }
}

/// Refuses to judge with modules that read the cluster (`reads`: name and
/// metadata) when no cluster was given, naming how to give one: their
/// lookups would all find nothing, and the verdict would be about a
/// cluster that does not exist. `--no-cluster` asks for that on purpose.
pub fn no_cluster_for(reads: &[(String, &olm_guard_runtime::Metadata)]) -> anyhow::Result<()> {
    if reads.is_empty() {
        return Ok(());
    }
    let what = reads
        .iter()
        .map(|(name, metadata)| {
            let mut looks_up: Vec<String> = metadata
                .context_aware_resources
                .iter()
                .map(|r| format!("{} {}", r.api_version, r.kind))
                .collect();
            if live::calls_can_i(metadata) {
                looks_up.push("can_i".into());
            }
            format!("{name} ({})", looks_up.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ");
    bail!(
        "{what} {} the cluster, and no cluster was given (no --kubeconfig, --context, \
         KUBECONFIG, ~/.kube/config or --cluster): pass --kubeconfig PATH or --context NAME for \
         a live cluster, --cluster FILE for a snapshot of one, or --no-cluster to judge against \
         an empty cluster",
        if reads.len() == 1 { "reads" } else { "read" }
    )
}

/// The object `object` would replace in `cluster` (an UPDATE of it, as
/// `kubectl apply` sends one): same apiVersion, kind, namespace (the
/// object's, else `namespace`, else `default`, for a namespaced kind) and
/// name; `None` when the cluster holds none, or cannot hold the kind.
fn stored_object(
    cluster: &ClusterContext,
    object: &Value,
    namespace: Option<&str>,
    cluster_scoped: &dyn Fn(&str, &str) -> bool,
) -> anyhow::Result<Option<Value>> {
    let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let meta = olm_guard_core::ObjectMeta::of(object);
    if meta.name.is_empty() || api_version.is_empty() || kind.is_empty() {
        return Ok(None);
    }
    let namespace = if cluster_scoped(api_version, kind) {
        None
    } else if meta.namespace.is_empty() {
        Some(namespace.unwrap_or("default").to_string())
    } else {
        Some(meta.namespace.clone())
    };
    let request = GetResourceRequest {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        name: meta.name.clone(),
        namespace,
        disable_cache: false,
        field_masks: None,
    };
    match cluster.get(&request) {
        Ok(bytes) => Ok(Some(serde_json::from_slice(&bytes)?)),
        // Not there, or a kind the cluster cannot hold: a CREATE.
        Err(e)
            if matches!(
                e.kind,
                ContextErrorKind::NotFound | ContextErrorKind::Unavailable
            ) =>
        {
            Ok(None)
        }
        Err(e) => bail!(
            "cannot tell whether the cluster holds {kind} {} already (then this is an UPDATE of \
             it) or not (a CREATE): {e}; say which with --operation CREATE or --old-object FILE",
            meta.name
        ),
    }
}

/// What is evaluated: the `--request` file's request, or the objects of
/// `--object` (and the one `--old-object`).
enum Input {
    /// The request file's label and request.
    Request(String, Value),
    /// The objects, each labelled, and the old object.
    Objects(Vec<(String, Value)>, Option<(String, Value)>),
}

impl Input {
    /// How many requests it makes.
    fn len(&self) -> usize {
        match self {
            Input::Request(..) => 1,
            Input::Objects(objects, _) => objects.len().max(1),
        }
    }
}

/// Says on stderr what an evaluation will not see: the requester, for a
/// module that authorizes requesters and a request without a user (the
/// verdict is about an anonymous request).
fn warn_about_missing_context(policy: &Policy, requests: &[(String, Value)]) {
    let Some(metadata) = &policy.metadata else {
        return;
    };
    let authorizes = metadata
        .host_capabilities
        .iter()
        .flatten()
        .any(|c| c.contains("can_i"))
        || metadata
            .context_aware_resources
            .iter()
            .any(|r| r.api_version.starts_with("rbac.authorization.k8s.io/"));
    let anonymous = requests.iter().any(|(_, request)| {
        request
            .pointer("/userInfo/username")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    });
    if authorizes && anonymous {
        eprintln!(
            "olm-guard: note: {} authorizes the requester and the request names no user: the verdict is about an anonymous request (give --as and --as-group)",
            policy.name
        );
    }
}

/// The module's name and file: `--policy`, or MODULE as a path, a registry
/// reference or a name in the module directory.
pub(super) fn module_path(args: &RunArgs) -> anyhow::Result<(String, PathBuf)> {
    let module = match &args.policy {
        Some(path) => path.display().to_string(),
        None => args.modules.first().cloned().unwrap_or_default(),
    };
    let path = modules::resolve(&module, &args.dist)?;
    Ok((modules::name_of(&module, &path), path))
}

/// What `args` give to evaluate: the request file, or the objects of
/// `--object` and `--old-object`, read once (stdin among them).
fn input(args: &RunArgs) -> anyhow::Result<Input> {
    if let Some(path) = &args.request {
        let request = inputs::request_file(path)?;
        return Ok(Input::Request(path.display().to_string(), request));
    }
    let mut objects = Vec::new();
    for path in &args.objects {
        objects.extend(inputs::objects_of(path)?);
    }
    let old = match &args.old_object {
        Some(path) => Some(inputs::old_object(path)?),
        None => None,
    };
    Ok(Input::Objects(objects, old))
}

/// The requests to evaluate, each with a label for messages: the request
/// file's, or one per object (or the `--old-object`), an object `stored`
/// finds in the cluster being an UPDATE of it. Several objects get
/// several uids, as the API server gives each request its own.
fn requests(
    args: &RunArgs,
    input: Input,
    stored: &dyn Fn(&str, &Value) -> anyhow::Result<Option<Value>>,
) -> anyhow::Result<Vec<(String, Value)>> {
    let (objects, old) = match input {
        Input::Request(label, request) => return Ok(vec![(label, request)]),
        Input::Objects(objects, old) => (objects, old),
    };
    let user = crate::requester::of(args.user.as_deref(), &args.groups);
    let build = |object: Option<Value>, stored: Option<Value>| {
        admission::request_for_object(ObjectRequest {
            object,
            old_object: old.as_ref().map(|(_, o)| o.clone()).or(stored),
            operation: args.operation.clone(),
            namespace: args.namespace.clone(),
            user: user.clone(),
        })
    };
    if objects.is_empty() {
        let (label, _) = old.clone().context("--object holds no object")?;
        return Ok(vec![(label.clone(), build(None, None).context(label)?)]);
    }
    let several = objects.len() > 1;
    objects
        .into_iter()
        .enumerate()
        .map(|(index, (label, object))| {
            let found = stored(&label, &object)?;
            let mut request = build(Some(object), found).with_context(|| label.clone())?;
            if several && let Some(map) = request.as_object_mut() {
                map.insert("uid".into(), json!(admission::numbered_uid(index + 1)));
            }
            Ok((label, request))
        })
        .collect()
}

/// Says on stderr when policy-server would never send `request` to this
/// module (its metadata rules do not cover it); kwctl evaluates such a
/// request anyway, and so does `run`.
fn warn_if_not_routed(policy: &Policy, request: &Value, label: &str) {
    let Some(metadata) = &policy.metadata else {
        return;
    };
    let Some(route) = Route::of(request) else {
        eprintln!(
            "olm-guard: note: {label}: the request has no `resource`, so whether policy-server would send it to {} cannot be checked",
            policy.name
        );
        return;
    };
    if !metadata.covers(&route.target()) {
        eprintln!(
            "olm-guard: warning: {label}: policy-server would not send this request to {} ({route} is not in its metadata rules); evaluating it anyway, as kwctl does",
            policy.name
        );
    }
}

/// `--trace`: each host call with its request, and its answer's size and
/// first bytes, or the error the module received.
fn print_trace(calls: &[CallRecord]) {
    if calls.is_empty() {
        eprintln!("trace: the module made no host call");
    }
    for (index, call) in calls.iter().enumerate() {
        eprintln!(
            "trace: call {}: {} {}",
            index + 1,
            call.capability,
            call.payload
        );
        match (&call.outcome, &call.answer) {
            (Ok(size), Some(answer)) => eprintln!(
                "trace:   answer, {size} bytes: {}",
                truncate(&String::from_utf8_lossy(answer), TRACE_ANSWER_CHARS)
            ),
            (Ok(size), None) => eprintln!("trace:   answer, {size} bytes"),
            (Err(e), _) => eprintln!("trace:   error: {e}"),
        }
    }
}
