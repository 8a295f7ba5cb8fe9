//! Kubewarden policy metadata (`metadata.yml`, and the `io.kubewarden.metadata`
//! custom section that `kwctl annotate` embeds), as far as a host uses it,
//! and the host capabilities a module's code can call, found as `kwctl
//! annotate` finds them ([`detect_host_capabilities`]).
//! The format is Kubewarden's `policy_metadata::Metadata`
//! (kubewarden/policy-evaluator, `src/policy_metadata.rs`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod check;
mod scan;
pub use check::REQUIRED_ANNOTATIONS;
pub use scan::{CapabilityMismatch, detect_host_capabilities};

/// The custom section `kwctl annotate` writes the metadata into, as JSON.
pub const METADATA_SECTION: &str = "io.kubewarden.metadata";

/// The annotation that carries the module README (`kwctl annotate -u`).
pub const USAGE_ANNOTATION: &str = annotation::USAGE;

/// The annotation keys Kubewarden's tooling reads
/// (kubewarden-controller `crates/policy-evaluator/src/constants.rs`).
pub mod annotation {
    /// The package name (`name` on Artifact Hub).
    pub const TITLE: &str = "io.kubewarden.policy.title";
    /// The module's semantic version.
    pub const VERSION: &str = "io.kubewarden.policy.version";
    /// What the policy does.
    pub const DESCRIPTION: &str = "io.kubewarden.policy.description";
    /// `Name <email>`, comma-separated.
    pub const AUTHOR: &str = "io.kubewarden.policy.author";
    /// The home page.
    pub const URL: &str = "io.kubewarden.policy.url";
    /// The source repository.
    pub const SOURCE: &str = "io.kubewarden.policy.source";
    /// SPDX license identifier.
    pub const LICENSE: &str = "io.kubewarden.policy.license";
    /// The OCI repository, without scheme or tag.
    pub const OCI_URL: &str = "io.kubewarden.policy.ociUrl";
    /// The module README (`kwctl annotate -u`).
    pub const USAGE: &str = "io.kubewarden.policy.usage";
    /// PolicyReport severity.
    pub const SEVERITY: &str = "io.kubewarden.policy.severity";
    /// PolicyReport category.
    pub const CATEGORY: &str = "io.kubewarden.policy.category";
    /// `"true"` hides the policy from the Rancher UI.
    pub const HIDDEN_UI: &str = "io.kubewarden.hidden-ui";
    /// Artifact Hub display name.
    pub const DISPLAY_NAME: &str = "io.artifacthub.displayName";
    /// Kinds the policy judges, comma-separated.
    pub const RESOURCES: &str = "io.artifacthub.resources";
    /// Search keywords, comma-separated.
    pub const KEYWORDS: &str = "io.artifacthub.keywords";
    /// The release tag the module's download link points at.
    pub const RELEASE_TAG: &str = "com.github.release.tag";
    /// The release date (RFC 3339), Artifact Hub's `createdAt` (OCI
    /// image-spec `annotations.md`).
    pub const CREATED: &str = "org.opencontainers.image.created";
    /// The tool (and version) that annotated the module.
    pub const ANNOTATOR: &str = "io.kubewarden.kwctl";
}

/// Why metadata could not be read, checked or written.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    /// metadata.yml is not YAML of the metadata's shape.
    #[error("metadata is not valid Kubewarden metadata")]
    Yaml(#[source] serde_yaml_ng::Error),
    /// The embedded section is not JSON of the metadata's shape.
    #[error("embedded metadata is not valid JSON")]
    Json(#[source] serde_json::Error),
    /// The metadata parses but breaks a rule kwctl enforces; the text
    /// names the field and the fix.
    #[error("{0}")]
    Invalid(String),
    /// The bytes are not a WebAssembly module.
    #[error("not a wasm module")]
    NotWasm(#[source] wasmparser::BinaryReaderError),
}

/// A policy's metadata: what it admits, what it may read, how it runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// The waPC protocol the module speaks (`v1`), asked of the module by
    /// `annotate`.
    #[serde(default)]
    pub protocol_version: Option<String>,
    /// The admission requests the policy wants (as a webhook's rules).
    pub rules: Vec<Rule>,
    /// Whether the policy may answer with a mutated object.
    pub mutating: bool,
    /// Whether Kubewarden's audit scanner evaluates it on stored objects.
    #[serde(default = "yes")]
    pub background_audit: bool,
    /// The kinds the policy may read through host capabilities.
    #[serde(default)]
    pub context_aware_resources: Vec<ContextAwareResource>,
    /// The host capabilities it may call; `None` means all (kwctl's `*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_capabilities: Option<Vec<String>>,
    /// `kubewarden-wapc` for every olm-guard module.
    #[serde(default = "wapc")]
    pub execution_mode: String,
    /// `kubernetes` (the default) or another policy type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_type: Option<String>,
    /// The oldest Kubewarden release that runs the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_kubewarden_version: Option<String>,
    /// Free-form annotations: title, description, Artifact Hub fields, usage.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

fn yes() -> bool {
    true
}

fn wapc() -> String {
    "kubewarden-wapc".into()
}

/// One admission rule: the groups, versions, resources and operations a
/// policy is sent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    /// API groups (`""` is core, `*` all).
    pub api_groups: Vec<String>,
    /// API versions.
    pub api_versions: Vec<String>,
    /// Resources, optionally with `/subresource`.
    pub resources: Vec<String>,
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT` or `*`.
    pub operations: Vec<String>,
}

/// A kind the policy may read from the cluster.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextAwareResource {
    /// `group/version`, or `v1` for the core group.
    pub api_version: String,
    /// The kind, e.g. `Namespace`.
    pub kind: String,
}

/// What an admission request is about, as webhook rules match it: the
/// request's `resource` (group, version, resource), `subResource` and
/// `operation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTarget<'a> {
    /// The API group (`""` for core).
    pub group: &'a str,
    /// The API version.
    pub version: &'a str,
    /// The resource (plural), e.g. `catalogsources`.
    pub resource: &'a str,
    /// The subresource, `""` for the resource itself.
    pub subresource: &'a str,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: &'a str,
}

impl Rule {
    /// Whether the API server sends a request for `target` to a webhook with
    /// this rule, as `k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules/rules.go`
    /// (`Matcher.Matches`) decides: `*` matches any group, version or
    /// operation; a resource `*` matches every resource but no subresource,
    /// `pods/*` every subresource of pods, `*/*` everything.
    pub fn matches(&self, target: &RequestTarget<'_>) -> bool {
        let any = |list: &[String], value: &str| list.iter().any(|v| v == "*" || v == value);
        let resource = self.resources.iter().any(|entry| {
            let (resource, sub) = entry.split_once('/').unwrap_or((entry, ""));
            (resource == "*" || resource == target.resource)
                && (sub == "*" || sub == target.subresource)
        });
        any(&self.operations, target.operation)
            && any(&self.api_groups, target.group)
            && any(&self.api_versions, target.version)
            && resource
    }
}

impl Metadata {
    /// Whether policy-server would send a request for `target` to this
    /// policy (some rule matches it).
    pub fn covers(&self, target: &RequestTarget<'_>) -> bool {
        self.rules.iter().any(|rule| rule.matches(target))
    }

    /// Parses and checks `metadata.yml` ([`Metadata::check`]): a misspelt
    /// or mistyped top-level field is refused naming it, because kwctl would
    /// silently ignore it (a misspelt `hostCapabilities` grants everything).
    pub fn from_yaml(text: &str) -> Result<Metadata, MetadataError> {
        let value: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(text).map_err(MetadataError::Yaml)?;
        check::fields(&value)?;
        let metadata: Metadata = serde_yaml_ng::from_value(value).map_err(MetadataError::Yaml)?;
        metadata.check()?;
        Ok(metadata)
    }

    /// What kwctl and policy-server validate before they run a policy
    /// (kubewarden-controller `crates/policy-evaluator/src/policy_metadata.rs`,
    /// `Rule`/`Metadata` validators, and `host_capabilities.rs`,
    /// `HostCapabilities::new`), plus the form of every annotation that is
    /// present. Each error names the field and the fix.
    pub fn check(&self) -> Result<(), MetadataError> {
        check::metadata(self)
    }

    /// [`Metadata::check`], and every annotation Artifact Hub
    /// (`kwctl scaffold artifacthub`) and OCI publishing need is present:
    /// what `olm-guard annotate` requires of a module it ships.
    pub fn check_publishable(&self) -> Result<(), MetadataError> {
        self.check()?;
        check::publishable(self)
    }

    /// The metadata embedded in a module, if any (first section wins, as in
    /// Kubewarden).
    pub fn from_module(wasm: &[u8]) -> Result<Option<Metadata>, MetadataError> {
        match custom_section(wasm, METADATA_SECTION)? {
            Some(bytes) => Ok(Some(
                serde_json::from_slice(bytes).map_err(MetadataError::Json)?,
            )),
            None => Ok(None),
        }
    }

    /// `wasm` with this metadata embedded, as `kwctl annotate` writes it:
    /// `usage` (the module README) becomes the usage annotation, `annotator`
    /// is recorded as `io.kubewarden.kwctl`, and any earlier metadata section
    /// is replaced. `protocol_version` should be what the module answered.
    pub fn annotate(
        mut self,
        wasm: &[u8],
        protocol_version: String,
        usage: Option<String>,
        annotator: &str,
    ) -> Result<Vec<u8>, MetadataError> {
        self.protocol_version = Some(protocol_version);
        if let Some(usage) = usage {
            self.annotations.insert(USAGE_ANNOTATION.into(), usage);
        }
        self.annotations
            .insert(annotation::ANNOTATOR.into(), annotator.to_string());
        let section = serde_json::to_vec(&self).map_err(MetadataError::Json)?;
        with_custom_section(wasm, METADATA_SECTION, &section)
    }
}

/// The payload of the first custom section called `name`.
pub fn custom_section<'a>(wasm: &'a [u8], name: &str) -> Result<Option<&'a [u8]>, MetadataError> {
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        if let wasmparser::Payload::CustomSection(reader) =
            payload.map_err(MetadataError::NotWasm)?
            && reader.name() == name
        {
            return Ok(Some(reader.data()));
        }
    }
    Ok(None)
}

/// The module with every `name` custom section removed and one with
/// `payload` appended, as `kwctl annotate` does.
pub fn with_custom_section(
    wasm: &[u8],
    name: &str,
    payload: &[u8],
) -> Result<Vec<u8>, MetadataError> {
    let mut module = wasm_encoder::Module::new();
    for item in wasmparser::Parser::new(0).parse_all(wasm) {
        let item = item.map_err(MetadataError::NotWasm)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(groups: &[&str], resources: &[&str], operations: &[&str]) -> Rule {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        Rule {
            api_groups: strings(groups),
            api_versions: strings(&["*"]),
            resources: strings(resources),
            operations: strings(operations),
        }
    }

    fn target<'a>(
        resource: &'a str,
        subresource: &'a str,
        operation: &'a str,
    ) -> RequestTarget<'a> {
        RequestTarget {
            group: "operators.coreos.com",
            version: "v1alpha1",
            resource,
            subresource,
            operation,
        }
    }

    #[test]
    fn rules_match_as_the_api_servers_webhook_matcher() {
        let cs = rule(
            &["operators.coreos.com"],
            &["catalogsources"],
            &["CREATE", "UPDATE"],
        );
        assert!(cs.matches(&target("catalogsources", "", "CREATE")));
        assert!(!cs.matches(&target("catalogsources", "", "DELETE")));
        assert!(!cs.matches(&target("catalogsources", "status", "UPDATE")));
        assert!(!cs.matches(&target("subscriptions", "", "CREATE")));
        let all = rule(&["*"], &["*"], &["*"]);
        assert!(all.matches(&target("anything", "", "DELETE")));
        // `*` is every resource, not their subresources; `*/*` is both.
        assert!(!all.matches(&target("anything", "status", "UPDATE")));
        assert!(rule(&["*"], &["*/*"], &["*"]).matches(&target("x", "status", "UPDATE")));
        assert!(rule(&["*"], &["catalogsources/*"], &["*"]).matches(&target(
            "catalogsources",
            "status",
            "UPDATE"
        )));
        assert!(!rule(&[""], &["*"], &["*"]).matches(&target("x", "", "CREATE")));
    }
}
