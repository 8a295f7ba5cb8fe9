//! A cluster brought to a test's state and back: objects put in (created,
//! or replacing one of the same name, such as the `default` Namespace),
//! recorded in a [`Changes`], and undone newest first, so that one
//! kube-apiserver serves many scenarios one after the other. Since no
//! controller runs, what a controller would finish is finished here: a
//! deleted Namespace's finalizer cleared, an object's finalizers dropped
//! before it is deleted, a deleted CRD waited for until it is gone.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use super::{ClusterError, READY_WITHIN, Refusal, TestCluster, request_error};

/// What a test changed in the cluster, to undo.
#[derive(Debug, Default)]
pub struct Changes {
    entries: Vec<Change>,
}

#[derive(Debug)]
enum Change {
    /// An object that was not there: deleted on undo.
    Created(Value),
    /// An object that was there, as it was: put back on undo.
    Replaced(Value),
}

impl Changes {
    /// Records an object created by other means (a request the test sent),
    /// to delete on undo.
    pub fn created(&mut self, stored: Value) {
        self.entries.push(Change::Created(stored));
    }

    /// How many changes there are to undo.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is nothing to undo.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The label of the objects kube-apiserver creates for its default RBAC
/// (`rbac.authorization.k8s.io`'s bootstrap policy).
pub const DEFAULT_RBAC_LABEL: &str = "kubernetes.io/bootstrapping=rbac-defaults";

/// The Namespaces kube-apiserver keeps and refuses to delete.
const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

impl TestCluster {
    /// Puts `object` in the cluster: created as [`TestCluster::create`]
    /// creates it, or, when an object of its name is there already,
    /// replacing it (kept in `changes`, to put back). The stored object,
    /// or the server's refusal.
    pub fn put(
        &self,
        object: &Value,
        changes: &mut Changes,
    ) -> Result<Result<Value, Refusal>, ClusterError> {
        match self.create(object)? {
            Ok(stored) => {
                changes.entries.push(Change::Created(stored.clone()));
                Ok(Ok(stored))
            }
            Err(refusal) if refusal.reason == "AlreadyExists" => {
                let original = self.get(object)?;
                let replaced = self.replace(object)?;
                // What these changes created goes on undo; only what was
                // there before them is put back.
                let ours = changes.entries.iter().any(|change| {
                    matches!(change, Change::Created(created) if same_object(created, object))
                });
                if replaced.is_ok() && !ours {
                    changes.entries.push(Change::Replaced(original));
                }
                Ok(replaced)
            }
            Err(refusal) => Ok(Err(refusal)),
        }
    }

    /// Undoes `changes`, newest first: deletes what was created (its
    /// finalizers dropped first; a Namespace finalized, a CRD waited for
    /// until it is gone) and puts back what was replaced.
    /// When one cannot be undone, it and those older stay in `changes`, for
    /// the caller to try again (once an admission policy that refused a
    /// delete is gone, say).
    pub fn undo(&self, changes: &mut Changes) -> Result<(), ClusterError> {
        while let Some(change) = changes.entries.last() {
            match change {
                Change::Created(object) => self.remove(object)?,
                Change::Replaced(original) => {
                    if let Err(refusal) = self.replace(original)? {
                        return Err(request_error(
                            &format!("putting back {}", describe(original)),
                            refusal.message,
                        ));
                    }
                }
            }
            changes.entries.pop();
        }
        Ok(())
    }

    /// Deletes `object` so that it is gone when this returns (nothing when
    /// it is gone already).
    pub fn remove(&self, object: &Value) -> Result<(), ClusterError> {
        let api = self.api_for(object)?;
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        if api_version == "v1" && kind == "Namespace" && IMMORTAL_NAMESPACES.contains(&name) {
            return Ok(());
        }
        let present = self.answer_or_gone(self.runtime.block_on(api.get(name)))?;
        let Some(stored) = present else {
            return Ok(());
        };
        if stored["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty())
        {
            let patch = json!({"metadata": {"finalizers": null}});
            self.answer_or_gone(self.runtime.block_on(api.patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )))?;
        }
        match self
            .runtime
            .block_on(api.delete(name, &DeleteParams::default()))
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
            Err(e) => return Err(request_error(&format!("deleting {}", describe(object)), e)),
        }
        if api_version == "v1" && kind == "Namespace" {
            self.finalize_namespace(name)?;
        }
        self.wait_gone(&api, name, &describe(object))
    }

    /// Clears a deleted Namespace's `kubernetes` finalizer, as the namespace
    /// controller does once it has emptied it (`PUT .../finalize`).
    fn finalize_namespace(&self, name: &str) -> Result<(), ClusterError> {
        let url = format!("/api/v1/namespaces/{name}/finalize");
        let body = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name},
            "spec": {"finalizers": []},
        });
        let request = http::Request::put(&url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&body).map_err(|e| request_error(&url, e))?)
            .map_err(|e| request_error(&url, e))?;
        match self.runtime.block_on(self.client.request_text(request)) {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(request_error(&format!("PUT {url}"), e)),
        }
    }

    /// Waits until `name` is gone from `api` (a CRD's instances are
    /// deleted by the API server before the CRD itself).
    fn wait_gone(
        &self,
        api: &Api<DynamicObject>,
        name: &str,
        what: &str,
    ) -> Result<(), ClusterError> {
        let started = Instant::now();
        while self
            .answer_or_gone(self.runtime.block_on(api.get(name)))?
            .is_some()
        {
            if started.elapsed() > READY_WITHIN {
                return Err(request_error(
                    &format!("deleting {what}"),
                    format!("still there after {READY_WITHIN:?}"),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// An answer, `None` for a 404.
    fn answer_or_gone(
        &self,
        result: Result<DynamicObject, kube::Error>,
    ) -> Result<Option<Value>, ClusterError> {
        match result {
            Ok(object) => Ok(Some(
                serde_json::to_value(object).map_err(|e| request_error("an answer", e))?,
            )),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
            Err(e) => Err(request_error("a request", e)),
        }
    }

    /// Creates every Namespace the namespaced `objects` live in that is
    /// neither among them nor in the cluster already (a cluster holds no
    /// object outside a Namespace; a file can), recorded in `changes`. The
    /// names of those created.
    pub fn add_namespaces_of(
        &self,
        objects: &[Value],
        changes: &mut Changes,
    ) -> Result<Vec<String>, ClusterError> {
        let listed: BTreeSet<&str> = objects
            .iter()
            .filter(|o| o["apiVersion"] == "v1" && o["kind"] == "Namespace")
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect();
        let wanted: BTreeSet<&str> = objects
            .iter()
            .filter_map(|o| o["metadata"]["namespace"].as_str())
            .filter(|namespace| !namespace.is_empty() && !listed.contains(namespace))
            .collect();
        let mut added = Vec::new();
        for name in wanted {
            let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name}});
            match self.create(&namespace)? {
                Ok(stored) => {
                    changes.entries.push(Change::Created(stored));
                    added.push(name.to_string());
                }
                Err(refusal) if refusal.reason == "AlreadyExists" => {}
                Err(refusal) => {
                    return Err(request_error(
                        &format!("creating Namespace {name}"),
                        refusal.message,
                    ));
                }
            }
        }
        Ok(added)
    }

    /// Deletes the cluster's default RBAC ([`DEFAULT_RBAC_LABEL`]: the
    /// ClusterRoles, ClusterRoleBindings, Roles and RoleBindings
    /// kube-apiserver creates at start), so that the RBAC a test puts in is
    /// the cluster's whole RBAC, as a scenario's file lists it. The
    /// administrator (`system:masters`) needs none. How many were deleted.
    pub fn remove_default_rbac(&self) -> Result<usize, ClusterError> {
        let mut removed = 0;
        for kind in ["ClusterRoleBinding", "ClusterRole", "RoleBinding", "Role"] {
            let probe = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind});
            let (resource, _) = self.resource_of(&probe)?;
            let all: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
            let listed = self
                .runtime
                .block_on(all.list(&ListParams::default().labels(DEFAULT_RBAC_LABEL)))
                .map_err(|e| request_error(&format!("listing the default {kind}s"), e))?;
            for object in listed.items {
                let object =
                    serde_json::to_value(object).map_err(|e| request_error("an answer", e))?;
                let mut object = object;
                object["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
                object["kind"] = json!(kind);
                self.remove(&object)?;
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// Whether `a` and `b` name the same object: kind, namespace, name.
fn same_object(a: &Value, b: &Value) -> bool {
    let group = |o: &Value| {
        o["apiVersion"]
            .as_str()
            .and_then(|v| v.split_once('/'))
            .map_or("", |(group, _)| group)
            .to_string()
    };
    group(a) == group(b)
        && a["kind"] == b["kind"]
        && a["metadata"]["namespace"] == b["metadata"]["namespace"]
        && a["metadata"]["name"] == b["metadata"]["name"]
}

/// `Kind namespace/name`, for messages.
fn describe(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or("object");
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    match object["metadata"]["namespace"].as_str() {
        Some(namespace) => format!("{kind} {namespace}/{name}"),
        None => format!("{kind} {name}"),
    }
}
