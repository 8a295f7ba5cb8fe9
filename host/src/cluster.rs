//! The cluster files an evaluation answers host calls from (the snapshot): the
//! `--cluster` and `--api-resources` files, read strictly (the first
//! unreadable object stops the command) or leniently (each is reported).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use olm_guard_snapshot::{ApiResources, LoadOptions, Snapshot, SnapshotWarning};

/// The cluster snapshot an evaluation answers host calls from.
#[derive(Args)]
pub struct SnapshotArgs {
    /// Cluster snapshot: multi-document YAML or a List (`kubectl get ... -o
    /// yaml`); repeatable.
    #[arg(long)]
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
            &mut |warning| eprintln!("olm-guard: warning: {warning}"),
        )
    }
}

/// The snapshot of `files`, the kinds of `api_resources` layered over the
/// built-in table; with [`LoadOptions::LENIENT`], every document that cannot
/// be used is handed to `warn` (as each file is read) instead of stopping
/// the load.
pub fn load(
    files: &[PathBuf],
    api_resources: Option<&Path>,
    options: LoadOptions,
    warn: &mut dyn FnMut(SnapshotWarning),
) -> anyhow::Result<Snapshot> {
    let mut snapshot = Snapshot::new();
    if let Some(path) = api_resources {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let table = ApiResources::parse(&text).with_context(|| path.display().to_string())?;
        snapshot.add_api_resources(table);
    }
    for path in files {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let source = path.display().to_string();
        for warning in snapshot.add_source(&source, &text, options)? {
            warn(warning);
        }
    }
    Ok(snapshot)
}
