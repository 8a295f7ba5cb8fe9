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
mod tests {
    use olm_guard_core::ClusterExt;
    use olm_guard_core::protocol::ResourceAttributes;
    use serde_json::json;

    use super::*;

    const OBJECTS: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: a
    namespace: ns1
    labels: {app: web, tier: front}
    managedFields: [{manager: kubectl}]
    annotations:
      kubectl.kubernetes.io/last-applied-configuration: "{}"
      keep: "yes"
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: b, namespace: ns2, labels: {app: db}}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns1}
---
"#;

    fn names(list: Vec<Value>) -> Vec<String> {
        list.iter().map(|o| ObjectMeta::of(o).name).collect()
    }

    #[test]
    fn lists_unpack_and_server_noise_is_stripped() {
        let snapshot = Snapshot::from_yaml(OBJECTS).unwrap();
        assert_eq!(snapshot.len(), 3);
        let all: Vec<Value> = snapshot
            .list_all_as(&ListAllResourcesRequest::new("v1", "ConfigMap"))
            .unwrap();
        assert_eq!(names(all.clone()), ["a", "b"]);
        assert!(all[0]["metadata"].get("managedFields").is_none());
        assert_eq!(all[0]["metadata"]["annotations"], json!({"keep": "yes"}));
    }

    /// Answers are kept for the snapshot's life, and forgotten when it
    /// changes: a list asked again after an object was added includes it,
    /// a get of the new object finds it, and a cluster-scope table layered
    /// on later is obeyed.
    #[test]
    fn kept_answers_follow_every_change() {
        let mut snapshot = Snapshot::from_yaml(OBJECTS).unwrap();
        let all = ListAllResourcesRequest::new("v1", "ConfigMap");
        let first = snapshot.list_all(&all).unwrap();
        assert_eq!(
            snapshot.list_all(&all).unwrap(),
            first,
            "the same bytes again"
        );
        let get = GetResourceRequest {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "c".into(),
            namespace: Some("ns1".into()),
            ..Default::default()
        };
        assert!(snapshot.get(&get).is_err());

        snapshot
            .add(json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "c", "namespace": "ns1"}}))
            .unwrap();
        let listed: Vec<Value> = snapshot.list_all_as(&all).unwrap();
        assert_eq!(names(listed), ["a", "b", "c"]);
        assert!(snapshot.get(&get).is_ok());

        let in_ns1 = ListResourcesByNamespaceRequest::new("v1", "ConfigMap", "ns1");
        assert!(snapshot.list_by_namespace(&in_ns1).is_ok());
        let table = ApiResources::parse(
            "NAME         SHORTNAMES   APIVERSION   NAMESPACED   KIND\n\
             configmaps   cm           v1           false        ConfigMap\n",
        )
        .unwrap();
        snapshot.add_api_resources(table);
        assert!(
            snapshot.list_by_namespace(&in_ns1).is_err(),
            "now cluster-scoped"
        );
    }

    #[test]
    fn namespaced_lists_and_selectors() {
        let snapshot = Snapshot::from_yaml(OBJECTS).unwrap();
        let in_ns2: Vec<Value> = snapshot
            .list_by_namespace_as(&ListResourcesByNamespaceRequest::new(
                "v1",
                "ConfigMap",
                "ns2",
            ))
            .unwrap();
        assert_eq!(names(in_ns2), ["b"]);
        let front: Vec<Value> = snapshot
            .list_all_as(
                &ListAllResourcesRequest::new("v1", "ConfigMap").label_selector("app=web,tier"),
            )
            .unwrap();
        assert_eq!(names(front), ["a"]);
        let not_a: Vec<Value> = snapshot
            .list_all_as(
                &ListAllResourcesRequest::new("v1", "ConfigMap").field_selector("metadata.name!=a"),
            )
            .unwrap();
        assert_eq!(names(not_a), ["b"]);
        let err = snapshot
            .list_all(
                &ListAllResourcesRequest::new("v1", "ConfigMap").label_selector("app in (web"),
            )
            .unwrap_err();
        assert!(err.message.starts_with("invalid label selector"), "{err}");
        let err = snapshot
            .list_by_namespace(&ListResourcesByNamespaceRequest::new(
                "v1",
                "Namespace",
                "ns1",
            ))
            .unwrap_err();
        assert!(err.message.contains("cluster-scoped"), "{err}");
    }

    #[test]
    fn get_finds_by_name_and_namespace_or_says_kubewardens_words() {
        let snapshot = Snapshot::from_yaml(OBJECTS).unwrap();
        let request = |name: &str, namespace: Option<&str>| GetResourceRequest {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: name.into(),
            namespace: namespace.map(String::from),
            ..Default::default()
        };
        let found: Value = snapshot.get_as(&request("b", Some("ns2"))).unwrap();
        assert_eq!(ObjectMeta::of(&found).name, "b");
        let err = snapshot.get(&request("b", Some("ns1"))).unwrap_err();
        assert_eq!(
            err.message,
            "Cannot find v1/ConfigMap named 'b' inside of namespace 'Some(\"ns1\")'"
        );
    }

    #[test]
    fn objects_need_a_type_and_documents_must_be_objects() {
        let err = Snapshot::from_yaml("metadata: {name: x}").err().unwrap();
        assert_eq!(
            err.to_string(),
            "document 1: object \"x\" has no apiVersion and kind"
        );
        let err = Snapshot::from_yaml("- 1\n- 2").err().unwrap();
        assert_eq!(
            err.to_string(),
            "document 1: expected a Kubernetes object, found a sequence"
        );
        let err = Snapshot::new()
            .add_source(
                "c.yaml",
                "apiVersion: v1\nkind: List\nitems: [{kind: ConfigMap}, 3]",
                LoadOptions::STRICT,
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "c.yaml: document 1: items[0]: object \"<unnamed>\" has no apiVersion and kind"
        );
        let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\nb: [\n";
        let err = Snapshot::from_yaml(text).err().unwrap();
        assert_eq!(err.at.document, Some(2));
        assert!(matches!(err.problem, Problem::NotYaml(_)), "{err}");
    }

    const ALICE_READS: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm, namespace: ns1}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-cm, namespace: ns1}
subjects: [{kind: User, name: alice}]
roleRef: {kind: Role, name: cm}
"#;

    const BOB_BROKEN: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ns1}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-cm, namespace: ns1}
subjects: bob
roleRef: {kind: Role, name: cm}
"#;

    fn can_read(snapshot: &Snapshot, user: &str) -> bool {
        let user = UserInfo {
            username: user.into(),
            ..Default::default()
        };
        let read = ResourceAttributes::new("get", "", "configmaps").namespace("ns1");
        snapshot.authorized(&user, read).unwrap()
    }

    #[test]
    fn an_unreadable_rbac_object_is_an_error_naming_source_document_object_and_field() {
        let mut snapshot = Snapshot::from_yaml(ALICE_READS).unwrap();
        let err = snapshot
            .add_source("extra.yaml", BOB_BROKEN, LoadOptions::STRICT)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "extra.yaml: document 2: rbac.authorization.k8s.io/v1 RoleBinding ns1/bob-cm: \
             field subjects has the wrong type (invalid type: string \"bob\", expected a \
             sequence); the API server would refuse this object, so its RBAC cannot be evaluated"
        );
        assert_eq!(err.object().unwrap().name, "bob-cm");
        // A failed strict load adds nothing, not even the ConfigMap before it.
        assert_eq!(snapshot.len(), 2);
        assert!(can_read(&snapshot, "alice"));
    }

    #[test]
    fn lenient_loading_lists_an_unreadable_rbac_object_but_grants_nothing_and_says_so() {
        let mut snapshot = Snapshot::from_yaml(ALICE_READS).unwrap();
        let warnings = snapshot
            .add_source("extra.yaml", BOB_BROKEN, LoadOptions::LENIENT)
            .unwrap();
        assert_eq!(warnings.len(), 1);
        let warning = warnings[0].to_string();
        assert!(
            warning.starts_with("extra.yaml: document 2: rbac.authorization.k8s.io/v1 RoleBinding ns1/bob-cm: field subjects"),
            "{warning}"
        );
        assert!(
            warning.ends_with("; it is listed but grants nothing in can_i"),
            "{warning}"
        );
        assert_eq!(snapshot.len(), 4);
        let bindings: Vec<Value> = snapshot
            .list_all_as(&ListAllResourcesRequest::new(
                RBAC_API_VERSION,
                "RoleBinding",
            ))
            .unwrap();
        assert_eq!(names(bindings), ["alice-cm", "bob-cm"]);
        assert!(can_read(&snapshot, "alice"));
        assert!(!can_read(&snapshot, "bob"));
    }

    #[test]
    fn other_rbac_versions_are_reported_not_ignored() {
        let text = ALICE_READS.replace(
            "rbac.authorization.k8s.io/v1\nkind: RoleBinding",
            "rbac.authorization.k8s.io/v1beta1\nkind: RoleBinding",
        );
        let err = Snapshot::from_yaml(&text).err().unwrap();
        assert!(
            matches!(err.problem, Problem::UnservedRbacVersion { .. }),
            "{err}"
        );
        assert!(err.to_string().starts_with("document 2: rbac.authorization.k8s.io/v1beta1 RoleBinding ns1/alice-cm: only rbac.authorization.k8s.io/v1"), "{err}");
        let mut snapshot = Snapshot::new();
        let warnings = snapshot
            .add_source("c.yaml", &text, LoadOptions::LENIENT)
            .unwrap();
        assert_eq!(warnings.len(), 1);
        assert!(!can_read(&snapshot, "alice"));
    }

    #[test]
    fn duplicates_are_errors_or_keep_the_first() {
        let err = Snapshot::new()
            .add_source(
                "c.yaml",
                &format!("{OBJECTS}\n---\n{ALICE_READS}\n---\n{ALICE_READS}"),
                LoadOptions::STRICT,
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "c.yaml: document 6: rbac.authorization.k8s.io/v1 Role ns1/cm was already read (at \
             c.yaml: document 4); an object may appear only once in a snapshot"
        );
        // (Document 3 is the empty one between OBJECTS' last `---` and the
        // next.) Across sources too, and inside a List.
        let mut snapshot = Snapshot::new();
        snapshot
            .add_source("a.yaml", OBJECTS, LoadOptions::STRICT)
            .unwrap();
        let again = "apiVersion: v1\nkind: ConfigMapList\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: ns2, labels: {app: other}}}\n";
        let err = snapshot
            .add_source("b.yaml", again, LoadOptions::STRICT)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "b.yaml: document 1: items[1]: v1 ConfigMap ns2/b was already read (at a.yaml: \
             document 1: items[1]); an object may appear only once in a snapshot"
        );
        let warnings = snapshot
            .add_source("b.yaml", again, LoadOptions::LENIENT)
            .unwrap();
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].to_string().ends_with("; the first one is kept"));
        let b: Vec<Value> = snapshot
            .list_all_as(
                &ListAllResourcesRequest::new("v1", "ConfigMap").field_selector("metadata.name=b"),
            )
            .unwrap();
        assert_eq!(ObjectMeta::of(&b[0]).labels["app"], "db");
        // Same name in another namespace, kind or version: different objects;
        // objects with generateName only cannot be told apart.
        let distinct = "\
apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: ns3}\n---
apiVersion: v1\nkind: Secret\nmetadata: {name: b, namespace: ns2}\n---
apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-}\n---
apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-}\n";
        assert!(
            snapshot
                .add_source("d.yaml", distinct, LoadOptions::STRICT)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn lenient_loading_skips_what_cannot_be_served_and_reports_each() {
        let text = "\
apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---
just text\n---
metadata: {name: untyped}\n---
apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n---
broken: [\n";
        let mut snapshot = Snapshot::new();
        let warnings = snapshot
            .add_source("c.yaml", text, LoadOptions::LENIENT)
            .unwrap();
        let warnings: Vec<String> = warnings.iter().map(ToString::to_string).collect();
        assert_eq!(warnings.len(), 3, "{warnings:#?}");
        assert_eq!(
            warnings[0],
            "c.yaml: document 2: expected a Kubernetes object, found a string; it was skipped"
        );
        assert_eq!(
            warnings[1],
            "c.yaml: document 3: object \"untyped\" has no apiVersion and kind; it was skipped"
        );
        assert!(
            warnings[2].starts_with("c.yaml: document 5: not valid YAML: "),
            "{}",
            warnings[2]
        );
        assert!(warnings[2].ends_with("; the rest of the source was skipped"));
        assert_eq!(snapshot.len(), 2);
    }

    #[test]
    fn objects_from_code() {
        let ok = Snapshot::try_from_objects(vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
        ])
        .unwrap();
        assert_eq!(ok.len(), 1);
        let err = Snapshot::try_from_objects(vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
        ])
        .err()
        .unwrap();
        assert_eq!(
            err.to_string(),
            "items[1]: v1 Namespace a was already read (at items[0]); an object may appear only once in a snapshot"
        );
        let err = Snapshot::new().add(json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": {"name": "r"}, "rules": [{"verbs": "get"}]})).unwrap_err();
        assert!(err.to_string().starts_with("rbac.authorization.k8s.io/v1 ClusterRole r: field rules[0].verbs has the wrong type"), "{err}");
    }

    #[test]
    #[should_panic(
        expected = "Snapshot::from_objects: items[0]: object \"<unnamed>\" has no apiVersion and kind"
    )]
    fn from_objects_refuses_loudly() {
        Snapshot::from_objects(vec![json!({"kind": "Namespace"})]);
    }

    #[test]
    fn cluster_scope_comes_from_the_discovery_table() {
        let text = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n";
        let mut snapshot = Snapshot::from_yaml(text).unwrap();
        let by_namespace = ListResourcesByNamespaceRequest::new("example.com/v1", "Widget", "ns1");
        assert!(snapshot.list_by_namespace(&by_namespace).is_ok());
        snapshot.add_api_resources(
            ApiResources::parse("- {apiVersion: example.com/v1, kind: Widget, namespaced: false}")
                .unwrap(),
        );
        let err = snapshot.list_by_namespace(&by_namespace).unwrap_err();
        assert_eq!(
            err.message,
            "resource example.com/v1/Widget is cluster-scoped: use list_resources_all"
        );
        // The built-in entries still answer.
        assert!(
            snapshot
                .api_resources()
                .is_cluster_scoped("v1", "Namespace")
        );
        snapshot.set_api_resources(ApiResources::empty());
        assert!(snapshot.list_by_namespace(&by_namespace).is_ok());
    }

    #[test]
    fn can_i_uses_the_snapshot_rbac_and_sees_new_objects() {
        let mut snapshot = Snapshot::from_yaml(OBJECTS).unwrap();
        let alice = UserInfo {
            username: "alice".into(),
            ..Default::default()
        };
        let read = || ResourceAttributes::new("get", "", "configmaps").namespace("ns1");
        assert!(!snapshot.authorized(&alice, read()).unwrap());
        snapshot
            .add_yaml(
                r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm, namespace: ns1}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-cm, namespace: ns1}
subjects: [{kind: User, name: alice}]
roleRef: {kind: Role, name: cm}
"#,
            )
            .unwrap();
        assert!(snapshot.authorized(&alice, read()).unwrap());
        // RoleBindings never grant cluster-scoped requests.
        let cluster_wide = ResourceAttributes::new("get", "", "configmaps");
        assert!(!snapshot.authorized(&alice, cluster_wide).unwrap());
    }
}
