//! Kubewarden's verification config, the file policy-server's
//! `--verification-path` and `kwctl --verification-config-path` read
//! (kubewarden/kubewarden-controller,
//! `crates/policy-fetcher/src/verify/config.rs`, `VerificationSettings`):
//!
//! ```yaml
//! apiVersion: v1
//! allOf:                 # every one must be satisfied
//!   - kind: pubKey
//!     owner: release team     # optional, a name for people
//!     key: |
//!       -----BEGIN PUBLIC KEY-----
//!       …
//!     annotations:            # optional, required in the signed payload
//!       env: prod
//! anyOf:                 # at least minimumMatches (default 1) of them
//!   minimumMatches: 2
//!   signatures:
//!     - kind: pubKey …
//!     - kind: genericIssuer   # keyless: Fulcio certificate identity
//!       issuer: https://token.actions.githubusercontent.com
//!       subject:
//!         equal: …            # or urlPrefix: …
//!     - kind: githubAction    # keyless: a GitHub Actions workflow
//!       owner: kubewarden
//!       repo: policies        # optional
//! ```
//!
//! Keyless kinds are read so a config written for policy-server loads
//! here, but they need Fulcio's certificate chain and Rekor's log, which are
//! on the internet: [`crate::verify`] reports them as not verifiable offline
//! and never counts them as satisfied.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde_yaml_ng::Value;

use crate::keys::{KeyError, PublicKey};

/// The one `apiVersion` Kubewarden defines.
pub const API_VERSION: &str = "v1";

/// The kinds of signature constraint Kubewarden defines.
pub const KINDS: [&str; 3] = ["pubKey", "genericIssuer", "githubAction"];

/// A loaded verification config.
#[derive(Debug, Clone)]
pub struct VerificationConfig {
    /// Constraints every one of which must be satisfied.
    pub all_of: Vec<Constraint>,
    /// Constraints at least `minimum_matches` of which must be satisfied.
    pub any_of: Option<AnyOf>,
}

/// `anyOf`.
#[derive(Debug, Clone)]
pub struct AnyOf {
    /// How many of `signatures` must be satisfied (default 1).
    pub minimum_matches: usize,
    /// The candidates.
    pub signatures: Vec<Constraint>,
}

/// One signature constraint, with where it stands in the file.
#[derive(Debug, Clone)]
pub struct Constraint {
    /// `allOf[0]`, `anyOf.signatures[1]`, or `-k key.pub` for a key on the
    /// command line.
    pub location: String,
    /// What it requires.
    pub signature: Signature,
}

/// What a constraint requires.
#[derive(Debug, Clone)]
pub enum Signature {
    /// A signature by this key carrying these annotations.
    PubKey {
        /// A name for people.
        owner: Option<String>,
        /// The key.
        key: PublicKey,
        /// Annotations the signed payload must carry, with these values.
        annotations: BTreeMap<String, String>,
    },
    /// A keyless signature whose Fulcio certificate names this issuer and
    /// subject.
    GenericIssuer {
        /// The OIDC issuer.
        issuer: String,
        /// `equal: …` or `urlPrefix: …`, as written.
        subject: String,
    },
    /// A keyless signature made by a GitHub Actions workflow of this owner
    /// (and repository).
    GithubAction {
        /// The GitHub owner.
        owner: String,
        /// The repository, if given.
        repo: Option<String>,
    },
}

impl Signature {
    /// Whether it can be checked without the internet.
    pub fn is_offline(&self) -> bool {
        matches!(self, Signature::PubKey { .. })
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Signature::PubKey {
                owner,
                key,
                annotations,
            } => {
                write!(f, "pubKey {}", key.fingerprint())?;
                if let Some(owner) = owner {
                    write!(f, " ({owner})")?;
                }
                if !annotations.is_empty() {
                    let pairs: Vec<String> = annotations
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect();
                    write!(f, " with {}", pairs.join(","))?;
                }
                Ok(())
            }
            Signature::GenericIssuer { issuer, subject } => {
                write!(f, "genericIssuer {issuer} {subject}")
            }
            Signature::GithubAction { owner, repo } => match repo {
                Some(repo) => write!(f, "githubAction {owner}/{repo}"),
                None => write!(f, "githubAction {owner}"),
            },
        }
    }
}

/// Why a verification config cannot be used: one line naming the file, the
/// place in it, and the fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read. (The I/O error is in the message, not
    /// also a source, which `{:#}` would print a second time.)
    #[error("{file}: {error}")]
    Io {
        /// The file.
        file: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The file is not what Kubewarden's format allows.
    #[error("{file}: {place}{reason}")]
    Invalid {
        /// The file.
        file: String,
        /// `allOf[0]: ` or empty.
        place: String,
        /// What is wrong and the fix.
        reason: String,
    },
    /// A `pubKey` whose key cannot be used.
    #[error(transparent)]
    Key(#[from] KeyError),
}

impl VerificationConfig {
    /// Read and check the config at `path`.
    pub fn read(path: &std::path::Path) -> Result<VerificationConfig, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Io {
            file: file.clone(),
            error,
        })?;
        VerificationConfig::parse(&text, &file)
    }

    /// Check the config `text`; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<VerificationConfig, ConfigError> {
        let invalid = |place: &str, reason: String| ConfigError::Invalid {
            file: file.to_owned(),
            place: if place.is_empty() {
                String::new()
            } else {
                format!("{place}: ")
            },
            reason,
        };
        let root: Value = serde_yaml_ng::from_str(text).map_err(|e| {
            invalid(
                "",
                format!("not YAML ({})", e.to_string().replace('\n', " ")),
            )
        })?;
        let Value::Mapping(root) = root else {
            return Err(invalid(
                "",
                "not a mapping; a verification config has apiVersion: v1 and allOf and/or anyOf"
                    .into(),
            ));
        };
        let mut all_of = Vec::new();
        let mut any_of = None;
        let mut api_version = None;
        for (key, value) in &root {
            match key.as_str() {
                Some("apiVersion") => api_version = value.as_str().map(str::to_owned),
                Some("allOf") => {
                    let list = value.as_sequence().ok_or_else(|| {
                        invalid("allOf", "not a list; write a list of signatures".into())
                    })?;
                    for (i, item) in list.iter().enumerate() {
                        all_of.push(constraint(item, &format!("allOf[{i}]"), file)?);
                    }
                }
                Some("anyOf") => any_of = Some(read_any_of(value, file)?),
                other => {
                    return Err(invalid(
                        "",
                        format!(
                            "unknown field `{}`; the fields are apiVersion, allOf and anyOf",
                            other.unwrap_or("?")
                        ),
                    ));
                }
            }
        }
        match api_version.as_deref() {
            Some(API_VERSION) => {}
            Some(other) => {
                return Err(invalid(
                    "apiVersion",
                    format!("{other} is not supported; write apiVersion: v1"),
                ));
            }
            None => return Err(invalid("", "no apiVersion; write apiVersion: v1".into())),
        }
        if all_of.is_empty() && any_of.as_ref().is_none_or(|a| a.signatures.is_empty()) {
            return Err(invalid(
                "",
                "no signatures in allOf or anyOf; list at least one (kind: pubKey with your cosign.pub)"
                    .into(),
            ));
        }
        Ok(VerificationConfig { all_of, any_of })
    }

    /// The config `verify -k key.pub -a k=v` stands for: every key in
    /// `allOf`, each with the annotations (kwctl's `verify_pub_key`).
    pub fn from_keys(
        keys: Vec<(String, PublicKey)>,
        annotations: &BTreeMap<String, String>,
    ) -> Self {
        VerificationConfig {
            all_of: keys
                .into_iter()
                .map(|(source, key)| Constraint {
                    location: format!("-k {source}"),
                    signature: Signature::PubKey {
                        owner: None,
                        key,
                        annotations: annotations.clone(),
                    },
                })
                .collect(),
            any_of: None,
        }
    }
}

fn read_any_of(value: &Value, file: &str) -> Result<AnyOf, ConfigError> {
    let invalid = |place: &str, reason: String| ConfigError::Invalid {
        file: file.to_owned(),
        place: format!("{place}: "),
        reason,
    };
    let Value::Mapping(map) = value else {
        return Err(invalid(
            "anyOf",
            "not a mapping; write anyOf: {minimumMatches: N, signatures: [...]}".into(),
        ));
    };
    let mut minimum_matches = 1;
    let mut signatures = Vec::new();
    for (key, value) in map {
        match key.as_str() {
            Some("minimumMatches") => {
                minimum_matches = value
                    .as_u64()
                    .filter(|n| *n >= 1 && *n <= u64::from(u8::MAX))
                    .ok_or_else(|| {
                        invalid(
                            "anyOf.minimumMatches",
                            "not a whole number from 1 to 255".into(),
                        )
                    })? as usize;
            }
            Some("signatures") => {
                let list = value.as_sequence().ok_or_else(|| {
                    invalid(
                        "anyOf.signatures",
                        "not a list; write a list of signatures".into(),
                    )
                })?;
                for (i, item) in list.iter().enumerate() {
                    signatures.push(constraint(item, &format!("anyOf.signatures[{i}]"), file)?);
                }
            }
            other => {
                return Err(invalid(
                    "anyOf",
                    format!(
                        "unknown field `{}`; the fields are minimumMatches and signatures",
                        other.unwrap_or("?")
                    ),
                ));
            }
        }
    }
    if minimum_matches > signatures.len() {
        return Err(invalid(
            "anyOf.minimumMatches",
            format!(
                "{minimum_matches} but only {} signatures are listed, so nothing could pass; lower it or list more",
                signatures.len()
            ),
        ));
    }
    Ok(AnyOf {
        minimum_matches,
        signatures,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PubKeyFields {
    owner: Option<String>,
    key: String,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// `subject`: `equal` or `urlPrefix` (a struct rather than an enum:
/// serde_yaml_ng reads an enum from a `Value` only in its tagged form).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SubjectFields {
    equal: Option<String>,
    url_prefix: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GenericIssuerFields {
    issuer: String,
    subject: SubjectFields,
    #[serde(default, rename = "annotations")]
    _annotations: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GithubActionFields {
    owner: String,
    repo: Option<String>,
    #[serde(default, rename = "annotations")]
    _annotations: BTreeMap<String, String>,
}

/// One list item: `kind` picks the fields, read strictly.
fn constraint(item: &Value, place: &str, file: &str) -> Result<Constraint, ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid {
        file: file.to_owned(),
        place: format!("{place}: "),
        reason,
    };
    let Value::Mapping(map) = item else {
        return Err(invalid(
            "not a mapping; each signature is a mapping with a kind".into(),
        ));
    };
    let kind = map
        .get("kind")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("no kind; write kind: one of {}", KINDS.join(", "))))?
        .to_owned();
    let mut fields = map.clone();
    fields.remove("kind");
    let fields = Value::Mapping(fields);
    let strict = |e: serde_yaml_ng::Error| {
        invalid(format!("kind {kind}: {}", e.to_string().replace('\n', " ")))
    };
    let signature = match kind.as_str() {
        "pubKey" => {
            let f: PubKeyFields = serde_yaml_ng::from_value(fields).map_err(strict)?;
            let key = PublicKey::from_pem(&f.key, &format!("{file}: {place}.key"))?;
            Signature::PubKey {
                owner: f.owner,
                key,
                annotations: f.annotations,
            }
        }
        "genericIssuer" => {
            let f: GenericIssuerFields = serde_yaml_ng::from_value(fields).map_err(strict)?;
            Signature::GenericIssuer {
                issuer: f.issuer,
                subject: match (f.subject.equal, f.subject.url_prefix) {
                    (Some(s), None) => format!("subject {s}"),
                    (None, Some(s)) => format!("subject prefix {s}"),
                    _ => {
                        return Err(invalid(
                            "kind genericIssuer: subject: give one of equal or urlPrefix".into(),
                        ));
                    }
                },
            }
        }
        "githubAction" => {
            let f: GithubActionFields = serde_yaml_ng::from_value(fields).map_err(strict)?;
            Signature::GithubAction {
                owner: f.owner,
                repo: f.repo,
            }
        }
        other => {
            return Err(invalid(format!(
                "unknown kind `{other}`; use one of {} (Kubewarden's verification config v1)",
                KINDS.join(", ")
            )));
        }
    };
    Ok(Constraint {
        location: place.to_owned(),
        signature,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::generate;

    /// A new public key as a YAML block scalar's lines, indented.
    fn key_yaml(indent: usize) -> String {
        let pair = generate(b"").unwrap();
        pair.public_pem
            .lines()
            .map(|l| format!("{}{l}\n", " ".repeat(indent)))
            .collect()
    }

    #[test]
    fn kubewardens_shape_is_read() {
        let key = key_yaml(6);
        let text = format!(
            "apiVersion: v1\nallOf:\n  - kind: pubKey\n    owner: me\n    key: |\n{key}    annotations:\n      env: prod\nanyOf:\n  minimumMatches: 1\n  signatures:\n    - kind: githubAction\n      owner: kubewarden\n    - kind: genericIssuer\n      issuer: https://token.actions.githubusercontent.com\n      subject:\n        urlPrefix: https://github.com/kubewarden\n"
        );
        let config = VerificationConfig::parse(&text, "v.yml").unwrap();
        assert_eq!(config.all_of.len(), 1);
        assert_eq!(config.all_of[0].location, "allOf[0]");
        let Signature::PubKey {
            owner, annotations, ..
        } = &config.all_of[0].signature
        else {
            panic!("not a pubKey");
        };
        assert_eq!(owner.as_deref(), Some("me"));
        assert_eq!(annotations.get("env").map(String::as_str), Some("prod"));
        let any_of = config.any_of.unwrap();
        assert_eq!(any_of.minimum_matches, 1);
        assert!(!any_of.signatures[0].signature.is_offline());
        assert_eq!(
            any_of.signatures[1].signature.to_string(),
            "genericIssuer https://token.actions.githubusercontent.com subject prefix https://github.com/kubewarden"
        );
    }

    #[test]
    fn bad_configs_get_one_line_naming_the_place_and_the_fix() {
        let key = key_yaml(6);
        let deeper = key_yaml(8);
        let cases = [
            (
                "apiVersion: v1\nallOf:\n  - kind: pubKeyRef\n    key: x\n".to_string(),
                "v.yml: allOf[0]: unknown kind `pubKeyRef`; use one of pubKey, genericIssuer, githubAction",
            ),
            (
                "apiVersion: v2\nallOf: []\n".into(),
                "v.yml: apiVersion: v2 is not supported",
            ),
            ("allOf: []\n".into(), "v.yml: no apiVersion"),
            (
                "apiVersion: v1\n".into(),
                "v.yml: no signatures in allOf or anyOf",
            ),
            (
                format!(
                    "apiVersion: v1\nanyOf:\n  minimumMatches: 2\n  signatures:\n    - kind: pubKey\n      key: |\n{deeper}"
                ),
                "v.yml: anyOf.minimumMatches: 2 but only 1 signatures",
            ),
            (
                format!("apiVersion: v1\nallOf:\n  - kind: pubKey\n    keys: |\n{key}"),
                "v.yml: allOf[0]: kind pubKey: unknown field `keys`",
            ),
            (
                "apiVersion: v1\nallOf:\n  - kind: pubKey\n    key: hello\n".into(),
                "v.yml: allOf[0].key: not a PEM key",
            ),
            (
                "apiVersion: v1\nallOf:\n  - kind: genericIssuer\n    issuer: x\n".into(),
                "v.yml: allOf[0]: kind genericIssuer: missing field `subject`",
            ),
        ];
        for (text, want) in cases {
            let err = VerificationConfig::parse(&text, "v.yml")
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(want), "{err}\nwant: {want}");
            assert!(!err.contains('\n'), "{err}");
        }
    }
}
