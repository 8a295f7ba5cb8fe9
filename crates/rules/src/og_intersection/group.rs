//! Rules 1-3: an OperatorGroup that is created or updated.

use olm_guard_core::{AdmissionRequest, Cluster, Operation, Verdict};
use olm_guard_olm::operator_group::{ApiSet, NamespaceSet, OperatorGroup, target_set};
use serde_json::Value;

use super::lookup::{
    NamespaceList, list_operator_groups, listed_targets, namespaces_unavailable,
    operator_groups_unavailable, spec_target_set,
};
use super::messages::{
    Overlap, group_conflict_message, kept_conflicts_warning, too_many_groups_message,
    too_many_groups_warning, unresolvable_targets_message, update_conflict_message,
};
use super::{OPERATOR_GROUP_KIND, old_object};
use crate::common::{complete_identity, read_or_bad_request};

pub(super) fn validate_operator_group(
    request: &AdmissionRequest,
    cluster: &dyn Cluster,
) -> Verdict {
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
    let is_other = |other: &&OperatorGroup| !other.is_same_group(namespace, name);
    let mut warnings = Vec::new();

    // Rule 2. An UPDATE does not add a group: the others were there before
    // it, and blocking the update would not remove them.
    let in_namespace = match groups.in_namespace(namespace) {
        Ok(in_namespace) => in_namespace,
        Err(error) => return operator_groups_unavailable(error),
    };
    let siblings: Vec<&OperatorGroup> = in_namespace.iter().filter(is_other).collect();
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
    let providing = match groups.providing_any(&own_apis) {
        Ok(providing) => providing,
        Err(error) => return operator_groups_unavailable(error),
    };
    let sharing: Vec<Sharing> = providing
        .iter()
        .filter(is_other)
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
        // A conflict is (other group, shared APIs): the namespaces of the
        // overlap do not make it new, because OLM fails the same CSVs (those
        // in this group's namespace providing the shared APIs) wherever the
        // overlap is.
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

fn read_operator_group(
    request: &AdmissionRequest,
    object: &Value,
    field: &str,
) -> Result<OperatorGroup, Verdict> {
    let mut group = read_or_bad_request(OperatorGroup::from_object(object), |e| {
        format!("{field} cannot be read as an OperatorGroup: {e}")
    })?;
    complete_identity(&mut group.metadata, request, OPERATOR_GROUP_KIND)?;
    Ok(group)
}
