//! Reading what a user hands the evaluator: AdmissionReviews, bare
//! AdmissionRequests and settings, as JSON or YAML.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A `.json` file that is not JSON: the JSON parser's account (line,
    /// column) is the one that helps.
    #[error("{} is not valid JSON", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The JSON parser's account.
        #[source]
        source: serde_json::Error,
    },
    /// The text is neither JSON nor YAML.
    #[error("{} is neither JSON nor YAML", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The YAML parser's account (YAML is a superset of JSON).
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// An AdmissionReview without a `request` object.
    #[error("the AdmissionReview has no request object")]
    NoRequest,
    /// The document is not a JSON object.
    #[error("expected an AdmissionReview or an AdmissionRequest object")]
    NotAnObject,
    /// A Kubernetes object where a request was expected.
    #[error(
        "this is a {kind} object, not an AdmissionReview or AdmissionRequest: evaluate an object with `olm-guard run <module> --object <file>`"
    )]
    BareObject {
        /// The object's kind.
        kind: String,
    },
    /// The request has no `operation`.
    #[error("the AdmissionRequest has no operation (CREATE, UPDATE, DELETE or CONNECT)")]
    NoOperation,
    /// Settings that are not a mapping.
    #[error("settings must be an object")]
    SettingsNotAnObject,
}

/// Reads a JSON or YAML file. A `.json` file is read as JSON only, so its
/// errors are the JSON parser's (line and column of the fault).
pub fn read_document(path: &Path) -> Result<Value, InputError> {
    let text = std::fs::read_to_string(path).map_err(|source| InputError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    {
        return serde_json::from_str(&text).map_err(|source| InputError::Json {
            path: path.to_path_buf(),
            source,
        });
    }
    parse_document(&text).map_err(|source| InputError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

/// JSON, or else YAML.
pub fn parse_document(text: &str) -> Result<Value, serde_yaml_ng::Error> {
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(_) => serde_yaml_ng::from_str(text),
    }
}

/// The AdmissionRequest of a full AdmissionReview, or the request itself.
/// A document with a `request` key is a review even without `kind:
/// AdmissionReview` (hand-written reviews often leave it out); a Kubernetes
/// object (`apiVersion`, `kind`, no `operation`) is refused with the way to
/// evaluate it.
pub fn admission_request(document: Value) -> Result<Value, InputError> {
    let request = match document {
        Value::Object(mut map)
            if map.contains_key("request")
                || map.get("kind").and_then(Value::as_str) == Some("AdmissionReview") =>
        {
            map.remove("request")
                .filter(Value::is_object)
                .ok_or(InputError::NoRequest)?
        }
        Value::Object(map) => Value::Object(map),
        _ => return Err(InputError::NotAnObject),
    };
    if request.get("operation").and_then(Value::as_str).is_none() {
        if let (Some(kind), true) = (
            request.get("kind").and_then(Value::as_str),
            request.get("apiVersion").is_some(),
        ) {
            return Err(InputError::BareObject {
                kind: kind.to_string(),
            });
        }
        return Err(InputError::NoOperation);
    }
    Ok(request)
}

/// Who makes a request built from an object (`userInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requester {
    /// The user name; empty for an anonymous request.
    pub username: String,
    /// The user's groups.
    pub groups: Vec<String>,
}

/// What an AdmissionRequest built from objects is about.
#[derive(Debug, Clone, Default)]
pub struct ObjectRequest {
    /// The object as sent (absent for DELETE).
    pub object: Option<Value>,
    /// The stored object (UPDATE, DELETE).
    pub old_object: Option<Value>,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`; inferred when `None`:
    /// UPDATE with an old object, else CREATE.
    pub operation: Option<String>,
    /// The namespace the request is made in, for objects that name none.
    pub namespace: Option<String>,
    /// The requester.
    pub user: Requester,
}

/// Why a request cannot be built from the objects given.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ObjectRequestError {
    /// Neither an object nor an old object.
    #[error("give an object (--object) or, for DELETE, the stored object (--old-object)")]
    NoObject,
    /// An object without `apiVersion` or `kind`.
    #[error("the object has no {0}: a Kubernetes object names its apiVersion and kind")]
    NoType(&'static str),
    /// The object's namespace and the requested one differ.
    #[error(
        "the object's namespace \"{object}\" does not match --namespace \"{requested}\" (as kubectl refuses it)"
    )]
    NamespaceMismatch {
        /// `metadata.namespace`.
        object: String,
        /// The namespace asked for.
        requested: String,
    },
    /// An operation the API server does not send to webhooks.
    #[error("unknown operation {0:?}: use CREATE, UPDATE, DELETE or CONNECT")]
    Operation(String),
    /// An UPDATE with no stored object to compare to.
    #[error("an UPDATE needs the stored object: give --old-object")]
    UpdateWithoutOld,
}

/// The AdmissionRequest the API server would send a validating webhook for
/// `request`: `kind`, `resource` (guessed from the kind as client-go's
/// `meta.UnsafeGuessKindToResource` does, since no discovery is at hand),
/// `name` and `namespace` from the object's metadata, the operation, the
/// requester, `object` and `oldObject`.
///
/// ```
/// use olm_guard_evaluator::input::{ObjectRequest, request_for_object};
/// use serde_json::json;
///
/// let object = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
///                     "metadata": {"name": "ops", "namespace": "olm"}});
/// let request = request_for_object(ObjectRequest { object: Some(object), ..Default::default() }).unwrap();
/// assert_eq!(request["operation"], "CREATE");
/// assert_eq!(request["resource"]["resource"], "catalogsources");
/// assert_eq!(request["namespace"], "olm");
/// ```
pub fn request_for_object(request: ObjectRequest) -> Result<Value, ObjectRequestError> {
    let ObjectRequest {
        mut object,
        mut old_object,
        operation,
        namespace,
        user,
    } = request;
    let operation = match operation.map(|o| o.to_ascii_uppercase()) {
        Some(op) if ["CREATE", "UPDATE", "DELETE", "CONNECT"].contains(&op.as_str()) => op,
        Some(op) => return Err(ObjectRequestError::Operation(op)),
        None if old_object.is_some() && object.is_some() => "UPDATE".to_string(),
        None if object.is_none() && old_object.is_some() => "DELETE".to_string(),
        None => "CREATE".to_string(),
    };
    // A DELETE carries the object being deleted as oldObject, and no object.
    if operation == "DELETE" && old_object.is_none() {
        old_object = object.take();
    }
    if operation == "UPDATE" && old_object.is_none() {
        return Err(ObjectRequestError::UpdateWithoutOld);
    }
    let subject = object
        .as_ref()
        .or(old_object.as_ref())
        .ok_or(ObjectRequestError::NoObject)?;
    let text = |key: &str| subject.get(key).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (text("apiVersion").to_string(), text("kind").to_string());
    if api_version.is_empty() {
        return Err(ObjectRequestError::NoType("apiVersion"));
    }
    if kind.is_empty() {
        return Err(ObjectRequestError::NoType("kind"));
    }
    let meta = olm_guard_core::ObjectMeta::of(subject);
    let name = meta.name.clone();
    let namespace = match (meta.namespace.as_str(), namespace) {
        ("", Some(requested)) => {
            // The API server takes the namespace from the request path.
            for o in [object.as_mut(), old_object.as_mut()].into_iter().flatten() {
                if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.insert("namespace".into(), Value::String(requested.clone()));
                }
            }
            requested
        }
        (ns, Some(requested)) if ns != requested => {
            return Err(ObjectRequestError::NamespaceMismatch {
                object: ns.to_string(),
                requested,
            });
        }
        (ns, _) => ns.to_string(),
    };
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (group.to_string(), version.to_string()),
        None => (String::new(), api_version.clone()),
    };
    let group_version_kind = json!({"group": group, "version": version, "kind": kind});
    let resource = json!({"group": group, "version": version, "resource": guess_resource(&kind)});
    let mut user_info = serde_json::Map::new();
    if !user.username.is_empty() {
        user_info.insert("username".into(), Value::String(user.username));
    }
    if !user.groups.is_empty() {
        user_info.insert("groups".into(), json!(user.groups));
    }
    let mut request = json!({
        "uid": "olm-guard-run",
        "kind": group_version_kind,
        "resource": resource,
        "requestKind": group_version_kind,
        "requestResource": resource,
        "name": name,
        "namespace": namespace,
        "operation": operation,
        "userInfo": user_info,
        "dryRun": false,
    });
    if namespace.is_empty() {
        request.as_object_mut().map(|r| r.remove("namespace"));
    }
    if let Some(object) = object {
        request["object"] = object;
    }
    if let Some(old) = old_object {
        request["oldObject"] = old;
    }
    Ok(request)
}

/// The resource (plural) name for `kind`, as client-go guesses it without
/// discovery (`k8s.io/apimachinery/pkg/api/meta/restmapper.go`,
/// `UnsafeGuessKindToResource`): lower case; `endpoints` stays as it is;
/// then `-s` → `-ses`, `-y` → `-ies`, else `+s`. Right for every kind the
/// modules here are sent (not for a kind like `Gateway`: `gatewaies`).
pub fn guess_resource(kind: &str) -> String {
    let singular = kind.to_lowercase();
    if singular.ends_with("endpoints") {
        singular
    } else if let Some(stem) = singular.strip_suffix('y') {
        format!("{stem}ies")
    } else if singular.ends_with('s') {
        format!("{singular}es")
    } else if singular.is_empty() {
        singular
    } else {
        format!("{singular}s")
    }
}

/// Settings as Kubewarden passes them: an object; absent or null is `{}`.
pub fn settings_object(settings: Option<Value>) -> Result<Value, InputError> {
    match settings {
        None | Some(Value::Null) => Ok(json!({})),
        Some(v @ Value::Object(_)) => Ok(v),
        Some(_) => Err(InputError::SettingsNotAnObject),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_with_a_request_key_is_a_review() {
        let request = admission_request(json!({"request": {"operation": "CREATE"}})).unwrap();
        assert_eq!(request, json!({"operation": "CREATE"}));
    }

    #[test]
    fn a_bare_object_is_refused_with_the_way_to_evaluate_it() {
        let err = admission_request(json!({"apiVersion": "v1", "kind": "ConfigMap"})).unwrap_err();
        assert!(err.to_string().contains("--object"), "{err}");
        assert!(err.to_string().contains("ConfigMap"), "{err}");
    }

    #[test]
    fn resources_are_guessed_as_client_go_does() {
        for (kind, resource) in [
            ("CatalogSource", "catalogsources"),
            ("OperatorGroup", "operatorgroups"),
            ("ClusterRole", "clusterroles"),
            ("Policy", "policies"),
            ("Ingress", "ingresses"),
            ("ScopeInstance", "scopeinstances"),
            ("Endpoints", "endpoints"),
            // Wrong, as Kubernetes' own guess is, for a vowel before `y`.
            ("Gateway", "gatewaies"),
        ] {
            assert_eq!(guess_resource(kind), resource);
        }
    }

    fn object(namespace: Option<&str>) -> Value {
        let mut metadata = json!({"name": "a"});
        if let Some(ns) = namespace {
            metadata["namespace"] = json!(ns);
        }
        json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup", "metadata": metadata})
    }

    #[test]
    fn the_operation_is_inferred_from_the_objects_given() {
        let build = |object: Option<Value>, old: Option<Value>| {
            request_for_object(ObjectRequest {
                object,
                old_object: old,
                ..Default::default()
            })
            .map(|r| r["operation"].clone())
        };
        assert_eq!(build(Some(object(None)), None), Ok(json!("CREATE")));
        assert_eq!(
            build(Some(object(None)), Some(object(None))),
            Ok(json!("UPDATE"))
        );
        assert_eq!(build(None, Some(object(None))), Ok(json!("DELETE")));
        assert_eq!(build(None, None), Err(ObjectRequestError::NoObject));
    }

    #[test]
    fn a_delete_sends_the_object_as_old_object() {
        let request = request_for_object(ObjectRequest {
            object: Some(object(Some("ns"))),
            operation: Some("delete".into()),
            ..Default::default()
        })
        .unwrap();
        assert!(request.get("object").is_none());
        assert_eq!(request["oldObject"]["metadata"]["name"], "a");
        assert_eq!(request["namespace"], "ns");
    }

    #[test]
    fn the_namespace_comes_from_the_object_or_the_flag_but_they_must_agree() {
        let request = request_for_object(ObjectRequest {
            object: Some(object(None)),
            namespace: Some("team".into()),
            user: Requester {
                username: "alice".into(),
                groups: vec!["team-a".into()],
            },
            ..Default::default()
        })
        .unwrap();
        assert_eq!(request["namespace"], "team");
        assert_eq!(request["object"]["metadata"]["namespace"], "team");
        assert_eq!(
            request["userInfo"],
            json!({"username": "alice", "groups": ["team-a"]})
        );
        let err = request_for_object(ObjectRequest {
            object: Some(object(Some("a"))),
            namespace: Some("b".into()),
            ..Default::default()
        })
        .unwrap_err();
        assert!(matches!(err, ObjectRequestError::NamespaceMismatch { .. }));
    }

    #[test]
    fn a_json_file_gets_the_json_parsers_error() {
        let dir = std::env::temp_dir().join(format!("olm-guard-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cut.json");
        std::fs::write(&path, "{\n  \"request\": {\n").unwrap();
        let err = read_document(&path).unwrap_err();
        let chain = format!("{err}: {}", std::error::Error::source(&err).unwrap());
        assert!(chain.contains("is not valid JSON"), "{chain}");
        assert!(chain.contains("line 3"), "{chain}");
        std::fs::remove_dir_all(&dir).ok();
    }
}

/// What the API server matches webhook rules against: a request's group,
/// version, resource, subresource and operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// `request.resource.group` (`""` for the core group).
    pub group: String,
    /// `request.resource.version`.
    pub version: String,
    /// `request.resource.resource`, the plural.
    pub resource: String,
    /// `request.subResource`, `""` for the resource itself.
    pub subresource: String,
    /// `request.operation`.
    pub operation: String,
}

impl Route {
    /// The route of an AdmissionRequest; `None` when it has no `resource`
    /// object (whether it would be sent cannot be told).
    pub fn of(request: &Value) -> Option<Route> {
        let text =
            |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_string();
        let resource = request.get("resource").filter(|r| r.is_object())?;
        Some(Route {
            group: text(resource, "group"),
            version: text(resource, "version"),
            resource: text(resource, "resource"),
            subresource: text(request, "subResource"),
            operation: text(request, "operation"),
        })
    }

    /// The route as metadata rules are matched against it
    /// ([`olm_guard_runtime::metadata::Metadata::covers`]).
    pub fn target(&self) -> olm_guard_runtime::metadata::RequestTarget<'_> {
        olm_guard_runtime::metadata::RequestTarget {
            group: &self.group,
            version: &self.version,
            resource: &self.resource,
            subresource: &self.subresource,
            operation: &self.operation,
        }
    }
}

/// `CREATE operators.coreos.com/v1alpha1/catalogsources` (`v1/pods/status`
/// for the core group and a subresource).
impl std::fmt::Display for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ", self.operation)?;
        if !self.group.is_empty() {
            write!(f, "{}/", self.group)?;
        }
        write!(f, "{}/{}", self.version, self.resource)?;
        if !self.subresource.is_empty() {
            write!(f, "/{}", self.subresource)?;
        }
        Ok(())
    }
}
