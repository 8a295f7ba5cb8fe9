//! Signature verification for every command that fetches a module from a
//! registry: `verify`, and `pull`, `run` and `test` with
//! `--verification-config` (as kwctl's `--verification-config-path` and
//! policy-server's `--verification-path`). A module is verified by its
//! manifest digest, and then fetched by that digest, so the module
//! evaluated is the one whose signatures were checked even if the tag moves
//! in between.

use std::collections::BTreeMap;

use olm_guard_oci::{Options, PolicyRef, StoredSignatures, fetch_signatures};
use olm_guard_signing::VerificationConfig;
use olm_guard_signing::verify::{Report, verify};

/// The signatures of the module `reference` resolves to, judged against
/// `config`.
pub fn check(
    reference: &PolicyRef,
    options: &Options,
    config: &VerificationConfig,
) -> anyhow::Result<Report> {
    let stored = fetch_signatures(reference, options)?;
    Ok(judge(&stored, config))
}

/// Judge fetched signatures, legacy layers and bundle referrers alike.
pub fn judge(stored: &StoredSignatures, config: &VerificationConfig) -> Report {
    verify(
        config,
        &stored.digest,
        &stored.locations(),
        &stored.signature_layers(),
    )
}

/// `reference` pinned to the digest whose signatures satisfy `config`, or
/// the one-line refusal naming the reference and each failed constraint.
pub fn require(
    reference: &PolicyRef,
    options: &Options,
    config: &VerificationConfig,
) -> anyhow::Result<PolicyRef> {
    let report = check(reference, options, config)?;
    if !report.verified {
        anyhow::bail!("{reference}: {}", report.refusal());
    }
    Ok(PolicyRef::parse(&reference.with_digest(&report.digest))?)
}

/// The `-a` pairs as a map.
pub fn annotations(pairs: &[(String, String)]) -> BTreeMap<String, String> {
    pairs.iter().cloned().collect()
}
