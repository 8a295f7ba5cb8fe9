//! Rule 1: which alternatives of the enhancement's `oneOf` a spec
//! configures, and which deprecated keys it holds; read by the judgement
//! and by the messages alike.

use olm_guard_olm::catalog_source::CatalogSourceSpec;

/// One alternative of the enhancement's `oneOf`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Alternative {
    ImageSource,
    ServiceSource,
    ConfigMapSource,
    /// `sourceType` with `image`, `address` or `configMap`.
    Legacy,
}

/// The deprecated keys, in the order messages list them.
pub(super) const DEPRECATED: [&str; 5] = [
    "sourceType",
    "image",
    "address",
    "configMap",
    "grpcPodConfig",
];

/// Rule 1: presence only, as the `required` lists of the enhancement's
/// `oneOf` test it.
pub(super) fn alternatives(spec: &CatalogSourceSpec, legacy_counts: bool) -> Vec<Alternative> {
    let legacy = legacy_counts
        && spec.source_type.is_some()
        && (spec.image.is_some() || spec.address.is_some() || spec.config_map.is_some());
    [
        (
            Alternative::ImageSource,
            spec.catalog_image_source.is_some(),
        ),
        (
            Alternative::ServiceSource,
            spec.catalog_service_source.is_some(),
        ),
        (
            Alternative::ConfigMapSource,
            spec.config_map_source.is_some(),
        ),
        (Alternative::Legacy, legacy),
    ]
    .into_iter()
    .filter_map(|(alternative, present)| present.then_some(alternative))
    .collect()
}

pub(super) fn deprecated_present(spec: &CatalogSourceSpec) -> Vec<&'static str> {
    let present = [
        spec.source_type.is_some(),
        spec.image.is_some(),
        spec.address.is_some(),
        spec.config_map.is_some(),
        spec.grpc_pod_config.is_some(),
    ];
    DEPRECATED
        .into_iter()
        .zip(present)
        .filter_map(|(key, present)| present.then_some(key))
        .collect()
}
