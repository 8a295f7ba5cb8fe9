//! Every denial and warning the rule writes. Each names the object, the
//! other groups, the APIs and the namespaces involved, and says how to fix it.

use olm_guard_olm::operator_group::{
    ApiSet, ClusterServiceVersion, CrdNameError, NamespaceSet, OperatorGroup,
    PROVIDED_APIS_ANNOTATION, TargetsError,
};

use super::lookup::LookupFailed;
use crate::common;

/// Names and namespaces listed in one message before "and N more".
const LISTED: usize = 10;

/// Rule 1: OLM cannot resolve the group's targets.
pub(super) fn unresolvable_targets_message(group: &OperatorGroup, error: &TargetsError) -> String {
    let who = format!("OperatorGroup \"{}\"", group.display_name());
    match error {
        TargetsError::ContainsNamespaceAll => format!(
            "spec.targetNamespaces of {who} contains \"\" (NamespaceAll); OLM rejects it \
             (\"TargetNamespaces cannot contain NamespaceAll\") and never resolves the group's \
             targets. Remove the empty entry; to target all namespaces, omit both \
             spec.targetNamespaces and spec.selector instead."
        ),
        TargetsError::InvalidSelector(reason) => format!(
            "spec.selector of {who} is not a valid label selector: {reason}. OLM cannot resolve \
             the group's targets (and checks spec.selector even when spec.targetNamespaces is \
             set). Fix spec.selector: matchLabels, or matchExpressions with In or NotIn (with \
             values) or Exists or DoesNotExist (without values); or remove it."
        ),
    }
}

/// Rule 2 on CREATE: the namespace already has a group.
pub(super) fn too_many_groups_message(
    group: &OperatorGroup,
    siblings: &[&OperatorGroup],
) -> String {
    let mut names: Vec<String> = siblings
        .iter()
        .map(|s| format!("\"{}\"", s.metadata.name))
        .collect();
    names.sort();
    format!(
        "TooManyOperatorGroups: namespace \"{namespace}\" already has OperatorGroup {existing}; \
         OLM supports one OperatorGroup per namespace and fails every ClusterServiceVersion in a \
         namespace with more (reason TooManyOperatorGroups). Change the existing OperatorGroup \
         instead of adding \"{name}\", or create \"{name}\" in a namespace that has no \
         OperatorGroup.",
        namespace = group.metadata.namespace,
        existing = listing(&names),
        name = group.metadata.name,
    )
}

/// Rule 2 on UPDATE: the extra groups predate the request.
pub(super) fn too_many_groups_warning(
    group: &OperatorGroup,
    siblings: &[&OperatorGroup],
) -> String {
    let mut names: Vec<String> = siblings
        .iter()
        .map(|s| format!("\"{}\"", s.metadata.name))
        .collect();
    names.sort();
    format!(
        "TooManyOperatorGroups: namespace \"{namespace}\" has OperatorGroup {others} besides \
         \"{name}\"; OLM fails every ClusterServiceVersion in it until one OperatorGroup is \
         left. This UPDATE is allowed because it adds no group; delete the extra ones.",
        namespace = group.metadata.namespace,
        others = listing(&names),
        name = group.metadata.name,
    )
}

/// Rule 3 on UPDATE: conflicts the old object already had.
pub(super) fn kept_conflicts_warning(group: &OperatorGroup, kept: &[Overlap]) -> String {
    format!(
        "InterOperatorGroupOwnerConflict (existing before this UPDATE, which is allowed): \
         OperatorGroup \"{name}\" provides APIs that other OperatorGroups provide in \
         namespaces both target: {details}. OLM fails the ClusterServiceVersions providing them \
         until the targets are disjoint or one group stops providing them.",
        name = group.display_name(),
        details = describe_overlaps(kept),
    )
}

/// Rule 3 on UPDATE: `added` lists only what the old object did not share.
pub(super) fn update_conflict_message(group: &OperatorGroup, added: &[Overlap]) -> String {
    format!(
        "InterOperatorGroupOwnerConflict: this UPDATE of OperatorGroup \"{name}\" makes it \
         provide (metadata.annotations[\"{PROVIDED_APIS_ANNOTATION}\"]) APIs that other \
         OperatorGroups provide in namespaces both target, which the old object did not, so OLM \
         would fail the ClusterServiceVersions providing them: {details}. Conflicts the group \
         already had do not block an UPDATE. Keep the targets (spec.targetNamespaces or \
         spec.selector; a group that targets specific namespaces also targets its own) and \
         the provided APIs as they were, or remove the operator providing these APIs from one \
         of the groups first.",
        name = group.display_name(),
        details = describe_overlaps(added),
    )
}

/// Rule 3 on CREATE: every conflict denies.
pub(super) fn group_conflict_message(group: &OperatorGroup, overlaps: &[Overlap]) -> String {
    format!(
        "InterOperatorGroupOwnerConflict: OperatorGroup \"{name}\" provides \
         (metadata.annotations[\"{PROVIDED_APIS_ANNOTATION}\"]) APIs that other OperatorGroups \
         provide in namespaces both target, so OLM would fail the ClusterServiceVersions \
         providing them: {details}. Make the targets disjoint (spec.targetNamespaces or \
         spec.selector; a group that targets specific namespaces also targets its own), or \
         remove the operator providing these APIs from one of the groups.",
        name = group.display_name(),
        details = describe_overlaps(overlaps),
    )
}

/// Rule 5: an owned CRD name OLM cannot split into `<plural>.<group>`.
pub(super) fn crd_name_message(csv: &ClusterServiceVersion, error: &CrdNameError) -> String {
    format!(
        "spec.customresourcedefinitions.owned[{index}].name of ClusterServiceVersion \
         \"{namespace}/{name}\" is \"{crd}\", which has no dot: OLM splits an owned CRD's name \
         into <plural>.<group> to find the API it provides and fails the whole CSV when it \
         cannot (\"error parsing crd name\"). Write the CustomResourceDefinition's full name, \
         e.g. etcdclusters.etcd.database.coreos.com.",
        index = error.index,
        namespace = csv.metadata.namespace,
        name = csv.metadata.name,
        crd = error.name,
    )
}

/// The facts a CSV denial reports.
pub(super) struct CsvVerdict<'a> {
    pub(super) csv: &'a ClusterServiceVersion,
    pub(super) group: &'a OperatorGroup,
    pub(super) add: &'a ApiSet,
    pub(super) overlaps: Vec<Overlap>,
}

impl CsvVerdict<'_> {
    fn csv_name(&self) -> String {
        format!(
            "\"{}/{}\"",
            self.csv.metadata.namespace, self.csv.metadata.name
        )
    }

    fn group_name(&self) -> String {
        format!("\"{}\"", self.group.display_name())
    }

    pub(super) fn static_add_message(&self) -> String {
        let listed = self.group.provided_apis();
        let missing = self.add.difference(&listed);
        format!(
            "CannotModifyStaticOperatorGroupProvidedAPIs: ClusterServiceVersion {csv} provides \
             APIs [{missing}] that its OperatorGroup {group} does not list in \
             metadata.annotations[\"{PROVIDED_APIS_ANNOTATION}\"] (it lists: {listed}), and the \
             group has spec.staticProvidedAPIs: true, so OLM may not add them and would fail \
             this CSV. Add these APIs to that annotation, or install the operator in a namespace \
             whose OperatorGroup provides them.",
            csv = self.csv_name(),
            missing = listing(&missing.sorted_strings()),
            group = self.group_name(),
            listed = api_listing(&listed),
        )
    }

    pub(super) fn static_remove_message(&self) -> String {
        format!(
            "CannotModifyStaticOperatorGroupProvidedAPIs: ClusterServiceVersion {csv} provides \
             APIs that its static OperatorGroup {group} reserves, but OperatorGroups whose \
             targets intersect provide some of them too: {details}. OLM would have to remove \
             them from metadata.annotations[\"{PROVIDED_APIS_ANNOTATION}\"] of the static group, \
             which it may not, so it would fail this CSV. Remove these APIs from the other \
             groups, or make the groups' targets disjoint.",
            csv = self.csv_name(),
            group = self.group_name(),
            details = describe_overlaps(&self.overlaps),
        )
    }

    pub(super) fn conflict_message(&self) -> String {
        format!(
            "InterOperatorGroupOwnerConflict: ClusterServiceVersion {csv} provides APIs that \
             OperatorGroups whose targets intersect those of its OperatorGroup {group} already \
             provide: {details}. OLM would fail this CSV (\"intersecting operatorgroups provide \
             the same apis\"). Install the operator in a namespace whose OperatorGroup targets \
             none of these namespaces, narrow spec.targetNamespaces or spec.selector of {group}, \
             or remove the other operator first.",
            csv = self.csv_name(),
            group = self.group_name(),
            details = describe_overlaps(&self.overlaps),
        )
    }

    pub(super) fn remove_message(&self) -> String {
        format!(
            "InterOperatorGroupOwnerConflict at OLM's next sync: ClusterServiceVersion {csv} \
             provides APIs its OperatorGroup {group} lists in \
             metadata.annotations[\"{PROVIDED_APIS_ANNOTATION}\"], but OperatorGroups whose \
             targets intersect provide some of them too: {details}. OLM would remove them from \
             the annotation of {group}, and its next sync of this CSV fails with \
             InterOperatorGroupOwnerConflict. Install the operator in a namespace whose \
             OperatorGroup targets none of these namespaces, narrow spec.targetNamespaces or \
             spec.selector of {group}, or remove the other operator first.",
            csv = self.csv_name(),
            group = self.group_name(),
            details = describe_overlaps(&self.overlaps),
        )
    }
}

/// Another group sharing APIs with the one checked, and where.
pub(super) struct Overlap {
    /// `namespace/name`.
    pub(super) group: String,
    pub(super) apis: ApiSet,
    pub(super) namespaces: NamespaceSet,
}

/// `OperatorGroup "ns/name" provides [APIs] in namespaces [..]`, per overlap.
fn describe_overlaps(overlaps: &[Overlap]) -> String {
    let described: Vec<String> = overlaps
        .iter()
        .map(|o| {
            format!(
                "OperatorGroup \"{}\" provides [{}] in {}",
                o.group,
                listing(&o.apis.sorted_strings()),
                namespaces_listing(&o.namespaces)
            )
        })
        .collect();
    common::listing(&described, LISTED, "; ")
}

fn namespaces_listing(namespaces: &NamespaceSet) -> String {
    if namespaces.is_all_namespaces() {
        "all namespaces".to_string()
    } else {
        format!("namespaces [{}]", listing(&namespaces.sorted()))
    }
}

fn api_listing(apis: &ApiSet) -> String {
    if apis.is_empty() {
        "no APIs".to_string()
    } else {
        format!("[{}]", listing(&apis.sorted_strings()))
    }
}

/// Rule 7: an UPDATE that keeps the CSV's provided APIs is allowed, and the
/// reason rules 5 or 6 would deny it comes back as a warning.
pub(super) fn unchanged_apis_warning(reason: &str) -> String {
    format!(
        "{reason} This UPDATE is allowed because it does not change the APIs the \
         ClusterServiceVersion provides (spec.customresourcedefinitions.owned, \
         spec.apiservicedefinitions.owned): the problem predates it."
    )
}

/// Rule 7: the verdict of such an UPDATE does not depend on the lookup, so a
/// failed one is a warning, not a denial.
pub(super) fn unchecked_csv_warning(csv: &ClusterServiceVersion, failed: &LookupFailed) -> String {
    format!(
        "ClusterServiceVersion \"{namespace}/{name}\" was not checked against the \
         OperatorGroups: looking up {what} failed ({error}). This UPDATE is allowed anyway \
         because it does not change the APIs the CSV provides.",
        namespace = csv.metadata.namespace,
        name = csv.metadata.name,
        what = failed.what,
        error = failed.error,
    )
}

/// `a, b, c and 7 more`: messages stay readable on large clusters.
pub(super) fn listing<S: AsRef<str>>(items: &[S]) -> String {
    common::listing(items, LISTED, ", ")
}
