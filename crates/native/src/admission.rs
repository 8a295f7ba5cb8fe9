//! How the API server evaluates a ValidatingAdmissionPolicy and its binding
//! on one admission request (kubernetes
//! `staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/`:
//! `dispatcher.go`, `validator.go`; the matching in
//! `plugin/policy/matching/matching.go`): match the request, bind `object`,
//! `oldObject`, `request`, `params`, `authorizer` and `variables`, evaluate
//! every validation, and turn the failures into a denial (`Deny`) or
//! warnings (`Warn`) with the API server's wording.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

use cel::common::traits::Indexer;
use cel::common::types::{CelString, Type};
use cel::common::value::{CowVal, Val};
use cel::{Context, Env, ExecutionError, Program, Value};
use serde_json::Value as Json;

use olm_guard_core::UserInfo;

use crate::authorizer::{self, Authorize, Authorizer};
use crate::cost;
use crate::model::{BoundPolicy, ResourceRule};
use crate::values::to_cel;

/// What the API server does with a request, after every policy.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// No policy matched the request.
    NotMatched,
    /// Admitted; the warnings of `Warn` bindings, in policy order.
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

/// One compiled policy.
struct Compiled {
    bound: BoundPolicy,
    conditions: Vec<Program>,
    variables: Vec<(String, Program)>,
    validations: Vec<(Program, Option<Program>)>,
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
            .map(|v| {
                let message = v.message_expression.as_deref().map(one).transpose()?;
                Ok((one(&v.expression)?, message))
            })
            .collect::<Result<_, PolicyError>>()?,
    })
}

/// Every expression of `policies` compiles (what the API server checks
/// when the policy is created).
pub fn check_compiles(policies: &[BoundPolicy]) -> Result<(), PolicyError> {
    Policies::compile(policies).map(|_| ())
}

/// Policies compiled once, evaluated on many requests.
pub struct Policies {
    env: Arc<Env>,
    compiled: Vec<Compiled>,
}

impl Policies {
    /// Compiles every expression of `policies`, as the API server does when
    /// they are created.
    pub fn compile(policies: &[BoundPolicy]) -> Result<Policies, PolicyError> {
        let env = Arc::new(Env::stdlib());
        let compiled = policies
            .iter()
            .map(|bound| compile(&env, bound))
            .collect::<Result<_, _>>()?;
        Ok(Policies { env, compiled })
    }

    /// Evaluates the policies on `request` (the `request` of an
    /// AdmissionReview) as the API server would.
    pub fn evaluate(
        &self,
        request: &Json,
        authorize: Arc<dyn Authorize>,
        params: &dyn Params,
    ) -> Outcome {
        let user: UserInfo = request
            .get("userInfo")
            .and_then(|u| serde_json::from_value(u.clone()).ok())
            .unwrap_or_default();
        let mut matched = false;
        let mut warnings = Vec::new();
        for compiled in &self.compiled {
            let bound = &compiled.bound;
            if !matches(&bound.policy.spec.match_constraints.resource_rules, request) {
                continue;
            }
            matched = true;
            let authorizer = Authorizer::new(user.clone(), authorize.clone());
            let failures = evaluate_bound(&self.env, compiled, request, &authorizer, params);
            let actions = &bound.binding.spec.validation_actions;
            let policy = &bound.policy.metadata.name;
            let binding = &bound.binding.metadata.name;
            if let Some(first) = failures.first()
                && actions.iter().any(|a| a == "Deny")
            {
                // dispatcher.go: the first denied decision becomes the error.
                return Outcome::Denied {
                    message: format!(
                        "ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied \
                         request: {first}"
                    ),
                };
            }
            if actions.iter().any(|a| a == "Warn") {
                warnings.extend(failures.iter().map(|f| {
                    format!(
                        "Validation failed for ValidatingAdmissionPolicy '{policy}' with binding \
                         '{binding}': {f}"
                    )
                }));
            }
        }
        if matched {
            Outcome::Allowed { warnings }
        } else {
            Outcome::NotMatched
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

/// The failure messages of one policy: for a policy with params, over every
/// param (an evaluation per param, as `dispatcher.go` loops over them).
fn evaluate_bound(
    env: &Arc<Env>,
    compiled: &Compiled,
    request: &Json,
    authorizer: &Authorizer,
    params: &dyn Params,
) -> Vec<String> {
    let spec = &compiled.bound.policy.spec;
    let Some(kind) = &spec.param_kind else {
        return evaluate_once(env, compiled, request, authorizer, &Json::Null);
    };
    let Some(param_ref) = &compiled.bound.binding.spec.param_ref else {
        return vec![
            "failed to configure binding: the policy has a paramKind but the binding no paramRef"
                .into(),
        ];
    };
    let found = params.params(&kind.api_version, &kind.kind, &param_ref.selector);
    if found.is_empty() {
        return if param_ref.parameter_not_found_action == "Deny" {
            vec!["no params found for policy binding with `Deny` parameterNotFoundAction".into()]
        } else {
            Vec::new()
        };
    }
    found
        .iter()
        .flat_map(|param| evaluate_once(env, compiled, request, authorizer, param))
        .collect()
}

/// The failures of one evaluation: a validation that is false gives its
/// message; one that errors fails closed (every generated policy has
/// `failurePolicy: Fail`) with the API server's error text.
fn evaluate_once(
    env: &Arc<Env>,
    compiled: &Compiled,
    request: &Json,
    authorizer: &Authorizer,
    param: &Json,
) -> Vec<String> {
    let null = Json::Null;
    let evaluation = Evaluation {
        env: env.clone(),
        bindings: vec![
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
            ("authorizer", authorizer.clone().value()),
        ],
        authorizer: authorizer.clone(),
        variables: &compiled.variables,
        cache: Mutex::new(HashMap::new()),
        charged: AtomicU64::new(0),
        spent: AtomicU64::new(0),
    };

    // Match conditions: all must hold; an error fails closed.
    for (condition, source) in compiled
        .conditions
        .iter()
        .zip(&compiled.bound.policy.spec.match_conditions)
    {
        match evaluation.run(condition) {
            Ok(Value::Bool(true)) => {}
            Ok(Value::Bool(false)) => return Vec::new(),
            Ok(other) => {
                return vec![format!(
                    "matchCondition '{}' must evaluate to bool, not {:?}",
                    source.name,
                    other.type_of()
                )];
            }
            Err(e) => return vec![format!("matchCondition '{}' error: {e}", source.name)],
        }
    }

    let mut failures = Vec::new();
    for ((program, message_program), source) in compiled
        .validations
        .iter()
        .zip(&compiled.bound.policy.spec.validations)
    {
        match evaluation.run(program) {
            Ok(Value::Bool(true)) => {}
            Ok(Value::Bool(false)) => {
                let from_expression =
                    message_program
                        .as_ref()
                        .and_then(|p| match evaluation.run(p) {
                            Ok(Value::String(s)) if !s.trim().is_empty() && !s.contains('\n') => {
                                Some(s.to_string())
                            }
                            _ => None,
                        });
                failures.push(message(source, from_expression));
            }
            Ok(other) => failures.push(format!(
                "expression '{}' resulted in error: must evaluate to bool, not {:?}",
                source.expression,
                other.type_of()
            )),
            Err(error) => failures.push(format!(
                "expression '{}' resulted in error: {error}",
                source.expression
            )),
        }
    }
    failures
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

/// One evaluation of a policy: its bindings, its variables evaluated
/// lazily on first use and kept (kubernetes
/// `staging/src/k8s.io/apiserver/pkg/admission/plugin/cel/composition.go`),
/// and the cost spent so far.
struct Evaluation<'a> {
    env: Arc<Env>,
    bindings: Vec<(&'static str, Value)>,
    authorizer: Authorizer,
    variables: &'a [(String, Program)],
    cache: Mutex<HashMap<String, Result<Value, String>>>,
    /// Authorizer checks already charged to a finished program.
    charged: AtomicU64,
    /// What the evaluation has spent.
    spent: AtomicU64,
}

impl Evaluation<'_> {
    /// A context with the bindings, the libraries and `variables`.
    fn context(&self) -> Result<Context<'_, '_>, String> {
        let mut context = Context::with_env(self.env.clone());
        authorizer::register(&mut context)
            .and(crate::strings::register(&mut context))
            .map_err(|e| format!("the CEL environment cannot be built: {e}"))?;
        for (name, value) in &self.bindings {
            context.add_variable_from_value(*name, value.clone());
        }
        context.add_variable_as_val("variables", Box::new(LazyVariables(self)));
        Ok(context)
    }

    /// Runs `program`, charging it for its own authorizer checks (not those
    /// of the variables it reads, which are charged to each variable): one
    /// expression may spend `PER_CALL_LIMIT`, the whole evaluation
    /// `RUNTIME_BUDGET`; beyond either the API server stops with an error
    /// (cel `CostLimit`; validating `filter.go`), which fails closed.
    fn run(&self, program: &Program) -> Result<Value, String> {
        let context = self.context()?;
        let (checks, charged) = (self.authorizer.checks_made(), self.charged.load(Relaxed));
        let result = program.execute(&context).map_err(|e| e.to_string());
        let nested = self.charged.load(Relaxed) - charged;
        let own = self.authorizer.checks_made() - checks - nested;
        self.charged.fetch_add(own, Relaxed);
        let cost = own * cost::AUTHZ_CHECK_COST;
        if cost > cost::PER_CALL_LIMIT {
            return Err("operation cancelled: actual cost limit exceeded".into());
        }
        if self.spent.fetch_add(cost, Relaxed) + cost > cost::RUNTIME_BUDGET {
            return Err(
                "validation failed due to running out of cost budget, no further \
                        validation rules will be run"
                    .into(),
            );
        }
        result
    }

    /// `variables.<name>`, evaluated on first use.
    fn variable(&self, name: &str) -> Result<Value, ExecutionError> {
        let cached = self.cache.lock().ok().and_then(|c| c.get(name).cloned());
        let result = match cached {
            Some(result) => result,
            None => {
                let Some((_, program)) = self.variables.iter().find(|(n, _)| n == name) else {
                    return Err(ExecutionError::no_such_key(name));
                };
                let result = self.run(program);
                if let Ok(mut cache) = self.cache.lock() {
                    cache.insert(name.to_string(), result.clone());
                }
                result
            }
        };
        result.map_err(|e| ExecutionError::function_error(&format!("variables.{name}"), e))
    }
}

/// The `variables` binding: each field evaluated when it is first read.
#[derive(Clone, Copy)]
struct LazyVariables<'a>(&'a Evaluation<'a>);

impl std::fmt::Debug for LazyVariables<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("variables")
    }
}

static VARIABLES_TYPE: Type = Type::new_unspecified_type("kubernetes.variables");

impl Val for LazyVariables<'_> {
    fn get_type(&self) -> &Type {
        &VARIABLES_TYPE
    }

    fn cel_type() -> &'static Type {
        &VARIABLES_TYPE
    }

    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v>
    where
        Self: 'v,
    {
        Box::new(*self)
    }
}

impl Indexer for LazyVariables<'_> {
    fn get<'b, 'v>(&'b self, field: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        let Some(name) = field.downcast_ref::<CelString>().map(CelString::inner) else {
            return Err(ExecutionError::no_such_key("variables"));
        };
        let value: Box<dyn Val> = self.0.variable(name)?.try_into()?;
        Ok(CowVal::Owned(value))
    }

    fn steal<'v>(self: Box<Self>, field: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(field).map(CowVal::into_owned)
    }
}

/// The message of a failed validation (`validator.go`): the
/// `messageExpression`'s string when it gave a non-empty one, else
/// `message`, else "failed expression: <expression>".
fn message(source: &crate::model::Validation, from_expression: Option<String>) -> String {
    from_expression
        .or_else(|| source.message.clone())
        .unwrap_or_else(|| format!("failed expression: {}", source.expression))
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

/// What the API server makes of one CRD validation rule on a field's new
/// value `value` and, on an update where the field existed, its stored
/// value `old` (a rule naming `oldSelf` is a transition rule and is only
/// evaluated then; kubernetes `staging/src/k8s.io/apiextensions-apiserver/
/// pkg/apiserver/schema/cel/validation.go`). `Ok(None)`: the rule was not
/// evaluated; `Err`: it failed to compile or to evaluate, which the API
/// server reports as a validation error.
pub fn evaluate_crd_rule(
    rule: &crate::policies::CrdRule,
    value: &Json,
    old: Option<&Json>,
) -> Result<Option<bool>, RuleError> {
    let env = Arc::new(Env::stdlib());
    let program = env.compile(&rule.rule).map_err(|e| {
        RuleError::Compile(olm_guard_core::text::one_line(
            &e.to_string(),
            olm_guard_core::text::QUOTE_MAX,
        ))
    })?;
    let transition = rule.rule.contains("oldSelf");
    if transition && old.is_none() {
        return Ok(None);
    }
    let mut context = Context::with_env(env);
    crate::strings::register(&mut context).map_err(|e| RuleError::Compile(e.to_string()))?;
    context.add_variable_from_value("self", to_cel(value));
    if let Some(old) = old {
        context.add_variable_from_value("oldSelf", to_cel(old));
    }
    match program.execute(&context) {
        Ok(Value::Bool(holds)) => Ok(Some(holds)),
        Ok(other) => Err(RuleError::NotBool(format!("{:?}", other.type_of()))),
        Err(e) => Err(RuleError::Evaluation(e)),
    }
}

/// Why a CRD rule gave no answer; the API server reports each as a
/// validation error of the field.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    /// The rule does not parse.
    #[error("the rule does not compile: {0}")]
    Compile(String),
    /// Evaluating it failed (a missing field, a wrong type).
    #[error("the rule failed: {0}")]
    Evaluation(#[source] ExecutionError),
    /// It gave something else than a bool.
    #[error("the rule gave {0}, not a bool")]
    NotBool(String),
}
