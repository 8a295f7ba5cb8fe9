//! `olm-guard keygen`, `sign`, `verify` and `--verification-config`
//! against a real registry on loopback, each verdict checked a second time
//! by an independent verifier: for the legacy `.sig` layout the `sigstore`
//! crate, the library kwctl and policy-server verify policies with (its
//! cosign client, public-key and annotation constraints); for Sigstore
//! bundle referrers sigstore-js (`@sigstore/verify`, through
//! `tests/sigstore-js/verify.cjs`, which finds the referrers on its own),
//! which also signs a bundle of its own for us to verify. What we accept
//! they accept, what we refuse they refuse.

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
    sign_as(home, key, reference, annotations, "both")
}

/// `sign` in the legacy layout only: the cases the `sigstore` crate checks.
fn sign_legacy(home: &Path, key: &Path, reference: &str, annotations: &[&str]) -> String {
    sign_as(home, key, reference, annotations, "legacy")
}

fn sign_as(home: &Path, key: &Path, reference: &str, annotations: &[&str], format: &str) -> String {
    let mut args = vec![
        "sign",
        "-k",
        key.to_str().unwrap(),
        reference,
        "--insecure",
        "--format",
        format,
    ];
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
    let registry = Registry::start(false);
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
            "--output-file",
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
    let registry = Registry::start(false);
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
    sign_legacy(home, &private, &signed, &["env=prod"]);
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
    sign_legacy(home, &private, &original, &[]);
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
    sign_legacy(home, &private, &altered, &["env=prod"]);
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
    sign_legacy(home, &private, &tampered, &[]);
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
            "wrong key: none of the 1 signature(s) (1 legacy, 0 bundle) verifies with this key",
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
            "or the signed payload was altered after signing",
        ),
        (
            "tampered layer",
            "tampered legacy signature layer: the bytes of sha256:",
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
    let registry = Registry::start(false);
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
        error.contains("deploy/verification-config.yml: allOf[0].key: this is a placeholder")
            && error.contains("put the contents of your cosign.pub in its place"),
        "{error}"
    );
    // Said once: no error repeats itself through its source.
    assert_eq!(error.matches("allOf[0].key").count(), 1, "{error}");

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

/// sigstore-js, the bundle layout's independent verifier and signer
/// (`tests/sigstore-js`, installed by `scripts/test-deps.sh` with `npm ci`):
/// runs `script` with `args` and gives its exit code and JSON line. A test
/// that needs it fails without it, in one line saying how to install it.
fn sigstore_js(script: &str, args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let dir = common::root().join("host/tests/sigstore-js");
    let installed = || dir.join("node_modules/@sigstore/verify").is_dir();
    if !installed() {
        let _ = std::process::Command::new(common::root().join("scripts/test-deps.sh")).status();
    }
    assert!(
        installed(),
        "sigstore-js is not installed in host/tests/sigstore-js: run scripts/test-deps.sh (it runs npm ci there; node and npm come from apt-get install -y nodejs npm)"
    );
    let output = std::process::Command::new("node")
        .arg(dir.join(script))
        .args(args)
        .output()
        .expect("node runs (apt-get install -y nodejs)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let json = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
        panic!(
            "sigstore-js {script}: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code(), json)
}

/// sigstore-js's verdict on the bundle referrers of `reference`
/// (`registry://host/repo:tag`) at `digest`: `Ok` when one satisfies the
/// key and `annotations`, else every bundle's reason.
fn sigstore_js_verifies(
    registry: &Registry,
    repo: &str,
    digest: &str,
    key: &Path,
    annotations: &[&str],
) -> Result<(), String> {
    let mut args = vec![registry.host.as_str(), repo, digest, key.to_str().unwrap()];
    args.extend(annotations);
    let (code, json) = sigstore_js("verify.cjs", &args);
    assert_eq!(
        json["via"], "tag schema",
        "docker-registry has no referrers API: {json}"
    );
    match code {
        Some(0) => {
            assert_eq!(json["verified"], true);
            Ok(())
        }
        Some(1) => Err(json["reasons"].to_string()),
        other => panic!("sigstore-js verify exited {other:?}: {json}"),
    }
}

/// The bundles stored for `reference`, as our client reads them.
fn bundles(reference: &str) -> Vec<olm_guard_oci::StoredBundle> {
    let options = olm_guard_oci::Options {
        insecure: true,
        ..Default::default()
    };
    olm_guard_oci::fetch_signatures(
        &olm_guard_oci::PolicyRef::parse(reference).unwrap(),
        &options,
    )
    .unwrap()
    .bundles
}

#[test]
fn bundles_signed_by_olm_guard_verify_with_olm_guard_and_sigstore_js() {
    let registry = Registry::start(false);
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (private, public) = keygen(home, "cosign", PASSWORD);
    let repo = "policies/bundled";
    let (reference, digest) = push(&registry, home, "catalog-union", repo);

    // The bundle layout alone: a referrer, listed by the tag schema (the
    // loopback registry has no referrers API), no .sig manifest.
    let signed = sign_as(home, &private, &reference, &["env=prod"], "bundle");
    assert_eq!(field(&signed, "digest"), digest);
    let tag = format!("sha256-{}", &digest[7..]);
    assert!(
        field(&signed, "bundle").ends_with(&format!("(tag {tag})")),
        "{signed}"
    );
    assert_eq!(field(&signed, "bundles"), "1");
    assert!(!signed.contains("\nsignatures "), "{signed}");
    assert!(
        sigstore_verifies(&reference, &public, &[]).is_err(),
        "no legacy layer"
    );

    // Ours, naming the layout.
    let verified = ok(verify(
        home,
        &reference,
        &["-k", public.to_str().unwrap(), "-a", "env=prod"],
    ));
    assert!(verified.contains("(0 layers)"), "{verified}");
    assert!(verified.contains("(1 bundles)"), "{verified}");
    assert!(
        verified.contains("[bundle]: bundle referrer sha256:"),
        "{verified}"
    );
    assert!(verified.contains("(dsse-envelope)"), "{verified}");
    let json: serde_json::Value = serde_json::from_str(&ok(verify(
        home,
        &reference,
        &["-k", public.to_str().unwrap(), "-o", "json"],
    )))
    .unwrap();
    assert_eq!(json["constraints"][0]["layout"], "bundle");
    assert_eq!(json["bundles"], 1);
    // sigstore-js agrees, finding the referrer through the tag schema.
    sigstore_js_verifies(&registry, repo, &digest, &public, &["env=prod"])
        .expect("sigstore-js verifies our bundle");

    // Never a duplicate: the same signature again adds nothing; both
    // layouts add the legacy one only.
    let again = sign_as(home, &private, &reference, &["env=prod"], "bundle");
    assert_eq!(
        field(&again, "bundles"),
        "1 (this signature was there already)"
    );
    let both = sign(home, &private, &reference, &["env=prod"]);
    assert_eq!(field(&both, "count"), "1");
    assert_eq!(
        field(&both, "bundles"),
        "1 (this signature was there already)"
    );
    assert_eq!(bundles(&reference).len(), 1);
    sigstore_verifies(&reference, &public, &[("env", "prod")])
        .expect("sigstore verifies the legacy signature beside the bundle");
    let verified = ok(verify(home, &reference, &["-k", public.to_str().unwrap()]));
    assert!(verified.contains("(1 layers)"), "{verified}");
    assert!(verified.contains("[legacy]"), "{verified}");

    // A second key: a second referrer, verified by both.
    let (second_private, second_public) = keygen(home, "second", PASSWORD);
    let second = sign_as(home, &second_private, &reference, &[], "bundle");
    assert_eq!(field(&second, "bundles"), "2");
    sigstore_js_verifies(&registry, repo, &digest, &second_public, &[]).unwrap();
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

    // pull with a verification config, satisfied by the bundle alone.
    let (bundle_only, bundle_digest) = push(&registry, home, "scope-rbac", "policies/bundle-only");
    sign_as(home, &private, &bundle_only, &["env=prod"], "bundle");
    let config = config(
        home,
        "verification.yml",
        "apiVersion: v1\nallOf:\n  - kind: pubKey\n    key: |\nKEY0\n    annotations:\n      env: prod\n",
        &[&public],
    );
    let pulled = ok(olm_guard(
        home,
        &[
            "pull",
            &bundle_only,
            "--insecure",
            "--output-file",
            home.join("pulled.wasm").to_str().unwrap(),
            "--verification-config",
            config.to_str().unwrap(),
        ],
    ));
    assert_eq!(field(&pulled, "digest"), bundle_digest);
}

#[test]
fn a_bundle_made_by_sigstore_js_verifies_with_olm_guard() {
    let registry = Registry::start(false);
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let repo = "policies/signed-by-js";
    let (reference, digest) = push(&registry, home, "og-intersection", repo);
    let js_pub = home.join("js.pub");
    let (code, json) = sigstore_js(
        "sign.cjs",
        &[
            &registry.host,
            repo,
            &digest,
            js_pub.to_str().unwrap(),
            "env=prod",
        ],
    );
    assert_eq!(code, Some(0), "{json}");
    assert_eq!(
        json["mediaType"],
        "application/vnd.dev.sigstore.bundle.v0.3+json"
    );

    let verified = ok(verify(
        home,
        &reference,
        &["-k", "js.pub", "-a", "env=prod"],
    ));
    assert!(
        verified.contains(&format!(
            "[bundle]: bundle referrer {} (dsse-envelope)",
            json["referrer"].as_str().unwrap()
        )),
        "{verified}"
    );
    let refusal = verify_refused(home, &reference, &["-k", "js.pub", "-a", "team=platform"]);
    assert!(
        refusal.contains("annotation team missing: the bundle's statement carries no team"),
        "{refusal}"
    );
    // Our own signature beside theirs: olm-guard reads the index
    // @sigstore/oci wrote and appends to it.
    let (private, public) = keygen(home, "cosign", PASSWORD);
    sign_as(home, &private, &reference, &[], "bundle");
    assert_eq!(bundles(&reference).len(), 2);
    sigstore_js_verifies(&registry, repo, &digest, &public, &[]).unwrap();
    sigstore_js_verifies(&registry, repo, &digest, &js_pub, &["env=prod"]).unwrap();
}

#[test]
fn each_bundle_refusal_has_its_own_reason_in_both_verifiers() {
    let registry = Registry::start(false);
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (private, public) = keygen(home, "cosign", PASSWORD);
    let (_, other_public) = keygen(home, "other", PASSWORD);
    let key = ["-k", public.to_str().unwrap()];
    let options = olm_guard_oci::Options {
        insecure: true,
        ..Default::default()
    };
    let js = |repo: &str, digest: &str, key: &Path, annotations: &[&str]| {
        sigstore_js_verifies(&registry, repo, digest, key, annotations)
            .expect_err("sigstore-js refuses")
    };

    // Unsigned.
    let (unsigned, unsigned_digest) = push(&registry, home, "catalog-union", "policies/b-unsigned");
    let refusal = verify_refused(home, &unsigned, &key);
    assert!(
        refusal.contains("no signature: the module is unsigned"),
        "{refusal}"
    );
    assert!(js("policies/b-unsigned", &unsigned_digest, &public, &[]).contains("NO_BUNDLE"));

    // Wrong key; a missing and a different annotation.
    let repo = "policies/b-signed";
    let (signed, signed_digest) = push(&registry, home, "scope-rbac", repo);
    sign_as(home, &private, &signed, &["env=prod"], "bundle");
    let refusal = verify_refused(home, &signed, &["-k", other_public.to_str().unwrap()]);
    assert!(
        refusal.contains(
            "wrong key: none of the 1 signature(s) (0 legacy, 1 bundle) verifies with this key"
        ),
        "{refusal}"
    );
    assert!(js(repo, &signed_digest, &other_public, &[]).contains("SIGNATURE_ERROR"));
    let refusal = verify_refused(home, &signed, &[key[0], key[1], "-a", "team=platform"]);
    assert!(
        refusal.contains("annotation team missing: the bundle's statement carries no team"),
        "{refusal}"
    );
    assert!(
        js(repo, &signed_digest, &public, &["team=platform"]).contains("ANNOTATION_MISSING: team")
    );
    let refusal = verify_refused(home, &signed, &[key[0], key[1], "-a", "env=dev"]);
    assert!(
        refusal.contains("annotation env different: the signature says env=prod, want env=dev"),
        "{refusal}"
    );
    assert!(
        js(repo, &signed_digest, &public, &["env=dev"]).contains("ANNOTATION_MISMATCH: env=prod")
    );
    // The control: both accept the right annotation.
    ok(verify(home, &signed, &[key[0], key[1], "-a", "env=prod"]));
    sigstore_js_verifies(&registry, repo, &signed_digest, &public, &["env=prod"]).unwrap();

    // A valid bundle for another module, attached to this one.
    let repo = "policies/b-moved";
    let (moved, moved_digest) = push(&registry, home, "og-intersection", repo);
    let stolen = bundles(&signed)[0].data.clone().unwrap();
    olm_guard_oci::push_bundle(
        &olm_guard_oci::PolicyRef::parse(&moved).unwrap(),
        &moved_digest,
        &stolen,
        &options,
    )
    .unwrap();
    let refusal = verify_refused(home, &moved, &key);
    assert!(
        refusal.contains(&format!(
            "the signature is for another digest: its bundle names {signed_digest}"
        )),
        "{refusal}"
    );
    assert!(js(repo, &moved_digest, &public, &[]).contains("SUBJECT_MISMATCH"));

    // A bundle whose statement was altered after signing (env=prod made
    // env=dev), attached consistently: its signature no longer verifies.
    let repo = "policies/b-altered";
    let (altered, altered_digest) = push(&registry, home, "revision-uniqueness", repo);
    let mut bundle: serde_json::Value = serde_json::from_slice(&stolen).unwrap();
    let payload = bundle["dsseEnvelope"]["payload"]
        .as_str()
        .unwrap()
        .to_owned();
    let statement = String::from_utf8(base64_decode(&payload)).unwrap();
    let forged = statement
        .replace(&signed_digest[7..], &altered_digest[7..])
        .replace("\"env\":\"prod\"", "\"env\":\"dev\"");
    assert_ne!(forged, statement);
    bundle["dsseEnvelope"]["payload"] = base64_encode(forged.as_bytes()).into();
    olm_guard_oci::push_bundle(
        &olm_guard_oci::PolicyRef::parse(&altered).unwrap(),
        &altered_digest,
        &serde_json::to_vec(&bundle).unwrap(),
        &options,
    )
    .unwrap();
    let refusal = verify_refused(home, &altered, &key);
    assert!(
        refusal.contains("or the signed payload was altered after signing"),
        "{refusal}"
    );
    assert!(js(repo, &altered_digest, &public, &[]).contains("SIGNATURE_ERROR"));

    // A bundle blob changed in the registry's storage (same length): its
    // bytes no longer match the digest the referrer gives.
    let repo = "policies/b-tampered";
    let (tampered, tampered_digest) = push(&registry, home, "aggregation-escalation", repo);
    sign_as(home, &private, &tampered, &[], "bundle");
    let stored = bundles(&tampered)[0].data.clone().unwrap();
    let blob = find_blob(&registry, &stored);
    let text = String::from_utf8(stored)
        .unwrap()
        .replace("mediaType", "mediaTypo");
    std::fs::write(&blob, text).unwrap();
    let refusal = verify_refused(home, &tampered, &key);
    assert!(
        refusal.contains("tampered bundle referrer: the bytes of sha256:"),
        "{refusal}"
    );
    assert!(js(repo, &tampered_digest, &public, &[]).contains("BLOB_DIGEST_MISMATCH"));
}

/// The file in the registry's storage holding exactly `bytes`.
fn find_blob(registry: &Registry, bytes: &[u8]) -> PathBuf {
    let root = registry
        .dir
        .path()
        .join("storage/docker/registry/v2/blobs/sha256");
    for prefix in std::fs::read_dir(&root).unwrap() {
        for blob in std::fs::read_dir(prefix.unwrap().path()).unwrap() {
            let data = blob.unwrap().path().join("data");
            if std::fs::read(&data).is_ok_and(|d| d == bytes) {
                return data;
            }
        }
    }
    panic!("no blob holds the bundle in {}", root.display());
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
