//! Pieces every rule needs, written once: short listings for messages,
//! the identity of the object a request writes, and "read this field or
//! answer 400".

use std::fmt::Display;

use olm_guard_core::{AdmissionRequest, ObjectMeta, Verdict};

/// `a, b, c and 7 more`: the first `shown` items joined by `separator`, and
/// how many were left out, so messages stay readable on large clusters.
///
/// ```
/// use olm_guard_rules::common::listing;
/// assert_eq!(listing(&["a", "b", "c"], 2, ", "), "a, b and 1 more");
/// assert_eq!(listing(&["a", "b"], 2, ", "), "a, b");
/// ```
pub fn listing<S: AsRef<str>>(items: &[S], shown: usize, separator: &str) -> String {
    let mut text = items
        .iter()
        .take(shown)
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(separator);
    if items.len() > shown {
        text.push_str(&format!(" and {} more", items.len() - shown));
    }
    text
}

/// The name to show for the object a request writes: its `metadata.name`,
/// else the request's `name`, else its `generateName` (a CREATE may carry
/// only that).
pub fn display_name<'a>(meta: &'a ObjectMeta, request: &'a AdmissionRequest) -> &'a str {
    [&meta.name, &request.name, &meta.generate_name]
        .into_iter()
        .find(|name| !name.is_empty())
        .map_or("", String::as_str)
}

/// Fills `metadata.name` and `metadata.namespace` from the request where the
/// object leaves them empty: the API server fills them from the request path,
/// but a hand-made request may carry them on the request only. A namespaced
/// `kind` with no namespace anywhere is a 400 that says to set it.
pub fn complete_identity(
    metadata: &mut ObjectMeta,
    request: &AdmissionRequest,
    kind: &str,
) -> Result<(), Verdict> {
    if metadata.namespace.is_empty() {
        metadata.namespace = request.namespace.clone();
    }
    if metadata.name.is_empty() {
        metadata.name = request.name.clone();
    }
    if metadata.namespace.is_empty() {
        return Err(Verdict::bad_request(format!(
            "metadata.namespace of the {kind} is empty and the request names no namespace: \
             {kind} objects are namespaced; set metadata.namespace."
        )));
    }
    Ok(())
}

/// The value read, or a 400 whose message `explain` builds from the reason:
/// a request the API server would not have sent in that shape is the
/// caller's to fix, not a policy decision.
pub fn read_or_bad_request<T, E: Display>(
    read: Result<T, E>,
    explain: impl FnOnce(E) -> String,
) -> Result<T, Verdict> {
    read.map_err(|e| Verdict::bad_request(explain(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn listing_counts_what_it_leaves_out() {
        assert_eq!(listing::<&str>(&[], 3, ", "), "");
        assert_eq!(listing(&["a"], 3, ", "), "a");
        assert_eq!(listing(&["a", "b", "c", "d"], 2, "; "), "a; b and 2 more");
    }

    #[test]
    fn identity_comes_from_the_request_when_the_object_has_none() {
        let request: AdmissionRequest =
            serde_json::from_value(json!({"name": "n", "namespace": "ns", "operation": "CREATE"}))
                .unwrap();
        let mut meta = ObjectMeta::default();
        complete_identity(&mut meta, &request, "OperatorGroup").unwrap();
        assert_eq!((meta.name.as_str(), meta.namespace.as_str()), ("n", "ns"));
        assert_eq!(display_name(&meta, &request), "n");

        let cluster_wide = AdmissionRequest::default();
        let err = complete_identity(&mut ObjectMeta::default(), &cluster_wide, "OperatorGroup")
            .unwrap_err();
        assert_eq!(err.code, Some(400));
        assert!(err.message.unwrap().contains("set metadata.namespace"));
    }

    #[test]
    fn read_or_bad_request_is_a_400_with_the_explanation() {
        let verdict =
            read_or_bad_request(Err::<(), _>("bad"), |e| format!("spec: {e}")).unwrap_err();
        assert_eq!(verdict.code, Some(400));
        assert_eq!(verdict.message.as_deref(), Some("spec: bad"));
    }
}
