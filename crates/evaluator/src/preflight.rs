//! Would this install pass? Every document of a manifest (or what OLM would
//! create from an operator bundle) admitted in order, as `kubectl apply -f`
//! sends them, each sent only to the modules whose metadata rules cover it,
//! as policy-server's webhook configurations route it. `olm-guard run all`
//! and the suite cases that name `modules` both run this sequence.
//!
//! What the API server does with one request
//! (kubernetes/kubernetes, `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/`):
//! the mutating webhooks first, one after the other, each sent the object
//! as the ones before it patched it, ordered by the name of their
//! MutatingWebhookConfiguration (`configuration/mutating_webhook_manager.go`
//! sorts the configurations by name); then the validating webhooks, in
//! parallel, on the final object. Kubewarden's controller registers one
//! webhook configuration per policy, named after the policy
//! (`clusterwide-<name>`), so for the modules here the mutating order is the
//! order of their names ([`call_order`]). Kubewarden's configurations set no
//! `reinvocationPolicy` (the API server's default is `Never`), so no module
//! is called twice. Where the API server stops at the first denial, this
//! sequence goes on and evaluates every module, so that one run names every
//! reason an object would be refused; a denied mutation is not applied.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use olm_guard_core::ObjectMeta;
use olm_guard_core::response::{AdmissionResponse, PatchError};
use olm_guard_runtime::{CallError, Metadata};
use olm_guard_snapshot::{ApiResources, Snapshot, SnapshotError};

use crate::host::ClusterContext;
use crate::input::{
    self as admission, InputError, ObjectRequest, ObjectRequestError, Requester, Route,
};
use crate::policy::Policy;

/// Why the sequence could not run (a verdict, even a denial, is never an
/// error). Each names the file or document and, where there is one, the fix.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    /// A manifest file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A document of a manifest is not an object.
    #[error(transparent)]
    Document(#[from] SnapshotError),
    /// A manifest with no document.
    #[error(
        "{document}: no object in the file: nothing to evaluate (give a manifest, as `kubectl get ... -o yaml` writes one)"
    )]
    Empty {
        /// The file.
        document: String,
    },
    /// A bundle's metadata or manifests could not be read.
    #[error("{0}")]
    Bundle(String),
    /// A bundle file could not be read.
    #[error(transparent)]
    Input(#[from] InputError),
    /// No AdmissionRequest can be built from the document.
    #[error("{document}")]
    Request {
        /// `file: document N`.
        document: String,
        /// Why.
        #[source]
        source: ObjectRequestError,
    },
    /// A module failed (trap, deadline, memory cap) on a document.
    #[error("{module}: {document}")]
    Evaluate {
        /// The module's name.
        module: String,
        /// `file: document N`.
        document: String,
        /// What the runtime said.
        #[source]
        source: CallError,
    },
    /// A mutating module's patch does not apply to the object it was sent.
    #[error("{module}: {document}: the module's patch")]
    Patch {
        /// The module's name.
        module: String,
        /// `file: document N`.
        document: String,
        /// Why.
        #[source]
        source: PatchError,
    },
    /// An admitted object could not join the snapshot.
    #[error(
        "{name}: admitted, but it cannot join the snapshot for the documents after it (or judge each document alone: --independent)"
    )]
    Join {
        /// The object's name.
        name: String,
        /// Why.
        #[source]
        source: SnapshotError,
    },
    /// A module kept a handle on the snapshot after its evaluation, so the
    /// admitted object cannot be added to it.
    #[error(
        "the snapshot is still in use by an evaluation; judge each document alone (--independent)"
    )]
    SnapshotInUse,
}

/// The object a result is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name` (or `generateName` for an unnamed object).
    pub name: String,
    /// `apiVersion`.
    pub api_version: String,
    /// `metadata.uid`, when the snapshot has it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// `metadata.resourceVersion`, when the snapshot has it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// Whether the discovery table says the kind is cluster-scoped.
    #[serde(skip)]
    pub cluster_scoped: bool,
}

impl Subject {
    /// The subject `object` names; `api_resources` says whether its kind is
    /// cluster-scoped.
    pub fn of(object: &Value, api_resources: &ApiResources) -> Subject {
        let meta = ObjectMeta::of(object);
        let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or("");
        let api_version = text("apiVersion").to_string();
        let kind = text("kind").to_string();
        let resource_version = object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        Subject {
            cluster_scoped: api_resources.is_cluster_scoped(&api_version, &kind),
            namespace: meta.namespace,
            name: if meta.name.is_empty() {
                meta.generate_name
            } else {
                meta.name
            },
            api_version,
            kind,
            uid: meta.uid,
            resource_version,
        }
    }

    /// `Kind namespace/name` or `Kind name`, as tables show it.
    pub fn display(&self) -> String {
        let name = if self.name.is_empty() {
            "<unnamed>"
        } else {
            &self.name
        };
        if self.namespace.is_empty() {
            format!("{} {name}", self.kind)
        } else {
            format!("{} {}/{name}", self.kind, self.namespace)
        }
    }

    /// Whether `reference` names this object: `Kind/name` (any namespace)
    /// or `Kind/namespace/name`, as `kubectl get kind/name` names one.
    pub fn is_named(&self, reference: &str) -> bool {
        let parts: Vec<&str> = reference.split('/').collect();
        match parts.as_slice() {
            [kind, name] => kind.eq_ignore_ascii_case(&self.kind) && *name == self.name,
            [kind, namespace, name] => {
                kind.eq_ignore_ascii_case(&self.kind)
                    && *namespace == self.namespace
                    && *name == self.name
            }
            _ => false,
        }
    }
}

/// A module as the sequence calls it: compiled, with its metadata (whose
/// rules route the documents) and its settings (already validated).
#[derive(Clone, Copy)]
pub struct Module<'a> {
    /// The module's name.
    pub name: &'a str,
    /// The compiled module.
    pub policy: &'a Policy,
    /// Its metadata.
    pub metadata: &'a Metadata,
    /// The settings it runs with.
    pub settings: &'a Value,
}

/// Sorts `modules` as the API server calls them: the mutating ones first,
/// in name order (see the module's doc), then the validating ones, also by
/// name (their order changes nothing).
pub fn call_order<T>(modules: &mut [T], module: impl Fn(&T) -> Module<'_>) {
    modules.sort_by(|a, b| {
        let (a, b) = (module(a), module(b));
        (!a.metadata.mutating, a.name).cmp(&(!b.metadata.mutating, b.name))
    });
}

/// How the documents are sent.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `-n`: the namespace of namespaced objects that name none (else
    /// `default`).
    pub namespace: Option<String>,
    /// The operation of every request; by default CREATE, or UPDATE of an
    /// object already in the snapshot.
    pub operation: Option<String>,
    /// The requester.
    pub requester: Requester,
    /// The stored object of every request (`--old-object`).
    pub old_object: Option<Value>,
    /// Judge every document against the starting snapshot alone, instead
    /// of adding each admitted object to it for the documents after it.
    pub independent: bool,
}

/// One evaluation: a document, a module, what it was sent and answered.
#[derive(Debug, Clone)]
pub struct Pair {
    /// `file: document N`.
    pub document: String,
    /// The object.
    pub subject: Subject,
    /// The module's name.
    pub policy: String,
    /// The request the module was sent (its object patched by the mutating
    /// modules before it).
    pub request: Value,
    /// Its answer.
    pub response: AdmissionResponse,
}

impl Pair {
    /// Whether the module answered with at least one warning.
    pub fn warned(&self) -> bool {
        self.response
            .warnings
            .as_ref()
            .is_some_and(|w| !w.is_empty())
    }
}

/// A document no module's rules cover: policy-server would send it to none.
#[derive(Debug, Clone)]
pub struct Unrouted {
    /// `file: document N`.
    pub document: String,
    /// The object.
    pub subject: Subject,
    /// What the API server would match webhook rules against.
    pub route: Route,
}

/// Everything a run said.
pub struct Report {
    /// Every evaluation, document by document, each document's in call
    /// order.
    pub pairs: Vec<Pair>,
    /// The documents no module evaluated.
    pub unrouted: Vec<Unrouted>,
    /// Every document, in the order admitted, as (`file: document N`,
    /// object).
    pub order: Vec<(String, Subject)>,
    /// The snapshot after the last document (the starting one with
    /// `independent`).
    pub snapshot: Arc<Snapshot>,
}

impl Report {
    /// Whether `namespace` has an OperatorGroup in the final snapshot:
    /// without one, OLM would not install a CSV there (its phase becomes
    /// Failed with reason NoOperatorGroup), whatever the modules say.
    pub fn has_operator_group(&self, namespace: &str) -> bool {
        self.snapshot.objects().any(|object| {
            object.get("kind").and_then(Value::as_str) == Some("OperatorGroup")
                && ObjectMeta::of(object).namespace == namespace
        })
    }

    /// The evaluations that denied.
    pub fn denied(&self) -> impl Iterator<Item = &Pair> {
        self.pairs.iter().filter(|p| !p.response.allowed)
    }
}

/// Admits `documents` (each `(file: document N, object)`) in order with
/// `modules` (in the order given: see [`call_order`]), starting from
/// `snapshot`.
pub fn admit_all(
    modules: &[Module<'_>],
    snapshot: Snapshot,
    documents: Vec<(String, Value)>,
    options: &Options,
) -> Result<Report, PreflightError> {
    let mut state = Admission {
        modules,
        options,
        several: documents.len() > 1,
        report: Report {
            pairs: Vec::new(),
            unrouted: Vec::new(),
            order: Vec::new(),
            snapshot: Arc::new(snapshot),
        },
    };
    for (document, object) in documents {
        state.admit(document, object)?;
    }
    Ok(state.report)
}

/// The documents of the manifest file `path` (`List`s unpacked), each named
/// `file: document N`.
pub fn read_manifest(path: &Path) -> Result<Vec<(String, Value)>, PreflightError> {
    let text = std::fs::read_to_string(path).map_err(|source| PreflightError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    manifest_documents(&path.display().to_string(), &text)
}

/// The documents of a manifest's `text`, read from `source`.
pub fn manifest_documents(
    source: &str,
    text: &str,
) -> Result<Vec<(String, Value)>, PreflightError> {
    let objects = Snapshot::read_objects(source, text)
        .into_iter()
        .map(|read| {
            let (at, object) = read?;
            Ok((at.to_string(), object))
        })
        .collect::<Result<Vec<_>, PreflightError>>()?;
    if objects.is_empty() {
        return Err(PreflightError::Empty {
            document: source.to_string(),
        });
    }
    Ok(objects)
}

/// The bundle annotation that names the format.
const MEDIATYPE: &str = "operators.operatorframework.io.bundle.mediatype.v1";
/// The bundle annotation that names the manifests directory.
const MANIFESTS: &str = "operators.operatorframework.io.bundle.manifests.v1";

/// The manifests OLM creates from the registry+v1 bundle `dir` when it
/// installs it in `namespace` (operator-framework/operator-registry,
/// `docs/design/operator-bundle.md`: `metadata/annotations.yaml` names the
/// media type and the manifests directory, which holds one
/// ClusterServiceVersion beside CRDs and other objects): every manifest,
/// namespaced ones in `namespace` whatever namespace the file names (OLM
/// installs the CSV where its InstallPlan is). Admitted in this order: the
/// CustomResourceDefinitions, the other manifests by file name, then the
/// CSV, so that the CSV is judged with what it owns in place. What OLM then
/// generates from the CSV (its Deployments, the ServiceAccounts and RBAC of
/// its install strategy, the ClusterRoles for the APIs it owns) is not
/// among them.
pub fn bundle_documents(
    dir: &Path,
    namespace: &str,
) -> Result<Vec<(String, Value)>, PreflightError> {
    let bundle = |message: String| PreflightError::Bundle(message);
    let annotations_file = dir.join("metadata").join("annotations.yaml");
    if !annotations_file.is_file() {
        return Err(bundle(format!(
            "{}: not a registry+v1 bundle: {} is missing (a bundle directory holds manifests/ and metadata/annotations.yaml)",
            dir.display(),
            annotations_file.display()
        )));
    }
    let document = admission::read_document(&annotations_file)?;
    let annotations = document
        .get("annotations")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            bundle(format!(
                "{}: no `annotations` mapping: write the bundle's annotations under `annotations:`",
                annotations_file.display()
            ))
        })?;
    match annotations.get(MEDIATYPE).and_then(Value::as_str) {
        Some("registry+v1") => {}
        Some(other) => {
            return Err(bundle(format!(
                "{}: {MEDIATYPE} is {other}: only registry+v1 bundles can be read (render other formats to registry+v1 first)",
                annotations_file.display()
            )));
        }
        None => {
            return Err(bundle(format!(
                "{}: no {MEDIATYPE} annotation: a registry+v1 bundle says `{MEDIATYPE}: registry+v1`",
                annotations_file.display()
            )));
        }
    }
    let manifests = annotations
        .get(MANIFESTS)
        .and_then(Value::as_str)
        .unwrap_or("manifests/");
    let manifests = dir.join(manifests);
    let entries = std::fs::read_dir(&manifests).map_err(|e| {
        bundle(format!(
            "cannot read the bundle's manifests, {}: {e}",
            manifests.display()
        ))
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.extension()
                .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        })
        .collect();
    files.sort();
    let (mut crds, mut others, mut csvs) = (Vec::new(), Vec::new(), Vec::new());
    for file in files {
        for (document, mut object) in read_manifest(&file)? {
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("namespace".into(), json!(namespace));
            }
            match object.get("kind").and_then(Value::as_str) {
                Some("CustomResourceDefinition") => crds.push((document, object)),
                Some("ClusterServiceVersion") => csvs.push((document, object)),
                _ => others.push((document, object)),
            }
        }
    }
    if csvs.len() != 1 {
        return Err(bundle(format!(
            "{}: a registry+v1 bundle holds one ClusterServiceVersion, found {}",
            manifests.display(),
            csvs.len()
        )));
    }
    crds.extend(others);
    crds.extend(csvs);
    Ok(crds)
}

/// The state of one run: the snapshot as it grows, and what was said.
struct Admission<'a> {
    modules: &'a [Module<'a>],
    options: &'a Options,
    /// More than one document: each request gets its own uid, as the API
    /// server gives each request its own (and `run MODULE` numbers them).
    several: bool,
    report: Report,
}

impl Admission<'_> {
    /// One document: its request, every module that applies, and, when all
    /// of them admit it, the object (as patched) joins the snapshot.
    fn admit(&mut self, document: String, mut object: Value) -> Result<(), PreflightError> {
        let api_resources = self.report.snapshot.api_resources();
        let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or("");
        let cluster_scoped = api_resources.is_cluster_scoped(text("apiVersion"), text("kind"));
        // `kubectl apply` puts a namespaced object that names no namespace
        // in `-n`'s, else in `default`; a cluster-scoped one in none.
        let names_one = !ObjectMeta::of(&object).namespace.is_empty();
        let namespace = match (cluster_scoped, names_one) {
            (true, _) => None,
            // An object's own namespace must agree with -n, if given.
            (false, true) => self.options.namespace.clone(),
            (false, false) => Some(
                self.options
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "default".into()),
            ),
        };
        if cluster_scoped
            && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.remove("namespace");
        }
        // An object already in the snapshot (from the cluster, or an earlier
        // document) is an UPDATE of it, as `kubectl apply` patches it.
        let stored = match (&self.options.old_object, &self.options.operation) {
            (None, None) => self.stored(&object, namespace.as_deref()),
            _ => None,
        };
        let old_object = self.options.old_object.clone().or(stored);
        let mut request = admission::request_for_object(ObjectRequest {
            object: Some(object),
            old_object,
            operation: self.options.operation.clone(),
            namespace,
            user: self.options.requester.clone(),
        })
        .map_err(|source| PreflightError::Request {
            document: document.clone(),
            source,
        })?;
        if self.several
            && let Some(map) = request.as_object_mut()
        {
            let number = self.report.order.len() + 1;
            map.insert("uid".into(), admission::numbered_uid(number).into());
        }
        // A DELETE names its object in oldObject.
        let named = request
            .get("object")
            .filter(|o| o.is_object())
            .or_else(|| request.get("oldObject"))
            .unwrap_or(&Value::Null);
        let subject = Subject::of(named, self.report.snapshot.api_resources());
        self.report.order.push((document.clone(), subject.clone()));
        // `request_for_object` always names the resource.
        let route = Route::of(&request).unwrap_or_else(|| Route {
            group: String::new(),
            version: String::new(),
            resource: String::new(),
            subresource: String::new(),
            operation: String::new(),
        });
        let applicable: Vec<&Module> = self
            .modules
            .iter()
            .filter(|m| m.metadata.covers(&route.target()))
            .collect();
        if applicable.is_empty() {
            self.report.unrouted.push(Unrouted {
                document,
                subject,
                route,
            });
            return self.store(&request, true);
        }
        let mut current = request;
        let mut admitted = true;
        for module in applicable {
            let cluster: ClusterContext = self.report.snapshot.clone();
            let response = module
                .policy
                .validate(&current, module.settings, cluster)
                .map_err(|source| PreflightError::Evaluate {
                    module: module.name.to_string(),
                    document: document.clone(),
                    source,
                })?
                .response;
            admitted &= response.allowed;
            let sent = current.clone();
            // A mutating module's patch goes to the modules after it; a
            // denial's is never applied.
            if response.allowed && module.metadata.mutating {
                let patched =
                    response
                        .patched_object(&current)
                        .map_err(|source| PreflightError::Patch {
                            module: module.name.to_string(),
                            document: document.clone(),
                            source,
                        })?;
                if let (Some(patched), Some(map)) = (patched, current.as_object_mut()) {
                    map.insert("object".into(), patched);
                }
            }
            self.report.pairs.push(Pair {
                document: document.clone(),
                subject: subject.clone(),
                policy: module.name.to_string(),
                request: sent,
                response,
            });
        }
        self.store(&current, admitted)
    }

    /// The stored object `object` would replace: same apiVersion, kind,
    /// namespace (`namespace` when the object names none) and name.
    fn stored(&self, object: &Value, namespace: Option<&str>) -> Option<Value> {
        let mut object = object.clone();
        if let (Some(namespace), Some(meta)) = (
            namespace,
            object.get_mut("metadata").and_then(Value::as_object_mut),
        ) {
            meta.entry("namespace")
                .or_insert_with(|| Value::String(namespace.to_string()));
        }
        self.report
            .snapshot
            .objects()
            .find(|candidate| same_object(candidate, &object))
            .cloned()
    }

    /// What an admitted request leaves in the snapshot, unless
    /// `independent`: a CREATE's or UPDATE's object (as patched) replaces
    /// the stored one or joins the snapshot, a DELETE's object leaves it.
    fn store(&mut self, request: &Value, admitted: bool) -> Result<(), PreflightError> {
        if !admitted || self.options.independent {
            return Ok(());
        }
        let (subject, replacement) = match request.get("operation").and_then(Value::as_str) {
            Some("CREATE" | "UPDATE") => (request.get("object"), request.get("object").cloned()),
            Some("DELETE") => (request.get("oldObject"), None),
            // CONNECT changes no object.
            _ => return Ok(()),
        };
        let Some(subject) = subject.filter(|s| s.is_object()).cloned() else {
            return Ok(());
        };
        let name = ObjectMeta::of(&subject).name;
        let replaces = !name.is_empty() && self.stored(&subject, None).is_some();
        let joins = |source: SnapshotError| PreflightError::Join {
            name: name.clone(),
            source,
        };
        // Every evaluation's handle on the snapshot is dropped with its
        // instance, so this one is the only one left.
        let Some(snapshot) = Arc::get_mut(&mut self.report.snapshot) else {
            return Err(PreflightError::SnapshotInUse);
        };
        if replaces {
            // The snapshot adds objects but replaces none: a new one is
            // built from the others and the replacement.
            let mut rebuilt = Snapshot::new();
            rebuilt.set_api_resources(snapshot.api_resources().clone());
            let others: Vec<Value> = snapshot
                .objects()
                .filter(|o| !same_object(o, &subject))
                .cloned()
                .collect();
            for object in others.into_iter().chain(replacement) {
                rebuilt.add(object).map_err(joins)?;
            }
            *snapshot = rebuilt;
        } else if let Some(object) = replacement {
            snapshot.add(object).map_err(joins)?;
        }
        Ok(())
    }
}

/// Whether `a` and `b` are the same object: apiVersion, kind, namespace and
/// name (both named).
fn same_object(a: &Value, b: &Value) -> bool {
    let (ma, mb) = (ObjectMeta::of(a), ObjectMeta::of(b));
    !ma.name.is_empty()
        && ma.name == mb.name
        && ma.namespace == mb.namespace
        && a.get("apiVersion") == b.get("apiVersion")
        && a.get("kind") == b.get("kind")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(kind: &str, namespace: &str, name: &str) -> Subject {
        Subject {
            namespace: namespace.into(),
            kind: kind.into(),
            name: name.into(),
            api_version: "v1".into(),
            uid: String::new(),
            resource_version: String::new(),
            cluster_scoped: namespace.is_empty(),
        }
    }

    #[test]
    fn objects_are_named_as_kubectl_names_them() {
        let og = subject("OperatorGroup", "nginx-b", "nginx-b");
        assert!(og.is_named("OperatorGroup/nginx-b"));
        assert!(og.is_named("operatorgroup/nginx-b/nginx-b"));
        assert!(!og.is_named("OperatorGroup/nginx-a/nginx-b"));
        assert!(!og.is_named("OperatorGroup/nginx-a"));
        assert!(!og.is_named("nginx-b"));
        let ns = subject("Namespace", "", "olm");
        assert!(ns.is_named("Namespace/olm"));
        assert!(!ns.is_named("Namespace/olm/olm"));
    }

    #[test]
    fn a_bundle_without_manifests_is_refused_naming_the_directory() {
        let dir = std::env::temp_dir().join(format!("og-preflight-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("metadata")).unwrap();
        std::fs::write(
            dir.join("metadata/annotations.yaml"),
            format!("annotations:\n  {MEDIATYPE}: registry+v1\n"),
        )
        .unwrap();
        let err = bundle_documents(&dir, "ns").unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "cannot read the bundle's manifests, {}",
                dir.join("manifests/").display()
            )),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
