//! A cluster snapshot: Kubernetes objects read from YAML or JSON files (as
//! `kubectl get -o yaml` writes them), answering the `kubernetes/*` host
//! capabilities the way Kubewarden's policy-server answers them from a live
//! cluster. The host serves modules from it; rule unit tests and the native
//! speed baseline use it directly as their [`Cluster`].

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
use olm_guard_core::{Cluster, ContextError, ObjectMeta, UserInfo};
use olm_guard_rbac::{ClusterRole, RbacStore, Role, RoleBinding};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

const RBAC_API_VERSION: &str = "rbac.authorization.k8s.io/v1";

/// Kinds Kubernetes serves cluster-scoped among those policies here ask for;
/// listing them by namespace is an error, as with a real API server.
const CLUSTER_SCOPED_KINDS: &[&str] = &[
    "Namespace",
    "Node",
    "PersistentVolume",
    "StorageClass",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "APIService",
    "PriorityClass",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ClusterObjectSet",
    "ClusterExtension",
    "ClusterCatalog",
    "ScopeTemplate",
    "ScopeInstance",
    "ClusterAdmissionPolicy",
    "PolicyServer",
];

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

/// Objects grouped by (apiVersion, kind), in the order they were read.
#[derive(Default)]
pub struct Snapshot {
    objects: HashMap<(String, String), Vec<Value>>,
    rbac: OnceLock<RbacStore>,
}

impl Snapshot {
    pub fn new() -> Snapshot {
        Snapshot::default()
    }

    /// Multi-document YAML (or JSON); a document may be a `List`.
    pub fn from_yaml(text: &str) -> Result<Snapshot, String> {
        let mut snapshot = Snapshot::new();
        snapshot.add_yaml(text)?;
        Ok(snapshot)
    }

    pub fn from_objects(objects: Vec<Value>) -> Snapshot {
        let mut snapshot = Snapshot::new();
        for object in objects {
            // Objects without apiVersion/kind cannot be served; from_objects
            // is for code-built objects, so skipping them is the caller's bug.
            let _ = snapshot.add(object);
        }
        snapshot
    }

    pub fn add_yaml(&mut self, text: &str) -> Result<(), String> {
        for object in load::objects_from_yaml(text)? {
            self.add(object)?;
        }
        Ok(())
    }

    /// Adds one object; it must carry `apiVersion` and `kind`.
    pub fn add(&mut self, mut object: Value) -> Result<(), String> {
        let (api_version, kind) = load::type_of(&object)?;
        load::strip_server_noise(&mut object);
        self.objects
            .entry((api_version, kind))
            .or_default()
            .push(object);
        self.rbac = OnceLock::new();
        Ok(())
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.objects.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn of_type(&self, api_version: &str, kind: &str) -> &[Value] {
        self.objects
            .get(&(api_version.to_string(), kind.to_string()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    fn typed<T: DeserializeOwned>(&self, kind: &str) -> Vec<T> {
        self.of_type(RBAC_API_VERSION, kind)
            .iter()
            .filter_map(|o| serde_json::from_value(o.clone()).ok())
            .collect()
    }

    /// The snapshot's RBAC objects, indexed once.
    pub fn rbac(&self) -> &RbacStore {
        self.rbac.get_or_init(|| {
            RbacStore::new(
                self.typed::<ClusterRole>("ClusterRole"),
                self.typed::<Role>("Role"),
                self.typed::<RoleBinding>("ClusterRoleBinding"),
                self.typed::<RoleBinding>("RoleBinding"),
            )
        })
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
            .map_err(|e| ContextError(format!("invalid label selector: {e}")))?;
        let fields = FieldSelector::parse(field_selector.unwrap_or(""))
            .map_err(|e| ContextError(format!("invalid field selector: {e}")))?;
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
        serde_json::to_vec(&list).map_err(|e| ContextError(e.to_string()))
    }
}

impl Cluster for Snapshot {
    fn list_all(&self, r: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
        self.select(
            &r.api_version,
            &r.kind,
            None,
            r.label_selector.as_deref(),
            r.field_selector.as_deref(),
            r.field_masks.as_deref(),
        )
    }

    fn list_by_namespace(
        &self,
        r: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, ContextError> {
        if CLUSTER_SCOPED_KINDS.contains(&r.kind.as_str()) {
            return Err(ContextError(format!(
                "resource {}/{} is cluster-scoped: use list_resources_all",
                r.api_version, r.kind
            )));
        }
        self.select(
            &r.api_version,
            &r.kind,
            Some(&r.namespace),
            r.label_selector.as_deref(),
            r.field_selector.as_deref(),
            r.field_masks.as_deref(),
        )
    }

    fn get(&self, r: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
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
                ContextError(format!(
                    "Cannot find {}/{} named '{}' inside of namespace '{:?}'",
                    r.api_version, r.kind, r.name, r.namespace
                ))
            })
            .and_then(|object| serde_json::to_vec(&object).map_err(|e| ContextError(e.to_string())))
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
        assert!(err.0.starts_with("invalid label selector"), "{err}");
        let err = snapshot
            .list_by_namespace(&ListResourcesByNamespaceRequest::new(
                "v1",
                "Namespace",
                "ns1",
            ))
            .unwrap_err();
        assert!(err.0.contains("cluster-scoped"), "{err}");
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
            err.0,
            "Cannot find v1/ConfigMap named 'b' inside of namespace 'Some(\"ns1\")'"
        );
    }

    #[test]
    fn objects_need_a_type_and_documents_must_be_objects() {
        let err = Snapshot::from_yaml("metadata: {name: x}").err().unwrap();
        assert!(err.contains("\"x\" has no apiVersion and kind"), "{err}");
        let err = Snapshot::from_yaml("- 1\n- 2").err().unwrap();
        assert!(
            err.contains("document 1: expected a Kubernetes object"),
            "{err}"
        );
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
