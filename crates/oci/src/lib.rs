//! Policy modules in OCI registries, the way Kubewarden's `kwctl push` and
//! `kwctl pull` store them (kubewarden/kubewarden-controller,
//! `crates/policy-fetcher/src/registry/mod.rs`, `Registry::do_push` and
//! `Registry::do_fetch`):
//!
//! * an OCI image manifest whose config has the media type
//!   [`WASM_CONFIG_MEDIA_TYPE`] and the content `{}`;
//! * one layer, [`WASM_LAYER_MEDIA_TYPE`], the annotated module's bytes;
//! * the manifest `annotations` taken from the module's metadata
//!   ([`manifest_annotations`]).
//!
//! A pull accepts only that layer media type, as policy-fetcher does.
//!
//! The API is blocking: every olm-guard command is synchronous and a
//! registry exchange is a handful of sequential requests, so each call runs
//! `oci-client` on its own current-thread tokio runtime and keeps tokio out of
//! the CLI.

mod auth;
mod cache;
mod reference;
mod signature;
mod verification;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use oci_client::Client;
use oci_client::client::{
    Certificate, CertificateEncoding, ClientConfig, ClientProtocol, Config, ImageLayer,
};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;

use olm_guard_runtime::metadata::{METADATA_SECTION, Metadata, MetadataError};

pub use auth::{DockerConfig, DockerConfigError, docker_config_path};
pub use cache::{Cached, cache_path, default_cache_dir, write_atomically};
pub use reference::PolicyRef;
pub use signature::{
    BundlePushed, SignFormat, SignaturePushed, Signed, StoredBundle, StoredLayer, StoredSignatures,
    fetch_signatures, fetch_signatures_of, push_bundle, push_signature, sign,
};
pub use verification::{check_signatures, judge_signatures, verified_reference};

/// Makes ring the process's rustls crypto provider, once; later calls (and a
/// provider installed earlier by someone else) leave it as it is.
///
/// `oci-client` is built with reqwest's `rustls-no-provider`, so whoever
/// builds a client must install a provider first; every client of this crate
/// calls this. A program that builds its own `oci_client::Client` beside ours
/// (a test's second client, say) calls it too. ring rather than rustls'
/// default aws-lc-rs: same protocols and ciphers for a registry, no C build
/// of its own (docs/build.md).
///
/// ```
/// olm_guard_oci::crypto_provider();
/// assert!(rustls::crypto::CryptoProvider::get_default().is_some());
/// ```
pub fn crypto_provider() {
    // Err only when a provider is installed already, which is all we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The config media type of a Kubewarden policy artifact (oci-client
/// `manifest::WASM_CONFIG_MEDIA_TYPE`, as kwctl pushes it).
pub const WASM_CONFIG_MEDIA_TYPE: &str = oci_client::manifest::WASM_CONFIG_MEDIA_TYPE;

/// The media type of the one layer, the module itself (oci-client
/// `manifest::WASM_LAYER_MEDIA_TYPE`); the only layer a pull accepts.
pub const WASM_LAYER_MEDIA_TYPE: &str = oci_client::manifest::WASM_LAYER_MEDIA_TYPE;

/// The annotation policy-fetcher copies into
/// `org.opencontainers.image.source` when that one is absent.
const POLICY_SOURCE_ANNOTATION: &str = "io.kubewarden.policy.source";
const OCI_SOURCE_ANNOTATION: &str = "org.opencontainers.image.source";

/// Why a push or a pull failed; each message is one line naming the
/// reference or the file and the reason.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// The reference is not `registry://host[:port]/repository(:tag|@digest)`.
    #[error(
        "{reference}: not a registry reference ({reason}); write registry://host[:port]/repository:tag or registry://host[:port]/repository@sha256:<hex>"
    )]
    InvalidReference {
        /// The reference as given.
        reference: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The module to push carries no Kubewarden metadata.
    #[error(
        "{file}: not annotated (no {METADATA_SECTION} section): run `olm-guard annotate` on it before pushing"
    )]
    NotAnnotated {
        /// The module file.
        file: String,
    },
    /// The module to push is not a wasm module or its metadata is broken.
    #[error("{file}: {reason}")]
    BadModule {
        /// The module file.
        file: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The artifact is not a Kubewarden policy.
    #[error("{reference} is not a Kubewarden policy: {reason}")]
    NotAPolicy {
        /// The reference pulled.
        reference: String,
        /// The media type or shape found.
        reason: String,
    },
    /// The tag or digest does not exist in the repository.
    #[error("{reference}: {what} not found")]
    NotFound {
        /// The reference pulled.
        reference: String,
        /// `tag v9` or `digest sha256:…`.
        what: String,
    },
    /// The registry refused the credentials or wants some.
    #[error(
        "{reference}: not authorized ({reason}); log in with `docker login {registry}` or set DOCKER_CONFIG to a config.json with auths.\"{registry}\".auth"
    )]
    Unauthorized {
        /// The reference.
        reference: String,
        /// The registry host.
        registry: String,
        /// The registry's words.
        reason: String,
    },
    /// The registry answered a TLS handshake in plain HTTP.
    #[error(
        "{reference}: the registry at {registry} speaks plain HTTP, not HTTPS: add --insecure for a registry without TLS ({reason})"
    )]
    PlainHttp {
        /// The reference.
        reference: String,
        /// The registry host.
        registry: String,
        /// The TLS library's words.
        reason: String,
    },
    /// Nothing answered at the registry's address.
    #[error(
        "{reference}: cannot reach the registry at {registry} ({reason}): check that it runs and that the host and port are right"
    )]
    Unreachable {
        /// The reference.
        reference: String,
        /// The registry host.
        registry: String,
        /// `connection refused`, `timed out`, `no such host`.
        reason: &'static str,
    },
    /// Any other registry or transport failure.
    #[error("{reference}: {reason}")]
    Registry {
        /// The reference.
        reference: String,
        /// The error chain on one line.
        reason: String,
    },
    /// The Docker config file cannot be read.
    #[error("{path}: {reason}")]
    DockerConfig {
        /// The config file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A CA certificate file cannot be read or is not PEM.
    #[error("{path}: {reason}; give a PEM file with --ca-cert")]
    CaCert {
        /// The certificate file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The module's signatures do not satisfy the verification config.
    #[error("{reference}: {refusal}")]
    Refused {
        /// The reference verified.
        reference: String,
        /// Each failed constraint, on one line (`Report::refusal`).
        refusal: String,
    },
    /// A local file cannot be read or written. (The I/O error is in the
    /// message, not also a source, which `{:#}` would print a second time.)
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
}

/// How to reach registries.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Plain HTTP instead of HTTPS, for local registries (kwctl's
    /// `sources.yaml` `insecure_sources`).
    pub insecure: bool,
    /// PEM files of extra certificate authorities to trust (kwctl's
    /// `source_authorities`).
    pub ca_certs: Vec<PathBuf>,
    /// The Docker config file with credentials; `None` reads the default
    /// one ([`docker_config_path`]) when it exists.
    pub docker_config: Option<PathBuf>,
}

/// What a push stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Pushed {
    /// The reference pushed, `registry://host/repo:tag`.
    pub reference: String,
    /// The manifest digest, `sha256:<hex>`.
    pub digest: String,
    /// The reference by digest, `registry://host/repo@sha256:<hex>` (kwctl's
    /// `immutable_ref`).
    pub immutable_ref: String,
}

/// What a pull fetched.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The module bytes (the one wasm layer).
    pub module: Vec<u8>,
    /// The manifest digest, `sha256:<hex>`.
    pub digest: String,
    /// The manifest annotations.
    pub annotations: BTreeMap<String, String>,
}

/// The manifest annotations kwctl derives from a module's metadata: every
/// annotation whose value is one line, trimmed (multi-line values such as
/// the usage README are dropped), plus `org.opencontainers.image.source`
/// from `io.kubewarden.policy.source` when it is absent.
pub fn manifest_annotations(metadata: &Metadata) -> BTreeMap<String, String> {
    let mut annotations: BTreeMap<String, String> = metadata
        .annotations
        .iter()
        .filter(|(_, value)| !value.trim().contains('\n'))
        .map(|(key, value)| (key.clone(), value.trim().to_owned()))
        .collect();
    if !annotations.contains_key(OCI_SOURCE_ANNOTATION)
        && let Some(source) = annotations.get(POLICY_SOURCE_ANNOTATION).cloned()
    {
        annotations.insert(OCI_SOURCE_ANNOTATION.into(), source);
    }
    annotations
}

/// Push an annotated module (`file` names it in errors) to `reference`.
pub fn push(
    module: &[u8],
    file: &str,
    reference: &str,
    options: &Options,
) -> Result<Pushed, OciError> {
    let target = PolicyRef::parse(reference)?;
    let metadata = match Metadata::from_module(module) {
        Ok(Some(metadata)) => metadata,
        Ok(None) => return Err(OciError::NotAnnotated { file: file.into() }),
        Err(e) => {
            return Err(OciError::BadModule {
                file: file.into(),
                reason: metadata_reason(&e),
            });
        }
    };
    let session = Session::new(&target, options)?;
    let layers = [ImageLayer::new(
        module.to_vec(),
        WASM_LAYER_MEDIA_TYPE.into(),
        None,
    )];
    let config = Config::new(b"{}".to_vec(), WASM_CONFIG_MEDIA_TYPE.into(), None);
    let manifest = OciImageManifest::build(&layers, &config, Some(manifest_annotations(&metadata)));
    let digest = session.block_on(async {
        session
            .client
            .push(&target.oci, &layers, config, &session.auth, Some(manifest))
            .await?;
        session
            .client
            .fetch_manifest_digest(&target.oci, &session.auth)
            .await
    })?;
    Ok(Pushed {
        reference: target.to_string(),
        immutable_ref: target.with_digest(&digest),
        digest,
    })
}

/// The manifest digest `reference` resolves to now.
pub fn resolve(reference: &PolicyRef, options: &Options) -> Result<String, OciError> {
    if let Some(digest) = reference.oci.digest() {
        return Ok(digest.to_owned());
    }
    let session = Session::new(reference, options)?;
    session.block_on(
        session
            .client
            .fetch_manifest_digest(&reference.oci, &session.auth),
    )
}

/// Pull the module `reference` names, refusing artifacts that are not
/// Kubewarden policies.
pub fn pull(reference: &PolicyRef, options: &Options) -> Result<Pulled, OciError> {
    let session = Session::new(reference, options)?;
    let image = session.block_on(session.client.pull(
        &reference.oci,
        &session.auth,
        vec![WASM_LAYER_MEDIA_TYPE],
    ))?;
    let not_a_policy = |reason: String| OciError::NotAPolicy {
        reference: reference.to_string(),
        reason,
    };
    if image.config.media_type != WASM_CONFIG_MEDIA_TYPE {
        return Err(not_a_policy(format!(
            "config media type {} (want {WASM_CONFIG_MEDIA_TYPE})",
            image.config.media_type
        )));
    }
    let [layer] = <[ImageLayer; 1]>::try_from(image.layers)
        .map_err(|layers| not_a_policy(format!("{} layers (want one wasm layer)", layers.len())))?;
    let digest = image.digest.ok_or_else(|| OciError::Registry {
        reference: reference.to_string(),
        reason: "the registry did not give the manifest digest".into(),
    })?;
    Ok(Pulled {
        module: layer.data.to_vec(),
        digest,
        annotations: image
            .manifest
            .and_then(|manifest| manifest.annotations)
            .unwrap_or_default(),
    })
}

fn metadata_reason(e: &MetadataError) -> String {
    one_line(e)
}

/// An error and its sources on one line.
fn one_line(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        // reqwest and hyper repeat their inner error in their own text.
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One reference's client, credentials and runtime.
struct Session {
    reference: PolicyRef,
    /// Plain HTTP (`Options::insecure`).
    insecure: bool,
    client: Client,
    auth: RegistryAuth,
    runtime: tokio::runtime::Runtime,
}

impl Session {
    fn new(reference: &PolicyRef, options: &Options) -> Result<Session, OciError> {
        let mut extra_root_certificates = Vec::new();
        for path in &options.ca_certs {
            let data = std::fs::read(path).map_err(|e| OciError::CaCert {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
            if !String::from_utf8_lossy(&data).contains("-----BEGIN CERTIFICATE-----") {
                return Err(OciError::CaCert {
                    path: path.display().to_string(),
                    reason: "no PEM certificate in it".into(),
                });
            }
            extra_root_certificates.push(Certificate {
                encoding: CertificateEncoding::Pem,
                data,
            });
        }
        let config = ClientConfig {
            protocol: if options.insecure {
                ClientProtocol::Http
            } else {
                ClientProtocol::Https
            },
            extra_root_certificates,
            // An index is no policy; let the pull fail on it instead of
            // picking a platform.
            platform_resolver: None,
            ..ClientConfig::default()
        };
        crypto_provider();
        let client = Client::try_from(config).map_err(|e| OciError::Registry {
            reference: reference.to_string(),
            reason: one_line(&e),
        })?;
        let docker_config = match &options.docker_config {
            Some(path) => Some(DockerConfig::read(path)?),
            None => match docker_config_path() {
                Some(path) if path.exists() => Some(DockerConfig::read(&path)?),
                _ => None,
            },
        };
        let auth = docker_config
            .and_then(|config| config.auth_for(reference.oci.resolve_registry()))
            .map_or(RegistryAuth::Anonymous, |(user, password)| {
                RegistryAuth::Basic(user, password)
            });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| OciError::Registry {
                reference: reference.to_string(),
                reason: format!("cannot start the I/O runtime: {e}"),
            })?;
        Ok(Session {
            reference: reference.clone(),
            insecure: options.insecure,
            client,
            auth,
            runtime,
        })
    }

    fn block_on<T>(
        &self,
        future: impl Future<Output = Result<T, OciDistributionError>>,
    ) -> Result<T, OciError> {
        self.runtime.block_on(future).map_err(|e| self.error(&e))
    }

    /// Our error for an oci-client error on this reference.
    fn error(&self, e: &OciDistributionError) -> OciError {
        let reference = self.reference.to_string();
        let not_found = || OciError::NotFound {
            reference: reference.clone(),
            what: self.reference.target(),
        };
        match e {
            OciDistributionError::ImageManifestNotFoundError(_) => not_found(),
            OciDistributionError::RegistryError { envelope, .. }
                if envelope.errors.iter().any(|e| {
                    matches!(
                        e.code,
                        OciErrorCode::ManifestUnknown
                            | OciErrorCode::NameUnknown
                            | OciErrorCode::NotFound
                    )
                }) =>
            {
                not_found()
            }
            OciDistributionError::ServerError { code: 404, .. } => not_found(),
            OciDistributionError::IncompatibleLayerMediaTypeError(media_type) => {
                OciError::NotAPolicy {
                    reference,
                    reason: format!("layer media type {media_type} (want {WASM_LAYER_MEDIA_TYPE})"),
                }
            }
            OciDistributionError::PullNoLayersError => OciError::NotAPolicy {
                reference,
                reason: "no layers".into(),
            },
            OciDistributionError::ImageIndexParsingNoPlatformResolverError => {
                OciError::NotAPolicy {
                    reference,
                    reason: "an image index (manifest list), not one wasm manifest".into(),
                }
            }
            OciDistributionError::UnauthorizedError { .. }
            | OciDistributionError::AuthenticationFailure(_) => OciError::Unauthorized {
                registry: self.reference.oci.resolve_registry().to_owned(),
                reference,
                reason: one_line(e),
            },
            OciDistributionError::ServerError {
                code: 401 | 403, ..
            } => OciError::Unauthorized {
                registry: self.reference.oci.resolve_registry().to_owned(),
                reference,
                reason: one_line(e),
            },
            _ if unreachable(e).is_some() => OciError::Unreachable {
                registry: self.reference.oci.resolve_registry().to_owned(),
                reference,
                reason: unreachable(e).unwrap_or_default(),
            },
            _ if !self.insecure && answered_in_plain_http(e) => OciError::PlainHttp {
                registry: self.reference.oci.resolve_registry().to_owned(),
                reference,
                reason: one_line(e),
            },
            _ => OciError::Registry {
                reference,
                reason: one_line(e),
            },
        }
    }
}

/// Why nothing answered, when `error` is a connection that could not be
/// made: an `io::Error` of the connect in its chain (refused, timed out), or
/// a name that does not resolve (hyper's resolver says `dns error`).
fn unreachable(error: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => return Some("connection refused"),
                std::io::ErrorKind::TimedOut => return Some("timed out"),
                std::io::ErrorKind::HostUnreachable | std::io::ErrorKind::NetworkUnreachable => {
                    return Some("no route to it");
                }
                _ => {}
            }
        }
        if e.to_string().starts_with("dns error") {
            return Some("its name does not resolve");
        }
        next = e.source();
    }
    None
}

/// Whether `error` comes from a TLS handshake the server answered with
/// something that is not TLS: rustls reads the first bytes of an HTTP
/// response as a record of an unknown content type
/// (`rustls::InvalidMessage::InvalidContentType`, "received corrupt message
/// of type InvalidContentType"), which is how a plain-HTTP registry
/// answers an HTTPS client. The rustls error sits inside an `io::Error`,
/// whose `source` skips it, so each `io::Error`'s own error is looked at too.
fn answered_in_plain_http(error: &(dyn std::error::Error + 'static)) -> bool {
    let is_it = |e: &(dyn std::error::Error + 'static)| {
        matches!(
            e.downcast_ref::<rustls::Error>(),
            Some(rustls::Error::InvalidMessage(
                rustls::InvalidMessage::InvalidContentType
            ))
        )
    };
    let mut next = Some(error);
    while let Some(e) = next {
        if is_it(e)
            || e.downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
                .is_some_and(|inner| is_it(inner) || answered_in_plain_http(inner))
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// Read a file, naming it in the error.
pub fn read_file(path: &Path) -> Result<Vec<u8>, OciError> {
    std::fs::read(path).map_err(|error| OciError::Io {
        path: path.display().to_string(),
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_drop_multi_line_values_and_copy_the_source() {
        let mut metadata = Metadata::default();
        for (key, value) in [
            ("io.kubewarden.policy.title", " catalog-union \n"),
            ("io.kubewarden.policy.usage", "# README\n\ntext"),
            (
                POLICY_SOURCE_ANNOTATION,
                "https://github.com/olm-guard/olm-guard",
            ),
        ] {
            metadata.annotations.insert(key.into(), value.into());
        }
        let annotations = manifest_annotations(&metadata);
        assert_eq!(
            annotations
                .get("io.kubewarden.policy.title")
                .map(String::as_str),
            Some("catalog-union")
        );
        assert!(!annotations.contains_key("io.kubewarden.policy.usage"));
        assert_eq!(
            annotations.get(OCI_SOURCE_ANNOTATION).map(String::as_str),
            Some("https://github.com/olm-guard/olm-guard")
        );
    }

    #[test]
    fn an_explicit_oci_source_wins() {
        let mut metadata = Metadata::default();
        metadata
            .annotations
            .insert(POLICY_SOURCE_ANNOTATION.into(), "https://a".into());
        metadata
            .annotations
            .insert(OCI_SOURCE_ANNOTATION.into(), "https://b".into());
        assert_eq!(
            manifest_annotations(&metadata)
                .get(OCI_SOURCE_ANNOTATION)
                .map(String::as_str),
            Some("https://b")
        );
    }

    #[test]
    fn push_refuses_an_unannotated_module_before_any_network() {
        // The smallest wasm module: magic and version, no sections.
        let module = b"\0asm\x01\0\0\0";
        let err = push(
            module,
            "bare.wasm",
            "registry://127.0.0.1:1/x:v1",
            &Options::default(),
        )
        .unwrap_err();
        assert!(matches!(err, OciError::NotAnnotated { .. }), "{err}");
        assert!(err.to_string().contains("olm-guard annotate"), "{err}");
    }
}
