//! OperatorGroups, ClusterServiceVersions and OLM's provided-API intersection
//! algorithm, ported from OLM (operator-framework/operator-lifecycle-manager;
//! `groups.go`, `operatorgroup.go` and `labeler.go` are in
//! `pkg/controller/operators/olm/`, `cache.APISet` in
//! `pkg/controller/registry/resolver/cache/`) so a policy decides exactly
//! what OLM would:
//!
//! * [`ApiKey`] / [`ApiSet`]: `cache.APISet` and the `olm.providedAPIs`
//!   annotation parser/printer (`GVKStringToProvidedAPISet`, `APISet.String`);
//! * [`NamespaceSet`]: the namespace-set algebra of `groups.go`, where the
//!   single entry `""` means all namespaces;
//! * [`OperatorGroupSpec::targets`]: target resolution of
//!   `getOperatorGroupTargets` (operatorgroup.go);
//! * [`GroupSurface`] / [`reconcile_api_intersection`]: `NewOperatorGroup`,
//!   `GroupIntersection` and `ReconcileAPIIntersection` (groups.go);
//! * [`ClusterServiceVersion::provided_apis`] / [`ClusterServiceVersion::is_copied`]:
//!   `apiSurfaceOfCSV` (labeler.go) and `IsCopied` (operator-framework/api);
//!   [`ClusterServiceVersion::provides_same_apis`] compares two versions of
//!   a CSV by that surface (admission of UPDATEs).
//!
//! The types are lenient (`null` = absent) because a policy must answer any
//! JSON with a message, not a parse error.

/// The annotation OLM keeps the union of a group's member CSVs' APIs in.
pub const PROVIDED_APIS_ANNOTATION: &str = "olm.providedAPIs";
/// Set on CSVs copied into target namespaces: the namespace of the original.
pub const OPERATOR_NAMESPACE_ANNOTATION: &str = "olm.operatorNamespace";
/// Label OLM puts on copied CSVs.
pub const COPIED_LABEL: &str = "olm.copiedFrom";
/// `status.reason` of a copied CSV.
pub const COPIED_REASON: &str = "Copied";
/// `metav1.NamespaceAll`: as the only target, it means every namespace.
pub const NAMESPACE_ALL: &str = "";

/// Deserialises an admission object, naming the field at fault
/// (`spec.targetNamespaces`): serde alone reports only the type mismatch.
fn read_object<T: serde::de::DeserializeOwned>(
    object: &serde_json::Value,
) -> Result<T, crate::ObjectError> {
    crate::read_custom_resource(object, "field ")
}

mod api_set;
mod csv;
mod group;
mod intersection;
mod namespace_set;
#[cfg(test)]
mod tests;

pub use api_set::*;
pub use csv::*;
pub use group::*;
pub use intersection::*;
pub use namespace_set::*;
