//! What the API server charges a policy's CEL for, as cel-go counts it at run
//! time, per Kubernetes version.
//!
//! cel-go's cost tracker (google/cel-go `interpreter/runtimecost.go`,
//! `CostObserver` and `CostTracker.costCall`) charges each step of an
//! evaluation: 1 for an identifier or a field selection (an attribute and
//! each of its qualifiers), 0 for a constant, 10 for building a list
//! (`common.ListCreateBaseCost`) and 30 for a map (`MapCreateBaseCost`,
//! both in `common/cost.go`), nothing for `&&`, `||` and `?:` themselves,
//! and for every function call what its overload costs: 1 by default;
//! `ceil(size × 0.1)` (`StringTraversalCostFactor`) for string
//! concatenation, comparison and equality (the smaller operand), string
//! conversions, `startsWith` and `endsWith`; the product of both operands'
//! traversal costs for `contains`; `ceil((1 + size) × 0.1) × ceil(pattern ×
//! 0.25)` (`RegexStringLengthCostFactor`) for `matches`; the list's size for
//! `in`. A comprehension costs what its steps cost on each iteration (the
//! loop condition, the step, the result), as the macros expand.
//!
//! Kubernetes adds its own library's costs (kubernetes
//! `staging/src/k8s.io/apiserver/pkg/cel/library/cost.go`, `CallCost`):
//! 350,000 for an authorizer `check()` ("set to allow for only two
//! authorization checks per expression"), 1 for the authorizer's builders
//! and accessors, a traversal of the receiver for `indexOf` and the lists
//! functions, `ceil(size × 0.1)` for `substring`, `lowerAscii`,
//! `upperAscii`, `trim`, twice that for `replace` and `split`, and `ceil(size
//! of the result × 0.2)` for `join`. That estimator is installed only with
//! `StrictCostEnforcementForVAP` (`environment/base.go`, `StrictCostOpt`):
//! the gate is beta and off by default on 1.30 and 1.31, GA and locked on
//! from 1.32 (`pkg/features/kube_features.go`); without it every one of
//! those functions, `check()` included, costs 1.
//!
//! The API server's programs are planned with `cel.OptOptimize` and
//! `PresenceTestHasCost(false)` (`environment/base.go`): a list or map
//! literal of constants is built once at plan time and costs nothing, as
//! does a type conversion of a constant; `x in [constants]` becomes a set
//! lookup that costs only `x`; and `has()` costs its qualifiers only.
//!
//! Where cel-go cannot be followed exactly, [`crate::interpreter`] counts
//! more, never less: `startsWith`/`endsWith` are charged for the longer of
//! receiver and argument (cel-go charged the receiver, newer releases the
//! argument: at most `ceil(length / 10)` more); after an error value cel-go
//! stops building a list or map, or evaluating the arguments of a call of
//! three or more, where the rest is still evaluated and charged here (only
//! in an expression that fails anyway); and a map is iterated in an order
//! of its own (cel-go's is Go's random map order, so the short-circuit
//! point of `all`/`exists` over a map differs run to run there too).

use cel::Value;

/// The cost of one authorizer check under strict cost enforcement.
pub const AUTHZ_CHECK_COST: u64 = 350_000;
/// The most one expression may cost (`PerCallLimit`, kubernetes
/// `staging/src/k8s.io/apiserver/pkg/apis/cel/config.go`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// The most one evaluation of a policy (its validations and messages) may
/// cost (`RuntimeCELCostBudget`, same file).
pub const RUNTIME_BUDGET: u64 = 10_000_000;
/// The budget of a policy's match conditions
/// (`RuntimeCELCostBudgetMatchConditions`, same file).
pub const MATCH_CONDITIONS_BUDGET: u64 = 2_500_000;
/// cel-go `common.StringTraversalCostFactor`.
pub const STRING_TRAVERSAL_COST_FACTOR: f64 = 0.1;
/// cel-go `common.RegexStringLengthCostFactor`.
pub const REGEX_STRING_LENGTH_COST_FACTOR: f64 = 0.25;
/// cel-go `common.ListCreateBaseCost`.
pub const LIST_CREATE_BASE_COST: u64 = 10;
/// cel-go `common.MapCreateBaseCost`.
pub const MAP_CREATE_BASE_COST: u64 = 30;
/// cel-go `common.SelectAndIdentCost`.
pub const SELECT_AND_IDENT_COST: u64 = 1;

/// A Kubernetes minor release of the 1.x line, as far as CEL costs go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KubernetesVersion {
    /// The minor version: 30 for 1.30.
    pub minor: u32,
}

impl KubernetesVersion {
    /// The oldest release the generated policies run on
    /// (`admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy).
    pub const OLDEST: KubernetesVersion = KubernetesVersion { minor: 30 };
    /// The newest release modelled, the default.
    pub const NEWEST: KubernetesVersion = KubernetesVersion { minor: 34 };

    /// `1.<minor>`.
    pub const fn new(minor: u32) -> Self {
        KubernetesVersion { minor }
    }

    /// Whether `StrictCostEnforcementForVAP` is on by default: from 1.32
    /// (GA, locked); beta and off on 1.30 and 1.31.
    pub fn strict_cost_by_default(self) -> bool {
        self.minor >= 32
    }

    /// Reads `1.32` (or `v1.32`, `1.32.4`); `None` for anything else or a
    /// release older than [`KubernetesVersion::OLDEST`].
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim().trim_start_matches('v');
        let mut parts = text.split('.');
        let (major, minor) = (parts.next()?, parts.next()?);
        let minor: u32 = minor.parse().ok()?;
        (major == "1" && minor >= Self::OLDEST.minor).then_some(KubernetesVersion { minor })
    }
}

impl Default for KubernetesVersion {
    fn default() -> Self {
        Self::NEWEST
    }
}

impl std::fmt::Display for KubernetesVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "1.{}", self.minor)
    }
}

/// How costs are counted in one evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostModel {
    /// Kubernetes' library estimator is installed (strict cost
    /// enforcement): `check()` costs 350,000, the strings functions their
    /// size.
    pub strict: bool,
    /// Programs are planned with `cel.OptOptimize` (constant literals free,
    /// set membership), as the API server plans them.
    pub optimize: bool,
    /// `has()` costs 1 on top of its qualifiers (cel-go's default; the API
    /// server turns it off).
    pub presence_test_cost: bool,
}

impl CostModel {
    /// What the API server of `version` charges, with the gate at its
    /// default.
    pub fn kubernetes(version: KubernetesVersion) -> Self {
        Self::kubernetes_with_gate(version.strict_cost_by_default())
    }

    /// What the API server charges with `StrictCostEnforcementForVAP` set
    /// to `strict` (1.30 and 1.31 may turn the beta gate on).
    pub fn kubernetes_with_gate(strict: bool) -> Self {
        CostModel {
            strict,
            optimize: true,
            presence_test_cost: false,
        }
    }

    /// cel-go's own defaults, as its cost tests run (no optimisation, no
    /// library estimator, `has()` costs 1).
    pub fn cel_go_default() -> Self {
        CostModel {
            strict: false,
            optimize: false,
            presence_test_cost: true,
        }
    }
}

/// cel-go's `actualSize`: the size of a string (in code points), bytes, a
/// list or a map; 1 for anything else.
pub fn actual_size(value: &Value) -> u64 {
    match value {
        Value::String(s) => s.chars().count() as u64,
        Value::Bytes(b) => b.len() as u64,
        Value::List(l) => l.len() as u64,
        Value::Map(m) => m.map.len() as u64,
        _ => 1,
    }
}

/// `uint64(math.Ceil(float64(size) * factor))`, in the same IEEE double
/// arithmetic as Go's.
pub fn by_factor(size: u64, factor: f64) -> u64 {
    (size as f64 * factor).ceil() as u64
}

/// Kubernetes' `traversalCost` (library `cost.go`): a string's bytes × 0.1
/// rounded down, the sum over a list's elements or a map's keys and values,
/// 1 for anything else.
pub fn traversal_cost(value: &Value) -> u64 {
    match value {
        Value::String(s) => (s.len() as f64 * STRING_TRAVERSAL_COST_FACTOR) as u64,
        Value::Bytes(b) => (b.len() as f64 * STRING_TRAVERSAL_COST_FACTOR) as u64,
        Value::List(items) => items.iter().map(traversal_cost).sum(),
        Value::Map(map) => map
            .map
            .iter()
            .map(|(k, v)| traversal_cost(&Value::from(k)) + traversal_cost(v))
            .sum(),
        _ => 1,
    }
}

/// What one call of `function` costs, its receiver (if any) first in
/// `args`, giving `result`: Kubernetes' estimator first when `strict`,
/// then cel-go's overload costs, then 1.
pub fn call_cost(model: CostModel, function: &str, args: &[Value], result: &Value) -> u64 {
    let size = |i: usize| args.get(i).map(actual_size).unwrap_or(1);
    if model.strict
        && let Some(cost) = kubernetes_call_cost(function, args, result)
    {
        return cost;
    }
    let strings = |a: Option<&Value>, b: Option<&Value>| {
        matches!(
            (a, b),
            (Some(Value::String(_)), Some(Value::String(_)))
                | (Some(Value::Bytes(_)), Some(Value::Bytes(_)))
        )
    };
    match function {
        // cel-go charged the receiver, newer releases the argument: the
        // larger of the two, never less than either.
        "startsWith" | "endsWith" => by_factor(size(0).max(size(1)), STRING_TRAVERSAL_COST_FACTOR),
        "string" if matches!(args.first(), Some(Value::Bytes(_))) => {
            by_factor(size(0), STRING_TRAVERSAL_COST_FACTOR)
        }
        "bytes" if matches!(args.first(), Some(Value::String(_))) => {
            by_factor(size(0), STRING_TRAVERSAL_COST_FACTOR)
        }
        "@in" if matches!(args.get(1), Some(Value::List(_))) => size(1),
        "_==_" | "_!=_" => by_factor(size(0).min(size(1)), STRING_TRAVERSAL_COST_FACTOR),
        "_<_" | "_<=_" | "_>_" | "_>=_" if strings(args.first(), args.get(1)) => {
            by_factor(size(0).min(size(1)), STRING_TRAVERSAL_COST_FACTOR)
        }
        "_+_" if strings(args.first(), args.get(1)) => {
            by_factor(size(0) + size(1), STRING_TRAVERSAL_COST_FACTOR)
        }
        "matches" => {
            let text = ((1 + size(0)) as f64 * STRING_TRAVERSAL_COST_FACTOR).ceil() as u64;
            text * by_factor(size(1), REGEX_STRING_LENGTH_COST_FACTOR)
        }
        "contains" if matches!(args.first(), Some(Value::String(_))) => {
            by_factor(size(0), STRING_TRAVERSAL_COST_FACTOR)
                * by_factor(size(1), STRING_TRAVERSAL_COST_FACTOR)
        }
        _ => 1,
    }
}

/// Kubernetes' `CostEstimator.CallCost` for the functions the policies
/// may use; `None` where it defers to cel-go.
fn kubernetes_call_cost(function: &str, args: &[Value], result: &Value) -> Option<u64> {
    let size = |i: usize| args.get(i).map(actual_size);
    match function {
        "check" => Some(AUTHZ_CHECK_COST),
        "serviceAccount" | "path" | "group" | "resource" | "subresource" | "namespace" | "name"
        | "allowed" | "reason" | "error" | "errored" => Some(1),
        "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => {
            Some(args.first().map(traversal_cost).unwrap_or(0))
        }
        "url" | "lowerAscii" | "upperAscii" | "substring" | "trim" => {
            size(0).map(|s| by_factor(s, STRING_TRAVERSAL_COST_FACTOR))
        }
        "replace" | "split" => size(0).map(|s| by_factor(s, 2.0 * STRING_TRAVERSAL_COST_FACTOR)),
        "join" => (!args.is_empty())
            .then(|| by_factor(actual_size(result), 2.0 * STRING_TRAVERSAL_COST_FACTOR)),
        "find" | "findAll" if args.len() >= 2 => {
            let text = ((1 + actual_size(&args[0])) as f64 * STRING_TRAVERSAL_COST_FACTOR).ceil();
            Some(text as u64 * by_factor(actual_size(&args[1]), REGEX_STRING_LENGTH_COST_FACTOR))
        }
        _ => None,
    }
}

/// The `.check(` calls written in `expression` (string literals skipped),
/// and whether one is inside the arguments of a comprehension macro, where
/// it runs once per element: what a reader of a policy can tell about its
/// authorizer cost without running it.
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

    #[test]
    fn factors_round_up() {
        assert_eq!(by_factor(20, STRING_TRAVERSAL_COST_FACTOR), 2);
        assert_eq!(by_factor(21, STRING_TRAVERSAL_COST_FACTOR), 3);
        assert_eq!(by_factor(0, STRING_TRAVERSAL_COST_FACTOR), 0);
        assert_eq!(by_factor(5, REGEX_STRING_LENGTH_COST_FACTOR), 2);
    }

    #[test]
    fn versions_parse_and_know_their_gate() {
        assert_eq!(
            KubernetesVersion::parse("v1.31.2"),
            Some(KubernetesVersion::new(31))
        );
        assert_eq!(KubernetesVersion::parse("1.29"), None);
        assert!(!KubernetesVersion::new(31).strict_cost_by_default());
        assert!(KubernetesVersion::new(32).strict_cost_by_default());
        assert_eq!(KubernetesVersion::default().to_string(), "1.34");
    }
}
