//! `-o report` and `--write-reports`: the reports Kubewarden's audit
//! scanner writes, as a YAML stream ready for `kubectl apply -f -`, or
//! written into the cluster (`olm_guard_live::Live::write_reports`).
//!
//! The shape follows kubewarden/kubewarden-controller,
//! `audit-scanner/internal/report/report.go` (`getReportObjectMeta`,
//! `getReportScope`, `newPolicyReportResult`, `computeProperties`) and
//! `openreport.go` (`NewOpenReport`, `NewClusterOpenReport`,
//! `newReportResult`): one report per audited object, named after its uid,
//! in its namespace (a `ClusterReport`/`ClusterPolicyReport` for a
//! cluster-scoped object), with `scope` set to the object, one result per
//! policy (`source: kubewarden`, the policy's unique name
//! `clusterwide-<name>` as a ClusterAdmissionPolicy would have it, its
//! severity and category annotations, `scored: true`, the message) and the
//! summary counts.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::ReportKind;
use super::engine::{Audit, AuditPolicy};
use crate::findings::{Finding, Outcome, SNAPSHOT_POLICY, Subject};

/// Reports are labelled as ours, not the scanner's: the scanner deletes the
/// reports labelled `app.kubernetes.io/managed-by: kubewarden` of earlier
/// runs, and must not take these for its own; a later audit finds its own
/// by this label.
pub const OWNER: (&str, &str) = ("app.kubernetes.io/managed-by", "olm-guard");

/// The label of the audit run that wrote a report, as the scanner's
/// `kubewarden.io/audit-scanner-run-uid`: a later run deletes the reports
/// of every other run.
pub const RUN_LABEL: &str = "olm-guard.io/audit-run";

/// A run's label value: unique per audit (the time in nanoseconds and
/// the process), within a label value's 63 characters.
pub fn run_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{nanos:x}-{:x}", std::process::id())
}

/// The report kinds of `kind`: (API version, namespaced kind, cluster kind).
pub fn kinds(kind: ReportKind) -> (&'static str, &'static str, &'static str) {
    match kind {
        ReportKind::Openreports => ("openreports.io/v1alpha1", "Report", "ClusterReport"),
        ReportKind::Policyreport => (
            "wgpolicyk8s.io/v1alpha2",
            "PolicyReport",
            "ClusterPolicyReport",
        ),
    }
}

/// Every report of the run `run`, in order: cluster-scoped objects' first,
/// then by namespace, kind and name; the snapshot's unreadable documents
/// last.
pub fn reports(audit: &Audit, findings: &[Finding], kind: ReportKind, run: &str) -> Vec<Value> {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut by_object: BTreeMap<(bool, &Subject), Vec<&Finding>> = BTreeMap::new();
    let mut documents: Vec<&Finding> = Vec::new();
    for finding in findings {
        match &finding.object {
            Some(object) => by_object
                .entry((!object.cluster_scoped, object))
                .or_default()
                .push(finding),
            None => documents.push(finding),
        }
    }
    let mut reports: Vec<Value> = by_object
        .into_iter()
        .map(|((_, object), results)| report(audit, Some(object), &results, kind, seconds))
        .collect();
    if !documents.is_empty() {
        reports.push(report(audit, None, &documents, kind, seconds));
    }
    for report in &mut reports {
        report["metadata"]["labels"][RUN_LABEL] = json!(run);
    }
    reports
}

/// Writes [`reports`] as a YAML stream.
pub fn write(out: &mut impl Write, reports: &[Value]) -> anyhow::Result<()> {
    for report in reports {
        writeln!(out, "---")?;
        out.write_all(serde_yaml_ng::to_string(&report)?.as_bytes())?;
    }
    Ok(())
}

fn report(
    audit: &Audit,
    object: Option<&Subject>,
    findings: &[&Finding],
    kind: ReportKind,
    seconds: u64,
) -> Value {
    let namespaced = object.is_some_and(|o| !o.cluster_scoped && !o.namespace.is_empty());
    let (api_version, namespaced_kind, cluster_kind) = kinds(kind);
    let report_kind = if namespaced {
        namespaced_kind
    } else {
        cluster_kind
    };
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(report_name(object)));
    if namespaced && let Some(object) = object {
        metadata.insert("namespace".into(), json!(object.namespace));
    }
    metadata.insert("labels".into(), json!({OWNER.0: OWNER.1}));
    // An owner reference needs the uid: the report then goes with the object.
    if let Some(object) = object.filter(|o| !o.uid.is_empty()) {
        metadata.insert(
            "ownerReferences".into(),
            json!([{
                "apiVersion": object.api_version,
                "kind": object.kind,
                "name": object.name,
                "uid": object.uid,
            }]),
        );
    }
    let mut report = Map::new();
    report.insert("apiVersion".into(), json!(api_version));
    report.insert("kind".into(), json!(report_kind));
    report.insert("metadata".into(), Value::Object(metadata));
    if let Some(object) = object {
        report.insert("scope".into(), scope(object));
    }
    let mut summary = Map::new();
    for outcome in Outcome::ALL {
        let count = findings.iter().filter(|f| f.result == outcome).count();
        summary.insert(outcome.word().into(), json!(count));
    }
    report.insert("summary".into(), Value::Object(summary));
    let results: Vec<Value> = findings
        .iter()
        .map(|finding| {
            let policy = audit
                .policies
                .iter()
                .find(|p| p.module.name == finding.policy);
            result(finding, policy, seconds)
        })
        .collect();
    report.insert("results".into(), Value::Array(results));
    Value::Object(report)
}

/// The scanner names a report after its object's uid; an object without one
/// in the snapshot gets `<kind>-<name>`, lower case, which is unique within
/// the report's namespace (or among cluster reports).
fn report_name(object: Option<&Subject>) -> String {
    let Some(object) = object else {
        return "olm-guard-snapshot-documents".into();
    };
    if !object.uid.is_empty() {
        return object.uid.clone();
    }
    let name: String = format!("{}-{}", object.kind, object.name)
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_matches(|c| c == '-' || c == '.').to_string();
    name.chars().take(253).collect()
}

/// The object as `scope` (a core/v1 ObjectReference).
fn scope(object: &Subject) -> Value {
    let mut scope = Map::new();
    scope.insert("apiVersion".into(), json!(object.api_version));
    scope.insert("kind".into(), json!(object.kind));
    if !object.namespace.is_empty() {
        scope.insert("namespace".into(), json!(object.namespace));
    }
    scope.insert("name".into(), json!(object.name));
    if !object.uid.is_empty() {
        scope.insert("uid".into(), json!(object.uid));
    }
    if !object.resource_version.is_empty() {
        scope.insert("resourceVersion".into(), json!(object.resource_version));
    }
    Value::Object(scope)
}

fn result(finding: &Finding, policy: Option<&AuditPolicy>, seconds: u64) -> Value {
    let mut result = Map::new();
    result.insert("source".into(), json!("kubewarden"));
    let unique_name = if finding.policy == SNAPSHOT_POLICY {
        format!("olm-guard-{SNAPSHOT_POLICY}")
    } else {
        format!("clusterwide-{}", finding.policy)
    };
    result.insert("policy".into(), json!(unique_name));
    // Each module is one rule, named as the module.
    result.insert("rule".into(), json!(finding.policy));
    if let Some(category) = policy.and_then(AuditPolicy::category) {
        result.insert("category".into(), json!(category));
    }
    if let Some(severity) = policy.and_then(AuditPolicy::severity) {
        result.insert("severity".into(), json!(severity));
    }
    result.insert("timestamp".into(), json!({"seconds": seconds, "nanos": 0}));
    result.insert("result".into(), json!(finding.result.word()));
    result.insert("scored".into(), json!(true));
    if !finding.message.is_empty() {
        result.insert("message".into(), json!(finding.message));
    }
    let mut properties = Map::new();
    if let Some(policy) = policy {
        let kind = if policy.module.metadata.mutating {
            "mutating"
        } else {
            "validating"
        };
        properties.insert(kind.into(), json!("true"));
        if !policy.module.metadata.context_aware_resources.is_empty() {
            properties.insert("context-aware".into(), json!("true"));
        }
        properties.insert("policy-name".into(), json!(policy.module.name));
        properties.insert(
            "background-audit".into(),
            json!(policy.module.metadata.background_audit.to_string()),
        );
    }
    if !finding.source.is_empty() {
        properties.insert("snapshot-source".into(), json!(finding.source));
    }
    result.insert("properties".into(), Value::Object(properties));
    Value::Object(result)
}
