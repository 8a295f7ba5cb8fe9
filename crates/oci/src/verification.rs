//! Signature verification of a module in a registry, for every command that
//! fetches one: `olm-guard verify`, and `pull`, `run` and `test` with
//! `--verification-config` (as kwctl's `--verification-config-path` and
//! policy-server's `--verification-path`). A module is verified by its
//! manifest digest, and then fetched by that digest
//! ([`verified_reference`]), so the module evaluated is the one whose
//! signatures were checked even if the tag moves in between.

use olm_guard_signing::VerificationConfig;
use olm_guard_signing::verify::{Report, verify};

use crate::{OciError, Options, PolicyRef, StoredSignatures, fetch_signatures};

/// The signatures of the module `reference` resolves to, judged against
/// `config`.
pub fn check_signatures(
    reference: &PolicyRef,
    options: &Options,
    config: &VerificationConfig,
) -> Result<Report, OciError> {
    let stored = fetch_signatures(reference, options)?;
    Ok(judge_signatures(&stored, config))
}

/// Judge fetched signatures, legacy layers and bundle referrers alike.
pub fn judge_signatures(stored: &StoredSignatures, config: &VerificationConfig) -> Report {
    verify(
        config,
        &stored.digest,
        &stored.locations(),
        &stored.signature_layers(),
    )
}

/// `reference` pinned to the digest whose signatures satisfy `config`, or
/// [`OciError::Refused`], the one-line refusal naming the reference and
/// each failed constraint.
pub fn verified_reference(
    reference: &PolicyRef,
    options: &Options,
    config: &VerificationConfig,
) -> Result<PolicyRef, OciError> {
    let report = check_signatures(reference, options, config)?;
    if !report.verified {
        return Err(OciError::Refused {
            reference: reference.to_string(),
            refusal: report.refusal(),
        });
    }
    PolicyRef::parse(&reference.with_digest(&report.digest))
}
