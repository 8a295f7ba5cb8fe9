//! `olm-guard annotate`: embed metadata into a module, as `kwctl annotate`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use olm_guard_evaluator::Policy;
use olm_guard_runtime::{Limits, Metadata, Runtime};

#[derive(Args)]
#[command(after_help = "\
Examples:
  olm-guard annotate -m policies/catalog-union/metadata.yml \\
      -u policies/catalog-union/README.md -o dist/catalog-union.wasm dist/catalog-union.wasm

Exit codes: 0 written; 2 the metadata is refused (the field and the fix are
named), or a file cannot be read or written.")]
pub struct AnnotateArgs {
    /// The module to annotate.
    pub module: PathBuf,
    #[arg(short, long)]
    pub metadata: PathBuf,
    /// README to embed as `io.kubewarden.policy.usage`.
    #[arg(short, long)]
    pub usage: Option<PathBuf>,
    #[arg(short, long)]
    pub output: PathBuf,
}

pub fn annotate(args: AnnotateArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.metadata)
        .with_context(|| format!("cannot read {}", args.metadata.display()))?;
    // Everything kwctl validates, and the annotations Artifact Hub and
    // OCI publishing need: a module annotated here is ready to ship.
    let metadata = Metadata::from_yaml(&text)
        .and_then(|m| m.check_publishable().map(|()| m))
        .with_context(|| args.metadata.display().to_string())?;
    let wasm = std::fs::read(&args.module)
        .with_context(|| format!("cannot read {}", args.module.display()))?;
    // Like kwctl: ask the module for its protocol version; this also proves
    // the module loads and speaks waPC.
    let runtime = Runtime::new(Limits::default())?;
    let name = args.module.display().to_string();
    let policy = Policy::from_bytes(&runtime, &name, &wasm, Some(metadata.clone()))?;
    let usage = match &args.usage {
        Some(usage) => Some(
            std::fs::read_to_string(usage)
                .with_context(|| format!("cannot read {}", usage.display()))?,
        ),
        None => None,
    };
    let annotator = format!("olm-guard {}", env!("CARGO_PKG_VERSION"));
    let annotated = metadata.annotate(&wasm, policy.protocol_version()?, usage, &annotator)?;
    std::fs::write(&args.output, annotated)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    Ok(ExitCode::SUCCESS)
}
