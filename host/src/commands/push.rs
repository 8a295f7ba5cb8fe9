//! `olm-guard push`: store an annotated module in an OCI registry, as
//! `kwctl push` (kubewarden/kubewarden-controller, `crates/kwctl/src/push.rs`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::registry::RegistryArgs;

#[derive(Args)]
#[command(after_help = "\
Examples:
  olm-guard push dist/catalog-union.wasm registry://localhost:5000/policies/catalog-union:v0.1.0
  olm-guard push dist/scope-rbac.wasm registry://ghcr.io/me/scope-rbac:v1 --docker-config ~/.docker/config.json -o json

Exit codes: 0 pushed (the digest is printed); 2 the module is not annotated,
the reference is malformed, or the registry refused it.")]
pub struct PushArgs {
    /// The annotated module (`olm-guard annotate`).
    pub module: PathBuf,
    /// Where to push: registry://host[:port]/repository:tag.
    pub reference: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Output format.
    #[arg(short, long, value_name = "FORMAT", default_value = "text", value_parser = crate::output::format::<PushFormat>())]
    pub output: PushFormat,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum PushFormat {
    /// `pushed <reference>` and `digest <sha256:…>`.
    Text,
    /// `{"reference", "digest", "immutable_ref"}`, as `kwctl push -o json`.
    Json,
    /// The same fields as YAML.
    Yaml,
}

#[cfg(not(feature = "registry"))]
pub fn push(args: PushArgs) -> anyhow::Result<ExitCode> {
    Err(crate::registry::without_registry(&args.reference))
}

#[cfg(feature = "registry")]
pub fn push(args: PushArgs) -> anyhow::Result<ExitCode> {
    use crate::output::{write_json, write_yaml};
    use std::io::Write;
    let module = olm_guard_oci::read_file(&args.module)?;
    let file = args.module.display().to_string();
    let pushed = olm_guard_oci::push(&module, &file, &args.reference, &args.registry.options())?;
    let mut out = std::io::stdout().lock();
    match args.output {
        PushFormat::Text => {
            writeln!(out, "pushed {}", pushed.reference)?;
            writeln!(out, "digest {}", pushed.digest)?;
            writeln!(out, "immutable {}", pushed.immutable_ref)?;
        }
        PushFormat::Json => write_json(&mut out, &pushed)?,
        PushFormat::Yaml => write_yaml(&mut out, &pushed)?,
    }
    Ok(ExitCode::SUCCESS)
}
