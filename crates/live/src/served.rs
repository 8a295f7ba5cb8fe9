//! The discovery requests of a connection: which kinds the server serves in
//! a group version, each document asked once ([`crate::discovery`] keeps
//! them).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::client::Body;

use crate::connect::Live;
use crate::discovery::{GroupVersion, Resource, resources_in};
use crate::error::{LiveError, quote};

impl Live {
    /// The kinds the server serves in `api_version` (`v1`, or
    /// `group/version`), or `None` when it serves no such group version.
    pub fn resources_of(&self, api_version: &str) -> Result<Option<Vec<Resource>>, LiveError> {
        self.discovery
            .group_version(api_version, || self.discover(api_version))
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
        let path = match api_version.split_once('/') {
            Some(_) => format!("/apis/{api_version}"),
            None => format!("/api/{api_version}"),
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
        Ok(Some(resources_in(api_version, list)))
    }
}

/// A GET of `path` with an empty body.
fn http_get(path: &str) -> Result<http::Request<Body>, String> {
    http::Request::get(path)
        .header(http::header::ACCEPT, "application/json")
        .body(Body::from(Vec::new()))
        .map_err(|e| e.to_string())
}
