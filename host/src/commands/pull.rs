//! `olm-guard pull`: fetch a module from an OCI registry, as `kwctl pull`,
//! into the module cache or a file.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

#[cfg(feature = "registry")]
use olm_guard_oci::{Cached, PolicyRef, pull as oci_pull};

use crate::registry::RegistryArgs;
use crate::verification::VerificationArgs;

#[derive(Args)]
#[command(after_help = "\
Examples:
  olm-guard pull registry://localhost:5000/policies/catalog-union:v0.1.0 --output-file catalog-union.wasm
  olm-guard pull registry://localhost:5000/policies/catalog-union:v0.1.0 -o json   # digest and path as JSON
  olm-guard pull registry://ghcr.io/olm-guard/policies/og-intersection@sha256:…   # into the cache
  olm-guard pull --verification-config deploy/verification-config.yml registry://ghcr.io/me/scope-rbac:v1

Exit codes: 0 pulled (digest and file printed); 2 the reference is malformed,
the registry refused it, the download does not match its digest, or its
signatures do not satisfy --verification-config.")]
pub struct PullArgs {
    /// registry://host[:port]/repository:tag or …@sha256:<hex>.
    pub reference: String,
    /// Output format.
    #[arg(short, long, value_name = "FORMAT", default_value = "text", value_parser = crate::output::format_or_file::<PullFormat>("--output-file"))]
    pub output: PullFormat,
    /// Write the module to FILE instead of into the cache.
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub verification: VerificationArgs,
}

/// How `pull` says what it pulled.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PullFormat {
    /// `pulled <reference>`, `digest <sha256:…>` and `module <path>`.
    Text,
    /// `{"reference", "digest", "module"}`.
    Json,
    /// The same fields as YAML.
    Yaml,
}

#[cfg(not(feature = "registry"))]
pub fn pull(args: PullArgs) -> anyhow::Result<ExitCode> {
    Err(crate::registry::without_registry(&args.reference))
}

#[cfg(feature = "registry")]
pub fn pull(mut args: PullArgs) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    args.registry.verification_config = args.verification.verification_config.clone();
    let reference = args.registry.verified(PolicyRef::parse(&args.reference)?)?;
    let options = args.registry.options();
    let (path, digest) = match &args.output_file {
        Some(output) => {
            let pulled = oci_pull(&reference, &options)?;
            olm_guard_oci::write_atomically(output, &pulled.module)?;
            (output.clone(), pulled.digest)
        }
        None => {
            let cached = Cached::fetch(&reference, &options, &args.registry.cache_dir()?)?;
            (cached.path, cached.digest)
        }
    };
    let mut out = std::io::stdout().lock();
    match args.output {
        PullFormat::Text => {
            writeln!(out, "pulled {reference}")?;
            writeln!(out, "digest {digest}")?;
            writeln!(out, "module {}", path.display())?;
        }
        PullFormat::Json | PullFormat::Yaml => {
            let pulled = serde_json::json!({
                "reference": reference.to_string(),
                "digest": digest.to_string(),
                "module": path.display().to_string(),
            });
            if args.output == PullFormat::Json {
                crate::output::write_json(&mut out, &pulled)?;
            } else {
                crate::output::write_yaml(&mut out, &pulled)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
