//! Every lookup a context-aware module makes fails closed, and names itself.
//!
//! Generated from the registry: for every rule, its scenarios are run once
//! through its module to learn which lookups (capability + kind) it makes;
//! then each lookup is made to fail in each way a host can fail —
//! refused by the grants (the kind or capability left out of the module's
//! metadata: Kubewarden's own denial), a transport error, a malformed answer
//! — and the module must deny, naming what it could not look up. The
//! scenarios must call every host capability the module's code contains
//! (found as `kwctl annotate` finds them), so none goes unchecked. A new rule
//! is covered as soon as it is in the registry and has scenarios. A host
//! error of many long lines (policy-server with `RUST_BACKTRACE=1`) must
//! reach the denial as one bounded line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;

use olm_guard_evaluator::scenario;
use olm_guard_evaluator::{AdmissionResponse, ContextHost, Grants, Policy, input};
use olm_guard_rules::registry::{RULES, RuleEntry};
use olm_guard_runtime::metadata::detect_host_capabilities;
use olm_guard_runtime::{HostCallback, Limits, Metadata, Runtime};
use olm_guard_snapshot::{LoadOptions, Snapshot};
use serde_json::Value;

mod common;
use common::{module, root};

fn wasm(rule: &RuleEntry) -> Vec<u8> {
    let path = module(rule.name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}; run make dist", path.display()))
}

/// One scenario's inputs.
struct Case {
    dir: PathBuf,
    request: Value,
    settings: Value,
    snapshot: Arc<Snapshot>,
}

/// Every scenario of `rule`, read as `olm-guard test` reads it (JSON or
/// YAML files, the cluster strictly); one that cannot be read fails the
/// test, naming it, rather than being left out.
fn cases(rule: &RuleEntry) -> Vec<Case> {
    let dirs = scenario::discover(&[root().join("testdata").join(rule.name)]).unwrap();
    assert!(!dirs.is_empty(), "testdata/{} holds no scenario", rule.name);
    dirs.into_iter()
        .map(|dir| read_case(&dir).unwrap_or_else(|e| panic!("{}: {e:#}", dir.display())))
        .collect()
}

fn read_case(dir: &Path) -> anyhow::Result<Case> {
    let settings = input::settings_object(
        scenario::input_file(dir, "settings")?
            .map(|path| input::read_document(&path))
            .transpose()?,
    )?;
    let request_path =
        scenario::input_file(dir, "request")?.context("no request.json or request.yaml")?;
    let request = input::admission_request(input::read_document(&request_path)?)?;
    let mut snapshot = Snapshot::new();
    if let Some(path) = scenario::input_file(dir, "cluster")? {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        snapshot.add_source(&path.display().to_string(), &text, LoadOptions::STRICT)?;
    }
    Ok(Case {
        dir: dir.to_path_buf(),
        request,
        settings,
        snapshot: Arc::new(snapshot),
    })
}

/// A lookup: `kubernetes/<operation>` and the kind it reads (`None` for
/// `can_i`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Lookup {
    operation: String,
    api_version: Option<String>,
    kind: Option<String>,
}

impl Lookup {
    fn of(capability: &str, payload: &str) -> Option<Lookup> {
        let operation = capability.strip_prefix("kubernetes/")?.to_string();
        let payload: Value = serde_json::from_str(payload).ok()?;
        let field = |key: &str| payload.get(key).and_then(Value::as_str).map(String::from);
        Some(Lookup {
            operation,
            api_version: field("api_version"),
            kind: field("kind"),
        })
    }

    /// Whether a call reads what this lookup reads: the same kind by any
    /// operation (scope-rbac falls back from a failed get to a list of the
    /// same kind, and reaches the same answer when the list works), or for
    /// `can_i`, any `can_i`.
    fn matches(&self, operation: &str, payload: &[u8]) -> bool {
        let Ok(text) = std::str::from_utf8(payload) else {
            return false;
        };
        let Some(call) = Lookup::of(&format!("kubernetes/{operation}"), text) else {
            return false;
        };
        match &self.kind {
            Some(_) => call.kind == self.kind && call.api_version == self.api_version,
            None => call.operation == self.operation,
        }
    }

    /// What a denial must name: the kind read, or the capability for can_i.
    fn name(&self) -> &str {
        self.kind.as_deref().unwrap_or(&self.operation)
    }
}

/// The lookups each scenario makes, with the first scenario that makes it.
fn lookups(policy: &Policy, cases: &[Case]) -> BTreeMap<Lookup, usize> {
    let mut found = BTreeMap::new();
    for (index, case) in cases.iter().enumerate() {
        let evaluation = policy
            .validate(&case.request, &case.settings, case.snapshot.clone())
            .unwrap_or_else(|e| panic!("{}: {e:#}", case.dir.display()));
        for call in &evaluation.calls {
            if let Some(lookup) = Lookup::of(&call.capability, &call.payload) {
                found.entry(lookup).or_insert(index);
            }
        }
    }
    found
}

/// How the injected failure looks to the module.
#[derive(Debug, Clone, Copy)]
enum Fault {
    Transport,
    Malformed,
    /// A transport error with a 6,000-character first line and a backtrace.
    Verbose,
}

/// What a policy-server started with `RUST_BACKTRACE=1` could answer.
fn verbose_host_error() -> String {
    format!(
        "{}\n\nStack backtrace:\n{}",
        "error trying to connect: connection refused (os error 111); ".repeat(100),
        "   0: policy_server::evaluation::host_callback\n".repeat(60)
    )
}

/// A host that answers like the module's own, except for one lookup.
struct Faulty {
    inner: ContextHost,
    lookup: Lookup,
    fault: Fault,
}

impl HostCallback for Faulty {
    fn call(&self, binding: &str, ns: &str, op: &str, payload: &[u8]) -> Result<Vec<u8>, String> {
        if ns == "kubernetes" && self.lookup.matches(op, payload) {
            return match self.fault {
                Fault::Transport => Err("error trying to connect: connection refused".into()),
                Fault::Malformed => Ok(b"{\"items\": [1, \"half an answer".to_vec()),
                Fault::Verbose => Err(verbose_host_error()),
            };
        }
        self.inner.call(binding, ns, op, payload)
    }
}

/// The module's metadata with `lookup` no longer granted.
fn without(metadata: &Metadata, lookup: &Lookup) -> Metadata {
    let mut narrowed = metadata.clone();
    match &lookup.kind {
        Some(kind) => narrowed
            .context_aware_resources
            .retain(|r| &r.kind != kind || Some(&r.api_version) != lookup.api_version.as_ref()),
        None => {
            let path = format!("kubernetes/{}", lookup.operation);
            if let Some(capabilities) = narrowed.host_capabilities.as_mut() {
                capabilities.retain(|c| c != &path);
            }
        }
    }
    narrowed
}

#[track_caller]
fn assert_fails_closed(
    rule: &str,
    lookup: &Lookup,
    how: &str,
    case: &Case,
    response: &AdmissionResponse,
) {
    let message = response.message();
    let context = format!(
        "{rule}: {} of {} failing ({how}) in {}",
        lookup.operation,
        lookup.name(),
        case.dir.display()
    );
    assert!(!response.allowed, "{context}: allowed ({message:?})");
    assert!(
        message.contains(lookup.name()),
        "{context}: the denial does not name {}: {message}",
        lookup.name()
    );
}

#[test]
fn every_lookup_of_every_module_fails_closed_naming_itself() {
    let runtime = Runtime::new(Limits::default()).unwrap();
    let mut checked = 0;
    for rule in RULES {
        let wasm = wasm(rule);
        let policy = Policy::from_bytes(&runtime, rule.name, &wasm, None).unwrap();
        let metadata = policy.metadata.clone().expect("annotated module");
        let cases = cases(rule);
        let found = lookups(&policy, &cases);
        // Every host capability the module's code contains (which
        // host/tests/metadata.rs holds equal to its hostCapabilities) is
        // among the lookups failed below: a capability no scenario calls
        // would go unchecked.
        let called: BTreeSet<String> = found
            .keys()
            .map(|lookup| format!("kubernetes/{}", lookup.operation))
            .collect();
        let contained = detect_host_capabilities(&wasm).unwrap();
        assert_eq!(
            called, contained,
            "{}: its scenarios call the host capabilities on the left, its code contains those on the right; add a scenario that makes the missing lookup",
            rule.name
        );
        let context_aware = !metadata.context_aware_resources.is_empty()
            || metadata
                .host_capabilities
                .as_ref()
                .is_some_and(|c| !c.is_empty());
        assert_eq!(
            context_aware,
            !found.is_empty(),
            "{}: declares context {:?}/{:?} but its scenarios looked up {:?}",
            rule.name,
            metadata.context_aware_resources,
            metadata.host_capabilities,
            found.keys().collect::<Vec<_>>()
        );
        for (lookup, &index) in &found {
            let case = &cases[index];
            // Refused by the grants: Kubewarden's denial text reaches the rule.
            let narrowed =
                Policy::from_bytes(&runtime, rule.name, &wasm, Some(without(&metadata, lookup)))
                    .unwrap();
            let response = narrowed
                .validate(&case.request, &case.settings, case.snapshot.clone())
                .unwrap()
                .response;
            assert_fails_closed(rule.name, lookup, "not granted", case, &response);
            assert!(
                response.message().contains("has not been granted access"),
                "{}: Kubewarden's denial is not quoted: {}",
                rule.name,
                response.message()
            );
            for fault in [Fault::Transport, Fault::Malformed, Fault::Verbose] {
                let host = Faulty {
                    inner: ContextHost::new(
                        case.snapshot.clone(),
                        Grants::from_metadata(Some(&metadata)),
                    ),
                    lookup: lookup.clone(),
                    fault,
                };
                let response = policy
                    .validate_with_callback(&case.request, &case.settings, Arc::new(host))
                    .unwrap();
                assert_fails_closed(rule.name, lookup, &format!("{fault:?}"), case, &response);
                if let Fault::Verbose = fault {
                    let message = response.message();
                    assert!(
                        !message.contains('\n')
                            && message.contains("connection refused")
                            && !message.contains("Stack backtrace")
                            && message.chars().count() < olm_guard_core::text::QUOTE_MAX + 300,
                        "{}: the host's error is not quoted as one bounded line ({} characters): {message}",
                        rule.name,
                        message.chars().count()
                    );
                }
            }
            checked += 1;
        }
    }
    eprintln!(
        "fail closed: {checked} lookups of {} modules, 4 faults each",
        RULES.len()
    );
    assert!(checked >= 8, "only {checked} lookups found");
}
