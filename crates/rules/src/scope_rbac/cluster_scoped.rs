//! ScopeTemplate rule 3 (`forbidClusterScopedResources`): which rules grant
//! cluster-scoped access, judged by group and resource name.

use olm_guard_olm::scope::ClusterRoleTemplate;

/// Built-in resources Kubernetes serves cluster-scoped, plus those of the
/// operator-framework and Kubewarden APIs this project deals with. A rule
/// can only be judged by name (a template may be created before its CRDs),
/// so other cluster-scoped custom resources are not recognised; a `*`
/// resource may match any of them and counts as cluster-scoped.
pub const CLUSTER_SCOPED: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "namespaces",
            "nodes",
            "persistentvolumes",
            "componentstatuses",
        ],
    ),
    (
        "admissionregistration.k8s.io",
        &[
            "mutatingwebhookconfigurations",
            "validatingwebhookconfigurations",
            "validatingadmissionpolicies",
            "validatingadmissionpolicybindings",
            "mutatingadmissionpolicies",
            "mutatingadmissionpolicybindings",
        ],
    ),
    ("apiextensions.k8s.io", &["customresourcedefinitions"]),
    ("apiregistration.k8s.io", &["apiservices"]),
    (
        "authentication.k8s.io",
        &["tokenreviews", "selfsubjectreviews"],
    ),
    (
        "authorization.k8s.io",
        &[
            "subjectaccessreviews",
            "selfsubjectaccessreviews",
            "selfsubjectrulesreviews",
        ],
    ),
    (
        "certificates.k8s.io",
        &["certificatesigningrequests", "clustertrustbundles"],
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        &["flowschemas", "prioritylevelconfigurations"],
    ),
    ("internal.apiserver.k8s.io", &["storageversions"]),
    (
        "networking.k8s.io",
        &["ingressclasses", "ipaddresses", "servicecidrs"],
    ),
    ("node.k8s.io", &["runtimeclasses"]),
    (
        "rbac.authorization.k8s.io",
        &["clusterroles", "clusterrolebindings"],
    ),
    ("resource.k8s.io", &["deviceclasses", "resourceslices"]),
    ("scheduling.k8s.io", &["priorityclasses"]),
    (
        "storage.k8s.io",
        &[
            "csidrivers",
            "csinodes",
            "storageclasses",
            "volumeattachments",
            "volumeattributesclasses",
        ],
    ),
    ("storagemigration.k8s.io", &["storageversionmigrations"]),
    ("metrics.k8s.io", &["nodes"]),
    (
        "operators.coreos.com",
        &[
            "operators",
            "olmconfigs",
            "scopetemplates",
            "scopeinstances",
        ],
    ),
    (
        "operators.io.operator-framework",
        &["scopetemplates", "scopeinstances"],
    ),
    (
        "olm.operatorframework.io",
        &[
            "clusterextensions",
            "clustercatalogs",
            "clusterobjectsets",
            "clusterextensionrevisions",
        ],
    ),
    (
        "policies.kubewarden.io",
        &[
            "clusteradmissionpolicies",
            "clusteradmissionpolicygroups",
            "policyservers",
        ],
    ),
];

/// Whether `resource` (possibly `parent/subresource`) of `group` may be a
/// cluster-scoped resource. `*` groups match every group of the list.
pub(super) fn is_cluster_scoped(group: &str, resource: &str) -> bool {
    let parent = resource.split('/').next().unwrap_or(resource);
    parent == "*"
        || CLUSTER_SCOPED.iter().any(|(known_group, resources)| {
            (group == "*" || group == *known_group) && resources.contains(&parent)
        })
}

/// What each rule of the entry grants on cluster-scoped resources or
/// non-resource URLs, one line per rule.
pub(super) fn cluster_scoped_grants(index: usize, entry: &ClusterRoleTemplate) -> Vec<String> {
    entry
        .rules
        .iter()
        .enumerate()
        .filter_map(|(position, rule)| {
            let mut named = Vec::new();
            let mut resources: Vec<&str> = rule
                .resources
                .iter()
                .filter(|resource| rule.api_groups.iter().any(|g| is_cluster_scoped(g, resource)))
                .map(String::as_str)
                .collect();
            resources.dedup();
            if !resources.is_empty() {
                named.push(format!("cluster-scoped resources {}", resources.join(", ")));
            }
            if !rule.non_resource_urls.is_empty() {
                named.push(format!("non-resource URLs {}", rule.non_resource_urls.join(", ")));
            }
            (!named.is_empty()).then(|| {
                format!(
                    "spec.clusterRoles[{index}].rules[{position}] (of ClusterRole \"{}\") grants {}",
                    entry.generate_name,
                    named.join(" and ")
                )
            })
        })
        .collect()
}
