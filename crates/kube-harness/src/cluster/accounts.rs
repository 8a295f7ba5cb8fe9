//! ServiceAccounts as a pod holds them: the account in its Namespace, and
//! a token the API server issued for it (the TokenRequest API, what the
//! kubelet mounts into a pod), written into a kubeconfig, so that a program
//! the tests start (policy-server) talks to the API server as that account
//! would in-cluster, and the cluster's RBAC decides what it may do.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::pki::write_token_kubeconfig;
use super::{ClusterError, TestCluster, request_error};

/// How long an issued token is valid: longer than any test.
const TOKEN_SECONDS: u64 = 24 * 3600;

impl TestCluster {
    /// A kubeconfig whose user is the ServiceAccount `name` of `namespace`
    /// (`system:serviceaccount:<namespace>:<name>`, in the groups
    /// `system:serviceaccounts`, `system:serviceaccounts:<namespace>` and
    /// `system:authenticated`), by a token the API server issued. The
    /// Namespace and the account are created when missing, and kept (they
    /// are not a test's changes to undo).
    pub fn service_account_kubeconfig(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<PathBuf, ClusterError> {
        for object in [
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": namespace}}),
        ] {
            match self.create(&object)? {
                Ok(_) => {}
                Err(refusal) if refusal.reason == "AlreadyExists" => {}
                Err(refusal) => {
                    return Err(request_error(
                        &format!("creating {} {namespace}/{name}", object["kind"]),
                        refusal.message,
                    ));
                }
            }
        }
        let url = format!("/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token");
        let body = json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": TOKEN_SECONDS},
        });
        let request = http::Request::post(&url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&body).map_err(|e| request_error(&url, e))?)
            .map_err(|e| request_error(&url, e))?;
        let answer: Value = self
            .runtime
            .block_on(self.client.request(request))
            .map_err(|e| request_error(&format!("POST {url}"), e))?;
        let token = answer["status"]["token"].as_str().ok_or_else(|| {
            request_error(
                &format!("POST {url}"),
                format!("no status.token in {answer}"),
            )
        })?;
        write_token_kubeconfig(
            self.dir.path(),
            &self.server(),
            &self.pki,
            &format!("kubeconfig-serviceaccount-{namespace}-{name}"),
            token,
        )
    }
}
