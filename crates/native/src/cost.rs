//! What the API server charges a policy's CEL for, as far as the generated
//! policies reach its limits: authorizer checks. Each `check()` costs
//! 350,000 (kubernetes `staging/src/k8s.io/apiserver/pkg/cel/library/cost.go`,
//! `CallCost`: "set to allow for only two authorization checks per
//! expression"), one expression may spend 1,000,000 (`PerCallLimit`) and one
//! evaluation of a policy 10,000,000 (`RuntimeCELCostBudget`, both in
//! `staging/src/k8s.io/apiserver/pkg/apis/cel/config.go`); with
//! `StrictCostEnforcementForVAP` (on by default since Kubernetes 1.32) the
//! checks are charged at runtime. Everything else the policies do is a
//! traversal of the request's object, bounded by the API server's request
//! size; it is not modelled here.

use crate::model::BoundPolicy;

/// The cost of one authorizer check.
pub const AUTHZ_CHECK_COST: u64 = 350_000;
/// The most one expression may cost.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// The most one evaluation of a policy (all its expressions) may cost.
pub const RUNTIME_BUDGET: u64 = 10_000_000;

/// The authorizer checks one expression can make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpressionEstimate {
    /// Where it is (`validations[2].expression`).
    pub field: String,
    /// The `check(` calls written in it, each made at most once unless it
    /// is inside a comprehension.
    pub checks: u64,
    /// A check inside a comprehension (`all`, `exists`, `map`, `filter`)
    /// runs once per element: its cost is unbounded.
    pub in_comprehension: bool,
}

impl ExpressionEstimate {
    /// The worst-case cost of the checks.
    pub fn worst_case(&self) -> u64 {
        self.checks * AUTHZ_CHECK_COST
    }

    /// Whether it stays within the per-expression limit in every case.
    pub fn within_limit(&self) -> bool {
        !self.in_comprehension && self.worst_case() < PER_CALL_LIMIT
    }
}

/// The estimate of every expression of `policy` that makes a check.
pub fn estimate(policy: &BoundPolicy) -> Vec<ExpressionEstimate> {
    let spec = &policy.policy.spec;
    let mut fields: Vec<(String, &str)> = Vec::new();
    for (i, c) in spec.match_conditions.iter().enumerate() {
        fields.push((format!("matchConditions[{i}] ({})", c.name), &c.expression));
    }
    for v in &spec.variables {
        fields.push((format!("variables.{}", v.name), &v.expression));
    }
    for (i, v) in spec.validations.iter().enumerate() {
        fields.push((format!("validations[{i}].expression"), &v.expression));
        if let Some(m) = &v.message_expression {
            fields.push((format!("validations[{i}].messageExpression"), m));
        }
    }
    fields
        .into_iter()
        .map(|(field, expression)| {
            let (checks, in_comprehension) = count_checks(expression);
            ExpressionEstimate {
                field,
                checks,
                in_comprehension,
            }
        })
        .filter(|e| e.checks > 0)
        .collect()
}

/// The worst case of one evaluation of `policy`: every check of every
/// expression, each once (`None` when one is in a comprehension).
pub fn worst_case_evaluation(policy: &BoundPolicy) -> Option<u64> {
    let estimates = estimate(policy);
    if estimates.iter().any(|e| e.in_comprehension) {
        return None;
    }
    Some(estimates.iter().map(ExpressionEstimate::worst_case).sum())
}

/// The `.check(` calls in `expression`, and whether one is inside the
/// arguments of a comprehension macro. String literals are skipped.
fn count_checks(expression: &str) -> (u64, bool) {
    const MACROS: [&str; 5] = [".all(", ".exists(", ".exists_one(", ".map(", ".filter("];
    let bytes = expression.as_bytes();
    // The opening parenthesis of each enclosing call, and whether it is a
    // macro's.
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
    use super::count_checks;

    #[test]
    fn checks_are_counted_and_comprehensions_found() {
        assert_eq!(count_checks("a.check('x').allowed()"), (1, false));
        assert_eq!(
            count_checks("a.check('x').allowed() && b.check('y').allowed()"),
            (2, false)
        );
        assert_eq!(
            count_checks("l.filter(t, !a.name(t).check('update').allowed())"),
            (1, true)
        );
        assert_eq!(count_checks("'.check(' + x"), (0, false));
    }
}
