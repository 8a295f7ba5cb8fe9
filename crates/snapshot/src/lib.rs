//! A cluster snapshot: Kubernetes objects read from YAML or JSON files (as
//! `kubectl get -o yaml` writes them), answering the `kubernetes/*` host
//! capabilities the way Kubewarden's policy-server answers them from a live
//! cluster. The host serves modules from it; rule unit tests and the native
//! speed baseline use it directly as their [`Cluster`].
//!
//! A snapshot never loses an object silently: a document or object it
//! cannot use is a [`SnapshotError`] naming the source, the document, the
//! object and the reason, or, when loading with [`LoadOptions::LENIENT`], a
//! [`SnapshotWarning`] saying what was left out.

mod answers;
mod discovery;
mod error;
mod load;
mod masks;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use olm_guard_core::protocol::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    SubjectAccessReviewStatus,
};
use olm_guard_core::selector::{FieldSelector, Selector};
use olm_guard_core::{Cluster, ContextError, ContextErrorKind, ObjectMeta, UserInfo, decode};
use olm_guard_rbac::{ClusterRole, RBAC_API_VERSION, RBAC_GROUP, RbacStore, Role, RoleBinding};
use serde::Serialize;
use serde_json::Value;

pub use discovery::{ApiResource, ApiResources, DiscoveryError};
pub use error::{LoadOptions, Location, ObjectRef, Problem, SnapshotError, SnapshotWarning};
pub use load::strip_server_noise;
pub use masks::mask;

fn invalid(message: String) -> ContextError {
    ContextError::new(ContextErrorKind::InvalidRequest, message)
}

fn encode_error(e: serde_json::Error) -> ContextError {
    ContextError::new(ContextErrorKind::Decode, e.to_string())
}

/// A `List` as the host answers it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListOut<'a> {
    api_version: &'a str,
    kind: String,
    metadata: Empty,
    items: Vec<Cow<'a, Value>>,
}

#[derive(Serialize)]
struct Empty {}

/// The RBAC objects of a snapshot, read once when they are added.
#[derive(Default)]
struct RbacObjects {
    cluster_roles: Vec<ClusterRole>,
    roles: Vec<Role>,
    cluster_role_bindings: Vec<RoleBinding>,
    role_bindings: Vec<RoleBinding>,
}

/// One RBAC object, typed.
enum Rbac {
    ClusterRole(ClusterRole),
    Role(Role),
    ClusterRoleBinding(RoleBinding),
    RoleBinding(RoleBinding),
}

/// An object that passed the checks, ready to be added.
struct Checked {
    at: Location,
    object_ref: ObjectRef,
    object: Value,
    rbac: Option<Rbac>,
}

/// Kubernetes objects, answering the `kubernetes/*` host capabilities: lists
/// (label and field selectors, field masks), gets, and `can_i` evaluated over
/// the snapshot's own RBAC objects.
///
/// Objects are kept grouped by (apiVersion, kind), in the order they were
/// read. Each object may appear once (same apiVersion, kind, namespace and
/// name); RBAC objects must be readable, since a RoleBinding left out would
/// change `can_i` answers. Which kinds are cluster-scoped comes from an
/// [`ApiResources`] table, the built-in one unless another is given.
///
/// ```
/// use olm_guard_core::protocol::{ListAllResourcesRequest, ResourceAttributes};
/// use olm_guard_core::{ClusterExt, UserInfo};
/// use olm_guard_snapshot::{LoadOptions, Problem, Snapshot};
/// use serde_json::Value;
///
/// let mut snapshot = Snapshot::new();
/// let warnings = snapshot
///     .add_source(
///         "cluster.yaml",
///         r#"
/// apiVersion: v1
/// kind: ConfigMap
/// metadata: {name: settings, namespace: team-a, labels: {app: web}}
/// ---
/// apiVersion: rbac.authorization.k8s.io/v1
/// kind: Role
/// metadata: {name: read-config, namespace: team-a}
/// rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
/// ---
/// apiVersion: rbac.authorization.k8s.io/v1
/// kind: RoleBinding
/// metadata: {name: alice-reads, namespace: team-a}
/// subjects: [{kind: User, name: alice}]
/// roleRef: {kind: Role, name: read-config}
/// "#,
///         LoadOptions::STRICT,
///     )
///     .unwrap();
/// assert!(warnings.is_empty());
///
/// let web: Vec<Value> = snapshot
///     .list_all_as(&ListAllResourcesRequest::new("v1", "ConfigMap").label_selector("app=web"))
///     .unwrap();
/// assert_eq!(web.len(), 1);
///
/// let alice = UserInfo { username: "alice".into(), ..Default::default() };
/// let get = ResourceAttributes::new("get", "", "configmaps").namespace("team-a");
/// assert!(snapshot.authorized(&alice, get).unwrap());
///
/// // A binding the API server would refuse is an error naming it, not a
/// // binding that silently grants nothing.
/// let broken = "apiVersion: rbac.authorization.k8s.io/v1\n\
///               kind: RoleBinding\n\
///               metadata: {name: bob-reads, namespace: team-a}\n\
///               subjects: bob\n";
/// let err = snapshot.add_source("extra.yaml", broken, LoadOptions::STRICT).unwrap_err();
/// assert!(matches!(err.problem, Problem::WrongRbacField { .. }));
/// assert!(err.to_string().starts_with(
///     "extra.yaml: document 1: rbac.authorization.k8s.io/v1 RoleBinding team-a/bob-reads: \
///      field subjects has the wrong type"
/// ));
/// ```
#[derive(Default)]
pub struct Snapshot {
    objects: HashMap<(String, String), Vec<Value>>,
    /// Where each named object was read, to report duplicates.
    read_at: HashMap<ObjectRef, Location>,
    rbac_objects: RbacObjects,
    rbac: OnceLock<RbacStore>,
    api_resources: ApiResources,
    /// Every answer served so far, serialised once ([`answers`]); cleared
    /// whenever the snapshot changes.
    answers: answers::Answers,
}

impl Snapshot {
    /// An empty snapshot with the built-in [`ApiResources`] table.
    pub fn new() -> Snapshot {
        Snapshot::default()
    }

    /// Multi-document YAML (or JSON); a document may be a `List`. Strict: the
    /// first problem is the error. Use [`Snapshot::add_source`] to name the
    /// source in messages or to load leniently.
    pub fn from_yaml(text: &str) -> Result<Snapshot, SnapshotError> {
        let mut snapshot = Snapshot::new();
        snapshot.add_yaml(text)?;
        Ok(snapshot)
    }

    /// Objects built by code, e.g. in tests and benchmarks.
    ///
    /// It returns the snapshot itself rather than a `Result` because its
    /// callers build the objects: a bad one is a bug in the caller, not input
    /// to report. [`Snapshot::try_from_objects`] returns the error instead.
    ///
    /// # Panics
    ///
    /// On an object [`Snapshot::try_from_objects`] refuses (no apiVersion or
    /// kind, an unreadable RBAC object, a duplicate), with its message.
    #[track_caller]
    pub fn from_objects(objects: Vec<Value>) -> Snapshot {
        match Snapshot::try_from_objects(objects) {
            Ok(snapshot) => snapshot,
            Err(e) => panic!("Snapshot::from_objects: {e}"),
        }
    }

    /// Objects built by code; the error locates the object by its index
    /// (`items[3]: ...`).
    pub fn try_from_objects(objects: Vec<Value>) -> Result<Snapshot, SnapshotError> {
        let mut snapshot = Snapshot::new();
        snapshot.add_all(
            objects.into_iter().enumerate().map(|(item, object)| {
                let at = Location {
                    item: Some(item),
                    ..Location::default()
                };
                load::object_at(at, object)
            }),
            LoadOptions::STRICT,
        )?;
        Ok(snapshot)
    }

    /// Adds the objects of a multi-document YAML, strictly; messages carry
    /// no source name (the caller adds it). Nothing is added on an error.
    pub fn add_yaml(&mut self, text: &str) -> Result<(), SnapshotError> {
        self.add_source("", text, LoadOptions::STRICT).map(drop)
    }

    /// Adds the objects of a multi-document YAML (or JSON; a document may be
    /// a `List`) read from `source`, the label messages name it by (usually
    /// the file's path).
    ///
    /// Strict (the default options): the first problem is the error, and
    /// nothing of the source is added. Lenient: every problem is returned as
    /// a warning, in order, and what can be used is added: a document that is
    /// not an object, or an object without apiVersion/kind, is skipped; an
    /// RBAC object the API server would refuse is listed but grants nothing;
    /// of two objects with the same identity the first is kept; after
    /// invalid YAML the rest of the source is skipped.
    pub fn add_source(
        &mut self,
        source: &str,
        text: &str,
        options: LoadOptions,
    ) -> Result<Vec<SnapshotWarning>, SnapshotError> {
        self.add_all(load::objects_from_yaml(source, text), options)
    }

    /// Reads the objects of a multi-document YAML (or JSON) from `source`
    /// as [`Snapshot::add_source`] does (lists unpacked, typed list items
    /// given their type), without adding them anywhere: for front ends that
    /// evaluate the objects of a file (`olm-guard run --object`). Each
    /// object comes with where it was read; each problem names it.
    pub fn read_objects(source: &str, text: &str) -> Vec<Result<(Location, Value), SnapshotError>> {
        load::objects_from_yaml(source, text)
    }

    /// Adds objects read elsewhere, each with where it was read (a live
    /// cluster's lists, `https://host:6443`; a file's objects chosen by
    /// kind from [`Snapshot::read_objects`]), checked and reported as
    /// [`Snapshot::add_source`] checks and reports a file's.
    pub fn add_located(
        &mut self,
        objects: impl IntoIterator<Item = (Location, Value)>,
        options: LoadOptions,
    ) -> Result<Vec<SnapshotWarning>, SnapshotError> {
        self.add_all(
            objects
                .into_iter()
                .map(|(at, object)| load::object_at(at, object)),
            options,
        )
    }

    /// Adds one object, strictly: it must carry `apiVersion` and `kind`, be
    /// new to the snapshot and, if it is an RBAC object, be readable.
    pub fn add(&mut self, object: Value) -> Result<(), SnapshotError> {
        self.add_all([Ok((Location::default(), object))], LoadOptions::STRICT)
            .map(drop)
    }

    /// Replaces the table that says which kinds are cluster-scoped.
    pub fn set_api_resources(&mut self, table: ApiResources) {
        self.answers.clear();
        self.api_resources = table;
    }

    /// Layers `table` (e.g. a cluster's `kubectl api-resources -o wide`,
    /// read by [`ApiResources::parse`]) over the current one: its entries
    /// win, the current ones answer for kinds it does not list.
    pub fn add_api_resources(&mut self, table: ApiResources) {
        self.answers.clear();
        self.api_resources.extend(table);
    }

    /// The table that says which kinds are cluster-scoped.
    pub fn api_resources(&self) -> &ApiResources {
        &self.api_resources
    }

    /// Every object, grouped by type (apiVersion and kind, in no particular
    /// order) and in the order read within a type. `olm-guard audit` walks
    /// them to evaluate each one as the audit scanner evaluates stored
    /// objects.
    pub fn objects(&self) -> impl Iterator<Item = &Value> {
        self.objects.values().flatten()
    }

    /// Where the named object `object_ref` was read (source, document,
    /// `items` index), to point a report at the file; `None` for objects
    /// without a name or not in the snapshot.
    pub fn location(&self, object_ref: &ObjectRef) -> Option<&Location> {
        self.read_at.get(object_ref)
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.objects.values().map(Vec::len).sum()
    }

    /// Whether the snapshot holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The snapshot's RBAC objects, indexed once.
    pub fn rbac(&self) -> &RbacStore {
        self.rbac.get_or_init(|| {
            let objects = &self.rbac_objects;
            RbacStore::new(
                objects.cluster_roles.clone(),
                objects.roles.clone(),
                objects.cluster_role_bindings.clone(),
                objects.role_bindings.clone(),
            )
        })
    }

    /// Checks every object first and adds them only if the load succeeds, so
    /// a failed strict load leaves the snapshot as it was.
    fn add_all(
        &mut self,
        read: impl IntoIterator<Item = Result<(Location, Value), SnapshotError>>,
        options: LoadOptions,
    ) -> Result<Vec<SnapshotWarning>, SnapshotError> {
        let mut warnings = Vec::new();
        let mut staged: Vec<Checked> = Vec::new();
        let mut staged_at: HashMap<ObjectRef, Location> = HashMap::new();
        for item in read {
            let checked = item.and_then(|(at, object)| self.check(at, object, &staged_at));
            let mut checked = match checked {
                Ok(checked) => checked,
                Err(error) if options.lenient => {
                    warnings.push(SnapshotWarning { error });
                    continue;
                }
                Err(error) => return Err(error),
            };
            match read_rbac(&checked.object_ref, &checked.object) {
                Ok(rbac) => checked.rbac = rbac,
                Err(problem) => {
                    let error = SnapshotError {
                        at: checked.at.clone(),
                        problem,
                    };
                    if !options.lenient {
                        return Err(error);
                    }
                    warnings.push(SnapshotWarning { error });
                }
            }
            if !checked.object_ref.name.is_empty() {
                staged_at.insert(checked.object_ref.clone(), checked.at.clone());
            }
            staged.push(checked);
        }
        for checked in staged {
            self.commit(checked);
        }
        Ok(warnings)
    }

    /// The object's type and identity, unless it has no type or was read
    /// already (in the snapshot or earlier in the same load).
    fn check(
        &self,
        at: Location,
        mut object: Value,
        staged_at: &HashMap<ObjectRef, Location>,
    ) -> Result<Checked, SnapshotError> {
        let (api_version, kind) = match load::type_of(&object) {
            Ok(type_of) => type_of,
            Err(problem) => return Err(SnapshotError { at, problem }),
        };
        let meta = ObjectMeta::of(&object);
        let object_ref = ObjectRef {
            api_version,
            kind,
            namespace: meta.namespace,
            name: meta.name,
        };
        // Unnamed objects (generateName only) cannot be told apart.
        if !object_ref.name.is_empty() {
            let first = self
                .read_at
                .get(&object_ref)
                .or_else(|| staged_at.get(&object_ref));
            if let Some(first) = first {
                return Err(SnapshotError {
                    at,
                    problem: Problem::Duplicate {
                        object: Box::new(object_ref),
                        first: Box::new(first.clone()),
                    },
                });
            }
        }
        load::strip_server_noise(&mut object);
        Ok(Checked {
            at,
            object_ref,
            object,
            rbac: None,
        })
    }

    fn commit(&mut self, checked: Checked) {
        let Checked {
            at,
            object_ref,
            object,
            rbac,
        } = checked;
        self.answers.clear();
        if let Some(rbac) = rbac {
            let objects = &mut self.rbac_objects;
            match rbac {
                Rbac::ClusterRole(role) => objects.cluster_roles.push(role),
                Rbac::Role(role) => objects.roles.push(role),
                Rbac::ClusterRoleBinding(binding) => objects.cluster_role_bindings.push(binding),
                Rbac::RoleBinding(binding) => objects.role_bindings.push(binding),
            }
            self.rbac = OnceLock::new();
        }
        let key = (object_ref.api_version.clone(), object_ref.kind.clone());
        if !object_ref.name.is_empty() {
            self.read_at.insert(object_ref, at);
        }
        self.objects.entry(key).or_default().push(object);
    }

    fn of_type(&self, api_version: &str, kind: &str) -> &[Value] {
        self.objects
            .get(&(api_version.to_string(), kind.to_string()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    fn select(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
        field_masks: Option<&[String]>,
    ) -> Result<Vec<u8>, ContextError> {
        let labels = Selector::parse(label_selector.unwrap_or(""))
            .map_err(|e| invalid(format!("invalid label selector: {e}")))?;
        let fields = FieldSelector::parse(field_selector.unwrap_or(""))
            .map_err(|e| invalid(format!("invalid field selector: {e}")))?;
        let filtering = namespace.is_some() || !labels.is_everything() || !fields.is_empty();
        let masks = field_masks.unwrap_or(&[]);
        // Borrow unmasked objects: large lists are served on every request.
        let items: Vec<Cow<'_, Value>> = self
            .of_type(api_version, kind)
            .iter()
            .filter(|object| {
                if !filtering {
                    return true;
                }
                let meta = ObjectMeta::of(object);
                namespace.is_none_or(|ns| meta.namespace == ns)
                    && labels.matches(&meta.labels)
                    && fields.matches(&meta)
            })
            .map(|object| match masks {
                [] => Cow::Borrowed(object),
                _ => Cow::Owned(masks::mask(object, masks)),
            })
            .collect();
        let list = ListOut {
            api_version,
            kind: format!("{kind}List"),
            metadata: Empty {},
            items,
        };
        serde_json::to_vec(&list).map_err(encode_error)
    }

    /// The object `r` names, masked and serialised, or Kubewarden's
    /// not-found error.
    fn find(&self, r: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
        let namespace = r.namespace.as_deref().unwrap_or("");
        self.of_type(&r.api_version, &r.kind)
            .iter()
            .find(|object| {
                let meta = ObjectMeta::of(object);
                meta.name == r.name && meta.namespace == namespace
            })
            .map(|object| masks::mask(object, r.field_masks.as_deref().unwrap_or(&[])))
            .ok_or_else(|| {
                // Kubewarden's own wording, so messages match a real cluster.
                ContextError::new(
                    ContextErrorKind::NotFound,
                    format!(
                        "Cannot find {}/{} named '{}' inside of namespace '{:?}'",
                        r.api_version, r.kind, r.name, r.namespace
                    ),
                )
            })
            .and_then(|object| serde_json::to_vec(&object).map_err(encode_error))
    }
}

/// The typed RBAC object, for the four RBAC kinds; `None` for other kinds.
/// An RBAC object the API server would refuse, or one in a version it no
/// longer serves, is the problem instead.
fn read_rbac(object_ref: &ObjectRef, object: &Value) -> Result<Option<Rbac>, Problem> {
    let in_rbac_group = object_ref
        .api_version
        .strip_prefix(RBAC_GROUP)
        .is_some_and(|rest| rest.starts_with('/'));
    let kind = object_ref.kind.as_str();
    if !in_rbac_group
        || !matches!(
            kind,
            "ClusterRole" | "Role" | "ClusterRoleBinding" | "RoleBinding"
        )
    {
        return Ok(None);
    }
    if object_ref.api_version != RBAC_API_VERSION {
        return Err(Problem::UnservedRbacVersion {
            object: Box::new(object_ref.clone()),
        });
    }
    let wrong_field = |error| Problem::WrongRbacField {
        object: Box::new(object_ref.clone()),
        error: Box::new(error),
    };
    Ok(Some(match kind {
        "ClusterRole" => Rbac::ClusterRole(decode::from_value(object).map_err(wrong_field)?),
        "Role" => Rbac::Role(decode::from_value(object).map_err(wrong_field)?),
        "ClusterRoleBinding" => {
            Rbac::ClusterRoleBinding(decode::from_value(object).map_err(wrong_field)?)
        }
        _ => Rbac::RoleBinding(decode::from_value(object).map_err(wrong_field)?),
    }))
}

impl Cluster for Snapshot {
    fn list_all(&self, r: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
        self.answers.list_all.answer(r, || {
            self.select(
                &r.api_version,
                &r.kind,
                None,
                r.label_selector.as_deref(),
                r.field_selector.as_deref(),
                r.field_masks.as_deref(),
            )
        })
    }

    fn list_by_namespace(
        &self,
        r: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, ContextError> {
        if self
            .api_resources
            .is_cluster_scoped(&r.api_version, &r.kind)
        {
            return Err(invalid(format!(
                "resource {}/{} is cluster-scoped: use list_resources_all",
                r.api_version, r.kind
            )));
        }
        self.answers.list_by_namespace.answer(r, || {
            self.select(
                &r.api_version,
                &r.kind,
                Some(&r.namespace),
                r.label_selector.as_deref(),
                r.field_selector.as_deref(),
                r.field_masks.as_deref(),
            )
        })
    }

    fn get(&self, r: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
        self.answers.get.answer(r, || self.find(r))
    }

    fn can_i(&self, r: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
        let review = &r.subject_access_review;
        let user = UserInfo {
            username: review.user.clone(),
            groups: review.groups.clone().unwrap_or_default(),
            uid: String::new(),
            extra: BTreeMap::new(),
        };
        let decision = self.rbac().authorize(&user, &review.resource_attributes);
        Ok(SubjectAccessReviewStatus {
            allowed: decision.allowed,
            denied: None,
            reason: Some(decision.reason),
            evaluation_error: None,
        })
    }
}

#[cfg(test)]
mod tests;
