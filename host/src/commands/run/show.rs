//! How `run` shows one evaluation: a readable verdict for people, or the
//! AdmissionReview as data with the patch decoded and applied.

use std::io::Write;

use anyhow::Context;
use serde_json::Value;

use olm_guard_core::display::yaml_diff;
use olm_guard_core::response::AdmissionResponse;

/// The AdmissionReview `run -o json|yaml` prints: `response` exactly as
/// policy-server would send it, and beside it, when the module mutated the
/// object, `patchOperations` (the base64 `patch` decoded) and
/// `patchedObject` (the request's object with the patch applied). The API
/// server reads only `response`, so the two extra keys change nothing for a
/// tool that forwards the document.
pub fn review_document(request: &Value, response: AdmissionResponse) -> anyhow::Result<Value> {
    let operations = response.decoded_patch().context("the module's response")?;
    let patched = response
        .patched_object(request)
        .context("the module's response")?;
    let mut review = response.into_review();
    if let (Some(operations), Some(patched)) = (operations, patched) {
        review["patchOperations"] = serde_json::to_value(operations)?;
        review["patchedObject"] = patched;
    }
    Ok(review)
}

pub use olm_guard_core::display::subject;

/// Names, beside `response`, what a review in a List is about, so that each
/// item says it without the request: the module (`policy`), the file and
/// document (`source`), the `operation`, and the `object` (`apiVersion`,
/// `kind`, `namespace`, `name`; a DELETE's is its old object). The API
/// server reads only `response`.
pub fn name_in_list(review: &mut Value, policy: &str, source: &str, request: &Value) {
    let object = request
        .get("object")
        .filter(|o| o.is_object())
        .or_else(|| request.get("oldObject"))
        .unwrap_or(&Value::Null);
    let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or("");
    let meta = olm_guard_core::ObjectMeta::of(object);
    let mut named = serde_json::json!({
        "apiVersion": text("apiVersion"),
        "kind": text("kind"),
        "name": meta.name,
    });
    let namespace = request
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or(&meta.namespace);
    if !namespace.is_empty() {
        named["namespace"] = serde_json::json!(namespace);
    }
    if let Some(map) = review.as_object_mut() {
        map.insert("policy".into(), serde_json::json!(policy));
        map.insert("source".into(), serde_json::json!(source));
        map.insert(
            "operation".into(),
            request.get("operation").cloned().unwrap_or_default(),
        );
        map.insert("object".into(), named);
    }
}

/// The readable form: the verdict on the first line, then the message, the
/// code, each warning, and a unified diff of the object's YAML before and
/// after the module's patch.
pub fn write_text(
    out: &mut impl Write,
    request: &Value,
    response: &AdmissionResponse,
) -> anyhow::Result<()> {
    let patched = response
        .patched_object(request)
        .context("the module's response")?;
    let verdict = match (response.allowed, &patched) {
        (false, _) => "DENIED".to_string(),
        (true, None) => "allowed".to_string(),
        (true, Some(_)) => {
            let operations = response
                .decoded_patch()?
                .map(|p| p.0.len())
                .unwrap_or_default();
            format!(
                "allowed, mutated ({operations} patch operation{})",
                if operations == 1 { "" } else { "s" }
            )
        }
    };
    writeln!(out, "{}: {verdict}", subject(request))?;
    if let Some(status) = &response.status {
        if let Some(message) = &status.message {
            writeln!(out, "  message: {message}")?;
        }
        if let Some(code) = status.code {
            writeln!(out, "  code:    {code}")?;
        }
    }
    for warning in response.warnings.iter().flatten() {
        writeln!(out, "  warning: {warning}")?;
    }
    if let Some(patched) = patched {
        let unified = yaml_diff(request.get("object").unwrap_or(&Value::Null), &patched)?;
        for line in unified.lines() {
            writeln!(out, "  {line}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use olm_guard_core::Verdict;
    use serde_json::json;

    fn request() -> Value {
        json!({"uid": "u", "operation": "CREATE", "name": "ops", "namespace": "olm",
            "kind": {"group": "operators.coreos.com", "version": "v1alpha1", "kind": "CatalogSource"},
            "object": {"kind": "CatalogSource", "metadata": {"name": "ops"},
                "spec": {"sourceType": "grpc", "address": "a:50051"}}})
    }

    #[test]
    fn a_mutation_is_shown_decoded_applied_and_as_a_diff() {
        let request = request();
        let mut mutated = request["object"].clone();
        mutated["spec"]["grpcPodConfig"] = json!({"securityContextConfig": "restricted"});
        let verdict = Verdict::mutate(mutated.clone()).with_warning("migrated");
        let response = AdmissionResponse::from_verdict(&request, verdict);

        let document = review_document(&request, response.clone()).unwrap();
        assert_eq!(document["patchedObject"], mutated);
        assert_eq!(
            document["patchOperations"][0]["path"],
            "/spec/grpcPodConfig"
        );
        assert_eq!(document["response"]["patchType"], "JSONPatch");

        let mut text = Vec::new();
        write_text(&mut text, &request, &response).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.starts_with(
                "CatalogSource olm/ops (CREATE): allowed, mutated (1 patch operation)\n"
            ),
            "{text}"
        );
        assert!(text.contains("  warning: migrated\n"), "{text}");
        assert!(text.contains("+  grpcPodConfig:"), "{text}");
        assert!(
            text.contains("+    securityContextConfig: restricted"),
            "{text}"
        );
    }

    #[test]
    fn a_denial_names_the_message_and_no_patch_keys_appear() {
        let request = request();
        let verdict = Verdict::deny("spec.image: set it");
        let response = AdmissionResponse::from_verdict(&request, verdict);
        let document = review_document(&request, response.clone()).unwrap();
        assert!(document.get("patchedObject").is_none());
        let mut text = Vec::new();
        write_text(&mut text, &request, &response).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "CatalogSource olm/ops (CREATE): DENIED\n  message: spec.image: set it\n  code:    403\n"
        );
    }
}
