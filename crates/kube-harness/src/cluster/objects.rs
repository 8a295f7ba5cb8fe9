//! What the tests do with the test cluster's objects: CRDs installed and
//! waited for, objects created (with their status, or as being deleted),
//! read, replaced, patched and deleted, through kube-rs.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use super::{CRDS, Changes, ClusterError, READY_WITHIN, Refusal, TestCluster, request_error};

impl TestCluster {
    /// Creates the CRDs and waits until each is Established and its group
    /// version lists it.
    pub fn install_crds(&self, crds: &[Value]) -> Result<(), ClusterError> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &crd_resource());
        for crd in crds {
            let object: DynamicObject =
                serde_json::from_value(crd.clone()).map_err(|e| request_error("a CRD", e))?;
            let name = object.metadata.name.clone().unwrap_or_default();
            self.runtime
                .block_on(api.create(&PostParams::default(), &object))
                .map_err(|e| request_error(&format!("creating CRD {name}"), e))?;
        }
        for crd in crds {
            self.wait_served(crd)?;
        }
        Ok(())
    }

    /// Waits until the CRD is Established and every version it serves lists
    /// its plural in discovery.
    fn wait_served(&self, crd: &Value) -> Result<(), ClusterError> {
        let name = crd["metadata"]["name"].as_str().unwrap_or_default();
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
        let versions: Vec<&str> = crd["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| v["served"].as_bool() == Some(true))
            .filter_map(|v| v["name"].as_str())
            .collect();
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &crd_resource());
        let started = Instant::now();
        loop {
            let stored = self
                .runtime
                .block_on(api.get(name))
                .map_err(|e| request_error(&format!("reading CRD {name}"), e))?;
            let established = stored.data["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Established" && c["status"] == "True");
            let discovered = established
                && versions.iter().all(|version| {
                    self.runtime
                        .block_on(
                            self.client
                                .list_api_group_resources(&format!("{group}/{version}")),
                        )
                        .is_ok_and(|list| list.resources.iter().any(|r| r.name == plural))
                });
            if discovered {
                return Ok(());
            }
            if started.elapsed() > READY_WITHIN {
                return Err(ClusterError::Request {
                    what: format!("waiting for CRD {name}"),
                    reason: format!("not Established and discovered after {READY_WITHIN:?}"),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The served resource of an object's kind, from discovery once per
    /// kind (a kind found stays found: the tests delete no CRD they
    /// installed).
    pub(super) fn resource_of(&self, object: &Value) -> Result<(ApiResource, bool), ClusterError> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        let key = (api_version.to_string(), kind.to_string());
        if let Some(found) = self
            .discovered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(found.clone());
        }
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
        let (resource, capabilities) = self
            .runtime
            .block_on(kube::discovery::pinned_kind(&self.client, &gvk))
            .map_err(|e| request_error(&format!("finding {api_version} {kind}"), e))?;
        let found = (
            resource,
            capabilities.scope == kube::discovery::Scope::Namespaced,
        );
        self.discovered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, found.clone());
        Ok(found)
    }

    /// Whether the server serves `kind` of `api_version` (its discovery
    /// lists it).
    pub fn serves(&self, api_version: &str, kind: &str) -> bool {
        let probe = json!({"apiVersion": api_version, "kind": kind});
        self.resource_of(&probe).is_ok()
    }

    /// The API of an object's kind, in its namespace.
    pub(super) fn api_for(&self, object: &Value) -> Result<Api<DynamicObject>, ClusterError> {
        let (resource, namespaced) = self.resource_of(object)?;
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default");
        Ok(if namespaced {
            Api::namespaced_with(self.client.clone(), namespace, &resource)
        } else {
            Api::all_with(self.client.clone(), &resource)
        })
    }

    /// Creates `object` as `kubectl create` does: the stored object, or the
    /// server's refusal. A `status` the object carries is then written
    /// through the status subresource, as the object's controller writes
    /// it (a create ignores it where the CRD has that subresource).
    /// What the server sets itself is dropped first
    /// (`without_server_fields`); an object with a `deletionTimestamp`
    /// and finalizers is then deleted, so that the server holds it as being
    /// deleted (with its own timestamp).
    pub fn create(&self, object: &Value) -> Result<Result<Value, Refusal>, ClusterError> {
        let api = self.api_for(object)?;
        let typed: DynamicObject = serde_json::from_value(without_server_fields(object))
            .map_err(|e| request_error("an object", e))?;
        // A Namespace deleted a moment ago and made again (the scenario
        // before had one of the same name) can still be terminating for
        // the NamespaceLifecycle plugin, which reads Namespaces through an
        // informer: a create in it is refused until that informer has seen
        // the new one.
        let started = Instant::now();
        let created = loop {
            let created = self.answer(
                self.runtime
                    .block_on(api.create(&PostParams::default(), &typed)),
            )?;
            match &created {
                Err(refusal)
                    if refusal.code == 403
                        && refusal.message.contains("because it is being terminated")
                        && started.elapsed() < READY_WITHIN =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => break created,
            }
        };
        let Ok(stored) = &created else {
            return Ok(created);
        };
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let mut stored = stored.clone();
        if let Some(status) = object.get("status")
            && stored.get("status") != Some(status)
        {
            stored["status"] = status.clone();
            let typed: DynamicObject =
                serde_json::from_value(stored).map_err(|e| request_error("an object", e))?;
            match self.answer(self.runtime.block_on(api.replace_status(
                name,
                &PostParams::default(),
                &typed,
            )))? {
                Ok(with_status) => stored = with_status,
                refused => return Ok(refused),
            }
        }
        let terminating = object["metadata"].get("deletionTimestamp").is_some();
        let finalizers = stored["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
        if terminating && finalizers {
            self.runtime
                .block_on(api.delete(name, &Default::default()))
                .map_err(|e| request_error(&format!("deleting {name}"), e))?;
            stored = self.get(object)?;
        }
        Ok(Ok(stored))
    }

    /// Deletes every object of `api_version`/`kind` (in every namespace),
    /// its finalizers dropped first, so that it is gone when this returns.
    pub fn delete_all(&self, api_version: &str, kind: &str) -> Result<(), ClusterError> {
        let probe = json!({"apiVersion": api_version, "kind": kind, "metadata": {}});
        let (resource, namespaced) = self.resource_of(&probe)?;
        let all: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        let objects = self
            .runtime
            .block_on(all.list(&Default::default()))
            .map_err(|e| request_error(&format!("listing {kind}"), e))?;
        for object in objects.items {
            let name = object.metadata.name.clone().unwrap_or_default();
            let api: Api<DynamicObject> = match (&object.metadata.namespace, namespaced) {
                (Some(namespace), true) => {
                    Api::namespaced_with(self.client.clone(), namespace, &resource)
                }
                _ => Api::all_with(self.client.clone(), &resource),
            };
            if object
                .metadata
                .finalizers
                .as_ref()
                .is_some_and(|f| !f.is_empty())
            {
                let patch = json!({"metadata": {"finalizers": null}});
                self.runtime
                    .block_on(api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)))
                    .map_err(|e| request_error(&format!("dropping the finalizers of {name}"), e))?;
            }
            self.runtime
                .block_on(api.delete(&name, &Default::default()))
                .map_err(|e| request_error(&format!("deleting {kind} {name}"), e))?;
        }
        Ok(())
    }

    /// Every stored object of `api_version`/`kind`, in every namespace
    /// (`apiVersion` and `kind` set on each, as kubectl prints them).
    pub fn list(&self, api_version: &str, kind: &str) -> Result<Vec<Value>, ClusterError> {
        let probe = json!({"apiVersion": api_version, "kind": kind, "metadata": {}});
        let (resource, _) = self.resource_of(&probe)?;
        let all: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        let listed = self
            .runtime
            .block_on(all.list(&Default::default()))
            .map_err(|e| request_error(&format!("listing {kind}"), e))?;
        listed
            .items
            .into_iter()
            .map(|object| {
                let mut object =
                    serde_json::to_value(object).map_err(|e| request_error("an answer", e))?;
                object["apiVersion"] = json!(api_version);
                object["kind"] = json!(kind);
                Ok(object)
            })
            .collect()
    }

    /// The stored object of `object`'s kind, namespace and name.
    pub fn get(&self, object: &Value) -> Result<Value, ClusterError> {
        let api = self.api_for(object)?;
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let stored = self
            .runtime
            .block_on(api.get(name))
            .map_err(|e| request_error(&format!("reading {name}"), e))?;
        serde_json::to_value(stored).map_err(|e| request_error("an answer", e))
    }

    /// `object` as a client creates it: without what the server sets
    /// itself (`uid`, `resourceVersion`, `creationTimestamp`, `generation`,
    /// `managedFields`, `selfLink`), which a create must not carry.
    pub fn create_of(object: &Value) -> Value {
        without_server_fields(object)
    }

    /// `object` as an update of `stored` sends it: with the stored object's
    /// server-set metadata (`uid`, `resourceVersion`, `creationTimestamp`,
    /// `generation`, and `deletionTimestamp` with its grace period for an
    /// object being deleted), as `kubectl edit` keeps them.
    pub fn update_of(object: &Value, stored: &Value) -> Value {
        let mut update = without_server_fields(object);
        if let Some(meta) = update.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("deletionTimestamp");
            meta.remove("deletionGracePeriodSeconds");
            for field in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "generation",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
            ] {
                if let Some(value) = stored["metadata"].get(field) {
                    meta.insert(field.to_string(), value.clone());
                }
            }
        }
        update
    }

    /// Replaces the stored object of `object`'s name with `object` (an
    /// UPDATE, [`TestCluster::update_of`] the stored one), as `kubectl
    /// replace` does: the stored object, or the server's refusal.
    pub fn replace(&self, object: &Value) -> Result<Result<Value, Refusal>, ClusterError> {
        let api = self.api_for(object)?;
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let stored = self.get(object)?;
        let typed: DynamicObject = serde_json::from_value(TestCluster::update_of(object, &stored))
            .map_err(|e| request_error("an object", e))?;
        self.answer(
            self.runtime
                .block_on(api.replace(name, &PostParams::default(), &typed)),
        )
    }

    /// Applies an RFC 6902 patch to a cluster-scoped object (a CRD), as
    /// `kubectl patch --type json` does.
    pub fn patch_json(
        &self,
        object: &Value,
        patch: &Value,
    ) -> Result<Result<Value, Refusal>, ClusterError> {
        let api = self.api_for(object)?;
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let patch: json_patch::Patch =
            serde_json::from_value(patch.clone()).map_err(|e| request_error("a JSON patch", e))?;
        self.answer(self.runtime.block_on(api.patch(
            name,
            &PatchParams::default(),
            &Patch::<()>::Json(patch),
        )))
    }

    /// Stores `objects` as a test's starting cluster: the Namespaces they
    /// live in that neither they nor the cluster hold
    /// ([`TestCluster::add_namespaces_of`], not recorded for undoing),
    /// then every object ([`TestCluster::create_all`], `parallel` requests
    /// at a time, in order when 1). When they hold RBAC, this returns once
    /// the API server's authorizer decides with it
    /// ([`TestCluster::wait_rbac_seen`]).
    pub fn store_all(&self, objects: &[Value], parallel: usize) -> Result<(), ClusterError> {
        self.add_namespaces_of(objects, &mut Changes::default())?;
        self.create_all(objects, parallel)?;
        if objects.iter().any(is_rbac) {
            self.wait_rbac_seen()?;
        }
        Ok(())
    }

    /// Creates many objects, `parallel` requests at a time; every one must
    /// be accepted.
    pub fn create_all(&self, objects: &[Value], parallel: usize) -> Result<(), ClusterError> {
        let requests = objects
            .iter()
            .map(|object| {
                let api = self.api_for(object)?;
                let typed: DynamicObject = serde_json::from_value(object.clone())
                    .map_err(|e| request_error("an object", e))?;
                Ok((api, typed))
            })
            .collect::<Result<Vec<_>, ClusterError>>()?;
        self.runtime.block_on(
            futures::stream::iter(requests)
                .map(|(api, typed)| async move {
                    api.create(&PostParams::default(), &typed)
                        .await
                        .map_err(|e| request_error("creating an object", e))
                })
                .buffer_unordered(parallel.max(1))
                .try_collect::<Vec<_>>(),
        )?;
        Ok(())
    }

    fn answer(
        &self,
        result: Result<DynamicObject, kube::Error>,
    ) -> Result<Result<Value, Refusal>, ClusterError> {
        match result {
            Ok(object) => Ok(Ok(
                serde_json::to_value(object).map_err(|e| request_error("an answer", e))?
            )),
            Err(kube::Error::Api(status)) => Ok(Err(Refusal {
                code: status.code,
                reason: status.reason,
                message: status.message,
            })),
            Err(e) => Err(request_error("a request", e)),
        }
    }
}

/// Whether `object` is one of the four kinds the RBAC authorizer decides
/// with.
pub fn is_rbac(object: &Value) -> bool {
    object["apiVersion"] == "rbac.authorization.k8s.io/v1"
        && matches!(
            object["kind"].as_str(),
            Some("Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding")
        )
}

/// `object` without what the server sets itself (`uid`, `resourceVersion`,
/// `creationTimestamp`, `generation`, `managedFields`), as restoring a
/// dumped object requires: the server refuses a create that carries a
/// `resourceVersion`, and an update whose `uid` is another object's.
fn without_server_fields(object: &Value) -> Value {
    let mut fresh = object.clone();
    if let Some(meta) = fresh.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
            "selfLink",
        ] {
            meta.remove(field);
        }
    }
    fresh
}

fn crd_resource() -> ApiResource {
    ApiResource {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        api_version: CRDS.into(),
        kind: "CustomResourceDefinition".into(),
        plural: "customresourcedefinitions".into(),
    }
}
