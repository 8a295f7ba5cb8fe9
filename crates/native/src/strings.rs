//! The functions of Kubernetes' CEL strings library that the generated
//! policies use, with cel-go's semantics (cel-go `ext/strings.go`, enabled
//! by kubernetes `staging/src/k8s.io/apiserver/pkg/cel/environment/base.go`):
//! indices count Unicode code points.

use std::sync::Arc;

use cel::extractors::{Arguments, This};
use cel::{Context, ExecutionError, Value};

use crate::authorizer::type_name;

/// Registers `join`, `indexOf` and `substring` in `context`.
pub fn register(context: &mut Context) -> Result<(), cel::DeclarationError> {
    context.add_function("join", join)?;
    context.add_function("indexOf", index_of)?;
    context.add_function("substring", substring)?;
    Ok(())
}

/// `list(string).join(separator)`.
fn join(This(this): This<Value>, separator: Arc<String>) -> Result<Value, ExecutionError> {
    let Value::List(items) = &this else {
        return Err(ExecutionError::no_such_member_overload(
            "join",
            vec![type_name(&this)],
        ));
    };
    let parts = items
        .iter()
        .map(|item| match item {
            Value::String(s) => Ok(s.to_string()),
            other => Err(ExecutionError::function_error(
                "join",
                format!("list element is {:?}, not a string", other.type_of()),
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Value::String(Arc::new(parts.join(separator.as_str()))))
}

/// `string.indexOf(substring)`: the code-point index of the first
/// occurrence, -1 when there is none, 0 for the empty string.
fn index_of(This(this): This<Arc<String>>, needle: Arc<String>) -> i64 {
    match this.find(needle.as_str()) {
        Some(byte) => this[..byte].chars().count() as i64,
        None => -1,
    }
}

/// `string.substring(start)` and `string.substring(start, end)`: the code
/// points from `start` (to `end`, exclusive); an index outside the string,
/// or `end` before `start`, is an error, as in cel-go.
fn substring(
    This(this): This<Arc<String>>,
    Arguments(args): Arguments,
) -> Result<Value, ExecutionError> {
    let chars: Vec<char> = this.chars().collect();
    let index = |value: Option<&Value>, default: usize| match value {
        None => Ok(default as i64),
        Some(Value::Int(i)) => Ok(*i),
        Some(other) => Err(ExecutionError::function_error(
            "substring",
            format!("an index must be an int, not {:?}", other.type_of()),
        )),
    };
    let start = index(args.first(), 0)?;
    let end = index(args.get(1), chars.len())?;
    let len = chars.len() as i64;
    if args.is_empty() || args.len() > 2 || start < 0 || end > len || start > end {
        return Err(ExecutionError::function_error(
            "substring",
            format!("index out of range: [{start}, {end}) of a string of length {len}"),
        ));
    }
    Ok(Value::String(Arc::new(
        chars[start as usize..end as usize].iter().collect(),
    )))
}
