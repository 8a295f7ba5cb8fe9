//! `olm-guard-webhook-bench`: guarded writes on the production path at
//! scale (`make bench`). kube-apiserver on etcd (the test cluster of
//! `olm_guard_kube_harness::cluster`) holding ClusterObjectSets,
//! ClusterRoles and OperatorGroups, Kubewarden's policy-server registered
//! as its webhook for the six ClusterAdmissionPolicies of
//! `deploy/kubewarden/` (default settings, as the README installs them),
//! and concurrent clients sending dry-run creates: new revisions, duplicate
//! revisions, ClusterRoles labelled to feed an aggregated one, and new
//! OperatorGroups.
//!
//! For each size it runs the same requests three ways, in one run:
//! kube-apiserver alone (the webhooks taken away), with the webhooks, and
//! one client alone with the webhooks; and prints requests per second, the
//! latency's p50 and p99, policy-server's CPU per request and peak RSS, the
//! reflectors (watches) policy-server opened, and what kube-apiserver
//! spent meanwhile. Every answer is checked against what the request is
//! built to get (admitted or denied); a wrong one, an error or a timeout
//! fails the bench.

mod load;
mod proc;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, ValueEnum};

use olm_guard_bench::machine;

/// Which cluster sizes to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Size {
    /// 10,000 ClusterObjectSets (1,000 groups of 10), 2,000 ClusterRoles,
    /// 2,000 OperatorGroups.
    Large,
    /// 50 groups of 10 revisions, the default ClusterRoles of a fresh
    /// cluster plus 200, 50 OperatorGroups.
    Realistic,
    /// Both, one after the other.
    Both,
}

#[derive(Parser)]
#[command(
    name = "olm-guard-webhook-bench",
    version,
    about = "Guarded writes through kube-apiserver with Kubewarden's policy-server as its \
             webhook, against kube-apiserver alone, at cluster sizes of your choice.",
    after_help = "Examples:\n  olm-guard-webhook-bench --dist dist\n  \
                  olm-guard-webhook-bench --size realistic --clients 20 --requests 600"
)]
struct Args {
    /// The modules' directory.
    #[arg(long, default_value = "dist")]
    dist: PathBuf,
    /// The repository (its CRDs and `deploy/kubewarden/`).
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// The cluster sizes.
    #[arg(long, value_enum, default_value_t = Size::Both)]
    size: Size,
    /// Concurrent clients.
    #[arg(long, default_value_t = 20)]
    clients: usize,
    /// Requests per measured run.
    #[arg(long, default_value_t = 600)]
    requests: usize,
}

fn run(args: &Args) -> anyhow::Result<()> {
    let dist = args
        .dist
        .canonicalize()
        .with_context(|| format!("{}: run make dist", args.dist.display()))?;
    let sizes: &[load::Sizes] = match args.size {
        Size::Large => &[load::Sizes::LARGE],
        Size::Realistic => &[load::Sizes::REALISTIC],
        Size::Both => &[load::Sizes::LARGE, load::Sizes::REALISTIC],
    };
    println!("webhook bench ({}):", machine());
    for sizes in sizes {
        let report = load::measure(&args.root, &dist, sizes, args.clients, args.requests)?;
        report.print();
    }
    Ok(())
}

/// A duration as milliseconds with one decimal.
fn ms(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("olm-guard-webhook-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
