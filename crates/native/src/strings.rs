//! The functions of Kubernetes' CEL strings library (cel-go
//! `ext/strings.go`, version 2, enabled by kubernetes
//! `staging/src/k8s.io/apiserver/pkg/cel/environment/base.go`) and the
//! standard string functions, with cel-go's semantics: indices count
//! Unicode code points, and an index outside the string is an error.

use std::sync::Arc;

use cel::Value;

use crate::authorizer::type_name;
use crate::interpreter::{EvalError, Out};

/// Calls `function` on the string or list `target` with `args`; `None`
/// when `function` is not a string function.
pub(crate) fn call(function: &str, target: &Value, args: &[Value]) -> Option<Out> {
    if function == "join" {
        return Some(join(target, args));
    }
    let Value::String(this) = target else {
        return None;
    };
    let text = |i: usize| match args.get(i) {
        Some(Value::String(s)) => Ok(s.clone()),
        other => Err(overload(function, target, other)),
    };
    let int = |i: usize| match args.get(i) {
        Some(Value::Int(n)) => Ok(*n),
        other => Err(overload(function, target, other)),
    };
    let string = |s: String| Value::String(Arc::new(s));
    let result = match (function, args.len()) {
        ("contains", 1) => text(0).map(|n| Value::Bool(this.contains(n.as_str()))),
        ("startsWith", 1) => text(0).map(|n| Value::Bool(this.starts_with(n.as_str()))),
        ("endsWith", 1) => text(0).map(|n| Value::Bool(this.ends_with(n.as_str()))),
        ("indexOf", 1) => text(0).map(|n| index_of(this, &n, 0)).and_then(|r| r),
        ("indexOf", 2) => text(0)
            .and_then(|n| Ok((n, int(1)?)))
            .and_then(|(n, start)| index_of(this, &n, start)),
        ("lastIndexOf", 1) => text(0).map(|n| {
            Value::Int(match this.rfind(n.as_str()) {
                Some(byte) => this[..byte].chars().count() as i64,
                None => -1,
            })
        }),
        ("substring", 1) => int(0).and_then(|start| substring(this, start, None)),
        ("substring", 2) => int(0)
            .and_then(|start| Ok((start, int(1)?)))
            .and_then(|(start, end)| substring(this, start, Some(end))),
        ("lowerAscii", 0) => Ok(string(this.to_ascii_lowercase())),
        ("upperAscii", 0) => Ok(string(this.to_ascii_uppercase())),
        ("trim", 0) => Ok(string(this.trim().to_string())),
        ("replace", 2) => text(0)
            .and_then(|from| Ok((from, text(1)?)))
            .map(|(from, to)| string(this.replace(from.as_str(), &to))),
        ("split", 1) => text(0).map(|separator| {
            let parts: Vec<Value> = if separator.is_empty() {
                this.chars().map(|c| string(c.to_string())).collect()
            } else {
                this.split(separator.as_str())
                    .map(|p| string(p.to_string()))
                    .collect()
            };
            Value::List(Arc::new(parts))
        }),
        _ => return None,
    };
    Some(result)
}

fn overload(function: &str, target: &Value, arg: Option<&Value>) -> EvalError {
    EvalError::no_overload(
        function,
        format!(
            "{}.({})",
            type_name(target),
            arg.map(type_name).unwrap_or_default()
        ),
    )
}

/// `list(string).join()` and `list(string).join(separator)`.
fn join(target: &Value, args: &[Value]) -> Out {
    let Value::List(items) = target else {
        return Err(overload("join", target, args.first()));
    };
    let separator = match args {
        [] => "",
        [Value::String(s)] => s.as_str(),
        _ => return Err(overload("join", target, args.first())),
    };
    let parts = items
        .iter()
        .map(|item| match item {
            Value::String(s) => Ok(s.as_str()),
            other => Err(EvalError::JoinElement(type_name(other))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Value::String(Arc::new(parts.join(separator))))
}

/// `string.indexOf(substring[, start])`: the code-point index of the first
/// occurrence at or after `start`, -1 when there is none.
fn index_of(this: &str, needle: &str, start: i64) -> Out {
    let chars: Vec<(usize, char)> = this.char_indices().collect();
    if start < 0 || start as usize > chars.len() {
        return Err(EvalError::IndexOutOfRange(start));
    }
    let offset = chars
        .get(start as usize)
        .map(|(b, _)| *b)
        .unwrap_or(this.len());
    Ok(Value::Int(match this[offset..].find(needle) {
        Some(byte) => start + this[offset..offset + byte].chars().count() as i64,
        None => -1,
    }))
}

/// `string.substring(start[, end])`: the code points from `start` (to
/// `end`, exclusive); an index outside the string, or `end` before
/// `start`, is an error, as in cel-go.
fn substring(this: &str, start: i64, end: Option<i64>) -> Out {
    let chars: Vec<char> = this.chars().collect();
    let len = chars.len() as i64;
    let end = end.unwrap_or(len);
    if start < 0 || start > len {
        return Err(EvalError::IndexOutOfRange(start));
    }
    if end < 0 || end > len {
        return Err(EvalError::IndexOutOfRange(end));
    }
    if start > end {
        return Err(EvalError::SubstringRange { start, end });
    }
    Ok(Value::String(Arc::new(
        chars[start as usize..end as usize].iter().collect(),
    )))
}
