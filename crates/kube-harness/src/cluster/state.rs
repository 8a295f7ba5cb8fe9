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

    /// [`TestCluster::put`] of every object of `objects` at once, a few
    /// requests in flight at a time: objects nothing orders (none a
    /// Namespace or CRD another of them needs). Each answer in the order of
    /// `objects`; what they changed is added to `changes` in that order.
    pub fn put_at_once(&self, objects: &[Value], changes: &mut Changes) -> Vec<PutAnswer> {
        if objects.is_empty() {
            return Vec::new();
        }
        let per_thread = objects.len().div_ceil(DELETES_AT_ONCE);
        let done: Vec<(Changes, Vec<PutAnswer>)> = std::thread::scope(|scope| {
            let putting: Vec<_> = objects
                .chunks(per_thread)
                .map(|chunk| {
                    scope.spawn(move || {
                        let mut changed = Changes::default();
                        let answers = chunk
                            .iter()
                            .map(|object| self.put(object, &mut changed))
                            .collect::<Vec<_>>();
                        (changed, answers)
                    })
                })
                .collect();
            putting
                .into_iter()
                .map(|thread| {
                    thread.join().unwrap_or_else(|_| {
                        (
                            Changes::default(),
                            vec![Err(request_error("putting", "a putting thread panicked"))],
                        )
                    })
                })
                .collect()
        });
        let mut answers = Vec::with_capacity(objects.len());
        for (changed, put) in done {
            changes.entries.extend(changed.entries);
            answers.extend(put);
        }
        answers
    }

    /// Undoes `changes`, newest first: deletes what was created (its
    /// finalizers dropped first; a Namespace finalized, a CRD waited for
    /// until it is gone; a run of objects that hold no others deleted at
    /// once) and puts back what was replaced.
    /// When one cannot be undone, it and those older stay in `changes`, for
    /// the caller to try again (once an admission policy that refused a
    /// delete is gone, say).
    pub fn undo(&self, changes: &mut Changes) -> Result<(), ClusterError> {
        while !changes.entries.is_empty() {
            self.remove_newest_at_once(changes)?;
            let Some(change) = changes.entries.last() else {
                break;
            };
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

    /// Deletes the newest created objects that hold no others (not a
    /// Namespace, not a CRD) at once, a few requests in flight at a time:
    /// nothing orders their deletion. Those deleted leave `changes`; one
    /// that cannot be deleted stays, with its error.
    fn remove_newest_at_once(&self, changes: &mut Changes) -> Result<(), ClusterError> {
        let run = changes
            .entries
            .iter()
            .rev()
            .take_while(|change| matches!(change, Change::Created(object) if !holds_others(object)))
            .count();
        if run < 2 {
            return Ok(());
        }
        let from = changes.entries.len() - run;
        let results: Vec<Result<(), ClusterError>> = {
            let objects: Vec<&Value> = changes.entries[from..]
                .iter()
                .filter_map(|change| match change {
                    Change::Created(object) => Some(object),
                    Change::Replaced(_) => None,
                })
                .collect();
            let per_thread = objects.len().div_ceil(DELETES_AT_ONCE);
            std::thread::scope(|scope| {
                let deleting: Vec<_> = objects
                    .chunks(per_thread)
                    .map(|chunk| {
                        scope.spawn(move || {
                            chunk
                                .iter()
                                .map(|object| self.remove(object))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                deleting
                    .into_iter()
                    .flat_map(|thread| {
                        thread.join().unwrap_or_else(|_| {
                            vec![Err(request_error("deleting", "a deleting thread panicked"))]
                        })
                    })
                    .collect()
            })
        };
        let mut first_error = None;
        let mut kept = Vec::new();
        for (change, result) in changes.entries.drain(from..).zip(results) {
            if let Err(e) = result {
                first_error.get_or_insert(e);
                kept.push(change);
            }
        }
        changes.entries.extend(kept);
        first_error.map_or(Ok(()), Err)
    }

    /// Deletes `object` so that it is gone when this returns (nothing when
    /// it is gone already).
    pub fn remove(&self, object: &Value) -> Result<(), ClusterError> {
        let api = self.api_for(object)?;
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let namespace = api_version == "v1" && kind == "Namespace";
        if namespace && IMMORTAL_NAMESPACES.contains(&name) {
            return Ok(());
        }
        // Gone at once (the server answers a Status, or the object as it
        // was) unless something holds it: its finalizers, which no
        // controller here would clear, or a Namespace's `kubernetes`
        // finalizer.
        let answer = match self
            .runtime
            .block_on(api.delete(name, &DeleteParams::default()))
        {
            Ok(answer) => answer,
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
            Err(e) => return Err(request_error(&format!("deleting {}", describe(object)), e)),
        };
        let Some(held) = answer.left() else {
            return Ok(());
        };
        let finalizers = held
            .metadata
            .finalizers
            .as_ref()
            .is_some_and(|f| !f.is_empty());
        if !namespace && !finalizers && held.metadata.deletion_timestamp.is_none() {
            return Ok(());
        }
        if finalizers {
            let patch = json!({"metadata": {"finalizers": null}});
            self.answer_or_gone(self.runtime.block_on(api.patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )))?;
        }
        if namespace {
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
        self.remove_default_rbac_keeping(&[])
            .map(|(removed, _)| removed)
    }

    /// [`TestCluster::remove_default_rbac`], but the objects named `keep`
    /// (of any of the four kinds) stay: how many were deleted, and those
    /// kept, as stored. A program the tests start under an identity of its
    /// own needs `system:discovery` to find the kinds it reads, as on every
    /// cluster.
    pub fn remove_default_rbac_keeping(
        &self,
        keep: &[&str],
    ) -> Result<(usize, Vec<Value>), ClusterError> {
        let mut kept = Vec::new();
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
                if object["metadata"]["name"]
                    .as_str()
                    .is_some_and(|name| keep.contains(&name))
                {
                    kept.push(object);
                    continue;
                }
                self.remove(&object)?;
                removed += 1;
            }
        }
        Ok((removed, kept))
    }
}

/// [`TestCluster::put`]'s answer: the stored object or the server's
/// refusal, or why the request could not be made.
pub type PutAnswer = Result<Result<Value, Refusal>, ClusterError>;

/// How many writes (deletes, puts) are in flight at once when nothing
/// orders them.
const DELETES_AT_ONCE: usize = 8;

/// Whether deleting `object` deletes others with it, or waits for them: a
/// Namespace (its objects), a CRD (its custom resources).
fn holds_others(object: &Value) -> bool {
    matches!(
        object["kind"].as_str(),
        Some("Namespace" | "CustomResourceDefinition")
    )
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
