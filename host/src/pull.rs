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
    /// The verification config of the commands that take
    /// `--verification-config` ([`VerificationArgs`]), which set it here so
    /// that every registry fetch below them is checked; not a flag itself,
    /// so push and test do not offer it.
    #[arg(skip)]
    pub verification_config: Option<PathBuf>,
}

/// `--verification-config`, for pull, run and verify.
#[derive(Args, Clone, Default)]
pub struct VerificationArgs {
    /// Kubewarden verification config (apiVersion: v1; allOf, anyOf with
    /// minimumMatches; signatures of kind pubKey): a registry module whose
    /// cosign signatures do not satisfy it is refused before it is pulled or
    /// evaluated, and a local module is refused (`olm-guard verify --help`).
    #[arg(long, value_name = "FILE")]
    pub verification_config: Option<PathBuf>,
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

    /// The `--verification-config`, read and checked.
    pub(crate) fn verification(
        &self,
    ) -> anyhow::Result<Option<olm_guard_signing::VerificationConfig>> {
        Ok(match &self.verification_config {
            Some(path) => Some(olm_guard_signing::VerificationConfig::read(path)?),
            None => None,
        })
    }

    /// `reference`, pinned to its verified digest when a verification
    /// config is given (refused when its signatures do not satisfy it).
    fn verified(&self, reference: PolicyRef) -> anyhow::Result<PolicyRef> {
        match self.verification()? {
            Some(config) => crate::verification::require(&reference, &self.options(), &config),
            None => Ok(reference),
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
  olm-guard pull --verification-config deploy/verification-config.yml registry://ghcr.io/me/scope-rbac:v1

Exit codes: 0 pulled (digest and file printed); 2 the reference is malformed,
the registry refused it, the download does not match its digest, or its
signatures do not satisfy --verification-config.")]
pub struct PullArgs {
    /// registry://host[:port]/repository:tag or …@sha256:<hex>.
    pub reference: String,
    /// Write the module here instead of into the cache.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub verification: VerificationArgs,
}

#[cfg(not(feature = "registry"))]
pub fn pull(args: PullArgs) -> anyhow::Result<ExitCode> {
    Err(without_registry(&args.reference))
}

#[cfg(feature = "registry")]
pub fn pull(mut args: PullArgs) -> anyhow::Result<ExitCode> {
    args.registry.verification_config = args.verification.verification_config.clone();
    let reference = args.registry.verified(PolicyRef::parse(&args.reference)?)?;
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
        if registry.verification_config.is_some() {
            anyhow::bail!("{}", unverifiable(&policy.display().to_string()));
        }
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

/// What `--verification-config` says of a module that is not in a
/// registry: signatures live beside a module in its repository, so a file
/// cannot be checked, and is never run unchecked.
pub fn unverifiable(module: &str) -> String {
    format!(
        "{module}: a local module has no signatures to verify, and --verification-config is given; run it from registry://… or drop --verification-config"
    )
}

#[cfg(feature = "registry")]
fn fetch(text: &str, registry: &RegistryArgs) -> anyhow::Result<PathBuf> {
    let reference = registry.verified(PolicyRef::parse(text)?)?;
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
