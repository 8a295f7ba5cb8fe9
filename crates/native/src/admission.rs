//! How the API server evaluates a ValidatingAdmissionPolicy and its binding
//! on one admission request (kubernetes
//! `staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/`:
//! `plugin.go` compiles, `dispatcher.go` loops over policies and params,
//! `validator.go` decides; `admission/plugin/cel/`: `condition.go`,
//! `activation.go`, `composition.go`; the matching in
//! `plugin/policy/matching/matching.go`):
//!
//! - the match conditions run first, on their own budget
//!   (`RuntimeCELCostBudgetMatchConditions`); any false skips the policy,
//!   otherwise any error fails it;
//! - the validations run with `object`, `oldObject`, `request`, `params`,
//!   `authorizer` and `variables`, each variable evaluated on first use and
//!   charged once to the evaluation's budget (`RuntimeCELCostBudget`);
//! - then *every* `messageExpression` runs, whatever the validations
//!   decided, with what is left of the budget, compiled without the
//!   `authorizer` and in a fresh composition context: the variables are
//!   computed again, and one that needs the authorizer errors, so its
//!   message falls back to the static `message`. Running out of budget
//!   there turns every decision into an error;
//! - each expression may cost `PerCallLimit`; beyond it the expression
//!   errors; beyond the budget the whole evaluation does. With
//!   `failurePolicy: Fail` an error denies.
//!
//! Costs are counted as cel-go counts them ([`crate::interpreter`],
//! [`crate::cost`]), per Kubernetes version ([`Options`]); warnings are
//! cut as the API server's warning recorder cuts them ([`crate::warnings`]).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;

use cel::{Env, Program, Value};
use serde_json::Value as Json;

use olm_guard_core::UserInfo;

use crate::authorizer::{Authorize, Authorizer};
use crate::cost::{
    CostModel, KubernetesVersion, MATCH_CONDITIONS_BUDGET, PER_CALL_LIMIT, RUNTIME_BUDGET,
};
use crate::interpreter::{Activation, Bindings, EvalError, Interpreter, Out};
use crate::model::{BoundPolicy, ResourceRule};
use crate::values::to_cel;

/// The API server's text when an evaluation runs out of its budget
/// (`activation.go`, `Evaluate`).
pub const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// The longest message a `messageExpression` may give
/// (`MaxEvaluatedMessageExpressionSizeBytes`); a longer one falls back.
pub const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

/// What the API server does with a request, after every policy.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// No policy matched the request.
    NotMatched,
    /// Admitted; the warnings of `Warn` bindings, in policy order, cut as
    /// the API server cuts them.
    Allowed {
        /// `Warning` headers, as the API server words them.
        warnings: Vec<String>,
    },
    /// Refused by a `Deny` binding, with the API server's message.
    Denied {
        /// The message `kubectl` prints.
        message: String,
    },
}

/// A policy that cannot be evaluated at all: the API server would refuse
/// to store it.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// An expression does not parse.
    #[error("policy {policy}: an expression does not compile: {problem}")]
    Compile {
        /// The policy's name.
        policy: String,
        /// The expression.
        expression: String,
        /// The parser's message.
        problem: String,
    },
    /// The authorizer library could not be declared (a name clash).
    #[error("the CEL environment cannot be built: {0}")]
    Environment(String),
}

/// Where the params of a policy with a `paramKind` come from: every object
/// of `api_version`/`kind` the binding's selector matches.
pub trait Params {
    /// The objects of that kind matching `selector` (a LabelSelector).
    fn params(&self, api_version: &str, kind: &str, selector: &Json) -> Vec<Json>;
}

/// No parameter resources: what the generated policies need, since none of
/// them binds a `paramKind`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoParams;

impl Params for NoParams {
    fn params(&self, _: &str, _: &str, _: &Json) -> Vec<Json> {
        Vec::new()
    }
}

/// Which API server to be: its version, and the
/// `StrictCostEnforcementForVAP` gate (beta, off by default, on 1.30 and
/// 1.31; GA and locked on from 1.32).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// The Kubernetes release; the newest by default.
    pub version: KubernetesVersion,
    /// The gate, when set otherwise than the release's default (ignored
    /// from 1.32, where it is locked on).
    pub strict_cost: Option<bool>,
}

impl Options {
    /// The release `version` with its defaults.
    pub fn version(version: KubernetesVersion) -> Self {
        Options {
            version,
            strict_cost: None,
        }
    }

    /// Whether the authorizer's and the libraries' costs are charged.
    pub fn strict_cost(&self) -> bool {
        self.version.strict_cost_by_default() || self.strict_cost.unwrap_or(false)
    }

    /// The cost model this API server applies.
    pub fn cost_model(&self) -> CostModel {
        CostModel::kubernetes_with_gate(self.strict_cost())
    }
}

/// Where an expression runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `matchConditions`, on their own budget, with the authorizer.
    MatchConditions,
    /// `validations[].expression`, with the authorizer.
    Validations,
    /// `validations[].messageExpression`, on what the validations left,
    /// without the authorizer.
    Messages,
}

/// What one expression (or variable) cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpressionCost {
    /// Where it ran.
    pub phase: Phase,
    /// Which field: `validations[2].expression`, `variables.addsRules`.
    pub field: String,
    /// Its runtime cost, as cel-go counts it (a variable's: charged once,
    /// to the expression that first read it).
    pub cost: u64,
    /// It went over the per-expression limit and was stopped.
    pub over_limit: bool,
    /// The error it gave, if any ([`EvalError`]'s text).
    pub error: Option<String>,
}

/// The budget ran out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfBudget {
    /// In which phase.
    pub phase: Phase,
    /// The expression whose cost (with the variables it read) went over.
    pub field: String,
    /// What was left before it.
    pub remaining: u64,
    /// What it cost, with the variables it read first: more than
    /// `remaining`.
    pub needed: u64,
}

/// What a decision does to the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Admit.
    Admit,
    /// Deny (or warn, for a `Warn` binding).
    Deny,
}

/// How a decision was reached (`validator.go`'s `PolicyDecisionEvaluation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evaluation {
    /// The validation held.
    Admit,
    /// The validation did not hold.
    Deny,
    /// It could not be evaluated; the failure policy decided.
    Error,
}

/// One decision of a validator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Admit or deny.
    pub action: Action,
    /// Why.
    pub evaluation: Evaluation,
    /// The message a denial or warning shows (empty when admitted).
    pub message: String,
}

/// One evaluation of a policy (one per param for a policy with params).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvaluationReport {
    /// The match conditions held (or there were none).
    pub conditions_matched: bool,
    /// What the match conditions cost, of their own budget.
    pub match_conditions_cost: u64,
    /// What the validations and messages cost, of `RuntimeCELCostBudget`.
    pub cost: u64,
    /// Every expression and variable evaluated, in order.
    pub expressions: Vec<ExpressionCost>,
    /// Where the budget ran out, if it did.
    pub out_of_budget: Option<OutOfBudget>,
    /// The decisions, one per validation (one in all when the evaluation
    /// failed as a whole).
    pub decisions: Vec<Decision>,
}

impl EvaluationReport {
    /// The expressions that went over the per-expression limit.
    pub fn over_limit(&self) -> impl Iterator<Item = &ExpressionCost> {
        self.expressions.iter().filter(|e| e.over_limit)
    }
}

/// One policy and its binding on one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyReport {
    /// The policy's name.
    pub policy: String,
    /// The binding's name.
    pub binding: String,
    /// Its resource rules matched the request.
    pub matched: bool,
    /// One per param (or one), when matched.
    pub evaluations: Vec<EvaluationReport>,
}

/// Everything the API server did with a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// As which API server.
    pub options: Options,
    /// The answer.
    pub outcome: Outcome,
    /// The `Warning` headers of the response, allowed or denied, cut as the
    /// API server cuts them.
    pub warnings: Vec<String>,
    /// Each policy, in order.
    pub policies: Vec<PolicyReport>,
}

impl Report {
    /// The report of the policy named `name`.
    pub fn policy(&self, name: &str) -> Option<&PolicyReport> {
        self.policies.iter().find(|p| p.policy == name)
    }
}

/// One compiled policy.
struct Compiled {
    bound: BoundPolicy,
    conditions: Vec<Program>,
    variables: Vec<(String, Program)>,
    validations: Vec<Program>,
    messages: Vec<Option<Program>>,
}

fn compile(env: &Env, bound: &BoundPolicy) -> Result<Compiled, PolicyError> {
    let name = &bound.policy.metadata.name;
    let one = |expression: &str| {
        env.compile(expression).map_err(|e| PolicyError::Compile {
            policy: name.clone(),
            expression: expression.to_string(),
            problem: olm_guard_core::text::one_line(
                &e.to_string(),
                olm_guard_core::text::QUOTE_MAX,
            ),
        })
    };
    let spec = &bound.policy.spec;
    Ok(Compiled {
        bound: bound.clone(),
        conditions: spec
            .match_conditions
            .iter()
            .map(|c| one(&c.expression))
            .collect::<Result<_, _>>()?,
        variables: spec
            .variables
            .iter()
            .map(|v| Ok((v.name.clone(), one(&v.expression)?)))
            .collect::<Result<_, PolicyError>>()?,
        validations: spec
            .validations
            .iter()
            .map(|v| one(&v.expression))
            .collect::<Result<_, _>>()?,
        messages: spec
            .validations
            .iter()
            .map(|v| {
                v.message_expression
                    .as_deref()
                    .filter(|m| !m.is_empty())
                    .map(one)
                    .transpose()
            })
            .collect::<Result<_, _>>()?,
    })
}

/// Every expression of `policies` compiles (what the API server checks
/// when the policy is created).
pub fn check_compiles(policies: &[BoundPolicy]) -> Result<(), PolicyError> {
    Policies::compile(policies).map(|_| ())
}

/// Policies compiled once, evaluated on many requests.
pub struct Policies {
    compiled: Vec<Compiled>,
}

impl Policies {
    /// Compiles every expression of `policies`, as the API server does when
    /// they are created.
    pub fn compile(policies: &[BoundPolicy]) -> Result<Policies, PolicyError> {
        let env = Env::stdlib();
        let compiled = policies
            .iter()
            .map(|bound| compile(&env, bound))
            .collect::<Result<_, _>>()?;
        Ok(Policies { compiled })
    }

    /// Evaluates the policies on `request` (the `request` of an
    /// AdmissionReview) as the newest API server would.
    pub fn evaluate(
        &self,
        request: &Json,
        authorize: Arc<dyn Authorize>,
        params: &dyn Params,
    ) -> Outcome {
        self.evaluate_detailed(request, authorize, params, Options::default())
            .outcome
    }

    /// Evaluates the policies on `request` as the API server `options`
    /// describe, with every policy's costs and decisions.
    pub fn evaluate_detailed(
        &self,
        request: &Json,
        authorize: Arc<dyn Authorize>,
        params: &dyn Params,
        options: Options,
    ) -> Report {
        let user: UserInfo = request
            .get("userInfo")
            .and_then(|u| serde_json::from_value(u.clone()).ok())
            .unwrap_or_default();
        let model = options.cost_model();
        let mut matched = false;
        let mut recorder = crate::warnings::Recorder::default();
        let mut denial: Option<String> = None;
        let mut reports = Vec::new();
        for compiled in &self.compiled {
            let bound = &compiled.bound;
            let policy = &bound.policy.metadata.name;
            let binding = &bound.binding.metadata.name;
            let mut report = PolicyReport {
                policy: policy.clone(),
                binding: binding.clone(),
                matched: matches(&bound.policy.spec.match_constraints.resource_rules, request),
                evaluations: Vec::new(),
            };
            if report.matched {
                matched = true;
                let authorizer = Authorizer::new(user.clone(), authorize.clone()).value();
                report.evaluations = evaluate_bound(compiled, request, &authorizer, params, model);
                let actions = &bound.binding.spec.validation_actions;
                // dispatcher.go: every denied decision warns for `Warn`; the
                // first denied decision of all becomes the error for `Deny`.
                for decision in report.evaluations.iter().flat_map(|e| &e.decisions) {
                    if decision.action != Action::Deny {
                        continue;
                    }
                    if actions.iter().any(|a| a == "Deny") && denial.is_none() {
                        denial = Some(format!(
                            "{}ValidatingAdmissionPolicy '{policy}' with binding '{binding}' \
                             denied request: {}",
                            forbidden_prefix(request),
                            decision.message
                        ));
                    }
                    if actions.iter().any(|a| a == "Warn") {
                        recorder.add(&format!(
                            "Validation failed for ValidatingAdmissionPolicy '{policy}' with \
                             binding '{binding}': {}",
                            decision.message
                        ));
                    }
                }
            }
            reports.push(report);
        }
        let warnings = recorder.into_warnings();
        let outcome = match denial {
            Some(message) => Outcome::Denied { message },
            None if matched => Outcome::Allowed {
                warnings: warnings.clone(),
            },
            None => Outcome::NotMatched,
        };
        Report {
            options,
            outcome,
            warnings,
            policies: reports,
        }
    }
}

/// Compiles `policies` and evaluates them on one `request`.
pub fn evaluate(
    policies: &[BoundPolicy],
    request: &Json,
    authorize: Arc<dyn Authorize>,
    params: &dyn Params,
) -> Result<Outcome, PolicyError> {
    Ok(Policies::compile(policies)?.evaluate(request, authorize, params))
}

/// A whole evaluation that failed: one error decision, as the failure
/// policy decides it.
fn failed(compiled: &Compiled, message: String) -> Decision {
    Decision {
        action: failure_action(compiled),
        evaluation: Evaluation::Error,
        message,
    }
}

fn failure_action(compiled: &Compiled) -> Action {
    if compiled.bound.policy.spec.failure_policy == "Ignore" {
        Action::Admit
    } else {
        Action::Deny
    }
}

/// The evaluations of one policy: for a policy with params, one per param,
/// each with its own budget (`dispatcher.go` loops over them).
fn evaluate_bound(
    compiled: &Compiled,
    request: &Json,
    authorizer: &Value,
    params: &dyn Params,
    model: CostModel,
) -> Vec<EvaluationReport> {
    let spec = &compiled.bound.policy.spec;
    let single = |message: &str| EvaluationReport {
        conditions_matched: true,
        match_conditions_cost: 0,
        cost: 0,
        expressions: Vec::new(),
        out_of_budget: None,
        decisions: vec![failed(compiled, message.to_string())],
    };
    let Some(kind) = &spec.param_kind else {
        return vec![validate(compiled, request, authorizer, &Json::Null, model)];
    };
    let Some(param_ref) = &compiled.bound.binding.spec.param_ref else {
        return vec![single(
            "failed to configure binding: the policy has a paramKind but the binding no paramRef",
        )];
    };
    let found = params.params(&kind.api_version, &kind.kind, &param_ref.selector);
    if found.is_empty() {
        return if param_ref.parameter_not_found_action == "Deny" {
            vec![single(
                "no params found for policy binding with `Deny` parameterNotFoundAction",
            )]
        } else {
            Vec::new()
        };
    }
    found
        .iter()
        .map(|param| validate(compiled, request, authorizer, param, model))
        .collect()
}

/// The names of one evaluation without the authorizer, as `activation.go`
/// binds them for message expressions.
fn bindings(request: &Json, param: &Json) -> Bindings {
    let null = Json::Null;
    Bindings(vec![
        ("object", to_cel(request.get("object").unwrap_or(&null))),
        (
            "oldObject",
            to_cel(request.get("oldObject").unwrap_or(&null)),
        ),
        // `request` is typed in the API server (`kubernetes.AdmissionRequest`):
        // a field is set or absent, never null.
        ("request", to_cel(&without_nulls(request))),
        ("params", to_cel(param)),
        ("namespaceObject", Value::Null),
    ])
}

/// `validator.go`'s `Validate` on one param.
fn validate(
    compiled: &Compiled,
    request: &Json,
    authorizer: &Value,
    param: &Json,
    model: CostModel,
) -> EvaluationReport {
    let spec = &compiled.bound.policy.spec;
    let without_authorizer = bindings(request, param);
    let mut with_authorizer = Bindings(without_authorizer.0.clone());
    with_authorizer.0.push(("authorizer", authorizer.clone()));
    let mut report = EvaluationReport {
        conditions_matched: true,
        match_conditions_cost: 0,
        cost: 0,
        expressions: Vec::new(),
        out_of_budget: None,
        decisions: Vec::new(),
    };

    if !compiled.conditions.is_empty() {
        let composition =
            Composition::new(&with_authorizer, compiled, model, Phase::MatchConditions);
        let expressions: Vec<(String, &str, Option<&Program>)> = compiled
            .conditions
            .iter()
            .zip(&spec.match_conditions)
            .enumerate()
            .map(|(i, (program, c))| {
                (
                    format!("matchConditions[{i}] ({})", c.name),
                    c.expression.as_str(),
                    Some(program),
                )
            })
            .collect();
        let run = for_input(
            &composition,
            &expressions,
            MATCH_CONDITIONS_BUDGET,
            &mut report,
        );
        report.match_conditions_cost = MATCH_CONDITIONS_BUDGET - run.remaining;
        let Some(results) = run.results else {
            report.decisions = vec![failed(compiled, OUT_OF_BUDGET.into())];
            return report;
        };
        // matcher.go: any false skips the policy; otherwise errors fail it.
        let mut errors = Vec::new();
        for result in results.into_iter().flatten() {
            match result {
                Ok(Value::Bool(false)) => {
                    report.conditions_matched = false;
                    return report;
                }
                Ok(Value::Bool(true)) => {}
                Ok(other) => errors.push(format!(
                    "matchCondition must evaluate to bool, not {}",
                    crate::authorizer::type_name(&other)
                )),
                Err(e) => errors.push(e.to_string()),
            }
        }
        if !errors.is_empty() {
            let message = if errors.len() == 1 {
                errors.remove(0)
            } else {
                format!("[{}]", errors.join(", "))
            };
            report.decisions = vec![failed(compiled, message)];
            return report;
        }
    }

    let composition = Composition::new(&with_authorizer, compiled, model, Phase::Validations);
    let expressions: Vec<(String, &str, Option<&Program>)> = compiled
        .validations
        .iter()
        .zip(&spec.validations)
        .enumerate()
        .map(|(i, (program, v))| {
            (
                format!("validations[{i}].expression"),
                v.expression.as_str(),
                Some(program),
            )
        })
        .collect();
    let run = for_input(&composition, &expressions, RUNTIME_BUDGET, &mut report);
    let Some(results) = run.results else {
        report.cost = RUNTIME_BUDGET;
        report.decisions = vec![failed(compiled, OUT_OF_BUDGET.into())];
        return report;
    };

    // Every message expression, whatever the validations decided, without
    // the authorizer, in a fresh composition context.
    let composition = Composition::new(&without_authorizer, compiled, model, Phase::Messages);
    let expressions: Vec<(String, &str, Option<&Program>)> = compiled
        .messages
        .iter()
        .zip(&spec.validations)
        .enumerate()
        .map(|(i, (program, v))| {
            (
                format!("validations[{i}].messageExpression"),
                v.message_expression.as_deref().unwrap_or(""),
                program.as_ref(),
            )
        })
        .collect();
    let messages = for_input(&composition, &expressions, run.remaining, &mut report);
    report.cost = RUNTIME_BUDGET - messages.remaining;

    for (i, (result, source)) in results.into_iter().zip(&spec.validations).enumerate() {
        let message_result = messages
            .results
            .as_ref()
            .and_then(|m| m.get(i).cloned().flatten());
        let decision = match result {
            Some(Err(error)) => failed(compiled, error.to_string()),
            _ if messages.results.is_none() => failed(
                compiled,
                format!("failed messageExpression: {OUT_OF_BUDGET}"),
            ),
            Some(Ok(Value::Bool(true))) => Decision {
                action: Action::Admit,
                evaluation: Evaluation::Admit,
                message: String::new(),
            },
            _ => Decision {
                action: Action::Deny,
                evaluation: Evaluation::Deny,
                message: message(source, message_result),
            },
        };
        report.decisions.push(decision);
    }
    report
}

/// What `ForInput` gave: each expression's result (`None` for a
/// placeholder), or `None` when the budget ran out; and what is left.
struct Run {
    results: Option<Vec<Option<Judged>>>,
    remaining: u64,
}

/// An expression's value, or its error as the API server reports it.
type Judged = Result<Value, ExpressionError>;

/// A failed expression as `condition.go`'s `ForInput` reports it: the
/// expression quoted, then its CEL error (kept in this message, so not
/// also a source).
#[derive(Debug, Clone, thiserror::Error)]
#[error("expression '{expression}' resulted in error: {error}")]
struct ExpressionError {
    /// The expression's text.
    expression: String,
    /// What it gave.
    error: EvalError,
}

/// `condition.go`'s `ForInput` with `activation.go`'s `Evaluate`: each
/// expression in turn, each stopped past `PerCallLimit`, the variables it
/// reads and then its own cost taken from `budget`; past it, the whole run
/// fails.
fn for_input(
    composition: &Composition,
    expressions: &[(String, &str, Option<&Program>)],
    budget: u64,
    report: &mut EvaluationReport,
) -> Run {
    let mut remaining = budget;
    let mut results = Vec::with_capacity(expressions.len());
    for (field, source, program) in expressions {
        let Some(program) = program else {
            results.push(None);
            continue;
        };
        let mut interpreter =
            Interpreter::new(composition, composition.model, Some(PER_CALL_LIMIT));
        let out = interpreter.run(program.expression());
        report.expressions.extend(composition.log.take());
        let variables = composition.accumulated.take();
        let own = interpreter.cost();
        report.expressions.push(ExpressionCost {
            phase: composition.phase,
            field: field.clone(),
            cost: own,
            over_limit: own > PER_CALL_LIMIT,
            error: out.as_ref().err().map(ToString::to_string),
        });
        let out_of_budget = variables > remaining || own > remaining - variables;
        if out_of_budget {
            report.out_of_budget = Some(OutOfBudget {
                phase: composition.phase,
                field: field.clone(),
                remaining,
                needed: variables.saturating_add(own),
            });
            return Run {
                results: None,
                remaining: 0,
            };
        }
        remaining -= variables + own;
        results.push(Some(out.map_err(|error| ExpressionError {
            expression: source.to_string(),
            error,
        })));
    }
    Run {
        results: Some(results),
        remaining,
    }
}

/// `composition.go`'s composition context: the bindings, and the variables
/// evaluated lazily, each once, their cost accumulated until the reading
/// expression's evaluation takes it.
struct Composition<'a> {
    bindings: &'a Bindings,
    variables: &'a [(String, Program)],
    model: CostModel,
    phase: Phase,
    cache: RefCell<HashMap<String, Out>>,
    accumulated: Cell<u64>,
    log: RefCell<Vec<ExpressionCost>>,
}

impl<'a> Composition<'a> {
    fn new(bindings: &'a Bindings, compiled: &'a Compiled, model: CostModel, phase: Phase) -> Self {
        Composition {
            bindings,
            variables: &compiled.variables,
            model,
            phase,
            cache: RefCell::new(HashMap::new()),
            accumulated: Cell::new(0),
            log: RefCell::new(Vec::new()),
        }
    }
}

impl Activation for Composition<'_> {
    fn resolve(&self, name: &str) -> Option<Value> {
        self.bindings.resolve(name)
    }

    fn variable(&self, name: &str) -> Option<Out> {
        if let Some(cached) = self.cache.borrow().get(name) {
            return Some(cached.clone());
        }
        let (_, program) = self.variables.iter().find(|(n, _)| n == name)?;
        let mut interpreter = Interpreter::new(self, self.model, Some(PER_CALL_LIMIT));
        let out = interpreter
            .run(program.expression())
            .map_err(|error| EvalError::Variable {
                name: name.to_string(),
                error: Box::new(error),
            });
        let cost = interpreter.cost();
        self.accumulated
            .set(self.accumulated.get().saturating_add(cost));
        self.log.borrow_mut().push(ExpressionCost {
            phase: self.phase,
            field: format!("variables.{name}"),
            cost,
            over_limit: cost > PER_CALL_LIMIT,
            error: out.as_ref().err().map(ToString::to_string),
        });
        self.cache
            .borrow_mut()
            .insert(name.to_string(), out.clone());
        Some(out)
    }
}

/// The message of a failed validation (`validator.go`): the
/// `messageExpression`'s string, trimmed, when it gave one that is not
/// empty, not longer than 5 KiB and on one line; else `message`, else
/// "failed expression: <expression>".
fn message(source: &crate::model::Validation, from_expression: Option<Judged>) -> String {
    let evaluated = match from_expression {
        Some(Ok(Value::String(s))) => {
            let s = s.trim();
            (!s.is_empty() && s.len() <= MAX_MESSAGE_EXPRESSION_BYTES && !s.contains('\n'))
                .then(|| s.to_string())
        }
        _ => None,
    };
    evaluated
        .or_else(|| {
            source
                .message
                .as_deref()
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map(str::to_string)
        })
        .unwrap_or_else(|| format!("failed expression: {}", source.expression.trim()))
}

/// What the API server puts before a policy's denial: the denial is an
/// `admission.NewForbidden` error (k8s.io/apiserver `pkg/admission/
/// errors.go`), whose message is apimachinery's `NewForbidden`: `<resource>.
/// <group> "<name>" is forbidden: `, the name being the request's, else the
/// object's name or generateName, else `Unknown`.
fn forbidden_prefix(request: &Json) -> String {
    let text = |pointer: &str| {
        request
            .pointer(pointer)
            .and_then(Json::as_str)
            .filter(|s| !s.is_empty())
    };
    let resource = match (text("/resource/resource"), text("/resource/group")) {
        (Some(resource), Some(group)) => format!("{resource}.{group}"),
        (Some(resource), None) => resource.to_string(),
        (None, _) => return "forbidden: ".into(),
    };
    let name = text("/name")
        .or_else(|| text("/object/metadata/name"))
        .or_else(|| text("/object/metadata/generateName"))
        .unwrap_or("Unknown");
    format!("{resource} {} is forbidden: ", go_quote(name))
}

/// `text` as Go's `%q` writes it (strconv.Quote): in double quotes, with
/// `"`, `\` and characters that are not printable escaped.
fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `value` without its null fields, at every depth: what the API server
/// sees of a typed request, or of a structural schema's object after it
/// prunes nulls.
pub fn without_nulls(value: &Json) -> Json {
    match value {
        Json::Object(map) => Json::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// `matching.go`: the request's resource, subresource and operation against
/// `resourceRules`.
fn matches(rules: &[ResourceRule], request: &Json) -> bool {
    let text = |pointer: &str| {
        request
            .pointer(pointer)
            .and_then(Json::as_str)
            .unwrap_or("")
    };
    let group = text("/resource/group");
    let version = text("/resource/version");
    let resource = text("/resource/resource");
    let subresource = text("/subResource");
    let operation = text("/operation");
    let full = if subresource.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}/{subresource}")
    };
    let any = |list: &[String], value: &str| list.iter().any(|v| v == "*" || v == value);
    rules.iter().any(|rule| {
        any(&rule.api_groups, group)
            && any(&rule.api_versions, version)
            && any(&rule.operations, operation)
            && rule.resources.iter().any(|r| {
                r == "*" && subresource.is_empty()
                    || r == "*/*"
                    || *r == full
                    || r.strip_suffix("/*") == Some(resource) && !subresource.is_empty()
                    || r.strip_prefix("*/") == Some(subresource) && !subresource.is_empty()
            })
    })
}
