//! cosign signatures in the registry, in both of cosign's layouts:
//!
//! * legacy: the manifest tagged `sha256-<hex>.sig` beside the module, one
//!   simple-signing layer per signature, the signature in each layer's
//!   `dev.cosignproject.cosign/signature` annotation (sigstore/cosign
//!   `specs/SIGNATURE_SPEC.md`; sigstore/sigstore-rs `src/cosign/client.rs`,
//!   `triangulate` and `push_signature`);
//! * bundle: one OCI 1.1 referrer per signature, a manifest whose `subject`
//!   is the module's manifest, `artifactType` and one layer of the Sigstore
//!   bundle media type, empty config (sigstore/cosign `specs/BUNDLE_SPEC.md`),
//!   found through the registry's referrers API, or where the registry has
//!   none, the referrers tag schema: an index tagged `sha256-<hex>` listing
//!   the referrers (opencontainers/distribution-spec `spec.md`, "Referrers
//!   Tag Schema").
//!
//! Reading keeps a layer whose bytes do not hash to its digest, without its
//! bytes, so the verdict can say it was tampered with instead of failing
//! the whole fetch. Writing appends, as `cosign sign` does, and leaves the
//! registry alone when the same signature is in it already.

use std::collections::BTreeMap;

use oci_client::Reference;
use oci_client::client::{Config, ImageLayer};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{
    ImageIndexEntry, OCI_IMAGE_INDEX_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciDescriptor,
    OciImageIndex, OciImageManifest, OciManifest,
};
use olm_guard_signing::bundle::{
    BUNDLE_MEDIA_TYPE, BUNDLE_MEDIA_TYPE_PREFIX, CONTENT_ANNOTATION, Content,
    PREDICATE_TYPE_ANNOTATION, SIGN_PREDICATE_TYPE,
};
use olm_guard_signing::verify::{Layout, Locations, SignatureLayer};
use olm_guard_signing::{SIGNATURE_ANNOTATION, SIMPLE_SIGNING_MEDIA_TYPE, signature_tag};

use crate::{OciError, Options, PolicyRef, Session, resolve};

/// The signatures stored for one module, in both layouts.
#[derive(Debug, Clone)]
pub struct StoredSignatures {
    /// The module's manifest digest.
    pub digest: String,
    /// Where the legacy ones are: `registry://host/repo:sha256-<hex>.sig`.
    pub location: String,
    /// The simple-signing layers, in manifest order (none when the tag
    /// does not exist).
    pub layers: Vec<StoredLayer>,
    /// Where the bundles are: `registry://host/repo@sha256:<hex> referrers`.
    pub referrers: String,
    /// The bundle referrers, in the referrers index's order.
    pub bundles: Vec<StoredBundle>,
}

/// One bundle referrer.
#[derive(Debug, Clone)]
pub struct StoredBundle {
    /// The referrer manifest's digest.
    pub digest: String,
    /// The bundle's JSON, `None` when its bytes do not match the layer
    /// digest.
    pub data: Option<Vec<u8>>,
}

impl StoredSignatures {
    /// Every stored signature, legacy layers first, as the verdict judges
    /// them.
    pub fn signature_layers(&self) -> Vec<SignatureLayer> {
        let legacy = self.layers.iter().map(|layer| SignatureLayer {
            layout: Layout::Legacy,
            digest: layer.digest.clone(),
            payload: layer.data.clone(),
            signature: layer.signature().map(str::to_owned),
        });
        let bundles = self.bundles.iter().map(|bundle| SignatureLayer {
            layout: Layout::Bundle,
            digest: bundle.digest.clone(),
            payload: bundle.data.clone(),
            signature: None,
        });
        legacy.chain(bundles).collect()
    }

    /// Where the verdict says the signatures were looked for.
    pub fn locations(&self) -> Locations {
        Locations {
            signatures: self.location.clone(),
            referrers: self.referrers.clone(),
        }
    }
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

/// The signatures stored for manifest `digest` in `reference`'s repository,
/// in both layouts.
pub fn fetch_signatures_of(
    reference: &PolicyRef,
    digest: &str,
    options: &Options,
) -> Result<StoredSignatures, OciError> {
    let (location, layers) = fetch_legacy(reference, digest, options)?;
    let (referrers, bundles) = fetch_bundles(reference, digest, options)?;
    Ok(StoredSignatures {
        digest: digest.to_owned(),
        location,
        layers,
        referrers,
        bundles,
    })
}

/// The legacy signature manifest's location and simple-signing layers
/// (none when its tag does not exist).
fn fetch_legacy(
    reference: &PolicyRef,
    digest: &str,
    options: &Options,
) -> Result<(String, Vec<StoredLayer>), OciError> {
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
                OciError::NotFound { .. } => Ok((location, Vec::new())),
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
        let data = pull_checked(&session, &target, descriptor)?;
        layers.push(StoredLayer {
            digest: descriptor.digest.clone(),
            data,
            annotations: descriptor.annotations.clone().unwrap_or_default(),
        });
    }
    Ok((location, layers))
}

/// A blob's bytes, `None` when they do not hash to the descriptor's digest.
fn pull_checked(
    session: &Session,
    target: &PolicyRef,
    descriptor: &OciDescriptor,
) -> Result<Option<Vec<u8>>, OciError> {
    let mut data = Vec::new();
    let pulled =
        session
            .runtime
            .block_on(session.client.pull_blob(&target.oci, descriptor, &mut data));
    match pulled {
        Ok(()) => Ok(Some(data)),
        Err(OciDistributionError::DigestError(_)) => Ok(None),
        Err(e) => Err(session.error(&e)),
    }
}

/// `reference`'s repository at manifest `digest`.
fn at_digest(reference: &PolicyRef, digest: &str) -> PolicyRef {
    PolicyRef {
        oci: Reference::with_digest(
            reference.oci.registry().to_owned(),
            reference.oci.repository().to_owned(),
            digest.to_owned(),
        ),
    }
}

/// The referrers tag of the tag schema for `digest`: `sha256-<hex>`.
fn referrers_tag(reference: &PolicyRef, digest: &str) -> PolicyRef {
    PolicyRef {
        oci: Reference::with_tag(
            reference.oci.registry().to_owned(),
            reference.oci.repository().to_owned(),
            digest.replace(':', "-"),
        ),
    }
}

/// The referrers of manifest `digest` that are Sigstore bundles, and where
/// they were looked for. oci-client's `pull_referrers` asks the referrers
/// API and, when the registry answers 404 (it has none), reads the index
/// tagged `sha256-<hex>` instead, as `specs/BUNDLE_SPEC.md` "Retrieval"
/// says. An entry without `artifactType` is fetched and kept when its
/// manifest's `artifactType` is a bundle's.
fn fetch_bundles(
    reference: &PolicyRef,
    digest: &str,
    options: &Options,
) -> Result<(String, Vec<StoredBundle>), OciError> {
    let subject = at_digest(reference, digest);
    let location = format!(
        "{subject} referrers (referrers API, else tag {})",
        digest.replace(':', "-")
    );
    let session = Session::new(&subject, options)?;
    let index = session.block_on(async {
        session
            .client
            .store_auth_if_needed(subject.oci.resolve_registry(), &session.auth)
            .await;
        session.client.pull_referrers(&subject.oci, None).await
    })?;
    let mut bundles = Vec::new();
    for entry in &index.manifests {
        let listed = entry.artifact_type.as_deref();
        if listed.is_some_and(|t| !t.starts_with(BUNDLE_MEDIA_TYPE_PREFIX)) {
            continue;
        }
        let referrer = at_digest(reference, &entry.digest);
        let (manifest, _) = session.block_on(
            session
                .client
                .pull_image_manifest(&referrer.oci, &session.auth),
        )?;
        let artifact_type = manifest.artifact_type.as_deref().or(listed);
        if !artifact_type.is_some_and(|t| t.starts_with(BUNDLE_MEDIA_TYPE_PREFIX)) {
            continue;
        }
        let Some(layer) = manifest
            .layers
            .iter()
            .find(|l| l.media_type.starts_with(BUNDLE_MEDIA_TYPE_PREFIX))
        else {
            // A bundle referrer without a bundle layer: kept, unreadable,
            // so the verdict names it rather than dropping it.
            bundles.push(StoredBundle {
                digest: entry.digest.clone(),
                data: Some(Vec::new()),
            });
            continue;
        };
        let data = pull_checked(&session, &referrer, layer)?;
        bundles.push(StoredBundle {
            digest: entry.digest.clone(),
            data,
        });
    }
    Ok((location, bundles))
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
    let (_, stored) = fetch_legacy(reference, digest, options)?;
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

/// What [`push_bundle`] did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BundlePushed {
    /// The module's manifest digest.
    pub digest: String,
    /// The referrer holding this bundle,
    /// `registry://host/repo@sha256:<referrer>`.
    pub referrer: String,
    /// How many bundle referrers the module has now.
    pub count: usize,
    /// False when this signature was there already (nothing was pushed).
    pub added: bool,
    /// How readers find it: `referrers API` (the registry indexes the
    /// referrer itself), `tag sha256-<hex>` (the tag schema index we
    /// wrote), or `listed already`.
    pub index: String,
}

/// The OCI empty descriptor's media type and content (image-spec
/// `manifest.md`, "Guidance for an Empty Descriptor").
const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
const EMPTY_CONTENT: &[u8] = b"{}";

/// The layer annotation naming the bundle file (`specs/BUNDLE_SPEC.md`,
/// "Layer Annotations").
const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Attach `bundle` (a Sigstore bundle's JSON) to the module of manifest
/// `digest` as cosign v3 does (`specs/BUNDLE_SPEC.md`, "Publishing"): the
/// bundle blob, the empty config, a manifest with `artifactType` and
/// `subject`; then, unless the registry lists the new referrer itself (it
/// has the referrers API), the referrers tag schema index `sha256-<hex>`
/// with the referrer appended. A bundle whose DSSE envelope is attached
/// already is not attached again.
pub fn push_bundle(
    reference: &PolicyRef,
    digest: &str,
    bundle: &[u8],
    options: &Options,
) -> Result<BundlePushed, OciError> {
    let (_, existing) = fetch_bundles(reference, digest, options)?;
    let envelope = olm_guard_signing::bundle::envelope_of(bundle);
    let same = existing.iter().find(|b| {
        b.data.as_deref() == Some(bundle)
            || (envelope.is_some()
                && b.data
                    .as_deref()
                    .and_then(olm_guard_signing::bundle::envelope_of)
                    == envelope)
    });
    if let Some(same) = same {
        return Ok(BundlePushed {
            digest: digest.to_owned(),
            referrer: at_digest(reference, &same.digest).to_string(),
            count: existing.len(),
            added: false,
            index: "listed already".into(),
        });
    }
    let subject = at_digest(reference, digest);
    let session = Session::new(&subject, options)?;
    let (subject_raw, _) = session.block_on(session.client.pull_manifest_raw(
        &subject.oci,
        &session.auth,
        &[
            OCI_IMAGE_MEDIA_TYPE,
            OCI_IMAGE_INDEX_MEDIA_TYPE,
            oci_client::manifest::IMAGE_MANIFEST_MEDIA_TYPE,
            oci_client::manifest::IMAGE_MANIFEST_LIST_MEDIA_TYPE,
        ],
    ))?;
    let subject_media_type = serde_json::from_slice::<serde_json::Value>(&subject_raw)
        .ok()
        .and_then(|m| m["mediaType"].as_str().map(str::to_owned))
        .unwrap_or_else(|| OCI_IMAGE_MEDIA_TYPE.to_owned());
    let bundle_digest = sha256(bundle);
    let (content, predicate_type) = olm_guard_signing::bundle::summary(bundle)
        .unwrap_or((Content::Dsse, Some(SIGN_PREDICATE_TYPE.to_owned())));
    let mut annotations =
        BTreeMap::from([(CONTENT_ANNOTATION.to_owned(), content.as_str().to_owned())]);
    if let Some(predicate_type) = predicate_type {
        annotations.insert(PREDICATE_TYPE_ANNOTATION.to_owned(), predicate_type);
    }
    let manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_owned()),
        config: OciDescriptor {
            media_type: EMPTY_MEDIA_TYPE.to_owned(),
            digest: sha256(EMPTY_CONTENT),
            size: EMPTY_CONTENT.len() as i64,
            ..OciDescriptor::default()
        },
        layers: vec![OciDescriptor {
            media_type: BUNDLE_MEDIA_TYPE.to_owned(),
            digest: bundle_digest.clone(),
            size: bundle.len() as i64,
            annotations: Some(BTreeMap::from([(
                TITLE_ANNOTATION.to_owned(),
                format!("{}.sigstore.json", bundle_digest.replace(':', "-")),
            )])),
            ..OciDescriptor::default()
        }],
        subject: Some(OciDescriptor {
            media_type: subject_media_type,
            digest: digest.to_owned(),
            size: subject_raw.len() as i64,
            ..OciDescriptor::default()
        }),
        artifact_type: Some(BUNDLE_MEDIA_TYPE.to_owned()),
        annotations: Some(annotations.clone()),
    };
    let body = serde_json::to_vec(&manifest).unwrap_or_default();
    let manifest_digest = sha256(&body);
    let referrer = at_digest(reference, &manifest_digest);
    let listed = session.block_on(async {
        session
            .client
            .store_auth_if_needed(subject.oci.resolve_registry(), &session.auth)
            .await;
        session
            .client
            .push_blob(&subject.oci, bundle.to_vec(), &bundle_digest)
            .await?;
        session
            .client
            .push_blob(&subject.oci, EMPTY_CONTENT.to_vec(), &sha256(EMPTY_CONTENT))
            .await?;
        session
            .client
            .push_manifest_raw(
                &referrer.oci,
                body.clone(),
                http_header(OCI_IMAGE_MEDIA_TYPE),
            )
            .await?;
        session.client.pull_referrers(&subject.oci, None).await
    })?;
    let count = existing.len() + 1;
    let pushed = |index: String| BundlePushed {
        digest: digest.to_owned(),
        referrer: referrer.to_string(),
        count,
        added: true,
        index,
    };
    if listed.manifests.iter().any(|m| m.digest == manifest_digest) {
        return Ok(pushed("referrers API".into()));
    }
    // No referrers API: append to the tag schema's index, as cosign (through
    // go-containerregistry `remote.Put`) and sigstore-js `@sigstore/oci`
    // `OCIImage.addArtifact` do.
    let tag = referrers_tag(reference, digest);
    let tag_session = Session::new(&tag, options)?;
    let mut index = match tag_session
        .runtime
        .block_on(tag_session.client.pull_manifest_raw(
            &tag.oci,
            &tag_session.auth,
            &[OCI_IMAGE_INDEX_MEDIA_TYPE],
        )) {
        Ok((raw, _)) => {
            serde_json::from_slice::<OciImageIndex>(&raw).map_err(|e| OciError::Registry {
                reference: tag.to_string(),
                reason: format!(
                    "the referrers tag holds no OCI index ({e}); delete the tag and sign again"
                ),
            })?
        }
        Err(e) => match tag_session.error(&e) {
            OciError::NotFound { .. } => OciImageIndex {
                schema_version: 2,
                media_type: Some(OCI_IMAGE_INDEX_MEDIA_TYPE.to_owned()),
                manifests: Vec::new(),
                artifact_type: None,
                annotations: None,
            },
            other => return Err(other),
        },
    };
    index.manifests.push(ImageIndexEntry {
        media_type: OCI_IMAGE_MEDIA_TYPE.to_owned(),
        digest: manifest_digest.clone(),
        size: body.len() as i64,
        platform: None,
        annotations: Some(annotations),
        artifact_type: Some(BUNDLE_MEDIA_TYPE.to_owned()),
    });
    tag_session.block_on(
        tag_session
            .client
            .push_manifest(&tag.oci, &OciManifest::ImageIndex(index)),
    )?;
    Ok(pushed(format!("tag {}", digest.replace(':', "-"))))
}

fn http_header(value: &'static str) -> http::HeaderValue {
    http::HeaderValue::from_static(value)
}

/// Which layouts [`sign`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignFormat {
    /// The `sha256-<hex>.sig` manifest only (cosign before v3).
    Legacy,
    /// A bundle referrer only (cosign v3).
    Bundle,
    /// Both, as Kubewarden's release pipeline publishes.
    Both,
}

/// What [`sign`] did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Signed {
    /// The module's manifest digest.
    pub digest: String,
    /// The legacy signature, when written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub legacy: Option<SignaturePushed>,
    /// The bundle referrer, when written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<BundlePushed>,
}

/// Sign the module `reference` resolves to with `key`, `annotations` in the
/// signed payload (legacy: the simple-signing `optional`; bundle: the
/// statement subject's `annotations`), in the layouts of `format`.
pub fn sign(
    reference: &PolicyRef,
    key: &olm_guard_signing::PrivateKey,
    annotations: &BTreeMap<String, String>,
    format: SignFormat,
    options: &Options,
) -> Result<Signed, OciError> {
    let digest = resolve(reference, options)?;
    let mut signed = Signed {
        digest: digest.clone(),
        legacy: None,
        bundle: None,
    };
    if format != SignFormat::Bundle {
        let docker_reference = format!(
            "{}/{}",
            reference.oci.registry(),
            reference.oci.repository()
        );
        let payload =
            olm_guard_signing::SimpleSigning::new(&docker_reference, &digest, annotations)
                .to_bytes();
        let signature = key.sign(&payload);
        signed.legacy = Some(push_signature(
            reference, &digest, &payload, &signature, options,
        )?);
    }
    if format != SignFormat::Legacy {
        let bundle = olm_guard_signing::bundle::sign(key, &digest, annotations);
        signed.bundle = Some(push_bundle(reference, &digest, &bundle, options)?);
    }
    Ok(signed)
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
