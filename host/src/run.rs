//! `olm-guard run`: evaluate one request.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use olm_guard_evaluator::Policy;
use olm_guard_runtime::Runtime;

use crate::common::{LimitArgs, SnapshotArgs, read_inputs};
use crate::session::SessionArgs;

#[derive(Args)]
pub struct RunArgs {
    /// The policy module: a .wasm file or registry://host[:port]/repo:tag.
    #[arg(long)]
    pub policy: PathBuf,
    #[command(flatten)]
    pub registry: crate::pull::RegistryArgs,
    /// AdmissionReview or AdmissionRequest, JSON or YAML.
    #[arg(long)]
    pub request: PathBuf,
    /// Policy settings, JSON or YAML.
    #[arg(long)]
    pub settings: Option<PathBuf>,
    #[command(flatten)]
    pub snapshot: SnapshotArgs,
    #[command(flatten)]
    pub session: SessionArgs,
    /// metadata.yml to use instead of the module's embedded metadata.
    #[arg(long)]
    pub metadata: Option<PathBuf>,
    /// Print the module's host calls to stderr.
    #[arg(long)]
    pub trace: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let (request, settings, snapshot) =
        read_inputs(&args.request, args.settings.as_deref(), &args.snapshot)?;
    let runtime = Runtime::new(args.limits.limits())?;
    let module = crate::pull::local_policy(&args.policy, &args.registry)?;
    let policy = Policy::load(&runtime, &module, args.metadata.as_deref())?;
    if policy.metadata.is_none() {
        eprintln!(
            "olm-guard: warning: {} has no embedded metadata and no --metadata: it may read no cluster resources",
            args.policy.display()
        );
    }
    policy.validate_settings(&settings)?;
    let (cluster, context) = args.session.context(snapshot)?;
    let evaluation = policy
        .validate(&request, &settings, cluster)
        .with_context(|| args.policy.display().to_string())?;
    context.finish()?;
    if args.trace {
        for call in &evaluation.calls {
            match &call.outcome {
                Ok(bytes) => eprintln!(
                    "host call {} {} -> {bytes} bytes",
                    call.capability, call.payload
                ),
                Err(e) => eprintln!(
                    "host call {} {} -> error: {e}",
                    call.capability, call.payload
                ),
            }
        }
    }
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &evaluation.response.into_review())?;
    writeln!(out)?;
    Ok(ExitCode::SUCCESS)
}
