//! JSON as the API server hands it to CEL: objects are maps, integers are
//! `int` (int64), other numbers `double` (kubernetes
//! `staging/src/k8s.io/apiserver/pkg/cel/common/values.go`,
//! `UnstructuredToVal`).

use std::collections::HashMap;
use std::sync::Arc;

use cel::Value;
use cel::objects::{Key, Map};

/// `value` as a CEL value.
pub fn to_cel(value: &serde_json::Value) -> Value {
    match value {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::UInt(u),
            _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => Value::String(Arc::new(s.clone())),
        serde_json::Value::Array(items) => {
            Value::List(Arc::new(items.iter().map(to_cel).collect()))
        }
        serde_json::Value::Object(fields) => {
            let map: HashMap<Key, Value> = fields
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect();
            Value::Map(Map { map: Arc::new(map) })
        }
    }
}
