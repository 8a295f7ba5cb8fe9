//! Registry access for every command that reaches one: how to reach it
//! ([`RegistryArgs`]: TLS, credentials, the module cache), and
//! [`local_module`], which lets every command that takes a module take a
//! `registry://` reference too, fetched into the cache (and verified first
//! with `--verification-config`).
//!
//! Registry support is the `registry` cargo feature (on by default). A build
//! without it (`make examples`) keeps every command and flag, and refuses a
//! registry reference (and `keygen`, `sign`, `verify`) with one line that
//! says how to build it in (`without_registry`).

use std::path::{Path, PathBuf};

use clap::Args;

#[cfg(feature = "registry")]
use anyhow::Context;
#[cfg(feature = "registry")]
use olm_guard_oci::{Cached, Options, PolicyRef, default_cache_dir};

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
    /// `--verification-config` ([`crate::verification::VerificationArgs`]),
    /// which set it here so that every registry fetch below them is checked;
    /// not a flag itself, so push and test do not offer it.
    #[arg(skip)]
    pub verification_config: Option<PathBuf>,
}

#[cfg(feature = "registry")]
impl RegistryArgs {
    /// The OCI client's options these flags ask for.
    pub fn options(&self) -> Options {
        Options {
            insecure: self.insecure,
            ca_certs: self.ca_cert.clone(),
            docker_config: self.docker_config.clone(),
        }
    }

    /// The `--verification-config`, read and checked.
    pub fn verification(&self) -> anyhow::Result<Option<olm_guard_signing::VerificationConfig>> {
        crate::verification::read_config(self.verification_config.as_deref())
    }

    /// `reference`, pinned to its verified digest when a verification
    /// config is given (refused when its signatures do not satisfy it).
    pub fn verified(&self, reference: PolicyRef) -> anyhow::Result<PolicyRef> {
        match self.verification()? {
            Some(config) => Ok(olm_guard_oci::verified_reference(
                &reference,
                &self.options(),
                &config,
            )?),
            None => Ok(reference),
        }
    }

    /// `--cache-dir`, or the default module cache.
    pub fn cache_dir(&self) -> anyhow::Result<PathBuf> {
        self.cache_dir.clone().or_else(default_cache_dir).context(
            "no cache directory: HOME and XDG_CACHE_HOME are unset; pass --cache-dir or set OLM_GUARD_CACHE_DIR",
        )
    }
}

/// The local file of a module argument: the path itself, or for a
/// `registry://` reference the module pulled into the cache (not pulled
/// again while the tag resolves to the same digest).
pub fn local_module(module: &Path, registry: &RegistryArgs) -> anyhow::Result<PathBuf> {
    let Some(text) = module.to_str().filter(|text| is_registry(text)) else {
        if registry.verification_config.is_some() {
            anyhow::bail!("{}", unverifiable(&module.display().to_string()));
        }
        return Ok(module.to_path_buf());
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

/// What a build without the `registry` feature says of a registry reference
/// (or of a command that needs the feature, named instead).
#[cfg(not(feature = "registry"))]
pub fn without_registry(reference: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{reference}: this olm-guard was built without registry support (cargo feature `registry`, \
         which `make examples` leaves out); build it with `cargo build -p olm-guard-host`"
    )
}
