#![doc = include_str!("../../../../policies/group-authorization/README.md")]

mod authorize;
mod messages;
mod read;
#[cfg(test)]
mod tests;

use olm_guard_core::{
    AdmissionRequest, Cluster, Operation, PolicySettings, SettingsError, UserInfo, Verdict,
};
use olm_guard_olm::cluster_object_set::{
    ClusterObjectSet, GROUP, KIND, OWNER_NAME_LABEL, SpecGroup, with_spec_field,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::read_or_bad_request;
use authorize::require_manage;
use read::{Group, spec_group_of, stored_without_group};

/// The message of the ValidatingAdmissionPolicy proposed in
/// operator-framework/operator-controller#2722; kept verbatim, here and in
/// the native policy generated from this rule, so that users and alerts
/// moving from the proposed policy recognise it.
pub const NOT_AUTHORIZED: &str = "user is not authorized to manage revisions in this group";

/// The settings of group-authorization (*Settings* in its README).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// For clusters whose ClusterObjectSet CRD has `spec.group` (the
    /// proposal of operator-framework/operator-controller#2722, which
    /// operator-controller's CRD does not implement): a new revision must
    /// set it, so label-only revisions are refused on CREATE.
    pub require_spec_group: bool,
    /// Migration aid for those clusters ("Backfill spec.group from the
    /// existing label value" in the same proposal): copy the owner-name
    /// label into a missing `spec.group`. Only with `require_spec_group`.
    pub backfill_group_from_label: bool,
    /// The users whose DELETEs rule 5 lets through: Kubernetes' garbage
    /// collector, which deletes the revisions of a deleted ClusterExtension
    /// through their ownerReference (operator-controller leaves that
    /// clean-up to it) and holds no `manage` grant.
    pub garbage_collectors: Vec<String>,
}

/// The garbage collector's user: its own ServiceAccount when
/// kube-controller-manager runs with `--use-service-account-credentials`
/// (kubernetes `cmd/kube-controller-manager/app/controllermanager.go`,
/// `startGarbageCollectorController`), else kube-controller-manager's.
pub const GARBAGE_COLLECTORS: [&str; 2] = [
    "system:serviceaccount:kube-system:generic-garbage-collector",
    "system:kube-controller-manager",
];

impl Default for Settings {
    fn default() -> Self {
        Settings {
            require_spec_group: false,
            backfill_group_from_label: false,
            garbage_collectors: GARBAGE_COLLECTORS.map(String::from).to_vec(),
        }
    }
}

impl PolicySettings for Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        if self.backfill_group_from_label && !self.require_spec_group {
            return Err(SettingsError::Refused(
                messages::BACKFILL_WITHOUT_SPEC_GROUP.to_string(),
            ));
        }
        if let Some(i) = self.garbage_collectors.iter().position(String::is_empty) {
            return Err(SettingsError::Refused(messages::empty_garbage_collector(i)));
        }
        Ok(())
    }
}

/// The verdict of group-authorization on one admission request: the rules
/// of the module documentation for ClusterObjectSets, acceptance for
/// anything else.
pub fn validate(request: &AdmissionRequest, settings: &Settings, cluster: &dyn Cluster) -> Verdict {
    if !request.targets(GROUP, KIND) {
        return Verdict::accept();
    }
    match request.operation {
        Operation::Create | Operation::Update => validate_write(request, settings, cluster),
        Operation::Delete => validate_delete(request, settings, cluster),
        Operation::Connect => Verdict::accept(),
    }
}

/// Rules 1-4, 6 and 7 for CREATE and UPDATE.
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
    let old_spec_group = updating
        .then(|| spec_group_of(&request.old_object))
        .flatten();
    let label = cos.owner_label();

    // Rule 1: a spec.group is a name; rule 7 fills a missing one first,
    // so that a client that does not know the field (operator-controller
    // re-applying a revision) keeps the group it was given.
    let (spec_group, backfilled) = match cos.spec_group() {
        SpecGroup::Invalid(value) => {
            return Verdict::deny(messages::invalid_group(value, old_spec_group));
        }
        SpecGroup::Unset if settings.require_spec_group && settings.backfill_group_from_label => {
            match label {
                Some(label) => (SpecGroup::Name(label), Some(label)),
                None => (SpecGroup::Unset, None),
            }
        }
        spec_group => (spec_group, None),
    };

    // Rule 2: a stored spec.group stays as it is.
    if let Some(old) = old_spec_group {
        match spec_group {
            SpecGroup::Name(group) if group != old => {
                return Verdict::deny(messages::group_changed(old, group));
            }
            SpecGroup::Name(_) => {}
            _ => return Verdict::deny(messages::missing_group(label, Some(old))),
        }
    }

    // Rule 3.
    if let SpecGroup::Name(group) = spec_group
        && let Some(label) = cos.metadata.label(OWNER_NAME_LABEL).filter(|l| *l != group)
    {
        return Verdict::deny(messages::label_disagrees(label, group));
    }

    // Rule 6, on clusters whose CRD has spec.group. A revision stored
    // before grouping must stay writable, or controllers could no longer
    // archive it or remove its finalizers.
    let kept_without_group = settings.require_spec_group && spec_group == SpecGroup::Unset;
    if kept_without_group && !(updating && stored_without_group(&request.old_object)) {
        return Verdict::deny(messages::missing_group(label, None));
    }

    // Rule 4: the group the object is in, and the one it is stored in.
    let group = Group::of_object(spec_group, label);
    let stored = updating
        .then(|| Group::stored(&request.old_object))
        .flatten();
    if let Err(denial) = authorize(cluster, &request.user_info, group, stored) {
        return denial;
    }

    if let Some(label) = backfilled {
        return match with_spec_field(&request.object, "group", Value::String(label.to_string())) {
            Some(object) => Verdict::mutate(object).with_warning(messages::backfilled(label)),
            // from_object accepted the object, so it and its spec are maps.
            None => Verdict::bad_request("cannot set spec.group: spec is not a map of fields"),
        };
    }
    if kept_without_group {
        let stored_label = stored.map(|stored| stored.name);
        return Verdict::accept().with_warning(messages::kept_without_group(label, stored_label));
    }
    Verdict::accept()
}

/// Rule 4 for a write: `manage` on the object's group, then on the group
/// it is stored in when the write moves it out of that one. Managing the
/// new group alone must not let anyone pull another group's revision into
/// theirs, nor take one out of a group they may not manage. A revision in
/// no group, before and after, has nothing to authorize.
fn authorize(
    cluster: &dyn Cluster,
    user: &UserInfo,
    group: Option<Group<'_>>,
    stored: Option<Group<'_>>,
) -> Result<(), Verdict> {
    if let Some(group) = group {
        require_manage(cluster, user, group.name, &messages::source_note(group))?;
    }
    if let Some(stored) = stored.filter(|stored| group.is_none_or(|g| g.name != stored.name)) {
        let note = messages::moved_note(stored, group.map(|g| g.name));
        require_manage(cluster, user, stored.name, &note)?;
    }
    Ok(())
}

/// Rule 5: deleting a revision is managing its group. A revision in no
/// group has none to protect. The garbage collector deletes a revision
/// only once the ClusterExtension that owns it is gone, and that
/// ownerReference was written by a request this rule authorized.
fn validate_delete(
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Verdict {
    let Some(stored) = Group::stored(&request.old_object) else {
        return Verdict::accept();
    };
    if settings
        .garbage_collectors
        .contains(&request.user_info.username)
    {
        return Verdict::accept();
    }
    let note = messages::source_note(stored);
    match require_manage(cluster, &request.user_info, stored.name, &note) {
        Ok(()) => Verdict::accept(),
        Err(denial) => denial,
    }
}
