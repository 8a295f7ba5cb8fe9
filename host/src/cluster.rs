//! The cluster files an evaluation answers host calls from (the snapshot): the
//! `--cluster` and `--api-resources` files, read strictly (the first
//! unreadable object stops the command) or leniently (each is reported).
//! A file that holds no object is refused unless `--allow-empty` says an
//! empty cluster is meant: an empty file is more often a `kubectl get`
//! that failed inside `<(...)` than a cluster with nothing in it.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;

use olm_guard_snapshot::{ApiResources, LoadOptions, Snapshot, SnapshotWarning};

/// The cluster snapshot an evaluation answers host calls from.
#[derive(Args)]
pub struct SnapshotArgs {
    /// Cluster snapshot: multi-document YAML or a List (`kubectl get ... -o
    /// yaml`); repeatable.
    #[arg(long, value_name = "FILE")]
    pub cluster: Vec<PathBuf>,
    /// Which kinds are cluster-scoped: `kubectl api-resources -o wide` output
    /// or a YAML list of `{apiVersion, kind, namespaced}`; layered over the
    /// built-in table.
    #[arg(long, value_name = "FILE")]
    pub api_resources: Option<PathBuf>,
    /// Report unreadable snapshot objects on stderr and go on without them,
    /// instead of stopping at the first.
    #[arg(long)]
    pub lenient: bool,
    /// Accept a --cluster or --api-resources file that holds no object (an
    /// empty cluster is meant); without it such a file is an error, as an
    /// empty file is most often a `kubectl get` that failed.
    #[arg(long)]
    pub allow_empty: bool,
}

impl SnapshotArgs {
    /// The snapshot of every `--cluster` file; problems are errors, or
    /// warnings on stderr with `--lenient`.
    pub fn load(&self) -> anyhow::Result<Snapshot> {
        let options = if self.lenient {
            LoadOptions::LENIENT
        } else {
            LoadOptions::STRICT
        };
        load(
            &self.cluster,
            self.api_resources.as_deref(),
            options,
            self.allow_empty,
            &mut |warning| eprintln!("olm-guard: warning: {warning}"),
        )
    }
}

/// The snapshot of `files`, the kinds of `api_resources` layered over the
/// built-in table; with [`LoadOptions::LENIENT`], every document that cannot
/// be used is handed to `warn` (as each file is read) instead of stopping
/// the load. A file with no object is an error unless `allow_empty`.
pub fn load(
    files: &[PathBuf],
    api_resources: Option<&Path>,
    options: LoadOptions,
    allow_empty: bool,
    warn: &mut dyn FnMut(SnapshotWarning),
) -> anyhow::Result<Snapshot> {
    let mut snapshot = Snapshot::new();
    if let Some(path) = api_resources {
        snapshot.add_api_resources(read_api_resources(path, allow_empty)?);
    }
    for path in files {
        let text = read_text("--cluster", path)?;
        let source = path.display().to_string();
        let before = snapshot.len();
        let warnings = snapshot.add_source(&source, &text, options)?;
        if snapshot.len() == before && !allow_empty {
            // Only documents that are no Kubernetes object: refused as an
            // empty file is, whatever the command (`run --object` refuses
            // such a file too), not audited as a cluster of nothing.
            match warnings.first() {
                None => bail!("{}", no_object(path, &text)),
                Some(first) => bail!(
                    "--cluster {}: no document in it is a Kubernetes object ({first}): expected \
                     Kubernetes objects, as `kubectl get ... -o yaml` writes them",
                    path.display()
                ),
            }
        }
        for warning in warnings {
            warn(warning);
        }
    }
    Ok(snapshot)
}

/// The `--api-resources` table at `path`; one with no entry is an error
/// unless `allow_empty`.
pub fn read_api_resources(path: &Path, allow_empty: bool) -> anyhow::Result<ApiResources> {
    let text = read_text("--api-resources", path)?;
    let table = ApiResources::parse(&text).with_context(|| path.display().to_string())?;
    if table.is_empty() && !allow_empty {
        bail!(
            "--api-resources {}: {}: expected the output of `kubectl api-resources -o wide` or a \
             YAML list of {{apiVersion, kind, namespaced}}; an empty file is most often a command \
             that failed. If a cluster that serves none of them is meant, pass --allow-empty",
            path.display(),
            if text.trim().is_empty() {
                "the file is empty"
            } else {
                "it lists no resource"
            }
        );
    }
    Ok(table)
}

/// The text of the file `flag` names; a directory is refused with the fix
/// (one file per flag, repeated).
pub fn read_text(flag: &str, path: &Path) -> anyhow::Result<String> {
    if path.is_dir() {
        bail!(
            "{flag} {}: a directory; give one file, or several: {flag} a.yaml {flag} b.yaml",
            path.display()
        );
    }
    crate::file_text::read(path).with_context(|| format!("cannot read {flag} {}", path.display()))
}

/// Why `path` (a `--cluster` file whose text is `text`) was refused: it is
/// empty, or holds no object.
pub fn no_object(path: &Path, text: &str) -> String {
    let what = if text.trim().is_empty() {
        "the file is empty"
    } else {
        "it holds no object (an empty List, or only comments)"
    };
    format!(
        "--cluster {}: {what}: expected Kubernetes objects, as `kubectl get ... -o yaml` writes them; \
         an empty file is most often a command that failed. If an empty cluster is meant, pass \
         --allow-empty",
        path.display()
    )
}
