//! A module's signatures against a verification config, as policy-fetcher
//! judges them (kubewarden/kubewarden-controller,
//! `crates/policy-fetcher/src/verify/mod.rs`,
//! `verify_signatures_against_config`): every `allOf` constraint and at
//! least `minimumMatches` of `anyOf` must each be satisfied by one
//! signature. A signature comes in one of two layouts ([`Layout`]):
//!
//! * legacy: a layer of the `sha256-<hex>.sig` manifest. A `pubKey`
//!   constraint is satisfied by a layer whose signature verifies with the
//!   key over the layer's bytes, whose payload names the module's manifest
//!   digest, and which carries every required annotation in `optional`
//!   (sigstore/sigstore-rs, `src/cosign/signature_layers.rs`
//!   `SignatureLayer::new` and `src/cosign/verification_constraint/`);
//! * bundle: a Sigstore bundle attached as an OCI referrer
//!   ([`crate::bundle`]). Satisfied by a DSSE envelope that verifies with
//!   the key over an in-toto statement of cosign's signing predicate whose
//!   subject is the manifest digest and whose subject annotations hold every
//!   required annotation, or by a message signature over the manifest
//!   digest when no annotation is required (a message signature has nowhere
//!   to carry one).
//!
//! Unlike policy-fetcher, which says only which constraints failed, each
//! failing constraint here says why, from the signature that came closest,
//! and every outcome names the layout it came from.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::bundle::{self, Content, Problem};
use crate::config::{Constraint, Signature, VerificationConfig};
use crate::keys::PublicKey;
use crate::payload::SimpleSigning;

/// Where a signature is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// A simple-signing layer of the `sha256-<hex>.sig` manifest (cosign
    /// before v3, and v3 with `--new-bundle-format=false`).
    Legacy,
    /// A Sigstore bundle in an OCI referrer of the module (cosign v3).
    Bundle,
}

impl Layout {
    /// How a report names a signature of this layout.
    fn noun(self) -> &'static str {
        match self {
            Layout::Legacy => "legacy signature layer",
            Layout::Bundle => "bundle referrer",
        }
    }
}

/// One stored signature, as fetched: a layer of the legacy signature
/// manifest, or a bundle referrer.
#[derive(Debug, Clone)]
pub struct SignatureLayer {
    /// Where it came from.
    pub layout: Layout,
    /// The layer digest (legacy) or the referrer manifest's digest (bundle).
    pub digest: String,
    /// The layer's bytes (the simple-signing payload, or the bundle's
    /// JSON), or `None` when they do not hash to the digest the manifest
    /// gives (they were altered in the registry).
    pub payload: Option<Vec<u8>>,
    /// The `dev.cosignproject.cosign/signature` annotation (legacy only; a
    /// bundle carries its signature inside).
    pub signature: Option<String>,
}

/// The verdict on one module.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The module's manifest digest.
    pub digest: String,
    /// Whether the config is satisfied.
    pub verified: bool,
    /// Where the legacy signatures were looked for (`…:sha256-<hex>.sig`).
    pub signatures: String,
    /// How many legacy signature layers were found.
    pub layers: usize,
    /// Where the bundles were looked for (the referrers of the digest: the
    /// referrers API, else the `sha256-<hex>` tag).
    pub referrers: String,
    /// How many bundle referrers were found.
    pub bundles: usize,
    /// Every constraint's outcome, in the config's order.
    pub constraints: Vec<ConstraintReport>,
    /// `anyOf`'s count, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub any_of: Option<AnyOfReport>,
}

/// Where [`verify`] says the signatures were looked for.
#[derive(Debug, Clone, Default)]
pub struct Locations {
    /// The legacy signature manifest.
    pub signatures: String,
    /// The referrers of the digest.
    pub referrers: String,
}

/// How `anyOf` fared.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AnyOfReport {
    /// Constraints of `anyOf` satisfied.
    pub matched: usize,
    /// `minimumMatches`.
    pub minimum_matches: usize,
}

/// One constraint's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct ConstraintReport {
    /// `allOf[0]`, `anyOf.signatures[1]`, `-k cosign.pub`.
    pub location: String,
    /// The constraint, in words (kind, key fingerprint or identity).
    pub constraint: String,
    /// `satisfied`, `refused` or `offline`.
    pub outcome: Outcome,
    /// The layout of the signature that satisfied it, or of the one that
    /// came closest; none when there was no signature at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
    /// For `satisfied` the signature that satisfied it; otherwise why not.
    pub detail: String,
}

/// A constraint's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A signature satisfies it.
    Satisfied,
    /// No signature does.
    Refused,
    /// A keyless constraint: not checkable without Fulcio and Rekor.
    Offline,
}

/// Why a signature does not satisfy a `pubKey` constraint, least promising
/// first ([`Miss::closeness`]): the report gives the signature that came
/// closest.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Miss {
    NoSignatureAnnotation,
    WrongKey,
    Tampered,
    Unreadable(String),
    NotASignature(String),
    OtherDigest(String),
    Annotation(AnnotationMiss),
}

/// A signature by the right key for the right digest whose annotations
/// differ from those required.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AnnotationMiss {
    /// Required annotations the signature does not carry (or, a
    /// message-signature bundle, cannot carry).
    absent: usize,
    /// Required annotations it carries with another value.
    different: usize,
    /// Each, in words.
    reasons: Vec<String>,
}

impl Miss {
    /// How close the signature came, greater is closer: by the stage it
    /// failed at, and among signatures that fail only on annotations, the
    /// one missing fewer of them, then the one with fewer different values
    /// (a signature that says `release=old` where `release=stable` is
    /// wanted is closer than one that says nothing of `release`).
    fn closeness(&self) -> (u8, Reverse<usize>, Reverse<usize>) {
        let stage = match self {
            Miss::NoSignatureAnnotation => 0,
            Miss::WrongKey => 1,
            Miss::Tampered => 2,
            Miss::Unreadable(_) => 3,
            Miss::NotASignature(_) => 4,
            Miss::OtherDigest(_) => 5,
            Miss::Annotation(miss) => {
                return (6, Reverse(miss.absent), Reverse(miss.different));
            }
        };
        (stage, Reverse(0), Reverse(0))
    }

    fn describe(&self, closest: &SignatureLayer, layers: &[SignatureLayer]) -> String {
        let noun = closest.layout.noun();
        match self {
            Miss::NoSignatureAnnotation => {
                "no legacy layer carries a dev.cosignproject.cosign/signature annotation".into()
            }
            Miss::WrongKey => {
                let legacy = layers.iter().filter(|l| l.layout == Layout::Legacy).count();
                let bundles = layers.len() - legacy;
                format!(
                    "wrong key: none of the {} signature(s) ({legacy} legacy, {bundles} bundle) verifies with this key (signed with another key, or the signed payload was altered after signing)",
                    layers.len()
                )
            }
            Miss::Tampered => format!(
                "tampered {noun}: the bytes of {} do not match its digest",
                closest.digest
            ),
            Miss::Unreadable(reason) => format!("{noun} {}: {reason}", closest.digest),
            Miss::NotASignature(predicate) => format!(
                "{noun} {} is an attestation of predicate {predicate}, not a cosign image signature ({})",
                closest.digest,
                bundle::SIGN_PREDICATE_TYPE
            ),
            Miss::OtherDigest(digest) => format!(
                "the signature is for another digest: its {} names {digest}",
                match closest.layout {
                    Layout::Legacy => "payload",
                    Layout::Bundle => "bundle",
                }
            ),
            Miss::Annotation(miss) => {
                format!("{} ({noun} {})", miss.reasons.join("; "), closest.digest)
            }
        }
    }
}

/// Judge `layers` (legacy layers and bundles, empty when there are none)
/// against `config` for the module of manifest `digest`; `locations` names
/// where they were looked for.
pub fn verify(
    config: &VerificationConfig,
    digest: &str,
    locations: &Locations,
    layers: &[SignatureLayer],
) -> Report {
    let mut constraints = Vec::new();
    let mut verified = true;
    for constraint in &config.all_of {
        let report = judge(constraint, digest, layers);
        verified &= report.outcome == Outcome::Satisfied;
        constraints.push(report);
    }
    let any_of = config.any_of.as_ref().map(|any_of| {
        let mut matched = 0;
        for constraint in &any_of.signatures {
            let report = judge(constraint, digest, layers);
            matched += usize::from(report.outcome == Outcome::Satisfied);
            constraints.push(report);
        }
        verified &= matched >= any_of.minimum_matches;
        AnyOfReport {
            matched,
            minimum_matches: any_of.minimum_matches,
        }
    });
    let legacy = layers.iter().filter(|l| l.layout == Layout::Legacy).count();
    Report {
        digest: digest.to_owned(),
        verified,
        signatures: locations.signatures.clone(),
        layers: legacy,
        referrers: locations.referrers.clone(),
        bundles: layers.len() - legacy,
        constraints,
        any_of,
    }
}

fn judge(constraint: &Constraint, digest: &str, layers: &[SignatureLayer]) -> ConstraintReport {
    let report = |outcome, layout, detail: String| ConstraintReport {
        location: constraint.location.clone(),
        constraint: constraint.signature.to_string(),
        outcome,
        layout,
        detail,
    };
    let Signature::PubKey {
        key, annotations, ..
    } = &constraint.signature
    else {
        return report(
            Outcome::Offline,
            None,
            "keyless signatures are not verifiable offline: they need Fulcio's certificate chain and Rekor's log on the internet (check them with kwctl verify or policy-server)".into(),
        );
    };
    if layers.is_empty() {
        return report(
            Outcome::Refused,
            None,
            "no signature: the module is unsigned (no legacy .sig manifest layer, no bundle referrer)"
                .into(),
        );
    }
    let mut closest: Option<(Miss, &SignatureLayer)> = None;
    for layer in layers {
        let miss = match check(layer, key, annotations, digest) {
            Ok(what) => {
                return report(
                    Outcome::Satisfied,
                    Some(layer.layout),
                    format!("{} {}{what}", layer.layout.noun(), layer.digest),
                );
            }
            Err(miss) => miss,
        };
        if closest
            .as_ref()
            .is_none_or(|(c, _)| miss.closeness() > c.closeness())
        {
            closest = Some((miss, layer));
        }
    }
    match closest {
        Some((miss, layer)) => report(
            Outcome::Refused,
            Some(layer.layout),
            miss.describe(layer, layers),
        ),
        None => report(Outcome::Refused, None, String::new()),
    }
}

/// `Ok` with words to add to the satisfied detail, or why not.
fn check(
    layer: &SignatureLayer,
    key: &PublicKey,
    annotations: &BTreeMap<String, String>,
    digest: &str,
) -> Result<String, Miss> {
    let Some(payload) = &layer.payload else {
        return Err(Miss::Tampered);
    };
    match layer.layout {
        Layout::Legacy => check_legacy(
            payload,
            layer.signature.as_deref(),
            key,
            annotations,
            digest,
        ),
        Layout::Bundle => check_bundle(payload, key, annotations, digest),
    }
}

fn check_legacy(
    payload: &[u8],
    signature: Option<&str>,
    key: &PublicKey,
    annotations: &BTreeMap<String, String>,
    digest: &str,
) -> Result<String, Miss> {
    let signature = signature.ok_or(Miss::NoSignatureAnnotation)?;
    if !key.verifies(payload, signature) {
        return Err(Miss::WrongKey);
    }
    let signed: SimpleSigning = serde_json::from_slice(payload).map_err(|e| {
        Miss::Unreadable(format!(
            "the signed payload is not a simple-signing document ({e})"
        ))
    })?;
    let signed_digest = &signed.critical.image.docker_manifest_digest;
    if signed_digest != digest {
        return Err(Miss::OtherDigest(signed_digest.clone()));
    }
    compare_annotations(
        annotations,
        |name| signed.annotation(name),
        |name, want| {
            format!(
                "annotation {name} missing: the signature carries no {name} in its payload's optional (want {name}={want})"
            )
        },
    )?;
    Ok(String::new())
}

/// Every required annotation against what the signature carries
/// (`carried`), each one missing or different said (`missing` words the
/// first kind for the layout).
fn compare_annotations(
    annotations: &BTreeMap<String, String>,
    carried: impl Fn(&str) -> Option<String>,
    missing: impl Fn(&str, &str) -> String,
) -> Result<(), Miss> {
    let mut miss = AnnotationMiss {
        absent: 0,
        different: 0,
        reasons: Vec::new(),
    };
    for (name, want) in annotations {
        match carried(name) {
            None => {
                miss.absent += 1;
                miss.reasons.push(missing(name, want));
            }
            Some(value) if value != *want => {
                miss.different += 1;
                miss.reasons.push(format!(
                    "annotation {name} different: the signature says {name}={value}, want {name}={want}"
                ));
            }
            Some(_) => {}
        }
    }
    if miss.reasons.is_empty() {
        Ok(())
    } else {
        Err(Miss::Annotation(miss))
    }
}

fn check_bundle(
    bytes: &[u8],
    key: &PublicKey,
    annotations: &BTreeMap<String, String>,
    digest: &str,
) -> Result<String, Miss> {
    let opened = bundle::open(bytes, key, digest).map_err(|p| match p {
        Problem::WrongKey => Miss::WrongKey,
        Problem::Unreadable(reason) => Miss::Unreadable(reason),
        Problem::NotASignature(predicate) => Miss::NotASignature(predicate),
    })?;
    if !opened.digests.iter().any(|d| d == digest) {
        return Err(Miss::OtherDigest(opened.digests.join(", ")));
    }
    let Some(signed) = opened.annotations else {
        if let Some((name, want)) = annotations.iter().next() {
            return Err(Miss::Annotation(AnnotationMiss {
                absent: annotations.len(),
                different: 0,
                reasons: vec![format!(
                    "annotation {name} cannot be checked: a message-signature bundle signs only a digest and has nowhere to carry annotations (want {name}={want}); sign in the legacy layout or as a DSSE bundle (olm-guard sign, cosign sign) to carry them"
                )],
            }));
        }
        return Ok(format!(" ({})", Content::Message.as_str()));
    };
    compare_annotations(
        annotations,
        |name| signed.get(name).cloned(),
        |name, want| {
            format!(
                "annotation {name} missing: the bundle's statement carries no {name} in its subject annotations (want {name}={want})"
            )
        },
    )?;
    Ok(format!(" ({})", Content::Dsse.as_str()))
}

impl Report {
    /// One line on a refusal: every unsatisfied constraint and why, and
    /// `anyOf`'s count when it fell short.
    pub fn refusal(&self) -> String {
        let mut reasons: Vec<String> = self
            .constraints
            .iter()
            .filter(|c| c.outcome != Outcome::Satisfied)
            .filter(|c| {
                // anyOf members only matter when anyOf fell short.
                !c.location.starts_with("anyOf")
                    || self
                        .any_of
                        .as_ref()
                        .is_some_and(|a| a.matched < a.minimum_matches)
            })
            .map(|c| format!("{} ({}): {}", c.location, c.constraint, c.detail))
            .collect();
        if let Some(any_of) = &self.any_of
            && any_of.matched < any_of.minimum_matches
        {
            reasons.insert(
                0,
                format!(
                    "anyOf: {} of minimumMatches {} satisfied",
                    any_of.matched, any_of.minimum_matches
                ),
            );
        }
        format!(
            "signature verification failed for {}: {}",
            self.digest,
            reasons.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::keys::{PrivateKey, generate};

    fn key() -> PrivateKey {
        let pair = generate(b"").unwrap();
        PrivateKey::from_pem(&pair.private_pem, "k", None).unwrap()
    }

    fn layer(key: &PrivateKey, digest: &str, annotations: &[(&str, &str)]) -> SignatureLayer {
        let annotations: BTreeMap<String, String> = annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let payload = SimpleSigning::new("h/r", digest, &annotations).to_bytes();
        SignatureLayer {
            layout: Layout::Legacy,
            digest: "sha256:layer".into(),
            signature: Some(key.sign(&payload)),
            payload: Some(payload),
        }
    }

    fn config(key: &PrivateKey, annotations: &[(&str, &str)]) -> VerificationConfig {
        VerificationConfig::from_keys(
            vec![("cosign.pub".into(), key.public_key())],
            &annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    const DIGEST: &str = "sha256:aaaa";

    #[test]
    fn each_refusal_says_why() {
        let signer = key();
        let other = key();
        let good = layer(&signer, DIGEST, &[("env", "prod")]);
        let verdict = |config: &VerificationConfig, layers: &[SignatureLayer]| {
            let report = verify(config, DIGEST, &Locations::default(), layers);
            (report.verified, report.constraints[0].detail.clone())
        };
        assert!(verdict(&config(&signer, &[]), std::slice::from_ref(&good)).0);
        let cases: [(VerificationConfig, Vec<SignatureLayer>, &str); 6] = [
            (config(&signer, &[]), vec![], "no signature"),
            (config(&other, &[]), vec![good.clone()], "wrong key"),
            (
                config(&signer, &[]),
                vec![layer(&signer, "sha256:bbbb", &[])],
                "the signature is for another digest: its payload names sha256:bbbb",
            ),
            (
                config(&signer, &[("team", "a")]),
                vec![good.clone()],
                "annotation team missing",
            ),
            (
                config(&signer, &[("env", "dev")]),
                vec![good.clone()],
                "annotation env different: the signature says env=prod, want env=dev",
            ),
            (
                config(&signer, &[]),
                vec![SignatureLayer {
                    payload: None,
                    ..good.clone()
                }],
                "tampered legacy signature layer: the bytes of sha256:layer",
            ),
        ];
        for (config, layers, want) in cases {
            let (verified, detail) = verdict(&config, &layers);
            assert!(!verified, "{want}");
            assert!(detail.starts_with(want), "{detail}\nwant: {want}");
        }
        // The closest miss wins: a wrong-key layer beside one for another
        // digest reports the digest.
        let (_, detail) = verdict(
            &config(&signer, &[]),
            &[layer(&other, DIGEST, &[]), layer(&signer, "sha256:cc", &[])],
        );
        assert!(detail.contains("another digest"), "{detail}");
    }

    #[test]
    fn the_signature_differing_only_in_an_annotation_value_is_the_closest() {
        use base64::Engine as _;
        use sha2::{Digest, Sha256};
        let signer = key();
        let manifest = b"{\"schemaVersion\":2}";
        let sha = Sha256::digest(manifest);
        let hex_digest = format!(
            "sha256:{}",
            sha.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
        let wanted = config(&signer, &[("release", "stable")]);
        // Beside it, listed first or last: a bundle that says nothing of
        // the annotation, and a message signature, which cannot carry any.
        let unannotated = bundle_layer(&signer, &hex_digest, &[]);
        let message = SignatureLayer {
            payload: Some(
                serde_json::to_vec(&serde_json::json!({
                    "mediaType": bundle::BUNDLE_MEDIA_TYPE,
                    "verificationMaterial": {"publicKey": {"hint": signer.public_key().hint()}},
                    "messageSignature": {
                        "messageDigest": {
                            "algorithm": "SHA2_256",
                            "digest": base64::engine::general_purpose::STANDARD.encode(sha),
                        },
                        "signature": signer.sign(manifest),
                    }
                }))
                .unwrap(),
            ),
            ..unannotated.clone()
        };
        let legacy = layer(&signer, &hex_digest, &[("release", "old")]);
        for layers in [
            vec![unannotated.clone(), message.clone(), legacy.clone()],
            vec![legacy.clone(), message, unannotated],
        ] {
            let report = verify(&wanted, &hex_digest, &Locations::default(), &layers);
            let constraint = &report.constraints[0];
            assert!(!report.verified);
            assert_eq!(
                constraint.layout,
                Some(Layout::Legacy),
                "{}",
                constraint.detail
            );
            assert_eq!(
                constraint.detail,
                "annotation release different: the signature says release=old, want release=stable (legacy signature layer sha256:layer)"
            );
        }
    }

    #[test]
    fn any_of_counts_matches_and_keyless_never_passes() {
        let a = key();
        let b = key();
        let pem = |k: &PrivateKey| {
            k.public_key()
                .to_pem()
                .lines()
                .map(|l| format!("        {l}\n"))
                .collect::<String>()
        };
        let text = format!(
            "apiVersion: v1\nanyOf:\n  minimumMatches: 2\n  signatures:\n    - kind: pubKey\n      key: |\n{}    - kind: pubKey\n      key: |\n{}    - kind: githubAction\n      owner: kubewarden\n",
            pem(&a),
            pem(&b)
        );
        let config = VerificationConfig::parse(&text, "v.yml").unwrap();
        let one = verify(
            &config,
            DIGEST,
            &Locations::default(),
            &[layer(&a, DIGEST, &[])],
        );
        assert!(!one.verified);
        assert!(
            one.refusal()
                .contains("anyOf: 1 of minimumMatches 2 satisfied"),
            "{}",
            one.refusal()
        );
        assert!(
            one.refusal().contains("not verifiable offline"),
            "{}",
            one.refusal()
        );
        let both = verify(
            &config,
            DIGEST,
            &Locations::default(),
            &[layer(&a, DIGEST, &[]), layer(&b, DIGEST, &[])],
        );
        assert!(both.verified);
        assert_eq!(both.constraints[2].outcome, Outcome::Offline);
    }

    fn bundle_layer(
        key: &PrivateKey,
        digest: &str,
        annotations: &[(&str, &str)],
    ) -> SignatureLayer {
        let annotations: BTreeMap<String, String> = annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        SignatureLayer {
            layout: Layout::Bundle,
            digest: "sha256:referrer".into(),
            payload: Some(crate::bundle::sign(key, digest, &annotations)),
            signature: None,
        }
    }

    #[test]
    fn bundles_are_judged_and_named() {
        let signer = key();
        let other = key();
        let hex_digest = format!("sha256:{}", "a".repeat(64));
        let good = bundle_layer(&signer, &hex_digest, &[("env", "prod")]);
        let verdict = |config: &VerificationConfig, layers: &[SignatureLayer]| {
            let report = verify(config, &hex_digest, &Locations::default(), layers);
            (report.verified, report.constraints[0].clone(), report)
        };
        let (ok, c, report) = verdict(
            &config(&signer, &[("env", "prod")]),
            std::slice::from_ref(&good),
        );
        assert!(ok, "{}", c.detail);
        assert_eq!(c.layout, Some(Layout::Bundle));
        assert_eq!(c.detail, "bundle referrer sha256:referrer (dsse-envelope)");
        assert_eq!((report.layers, report.bundles), (0, 1));
        let cases: [(VerificationConfig, Vec<SignatureLayer>, &str); 4] = [
            (
                config(&other, &[]),
                vec![good.clone()],
                "wrong key: none of the 1 signature(s) (0 legacy, 1 bundle)",
            ),
            (
                config(&signer, &[]),
                vec![bundle_layer(
                    &signer,
                    &format!("sha256:{}", "b".repeat(64)),
                    &[],
                )],
                "the signature is for another digest: its bundle names sha256:bbbb",
            ),
            (
                config(&signer, &[("team", "a")]),
                vec![good.clone()],
                "annotation team missing: the bundle's statement carries no team",
            ),
            (
                config(&signer, &[]),
                vec![SignatureLayer {
                    payload: None,
                    ..good.clone()
                }],
                "tampered bundle referrer: the bytes of sha256:referrer",
            ),
        ];
        for (config, layers, want) in cases {
            let (verified, c, _) = verdict(&config, &layers);
            assert!(!verified, "{want}");
            assert_eq!(c.layout, Some(Layout::Bundle));
            assert!(c.detail.starts_with(want), "{}\nwant: {want}", c.detail);
        }
        // Both layouts beside each other: the legacy one satisfies a key the
        // bundle does not, and the verdict says which.
        let legacy = SignatureLayer {
            digest: "sha256:layer".into(),
            ..layer(&other, &hex_digest, &[])
        };
        let (ok, c, report) = verdict(&config(&other, &[]), &[good.clone(), legacy]);
        assert!(ok);
        assert_eq!(c.layout, Some(Layout::Legacy));
        assert_eq!((report.layers, report.bundles), (1, 1));
    }
}
