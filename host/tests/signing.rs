//! `olm-guard keygen`, `sign`, `verify` and `--verification-config`
//! against a real registry on loopback, each verdict checked a second time
//! by the `sigstore` crate, the library kwctl and policy-server verify
//! policies with (its cosign client, public-key and annotation
//! constraints): what we accept it accepts, what we refuse it refuses.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::module;
use common::oci_registry::{Registry, field, ok, olm_guard, olm_guard_with, refused};

const PASSWORD: &str = "correct horse";

/// A module pushed to `repo:tag` of `registry`: (reference, digest).
fn push(registry: &Registry, home: &Path, name: &str, repo: &str) -> (String, String) {
    let reference = format!("{}:v1", registry.reference(repo));
    let path = module(name);
    let pushed = ok(olm_guard(
        home,
        &["push", path.to_str().unwrap(), &reference, "--insecure"],
    ));
    (reference, field(&pushed, "digest"))
}

/// `keygen` in `home` with `prefix`: (private key, public key).
fn keygen(home: &Path, prefix: &str, password: &str) -> (PathBuf, PathBuf) {
    ok(olm_guard_with(
        home,
        &["keygen", "--output-key-prefix", prefix],
        &[("COSIGN_PASSWORD", password)],
    ));
    (
        home.join(format!("{prefix}.key")),
        home.join(format!("{prefix}.pub")),
    )
}

fn sign(home: &Path, key: &Path, reference: &str, annotations: &[&str]) -> String {
    let mut args = vec!["sign", "-k", key.to_str().unwrap(), reference, "--insecure"];
    for a in annotations {
        args.extend(["-a", a]);
    }
    ok(olm_guard_with(
        home,
        &args,
        &[("COSIGN_PASSWORD", PASSWORD)],
    ))
}

/// `verify` with `flags` (keys, annotations or a config).
fn verify(home: &Path, reference: &str, flags: &[&str]) -> Output {
    let mut args = vec!["verify", reference, "--insecure"];
    args.extend(flags);
    olm_guard(home, &args)
}

/// The refusal of a `verify` that exited 1.
fn verify_refused(home: &Path, reference: &str, flags: &[&str]) -> String {
    let output = verify(home, reference, flags);
    assert_eq!(
        output.status.code(),
        Some(1),
        "verify should refuse with 1: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    refused(output)
}

/// The sigstore crate's verdict: every signature layer of `reference`
/// (`registry://host/repo:tag`) the cosign client trusts, against a
/// public-key constraint and, when given, an annotation constraint.
fn sigstore_verifies(
    reference: &str,
    public_key: &Path,
    annotations: &[(&str, &str)],
) -> Result<(), String> {
    use sigstore::cosign::verification_constraint::{
        AnnotationVerifier, PublicKeyVerifier, VerificationConstraintVec,
    };
    use sigstore::cosign::{ClientBuilder, CosignCapabilities, verify_constraints};
    use sigstore::crypto::SigningScheme;
    use sigstore::registry::{Auth, ClientConfig, ClientProtocol, OciReference};

    olm_guard_oci::crypto_provider();
    let image: OciReference = reference
        .strip_prefix("registry://")
        .unwrap()
        .parse()
        .map_err(|e| format!("{e}"))?;
    let mut client = ClientBuilder::default()
        .with_oci_client_config(ClientConfig {
            protocol: ClientProtocol::Http,
            ..ClientConfig::default()
        })
        .build()
        .map_err(|e| format!("{e}"))?;
    let pem = std::fs::read(public_key).unwrap();
    let mut constraints: VerificationConstraintVec = vec![Box::new(
        PublicKeyVerifier::new(&pem, &SigningScheme::ECDSA_P256_SHA256_ASN1)
            .map_err(|e| format!("{e}"))?,
    )];
    if !annotations.is_empty() {
        constraints.push(Box::new(AnnotationVerifier {
            annotations: annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }));
    }
    let layers = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(client.trusted_signature_layers(&Auth::Anonymous, &image))
        .map_err(|e| format!("{e}"))?;
    verify_constraints(&layers, constraints.iter()).map_err(|e| format!("{e:?}"))
}

/// A verification config of `keys` (public key files), indented into YAML.
fn config(home: &Path, name: &str, body: &str, keys: &[&Path]) -> PathBuf {
    let mut text = body.to_string();
    for (i, key) in keys.iter().enumerate() {
        let pem: String = std::fs::read_to_string(key)
            .unwrap()
            .lines()
            .map(|l| format!("        {l}\n"))
            .collect();
        text = text.replace(&format!("KEY{i}\n"), &pem);
    }
    let path = home.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn signed_modules_verify_with_olm_guard_and_with_sigstore() {
    let Some(registry) = Registry::start(false) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (private, public) = keygen(home, "cosign", PASSWORD);
    let (reference, digest) = push(&registry, home, "catalog-union", "policies/catalog-union");

    let signed = sign(home, &private, &reference, &["env=prod"]);
    assert_eq!(field(&signed, "digest"), digest);
    assert_eq!(field(&signed, "count"), "1");
    let sig_tag = format!("sha256-{}.sig", &digest[7..]);
    assert!(field(&signed, "signatures").ends_with(&sig_tag), "{signed}");

    // Ours: by key, by key and annotation.
    let verified = ok(verify(home, &reference, &["-k", public.to_str().unwrap()]));
    assert_eq!(field(&verified, "verified"), reference);
    assert_eq!(field(&verified, "digest"), digest);
    assert!(
        verified.contains(&format!("satisfied -k {}", public.display())),
        "{verified}"
    );
    ok(verify(
        home,
        &reference,
        &["-k", public.to_str().unwrap(), "-a", "env=prod"],
    ));
    let json: serde_json::Value = serde_json::from_str(&ok(verify(
        home,
        &reference,
        &["-k", public.to_str().unwrap(), "-o", "json"],
    )))
    .unwrap();
    assert_eq!(json["verified"], true);
    assert_eq!(json["digest"], digest.as_str());
    assert_eq!(json["constraints"][0]["outcome"], "satisfied");

    // Kubewarden's verifier agrees.
    sigstore_verifies(&reference, &public, &[]).expect("sigstore verifies our signature");
    sigstore_verifies(&reference, &public, &[("env", "prod")])
        .expect("sigstore verifies our annotation");

    // Signing again with the same key changes nothing (ECDSA here is
    // deterministic, RFC 6979); a second key appends a second layer.
    let again = sign(home, &private, &reference, &["env=prod"]);
    assert!(field(&again, "count").starts_with("1 (this signature was there already)"));
    let (second_private, second_public) = keygen(home, "second", PASSWORD);
    let second = sign(home, &second_private, &reference, &[]);
    assert_eq!(field(&second, "count"), "2");
    ok(verify(
        home,
        &reference,
        &[
            "-k",
            public.to_str().unwrap(),
            "-k",
            second_public.to_str().unwrap(),
        ],
    ));
    sigstore_verifies(&reference, &public, &[("env", "prod")]).unwrap();
    sigstore_verifies(&reference, &second_public, &[]).unwrap();

    // The private key is cosign's format: sigstore decrypts it with the
    // password, to the same public key.
    let pair = sigstore::crypto::signing_key::SigStoreKeyPair::from_encrypted_pem(
        &std::fs::read(&private).unwrap(),
        PASSWORD.as_bytes(),
    )
    .expect("sigstore decrypts our cosign.key");
    // (sigstore writes PEM with CRLF line ends, we with LF.)
    assert_eq!(
        pair.public_key_to_pem()
            .unwrap()
            .replace("\r\n", "\n")
            .trim(),
        std::fs::read_to_string(&public).unwrap().trim()
    );

    // And a key sigstore encrypts, we sign with.
    let theirs = sigstore::crypto::signing_key::ecdsa::ECDSAKeys::new(
        sigstore::crypto::signing_key::ecdsa::EllipticCurve::P256,
    )
    .unwrap();
    let theirs = theirs.as_inner();
    std::fs::write(
        home.join("theirs.key"),
        theirs
            .private_key_to_encrypted_pem(PASSWORD.as_bytes())
            .unwrap()
            .as_bytes(),
    )
    .unwrap();
    std::fs::write(home.join("theirs.pub"), theirs.public_key_to_pem().unwrap()).unwrap();
    sign(home, &home.join("theirs.key"), &reference, &[]);
    ok(verify(home, &reference, &["-k", "theirs.pub"]));
    sigstore_verifies(&reference, &home.join("theirs.pub"), &[]).unwrap();

    // pull and run with a verification config take the verified digest.
    let config = config(
        home,
        "verification.yml",
        "apiVersion: v1\nallOf:\n  - kind: pubKey\n    owner: release\n    key: |\nKEY0\n    annotations:\n      env: prod\n",
        &[&public],
    );
    let out = home.join("pulled.wasm");
    let pulled = ok(olm_guard(
        home,
        &[
            "pull",
            &reference,
            "--insecure",
            "-o",
            out.to_str().unwrap(),
            "--verification-config",
            config.to_str().unwrap(),
        ],
    ));
    assert_eq!(field(&pulled, "digest"), digest);
    assert!(std::fs::read(&out).unwrap() == std::fs::read(module("catalog-union")).unwrap());
}

#[test]
fn each_refusal_has_its_own_reason_and_sigstore_refuses_too() {
    let Some(registry) = Registry::start(false) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (private, public) = keygen(home, "cosign", PASSWORD);
    let (_, other_public) = keygen(home, "other", PASSWORD);
    let key = ["-k", public.to_str().unwrap()];
    let mut reasons = BTreeMap::new();

    // Unsigned.
    let (unsigned, _) = push(&registry, home, "catalog-union", "policies/unsigned");
    reasons.insert("unsigned", verify_refused(home, &unsigned, &key));
    assert!(sigstore_verifies(&unsigned, &public, &[]).is_err());

    // Signed, but with another key than the one asked for.
    let (signed, _) = push(&registry, home, "scope-rbac", "policies/signed");
    sign(home, &private, &signed, &["env=prod"]);
    reasons.insert(
        "wrong key",
        verify_refused(home, &signed, &["-k", other_public.to_str().unwrap()]),
    );
    assert!(sigstore_verifies(&signed, &other_public, &[]).is_err());

    // Annotations: one missing, one different.
    let missing = [key[0], key[1], "-a", "team=platform"];
    reasons.insert(
        "missing annotation",
        verify_refused(home, &signed, &missing),
    );
    assert!(sigstore_verifies(&signed, &public, &[("team", "platform")]).is_err());
    let different = [key[0], key[1], "-a", "env=dev"];
    reasons.insert(
        "different annotation",
        verify_refused(home, &signed, &different),
    );
    assert!(sigstore_verifies(&signed, &public, &[("env", "dev")]).is_err());
    // The control: the right annotation passes both.
    ok(verify(home, &signed, &[key[0], key[1], "-a", "env=prod"]));
    sigstore_verifies(&signed, &public, &[("env", "prod")]).unwrap();

    // A valid signature of another module, stored under this module's
    // signature tag.
    let options = olm_guard_oci::Options {
        insecure: true,
        ..Default::default()
    };
    let (moved, moved_digest) = push(&registry, home, "og-intersection", "policies/moved");
    let (original, _) = push(
        &registry,
        home,
        "group-authorization",
        "policies/moved-from",
    );
    sign(home, &private, &original, &[]);
    let stolen = olm_guard_oci::fetch_signatures(
        &olm_guard_oci::PolicyRef::parse(&original).unwrap(),
        &options,
    )
    .unwrap();
    let layer = &stolen.layers[0];
    olm_guard_oci::push_signature(
        &olm_guard_oci::PolicyRef::parse(&moved).unwrap(),
        &moved_digest,
        layer.data.as_deref().unwrap(),
        layer.signature().unwrap(),
        &options,
    )
    .unwrap();
    reasons.insert("another digest", verify_refused(home, &moved, &key));
    assert!(sigstore_verifies(&moved, &public, &[]).is_err());

    // A payload altered after signing, re-stored with its old signature
    // (the manifest consistent, the signature not).
    let (altered, altered_digest) =
        push(&registry, home, "revision-uniqueness", "policies/altered");
    sign(home, &private, &altered, &["env=prod"]);
    let reference = olm_guard_oci::PolicyRef::parse(&altered).unwrap();
    let stored = olm_guard_oci::fetch_signatures(&reference, &options).unwrap();
    let payload = String::from_utf8(stored.layers[0].data.clone().unwrap()).unwrap();
    let forged = payload.replace("\"env\":\"prod\"", "\"env\":\"dev\"");
    assert_ne!(forged, payload);
    // Replace the manifest: a fresh tag holds only the forged layer.
    let (forged_ref, forged_digest) =
        push(&registry, home, "revision-uniqueness", "policies/forged");
    assert_eq!(forged_digest, altered_digest);
    olm_guard_oci::push_signature(
        &olm_guard_oci::PolicyRef::parse(&forged_ref).unwrap(),
        &forged_digest,
        forged.as_bytes(),
        stored.layers[0].signature().unwrap(),
        &options,
    )
    .unwrap();
    reasons.insert("altered payload", verify_refused(home, &forged_ref, &key));
    assert!(sigstore_verifies(&forged_ref, &public, &[]).is_err());

    // A signature layer whose stored bytes were changed in the registry's
    // storage: they no longer match the digest the manifest gives.
    let (tampered, _) = push(
        &registry,
        home,
        "aggregation-escalation",
        "policies/tampered",
    );
    sign(home, &private, &tampered, &[]);
    let stored = olm_guard_oci::fetch_signatures(
        &olm_guard_oci::PolicyRef::parse(&tampered).unwrap(),
        &options,
    )
    .unwrap();
    let hex = &stored.layers[0].digest[7..];
    let blob = registry
        .dir
        .path()
        .join("storage/docker/registry/v2/blobs/sha256")
        .join(&hex[..2])
        .join(hex)
        .join("data");
    let bytes = std::fs::read(&blob).unwrap();
    // Same length, one claim changed: the registry serves it as it is.
    let text = String::from_utf8(bytes)
        .unwrap()
        .replace("critical", "critica1");
    std::fs::write(&blob, text).unwrap();
    reasons.insert("tampered layer", verify_refused(home, &tampered, &key));
    assert!(sigstore_verifies(&tampered, &public, &[]).is_err());

    let want = [
        ("unsigned", "no signature: the module is unsigned"),
        (
            "wrong key",
            "wrong key: none of the 1 signature(s) verifies with this key",
        ),
        ("missing annotation", "annotation team missing"),
        (
            "different annotation",
            "annotation env different: the signature says env=prod, want env=dev",
        ),
        (
            "another digest",
            "the signature is for another digest: its payload names sha256:",
        ),
        (
            "altered payload",
            "or the payload was altered after signing",
        ),
        (
            "tampered layer",
            "tampered layer: the bytes of layer sha256:",
        ),
    ];
    for (case, text) in want {
        let reason = &reasons[case];
        assert!(reason.contains(text), "{case}: {reason}");
        assert!(
            reason.contains("signature verification failed for sha256:"),
            "{case}: {reason}"
        );
    }
}

#[test]
fn minimum_matches_two_needs_both_keys_and_run_refuses_before_evaluating() {
    let Some(registry) = Registry::start(false) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (first_private, first_public) = keygen(home, "first", PASSWORD);
    let (second_private, second_public) = keygen(home, "second", PASSWORD);
    let (reference, digest) = push(&registry, home, "catalog-union", "policies/two-keys");
    let config = config(
        home,
        "two.yml",
        "apiVersion: v1\nanyOf:\n  minimumMatches: 2\n  signatures:\n    - kind: pubKey\n      owner: first\n      key: |\nKEY0\n    - kind: pubKey\n      owner: second\n      key: |\nKEY1\n    - kind: githubAction\n      owner: olm-guard\n",
        &[&first_public, &second_public],
    );
    let flags = ["--verification-config", config.to_str().unwrap()];
    let run = |home: &Path| {
        let scenario = common::root().join("testdata/catalog-union");
        let request = std::fs::read_dir(&scenario)
            .unwrap()
            .map(|e| e.unwrap().path().join("request.json"))
            .find(|p| p.is_file())
            .unwrap();
        olm_guard(
            home,
            &[
                "run",
                "--policy",
                &reference,
                "--insecure",
                "--verification-config",
                config.to_str().unwrap(),
                "--request",
                request.to_str().unwrap(),
                "-o",
                "json",
            ],
        )
    };

    sign(home, &first_private, &reference, &[]);
    let refusal = verify_refused(home, &reference, &flags);
    assert!(
        refusal.contains("anyOf: 1 of minimumMatches 2 satisfied"),
        "{refusal}"
    );
    assert!(refusal.contains("(second)"), "{refusal}");
    assert!(refusal.contains("githubAction olm-guard"), "{refusal}");
    assert!(refusal.contains("not verifiable offline"), "{refusal}");
    assert!(sigstore_verifies(&reference, &first_public, &[]).is_ok());
    assert!(sigstore_verifies(&reference, &second_public, &[]).is_err());
    // run refuses before evaluating: no AdmissionReview, exit 2.
    let output = run(home);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let error = refused(output);
    assert!(error.contains(&reference), "{error}");
    assert!(error.contains("anyOf: 1 of minimumMatches 2"), "{error}");

    sign(home, &second_private, &reference, &[]);
    let verified = ok(verify(home, &reference, &flags));
    assert_eq!(field(&verified, "anyOf"), "2 of minimumMatches 2");
    assert!(
        verified.contains("offline anyOf.signatures[2] githubAction olm-guard"),
        "{verified}"
    );
    sigstore_verifies(&reference, &second_public, &[]).unwrap();
    let review: serde_json::Value = serde_json::from_str(&ok(run(home))).unwrap();
    assert!(review.pointer("/response/allowed").is_some(), "{review}");
    let _ = digest;
}

#[test]
fn keys_and_configs_that_cannot_be_used_get_one_line() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (private, _) = keygen(home, "cosign", PASSWORD);
    // No registry is reached: the key and the config are read first.
    let reference = "registry://127.0.0.1:1/policies/x:v1";

    let error = refused(olm_guard(home, &["sign", "-k", "cosign.key", reference]));
    assert_eq!(
        error,
        "olm-guard: cosign.key: the private key is encrypted and COSIGN_PASSWORD is unset; set COSIGN_PASSWORD to the password it was written with"
    );
    let error = refused(olm_guard_with(
        home,
        &["sign", "-k", "cosign.key", reference],
        &[("COSIGN_PASSWORD", "wrong")],
    ));
    assert!(
        error.contains("cosign.key: COSIGN_PASSWORD does not decrypt"),
        "{error}"
    );
    let error = refused(olm_guard(home, &["sign", reference]));
    assert!(
        error.contains("keyless signing needs Fulcio and Rekor on the internet"),
        "{error}"
    );
    let error = refused(olm_guard(home, &["keygen"]));
    assert!(
        error.contains("cosign.key: exists already; pass --force"),
        "{error}"
    );
    assert!(private.is_file());

    // A P-384 public key, and a private key given as the public one.
    let p384 = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).unwrap();
    std::fs::write(home.join("p384.pub"), p384.public_key_pem()).unwrap();
    let error = refused(olm_guard(home, &["verify", "-k", "p384.pub", reference]));
    assert!(
        error.starts_with("olm-guard: p384.pub: an ECDSA P-384 public key, not ECDSA P-256"),
        "{error}"
    );
    let error = refused(olm_guard(home, &["verify", "-k", "cosign.key", reference]));
    assert!(
        error
            .contains("cosign.key: a PEM `ENCRYPTED SIGSTORE PRIVATE KEY` block, not a public key"),
        "{error}"
    );

    // Configs: an unknown kind, a P-384 key in one.
    std::fs::write(
        home.join("unknown.yml"),
        "apiVersion: v1\nallOf:\n  - kind: pubKeyRef\n    name: release\n",
    )
    .unwrap();
    let error = refused(olm_guard(
        home,
        &["verify", "--verification-config", "unknown.yml", reference],
    ));
    assert_eq!(
        error,
        "olm-guard: unknown.yml: allOf[0]: unknown kind `pubKeyRef`; use one of pubKey, genericIssuer, githubAction (Kubewarden's verification config v1)"
    );
    let p384_config = config(
        home,
        "p384.yml",
        "apiVersion: v1\nallOf:\n  - kind: pubKey\n    key: |\nKEY0\n",
        &[&home.join("p384.pub")],
    );
    let error = refused(olm_guard(
        home,
        &[
            "pull",
            reference,
            "--verification-config",
            p384_config.to_str().unwrap(),
        ],
    ));
    assert!(
        error.contains("p384.yml: allOf[0].key: an ECDSA P-384 public key"),
        "{error}"
    );

    // A local module is never run unverified under a verification config.
    let wasm = module("catalog-union");
    let request = common::root().join("testdata/catalog-union");
    let request = std::fs::read_dir(&request)
        .unwrap()
        .map(|e| e.unwrap().path().join("request.json"))
        .find(|p| p.is_file())
        .unwrap();
    let error = refused(olm_guard(
        home,
        &[
            "run",
            "--policy",
            wasm.to_str().unwrap(),
            "--verification-config",
            p384_config.to_str().unwrap(),
            "--request",
            request.to_str().unwrap(),
        ],
    ));
    assert!(
        error.contains("a local module has no signatures to verify"),
        "{error}"
    );
}

/// `deploy/verification-config.yml` is Kubewarden's format: as shipped its
/// placeholder key stops every command with a line naming the field; with
/// a real key in its place it loads.
#[test]
fn the_shipped_verification_config_wants_its_key_replaced() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let shipped = common::root().join("deploy/verification-config.yml");
    let reference = "registry://127.0.0.1:1/policies/x:v1";
    let error = refused(olm_guard(
        home,
        &[
            "verify",
            "--verification-config",
            shipped.to_str().unwrap(),
            reference,
        ],
    ));
    assert!(
        error.contains("deploy/verification-config.yml: allOf[0].key: not a point on P-256"),
        "{error}"
    );

    let (_, public) = keygen(home, "cosign", PASSWORD);
    let text = std::fs::read_to_string(&shipped).unwrap();
    let start = text.find("      -----BEGIN PUBLIC KEY-----").unwrap();
    let end = text.find("-----END PUBLIC KEY-----\n").unwrap() + "-----END PUBLIC KEY-----\n".len();
    let key: String = std::fs::read_to_string(&public)
        .unwrap()
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect();
    let replaced = home.join("verification-config.yml");
    std::fs::write(
        &replaced,
        format!("{}{key}{}", &text[..start], &text[end..]),
    )
    .unwrap();
    // Loaded: the only failure left is the registry, which is not there.
    let error = refused(olm_guard(
        home,
        &[
            "verify",
            "--verification-config",
            replaced.to_str().unwrap(),
            reference,
            "--insecure",
        ],
    ));
    assert!(
        error.starts_with(&format!("olm-guard: {reference}: ")),
        "{error}"
    );
    assert!(!error.contains("verification-config.yml"), "{error}");
}
