//! The `kubernetes/*` host capabilities answered by the API server, as
//! Kubewarden's policy-server answers them
//! (kubewarden/kubewarden-controller, `crates/policy-evaluator/src/callback_handler/kubernetes.rs`
//! and `kubernetes/client.rs`, `reflector.rs`):
//!
//! - `list_resources_all`, `list_resources_by_namespace`: the whole list,
//!   read page by page and held for the life of the command, as a reflector
//!   holds it once synced; `managedFields` emptied as the reflector empties
//!   them; the answer is the kube-rs `ObjectList` policy-server serialises
//!   (`{"apiVersion", "kind": "<Kind>List", "metadata": {}, "items"}`), with
//!   Kubewarden's field masks applied.
//! - `get_resource`: one GET, kept five seconds unless `disable_cache`; a
//!   missing object is policy-server's error.
//! - `can_i`: a `SubjectAccessReview` created in `authorization.k8s.io/v1`
//!   with the module's user, groups and resource attributes; its `status`
//!   is the answer, kept five seconds unless `disable_cache`.
//!
//! What the server does not serve (a kind it has no discovery entry for;
//! SubjectAccessReviews on a server that is not kube-apiserver) is answered
//! from the snapshot given beside it, or else fails, closed, with a message
//! naming the kind and the fix.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1 as authorization;
use kube::api::{Api, DynamicObject, PostParams};
use olm_guard_core::protocol::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    SubjectAccessReviewStatus,
};
use olm_guard_core::{Capability, Cluster, ContextError, ContextErrorKind};
use olm_guard_snapshot::Snapshot;
use serde_json::{Value, json};

use crate::connect::Live;
use crate::discovery::Resource;
use crate::error::LiveError;
use crate::once::Once;
use crate::pages::{DEFAULT_PAGE_SIZE, Selection};

/// How long a get or a SubjectAccessReview is reused, as policy-server's
/// `#[cached(time = 5)]` reuses them.
const TTL: Duration = Duration::from_secs(5);

/// The API group version of SubjectAccessReviews.
const AUTHORIZATION_V1: &str = "authorization.k8s.io/v1";

type Answer = Result<Vec<u8>, ContextError>;

/// Answers kept for [`TTL`].
struct Timed<T> {
    entries: Mutex<HashMap<String, (Instant, T)>>,
}

impl<T> Default for Timed<T> {
    fn default() -> Self {
        Timed {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: Clone> Timed<T> {
    fn get_or_insert(&self, key: String, reuse: bool, make: impl FnOnce() -> T) -> T {
        if reuse {
            let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((at, answer)) = entries.get(&key)
                && at.elapsed() < TTL
            {
                return answer.clone();
            }
        }
        let answer = make();
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.insert(key, (Instant::now(), answer.clone()));
        answer
    }
}

/// A live cluster as a module's [`Cluster`], with a snapshot for what the
/// server does not serve.
pub struct LiveCluster {
    live: Arc<Live>,
    fallback: Option<Snapshot>,
    /// Every list read, as the server sent its items, by resource and
    /// selection (a reflector's store).
    stores: Once<Result<Arc<Vec<Value>>, ContextError>>,
    /// Every list answer served, by request (masks included).
    lists: Once<Answer>,
    gets: Timed<Answer>,
    reviews: Timed<Result<SubjectAccessReviewStatus, ContextError>>,
    failure: Mutex<Option<LiveError>>,
    by_server: AtomicUsize,
    by_snapshot: AtomicUsize,
}

/// How many lookups were answered, and by whom.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Answered {
    /// By the API server (its answers reused within their lifetime count
    /// each time).
    pub by_server: usize,
    /// By the snapshot, for what the server does not serve.
    pub by_snapshot: usize,
}

impl LiveCluster {
    /// The cluster behind `live`; `fallback` answers for the kinds the
    /// server does not serve (and `can_i`, by its RBAC objects, when the
    /// server serves no SubjectAccessReviews).
    pub fn new(live: Arc<Live>, fallback: Option<Snapshot>) -> LiveCluster {
        LiveCluster {
            live,
            fallback,
            stores: Once::default(),
            lists: Once::default(),
            gets: Timed::default(),
            reviews: Timed::default(),
            failure: Mutex::new(None),
            by_server: AtomicUsize::new(0),
            by_snapshot: AtomicUsize::new(0),
        }
    }

    /// How many lookups the server and the snapshot answered so far.
    pub fn answered(&self) -> Answered {
        Answered {
            by_server: self.by_server.load(Ordering::Relaxed),
            by_snapshot: self.by_snapshot.load(Ordering::Relaxed),
        }
    }

    /// Takes `items`, every object of `resource` as the server listed them
    /// moments ago (an audit's own read), as the store of its unselected
    /// list, so that the modules' lookups of it are answered without
    /// listing it again, as a synced reflector answers.
    pub fn seed(&self, resource: &Resource, items: Vec<Value>) {
        let key = store_key(resource, &Selection::default());
        // A store read already is kept: both are the server's.
        let _kept = self.stores.get_or_init(key, || Ok(Arc::new(items)));
    }

    /// Counts one lookup answered by the server (`true`) or the snapshot.
    fn count(&self, by_server: bool) {
        let counter = if by_server {
            &self.by_server
        } else {
            &self.by_snapshot
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The connection.
    pub fn live(&self) -> &Live {
        &self.live
    }

    /// The first failure that said the cluster itself could not be read
    /// (unreachable, credentials refused, forbidden, no answer): the
    /// lookups that met it failed closed, and a command must not report
    /// its results as complete.
    pub fn access_failure(&self) -> Option<LiveError> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// `error` as a module sees it, remembered when it is an access
    /// failure.
    fn failed(&self, error: LiveError, capability: Capability, target: &str) -> ContextError {
        if error.is_access_failure() {
            let mut first = self.failure.lock().unwrap_or_else(|p| p.into_inner());
            if first.is_none() {
                *first = Some(error.clone());
            }
        }
        ContextError::new(ContextErrorKind::Transport, error.to_string()).on(capability, target)
    }

    /// The served resource of `api_version`/`kind`: `Ok(None)` when the
    /// server does not serve it.
    fn served(
        &self,
        api_version: &str,
        kind: &str,
        capability: Capability,
    ) -> Result<Option<Resource>, ContextError> {
        self.live
            .resource(api_version, kind)
            .map_err(|e| self.failed(e, capability, &format!("{api_version}/{kind}")))
    }

    /// Why a kind nobody serves cannot be looked up.
    fn not_served(&self, api_version: &str, kind: &str, capability: Capability) -> ContextError {
        let group = api_version.split_once('/').map_or("", |(group, _)| group);
        let name = if group.is_empty() {
            kind.to_lowercase()
        } else {
            format!("{}.{group}", kind.to_lowercase())
        };
        ContextError::new(
            ContextErrorKind::Unavailable,
            format!(
                "the API server {} does not serve {api_version} {kind}, and no --cluster file \
                 was given for it; pass --cluster FILE with them (kubectl get {name} -A -o yaml, \
                 from a cluster that serves them)",
                self.live.server()
            ),
        )
        .on(capability, format!("{api_version}/{kind}"))
    }

    /// A list's answer: the selected objects, masked, as an `ObjectList`.
    fn list(
        &self,
        resource: &Resource,
        api_version: &str,
        selection: &Selection,
        masks: &[String],
        capability: Capability,
    ) -> Answer {
        let target = format!("{api_version}/{}", resource.kind);
        let items = self
            .stores
            .get_or_init(store_key(resource, selection), || {
                self.live
                    .list_selected(resource, selection, DEFAULT_PAGE_SIZE, &mut |_| {})
                    .map(Arc::new)
                    .map_err(|e| self.failed(e, capability, &target))
            })?;
        let items: Vec<Value> = items
            .iter()
            .map(|object| served_object(object, masks))
            .collect();
        let list = json!({
            "apiVersion": api_version,
            "kind": format!("{}List", resource.kind),
            "metadata": {},
            "items": items,
        });
        serde_json::to_vec(&list).map_err(|e| encode_error(e, capability, &target))
    }

    /// `get_resource` from the server.
    fn get_served(&self, resource: &Resource, r: &GetResourceRequest) -> Answer {
        let target = format!("{}/{} \"{}\"", r.api_version, r.kind, r.name);
        let api_resource = resource.api_resource();
        let api: Api<DynamicObject> = match (resource.namespaced, r.namespace.as_deref()) {
            (true, Some(namespace)) => {
                Api::namespaced_with(self.live.client.clone(), namespace, &api_resource)
            }
            (true, None) => {
                return Err(ContextError::new(
                    ContextErrorKind::InvalidRequest,
                    format!(
                        "Resource {}/{} is namespaced, but no namespace was provided",
                        r.api_version, r.kind
                    ),
                )
                .on(Capability::Get, target));
            }
            (false, _) => Api::all_with(self.live.client.clone(), &api_resource),
        };
        let what = format!("getting {} {}", resource.qualified(), r.name);
        let object = self
            .live
            .call(&what, api.get_opt(&r.name))
            .map_err(|e| self.failed(e, Capability::Get, &target))?;
        let Some(object) = object else {
            // policy-server's own words (`client.rs`, `get_resource`).
            return Err(ContextError::new(
                ContextErrorKind::NotFound,
                format!(
                    "Cannot find {}/{} named '{}' inside of namespace '{:?}'",
                    r.api_version, r.kind, r.name, r.namespace
                ),
            )
            .on(Capability::Get, target));
        };
        let masks = r.field_masks.as_deref().unwrap_or(&[]);
        serde_json::to_value(object)
            .map(|object| served_object(&object, masks))
            .and_then(|object| serde_json::to_vec(&object))
            .map_err(|e| encode_error(e, Capability::Get, &target))
    }

    /// `can_i` as a SubjectAccessReview.
    fn review(&self, r: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
        let attributes = &r.subject_access_review.resource_attributes;
        let target = format!(
            "{} {} for {}",
            attributes.verb, attributes.resource, r.subject_access_review.user
        );
        let review = authorization::SubjectAccessReview {
            spec: authorization::SubjectAccessReviewSpec {
                user: Some(r.subject_access_review.user.clone()),
                groups: r.subject_access_review.groups.clone(),
                resource_attributes: Some(authorization::ResourceAttributes {
                    group: attributes.group.clone(),
                    name: attributes.name.clone(),
                    namespace: attributes.namespace.clone(),
                    resource: Some(attributes.resource.clone()),
                    subresource: attributes.subresource.clone(),
                    verb: Some(attributes.verb.clone()),
                    version: attributes.version.clone(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let api: Api<authorization::SubjectAccessReview> = Api::all(self.live.client.clone());
        let created = self
            .live
            .call(
                "creating a SubjectAccessReview",
                api.create(&PostParams::default(), &review),
            )
            .map_err(|e| self.failed(e, Capability::CanI, &target))?;
        let status = created.status.ok_or_else(|| {
            ContextError::new(
                ContextErrorKind::Decode,
                "SubjectAccessReview did not return a response",
            )
            .on(Capability::CanI, target.clone())
        })?;
        Ok(SubjectAccessReviewStatus {
            allowed: status.allowed,
            denied: status.denied,
            reason: status.reason,
            evaluation_error: status.evaluation_error,
        })
    }
}

/// An object as policy-server serves it: `managedFields` emptied (its
/// reflector's `managed_fields_mut().clear()`, which kube-rs then writes as
/// `[]`), the field masks applied.
fn served_object(object: &Value, masks: &[String]) -> Value {
    let mut object = if masks.is_empty() {
        object.clone()
    } else {
        olm_guard_snapshot::mask(object, masks)
    };
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("managedFields".into(), Value::Array(Vec::new()));
    }
    object
}

/// The store key of a list: the resource and the selection.
fn store_key(resource: &Resource, selection: &Selection) -> String {
    format!(
        "{}|{}|{:?}|{:?}|{:?}",
        resource.api_version,
        resource.kind,
        selection.namespace,
        selection.label_selector,
        selection.field_selector
    )
}

fn encode_error(e: serde_json::Error, capability: Capability, target: &str) -> ContextError {
    ContextError::new(ContextErrorKind::Decode, e.to_string()).on(capability, target)
}

/// The cache key of a request: its JSON, all of it.
fn key<T: serde::Serialize>(request: &T) -> String {
    serde_json::to_string(request).unwrap_or_default()
}

impl Cluster for LiveCluster {
    fn list_all(&self, r: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
        let capability = Capability::ListAll;
        let Some(resource) = self.served(&r.api_version, &r.kind, capability)? else {
            return match &self.fallback {
                Some(snapshot) => {
                    self.count(false);
                    snapshot.list_all(r)
                }
                None => Err(self.not_served(&r.api_version, &r.kind, capability)),
            };
        };
        self.count(true);
        self.lists.get_or_init(format!("all {}", key(r)), || {
            let selection = Selection {
                namespace: None,
                label_selector: r.label_selector.clone(),
                field_selector: r.field_selector.clone(),
            };
            let masks = r.field_masks.as_deref().unwrap_or(&[]);
            self.list(&resource, &r.api_version, &selection, masks, capability)
        })
    }

    fn list_by_namespace(
        &self,
        r: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, ContextError> {
        let capability = Capability::ListByNamespace;
        let Some(resource) = self.served(&r.api_version, &r.kind, capability)? else {
            return match &self.fallback {
                Some(snapshot) => {
                    self.count(false);
                    snapshot.list_by_namespace(r)
                }
                None => Err(self.not_served(&r.api_version, &r.kind, capability)),
            };
        };
        self.count(true);
        if !resource.namespaced {
            // policy-server's own words (`client.rs`).
            return Err(ContextError::new(
                ContextErrorKind::InvalidRequest,
                format!(
                    "resource {}/{} is cluster wide. Cannot search for it inside of a namespace",
                    r.api_version, r.kind
                ),
            )
            .on(capability, format!("{}/{}", r.api_version, r.kind)));
        }
        self.lists.get_or_init(format!("namespace {}", key(r)), || {
            let selection = Selection {
                namespace: Some(r.namespace.clone()),
                label_selector: r.label_selector.clone(),
                field_selector: r.field_selector.clone(),
            };
            let masks = r.field_masks.as_deref().unwrap_or(&[]);
            self.list(&resource, &r.api_version, &selection, masks, capability)
        })
    }

    fn get(&self, r: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
        let Some(resource) = self.served(&r.api_version, &r.kind, Capability::Get)? else {
            return match &self.fallback {
                Some(snapshot) => {
                    self.count(false);
                    snapshot.get(r)
                }
                None => Err(self.not_served(&r.api_version, &r.kind, Capability::Get)),
            };
        };
        self.count(true);
        self.gets
            .get_or_insert(key(r), !r.disable_cache, || self.get_served(&resource, r))
    }

    fn can_i(&self, r: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
        let target = "authorization.k8s.io/v1 SubjectAccessReview";
        let served = self
            .served(AUTHORIZATION_V1, "SubjectAccessReview", Capability::CanI)?
            .is_some();
        if !served {
            return match &self.fallback {
                Some(snapshot) => {
                    self.count(false);
                    snapshot.can_i(r)
                }
                None => Err(ContextError::new(
                    ContextErrorKind::Unavailable,
                    format!(
                        "the API server {} does not serve {target}s (only kube-apiserver does), so \
                         it cannot answer can_i; pass --cluster FILE with the cluster's RBAC \
                         (ClusterRoles, ClusterRoleBindings, Roles, RoleBindings) to answer it \
                         from them",
                        self.live.server()
                    ),
                )
                .on(Capability::CanI, target)),
            };
        }
        self.count(true);
        self.reviews
            .get_or_insert(key(r), !r.disable_cache, || self.review(r))
    }
}
