//! `olm-guard run`: evaluate one request, or the objects of a manifest.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use serde_json::Value;

use olm_guard_evaluator::input::{self as admission, ObjectRequest, Requester, Route};
use olm_guard_evaluator::{CallRecord, Policy};
use olm_guard_runtime::CallError;
use olm_guard_snapshot::Snapshot;

use crate::common::{LimitArgs, SnapshotArgs, truncate};
use crate::session::SessionArgs;

/// How much of each host-call answer `--trace` shows.
const TRACE_ANSWER_CHARS: usize = 400;

#[derive(Args)]
#[command(after_help = "\
Examples:
  # A manifest, as the API server would send it on CREATE (UPDATE with --old-object):
  olm-guard run catalog-union --object cs.yaml
  kubectl get catalogsource ops -n olm -o yaml | olm-guard run catalog-union --object -
  olm-guard run og-intersection --object og.yaml --cluster cluster.yaml --user alice --group team-a

  # A hand-built AdmissionReview (or bare AdmissionRequest), JSON or YAML:
  olm-guard run dist/catalog-union.wasm --request review.json --settings settings.yaml

  # Show every host call the module makes, with its answer:
  olm-guard run revision-uniqueness --object cos.yaml --cluster cluster.yaml --trace

MODULE is a name in --dist (`catalog-union`), a path to a .wasm file, or
registry://host[:port]/repo:tag.

Output: by default the verdict, message, warnings and a diff of any mutation,
one block per object; -o json|yaml prints each AdmissionReview as data, with
the patch decoded (`patchOperations`) and applied (`patchedObject`).

Exit codes: 0 the module answered (allowed, or denied without --fail-on-deny:
the verdict is in the output); 1 --fail-on-deny and some object was denied;
2 an input could not be read, the settings were refused, or the module failed
(trap, deadline, memory cap).")]
pub struct RunArgs {
    /// The policy module: a name in --dist, a .wasm file or
    /// registry://host[:port]/repo:tag.
    #[arg(value_name = "MODULE", required_unless_present = "policy")]
    pub module: Option<String>,
    /// The policy module (the same as MODULE).
    #[arg(long, conflicts_with = "module")]
    pub policy: Option<PathBuf>,
    /// Where modules named by name are.
    #[arg(long, default_value = "dist")]
    pub dist: PathBuf,
    #[command(flatten)]
    pub registry: crate::pull::RegistryArgs,
    /// AdmissionReview or AdmissionRequest, JSON or YAML.
    #[arg(long, required_unless_present_any = ["object", "old_object"], conflicts_with_all = ["object", "old_object"])]
    pub request: Option<PathBuf>,
    /// A Kubernetes object (YAML or JSON; `-` for stdin). Every document of
    /// the file is evaluated; `List`s are unpacked.
    #[arg(long, value_name = "FILE")]
    pub object: Option<PathBuf>,
    /// The stored object, for an UPDATE (or a DELETE).
    #[arg(long, value_name = "FILE")]
    pub old_object: Option<PathBuf>,
    /// CREATE, UPDATE, DELETE or CONNECT; by default UPDATE with
    /// --old-object, DELETE with --old-object alone, else CREATE.
    #[arg(long)]
    pub operation: Option<String>,
    /// The requester's user name (request.userInfo.username).
    #[arg(long)]
    pub user: Option<String>,
    /// A group of the requester (repeatable).
    #[arg(long = "group")]
    pub groups: Vec<String>,
    /// The namespace of the request, for objects that name none.
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// Policy settings, JSON or YAML.
    #[arg(long)]
    pub settings: Option<PathBuf>,
    #[command(flatten)]
    pub snapshot: SnapshotArgs,
    #[command(flatten)]
    pub session: SessionArgs,
    /// metadata.yml to use instead of the module's embedded metadata.
    #[arg(long)]
    pub metadata: Option<PathBuf>,
    /// Print every host call to stderr: the request, and the answer's size
    /// and first bytes (or the error), also when the module fails.
    #[arg(long)]
    pub trace: bool,
    /// Exit 1 when the module denies any of the requests (a gate for CI).
    #[arg(long)]
    pub fail_on_deny: bool,
    /// `text`: the verdict, message, warnings and a diff of any mutation;
    /// `json`/`yaml`: the AdmissionReview (one document per object), with
    /// `patchOperations` and `patchedObject` beside `response` when the
    /// module mutated the object.
    #[arg(short, long, value_enum, default_value_t = RunOutput::Text)]
    pub output: RunOutput,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// How `run` prints the response.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RunOutput {
    Text,
    Json,
    Yaml,
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    // The module first: a misspelt name is the likelier fault, and stdin
    // should not be consumed for nothing.
    let module_path = module_path(&args)?;
    let requests = requests(&args)?;
    let settings = admission::settings_object(match &args.settings {
        Some(path) => Some(admission::read_document(path)?),
        None => None,
    })
    .context("--settings")?;
    let snapshot = args.snapshot.load()?;
    if requests.len() > 1 && (args.session.record.is_some() || args.session.replay.is_some()) {
        bail!(
            "--record and --replay take one evaluation; the object file holds {} objects",
            requests.len()
        );
    }
    let runtime = args.limits.runtime()?;
    let module = crate::pull::local_policy(&module_path, &args.registry)?;
    let policy = Policy::load(&runtime, &module, args.metadata.as_deref())?;
    if policy.metadata.is_none() {
        eprintln!(
            "olm-guard: warning: {} has no embedded metadata and no --metadata: it may read no cluster resources",
            module_path.display()
        );
    }
    policy.validate_settings(&settings)?;
    let (cluster, context) = args.session.context(snapshot)?;
    warn_about_missing_context(&policy, &args, &requests);
    let mut out = std::io::stdout().lock();
    let mut denied = 0;
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
            .map_err(|e| with_hint(e, &args.limits))
            .with_context(|| format!("{}: {label}", module_path.display()))?;
        if !response.allowed {
            denied += 1;
        }
        let label_context = || format!("{}: {label}", module_path.display());
        match args.output {
            RunOutput::Text => {
                crate::show::write_text(&mut out, request, &response).with_context(label_context)?
            }
            RunOutput::Json => {
                let review =
                    crate::show::review_document(request, response).with_context(label_context)?;
                serde_json::to_writer_pretty(&mut out, &review)?;
                writeln!(out)?;
            }
            RunOutput::Yaml => {
                let review =
                    crate::show::review_document(request, response).with_context(label_context)?;
                writeln!(out, "---")?;
                serde_yaml_ng::to_writer(&mut out, &review)?;
            }
        }
    }
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

/// Says on stderr what an evaluation will not see: the cluster, for a
/// module that reads it and was given neither `--cluster` nor `--replay`
/// (its lookups see an empty cluster); the requester, for a module that
/// authorizes requesters and a request without a user (the verdict is
/// about an anonymous request).
fn warn_about_missing_context(policy: &Policy, args: &RunArgs, requests: &[(String, Value)]) {
    let Some(metadata) = &policy.metadata else {
        return;
    };
    let reads: Vec<String> = metadata
        .context_aware_resources
        .iter()
        .map(|r| format!("{}/{}", r.api_version, r.kind))
        .collect();
    let authorizes = metadata
        .host_capabilities
        .iter()
        .flatten()
        .any(|c| c.contains("can_i"))
        || reads
            .iter()
            .any(|r| r.starts_with("rbac.authorization.k8s.io/"));
    if (!reads.is_empty() || authorizes)
        && args.snapshot.cluster.is_empty()
        && args.session.replay.is_none()
    {
        let mut lookups = reads.clone();
        if authorizes {
            lookups.push("can_i (RBAC)".into());
        }
        eprintln!(
            "olm-guard: note: {} looks up {} in the cluster and no --cluster (or --replay) was given: every lookup answers as an empty cluster would",
            policy.name,
            lookups.join(", ")
        );
    }
    let anonymous = requests.iter().any(|(_, request)| {
        request
            .pointer("/userInfo/username")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    });
    if authorizes && anonymous {
        eprintln!(
            "olm-guard: note: {} authorizes the requester and the request names no user: the verdict is about an anonymous request (give --user and --group)",
            policy.name
        );
    }
}

/// The module file: `--policy`, or MODULE as a path, a registry reference or
/// a name in `--dist`.
fn module_path(args: &RunArgs) -> anyhow::Result<PathBuf> {
    if let Some(path) = &args.policy {
        return Ok(path.clone());
    }
    let module = args.module.as_deref().unwrap_or_default();
    let as_path = Path::new(module);
    if module.contains("://") || module.ends_with(".wasm") || as_path.components().count() > 1 {
        return Ok(as_path.to_path_buf());
    }
    let in_dist = args.dist.join(format!("{module}.wasm"));
    if !in_dist.exists() {
        bail!(
            "no module {module:?}: {} does not exist (build the modules with `make dist`, pass --dist DIR, or give a path to a .wasm file)",
            in_dist.display()
        );
    }
    Ok(in_dist)
}

/// The requests to evaluate, each with a label for messages: the request
/// file's, or one per object of `--object` (or `--old-object`).
fn requests(args: &RunArgs) -> anyhow::Result<Vec<(String, Value)>> {
    if let Some(path) = &args.request {
        let request = admission::admission_request(admission::read_document(path)?)
            .with_context(|| path.display().to_string())?;
        return Ok(vec![(path.display().to_string(), request)]);
    }
    let objects = match &args.object {
        Some(path) => objects_of(path)?,
        None => Vec::new(),
    };
    let old = match &args.old_object {
        Some(path) => {
            let mut old = objects_of(path)?;
            if old.len() != 1 {
                bail!(
                    "{}: --old-object must hold one object, found {}",
                    path.display(),
                    old.len()
                );
            }
            old.pop()
        }
        None => None,
    };
    let user = Requester {
        username: args.user.clone().unwrap_or_default(),
        groups: args.groups.clone(),
    };
    let build = |object: Option<Value>| {
        admission::request_for_object(ObjectRequest {
            object,
            old_object: old.as_ref().map(|(_, o)| o.clone()),
            operation: args.operation.clone(),
            namespace: args.namespace.clone(),
            user: user.clone(),
        })
    };
    if objects.is_empty() {
        let (label, _) = old.clone().context("--object holds no object")?;
        return Ok(vec![(label.clone(), build(None).context(label)?)]);
    }
    objects
        .into_iter()
        .map(|(label, object)| {
            let request = build(Some(object)).with_context(|| label.clone())?;
            Ok((label, request))
        })
        .collect()
}

/// Every object of a manifest file (`-`: stdin), labelled `file: document N`
/// (`: items[M]` inside a List); a document that is not an object is an error
/// naming it.
fn objects_of(path: &Path) -> anyhow::Result<Vec<(String, Value)>> {
    let (source, text) = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the object from stdin")?;
        ("<stdin>".to_string(), text)
    } else {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        (path.display().to_string(), text)
    };
    let objects = Snapshot::read_objects(&source, &text)
        .into_iter()
        .map(|read| {
            let (at, object) = read?;
            Ok((at.to_string(), object))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if objects.is_empty() {
        bail!("{source}: no object in the file");
    }
    Ok(objects)
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

/// The module's failure, with the flag that lifts a limit it hit.
fn with_hint(error: CallError, limits: &LimitArgs) -> anyhow::Error {
    let hint = match &error {
        CallError::DeadlineExceeded(_) => format!(
            " (raise it with --timeout-ms, now {}; policy-server's default is 2000)",
            limits.timeout_ms
        ),
        CallError::MemoryLimitExceeded(_) => format!(
            " (raise it with --memory-limit-mib, now {})",
            limits.memory_limit_mib
        ),
        _ => String::new(),
    };
    anyhow::anyhow!("{error}{hint}")
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
