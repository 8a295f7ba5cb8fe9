//! og-intersection has no native form: every one of its checks compares
//! the request with other OperatorGroups or ClusterServiceVersions of the
//! cluster in ways a per-object param cannot express.

use olm_guard_rules::og_intersection::Settings;

use super::{Check, Enforcement, GenerateError, Native};

/// The rule's name.
pub const RULE: &str = "og-intersection";

/// Every check of the rule and where it is enforced.
pub const CHECKS: &[Check] = &[
    Check::new(
        "one OperatorGroup per namespace",
        Enforcement::ModuleOnly,
        "needs the other OperatorGroups of the namespace; a param per OperatorGroup could catch \
         a second one, but the message and the exceptions (OLM's copied groups) need the list",
    ),
    Check::new(
        "the provided APIs of OperatorGroups whose target namespaces intersect do not \
         intersect; a CSV's owned APIs fit its OperatorGroup",
        Enforcement::ModuleOnly,
        "an intersection over all OperatorGroups and CSVs of the cluster: an aggregate no \
         single-param evaluation can compute",
    ),
];

/// Always [`GenerateError::ModuleOnly`].
pub fn generate(_: &Settings) -> Result<Native, GenerateError> {
    Err(GenerateError::ModuleOnly {
        rule: RULE,
        reason: "its checks intersect the provided APIs and target namespaces of all \
                 OperatorGroups and CSVs of the cluster, which CEL cannot list; run the module",
    })
}
