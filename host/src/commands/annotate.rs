//! `olm-guard annotate`: embed metadata into a module, as `kwctl annotate`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;

use olm_guard_evaluator::Policy;
use olm_guard_runtime::metadata::detect_host_capabilities;
use olm_guard_runtime::{Limits, Metadata, Runtime};

#[derive(Args)]
#[command(after_help = "\
Examples:
  olm-guard annotate -m policies/catalog-union/metadata.yml \\
      -u policies/catalog-union/README.md --output-file dist/catalog-union.wasm dist/catalog-union.wasm

The module's data is scanned for host calls, as kwctl annotate scans it: a
host capability the code can call but hostCapabilities does not declare is
refused; a declared one the scan does not find is a warning.

Exit codes: 0 written; 2 the metadata is refused (the field and the fix are
named), the module calls an undeclared host capability, or a file cannot be
read or written.")]
pub struct AnnotateArgs {
    /// The module to annotate.
    pub module: PathBuf,
    /// The metadata.yml to embed as `io.kubewarden.metadata` (kwctl
    /// annotate's --metadata-path): rules, mutating, contextAwareResources,
    /// hostCapabilities, annotations; checked before anything is written.
    #[arg(short, long)]
    pub metadata: PathBuf,
    /// README to embed as `io.kubewarden.policy.usage`.
    #[arg(short, long)]
    pub usage: Option<PathBuf>,
    /// Write the annotated module to FILE (it may be the module itself).
    #[arg(long, value_name = "FILE")]
    pub output_file: PathBuf,
    /// Not taken: `-o` is the output format on every command, and this one
    /// writes a module file, given with --output-file. Kept to refuse
    /// `-o FILE` with that fix.
    #[arg(short, long, hide = true, value_name = "FORMAT", value_parser = crate::output::no_format("--output-file"))]
    pub output: Option<String>,
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
    check_host_capabilities(&metadata, &wasm, &args.module, &args.metadata)?;
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
    std::fs::write(&args.output_file, annotated)
        .with_context(|| format!("cannot write {}", args.output_file.display()))?;
    Ok(ExitCode::SUCCESS)
}

/// What the module's code can call against what its metadata declares
/// (kubewarden-controller `crates/kwctl/src/annotate.rs`,
/// `warn_on_capabilities_mismatch`). kwctl warns both ways; here a
/// capability used but not declared is refused, since policy-server would
/// refuse the call, or an administrator would grant it unknowingly.
fn check_host_capabilities(
    metadata: &Metadata,
    wasm: &[u8],
    module: &Path,
    metadata_file: &Path,
) -> anyhow::Result<()> {
    let detected = detect_host_capabilities(wasm).with_context(|| module.display().to_string())?;
    let mismatch = metadata.capability_mismatch(&detected);
    let list = |paths: &std::collections::BTreeSet<String>| {
        paths.iter().cloned().collect::<Vec<_>>().join(", ")
    };
    if !mismatch.undeclared.is_empty() {
        let (capability, it) = match mismatch.undeclared.len() {
            1 => ("capability", "it"),
            _ => ("capabilities", "them"),
        };
        bail!(
            "{}: the module calls host {capability} {} but {} does not declare {it} in \
             hostCapabilities: declare {it} there, or build the module without {it} \
             (policy_module!'s host_capabilities)",
            module.display(),
            list(&mismatch.undeclared),
            metadata_file.display()
        );
    }
    for pattern in &mismatch.undetected {
        if pattern == "*" {
            eprintln!(
                "olm-guard: warning: {}: hostCapabilities allows every host capability; \
                 declare the ones the module calls instead: [{}]",
                metadata_file.display(),
                list(&detected)
            );
        } else {
            eprintln!(
                "olm-guard: warning: {}: hostCapabilities declares {pattern}, but the module \
                 {} does not call it: remove it, or build the module with it",
                metadata_file.display(),
                module.display()
            );
        }
    }
    Ok(())
}
