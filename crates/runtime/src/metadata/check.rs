//! The checks behind [`Metadata::check`] and [`Metadata::check_publishable`].
//!
//! Rules and host-capability patterns are refused exactly where Kubewarden
//! refuses them (kubewarden-controller `crates/policy-evaluator/src/policy_metadata.rs`:
//! `validate_asterisk_usage`, `validate_resources`, itself Kubernetes'
//! `pkg/apis/admissionregistration/validation/validation.go`
//! `validateResources`; `crates/policy-evaluator/src/host_capabilities.rs`:
//! `HostCapabilities::new`, `validate_against_tree`). The annotation checks
//! are what `kwctl scaffold artifacthub` needs to write a package
//! (`crates/policy-evaluator/src/policy_artifacthub.rs`) and what an OCI
//! reference allows. Every message names the field and the fix.

use std::collections::BTreeSet;

use super::{Metadata, MetadataError, annotation};

/// `Err(MetadataError::Invalid(..))` from a format string.
macro_rules! invalid {
    ($($arg:tt)*) => { return Err(MetadataError::Invalid(format!($($arg)*))) };
}

/// The annotations `olm-guard annotate` requires, each with what to write.
pub const REQUIRED_ANNOTATIONS: &[(&str, &str)] = &[
    (annotation::TITLE, "the package name, e.g. catalog-union"),
    (
        annotation::VERSION,
        "the module's semantic version, e.g. 0.1.0",
    ),
    (
        annotation::DESCRIPTION,
        "one paragraph on what the policy stops",
    ),
    (
        annotation::AUTHOR,
        "Name <email>, comma-separated for several",
    ),
    (
        annotation::URL,
        "the project home page, e.g. https://github.com/org/repo",
    ),
    (
        annotation::SOURCE,
        "the source repository, e.g. https://github.com/org/repo",
    ),
    (annotation::LICENSE, "an SPDX identifier, e.g. Apache-2.0"),
    (
        annotation::OCI_URL,
        "the repository the module is pushed to, without scheme or tag, e.g. ghcr.io/org/policies/name",
    ),
    (
        annotation::SEVERITY,
        "one of low, medium, high, critical, info",
    ),
    (annotation::CATEGORY, "the PolicyReport category, e.g. RBAC"),
    (
        annotation::DISPLAY_NAME,
        "the name Artifact Hub shows, e.g. CatalogSource union",
    ),
    (
        annotation::RESOURCES,
        "the kinds the policy judges, comma-separated, e.g. CatalogSource",
    ),
    (
        annotation::KEYWORDS,
        "comma-separated search words, e.g. olm, rbac",
    ),
    (
        annotation::CREATED,
        "the release date (RFC 3339), Artifact Hub's createdAt, e.g. 2026-11-23T00:00:00Z",
    ),
];

/// Top-level fields of `metadata.yml` that Kubewarden reads.
const FIELDS: &[&str] = &[
    "rules",
    "mutating",
    "backgroundAudit",
    "contextAwareResources",
    "hostCapabilities",
    "executionMode",
    "policyType",
    "minimumKubewardenVersion",
    "annotations",
    "protocolVersion",
];

const OPERATIONS: &[&str] = &["CREATE", "UPDATE", "DELETE", "CONNECT", "*"];

const EXECUTION_MODES: &[&str] = &["kubewarden-wapc", "wasi", "opa", "gatekeeper"];

/// PolicyReport result severities (wg-policy `PolicyReport` CRD), which the
/// audit scanner copies from this annotation.
const SEVERITIES: &[&str] = &["low", "medium", "high", "critical", "info"];

/// Every host capability policy-server knows (`host_capabilities.rs`,
/// `CAPABILITY_TREE`), as full paths.
pub(super) const CAPABILITIES: &[&str] = &[
    "oci/v1/verify",
    "oci/v1/manifest_digest",
    "oci/v1/oci_manifest",
    "oci/v1/oci_manifest_config",
    "oci/v2/verify",
    "net/v1/dns_lookup_host",
    "crypto/v1/is_certificate_trusted",
    "kubernetes/list_resources_by_namespace",
    "kubernetes/list_resources_all",
    "kubernetes/get_resource",
    "kubernetes/can_i",
];

/// The shape of the YAML before it is typed: unknown or mistyped fields.
pub(super) fn fields(value: &serde_yaml_ng::Value) -> Result<(), MetadataError> {
    use serde_yaml_ng::Value;
    let Value::Mapping(map) = value else {
        invalid!(
            "metadata.yml is not a mapping of fields; start from rules:, mutating: and annotations:"
        );
    };
    for key in map.keys() {
        let Some(key) = key.as_str() else {
            invalid!("metadata.yml: field names must be strings; remove {key:?}");
        };
        if key == "contextAware" {
            invalid!(
                "contextAware: replaced by contextAwareResources; list the kinds the policy reads, e.g. contextAwareResources: [{{apiVersion: v1, kind: Namespace}}]"
            );
        }
        if !FIELDS.contains(&key) {
            invalid!(
                "{key}: not a Kubewarden metadata field (kwctl would ignore it); use one of {}",
                FIELDS.join(", ")
            );
        }
    }
    if !map.contains_key("rules") {
        invalid!(
            "rules: missing; add the requests the policy judges, e.g. rules: [{{apiGroups: [\"\"], apiVersions: [v1], resources: [pods], operations: [CREATE]}}]"
        );
    }
    for field in ["mutating", "backgroundAudit"] {
        match map.get(field) {
            None if field == "mutating" => invalid!(
                "mutating: missing; add mutating: false, or true if the policy answers with mutated objects"
            ),
            Some(v) if !v.is_bool() => invalid!(
                "{field}: {} is not a boolean; write true or false, without quotes",
                yaml_text(v)
            ),
            _ => {}
        }
    }
    for field in ["hostCapabilities", "contextAwareResources", "rules"] {
        if let Some(v) = map.get(field)
            && !v.is_sequence()
        {
            invalid!(
                "{field}: {} is not a list; write it as a YAML list",
                yaml_text(v)
            );
        }
    }
    if let Some(annotations) = map.get("annotations") {
        let Some(annotations) = annotations.as_mapping() else {
            invalid!("annotations: not a mapping; write key: value lines under annotations:");
        };
        for (key, v) in annotations {
            let key = key.as_str().unwrap_or_default();
            if !v.is_string() {
                invalid!(
                    "annotations.{key:?}: {} is not a string; quote it, e.g. {key}: \"{}\"",
                    yaml_text(v),
                    yaml_text(v)
                );
            }
        }
    }
    Ok(())
}

fn yaml_text(value: &serde_yaml_ng::Value) -> String {
    if let Some(s) = value.as_str() {
        return format!("{s:?}");
    }
    serde_yaml_ng::to_string(value)
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default()
}

/// Everything [`Metadata::check`] promises.
pub(super) fn metadata(m: &Metadata) -> Result<(), MetadataError> {
    if m.rules.is_empty() {
        invalid!(
            "rules: empty; list the requests the policy judges (Kubewarden registers no webhook for a policy without rules)"
        );
    }
    for (i, rule) in m.rules.iter().enumerate() {
        for (field, values) in [
            ("apiGroups", &rule.api_groups),
            ("apiVersions", &rule.api_versions),
            ("resources", &rule.resources),
            ("operations", &rule.operations),
        ] {
            if values.is_empty() {
                invalid!(
                    "rules[{i}].{field}: empty; list at least one value (\"*\" for all{})",
                    if field == "apiGroups" {
                        ", \"\" for the core group"
                    } else {
                        ""
                    }
                );
            }
        }
        alone_star(&format!("rules[{i}].apiGroups"), &rule.api_groups)?;
        alone_star(&format!("rules[{i}].apiVersions"), &rule.api_versions)?;
        for op in &rule.operations {
            if !OPERATIONS.contains(&op.as_str()) {
                invalid!(
                    "rules[{i}].operations: {op:?} is not an operation; use CREATE, UPDATE, DELETE, CONNECT or *"
                );
            }
        }
        alone_star(&format!("rules[{i}].operations"), &rule.operations)?;
        resources(i, &rule.resources)?;
    }
    for (i, r) in m.context_aware_resources.iter().enumerate() {
        context_aware_resource(i, &r.api_version, &r.kind)?;
    }
    if let Some(patterns) = &m.host_capabilities {
        for (i, p) in patterns.iter().enumerate() {
            host_capability(i, p)?;
        }
    }
    if !EXECUTION_MODES.contains(&m.execution_mode.as_str()) {
        invalid!(
            "executionMode: {:?} is not an execution mode; use kubewarden-wapc (or wasi, opa, gatekeeper)",
            m.execution_mode
        );
    }
    if m.execution_mode != "kubewarden-wapc" {
        invalid!(
            "executionMode: {:?} modules are not run by olm-guard; its modules are kubewarden-wapc, so write executionMode: kubewarden-wapc",
            m.execution_mode
        );
    }
    match m.policy_type.as_deref() {
        None | Some("kubernetes") => {}
        Some("raw") => invalid!(
            "policyType: raw policies are not run by olm-guard, whose modules judge Kubernetes admission requests; write policyType: kubernetes or drop the field"
        ),
        Some(other) => {
            invalid!("policyType: {other:?} is not a policy type; use kubernetes or raw")
        }
    }
    if let Some(v) = &m.minimum_kubewarden_version
        && semver::Version::parse(v).is_err()
    {
        invalid!(
            "minimumKubewardenVersion: {v:?} is not a semantic version; write MAJOR.MINOR.PATCH, e.g. 1.35.0"
        );
    }
    for (key, value) in &m.annotations {
        annotation_value(key, value)?;
    }
    Ok(())
}

/// The annotations Artifact Hub and OCI publishing need are all there.
pub(super) fn publishable(m: &Metadata) -> Result<(), MetadataError> {
    for (key, what) in REQUIRED_ANNOTATIONS {
        if m.annotations.get(*key).is_none_or(|v| v.trim().is_empty()) {
            invalid!("annotations.{key:?}: missing; add {what}");
        }
    }
    Ok(())
}

/// Kubewarden's `validate_asterisk_usage`: `*` stands alone.
fn alone_star(field: &str, values: &[String]) -> Result<(), MetadataError> {
    if values.len() > 1 && values.iter().any(|v| v == "*") {
        invalid!(
            "{field}: \"*\" already means all; list either \"*\" alone or the values without it"
        );
    }
    Ok(())
}

/// Kubernetes' `validateResources` (as Kubewarden transposes it):
/// `*/*` alone, `*` not beside plain resources, `r/*` not beside `r/x`,
/// `*/x` not beside `r/x`.
fn resources(i: usize, resources: &[String]) -> Result<(), MetadataError> {
    let field = format!("rules[{i}].resources");
    let mut wildcard_subresource: BTreeSet<&str> = BTreeSet::new(); // r/*
    let mut wildcard_resource: BTreeSet<&str> = BTreeSet::new(); // */x
    let mut plain = None;
    for resource in resources {
        if resource.is_empty() {
            invalid!("{field}: an entry is empty; name a resource, e.g. pods, or pods/status");
        }
        if resource.chars().any(char::is_uppercase) {
            invalid!(
                "{field}: {resource:?} is not a resource name; resources are lower-case plurals, e.g. {}",
                plural_hint(resource)
            );
        }
        let Some((res, sub)) = resource.split_once('/') else {
            if resource != "*" {
                plain.get_or_insert(resource.as_str());
            }
            continue;
        };
        if wildcard_subresource.contains(res) {
            invalid!("{field}: {resource:?} is already covered by \"{res}/*\"; drop one of them");
        }
        if wildcard_resource.contains(sub) {
            invalid!("{field}: {resource:?} is already covered by \"*/{sub}\"; drop one of them");
        }
        if sub == "*" {
            wildcard_subresource.insert(res);
        }
        if res == "*" {
            wildcard_resource.insert(sub);
        }
    }
    if resources.len() > 1 && resources.iter().any(|r| r == "*/*") {
        invalid!("{field}: \"*/*\" already means every resource and subresource; list it alone");
    }
    if let Some(plain) = plain
        && resources.iter().any(|r| r == "*")
    {
        invalid!(
            "{field}: \"*\" already means every resource without subresource; drop {plain:?} or \"*\""
        );
    }
    Ok(())
}

fn plural_hint(resource: &str) -> String {
    let lower = resource.to_lowercase();
    if lower.ends_with('s') {
        lower
    } else {
        format!("{lower}s")
    }
}

/// `{apiVersion, kind}` as policy-server compares it with the host call's
/// `api_version`/`kind` (`EvaluationContext::can_access_kubernetes_resource`).
fn context_aware_resource(i: usize, api_version: &str, kind: &str) -> Result<(), MetadataError> {
    let field = format!("contextAwareResources[{i}]");
    if api_version.trim().is_empty() {
        invalid!("{field}.apiVersion: empty; write group/version, or v1 for the core group");
    }
    let parts: Vec<&str> = api_version.split('/').collect();
    match parts.as_slice() {
        ["core" | "", version] => invalid!(
            "{field}.apiVersion: {api_version:?} names the core group, which is written without a group; write {version}"
        ),
        [version] | [_, version] if !version.is_empty() && !version.contains(' ') => {}
        _ => invalid!(
            "{field}.apiVersion: {api_version:?} is not group/version; write e.g. rbac.authorization.k8s.io/v1, or v1 for the core group"
        ),
    }
    if kind.trim().is_empty() {
        invalid!("{field}.kind: empty; write the kind, e.g. Namespace");
    }
    if !kind.starts_with(|c: char| c.is_ascii_uppercase()) || kind.contains(['/', ' ', '.']) {
        invalid!(
            "{field}.kind: {kind:?} is not a kind; write the singular CamelCase kind, e.g. ClusterRole (not clusterroles)"
        );
    }
    Ok(())
}

/// `HostCapabilities::new`: `*`, `prefix/*` over known segments, or a
/// complete known path.
fn host_capability(i: usize, pattern: &str) -> Result<(), MetadataError> {
    let field = format!("hostCapabilities[{i}]");
    let p = pattern.trim();
    if p.is_empty() {
        invalid!("{field}: empty; write a capability, e.g. kubernetes/can_i, or remove the entry");
    }
    if p == "*" {
        return Ok(());
    }
    if let Some(pos) = p.find('*') {
        if pos != p.len() - 1 || !p[..pos].ends_with('/') {
            invalid!(
                "{field}: {pattern:?}: a wildcard must be a whole last segment, e.g. oci/* or oci/v1/*"
            );
        }
        let prefix = &p[..pos];
        if CAPABILITIES.iter().any(|c| c.starts_with(prefix))
            && !CAPABILITIES.contains(&prefix.trim_end_matches('/'))
        {
            return Ok(());
        }
        return Err(unknown_capability(
            &field,
            pattern,
            prefix.trim_end_matches('/'),
        ));
    }
    if CAPABILITIES.contains(&p) {
        return Ok(());
    }
    let as_prefix = format!("{p}/");
    if CAPABILITIES.iter().any(|c| c.starts_with(&as_prefix)) {
        invalid!("{field}: {pattern:?} is not a complete capability; write {p}/* for all of them");
    }
    Err(unknown_capability(&field, pattern, p))
}

/// The first unknown segment of `path`, with the segments known there.
fn unknown_capability(field: &str, pattern: &str, path: &str) -> MetadataError {
    let mut known = String::new();
    for segment in path.split('/') {
        let options: BTreeSet<&str> = CAPABILITIES
            .iter()
            .filter_map(|c| c.strip_prefix(known.as_str()))
            .filter_map(|rest| rest.split('/').next())
            .collect();
        if !options.contains(segment) {
            return MetadataError::Invalid(format!(
                "{field}: {pattern:?}: unknown segment {segment:?}; valid here: {}",
                options.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        known.push_str(segment);
        known.push('/');
    }
    MetadataError::Invalid(format!(
        "{field}: {pattern:?} is not a host capability; use one of {}",
        CAPABILITIES.join(", ")
    ))
}

/// The form of one annotation that is present.
fn annotation_value(key: &str, value: &str) -> Result<(), MetadataError> {
    let field = format!("annotations.{key:?}");
    let v = value.trim();
    match key {
        annotation::TITLE
            if v.is_empty()
                || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                || v.starts_with('-') =>
        {
            invalid!(
                "{field}: {value:?} is not a package name; Artifact Hub allows letters, digits and dashes, e.g. catalog-union"
            );
        }
        annotation::VERSION if semver::Version::parse(v).is_err() => {
            invalid!(
                "{field}: {value:?} is not a semantic version; write MAJOR.MINOR.PATCH without a v, e.g. 0.1.0"
            );
        }
        annotation::OCI_URL => oci_url(&field, value)?,
        annotation::URL | annotation::SOURCE => match url::Url::parse(v) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
            _ => invalid!(
                "{field}: {value:?} is not an http(s) URL; write e.g. https://github.com/org/repo"
            ),
        },
        annotation::AUTHOR => {
            for person in v.split(',') {
                if !is_name_addr(person.trim()) {
                    invalid!(
                        "{field}: {:?} is not Name <email>; write e.g. Jane Doe <jane@example.com>, comma-separated for several",
                        person.trim()
                    );
                }
            }
        }
        annotation::KEYWORDS if v.split(',').any(|k| k.trim().is_empty()) => {
            invalid!(
                "{field}: {value:?} has an empty keyword; separate keywords with single commas, e.g. olm, rbac"
            );
        }
        annotation::RESOURCES => {
            for kind in v.split(',').map(str::trim) {
                if kind.is_empty() || !kind.starts_with(|c: char| c.is_ascii_uppercase()) {
                    invalid!(
                        "{field}: {kind:?} is not a kind; list the kinds the policy judges, comma-separated, e.g. ClusterRole, Role"
                    );
                }
            }
        }
        annotation::SEVERITY if !SEVERITIES.contains(&v) => {
            invalid!(
                "{field}: {value:?} is not a severity; use one of {}",
                SEVERITIES.join(", ")
            );
        }
        annotation::CREATED if !crate::rfc3339::is_rfc3339(v) => {
            invalid!("{field}: {value:?} is not an RFC 3339 date; write e.g. 2026-11-23T00:00:00Z");
        }
        annotation::HIDDEN_UI if !matches!(v, "true" | "false") => {
            invalid!("{field}: {value:?} is not \"true\" or \"false\"; write one of them");
        }
        annotation::DESCRIPTION
        | annotation::LICENSE
        | annotation::CATEGORY
        | annotation::DISPLAY_NAME
            if v.is_empty() =>
        {
            invalid!("{field}: empty; write a value or remove the annotation");
        }
        _ => {}
    }
    Ok(())
}

/// RFC 5322 `name-addr` (`Jane <jane@example.com>`) or a bare address, as
/// far as Artifact Hub's maintainers need: a name and an address with a
/// local part and a domain.
fn is_name_addr(text: &str) -> bool {
    let address = match text.split_once('<') {
        Some((_, rest)) => match rest.strip_suffix('>') {
            Some(address) => address,
            None => return false,
        },
        None => text,
    };
    match address.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !address.contains([' ', '<', '>', ','])
        }
        None => false,
    }
}

/// An OCI repository: `host[:port]/path`, lower-case, no scheme, tag or
/// digest (`kwctl scaffold artifacthub` appends `:v<version>` itself).
fn oci_url(field: &str, value: &str) -> Result<(), MetadataError> {
    let v = value.trim();
    if let Some((scheme, rest)) = v.split_once("://") {
        invalid!(
            "{field}: {value:?} must not carry a scheme ({scheme}://); write the repository only, e.g. {rest}"
        );
    }
    if let Some((repo, _)) = v.split_once('@') {
        invalid!(
            "{field}: {value:?} must not carry a digest; write the repository only, e.g. {repo}"
        );
    }
    let Some((host, path)) = v.split_once('/') else {
        invalid!(
            "{field}: {value:?} names no registry; write host/repository, e.g. ghcr.io/org/policies/{v}"
        );
    };
    if let Some((repo, _)) = path.rsplit_once(':') {
        invalid!(
            "{field}: {value:?} must not carry a tag; write the repository only, e.g. {host}/{repo}"
        );
    }
    if !(host.contains('.') || host.contains(':') || host == "localhost") {
        invalid!(
            "{field}: {value:?} names no registry host; write host/repository, e.g. ghcr.io/{v}"
        );
    }
    // OCI distribution-spec: path components are [a-z0-9]+ joined by ., _, __ or -.
    let valid_component = |c: &str| {
        !c.is_empty()
            && c.starts_with(|ch: char| ch.is_ascii_lowercase() || ch.is_ascii_digit())
            && c.ends_with(|ch: char| ch.is_ascii_lowercase() || ch.is_ascii_digit())
            && c.chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || "._-".contains(ch))
    };
    if !path.split('/').all(valid_component) {
        invalid!(
            "{field}: {value:?} is not a valid repository path; use lower-case letters, digits, '.', '_' and '-' between slashes, e.g. {host}/{}",
            path.to_lowercase()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests;
