//! `olm-guard scaffold manifest` and `olm-guard scaffold policies`: the
//! Kubewarden resources and the bare policy-server configuration for a
//! module, built by `olm_guard_evaluator::manifest`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Map, Value};

use olm_guard_evaluator::Policy;
use olm_guard_evaluator::manifest::{self, ManifestKind, ManifestOptions};
use olm_guard_runtime::{Limits, Metadata, Runtime};

use crate::modules::{self, DistArgs};
use crate::registry::RegistryArgs;
use crate::settings;

#[derive(Args)]
#[command(after_help = "\
Examples:
  olm-guard scaffold manifest -t ClusterAdmissionPolicy --allow-context-aware dist/og-intersection.wasm
  olm-guard scaffold manifest -t AdmissionPolicy -n team-a --settings settings.yaml catalog-union --output-file cs.yaml
  olm-guard scaffold manifest -t ClusterAdmissionPolicy catalog-union -o json | kubectl apply -f -

--settings are checked by the module's own validate_settings before anything
is written, as `run` checks them, and written so that kubectl reads the same
types (a string such as `yes` or `on` quoted: kubectl reads YAML 1.1, where
they are booleans).

Exit codes: 0 written (review the warnings on stderr, as kwctl prints them);
2 the module, its metadata or the settings cannot be read, or the module
refuses the settings.")]
pub struct ManifestArgs {
    /// ClusterAdmissionPolicy or AdmissionPolicy.
    #[arg(short = 't', long = "type", value_name = "TYPE", value_parser = parse_kind)]
    pub kind: ManifestKind,
    /// An annotated module: a name in the module directory (--dist), or a
    /// `.wasm` file.
    pub module: String,
    #[command(flatten)]
    pub dist: DistArgs,
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
    /// Settings (YAML or JSON mapping) instead of the rule's defaults:
    /// FILE, or MODULE=FILE; checked by the module before anything is
    /// written.
    // `--settings-path`, kwctl's spelling and this command's before, is
    // still read.
    #[arg(long, value_name = "[MODULE=]FILE", alias = "settings-path")]
    pub settings: Vec<String>,
    /// Where the module is fetched from (default:
    /// `registry://<ociUrl>:v<version>` from its annotations).
    #[arg(long, value_name = "URI")]
    pub module_url: Option<String>,
    /// Output format.
    #[arg(short, long, value_name = "FORMAT", default_value = "yaml", value_parser = crate::output::format_or_file::<Written>("--output-file"))]
    pub output: Written,
    /// Write the output to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
}

/// How `scaffold manifest` and `scaffold policies` write.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Written {
    /// YAML, as kwctl writes it (strings kubectl would read otherwise
    /// quoted).
    Yaml,
    /// The same document as JSON.
    Json,
}

#[derive(Args)]
#[command(after_help = "\
Examples:
  olm-guard scaffold policies all --output-file policies.yml   # every module, from its registry
  olm-guard scaffold policies all --file-urls > local.yml
  policy-server --policies local.yml --ignore-kubernetes-connection-failure

Each module is named by its registry reference (registry://<ociUrl>:v<version>
from its annotations), which policy-server downloads into its
--policies-download-dir (default: the current directory); --file-urls names
the module files given instead (file:///abs/path/x.wasm), for a
policy-server on this machine trying the modules just built.

Exit codes: 0 written; 2 a module cannot be read.")]
pub struct PoliciesArgs {
    /// Annotated modules: names in the module directory (--dist), `.wasm`
    /// files, or `all` for every module there.
    #[arg(required = true, value_name = "MODULE")]
    pub modules: Vec<String>,
    #[command(flatten)]
    pub dist: DistArgs,
    /// Name each module by its file, as an absolute file:// URL, instead of
    /// its registry reference: for a policy-server on this machine.
    #[arg(long)]
    pub file_urls: bool,
    /// Output format.
    #[arg(short, long, value_name = "FORMAT", default_value = "yaml", value_parser = crate::output::format_or_file::<Written>("--output-file"))]
    pub output: Written,
    /// Write the output to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
}

fn parse_kind(value: &str) -> Result<ManifestKind, String> {
    value
        .parse()
        .map_err(|e: manifest::ManifestError| e.to_string())
}

/// The module file for `module`: a path, or a name in the module
/// directory, resolved as every command resolves one (`modules::resolve`).
/// A manifest is written from a local file only: a registry reference is
/// pulled first.
fn module_path(module: &str, dist: &DistArgs) -> anyhow::Result<PathBuf> {
    if module.contains("://") {
        bail!(
            "{module}: only local modules are read here; pull it first (olm-guard pull) and pass the .wasm file"
        );
    }
    let path = modules::resolve(module, dist)?;
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

/// The `--settings` file of the module at `path`, checked by the module's
/// own `validate_settings` (as `run` checks them) before anything is
/// written.
fn checked_settings(file: &Path, path: &Path) -> anyhow::Result<Map<String, Value>> {
    let settings = settings::read(Some(file))?;
    let runtime = Runtime::new(Limits::default())?;
    Policy::load(&runtime, path, None)?
        .validate_settings(&settings)
        .with_context(|| format!("--settings {}", file.display()))?;
    match settings {
        Value::Object(settings) => Ok(settings),
        // `settings::read` gives a mapping or refuses.
        _ => Ok(Map::new()),
    }
}

fn write_out(output: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
        }
        None => {
            std::io::stdout().lock().write_all(text.as_bytes())?;
            Ok(())
        }
    }
}

/// `value` in the format asked for: `yaml` as built (`yaml`), `json` as
/// one pretty JSON document.
fn in_format(
    format: Written,
    yaml: String,
    value: &impl serde::Serialize,
) -> anyhow::Result<String> {
    Ok(match format {
        Written::Yaml => yaml,
        Written::Json => format!("{}\n", serde_json::to_string_pretty(value)?),
    })
}

pub fn manifest(args: ManifestArgs) -> anyhow::Result<ExitCode> {
    let path = module_path(&args.module, &args.dist)?;
    let metadata = module_metadata(&path)?;
    let name = modules::name_of(&args.module, &path);
    let settings = match settings::for_one_module(&args.settings, &name)? {
        Some(file) => checked_settings(&file, &path)?,
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
    let text = in_format(
        args.output,
        scaffolded.manifest.to_yaml()?,
        &scaffolded.manifest,
    )?;
    write_out(args.output_file.as_deref(), &text)?;
    Ok(ExitCode::SUCCESS)
}

/// The absolute `file://` URL of the module at `path`, as policy-server
/// reads one (kubewarden/kubewarden-controller, `crates/policy-fetcher/src/lib.rs`,
/// `fetch_policy`: `Url::to_file_path`, so the path must be absolute).
fn file_url(path: &Path) -> anyhow::Result<String> {
    let absolute = path
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", path.display()))?;
    url::Url::from_file_path(&absolute)
        .map(String::from)
        .map_err(|()| anyhow::anyhow!("{}: not a path a file:// URL can name", absolute.display()))
}

/// What a policies.yml with `file://` modules adds to its header.
const LOCAL_HEADER: &str = "\
# The modules are the files named (--file-urls): for a policy-server on this
# machine; a cluster's policy-server needs their registry references instead.
";

/// The first lines of a generated policies.yml.
const POLICIES_HEADER: &str = "\
# policies.yml for a bare policy-server (policy-server --policies policies.yml).
# Each policy is granted exactly the host capabilities and Kubernetes resources
# its module's metadata declares: without hostCapabilities policy-server denies
# every host call. Written by `olm-guard scaffold policies`; do not edit.
";

pub fn policies(args: PoliciesArgs) -> anyhow::Result<ExitCode> {
    if let Some(reference) = args.modules.iter().find(|m| m.contains("://")) {
        bail!(
            "{reference}: only local modules are read here; pull it first (olm-guard pull) and pass the .wasm file"
        );
    }
    let mut entries = BTreeMap::new();
    for (_, path) in modules::named(&args.modules, &args.dist, &RegistryArgs::default())? {
        let metadata = module_metadata(&path)?;
        let context = || path.display().to_string();
        let name = manifest::default_name(&metadata).with_context(context)?;
        let reference = if args.file_urls {
            file_url(&path)?
        } else {
            manifest::module_reference(&metadata).with_context(context)?
        };
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
    let header = if args.file_urls {
        format!("{POLICIES_HEADER}{LOCAL_HEADER}")
    } else {
        POLICIES_HEADER.to_string()
    };
    let text = in_format(
        args.output,
        format!("{header}{}", manifest::policies_yml(&entries)?),
        &entries,
    )?;
    write_out(args.output_file.as_deref(), &text)?;
    Ok(ExitCode::SUCCESS)
}
