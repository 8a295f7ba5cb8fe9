//! `olm-guard sign`: a cosign signature for a pushed module, as `cosign
//! sign --key` stores it: the legacy `.sig` manifest (sigstore/cosign
//! `specs/SIGNATURE_SPEC.md`) and a Sigstore bundle referrer
//! (`specs/BUNDLE_SPEC.md`), both by default (`olm_guard_oci::sign`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::registry::RegistryArgs;
use crate::verification::annotation;

#[derive(Args)]
#[command(after_help = "\
Examples:
  olm-guard sign -k cosign.key registry://localhost:5000/policies/catalog-union:v0.1.0 --insecure
  olm-guard sign -k cosign.key -a env=prod registry://ghcr.io/me/scope-rbac@sha256:…
  olm-guard sign -k cosign.key --format legacy registry://ghcr.io/me/scope-rbac:v1

The module's manifest digest is signed (a tag is resolved first), in the
layouts of --format (default both: clusters that read either layout verify it):

  legacy  the simple-signing payload, with the -a annotations in `optional`,
          as one layer of the manifest tagged sha256-<hex>.sig beside the
          module, the signature in its dev.cosignproject.cosign/signature
          annotation; what cosign before v3 writes and every Kubewarden
          release reads. An existing signature manifest is appended to.
  bundle  a Sigstore bundle v0.3 (a DSSE envelope over an in-toto statement
          whose subject is the digest, the -a annotations in the subject's
          annotations) attached as an OCI referrer of the module; what cosign
          v3 writes. Where the registry has no referrers API, the referrers
          tag sha256-<hex> indexes it.

A signature that is there already is not added again. The password of an
encrypted key is read from COSIGN_PASSWORD, as cosign reads it.

Keyless signing (Fulcio certificates, Rekor entries) needs the Sigstore
services on the internet; olm-guard signs with keys only.

Exit codes: 0 signed; 2 the key cannot be read (or decrypted), the reference
is malformed, or the registry refused.")]
pub struct SignArgs {
    /// The module: registry://host[:port]/repository:tag or …@sha256:<hex>.
    pub reference: String,
    /// The private key (`olm-guard keygen`, `cosign generate-key-pair`).
    #[arg(short, long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// An annotation to sign with the digest (repeatable).
    #[arg(short = 'a', long = "annotation", value_name = "KEY=VALUE", value_parser = annotation)]
    pub annotations: Vec<(String, String)>,
    /// Which layouts to write: legacy (.sig manifest), bundle (referrer),
    /// or both.
    #[arg(long, value_enum, default_value_t = Layouts::Both)]
    pub format: Layouts,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Output format.
    #[arg(short, long, value_name = "FORMAT", default_value = "text", value_parser = crate::output::format::<SignFormat>())]
    pub output: SignFormat,
}

/// `--format`.
#[derive(Clone, Copy, ValueEnum)]
pub enum Layouts {
    /// The sha256-<hex>.sig manifest (cosign before v3).
    Legacy,
    /// A Sigstore bundle referrer (cosign v3).
    Bundle,
    /// Both.
    Both,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum SignFormat {
    /// `signed` and `digest`, then `signatures`/`count` and
    /// `bundle`/`bundles` lines for the layouts written.
    Text,
    /// `{"digest", "legacy": {…}, "bundle": {…}}`.
    Json,
    /// The same fields as YAML.
    Yaml,
}

#[cfg(not(feature = "registry"))]
pub fn sign(args: SignArgs) -> anyhow::Result<ExitCode> {
    Err(crate::registry::without_registry(&args.reference))
}

#[cfg(feature = "registry")]
pub fn sign(args: SignArgs) -> anyhow::Result<ExitCode> {
    use std::io::Write;

    use olm_guard_oci::PolicyRef;
    use olm_guard_signing::PrivateKey;

    use crate::output::{write_json, write_yaml};

    let Some(key_path) = &args.key else {
        // What a keyless request gets: the reason, and the way that works.
        anyhow::bail!(
            "keyless signing needs Fulcio and Rekor on the internet, which olm-guard does not use; sign with a key: `olm-guard keygen`, then `olm-guard sign -k cosign.key registry://…`"
        );
    };
    let reference = PolicyRef::parse(&args.reference)?;
    let text = std::fs::read_to_string(key_path)
        .map_err(|e| anyhow::anyhow!("{}: {e}", key_path.display()))?;
    let password = std::env::var_os("COSIGN_PASSWORD");
    let key = PrivateKey::from_pem(
        &text,
        &key_path.display().to_string(),
        password.as_ref().map(|p| p.as_encoded_bytes()),
    )?;
    let format = match args.format {
        Layouts::Legacy => olm_guard_oci::SignFormat::Legacy,
        Layouts::Bundle => olm_guard_oci::SignFormat::Bundle,
        Layouts::Both => olm_guard_oci::SignFormat::Both,
    };
    let annotations = crate::verification::annotations(&args.annotations);
    let signed = olm_guard_oci::sign(
        &reference,
        &key,
        &annotations,
        format,
        &args.registry.options(),
    )?;
    let mut out = std::io::stdout().lock();
    let again = |added: bool| {
        if added {
            ""
        } else {
            " (this signature was there already)"
        }
    };
    match args.output {
        SignFormat::Text => {
            writeln!(out, "signed {}", reference.with_digest(&signed.digest))?;
            writeln!(out, "digest {}", signed.digest)?;
            if let Some(legacy) = &signed.legacy {
                writeln!(out, "signatures {}", legacy.signatures)?;
                writeln!(out, "count {}{}", legacy.count, again(legacy.added))?;
            }
            if let Some(bundle) = &signed.bundle {
                writeln!(out, "bundle {} ({})", bundle.referrer, bundle.index)?;
                writeln!(out, "bundles {}{}", bundle.count, again(bundle.added))?;
            }
        }
        SignFormat::Json => write_json(&mut out, &signed)?,
        SignFormat::Yaml => write_yaml(&mut out, &signed)?,
    }
    Ok(ExitCode::SUCCESS)
}
