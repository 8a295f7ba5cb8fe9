//! cosign's key pair: ECDSA P-256, the public key as an SPKI `PUBLIC KEY`
//! PEM, the private key as PKCS#8 encrypted the way `cosign
//! generate-key-pair` encrypts it (sigstore/cosign `pkg/cosign/keys.go`,
//! `GenerateKeyPair` and `LoadPrivateKey`; sigstore/sigstore-rs
//! `src/crypto/signing_key/kdf.rs`):
//!
//! * a PEM block labelled `ENCRYPTED SIGSTORE PRIVATE KEY` (cosign before
//!   2.0 wrote `ENCRYPTED COSIGN PRIVATE KEY`; both are read);
//! * its content a JSON document `{"kdf": {"name": "scrypt", "params":
//!   {"N": 32768, "r": 8, "p": 1}, "salt": …}, "cipher": {"name":
//!   "nacl/secretbox", "nonce": …}, "ciphertext": …}`, byte strings in
//!   standard base64 (Go's `encoding/json` for `[]byte`);
//! * the secretbox key is scrypt(password, salt) and the plaintext the
//!   PKCS#8 DER of the private key.
//!
//! cosign always encrypts, with an empty password when none is given;
//! unencrypted `PRIVATE KEY` (PKCS#8) and `EC PRIVATE KEY` (SEC 1) PEM files
//! are read too, as `cosign import-key-pair` reads them.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use crypto_secretbox::aead::{Aead, KeyInit};
use p256::ecdsa::signature::hazmat::PrehashVerifier;
use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::{DerSignature, SigningKey, VerifyingKey};
use p256::pkcs8::der::{Decode, pem};
use p256::pkcs8::spki::{ObjectIdentifier, SubjectPublicKeyInfoRef};
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey, LineEnding};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The PEM label cosign 2 writes for an encrypted private key.
pub const ENCRYPTED_SIGSTORE_LABEL: &str = "ENCRYPTED SIGSTORE PRIVATE KEY";
/// The PEM label cosign 1 wrote; still read.
pub const ENCRYPTED_COSIGN_LABEL: &str = "ENCRYPTED COSIGN PRIVATE KEY";

/// scrypt's cost as cosign sets it (go-securesystemslib `encrypted`,
/// `scryptN`, `scryptR`, `scryptP`): N = 2^15, r = 8, p = 1.
const SCRYPT_LOG_N: u8 = 15;
const SCRYPT_R: u32 = 8;
const SCRYPT_P: u32 = 1;
/// sigstore-rs accepts N = 2^15 and 2^16 (`ScryptKDF::check_params`); so
/// do we, and nothing dearer, so a hostile key file cannot ask for gigabytes.
const SCRYPT_ACCEPTED_N: [u32; 2] = [1 << 15, 1 << 16];
const SALT_LEN: usize = 32;
const NONCE_LEN: usize = 24;

/// id-ecPublicKey (RFC 5480).
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
/// prime256v1, the P-256 curve (RFC 5480).
const PRIME256V1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");

/// Why a key file cannot be used; each message names the file and the fix.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The file holds no PEM block.
    #[error(
        "{source_name}: not a PEM key ({reason}); give the file `olm-guard keygen` or `cosign generate-key-pair` wrote"
    )]
    NotPem {
        /// The file (or config field) the key came from.
        source_name: String,
        /// What the PEM parser said.
        reason: String,
    },
    /// A PEM block of a kind that is not a key of this role.
    #[error("{source_name}: a PEM `{label}` block, not {want}; give {hint}")]
    WrongLabel {
        /// The file.
        source_name: String,
        /// The label found.
        label: String,
        /// What was wanted.
        want: &'static str,
        /// The file to give instead.
        hint: &'static str,
    },
    /// A public key of another algorithm or curve.
    #[error(
        "{source_name}: {found}, not ECDSA P-256; olm-guard signs and verifies with P-256 keys, cosign's default: write a pair with `olm-guard keygen` or `cosign generate-key-pair` (no --signing-algorithm, or ecdsa-sha2-256-nistp256)"
    )]
    NotP256 {
        /// The file.
        source_name: String,
        /// The algorithm found, in words.
        found: String,
    },
    /// An encrypted private key and no password to decrypt it.
    #[error(
        "{source_name}: the private key is encrypted and COSIGN_PASSWORD is unset; set COSIGN_PASSWORD to the password it was written with"
    )]
    PasswordNeeded {
        /// The file.
        source_name: String,
    },
    /// The password does not decrypt the key.
    #[error(
        "{source_name}: COSIGN_PASSWORD does not decrypt the private key; set it to the password the key was written with"
    )]
    WrongPassword {
        /// The file.
        source_name: String,
    },
    /// A placeholder (all zeros) where a public key belongs.
    #[error(
        "{source_name}: this is a placeholder, not a key (it verifies nothing): put the contents of your cosign.pub in its place (`olm-guard keygen` or `cosign generate-key-pair` writes one)"
    )]
    Placeholder {
        /// The file or config field.
        source_name: String,
    },
    /// The key's contents are broken.
    #[error("{source_name}: {reason}")]
    Malformed {
        /// The file.
        source_name: String,
        /// What is wrong.
        reason: String,
    },
    /// The operating system's random source failed.
    #[error("no randomness from the operating system: {0}")]
    Random(String),
}

/// A P-256 private key, ready to sign.
pub struct PrivateKey {
    key: SigningKey,
}

/// A P-256 public key, ready to verify.
#[derive(Clone, Debug)]
pub struct PublicKey {
    key: VerifyingKey,
}

/// The two PEM files of a new key pair.
pub struct KeyPairPem {
    /// `cosign.key`: the encrypted private key.
    pub private_pem: String,
    /// `cosign.pub`: the public key.
    pub public_pem: String,
}

/// A new key pair, the private key encrypted with `password` (empty is
/// allowed, as cosign allows it).
pub fn generate(password: &[u8]) -> Result<KeyPairPem, KeyError> {
    let key = loop {
        let mut bytes = [0u8; 32];
        random(&mut bytes)?;
        // A 32-byte string is a valid scalar except with probability ~2^-32.
        if let Ok(key) = SigningKey::from_slice(&bytes) {
            break key;
        }
    };
    let private = PrivateKey { key };
    Ok(KeyPairPem {
        private_pem: private.to_encrypted_pem(password)?,
        public_pem: private.public_key().to_pem(),
    })
}

impl PrivateKey {
    /// Read a private key PEM; `source_name` names it in errors. An encrypted
    /// key is decrypted with `password`, `None` meaning COSIGN_PASSWORD is
    /// unset (the empty password is tried, as cosign's prompt-free default
    /// writes it).
    pub fn from_pem(
        text: &str,
        source_name: &str,
        password: Option<&[u8]>,
    ) -> Result<PrivateKey, KeyError> {
        let (label, der) = decode_pem(text, source_name)?;
        let malformed = |reason: String| KeyError::Malformed {
            source_name: source_name.to_owned(),
            reason,
        };
        let key = match label.as_str() {
            ENCRYPTED_SIGSTORE_LABEL | ENCRYPTED_COSIGN_LABEL => {
                let plain = decrypt(&der, password.unwrap_or_default()).map_err(|e| match e {
                    Decrypt::Password if password.is_none() => KeyError::PasswordNeeded {
                        source_name: source_name.to_owned(),
                    },
                    Decrypt::Password => KeyError::WrongPassword {
                        source_name: source_name.to_owned(),
                    },
                    Decrypt::Format(reason) => malformed(reason),
                })?;
                private_from_pkcs8(&plain, source_name)?
            }
            "PRIVATE KEY" => private_from_pkcs8(&der, source_name)?,
            "EC PRIVATE KEY" => p256::SecretKey::from_sec1_der(&der)
                .map(SigningKey::from)
                .map_err(|e| {
                    malformed(format!(
                        "not a P-256 EC private key ({e}); give a P-256 key"
                    ))
                })?,
            "PUBLIC KEY" => {
                return Err(KeyError::WrongLabel {
                    source_name: source_name.to_owned(),
                    label,
                    want: "a private key",
                    hint: "the private key (cosign.key) to sign, the public key to verify",
                });
            }
            _ => {
                return Err(KeyError::WrongLabel {
                    source_name: source_name.to_owned(),
                    label,
                    want: "a private key",
                    hint: "the cosign.key `olm-guard keygen` or `cosign generate-key-pair` wrote",
                });
            }
        };
        Ok(PrivateKey { key })
    }

    /// The public half.
    pub fn public_key(&self) -> PublicKey {
        PublicKey {
            key: *self.key.verifying_key(),
        }
    }

    /// The signature of `payload` as cosign stores it: ECDSA over SHA-256,
    /// ASN.1 DER, standard base64.
    pub fn sign(&self, payload: &[u8]) -> String {
        let signature: DerSignature = self.key.sign(payload);
        BASE64.encode(signature.as_bytes())
    }

    /// The encrypted PEM cosign writes (module docs).
    pub fn to_encrypted_pem(&self, password: &[u8]) -> Result<String, KeyError> {
        let plain = self.key.to_pkcs8_der().map_err(|e| KeyError::Malformed {
            source_name: "new key".into(),
            reason: e.to_string(),
        })?;
        let mut salt = [0u8; SALT_LEN];
        let mut nonce = [0u8; NONCE_LEN];
        random(&mut salt)?;
        random(&mut nonce)?;
        let key = scrypt_key(password, &salt, 1 << SCRYPT_LOG_N)
            .map_err(|reason| KeyError::Random(reason.to_string()))?;
        let ciphertext = crypto_secretbox::XSalsa20Poly1305::new((&key).into())
            .encrypt((&nonce).into(), plain.as_bytes())
            .map_err(|e| KeyError::Random(e.to_string()))?;
        let envelope = Envelope {
            kdf: Kdf {
                name: "scrypt".into(),
                params: ScryptParams {
                    n: 1 << SCRYPT_LOG_N,
                    r: SCRYPT_R,
                    p: SCRYPT_P,
                },
                salt: BASE64.encode(salt),
            },
            cipher: Cipher {
                name: "nacl/secretbox".into(),
                nonce: BASE64.encode(nonce),
            },
            ciphertext: BASE64.encode(ciphertext),
        };
        let json = serde_json::to_vec(&envelope).map_err(|e| KeyError::Random(e.to_string()))?;
        pem::encode_string(ENCRYPTED_SIGSTORE_LABEL, LineEnding::LF, &json)
            .map_err(|e| KeyError::Random(e.to_string()))
    }
}

impl PublicKey {
    /// Read an SPKI `PUBLIC KEY` PEM, refusing every key but ECDSA P-256
    /// with a line naming what it is; `source_name` names the file or the
    /// config field.
    pub fn from_pem(text: &str, source_name: &str) -> Result<PublicKey, KeyError> {
        let (label, der) = decode_pem(text, source_name)?;
        if label != "PUBLIC KEY" {
            return Err(KeyError::WrongLabel {
                source_name: source_name.to_owned(),
                label,
                want: "a public key",
                hint: "the cosign.pub `olm-guard keygen` or `cosign generate-key-pair` wrote",
            });
        }
        let malformed = |reason: String| KeyError::Malformed {
            source_name: source_name.to_owned(),
            reason,
        };
        let spki = SubjectPublicKeyInfoRef::from_der(&der)
            .map_err(|e| malformed(format!("not a public key ({e})")))?;
        let algorithm = spki.algorithm.oid;
        let curve = spki
            .algorithm
            .parameters
            .and_then(|p| p.decode_as::<ObjectIdentifier>().ok());
        if algorithm != EC_PUBLIC_KEY || curve != Some(PRIME256V1) {
            return Err(KeyError::NotP256 {
                source_name: source_name.to_owned(),
                found: describe_algorithm(algorithm, curve, "public key"),
            });
        }
        let point = spki.subject_public_key.raw_bytes();
        // An uncompressed point whose coordinates are all zeros is no key
        // anyone generated: a placeholder, such as the one the shipped
        // verification config carries until it is replaced.
        if point.len() == 65 && point[0] == 4 && point[1..].iter().all(|b| *b == 0) {
            return Err(KeyError::Placeholder {
                source_name: source_name.to_owned(),
            });
        }
        let key = VerifyingKey::from_sec1_bytes(point)
            .map_err(|e| malformed(format!("not a point on P-256 ({e})")))?;
        Ok(PublicKey { key })
    }

    /// The SPKI `PUBLIC KEY` PEM.
    pub fn to_pem(&self) -> String {
        self.key
            .to_public_key_pem(LineEnding::LF)
            .unwrap_or_default()
    }

    /// Whether `signature` (standard base64 of an ASN.1 DER ECDSA signature,
    /// as cosign stores it) signs `payload` with this key.
    pub fn verifies(&self, payload: &[u8], signature: &str) -> bool {
        let Ok(der) = BASE64.decode(signature.trim()) else {
            return false;
        };
        let Ok(signature) = DerSignature::from_bytes(&der) else {
            return false;
        };
        self.key.verify(payload, &signature).is_ok()
    }

    /// Whether `signature` (ASN.1 DER ECDSA, standard base64) signs the
    /// message whose SHA-256 is `digest`: a Sigstore bundle's message
    /// signature, checked against its `messageDigest` (sigstore/sigstore-rs
    /// `bundle/verify/verifier.rs`, `verify_bundle_content`, verifies it the
    /// same way, as a prehash).
    pub fn verifies_prehash(&self, digest: &[u8], signature: &str) -> bool {
        let Ok(der) = BASE64.decode(signature.trim()) else {
            return false;
        };
        let Ok(signature) = p256::ecdsa::Signature::from_der(&der) else {
            return false;
        };
        digest.len() == 32 && self.key.verify_prehash(digest, &signature).is_ok()
    }

    /// The key hint a Sigstore bundle carries in
    /// `verificationMaterial.publicKey.hint`: standard base64 of the SHA-256
    /// of the key's DER (SPKI), as cosign's `SignerVerifierKeypair::GetHint`
    /// and sigstore-go's `EphemeralKeypair` write it.
    pub fn hint(&self) -> String {
        BASE64.encode(Sha256::digest(self.spki_der()))
    }

    fn spki_der(&self) -> Vec<u8> {
        self.key
            .to_public_key_der()
            .map(|d| d.as_bytes().to_vec())
            .unwrap_or_default()
    }

    /// A short name for messages: the first 16 hex digits of the SHA-256 of
    /// the key's DER (as `ssh-keygen -l` names keys by a digest).
    pub fn fingerprint(&self) -> String {
        let digest = Sha256::digest(self.spki_der());
        digest[..8].iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl PartialEq for PublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

/// A P-256 key from PKCS#8 DER; any other algorithm (cosign 2.5 and later
/// write RSA, Ed25519, P-384 and P-521 keys with `generate-key-pair
/// --signing-algorithm`, sigstore/cosign `pkg/cosign/keys.go`,
/// `GenerateKeyPairWithAlgorithm`) is named in the refusal.
fn private_from_pkcs8(der: &[u8], source_name: &str) -> Result<SigningKey, KeyError> {
    SigningKey::from_pkcs8_der(der).map_err(|e| {
        let found = match p256::pkcs8::PrivateKeyInfoRef::from_der(der) {
            Ok(info) => {
                let curve = info
                    .algorithm
                    .parameters
                    .and_then(|p| p.decode_as::<ObjectIdentifier>().ok());
                describe_algorithm(info.algorithm.oid, curve, "private key")
            }
            Err(_) => format!("a private key that is not ECDSA P-256 ({e})"),
        };
        KeyError::NotP256 {
            source_name: source_name.to_owned(),
            found,
        }
    })
}

/// A key's algorithm in words: `an Ed25519 public key`.
fn describe_algorithm(
    algorithm: ObjectIdentifier,
    curve: Option<ObjectIdentifier>,
    what: &str,
) -> String {
    match (algorithm.to_string().as_str(), curve.map(|c| c.to_string())) {
        ("1.2.840.113549.1.1.1", _) => format!("an RSA {what}"),
        ("1.3.101.112", _) => format!("an Ed25519 {what}"),
        ("1.2.840.10045.2.1", Some(curve)) => match curve.as_str() {
            "1.2.840.10045.3.1.7" => format!("an ECDSA P-256 {what} that does not parse"),
            "1.3.132.0.34" => format!("an ECDSA P-384 {what}"),
            "1.3.132.0.35" => format!("an ECDSA P-521 {what}"),
            "1.3.132.0.10" => format!("an ECDSA secp256k1 {what}"),
            other => format!("an EC {what} on curve {other}"),
        },
        (other, _) => format!("a {what} of algorithm {other}"),
    }
}

fn decode_pem(text: &str, source_name: &str) -> Result<(String, Vec<u8>), KeyError> {
    // The first PEM block, wherever it starts (a comment may precede it).
    let start = text.find("-----BEGIN").ok_or_else(|| KeyError::NotPem {
        source_name: source_name.to_owned(),
        reason: "no -----BEGIN line".into(),
    })?;
    let (label, der) =
        pem::decode_vec(text[start..].trim_end().as_bytes()).map_err(|e| KeyError::NotPem {
            source_name: source_name.to_owned(),
            reason: e.to_string(),
        })?;
    Ok((label.to_owned(), der))
}

/// Why decryption failed: the password (secretbox's tag did not match), or
/// the envelope itself.
enum Decrypt {
    Password,
    Format(String),
}

#[derive(Serialize, Deserialize)]
struct Envelope {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(Serialize, Deserialize)]
struct Kdf {
    name: String,
    params: ScryptParams,
    salt: String,
}

#[derive(Serialize, Deserialize)]
struct ScryptParams {
    #[serde(rename = "N")]
    n: u32,
    r: u32,
    p: u32,
}

#[derive(Serialize, Deserialize)]
struct Cipher {
    name: String,
    nonce: String,
}

fn decrypt(envelope: &[u8], password: &[u8]) -> Result<Vec<u8>, Decrypt> {
    let format = |reason: String| Decrypt::Format(format!("not a cosign encrypted key: {reason}"));
    let envelope: Envelope = serde_json::from_slice(envelope).map_err(|e| format(e.to_string()))?;
    if envelope.kdf.name != "scrypt" || envelope.cipher.name != "nacl/secretbox" {
        return Err(format(format!(
            "kdf {} and cipher {} (want scrypt and nacl/secretbox)",
            envelope.kdf.name, envelope.cipher.name
        )));
    }
    let params = &envelope.kdf.params;
    if !SCRYPT_ACCEPTED_N.contains(&params.n) || params.r != SCRYPT_R || params.p != SCRYPT_P {
        return Err(format(format!(
            "scrypt N={} r={} p={} (cosign writes N=32768 r=8 p=1)",
            params.n, params.r, params.p
        )));
    }
    let decode = |field: &str, text: &str| {
        BASE64
            .decode(text)
            .map_err(|e| format(format!("{field}: {e}")))
    };
    let salt = decode("salt", &envelope.kdf.salt)?;
    let nonce = decode("nonce", &envelope.cipher.nonce)?;
    let ciphertext = decode("ciphertext", &envelope.ciphertext)?;
    let nonce: [u8; NONCE_LEN] = nonce
        .try_into()
        .map_err(|_| format("the nonce is not 24 bytes".into()))?;
    let key = scrypt_key(password, &salt, params.n).map_err(|e| format(e.to_string()))?;
    crypto_secretbox::XSalsa20Poly1305::new((&key).into())
        .decrypt((&nonce).into(), ciphertext.as_slice())
        .map_err(|_| Decrypt::Password)
}

fn scrypt_key(
    password: &[u8],
    salt: &[u8],
    n: u32,
) -> Result<[u8; 32], scrypt::errors::InvalidParams> {
    let params = scrypt::Params::new(n.ilog2() as u8, SCRYPT_R, SCRYPT_P)?;
    let mut key = [0u8; 32];
    // Err only for an output length scrypt cannot give; 32 bytes it can.
    let _ = scrypt::scrypt(password, salt, &params, &mut key);
    Ok(key)
}

fn random(buf: &mut [u8]) -> Result<(), KeyError> {
    getrandom::fill(buf).map_err(|e| KeyError::Random(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_pair_signs_and_verifies_through_its_pem_files() {
        let pair = generate(b"secret").unwrap();
        assert!(
            pair.private_pem
                .starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----")
        );
        assert!(pair.public_pem.starts_with("-----BEGIN PUBLIC KEY-----"));
        let private = PrivateKey::from_pem(&pair.private_pem, "k", Some(b"secret")).unwrap();
        let public = PublicKey::from_pem(&pair.public_pem, "p").unwrap();
        assert!(private.public_key() == public);
        let signature = private.sign(b"payload");
        assert!(public.verifies(b"payload", &signature));
        assert!(!public.verifies(b"payload!", &signature));
        assert!(!public.verifies(b"payload", "not base64"));
    }

    #[test]
    fn an_encrypted_key_wants_its_password() {
        let pair = generate(b"secret").unwrap();
        let err = PrivateKey::from_pem(&pair.private_pem, "cosign.key", None)
            .err()
            .unwrap();
        assert!(matches!(err, KeyError::PasswordNeeded { .. }), "{err}");
        assert!(err.to_string().starts_with("cosign.key: "), "{err}");
        let err = PrivateKey::from_pem(&pair.private_pem, "cosign.key", Some(b"guess"))
            .err()
            .unwrap();
        assert!(matches!(err, KeyError::WrongPassword { .. }), "{err}");
        // cosign's prompt-free default: an empty password, read without one.
        let open = generate(b"").unwrap();
        assert!(PrivateKey::from_pem(&open.private_pem, "k", None).is_ok());
    }

    #[test]
    fn the_envelope_is_cosigns() {
        let pair = generate(b"").unwrap();
        let (label, json) = pem::decode_vec(pair.private_pem.as_bytes()).unwrap();
        assert_eq!(label, ENCRYPTED_SIGSTORE_LABEL);
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(value["kdf"]["name"], "scrypt");
        assert_eq!(value["kdf"]["params"]["N"], 32768);
        assert_eq!(value["kdf"]["params"]["r"], 8);
        assert_eq!(value["kdf"]["params"]["p"], 1);
        assert_eq!(
            BASE64
                .decode(value["kdf"]["salt"].as_str().unwrap())
                .unwrap()
                .len(),
            32
        );
        assert_eq!(value["cipher"]["name"], "nacl/secretbox");
        assert_eq!(
            BASE64
                .decode(value["cipher"]["nonce"].as_str().unwrap())
                .unwrap()
                .len(),
            24
        );
    }

    #[test]
    fn public_keys_other_than_p256_are_named() {
        // An Ed25519 SPKI (RFC 8410 example key).
        let ed25519 = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n";
        let err = PublicKey::from_pem(ed25519, "ed.pub")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("ed.pub: an Ed25519 public key, not ECDSA P-256"),
            "{err}"
        );
        // An Ed25519 private key, as `cosign generate-key-pair
        // --signing-algorithm ed25519` holds one (RFC 8410 example key).
        let ed25519_private = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n-----END PRIVATE KEY-----\n";
        let err = PrivateKey::from_pem(ed25519_private, "ed.key", None)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("ed.key: an Ed25519 private key, not ECDSA P-256;")
                && err.contains("`cosign generate-key-pair` (no --signing-algorithm"),
            "{err}"
        );
        let err = PublicKey::from_pem("hello", "x.pub")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("x.pub: not a PEM key"), "{err}");
        let pair = generate(b"").unwrap();
        let err = PublicKey::from_pem(&pair.private_pem, "cosign.key")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a public key"), "{err}");
    }
}
