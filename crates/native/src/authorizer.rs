//! Kubernetes' CEL authorizer library (kubernetes
//! `staging/src/k8s.io/apiserver/pkg/cel/library/authz.go`): `authorizer`,
//! `.group(g).resource(r).subresource(s).namespace(ns).name(n).check(verb)`,
//! `.path(p).check(verb)`, `.serviceAccount(ns, name)`, and a decision's
//! `.allowed()`, `.reason()`, `.errored()`, `.error()`. The checks are
//! answered by an [`Authorize`] (in the tests, the RBAC authorizer over a
//! cluster snapshot), as the API server answers them with its own
//! authorizer chain.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cel::Value;
use cel::objects::Opaque;

use olm_guard_core::UserInfo;
use olm_guard_core::protocol::ResourceAttributes;

use crate::interpreter::{EvalError, Out};

/// An authorizer that could not answer, with its cause. CEL sees it as a
/// decision that is not allowed and `errored()`, whose `error()` is this
/// error's text.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct AuthorizerError(#[from] pub Box<dyn std::error::Error + Send + Sync>);

/// What answers the checks: the API server's authorizer.
pub trait Authorize: Send + Sync {
    /// May `user` do what `attributes` describe?
    fn resource(
        &self,
        user: &UserInfo,
        attributes: &ResourceAttributes,
    ) -> Result<bool, AuthorizerError>;
    /// May `user` use `verb` on the non-resource URL `path`?
    fn non_resource(
        &self,
        user: &UserInfo,
        verb: &str,
        path: &str,
    ) -> Result<bool, AuthorizerError>;
}

/// The `authorizer` variable: checks on behalf of one user.
#[derive(Clone)]
pub struct Authorizer {
    user: UserInfo,
    source: Arc<dyn Authorize>,
    /// The checks made so far, which the API server charges for.
    checks: Arc<AtomicU64>,
}

impl Authorizer {
    /// The authorizer for the request's user.
    pub fn new(user: UserInfo, source: Arc<dyn Authorize>) -> Self {
        Authorizer {
            user,
            source,
            checks: Arc::new(AtomicU64::new(0)),
        }
    }

    /// How many `check()` calls were made through this authorizer (and
    /// those derived from it).
    pub fn checks_made(&self) -> u64 {
        self.checks.load(Ordering::Relaxed)
    }

    /// As a CEL value.
    pub fn value(self) -> Value {
        Value::Opaque(Arc::new(self))
    }
}

impl fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "authorizer for {}", self.user.username)
    }
}

impl PartialEq for Authorizer {
    fn eq(&self, other: &Self) -> bool {
        self.user == other.user && Arc::ptr_eq(&self.source, &other.source)
    }
}
impl Eq for Authorizer {}

impl Opaque for Authorizer {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Authorizer"
    }
}

/// `authorizer.path(p)`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PathCheck {
    authorizer: Authorizer,
    path: String,
}

impl Opaque for PathCheck {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.PathCheck"
    }
}

/// `authorizer.group(g)`, and with `.resource(r)` and the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ResourceCheck {
    authorizer: Authorizer,
    /// `None` until `.resource()`: a GroupCheck.
    attributes: ResourceAttributes,
    has_resource: bool,
}

impl Opaque for ResourceCheck {
    fn runtime_type_name(&self) -> &str {
        if self.has_resource {
            "kubernetes.authorization.ResourceCheck"
        } else {
            "kubernetes.authorization.GroupCheck"
        }
    }
}

/// The answer of `.check(verb)`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Decision {
    allowed: bool,
    error: Option<String>,
}

impl Opaque for Decision {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Decision"
    }
}

/// Calls the library's `function` on `target` with `args`; `None` when
/// `function` is not one of the library's or `target` is not one of its
/// values (an authorizer, a check, a decision).
pub(crate) fn call(function: &str, target: &Value, args: &[Value]) -> Option<Out> {
    let Value::Opaque(opaque) = target else {
        return None;
    };
    let text = |i: usize| match args.get(i) {
        Some(Value::String(s)) => Ok(s.to_string()),
        other => Err(EvalError::NoSuchOverload(format!(
            "{}.{function}({})",
            opaque.runtime_type_name(),
            other.map(type_name).unwrap_or_default()
        ))),
    };
    let arity = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(EvalError::NoSuchOverload(format!(
                "{}.{function} with {} argument(s)",
                opaque.runtime_type_name(),
                args.len()
            )))
        }
    };
    if let Some(authorizer) = opaque.downcast_ref::<Authorizer>() {
        let result = match function {
            "path" => arity(1).and_then(|_| text(0)).map(|path| {
                Value::Opaque(Arc::new(PathCheck {
                    authorizer: authorizer.clone(),
                    path,
                }))
            }),
            "group" => arity(1).and_then(|_| text(0)).map(|group| {
                Value::Opaque(Arc::new(ResourceCheck {
                    authorizer: authorizer.clone(),
                    attributes: ResourceAttributes {
                        group: Some(group),
                        // The library asks for every version (authz.go, `resourceCheckCheck`).
                        version: Some("*".into()),
                        ..Default::default()
                    },
                    has_resource: false,
                }))
            }),
            "serviceAccount" => arity(2).and_then(|_| {
                let (namespace, name) = (text(0)?, text(1)?);
                Ok(service_account(authorizer, &namespace, &name))
            }),
            _ => return None,
        };
        return Some(result);
    }
    if let Some(check) = opaque.downcast_ref::<ResourceCheck>() {
        let with = |set: &dyn Fn(&mut ResourceCheck, String), needs_resource: bool| {
            arity(1)?;
            let value = text(0)?;
            if check.has_resource != needs_resource {
                return Err(EvalError::NoSuchOverload(format!(
                    "{}.{function}(string)",
                    opaque.runtime_type_name()
                )));
            }
            let mut check = check.clone();
            set(&mut check, value);
            Ok(Value::Opaque(Arc::new(check)))
        };
        let result = match function {
            "resource" => with(
                &|c, v| {
                    c.attributes.resource = v;
                    c.has_resource = true;
                },
                false,
            ),
            "subresource" => with(
                &|c, v| c.attributes.subresource = Some(v).filter(|s| !s.is_empty()),
                true,
            ),
            "namespace" => with(
                &|c, v| c.attributes.namespace = Some(v).filter(|s| !s.is_empty()),
                true,
            ),
            "name" => with(
                &|c, v| c.attributes.name = Some(v).filter(|s| !s.is_empty()),
                true,
            ),
            "check" if check.has_resource => arity(1).and_then(|_| text(0)).map(|verb| {
                let mut attributes = check.attributes.clone();
                attributes.verb = verb;
                let a = &check.authorizer;
                a.checks.fetch_add(1, Ordering::Relaxed);
                decision(a.source.resource(&a.user, &attributes))
            }),
            _ => return None,
        };
        return Some(result);
    }
    if let Some(path) = opaque.downcast_ref::<PathCheck>() {
        if function != "check" {
            return None;
        }
        return Some(arity(1).and_then(|_| text(0)).map(|verb| {
            let a = &path.authorizer;
            a.checks.fetch_add(1, Ordering::Relaxed);
            decision(a.source.non_resource(&a.user, &verb, &path.path))
        }));
    }
    let decision = opaque.downcast_ref::<Decision>()?;
    let result = match function {
        "allowed" => Value::Bool(decision.allowed),
        "errored" => Value::Bool(decision.error.is_some()),
        "reason" => Value::String(Arc::new(
            if decision.allowed {
                "allowed"
            } else {
                "denied"
            }
            .to_string(),
        )),
        "error" => Value::String(Arc::new(decision.error.clone().unwrap_or_default())),
        _ => return None,
    };
    Some(arity(0).map(|_| result))
}

/// The CEL name of `value`'s type.
pub(crate) fn type_name(value: &Value) -> String {
    match value {
        Value::Opaque(o) => o.runtime_type_name().to_string(),
        Value::Int(_) => "int".into(),
        Value::UInt(_) => "uint".into(),
        Value::Float(_) => "double".into(),
        Value::String(_) => "string".into(),
        Value::Bytes(_) => "bytes".into(),
        Value::Bool(_) => "bool".into(),
        Value::List(_) => "list".into(),
        Value::Map(_) => "map".into(),
        Value::Null => "null_type".into(),
        other => format!("{:?}", other.type_of()),
    }
}

/// `authorizer.serviceAccount(ns, name)`: an authorizer for that service
/// account's user name and groups, as authz.go builds it.
fn service_account(authorizer: &Authorizer, namespace: &str, name: &str) -> Value {
    let user = UserInfo {
        username: format!("system:serviceaccount:{namespace}:{name}"),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
        ],
        ..Default::default()
    };
    Authorizer {
        user,
        source: authorizer.source.clone(),
        checks: authorizer.checks.clone(),
    }
    .value()
}

/// The decision for an authorizer's answer: a failed authorizer is a
/// decision that is not allowed and errored.
fn decision(answer: Result<bool, AuthorizerError>) -> Value {
    let decision = match answer {
        Ok(allowed) => Decision {
            allowed,
            error: None,
        },
        Err(error) => Decision {
            allowed: false,
            error: Some(error.to_string()),
        },
    };
    Value::Opaque(Arc::new(decision))
}
