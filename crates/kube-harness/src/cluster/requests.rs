//! Writes sent as a user sends them: the administrator's client with
//! kubectl's `--as`/`--as-group` impersonation headers, so that
//! authorization, admission (the policies' `request.userInfo`, their
//! authorizer checks) and RBAC's own checks see that user, and the answer
//! read whole: the stored object or the refusal, with every warning the
//! server sent (`Warning` headers, as kubectl prints them).

use http::header::{CONTENT_TYPE, HeaderValue};
use kube::client::Body;
use serde_json::Value;

use super::{ClusterError, Refusal, TestCluster, request_error};

/// Who sends a request: a user and their groups, as kubectl's `--as` and
/// `--as-group` name them. The API server adds `system:authenticated` to an
/// impersonated user's groups, as it does for an authenticated one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requester {
    /// `request.userInfo.username`.
    pub user: String,
    /// `request.userInfo.groups`.
    pub groups: Vec<String>,
}

/// What is asked of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// `POST` the object (kubectl create).
    Create,
    /// `PUT` the object over the stored one of its name (kubectl replace);
    /// it must carry the stored `resourceVersion`
    /// ([`TestCluster::update_of`]).
    Update,
    /// `DELETE` the object of its name.
    Delete,
}

/// The server's answer to a write.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The object as stored (as it would be, with `dry_run`), or the
    /// refusal. A delete answers the object as it was, or the `Status` the
    /// server sends.
    pub answer: Result<Value, Refusal>,
    /// The warnings, in the order sent, without the `299 - ` code and
    /// quotes (what kubectl prints after `Warning: `).
    pub warnings: Vec<String>,
}

/// The text of one `Warning` header (RFC 9111 5.5, as the API server
/// writes it: `299 - "text"`, `"` and `\` escaped).
fn warning_text(header: &str) -> String {
    let quoted = header
        .strip_prefix("299 - ")
        .and_then(|rest| rest.strip_prefix('"'))
        .and_then(|rest| rest.strip_suffix('"'));
    let Some(quoted) = quoted else {
        return header.to_string();
    };
    let mut text = String::with_capacity(quoted.len());
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(escaped) = chars.next() {
                text.push(escaped);
            }
        } else {
            text.push(c);
        }
    }
    text
}

impl TestCluster {
    /// Sends `write` of `object` (or of its `subresource`, `status`) as
    /// `requester` (`None`: as the administrator), a dry run
    /// (`dryRun=All`) when `dry_run`, and reads the whole answer.
    pub fn write_as(
        &self,
        requester: Option<&Requester>,
        write: Write,
        object: &Value,
        subresource: Option<&str>,
        dry_run: bool,
    ) -> Result<Written, ClusterError> {
        let mut url = self.object_url(object, write != Write::Create)?;
        if let Some(subresource) = subresource {
            url = format!("{url}/{subresource}");
        }
        let (method, body) = match write {
            Write::Create => ("POST", serde_json::to_vec(object)),
            Write::Update => ("PUT", serde_json::to_vec(object)),
            // A DELETE's options are its body, and the API server reads
            // the query only when there is none (k8s.io/apiserver
            // `pkg/endpoints/handlers/delete.go`, `DeleteResource`).
            Write::Delete => (
                "DELETE",
                serde_json::to_vec(&serde_json::json!({
                    "apiVersion": "v1",
                    "kind": "DeleteOptions",
                    "dryRun": if dry_run { vec!["All"] } else { Vec::new() },
                })),
            ),
        };
        if dry_run && write != Write::Delete {
            url = format!("{url}?dryRun=All");
        }
        let body = body.map_err(|e| request_error("an object", e))?;
        let mut request = http::Request::builder()
            .method(method)
            .uri(&url)
            .header(CONTENT_TYPE, "application/json");
        if let Some(requester) = requester {
            request = request.header("Impersonate-User", header(&requester.user)?);
            for group in &requester.groups {
                request = request.header("Impersonate-Group", header(group)?);
            }
        }
        let request = request
            .body(Body::from(body))
            .map_err(|e| request_error(&url, e))?;
        self.runtime.block_on(async {
            let response = self
                .client
                .send(request)
                .await
                .map_err(|e| request_error(&format!("{method} {url}"), e))?;
            let status = response.status();
            let warnings = response
                .headers()
                .get_all("warning")
                .iter()
                .map(|v| warning_text(&String::from_utf8_lossy(v.as_bytes())))
                .collect();
            let bytes = response
                .into_body()
                .collect_bytes()
                .await
                .map_err(|e| request_error(&format!("{method} {url}"), e))?;
            let body: Value = serde_json::from_slice(&bytes).map_err(|e| {
                request_error(
                    &format!("{method} {url}"),
                    format!("{e}: {}", String::from_utf8_lossy(&bytes)),
                )
            })?;
            let answer = if status.is_success() {
                Ok(body)
            } else {
                Err(Refusal {
                    code: status.as_u16(),
                    reason: body["reason"].as_str().unwrap_or_default().to_string(),
                    message: body["message"].as_str().unwrap_or_default().to_string(),
                })
            };
            Ok(Written { answer, warnings })
        })
    }

    /// The URL of `object`'s collection, or of the object itself when
    /// `named`.
    fn object_url(&self, object: &Value, named: bool) -> Result<String, ClusterError> {
        let api = self.api_for(object)?;
        let base = api.resource_url().to_string();
        Ok(if named {
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            format!("{base}/{name}")
        } else {
            base
        })
    }
}

/// A header value, or why it cannot be one.
fn header(text: &str) -> Result<HeaderValue, ClusterError> {
    HeaderValue::from_str(text).map_err(|e| request_error(&format!("the header {text:?}"), e))
}

#[cfg(test)]
mod tests {
    use super::warning_text;

    #[test]
    fn a_warning_header_is_read_as_kubectl_prints_it() {
        assert_eq!(
            warning_text(
                r#"299 - "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': say \"no\"""#
            ),
            r#"Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': say "no""#
        );
        assert_eq!(warning_text("not the usual form"), "not the usual form");
    }
}
