//! `olm-guard scaffold manifest` and `olm-guard scaffold policies`: the
//! Kubewarden resources and the bare policy-server configuration for a
//! module, built by `olm_guard_evaluator::manifest`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Map, Value};

use olm_guard_evaluator::input;
use olm_guard_evaluator::manifest::{self, ManifestKind, ManifestOptions};
use olm_guard_runtime::Metadata;

use crate::modules;

#[derive(Args)]
#[command(after_help = "\
Examples:
  olm-guard scaffold manifest -t ClusterAdmissionPolicy --allow-context-aware dist/og-intersection.wasm
  olm-guard scaffold manifest -t AdmissionPolicy -n team-a --settings-path settings.yaml catalog-union -o cs.yaml

Exit codes: 0 written (review the warnings on stderr, as kwctl prints them);
2 the module, its metadata or the settings cannot be read.")]
pub struct ManifestArgs {
    /// ClusterAdmissionPolicy or AdmissionPolicy.
    #[arg(short = 't', long = "type", value_name = "TYPE", value_parser = parse_kind)]
    pub kind: ManifestKind,
    /// An annotated module (`.wasm`), or a module name resolved as
    /// `dist/<name>.wasm`.
    pub module: String,
    /// Grant the metadata's contextAwareResources (ClusterAdmissionPolicy);
    /// without it they are left empty, as kwctl does.
    #[arg(long)]
    pub allow_context_aware: bool,
    /// The policy's name (default: the `io.kubewarden.policy.title`
    /// annotation).
    #[arg(long)]
    pub title: Option<String>,
    /// The namespace of an AdmissionPolicy.
    #[arg(short, long)]
    pub namespace: Option<String>,
    /// Settings (YAML or JSON mapping) instead of the rule's defaults.
    #[arg(long, value_name = "FILE")]
    pub settings_path: Option<PathBuf>,
    /// Where the module is fetched from (default:
    /// `registry://<ociUrl>:v<version>` from its annotations).
    #[arg(long, value_name = "URI")]
    pub module_url: Option<String>,
    /// Write the manifest to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Args)]
#[command(after_help = "\
Examples:
  olm-guard scaffold policies dist/*.wasm -o policies.yml

Exit codes: 0 written; 2 a module cannot be read.")]
pub struct PoliciesArgs {
    /// Annotated modules (`.wasm`), or module names resolved as
    /// `dist/<name>.wasm`.
    #[arg(required = true)]
    pub modules: Vec<String>,
    /// Write policies.yml to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

fn parse_kind(value: &str) -> Result<ManifestKind, String> {
    value
        .parse()
        .map_err(|e: manifest::ManifestError| e.to_string())
}

/// The module file for `module`: a path, or a name in `dist/`, resolved as
/// every command resolves one (`modules::resolve`). A manifest is written
/// from a local file only: a registry reference is pulled first.
fn module_path(module: &str) -> anyhow::Result<PathBuf> {
    if module.contains("://") {
        bail!(
            "{module}: only local modules are read here; pull it first (olm-guard pull) and pass the .wasm file"
        );
    }
    let path = modules::resolve(module, Path::new("dist"))?;
    if !path.is_file() {
        bail!(
            "{module}: no such module file: pass an annotated .wasm, or build the modules with make dist"
        );
    }
    Ok(path)
}

/// The embedded metadata of the module at `path`.
fn module_metadata(path: &Path) -> anyhow::Result<Metadata> {
    let wasm = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Metadata::from_module(&wasm)
        .with_context(|| path.display().to_string())?
        .with_context(|| {
            format!(
                "{}: no Kubewarden metadata inside the module: annotate it first (olm-guard annotate)",
                path.display()
            )
        })
}

/// The settings a cluster admin starts with: the rule's defaults, or `{}`
/// for a module that is not one of ours (as kwctl).
fn default_settings(metadata: &Metadata) -> anyhow::Result<Map<String, Value>> {
    let name = manifest::default_name(metadata)?;
    match olm_guard_rules::registry::find(&name).map(|rule| rule.default_settings()) {
        Some(Value::Object(settings)) => Ok(settings),
        _ => Ok(Map::new()),
    }
}

fn read_settings(path: &Path) -> anyhow::Result<Map<String, Value>> {
    match input::read_document(path)? {
        Value::Object(settings) => Ok(settings),
        Value::Null => Ok(Map::new()),
        _ => bail!(
            "{}: settings must be a mapping of setting names to values",
            path.display()
        ),
    }
}

fn write_out(output: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
        }
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

pub fn manifest(args: ManifestArgs) -> anyhow::Result<ExitCode> {
    let path = module_path(&args.module)?;
    let metadata = module_metadata(&path)?;
    let settings = match &args.settings_path {
        Some(settings) => read_settings(settings)?,
        None => default_settings(&metadata)?,
    };
    let options = ManifestOptions {
        kind: args.kind,
        name: args.title,
        namespace: args.namespace,
        allow_context_aware: args.allow_context_aware,
        module: args.module_url,
        settings,
    };
    let scaffolded =
        manifest::scaffold(&metadata, &options).with_context(|| path.display().to_string())?;
    for warning in &scaffolded.warnings {
        eprintln!("olm-guard: warning: {warning}");
    }
    write_out(args.output.as_deref(), &scaffolded.manifest.to_yaml()?)?;
    Ok(ExitCode::SUCCESS)
}

/// The first lines of a generated policies.yml.
const POLICIES_HEADER: &str = "\
# policies.yml for a bare policy-server (policy-server --policies policies.yml).
# Each policy is granted exactly the host capabilities and Kubernetes resources
# its module's metadata declares: without hostCapabilities policy-server denies
# every host call. Written by `olm-guard scaffold policies`; do not edit.
";

pub fn policies(args: PoliciesArgs) -> anyhow::Result<ExitCode> {
    let mut entries = BTreeMap::new();
    for module in &args.modules {
        let path = module_path(module)?;
        let metadata = module_metadata(&path)?;
        let context = || path.display().to_string();
        let name = manifest::default_name(&metadata).with_context(context)?;
        let reference = manifest::module_reference(&metadata).with_context(context)?;
        let entry =
            manifest::policy_server_entry(&metadata, reference, default_settings(&metadata)?)
                .with_context(context)?;
        if entries.insert(name.clone(), entry).is_some() {
            bail!(
                "{}: a second module titled {name}: each policy needs its own name",
                path.display()
            );
        }
    }
    let text = format!("{POLICIES_HEADER}{}", manifest::policies_yml(&entries)?);
    write_out(args.output.as_deref(), &text)?;
    Ok(ExitCode::SUCCESS)
}
