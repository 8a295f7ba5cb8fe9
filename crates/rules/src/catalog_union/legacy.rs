//! Rules 5 and 6: a valid legacy spec is accepted (with a warning only when
//! asked for) or rewritten into its union member.

use serde_json::{Map, Value};

use olm_guard_core::Verdict;
use olm_guard_olm::catalog_source::{
    CatalogImageSource, CatalogServiceSource, ConfigMapSource, GrpcPodConfig,
};

use super::alternatives::DEPRECATED;
use super::judge::Legacy;
use super::messages::{spec_fields, unportable};
use super::{Judgement, Settings};

impl Legacy<'_> {
    /// The deprecated keys this source is written with.
    fn keys(&self) -> Vec<&'static str> {
        match self {
            Legacy::Image { pod_config, .. } => {
                let mut keys = vec!["sourceType", "image"];
                if pod_config.is_some() {
                    keys.push("grpcPodConfig");
                }
                keys
            }
            Legacy::Address(_) => vec!["sourceType", "address"],
            Legacy::ConfigMap(_) => vec!["sourceType", "configMap"],
        }
    }

    /// The `grpcPodConfig` this source carries, if any.
    fn pod_config(&self) -> Option<&GrpcPodConfig> {
        match self {
            Legacy::Image { pod_config, .. } => *pod_config,
            Legacy::Address(_) | Legacy::ConfigMap(_) => None,
        }
    }

    /// The union member that replaces it, as `spec.<member>: <json>` text.
    fn replacement_text(&self) -> String {
        match self.member() {
            Ok((key, value)) => format!("spec.{key}: {value}"),
            Err(_) => match self {
                Legacy::Image { image, .. } => format!(
                    "spec.catalogImageSource.catalogImage: {}",
                    Value::String(image.to_string())
                ),
                _ => String::new(),
            },
        }
    }

    /// Rule 6: the member key and value, or the `grpcPodConfig` fields the
    /// proposed `podSpecOverrides` cannot hold.
    fn member(&self) -> Result<(&'static str, Value), Vec<&'static str>> {
        let (key, value) = match self {
            Legacy::Image { image, pod_config } => {
                let unportable = pod_config.map(GrpcPodConfig::unportable_fields);
                if let Some(fields) = unportable.filter(|f| !f.is_empty()) {
                    return Err(fields);
                }
                let member = CatalogImageSource {
                    catalog_image: Some(image.to_string()),
                    pod_spec_overrides: pod_config.and_then(GrpcPodConfig::pod_spec_overrides),
                };
                ("catalogImageSource", serde_json::to_value(member))
            }
            Legacy::Address(address) => {
                let member = CatalogServiceSource {
                    address: Some(address.to_string()),
                };
                ("catalogServiceSource", serde_json::to_value(member))
            }
            Legacy::ConfigMap(name) => {
                let member = ConfigMapSource {
                    config_map: Some(name.to_string()),
                };
                ("configMapSource", serde_json::to_value(member))
            }
        };
        // Serialising these plain structs cannot fail; an empty object would
        // still be a valid (if odd) answer, never a panic.
        Ok((key, value.unwrap_or_else(|_| Value::Object(Map::new()))))
    }
}

/// Rules 5 and 6 for a consistent legacy spec.
pub(super) fn admit_legacy(
    object: &Map<String, Value>,
    legacy: &Legacy,
    settings: &Settings,
) -> Judgement {
    let keys = spec_fields(&legacy.keys());
    if settings.migrate_legacy
        && let Ok((member, value)) = legacy.member()
    {
        return Judgement::Admitted(
            Verdict::mutate(migrate(object, member, value)).with_warning(format!(
                "the deprecated {keys} were rewritten to spec.{member} (migrateLegacy); \
                 update the manifest the same way so the next apply does not bring them back"
            )),
        );
    }
    let lost = unportable(legacy.pod_config());
    if !settings.allow_legacy {
        // Only reached with migrateLegacy on, for a spec it could not rewrite.
        let (cannot, remove) = match &lost {
            Some((fields, reason)) => (
                format!(", and this spec cannot be migrated: {reason}"),
                format!("remove {fields} and "),
            ),
            None => (String::new(), String::new()),
        };
        return Judgement::Broken(vec![format!(
            "the deprecated {keys} are not accepted here because allowLegacy is false{cannot}; \
             {remove}write {} instead",
            legacy.replacement_text()
        )]);
    }
    if !settings.warn_legacy && !settings.migrate_legacy {
        // Today's CRD has only the legacy form: it is the normal one.
        return Judgement::Admitted(Verdict::accept());
    }
    let mut warning = format!(
        "the deprecated {keys} configure this catalog; write {} instead",
        legacy.replacement_text()
    );
    let not_migrated = if settings.migrate_legacy {
        lost.map(|(fields, reason)| {
            format!("this spec was not migrated: {reason}; remove {fields} to let it be migrated")
        })
    } else {
        // Advice never drops a setting silently: say what the member form
        // cannot hold (the migration says it in its own warning).
        if let Some((fields, reason)) = lost {
            warning.push_str(&format!("; but {reason}, so that form would drop {fields}"));
        }
        None
    };
    Judgement::Admitted(
        Verdict::accept()
            .with_warning(warning)
            .with_warnings(not_migrated),
    )
}

/// The object with the deprecated keys replaced by `member`; every other key
/// of the object and of its spec is kept as it was.
pub(super) fn migrate(object: &Map<String, Value>, member: &str, value: Value) -> Value {
    let mut object = object.clone();
    if let Some(Value::Object(spec)) = object.get_mut("spec") {
        for key in DEPRECATED {
            spec.remove(key);
        }
        spec.insert(member.to_string(), value);
    }
    Value::Object(object)
}
