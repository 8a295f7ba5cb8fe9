//! Kubewarden manifests for a module, built from its embedded metadata: the
//! `ClusterAdmissionPolicy`/`AdmissionPolicy` resources `kwctl scaffold
//! manifest` writes (kubewarden/kubewarden-controller,
//! `crates/kwctl/src/scaffold/manifest.rs` and `kubewarden_crds.rs`), and
//! the entries of a bare policy-server's `policies.yml`
//! (`crates/policy-server/src/config.rs`, `policies.yml.example`).
//!
//! The resources follow the CRDs of `policies.kubewarden.io/v1`
//! (kubewarden/kubewarden-controller, `api/policies/v1/*_types.go`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use olm_guard_runtime::metadata::{ContextAwareResource, Metadata, Rule};

/// The annotation naming the OCI repository a module is published to.
pub const OCI_URL_ANNOTATION: &str = "io.kubewarden.policy.ociUrl";
/// The annotation carrying the module's version (semver, without `v`).
pub const VERSION_ANNOTATION: &str = "io.kubewarden.policy.version";
/// The annotation whose value names the policy resource.
pub const TITLE_ANNOTATION: &str = "io.kubewarden.policy.title";
/// Copied into the resource's annotations (audit PolicyReports read it).
pub const SEVERITY_ANNOTATION: &str = "io.kubewarden.policy.severity";
/// Copied into the resource's annotations (audit PolicyReports read it).
pub const CATEGORY_ANNOTATION: &str = "io.kubewarden.policy.category";

/// Why a manifest could not be built; each names the field and the fix.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The kind is neither `ClusterAdmissionPolicy` nor `AdmissionPolicy`.
    #[error("unknown manifest type {0:?}: use ClusterAdmissionPolicy or AdmissionPolicy")]
    UnknownKind(String),
    /// An annotation the manifest needs is missing from the metadata.
    #[error(
        "metadata has no {0} annotation: add it to the module's metadata.yml and annotate the module again"
    )]
    MissingAnnotation(&'static str),
    /// The policy's name is not an RFC 1123 subdomain.
    #[error(
        "invalid policy name {0:?}: use lowercase letters, digits, '-' or '.', starting and ending with a letter or digit (RFC 1123), at most 253 characters"
    )]
    InvalidName(String),
    /// The namespace is not an RFC 1123 label.
    #[error(
        "invalid namespace {0:?}: use lowercase letters, digits or '-', starting and ending with a letter or digit (RFC 1123 label), at most 63 characters"
    )]
    InvalidNamespace(String),
    /// A namespace was given for a cluster-wide resource.
    #[error(
        "a ClusterAdmissionPolicy has no namespace: drop --namespace or use --type AdmissionPolicy"
    )]
    NamespaceOnClusterPolicy,
    /// `policies.yml` must grant host capabilities explicitly, and the
    /// metadata declares none.
    #[error(
        "metadata of {0} has no hostCapabilities: list the capabilities the module calls in its metadata.yml (an empty list if none), since policies.yml must grant them explicitly"
    )]
    UndeclaredCapabilities(String),
    /// The resource could not be written as YAML.
    #[error("cannot write the manifest as YAML")]
    Yaml(#[source] serde_yaml_ng::Error),
}

/// The two policy resources `kwctl scaffold manifest --type` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestKind {
    /// Cluster-wide; may be granted `contextAwareResources`.
    ClusterAdmissionPolicy,
    /// Namespaced; never context-aware (its spec has no
    /// `contextAwareResources`).
    AdmissionPolicy,
}

impl ManifestKind {
    /// The resource kind, as in the CRD.
    pub fn as_str(self) -> &'static str {
        match self {
            ManifestKind::ClusterAdmissionPolicy => "ClusterAdmissionPolicy",
            ManifestKind::AdmissionPolicy => "AdmissionPolicy",
        }
    }
}

impl fmt::Display for ManifestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ManifestKind {
    type Err = ManifestError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "ClusterAdmissionPolicy" => Ok(ManifestKind::ClusterAdmissionPolicy),
            "AdmissionPolicy" => Ok(ManifestKind::AdmissionPolicy),
            other => Err(ManifestError::UnknownKind(other.to_string())),
        }
    }
}

/// What a manifest is built from besides the metadata.
#[derive(Debug, Clone)]
pub struct ManifestOptions {
    /// Which resource.
    pub kind: ManifestKind,
    /// `metadata.name`; the title annotation when `None` (as kwctl's
    /// `--title`).
    pub name: Option<String>,
    /// `metadata.namespace` of an AdmissionPolicy.
    pub namespace: Option<String>,
    /// Grant the metadata's `contextAwareResources` (kwctl's
    /// `--allow-context-aware`); without it they are left out, with a
    /// warning, as kwctl does.
    pub allow_context_aware: bool,
    /// `spec.module`; [`module_reference`] when `None`.
    pub module: Option<String>,
    /// `spec.settings`.
    pub settings: Map<String, Value>,
}

/// A policy resource, field for field as kwctl writes it: `backgroundAudit`
/// only when false (kubewarden/kubewarden-controller issue 395) and
/// `contextAwareResources` only when granted; and, where they are granted,
/// `timeoutEvalSeconds` ([`FIRST_LIST_SECONDS`]), which kwctl leaves out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyManifest {
    /// `policies.kubewarden.io/v1`.
    pub api_version: String,
    /// `ClusterAdmissionPolicy` or `AdmissionPolicy`.
    pub kind: String,
    /// Name, namespace and the severity/category annotations.
    pub metadata: ManifestMetadata,
    /// The policy.
    pub spec: PolicySpec,
}

/// The resource's `metadata`, in the field order of Kubernetes' ObjectMeta.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestMetadata {
    /// Severity and category, when the module declares them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// The policy's name.
    pub name: String,
    /// The namespace of an AdmissionPolicy, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// The resource's `spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicySpec {
    /// Where policy-server fetches the module from.
    pub module: String,
    /// The module's settings.
    pub settings: Map<String, Value>,
    /// The admission requests the policy is sent: the metadata's rules.
    pub rules: Vec<Rule>,
    /// Whether the policy may patch objects.
    pub mutating: bool,
    /// Whether the audit scanner evaluates the policy (default true).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub background_audit: bool,
    /// The kinds the policy may read (ClusterAdmissionPolicy only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_aware_resources: Vec<ContextAwareResource>,
    /// How long policy-server lets one evaluation take, when not its
    /// `--policy-timeout` (2 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_eval_seconds: Option<u64>,
}

/// The evaluation time a policy that reads the cluster is given. policy-server
/// opens a watch-backed reflector on the first request that lists a kind,
/// inside that request's evaluation, and waits for its first list: on a
/// cluster of 10,000 ClusterObjectSets that list took about 1 s of an idle
/// kube-apiserver's time and over 2 s of a busy one's, so under
/// policy-server's default of 2 s the first write after it starts was
/// refused ("Policy execution interrupted", docs/performance.md, "The
/// webhook path at scale"). 5 s is under kube-apiserver's 10 s for the
/// webhook (`timeoutSeconds`), so a slower list still ends in
/// policy-server's own answer.
pub const FIRST_LIST_SECONDS: u64 = 5;

fn yes() -> bool {
    true
}

fn is_true(value: &bool) -> bool {
    *value
}

/// A scaffolded manifest and what its author should know about it.
#[derive(Debug, Clone)]
pub struct Scaffolded {
    /// The resource.
    pub manifest: PolicyManifest,
    /// kwctl's warnings (context-aware resources granted or withheld), one
    /// line each.
    pub warnings: Vec<String>,
}

impl PolicyManifest {
    /// The resource as YAML, as `kwctl scaffold manifest` prints it.
    pub fn to_yaml(&self) -> Result<String, ManifestError> {
        kubectl_yaml(self)
    }
}

/// `registry://<ociUrl>:v<version>`, from the metadata's annotations: the
/// image `kwctl scaffold artifacthub` publishes for the module
/// (`crates/policy-evaluator/src/policy_artifacthub.rs`).
pub fn module_reference(metadata: &Metadata) -> Result<String, ManifestError> {
    let oci_url = annotation(metadata, OCI_URL_ANNOTATION)?;
    let version = annotation(metadata, VERSION_ANNOTATION)?;
    let repository = oci_url.strip_prefix("registry://").unwrap_or(oci_url);
    Ok(format!("registry://{repository}:v{version}"))
}

fn annotation<'a>(metadata: &'a Metadata, key: &'static str) -> Result<&'a str, ManifestError> {
    metadata
        .annotations
        .get(key)
        .map(|value| value.trim())
        .filter(|value| !value.is_empty())
        .ok_or(ManifestError::MissingAnnotation(key))
}

/// The policy's name: `name` if given, else the title annotation.
fn policy_name(metadata: &Metadata, name: Option<&str>) -> Result<String, ManifestError> {
    let name = match name {
        Some(name) => name,
        None => annotation(metadata, TITLE_ANNOTATION)?,
    };
    if is_dns_subdomain(name) {
        Ok(name.to_string())
    } else {
        Err(ManifestError::InvalidName(name.to_string()))
    }
}

/// A Kubernetes object name (RFC 1123 subdomain), as kwctl's
/// `validate_policy_title` checks it.
fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_dns_label)
}

/// An RFC 1123 label: a namespace name.
fn is_dns_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
        && bytes.iter().all(|b| alnum(b) || *b == b'-')
}

/// The resource `kwctl scaffold manifest` writes for a module with
/// `metadata`.
pub fn scaffold(
    metadata: &Metadata,
    options: &ManifestOptions,
) -> Result<Scaffolded, ManifestError> {
    let name = policy_name(metadata, options.name.as_deref())?;
    let module = match &options.module {
        Some(module) => module.clone(),
        None => module_reference(metadata)?,
    };
    if let Some(namespace) = &options.namespace {
        if options.kind == ManifestKind::ClusterAdmissionPolicy {
            return Err(ManifestError::NamespaceOnClusterPolicy);
        }
        if !is_dns_label(namespace) {
            return Err(ManifestError::InvalidNamespace(namespace.clone()));
        }
    }
    let annotations: BTreeMap<String, String> = [SEVERITY_ANNOTATION, CATEGORY_ANNOTATION]
        .into_iter()
        .filter_map(|key| {
            metadata
                .annotations
                .get(key)
                .map(|value| (key.to_string(), value.clone()))
        })
        .collect();
    // kwctl keeps them as a set: sorted, without duplicates.
    let declared: Vec<ContextAwareResource> = metadata
        .context_aware_resources
        .iter()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut warnings = Vec::new();
    let context_aware_resources = match options.kind {
        ManifestKind::ClusterAdmissionPolicy if declared.is_empty() => Vec::new(),
        ManifestKind::ClusterAdmissionPolicy if options.allow_context_aware => {
            warnings.push(
                "Policy has been granted access to the Kubernetes resources mentioned by its \
                 metadata: carefully review the contents of the `contextAwareResources` \
                 attribute for abuses."
                    .to_string(),
            );
            declared
        }
        ManifestKind::ClusterAdmissionPolicy => {
            warnings.push(format!(
                "Policy requires access to Kubernetes resources at evaluation time ({}); for \
                 safety reasons the `contextAwareResources` attribute has been left empty, so \
                 its lookups will be denied: review them and pass --allow-context-aware.",
                resource_list(&declared)
            ));
            Vec::new()
        }
        ManifestKind::AdmissionPolicy => {
            if !declared.is_empty() {
                warnings.push(format!(
                    "An AdmissionPolicy cannot be context aware, and this policy reads {}: its \
                     lookups will be denied; use --type ClusterAdmissionPolicy.",
                    resource_list(&declared)
                ));
            }
            Vec::new()
        }
    };
    let manifest = PolicyManifest {
        api_version: "policies.kubewarden.io/v1".into(),
        kind: options.kind.as_str().into(),
        metadata: ManifestMetadata {
            annotations: (!annotations.is_empty()).then_some(annotations),
            name,
            namespace: options.namespace.clone(),
        },
        spec: PolicySpec {
            module,
            settings: options.settings.clone(),
            rules: metadata.rules.clone(),
            mutating: metadata.mutating,
            background_audit: metadata.background_audit,
            timeout_eval_seconds: (!context_aware_resources.is_empty())
                .then_some(FIRST_LIST_SECONDS),
            context_aware_resources,
        },
    };
    Ok(Scaffolded { manifest, warnings })
}

fn resource_list(resources: &[ContextAwareResource]) -> String {
    resources
        .iter()
        .map(|r| format!("{}/{}", r.api_version, r.kind))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One policy of a bare policy-server's `policies.yml`
/// (`crates/policy-server/src/config.rs`, the single-policy entry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyServerEntry {
    /// Where policy-server fetches the module from.
    pub module: String,
    /// `protect` or `monitor`.
    pub policy_mode: String,
    /// Must be true for a mutating policy, or its patches become denials.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allowed_to_mutate: bool,
    /// The module's settings.
    pub settings: Map<String, Value>,
    /// The kinds the policy may read.
    #[serde(default)]
    pub context_aware_resources: Vec<ContextAwareResource>,
    /// The host capabilities the policy may call; an empty list denies
    /// every call except logging.
    #[serde(default)]
    pub host_capabilities: Vec<String>,
    /// [`FIRST_LIST_SECONDS`] for a policy that reads the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_eval_seconds: Option<u64>,
}

/// The `policies.yml` entry for a module: its metadata's
/// `contextAwareResources` and `hostCapabilities` granted explicitly
/// (a bare policy-server grants nothing by default), `allowedToMutate` when
/// it mutates.
pub fn policy_server_entry(
    metadata: &Metadata,
    module: String,
    settings: Map<String, Value>,
) -> Result<PolicyServerEntry, ManifestError> {
    let name = policy_name(metadata, None)?;
    let host_capabilities = metadata
        .host_capabilities
        .clone()
        .ok_or(ManifestError::UndeclaredCapabilities(name))?;
    Ok(PolicyServerEntry {
        module,
        policy_mode: "protect".into(),
        allowed_to_mutate: metadata.mutating,
        settings,
        context_aware_resources: metadata
            .context_aware_resources
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
        host_capabilities: host_capabilities
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
        timeout_eval_seconds: (!metadata.context_aware_resources.is_empty())
            .then_some(FIRST_LIST_SECONDS),
    })
}

/// `policies.yml` for the modules with `metadata`, keyed by policy name
/// (the title annotation), each entry built by [`policy_server_entry`].
pub fn policies_yml(
    entries: &BTreeMap<String, PolicyServerEntry>,
) -> Result<String, ManifestError> {
    kubectl_yaml(entries)
}

/// `value` as YAML that kubectl and policy-server read with the same types:
/// serde_yaml_ng writes YAML 1.2, where `yes`, `on` or `1_000` are plain
/// strings, but kubectl reads YAML through sigs.k8s.io/yaml's fork of
/// go-yaml v2, a YAML 1.1 reader (kubernetes-sigs/yaml, `goyaml.v2/resolve.go`,
/// `resolve`), to which they are a boolean and a number. Every string a
/// YAML 1.1 reader would take for something else ([`yaml11_reads_otherwise`])
/// is written single-quoted. serde_yaml_ng has no switch for it, so such a
/// string is serialised as a placeholder word, which it writes plain, and
/// the placeholder is then replaced by the quoted string.
fn kubectl_yaml(value: &impl Serialize) -> Result<String, ManifestError> {
    let mut value = serde_yaml_ng::to_value(value).map_err(ManifestError::Yaml)?;
    let plain = serde_yaml_ng::to_string(&value).map_err(ManifestError::Yaml)?;
    // A prefix the text does not hold, so that every occurrence of a
    // placeholder is one this function wrote.
    let mut prefix = String::from("olmguardquoted");
    while plain.contains(&prefix) {
        prefix.push('x');
    }
    let mut quoted = Vec::new();
    mark_ambiguous(&mut value, &prefix, &mut quoted);
    if quoted.is_empty() {
        return Ok(plain);
    }
    let mut text = serde_yaml_ng::to_string(&value).map_err(ManifestError::Yaml)?;
    // Longest placeholder first: `…10` before `…1`.
    for (index, original) in quoted.iter().enumerate().rev() {
        let placeholder = format!("{prefix}{index}z");
        text = text.replace(&placeholder, &format!("'{}'", original.replace('\'', "''")));
    }
    Ok(text)
}

/// Replaces every string of `value` (keys included) that
/// [`yaml11_reads_otherwise`] by `<prefix><n>z`, `n` its index in `quoted`.
fn mark_ambiguous(value: &mut serde_yaml_ng::Value, prefix: &str, quoted: &mut Vec<String>) {
    use serde_yaml_ng::Value as Yaml;
    let mark = |text: &mut String, quoted: &mut Vec<String>| {
        if yaml11_reads_otherwise(text) {
            let placeholder = format!("{prefix}{}z", quoted.len());
            quoted.push(std::mem::replace(text, placeholder));
        }
    };
    match value {
        Yaml::String(text) => mark(text, quoted),
        Yaml::Sequence(items) => {
            for item in items {
                mark_ambiguous(item, prefix, quoted);
            }
        }
        Yaml::Mapping(mapping) => {
            let entries = std::mem::take(mapping);
            for (mut key, mut item) in entries {
                if let Yaml::String(text) = &mut key {
                    mark(text, quoted);
                }
                mark_ambiguous(&mut item, prefix, quoted);
                mapping.insert(key, item);
            }
        }
        Yaml::Tagged(tagged) => mark_ambiguous(&mut tagged.value, prefix, quoted),
        Yaml::Null | Yaml::Bool(_) | Yaml::Number(_) => {}
    }
}

/// Whether a YAML 1.1 reader (go-yaml v2's `resolve`) could read the plain
/// scalar `text` as something other than a string: its booleans (`y`, `yes`,
/// `on`, `off`, ... in three cases), nulls, the merge key, and anything that
/// starts like a number, a float (`.5`, `.inf`), a timestamp or a
/// sexagesimal number (`1:20`). The test errs on the side of quoting:
/// a quoted string is a string to every reader. Text over several lines
/// is left to serde_yaml_ng, which writes it as a literal block.
fn yaml11_reads_otherwise(text: &str) -> bool {
    const WORDS: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false",
        "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "~", "null", "Null", "NULL", "<<",
        "=",
    ];
    if text.contains(['\n', '\r']) {
        return false;
    }
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    WORDS.contains(&text)
        || unsigned.starts_with(|c: char| c.is_ascii_digit())
        || unsigned.starts_with('.')
}

/// The policy name [`policy_server_entry`] and [`scaffold`] use by default.
pub fn default_name(metadata: &Metadata) -> Result<String, ManifestError> {
    policy_name(metadata, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_a_yaml_1_1_reader_takes_for_booleans_or_numbers_are_quoted() {
        let settings: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "migrateLegacy": "yes", "y": "on", "count": "1_000", "when": "2001-12-14",
            "plain": "registry", "flag": true, "number": 3, "list": ["off", "ok"],
        }))
        .unwrap();
        let text = kubectl_yaml(&settings).unwrap();
        for line in [
            "migrateLegacy: 'yes'",
            "'y': 'on'",
            "count: '1_000'",
            "when: '2001-12-14'",
            "plain: registry",
            "flag: true",
            "number: 3",
            "- 'off'",
            "- ok",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
        }
        // The same values come back.
        let back: Map<String, Value> = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(back, settings);
    }

    fn metadata() -> Metadata {
        Metadata::from_yaml(
            r#"
rules:
  - apiGroups: [""]
    apiVersions: [v1]
    resources: [namespaces]
    operations: [CREATE]
mutating: true
backgroundAudit: false
contextAwareResources:
  - {apiVersion: v1, kind: Pod}
  - {apiVersion: v1, kind: Namespace}
hostCapabilities: [kubernetes/list_resources_all]
annotations:
  io.kubewarden.policy.title: my-policy
  io.kubewarden.policy.version: 1.2.3
  io.kubewarden.policy.ociUrl: ghcr.io/example/my-policy
  io.kubewarden.policy.severity: low
"#,
        )
        .unwrap()
    }

    fn options(kind: ManifestKind) -> ManifestOptions {
        ManifestOptions {
            kind,
            name: None,
            namespace: None,
            allow_context_aware: true,
            module: None,
            settings: Map::new(),
        }
    }

    #[test]
    fn cluster_policy_carries_what_kwctl_writes() {
        let done = scaffold(&metadata(), &options(ManifestKind::ClusterAdmissionPolicy)).unwrap();
        let m = done.manifest;
        assert_eq!(m.metadata.name, "my-policy");
        assert_eq!(m.spec.module, "registry://ghcr.io/example/my-policy:v1.2.3");
        assert!(m.spec.mutating);
        assert!(!m.spec.background_audit);
        // Sorted as kwctl's BTreeSet.
        assert_eq!(m.spec.context_aware_resources[0].kind, "Namespace");
        let yaml = m.to_yaml().unwrap();
        assert!(yaml.contains("backgroundAudit: false"), "{yaml}");
        assert!(
            yaml.contains("io.kubewarden.policy.severity: low"),
            "{yaml}"
        );
        // Time for a reflector's first list, where the policy reads the
        // cluster.
        assert_eq!(m.spec.timeout_eval_seconds, Some(FIRST_LIST_SECONDS));
        assert!(yaml.contains("timeoutEvalSeconds: 5"), "{yaml}");
        assert_eq!(done.warnings.len(), 1);
    }

    #[test]
    fn context_aware_resources_are_withheld_without_the_flag() {
        let mut o = options(ManifestKind::ClusterAdmissionPolicy);
        o.allow_context_aware = false;
        let done = scaffold(&metadata(), &o).unwrap();
        assert!(done.manifest.spec.context_aware_resources.is_empty());
        assert_eq!(done.manifest.spec.timeout_eval_seconds, None);
        assert!(
            done.warnings[0].contains("v1/Namespace, v1/Pod"),
            "{:?}",
            done.warnings
        );
        assert!(
            !done
                .manifest
                .to_yaml()
                .unwrap()
                .contains("contextAwareResources")
        );
    }

    #[test]
    fn background_audit_true_is_left_out() {
        let mut md = metadata();
        md.background_audit = true;
        let yaml = scaffold(&md, &options(ManifestKind::AdmissionPolicy))
            .unwrap()
            .manifest
            .to_yaml()
            .unwrap();
        assert!(!yaml.contains("backgroundAudit"), "{yaml}");
    }

    #[test]
    fn names_and_namespaces_are_checked() {
        let mut o = options(ManifestKind::AdmissionPolicy);
        o.name = Some("Bad_Name".into());
        assert!(matches!(
            scaffold(&metadata(), &o),
            Err(ManifestError::InvalidName(_))
        ));
        o.name = None;
        o.namespace = Some("-x".into());
        assert!(matches!(
            scaffold(&metadata(), &o),
            Err(ManifestError::InvalidNamespace(_))
        ));
        let mut o = options(ManifestKind::ClusterAdmissionPolicy);
        o.namespace = Some("default".into());
        assert!(matches!(
            scaffold(&metadata(), &o),
            Err(ManifestError::NamespaceOnClusterPolicy)
        ));
    }

    #[test]
    fn missing_oci_url_is_named() {
        let mut md = metadata();
        md.annotations.remove(OCI_URL_ANNOTATION);
        let err = scaffold(&md, &options(ManifestKind::ClusterAdmissionPolicy)).unwrap_err();
        assert!(err.to_string().contains(OCI_URL_ANNOTATION), "{err}");
    }

    #[test]
    fn policy_server_entry_grants_exactly_the_metadata() {
        let entry = policy_server_entry(&metadata(), "file:///p.wasm".into(), Map::new()).unwrap();
        assert!(entry.allowed_to_mutate);
        assert_eq!(entry.host_capabilities, ["kubernetes/list_resources_all"]);
        assert_eq!(entry.context_aware_resources.len(), 2);
        let mut md = metadata();
        md.host_capabilities = None;
        assert!(matches!(
            policy_server_entry(&md, "x".into(), Map::new()),
            Err(ManifestError::UndeclaredCapabilities(_))
        ));
    }
}
