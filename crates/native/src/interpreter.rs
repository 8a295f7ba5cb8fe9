//! A CEL evaluator that charges each step of an evaluation what cel-go's
//! cost tracker charges (google/cel-go `interpreter/runtimecost.go`, over
//! the plan `interpreter/planner.go` builds), on the expression trees the
//! `cel` crate parses (`Program::expression()`, its macros expanded as
//! cel-go expands them) and on the `cel` crate's values.
//!
//! cel-go plans a chain of field selections and indexes on an identifier
//! (`object.spec.rules[0]`) as one *attribute*: evaluating it costs 1, and
//! each qualifier 1 more (an index that is itself computed costs what
//! computing it costs; one that is an attribute costs its qualifiers only).
//! An attribute that is a branch of `?:`, the operand of `has()` or an
//! index is resolved by its parent rather than evaluated, so its own 1 is
//! not charged. A selection on something else (a call, a list) is a
//! *relative* attribute: what its operand costs, 1, and 1 per qualifier.
//! See [`crate::cost`] for the calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cel::Value;
use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use cel::objects::{Key, KeyRef, Map, Opaque};

use crate::authorizer::{self, type_name};
use crate::cost::{
    self, CostModel, LIST_CREATE_BASE_COST, MAP_CREATE_BASE_COST, SELECT_AND_IDENT_COST,
};
use crate::strings;

/// cel-go's text when a cost limit stops an evaluation
/// (`interpreter/runtimecost.go`, `EvalCancelledError`).
pub const COST_LIMIT_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

/// An evaluation stopped because it went over its cost limit: unlike an
/// error value, nothing absorbs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

/// A CEL value, or a CEL error (which `&&`, `||` and the comprehensions
/// may absorb, as cel-go's error values).
pub type Out = Result<Value, EvalError>;

/// A CEL error value, worded as cel-go words it: the API server puts this
/// text into its message (`expression '...' resulted in error: <this>`),
/// so each variant prints cel-go's text for the same failure.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// The evaluation went over its cost limit ([`COST_LIMIT_EXCEEDED`]);
    /// unlike the other errors, nothing absorbs it.
    #[error("{text}", text = COST_LIMIT_EXCEEDED)]
    CostLimitExceeded,
    /// A field or key the map does not have (`types.NewErr("no such key")`).
    #[error("no such key: {0}")]
    NoSuchKey(String),
    /// A function or operator with no overload for these operands.
    #[error("found no matching overload for '{function}' applied to '{operands}'")]
    NoMatchingOverload {
        /// The function or operator (`_+_`, `size`).
        function: String,
        /// The operands' types as cel-go prints them: `(list, string)`,
        /// or `string.(int)` for a receiver call.
        operands: String,
    },
    /// A function of Kubernetes' authorizer library called with what it
    /// does not take (`authz.go`): `<type>.<function>(<argument types>)`
    /// or `<type>.<function> with <n> argument(s)`.
    #[error("no such overload: {0}")]
    NoSuchOverload(String),
    /// A name that is neither bound nor a function.
    #[error("undeclared reference to '{0}'")]
    UndeclaredReference(String),
    /// A string index outside the string (`ext/strings.go`).
    #[error("index out of range: {0}")]
    IndexOutOfRange(i64),
    /// A list index outside the list.
    #[error("index out of bounds: {0}")]
    IndexOutOfBounds(String),
    /// `substring(start, end)` with `end` before `start`.
    #[error("invalid substring range. start: {start}, end: {end}")]
    SubstringRange {
        /// The start index.
        start: i64,
        /// The end index.
        end: i64,
    },
    /// A field selected on a list (`types.IndexOrError`).
    #[error("unsupported index type 'string' in list")]
    ListField,
    /// A signed integer result that does not fit.
    #[error("integer overflow")]
    IntOverflow,
    /// An unsigned integer result that does not fit.
    #[error("unsigned integer overflow")]
    UintOverflow,
    /// A string that does not convert to the type asked for.
    #[error("type conversion error from 'string' to '{to}': {text}")]
    Conversion {
        /// The type asked for (`int`, `uint`, `double`, `bool`).
        to: &'static str,
        /// The string.
        text: String,
    },
    /// A `matches()` pattern that is not RE2.
    #[error("given regex is invalid: {0}")]
    InvalidRegex(String),
    /// A map literal key of a type maps cannot have.
    #[error("unsupported map key type: {0}")]
    MapKeyType(String),
    /// A map literal with the same key twice.
    #[error("Failed with repeated key")]
    RepeatedKey,
    /// A comprehension over what is neither a list nor a map.
    #[error("expression of type '{0}' cannot be range of a comprehension")]
    RangeType(String),
    /// `join()` on a list with an element that is not a string.
    #[error("join: list element is a {0}, not a string")]
    JoinElement(String),
    /// A message literal: no message types are declared.
    #[error("unknown type: {0} (no message types are declared)")]
    UnknownType(String),
    /// A form of CEL this evaluator does not take (the policies use none),
    /// named.
    #[error("{0}")]
    Unsupported(&'static str),
    /// A composited variable that fails, as the expression reading it
    /// sees it (`composition.go`).
    #[error("composited variable \"{name}\" fails to evaluate: {error}")]
    Variable {
        /// The variable's name.
        name: String,
        /// Its error (in this message, so not also a source).
        error: Box<EvalError>,
    },
    /// An arithmetic error of the `cel` crate's operators (division by
    /// zero, overflow), in its words.
    #[error(transparent)]
    Arithmetic(#[from] cel::ExecutionError),
}

impl EvalError {
    /// No overload of `function` for `operands` (cel-go's
    /// `(t1, t2)` or `t.(t1)` form).
    pub fn no_overload(function: &str, operands: String) -> EvalError {
        EvalError::NoMatchingOverload {
            function: function.to_string(),
            operands,
        }
    }
}

type Step = Result<Out, Cancelled>;

/// The names an expression may read.
pub trait Activation {
    /// A top-level variable (`object`, `request`, `authorizer`, `self`);
    /// `None` when it is not bound.
    fn resolve(&self, name: &str) -> Option<Value>;
    /// `variables.<name>`, evaluated on first use; `None` when no variable
    /// has that name. What evaluating it costs is the activation's to
    /// account for, not the reading expression's.
    fn variable(&self, name: &str) -> Option<Out>;
}

/// A CEL type as a value (`type(x)`, `string`, `list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeValue(pub String);

impl Opaque for TypeValue {
    fn runtime_type_name(&self) -> &str {
        "type"
    }
}

const TYPE_NAMES: [&str; 10] = [
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];

/// Conversion functions cel-go's optimiser folds on a constant
/// (`overloads.IsTypeConversionFunction`).
const CONVERSIONS: [&str; 10] = [
    "bool",
    "bytes",
    "double",
    "duration",
    "dyn",
    "int",
    "string",
    "timestamp",
    "type",
    "uint",
];

/// One evaluation of one expression: its running cost and its limit.
pub struct Interpreter<'a> {
    activation: &'a dyn Activation,
    model: CostModel,
    limit: Option<u64>,
    cost: u64,
    scopes: Vec<(String, Out)>,
}

impl<'a> Interpreter<'a> {
    /// An evaluation over `activation`, stopped once its cost exceeds
    /// `limit`.
    pub fn new(activation: &'a dyn Activation, model: CostModel, limit: Option<u64>) -> Self {
        Interpreter {
            activation,
            model,
            limit,
            cost: 0,
            scopes: Vec::new(),
        }
    }

    /// What the evaluation has cost so far (when it was cancelled: the cost
    /// that went over the limit, as cel-go reports it).
    pub fn cost(&self) -> u64 {
        self.cost
    }

    /// Evaluates `expression`; a cancellation is the error cel-go reports.
    pub fn run(&mut self, expression: &IdedExpr) -> Out {
        match self.eval(expression) {
            Ok(out) => out,
            Err(Cancelled) => Err(EvalError::CostLimitExceeded),
        }
    }

    fn charge(&mut self, amount: u64) -> Result<(), Cancelled> {
        self.cost = self.cost.saturating_add(amount);
        match self.limit {
            Some(limit) if self.cost > limit => Err(Cancelled),
            _ => Ok(()),
        }
    }

    fn eval(&mut self, e: &IdedExpr) -> Step {
        match &e.expr {
            Expr::Literal(literal) => Ok(Ok(literal_value(literal))),
            Expr::Ident(_) | Expr::Select(_) => self.chain(e, true),
            // An index or a conditional (with its arity): an attribute.
            Expr::Call(_) if is_attribute(e) => self.chain(e, true),
            Expr::Call(call) => self.call(call),
            Expr::List(list) => {
                let constant = self.model.optimize && list.elements.iter().all(is_constant);
                let mut items = Vec::with_capacity(list.elements.len());
                let mut error = None;
                for element in &list.elements {
                    match self.eval(element)? {
                        Ok(v) => items.push(v),
                        Err(e) => {
                            error.get_or_insert(e);
                        }
                    }
                }
                if !constant {
                    self.charge(LIST_CREATE_BASE_COST)?;
                }
                Ok(match error {
                    Some(e) => Err(e),
                    None if !list.optional_indices.is_empty() => Err(EvalError::Unsupported(
                        "optional list elements are not supported",
                    )),
                    None => Ok(Value::List(Arc::new(items))),
                })
            }
            Expr::Map(map) => {
                let constant = self.model.optimize
                    && map.entries.iter().all(|entry| match &entry.expr {
                        EntryExpr::MapEntry(e) => {
                            !e.optional && is_constant(&e.key) && is_constant(&e.value)
                        }
                        EntryExpr::StructField(_) => false,
                    });
                let mut entries = HashMap::with_capacity(map.entries.len());
                let mut error = None;
                for entry in &map.entries {
                    let EntryExpr::MapEntry(entry) = &entry.expr else {
                        error.get_or_insert(EvalError::Unsupported(
                            "a struct field in a map literal",
                        ));
                        continue;
                    };
                    let key = self.eval(&entry.key)?;
                    let value = self.eval(&entry.value)?;
                    match (key.and_then(|k| map_key(&k)), value) {
                        (Ok(k), Ok(v)) => {
                            if entries.insert(k, v).is_some() {
                                error.get_or_insert(EvalError::RepeatedKey);
                            }
                        }
                        (Err(e), _) | (_, Err(e)) => {
                            error.get_or_insert(e);
                        }
                    }
                }
                if !constant {
                    self.charge(MAP_CREATE_BASE_COST)?;
                }
                Ok(match error {
                    Some(e) => Err(e),
                    None => Ok(Value::Map(Map {
                        map: Arc::new(entries),
                    })),
                })
            }
            Expr::Comprehension(comprehension) => self.comprehension(comprehension),
            Expr::Struct(s) => Ok(Err(EvalError::UnknownType(s.type_name.clone()))),
            Expr::Unspecified => Ok(Err(EvalError::Unsupported("unspecified expression"))),
        }
    }

    /// An attribute (an identifier, a selection, an index, a `?:`) or, at
    /// the root of one, anything else. `charge_root`: this attribute is
    /// evaluated, not resolved by a parent, so its own 1 is charged.
    fn chain(&mut self, e: &IdedExpr, charge_root: bool) -> Step {
        match &e.expr {
            Expr::Ident(name) => {
                let (value, constant) = self.ident(name);
                if charge_root && !constant {
                    self.charge(SELECT_AND_IDENT_COST)?;
                }
                Ok(value)
            }
            Expr::Select(select) => {
                let variables = matches!(&select.operand.expr,
                    Expr::Ident(n) if n == "variables" && self.scoped("variables").is_none());
                // `has()`'s own cost is charged only with the presence-test
                // option; its operand is resolved, not evaluated.
                let root = if select.test {
                    charge_root && self.model.presence_test_cost
                } else {
                    charge_root
                };
                if variables {
                    if root {
                        self.charge(SELECT_AND_IDENT_COST)?;
                    }
                    self.charge(1)?;
                    let value = self.activation.variable(&select.field);
                    return Ok(if select.test {
                        Ok(Value::Bool(value.is_some()))
                    } else {
                        value.unwrap_or_else(|| Err(EvalError::NoSuchKey(select.field.clone())))
                    });
                }
                let operand = self.chain_operand(&select.operand, root)?;
                self.charge(1)?;
                Ok(operand.and_then(|v| {
                    if select.test {
                        presence(&v, &select.field)
                    } else {
                        field(&v, &select.field)
                    }
                }))
            }
            Expr::Call(call)
                if call.target.is_none() && call.args.len() == 2 && call.func_name == "_[_]" =>
            {
                let operand = self.chain_operand(&call.args[0], charge_root)?;
                let index = self.qualifier(&call.args[1])?;
                self.charge(1)?;
                Ok(operand.and_then(|v| index_into(&v, &index?)))
            }
            Expr::Call(call)
                if call.target.is_none() && call.args.len() == 3 && call.func_name == "_?_:_" =>
            {
                // The conditional has no cost of its own; the branch taken
                // is resolved as an attribute.
                match self.eval(&call.args[0])? {
                    Ok(Value::Bool(true)) => self.chain(&call.args[1], false),
                    Ok(Value::Bool(false)) => self.chain(&call.args[2], false),
                    Ok(other) => Ok(Err(EvalError::no_overload(
                        "_?_:_",
                        format!("({}, ...)", type_name(&other)),
                    ))),
                    Err(e) => Ok(Err(e)),
                }
            }
            _ => self.eval(e),
        }
    }

    /// The operand of a selection or an index: an attribute continues the
    /// chain; anything else is evaluated and becomes a relative attribute,
    /// which costs 1 when evaluated.
    fn chain_operand(&mut self, e: &IdedExpr, charge_root: bool) -> Step {
        if is_attribute(e) {
            return self.chain(e, charge_root);
        }
        let value = self.eval(e)?;
        if charge_root {
            self.charge(SELECT_AND_IDENT_COST)?;
        }
        Ok(value)
    }

    /// An index: a constant is free, an attribute is resolved, anything
    /// else evaluated.
    fn qualifier(&mut self, e: &IdedExpr) -> Step {
        if is_attribute(e) {
            self.chain(e, false)
        } else {
            self.eval(e)
        }
    }

    fn scoped(&self, name: &str) -> Option<&Out> {
        self.scopes
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// An identifier's value, and whether it is a constant (a type name).
    fn ident(&self, name: &str) -> (Out, bool) {
        if let Some(value) = self.scoped(name) {
            return (value.clone(), false);
        }
        if let Some(value) = self.activation.resolve(name) {
            return (Ok(value), false);
        }
        if TYPE_NAMES.contains(&name) {
            return (Ok(type_value(name)), true);
        }
        (Err(EvalError::UndeclaredReference(name.to_string())), false)
    }

    fn comprehension(&mut self, c: &ComprehensionExpr) -> Step {
        if c.iter_var2.is_some() {
            return Ok(Err(EvalError::Unsupported(
                "two-variable comprehensions are not supported",
            )));
        }
        let range = match self.eval(&c.iter_range)? {
            Ok(range) => range,
            Err(e) => return Ok(Err(e)),
        };
        let items: Vec<Value> = match &range {
            Value::List(items) => items.to_vec(),
            Value::Map(map) => map.map.keys().map(Value::from).collect(),
            other => {
                return Ok(Err(EvalError::RangeType(type_name(other))));
            }
        };
        let accu = self.eval(&c.accu_init)?;
        let depth = self.scopes.len();
        self.scopes.push((c.accu_var.clone(), accu));
        self.scopes.push((c.iter_var.clone(), Ok(Value::Null)));
        for item in items {
            self.scopes[depth + 1].1 = Ok(item);
            if let Ok(Value::Bool(false)) = self.eval(&c.loop_cond)? {
                break;
            }
            let step = self.eval(&c.loop_step)?;
            self.scopes[depth].1 = step;
        }
        // The result sees the accumulator, not the iteration variable.
        self.scopes.truncate(depth + 1);
        let result = self.eval(&c.result)?;
        self.scopes.truncate(depth);
        Ok(result)
    }

    fn call(&mut self, call: &CallExpr) -> Step {
        let name = call.func_name.as_str();
        if call.target.is_none() && call.args.len() == 2 && matches!(name, "_&&_" | "_||_") {
            return self.logic(name == "_&&_", &call.args[0], &call.args[1]);
        }
        if call.target.is_none() && call.args.len() == 1 && name == "@not_strictly_false" {
            let value = self.eval(&call.args[0])?;
            self.charge(1)?;
            return Ok(Ok(Value::Bool(!matches!(value, Ok(Value::Bool(false))))));
        }
        if self.model.optimize
            && call.target.is_none()
            && call.args.len() == 2
            && name == "@in"
            && let Expr::List(list) = &call.args[1].expr
            && list
                .elements
                .iter()
                .all(|e| matches!(e.expr, Expr::Literal(_)))
            && list.elements.iter().all(|e| {
                !matches!(
                    e.expr,
                    Expr::Literal(LiteralValue::Bytes(_) | LiteralValue::Null)
                )
            })
        {
            // cel-go's optimiser turns `x in [constants]` into a set
            // lookup that costs only `x` (an empty list: false, `x`
            // unevaluated).
            if list.elements.is_empty() {
                return Ok(Ok(Value::Bool(false)));
            }
            let needle = self.eval(&call.args[0])?;
            return Ok(needle.map(|n| {
                Value::Bool(list.elements.iter().any(|e| match &e.expr {
                    Expr::Literal(l) => literal_value(l) == n,
                    _ => false,
                }))
            }));
        }
        if self.model.optimize
            && call.target.is_none()
            && call.args.len() == 1
            && CONVERSIONS.contains(&name)
            && is_constant(&call.args[0])
        {
            // Folded at plan time.
            let arg = self.eval(&call.args[0])?;
            return Ok(arg.and_then(|a| self.apply(name, None, &[a])));
        }
        // The accumulator of `map` and `filter` is appended to in place:
        // nothing else holds it while its step runs.
        if name == "_+_"
            && call.target.is_none()
            && call.args.len() == 2
            && let Expr::Ident(accu) = &call.args[0].expr
            && accu.starts_with('@')
            && let Some(position) = self.scopes.iter().rposition(|(n, _)| n == accu)
        {
            self.charge(SELECT_AND_IDENT_COST)?;
            let left = std::mem::replace(&mut self.scopes[position].1, Ok(Value::Null));
            let right = self.eval(&call.args[1])?;
            let args = [
                left.clone().unwrap_or(Value::Null),
                right.clone().unwrap_or(Value::Null),
            ];
            let result = match (left, right) {
                (Ok(l), Ok(r)) => (l + r).map_err(EvalError::from),
                (Err(e), _) | (_, Err(e)) => Err(e),
            };
            let cost = cost::call_cost(
                self.model,
                name,
                &args,
                result.as_ref().unwrap_or(&Value::Null),
            );
            self.charge(cost)?;
            return Ok(result);
        }

        let mut values = Vec::with_capacity(call.args.len() + 1);
        let mut error = None;
        let receiver = call.target.is_some();
        for e in call
            .target
            .iter()
            .map(|t| t.as_ref())
            .chain(call.args.iter())
        {
            match self.eval(e)? {
                Ok(v) => values.push(v),
                Err(e) => {
                    error.get_or_insert(e);
                    values.push(Value::Null);
                }
            }
        }
        let result = match error {
            Some(e) => Err(e),
            None if receiver => self.apply(name, Some(&values[0]), &values[1..]),
            None => self.apply(name, None, &values),
        };
        let cost = cost::call_cost(
            self.model,
            name,
            &values,
            result.as_ref().unwrap_or(&Value::Null),
        );
        self.charge(cost)?;
        Ok(result)
    }

    /// `&&` and `||`: no cost of their own; the right side is evaluated
    /// unless the left decides; an error on one side is absorbed when the
    /// other decides.
    fn logic(&mut self, and: bool, left: &IdedExpr, right: &IdedExpr) -> Step {
        let decisive = !and;
        let l = self.eval(left)?;
        if matches!(l, Ok(Value::Bool(b)) if b == decisive) {
            return Ok(l);
        }
        let r = self.eval(right)?;
        let operator = if and { "_&&_" } else { "_||_" };
        Ok(match (l, r) {
            (_, Ok(Value::Bool(b))) if b == decisive => Ok(Value::Bool(b)),
            (Ok(Value::Bool(_)), Ok(Value::Bool(b))) => Ok(Value::Bool(b)),
            (Err(e), _) => Err(e),
            (Ok(Value::Bool(_)), Err(e)) => Err(e),
            (Ok(l), r) => Err(EvalError::no_overload(
                operator,
                format!(
                    "({}, {})",
                    type_name(&l),
                    r.map(|r| type_name(&r)).unwrap_or_else(|_| "error".into())
                ),
            )),
        })
    }

    /// A function or operator on values.
    fn apply(&self, name: &str, target: Option<&Value>, args: &[Value]) -> Out {
        let overload = || {
            let types: Vec<String> = args.iter().map(type_name).collect();
            let operands = match target {
                Some(t) => format!("{}.({})", type_name(t), types.join(", ")),
                None => format!("({})", types.join(", ")),
            };
            EvalError::no_overload(name, operands)
        };
        if let Some(target) = target {
            if let Some(result) = authorizer::call(name, target, args) {
                return result;
            }
            if let Some(result) = strings::call(name, target, args) {
                return result;
            }
            return match (name, target, args) {
                ("size", t, []) => size(t).ok_or_else(overload),
                ("matches", Value::String(s), [Value::String(p)]) => matches(s, p),
                ("contains" | "startsWith" | "endsWith" | "join" | "check", _, _) => {
                    Err(overload())
                }
                _ if name.starts_with('_') || name.starts_with('@') => Err(overload()),
                _ => Err(EvalError::no_overload(
                    name,
                    format!("{}.(...)", type_name(target)),
                )),
            };
        }
        let binary = |f: fn(Value, Value) -> cel::ResolveResult| match args {
            [l, r] => f(l.clone(), r.clone()).map_err(EvalError::from),
            _ => Err(overload()),
        };
        let compare = |accept: fn(std::cmp::Ordering) -> bool| match args {
            [l, r] => l
                .partial_cmp(r)
                .filter(|_| comparable(l, r))
                .map(|o| Value::Bool(accept(o)))
                .ok_or_else(overload),
            _ => Err(overload()),
        };
        match (name, args) {
            ("_+_", _) => binary(|l, r| l + r),
            ("_-_", _) => binary(|l, r| l - r),
            ("_*_", _) => binary(|l, r| l * r),
            ("_/_", _) => binary(|l, r| l / r),
            ("_%_", _) => binary(|l, r| l % r),
            ("_==_", [l, r]) => Ok(Value::Bool(l == r)),
            ("_!=_", [l, r]) => Ok(Value::Bool(l != r)),
            ("_<_", _) => compare(|o| o.is_lt()),
            ("_<=_", _) => compare(|o| o.is_le()),
            ("_>_", _) => compare(|o| o.is_gt()),
            ("_>=_", _) => compare(|o| o.is_ge()),
            ("!_", [Value::Bool(b)]) => Ok(Value::Bool(!b)),
            ("-_", [Value::Int(i)]) => i
                .checked_neg()
                .map(Value::Int)
                .ok_or(EvalError::IntOverflow),
            ("-_", [Value::Float(f)]) => Ok(Value::Float(-f)),
            ("@in", [needle, Value::List(items)]) => Ok(Value::Bool(items.contains(needle))),
            ("@in", [needle, Value::Map(map)]) => Ok(Value::Bool(
                key_ref(needle).is_some_and(|k| map.get(&k).is_some()),
            )),
            ("size", [v]) => size(v).ok_or_else(overload),
            ("matches", [Value::String(s), Value::String(p)]) => matches(s, p),
            ("type", [v]) => Ok(type_value(&value_type(v))),
            ("dyn", [v]) => Ok(v.clone()),
            ("string", [v]) => to_string(v).ok_or_else(overload),
            ("int", [v]) => to_int(v),
            ("uint", [v]) => to_uint(v),
            ("double", [v]) => to_double(v),
            ("bool", [Value::Bool(b)]) => Ok(Value::Bool(*b)),
            ("bool", [Value::String(s)]) => match s.as_str() {
                "1" | "t" | "true" | "TRUE" | "True" => Ok(Value::Bool(true)),
                "0" | "f" | "false" | "FALSE" | "False" => Ok(Value::Bool(false)),
                _ => Err(EvalError::Conversion {
                    to: "bool",
                    text: s.to_string(),
                }),
            },
            ("bytes", [Value::String(s)]) => Ok(Value::Bytes(Arc::new(s.as_bytes().to_vec()))),
            ("bytes", [Value::Bytes(b)]) => Ok(Value::Bytes(b.clone())),
            _ if name.starts_with('_') || name.starts_with('@') || name.ends_with('_') => {
                Err(overload())
            }
            _ if matches!(
                name,
                "size" | "matches" | "string" | "int" | "uint" | "double" | "bool" | "bytes"
            ) =>
            {
                Err(overload())
            }
            _ => Err(EvalError::UndeclaredReference(name.to_string())),
        }
    }
}

/// Whether `e` is planned as an attribute by cel-go: an identifier, a
/// selection, an index, a conditional.
fn is_attribute(e: &IdedExpr) -> bool {
    match &e.expr {
        Expr::Ident(_) => true,
        Expr::Select(s) => !s.test,
        Expr::Call(c) => {
            c.target.is_none()
                && ((c.func_name == "_[_]" && c.args.len() == 2)
                    || (c.func_name == "_?_:_" && c.args.len() == 3))
        }
        _ => false,
    }
}

/// Whether cel-go's optimiser makes `e` a constant at plan time: literals,
/// lists and maps of constants, a conversion of a constant.
fn is_constant(e: &IdedExpr) -> bool {
    match &e.expr {
        Expr::Literal(_) => true,
        Expr::List(l) => l.optional_indices.is_empty() && l.elements.iter().all(is_constant),
        Expr::Map(m) => m.entries.iter().all(|entry| match &entry.expr {
            EntryExpr::MapEntry(e) => !e.optional && is_constant(&e.key) && is_constant(&e.value),
            EntryExpr::StructField(_) => false,
        }),
        Expr::Call(c) => {
            c.target.is_none()
                && c.args.len() == 1
                && CONVERSIONS.contains(&c.func_name.as_str())
                && is_constant(&c.args[0])
        }
        _ => false,
    }
}

fn literal_value(literal: &LiteralValue) -> Value {
    Value::try_from(literal.to_val().as_ref()).unwrap_or(Value::Null)
}

fn type_value(name: &str) -> Value {
    Value::Opaque(Arc::new(TypeValue(name.to_string())))
}

/// The name of `value`'s CEL type, as `type()` gives it.
fn value_type(value: &Value) -> String {
    match value {
        Value::Opaque(o) if o.downcast_ref::<TypeValue>().is_some() => "type".into(),
        other => type_name(other),
    }
}

fn key_ref(value: &Value) -> Option<KeyRef<'_>> {
    match value {
        Value::String(s) => Some(KeyRef::String(s.as_str())),
        Value::Int(i) => Some(KeyRef::Int(*i)),
        Value::UInt(u) => Some(KeyRef::Uint(*u)),
        Value::Bool(b) => Some(KeyRef::Bool(*b)),
        _ => None,
    }
}

fn map_key(value: &Value) -> Result<Key, EvalError> {
    match value {
        Value::String(s) => Ok(Key::String(s.clone())),
        Value::Int(i) => Ok(Key::Int(*i)),
        Value::UInt(u) => Ok(Key::Uint(*u)),
        Value::Bool(b) => Ok(Key::Bool(*b)),
        other => Err(EvalError::MapKeyType(type_name(other))),
    }
}

/// `value.name`.
fn field(value: &Value, name: &str) -> Out {
    match value {
        Value::Map(map) => map
            .get(&KeyRef::String(name))
            .cloned()
            .ok_or_else(|| EvalError::NoSuchKey(name.to_string())),
        // cel-go qualifies a list by index (`types.IndexOrError`), and a
        // field name is none.
        Value::List(_) => Err(EvalError::ListField),
        // cel-go's `refQualify`: anything else (null, a scalar) has no
        // fields.
        _ => Err(EvalError::NoSuchKey(name.to_string())),
    }
}

/// `has(value.name)`: as cel-go's `refQualify` tests presence, a map has the
/// field when it has the key, a list is an error, and any other value (null,
/// a scalar) has no field, without an error.
fn presence(value: &Value, name: &str) -> Out {
    match value {
        Value::Map(map) => Ok(Value::Bool(map.get(&KeyRef::String(name)).is_some())),
        Value::List(_) => Err(EvalError::ListField),
        _ => Ok(Value::Bool(false)),
    }
}

/// `value[index]`.
fn index_into(value: &Value, index: &Value) -> Out {
    match (value, index) {
        (Value::List(items), index) => {
            let position = match index {
                Value::Int(i) => usize::try_from(*i).ok(),
                Value::UInt(u) => usize::try_from(*u).ok(),
                Value::Float(f) if f.fract() == 0.0 && *f >= 0.0 => Some(*f as usize),
                other => {
                    return Err(EvalError::no_overload(
                        "_[_]",
                        format!("(list, {})", type_name(other)),
                    ));
                }
            };
            position
                .and_then(|p| items.get(p))
                .cloned()
                .ok_or_else(|| EvalError::IndexOutOfBounds(format!("{index:?}")))
        }
        (Value::Map(map), key) => {
            key_ref(key)
                .and_then(|k| map.get(&k))
                .cloned()
                .ok_or_else(|| {
                    EvalError::NoSuchKey(match key {
                        Value::String(s) => s.to_string(),
                        other => format!("{other:?}"),
                    })
                })
        }
        (other, index) => Err(EvalError::no_overload(
            "_[_]",
            format!("({}, {})", type_name(other), type_name(index)),
        )),
    }
}

fn size(value: &Value) -> Option<Value> {
    match value {
        Value::String(_) | Value::Bytes(_) | Value::List(_) | Value::Map(_) => {
            Some(Value::Int(cost::actual_size(value) as i64))
        }
        _ => None,
    }
}

/// Ordering is defined between numbers, and within strings, bools, bytes.
fn comparable(l: &Value, r: &Value) -> bool {
    let number = |v: &Value| matches!(v, Value::Int(_) | Value::UInt(_) | Value::Float(_));
    (number(l) && number(r))
        || matches!(
            (l, r),
            (Value::String(_), Value::String(_))
                | (Value::Bool(_), Value::Bool(_))
                | (Value::Bytes(_), Value::Bytes(_))
        )
}

/// Compiled patterns (or why they do not compile), by pattern.
type RegexCache = HashMap<String, Result<Arc<regex::Regex>, EvalError>>;

/// `string.matches(pattern)`: RE2 syntax, matching anywhere in the string.
fn matches(text: &str, pattern: &str) -> Out {
    static CACHE: OnceLock<Mutex<RegexCache>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let compiled = {
        let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .entry(pattern.to_string())
            .or_insert_with(|| {
                regex::Regex::new(pattern)
                    .map(Arc::new)
                    .map_err(|e| EvalError::InvalidRegex(e.to_string()))
            })
            .clone()
    };
    compiled.map(|re| Value::Bool(re.is_match(text)))
}

fn to_string(value: &Value) -> Option<Value> {
    let text = match value {
        Value::String(s) => return Some(Value::String(s.clone())),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Bytes(b) => String::from_utf8(b.to_vec()).ok()?,
        Value::Opaque(o) => o.downcast_ref::<TypeValue>()?.0.clone(),
        _ => return None,
    };
    Some(Value::String(Arc::new(text)))
}

fn to_int(value: &Value) -> Out {
    match value {
        Value::Int(i) => Ok(Value::Int(*i)),
        Value::UInt(u) => i64::try_from(*u)
            .map(Value::Int)
            .map_err(|_| EvalError::IntOverflow),
        Value::Float(f) if f.is_finite() && *f > i64::MIN as f64 && *f < i64::MAX as f64 => {
            Ok(Value::Int(f.trunc() as i64))
        }
        Value::Float(_) => Err(EvalError::IntOverflow),
        Value::String(s) => s
            .parse()
            .map(Value::Int)
            .map_err(|_| EvalError::Conversion {
                to: "int",
                text: s.to_string(),
            }),
        other => Err(EvalError::no_overload(
            "int",
            format!("({})", type_name(other)),
        )),
    }
}

fn to_uint(value: &Value) -> Out {
    match value {
        Value::UInt(u) => Ok(Value::UInt(*u)),
        Value::Int(i) => u64::try_from(*i)
            .map(Value::UInt)
            .map_err(|_| EvalError::UintOverflow),
        Value::Float(f) if f.is_finite() && *f >= 0.0 && *f < u64::MAX as f64 => {
            Ok(Value::UInt(f.trunc() as u64))
        }
        Value::Float(_) => Err(EvalError::UintOverflow),
        Value::String(s) => s
            .parse()
            .map(Value::UInt)
            .map_err(|_| EvalError::Conversion {
                to: "uint",
                text: s.to_string(),
            }),
        other => Err(EvalError::no_overload(
            "uint",
            format!("({})", type_name(other)),
        )),
    }
}

fn to_double(value: &Value) -> Out {
    match value {
        Value::Float(f) => Ok(Value::Float(*f)),
        Value::Int(i) => Ok(Value::Float(*i as f64)),
        Value::UInt(u) => Ok(Value::Float(*u as f64)),
        Value::String(s) => s
            .parse()
            .map(Value::Float)
            .map_err(|_| EvalError::Conversion {
                to: "double",
                text: s.to_string(),
            }),
        other => Err(EvalError::no_overload(
            "double",
            format!("({})", type_name(other)),
        )),
    }
}

/// An activation of named values and no composited variables.
pub struct Bindings(pub Vec<(&'static str, Value)>);

impl Activation for Bindings {
    fn resolve(&self, name: &str) -> Option<Value> {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    }

    fn variable(&self, _: &str) -> Option<Out> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The API server quotes these texts in its messages: each variant
    /// prints what cel-go prints for the same failure.
    #[test]
    fn errors_print_cel_gos_words() {
        let cases = [
            (EvalError::CostLimitExceeded, COST_LIMIT_EXCEEDED),
            (EvalError::NoSuchKey("x".into()), "no such key: x"),
            (
                EvalError::no_overload("_+_", "(int, string)".into()),
                "found no matching overload for '_+_' applied to '(int, string)'",
            ),
            (
                EvalError::ListField,
                "unsupported index type 'string' in list",
            ),
            (
                EvalError::Conversion {
                    to: "int",
                    text: "x".into(),
                },
                "type conversion error from 'string' to 'int': x",
            ),
            (
                EvalError::SubstringRange { start: 2, end: 1 },
                "invalid substring range. start: 2, end: 1",
            ),
            (
                EvalError::Variable {
                    name: "v".into(),
                    error: Box::new(EvalError::UndeclaredReference("y".into())),
                },
                "composited variable \"v\" fails to evaluate: undeclared reference to 'y'",
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
    }
}
