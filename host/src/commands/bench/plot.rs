//! `olm-guard bench --scale --plot`: the scale series as a log-log PNG.
//! The `plot` cargo feature (on by default; `make examples` leaves it out).

use std::path::Path;

use anyhow::Context;

use plotters::prelude::*;

use olm_guard_bench::Report;

use super::scale::ms;

/// Where `--plot` finds a TrueType font for its labels (Debian's
/// fonts-dejavu-core, which Chromium pulls in; `scripts/test-deps.sh`
/// installs it).
const FONT_FILES: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

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
        // A missing font is a failure naming the fix, never a pass.
        assert!(
            FONT_FILES.iter().any(|f| Path::new(f).is_file()),
            "no DejaVu font ({}): install Debian's fonts-dejavu-core with \
             `sudo scripts/test-deps.sh` (every test tool) or `sudo apt-get install -y fonts-dejavu-core`",
            FONT_FILES.join(", ")
        );
        plot(&reports, &path, "test").unwrap();
        let png = std::fs::read(&path).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR: width and height, big-endian, at bytes 16..24.
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 1100);
        assert_eq!(u32::from_be_bytes(png[20..24].try_into().unwrap()), 700);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
