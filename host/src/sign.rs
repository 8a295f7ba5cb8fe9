//! `olm-guard sign`: a cosign signature for a pushed module, as `cosign
//! sign --key` stores it (sigstore/cosign `specs/SIGNATURE_SPEC.md`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::pull::RegistryArgs;

#[derive(Args)]
#[command(after_help = "\
Examples:
  olm-guard sign -k cosign.key registry://localhost:5000/policies/catalog-union:v0.1.0 --insecure
  olm-guard sign -k cosign.key -a env=prod registry://ghcr.io/me/scope-rbac@sha256:…

The module's manifest digest is signed (a tag is resolved first): the
simple-signing payload, with the -a annotations in `optional`, goes into the
manifest tagged sha256-<hex>.sig beside the module, one layer per signature,
the signature in the layer's dev.cosignproject.cosign/signature annotation.
An existing signature manifest is appended to. The password of an encrypted
key is read from COSIGN_PASSWORD, as cosign reads it.

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
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = SignFormat::Text)]
    pub output: SignFormat,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum SignFormat {
    /// `signed`, `digest`, `signatures` and `count` lines.
    Text,
    /// `{"digest", "signatures", "count", "added"}`.
    Json,
    /// The same fields as YAML.
    Yaml,
}

/// `-a key=value`, as cosign takes it.
pub fn annotation(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("`{text}` is not key=value (write -a env=prod)")),
    }
}

#[cfg(not(feature = "registry"))]
pub fn sign(args: SignArgs) -> anyhow::Result<ExitCode> {
    Err(crate::pull::without_registry(&args.reference))
}

#[cfg(feature = "registry")]
pub fn sign(args: SignArgs) -> anyhow::Result<ExitCode> {
    use std::io::Write;

    use olm_guard_oci::{PolicyRef, push_signature, resolve};
    use olm_guard_signing::{PrivateKey, SimpleSigning};

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
    let options = args.registry.options();
    let digest = resolve(&reference, &options)?;
    let docker_reference = format!(
        "{}/{}",
        reference.oci.registry(),
        reference.oci.repository()
    );
    let annotations = crate::verification::annotations(&args.annotations);
    let payload = SimpleSigning::new(&docker_reference, &digest, &annotations).to_bytes();
    let signature = key.sign(&payload);
    let pushed = push_signature(&reference, &digest, &payload, &signature, &options)?;
    let mut out = std::io::stdout().lock();
    match args.output {
        SignFormat::Text => {
            writeln!(out, "signed {}", reference.with_digest(&digest))?;
            writeln!(out, "digest {}", pushed.digest)?;
            writeln!(out, "signatures {}", pushed.signatures)?;
            writeln!(
                out,
                "count {}{}",
                pushed.count,
                if pushed.added {
                    ""
                } else {
                    " (this signature was there already)"
                }
            )?;
        }
        SignFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &pushed)?;
            writeln!(out)?;
        }
        SignFormat::Yaml => write!(out, "{}", serde_yaml_ng::to_string(&pushed)?)?,
    }
    Ok(ExitCode::SUCCESS)
}
