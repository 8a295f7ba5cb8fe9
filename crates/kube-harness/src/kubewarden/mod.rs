//! Kubewarden's production path in the tests: kube-apiserver calls
//! policy-server as its admission webhook, and policy-server answers with
//! the modules, reading the cluster under an identity of its own.
//!
//! Kubewarden's controller is not run (it needs pods, a Deployment, a
//! Service and its own certificates); what it would do is done by hand, in
//! one place each:
//!
//! - [`controller`]: a `ClusterAdmissionPolicy` translated as the
//!   controller translates it, into policy-server's `policies.yml` entry
//!   and a webhook configuration (with a `url` for the Service);
//! - [`PolicyServer`]: the policy-server binary (`$POLICY_SERVER`, or
//!   built once per machine by `scripts/build-policy-server.sh`) started
//!   with the environment the controller gives its container;
//! - [`TestCluster::register_webhooks`](crate::cluster::TestCluster::register_webhooks):
//!   the webhook configurations stored, and waited for until kube-apiserver
//!   calls them.
//!
//! ```no_run
//! use olm_guard_kube_harness::cluster::TestCluster;
//! use olm_guard_kube_harness::kubewarden::{self, PolicyServer};
//! let cluster = TestCluster::start()?;
//! let policy: serde_json::Value = serde_yaml_ng::from_str(&std::fs::read_to_string(
//!     "deploy/kubewarden/catalog-union.yaml",
//! )?)?;
//! let identity = cluster.service_account_kubeconfig(kubewarden::NAMESPACE, kubewarden::SERVICE_ACCOUNT)?;
//! let server = PolicyServer::start(&kubewarden::policies_yml(&[policy.clone()]), &identity)?;
//! let webhook = kubewarden::webhook_configuration(&policy, &server.base_url(), server.ca_pem());
//! cluster.register_webhooks(&[webhook])?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod controller;
mod policy_server;
mod registration;

pub use controller::{
    NAMESPACE, SERVICE_ACCOUNT, policies_entry, policies_yml, unique_name, webhook_configuration,
    webhook_name,
};
pub use policy_server::PolicyServer;
pub use registration::SENTINEL_LABEL;

use serde_json::Value;

use crate::cluster::{ClusterError, TestCluster};

/// Kubewarden on a test cluster, its controller's work done by hand: the
/// ClusterAdmissionPolicies stored in the cluster (as `kubectl apply` left
/// them, the CRD's defaults filled in) handed to a [`PolicyServer`] that
/// runs as the ServiceAccount [`SERVICE_ACCOUNT`] of [`NAMESPACE`], and
/// their webhooks registered (one configuration per policy).
pub struct Kubewarden {
    /// The policy-server.
    pub server: PolicyServer,
    /// The policies, as stored.
    pub policies: Vec<Value>,
    /// Their webhook configurations, as registered.
    pub configurations: Vec<Value>,
}

impl Kubewarden {
    /// Reconciles every ClusterAdmissionPolicy of `cluster`; `module` gives
    /// the URL policy-server loads a policy's `spec.module` from (a
    /// `file://` URL of a module built here, where the published
    /// `registry://` cannot be reached).
    pub fn reconcile(
        cluster: &TestCluster,
        module: impl Fn(&str) -> String,
    ) -> Result<Kubewarden, ClusterError> {
        let mut policies = cluster.list("policies.kubewarden.io/v1", "ClusterAdmissionPolicy")?;
        for policy in &mut policies {
            let url = module(policy["spec"]["module"].as_str().unwrap_or_default());
            policy["spec"]["module"] = Value::String(url);
        }
        let identity = cluster.service_account_kubeconfig(NAMESPACE, SERVICE_ACCOUNT)?;
        // policy-server's first lookups are decided with the RBAC just
        // applied.
        cluster.wait_rbac_seen()?;
        let server = PolicyServer::start(&policies_yml(&policies), &identity)?;
        let configurations: Vec<Value> = policies
            .iter()
            .map(|p| webhook_configuration(p, &server.base_url(), server.ca_pem()))
            .collect();
        cluster.register_webhooks(&configurations)?;
        Ok(Kubewarden {
            server,
            policies,
            configurations,
        })
    }
}
