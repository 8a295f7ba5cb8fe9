//! A `testdata/` scenario directory's inputs, read the same way by the
//! conformance test and the reference bench: `request.json`, an optional
//! `settings.json`, an optional `cluster.yaml`.

use std::path::Path;

use anyhow::Context;
use serde_json::Value;

use olm_guard_evaluator::input;
use olm_guard_snapshot::{LoadOptions, Snapshot};

/// The AdmissionRequest of `request.json` (a review or a bare request).
pub fn request(dir: &Path) -> anyhow::Result<Value> {
    Ok(input::admission_request(input::read_document(
        &dir.join("request.json"),
    )?)?)
}

/// The settings object of `settings.json`, `{}` when there is none.
pub fn settings(dir: &Path) -> anyhow::Result<Value> {
    let path = dir.join("settings.json");
    Ok(input::settings_object(if path.is_file() {
        Some(input::read_document(&path)?)
    } else {
        None
    })?)
}

/// The cluster of `cluster.yaml`, empty when there is none.
pub fn snapshot(dir: &Path) -> anyhow::Result<Snapshot> {
    let mut snapshot = Snapshot::new();
    let path = dir.join("cluster.yaml");
    if path.is_file() {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        snapshot.add_source("cluster.yaml", &text, LoadOptions::STRICT)?;
    }
    Ok(snapshot)
}
