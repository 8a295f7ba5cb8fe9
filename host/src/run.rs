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

  # Would this install pass? Every module in dist/ on every document, in order:
  olm-guard run all --object quickstart-olm.yaml --cluster cluster.yaml --fail-on-deny
  olm-guard run og-intersection catalog-union --object install.yaml -o junit > junit.xml
  olm-guard run all --object install.yaml --settings catalog-union=cu.yaml -o json

  # A hand-built AdmissionReview (or bare AdmissionRequest), JSON or YAML:
  olm-guard run dist/catalog-union.wasm --request review.json --settings settings.yaml

  # Show every host call the module makes, with its answer:
  olm-guard run revision-uniqueness --object cos.yaml --cluster cluster.yaml --trace

MODULE is a name in --dist (`catalog-union`), a path to a .wasm file, or
registry://host[:port]/repo:tag; with --verification-config, only
registry modules whose cosign signatures satisfy it are run (`olm-guard
verify --help`), checked before any evaluation.

Several modules (or `all`, every module in --dist): each document goes only to
the modules whose metadata rules cover its group, version, resource and
operation, as policy-server's webhooks are registered; an object no rule
covers is listed as `(none)`. The documents are admitted in order, as
`kubectl apply -f` sends them: a namespaced object without a namespace goes in
-n's (else `default`); one already in the snapshot is an UPDATE of it; and
each object every module admitted joins the snapshot for the documents after
it (--independent: judge each against --cluster alone). Mutating modules run
first, in name order (the API server calls mutating webhooks ordered by
their configuration's name, and Kubewarden names it after the policy), each
on the object as the ones before patched it; the others then judge the final
object. Unlike the API server, every module is evaluated even after a
denial, so one run names every reason. --settings MODULE=FILE per module.

Output: by default the verdict, message, warnings and a diff of any mutation,
one block per object (several modules: a table, object by module, with the
verdict, pass | fail | warn | error, and the message's first line);
-o json|yaml prints each AdmissionReview as data (with several modules one per
object and module, naming them in `policy`, `source` and `operation`), with
the patch decoded (`patchOperations`) and applied (`patchedObject`); -o junit
a test case per object and module.

Exit codes: 0 the modules answered (allowed, or denied without --fail-on-deny:
the verdict is in the output); 1 --fail-on-deny and some object was denied;
2 an input could not be read (the message names the file and document), the
settings were refused, or a module failed (trap, deadline, memory cap).")]
pub struct RunArgs {
    /// The policy module: a name in --dist, a .wasm file or
    /// registry://host[:port]/repo:tag.
    /// Several modules, or `all` for every module in --dist, evaluate each
    /// object with the modules whose metadata rules cover it (below).
    #[arg(value_name = "MODULE", required_unless_present = "policy")]
    pub modules: Vec<String>,
    /// The policy module (the same as MODULE).
    #[arg(long, conflicts_with = "modules")]
    pub policy: Option<PathBuf>,
    /// Where modules named by name are.
    #[arg(long, default_value = "dist")]
    pub dist: PathBuf,
    #[command(flatten)]
    pub registry: crate::pull::RegistryArgs,
    #[command(flatten)]
    pub verification: crate::pull::VerificationArgs,
    /// AdmissionReview or AdmissionRequest, JSON or YAML.
    #[arg(long, required_unless_present_any = ["objects", "old_object", "bundle"], conflicts_with_all = ["objects", "old_object", "bundle"])]
    pub request: Option<PathBuf>,
    /// A Kubernetes object or manifest (YAML or JSON; `-` for stdin); every
    /// document is evaluated, `List`s are unpacked. Repeatable: the files in
    /// the order given.
    #[arg(long = "object", value_name = "FILE")]
    pub objects: Vec<PathBuf>,
    /// An OLM registry+v1 bundle directory (`manifests/`,
    /// `metadata/annotations.yaml`): evaluate the manifests OLM would create
    /// from it in --namespace, after the --object documents.
    #[arg(long, value_name = "DIR", requires = "namespace")]
    pub bundle: Option<PathBuf>,
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
    /// Policy settings, JSON or YAML; `MODULE=FILE` for one of several
    /// modules (repeatable).
    #[arg(long, value_name = "[MODULE=]FILE")]
    pub settings: Vec<String>,
    /// With several modules: judge every document against --cluster alone,
    /// instead of adding each admitted object to the snapshot the documents
    /// after it are judged against.
    #[arg(long)]
    pub independent: bool,
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
    /// Exit 1 when a module denies any of the requests (a gate for CI).
    #[arg(long)]
    pub fail_on_deny: bool,
    /// `text`: the verdict, message, warnings and a diff of any mutation
    /// (with several modules: the table); `table`: object × module, the
    /// verdict and the message's first line; `json`/`yaml`: the
    /// AdmissionReview (one document per object and module), with
    /// `patchOperations` and `patchedObject` beside `response` when the
    /// module mutated the object; `junit`: a test case per object and
    /// module.
    #[arg(short, long, value_enum, default_value_t = RunOutput::Text)]
    pub output: RunOutput,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// How `run` prints the response.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RunOutput {
    Text,
    Table,
    Json,
    Yaml,
    Junit,
}

pub fn run(mut args: RunArgs) -> anyhow::Result<ExitCode> {
    // Every registry fetch below (one module or several) is checked.
    args.registry.verification_config = args.verification.verification_config.clone();
    if crate::run_many::applies(&args) {
        return crate::run_many::run(args);
    }
    // The module first: a misspelt name is the likelier fault, and stdin
    // should not be consumed for nothing.
    let module_path = module_path(&args)?;
    let requests = requests(&args)?;
    let settings = admission::settings_object(match single_settings(&args)? {
        Some(path) => Some(admission::read_document(&path)?),
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
            // `table` and `junit` go to the several-module path.
            RunOutput::Text | RunOutput::Table | RunOutput::Junit => {
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

/// The settings file of the one module: `--settings FILE`, or
/// `--settings NAME=FILE` naming it.
fn single_settings(args: &RunArgs) -> anyhow::Result<Option<PathBuf>> {
    match args.settings.as_slice() {
        [] => Ok(None),
        [one] => {
            let path = PathBuf::from(one);
            match one.split_once('=') {
                Some((name, file)) if !path.exists() => {
                    let module = module_path(args)?;
                    let stem = module.file_stem().map(|s| s.to_string_lossy());
                    if stem.as_deref() != Some(name) {
                        bail!(
                            "--settings {one}: the module is {}, not {name}",
                            module.display()
                        );
                    }
                    Ok(Some(PathBuf::from(file)))
                }
                _ => Ok(Some(path)),
            }
        }
        _ => bail!(
            "--settings is given {} times for one module",
            args.settings.len()
        ),
    }
}

/// The module file: `--policy`, or MODULE as a path, a registry reference or
/// a name in `--dist`.
fn module_path(args: &RunArgs) -> anyhow::Result<PathBuf> {
    if let Some(path) = &args.policy {
        return Ok(path.clone());
    }
    let module = args.modules.first().map(String::as_str).unwrap_or_default();
    resolve_module(module, &args.dist)
}

/// MODULE as a path (`.wasm`, or with a directory), a registry reference, or
/// a name in `dist`.
pub(crate) fn resolve_module(module: &str, dist: &Path) -> anyhow::Result<PathBuf> {
    let as_path = Path::new(module);
    if module.contains("://") || module.ends_with(".wasm") || as_path.components().count() > 1 {
        return Ok(as_path.to_path_buf());
    }
    let in_dist = dist.join(format!("{module}.wasm"));
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
    let mut objects = Vec::new();
    for path in &args.objects {
        objects.extend(objects_of(path)?);
    }
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
pub(crate) fn objects_of(path: &Path) -> anyhow::Result<Vec<(String, Value)>> {
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
    Ok(olm_guard_evaluator::preflight::manifest_documents(
        &source, &text,
    )?)
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
pub(crate) fn with_hint(error: CallError, limits: &LimitArgs) -> anyhow::Error {
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
