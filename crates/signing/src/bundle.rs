//! Sigstore bundles, the signature format cosign v3 writes by default
//! (sigstore/protobuf-specs `protos/sigstore_bundle.proto`, its JSON form;
//! sigstore/cosign `specs/BUNDLE_SPEC.md` for where they are stored):
//!
//! ```json
//! {"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
//!  "verificationMaterial": {"publicKey": {"hint": "<base64 SHA-256 of the key's DER>"},
//!                           "tlogEntries": []},
//!  "dsseEnvelope": {"payload": "<base64 in-toto statement>",
//!                   "payloadType": "application/vnd.in-toto+json",
//!                   "signatures": [{"sig": "<base64 DER ECDSA over the DSSE PAE>"}]}}
//! ```
//!
//! `cosign sign` (v3, or v2.4 to v2.6 with `--new-bundle-format`) signs an
//! in-toto statement whose one subject is the image digest, predicate type
//! [`SIGN_PREDICATE_TYPE`], an empty predicate, and the `-a key=value`
//! annotations in the subject's `annotations` (sigstore/cosign
//! `cmd/cosign/cli/sign/sign.go`, `signDigestBundle`; the earliest
//! `--new-bundle-format` releases wrote no annotations there). A bundle may
//! instead hold a `messageSignature` (what `cosign sign-blob` writes): a
//! signature over some bytes and their SHA-256, which for an image is its
//! manifest digest; such a bundle has nowhere to carry annotations.
//!
//! With a key, a bundle has no transparency-log entry or timestamp unless
//! one was asked for; a verifier given the key (cosign `verify --key`,
//! sigstore-js `@sigstore/verify` with a key finder) checks the signature
//! with it, whatever the hint says. So does [`open`].

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};

use crate::keys::{PrivateKey, PublicKey};

/// The media type of a v0.3 bundle: the bundle's `mediaType`, its referrer
/// manifest's `artifactType` and its layer's media type.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// What every bundle media type starts with (v0.1 and v0.2 were
/// `application/vnd.dev.sigstore.bundle+json;version=0.x`).
pub const BUNDLE_MEDIA_TYPE_PREFIX: &str = "application/vnd.dev.sigstore.bundle";

/// The DSSE payload type of an in-toto statement.
pub const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// The in-toto statement type cosign writes.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";

/// The predicate type of a cosign image signature (cosign
/// `pkg/types`, `CosignSignPredicateType`), as opposed to an attestation.
pub const SIGN_PREDICATE_TYPE: &str = "https://sigstore.dev/cosign/sign/v1";

/// The referrer manifest annotation saying what the bundle holds:
/// `dsse-envelope` or `message-signature` (cosign `specs/BUNDLE_SPEC.md`).
pub const CONTENT_ANNOTATION: &str = "dev.sigstore.bundle.content";

/// The referrer manifest annotation with the statement's predicate type.
pub const PREDICATE_TYPE_ANNOTATION: &str = "dev.sigstore.bundle.predicateType";

/// A bundle, as much of it as verifying with a key reads.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bundle {
    /// [`BUNDLE_MEDIA_TYPE`] or an earlier version's.
    pub media_type: String,
    /// The key hint or certificate, and log entries.
    pub verification_material: VerificationMaterial,
    /// A DSSE envelope over an in-toto statement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsse_envelope: Option<Envelope>,
    /// Or a signature over a message digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_signature: Option<MessageSignature>,
}

/// `verificationMaterial`: only the key hint is written; certificates and
/// log entries are kept as JSON (keyless material is not checked offline).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerificationMaterial {
    /// `{"hint": …}` for a key-signed bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<PublicKeyHint>,
    /// A Fulcio certificate (keyless), unread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<serde_json::Value>,
    /// A certificate chain (v0.1, v0.2), unread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x509_certificate_chain: Option<serde_json::Value>,
    /// Transparency-log entries, unread (offline, there is no log to ask).
    #[serde(default)]
    pub tlog_entries: Vec<serde_json::Value>,
    /// RFC 3161 timestamps, unread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp_verification_data: Option<serde_json::Value>,
}

/// `publicKey`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PublicKeyHint {
    /// [`PublicKey::hint`] of the signing key.
    pub hint: String,
}

/// A DSSE envelope (secure-systems-lab/dsse `envelope.proto`), byte
/// fields in standard base64 as protobuf JSON writes them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    /// The statement, base64.
    pub payload: String,
    /// [`IN_TOTO_PAYLOAD_TYPE`].
    pub payload_type: String,
    /// The signatures over the PAE.
    pub signatures: Vec<EnvelopeSignature>,
}

/// One envelope signature.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnvelopeSignature {
    /// ASN.1 DER ECDSA, base64.
    pub sig: String,
    /// Unused by cosign (empty or absent).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub keyid: String,
}

/// `messageSignature`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSignature {
    /// The digest of the signed message.
    #[serde(default)]
    pub message_digest: Option<MessageDigest>,
    /// ASN.1 DER ECDSA, base64.
    pub signature: String,
}

/// `messageDigest`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MessageDigest {
    /// `SHA2_256`.
    pub algorithm: String,
    /// The digest, base64.
    pub digest: String,
}

/// An in-toto statement (in-toto/attestation `spec/v1/statement.md`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Statement {
    /// [`STATEMENT_TYPE`] (v0.1 is read too).
    #[serde(rename = "_type")]
    pub kind: String,
    /// What is attested.
    pub subject: Vec<Subject>,
    /// [`SIGN_PREDICATE_TYPE`] for an image signature.
    pub predicate_type: String,
    /// `{}` for an image signature.
    #[serde(default)]
    pub predicate: serde_json::Value,
}

/// One subject (an in-toto `ResourceDescriptor`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Subject {
    /// Optional; cosign writes none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `{"sha256": "<hex>"}`.
    pub digest: BTreeMap<String, String>,
    /// cosign's `-a` annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, serde_json::Value>>,
}

/// The DSSE pre-authentication encoding, the bytes a DSSE signature covers
/// (secure-systems-lab/dsse `protocol.md`):
/// `DSSEv1 <len(type)> <type> <len(payload)> <payload>`.
///
/// ```
/// assert_eq!(
///     olm_guard_signing::bundle::pae("t", b"ab"),
///     b"DSSEv1 1 t 2 ab".to_vec()
/// );
/// ```
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut bytes = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    )
    .into_bytes();
    bytes.extend_from_slice(payload);
    bytes
}

/// The statement cosign signs for manifest `digest` (`sha256:<hex>`) with
/// `annotations`.
pub fn statement(digest: &str, annotations: &BTreeMap<String, String>) -> Statement {
    let (algorithm, hex) = digest.split_once(':').unwrap_or(("sha256", digest));
    Statement {
        kind: STATEMENT_TYPE.to_owned(),
        subject: vec![Subject {
            name: None,
            digest: BTreeMap::from([(algorithm.to_owned(), hex.to_owned())]),
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                    .collect(),
            ),
        }],
        predicate_type: SIGN_PREDICATE_TYPE.to_owned(),
        predicate: serde_json::json!({}),
    }
}

/// A v0.3 bundle signing manifest `digest` with `key`, as `cosign sign
/// --key` writes it: a DSSE envelope over [`statement`], the key's hint,
/// no log entry. ECDSA here is deterministic (RFC 6979), so the same key,
/// digest and annotations give the same bytes.
pub fn sign(key: &PrivateKey, digest: &str, annotations: &BTreeMap<String, String>) -> Vec<u8> {
    let payload = serde_json::to_vec(&statement(digest, annotations)).unwrap_or_default();
    let sig = key.sign(&pae(IN_TOTO_PAYLOAD_TYPE, &payload));
    let bundle = Bundle {
        media_type: BUNDLE_MEDIA_TYPE.to_owned(),
        verification_material: VerificationMaterial {
            public_key: Some(PublicKeyHint {
                hint: key.public_key().hint(),
            }),
            certificate: None,
            x509_certificate_chain: None,
            tlog_entries: Vec::new(),
            timestamp_verification_data: None,
        },
        dsse_envelope: Some(Envelope {
            payload: BASE64.encode(&payload),
            payload_type: IN_TOTO_PAYLOAD_TYPE.to_owned(),
            signatures: vec![EnvelopeSignature {
                sig,
                keyid: String::new(),
            }],
        }),
        message_signature: None,
    };
    serde_json::to_vec(&bundle).unwrap_or_default()
}

/// What a bundle holds, for the referrer's [`CONTENT_ANNOTATION`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// A DSSE envelope over an in-toto statement.
    Dsse,
    /// A message signature.
    Message,
}

impl Content {
    /// `dsse-envelope` or `message-signature`.
    pub fn as_str(self) -> &'static str {
        match self {
            Content::Dsse => "dsse-envelope",
            Content::Message => "message-signature",
        }
    }
}

/// A bundle whose signature verified with a key: what it signs.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    /// DSSE or message signature.
    pub content: Content,
    /// The `sha256:<hex>` digests it names (the statement's subjects, or
    /// the message digest).
    pub digests: Vec<String>,
    /// The annotations of the subject naming `digest`; `None` for a message
    /// signature, which has nowhere to carry any.
    pub annotations: Option<BTreeMap<String, String>>,
}

/// Why a bundle does not verify with a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Not a bundle we can read; the reason.
    Unreadable(String),
    /// No signature in it verifies with the key.
    WrongKey,
    /// A verified statement that is not a cosign image signature: its
    /// predicate type.
    NotASignature(String),
}

/// Check `bytes` (a bundle's JSON) with `key`, and say what it signs for
/// manifest `digest` (`sha256:<hex>`), whose subject's annotations are
/// returned.
pub fn open(bytes: &[u8], key: &PublicKey, digest: &str) -> Result<Opened, Problem> {
    let bundle: Bundle = serde_json::from_slice(bytes)
        .map_err(|e| Problem::Unreadable(format!("not a Sigstore bundle ({e})")))?;
    if !bundle.media_type.starts_with(BUNDLE_MEDIA_TYPE_PREFIX) {
        return Err(Problem::Unreadable(format!(
            "media type {} is not a Sigstore bundle's",
            bundle.media_type
        )));
    }
    match (&bundle.dsse_envelope, &bundle.message_signature) {
        (Some(envelope), _) => open_dsse(envelope, key, digest),
        (None, Some(message)) => open_message(message, key),
        (None, None) => Err(Problem::Unreadable(
            "the bundle holds neither a dsseEnvelope nor a messageSignature".into(),
        )),
    }
}

fn open_dsse(envelope: &Envelope, key: &PublicKey, digest: &str) -> Result<Opened, Problem> {
    let payload = BASE64
        .decode(&envelope.payload)
        .map_err(|e| Problem::Unreadable(format!("the DSSE payload is not base64 ({e})")))?;
    let signed = pae(&envelope.payload_type, &payload);
    if !envelope
        .signatures
        .iter()
        .any(|s| key.verifies(&signed, &s.sig))
    {
        return Err(Problem::WrongKey);
    }
    if envelope.payload_type != IN_TOTO_PAYLOAD_TYPE {
        return Err(Problem::Unreadable(format!(
            "the DSSE payload type is {}, not an in-toto statement ({IN_TOTO_PAYLOAD_TYPE})",
            envelope.payload_type
        )));
    }
    let statement: Statement = serde_json::from_slice(&payload).map_err(|e| {
        Problem::Unreadable(format!(
            "the DSSE payload is not an in-toto statement ({e})"
        ))
    })?;
    if statement.predicate_type != SIGN_PREDICATE_TYPE {
        return Err(Problem::NotASignature(statement.predicate_type));
    }
    let digests: Vec<String> = statement
        .subject
        .iter()
        .flat_map(|s| s.digest.iter().map(|(alg, hex)| format!("{alg}:{hex}")))
        .collect();
    let annotations = statement
        .subject
        .iter()
        .find(|s| {
            s.digest
                .iter()
                .any(|(alg, hex)| format!("{alg}:{hex}") == digest)
        })
        .map(|s| {
            s.annotations
                .iter()
                .flatten()
                .map(|(k, v)| {
                    let text = match v {
                        serde_json::Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), text)
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Opened {
        content: Content::Dsse,
        digests,
        annotations: Some(annotations),
    })
}

fn open_message(message: &MessageSignature, key: &PublicKey) -> Result<Opened, Problem> {
    let Some(md) = &message.message_digest else {
        return Err(Problem::Unreadable(
            "the message signature has no messageDigest".into(),
        ));
    };
    if md.algorithm != "SHA2_256" {
        return Err(Problem::Unreadable(format!(
            "the message digest is {}, not SHA2_256 (an image digest is SHA-256)",
            md.algorithm
        )));
    }
    let bytes = BASE64
        .decode(&md.digest)
        .map_err(|e| Problem::Unreadable(format!("the message digest is not base64 ({e})")))?;
    if !key.verifies_prehash(&bytes, &message.signature) {
        return Err(Problem::WrongKey);
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(Opened {
        content: Content::Message,
        digests: vec![format!("sha256:{hex}")],
        annotations: None,
    })
}

/// What a bundle's referrer annotations say of it: its content, and for a
/// DSSE envelope over an in-toto statement, the statement's predicate type.
pub fn summary(bytes: &[u8]) -> Option<(Content, Option<String>)> {
    let bundle: Bundle = serde_json::from_slice(bytes).ok()?;
    match bundle.dsse_envelope {
        Some(envelope) => {
            let payload = BASE64.decode(&envelope.payload).ok();
            let predicate = payload
                .and_then(|p| serde_json::from_slice::<Statement>(&p).ok())
                .map(|s| s.predicate_type);
            Some((Content::Dsse, predicate))
        }
        None => Some((Content::Message, None)),
    }
}

/// The DSSE envelope of `bytes` if it is a bundle that has one: what two
/// bundles must share to be the same signature.
pub fn envelope_of(bytes: &[u8]) -> Option<(String, Vec<String>)> {
    let bundle: Bundle = serde_json::from_slice(bytes).ok()?;
    let envelope = bundle.dsse_envelope?;
    Some((
        envelope.payload,
        envelope.signatures.into_iter().map(|s| s.sig).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::generate;

    fn key() -> PrivateKey {
        let pair = generate(b"").unwrap();
        PrivateKey::from_pem(&pair.private_pem, "k", None).unwrap()
    }

    const DIGEST: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    #[test]
    fn a_signed_bundle_opens_with_its_key_only() {
        let signer = key();
        let annotations = BTreeMap::from([("env".to_string(), "prod".to_string())]);
        let bytes = sign(&signer, DIGEST, &annotations);
        assert_eq!(bytes, sign(&signer, DIGEST, &annotations), "deterministic");
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(json["mediaType"], BUNDLE_MEDIA_TYPE);
        assert_eq!(
            json["verificationMaterial"]["publicKey"]["hint"],
            signer.public_key().hint()
        );
        assert_eq!(json["dsseEnvelope"]["payloadType"], IN_TOTO_PAYLOAD_TYPE);
        let payload = BASE64
            .decode(json["dsseEnvelope"]["payload"].as_str().unwrap())
            .unwrap();
        let statement: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        assert_eq!(statement["_type"], STATEMENT_TYPE);
        assert_eq!(statement["predicateType"], SIGN_PREDICATE_TYPE);
        assert_eq!(statement["subject"][0]["digest"]["sha256"], &DIGEST[7..]);
        assert_eq!(statement["subject"][0]["annotations"]["env"], "prod");

        let opened = open(&bytes, &signer.public_key(), DIGEST).unwrap();
        assert_eq!(opened.content, Content::Dsse);
        assert_eq!(opened.digests, vec![DIGEST.to_string()]);
        assert_eq!(opened.annotations, Some(annotations));
        assert_eq!(
            open(&bytes, &key().public_key(), DIGEST),
            Err(Problem::WrongKey)
        );
        // The statement altered after signing: env=prod made env=dev.
        let mut altered = json.clone();
        let statement = String::from_utf8(payload.clone()).unwrap();
        altered["dsseEnvelope"]["payload"] = BASE64.encode(statement.replace("prod", "dev")).into();
        assert_eq!(
            open(
                &serde_json::to_vec(&altered).unwrap(),
                &signer.public_key(),
                DIGEST
            ),
            Err(Problem::WrongKey)
        );
        assert!(matches!(
            open(b"{}", &signer.public_key(), DIGEST),
            Err(Problem::Unreadable(_))
        ));
    }

    #[test]
    fn a_message_signature_names_its_digest_and_carries_no_annotations() {
        use sha2::{Digest, Sha256};
        let signer = key();
        let manifest = b"{\"schemaVersion\":2}";
        let digest = Sha256::digest(manifest);
        let bundle = serde_json::json!({
            "mediaType": BUNDLE_MEDIA_TYPE,
            "verificationMaterial": {"publicKey": {"hint": signer.public_key().hint()}},
            "messageSignature": {
                "messageDigest": {"algorithm": "SHA2_256", "digest": BASE64.encode(digest)},
                "signature": signer.sign(manifest),
            }
        });
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let opened = open(
            &serde_json::to_vec(&bundle).unwrap(),
            &signer.public_key(),
            DIGEST,
        )
        .unwrap();
        assert_eq!(opened.content, Content::Message);
        assert_eq!(opened.digests, vec![format!("sha256:{hex}")]);
        assert_eq!(opened.annotations, None);
    }
}
