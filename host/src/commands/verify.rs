//! `olm-guard verify`: check a module's cosign signatures with public keys
//! (`-k`, as `kwctl verify -k`) or against a Kubewarden verification config
//! (`--verification-config`, as policy-server's `--verification-path`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::registry::RegistryArgs;
use crate::verification::{VerificationArgs, annotation};

#[derive(Args)]
#[command(after_help = "\
Examples:
  olm-guard verify -k cosign.pub registry://localhost:5000/policies/catalog-union:v0.1.0 --insecure
  olm-guard verify -k cosign.pub -a env=prod registry://ghcr.io/me/scope-rbac:v1
  olm-guard verify --verification-config deploy/verification-config.yml registry://ghcr.io/me/scope-rbac:v1 -o json

Each -k key must have signed the module's manifest digest (with every -a
annotation): kwctl's `verify -k`, an allOf of the keys. A verification config
(apiVersion: v1; allOf, anyOf with minimumMatches; signatures of kind pubKey
with an optional owner and required annotations) is judged as policy-server
judges it. Keyless kinds (genericIssuer, githubAction) are read but need
Fulcio and Rekor on the internet: they are reported as not verifiable offline
and never count as satisfied.

Signatures are read in both of cosign's layouts: the legacy manifest tagged
sha256-<hex>.sig (cosign before v3), and Sigstore bundles attached as OCI
referrers of the module (cosign v3; the registry's referrers API, else the
referrers tag sha256-<hex>). A bundle's -a annotations are its in-toto
statement's subject annotations; a message-signature bundle carries none.

Output: the digest, where each layout was looked for, then each constraint:
satisfied (by which signature, [legacy] or [bundle]) or refused and why (no
signature, wrong key, a payload for another digest, an annotation missing or
different, a tampered layer); -o json|yaml the same as data.

Exit codes: 0 verified; 1 refused (the reasons are printed); 2 a key or the
config cannot be read, the reference is malformed, or the registry failed.")]
pub struct VerifyArgs {
    /// The module: registry://host[:port]/repository:tag or …@sha256:<hex>.
    pub reference: String,
    /// A public key that must have signed it (repeatable: every one must).
    #[arg(
        short,
        long = "key",
        value_name = "FILE",
        conflicts_with = "verification_config",
        required_unless_present = "verification_config"
    )]
    pub keys: Vec<PathBuf>,
    /// An annotation each -k signature must carry (repeatable).
    #[arg(short = 'a', long = "annotation", value_name = "KEY=VALUE",
          value_parser = annotation, requires = "keys")]
    pub annotations: Vec<(String, String)>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub verification: VerificationArgs,
    /// Output format.
    #[arg(short, long, value_name = "FORMAT", default_value = "text", value_parser = crate::output::format::<VerifyFormat>())]
    pub output: VerifyFormat,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum VerifyFormat {
    /// `verified`/`refused`, `digest`, `signatures`, then one line per constraint.
    Text,
    /// The report: digest, verified, signatures, layers, constraints.
    Json,
    /// The same report as YAML.
    Yaml,
}

#[cfg(not(feature = "registry"))]
pub fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    Err(crate::registry::without_registry(&args.reference))
}

#[cfg(feature = "registry")]
pub fn verify(mut args: VerifyArgs) -> anyhow::Result<ExitCode> {
    use std::io::Write;

    use olm_guard_oci::PolicyRef;
    use olm_guard_signing::{PublicKey, VerificationConfig};

    use crate::output::{write_json, write_yaml};

    args.registry.verification_config = args.verification.verification_config.clone();
    let reference = PolicyRef::parse(&args.reference)?;
    let config = match args.registry.verification()? {
        Some(config) => config,
        None => {
            let mut keys = Vec::new();
            for path in &args.keys {
                let source = path.display().to_string();
                let text =
                    std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
                keys.push((source.clone(), PublicKey::from_pem(&text, &source)?));
            }
            VerificationConfig::from_keys(
                keys,
                &crate::verification::annotations(&args.annotations),
            )
        }
    };
    let report = olm_guard_oci::check_signatures(&reference, &args.registry.options(), &config)?;
    let mut out = std::io::stdout().lock();
    match args.output {
        VerifyFormat::Text => {
            let verdict = if report.verified {
                "verified"
            } else {
                "refused"
            };
            writeln!(out, "{verdict} {reference}")?;
            writeln!(out, "digest {}", report.digest)?;
            writeln!(
                out,
                "signatures {} ({} layers)",
                report.signatures, report.layers
            )?;
            writeln!(
                out,
                "bundles {} ({} bundles)",
                report.referrers, report.bundles
            )?;
            for c in &report.constraints {
                let outcome = serde_json::to_value(c.outcome)?;
                let layout = match c.layout {
                    Some(layout) => format!(
                        " [{}]",
                        serde_json::to_value(layout)?.as_str().unwrap_or_default()
                    ),
                    None => String::new(),
                };
                writeln!(
                    out,
                    "{} {} {}{layout}: {}",
                    outcome.as_str().unwrap_or_default(),
                    c.location,
                    c.constraint,
                    c.detail
                )?;
            }
            if let Some(any_of) = &report.any_of {
                writeln!(
                    out,
                    "anyOf {} of minimumMatches {}",
                    any_of.matched, any_of.minimum_matches
                )?;
            }
        }
        VerifyFormat::Json => write_json(&mut out, &report)?,
        VerifyFormat::Yaml => write_yaml(&mut out, &report)?,
    }
    if report.verified {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("olm-guard: {reference}: {}", report.refusal());
    Ok(ExitCode::FAILURE)
}
