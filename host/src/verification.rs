//! What the commands that check or write cosign signatures share:
//! `--verification-config` (pull, run and verify), read as Kubewarden's
//! verification config, and the `-a KEY=VALUE` annotations a signature
//! carries (sign writes them, verify requires them). The check itself is
//! `olm_guard_oci::verified_reference`, below the CLI.

use std::path::PathBuf;

use clap::Args;

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

/// The verification config at `path`, read and checked; `None` without one.
#[cfg(feature = "registry")]
pub fn read_config(
    path: Option<&std::path::Path>,
) -> anyhow::Result<Option<olm_guard_signing::VerificationConfig>> {
    Ok(match path {
        Some(path) => Some(olm_guard_signing::VerificationConfig::read(path)?),
        None => None,
    })
}

/// `-a key=value`, as cosign takes it.
pub fn annotation(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("`{text}` is not key=value (write -a env=prod)")),
    }
}

/// The `-a` pairs as a map.
#[cfg(feature = "registry")]
pub fn annotations(pairs: &[(String, String)]) -> std::collections::BTreeMap<String, String> {
    pairs.iter().cloned().collect()
}
