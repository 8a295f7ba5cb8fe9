//! Rule 5: numbering a new revision (setting `autoIncrementRevision`).

use olm_guard_core::{AdmissionRequest, Verdict};
use olm_guard_olm::cluster_object_set::{ClusterObjectSet, with_spec_field};
use serde_json::Value;

use super::Settings;
use super::messages;
use super::survey::GroupSurvey;

/// Rule 5, after the list: the next number of the group, then rule 6 on it.
pub(super) fn number_automatically(
    request: &AdmissionRequest,
    cos: &ClusterObjectSet,
    settings: &Settings,
    group: &str,
    survey: &GroupSurvey<'_>,
) -> Verdict {
    let (revision, reason) = match survey.highest {
        None => (1, format!("the first revision of group \"{group}\"")),
        Some(highest) => match highest.checked_add(1) {
            Some(next) => (
                next,
                format!("the highest revision of group \"{group}\" is {highest}"),
            ),
            None => return Verdict::deny(messages::no_number_left(group, highest)),
        },
    };
    if settings.require_name_suffix
        && let Some(denial) = messages::misnamed_denial(cos, group, revision, true)
    {
        return denial;
    }
    match with_spec_field(&request.object, "revision", Value::from(revision)) {
        Some(object) => Verdict::mutate(object).with_warning(format!(
            "spec.revision was set to {revision}: {reason} (setting autoIncrementRevision)"
        )),
        // from_object accepted the object, so it and its spec are maps.
        None => Verdict::bad_request("cannot set spec.revision: spec is not a map of fields"),
    }
}
