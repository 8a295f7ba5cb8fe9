//! catalog-union: a CatalogSource configures exactly one catalog.
//!
//! Checked on CREATE and UPDATE of `operators.coreos.com/v1alpha1`
//! CatalogSource (not its `status`); DELETE passes.
//!
//! 1. A catalog is configured by one of `spec.catalogImageSource`,
//!    `spec.catalogServiceSource`, `spec.configMapSource`, or, while
//!    `allowLegacy` is on (the default), the deprecated `spec.sourceType`
//!    together with `spec.image`, `spec.address` or `spec.configMap`.
//!    A key set to `null` counts as not set; a missing spec counts as empty.
//! 2. Exactly one of these must be set. Otherwise the CatalogSource is
//!    rejected with a message containing `oneOf` that lists what was found
//!    (or that nothing was) and how to fix it.
//! 3. Settings OLM would silently ignore are rejected, naming the field:
//!    a deprecated key beside a new one; `image` together with `address`;
//!    `grpcPodConfig` without `image`; `configMap` with `sourceType: grpc`;
//!    `image` or `address` with `sourceType: configmap` or `internal`;
//!    a `sourceType` other than `grpc`, `configmap`, `internal`.
//! 4. The chosen source must say something: a non-empty
//!    `catalogImageSource.catalogImage`, a `catalogServiceSource.address` of
//!    the form host:port (port 1-65535), a non-empty
//!    `configMapSource.configMap` (and likewise for the legacy fields).
//! 5. A valid legacy CatalogSource is accepted, by default with no warning
//!    (it is the only form today's CRD has); with `warnLegacy: true` it gets
//!    a warning naming the field to use instead.
//! 6. With `migrateLegacy: true`, a valid legacy spec is rewritten to the new
//!    field (`image` + `grpcPodConfig` become `catalogImageSource` with
//!    `podSpecOverrides`, `address` becomes `catalogServiceSource`,
//!    `configMap` becomes `configMapSource`) and the deprecated keys are
//!    removed. A `grpcPodConfig` with fields `podSpecOverrides` cannot hold
//!    (`affinity`, `securityContextConfig`, `extractContent`,
//!    `memoryTarget`) is left as it is, with a warning saying why.
//!
//! 7. An UPDATE of an object that already breaks these rules is allowed
//!    with a warning when it leaves the catalog configuration as it was or
//!    fixes part of it.
//!
//! A field of the wrong JSON type (e.g. `catalogImageSource: "img"`) is
//! rejected naming its path.

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::catalog_union::Settings,
    olm_guard_rules::catalog_union::validate
);
