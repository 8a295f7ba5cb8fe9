//! revision-uniqueness: one ClusterObjectSet per (group, revision).
//!
//! boxcutter yields an object only to a higher revision (domain.md §2.5), so
//! two revisions with the same number in one group both claim the same
//! objects forever: an endless server-side-apply fight (seed 000). Nothing
//! upstream prevents it; this policy does.
//!
//! Contract rules (contracts.md, revision-uniqueness):
//! 1. `spec.revision` is a JSON integer >= 1, unless rule 5 fills it.
//! 2. UPDATE: `spec.revision` cannot change.
//! 3. The group of a ClusterObjectSet is `spec.group`, else its owner-name
//!    label ([`ClusterObjectSet::group`]).
//! 4. No other ClusterObjectSet (any lifecycleState) has the same group and
//!    revision: one list of all ClusterObjectSets, one pass over it.
//! 5. `autoIncrementRevision`: a CREATE without `spec.revision` gets the
//!    group's highest revision + 1 (1 for a new group).
//! 6. `requireNameSuffix`: `metadata.name` is `<group>-<revision>`, so the
//!    API server's name uniqueness settles races the list in 4 cannot see.
//!
//! An UPDATE is judged by what it changes: rules 4 and 6 deny it only when
//! it gives the object another (group, revision) than the stored one (a
//! label edit, a group set on an ungrouped object). An object that already
//! breaks them keeps its pair and is accepted with a warning, so that
//! controllers can still archive it and remove its finalizers, and users can
//! repair or replace it.

use olm_guard_core::protocol::ListAllResourcesRequest;
use olm_guard_core::{
    AdmissionRequest, Cluster, ClusterExt, ContextError, Operation, PolicySettings, Verdict,
};
use olm_guard_olm::cluster_object_set::{
    API_VERSION, ClusterObjectSet, GROUP, KIND, OWNER_NAME_LABEL, SpecGroup, revision_of,
    with_spec_field,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// Seed 000's optional mutating webhook: number a new revision from the
    /// cluster instead of making every client compute max + 1.
    pub auto_increment_revision: bool,
    /// Names as `<group>-<revision>`, as operator-controller already names
    /// the revisions of a ClusterExtension (`<extension>-<N>`).
    pub require_name_suffix: bool,
}

impl PolicySettings for Settings {}

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
    let cos = match ClusterObjectSet::from_object(&request.object) {
        Ok(cos) => cos,
        Err(problem) => {
            return Verdict::bad_request(format!("cannot read the ClusterObjectSet: {problem}"));
        }
    };
    let revision = match cos.revision() {
        Ok(revision) => revision,
        Err(problem) => return Verdict::deny(format!("spec.revision {problem}")),
    };
    let creating = request.operation == Operation::Create;
    if !creating && let Some(denial) = changed_revision(request, revision) {
        return denial;
    }
    let fill = revision.is_none();
    if fill && !(creating && settings.auto_increment_revision) {
        return Verdict::deny(missing_revision_message(creating));
    }

    if let (false, Some(revision)) = (creating, revision)
        && keeps_its_slot(request, &cos, revision)
    {
        return unchanged_slot(&cos, settings, cluster, revision);
    }

    let Some(group) = cos.group() else {
        return ungrouped(&cos, settings, fill);
    };
    if let (true, Some(revision)) = (settings.require_name_suffix, revision)
        && let Some(denial) = misnamed(&cos, group, revision, creating)
    {
        return denial;
    }

    let others = match list_all(cluster) {
        Ok(others) => others,
        Err(error) => return Verdict::context_unavailable(&list_what(group), error),
    };
    let survey = GroupSurvey::of(&others, group, cos.name(), revision);

    let Some(revision) = revision else {
        return number_automatically(request, &cos, settings, group, &survey);
    };
    match survey.clash {
        Some(clash) => {
            let updated = (!creating).then(|| cos.name());
            Verdict::deny(clash_message(group, revision, clash, &survey, updated))
        }
        None => Verdict::accept(),
    }
}

/// Rule 4's one list of every ClusterObjectSet.
fn list_all(cluster: &dyn Cluster) -> Result<Vec<ClusterObjectSet>, ContextError> {
    cluster.list_all_as(&ListAllResourcesRequest::new(API_VERSION, KIND))
}

fn list_what(group: &str) -> String {
    format!(
        "the ClusterObjectSets ({API_VERSION}) of the cluster, to compare revisions of group \
         \"{group}\" (kubernetes/list_resources_all)"
    )
}

/// Whether an UPDATE leaves the object in the (group, revision) slot the
/// stored object already had. An old object that cannot be read proves
/// nothing, so the update is then checked like any other.
fn keeps_its_slot(request: &AdmissionRequest, cos: &ClusterObjectSet, revision: i64) -> bool {
    let Ok(old) = ClusterObjectSet::from_object(&request.old_object) else {
        return false;
    };
    old.revision() == Ok(Some(revision)) && old.group() == cos.group()
}

/// An UPDATE that keeps its slot creates no duplicate and no new misnamed
/// revision, so rules 4 and 6 only warn about what the object already was:
/// denying would stop controllers from archiving it or removing its
/// finalizers, and users from repairing it. The list serves the warning
/// only, so a failed list does not deny either.
fn unchanged_slot(
    cos: &ClusterObjectSet,
    settings: &Settings,
    cluster: &dyn Cluster,
    revision: i64,
) -> Verdict {
    const KEPT: &str = "the update is allowed because it changes neither the group nor the \
                        revision of this existing ClusterObjectSet";
    let Some(group) = cos.group() else {
        if !settings.require_name_suffix {
            return Verdict::accept();
        }
        let why = ungrouped_reason(cos);
        return Verdict::accept().with_warning(format!(
            "metadata.name should be <group>-<revision> (setting requireNameSuffix), but this \
             ClusterObjectSet is in no revision group ({why} {OWNER_NAME_LABEL}); {KEPT}. New \
             revisions need spec.group and the name <group>-<revision>; names cannot change, so \
             replace this one by a ClusterObjectSet created with both"
        ));
    };

    let mut warnings = Vec::new();
    if settings.require_name_suffix
        && let Some(name) = NameProblem::of(cos, group, revision)
    {
        warnings.push(format!(
            "metadata.name should be \"{}\" (<group>-<revision>, setting requireNameSuffix) but \
             {}; {KEPT}. Names cannot change: to comply, delete this ClusterObjectSet and create \
             it again as \"{}\"",
            name.expected, name.found, name.expected
        ));
    }
    match list_all(cluster) {
        Ok(others) => {
            if let Some(clash) = GroupSurvey::of(&others, group, cos.name(), Some(revision)).clash {
                warnings.push(format!(
                    "spec.revision {revision} of group \"{group}\" is also used by \
                     ClusterObjectSet \"{}\"{}: two revisions with one number fight over the same \
                     objects without end; {KEPT}. Revisions cannot change, so delete one of the \
                     two ClusterObjectSets (\"{}\" or \"{}\")",
                    clash.name(),
                    holder_details(clash),
                    cos.name(),
                    clash.name()
                ));
            }
        }
        Err(error) => warnings.push(format!(
            "could not check whether revision {revision} of group \"{group}\" is used by another \
             ClusterObjectSet: looking up {} failed ({error}); {KEPT}",
            list_what(group)
        )),
    }
    Verdict::accept().with_warnings(warnings)
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
        Some(new) => Some(Verdict::deny(format!(
            "spec.revision is immutable: this ClusterObjectSet is revision {old} and the update \
             would make it {new}; keep spec.revision: {old}, and create a new ClusterObjectSet \
             for revision {new}"
        ))),
        None => Some(Verdict::deny(format!(
            "spec.revision is immutable: this ClusterObjectSet is revision {old} and the update \
             removes it; keep spec.revision: {old}"
        ))),
    }
}

fn missing_revision_message(creating: bool) -> String {
    let setting = if creating {
        " (or enable the setting autoIncrementRevision to have it numbered on creation)"
    } else {
        ""
    };
    format!(
        "spec.revision is required: set spec.revision to the group's highest revision + 1, or 1 \
         for the first revision of a group{setting}"
    )
}

/// An object in no group has no siblings, so it cannot clash; only the
/// settings that need a group have something to say.
fn ungrouped(cos: &ClusterObjectSet, settings: &Settings, fill: bool) -> Verdict {
    let why = ungrouped_reason(cos);
    if fill {
        return Verdict::deny(format!(
            "spec.revision is required: it cannot be numbered automatically because this \
             ClusterObjectSet is in no revision group ({why} {OWNER_NAME_LABEL}); set spec.group, \
             or set spec.revision yourself"
        ));
    }
    if settings.require_name_suffix {
        return Verdict::deny(format!(
            "metadata.name must be <group>-<revision> (setting requireNameSuffix), but this \
             ClusterObjectSet is in no revision group ({why} {OWNER_NAME_LABEL}); set spec.group"
        ));
    }
    Verdict::accept()
}

/// Why [`ClusterObjectSet::group`] found none; the label's name follows.
fn ungrouped_reason(cos: &ClusterObjectSet) -> &'static str {
    match cos.spec_group() {
        SpecGroup::Invalid(_) => "spec.group is not a string and there is no label",
        _ => "it has neither spec.group nor the label",
    }
}

/// A name that is not `<group>-<revision>`: what it should be, and what
/// was found instead (`it is "x"`).
struct NameProblem {
    expected: String,
    found: String,
}

impl NameProblem {
    fn of(cos: &ClusterObjectSet, group: &str, revision: i64) -> Option<NameProblem> {
        let expected = format!("{group}-{revision}");
        if cos.name() == expected {
            return None;
        }
        let found = if cos.name().is_empty() && !cos.metadata.generate_name.is_empty() {
            format!(
                "it is empty and generateName \"{}\" cannot produce it",
                cos.metadata.generate_name
            )
        } else {
            format!("it is \"{}\"", cos.name())
        };
        Some(NameProblem { expected, found })
    }
}

/// Rule 6. Holds for an UPDATE that changes the (group, revision) too: a
/// label edit can move a label-only object into another group, and the name
/// then no longer proves uniqueness.
fn misnamed(cos: &ClusterObjectSet, group: &str, revision: i64, creating: bool) -> Option<Verdict> {
    let NameProblem { expected, found } = NameProblem::of(cos, group, revision)?;
    let fix = if creating {
        format!("name it \"{expected}\"")
    } else {
        format!(
            "names cannot change, so delete this ClusterObjectSet and create it again as \
             \"{expected}\""
        )
    };
    Some(Verdict::deny(format!(
        "metadata.name must be \"{expected}\" (<group>-<revision>, setting requireNameSuffix) but \
         {found}: {fix}; the API server then refuses a second revision {revision} of group \
         \"{group}\" even when two creates race"
    )))
}

/// Rule 5, after the list: the next number of the group, then rule 6 on it.
fn number_automatically(
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
            None => {
                return Verdict::deny(format!(
                    "spec.revision cannot be numbered automatically: group \"{group}\" already \
                     has the largest possible revision ({highest}); start a new group"
                ));
            }
        },
    };
    if settings.require_name_suffix
        && let Some(denial) = misnamed(cos, group, revision, true)
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

/// What one pass over the cluster's ClusterObjectSets says about a group:
/// its highest valid revision and, for a given revision, the object that
/// already has it. Linear, so a cluster with many revisions stays cheap.
struct GroupSurvey<'a> {
    highest: Option<i64>,
    /// Among several, the one with the smallest name, so the message does
    /// not depend on list order.
    clash: Option<&'a ClusterObjectSet>,
}

impl<'a> GroupSurvey<'a> {
    fn of(
        objects: &'a [ClusterObjectSet],
        group: &str,
        own_name: &str,
        revision: Option<i64>,
    ) -> GroupSurvey<'a> {
        let mut survey = GroupSurvey {
            highest: None,
            clash: None,
        };
        let siblings = objects
            .iter()
            .filter(|other| other.name() != own_name && other.group() == Some(group));
        for other in siblings {
            // A sibling with an unreadable revision cannot clash or be
            // counted on; the API server's schema keeps these out anyway.
            let Ok(Some(theirs)) = other.revision() else {
                continue;
            };
            survey.highest = survey.highest.max(Some(theirs));
            let first_clash = survey.clash.is_none_or(|c| other.name() < c.name());
            if revision == Some(theirs) && first_clash {
                survey.clash = Some(other);
            }
        }
        survey
    }
}

fn clash_message(
    group: &str,
    revision: i64,
    clash: &ClusterObjectSet,
    survey: &GroupSurvey<'_>,
    updated: Option<&str>,
) -> String {
    let fix = match (updated, survey.highest.and_then(|h| h.checked_add(1))) {
        (None, Some(next)) => format!("use spec.revision: {next}, the next free revision"),
        (None, None) => "start a new group".to_string(),
        (Some(own), _) => format!(
            "revisions cannot change, so delete one of the two ClusterObjectSets \
             (\"{own}\" or \"{}\")",
            clash.name()
        ),
    };
    format!(
        "spec.revision {revision} is already used in group \"{group}\" by ClusterObjectSet \
         \"{}\"{}: two revisions with one number fight over the same objects without end; {fix}",
        clash.name(),
        holder_details(clash)
    )
}

/// `, lifecycleState Archived, grouped by its label ...` for the object that
/// holds a slot; empty parts are left out.
fn holder_details(holder: &ClusterObjectSet) -> String {
    let state = match holder.lifecycle_state() {
        "" => String::new(),
        state => format!(", lifecycleState {state}"),
    };
    let via_label = match holder.spec_group() {
        SpecGroup::Name(_) => String::new(),
        _ => format!(", grouped by its label {OWNER_NAME_LABEL}"),
    };
    format!("{state}{via_label}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Probe, admission_request, assert_denied, has_warning};
    use olm_guard_core::NoCluster;
    use olm_guard_snapshot::Snapshot;
    use serde_json::json;

    fn cos(name: &str, spec: Value, labels: Value) -> Value {
        json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterObjectSet",
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
        })
    }

    /// `<group>-<revision>` in group `group`, as `spec.group`.
    fn grouped(group: &str, revision: Value, state: &str) -> Value {
        let name = format!("{group}-{revision}");
        cos(
            &name,
            json!({"group": group, "revision": revision, "lifecycleState": state,
                   "collisionProtection": "Prevent"}),
            json!({}),
        )
    }

    /// A revision created before `spec.group`: grouped by the label only.
    fn labelled(name: &str, extension: &str, revision: i64, state: &str) -> Value {
        cos(
            name,
            json!({"revision": revision, "lifecycleState": state}),
            json!({OWNER_NAME_LABEL: extension, "olm.operatorframework.io/owner-kind": "ClusterExtension"}),
        )
    }

    fn cluster() -> Snapshot {
        Snapshot::from_objects(vec![
            grouped("widget", json!(1), "Archived"),
            grouped("widget", json!(2), "Archived"),
            grouped("widget", json!(3), "Active"),
            labelled("argocd-operator-1", "argocd-operator", 1, "Archived"),
            labelled("argocd-operator-2", "argocd-operator", 2, "Active"),
            grouped("gadget", json!(1), "Active"),
        ])
    }

    fn request(operation: &str, object: Value, old_object: Value) -> AdmissionRequest {
        admission_request(
            ["olm.operatorframework.io", "v1", "ClusterObjectSet"],
            "clusterobjectsets",
            json!({
                "operation": operation,
                "userInfo": {"username": "system:serviceaccount:olmv1-system:operator-controller-controller-manager"},
                "object": object,
                "oldObject": old_object,
            }),
        )
    }

    fn create(object: Value) -> AdmissionRequest {
        request("CREATE", object, Value::Null)
    }

    fn run(request: &AdmissionRequest) -> Verdict {
        validate(request, &Settings::default(), &cluster())
    }

    fn with(auto: bool, suffix: bool) -> Settings {
        Settings {
            auto_increment_revision: auto,
            require_name_suffix: suffix,
        }
    }

    #[test]
    fn other_kinds_subresources_and_deletes_are_not_looked_at() {
        let mut other = create(json!({"spec": {"revision": "x"}}));
        other.kind.kind = "ClusterExtension".into();
        assert!(validate(&other, &Settings::default(), &NoCluster).allowed);

        let mut status = create(grouped("widget", json!(3), "Active"));
        status.sub_resource = Some("status".into());
        assert!(validate(&status, &Settings::default(), &NoCluster).allowed);

        let delete = request("DELETE", Value::Null, grouped("widget", json!(3), "Active"));
        assert!(validate(&delete, &Settings::default(), &NoCluster).allowed);
    }

    #[test]
    fn rule1_revision_must_be_an_integer_of_at_least_one() {
        for (value, expected) in [
            (
                json!("4"),
                "is the string \"4\"; write it as a number without quotes: revision: 4",
            ),
            (json!(4.0), "write the whole number 4 instead"),
            (json!(4.5), "4.5, which is not a whole number"),
            (json!(0), "is 0; revisions start at 1"),
            (json!(-2), "is -2; revisions start at 1"),
            (json!(true), "is true"),
            (json!({"n": 4}), "is a map"),
        ] {
            let verdict = validate(
                &create(grouped("widget", value, "Active")),
                &Settings::default(),
                &NoCluster,
            );
            assert_denied(&verdict, &["spec.revision", expected]);
            assert_eq!(verdict.code, Some(403));
        }
    }

    #[test]
    fn rule1_a_missing_revision_is_denied_without_the_setting() {
        let missing = cos("widget-4", json!({"group": "widget"}), json!({}));
        let verdict = validate(&create(missing.clone()), &Settings::default(), &NoCluster);
        assert_denied(
            &verdict,
            &["spec.revision is required", "autoIncrementRevision"],
        );

        let null = cos(
            "widget-4",
            json!({"group": "widget", "revision": null}),
            json!({}),
        );
        assert_denied(&run(&create(null)), &["spec.revision is required"]);

        // autoIncrementRevision numbers creations only.
        let verdict = validate(
            &request("UPDATE", missing.clone(), missing),
            &with(true, false),
            &NoCluster,
        );
        assert_denied(&verdict, &["spec.revision is required"]);
    }

    #[test]
    fn unreadable_objects_are_bad_requests() {
        let verdict = run(&create(json!({"metadata": "x"})));
        assert_denied(&verdict, &["metadata is a string"]);
        assert_eq!(verdict.code, Some(400));
    }

    #[test]
    fn rule2_the_revision_cannot_change() {
        let old = grouped("widget", json!(3), "Active");
        let mut new = old.clone();
        new["spec"]["revision"] = json!(4);
        let verdict = run(&request("UPDATE", new, old.clone()));
        assert_denied(
            &verdict,
            &["spec.revision is immutable", "revision 3", "make it 4"],
        );

        let mut removed = old.clone();
        removed["spec"]["revision"] = Value::Null;
        let verdict = run(&request("UPDATE", removed, old.clone()));
        assert_denied(
            &verdict,
            &[
                "spec.revision is immutable",
                "removes it",
                "keep spec.revision: 3",
            ],
        );

        let mut archived = old.clone();
        archived["spec"]["lifecycleState"] = json!("Archived");
        let verdict = run(&request("UPDATE", archived, old));
        assert!(verdict.allowed, "{verdict:?}");
    }

    #[test]
    fn rule2_an_old_object_without_a_revision_imposes_nothing() {
        let old = cos("widget-9", json!({"group": "widget"}), json!({}));
        let verdict = run(&request(
            "UPDATE",
            grouped("widget", json!(9), "Active"),
            old,
        ));
        assert!(verdict.allowed, "{verdict:?}");
    }

    #[test]
    fn rule3_label_only_objects_count_in_their_group() {
        // A new object using spec.group clashes with a label-only one.
        let again = cos(
            "argocd-operator-two",
            json!({"group": "argocd-operator", "revision": 2}),
            json!({}),
        );
        let verdict = run(&create(again));
        assert_denied(
            &verdict,
            &[
                "\"argocd-operator-2\"",
                "grouped by its label",
                "use spec.revision: 3",
            ],
        );
        // And a label-only new object clashes with a spec.group one.
        let legacy = labelled("widget-rev2", "widget", 2, "Active");
        assert_denied(&run(&create(legacy)), &["\"widget-2\""]);
        // spec.group wins over the label.
        let both = cos(
            "gadget-2",
            json!({"group": "gadget", "revision": 2}),
            json!({OWNER_NAME_LABEL: "widget"}),
        );
        assert!(run(&create(both)).allowed);
    }

    #[test]
    fn rule4_duplicates_are_denied_whatever_the_lifecycle_state() {
        let verdict = run(&create(cos(
            "widget-again",
            json!({"group": "widget", "revision": 1}),
            json!({}),
        )));
        assert_denied(
            &verdict,
            &[
                "spec.revision 1 is already used in group \"widget\"",
                "\"widget-1\"",
                "lifecycleState Archived",
                "use spec.revision: 4",
            ],
        );
        assert_denied(
            &run(&create(cos(
                "w",
                json!({"group": "widget", "revision": 3}),
                json!({}),
            ))),
            &["\"widget-3\"", "lifecycleState Active"],
        );
    }

    #[test]
    fn rule4_new_revisions_and_other_groups_pass() {
        assert!(run(&create(grouped("widget", json!(4), "Active"))).allowed);
        assert!(run(&create(grouped("widget", json!(7), "Active"))).allowed);
        assert!(run(&create(grouped("gadget", json!(3), "Active"))).allowed);
        assert!(run(&create(grouped("new-group", json!(1), "Active"))).allowed);
    }

    #[test]
    fn rule4_the_object_itself_is_no_duplicate() {
        let own = grouped("widget", json!(3), "Active");
        let verdict = run(&request("UPDATE", own.clone(), own));
        assert!(verdict.allowed, "{verdict:?}");
    }

    #[test]
    fn rule4_an_update_into_a_taken_slot_is_denied() {
        // A label edit moves a label-only revision into group "widget".
        let old = labelled("stray-2", "stray", 2, "Active");
        let new = labelled("stray-2", "widget", 2, "Active");
        let verdict = run(&request("UPDATE", new, old));
        assert_denied(&verdict, &["\"widget-2\"", "delete one of the two"]);
    }

    #[test]
    fn rule4_lists_once_and_fails_closed() {
        let snapshot = cluster();
        let counting = Probe::new(&snapshot);
        validate(
            &create(grouped("widget", json!(4), "Active")),
            &with(false, true),
            &counting,
        );
        let lists = counting.list_all_requests.borrow();
        assert_eq!(lists.len(), 1);
        assert_eq!(
            lists[0],
            ListAllResourcesRequest::new("olm.operatorframework.io/v1", "ClusterObjectSet")
        );

        let verdict = validate(
            &create(grouped("widget", json!(4), "Active")),
            &Settings::default(),
            &NoCluster,
        );
        assert_denied(&verdict, &["ClusterObjectSets", "fails closed"]);
        assert_eq!(verdict.code, Some(500));
    }

    #[test]
    fn ungrouped_objects_have_no_siblings() {
        // The upstream sample has neither spec.group nor the label.
        let sample = cos(
            "my-app-rev1",
            json!({"revision": 1, "lifecycleState": "Active"}),
            json!({}),
        );
        assert!(validate(&create(sample.clone()), &Settings::default(), &NoCluster).allowed);
        let verdict = validate(&create(sample), &with(false, true), &NoCluster);
        assert_denied(
            &verdict,
            &["requireNameSuffix", "no revision group", "set spec.group"],
        );
        let unnumbered = cos("x", json!({"lifecycleState": "Active"}), json!({}));
        let verdict = validate(&create(unnumbered), &with(true, false), &NoCluster);
        assert_denied(
            &verdict,
            &["cannot be numbered automatically", "set spec.group"],
        );
    }

    #[test]
    fn rule5_numbers_after_the_highest_revision_of_the_group() {
        let new = cos(
            "widget-next",
            json!({"group": "widget", "lifecycleState": "Active"}),
            json!({}),
        );
        let verdict = validate(&create(new.clone()), &with(true, false), &cluster());
        assert!(verdict.allowed, "{verdict:?}");
        let mut expected = new;
        expected["spec"]["revision"] = json!(4);
        assert_eq!(verdict.mutated_object, Some(expected));
        assert!(
            verdict
                .warnings
                .iter()
                .any(|w| w.contains("highest revision of group \"widget\" is 3"))
        );

        let legacy = labelled("argocd-operator-next", "argocd-operator", 1, "Active");
        let mut legacy_unnumbered = legacy.clone();
        legacy_unnumbered["spec"]["revision"] = Value::Null;
        let verdict = validate(&create(legacy_unnumbered), &with(true, false), &cluster());
        assert_eq!(
            verdict
                .mutated_object
                .as_ref()
                .and_then(|o| o.pointer("/spec/revision")),
            Some(&json!(3))
        );
    }

    #[test]
    fn rule5_a_new_group_starts_at_one_even_without_a_spec() {
        let new = cos("fresh", Value::Null, json!({OWNER_NAME_LABEL: "fresh"}));
        let verdict = validate(&create(new), &with(true, false), &cluster());
        assert_eq!(
            verdict.mutated_object.as_ref().and_then(|o| o.get("spec")),
            Some(&json!({"revision": 1}))
        );
        assert!(
            verdict
                .warnings
                .iter()
                .any(|w| w.contains("first revision of group \"fresh\""))
        );
    }

    #[test]
    fn rule5_leaves_numbered_objects_alone() {
        let verdict = validate(
            &create(grouped("widget", json!(4), "Active")),
            &with(true, false),
            &cluster(),
        );
        assert!(
            verdict.allowed && verdict.mutated_object.is_none(),
            "{verdict:?}"
        );
    }

    #[test]
    fn rule5_refuses_to_overflow() {
        let full = Snapshot::from_objects(vec![grouped("full", json!(i64::MAX), "Active")]);
        let new = cos("full-next", json!({"group": "full"}), json!({}));
        let verdict = validate(&create(new), &with(true, false), &full);
        assert_denied(&verdict, &["largest possible revision"]);
    }

    #[test]
    fn rule6_names_must_be_group_dash_revision() {
        let settings = with(false, true);
        let good = grouped("widget", json!(4), "Active");
        assert!(validate(&create(good), &settings, &cluster()).allowed);

        let bad = cos(
            "widget-rev4",
            json!({"group": "widget", "revision": 4}),
            json!({}),
        );
        let verdict = validate(&create(bad.clone()), &settings, &NoCluster);
        assert_denied(
            &verdict,
            &[
                "metadata.name must be \"widget-4\"",
                "it is \"widget-rev4\"",
                "name it \"widget-4\"",
            ],
        );
        assert!(validate(&create(bad), &Settings::default(), &cluster()).allowed);

        let generated = json!({"metadata": {"generateName": "widget-"},
                               "spec": {"group": "widget", "revision": 4}});
        let verdict = validate(&create(generated), &settings, &NoCluster);
        assert_denied(&verdict, &["generateName \"widget-\""]);
    }

    #[test]
    fn rule6_on_update_explains_that_names_are_fixed() {
        let old = labelled("widget-rev9", "old-group", 9, "Active");
        let new = labelled("widget-rev9", "widget-x", 9, "Active");
        let verdict = validate(&request("UPDATE", new, old), &with(false, true), &cluster());
        assert_denied(
            &verdict,
            &[
                "\"widget-x-9\"",
                "delete this ClusterObjectSet and create it again",
            ],
        );
    }

    #[test]
    fn rule6_with_rule5_checks_the_name_against_the_new_number() {
        let settings = with(true, true);
        let right = cos("widget-4", json!({"group": "widget"}), json!({}));
        let verdict = validate(&create(right), &settings, &cluster());
        assert!(
            verdict.allowed && verdict.mutated_object.is_some(),
            "{verdict:?}"
        );

        let stale = cos("widget-7", json!({"group": "widget"}), json!({}));
        let verdict = validate(&create(stale), &settings, &cluster());
        assert_denied(&verdict, &["metadata.name must be \"widget-4\""]);
    }

    /// An update that moves nothing: the stored object with a new
    /// lifecycleState, as operator-controller archives revisions.
    fn archive(object: &Value) -> AdmissionRequest {
        let mut archived = object.clone();
        archived["spec"]["lifecycleState"] = json!("Archived");
        request("UPDATE", archived, object.clone())
    }

    #[test]
    fn update_keeping_its_slot_is_allowed_and_warns_about_an_existing_duplicate() {
        // Two revisions 3 of "widget" stored before the policy was installed.
        let duplicate = cos(
            "widget-3-dup",
            json!({"group": "widget", "revision": 3, "lifecycleState": "Active"}),
            json!({}),
        );
        let mut objects = vec![duplicate.clone()];
        for revision in 1..=3 {
            objects.push(grouped("widget", json!(revision), "Active"));
        }
        let with_duplicate = Snapshot::from_objects(objects);

        let verdict = validate(&archive(&duplicate), &Settings::default(), &with_duplicate);
        assert!(verdict.allowed, "{verdict:?}");
        assert_eq!(verdict.mutated_object, None);
        assert!(
            has_warning(
                &verdict,
                &[
                    "spec.revision 3 of group \"widget\" is also used by ClusterObjectSet \
                     \"widget-3\", lifecycleState Active:",
                    "changes neither the group nor the revision",
                    "delete one of the two ClusterObjectSets (\"widget-3-dup\" or \"widget-3\")",
                ]
            ),
            "{verdict:?}"
        );
        assert_eq!(verdict.warnings.len(), 1, "{verdict:?}");

        // The other holder of the slot is told the same.
        let own = grouped("widget", json!(3), "Active");
        let verdict = validate(&archive(&own), &Settings::default(), &with_duplicate);
        assert!(verdict.allowed, "{verdict:?}");
        assert!(has_warning(
            &verdict,
            &["also used by ClusterObjectSet \"widget-3-dup\""]
        ));

        // A CREATE into the slot is still denied.
        let third = cos(
            "widget-3-again",
            json!({"group": "widget", "revision": 3}),
            json!({}),
        );
        let verdict = validate(&create(third), &Settings::default(), &with_duplicate);
        assert_denied(&verdict, &["spec.revision 3 is already used"]);
    }

    #[test]
    fn update_keeping_its_slot_warns_about_a_label_only_duplicate() {
        // A label-only stray that shares argocd-operator's revision 2.
        let stray = labelled("argocd-operator-2-copy", "argocd-operator", 2, "Archived");
        let mut objects = vec![stray.clone()];
        objects.push(labelled(
            "argocd-operator-2",
            "argocd-operator",
            2,
            "Active",
        ));
        let verdict = validate(
            &archive(&stray),
            &Settings::default(),
            &Snapshot::from_objects(objects),
        );
        assert!(verdict.allowed, "{verdict:?}");
        assert!(has_warning(
            &verdict,
            &[
                "also used by ClusterObjectSet \"argocd-operator-2\", lifecycleState Active, grouped by its label"
            ]
        ));
    }

    #[test]
    fn update_keeping_its_slot_is_allowed_and_warns_about_an_existing_misnamed_revision() {
        let misnamed = cos(
            "widget-rev9",
            json!({"group": "widget", "revision": 9, "lifecycleState": "Active"}),
            json!({}),
        );
        let verdict = validate(&archive(&misnamed), &with(false, true), &cluster());
        assert!(verdict.allowed, "{verdict:?}");
        assert!(
            has_warning(
                &verdict,
                &[
                    "metadata.name should be \"widget-9\" (<group>-<revision>, setting \
                     requireNameSuffix) but it is \"widget-rev9\"",
                    "changes neither the group nor the revision",
                    "create it again as \"widget-9\"",
                ]
            ),
            "{verdict:?}"
        );
        assert_eq!(verdict.warnings.len(), 1, "{verdict:?}");
        // Without the setting the name is nobody's business.
        let verdict = run(&archive(&misnamed));
        assert!(
            verdict.allowed && verdict.warnings.is_empty(),
            "{verdict:?}"
        );
        // A CREATE with that name is still denied.
        let verdict = validate(&create(misnamed), &with(false, true), &cluster());
        assert_denied(&verdict, &["metadata.name must be \"widget-9\""]);
    }

    #[test]
    fn update_keeping_its_slot_can_carry_both_warnings() {
        let misnamed_duplicate = cos(
            "widget-three",
            json!({"group": "widget", "revision": 3, "lifecycleState": "Active"}),
            json!({}),
        );
        let verdict = validate(&archive(&misnamed_duplicate), &with(true, true), &cluster());
        assert!(verdict.allowed, "{verdict:?}");
        assert_eq!(verdict.mutated_object, None);
        assert!(has_warning(
            &verdict,
            &["metadata.name should be \"widget-3\""]
        ));
        assert!(has_warning(
            &verdict,
            &["also used by ClusterObjectSet \"widget-3\", lifecycleState Active"]
        ));
        assert_eq!(verdict.warnings.len(), 2, "{verdict:?}");
    }

    #[test]
    fn update_of_an_ungrouped_object_keeps_working_with_the_name_setting() {
        let sample = cos(
            "my-app-rev1",
            json!({"revision": 1, "lifecycleState": "Active"}),
            json!({}),
        );
        let verdict = validate(&archive(&sample), &with(false, true), &NoCluster);
        assert!(verdict.allowed, "{verdict:?}");
        assert!(
            has_warning(
                &verdict,
                &[
                    "setting requireNameSuffix",
                    "in no revision group",
                    "changes neither the group nor the revision",
                    "spec.group",
                ]
            ),
            "{verdict:?}"
        );
        let verdict = validate(&archive(&sample), &Settings::default(), &NoCluster);
        assert!(
            verdict.allowed && verdict.warnings.is_empty(),
            "{verdict:?}"
        );
    }

    #[test]
    fn update_keeping_its_slot_is_not_denied_when_the_list_fails() {
        // The list only feeds a warning here, so it cannot brick the object.
        let own = grouped("widget", json!(3), "Active");
        let verdict = validate(&archive(&own), &Settings::default(), &NoCluster);
        assert!(verdict.allowed, "{verdict:?}");
        assert!(
            has_warning(
                &verdict,
                &[
                    "could not check whether revision 3 of group \"widget\"",
                    "kubernetes/list_resources_all",
                ]
            ),
            "{verdict:?}"
        );
    }

    #[test]
    fn a_clean_update_has_no_warnings() {
        let own = grouped("widget", json!(3), "Active");
        let verdict = validate(&archive(&own), &with(true, true), &cluster());
        assert!(
            verdict.allowed && verdict.warnings.is_empty() && verdict.mutated_object.is_none(),
            "{verdict:?}"
        );
        let legacy = labelled("argocd-operator-2", "argocd-operator", 2, "Active");
        let verdict = validate(&archive(&legacy), &with(false, true), &cluster());
        assert!(
            verdict.allowed && verdict.warnings.is_empty(),
            "{verdict:?}"
        );
    }

    #[test]
    fn backfilling_spec_group_from_the_label_keeps_the_slot() {
        // group-authorization's backfill writes the label into spec.group:
        // the effective group (rule 3) stays the same, so nothing is re-judged.
        let old = labelled("argocd-operator-2", "argocd-operator", 2, "Active");
        let mut new = old.clone();
        new["spec"]["group"] = json!("argocd-operator");
        let verdict = validate(&request("UPDATE", new, old), &with(false, true), &NoCluster);
        assert!(verdict.allowed, "{verdict:?}");
        assert!(has_warning(&verdict, &["could not check"]));
    }

    #[test]
    fn update_gaining_a_group_is_checked_like_a_create() {
        // An ungrouped revision 1 is given spec.group "widget", whose
        // revision 1 exists: the update makes the duplicate, so it is denied.
        let old = cos(
            "my-app-rev1",
            json!({"revision": 1, "lifecycleState": "Active"}),
            json!({}),
        );
        let mut new = old.clone();
        new["spec"]["group"] = json!("widget");
        let verdict = run(&request("UPDATE", new.clone(), old.clone()));
        assert_denied(
            &verdict,
            &[
                "spec.revision 1 is already used in group \"widget\"",
                "delete one of the two ClusterObjectSets (\"my-app-rev1\" or \"widget-1\")",
            ],
        );
        // And under requireNameSuffix the name no longer fits the new group.
        new["spec"]["group"] = json!("my-app");
        let verdict = validate(&request("UPDATE", new, old), &with(false, true), &NoCluster);
        assert_denied(
            &verdict,
            &[
                "metadata.name must be \"my-app-1\"",
                "delete this ClusterObjectSet and create it again",
            ],
        );
    }

    #[test]
    fn update_dropping_the_group_is_checked_like_a_create() {
        // The label is removed from a label-only revision: it leaves its slot
        // for no group, which requireNameSuffix cannot name.
        let old = labelled("argocd-operator-2", "argocd-operator", 2, "Active");
        let new = cos(
            "argocd-operator-2",
            json!({"revision": 2, "lifecycleState": "Active"}),
            json!({}),
        );
        let verdict = validate(
            &request("UPDATE", new.clone(), old.clone()),
            &with(false, true),
            &cluster(),
        );
        assert_denied(&verdict, &["metadata.name must be <group>-<revision>"]);
        assert!(run(&request("UPDATE", new, old)).allowed);
    }

    #[test]
    fn an_unreadable_old_object_proves_no_slot() {
        let taken = cos(
            "widget-again",
            json!({"group": "widget", "revision": 1}),
            json!({}),
        );
        for old in [Value::Null, json!("x"), json!({"spec": [1]})] {
            let verdict = run(&request("UPDATE", taken.clone(), old));
            assert_denied(&verdict, &["spec.revision 1 is already used"]);
        }
    }

    /// Shapes no API server would send; each gets a verdict, never a panic.
    fn odd_values() -> Vec<Value> {
        vec![
            Value::Null,
            json!(false),
            json!(1e300),
            json!("widget-3"),
            json!([{"spec": {"revision": 1}}]),
            json!({"metadata": [], "spec": {"revision": 1}}),
            json!({"metadata": {"name": null, "labels": null}, "spec": null}),
            json!({"metadata": {"generateName": 3}, "spec": {"revision": 1}}),
            json!({"metadata": {"labels": {OWNER_NAME_LABEL: "widget"}}, "spec": "x"}),
            json!({"spec": {"group": "widget", "revision": -9223372036854775808i64}}),
            json!({"spec": {"group": "widget", "revision": 18446744073709551615u64}}),
            json!({"spec": {"group": ["widget"], "revision": {"n": 1}}}),
            json!({"spec": {"group": "widget"}}),
        ]
    }

    #[test]
    fn odd_json_gets_a_verdict() {
        for operation in ["CREATE", "UPDATE"] {
            for object in odd_values() {
                for old in odd_values() {
                    for settings in [with(false, false), with(true, true)] {
                        let r = request(operation, object.clone(), old.clone());
                        let verdict = validate(&r, &settings, &cluster());
                        if !verdict.allowed {
                            assert_denied(&verdict, &[]);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn settings_default_off_and_reject_unknown_keys() {
        let parsed: Settings = olm_guard_core::settings::parse(&Value::Null).unwrap();
        assert_eq!(parsed, with(false, false));
        let parsed: Settings = olm_guard_core::settings::parse(
            &json!({"autoIncrementRevision": true, "requireNameSuffix": true}),
        )
        .unwrap();
        assert_eq!(parsed, with(true, true));
        assert!(
            olm_guard_core::settings::parse::<Settings>(&json!({"autoIncrement": true})).is_err()
        );
        assert!(
            olm_guard_core::settings::parse::<Settings>(&json!({"requireNameSuffix": "yes"}))
                .is_err()
        );
    }

    /// 10,000 revisions in 100 groups: the single pass still answers, for a
    /// clash at the end of the list, a free slot and automatic numbering.
    #[test]
    fn ten_thousand_revisions_still_evaluate() {
        let objects = (0..10_000)
            .map(|i| {
                let group = format!("extension-{}", i % 100);
                let revision = i / 100 + 1;
                let state = if revision == 100 {
                    "Active"
                } else {
                    "Archived"
                };
                if i % 2 == 0 {
                    grouped(&group, json!(revision), state)
                } else {
                    labelled(&format!("{group}-{revision}"), &group, revision, state)
                }
            })
            .collect();
        let big = Snapshot::from_objects(objects);

        let taken = cos(
            "again",
            json!({"group": "extension-99", "revision": 100}),
            json!({}),
        );
        let verdict = validate(&create(taken), &Settings::default(), &big);
        assert_denied(
            &verdict,
            &["\"extension-99-100\"", "use spec.revision: 101"],
        );

        let free = grouped("extension-42", json!(101), "Active");
        assert!(validate(&create(free), &with(false, true), &big).allowed);

        let unnumbered = cos(
            "extension-7-101",
            json!({"group": "extension-7"}),
            json!({}),
        );
        let verdict = validate(&create(unnumbered), &with(true, true), &big);
        assert_eq!(
            verdict
                .mutated_object
                .as_ref()
                .and_then(|o| o.pointer("/spec/revision")),
            Some(&json!(101))
        );
    }
}
