//! The evaluator's CEL semantics where they decide a verdict: errors are
//! values that `&&`, `||` and the comprehensions absorb as cel-go's do,
//! heterogeneous equality, `in` over lists and maps, the macros, and a
//! cost limit that nothing absorbs.

use cel::{Env, Value};
use serde_json::json;

use olm_guard_native::cost::CostModel;
use olm_guard_native::interpreter::{Bindings, EvalError, Interpreter, Out};
use olm_guard_native::values::to_cel;

fn eval(expression: &str) -> Out {
    let program = Env::stdlib().compile(expression).expect("parses");
    let bindings = Bindings(vec![(
        "object",
        to_cel(&json!({"spec": {"items": ["a", "b"], "n": 2}})),
    )]);
    Interpreter::new(
        &bindings,
        CostModel::kubernetes_with_gate(true),
        Some(1_000_000),
    )
    .run(program.expression())
}

#[test]
fn errors_are_absorbed_where_cel_go_absorbs_them() {
    assert_eq!(eval("false && object.nope"), Ok(Value::Bool(false)));
    assert_eq!(eval("object.nope && false"), Ok(Value::Bool(false)));
    assert_eq!(eval("object.nope || true"), Ok(Value::Bool(true)));
    assert_eq!(eval("true || object.nope"), Ok(Value::Bool(true)));
    assert_eq!(
        eval("object.nope || false"),
        Err(EvalError::NoSuchKey("nope".into()))
    );
    // `all` is false if any element is false, even after an error.
    assert_eq!(
        eval("[1, 0, 2].all(x, 2 / x > 0 && x != 2)"),
        Ok(Value::Bool(false))
    );
    assert_eq!(eval("[0, 1].exists(x, 2 / x > 0)"), Ok(Value::Bool(true)));
    assert!(eval("[0].all(x, 2 / x > 0)").is_err());
}

#[test]
fn values_compare_as_cel_go_compares_them() {
    assert_eq!(eval("1 == 1.0 && 1u == 1"), Ok(Value::Bool(true)));
    assert_eq!(eval("'a' == 1"), Ok(Value::Bool(false)));
    assert_eq!(
        eval("'b' in object.spec.items && 'spec' in object"),
        Ok(Value::Bool(true))
    );
    assert_eq!(
        eval("object.spec.n < 3 && 'a' < 'b'"),
        Ok(Value::Bool(true))
    );
    assert!(eval("'a' < 1").is_err());
    assert_eq!(
        eval("type(object.spec) == map && type(1) == int"),
        Ok(Value::Bool(true))
    );
    assert_eq!(eval("type(null) == null_type"), Ok(Value::Bool(true)));
}

#[test]
fn the_macros_expand_as_cel_go_expands_them() {
    assert_eq!(
        eval("object.spec.items.map(i, i + '!').filter(i, i != 'a!')"),
        Ok(to_cel(&json!(["b!"])))
    );
    assert_eq!(
        eval("object.spec.items.exists_one(i, i == 'a')"),
        Ok(Value::Bool(true))
    );
    assert_eq!(
        eval("has(object.spec.n) && !has(object.spec.m)"),
        Ok(Value::Bool(true))
    );
    assert_eq!(eval("{'k': 1}.all(k, k == 'k')"), Ok(Value::Bool(true)));
    assert_eq!(
        eval("size(object.spec.items) == 2 && 'héllo'.size() == 5"),
        Ok(Value::Bool(true))
    );
}

/// cel-go's `refQualify`: `has()` of a field of null or a scalar is false,
/// not an error (a CREATE's `oldObject` is null), while selecting one is
/// `no such key`; a list has no fields at all.
#[test]
fn fields_of_what_is_not_a_map_are_absent_as_in_cel_go() {
    assert_eq!(eval("has(object.spec.n.x)"), Ok(Value::Bool(false)));
    assert_eq!(eval("has(null.x) || has('s'.x)"), Ok(Value::Bool(false)));
    assert_eq!(
        eval("object.spec.n.x"),
        Err(EvalError::NoSuchKey("x".into()))
    );
    assert_eq!(eval("has(object.spec.items.x)"), Err(EvalError::ListField));
    assert_eq!(eval("object.spec.items.x"), Err(EvalError::ListField));
}

#[test]
fn a_cost_limit_is_not_absorbed() {
    // 2,000 × 2,000 / 100 per `contains`: far over 1,000,000, and `||`
    // cannot rescue it.
    let long = "a".repeat(20_000);
    let program = Env::stdlib()
        .compile("s.contains(s) || true")
        .expect("parses");
    let bindings = Bindings(vec![("s", to_cel(&json!(long)))]);
    let out = Interpreter::new(
        &bindings,
        CostModel::kubernetes_with_gate(true),
        Some(1_000_000),
    )
    .run(program.expression());
    assert_eq!(out, Err(EvalError::CostLimitExceeded));
}
