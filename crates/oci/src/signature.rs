//! cosign signatures in the registry: the manifest tagged `sha256-<hex>.sig`
//! beside the module, one simple-signing layer per signature, the signature
//! in each layer's `dev.cosignproject.cosign/signature` annotation
//! (sigstore/cosign `specs/SIGNATURE_SPEC.md`; sigstore/sigstore-rs
//! `src/cosign/client.rs`, `triangulate` and `push_signature`).
//!
//! Reading keeps a layer whose bytes do not hash to its digest, without its
//! bytes, so the verdict can say the layer was tampered with instead of
//! failing the whole fetch. Writing appends to the manifest already there,
//! as `cosign sign` does, and leaves it alone when the same signature is in
//! it already.

use std::collections::BTreeMap;

use oci_client::Reference;
use oci_client::client::{Config, ImageLayer};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciImageManifest};
use olm_guard_signing::{SIGNATURE_ANNOTATION, SIMPLE_SIGNING_MEDIA_TYPE, signature_tag};

use crate::{OciError, Options, PolicyRef, Session, resolve};

/// The signatures stored for one module.
#[derive(Debug, Clone)]
pub struct StoredSignatures {
    /// The module's manifest digest.
    pub digest: String,
    /// Where they are: `registry://host/repo:sha256-<hex>.sig`.
    pub location: String,
    /// The simple-signing layers, in manifest order (none when the tag
    /// does not exist: the module is unsigned).
    pub layers: Vec<StoredLayer>,
}

/// One simple-signing layer.
#[derive(Debug, Clone)]
pub struct StoredLayer {
    /// The digest the manifest gives it.
    pub digest: String,
    /// Its bytes, `None` when they do not match `digest`.
    pub data: Option<Vec<u8>>,
    /// Its annotations (the signature among them).
    pub annotations: BTreeMap<String, String>,
}

impl StoredLayer {
    /// The base64 signature annotation.
    pub fn signature(&self) -> Option<&str> {
        self.annotations
            .get(SIGNATURE_ANNOTATION)
            .map(String::as_str)
    }
}

/// What [`push_signature`] did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SignaturePushed {
    /// The module's manifest digest.
    pub digest: String,
    /// `registry://host/repo:sha256-<hex>.sig`.
    pub signatures: String,
    /// How many signatures the manifest holds now.
    pub count: usize,
    /// False when this signature was there already (nothing was pushed).
    pub added: bool,
}

/// The signature manifest's reference for the module of `digest`.
fn signature_reference(reference: &PolicyRef, digest: &str) -> PolicyRef {
    PolicyRef {
        oci: Reference::with_tag(
            reference.oci.registry().to_owned(),
            reference.oci.repository().to_owned(),
            signature_tag(digest),
        ),
    }
}

/// The signatures of the module `reference` resolves to now.
pub fn fetch_signatures(
    reference: &PolicyRef,
    options: &Options,
) -> Result<StoredSignatures, OciError> {
    let digest = resolve(reference, options)?;
    fetch_signatures_of(reference, &digest, options)
}

/// The signatures stored for manifest `digest` in `reference`'s repository.
pub fn fetch_signatures_of(
    reference: &PolicyRef,
    digest: &str,
    options: &Options,
) -> Result<StoredSignatures, OciError> {
    let target = signature_reference(reference, digest);
    let session = Session::new(&target, options)?;
    let location = target.to_string();
    let manifest = match session.runtime.block_on(
        session
            .client
            .pull_image_manifest(&target.oci, &session.auth),
    ) {
        Ok((manifest, _)) => manifest,
        Err(e) => {
            return match session.error(&e) {
                OciError::NotFound { .. } => Ok(StoredSignatures {
                    digest: digest.to_owned(),
                    location,
                    layers: Vec::new(),
                }),
                other => Err(other),
            };
        }
    };
    let mut layers = Vec::new();
    for descriptor in manifest
        .layers
        .iter()
        .filter(|d| d.media_type == SIMPLE_SIGNING_MEDIA_TYPE)
    {
        let mut data = Vec::new();
        let pulled =
            session
                .runtime
                .block_on(session.client.pull_blob(&target.oci, descriptor, &mut data));
        let data = match pulled {
            Ok(()) => Some(data),
            Err(OciDistributionError::DigestError(_)) => None,
            Err(e) => return Err(session.error(&e)),
        };
        layers.push(StoredLayer {
            digest: descriptor.digest.clone(),
            data,
            annotations: descriptor.annotations.clone().unwrap_or_default(),
        });
    }
    Ok(StoredSignatures {
        digest: digest.to_owned(),
        location,
        layers,
    })
}

/// Store one more signature, `payload` signed as `signature` (base64), for
/// the module of manifest `digest` in `reference`'s repository.
pub fn push_signature(
    reference: &PolicyRef,
    digest: &str,
    payload: &[u8],
    signature: &str,
    options: &Options,
) -> Result<SignaturePushed, OciError> {
    let stored = fetch_signatures_of(reference, digest, options)?;
    let target = signature_reference(reference, digest);
    let pushed = |count, added| SignaturePushed {
        digest: digest.to_owned(),
        signatures: target.to_string(),
        count,
        added,
    };
    // Layers whose bytes were lost to tampering cannot be pushed again;
    // they are dropped, as a fresh `cosign sign` would not keep them either.
    let mut layers: Vec<ImageLayer> = stored
        .layers
        .into_iter()
        .filter_map(|layer| {
            Some(ImageLayer::new(
                layer.data?,
                SIMPLE_SIGNING_MEDIA_TYPE.into(),
                Some(layer.annotations),
            ))
        })
        .collect();
    let duplicate = layers.iter().any(|layer| {
        layer.data.as_ref() == payload
            && layer
                .annotations
                .as_ref()
                .and_then(|a| a.get(SIGNATURE_ANNOTATION))
                .is_some_and(|s| s == signature)
    });
    if duplicate {
        return Ok(pushed(layers.len(), false));
    }
    layers.push(ImageLayer::new(
        payload.to_vec(),
        SIMPLE_SIGNING_MEDIA_TYPE.into(),
        Some(BTreeMap::from([(
            SIGNATURE_ANNOTATION.to_owned(),
            signature.to_owned(),
        )])),
    ));
    let config = Config::oci_v1(image_config(&layers), None);
    let mut manifest = OciImageManifest::build(&layers, &config, None);
    manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.to_owned());
    let session = Session::new(&target, options)?;
    session.block_on(session.client.push(
        &target.oci,
        &layers,
        config,
        &session.auth,
        Some(manifest),
    ))?;
    Ok(pushed(layers.len(), true))
}

/// The image config cosign writes for a signature image (go-containerregistry
/// `empty.Image` with the layers appended): the layers' digests as diff IDs,
/// since the payloads are stored uncompressed.
fn image_config(layers: &[ImageLayer]) -> Vec<u8> {
    let diff_ids: Vec<String> = layers.iter().map(ImageLayer::sha256_digest).collect();
    let history: Vec<serde_json::Value> = layers
        .iter()
        .map(|_| serde_json::json!({"created": "0001-01-01T00:00:00Z"}))
        .collect();
    serde_json::to_vec(&serde_json::json!({
        "architecture": "",
        "created": "0001-01-01T00:00:00Z",
        "history": history,
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "config": {},
    }))
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_tag_sits_beside_the_module() {
        let module = PolicyRef::parse("registry://127.0.0.1:5000/policies/x:v1").unwrap();
        let digest = format!("sha256:{}", "c".repeat(64));
        assert_eq!(
            signature_reference(&module, &digest).to_string(),
            format!(
                "registry://127.0.0.1:5000/policies/x:sha256-{}.sig",
                "c".repeat(64)
            )
        );
    }
}
