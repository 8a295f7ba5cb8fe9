//! `olm-guard run` with one module: each request (the `--request` file, or
//! one per object of `--object`) evaluated by the module, with what the
//! evaluation will not see said on stderr, `--trace`, `--record` and
//! `--replay`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use serde_json::Value;

use olm_guard_evaluator::input::{self as admission, ObjectRequest, Requester, Route};
use olm_guard_evaluator::{CallRecord, Policy};

use super::{RunArgs, RunOutput, show};
use crate::output::{list, truncate, write_json, write_yaml};
use crate::{inputs, modules, registry, settings};

/// How much of each host-call answer `--trace` shows.
const TRACE_ANSWER_CHARS: usize = 400;

/// Loads the module, evaluates every request, prints each answer; exit 1
/// with `--fail-on-deny` when one was denied.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    // The module first: a misspelt name is the likelier fault, and stdin
    // should not be consumed for nothing.
    let (module_name, module_path) = module_path(&args)?;
    let requests = requests(&args)?;
    let settings_file = settings::for_one_module(&args.settings, &module_name)?;
    let settings = settings::read(settings_file.as_deref())?;
    let snapshot = args.snapshot.load()?;
    if requests.len() > 1 && (args.session.record.is_some() || args.session.replay.is_some()) {
        bail!(
            "--record and --replay take one evaluation; the object file holds {} objects",
            requests.len()
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
    // A live cluster answers the lookups; the --cluster files, then, only
    // what it does not serve.
    let (base, live): (olm_guard_evaluator::ClusterContext, _) = if args.live.given() {
        let session = args.live.session()?;
        let fallback = (!args.snapshot.cluster.is_empty()).then_some(snapshot);
        let live = session.context(fallback);
        (live.cluster(), Some(live))
    } else {
        (Arc::new(snapshot), None)
    };
    let (cluster, context) = args.session.context(base)?;
    warn_about_missing_context(&policy, &args, &requests);
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
                reviews.push(show::review_document(request, response).with_context(label_context)?)
            }
        }
    }
    // One document: the review of the one --request, else a List of every
    // object's (the same shape whatever the number of objects).
    let document = if args.request.is_some() && reviews.len() == 1 {
        reviews.pop()
    } else {
        Some(list(reviews))
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
        && !args.live.given()
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

/// The module's name and file: `--policy`, or MODULE as a path, a registry
/// reference or a name in the module directory.
fn module_path(args: &RunArgs) -> anyhow::Result<(String, PathBuf)> {
    let module = match &args.policy {
        Some(path) => path.display().to_string(),
        None => args.modules.first().cloned().unwrap_or_default(),
    };
    let path = modules::resolve(&module, &args.dist)?;
    Ok((modules::name_of(&module, &path), path))
}

/// The requests to evaluate, each with a label for messages: the request
/// file's, or one per object of `--object` (or `--old-object`).
fn requests(args: &RunArgs) -> anyhow::Result<Vec<(String, Value)>> {
    if let Some(path) = &args.request {
        let request = inputs::request_file(path)?;
        return Ok(vec![(path.display().to_string(), request)]);
    }
    let mut objects = Vec::new();
    for path in &args.objects {
        objects.extend(inputs::objects_of(path)?);
    }
    let old = match &args.old_object {
        Some(path) => Some(inputs::old_object(path)?),
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
