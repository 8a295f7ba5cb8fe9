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
    /// The text is neither JSON nor YAML.
    #[error("{} is neither JSON nor YAML", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The YAML parser's account (YAML is a superset of JSON).
        #[source]
        source: serde_yaml::Error,
    },
    /// An AdmissionReview without a `request` object.
    #[error("the AdmissionReview has no request object")]
    NoRequest,
    /// The document is not a JSON object.
    #[error("expected an AdmissionReview or an AdmissionRequest object")]
    NotAnObject,
    /// The request has no `operation`.
    #[error("the AdmissionRequest has no operation (CREATE, UPDATE, DELETE or CONNECT)")]
    NoOperation,
    /// Settings that are not a mapping.
    #[error("settings must be an object")]
    SettingsNotAnObject,
}

/// Reads a JSON or YAML file.
pub fn read_document(path: &Path) -> Result<Value, InputError> {
    let text = std::fs::read_to_string(path).map_err(|source| InputError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_document(&text).map_err(|source| InputError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

/// JSON, or else YAML.
pub fn parse_document(text: &str) -> Result<Value, serde_yaml::Error> {
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(_) => serde_yaml::from_str(text),
    }
}

/// The AdmissionRequest of a full AdmissionReview, or the request itself.
pub fn admission_request(document: Value) -> Result<Value, InputError> {
    let request = match document {
        Value::Object(mut map)
            if map.get("kind").and_then(Value::as_str) == Some("AdmissionReview") =>
        {
            map.remove("request")
                .filter(Value::is_object)
                .ok_or(InputError::NoRequest)?
        }
        Value::Object(map) => Value::Object(map),
        _ => return Err(InputError::NotAnObject),
    };
    if request.get("operation").and_then(Value::as_str).is_none() {
        return Err(InputError::NoOperation);
    }
    Ok(request)
}

/// Settings as Kubewarden passes them: an object; absent or null is `{}`.
pub fn settings_object(settings: Option<Value>) -> Result<Value, InputError> {
    match settings {
        None | Some(Value::Null) => Ok(json!({})),
        Some(v @ Value::Object(_)) => Ok(v),
        Some(_) => Err(InputError::SettingsNotAnObject),
    }
}
