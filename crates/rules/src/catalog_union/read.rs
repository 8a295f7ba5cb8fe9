//! Reading the request: the spec as typed fields, and which field names the
//! advice may use.

use serde_json::{Map, Value};

use olm_guard_core::Verdict;
use olm_guard_olm::catalog_source::CatalogSourceSpec;

use super::Settings;

/// Which fields advice may name. The CatalogSource CRD clusters run today
/// has only the legacy fields and prunes the union members, so advice to
/// write a union member could not be followed there. Union terms are used
/// only where the cluster evidently has them: a union member is in the
/// object, or the settings were chosen for such a CRD (`warnLegacy`,
/// `migrateLegacy`, or `allowLegacy: false`, under which only members pass).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Terms {
    Legacy,
    Union,
}

impl Terms {
    pub(super) fn for_object(object: &Map<String, Value>, settings: &Settings) -> Terms {
        let member_present = object
            .get("spec")
            .and_then(Value::as_object)
            .is_some_and(|spec| {
                MEMBERS
                    .iter()
                    .any(|key| spec.get(*key).is_some_and(|v| !v.is_null()))
            });
        if member_present
            || settings.warn_legacy
            || settings.migrate_legacy
            || !settings.allow_legacy
        {
            Terms::Union
        } else {
            Terms::Legacy
        }
    }
}

/// The union members, as spec keys.
pub(super) const MEMBERS: [&str; 3] = [
    "catalogImageSource",
    "catalogServiceSource",
    "configMapSource",
];

/// `spec` as typed fields. A missing or `null` spec is `{}` (rule 1).
pub(super) fn read_spec(
    object: &Map<String, Value>,
    terms: Terms,
) -> Result<CatalogSourceSpec, Verdict> {
    let spec = match object.get("spec") {
        None | Some(Value::Null) => return Ok(CatalogSourceSpec::default()),
        Some(spec @ Value::Object(_)) => spec,
        Some(other) => {
            let holding = match terms {
                Terms::Union => {
                    "one of catalogImageSource, catalogServiceSource or configMapSource"
                }
                Terms::Legacy => "sourceType and one of image, address or configMap",
            };
            return Err(Verdict::bad_request(format!(
                "spec must be an object holding {holding}, but it is {}; write spec as a mapping",
                json_kind(other)
            )));
        }
    };
    CatalogSourceSpec::from_value(spec).map_err(|e| {
        Verdict::bad_request(format!(
            "spec.{} has the wrong type ({}); {}",
            e.path,
            e.reason,
            shape_of(&e.path)
        ))
    })
}

/// How a field whose type was wrong is written, for the rejection.
pub(super) fn shape_of(path: &str) -> &'static str {
    match path {
        "catalogImageSource" => {
            "write it as an object: catalogImageSource: {catalogImage: <image>, \
             podSpecOverrides: {nodeSelector, tolerations, priorityClassName}}"
        }
        "catalogServiceSource" => {
            "write it as an object: catalogServiceSource: {address: <host>:<port>}"
        }
        "configMapSource" => "write it as an object: configMapSource: {configMap: <name>}",
        _ => "write a value of the expected type",
    }
}

pub(super) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
