//! `olm-guard scaffold artifacthub`: Artifact Hub package files from a
//! policy's metadata.yml, README.md and the rule's settings, as `kwctl
//! scaffold artifacthub`, built by `olm_guard_runtime::artifacthub`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;

use olm_guard_rules::registry::RULES;
use olm_guard_runtime::Metadata;
use olm_guard_runtime::artifacthub;
use olm_guard_runtime::metadata::annotation;

#[derive(Args)]
#[command(after_help = "\
Examples:
  olm-guard scaffold artifacthub policies/catalog-union --output-file policies/catalog-union/artifacthub-pkg.yml
  olm-guard scaffold artifacthub policies/* --dir artifacthub

Exit codes: 0 written; 2 a metadata.yml or README.md is unreadable or
incomplete, or --version differs from the version the metadata declares.")]
pub struct ArtifacthubArgs {
    /// Policy directories (`policies/<name>/`, holding metadata.yml and
    /// README.md).
    #[arg(required = true)]
    pub policies: Vec<PathBuf>,
    /// The version to package; must equal `io.kubewarden.policy.version`
    /// (the version the module embeds). Defaults to it.
    #[arg(long)]
    pub version: Option<String>,
    /// Output format.
    #[arg(short, long, value_name = "FORMAT", default_value = "yaml", value_parser = crate::output::format_or_file::<PackageFormat>("--output-file"))]
    pub output: PackageFormat,
    /// Write the output to FILE instead of stdout.
    #[arg(long, value_name = "FILE", conflicts_with = "dir")]
    pub output_file: Option<PathBuf>,
    /// Write the Artifact Hub repository tree: `DIR/artifacthub-repo.yml`
    /// and, per policy, `DIR/<name>/<version>/artifacthub-pkg.yml` and
    /// `README.md`.
    #[arg(long, visible_alias = "output-dir", value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// How `scaffold artifacthub` writes a package.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PackageFormat {
    /// `artifacthub-pkg.yml`, the one format Artifact Hub reads.
    Yaml,
}

/// One policy's package, ready to write.
struct Package {
    name: String,
    version: String,
    metadata: Metadata,
    readme: String,
    yaml: String,
}

/// Writes the packages: to standard output, `--output-file FILE`, or the
/// repository tree under `--dir`.
pub fn artifacthub(args: ArtifacthubArgs) -> anyhow::Result<ExitCode> {
    if args.dir.is_none() && args.policies.len() > 1 {
        bail!(
            "several policies need --dir DIR (one package file each); --output-file and standard output take one"
        );
    }
    // YAML is the one format Artifact Hub reads.
    let PackageFormat::Yaml = args.output;
    let packages = args
        .policies
        .iter()
        .map(|dir| package(dir, args.version.as_deref()))
        .collect::<anyhow::Result<Vec<_>>>()?;
    match (&args.dir, &args.output_file) {
        (Some(root), _) => {
            for p in &packages {
                let dir = root.join(&p.name).join(&p.version);
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
                write(&dir.join("artifacthub-pkg.yml"), &p.yaml)?;
                // Artifact Hub shows the README.md beside the package file.
                write(&dir.join("README.md"), &p.readme)?;
            }
            let all: Vec<Metadata> = packages.into_iter().map(|p| p.metadata).collect();
            write(
                &root.join("artifacthub-repo.yml"),
                &artifacthub::repository_yaml(&all)?,
            )?;
        }
        (None, Some(file)) => {
            for p in &packages {
                write(file, &p.yaml)?;
            }
        }
        (None, None) => {
            let mut out = std::io::stdout().lock();
            for p in &packages {
                std::io::Write::write_all(&mut out, p.yaml.as_bytes())?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

fn package(dir: &Path, version: Option<&str>) -> anyhow::Result<Package> {
    let metadata_path = dir.join("metadata.yml");
    let readme_path = dir.join("README.md");
    let text = std::fs::read_to_string(&metadata_path)
        .with_context(|| format!("cannot read {}", metadata_path.display()))?;
    let metadata =
        Metadata::from_yaml(&text).with_context(|| metadata_path.display().to_string())?;
    metadata
        .check_publishable()
        .with_context(|| metadata_path.display().to_string())?;
    let readme = std::fs::read_to_string(&readme_path)
        .with_context(|| format!("cannot read {}", readme_path.display()))?;
    let annotation = |key: &str| metadata.annotations.get(key).map(|v| v.trim().to_string());
    let name = annotation(annotation::TITLE).unwrap_or_default();
    let declared = annotation(annotation::VERSION).unwrap_or_default();
    if let Some(v) = version
        && v != declared
    {
        bail!(
            "--version {v} differs from {} {declared} in {}; bump the annotation (the module embeds it) instead",
            annotation::VERSION,
            metadata_path.display()
        );
    }
    let created_at = annotation(annotation::CREATED).unwrap_or_default();
    // The settings a cluster admin can set are the rule's own Settings
    // (their defaults), described by the README's settings table.
    let rule = RULES.iter().find(|r| r.name == name).with_context(|| {
        format!(
            "{}: {} {name:?} names no rule in olm_guard_rules::registry::RULES; use the policy's registry name",
            metadata_path.display(),
            annotation::TITLE
        )
    })?;
    let settings = artifacthub::settings(
        &rule.default_settings(),
        &artifacthub::settings_table(&readme),
        &readme_path.display().to_string(),
    )?;
    let description = annotation(annotation::DESCRIPTION).unwrap_or_default();
    let questions = artifacthub::questions_ui(&description, &settings)?;
    let yaml = artifacthub::package_yaml(&metadata, &created_at, &questions)
        .with_context(|| metadata_path.display().to_string())?;
    Ok(Package {
        name,
        version: declared,
        metadata,
        readme,
        yaml,
    })
}
