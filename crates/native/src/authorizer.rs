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

use cel::extractors::This;
use cel::objects::Opaque;
use cel::{Context, ExecutionError, Value};

use olm_guard_core::UserInfo;
use olm_guard_core::protocol::ResourceAttributes;

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

/// Registers the library's functions in `context`.
pub fn register(context: &mut Context) -> Result<(), cel::DeclarationError> {
    context.add_function("path", path)?;
    context.add_function("group", group)?;
    context.add_function("serviceAccount", service_account)?;
    context.add_function("resource", resource)?;
    context.add_function("subresource", subresource)?;
    context.add_function("namespace", namespace)?;
    context.add_function("name", name)?;
    context.add_function("check", check)?;
    context.add_function("allowed", allowed)?;
    context.add_function("reason", reason)?;
    context.add_function("errored", errored)?;
    context.add_function("error", error)?;
    Ok(())
}

fn opaque<'a, T: 'static>(value: &'a Value, function: &str) -> Result<&'a T, ExecutionError> {
    match value {
        Value::Opaque(o) => o.downcast_ref::<T>(),
        _ => None,
    }
    .ok_or_else(|| ExecutionError::no_such_member_overload(function, vec![type_name(value)]))
}

pub(crate) fn type_name(value: &Value) -> String {
    match value {
        Value::Opaque(o) => o.runtime_type_name().to_string(),
        other => format!("{:?}", other.type_of()),
    }
}

fn path(This(this): This<Value>, path: Arc<String>) -> Result<Value, ExecutionError> {
    let authorizer = opaque::<Authorizer>(&this, "path")?.clone();
    Ok(Value::Opaque(Arc::new(PathCheck {
        authorizer,
        path: path.to_string(),
    })))
}

fn group(This(this): This<Value>, group: Arc<String>) -> Result<Value, ExecutionError> {
    let authorizer = opaque::<Authorizer>(&this, "group")?.clone();
    Ok(Value::Opaque(Arc::new(ResourceCheck {
        authorizer,
        attributes: ResourceAttributes {
            group: Some(group.to_string()),
            // The library asks for every version (authz.go, `resourceCheckCheck`).
            version: Some("*".into()),
            ..Default::default()
        },
        has_resource: false,
    })))
}

/// `authorizer.serviceAccount(ns, name)`: an authorizer for that service
/// account's user name and groups, as authz.go builds it.
fn service_account(
    This(this): This<Value>,
    namespace: Arc<String>,
    name: Arc<String>,
) -> Result<Value, ExecutionError> {
    let authorizer = opaque::<Authorizer>(&this, "serviceAccount")?;
    let user = UserInfo {
        username: format!("system:serviceaccount:{namespace}:{name}"),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
        ],
        ..Default::default()
    };
    Ok(Authorizer {
        user,
        source: authorizer.source.clone(),
        checks: authorizer.checks.clone(),
    }
    .value())
}

/// One of `.resource()`, `.subresource()`, `.namespace()`, `.name()`.
fn with(
    this: &Value,
    function: &str,
    set: impl FnOnce(&mut ResourceCheck),
    needs_resource: bool,
) -> Result<Value, ExecutionError> {
    let check = opaque::<ResourceCheck>(this, function)?;
    if check.has_resource != needs_resource {
        return Err(ExecutionError::no_such_member_overload(
            function,
            vec![type_name(this)],
        ));
    }
    let mut check = check.clone();
    set(&mut check);
    Ok(Value::Opaque(Arc::new(check)))
}

fn resource(This(this): This<Value>, resource: Arc<String>) -> Result<Value, ExecutionError> {
    with(
        &this,
        "resource",
        |c| {
            c.attributes.resource = resource.to_string();
            c.has_resource = true;
        },
        false,
    )
}

fn subresource(This(this): This<Value>, value: Arc<String>) -> Result<Value, ExecutionError> {
    with(
        &this,
        "subresource",
        |c| c.attributes.subresource = Some(value.to_string()).filter(|s| !s.is_empty()),
        true,
    )
}

fn namespace(This(this): This<Value>, value: Arc<String>) -> Result<Value, ExecutionError> {
    with(
        &this,
        "namespace",
        |c| c.attributes.namespace = Some(value.to_string()).filter(|s| !s.is_empty()),
        true,
    )
}

fn name(This(this): This<Value>, value: Arc<String>) -> Result<Value, ExecutionError> {
    with(
        &this,
        "name",
        |c| c.attributes.name = Some(value.to_string()).filter(|s| !s.is_empty()),
        true,
    )
}

fn check(This(this): This<Value>, verb: Arc<String>) -> Result<Value, ExecutionError> {
    let answer = if let Ok(path) = opaque::<PathCheck>(&this, "check") {
        let a = &path.authorizer;
        a.checks.fetch_add(1, Ordering::Relaxed);
        a.source.non_resource(&a.user, &verb, &path.path)
    } else {
        let check = opaque::<ResourceCheck>(&this, "check")?;
        if !check.has_resource {
            return Err(ExecutionError::no_such_member_overload(
                "check",
                vec![type_name(&this)],
            ));
        }
        let mut attributes = check.attributes.clone();
        attributes.verb = verb.to_string();
        let a = &check.authorizer;
        a.checks.fetch_add(1, Ordering::Relaxed);
        a.source.resource(&a.user, &attributes)
    };
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
    Ok(Value::Opaque(Arc::new(decision)))
}

fn allowed(This(this): This<Value>) -> Result<bool, ExecutionError> {
    Ok(opaque::<Decision>(&this, "allowed")?.allowed)
}

fn reason(This(this): This<Value>) -> Result<Value, ExecutionError> {
    let decision = opaque::<Decision>(&this, "reason")?;
    Ok(Value::String(Arc::new(
        if decision.allowed {
            "allowed"
        } else {
            "denied"
        }
        .to_string(),
    )))
}

fn errored(This(this): This<Value>) -> Result<bool, ExecutionError> {
    Ok(opaque::<Decision>(&this, "errored")?.error.is_some())
}

fn error(This(this): This<Value>) -> Result<Value, ExecutionError> {
    let decision = opaque::<Decision>(&this, "error")?;
    Ok(Value::String(Arc::new(
        decision.error.clone().unwrap_or_default(),
    )))
}
