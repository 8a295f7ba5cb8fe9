//! Which host capabilities a module's code can call, found as `kwctl
//! annotate` finds them (kubewarden-controller `crates/kwctl/src/wasm_scanner.rs`,
//! `scan`), and how that compares with the metadata's `hostCapabilities`
//! (`crates/kwctl/src/annotate.rs`, `compute_capabilities_mismatch`).
//!
//! A waPC host call passes its namespace and operation as strings, which
//! the compiler keeps in the module's data segments. A capability is
//! detected when both its namespace (`kubernetes`) and its operation
//! (`can_i`) appear there. An operation that is the prefix of another
//! (`v1/oci_manifest` of `v1/oci_manifest_config`) counts only where it
//! appears without the longer name starting at the same place.

use std::collections::BTreeSet;

use super::check::CAPABILITIES;
use super::{Metadata, MetadataError};

/// Between two data segments, a byte that no name contains, so that a name
/// is never found across the end of one segment and the start of the next.
const SEPARATOR: u8 = 0xFF;

/// The host capabilities (`namespace/operation`, as `hostCapabilities`
/// spells them) whose names are in `wasm`'s data segments.
pub fn detect_host_capabilities(wasm: &[u8]) -> Result<BTreeSet<String>, MetadataError> {
    let data = data_segments(wasm)?;
    Ok(CAPABILITIES
        .iter()
        .filter(|path| {
            let (namespace, operation) = path.split_once('/').unwrap_or((path, ""));
            let longer: Vec<&str> = CAPABILITIES
                .iter()
                .filter_map(|other| other.strip_prefix(namespace)?.strip_prefix('/'))
                .filter(|other| other.len() > operation.len() && other.starts_with(operation))
                .collect();
            contains(&data, namespace.as_bytes())
                && standalone(&data, operation.as_bytes(), &longer)
        })
        .map(|path| path.to_string())
        .collect())
}

/// Every data segment's bytes, each followed by [`SEPARATOR`].
fn data_segments(wasm: &[u8]) -> Result<Vec<u8>, MetadataError> {
    let mut data = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        if let wasmparser::Payload::DataSection(reader) = payload.map_err(MetadataError::NotWasm)? {
            for segment in reader {
                data.extend_from_slice(segment.map_err(MetadataError::NotWasm)?.data);
                data.push(SEPARATOR);
            }
        }
    }
    Ok(data)
}

fn contains(data: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && data.windows(needle.len()).any(|window| window == needle)
}

/// Whether `needle` appears somewhere no name of `longer` (each starting
/// with `needle`) starts. kwctl asks this of each longer name apart; the
/// two agree whenever an operation has at most one longer sibling, as every
/// operation policy-server knows today.
fn standalone(data: &[u8], needle: &[u8], longer: &[&str]) -> bool {
    if needle.is_empty() {
        return false;
    }
    data.windows(needle.len())
        .enumerate()
        .filter(|(_, window)| *window == needle)
        .any(|(at, _)| {
            let rest = data.get(at..).unwrap_or_default();
            !longer.iter().any(|name| rest.starts_with(name.as_bytes()))
        })
}

/// How a module's detected host capabilities differ from the ones its
/// metadata declares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapabilityMismatch {
    /// Detected capabilities no declared pattern covers: the module can call
    /// what policy-server would refuse, or what an administrator did not
    /// agree to. `olm-guard annotate` refuses these.
    pub undeclared: BTreeSet<String>,
    /// Declared patterns that cover no detected capability (`*` whenever
    /// every capability is declared, since that is never least privilege).
    /// kwctl warns about these, and so does `olm-guard annotate`.
    pub undetected: BTreeSet<String>,
}

impl CapabilityMismatch {
    /// Whether the scan found exactly what is declared.
    pub fn is_empty(&self) -> bool {
        self.undeclared.is_empty() && self.undetected.is_empty()
    }
}

impl Metadata {
    /// `detected` (from [`detect_host_capabilities`]) against
    /// `hostCapabilities`: `*`, `prefix/*` and exact paths as policy-server
    /// reads them, and no `hostCapabilities` at all as `*`.
    pub fn capability_mismatch(&self, detected: &BTreeSet<String>) -> CapabilityMismatch {
        let all = ["*".to_string()];
        let patterns = self.host_capabilities.as_deref().unwrap_or(&all);
        let covers = |pattern: &str, path: &str| match pattern.trim().strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => pattern.trim() == path,
        };
        CapabilityMismatch {
            undeclared: detected
                .iter()
                .filter(|path| !patterns.iter().any(|p| covers(p, path)))
                .cloned()
                .collect(),
            undetected: patterns
                .iter()
                .filter(|p| p.trim() == "*" || !detected.iter().any(|path| covers(p, path)))
                .map(|p| p.trim().to_string())
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests;
