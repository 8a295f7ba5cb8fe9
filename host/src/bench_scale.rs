//! `olm-guard bench --scale`: every context-aware module at 10, 100, 1,000
//! and 10,000 objects, wasm and native, as a table and (with `--plot`) a
//! log-log PNG.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;

use olm_guard_bench::scale::{self, SIZES};
use olm_guard_bench::{self as bench, Report};
use olm_guard_evaluator::scenario::PolicyStore;

/// Where `--plot` finds a TrueType font for its labels (Debian's
/// fonts-dejavu-core, which Chromium pulls in; `scripts/test-deps.sh`
/// installs it).
const FONT_FILES: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

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

fn ms(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Draws the series as a log-log PNG: a colour per module, wasm solid with
/// dots, native dashed.
pub fn plot(reports: &[Report], path: &Path, machine: &str) -> anyhow::Result<()> {
    register_font()?;
    let root = BitMapBackend::new(path, (1100, 700)).into_drawing_area();
    root.fill(&WHITE)?;
    let max_ms = reports
        .iter()
        .flat_map(|r| [ms(r.wasm.median()), ms(r.native.median())])
        .fold(0.01_f64, f64::max);
    let min_ms = reports
        .iter()
        .flat_map(|r| [ms(r.wasm.median()), ms(r.native.median())])
        .fold(f64::MAX, f64::min)
        .max(0.001);
    let max_objects = reports.iter().map(|r| r.objects).max().unwrap_or(10) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("olm-guard: p50 latency by cluster size ({machine})"),
            ("sans-serif", 22),
        )
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (5.0..max_objects * 2.0).log_scale(),
            (min_ms / 2.0..max_ms * 2.0).log_scale(),
        )?;
    chart
        .configure_mesh()
        .x_label_formatter(&|x| format!("{}", x.round() as u64))
        .y_label_formatter(&|y| format!("{y}"))
        .x_desc("objects in the cluster snapshot")
        .y_desc("p50 per evaluation (ms)")
        .label_style(("sans-serif", 15))
        .draw()?;
    let policies: Vec<&str> = reports.iter().fold(Vec::new(), |mut seen, r| {
        if !seen.contains(&r.policy.as_str()) {
            seen.push(&r.policy);
        }
        seen
    });
    for (index, policy) in policies.iter().enumerate() {
        let colour = Palette99::pick(index).to_rgba();
        let points = |native: bool| -> Vec<(f64, f64)> {
            reports
                .iter()
                .filter(|r| r.policy == *policy)
                .map(|r| {
                    let sample = if native { &r.native } else { &r.wasm };
                    (r.objects as f64, ms(sample.median()))
                })
                .collect()
        };
        chart
            .draw_series(LineSeries::new(points(false), colour.stroke_width(3)))?
            .label(format!("{policy} (wasm)"))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(3))
            });
        chart.draw_series(
            points(false)
                .into_iter()
                .map(|p| Circle::new(p, 4, colour.filled())),
        )?;
        chart
            .draw_series(DashedLineSeries::new(
                points(true),
                6,
                4,
                colour.stroke_width(2),
            ))?
            .label(format!("{policy} (native)"))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(1))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Gives plotters a font for "sans-serif" (its ab_glyph backend has none of
/// its own).
fn register_font() -> anyhow::Result<()> {
    let file = FONT_FILES
        .iter()
        .find(|f| Path::new(f).is_file())
        .with_context(|| {
            format!(
                "no font for the plot's labels: install Debian's fonts-dejavu-core ({} is missing)",
                FONT_FILES[0]
            )
        })?;
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {file}"))?;
    // plotters keeps fonts for the process's life.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| anyhow::anyhow!("{file} is not a TrueType font plotters can read"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use olm_guard_bench::Samples;
    use std::time::Duration;

    fn report(policy: &str, objects: usize, wasm_us: u64, native_us: u64) -> Report {
        Report {
            label: objects.to_string(),
            policy: policy.into(),
            objects,
            allowed: true,
            wasm: Samples::new(vec![Duration::from_micros(wasm_us)]),
            native: Samples::new(vec![Duration::from_micros(native_us)]),
        }
    }

    #[test]
    fn the_plot_is_a_png_of_the_asked_size() {
        let reports = vec![
            report("og-intersection", 10, 50, 20),
            report("og-intersection", 100, 300, 150),
            report("scope-rbac", 10, 80, 40),
            report("scope-rbac", 100, 500, 200),
        ];
        let dir = std::env::temp_dir().join(format!("olm-guard-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("scale.png");
        if !FONT_FILES.iter().any(|f| Path::new(f).is_file()) {
            eprintln!("skipped: no DejaVu font; scripts/test-deps.sh installs fonts-dejavu-core");
            return;
        }
        plot(&reports, &path, "test").unwrap();
        let png = std::fs::read(&path).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR: width and height, big-endian, at bytes 16..24.
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 1100);
        assert_eq!(u32::from_be_bytes(png[20..24].try_into().unwrap()), 700);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
