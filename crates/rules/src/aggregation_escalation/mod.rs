#![doc = include_str!("../../../../policies/aggregation-escalation/README.md")]
// The README is written for GitHub and Artifact Hub: the `[system:authenticated]`
// of its quoted denials is the module's output, not a rustdoc link.
#![allow(rustdoc::broken_intra_doc_links)]
//!
//! # The code
//!
//! [`validate`] follows the numbered rules above: the bypasses of rule 1
//! (`change.rs`), the aggregationRule checks of rules 2 and 3
//! (`aggregation_rule.rs`), the feeding check of rule 4 (`feeding.rs`), and
//! the denial texts (`messages.rs`).

mod aggregation_rule;
mod change;
mod feeding;
mod messages;
#[cfg(test)]
mod tests;

use olm_guard_core::{
    AdmissionRequest, Cluster, Operation, PolicySettings, SettingsError, Verdict,
};
use olm_guard_rbac::cluster::Wanted;
use olm_guard_rbac::{ClusterRole, RBAC_GROUP, SYSTEM_MASTERS, from_json};
use serde::{Deserialize, Serialize};

use crate::common::read_or_bad_request;
use change::Change;

/// How much an aggregationRule author must hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Upstream parity: full authority (what `cluster-admin` holds).
    #[default]
    Strict,
    /// Only the rules the selectors collect today.
    Covers,
}

/// The policy settings (`mode`, `allowFeeding`), as the README's settings
/// table describes them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// What an aggregationRule author must hold (rules 2 and 3).
    pub mode: Mode,
    /// Aggregated ClusterRoles anyone may feed (e.g. a role meant to be
    /// extended by every operator).
    pub allow_feeding: Vec<String>,
}

impl PolicySettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        if self.allow_feeding.iter().any(|n| n.is_empty()) {
            return Err(SettingsError::Refused(
                "allowFeeding contains an empty name: list the names of aggregated ClusterRoles"
                    .into(),
            ));
        }
        Ok(())
    }
}

const KIND: &str = "ClusterRole";

/// The rule: CREATE and UPDATE of `rbac.authorization.k8s.io` ClusterRoles
/// are checked; every other request is accepted untouched.
pub fn validate(request: &AdmissionRequest, settings: &Settings, cluster: &dyn Cluster) -> Verdict {
    if !request.targets(RBAC_GROUP, KIND) {
        return Verdict::accept();
    }
    match evaluate(request, settings, cluster) {
        Ok(()) => Verdict::accept(),
        Err(verdict) => verdict,
    }
}

/// `Err` carries the denial; `?` keeps the flow of checks readable.
fn evaluate(
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Result<(), Verdict> {
    let change = match request.operation {
        Operation::Create => Change::new(request, parse_role(&request.object, "object")?, None),
        Operation::Update => Change::new(
            request,
            parse_role(&request.object, "object")?,
            Some(parse_role(&request.old_object, "oldObject")?),
        ),
        Operation::Delete | Operation::Connect => return Ok(()),
    };
    // Rule 1, the bypasses that need no lookup.
    if change.only_gc_fields_changed() || request.user_info.in_group(SYSTEM_MASTERS) {
        return Ok(());
    }
    // Nothing for rules 2 to 4 to check: no lookup either.
    let aggregation = change.involves_aggregation_rule();
    if !aggregation && !change.may_feed() {
        return Ok(());
    }
    // What rules 2 to 4 ask of the store: the user's rules, the roles the
    // selectors (new and old) select, the aggregated roles the object feeds.
    // A role that only may feed others (rule 4 alone) needs the aggregated
    // roles and nothing else.
    let selectors = change.selectors();
    let wanted = Wanted {
        user: &request.user_info,
        selected_by: &selectors,
        aggregated: true,
    };
    let store = if aggregation {
        olm_guard_rbac::cluster::load(cluster, "", &wanted)
    } else {
        olm_guard_rbac::cluster::aggregated_roles(cluster)
    }
    .map_err(|e| {
        Verdict::context_unavailable("the cluster's ClusterRoles and ClusterRoleBindings", e)
    })?;
    let feeds = change.feeds(&store, settings);
    if !aggregation && feeds.is_empty() {
        return Ok(());
    }
    // Rule 1, `escalate`: asked only when some check would apply.
    if change.holds_escalate(cluster)? {
        return Ok(());
    }

    let mut problems = Vec::new();
    if aggregation {
        problems.extend(match settings.mode {
            // Rule 2.
            Mode::Strict => change.check_full_authority(&store),
            // Rule 3.
            Mode::Covers => change.check_covers_selected(&store)?,
        });
    }
    // Rule 4.
    let denied = change.feeds_without_update_right(cluster, &feeds)?;
    if !denied.is_empty() {
        problems.push(change.feeding_message(&denied));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Verdict::deny(problems.join(" Also: ")))
    }
}

/// A ClusterRole from the request; a shape the API server would not accept
/// is a 400 naming the field.
fn parse_role(value: &serde_json::Value, field: &str) -> Result<ClusterRole, Verdict> {
    if !value.is_object() {
        return Err(Verdict::bad_request(format!(
            "request.{field} must be a ClusterRole object; the request carries none"
        )));
    }
    read_or_bad_request(from_json(value), |e| {
        format!("request.{field} is not a valid ClusterRole: {e}; fix that field")
    })
}
