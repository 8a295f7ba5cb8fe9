//! og-intersection: OperatorGroups whose target namespaces intersect must not
//! provide the same APIs (contract "og-intersection", seed 001, domain §1).
//!
//! OLM only finds such conflicts while syncing, by failing a CSV after the
//! fact. This rule runs OLM's own algorithm ([`olm_guard_olm::operator_group`])
//! at admission. It judges what a request changes: it stops new conflicts,
//! but never blocks an UPDATE of an object whose conflict already existed
//! (OLM writes `olm.providedAPIs` and other metadata with plain UPDATEs, and
//! admins must be able to repair a conflict step by step).
//!
//! OperatorGroup, CREATE and UPDATE:
//! 1. `spec.targetNamespaces` must not contain `""` and `spec.selector` must
//!    be a valid label selector: OLM cannot resolve the group's targets
//!    otherwise.
//! 2. Another OperatorGroup in the same namespace: deny a CREATE
//!    `TooManyOperatorGroups`. On UPDATE the other group predates the
//!    request: accept with a warning naming it.
//! 3. Another OperatorGroup whose targets intersect this group's and whose
//!    `olm.providedAPIs` shares an API with this group's is a conflict
//!    (other group + shared APIs). This group's targets come from its spec;
//!    the other groups' from `status.namespaces`, or from their spec while
//!    OLM has not synced them yet. CREATE: deny every conflict
//!    `InterOperatorGroupOwnerConflict`, naming the group, the APIs and the
//!    shared namespaces. UPDATE: the old object's conflicts are computed the
//!    same way (its spec, an unresolvable one targeting nothing) from the
//!    lists already fetched; deny only what is new (another group, or APIs
//!    shared now and not before), and warn about conflicts that persist.
//!    The namespaces of an overlap do not make it new: OLM fails the same
//!    CSVs, those in this group's namespace providing the shared APIs.
//!
//! ClusterServiceVersion, CREATE and UPDATE:
//! 4. Copied CSVs, and CSVs in a namespace without exactly one OperatorGroup,
//!    are not checked (OLM fails the latter for other reasons).
//! 5. An owned CRD name without a dot is rejected (OLM cannot parse it).
//! 6. `ReconcileAPIIntersection` with the CSV's provided APIs: a static group
//!    that would have to add or remove APIs → deny
//!    `CannotModifyStaticOperatorGroupProvidedAPIs`; a conflict → deny
//!    `InterOperatorGroupOwnerConflict`; a non-static group that would have
//!    to remove APIs → deny (OLM removes them, and the next sync is a
//!    conflict); add or nothing to do → allow.
//! 7. An UPDATE is judged by rules 5 and 6 only when the CSV's provided APIs
//!    (owned CRDs and API services, as OLM compares them) differ from the
//!    old object's, or the old object was a copy. Otherwise it is accepted;
//!    when rules 5 or 6 would deny, the reason becomes a warning, and a
//!    failed lookup becomes a warning too (the verdict does not depend on it).
//!
//! An UPDATE without `oldObject` (the API server always sends one) is judged
//! like a CREATE; an `oldObject` that cannot be read is a bad request.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;

use olm_guard_core::protocol::ListAllResourcesRequest;
use olm_guard_core::{
    AdmissionRequest, Cluster, ClusterExt, ContextError, ObjectMeta, Operation, PolicySettings,
    Verdict,
};
use olm_guard_olm::operator_group::{
    ApiReconciliation, ApiSet, ClusterServiceVersion, CrdNameError, GroupSurface, Namespace,
    NamespaceSet, OperatorGroup, PROVIDED_APIS_ANNOTATION, TargetsError,
    reconcile_api_intersection, select_namespaces, target_set,
};
use olm_guard_rbac::Selector;
use serde::Deserialize;
use serde_json::Value;

const OPERATORS_GROUP: &str = "operators.coreos.com";
const OPERATOR_GROUP_API_VERSION: &str = "operators.coreos.com/v1";
const OPERATOR_GROUP_KIND: &str = "OperatorGroup";
const CSV_KIND: &str = "ClusterServiceVersion";
/// Names and namespaces listed in one message before "and N more".
const LISTED: usize = 10;

/// The rule has no settings; unknown keys are rejected so a typo is noticed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {}

impl PolicySettings for Settings {}

pub fn validate(
    request: &AdmissionRequest,
    _settings: &Settings,
    cluster: &dyn Cluster,
) -> Verdict {
    if !matches!(request.operation, Operation::Create | Operation::Update) {
        return Verdict::accept();
    }
    if request.targets(OPERATORS_GROUP, OPERATOR_GROUP_KIND) {
        validate_operator_group(request, cluster)
    } else if request.targets(OPERATORS_GROUP, CSV_KIND) {
        validate_csv(request, cluster)
    } else {
        Verdict::accept()
    }
}

// ---------------------------------------------------------------------------
// OperatorGroup
// ---------------------------------------------------------------------------

fn validate_operator_group(request: &AdmissionRequest, cluster: &dyn Cluster) -> Verdict {
    let group = match read_operator_group(request, &request.object, "request.object") {
        Ok(group) => group,
        Err(verdict) => return verdict,
    };
    // Rule 1, before any lookup: a spec OLM cannot resolve is wrong anywhere.
    let spec_targets = match group.spec.targets() {
        Ok(targets) => targets,
        Err(error) => return Verdict::deny(unresolvable_targets_message(&group, &error)),
    };
    let old = match old_object(request) {
        Some(object) => match read_operator_group(request, object, "request.oldObject") {
            Ok(old) => Some(old),
            Err(verdict) => return verdict,
        },
        None => None,
    };
    let groups = match list_operator_groups(cluster) {
        Ok(groups) => groups,
        Err(error) => return operator_groups_unavailable(error),
    };
    let (namespace, name) = (&group.metadata.namespace, &group.metadata.name);
    let others: Vec<&OperatorGroup> = groups
        .iter()
        .filter(|other| !other.is_same_group(namespace, name))
        .collect();
    let mut warnings = Vec::new();

    // Rule 2. An UPDATE does not add a group: the others were there before
    // it, and blocking the update would not remove them.
    let siblings: Vec<&OperatorGroup> = others
        .iter()
        .copied()
        .filter(|other| &other.metadata.namespace == namespace)
        .collect();
    if !siblings.is_empty() {
        if request.operation == Operation::Update {
            warnings.push(too_many_groups_warning(&group, &siblings));
        } else {
            return Verdict::deny(too_many_groups_message(&group, &siblings));
        }
    }

    // Rule 3. Only a group sharing an API can conflict, so targets (and the
    // Namespace list a selector needs) are resolved for those groups alone.
    // On UPDATE the old object's conflicts are computed from the same lists,
    // in the same pass, so that only the conflicts this request adds deny it.
    let own_apis = group.provided_apis();
    let old_apis = old.as_ref().map(OperatorGroup::provided_apis);
    let sharing: Vec<Sharing> = others
        .iter()
        .filter_map(|other| {
            let apis = other.provided_apis();
            let now = own_apis.intersection(&apis);
            if now.is_empty() {
                return None;
            }
            let before = old_apis
                .as_ref()
                .map(|old_apis| old_apis.intersection(&apis))
                .unwrap_or_default();
            Some(Sharing {
                group: other,
                now,
                before,
            })
        })
        .collect();
    if sharing.is_empty() {
        return Verdict::accept().with_warnings(warnings);
    }
    let namespaces = NamespaceList::new(cluster);
    let own_targets = match spec_targets.resolve(|selector| namespaces.select(selector)) {
        Ok(targets) => target_set(&targets, namespace),
        Err(error) => return namespaces_unavailable(error),
    };
    let old_targets = match &old {
        Some(old) if sharing.iter().any(|s| !s.before.is_empty()) => {
            match spec_target_set(old, &namespaces) {
                Ok(targets) => targets,
                Err(error) => return namespaces_unavailable(error),
            }
        }
        _ => NamespaceSet::default(),
    };
    let mut added = Vec::new();
    let mut kept = Vec::new();
    for Sharing {
        group: other,
        now,
        before,
    } in sharing
    {
        let other_targets = match listed_targets(other, &namespaces) {
            Ok(targets) => targets,
            Err(error) => return namespaces_unavailable(error),
        };
        let shared_namespaces = own_targets.intersection(&other_targets);
        if shared_namespaces.is_empty() {
            continue;
        }
        let conflicted_before = if !before.is_empty() && old_targets.intersects(&other_targets) {
            before
        } else {
            ApiSet::new()
        };
        let new_apis = now.difference(&conflicted_before);
        let kept_apis = now.intersection(&conflicted_before);
        if !new_apis.is_empty() {
            added.push(Overlap {
                group: other.display_name(),
                apis: new_apis,
                namespaces: shared_namespaces.clone(),
            });
        }
        if !kept_apis.is_empty() {
            kept.push(Overlap {
                group: other.display_name(),
                apis: kept_apis,
                namespaces: shared_namespaces,
            });
        }
    }
    if !kept.is_empty() {
        kept.sort_by(|a, b| a.group.cmp(&b.group));
        warnings.push(kept_conflicts_warning(&group, &kept));
    }
    if added.is_empty() {
        return Verdict::accept().with_warnings(warnings);
    }
    added.sort_by(|a, b| a.group.cmp(&b.group));
    let message = if old.is_some() {
        update_conflict_message(&group, &added)
    } else {
        group_conflict_message(&group, &added)
    };
    Verdict::deny(message).with_warnings(warnings)
}

/// Another group sharing APIs with the admitted group (`now`), and those of
/// them it shared with the old object (`before`); targets are not compared
/// yet. A group sharing nothing now cannot be in conflict, whatever before.
struct Sharing<'a> {
    group: &'a OperatorGroup,
    now: ApiSet,
    before: ApiSet,
}

/// The object an UPDATE replaces. The API server always sends it; a request
/// without one (hand-made) is judged like a CREATE.
fn old_object(request: &AdmissionRequest) -> Option<&Value> {
    (request.operation == Operation::Update && !request.old_object.is_null())
        .then_some(&request.old_object)
}

/// The targets a group's spec resolves to (its own namespace added). A spec
/// OLM cannot resolve targets nothing: OLM never syncs it.
fn spec_target_set(
    group: &OperatorGroup,
    namespaces: &NamespaceList,
) -> Result<NamespaceSet, ContextError> {
    match group.spec.targets() {
        Ok(targets) => Ok(target_set(
            &targets.resolve(|selector| namespaces.select(selector))?,
            &group.metadata.namespace,
        )),
        Err(_) => Ok(NamespaceSet::default()),
    }
}

fn read_operator_group(
    request: &AdmissionRequest,
    object: &Value,
    field: &str,
) -> Result<OperatorGroup, Verdict> {
    let mut group = OperatorGroup::from_object(object).map_err(|e| {
        Verdict::bad_request(format!("{field} cannot be read as an OperatorGroup: {e}"))
    })?;
    complete_identity(&mut group.metadata, request, OPERATOR_GROUP_KIND)?;
    Ok(group)
}

fn unresolvable_targets_message(group: &OperatorGroup, error: &TargetsError) -> String {
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

fn too_many_groups_message(group: &OperatorGroup, siblings: &[&OperatorGroup]) -> String {
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
fn too_many_groups_warning(group: &OperatorGroup, siblings: &[&OperatorGroup]) -> String {
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
fn kept_conflicts_warning(group: &OperatorGroup, kept: &[Overlap]) -> String {
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
fn update_conflict_message(group: &OperatorGroup, added: &[Overlap]) -> String {
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

fn group_conflict_message(group: &OperatorGroup, overlaps: &[Overlap]) -> String {
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

// ---------------------------------------------------------------------------
// ClusterServiceVersion
// ---------------------------------------------------------------------------

fn validate_csv(request: &AdmissionRequest, cluster: &dyn Cluster) -> Verdict {
    let csv = match read_csv(request, &request.object, "request.object") {
        Ok(csv) => csv,
        Err(verdict) => return verdict,
    };
    // Rule 4: copies only mirror a CSV that is checked in its own namespace.
    if csv.is_copied() {
        return Verdict::accept();
    }
    let old = match old_object(request) {
        Some(object) => match read_csv(request, object, "request.oldObject") {
            Ok(old) => Some(old),
            Err(verdict) => return verdict,
        },
        None => None,
    };
    // Rule 7: OLM reconciles a CSV's provided APIs, so an UPDATE that keeps
    // them (OLM's own metadata writes, a new description) changes nothing
    // this rule judges. A copy turning into an original is new to OLM.
    let judged = old
        .as_ref()
        .is_none_or(|old| old.is_copied() || !old.provides_same_apis(&csv));
    match (judged, csv_decision(&csv, cluster)) {
        (_, Ok(None)) => Verdict::accept(),
        (true, Ok(Some(reason))) => Verdict::deny(reason),
        (true, Err(failed)) => Verdict::context_unavailable(failed.what, failed.error),
        (false, Ok(Some(reason))) => Verdict::accept().with_warning(format!(
            "{reason} This UPDATE is allowed because it does not change the APIs the \
             ClusterServiceVersion provides (spec.customresourcedefinitions.owned, \
             spec.apiservicedefinitions.owned): the problem predates it."
        )),
        (false, Err(failed)) => Verdict::accept().with_warning(format!(
            "ClusterServiceVersion \"{namespace}/{name}\" was not checked against the \
             OperatorGroups: looking up {what} failed ({error}). This UPDATE is allowed anyway \
             because it does not change the APIs the CSV provides.",
            namespace = csv.metadata.namespace,
            name = csv.metadata.name,
            what = failed.what,
            error = failed.error,
        )),
    }
}

/// A context lookup that did not answer.
struct LookupFailed {
    what: &'static str,
    error: ContextError,
}

/// Rules 4 (group count), 5 and 6 for a CSV that is not a copy: `None` when
/// OLM would accept it, else the reason it would fail it.
fn csv_decision(
    csv: &ClusterServiceVersion,
    cluster: &dyn Cluster,
) -> Result<Option<String>, LookupFailed> {
    // Rule 5.
    let add = match csv.provided_apis() {
        Ok(apis) => apis,
        Err(error) => return Ok(Some(crd_name_message(csv, &error))),
    };
    let groups = list_operator_groups(cluster).map_err(|error| LookupFailed {
        what: OPERATOR_GROUPS_LOOKUP,
        error,
    })?;
    let namespace = &csv.metadata.namespace;
    let mut in_namespace = groups
        .iter()
        .filter(|group| &group.metadata.namespace == namespace);
    // Rule 4: without exactly one group OLM fails the CSV with
    // NoOperatorGroup or TooManyOperatorGroups before any intersection.
    let (Some(group), None) = (in_namespace.next(), in_namespace.next()) else {
        return Ok(None);
    };

    // Rule 6.
    let namespaces = NamespaceList::new(cluster);
    let namespaces_failed = |error| LookupFailed {
        what: NAMESPACES_LOOKUP,
        error,
    };
    let own = surface_of(group, &namespaces).map_err(namespaces_failed)?;
    // `intersecting` is "add ∩ APIs of the intersecting groups ≠ ∅", so a
    // group sharing none of the CSV's APIs cannot change the outcome: only
    // the others that do are resolved and passed on.
    let mut others = Vec::new();
    for other in &groups {
        if other.is_same_group(&group.metadata.namespace, &group.metadata.name)
            || !add.intersects(&other.provided_apis())
        {
            continue;
        }
        others.push(surface_of(other, &namespaces).map_err(namespaces_failed)?);
    }
    let outcome = reconcile_api_intersection(&add, &own, &others);
    let verdict = CsvVerdict {
        csv,
        group,
        add: &add,
        overlaps: overlaps_with(&add, &own, &others),
    };
    Ok(match (group.spec.static_provided_apis, outcome) {
        (true, ApiReconciliation::AddApis) => Some(verdict.static_add_message()),
        (true, ApiReconciliation::RemoveApis) => Some(verdict.static_remove_message()),
        (_, ApiReconciliation::ApiConflict) => Some(verdict.conflict_message()),
        (false, ApiReconciliation::RemoveApis) => Some(verdict.remove_message()),
        (false, ApiReconciliation::AddApis) | (_, ApiReconciliation::NoApiConflict) => None,
    })
}

fn read_csv(
    request: &AdmissionRequest,
    object: &Value,
    field: &str,
) -> Result<ClusterServiceVersion, Verdict> {
    let mut csv = ClusterServiceVersion::from_object(object).map_err(|e| {
        Verdict::bad_request(format!(
            "{field} cannot be read as a ClusterServiceVersion: {e}"
        ))
    })?;
    complete_identity(&mut csv.metadata, request, CSV_KIND)?;
    Ok(csv)
}

fn crd_name_message(csv: &ClusterServiceVersion, error: &CrdNameError) -> String {
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
struct CsvVerdict<'a> {
    csv: &'a ClusterServiceVersion,
    group: &'a OperatorGroup,
    add: &'a ApiSet,
    overlaps: Vec<Overlap>,
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

    fn static_add_message(&self) -> String {
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

    fn static_remove_message(&self) -> String {
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

    fn conflict_message(&self) -> String {
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

    fn remove_message(&self) -> String {
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

/// The groups among `others` that intersect `own` and provide some of the
/// CSV's APIs (`add`): the evidence for a RemoveAPIs or APIConflict outcome.
fn overlaps_with(add: &ApiSet, own: &GroupSurface, others: &[GroupSurface]) -> Vec<Overlap> {
    let mut overlaps: Vec<Overlap> = own
        .group_intersection(others)
        .into_iter()
        .filter_map(|other| {
            let apis = add.intersection(&other.provided_apis);
            (!apis.is_empty()).then(|| Overlap {
                group: format!("{}/{}", other.namespace, other.name),
                apis,
                namespaces: own.targets.intersection(&other.targets),
            })
        })
        .collect();
    overlaps.sort_by(|a, b| a.group.cmp(&b.group));
    overlaps
}

// ---------------------------------------------------------------------------
// Cluster context
// ---------------------------------------------------------------------------

const OPERATOR_GROUPS_LOOKUP: &str =
    "the OperatorGroups of all namespaces (operators.coreos.com/v1)";
const NAMESPACES_LOOKUP: &str =
    "the Namespaces (v1), needed to resolve an OperatorGroup's spec.selector";

/// Every OperatorGroup: one list call per request, whatever the cluster size.
fn list_operator_groups(cluster: &dyn Cluster) -> Result<Vec<OperatorGroup>, ContextError> {
    cluster.list_all_as(&ListAllResourcesRequest::new(
        OPERATOR_GROUP_API_VERSION,
        OPERATOR_GROUP_KIND,
    ))
}

fn operator_groups_unavailable(error: ContextError) -> Verdict {
    Verdict::context_unavailable(OPERATOR_GROUPS_LOOKUP, error)
}

fn namespaces_unavailable(error: ContextError) -> Verdict {
    Verdict::context_unavailable(NAMESPACES_LOOKUP, error)
}

/// The cluster's Namespaces, listed at most once and only when a selector
/// must be resolved: most groups have explicit or synced targets. Groups
/// often share a selector, so each distinct one is matched once.
struct NamespaceList<'c> {
    cluster: &'c dyn Cluster,
    listed: OnceCell<Vec<Namespace>>,
    selected: RefCell<HashMap<String, Vec<String>>>,
}

impl<'c> NamespaceList<'c> {
    fn new(cluster: &'c dyn Cluster) -> Self {
        NamespaceList {
            cluster,
            listed: OnceCell::new(),
            selected: RefCell::new(HashMap::new()),
        }
    }

    fn get(&self) -> Result<&[Namespace], ContextError> {
        if let Some(listed) = self.listed.get() {
            return Ok(listed);
        }
        let listed = self
            .cluster
            .list_all_as::<Namespace>(&ListAllResourcesRequest::new("v1", "Namespace"))?;
        Ok(self.listed.get_or_init(|| listed))
    }

    /// The names `selector` matches; its canonical text is the cache key.
    fn select(&self, selector: &Selector) -> Result<Vec<String>, ContextError> {
        let key = selector.to_string();
        if let Some(names) = self.selected.borrow().get(&key) {
            return Ok(names.clone());
        }
        let names = select_namespaces(selector, self.get()?);
        self.selected.borrow_mut().insert(key, names.clone());
        Ok(names)
    }
}

/// The targets of a group already in the cluster: what OLM last wrote to
/// `status.namespaces`; for a group OLM has not synced yet, what its spec
/// resolves to, so a conflict shows before the first sync. A spec OLM cannot
/// resolve never syncs, and such a group keeps targeting nothing.
fn listed_targets(
    group: &OperatorGroup,
    namespaces: &NamespaceList,
) -> Result<NamespaceSet, ContextError> {
    match group.synced_namespaces() {
        Some(synced) => Ok(target_set(synced, &group.metadata.namespace)),
        None => spec_target_set(group, namespaces),
    }
}

fn surface_of(
    group: &OperatorGroup,
    namespaces: &NamespaceList,
) -> Result<GroupSurface, ContextError> {
    Ok(GroupSurface {
        namespace: group.metadata.namespace.clone(),
        name: group.metadata.name.clone(),
        targets: listed_targets(group, namespaces)?,
        provided_apis: group.provided_apis(),
    })
}

/// The API server fills `metadata.namespace` from the request path, but a
/// hand-made request may leave it (or the name) to the request only.
fn complete_identity(
    metadata: &mut ObjectMeta,
    request: &AdmissionRequest,
    kind: &str,
) -> Result<(), Verdict> {
    if metadata.namespace.is_empty() {
        metadata.namespace = request.namespace.clone();
    }
    if metadata.name.is_empty() {
        metadata.name = request.name.clone();
    }
    if metadata.namespace.is_empty() {
        return Err(Verdict::bad_request(format!(
            "metadata.namespace of the {kind} is empty and the request names no namespace: \
             {kind} objects are namespaced; set metadata.namespace."
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Message pieces
// ---------------------------------------------------------------------------

/// Another group sharing APIs with the one checked, and where.
struct Overlap {
    /// `namespace/name`.
    group: String,
    apis: ApiSet,
    namespaces: NamespaceSet,
}

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
    joined(&described, "; ")
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

/// `a, b, c and 7 more`: messages stay readable on large clusters.
fn listing<S: AsRef<str>>(items: &[S]) -> String {
    joined(items, ", ")
}

fn joined<S: AsRef<str>>(items: &[S], separator: &str) -> String {
    let shown: Vec<&str> = items.iter().take(LISTED).map(AsRef::as_ref).collect();
    let mut text = shown.join(separator);
    if items.len() > LISTED {
        text.push_str(&format!(" and {} more", items.len() - LISTED));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{
        Probe, admission_request, assert_allowed, assert_denied, assert_no_debug_output, snapshot,
    };
    use olm_guard_snapshot::Snapshot;
    use serde_json::{Value, json};

    const PROMETHEUS_APIS: &str = "Alertmanager.v1.monitoring.coreos.com,Prometheus.v1.monitoring.coreos.com,PrometheusRule.v1.monitoring.coreos.com,ServiceMonitor.v1.monitoring.coreos.com";
    const NGINX_API: &str = "NginxIngressController.v1alpha1.k8s.nginx.org";

    fn request(operation: &str, kind: &str, object: Value) -> AdmissionRequest {
        let version = if kind == OPERATOR_GROUP_KIND {
            "v1"
        } else {
            "v1alpha1"
        };
        let resource = if kind == OPERATOR_GROUP_KIND {
            "operatorgroups"
        } else {
            "clusterserviceversions"
        };
        admission_request(
            [OPERATORS_GROUP, version, kind],
            resource,
            json!({
                "uid": "test",
                "name": object["metadata"]["name"],
                "namespace": object["metadata"]["namespace"],
                "operation": operation,
                "userInfo": {"username": "kubernetes-admin", "groups": ["system:authenticated"]},
                "object": object,
            }),
        )
    }

    fn cluster(yaml: &str) -> Snapshot {
        snapshot(&[yaml])
    }

    fn check(request: &AdmissionRequest, cluster: &dyn Cluster) -> Verdict {
        validate(request, &Settings::default(), cluster)
    }

    fn og(namespace: &str, name: &str, spec: Value, annotation: Option<&str>) -> Value {
        let mut object = json!({
            "apiVersion": OPERATOR_GROUP_API_VERSION,
            "kind": OPERATOR_GROUP_KIND,
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        });
        if let Some(apis) = annotation {
            object["metadata"]["annotations"] = json!({PROVIDED_APIS_ANNOTATION: apis});
        }
        object
    }

    fn with_status(mut group: Value, namespaces: &[&str]) -> Value {
        group["status"] = json!({"namespaces": namespaces, "lastUpdated": "2024-05-01T10:00:00Z"});
        group
    }

    fn snapshot_of(objects: Vec<Value>) -> Snapshot {
        Snapshot::from_objects(objects)
    }

    fn namespace(name: &str, labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
    }

    /// An UPDATE from `old` to `new`, as the API server sends it.
    fn update(kind: &str, old: Value, new: Value) -> AdmissionRequest {
        let mut request = request("UPDATE", kind, new);
        request.old_object = old;
        request
    }

    /// The one warning containing every part.
    fn assert_warned(verdict: &Verdict, parts: &[&str]) {
        assert!(
            verdict
                .warnings
                .iter()
                .any(|w| parts.iter().all(|p| w.contains(p))),
            "no warning contains all of {parts:?}: {:?}",
            verdict.warnings
        );
        for warning in &verdict.warnings {
            assert_no_debug_output(warning);
        }
    }

    fn assert_no_warnings(verdict: &Verdict) {
        assert!(
            verdict.warnings.is_empty(),
            "warnings: {:?}",
            verdict.warnings
        );
    }

    // --- scope -------------------------------------------------------------

    #[test]
    fn other_kinds_operations_and_subresources_are_accepted_untouched() {
        let empty = Snapshot::new();
        let broken = Probe::new(&empty).failing_lists_of(OPERATOR_GROUP_KIND);
        let bad = og("ns", "g", json!({"targetNamespaces": [""]}), None);
        assert_allowed(&check(
            &request("DELETE", OPERATOR_GROUP_KIND, bad.clone()),
            &broken,
        ));
        assert_allowed(&check(
            &request("CONNECT", OPERATOR_GROUP_KIND, bad.clone()),
            &broken,
        ));
        let mut status = request("UPDATE", OPERATOR_GROUP_KIND, bad.clone());
        status.sub_resource = Some("status".into());
        assert_allowed(&check(&status, &broken));
        let mut other = request("CREATE", OPERATOR_GROUP_KIND, bad);
        other.kind.kind = "Subscription".into();
        assert_allowed(&check(&other, &broken));
    }

    #[test]
    fn settings_reject_unknown_keys() {
        assert!(serde_json::from_value::<Settings>(json!({})).is_ok());
        assert!(serde_json::from_value::<Settings>(json!({"strict": true})).is_err());
    }

    // --- rule 1 --------------------------------------------------------------

    #[test]
    fn target_namespaces_with_namespace_all_is_rejected() {
        let verdict = check(
            &request(
                "CREATE",
                OPERATOR_GROUP_KIND,
                og("ns", "g", json!({"targetNamespaces": ["a", ""]}), None),
            ),
            &Snapshot::new(),
        );
        assert_denied(
            &verdict,
            &[
                "spec.targetNamespaces",
                "TargetNamespaces cannot contain NamespaceAll",
                "omit both",
            ],
        );
    }

    #[test]
    fn an_invalid_selector_is_rejected() {
        let spec = json!({"selector": {"matchExpressions": [{"key": "env", "operator": "Equals", "values": ["x"]}]}});
        let verdict = check(
            &request("UPDATE", OPERATOR_GROUP_KIND, og("ns", "g", spec, None)),
            &Snapshot::new(),
        );
        assert_denied(&verdict, &["spec.selector", "Equals", "In or NotIn"]);
    }

    #[test]
    fn malformed_objects_are_bad_requests_naming_the_field() {
        let verdict = check(
            &request(
                "CREATE",
                OPERATOR_GROUP_KIND,
                og("ns", "g", json!({"targetNamespaces": "nginx"}), None),
            ),
            &Snapshot::new(),
        );
        assert_eq!(verdict.code, Some(400));
        assert_denied(&verdict, &["spec.targetNamespaces"]);
        let mut no_object = request("CREATE", CSV_KIND, json!({"metadata": {"namespace": "ns"}}));
        no_object.object = Value::Null;
        assert_denied(
            &check(&no_object, &Snapshot::new()),
            &["request.object", "ClusterServiceVersion"],
        );
        let no_namespace = request(
            "CREATE",
            OPERATOR_GROUP_KIND,
            json!({"metadata": {"name": "g"}}),
        );
        assert_denied(
            &check(&no_namespace, &Snapshot::new()),
            &["metadata.namespace"],
        );
    }

    // --- rule 2 --------------------------------------------------------------

    fn quickstart_groups() -> Snapshot {
        // OLM deploy/upstream/quickstart/olm.yaml
        cluster(
            r#"
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata:
  name: global-operators
  namespace: operators
---
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata:
  name: olm-operators
  namespace: olm
spec:
  targetNamespaces:
    - olm
"#,
        )
    }

    #[test]
    fn a_second_group_in_a_namespace_is_too_many() {
        let second = og("olm", "extra", json!({"targetNamespaces": ["olm"]}), None);
        let verdict = check(
            &request("CREATE", OPERATOR_GROUP_KIND, second),
            &quickstart_groups(),
        );
        assert_denied(
            &verdict,
            &[
                "TooManyOperatorGroups",
                "\"olm-operators\"",
                "namespace \"olm\"",
            ],
        );
    }

    #[test]
    fn an_update_of_the_same_group_is_not_a_second_group() {
        let same = og(
            "olm",
            "olm-operators",
            json!({"targetNamespaces": ["olm", "default"]}),
            None,
        );
        assert_allowed(&check(
            &request("UPDATE", OPERATOR_GROUP_KIND, same),
            &quickstart_groups(),
        ));
        let first = og("team-a", "team-a", json!({}), None);
        assert_allowed(&check(
            &request("CREATE", OPERATOR_GROUP_KIND, first),
            &quickstart_groups(),
        ));
    }

    // --- rule 3 --------------------------------------------------------------

    fn nginx_group() -> Value {
        // operator-framework/api testdata correct.og.yaml
        og(
            "nginx",
            "nginx-hbvsw",
            json!({"targetNamespaces": ["nginx"]}),
            Some(NGINX_API),
        )
    }

    #[test]
    fn a_group_sharing_apis_in_shared_namespaces_conflicts() {
        let global = with_status(
            og("operators", "global-operators", json!({}), Some(NGINX_API)),
            &[""],
        );
        let verdict = check(
            &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
            &snapshot_of(vec![global]),
        );
        assert_denied(
            &verdict,
            &[
                "InterOperatorGroupOwnerConflict",
                "\"operators/global-operators\"",
                NGINX_API,
                "namespaces [nginx]",
            ],
        );
    }

    #[test]
    fn two_global_groups_sharing_apis_conflict_in_all_namespaces() {
        let other = with_status(
            og("operators", "global-operators", json!({}), Some(NGINX_API)),
            &[""],
        );
        let mine = og("nginx", "nginx-hbvsw", json!({}), Some(NGINX_API));
        let verdict = check(
            &request("CREATE", OPERATOR_GROUP_KIND, mine),
            &snapshot_of(vec![other]),
        );
        assert_denied(
            &verdict,
            &["InterOperatorGroupOwnerConflict", "in all namespaces"],
        );
    }

    #[test]
    fn disjoint_apis_or_disjoint_namespaces_do_not_conflict() {
        let other_api = with_status(
            og(
                "operators",
                "global",
                json!({}),
                Some("Widget.v1.example.com"),
            ),
            &[""],
        );
        assert_allowed(&check(
            &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
            &snapshot_of(vec![other_api]),
        ));
        let other_ns = with_status(og("edge", "edge", json!({}), Some(NGINX_API)), &["edge"]);
        assert_allowed(&check(
            &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
            &snapshot_of(vec![other_ns]),
        ));
        // Versions are part of an API's identity.
        let other_version = with_status(
            og(
                "operators",
                "global",
                json!({}),
                Some("NginxIngressController.v1.k8s.nginx.org"),
            ),
            &[""],
        );
        assert_allowed(&check(
            &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
            &snapshot_of(vec![other_version]),
        ));
    }

    #[test]
    fn the_mis_cased_annotation_provides_nothing() {
        // operator-framework/api testdata badAnnotationNames.og.yaml
        let mut mine = nginx_group();
        mine["metadata"]["annotations"] = json!({"olm.providedapis": NGINX_API});
        let global = with_status(
            og("operators", "global-operators", json!({}), Some(NGINX_API)),
            &[""],
        );
        assert_allowed(&check(
            &request("CREATE", OPERATOR_GROUP_KIND, mine),
            &snapshot_of(vec![global]),
        ));
    }

    #[test]
    fn the_other_groups_own_namespace_counts_as_a_target() {
        // The other group targets "b" only, but lives in "nginx".
        let other = with_status(
            og("nginx-system", "other", json!({}), Some(NGINX_API)),
            &["b"],
        );
        let mine = og(
            "nginx",
            "nginx-hbvsw",
            json!({"targetNamespaces": ["nginx-system"]}),
            Some(NGINX_API),
        );
        let verdict = check(
            &request("CREATE", OPERATOR_GROUP_KIND, mine),
            &snapshot_of(vec![other]),
        );
        assert_denied(&verdict, &["namespaces [nginx-system]"]);
    }

    #[test]
    fn other_groups_status_wins_over_their_spec() {
        // Spec says nginx, but OLM resolved it to "edge" (status is truth).
        let synced = with_status(
            og(
                "edge",
                "edge",
                json!({"targetNamespaces": ["nginx"]}),
                Some(NGINX_API),
            ),
            &["edge"],
        );
        assert_allowed(&check(
            &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
            &snapshot_of(vec![synced]),
        ));
        // Synced to nothing (lastUpdated only): targets nothing.
        let mut empty = og("edge", "edge", json!({}), Some(NGINX_API));
        empty["status"] = json!({"lastUpdated": "2024-05-01T10:00:00Z"});
        assert_allowed(&check(
            &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
            &snapshot_of(vec![empty]),
        ));
    }

    #[test]
    fn unsynced_other_groups_fall_back_to_their_spec() {
        let unsynced = og(
            "edge",
            "edge",
            json!({"targetNamespaces": ["nginx"]}),
            Some(NGINX_API),
        );
        let verdict = check(
            &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
            &snapshot_of(vec![unsynced]),
        );
        assert_denied(
            &verdict,
            &["InterOperatorGroupOwnerConflict", "\"edge/edge\""],
        );
        // A spec OLM can never resolve never syncs: it targets nothing.
        let broken = og(
            "edge",
            "edge",
            json!({"targetNamespaces": [""]}),
            Some(NGINX_API),
        );
        assert_allowed(&check(
            &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
            &snapshot_of(vec![broken]),
        ));
    }

    #[test]
    fn selectors_are_resolved_against_namespace_labels() {
        // doc/design/operatorgroups.md "cluster-monitoring" static group.
        let monitoring = og(
            "cluster-monitoring",
            "cluster-monitoring",
            json!({"staticProvidedAPIs": true, "selector": {"matchLabels": {"something.cool.io/cluster-monitoring": "true"}}}),
            Some(PROMETHEUS_APIS),
        );
        let team = with_status(
            og(
                "team-a",
                "team-a",
                json!({}),
                Some("Prometheus.v1.monitoring.coreos.com"),
            ),
            &["team-a"],
        );
        let labelled = snapshot_of(vec![
            team.clone(),
            namespace(
                "team-a",
                json!({"something.cool.io/cluster-monitoring": "true"}),
            ),
            namespace("team-b", json!({})),
        ]);
        let verdict = check(
            &request("CREATE", OPERATOR_GROUP_KIND, monitoring.clone()),
            &labelled,
        );
        assert_denied(
            &verdict,
            &[
                "\"team-a/team-a\"",
                "Prometheus.v1.monitoring.coreos.com",
                "namespaces [team-a]",
            ],
        );
        // A selector matching no namespace targets nothing: not even its own
        // namespace is added (OLM adds it only to a non-empty list).
        let unlabelled = snapshot_of(vec![
            team,
            namespace("team-a", json!({})),
            namespace("cluster-monitoring", json!({})),
        ]);
        assert_allowed(&check(
            &request("CREATE", OPERATOR_GROUP_KIND, monitoring),
            &unlabelled,
        ));
    }

    #[test]
    fn an_unsynced_selector_group_is_resolved_too() {
        let other = og(
            "edge",
            "edge",
            json!({"selector": {"matchLabels": {"ingress": "nginx"}}}),
            Some(NGINX_API),
        );
        let cluster = snapshot_of(vec![other, namespace("nginx", json!({"ingress": "nginx"}))]);
        assert_denied(
            &check(
                &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
                &cluster,
            ),
            &["\"edge/edge\""],
        );
    }

    #[test]
    fn namespaces_are_not_listed_when_no_selector_needs_them() {
        let base = snapshot_of(vec![with_status(
            og("edge", "edge", json!({}), Some(NGINX_API)),
            &["nginx"],
        )]);
        let no_namespaces = Probe::new(&base).failing_lists_of("Namespace");
        assert_denied(
            &check(
                &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
                &no_namespaces,
            ),
            &["\"edge/edge\""],
        );
        let selector_group = og(
            "nginx",
            "nginx-hbvsw",
            json!({"selector": {"matchLabels": {"a": "b"}}}),
            Some(NGINX_API),
        );
        let verdict = check(
            &request("CREATE", OPERATOR_GROUP_KIND, selector_group),
            &no_namespaces,
        );
        assert_eq!(verdict.code, Some(500));
        assert_denied(
            &verdict,
            &["Namespaces", "Namespace is forbidden", "fails closed"],
        );
    }

    // --- OperatorGroup UPDATE ---------------------------------------------------

    fn global_nginx() -> Value {
        with_status(
            og("operators", "global-operators", json!({}), Some(NGINX_API)),
            &[""],
        )
    }

    fn nginx_with(annotation: Option<&str>) -> Value {
        og(
            "nginx",
            "nginx-hbvsw",
            json!({"targetNamespaces": ["nginx"]}),
            annotation,
        )
    }

    #[test]
    fn an_update_keeping_an_existing_conflict_is_allowed_with_a_warning() {
        // OLM adding an API nobody else provides to a group that already
        // conflicts (AddAPIs), with a plain UPDATE.
        let old = nginx_with(Some(NGINX_API));
        let new = nginx_with(Some(&format!("{NGINX_API},Widget.v1.example.com")));
        let verdict = check(
            &update(OPERATOR_GROUP_KIND, old.clone(), new),
            &snapshot_of(vec![global_nginx()]),
        );
        assert_allowed(&verdict);
        assert_eq!(verdict.warnings.len(), 1, "{:?}", verdict.warnings);
        assert_warned(
            &verdict,
            &[
                "InterOperatorGroupOwnerConflict (existing before this UPDATE",
                "\"operators/global-operators\" provides [NginxIngressController.v1alpha1.k8s.nginx.org] in namespaces [nginx]",
            ],
        );
        // A metadata-only edit (a label) of a conflicting group.
        let mut labelled = old.clone();
        labelled["metadata"]["labels"] = json!({"team": "edge"});
        let verdict = check(
            &update(OPERATOR_GROUP_KIND, old, labelled),
            &snapshot_of(vec![global_nginx()]),
        );
        assert_allowed(&verdict);
        assert_warned(&verdict, &["InterOperatorGroupOwnerConflict", NGINX_API]);
    }

    #[test]
    fn an_update_starting_to_provide_a_shared_api_is_denied() {
        let old = nginx_with(Some("Widget.v1.example.com"));
        let verdict = check(
            &update(OPERATOR_GROUP_KIND, old, nginx_with(Some(NGINX_API))),
            &snapshot_of(vec![global_nginx()]),
        );
        assert_denied(
            &verdict,
            &[
                "InterOperatorGroupOwnerConflict: this UPDATE of OperatorGroup \"nginx/nginx-hbvsw\"",
                "\"operators/global-operators\" provides [NginxIngressController.v1alpha1.k8s.nginx.org] in namespaces [nginx]",
            ],
        );
        assert_no_warnings(&verdict);
    }

    #[test]
    fn an_update_adding_a_shared_api_to_an_existing_conflict_denies_only_the_new_one() {
        let widget = "Widget.v1.example.com";
        let global = with_status(
            og(
                "operators",
                "global-operators",
                json!({}),
                Some(&format!("{NGINX_API},{widget}")),
            ),
            &[""],
        );
        let old = nginx_with(Some(NGINX_API));
        let new = nginx_with(Some(&format!("{NGINX_API},{widget}")));
        let verdict = check(
            &update(OPERATOR_GROUP_KIND, old, new),
            &snapshot_of(vec![global]),
        );
        assert_denied(
            &verdict,
            &[
                "this UPDATE",
                "\"operators/global-operators\" provides [Widget.v1.example.com]",
            ],
        );
        let message = verdict.message.as_deref().unwrap_or("");
        assert!(!message.contains(NGINX_API), "{message}");
        // The part that was there before is reported, not blamed.
        assert_warned(&verdict, &["existing before this UPDATE", NGINX_API]);
    }

    #[test]
    fn an_update_widening_targets_into_another_group_is_denied() {
        // The other group targets "b" but lives in "nginx-system".
        let other = with_status(
            og("nginx-system", "ingress", json!({}), Some(NGINX_API)),
            &["b"],
        );
        let old = nginx_with(Some(NGINX_API));
        let mut new = old.clone();
        new["spec"]["targetNamespaces"] = json!(["nginx", "nginx-system"]);
        let verdict = check(
            &update(OPERATOR_GROUP_KIND, old, new),
            &snapshot_of(vec![other]),
        );
        assert_denied(
            &verdict,
            &[
                "this UPDATE",
                "\"nginx-system/ingress\"",
                "namespaces [nginx-system]",
            ],
        );
    }

    #[test]
    fn an_update_adding_a_conflict_with_a_second_group_names_only_that_group() {
        let edge = with_status(
            og("edge", "edge", json!({}), Some(NGINX_API)),
            &["edge", "lab"],
        );
        let old = nginx_with(Some(NGINX_API));
        let mut new = old.clone();
        new["spec"]["targetNamespaces"] = json!(["nginx", "lab"]);
        let verdict = check(
            &update(OPERATOR_GROUP_KIND, old, new),
            &snapshot_of(vec![global_nginx(), edge]),
        );
        assert_denied(&verdict, &["\"edge/edge\"", "namespaces [lab]"]);
        let message = verdict.message.as_deref().unwrap_or("");
        assert!(!message.contains("global-operators"), "{message}");
        assert_warned(&verdict, &["\"operators/global-operators\""]);
    }

    #[test]
    fn an_existing_conflict_in_more_namespaces_is_the_same_conflict() {
        // A conflict is (other group, shared APIs): OLM fails the same CSVs
        // whichever namespaces the overlap covers.
        let other = with_status(og("o", "other", json!({}), Some(NGINX_API)), &["a", "b"]);
        let old = og(
            "nginx",
            "nginx-hbvsw",
            json!({"targetNamespaces": ["a"]}),
            Some(NGINX_API),
        );
        let mut new = old.clone();
        new["spec"]["targetNamespaces"] = json!(["a", "b"]);
        let verdict = check(
            &update(OPERATOR_GROUP_KIND, old, new),
            &snapshot_of(vec![other]),
        );
        assert_allowed(&verdict);
        assert_warned(&verdict, &["\"o/other\"", "namespaces [a, b]"]);
    }

    #[test]
    fn an_update_resolving_or_narrowing_a_conflict_is_allowed() {
        let widget = "Widget.v1.example.com";
        let global = with_status(
            og(
                "operators",
                "global-operators",
                json!({}),
                Some(&format!("{NGINX_API},{widget}")),
            ),
            &[""],
        );
        let both = nginx_with(Some(&format!("{NGINX_API},{widget}")));
        // Resolved: nothing left to warn about.
        let verdict = check(
            &update(OPERATOR_GROUP_KIND, both.clone(), nginx_with(None)),
            &snapshot_of(vec![global.clone()]),
        );
        assert_allowed(&verdict);
        assert_no_warnings(&verdict);
        // Narrowed: the rest is still reported.
        let verdict = check(
            &update(OPERATOR_GROUP_KIND, both, nginx_with(Some(widget))),
            &snapshot_of(vec![global]),
        );
        assert_allowed(&verdict);
        assert_warned(&verdict, &["provides [Widget.v1.example.com]"]);
        assert!(!verdict.warnings.join(" ").contains(NGINX_API));
    }

    #[test]
    fn an_update_without_conflicts_has_no_warning() {
        let verdict = check(
            &update(
                OPERATOR_GROUP_KIND,
                nginx_with(None),
                nginx_with(Some(NGINX_API)),
            ),
            &snapshot_of(vec![with_status(
                og("edge", "edge", json!({}), Some(NGINX_API)),
                &["edge"],
            )]),
        );
        assert_allowed(&verdict);
        assert_no_warnings(&verdict);
    }

    #[test]
    fn an_old_spec_olm_cannot_resolve_targeted_nothing() {
        // OLM never synced the old group, so none of its conflicts existed.
        let old = og(
            "nginx",
            "nginx-hbvsw",
            json!({"targetNamespaces": [""]}),
            Some(NGINX_API),
        );
        let verdict = check(
            &update(OPERATOR_GROUP_KIND, old, nginx_with(Some(NGINX_API))),
            &snapshot_of(vec![global_nginx()]),
        );
        assert_denied(&verdict, &["this UPDATE", "\"operators/global-operators\""]);
    }

    #[test]
    fn an_update_without_an_old_object_is_judged_like_a_create() {
        let verdict = check(
            &request("UPDATE", OPERATOR_GROUP_KIND, nginx_with(Some(NGINX_API))),
            &snapshot_of(vec![global_nginx()]),
        );
        assert_denied(
            &verdict,
            &["InterOperatorGroupOwnerConflict: OperatorGroup \"nginx/nginx-hbvsw\" provides"],
        );
    }

    #[test]
    fn an_unreadable_old_object_is_a_bad_request() {
        let old = og(
            "nginx",
            "nginx-hbvsw",
            json!({"targetNamespaces": "nginx"}),
            None,
        );
        let verdict = check(
            &update(OPERATOR_GROUP_KIND, old, nginx_with(None)),
            &Snapshot::new(),
        );
        assert_eq!(verdict.code, Some(400));
        assert_denied(&verdict, &["request.oldObject", "spec.targetNamespaces"]);
    }

    #[test]
    fn too_many_groups_on_update_is_a_warning() {
        let extra = og("olm", "extra", json!({"targetNamespaces": ["olm"]}), None);
        let mut cluster = quickstart_groups();
        cluster.add(extra.clone()).unwrap();
        let mut relabelled = extra.clone();
        relabelled["metadata"]["labels"] = json!({"owner": "platform"});
        let verdict = check(&update(OPERATOR_GROUP_KIND, extra, relabelled), &cluster);
        assert_allowed(&verdict);
        assert_warned(
            &verdict,
            &[
                "TooManyOperatorGroups",
                "namespace \"olm\"",
                "\"olm-operators\"",
                "adds no group",
            ],
        );
    }

    #[test]
    fn too_many_groups_on_update_still_checks_new_conflicts() {
        let mut cluster = snapshot_of(vec![global_nginx()]);
        cluster
            .add(og("nginx", "sibling", json!({}), None))
            .unwrap();
        let verdict = check(
            &update(
                OPERATOR_GROUP_KIND,
                nginx_with(None),
                nginx_with(Some(NGINX_API)),
            ),
            &cluster,
        );
        assert_denied(&verdict, &["this UPDATE", "\"operators/global-operators\""]);
        assert_warned(&verdict, &["TooManyOperatorGroups", "\"sibling\""]);
    }

    #[test]
    fn old_conflicts_reuse_the_lists_of_the_request() {
        let selector = |team: &str| json!({"selector": {"matchLabels": {"team": team}}});
        let base = snapshot_of(vec![
            namespace("a", json!({"team": "x"})),
            namespace("b", json!({"team": "y"})),
            og("g1", "g1", selector("x"), Some(NGINX_API)),
            og("g2", "g2", selector("y"), Some(NGINX_API)),
        ]);
        let counting = Probe::new(&base);
        let old = og("nginx", "nginx-hbvsw", selector("x"), Some(NGINX_API));
        let new = og("nginx", "nginx-hbvsw", selector("y"), Some(NGINX_API));
        let verdict = check(&update(OPERATOR_GROUP_KIND, old, new), &counting);
        assert_denied(&verdict, &["\"g2/g2\""]);
        assert_no_warnings(&verdict);
        assert!(!verdict.message.as_deref().unwrap_or("").contains("g1/g1"));
        assert_eq!(counting.lists_of(OPERATOR_GROUP_KIND), 1);
        assert_eq!(counting.lists_of("Namespace"), 1);
    }

    #[test]
    fn each_kind_is_listed_at_most_once_per_request() {
        let selector = |team: &str| json!({"selector": {"matchLabels": {"team": team}}});
        let base = snapshot_of(vec![
            namespace("a", json!({"team": "x"})),
            namespace("b", json!({"team": "y"})),
            og("g1", "g1", selector("x"), Some(NGINX_API)),
            og("g2", "g2", selector("x"), Some(NGINX_API)),
            og("g3", "g3", selector("y"), Some(NGINX_API)),
        ]);
        let counting = Probe::new(&base);
        let mine = og("nginx", "nginx-hbvsw", selector("x"), Some(NGINX_API));
        let verdict = check(&request("CREATE", OPERATOR_GROUP_KIND, mine), &counting);
        assert_denied(&verdict, &["\"g1/g1\"", "\"g2/g2\""]);
        assert!(!verdict.message.as_deref().unwrap_or("").contains("g3/g3"));
        assert_eq!(counting.lists_of(OPERATOR_GROUP_KIND), 1);
        assert_eq!(counting.lists_of("Namespace"), 1);
    }

    #[test]
    fn failing_to_list_operator_groups_fails_closed() {
        let empty = Snapshot::new();
        let broken = Probe::new(&empty).failing_lists_of(OPERATOR_GROUP_KIND);
        let verdict = check(
            &request("CREATE", OPERATOR_GROUP_KIND, nginx_group()),
            &broken,
        );
        assert_eq!(verdict.code, Some(500));
        assert_denied(&verdict, &["OperatorGroups", "fails closed"]);
        let verdict = check(
            &request("CREATE", CSV_KIND, prometheus_csv("team-a")),
            &broken,
        );
        assert_denied(&verdict, &["OperatorGroups", "fails closed"]);
    }

    #[test]
    fn long_conflicts_are_listed_briefly() {
        let names: Vec<String> = (0..25).map(|i| format!("ns-{i:02}")).collect();
        let other = with_status(og("operators", "global", json!({}), Some(NGINX_API)), &[""]);
        let mine = og(
            "nginx",
            "wide",
            json!({"targetNamespaces": names}),
            Some(NGINX_API),
        );
        let verdict = check(
            &request("CREATE", OPERATOR_GROUP_KIND, mine),
            &snapshot_of(vec![other]),
        );
        assert_denied(&verdict, &["ns-00", "and 16 more"]);
    }

    #[test]
    fn thousands_of_groups_and_namespaces_reach_the_right_verdicts() {
        let mut objects = Vec::new();
        for i in 0..5000 {
            objects.push(namespace(
                &format!("ns-{i}"),
                json!({"team": format!("t{}", i % 50)}),
            ));
        }
        for i in 0..2000 {
            let spec = if i % 2 == 0 {
                json!({"selector": {"matchLabels": {"team": format!("t{}", i % 50)}}})
            } else {
                json!({"targetNamespaces": [format!("ns-{}", i + 1)]})
            };
            objects.push(og(
                &format!("ns-{i}"),
                "og",
                spec,
                Some(&format!("Kind{i}.v1.example.com,Shared.v1.example.com")),
            ));
        }
        let cluster = snapshot_of(objects);
        let mine = og(
            "ns-4999",
            "og",
            json!({"selector": {"matchLabels": {"team": "t7"}}}),
            Some("Shared.v1.example.com"),
        );
        assert_denied(
            &check(&request("CREATE", OPERATOR_GROUP_KIND, mine), &cluster),
            &["InterOperatorGroupOwnerConflict"],
        );
        let csv = json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": CSV_KIND,
            "metadata": {"name": "x.v1", "namespace": "ns-3"},
            "spec": {"customresourcedefinitions": {"owned": [{"name": "things.example.com", "version": "v1", "kind": "Kind3"}]}},
        });
        assert_allowed(&check(&request("UPDATE", CSV_KIND, csv.clone()), &cluster));
        assert_allowed(&check(&update(CSV_KIND, csv.clone(), csv), &cluster));
        // An UPDATE computes the old object's conflicts too: existing ones
        // (through "Shared") are kept, so only warned about.
        let old = og(
            "ns-4999",
            "og",
            json!({"selector": {"matchLabels": {"team": "t7"}}}),
            Some("Shared.v1.example.com"),
        );
        let new = og(
            "ns-4999",
            "og",
            json!({"selector": {"matchLabels": {"team": "t8"}}}),
            Some("Shared.v1.example.com"),
        );
        let verdict = check(&update(OPERATOR_GROUP_KIND, old, new), &cluster);
        assert_denied(&verdict, &["this UPDATE", "and 90 more"]);
        assert_warned(&verdict, &["existing before this UPDATE"]);
    }

    // --- ClusterServiceVersion -------------------------------------------------

    fn prometheus_csv(namespace: &str) -> Value {
        // OLM pkg/package-server testdata prometheusoperator.0.22.2 (owned CRDs)
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": CSV_KIND,
            "metadata": {"name": "prometheusoperator.0.22.2", "namespace": namespace},
            "spec": {
                "replaces": "prometheusoperator.0.15.0",
                "customresourcedefinitions": {"owned": [
                    {"name": "prometheuses.monitoring.coreos.com", "version": "v1", "kind": "Prometheus"},
                    {"name": "prometheusrules.monitoring.coreos.com", "version": "v1", "kind": "PrometheusRule"},
                    {"name": "servicemonitors.monitoring.coreos.com", "version": "v1", "kind": "ServiceMonitor"},
                    {"name": "alertmanagers.monitoring.coreos.com", "version": "v1", "kind": "Alertmanager"},
                ]},
            },
        })
    }

    fn csv_check(csv: Value, objects: Vec<Value>) -> Verdict {
        check(&request("CREATE", CSV_KIND, csv), &snapshot_of(objects))
    }

    fn monitoring_group(static_apis: bool, annotation: Option<&str>) -> Value {
        with_status(
            og(
                "monitoring",
                "monitoring",
                json!({"staticProvidedAPIs": static_apis, "targetNamespaces": ["monitoring"]}),
                annotation,
            ),
            &["monitoring"],
        )
    }

    fn global_with(apis: &str) -> Value {
        with_status(
            og("operators", "global-operators", json!({}), Some(apis)),
            &[""],
        )
    }

    #[test]
    fn csv_add_to_a_non_static_group_is_allowed() {
        assert_allowed(&csv_check(
            prometheus_csv("monitoring"),
            vec![monitoring_group(false, None)],
        ));
    }

    #[test]
    fn csv_with_apis_already_listed_and_no_rival_is_allowed() {
        assert_allowed(&csv_check(
            prometheus_csv("monitoring"),
            vec![monitoring_group(false, Some(PROMETHEUS_APIS))],
        ));
        // A static group reserving exactly these APIs (doc/design/operatorgroups.md).
        assert_allowed(&csv_check(
            prometheus_csv("monitoring"),
            vec![monitoring_group(true, Some(PROMETHEUS_APIS))],
        ));
    }

    #[test]
    fn csv_add_to_a_static_group_is_denied() {
        let verdict = csv_check(
            prometheus_csv("monitoring"),
            vec![monitoring_group(
                true,
                Some("Prometheus.v1.monitoring.coreos.com"),
            )],
        );
        assert_denied(
            &verdict,
            &[
                "CannotModifyStaticOperatorGroupProvidedAPIs",
                "\"monitoring/monitoring\"",
                "Alertmanager.v1.monitoring.coreos.com",
                "it lists: [Prometheus.v1.monitoring.coreos.com]",
                "spec.staticProvidedAPIs: true",
            ],
        );
    }

    #[test]
    fn csv_conflicting_with_an_intersecting_group_is_denied() {
        for static_apis in [false, true] {
            let verdict = csv_check(
                prometheus_csv("monitoring"),
                vec![
                    monitoring_group(static_apis, None),
                    global_with("Prometheus.v1.monitoring.coreos.com"),
                ],
            );
            assert_denied(
                &verdict,
                &[
                    "InterOperatorGroupOwnerConflict:",
                    "\"operators/global-operators\" provides [Prometheus.v1.monitoring.coreos.com]",
                    "namespaces [monitoring]",
                ],
            );
        }
    }

    #[test]
    fn csv_whose_listed_apis_a_rival_provides_is_denied_as_a_future_conflict() {
        let verdict = csv_check(
            prometheus_csv("monitoring"),
            vec![
                monitoring_group(false, Some(PROMETHEUS_APIS)),
                global_with("ServiceMonitor.v1.monitoring.coreos.com"),
            ],
        );
        assert_denied(
            &verdict,
            &[
                "at OLM's next sync",
                "ServiceMonitor.v1.monitoring.coreos.com",
                "\"operators/global-operators\"",
            ],
        );
    }

    #[test]
    fn csv_remove_from_a_static_group_is_denied() {
        let verdict = csv_check(
            prometheus_csv("monitoring"),
            vec![
                monitoring_group(true, Some(PROMETHEUS_APIS)),
                global_with("ServiceMonitor.v1.monitoring.coreos.com"),
            ],
        );
        assert_denied(
            &verdict,
            &[
                "CannotModifyStaticOperatorGroupProvidedAPIs",
                "reserves",
                "ServiceMonitor.v1.monitoring.coreos.com",
            ],
        );
    }

    #[test]
    fn csv_rivals_outside_the_targets_or_with_other_apis_do_not_matter() {
        let elsewhere = with_status(
            og("edge", "edge", json!({}), Some(PROMETHEUS_APIS)),
            &["edge"],
        );
        assert_allowed(&csv_check(
            prometheus_csv("monitoring"),
            vec![monitoring_group(false, None), elsewhere],
        ));
        assert_allowed(&csv_check(
            prometheus_csv("monitoring"),
            vec![
                monitoring_group(false, None),
                global_with("Kiali.v1alpha1.kiali.io"),
            ],
        ));
        // Unsynced global rival: its spec (no selector) makes it global.
        let unsynced = og(
            "operators",
            "global-operators",
            json!({}),
            Some(PROMETHEUS_APIS),
        );
        assert_denied(
            &csv_check(
                prometheus_csv("monitoring"),
                vec![monitoring_group(false, None), unsynced],
            ),
            &["InterOperatorGroupOwnerConflict"],
        );
    }

    #[test]
    fn csv_owned_api_services_count() {
        // OLM quickstart packageserver CSV in "olm" (apiservicedefinitions).
        let packageserver = json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": CSV_KIND,
            "metadata": {"name": "packageserver", "namespace": "olm", "labels": {"olm.version": "0.18.3"}},
            "spec": {"apiservicedefinitions": {"owned": [{
                "group": "packages.operators.coreos.com", "version": "v1", "kind": "PackageManifest",
                "name": "packagemanifests", "deploymentName": "packageserver", "containerPort": 5443
            }]}},
        });
        let olm_group = og(
            "olm",
            "olm-operators",
            json!({"targetNamespaces": ["olm"]}),
            None,
        );
        assert_allowed(&csv_check(packageserver.clone(), vec![olm_group.clone()]));
        let verdict = csv_check(
            packageserver,
            vec![
                olm_group,
                global_with("PackageManifest.v1.packages.operators.coreos.com"),
            ],
        );
        assert_denied(
            &verdict,
            &[
                "InterOperatorGroupOwnerConflict",
                "PackageManifest.v1.packages.operators.coreos.com",
            ],
        );
    }

    #[test]
    fn copied_csvs_are_not_checked() {
        let rival = global_with("Prometheus.v1.monitoring.coreos.com");
        let mut annotated = prometheus_csv("monitoring");
        annotated["metadata"]["annotations"] = json!({"olm.operatorNamespace": "operators"});
        let mut labelled = prometheus_csv("monitoring");
        labelled["metadata"]["labels"] = json!({"olm.copiedFrom": "operators"});
        let mut reason = prometheus_csv("monitoring");
        reason["status"] = json!({"phase": "Succeeded", "reason": "Copied"});
        for copy in [annotated, labelled, reason] {
            assert_allowed(&csv_check(
                copy,
                vec![monitoring_group(false, None), rival.clone()],
            ));
        }
        // Its own namespace in olm.operatorNamespace: not a copy.
        let mut original = prometheus_csv("monitoring");
        original["metadata"]["annotations"] = json!({"olm.operatorNamespace": "monitoring"});
        assert_denied(
            &csv_check(original, vec![monitoring_group(false, None), rival]),
            &["InterOperatorGroupOwnerConflict"],
        );
    }

    #[test]
    fn csvs_without_exactly_one_group_are_not_checked() {
        let rival = global_with("Prometheus.v1.monitoring.coreos.com");
        assert_allowed(&csv_check(
            prometheus_csv("monitoring"),
            vec![rival.clone()],
        ));
        let second = with_status(og("monitoring", "second", json!({}), None), &["monitoring"]);
        assert_allowed(&csv_check(
            prometheus_csv("monitoring"),
            vec![monitoring_group(false, None), second, rival],
        ));
    }

    #[test]
    fn an_owned_crd_name_without_a_dot_is_rejected() {
        let mut csv = prometheus_csv("monitoring");
        csv["spec"]["customresourcedefinitions"]["owned"][2]["name"] = json!("servicemonitors");
        let verdict = csv_check(csv, vec![monitoring_group(false, None)]);
        assert_denied(
            &verdict,
            &[
                "spec.customresourcedefinitions.owned[2].name",
                "\"servicemonitors\"",
                "no dot",
            ],
        );
    }

    #[test]
    fn a_csv_providing_nothing_is_allowed_even_in_a_static_group() {
        let empty = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": CSV_KIND, "metadata": {"name": "x", "namespace": "monitoring"}});
        assert_allowed(&csv_check(
            empty,
            vec![monitoring_group(true, None), global_with(PROMETHEUS_APIS)],
        ));
    }

    // --- ClusterServiceVersion UPDATE --------------------------------------------

    fn relabelled(mut csv: Value) -> Value {
        csv["metadata"]["labels"] = json!({"operators.coreos.com/prometheus.team-a": ""});
        csv
    }

    fn csv_update(old: Value, new: Value, objects: Vec<Value>) -> Verdict {
        check(&update(CSV_KIND, old, new), &snapshot_of(objects))
    }

    #[test]
    fn a_csv_update_keeping_its_apis_is_allowed_with_the_reason_as_warning() {
        let csv = prometheus_csv("monitoring");
        // Non-static RemoveAPIs, APIConflict, static AddAPIs: each would deny.
        let cases = [
            (
                vec![
                    monitoring_group(false, Some(PROMETHEUS_APIS)),
                    global_with("ServiceMonitor.v1.monitoring.coreos.com"),
                ],
                "InterOperatorGroupOwnerConflict at OLM's next sync",
            ),
            (
                vec![
                    monitoring_group(false, None),
                    global_with("Prometheus.v1.monitoring.coreos.com"),
                ],
                "InterOperatorGroupOwnerConflict: ClusterServiceVersion",
            ),
            (
                vec![monitoring_group(
                    true,
                    Some("Prometheus.v1.monitoring.coreos.com"),
                )],
                "CannotModifyStaticOperatorGroupProvidedAPIs",
            ),
        ];
        for (objects, reason) in cases {
            assert_denied(&csv_check(csv.clone(), objects.clone()), &[reason]);
            let verdict = csv_update(csv.clone(), relabelled(csv.clone()), objects);
            assert_allowed(&verdict);
            assert_eq!(verdict.warnings.len(), 1, "{:?}", verdict.warnings);
            assert_warned(
                &verdict,
                &[
                    reason,
                    "\"monitoring/prometheusoperator.0.22.2\"",
                    "does not change the APIs",
                ],
            );
        }
    }

    #[test]
    fn a_csv_update_with_reordered_or_redescribed_apis_keeps_them() {
        let old = prometheus_csv("monitoring");
        let mut new = old.clone();
        new["spec"]["customresourcedefinitions"]["owned"]
            .as_array_mut()
            .unwrap()
            .reverse();
        new["spec"]["customresourcedefinitions"]["owned"][0]["description"] = json!("new text");
        let verdict = csv_update(
            old,
            new,
            vec![
                monitoring_group(false, None),
                global_with("Prometheus.v1.monitoring.coreos.com"),
            ],
        );
        assert_allowed(&verdict);
        assert_warned(&verdict, &["InterOperatorGroupOwnerConflict"]);
    }

    #[test]
    fn a_csv_update_changing_its_apis_is_judged() {
        let mut old = prometheus_csv("monitoring");
        old["spec"]["customresourcedefinitions"]["owned"]
            .as_array_mut()
            .unwrap()
            .truncate(1);
        let verdict = csv_update(
            old,
            prometheus_csv("monitoring"),
            vec![
                monitoring_group(false, None),
                global_with("ServiceMonitor.v1.monitoring.coreos.com"),
            ],
        );
        assert_denied(
            &verdict,
            &[
                "InterOperatorGroupOwnerConflict",
                "ServiceMonitor.v1.monitoring.coreos.com",
            ],
        );
        assert_no_warnings(&verdict);
    }

    #[test]
    fn a_copy_turning_into_an_original_is_judged() {
        let mut copy = prometheus_csv("monitoring");
        copy["metadata"]["labels"] = json!({"olm.copiedFrom": "operators"});
        let objects = vec![
            monitoring_group(false, None),
            global_with("Prometheus.v1.monitoring.coreos.com"),
        ];
        assert_denied(
            &csv_update(copy.clone(), prometheus_csv("monitoring"), objects.clone()),
            &["InterOperatorGroupOwnerConflict"],
        );
        // And an original turning into a copy is a copy: not checked.
        let verdict = csv_update(prometheus_csv("monitoring"), copy, objects);
        assert_allowed(&verdict);
        assert_no_warnings(&verdict);
    }

    #[test]
    fn a_csv_update_without_problems_has_no_warning() {
        let csv = prometheus_csv("monitoring");
        let verdict = csv_update(
            csv.clone(),
            relabelled(csv),
            vec![monitoring_group(false, Some(PROMETHEUS_APIS))],
        );
        assert_allowed(&verdict);
        assert_no_warnings(&verdict);
    }

    #[test]
    fn a_csv_update_keeping_a_broken_crd_name_is_allowed_with_a_warning() {
        let mut broken = prometheus_csv("monitoring");
        broken["spec"]["customresourcedefinitions"]["owned"][2]["name"] = json!("servicemonitors");
        let objects = vec![monitoring_group(false, None)];
        let verdict = csv_update(broken.clone(), relabelled(broken.clone()), objects.clone());
        assert_allowed(&verdict);
        assert_warned(
            &verdict,
            &["spec.customresourcedefinitions.owned[2].name", "no dot"],
        );
        // Breaking it is a change.
        assert_denied(
            &csv_update(prometheus_csv("monitoring"), broken, objects),
            &["spec.customresourcedefinitions.owned[2].name"],
        );
    }

    #[test]
    fn a_failed_lookup_blocks_only_csv_updates_that_need_it() {
        let empty = Snapshot::new();
        let broken = Probe::new(&empty).failing_lists_of(OPERATOR_GROUP_KIND);
        let csv = prometheus_csv("monitoring");
        let verdict = check(
            &update(CSV_KIND, csv.clone(), relabelled(csv.clone())),
            &broken,
        );
        assert_allowed(&verdict);
        assert_warned(
            &verdict,
            &[
                "was not checked",
                "OperatorGroups of all namespaces",
                "forbidden",
            ],
        );
        let mut fewer = csv.clone();
        fewer["spec"]["customresourcedefinitions"]["owned"]
            .as_array_mut()
            .unwrap()
            .truncate(1);
        let verdict = check(&update(CSV_KIND, fewer, csv), &broken);
        assert_eq!(verdict.code, Some(500));
        assert_denied(&verdict, &["OperatorGroups", "fails closed"]);
    }

    #[test]
    fn a_csv_update_without_an_old_object_or_with_an_unreadable_one() {
        let objects = vec![
            monitoring_group(false, None),
            global_with("Prometheus.v1.monitoring.coreos.com"),
        ];
        assert_denied(
            &check(
                &request("UPDATE", CSV_KIND, prometheus_csv("monitoring")),
                &snapshot_of(objects.clone()),
            ),
            &["InterOperatorGroupOwnerConflict"],
        );
        let mut unreadable = prometheus_csv("monitoring");
        unreadable["spec"]["customresourcedefinitions"]["owned"] = json!({"name": "x"});
        let verdict = csv_update(unreadable, prometheus_csv("monitoring"), objects);
        assert_eq!(verdict.code, Some(400));
        assert_denied(
            &verdict,
            &[
                "request.oldObject",
                "ClusterServiceVersion",
                "spec.customresourcedefinitions.owned",
            ],
        );
    }

    #[test]
    fn listing_truncates() {
        assert_eq!(listing(&["a", "b"]), "a, b");
        let many: Vec<String> = (0..12).map(|i| i.to_string()).collect();
        assert_eq!(listing(&many), "0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 2 more");
    }
}
