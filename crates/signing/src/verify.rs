//! A module's signatures against a verification config, as policy-fetcher
//! judges them (kubewarden/kubewarden-controller,
//! `crates/policy-fetcher/src/verify/mod.rs`,
//! `verify_signatures_against_config`): every `allOf` constraint and at
//! least `minimumMatches` of `anyOf` must each be satisfied by one
//! signature layer. A `pubKey` constraint is satisfied by a layer whose
//! signature verifies with the key over the layer's bytes, whose payload
//! names the module's manifest digest, and which carries every required
//! annotation (sigstore/sigstore-rs, `src/cosign/signature_layers.rs`
//! `SignatureLayer::new` and `src/cosign/verification_constraint/`).
//!
//! Unlike policy-fetcher, which says only which constraints failed, each
//! failing constraint here says why, from the layer that came closest.

use serde::Serialize;

use crate::config::{Constraint, Signature, VerificationConfig};
use crate::payload::SimpleSigning;

/// One layer of a signature manifest, as fetched.
#[derive(Debug, Clone)]
pub struct SignatureLayer {
    /// The layer digest the manifest gives.
    pub digest: String,
    /// The layer's bytes, or `None` when they do not hash to `digest` (the
    /// layer was altered in the registry).
    pub payload: Option<Vec<u8>>,
    /// The `dev.cosignproject.cosign/signature` annotation.
    pub signature: Option<String>,
}

/// The verdict on one module.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The module's manifest digest.
    pub digest: String,
    /// Whether the config is satisfied.
    pub verified: bool,
    /// Where the signatures were looked for (`…:sha256-<hex>.sig`).
    pub signatures: String,
    /// How many signature layers were found.
    pub layers: usize,
    /// Every constraint's outcome, in the config's order.
    pub constraints: Vec<ConstraintReport>,
    /// `anyOf`'s count, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub any_of: Option<AnyOfReport>,
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
    /// For `satisfied` the layer that satisfied it; otherwise why not.
    pub detail: String,
}

/// A constraint's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A layer satisfies it.
    Satisfied,
    /// No layer does.
    Refused,
    /// A keyless constraint: not checkable without Fulcio and Rekor.
    Offline,
}

/// Why a layer does not satisfy a `pubKey` constraint, least promising
/// first: the report gives the layer that came closest.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Miss {
    NoSignatureAnnotation,
    WrongKey,
    Tampered(String),
    NotSimpleSigning(String),
    OtherDigest(String),
    Annotation(String),
}

impl Miss {
    fn describe(&self, layers: usize) -> String {
        match self {
            Miss::NoSignatureAnnotation => {
                "no layer carries a dev.cosignproject.cosign/signature annotation".into()
            }
            Miss::WrongKey => format!(
                "wrong key: none of the {layers} signature(s) verifies with this key (signed with another key, or the payload was altered after signing)"
            ),
            Miss::Tampered(digest) => {
                format!("tampered layer: the bytes of layer {digest} do not match its digest")
            }
            Miss::NotSimpleSigning(reason) => {
                format!("the signed payload is not a simple-signing document ({reason})")
            }
            Miss::OtherDigest(digest) => {
                format!("the signature is for another digest: its payload names {digest}")
            }
            Miss::Annotation(reason) => reason.clone(),
        }
    }
}

/// Judge `layers` (the signature manifest's, empty when there is none)
/// against `config` for the module of manifest `digest`; `signatures` names
/// where they were looked for.
pub fn verify(
    config: &VerificationConfig,
    digest: &str,
    signatures: &str,
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
    Report {
        digest: digest.to_owned(),
        verified,
        signatures: signatures.to_owned(),
        layers: layers.len(),
        constraints,
        any_of,
    }
}

fn judge(constraint: &Constraint, digest: &str, layers: &[SignatureLayer]) -> ConstraintReport {
    let report = |outcome, detail: String| ConstraintReport {
        location: constraint.location.clone(),
        constraint: constraint.signature.to_string(),
        outcome,
        detail,
    };
    let Signature::PubKey {
        key, annotations, ..
    } = &constraint.signature
    else {
        return report(
            Outcome::Offline,
            "keyless signatures are not verifiable offline: they need Fulcio's certificate chain and Rekor's log on the internet (check them with kwctl verify or policy-server)".into(),
        );
    };
    if layers.is_empty() {
        return report(
            Outcome::Refused,
            "no signature: the module is unsigned".into(),
        );
    }
    let mut closest: Option<Miss> = None;
    for layer in layers {
        let miss = match check(layer, key, annotations, digest) {
            Ok(()) => {
                return report(
                    Outcome::Satisfied,
                    format!("signature layer {}", layer.digest),
                );
            }
            Err(miss) => miss,
        };
        if closest.as_ref().is_none_or(|c| miss > *c) {
            closest = Some(miss);
        }
    }
    let detail = closest
        .map(|m| m.describe(layers.len()))
        .unwrap_or_default();
    report(Outcome::Refused, detail)
}

fn check(
    layer: &SignatureLayer,
    key: &crate::keys::PublicKey,
    annotations: &std::collections::BTreeMap<String, String>,
    digest: &str,
) -> Result<(), Miss> {
    let Some(payload) = &layer.payload else {
        return Err(Miss::Tampered(layer.digest.clone()));
    };
    let signature = layer
        .signature
        .as_deref()
        .ok_or(Miss::NoSignatureAnnotation)?;
    if !key.verifies(payload, signature) {
        return Err(Miss::WrongKey);
    }
    let signed: SimpleSigning =
        serde_json::from_slice(payload).map_err(|e| Miss::NotSimpleSigning(e.to_string()))?;
    let signed_digest = &signed.critical.image.docker_manifest_digest;
    if signed_digest != digest {
        return Err(Miss::OtherDigest(signed_digest.clone()));
    }
    for (name, want) in annotations {
        match signed.annotation(name) {
            None => {
                return Err(Miss::Annotation(format!(
                    "annotation {name} missing: the signature carries no {name} (want {name}={want})"
                )));
            }
            Some(value) if value != *want => {
                return Err(Miss::Annotation(format!(
                    "annotation {name} different: the signature says {name}={value}, want {name}={want}"
                )));
            }
            Some(_) => {}
        }
    }
    Ok(())
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
            let report = verify(config, DIGEST, "x", layers);
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
                "tampered layer",
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
        let one = verify(&config, DIGEST, "x", &[layer(&a, DIGEST, &[])]);
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
            "x",
            &[layer(&a, DIGEST, &[]), layer(&b, DIGEST, &[])],
        );
        assert!(both.verified);
        assert_eq!(both.constraints[2].outcome, Outcome::Offline);
    }
}
