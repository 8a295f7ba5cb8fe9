#![doc = include_str!("../../../../policies/og-intersection/README.md")]

// The rule follows the numbered rules of its README (the module doc above):
// `group.rs` holds rules 1-3 (OperatorGroup), `csv.rs` rules 4-7
// (ClusterServiceVersion), `lookup.rs` the cluster lookups and target
// resolution both share, and `messages.rs` every denial and warning text.

mod csv;
mod group;
mod lookup;
mod messages;
#[cfg(test)]
mod tests;

use olm_guard_core::{AdmissionRequest, Cluster, Operation, PolicySettings, Verdict};
use serde::{Deserialize, Serialize};
use serde_json::Value;

const OPERATORS_GROUP: &str = "operators.coreos.com";
const OPERATOR_GROUP_API_VERSION: &str = "operators.coreos.com/v1";
const OPERATOR_GROUP_KIND: &str = "OperatorGroup";
const CSV_KIND: &str = "ClusterServiceVersion";

/// The rule has no settings; unknown keys are rejected so a typo is noticed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {}

impl PolicySettings for Settings {}

/// Judges a CREATE or UPDATE of an OperatorGroup (rules 1-3) or of a
/// ClusterServiceVersion (rules 4-7); every other request passes untouched.
pub fn validate(
    request: &AdmissionRequest,
    _settings: &Settings,
    cluster: &dyn Cluster,
) -> Verdict {
    if !matches!(request.operation, Operation::Create | Operation::Update) {
        return Verdict::accept();
    }
    if request.targets(OPERATORS_GROUP, OPERATOR_GROUP_KIND) {
        group::validate_operator_group(request, cluster)
    } else if request.targets(OPERATORS_GROUP, CSV_KIND) {
        csv::validate_csv(request, cluster)
    } else {
        Verdict::accept()
    }
}

/// The object an UPDATE replaces. The API server always sends it; a request
/// without one (hand-made) is judged like a CREATE.
fn old_object(request: &AdmissionRequest) -> Option<&Value> {
    (request.operation == Operation::Update && !request.old_object.is_null())
        .then_some(&request.old_object)
}
