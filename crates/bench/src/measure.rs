//! `olm-guard bench`: a module against the same rule compiled natively, on
//! the same snapshot and payload, in the same run. Figures are reported as
//! the wasm/native ratio of medians: absolute times depend on the machine.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use olm_guard_evaluator::Policy;
use olm_guard_rules::registry;
use olm_guard_snapshot::Snapshot;

/// Durations of repeated runs.
#[derive(Debug, Clone, Default)]
pub struct Samples(Vec<Duration>);

impl Samples {
    /// Wraps measured durations.
    pub fn new(samples: Vec<Duration>) -> Samples {
        Samples(samples)
    }

    /// The durations, as measured.
    pub fn into_vec(self) -> Vec<Duration> {
        self.0
    }

    fn sorted(&self) -> Vec<Duration> {
        let mut v = self.0.clone();
        v.sort();
        v
    }

    /// The 50th percentile.
    pub fn median(&self) -> Duration {
        let v = self.sorted();
        v.get(v.len() / 2).copied().unwrap_or_default()
    }

    /// The 90th percentile.
    pub fn p90(&self) -> Duration {
        self.percentile(0.9)
    }

    /// The `share`th quantile (`0.99`: the 99th percentile), the nearest
    /// sample at or below it.
    pub fn percentile(&self, share: f64) -> Duration {
        let v = self.sorted();
        let at = (v.len() as f64 * share) as usize;
        v.get(at.min(v.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    }
}

/// One input measured both ways.
pub struct Report {
    /// The workload's name, or `input`.
    pub label: String,
    /// The policy measured.
    pub policy: String,
    /// Objects in the snapshot.
    pub objects: usize,
    /// The verdict both ways reached.
    pub allowed: bool,
    /// The module, a fresh instance per evaluation.
    pub wasm: Samples,
    /// The same rule, native.
    pub native: Samples,
}

impl Report {
    /// wasm / native, of medians.
    pub fn ratio(&self) -> f64 {
        let native = self.native.median().as_secs_f64();
        if native == 0.0 {
            return f64::NAN;
        }
        self.wasm.median().as_secs_f64() / native
    }

    /// The table header matching [`Report::row`].
    pub fn header() -> String {
        format!(
            "{:<12} {:<24} {:>8} {:>8} {:>12} {:>12} {:>12} {:>12} {:>8}",
            "input",
            "policy",
            "objects",
            "verdict",
            "wasm p50",
            "wasm p90",
            "native p50",
            "native p90",
            "ratio"
        )
    }

    /// One table row.
    pub fn row(&self) -> String {
        format!(
            "{:<12} {:<24} {:>8} {:>8} {:>12} {:>12} {:>12} {:>12} {:>7.1}x",
            self.label,
            self.policy,
            self.objects,
            if self.allowed { "allowed" } else { "denied" },
            ms(self.wasm.median()),
            ms(self.wasm.p90()),
            ms(self.native.median()),
            ms(self.native.p90()),
            self.ratio(),
        )
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// Runs `iterations` evaluations each way (after one warm-up each) and
/// checks that both ways reach the same verdict.
pub fn measure(
    label: &str,
    policy: &Policy,
    request: &Value,
    settings: &Value,
    snapshot: Arc<Snapshot>,
    iterations: usize,
) -> anyhow::Result<Report> {
    let native_rule = registry::find(&policy.name)
        .with_context(|| format!("no native baseline for a policy named {:?}", policy.name))?;
    policy.validate_settings(settings)?;
    let payload = serde_json::to_vec(&json!({"request": request, "settings": settings}))?;

    let wasm_verdict = policy
        .validate(request, settings, snapshot.clone())?
        .response;
    let native_verdict = native_rule.evaluate_payload(&payload, &*snapshot);
    if wasm_verdict.allowed != native_verdict.allowed {
        bail!(
            "wasm and native disagree: wasm allowed={} ({:?}), native allowed={} ({:?})",
            wasm_verdict.allowed,
            wasm_verdict.message(),
            native_verdict.allowed,
            native_verdict.message
        );
    }

    let mut wasm = Vec::with_capacity(iterations);
    let mut native = Vec::with_capacity(iterations);
    for _ in 0..iterations.max(1) {
        let start = Instant::now();
        policy.validate(request, settings, snapshot.clone())?;
        wasm.push(start.elapsed());
        let start = Instant::now();
        std::hint::black_box(
            native_rule.evaluate_payload(std::hint::black_box(&payload), &*snapshot),
        );
        native.push(start.elapsed());
    }
    Ok(Report {
        label: label.to_string(),
        policy: policy.name.clone(),
        objects: snapshot.len(),
        allowed: wasm_verdict.allowed,
        wasm: Samples(wasm),
        native: Samples(native),
    })
}

/// The machine figures come from, as figures must name it: the CPU model
/// and the cores this process may use.
pub fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, name)| name.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{cores} cores, {model}")
}
