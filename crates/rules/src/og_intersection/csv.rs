//! Rules 4-7: a ClusterServiceVersion that is created or updated.

use olm_guard_core::{AdmissionRequest, Cluster, Verdict};
use olm_guard_olm::operator_group::{
    ApiReconciliation, ApiSet, ClusterServiceVersion, GroupSurface, reconcile_api_intersection,
};
use serde_json::Value;

use super::lookup::{
    LookupFailed, NAMESPACES_LOOKUP, NamespaceList, OPERATOR_GROUPS_LOOKUP, list_operator_groups,
    surface_of,
};
use super::messages::{
    CsvVerdict, Overlap, crd_name_message, unchanged_apis_warning, unchecked_csv_warning,
};
use super::{CSV_KIND, old_object};
use crate::common::{complete_identity, read_or_bad_request};

pub(super) fn validate_csv(request: &AdmissionRequest, cluster: &dyn Cluster) -> Verdict {
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
        (false, Ok(Some(reason))) => {
            Verdict::accept().with_warning(unchanged_apis_warning(&reason))
        }
        (false, Err(failed)) => {
            Verdict::accept().with_warning(unchecked_csv_warning(&csv, &failed))
        }
    }
}

/// Rules 4 (group count), 5 and 6 for a CSV that is not a copy: `None` when
/// OLM would accept it, else the reason it would fail it. Rule 5 needs no
/// lookup and comes first, so it applies whatever the group count.
fn csv_decision(
    csv: &ClusterServiceVersion,
    cluster: &dyn Cluster,
) -> Result<Option<String>, LookupFailed> {
    // Rule 5.
    let add = match csv.provided_apis() {
        Ok(apis) => apis,
        Err(error) => return Ok(Some(crd_name_message(csv, &error))),
    };
    let groups_failed = |error| LookupFailed {
        what: OPERATOR_GROUPS_LOOKUP,
        error,
    };
    let groups = list_operator_groups(cluster).map_err(groups_failed)?;
    let namespace = &csv.metadata.namespace;
    let in_namespace = groups.in_namespace(namespace).map_err(groups_failed)?;
    let mut in_namespace = in_namespace.iter();
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
    for other in &groups.providing_any(&add).map_err(groups_failed)? {
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
    let mut csv = read_or_bad_request(ClusterServiceVersion::from_object(object), |e| {
        format!("{field} cannot be read as a ClusterServiceVersion: {e}")
    })?;
    complete_identity(&mut csv.metadata, request, CSV_KIND)?;
    Ok(csv)
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
