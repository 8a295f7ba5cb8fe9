//! `olm-guard bench --scale`: every context-aware module at 10, 100, 1,000
//! and 10,000 objects, wasm and native, as a table and (with `--plot`, in
//! `plot`) a log-log PNG.

use std::sync::Arc;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};

use olm_guard_bench::scale::{self, SIZES};
use olm_guard_bench::{self as bench, Report};
use olm_guard_evaluator::scenario::PolicyStore;

/// Evaluations each way at `n` objects: enough for a stable median where
/// one takes microseconds, few where one takes tens of milliseconds.
fn iterations(n: usize) -> usize {
    if n >= 10_000 { 10 } else { 30 }
}

/// Measures every series at every size, with a progress bar; each point is
/// checked like a workload (wasm and native agree, and the verdict is the
/// one the generator intends).
pub fn measure_all(store: &mut PolicyStore) -> anyhow::Result<Vec<Report>> {
    let all = scale::series();
    let progress = ProgressBar::new((all.len() * SIZES.len()) as u64);
    progress.set_style(
        ProgressStyle::with_template("scale {bar:30} {pos}/{len} {msg}").expect("a valid template"),
    );
    let mut reports = Vec::new();
    for series in &all {
        let policy = store.get(series.policy)?;
        for n in SIZES {
            progress.set_message(format!("{} at {n} objects", series.policy));
            let workload = (series.generate)(n)
                .with_context(|| format!("generating {} at {n} objects", series.policy))?;
            let report = bench::measure(
                &format!("{n}"),
                &policy,
                &workload.request,
                &workload.settings,
                Arc::new(workload.snapshot),
                iterations(n),
            )?;
            anyhow::ensure!(
                report.allowed == workload.expect_allowed,
                "{} at {n} objects: the verdict changed with the size",
                series.policy
            );
            reports.push(report);
            progress.inc(1);
        }
    }
    progress.finish_and_clear();
    Ok(reports)
}

/// The table: one row per module and size, with the growth of the wasm
/// median over the previous size (10× the objects: ≤ 10× is at most
/// linear).
pub fn print_table(reports: &[Report]) {
    println!(
        "{:<24} {:>8} {:>12} {:>12} {:>7} {:>12}",
        "module", "objects", "wasm p50", "native p50", "ratio", "wasm growth"
    );
    let mut previous: Option<&Report> = None;
    for report in reports {
        let growth = match previous.filter(|p| p.policy == report.policy) {
            Some(p) => format!(
                "{:.1}x",
                report.wasm.median().as_secs_f64() / p.wasm.median().as_secs_f64()
            ),
            None => "-".into(),
        };
        println!(
            "{:<24} {:>8} {:>9.3} ms {:>9.3} ms {:>6.1}x {:>12}",
            report.policy,
            report.objects,
            ms(report.wasm.median()),
            ms(report.native.median()),
            report.ratio(),
            growth
        );
        previous = Some(report);
    }
    println!(
        "(growth: the wasm median over the previous size's, for 10x the objects; at most 10x is linear)"
    );
}

pub fn ms(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
