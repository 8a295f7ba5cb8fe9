//! Kubewarden policy metadata (`metadata.yml`, and the `io.kubewarden.metadata`
//! custom section that `kwctl annotate` embeds), as far as the host uses it.

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

pub const METADATA_SECTION: &str = "io.kubewarden.metadata";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    #[serde(default)]
    pub protocol_version: Option<String>,
    pub rules: Vec<Rule>,
    pub mutating: bool,
    #[serde(default = "yes")]
    pub background_audit: bool,
    #[serde(default)]
    pub context_aware_resources: Vec<ContextAwareResource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_capabilities: Option<Vec<String>>,
    #[serde(default = "wapc")]
    pub execution_mode: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_kubewarden_version: Option<String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

fn yes() -> bool {
    true
}

fn wapc() -> String {
    "kubewarden-wapc".into()
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    pub operations: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextAwareResource {
    pub api_version: String,
    pub kind: String,
}

impl Metadata {
    pub fn from_yaml(text: &str) -> anyhow::Result<Metadata> {
        let metadata: Metadata =
            serde_yaml::from_str(text).context("metadata is not valid Kubewarden metadata")?;
        metadata.check()?;
        Ok(metadata)
    }

    /// The checks `kwctl annotate` makes that matter to a host.
    fn check(&self) -> anyhow::Result<()> {
        if self.rules.is_empty() {
            bail!("metadata has no rules");
        }
        for rule in &self.rules {
            for op in &rule.operations {
                if !["CREATE", "UPDATE", "DELETE", "CONNECT", "*"].contains(&op.as_str()) {
                    bail!(
                        "metadata rule operation {op:?} is not CREATE, UPDATE, DELETE, CONNECT or *"
                    );
                }
            }
            if rule.api_groups.is_empty()
                || rule.api_versions.is_empty()
                || rule.resources.is_empty()
                || rule.operations.is_empty()
            {
                bail!("metadata rules need apiGroups, apiVersions, resources and operations");
            }
        }
        if self.execution_mode != "kubewarden-wapc" {
            bail!(
                "executionMode {:?} is not supported by olm-guard (kubewarden-wapc only)",
                self.execution_mode
            );
        }
        Ok(())
    }

    /// The metadata embedded in a module, if any (first section wins, as in
    /// Kubewarden).
    pub fn from_module(wasm: &[u8]) -> anyhow::Result<Option<Metadata>> {
        match custom_section(wasm, METADATA_SECTION)? {
            Some(bytes) => Ok(Some(
                serde_json::from_slice(bytes).context("embedded metadata is not valid JSON")?,
            )),
            None => Ok(None),
        }
    }
}

/// The payload of the first custom section called `name`.
pub fn custom_section<'a>(wasm: &'a [u8], name: &str) -> anyhow::Result<Option<&'a [u8]>> {
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        if let wasmparser::Payload::CustomSection(reader) = payload.context("not a wasm module")?
            && reader.name() == name
        {
            return Ok(Some(reader.data()));
        }
    }
    Ok(None)
}

/// The module with every `name` custom section removed and one with
/// `payload` appended, as `kwctl annotate` does.
pub fn with_custom_section(wasm: &[u8], name: &str, payload: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut module = wasm_encoder::Module::new();
    for item in wasmparser::Parser::new(0).parse_all(wasm) {
        let item = item.context("not a wasm module")?;
        if let wasmparser::Payload::CustomSection(reader) = &item
            && reader.name() == name
        {
            continue;
        }
        if let Some((id, range)) = item.as_section() {
            module.section(&wasm_encoder::RawSection {
                id,
                data: &wasm[range],
            });
        }
    }
    module.section(&wasm_encoder::CustomSection {
        name: name.into(),
        data: payload.into(),
    });
    Ok(module.finish())
}
