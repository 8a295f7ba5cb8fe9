//! How a person reads a request and a mutation: the subject line and the
//! YAML diff that `olm-guard run` prints and the browser playground shows,
//! written once so both say the same. Host-side only (feature `display`):
//! the policy modules never format these.

use serde_json::Value;

/// Lines of unchanged YAML shown around each change, as `diff -u` does.
pub const DIFF_CONTEXT_LINES: usize = 3;

/// What the request is about, as a person names it: `CatalogSource
/// olm/ops (CREATE)`.
///
/// ```
/// use olm_guard_core::display::subject;
/// let request = serde_json::json!({
///     "kind": {"kind": "CatalogSource"}, "namespace": "olm", "name": "ops",
///     "operation": "CREATE",
/// });
/// assert_eq!(subject(&request), "CatalogSource olm/ops (CREATE)");
/// ```
pub fn subject(request: &Value) -> String {
    let text = |pointer: &str| {
        request
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let kind = match text("/kind/kind") {
        "" => "object",
        kind => kind,
    };
    let name = match (text("/namespace"), text("/name")) {
        (_, "") => "(unnamed)".to_string(),
        ("", name) => name.to_string(),
        (namespace, name) => format!("{namespace}/{name}"),
    };
    match text("/operation") {
        "" => format!("{kind} {name}"),
        operation => format!("{kind} {name} ({operation})"),
    }
}

/// A unified diff of the object's YAML before and after a patch, headed
/// `object` / `patched object`; empty when they are the same.
///
/// ```
/// use olm_guard_core::display::yaml_diff;
/// let diff = yaml_diff(&serde_json::json!({"a": 1}), &serde_json::json!({"a": 2})).unwrap();
/// assert!(diff.contains("-a: 1") && diff.contains("+a: 2"));
/// ```
pub fn yaml_diff(before: &Value, after: &Value) -> Result<String, serde_yaml_ng::Error> {
    let before = serde_yaml_ng::to_string(before)?;
    let after = serde_yaml_ng::to_string(after)?;
    Ok(similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(DIFF_CONTEXT_LINES)
        .header("object", "patched object")
        .to_string())
}
