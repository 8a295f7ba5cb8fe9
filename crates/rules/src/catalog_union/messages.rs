//! Message builders: how fields are named and listed, and the advice of
//! rule 2 and rule 3 in the terms the cluster's CRD has.

use olm_guard_olm::catalog_source::{CatalogSourceSpec, GrpcPodConfig, SourceType};

use super::alternatives::{Alternative, deprecated_present};
use super::read::Terms;

/// Where the value of a deprecated key belongs in the union.
pub(super) fn replacement_of(key: &str) -> &'static str {
    match key {
        "image" => "spec.catalogImageSource.catalogImage",
        "address" => "spec.catalogServiceSource.address",
        "configMap" => "spec.configMapSource.configMap",
        "grpcPodConfig" => "spec.catalogImageSource.podSpecOverrides",
        _ => "the member key itself (catalogImageSource, catalogServiceSource or configMapSource)",
    }
}

/// The `sourceType` a legacy source key is read with.
pub(super) fn source_type_for(key: &str) -> &'static str {
    match key {
        "configMap" => "configmap",
        _ => "grpc",
    }
}

/// Rule 6's limit, for every piece of advice that moves `grpcPodConfig`:
/// the fields set in it that `podSpecOverrides` cannot hold, as
/// `(fields, reason)` texts, or `None` when nothing would be lost.
pub(super) fn unportable(pod_config: Option<&GrpcPodConfig>) -> Option<(String, String)> {
    let fields: Vec<String> = pod_config
        .map(GrpcPodConfig::unportable_fields)
        .unwrap_or_default()
        .iter()
        .map(|f| format!("spec.grpcPodConfig.{f}"))
        .collect();
    if fields.is_empty() {
        return None;
    }
    let fields = join_and(&fields);
    let reason = format!(
        "{fields} has no place in spec.catalogImageSource.podSpecOverrides, which holds only \
         nodeSelector, tolerations and priorityClassName"
    );
    Some((fields, reason))
}

pub(super) fn spec_fields(keys: &[&str]) -> String {
    let fields: Vec<String> = keys.iter().map(|k| format!("spec.{k}")).collect();
    join_and(&fields)
}

pub(super) fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

pub(super) fn describe(spec: &CatalogSourceSpec, alternative: Alternative) -> String {
    match alternative {
        Alternative::ImageSource => "spec.catalogImageSource".into(),
        Alternative::ServiceSource => "spec.catalogServiceSource".into(),
        Alternative::ConfigMapSource => "spec.configMapSource".into(),
        Alternative::Legacy => {
            let keys: Vec<&str> = deprecated_present(spec)
                .into_iter()
                .filter(|k| *k != "grpcPodConfig")
                .collect();
            format!("the legacy {}", spec_fields(&keys))
        }
    }
}

pub(super) const HOW_TO_CONFIGURE: &str = "spec.catalogImageSource.catalogImage (an operator-registry \
     image), spec.catalogServiceSource.address (host:port of a running registry) or \
     spec.configMapSource.configMap (the name of a ConfigMap)";

/// The same choice in the fields of the CRD clusters run today.
pub(super) const HOW_TO_CONFIGURE_LEGACY: &str = "spec.sourceType: grpc with spec.image (an \
     operator-registry image) or spec.address (host:port of a running registry), or \
     spec.sourceType: configmap with spec.configMap (the name of a ConfigMap)";

/// Rule 2, too many.
pub(super) fn several_found(spec: &CatalogSourceSpec, found: &[Alternative]) -> String {
    let names: Vec<String> = found.iter().map(|a| describe(spec, *a)).collect();
    let fix = if found.contains(&Alternative::Legacy) {
        format!(
            "keep one of them; to keep a union member, remove the deprecated {}",
            spec_fields(&deprecated_present(spec))
        )
    } else {
        "keep one of them and remove the others".to_string()
    };
    format!(
        "spec must configure exactly one catalog source (oneOf) but configures {}: {}; {fix}",
        found.len(),
        join_and(&names)
    )
}

/// Rule 2, none: explain why the keys that are there do not count.
pub(super) fn none_found(spec: &CatalogSourceSpec, legacy_counts: bool, terms: Terms) -> String {
    let deprecated = deprecated_present(spec);
    let mut why = Vec::new();
    if !deprecated.is_empty() && !legacy_counts {
        let lost = unportable(spec.grpc_pod_config.as_ref());
        let replacements: Vec<String> = deprecated
            .iter()
            .filter(|k| **k != "sourceType")
            .map(|k| match (*k, &lost) {
                ("grpcPodConfig", Some((_, reason))) => {
                    format!("spec.{k} with {} ({reason})", replacement_of(k))
                }
                _ => format!("spec.{k} with {}", replacement_of(k)),
            })
            .collect();
        why.push(format!(
            "the deprecated {} {} not accepted here because allowLegacy is false{}",
            spec_fields(&deprecated),
            if deprecated.len() == 1 { "is" } else { "are" },
            if replacements.is_empty() {
                String::new()
            } else {
                format!("; replace {}", join_and(&replacements))
            }
        ));
    } else if spec.source_type.is_none() && !deprecated.is_empty() {
        let sources: Vec<&str> = deprecated
            .iter()
            .copied()
            .filter(|k| *k != "grpcPodConfig")
            .collect();
        if !sources.is_empty() {
            why.push(match terms {
                Terms::Union => format!(
                    "the deprecated {} {} no spec.sourceType, so no legacy source is \
                     configured; rather than adding one, write {} instead",
                    spec_fields(&sources),
                    if sources.len() == 1 { "has" } else { "have" },
                    join_and(
                        &sources
                            .iter()
                            .map(|k| replacement_of(k).to_string())
                            .collect::<Vec<_>>()
                    )
                ),
                Terms::Legacy => {
                    let add: Vec<String> = sources
                        .iter()
                        .map(|k| format!("spec.sourceType: {} for spec.{k}", source_type_for(k)))
                        .collect();
                    format!(
                        "{} {} no spec.sourceType, so no catalog is configured; add {}{}",
                        spec_fields(&sources),
                        if sources.len() == 1 { "has" } else { "have" },
                        join_and(&add),
                        if sources.len() == 1 {
                            ""
                        } else {
                            " and keep only one of them"
                        }
                    )
                }
            });
        }
        if spec.grpc_pod_config.is_some() {
            why.push(match terms {
                Terms::Union => {
                    let mut text = "the deprecated spec.grpcPodConfig only tunes a registry pod \
                                    and names no catalog; its replacement \
                                    spec.catalogImageSource.podSpecOverrides goes beside \
                                    spec.catalogImageSource.catalogImage"
                        .to_string();
                    if let Some((_, reason)) = unportable(spec.grpc_pod_config.as_ref()) {
                        text.push_str(&format!(", but {reason}"));
                    }
                    text
                }
                Terms::Legacy => "spec.grpcPodConfig only tunes the registry pod of \
                                  spec.sourceType: grpc with spec.image and names no catalog"
                    .to_string(),
            });
        }
    } else if let Some(source_type) = &spec.source_type {
        why.push(format!(
            "spec.sourceType \"{source_type}\" alone names no catalog: legacy sources also need \
             spec.image, spec.address or spec.configMap"
        ));
    }
    let why = if why.is_empty() {
        String::new()
    } else {
        format!(" ({})", why.join("; "))
    };
    let how = match terms {
        Terms::Union => format!("set exactly one of {HOW_TO_CONFIGURE}"),
        Terms::Legacy => format!("set {HOW_TO_CONFIGURE_LEGACY}"),
    };
    // "(oneOf)" names the union the enhancement's CRD declares; today's CRD,
    // in whose terms a spec without members is answered, has none.
    let one_of = match terms {
        Terms::Union => " (oneOf)",
        Terms::Legacy => "",
    };
    format!(
        "spec must configure exactly one catalog source{one_of} but configures none{why}; {how}"
    )
}

pub(super) fn unknown_source_type(value: &str, terms: Terms) -> String {
    let hint = match SourceType::suggest(value) {
        Some(meant) => format!(" (did you mean \"{}\"?)", meant.as_str()),
        None => String::new(),
    };
    let fix = match terms {
        Terms::Union => {
            format!("better, drop the deprecated spec.sourceType and set one of {HOW_TO_CONFIGURE}")
        }
        Terms::Legacy => format!("set {HOW_TO_CONFIGURE_LEGACY}"),
    };
    format!(
        "spec.sourceType \"{value}\" is not a source type OLM knows{hint}: OLM accepts only \
         {}; {fix}",
        SourceType::NAMES.map(|n| format!("\"{n}\"")).join(", ")
    )
}

pub(super) fn grpc_pod_config_without_image() -> String {
    "spec.grpcPodConfig is only used with spec.sourceType \"grpc\" and spec.image, which this \
     spec does not set: remove it"
        .into()
}
