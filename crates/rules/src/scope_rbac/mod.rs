#![doc = include_str!("../../../../policies/scope-rbac/README.md")]
//!
//! # The code
//!
//! [`validate`] sends ScopeTemplates to the numbered ScopeTemplate rules
//! (`template.rs`, with rule 3's list of cluster-scoped resources in
//! `cluster_scoped.rs`) and ScopeInstances to the ScopeInstance rules
//! (`instance.rs`). Both read the cluster through `lookup.rs`.

mod cluster_scoped;
mod instance;
mod lookup;
mod messages;
mod template;
#[cfg(test)]
mod tests;

pub use cluster_scoped::CLUSTER_SCOPED;

use olm_guard_core::{AdmissionRequest, Cluster, Operation, PolicySettings, Verdict};
use olm_guard_olm::scope::{self, SCOPE_INSTANCE, SCOPE_TEMPLATE};
use serde::{Deserialize, Serialize};

/// The policy settings, as the README's settings table describes them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// ScopeTemplate rules may not name cluster-scoped resources or
    /// non-resource URLs (ScopeTemplate rule 3). oria's design leaves open
    /// whether a template may include them; this setting answers "no".
    pub forbid_cluster_scoped_resources: bool,
    /// Accept a ScopeInstance whose ScopeTemplate does not exist yet, for the
    /// workflow that creates the instance before installing the bundle that
    /// ships the template. Its bindings are then not checked: whoever creates
    /// the template later decides what they grant.
    pub allow_pending_template: bool,
}

impl PolicySettings for Settings {}

/// The rule: CREATE and UPDATE of ScopeTemplates and ScopeInstances, in
/// either API group that serves them, are checked; every other request is
/// accepted untouched.
pub fn validate(request: &AdmissionRequest, settings: &Settings, cluster: &dyn Cluster) -> Verdict {
    if !matches!(request.operation, Operation::Create | Operation::Update) {
        return Verdict::accept();
    }
    for group in scope::GROUPS {
        if request.targets(group, SCOPE_TEMPLATE) {
            return template::validate_template(request, settings, cluster);
        }
        if request.targets(group, SCOPE_INSTANCE) {
            return instance::validate_instance(request, group, settings, cluster);
        }
    }
    Verdict::accept()
}
