#![doc = include_str!("../../../../policies/revision-uniqueness/README.md")]

mod messages;
pub use messages::KEPT;
mod naming;
mod numbering;
mod slot;
mod survey;
#[cfg(test)]
mod tests;

use olm_guard_core::{AdmissionRequest, Cluster, Operation, PolicySettings, Verdict};
use olm_guard_olm::cluster_object_set::{ClusterObjectSet, GROUP, KIND, revision_of};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::read_or_bad_request;
use survey::{GroupSurvey, siblings};

/// The settings of revision-uniqueness (*Settings* in its README).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// The optional auto-incrementing webhook proposed in
    /// operator-framework/operator-controller issue #2722: number a new
    /// revision from the cluster instead of making every client compute
    /// max + 1.
    pub auto_increment_revision: bool,
    /// Names as `<group>-<revision>`, as operator-controller already names
    /// the revisions of a ClusterExtension (`<extension>-<N>`).
    pub require_name_suffix: bool,
    /// Rule 4 lists only the ClusterObjectSets labelled with the group's
    /// name (`olm.operatorframework.io/owner-name=<group>`, a label
    /// selector) instead of every one: for clusters whose revisions all
    /// carry the label, as operator-controller labels every revision it
    /// creates. A revision grouped by `spec.group` alone is then not seen,
    /// and policy-server keeps a watch per group (the README's settings).
    pub list_by_owner_label: bool,
}

impl PolicySettings for Settings {}

/// The verdict of revision-uniqueness on one admission request: rules 1-6
/// of the module documentation for ClusterObjectSet CREATEs and UPDATEs,
/// acceptance for anything else.
pub fn validate(request: &AdmissionRequest, settings: &Settings, cluster: &dyn Cluster) -> Verdict {
    if !request.targets(GROUP, KIND) {
        return Verdict::accept();
    }
    match request.operation {
        Operation::Create | Operation::Update => validate_write(request, settings, cluster),
        Operation::Delete | Operation::Connect => Verdict::accept(),
    }
}

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

    // Rule 1: a revision, when there is one, is a whole number >= 1.
    let revision = match cos.revision() {
        Ok(revision) => revision,
        Err(problem) => return Verdict::deny(format!("spec.revision {problem}")),
    };
    let creating = request.operation == Operation::Create;

    // Rule 2.
    if !creating && let Some(denial) = changed_revision(request, revision) {
        return denial;
    }

    // Rule 1: no revision, unless rule 5 fills it.
    let fill = revision.is_none();
    if fill && !(creating && settings.auto_increment_revision) {
        return Verdict::deny(messages::missing_revision(creating));
    }

    // An UPDATE that keeps its (group, revision) creates no new violation.
    if let (false, Some(revision)) = (creating, revision)
        && slot::keeps_its_slot(request, &cos, revision)
    {
        return slot::unchanged_slot(&cos, settings, cluster, revision);
    }

    // Rule 3.
    let Some(group) = cos.group() else {
        return ungrouped(&cos, settings, fill);
    };

    // Rule 6, for a revision the request names.
    if let (true, Some(revision)) = (settings.require_name_suffix, revision)
        && let Some(denial) = messages::misnamed_denial(&cos, group, revision, creating)
    {
        return denial;
    }

    // Rule 4's one list and one pass.
    let siblings = match siblings(cluster, group, settings) {
        Ok(siblings) => siblings,
        Err(error) => return Verdict::context_unavailable(&messages::list_what(group), error),
    };
    let survey = GroupSurvey::of(&siblings, cos.name(), revision);

    // Rule 5 (and rule 6 on the number it assigns).
    let Some(revision) = revision else {
        return numbering::number_automatically(request, &cos, settings, group, &survey);
    };

    // Rule 4.
    match survey.clash {
        Some(clash) => {
            let updated = (!creating).then(|| cos.name());
            Verdict::deny(messages::clash(group, revision, clash, &survey, updated))
        }
        None => Verdict::accept(),
    }
}

/// Rule 2. An old object without a valid revision imposes nothing: there
/// is no number to keep (the CRD requires one, so only objects written
/// before it can lack it).
fn changed_revision(request: &AdmissionRequest, revision: Option<i64>) -> Option<Verdict> {
    let old = request
        .old_object
        .pointer("/spec/revision")
        .unwrap_or(&Value::Null);
    let old = revision_of(old).ok().flatten()?;
    match revision {
        Some(new) if new == old => None,
        Some(new) => Some(Verdict::deny(messages::revision_changed(old, new))),
        None => Some(Verdict::deny(messages::revision_removed(old))),
    }
}

/// An object in no group has no siblings, so it cannot clash; only the
/// settings that need a group have something to say.
fn ungrouped(cos: &ClusterObjectSet, settings: &Settings, fill: bool) -> Verdict {
    if fill {
        return Verdict::deny(messages::cannot_number_ungrouped(cos));
    }
    if settings.require_name_suffix {
        return Verdict::deny(messages::cannot_name_ungrouped(cos));
    }
    Verdict::accept()
}
