//! How the API server evaluates a ValidatingAdmissionPolicy and its binding
//! on one admission request (kubernetes
//! `staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/`:
//! `dispatcher.go`, `validator.go`; the matching in
//! `plugin/policy/matching/matching.go`): match the request, bind `object`,
//! `oldObject`, `request`, `params`, `authorizer` and `variables`, evaluate
//! every validation, and turn the failures into a denial (`Deny`) or
//! warnings (`Warn`) with the API server's wording.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::{Context, Env, Program, Value};
use serde_json::Value as Json;

use olm_guard_core::UserInfo;

use crate::authorizer::{self, Authorize, Authorizer};
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
    let mut context = Context::with_env(env.clone());
    if let Err(e) = authorizer::register(&mut context).and(crate::strings::register(&mut context)) {
        return vec![format!("the CEL environment cannot be built: {e}")];
    }
    let null = Json::Null;
    context.add_variable_from_value("object", to_cel(request.get("object").unwrap_or(&null)));
    context.add_variable_from_value(
        "oldObject",
        to_cel(request.get("oldObject").unwrap_or(&null)),
    );
    context.add_variable_from_value("request", to_cel(request));
    context.add_variable_from_value("params", to_cel(param));
    context.add_variable_from_value("namespaceObject", Value::Null);
    context.add_variable_from_value("authorizer", authorizer.clone().value());

    // Match conditions: all must hold; an error fails closed.
    for (condition, source) in compiled
        .conditions
        .iter()
        .zip(&compiled.bound.policy.spec.match_conditions)
    {
        match condition.execute(&context) {
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

    // Variables, in order; one that errors is an error wherever it is used
    // (the API server evaluates them lazily, on first use).
    let mut variables: HashMap<Key, Value> = HashMap::new();
    let mut broken: Vec<(String, String)> = Vec::new();
    for (name, program) in &compiled.variables {
        context.add_variable_from_value(
            "variables",
            Value::Map(Map {
                map: Arc::new(variables.clone()),
            }),
        );
        match program.execute(&context) {
            Ok(value) => {
                variables.insert(Key::String(Arc::new(name.clone())), value);
            }
            Err(e) => broken.push((name.clone(), e.to_string())),
        }
    }
    context.add_variable_from_value(
        "variables",
        Value::Map(Map {
            map: Arc::new(variables),
        }),
    );

    let mut failures = Vec::new();
    for ((program, message_program), source) in compiled
        .validations
        .iter()
        .zip(&compiled.bound.policy.spec.validations)
    {
        let uses_broken = broken
            .iter()
            .find(|(name, _)| uses_variable(&source.expression, name));
        let result = match uses_broken {
            Some((name, error)) => Err(format!("variables.{name}: {error}")),
            None => program.execute(&context).map_err(|e| e.to_string()),
        };
        match result {
            Ok(Value::Bool(true)) => {}
            Ok(Value::Bool(false)) => {
                failures.push(message(&context, source, message_program.as_ref(), &broken))
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

/// Does `expression` read `variables.<name>`?
fn uses_variable(expression: &str, name: &str) -> bool {
    let needle = format!("variables.{name}");
    expression.match_indices(&needle).any(|(at, _)| {
        !expression[at + needle.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The message of a failed validation (`validator.go`): the
/// `messageExpression` when it gives a non-empty string, else `message`,
/// else "failed expression: <expression>".
fn message(
    context: &Context,
    source: &crate::model::Validation,
    program: Option<&Program>,
    broken: &[(String, String)],
) -> String {
    let from_expression = program.and_then(|p| {
        let expression = source.message_expression.as_deref().unwrap_or_default();
        if broken.iter().any(|(n, _)| uses_variable(expression, n)) {
            return None;
        }
        match p.execute(context) {
            Ok(Value::String(s)) if !s.trim().is_empty() && !s.contains('\n') => {
                Some(s.to_string())
            }
            _ => None,
        }
    });
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
