//! Arguments and helpers every subcommand shares.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use olm_guard_evaluator::input as admission;
use olm_guard_runtime::{Limits, Runtime};
use olm_guard_snapshot::{ApiResources, LoadOptions, Snapshot};

#[derive(Args)]
pub struct LimitArgs {
    /// Memory cap for a module instance, in MiB.
    #[arg(long, default_value_t = 256)]
    pub memory_limit_mib: usize,
    /// Execution deadline for one call, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    pub timeout_ms: u64,
    /// Compile every module afresh instead of reusing the compiled code kept
    /// in the compile cache.
    #[arg(long, env = "OLM_GUARD_NO_COMPILE_CACHE")]
    pub no_compile_cache: bool,
    /// Where compiled modules are kept, keyed by the module's bytes, the
    /// engine's settings and wasmtime's version; default
    /// `$XDG_CACHE_HOME/olm-guard/compiled` (else `~/.cache/olm-guard/compiled`).
    #[arg(long, value_name = "DIR", env = "OLM_GUARD_COMPILE_CACHE_DIR")]
    pub compile_cache_dir: Option<PathBuf>,
}

impl LimitArgs {
    /// The runtime these flags ask for: the limits, and the compile cache
    /// unless `--no-compile-cache`. A cache that cannot be used is a
    /// warning, not an error: it only saves time.
    pub(crate) fn runtime(&self) -> anyhow::Result<Runtime> {
        let dir = match (&self.compile_cache_dir, self.no_compile_cache) {
            (_, true) => None,
            (Some(dir), false) => Some(dir.clone()),
            (None, false) => olm_guard_runtime::cache_home().map(|home| home.join("compiled")),
        };
        if let Some(dir) = dir {
            match Runtime::with_compile_cache(self.limits(), &dir) {
                Ok(runtime) => return Ok(runtime),
                Err(e) => eprintln!(
                    "olm-guard: warning: {:#}; compiling without it (--no-compile-cache silences this)",
                    anyhow::Error::from(e)
                ),
            }
        }
        Ok(Runtime::new(self.limits())?)
    }

    pub(crate) fn limits(&self) -> Limits {
        Limits {
            memory_bytes: self.memory_limit_mib << 20,
            deadline: Duration::from_millis(self.timeout_ms),
        }
    }
}

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
    pub(crate) fn load(&self) -> anyhow::Result<Snapshot> {
        let mut snapshot = Snapshot::new();
        if let Some(path) = &self.api_resources {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let table = ApiResources::parse(&text).with_context(|| path.display().to_string())?;
            snapshot.add_api_resources(table);
        }
        let options = if self.lenient {
            LoadOptions::LENIENT
        } else {
            LoadOptions::STRICT
        };
        for path in &self.cluster {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let source = path.display().to_string();
            for warning in snapshot.add_source(&source, &text, options)? {
                eprintln!("olm-guard: warning: {warning}");
            }
        }
        Ok(snapshot)
    }
}

/// The request, settings and snapshot files every evaluating command takes.
pub fn read_inputs(
    request: &Path,
    settings: Option<&Path>,
    snapshot: &SnapshotArgs,
) -> anyhow::Result<(serde_json::Value, serde_json::Value, Snapshot)> {
    let request = admission::admission_request(admission::read_document(request)?)
        .with_context(|| request.display().to_string())?;
    let settings = admission::settings_object(match settings {
        Some(path) => Some(admission::read_document(path)?),
        None => None,
    })
    .context("--settings")?;
    Ok((request, settings, snapshot.load()?))
}

/// `text` on one line: every run of whitespace, newlines included, as one
/// space.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `policies/` beside `dist/`: where a project's metadata.yml files are,
/// for modules built without embedded metadata.
pub fn policies_dir(dist: &Path) -> PathBuf {
    dist.parent()
        .map_or_else(|| PathBuf::from("policies"), |p| p.join("policies"))
}

pub fn display(dir: &Path) -> String {
    dir.display().to_string()
}

pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}
