//! Which kinds the server serves, and under which resource names: the
//! discovery documents `/api/v1` and `/apis/<group>/<version>`, read once per
//! group version, as policy-server reads them
//! (`crates/policy-evaluator/src/callback_handler/kubernetes/client.rs`,
//! `build_kube_resource`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::client::Body;

use crate::connect::Live;
use crate::error::{LiveError, quote};
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
type GroupVersion = Result<Option<Vec<Resource>>, LiveError>;

/// Discovery documents read so far, one per group version; concurrent
/// first readers wait for one request.
#[derive(Default)]
pub(crate) struct Discovery {
    group_versions: Once<GroupVersion>,
}

impl Live {
    /// The kinds the server serves in `api_version` (`v1`, or
    /// `group/version`), or `None` when it serves no such group version.
    pub fn resources_of(&self, api_version: &str) -> Result<Option<Vec<Resource>>, LiveError> {
        self.discovery
            .group_versions
            .get_or_init(api_version.to_string(), || self.discover(api_version))
    }

    /// The served kind `kind` of `api_version`, if the server serves it.
    pub fn resource(&self, api_version: &str, kind: &str) -> Result<Option<Resource>, LiveError> {
        Ok(self
            .resources_of(api_version)?
            .and_then(|resources| resources.into_iter().find(|r| r.kind == kind)))
    }

    /// The served resource named `plural` in `api_version`, if the server
    /// serves it (how an admission rule names what it covers).
    pub fn resource_by_plural(
        &self,
        api_version: &str,
        plural: &str,
    ) -> Result<Option<Resource>, LiveError> {
        Ok(self
            .resources_of(api_version)?
            .and_then(|resources| resources.into_iter().find(|r| r.plural == plural)))
    }

    /// One discovery request. A 404 means the group version is not served;
    /// the body is not read for it, since servers answer it with a list of
    /// paths rather than a Status.
    fn discover(&self, api_version: &str) -> GroupVersion {
        let (group, version, path) = match api_version.split_once('/') {
            Some((group, version)) => (group, version, format!("/apis/{api_version}")),
            None => ("", api_version, format!("/api/{api_version}")),
        };
        let what = format!("reading the discovery document {path}");
        let request = http_get(&path).map_err(|reason| LiveError::Client {
            server: self.server().to_string(),
            what: what.clone(),
            reason,
        })?;
        let client = self.client.clone();
        let (status, body) = self.call(&what, async move {
            let response = client.send(request).await?;
            let status = response.status();
            let body = response.into_body().collect_bytes().await?;
            Ok((status, body))
        })?;
        if status == http::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            let status = kube::Error::Api(
                kube::core::Status::failure(&String::from_utf8_lossy(&body), "")
                    .with_code(status.as_u16())
                    .boxed(),
            );
            return Err(crate::error::classify(self.server(), &what, status));
        }
        let list: APIResourceList =
            serde_json::from_slice(&body).map_err(|e| LiveError::Client {
                server: self.server().to_string(),
                what,
                reason: format!("not an APIResourceList: {}", quote(&e.to_string())),
            })?;
        Ok(Some(
            list.resources
                .into_iter()
                // Subresources (`catalogsources/status`) are not kinds of
                // their own.
                .filter(|r| !r.name.contains('/'))
                .map(|r| Resource {
                    api_version: api_version.to_string(),
                    group: group.to_string(),
                    version: version.to_string(),
                    kind: r.kind,
                    plural: r.name,
                    namespaced: r.namespaced,
                })
                .collect(),
        ))
    }
}

/// A GET of `path` with an empty body.
fn http_get(path: &str) -> Result<http::Request<Body>, String> {
    http::Request::get(path)
        .header(http::header::ACCEPT, "application/json")
        .body(Body::from(Vec::new()))
        .map_err(|e| e.to_string())
}
