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

// Built without wasmtime so the browser playground builds the same request.
pub use olm_guard_core::object_request::{
    ObjectRequest, ObjectRequestError, Requester, guess_resource, request_for_object,
};

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
