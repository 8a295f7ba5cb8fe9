//! `olm-guard pull`: fetch a module from an OCI registry, as `kwctl pull`;
//! and [`local_policy`], which lets every command that takes `--policy`
//! take a `registry://` reference too.
//!
//! Registry support is the `registry` cargo feature (on by default). A build
//! without it (`make examples`) keeps every command and flag, and refuses a
//! registry reference with one line that says how to build it in.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

#[cfg(feature = "registry")]
use anyhow::Context;
#[cfg(feature = "registry")]
use olm_guard_oci::{Cached, Options, PolicyRef, default_cache_dir, pull as oci_pull};

/// How to reach a registry; shared by push, pull and `run --policy registry://…`.
#[derive(Args, Clone, Default)]
pub struct RegistryArgs {
    /// Plain HTTP instead of HTTPS, for a local registry (kwctl's
    /// sources.yaml `insecure_sources`).
    #[arg(long)]
    pub insecure: bool,
    /// PEM file of a certificate authority to trust besides the system ones;
    /// repeatable.
    #[arg(long, value_name = "PEM", env = "OLM_GUARD_CA_CERT")]
    pub ca_cert: Vec<PathBuf>,
    /// Docker config file with registry credentials (`auths.<host>.auth`);
    /// default `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
    #[arg(long, value_name = "FILE")]
    pub docker_config: Option<PathBuf>,
    /// Where pulled modules are kept by digest; default
    /// `$XDG_CACHE_HOME/olm-guard/modules` (else `~/.cache/olm-guard/modules`).
    #[arg(long, value_name = "DIR", env = "OLM_GUARD_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
}

#[cfg(feature = "registry")]
impl RegistryArgs {
    pub(crate) fn options(&self) -> Options {
        Options {
            insecure: self.insecure,
            ca_certs: self.ca_cert.clone(),
            docker_config: self.docker_config.clone(),
        }
    }

    fn cache_dir(&self) -> anyhow::Result<PathBuf> {
        self.cache_dir.clone().or_else(default_cache_dir).context(
            "no cache directory: HOME and XDG_CACHE_HOME are unset; pass --cache-dir or set OLM_GUARD_CACHE_DIR",
        )
    }
}

#[derive(Args)]
#[command(after_help = "\
Examples:
  olm-guard pull registry://localhost:5000/policies/catalog-union:v0.1.0 -o catalog-union.wasm
  olm-guard pull registry://ghcr.io/olm-guard/policies/og-intersection@sha256:…   # into the cache

Exit codes: 0 pulled (digest and file printed); 2 the reference is malformed,
the registry refused it, or the download does not match its digest.")]
pub struct PullArgs {
    /// registry://host[:port]/repository:tag or …@sha256:<hex>.
    pub reference: String,
    /// Write the module here instead of into the cache.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[cfg(not(feature = "registry"))]
pub fn pull(args: PullArgs) -> anyhow::Result<ExitCode> {
    Err(without_registry(&args.reference))
}

#[cfg(feature = "registry")]
pub fn pull(args: PullArgs) -> anyhow::Result<ExitCode> {
    let reference = PolicyRef::parse(&args.reference)?;
    let options = args.registry.options();
    let (path, digest) = match &args.output {
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
    println!("pulled {reference}");
    println!("digest {digest}");
    println!("module {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// The local file of a `--policy` value: the path itself, or for a
/// `registry://` reference the module pulled into the cache (not pulled
/// again while the tag resolves to the same digest).
pub fn local_policy(policy: &Path, registry: &RegistryArgs) -> anyhow::Result<PathBuf> {
    let Some(text) = policy.to_str().filter(|text| is_registry(text)) else {
        return Ok(policy.to_path_buf());
    };
    fetch(text, registry)
}

/// Whether a module argument is a `registry://` reference:
/// `PolicyRef::is_registry`'s test, which a build without the registry
/// feature needs too, to refuse the reference rather than read it as a path.
pub fn is_registry(text: &str) -> bool {
    text.starts_with("registry://")
}

#[cfg(feature = "registry")]
fn fetch(text: &str, registry: &RegistryArgs) -> anyhow::Result<PathBuf> {
    let reference = PolicyRef::parse(text)?;
    let cached = Cached::fetch(&reference, &registry.options(), &registry.cache_dir()?)?;
    Ok(cached.path)
}

#[cfg(not(feature = "registry"))]
fn fetch(text: &str, _: &RegistryArgs) -> anyhow::Result<PathBuf> {
    Err(without_registry(text))
}

/// What a build without the `registry` feature says of a registry reference.
#[cfg(not(feature = "registry"))]
pub fn without_registry(reference: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{reference}: this olm-guard was built without registry support (cargo feature `registry`, \
         which `make examples` leaves out); build it with `cargo build -p olm-guard-host`"
    )
}
