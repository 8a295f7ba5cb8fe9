//! og-intersection: OperatorGroups whose target namespaces overlap must not
//! provide the same APIs.
//!
//! For an OperatorGroup that is created or updated:
//! 1. `spec.targetNamespaces` may not contain `""`, and `spec.selector` must
//!    be a valid label selector; OLM cannot work out the group's targets
//!    otherwise.
//! 2. A namespace holds one OperatorGroup: a second one is rejected
//!    (`TooManyOperatorGroups`). Updating the existing group is fine.
//! 3. If another OperatorGroup targets a namespace this group also targets
//!    (each group counts its own namespace too) and both list an API in
//!    their `olm.providedAPIs` annotation, the group is rejected
//!    (`InterOperatorGroupOwnerConflict`), naming the other group, the shared
//!    APIs and the shared namespaces.
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

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::og_intersection::Settings,
    olm_guard_rules::og_intersection::validate
);
