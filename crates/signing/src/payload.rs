//! The simple-signing payload cosign signs (sigstore/cosign
//! `specs/SIGNATURE_SPEC.md`, "Payload"; sigstore/sigstore
//! `pkg/signature/payload/payload.go`):
//!
//! ```json
//! {"critical":{"identity":{"docker-reference":"host/repo"},
//!   "image":{"docker-manifest-digest":"sha256:…"},
//!   "type":"cosign container image signature"},
//!  "optional":{"env":"prod"}}
//! ```
//!
//! The signature covers these exact bytes; `optional` holds the `-a
//! key=value` annotations and is `null` without any, as cosign writes it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The `critical.type` of every cosign image signature.
pub const SIGNATURE_TYPE: &str = "cosign container image signature";

/// A simple-signing payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimpleSigning {
    /// What is signed.
    pub critical: Critical,
    /// The annotations (string values when cosign wrote them; any JSON is
    /// read).
    pub optional: Option<BTreeMap<String, serde_json::Value>>,
}

/// `critical`: the image and its identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Critical {
    /// The repository signed.
    pub identity: Identity,
    /// The manifest digest signed.
    pub image: Image,
    /// [`SIGNATURE_TYPE`].
    #[serde(rename = "type")]
    pub kind: String,
}

/// `critical.identity`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    /// `host/repository`, without tag or digest.
    #[serde(rename = "docker-reference")]
    pub docker_reference: String,
}

/// `critical.image`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Image {
    /// `sha256:<hex>`.
    #[serde(rename = "docker-manifest-digest")]
    pub docker_manifest_digest: String,
}

impl SimpleSigning {
    /// The payload for the manifest `digest` of `docker_reference`, with
    /// `annotations` in `optional`.
    pub fn new(
        docker_reference: &str,
        digest: &str,
        annotations: &BTreeMap<String, String>,
    ) -> SimpleSigning {
        SimpleSigning {
            critical: Critical {
                identity: Identity {
                    docker_reference: docker_reference.to_owned(),
                },
                image: Image {
                    docker_manifest_digest: digest.to_owned(),
                },
                kind: SIGNATURE_TYPE.to_owned(),
            },
            optional: (!annotations.is_empty()).then(|| {
                annotations
                    .iter()
                    .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                    .collect()
            }),
        }
    }

    /// The bytes to sign and store: compact JSON, keys in the order above
    /// (Go's `encoding/json` writes struct fields in order and map keys
    /// sorted).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The value of annotation `key`, as text (a JSON string's contents, any
    /// other JSON value as JSON).
    pub fn annotation(&self, key: &str) -> Option<String> {
        let value = self.optional.as_ref()?.get(key)?;
        Some(match value {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_cosigns() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        let plain = SimpleSigning::new("localhost:5000/policies/x", &digest, &BTreeMap::new());
        assert_eq!(
            String::from_utf8(plain.to_bytes()).unwrap(),
            format!(
                r#"{{"critical":{{"identity":{{"docker-reference":"localhost:5000/policies/x"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"cosign container image signature"}},"optional":null}}"#
            )
        );
        let annotated = SimpleSigning::new(
            "h/r",
            &digest,
            &BTreeMap::from([("z".into(), "1".into()), ("a".into(), "2".into())]),
        );
        let text = String::from_utf8(annotated.to_bytes()).unwrap();
        assert!(text.ends_with(r#""optional":{"a":"2","z":"1"}}"#), "{text}");
        let back: SimpleSigning = serde_json::from_str(&text).unwrap();
        assert_eq!(back, annotated);
        assert_eq!(back.annotation("a").as_deref(), Some("2"));
        assert_eq!(back.annotation("b"), None);
    }
}
