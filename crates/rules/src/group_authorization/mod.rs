#![doc = include_str!("../../../../policies/group-authorization/README.md")]

mod authorize;
mod legacy;
mod messages;
mod read;
#[cfg(test)]
mod tests;

use olm_guard_core::{AdmissionRequest, Cluster, Operation, PolicySettings, Verdict};
use olm_guard_olm::cluster_object_set::{
    ClusterObjectSet, GROUP, KIND, OWNER_NAME_LABEL, SpecGroup, with_spec_field,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::read_or_bad_request;
use authorize::require_manage;
use read::{spec_group_of, stored_group, stored_without_group};

/// The message of the ValidatingAdmissionPolicy proposed in
/// operator-framework/operator-controller issue #2722; kept verbatim, here
/// and in the native policy generated from this rule, so that users and
/// alerts moving from the proposed policy recognise it.
pub const NOT_AUTHORIZED: &str = "user is not authorized to manage revisions in this group";

/// The settings of group-authorization (*Settings* in its README).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// Migration aid ("Backfill spec.group from the existing label value" in
    /// operator-framework/operator-controller issue #2722): copy the
    /// owner-name label into a missing `spec.group`.
    pub backfill_group_from_label: bool,
}

impl PolicySettings for Settings {}

/// The verdict of group-authorization on one admission request: rules 1-6
/// of the module documentation for ClusterObjectSets, acceptance for
/// anything else.
pub fn validate(request: &AdmissionRequest, settings: &Settings, cluster: &dyn Cluster) -> Verdict {
    if !request.targets(GROUP, KIND) {
        return Verdict::accept();
    }
    match request.operation {
        Operation::Create | Operation::Update => validate_write(request, settings, cluster),
        Operation::Delete => validate_delete(request, cluster),
        Operation::Connect => Verdict::accept(),
    }
}

/// Rules 1-4 and 6 for CREATE and UPDATE.
fn validate_write(
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Verdict {
    let cos = match read_or_bad_request(ClusterObjectSet::from_object(&request.object), |problem| {
        format!("cannot read the ClusterObjectSet: {problem}")
    }) {
        Ok(cos) => cos,
        Err(bad_request) => return bad_request,
    };
    let updating = request.operation == Operation::Update;
    let old_group = updating
        .then(|| spec_group_of(&request.old_object))
        .flatten();

    // Rule 1, with rule 6 filling the group from the label first.
    let (group, backfilled) = match (cos.spec_group(), cos.owner_label()) {
        (SpecGroup::Name(group), _) => (group, false),
        (SpecGroup::Unset, Some(label)) if settings.backfill_group_from_label => (label, true),
        (SpecGroup::Unset, label) => {
            // An object stored before grouping must stay writable, or
            // controllers could no longer archive it or remove its
            // finalizers.
            if updating && let Some(old) = stored_without_group(&request.old_object) {
                return legacy::update_without_group(
                    cluster,
                    &request.user_info,
                    label,
                    old.owner_label(),
                );
            }
            return Verdict::deny(messages::missing_group(label, old_group));
        }
        (SpecGroup::Invalid(value), _) => {
            return Verdict::deny(messages::invalid_group(value, old_group));
        }
    };

    // Rule 2.
    if let Some(old) = old_group.filter(|old| *old != group) {
        return Verdict::deny(messages::group_changed(old, group));
    }

    // Rule 3.
    if let Some(label) = cos.metadata.label(OWNER_NAME_LABEL).filter(|l| *l != group) {
        return Verdict::deny(messages::label_disagrees(label, group));
    }

    // Rule 4.
    if let Err(denial) = require_manage(cluster, &request.user_info, group, "") {
        return denial;
    }

    // Rule 2, for a revision moved out of the group it is stored in:
    // whoever may write the new group must not be able to pull another
    // group's revision into it (a label-only object gaining spec.group, or
    // a backfill from a changed label).
    if updating
        && let Some((stored, source)) =
            stored_group(&request.old_object).filter(|(g, _)| *g != group)
    {
        let note = messages::moved_from_stored_group(&source, group);
        if let Err(denial) = require_manage(cluster, &request.user_info, stored, &note) {
            return denial;
        }
    }

    // Rule 6: the group came from the label; write it into the object.
    if !backfilled {
        return Verdict::accept();
    }
    match with_spec_field(&request.object, "group", Value::String(group.to_string())) {
        Some(object) => Verdict::mutate(object).with_warning(messages::backfilled(group)),
        // from_object accepted the object, so it and its spec are maps.
        None => Verdict::bad_request("cannot set spec.group: spec is not a map of fields"),
    }
}

/// Rule 5: deleting a revision is managing its group. Objects that never
/// had `spec.group` are not gated: they belong to no group to protect.
fn validate_delete(request: &AdmissionRequest, cluster: &dyn Cluster) -> Verdict {
    let Some(group) = spec_group_of(&request.old_object) else {
        return Verdict::accept();
    };
    match require_manage(cluster, &request.user_info, group, "") {
        Ok(()) => Verdict::accept(),
        Err(denial) => denial,
    }
}
