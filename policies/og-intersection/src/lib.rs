//! og-intersection: OperatorGroups whose target namespaces overlap must not
//! provide the same APIs.
//!
//! The policy judges what a request changes. It stops new conflicts, but
//! never blocks an UPDATE of an object whose conflict already existed: OLM
//! itself writes `olm.providedAPIs` and other metadata with plain UPDATEs,
//! and admins must be able to repair a conflict step by step.
//!
//! For an OperatorGroup that is created or updated:
//! 1. `spec.targetNamespaces` may not contain `""`, and `spec.selector` must
//!    be a valid label selector; OLM cannot work out the group's targets
//!    otherwise.
//! 2. A namespace holds one OperatorGroup: creating a second one is rejected
//!    (`TooManyOperatorGroups`). Updating a group in a namespace that already
//!    holds several is allowed with a warning: the update adds no group.
//! 3. If another OperatorGroup targets a namespace this group also targets
//!    (each group counts its own namespace too) and both list an API in
//!    their `olm.providedAPIs` annotation, that is a conflict, and a new
//!    group is rejected (`InterOperatorGroupOwnerConflict`), naming the other
//!    group, the shared APIs and the shared namespaces. An update is rejected
//!    only for conflicts the old object did not have (another group, or
//!    another shared API); conflicts it keeps are reported as a warning.
//!
//! For a ClusterServiceVersion that is created or updated:
//! 4. Copies OLM made into target namespaces, and CSVs in a namespace without
//!    exactly one OperatorGroup, are not checked here.
//! 5. Every owned CRD must be named `<plural>.<group>`.
//! 6. The CSV is rejected when OLM would fail it: its APIs are already
//!    provided by a group whose targets overlap its group's
//!    (`InterOperatorGroupOwnerConflict`, also when its own group already
//!    lists them: that turns into the same failure at OLM's next sync), or
//!    its group has `spec.staticProvidedAPIs: true` and OLM would have to
//!    change that group's annotation
//!    (`CannotModifyStaticOperatorGroupProvidedAPIs`).
//! 7. An update is checked only when it changes the APIs the CSV provides
//!    (owned CRDs and API services), or turns a copy into an original.
//!    Other updates are allowed; if rule 5 or 6 would reject the CSV, the
//!    reason comes back as a warning.

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::og_intersection::Settings,
    olm_guard_rules::og_intersection::validate
);
