//! The rules compiled natively: the baseline the wasm modules are measured
//! against. Same adapter entry point (`olm_guard_kubewarden::evaluate`) as
//! the modules, same snapshot, so the ratio is the cost of wasm itself.

use olm_guard_core::{Cluster, Verdict};
use olm_guard_kubewarden::evaluate;
use olm_guard_rules as rules;

/// Evaluates a `{"request","settings"}` payload as the module would.
pub type NativeRule = fn(&[u8], &dyn Cluster) -> Verdict;

pub fn rule(policy: &str) -> Option<NativeRule> {
    Some(match policy {
        "group-authorization" => |p, c| {
            evaluate::<rules::group_authorization::Settings>(
                p,
                rules::group_authorization::validate,
                c,
            )
        },
        "revision-uniqueness" => |p, c| {
            evaluate::<rules::revision_uniqueness::Settings>(
                p,
                rules::revision_uniqueness::validate,
                c,
            )
        },
        "catalog-union" => {
            |p, c| evaluate::<rules::catalog_union::Settings>(p, rules::catalog_union::validate, c)
        }
        "aggregation-escalation" => |p, c| {
            evaluate::<rules::aggregation_escalation::Settings>(
                p,
                rules::aggregation_escalation::validate,
                c,
            )
        },
        "og-intersection" => |p, c| {
            evaluate::<rules::og_intersection::Settings>(p, rules::og_intersection::validate, c)
        },
        "scope-rbac" => {
            |p, c| evaluate::<rules::scope_rbac::Settings>(p, rules::scope_rbac::validate, c)
        }
        _ => return None,
    })
}
