//! `registry://host[:port]/repository(:tag|@digest)`, the policy reference
//! kwctl and policy-server accept (kubewarden/kubewarden-controller,
//! `crates/policy-fetcher/src/lib.rs`, `url_fetcher`).

use std::fmt;

use oci_client::Reference;

use crate::OciError;

/// The scheme of a policy in an OCI registry.
pub const SCHEME: &str = "registry://";

/// A parsed `registry://` reference.
#[derive(Debug, Clone)]
pub struct PolicyRef {
    /// The OCI reference (`host/repository:tag` or `…@sha256:…`).
    pub oci: Reference,
}

impl PolicyRef {
    /// Whether `text` names a policy in a registry rather than a file.
    pub fn is_registry(text: &str) -> bool {
        text.starts_with(SCHEME)
    }

    /// Parse `registry://host[:port]/repository(:tag|@digest)`.
    pub fn parse(text: &str) -> Result<PolicyRef, OciError> {
        let invalid = |reason: String| OciError::InvalidReference {
            reference: text.to_owned(),
            reason,
        };
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or_else(|| invalid(format!("it does not start with {SCHEME}")))?;
        if !rest.contains('/') {
            return Err(invalid("no repository after the host".into()));
        }
        let oci: Reference = rest.parse().map_err(|e| invalid(format!("{e}")))?;
        Ok(PolicyRef { oci })
    }

    /// The same repository by `digest`, `registry://host/repo@sha256:…`.
    pub fn with_digest(&self, digest: &str) -> String {
        format!(
            "{SCHEME}{}/{}@{digest}",
            self.oci.registry(),
            self.oci.repository()
        )
    }

    /// What the reference selects, for messages: `tag v1` or `digest sha256:…`.
    pub fn target(&self) -> String {
        match (self.oci.digest(), self.oci.tag()) {
            (Some(digest), _) => format!("digest {digest}"),
            (None, Some(tag)) => format!("tag {tag}"),
            (None, None) => "tag latest".into(),
        }
    }
}

impl fmt::Display for PolicyRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}", self.oci)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_ports_and_digests() {
        let by_tag =
            PolicyRef::parse("registry://127.0.0.1:5000/policies/catalog-union:v1").unwrap();
        assert_eq!(by_tag.oci.registry(), "127.0.0.1:5000");
        assert_eq!(by_tag.oci.repository(), "policies/catalog-union");
        assert_eq!(by_tag.target(), "tag v1");
        assert_eq!(
            by_tag.to_string(),
            "registry://127.0.0.1:5000/policies/catalog-union:v1"
        );
        let digest = format!("sha256:{}", "a".repeat(64));
        assert_eq!(
            by_tag.with_digest(&digest),
            format!("registry://127.0.0.1:5000/policies/catalog-union@{digest}")
        );
        let by_digest = PolicyRef::parse(&by_tag.with_digest(&digest)).unwrap();
        assert_eq!(by_digest.oci.digest(), Some(digest.as_str()));
        assert_eq!(by_digest.target(), format!("digest {digest}"));
    }

    #[test]
    fn refusals_name_the_reference_and_the_form() {
        for bad in [
            "127.0.0.1:5000/x:v1",
            "registry://localhost",
            "registry://localhost/UPPER:v1",
        ] {
            let err = PolicyRef::parse(bad).unwrap_err().to_string();
            assert!(err.starts_with(bad), "{err}");
            assert!(
                err.contains("registry://host[:port]/repository:tag"),
                "{err}"
            );
            assert!(!err.contains('\n'), "{err}");
        }
    }
}
