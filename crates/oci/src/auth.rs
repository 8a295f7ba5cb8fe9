//! Registry credentials from the Docker config file, as kwctl reads them
//! (kubewarden/kubewarden-controller,
//! `crates/policy-fetcher/src/registry/config.rs`, `DockerConfig`): the
//! `auths.<registry>.auth` entries, base64 of `user:password`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde::Deserialize;

use crate::OciError;

/// The default Docker config file: `$DOCKER_CONFIG/config.json`, else
/// `~/.docker/config.json` (the Docker CLI's own rule).
pub fn docker_config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG") {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker/config.json"))
}

/// The credentials of a Docker config file.
#[derive(Debug, Clone, Default)]
pub struct DockerConfig {
    /// Registry host (as written in the file, scheme and path stripped) →
    /// user and password.
    auths: BTreeMap<String, (String, String)>,
}

/// Why a Docker config file's text cannot be used, naming the entry and
/// the fix.
#[derive(Debug, thiserror::Error)]
pub enum DockerConfigError {
    /// The text is not the JSON of a Docker config file.
    #[error("not a Docker config file: {problem}")]
    Format {
        /// What the JSON reader said (in this message, so not also a
        /// source).
        problem: serde_json::Error,
    },
    /// An `auth` entry that is not base64 of `user:password`.
    #[error(
        "auths.\"{registry}\".auth is not base64 of user:password; run `docker login {registry}` again"
    )]
    Auth {
        /// The entry's key, as written in the file.
        registry: String,
    },
}

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    auths: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

impl DockerConfig {
    /// Read and decode `path`.
    pub fn read(path: &Path) -> Result<DockerConfig, OciError> {
        let text = std::fs::read_to_string(path).map_err(|e| OciError::DockerConfig {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        DockerConfig::parse(&text).map_err(|e| OciError::DockerConfig {
            path: path.display().to_string(),
            reason: e.to_string(),
        })
    }

    /// Decode the JSON of a Docker config file; the error names the entry.
    pub fn parse(text: &str) -> Result<DockerConfig, DockerConfigError> {
        let file: File =
            serde_json::from_str(text).map_err(|problem| DockerConfigError::Format { problem })?;
        let mut auths = BTreeMap::new();
        for (key, entry) in file.auths {
            let credentials = match (entry.auth, entry.username, entry.password) {
                (Some(auth), _, _) if !auth.is_empty() => {
                    decode(&auth).ok_or_else(|| DockerConfigError::Auth {
                        registry: key.clone(),
                    })?
                }
                (_, Some(user), Some(password)) => (user, password),
                // Entries backed by a credential helper carry no secret here.
                _ => continue,
            };
            auths.insert(registry_host(&key).to_owned(), credentials);
        }
        Ok(DockerConfig { auths })
    }

    /// The user and password for `registry` (`host[:port]`), if any.
    pub fn auth_for(&self, registry: &str) -> Option<(String, String)> {
        self.auths.get(registry).cloned().or_else(|| {
            // Docker Hub's entry is keyed by its v1 index URL.
            (registry == "index.docker.io")
                .then(|| self.auths.get("docker.io").cloned())
                .flatten()
        })
    }
}

/// `https://host:port/v1/` → `host:port`; the Docker CLI writes both forms.
fn registry_host(key: &str) -> &str {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = key.split('/').next().unwrap_or(key);
    if host == "index.docker.io" {
        "docker.io"
    } else {
        host
    }
}

fn decode(auth: &str) -> Option<(String, String)> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(auth.trim())
        .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_entries_by_host_with_or_without_scheme() {
        // base64("alice:s3cr:et") and base64("bob:pw")
        let config = DockerConfig::parse(
            r#"{"auths": {
                "127.0.0.1:5000": {"auth": "YWxpY2U6czNjcjpldA=="},
                "https://index.docker.io/v1/": {"auth": "Ym9iOnB3"},
                "ghcr.io": {"username": "carol", "password": "tok"},
                "quay.io": {}
            }, "credsStore": "desktop"}"#,
        )
        .unwrap();
        assert_eq!(
            config.auth_for("127.0.0.1:5000"),
            Some(("alice".into(), "s3cr:et".into()))
        );
        assert_eq!(
            config.auth_for("index.docker.io"),
            Some(("bob".into(), "pw".into()))
        );
        assert_eq!(
            config.auth_for("ghcr.io"),
            Some(("carol".into(), "tok".into()))
        );
        assert_eq!(config.auth_for("quay.io"), None);
        assert_eq!(config.auth_for("127.0.0.1:5001"), None);
    }

    #[test]
    fn a_bad_auth_names_the_entry_and_the_fix() {
        let err = DockerConfig::parse(r#"{"auths": {"r.example": {"auth": "!!"}}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("auths.\"r.example\".auth"), "{err}");
        assert!(err.contains("docker login r.example"), "{err}");
    }
}
