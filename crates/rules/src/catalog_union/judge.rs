//! Rules 1-4: which alternative a spec configures, and every problem that
//! keeps OLM from running it as written.

use olm_guard_olm::catalog_source::{
    self, CatalogImageSource, CatalogServiceSource, CatalogSourceSpec, ConfigMapSource,
    GrpcPodConfig, SourceType,
};

use super::alternatives::{Alternative, alternatives, deprecated_present};
use super::messages::{
    describe, grpc_pod_config_without_image, none_found, replacement_of, several_found,
    unknown_source_type, unportable,
};
use super::read::Terms;

/// What a spec that passed rules 2-4 configures.
#[derive(Debug)]
pub(super) enum Configured<'a> {
    /// One union member, nothing else.
    Member,
    /// A consistent legacy spec, in the form OLM reconciles it.
    Legacy(Legacy<'a>),
}

/// A legacy spec OLM would run without ignoring anything.
#[derive(Debug)]
pub(super) enum Legacy<'a> {
    Image {
        image: &'a str,
        pod_config: Option<&'a GrpcPodConfig>,
    },
    Address(&'a str),
    ConfigMap(&'a str),
}

/// Rules 1-4: which alternative is configured, or every problem found, each
/// naming its field.
pub(super) fn judge(
    spec: &CatalogSourceSpec,
    legacy_counts: bool,
    terms: Terms,
) -> Result<Configured<'_>, Vec<String>> {
    let found = alternatives(spec, legacy_counts);
    match found.as_slice() {
        [] => Err(vec![none_found(spec, legacy_counts, terms)]),
        [Alternative::Legacy] => judge_legacy(spec, terms),
        [member] => judge_member(spec, *member),
        several => Err(vec![several_found(spec, several)]),
    }
}

/// Rules 3 and 4 for a spec whose one alternative is a union member.
pub(super) fn judge_member(
    spec: &CatalogSourceSpec,
    member: Alternative,
) -> Result<Configured<'_>, Vec<String>> {
    let member_name = describe(spec, member);
    let mut problems: Vec<String> = deprecated_present(spec)
        .into_iter()
        .map(|key| {
            format!(
                "spec.{key} is deprecated and OLM ignores it beside {member_name}: remove it{}",
                match key {
                    "sourceType" => String::new(),
                    "grpcPodConfig" => match unportable(spec.grpc_pod_config.as_ref()) {
                        Some((_, reason)) => format!(
                            " (its replacement is {}, but {reason})",
                            replacement_of(key)
                        ),
                        None => format!(" (its replacement is {})", replacement_of(key)),
                    },
                    _ => format!(" (its replacement is {})", replacement_of(key)),
                }
            )
        })
        .collect();
    problems.extend(member_problem(spec, member));
    if problems.is_empty() {
        Ok(Configured::Member)
    } else {
        Err(problems)
    }
}

/// Rule 4: the member must configure its one thing.
pub(super) fn member_problem(spec: &CatalogSourceSpec, member: Alternative) -> Option<String> {
    match member {
        Alternative::ImageSource => spec
            .catalog_image_source
            .as_ref()
            .and_then(|s: &CatalogImageSource| empty_field(s.catalog_image.as_deref()))
            .map(|what| {
                format!(
                    "spec.catalogImageSource.catalogImage is {what}: name the operator-registry \
                     image to serve, e.g. quay.io/operatorhubio/catalog:latest"
                )
            }),
        Alternative::ServiceSource => {
            spec.catalog_service_source
                .as_ref()
                .and_then(|s: &CatalogServiceSource| {
                    address_problem("spec.catalogServiceSource.address", s.address.as_deref())
                })
        }
        Alternative::ConfigMapSource => spec
            .config_map_source
            .as_ref()
            .and_then(|s: &ConfigMapSource| empty_field(s.config_map.as_deref()))
            .map(|what| {
                format!(
                    "spec.configMapSource.configMap is {what}: name the ConfigMap in this \
                     namespace that holds the catalog"
                )
            }),
        Alternative::Legacy => None,
    }
}

/// "missing" or "empty" when a string field configures nothing.
pub(super) fn empty_field(value: Option<&str>) -> Option<&'static str> {
    match value {
        None => Some("missing"),
        Some(v) if v.trim().is_empty() => Some("empty"),
        Some(_) => None,
    }
}

pub(super) fn address_problem(field: &str, address: Option<&str>) -> Option<String> {
    const EXAMPLE: &str = "e.g. my-registry.my-namespace.svc:50051";
    if let Some(what) = empty_field(address) {
        return Some(format!(
            "{field} is {what}: write the host:port of the running registry, {EXAMPLE}"
        ));
    }
    let address = address.unwrap_or_default();
    catalog_source::check_address(address)
        .err()
        .map(|why| format!("{field} \"{address}\" is not host:port ({why}); write it as {EXAMPLE}"))
}

/// Rules 3 and 4 for a spec whose one alternative is the legacy one.
pub(super) fn judge_legacy(
    spec: &CatalogSourceSpec,
    terms: Terms,
) -> Result<Configured<'_>, Vec<String>> {
    let raw_type = spec.source_type.as_deref().unwrap_or_default();
    let Some(source_type) = SourceType::parse(raw_type) else {
        return Err(vec![unknown_source_type(raw_type, terms)]);
    };
    let mut problems = Vec::new();
    let legacy = match source_type {
        SourceType::Grpc => grpc_legacy(spec, terms, &mut problems),
        SourceType::ConfigMap | SourceType::Internal => {
            configmap_legacy(spec, source_type, terms, &mut problems)
        }
    };
    match legacy {
        Some(legacy) if problems.is_empty() => Ok(Configured::Legacy(legacy)),
        _ => Err(problems),
    }
}

/// `sourceType: grpc`: OLM runs `image` if set, else dials `address`
/// (`ReconcilerForSource`); `configMap` is never read.
pub(super) fn grpc_legacy<'a>(
    spec: &'a CatalogSourceSpec,
    terms: Terms,
    problems: &mut Vec<String>,
) -> Option<Legacy<'a>> {
    if spec.config_map.is_some() {
        problems.push(
            "spec.configMap is ignored with spec.sourceType \"grpc\": remove it, or set \
             spec.sourceType \"configmap\" if the catalog is in that ConfigMap"
                .into(),
        );
    }
    match (spec.image.as_deref(), spec.address.as_deref()) {
        (Some(image), address) => {
            if address.is_some() {
                problems.push(
                    "spec.address is ignored because spec.image is set (OLM runs the image): \
                     remove spec.address, or remove spec.image to use the running registry"
                        .into(),
                );
            }
            if let Some(what) = empty_field(Some(image)) {
                problems.push(format!(
                    "spec.image is {what}: name the operator-registry image to serve"
                ));
            }
            Some(Legacy::Image {
                image,
                pod_config: spec.grpc_pod_config.as_ref(),
            })
        }
        (None, Some(address)) => {
            if spec.grpc_pod_config.is_some() {
                problems.push(grpc_pod_config_without_image());
            }
            problems.extend(address_problem("spec.address", Some(address)));
            Some(Legacy::Address(address))
        }
        (None, None) => {
            problems.push(match terms {
                Terms::Union => "spec.sourceType \"grpc\" needs spec.image or spec.address; \
                                 better, write spec.catalogImageSource.catalogImage or \
                                 spec.catalogServiceSource.address"
                    .into(),
                Terms::Legacy => "spec.sourceType \"grpc\" needs spec.image (an \
                                  operator-registry image) or spec.address (host:port of a \
                                  running registry)"
                    .into(),
            });
            None
        }
    }
}

/// `sourceType: configmap|internal`: OLM serves `configMap` and reads neither
/// `image` nor `address`.
pub(super) fn configmap_legacy<'a>(
    spec: &'a CatalogSourceSpec,
    source_type: SourceType,
    terms: Terms,
    problems: &mut Vec<String>,
) -> Option<Legacy<'a>> {
    let named = source_type.as_str();
    for (key, value) in [("image", &spec.image), ("address", &spec.address)] {
        if value.is_some() {
            problems.push(format!(
                "spec.{key} is ignored with spec.sourceType \"{named}\": remove it, or set \
                 spec.sourceType \"grpc\" if the catalog comes from it"
            ));
        }
    }
    if spec.grpc_pod_config.is_some() {
        problems.push(grpc_pod_config_without_image());
    }
    match spec.config_map.as_deref() {
        None => {
            problems.push(match terms {
                Terms::Union => format!(
                    "spec.sourceType \"{named}\" needs spec.configMap; better, write \
                     spec.configMapSource.configMap"
                ),
                Terms::Legacy => format!(
                    "spec.sourceType \"{named}\" needs spec.configMap (the name of the \
                     ConfigMap that holds the catalog)"
                ),
            });
            None
        }
        Some(name) => {
            if let Some(what) = empty_field(Some(name)) {
                problems.push(format!(
                    "spec.configMap is {what}: name the ConfigMap that holds the catalog"
                ));
            }
            Some(Legacy::ConfigMap(name))
        }
    }
}
