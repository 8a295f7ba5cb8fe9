//! `olm-guard keygen`: a cosign key pair, as `cosign generate-key-pair`
//! writes it (`cosign.key`, the private key encrypted with COSIGN_PASSWORD;
//! `cosign.pub`, the public key).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

#[derive(Args)]
#[command(after_help = "\
Examples:
  COSIGN_PASSWORD=… olm-guard keygen                 # cosign.key, cosign.pub
  olm-guard keygen --output-key-prefix release       # release.key, release.pub

The private key is encrypted as cosign encrypts it (scrypt and NaCl
secretbox, PEM `ENCRYPTED SIGSTORE PRIVATE KEY`), with the password in
COSIGN_PASSWORD; unset, the password is empty, as cosign's is when
COSIGN_PASSWORD is set to nothing. cosign reads the files, and olm-guard reads
cosign's.

Exit codes: 0 written; 2 a file exists already (--force replaces it) or
cannot be written.")]
pub struct KeygenArgs {
    /// The files' name without extension: PREFIX.key and PREFIX.pub.
    #[arg(long, default_value = "cosign", value_name = "PREFIX")]
    pub output_key_prefix: PathBuf,
    /// Replace existing files.
    #[arg(long)]
    pub force: bool,
}

#[cfg(not(feature = "registry"))]
pub fn keygen(_: KeygenArgs) -> anyhow::Result<ExitCode> {
    Err(crate::registry::without_registry("keygen"))
}

#[cfg(feature = "registry")]
pub fn keygen(args: KeygenArgs) -> anyhow::Result<ExitCode> {
    use anyhow::Context;

    let prefix = args.output_key_prefix.display().to_string();
    let private_path = PathBuf::from(format!("{prefix}.key"));
    let public_path = PathBuf::from(format!("{prefix}.pub"));
    if !args.force {
        for path in [&private_path, &public_path] {
            if path.exists() {
                anyhow::bail!(
                    "{}: exists already; pass --force to replace it, or --output-key-prefix for other names",
                    path.display()
                );
            }
        }
    }
    let password = std::env::var_os("COSIGN_PASSWORD");
    let pair = olm_guard_signing::keys::generate(
        password
            .as_ref()
            .map(|p| p.as_encoded_bytes())
            .unwrap_or_default(),
    )?;
    write_private(&private_path, &pair.private_pem)
        .with_context(|| private_path.display().to_string())?;
    std::fs::write(&public_path, &pair.public_pem)
        .with_context(|| public_path.display().to_string())?;
    if password.is_none() {
        eprintln!(
            "olm-guard: note: COSIGN_PASSWORD is unset: {} is encrypted with an empty password",
            private_path.display()
        );
    }
    println!("private {}", private_path.display());
    println!("public {}", public_path.display());
    Ok(ExitCode::SUCCESS)
}

/// The private key, readable by its owner only (cosign writes it 0600).
#[cfg(feature = "registry")]
fn write_private(path: &std::path::Path, pem: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(pem.as_bytes())
}
