//! Reading what a user hands the evaluator: AdmissionReviews, bare
//! AdmissionRequests and settings, as JSON or YAML.

use std::path::{Path, PathBuf};

use olm_guard_core::decode::json_type;
use serde::Deserialize;
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
    /// A YAML stream of several documents where one is read.
    #[error(
        "{}: one document expected, found {count} (separated by `---`): give the one document, or each in its own file",
        path.display()
    )]
    Documents {
        /// The file.
        path: PathBuf,
        /// How many documents it holds.
        count: usize,
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
    /// A field of the request holds what the API server never sends there.
    #[error("the AdmissionRequest's {field} {problem}")]
    Field {
        /// The field, as a path (`kind.version`).
        field: &'static str,
        /// What is wrong with it, and what the API server sends.
        problem: String,
    },
    /// Settings that are not a mapping.
    #[error("settings must be an object")]
    SettingsNotAnObject,
}

/// Reads a JSON or YAML file holding one document ([`document_of`]).
pub fn read_document(path: &Path) -> Result<Value, InputError> {
    let text = std::fs::read_to_string(path).map_err(|source| InputError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    document_of(path, &text)
}

/// The one document of `text`, read from `path` (the name errors give it:
/// a file, or `<stdin>`). A `.json` file is read as JSON only, so its
/// errors are the JSON parser's (line and column of the fault); anything
/// else as JSON, or else YAML. An empty text is `null`; a YAML stream of
/// several documents is refused, saying how many it holds (empty documents,
/// such as a trailing `---`, do not count).
pub fn document_of(path: &Path, text: &str) -> Result<Value, InputError> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    {
        return serde_json::from_str(text).map_err(|source| InputError::Json {
            path: path.to_path_buf(),
            source,
        });
    }
    if let Ok(value) = serde_json::from_str(text) {
        return Ok(value);
    }
    let parse = |source| InputError::Parse {
        path: path.to_path_buf(),
        source,
    };
    let mut documents = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        let value = Value::deserialize(document).map_err(parse)?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    match documents.len() {
        0 => Ok(Value::Null),
        1 => Ok(documents.remove(0)),
        count => Err(InputError::Documents {
            path: path.to_path_buf(),
            count,
        }),
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
    check_request(&request)?;
    Ok(request)
}

/// The operations the API server sends to admission webhooks, as it spells
/// them (k8s.io/api `admission/v1/types.go`, `Operation`).
const OPERATIONS: [&str; 4] = ["CREATE", "UPDATE", "DELETE", "CONNECT"];

/// Refuses a request the API server could never send, naming the field:
/// an operation it does not spell so, a `kind` without its version and
/// kind (the API server always sends `{group, version, kind}`), and
/// fields of the wrong type. What a hand-written request may leave out
/// (`uid`, `userInfo`, `resource`, `object`) is not required; a module
/// judges an object of the wrong shape itself.
fn check_request(request: &Value) -> Result<(), InputError> {
    let field = |field: &'static str, problem: String| InputError::Field { field, problem };
    let operation = request
        .get("operation")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !OPERATIONS.contains(&operation) {
        let hint = OPERATIONS
            .iter()
            .find(|o| o.eq_ignore_ascii_case(operation))
            .map(|o| format!(" (write {o})"))
            .unwrap_or_default();
        return Err(field(
            "operation",
            format!(
                "is {operation:?}, which the API server never sends{hint}: it is one of {}, in capitals",
                OPERATIONS.join(", ")
            ),
        ));
    }
    let gvk = "the API server always sends the object's {group, version, kind}, e.g. {\"group\": \"operators.coreos.com\", \"version\": \"v1alpha1\", \"kind\": \"CatalogSource\"}";
    let Some(kind) = request.get("kind").filter(|k| !k.is_null()) else {
        return Err(field("kind", format!("is missing: {gvk}")));
    };
    let Some(kind) = kind.as_object() else {
        return Err(field(
            "kind",
            format!("is {}, not an object: {gvk}", json_type(kind)),
        ));
    };
    for (key, name) in [("kind", "kind.kind"), ("version", "kind.version")] {
        if kind
            .get(key)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(field(name, format!("is missing or empty: {gvk}")));
        }
    }
    if kind.get("group").is_some_and(|g| !g.is_string()) {
        return Err(field("kind.group", format!("is not a string: {gvk}")));
    }
    for (key, name) in [
        ("uid", "uid"),
        ("name", "name"),
        ("namespace", "namespace"),
        ("subResource", "subResource"),
    ] {
        if let Some(value) = request.get(key).filter(|v| !v.is_null() && !v.is_string()) {
            return Err(field(
                name,
                format!("is {}, not a string", json_type(value)),
            ));
        }
    }
    for (key, name) in [("resource", "resource"), ("userInfo", "userInfo")] {
        if let Some(value) = request.get(key).filter(|v| !v.is_null() && !v.is_object()) {
            return Err(field(
                name,
                format!("is {}, not an object", json_type(value)),
            ));
        }
    }
    Ok(())
}

// Built without wasmtime so the browser playground builds the same request.
pub use olm_guard_core::object_request::{
    ObjectRequest, ObjectRequestError, Requester, guess_resource, numbered_uid, request_for_object,
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

    fn kind() -> Value {
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    }

    #[test]
    fn a_document_with_a_request_key_is_a_review() {
        let request =
            admission_request(json!({"request": {"operation": "CREATE", "kind": kind()}})).unwrap();
        assert_eq!(request, json!({"operation": "CREATE", "kind": kind()}));
    }

    #[test]
    fn a_request_the_api_server_could_never_send_is_refused_naming_the_field() {
        let refused = |request: Value| admission_request(request).unwrap_err().to_string();
        let lower = refused(json!({"operation": "create", "kind": kind()}));
        assert!(
            lower.starts_with("the AdmissionRequest's operation is \"create\", which the API server never sends (write CREATE)"),
            "{lower}"
        );
        let no_kind = refused(json!({"operation": "CREATE"}));
        assert!(
            no_kind
                .starts_with("the AdmissionRequest's kind is missing: the API server always sends"),
            "{no_kind}"
        );
        let no_version = refused(json!({"operation": "CREATE", "kind": {"kind": "ConfigMap"}}));
        assert!(
            no_version.contains("kind.version is missing"),
            "{no_version}"
        );
        let name = refused(json!({"operation": "CREATE", "kind": kind(), "name": 3}));
        assert!(name.contains("name is a number, not a string"), "{name}");
        // A shape a module judges itself is left to the module.
        admission_request(json!({"operation": "UPDATE", "kind": kind(), "object": "x"})).unwrap();
    }

    #[test]
    fn several_yaml_documents_are_refused_with_their_count() {
        let path = Path::new("settings.yaml");
        let err = document_of(path, "a: 1\n---\nb: 2\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "settings.yaml: one document expected, found 2 (separated by `---`): give the one document, or each in its own file"
        );
        // A trailing separator is no second document.
        assert_eq!(document_of(path, "a: 1\n---\n").unwrap(), json!({"a": 1}));
        assert_eq!(document_of(path, "").unwrap(), Value::Null);
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
