//! An audit's reports written into the cluster, as Kubewarden's audit
//! scanner writes its own (kubewarden/kubewarden-controller,
//! `internal/audit-scanner/report/openreports_store.go`,
//! `CreateOrPatchReport` and `DeleteOldReports`): each report created, or
//! its stored object of the same name overwritten; then the reports of the
//! same owner left by an earlier run (a run label other than this run's)
//! deleted, namespace by namespace, with one `deletecollection` each.
//!
//! What it needs from RBAC: `get`, `list`, `create`, `update` and
//! `deletecollection` of both kinds (what audit-scanner's ClusterRole
//! grants it, but for `patch` and `watch`, which are not used here); a
//! command asks for them first ([`Live::can_i`]).

use kube::api::{DeleteParams, ListParams, PostParams};
use kube::core::Request;
use serde_json::Value;

use crate::connect::Live;
use crate::discovery::Resource;
use crate::error::LiveError;

/// What writing the reports did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReportsWritten {
    /// Reports that were not there.
    pub created: usize,
    /// Reports of the same name overwritten.
    pub updated: usize,
    /// Reports of an earlier run deleted.
    pub deleted: usize,
}

/// The two kinds reports are written as: per namespace, and cluster-wide.
#[derive(Debug, Clone)]
pub struct ReportKinds {
    /// `Report` (or `PolicyReport`): for namespaced objects.
    pub namespaced: Resource,
    /// `ClusterReport` (or `ClusterPolicyReport`).
    pub cluster: Resource,
}

impl Live {
    /// Writes `reports` (each a report object of `kinds`, labelled with
    /// `owner` and `run`, both `key=value`), then deletes the reports
    /// labelled `owner` whose run label is not `run`'s.
    pub fn write_reports(
        &self,
        kinds: &ReportKinds,
        reports: &[Value],
        owner: &str,
        run: &str,
    ) -> Result<ReportsWritten, LiveError> {
        let mut written = ReportsWritten::default();
        for report in reports {
            let namespace = report
                .pointer("/metadata/namespace")
                .and_then(Value::as_str);
            let resource = if namespace.is_some() {
                &kinds.namespaced
            } else {
                &kinds.cluster
            };
            let name = report
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let collection = Request::new(resource.collection(namespace));
            let what = format!("writing {} {name}", resource.qualified());
            let stored =
                match self.send::<Value>(&what, || collection.get(name, &Default::default())) {
                    Ok(stored) => Some(stored),
                    Err(e) if e.code() == Some(404) => None,
                    Err(e) => return Err(e),
                };
            match stored {
                None => {
                    self.send::<Value>(&what, || {
                        collection.create(&PostParams::default(), to_vec(report)?)
                    })?;
                    written.created += 1;
                }
                Some(stored) => {
                    let mut replacement = report.clone();
                    replacement["metadata"]["resourceVersion"] =
                        stored["metadata"]["resourceVersion"].clone();
                    self.send::<Value>(&what, || {
                        collection.replace(name, &PostParams::default(), to_vec(&replacement)?)
                    })?;
                    written.updated += 1;
                }
            }
        }
        written.deleted = self.delete_other_runs(kinds, owner, run)?;
        Ok(written)
    }

    /// Deletes the reports labelled `owner` of any run but `run`: one
    /// `deletecollection` per namespace that holds some, and one of the
    /// cluster reports. How many there were.
    fn delete_other_runs(
        &self,
        kinds: &ReportKinds,
        owner: &str,
        run: &str,
    ) -> Result<usize, LiveError> {
        let (run_key, run_value) = run.split_once('=').unwrap_or((run, ""));
        let selector = format!("{owner},{run_key}!={run_value}");
        let mut deleted = 0;
        for resource in [&kinds.namespaced, &kinds.cluster] {
            let selection = crate::pages::Selection {
                label_selector: Some(selector.clone()),
                ..Default::default()
            };
            let old = self.list_selected(resource, &selection, 500, &mut |_| {})?;
            deleted += old.len();
            let mut namespaces: Vec<Option<&str>> = old
                .iter()
                .map(|report| {
                    report
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                })
                .collect();
            namespaces.sort();
            namespaces.dedup();
            for namespace in namespaces {
                let collection = Request::new(resource.collection(namespace));
                let what = format!(
                    "deleting the {} of an earlier audit{}",
                    resource.qualified(),
                    namespace.map(|n| format!(" in {n}")).unwrap_or_default()
                );
                self.send::<Value>(&what, || {
                    collection.delete_collection(
                        &DeleteParams::default(),
                        &ListParams::default().labels(&selector),
                    )
                })?;
            }
        }
        Ok(deleted)
    }
}

/// `value` as a request body.
fn to_vec(value: &Value) -> Result<Vec<u8>, kube::core::request::Error> {
    serde_json::to_vec(value).map_err(kube::core::request::Error::SerializeBody)
}
