//! Which kinds the server serves, and under which resource names: the
//! discovery documents `/api/v1` and `/apis/<group>/<version>`, read once per
//! group version, as policy-server reads them
//! (`crates/policy-evaluator/src/callback_handler/kubernetes/client.rs`,
//! `build_kube_resource`). The requests themselves are the connection's
//! (`served.rs`); here, what they answer and the documents kept.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;

use crate::error::LiveError;
use crate::once::Once;

/// A served kind: where it lives and how it is named.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Resource {
    /// `group/version`, or `v1` for the core group.
    pub api_version: String,
    /// The group; empty for the core group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind (`CatalogSource`).
    pub kind: String,
    /// The plural resource name (`catalogsources`).
    pub plural: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
}

impl Resource {
    /// `catalogsources.operators.coreos.com`, as kubectl names a resource.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// kube-rs' dynamic resource.
    pub(crate) fn api_resource(&self) -> kube::api::ApiResource {
        kube::api::ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
        }
    }
}

/// The served resources of one group version, or `None` when the server
/// does not serve it.
pub(crate) type GroupVersion = Result<Option<Vec<Resource>>, LiveError>;

/// Discovery documents read so far, one per group version; concurrent
/// first readers wait for one request.
#[derive(Default)]
pub(crate) struct Discovery {
    group_versions: Once<GroupVersion>,
}

impl Discovery {
    /// The group version `api_version`'s resources, read by `read` the
    /// first time it is asked, kept afterwards.
    pub(crate) fn group_version(
        &self,
        api_version: &str,
        read: impl FnOnce() -> GroupVersion,
    ) -> GroupVersion {
        self.group_versions
            .get_or_init(api_version.to_string(), read)
    }
}

/// The kinds of `api_version` in its discovery document `list`.
/// Subresources (`catalogsources/status`) are not kinds of their own.
pub(crate) fn resources_in(api_version: &str, list: APIResourceList) -> Vec<Resource> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    list.resources
        .into_iter()
        .filter(|r| !r.name.contains('/'))
        .map(|r| Resource {
            api_version: api_version.to_string(),
            group: group.to_string(),
            version: version.to_string(),
            kind: r.kind,
            plural: r.name,
            namespaced: r.namespaced,
        })
        .collect()
}
