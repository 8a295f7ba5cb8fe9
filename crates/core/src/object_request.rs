//! The AdmissionRequest the API server would send for a bare object: what
//! `olm-guard run --object` evaluates, and what the browser playground
//! builds, so both judge the same request. Pure (no wasmtime, no files), so
//! it builds for every target the rules build for.

use serde_json::{Value, json};

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

/// The uid of the request for the `number`th of several objects
/// (counting from 1): each request its own, as the API server gives them.
/// A single object's request keeps [`request_for_object`]'s `olm-guard-run`.
pub fn numbered_uid(number: usize) -> String {
    format!("olm-guard-run-{number}")
}

/// The AdmissionRequest the API server would send a validating webhook for
/// `request`: `kind`, `resource` (guessed from the kind as client-go's
/// `meta.UnsafeGuessKindToResource` does, since no discovery is at hand),
/// `name` and `namespace` from the object's metadata, the operation, the
/// requester, `object` and `oldObject`.
///
/// ```
/// use olm_guard_core::object_request::{ObjectRequest, request_for_object};
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
    let meta = crate::ObjectMeta::of(subject);
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
    // `json!` of a mapping is an object; core denies indexing (a panic on
    // any other value), so the fields are set through the map.
    if let Some(map) = request.as_object_mut() {
        if namespace.is_empty() {
            map.remove("namespace");
        }
        if let Some(object) = object {
            map.insert("object".into(), object);
        }
        if let Some(old) = old_object {
            map.insert("oldObject".into(), old);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
