//! What the API server lets a policy's CEL spend, the figures the generated
//! policies are written to: each policy that could outgrow them states the
//! largest input it decides and denies a larger one, saying so
//! (docs/native.md, "Limits"). `crates/native/tests/limits.rs` holds these
//! figures, and every stated limit, to Kubernetes' own runtime cost
//! accounting, through `olm_guard_kube_harness`.
//!
//! The API server charges the actual cost of each expression as cel-go's
//! cost tracker counts it (google/cel-go `interpreter/runtimecost.go`),
//! with Kubernetes' library costs (kubernetes
//! `staging/src/k8s.io/apiserver/pkg/cel/library/cost.go`) under
//! `StrictCostEnforcementForVAP`: GA and locked on from 1.32, off by
//! default on 1.30 and 1.31, where the library's functions, `check()`
//! included, cost 1 (`staging/src/k8s.io/apiserver/pkg/cel/environment/base.go`,
//! `StrictCostOpt`). An input decided within the limits with the gate on
//! is decided without it too.

/// What one authorizer `check()` costs under strict cost enforcement
/// (kubernetes `staging/src/k8s.io/apiserver/pkg/cel/library/cost.go`,
/// `CallCost`: "set to allow for only two authorization checks per
/// expression").
pub const AUTHZ_CHECK_COST: u64 = 350_000;

/// The most one expression may cost (`PerCallLimit`, kubernetes
/// `staging/src/k8s.io/apiserver/pkg/apis/cel/config.go`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;

/// The most one evaluation of a policy (its validations, the variables
/// they read, then its messages) may cost (`RuntimeCELCostBudget`, same
/// file).
pub const RUNTIME_BUDGET: u64 = 10_000_000;

/// How many authorizer checks `expression` writes (`.check(` calls, outside
/// string literals), and whether one of them is written inside a
/// comprehension (`all`, `exists`, `exists_one`, `map`, `filter`), where it
/// would run once per element and its cost grow with the object. A count
/// of the text, for the generated files' headers and for the test that no
/// generated policy writes a check inside a comprehension; what the checks
/// cost is Kubernetes' (above).
pub fn checks_written(expression: &str) -> (u64, bool) {
    const MACROS: [&str; 5] = [".all(", ".exists(", ".exists_one(", ".map(", ".filter("];
    let bytes = expression.as_bytes();
    let mut stack: Vec<bool> = Vec::new();
    let (mut checks, mut inside) = (0, false);
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            quote @ (b'\'' | b'"') => {
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' => {
                let before = &expression[..=i];
                stack.push(MACROS.iter().any(|m| before.ends_with(m)));
                if before.ends_with(".check(") {
                    checks += 1;
                    inside |= stack[..stack.len() - 1].iter().any(|m| *m);
                }
            }
            b')' => {
                stack.pop();
            }
            _ => {}
        }
        i += 1;
    }
    (checks, inside)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_are_counted_and_comprehensions_found() {
        assert_eq!(checks_written("a.check('x').allowed()"), (1, false));
        assert_eq!(
            checks_written("a.check('x').allowed() && b.check('y').allowed()"),
            (2, false)
        );
        assert_eq!(
            checks_written("l.filter(t, !a.name(t).check('update').allowed())"),
            (1, true)
        );
        assert_eq!(checks_written("'.check(' + x"), (0, false));
    }
}
