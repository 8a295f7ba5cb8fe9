//! Signing and verifying olm-guard policy modules the way cosign signs and
//! Kubewarden verifies them, without the network: the key pair
//! ([`keys`]), the simple-signing payload ([`payload`]), Kubewarden's
//! verification config ([`config`]) and the judgement of fetched signature
//! layers against it ([`verify`]). Fetching and pushing the signature
//! manifests is `olm-guard-oci`'s (`signature` module); the CLI joins the
//! two.
//!
//! A signature, as cosign stores it (sigstore/cosign
//! `specs/SIGNATURE_SPEC.md`): the payload is one layer, media type
//! [`SIMPLE_SIGNING_MEDIA_TYPE`], of an OCI manifest tagged
//! `sha256-<hex>.sig` in the module's repository; the base64 ECDSA
//! signature of the layer's bytes is its [`SIGNATURE_ANNOTATION`]. Each
//! further signature is one more layer. cosign v3 stores a signature as a
//! Sigstore bundle in an OCI referrer of the module instead ([`bundle`]);
//! [`verify`] judges both layouts.

pub mod bundle;
pub mod config;
pub mod keys;
pub mod payload;
pub mod verify;

pub use config::{ConfigError, VerificationConfig};
pub use keys::{KeyError, PrivateKey, PublicKey};
pub use payload::SimpleSigning;
pub use verify::{Layout, Locations, Report, SignatureLayer};

/// The media type of a simple-signing payload layer.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";

/// The layer annotation holding the payload's signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

/// The tag of the signature manifest for manifest `digest`:
/// `sha256:<hex>` → `sha256-<hex>.sig` (cosign's `triangulate`).
///
/// ```
/// assert_eq!(olm_guard_signing::signature_tag("sha256:ab12"), "sha256-ab12.sig");
/// ```
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replace(':', "-"))
}
