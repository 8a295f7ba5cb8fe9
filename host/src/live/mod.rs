//! A live cluster for `run`, `audit` and `snapshot`: `--kubeconfig`,
//! `--context`, `--request-timeout` and `--chunk-size` as kubectl takes
//! them (here), the connection and the host calls it answers
//! (`session`: [`Session`], [`LiveContext`]), the kinds a set of modules
//! judges and reads and reading them (`kinds`), and the RBAC a command
//! needs, asked before it starts (`permissions`).
//!
//! Live-cluster support is the `live` cargo feature (on by default). A
//! build without it (`make examples`) keeps every flag and refuses them
//! with one line that says how to build it in.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::Value;

mod kinds;
mod permissions;
mod session;

pub use kinds::{
    Kind, RBAC_KINDS, Wanted, api_resources, calls_can_i, kinds_judged, kinds_read, read,
    reads_cluster, resolve, snapshot_of, unserved_objects,
};
pub use permissions::{Permission, merge, missing, missing_line};
pub use session::{LiveContext, ReportTarget, Session};

/// Which cluster to read, as kubectl chooses it.
#[derive(Args, Clone, Debug, Default)]
pub struct LiveArgs {
    /// The kubeconfig of the cluster to read, as kubectl's --kubeconfig;
    /// without it, the files of KUBECONFIG, else ~/.kube/config.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current-context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// How long one request to the API server may take: 30s, 2m, 500ms;
    /// 0 for no limit.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Objects per page when listing the cluster, as kubectl's
    /// --chunk-size.
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..))]
    pub chunk_size: u32,
}

/// `30s`, `2m`, `1h`, `500ms`, a bare number of seconds; `0`: no limit.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration: write 30s, 2m, 1h or 500ms"))?;
    let seconds = match unit {
        "" | "s" => number,
        "ms" => number / 1000.0,
        "m" => number * 60.0,
        "h" => number * 3600.0,
        _ => {
            return Err(format!(
                "{text:?}: unknown unit {unit:?}; use ms, s, m or h"
            ));
        }
    };
    if seconds == 0.0 {
        // kubectl's 0: no limit; ten years stands in for it.
        return Ok(Duration::from_secs(10 * 365 * 24 * 3600));
    }
    Ok(Duration::from_secs_f64(seconds))
}

impl LiveArgs {
    /// Whether a live cluster was asked for (`--kubeconfig` or `--context`).
    pub fn given(&self) -> bool {
        self.kubeconfig.is_some() || self.context.is_some()
    }

    /// Whether a kubeconfig names a cluster, as kubectl finds one:
    /// `--kubeconfig` or `--context`, else `KUBECONFIG` set, else
    /// `~/.kube/config` present.
    pub fn available(&self) -> bool {
        self.given()
            || kubeconfig_variable().is_some()
            || home_kubeconfig().is_some_and(|p| p.is_file())
    }

    /// The kubeconfig files that will be read, checked before connecting:
    /// each `KUBECONFIG` file exists, and a file given is a kubeconfig, so
    /// that a wrong one is named with the fix instead of an OS error or a
    /// missing current-context.
    #[cfg(feature = "live")]
    fn check_kubeconfig(&self) -> anyhow::Result<()> {
        if let Some(path) = &self.kubeconfig {
            return check_kubeconfig_file(&path.display().to_string(), path, "--kubeconfig");
        }
        let Some(value) = kubeconfig_variable() else {
            return match home_kubeconfig().filter(|path| path.is_file()) {
                Some(path) => check_kubeconfig_file("~/.kube/config", &path, "~/.kube/config"),
                None => Ok(()),
            };
        };
        for path in std::env::split_paths(&value).filter(|p| !p.as_os_str().is_empty()) {
            let shown = format!("{} (from KUBECONFIG)", path.display());
            if !path.exists() {
                anyhow::bail!(
                    "kubeconfig {shown}: no such file; set KUBECONFIG to the kubeconfig kubectl \
                     uses, unset it to use ~/.kube/config, or pass --kubeconfig PATH"
                );
            }
            check_kubeconfig_file(&shown, &path, "KUBECONFIG")?;
        }
        Ok(())
    }
}

/// `KUBECONFIG`, when set and not empty.
fn kubeconfig_variable() -> Option<std::ffi::OsString> {
    std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty())
}

/// `~/.kube/config`, where kubectl looks without `KUBECONFIG`.
fn home_kubeconfig() -> Option<PathBuf> {
    std::env::home_dir().map(|home| home.join(".kube").join("config"))
}

/// Refuses a file that is no kubeconfig: a Kubernetes object of another
/// kind (a manifest given as --kubeconfig instead of --cluster), or YAML
/// with no cluster, context or user. Only `kind` is quoted, never the
/// file's contents (a kubeconfig holds credentials). A file that cannot be
/// read or parsed is left to the client, which says why.
#[cfg(feature = "live")]
fn check_kubeconfig_file(shown: &str, path: &std::path::Path, flag: &str) -> anyhow::Result<()> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(());
    };
    let Ok(document) = serde_yaml_ng::from_str::<Value>(&text) else {
        return Ok(());
    };
    let kind = document.get("kind").and_then(Value::as_str).unwrap_or("");
    let has = |key: &str| document.get(key).is_some_and(|v| !v.is_null());
    let what = if !kind.is_empty() && kind != "Config" {
        format!("a {kind}, not a kubeconfig (kind: Config)")
    } else if document.is_object() && !has("clusters") && !has("contexts") && !has("users") {
        "not a kubeconfig: it has no clusters, contexts or users".to_string()
    } else {
        return Ok(());
    };
    let hint = match flag {
        "--kubeconfig" => {
            "; pass the file kubectl uses as --kubeconfig, and objects to read as a cluster \
             with --cluster FILE"
        }
        "KUBECONFIG" => "; point KUBECONFIG at the file kubectl uses, or pass --kubeconfig PATH",
        _ => "; fix it, or pass --kubeconfig PATH",
    };
    anyhow::bail!("kubeconfig {shown}: {what}{hint}")
}
