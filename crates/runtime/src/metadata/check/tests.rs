//! One case per check: a valid metadata.yml with one field changed must be
//! refused with a message naming that field and the fix.

use rstest::rstest;

use crate::metadata::Metadata;

const VALID: &str = r#"
rules:
  - apiGroups: [""]
    apiVersions: [v1]
    resources: [pods]
    operations: [CREATE, UPDATE]
mutating: false
backgroundAudit: true
executionMode: kubewarden-wapc
contextAwareResources:
  - apiVersion: v1
    kind: Namespace
hostCapabilities:
  - kubernetes/list_resources_all
annotations:
  io.kubewarden.policy.title: pod-check
  io.kubewarden.policy.version: 0.1.0
  io.kubewarden.policy.description: Checks pods.
  io.kubewarden.policy.author: Jane Doe <jane@example.com>, Joe <joe@example.org>
  io.kubewarden.policy.url: https://github.com/org/repo
  io.kubewarden.policy.source: https://github.com/org/repo
  io.kubewarden.policy.license: Apache-2.0
  io.kubewarden.policy.ociUrl: ghcr.io/org/policies/pod-check
  io.kubewarden.policy.severity: medium
  io.kubewarden.policy.category: Resource validation
  io.artifacthub.displayName: Pod check
  io.artifacthub.resources: Pod
  io.artifacthub.keywords: pod, check
  org.opencontainers.image.created: "2026-11-23T00:00:00Z"
"#;

/// VALID with `path` (a dotted path into the YAML; numbers index lists)
/// set to `value` (YAML), or removed when `value` is `~~`.
fn edited(path: &str, value: &str) -> String {
    let mut doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(VALID).unwrap();
    let mut node = &mut doc;
    let parts: Vec<&str> = if let Some(key) = path.strip_prefix("annotations.") {
        vec!["annotations", key]
    } else {
        path.split('.').collect()
    };
    let (last, parents) = parts.split_last().unwrap();
    for p in parents {
        node = match p.parse::<usize>() {
            Ok(i) => &mut node[i],
            Err(_) => &mut node[*p],
        };
    }
    if value == "~~" {
        node.as_mapping_mut().unwrap().remove(*last);
    } else {
        let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(value).unwrap();
        match last.parse::<usize>() {
            Ok(i) => node[i] = v,
            Err(_) => node[*last] = v,
        }
    }
    serde_yaml_ng::to_string(&doc).unwrap()
}

fn refused(text: &str) -> String {
    match Metadata::from_yaml(text).and_then(|m| m.check_publishable().map(|_| m)) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_valid_example_passes_every_check() {
    Metadata::from_yaml(VALID)
        .unwrap()
        .check_publishable()
        .unwrap();
}

#[rstest]
#[case::no_rules("rules", "[]", &["rules: empty"])]
#[case::rules_missing("rules", "~~", &["rules: missing"])]
#[case::empty_api_groups("rules.0.apiGroups", "[]", &["rules[0].apiGroups: empty", "\"\" for the core group"])]
#[case::empty_versions("rules.0.apiVersions", "[]", &["rules[0].apiVersions: empty"])]
#[case::empty_resources("rules.0.resources", "[]", &["rules[0].resources: empty"])]
#[case::empty_operations("rules.0.operations", "[]", &["rules[0].operations: empty"])]
#[case::lower_case_operation("rules.0.operations", "[create]", &["rules[0].operations: \"create\" is not an operation", "use CREATE"])]
#[case::star_with_operations("rules.0.operations", "['*', CREATE]", &["rules[0].operations", "\"*\" alone"])]
#[case::star_with_groups("rules.0.apiGroups", "['', '*']", &["rules[0].apiGroups", "\"*\" alone"])]
#[case::star_with_versions("rules.0.apiVersions", "['*', v1]", &["rules[0].apiVersions", "\"*\" alone"])]
#[case::empty_resource("rules.0.resources", "['']", &["rules[0].resources: an entry is empty"])]
#[case::kind_as_resource("rules.0.resources", "[Pod]", &["\"Pod\" is not a resource name", "e.g. pods"])]
#[case::star_with_plain("rules.0.resources", "['*', pods]", &["\"*\" already means every resource without subresource", "drop \"pods\""])]
#[case::double_star_not_alone("rules.0.resources", "['*/*', pods/status]", &["\"*/*\" already means every resource and subresource"])]
#[case::sub_wildcard_covers("rules.0.resources", "['pods/*', pods/status]", &["\"pods/status\" is already covered by \"pods/*\""])]
#[case::res_wildcard_covers("rules.0.resources", "['*/status', pods/status]", &["\"pods/status\" is already covered by \"*/status\""])]
#[case::mutating_missing("mutating", "~~", &["mutating: missing", "mutating: false"])]
#[case::mutating_quoted("mutating", "'false'", &["mutating: \"false\" is not a boolean", "without quotes"])]
#[case::audit_quoted("backgroundAudit", "'yes'", &["backgroundAudit: \"yes\" is not a boolean"])]
#[case::misspelt_field("hostCapability", "[]", &["hostCapability: not a Kubewarden metadata field", "hostCapabilities"])]
#[case::old_context_aware("contextAware", "true", &["contextAware: replaced by contextAwareResources"])]
#[case::car_no_api_version("contextAwareResources.0.apiVersion", "''", &["contextAwareResources[0].apiVersion: empty"])]
#[case::car_core_group("contextAwareResources.0.apiVersion", "core/v1", &["contextAwareResources[0].apiVersion: \"core/v1\"", "write v1"])]
#[case::car_bad_api_version("contextAwareResources.0.apiVersion", "a/b/c", &["is not group/version"])]
#[case::car_no_kind("contextAwareResources.0.kind", "''", &["contextAwareResources[0].kind: empty"])]
#[case::car_plural_kind("contextAwareResources.0.kind", "namespaces", &["contextAwareResources[0].kind: \"namespaces\" is not a kind"])]
#[case::capability_unknown_op("hostCapabilities.0", "kubernetes/list", &["hostCapabilities[0]: \"kubernetes/list\": unknown segment \"list\"", "can_i"])]
#[case::capability_unknown_ns("hostCapabilities.0", "tracing/log", &["unknown segment \"tracing\"", "kubernetes"])]
#[case::capability_partial_star("hostCapabilities.0", "oci*", &["a wildcard must be a whole last segment"])]
#[case::capability_mid_star("hostCapabilities.0", "oci/v1/oci_*", &["a wildcard must be a whole last segment"])]
#[case::capability_star_first("hostCapabilities.0", "'*/oci'", &["a wildcard must be a whole last segment"])]
#[case::capability_unknown_version("hostCapabilities.0", "oci/v99/*", &["unknown segment \"v99\"", "v1, v2"])]
#[case::capability_incomplete("hostCapabilities.0", "oci/v1", &["not a complete capability", "oci/v1/*"])]
#[case::capability_below_leaf("hostCapabilities.0", "kubernetes/can_i/*", &["is not a host capability"])]
#[case::capability_empty("hostCapabilities.0", "''", &["hostCapabilities[0]: empty"])]
#[case::capabilities_not_list("hostCapabilities", "kubernetes/can_i", &["hostCapabilities: \"kubernetes/can_i\" is not a list"])]
#[case::execution_mode_unknown("executionMode", "wapc", &["executionMode: \"wapc\" is not an execution mode"])]
#[case::execution_mode_opa("executionMode", "opa", &["executionMode: \"opa\" modules are not run by olm-guard", "kubewarden-wapc"])]
#[case::policy_type_raw("policyType", "raw", &["policyType: raw policies are not run by olm-guard"])]
#[case::policy_type_unknown("policyType", "k8s", &["policyType: \"k8s\" is not a policy type"])]
#[case::minimum_version("minimumKubewardenVersion", "'1.35'", &["minimumKubewardenVersion: \"1.35\" is not a semantic version"])]
#[case::version_not_string("annotations.io.kubewarden.policy.version", "1.0", &["annotations.\"io.kubewarden.policy.version\": 1.0 is not a string", "quote it"])]
#[case::version_not_semver("annotations.io.kubewarden.policy.version", "v0.1.0", &["\"v0.1.0\" is not a semantic version", "without a v"])]
#[case::oci_url_tag("annotations.io.kubewarden.policy.ociUrl", "ghcr.io/x:v1", &["annotations.\"io.kubewarden.policy.ociUrl\": \"ghcr.io/x:v1\" must not carry a tag; write the repository only, e.g. ghcr.io/x"])]
#[case::oci_url_scheme("annotations.io.kubewarden.policy.ociUrl", "registry://ghcr.io/x", &["must not carry a scheme (registry://)", "e.g. ghcr.io/x"])]
#[case::oci_url_digest("annotations.io.kubewarden.policy.ociUrl", "ghcr.io/x@sha256:00", &["must not carry a digest", "e.g. ghcr.io/x"])]
#[case::oci_url_no_host("annotations.io.kubewarden.policy.ociUrl", "pod-check", &["names no registry", "ghcr.io/org/policies/pod-check"])]
#[case::oci_url_upper("annotations.io.kubewarden.policy.ociUrl", "ghcr.io/Org/x", &["is not a valid repository path", "ghcr.io/org/x"])]
#[case::url_not_http("annotations.io.kubewarden.policy.url", "github.com/org/repo", &["annotations.\"io.kubewarden.policy.url\"", "is not an http(s) URL"])]
#[case::source_not_http("annotations.io.kubewarden.policy.source", "git@github.com:org/repo", &["annotations.\"io.kubewarden.policy.source\"", "is not an http(s) URL"])]
#[case::author_no_email("annotations.io.kubewarden.policy.author", "Jane Doe", &["\"Jane Doe\" is not Name <email>"])]
#[case::author_unclosed("annotations.io.kubewarden.policy.author", "Jane <jane@example.com", &["is not Name <email>"])]
#[case::keywords_empty("annotations.io.artifacthub.keywords", "'olm,, rbac'", &["has an empty keyword"])]
#[case::resources_plural("annotations.io.artifacthub.resources", "pods", &["\"pods\" is not a kind"])]
#[case::severity("annotations.io.kubewarden.policy.severity", "severe", &["\"severe\" is not a severity", "low, medium, high, critical, info"])]
#[case::title("annotations.io.kubewarden.policy.title", "'pod check'", &["is not a package name", "letters, digits and dashes"])]
#[case::hidden_ui("annotations.io.kubewarden.hidden-ui", "'yes'", &["is not \"true\" or \"false\""])]
#[case::description_empty("annotations.io.kubewarden.policy.description", "''", &["annotations.\"io.kubewarden.policy.description\": empty"])]
#[case::created_not_rfc3339("annotations.org.opencontainers.image.created", "'2026-11-23'", &["is not an RFC 3339 date"])]
#[case::missing_created("annotations.org.opencontainers.image.created", "~~", &["annotations.\"org.opencontainers.image.created\": missing", "release date"])]
#[case::missing_oci_url("annotations.io.kubewarden.policy.ociUrl", "~~", &["annotations.\"io.kubewarden.policy.ociUrl\": missing", "without scheme or tag"])]
#[case::missing_display_name("annotations.io.artifacthub.displayName", "~~", &["annotations.\"io.artifacthub.displayName\": missing"])]
#[case::missing_severity("annotations.io.kubewarden.policy.severity", "~~", &["annotations.\"io.kubewarden.policy.severity\": missing"])]
fn each_check_names_the_field_and_the_fix(
    #[case] path: &str,
    #[case] value: &str,
    #[case] expected: &[&str],
) {
    let message = refused(&edited(path, value));
    for part in expected {
        assert!(message.contains(part), "{message:?} lacks {part:?}");
    }
    assert!(!message.contains('\n'), "{message:?} is not one line");
}

#[rstest]
#[case::star_alone("rules.0.resources", "['*']")]
#[case::star_with_subresources("rules.0.resources", "['*', 'a/b', 'a/*', '*/b']")]
#[case::sub_wildcard_with_plain("rules.0.resources", "['pods/*', pods]")]
#[case::double_star_alone("rules.0.resources", "['*/*']")]
#[case::core_group("rules.0.apiGroups", "['']")]
#[case::all_operations("rules.0.operations", "['*']")]
#[case::all_capabilities("hostCapabilities", "['*']")]
#[case::capability_prefixes(
    "hostCapabilities",
    "['oci/*', 'oci/v2/*', kubernetes/can_i, net/v1/dns_lookup_host]"
)]
#[case::no_capabilities("hostCapabilities", "[]")]
#[case::capabilities_omitted("hostCapabilities", "~~")]
#[case::grouped_kind(
    "contextAwareResources.0",
    "{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole}"
)]
#[case::local_registry(
    "annotations.io.kubewarden.policy.ociUrl",
    "localhost:5000/policies/pod-check"
)]
#[case::bare_email("annotations.io.kubewarden.policy.author", "jane@example.com")]
#[case::minimum_version("minimumKubewardenVersion", "1.35.0")]
#[case::policy_type("policyType", "kubernetes")]
fn what_kubewarden_accepts_is_accepted(#[case] path: &str, #[case] value: &str) {
    let text = edited(path, value);
    Metadata::from_yaml(&text)
        .and_then(|m| m.check_publishable())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
}

/// `check` alone (what `run --metadata` uses) does not require the
/// publishing annotations, but still refuses malformed ones.
#[test]
fn check_alone_needs_no_annotations_but_refuses_bad_ones() {
    let bare = edited("annotations", "{}");
    let m = Metadata::from_yaml(&bare).unwrap();
    assert!(m.check_publishable().is_err());
    let bad = edited(
        "annotations",
        "{io.kubewarden.policy.ociUrl: 'ghcr.io/x:v1'}",
    );
    assert!(Metadata::from_yaml(&bad).is_err());
}

#[test]
fn every_policy_in_the_repository_passes() {
    let policies = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies");
    let mut seen = 0;
    for entry in std::fs::read_dir(&policies).unwrap() {
        let path = entry.unwrap().path().join("metadata.yml");
        let text = std::fs::read_to_string(&path).unwrap();
        Metadata::from_yaml(&text)
            .and_then(|m| m.check_publishable())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        seen += 1;
    }
    assert_eq!(seen, 6, "six policies under {}", policies.display());
}
