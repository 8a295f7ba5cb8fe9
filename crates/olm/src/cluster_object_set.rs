//! `ClusterObjectSet` (`olm.operatorframework.io/v1`, cluster-scoped): one
//! immutable revision of a set of objects, which operator-framework/operator-controller
//! creates for each ClusterExtension rollout.
//!
//! Only the fields the revision policies read are typed. `spec.group` and
//! `spec.revision` stay raw JSON so that a string `"3"`, a `2.5` or a `-1`
//! is reported as exactly that instead of as a parse error. `spec.group`
//! is the field proposed in operator-framework/operator-controller#2722,
//! absent from the CRD operator-controller ships (the API server prunes it
//! there); only a CRD patched to have it keeps it, so nothing but its value
//! tells us what a client meant.

use olm_guard_core::ObjectMeta;

use crate::ObjectError;
use olm_guard_core::listed::{Label, LabelKey, Scalar, Str};
use serde::Deserialize;
use serde_json::{Map, Value};
use serde_with::DefaultOnNull;

/// API group of the kind.
pub const GROUP: &str = "olm.operatorframework.io";
/// `apiVersion` to list it with.
pub const API_VERSION: &str = "olm.operatorframework.io/v1";
/// The version of [`API_VERSION`].
pub const VERSION: &str = "v1";
/// The kind.
pub const KIND: &str = "ClusterObjectSet";
/// The plural resource, as RBAC names it.
pub const RESOURCE: &str = "clusterobjectsets";
/// The RBAC-only subresource olm-guard's group-authorization policy checks: a grant of `manage` on
/// `clusterobjectsets/groups` (optionally by resource name) is the right to
/// write revisions of a group. The API server serves no such endpoint.
pub const GROUPS_SUBRESOURCE: &str = "groups";
/// The custom verb of that grant.
pub const MANAGE_VERB: &str = "manage";
/// operator-controller's grouping label (`labels.OwnerNameKey`): the
/// ClusterExtension name on every revision it creates, and the only grouping
/// objects created before `spec.group` have.
pub const OWNER_NAME_LABEL: &str = "olm.operatorframework.io/owner-name";
/// How a message tells a user to put a revision into a group: on the CRD
/// operator-controller ships, by the label it groups revisions by;
/// `spec.group` only exists on a CRD patched to have it.
pub const SET_GROUP_FIX: &str = "set the label olm.operatorframework.io/owner-name to the name \
                                 of its group (or spec.group, on a ClusterObjectSet CRD that \
                                 has the field)";

/// The parts of a ClusterObjectSet the policies read.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ClusterObjectSet {
    /// The object's metadata (name, owner-name label).
    #[serde_as(as = "DefaultOnNull")]
    pub metadata: ObjectMeta,
    /// The parts of `spec` the policies read.
    #[serde_as(as = "DefaultOnNull")]
    pub spec: ClusterObjectSetSpec,
}

/// `spec` of a ClusterObjectSet, raw where a wrong type must be reported as
/// written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ClusterObjectSetSpec {
    /// Raw: see [`ClusterObjectSet::spec_group`].
    pub group: Value,
    /// Raw: see [`ClusterObjectSet::revision`].
    pub revision: Value,
    /// Raw: `Active` or `Archived` in operator-controller's CRD; only ever
    /// quoted in messages.
    pub lifecycle_state: Value,
}

/// What `spec.group` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecGroup<'a> {
    /// Absent, `null` or `""`: the object has not been given a group (yet).
    Unset,
    /// A non-empty string.
    Name(&'a str),
    /// Any other JSON type; the text names it (`a number (5)`).
    Invalid(&'a Value),
}

/// Why `spec.revision` is not a revision number. `Display` says what was
/// found and what to write instead; callers prefix the field name.
#[derive(Debug, Clone, PartialEq)]
pub enum RevisionProblem {
    /// A JSON string, as YAML gives for `revision: "3"`.
    Text(String),
    /// A number with a fraction or an exponent (`2.5`, `2.0`, `1e3`).
    Fraction(f64),
    /// Zero or negative.
    BelowOne(i64),
    /// Larger than the CRD's int64.
    TooLarge,
    /// `true`, a list or a map.
    NotANumber(&'static str),
}

impl std::fmt::Display for RevisionProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RevisionProblem::Text(text) => match text.trim().parse::<i64>() {
                Ok(n) if n >= 1 => write!(
                    f,
                    "is the string \"{text}\"; write it as a number without quotes: revision: {n}"
                ),
                _ => write!(
                    f,
                    "is the string \"{text}\"; it must be a whole number of at least 1, \
                     written without quotes (revision: 1)"
                ),
            },
            RevisionProblem::Fraction(x) if x.fract() == 0.0 && *x >= 1.0 && *x <= 9.0e15 => {
                write!(
                    f,
                    "is {} written as a decimal number; write the whole number {} instead",
                    x, *x as i64
                )
            }
            RevisionProblem::Fraction(x) => write!(
                f,
                "is {x}, which is not a whole number; revisions are whole numbers of at least 1"
            ),
            RevisionProblem::BelowOne(n) => write!(
                f,
                "is {n}; revisions start at 1 (write 1 for the first revision of a group)"
            ),
            RevisionProblem::TooLarge => {
                f.write_str("is larger than the largest revision (9223372036854775807)")
            }
            RevisionProblem::NotANumber(what) => write!(
                f,
                "is {what}; it must be a whole number of at least 1 (revision: 1)"
            ),
        }
    }
}

impl ClusterObjectSet {
    /// Reads an object of an AdmissionRequest. Errors name the field that
    /// cannot be read; anything else, however odd, is kept for the rules to
    /// judge.
    pub fn from_object(object: &Value) -> Result<ClusterObjectSet, ObjectError> {
        let Some(map) = object.as_object() else {
            return Err(ObjectError::NotAMap {
                kind: "ClusterObjectSet",
                found: json_type(object),
            });
        };
        for field in ["metadata", "spec"] {
            match map.get(field) {
                None | Some(Value::Null) | Some(Value::Object(_)) => {}
                Some(other) => {
                    return Err(ObjectError::FieldNotAMap {
                        field,
                        found: json_type(other),
                    });
                }
            }
        }
        // The path names the field (`metadata.labels.app`), which serde's
        // own message does not.
        olm_guard_core::decode::from_value(object).map_err(|e| ObjectError::WrongType {
            prefix: "",
            path: e.path,
            reason: e.reason,
            fix: "",
        })
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// The owner-name label, when it is set to a non-empty value.
    pub fn owner_label(&self) -> Option<&str> {
        self.metadata
            .label(OWNER_NAME_LABEL)
            .filter(|label| !label.is_empty())
    }

    /// What `spec.group` holds: unset, a name, or a value of the wrong type.
    pub fn spec_group(&self) -> SpecGroup<'_> {
        match &self.spec.group {
            Value::Null => SpecGroup::Unset,
            Value::String(s) if s.is_empty() => SpecGroup::Unset,
            Value::String(s) => SpecGroup::Name(s),
            other => SpecGroup::Invalid(other),
        }
    }

    /// The revision group this object counts in: `spec.group` when it is a
    /// non-empty string, else the owner-name label, so that objects created
    /// before `spec.group` existed still count in the revision-uniqueness
    /// policy. `None`: the object is in no group.
    pub fn group(&self) -> Option<&str> {
        match self.spec_group() {
            SpecGroup::Name(group) => Some(group),
            _ => self.owner_label(),
        }
    }

    /// `spec.revision` as a revision number: `Ok(None)` when absent or
    /// `null`, an error for anything that is not a JSON integer >= 1.
    pub fn revision(&self) -> Result<Option<i64>, RevisionProblem> {
        revision_of(&self.spec.revision)
    }

    /// `spec.lifecycleState` as written, `""` when absent or not a string.
    pub fn lifecycle_state(&self) -> &str {
        self.spec.lifecycle_state.as_str().unwrap_or("")
    }
}

/// The owner-name label, as [`Label`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnerName;

impl LabelKey for OwnerName {
    const KEY: &'static str = OWNER_NAME_LABEL;
}

/// A ClusterObjectSet of a list answer, read for what the revision
/// policies read of the others (`olm_guard_core::listed`): its name, the
/// owner-name label, `spec.group`, `spec.revision` and
/// `spec.lifecycleState`, borrowed from the answer. Only the few in the
/// group a rule looks at become [`ClusterObjectSet`]s
/// ([`ListedClusterObjectSet::to_object`]).
#[derive(Debug, Default, Deserialize)]
#[serde(default, expecting = "struct ClusterObjectSet")]
pub struct ListedClusterObjectSet<'a> {
    #[serde(borrow)]
    metadata: Option<ListedMeta<'a>>,
    #[serde(borrow)]
    spec: Option<ListedSpec<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, expecting = "struct ObjectMeta")]
struct ListedMeta<'a> {
    #[serde(borrow)]
    name: Option<Str<'a>>,
    #[serde(borrow)]
    labels: Label<'a, OwnerName>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(
    default,
    rename_all = "camelCase",
    expecting = "struct ClusterObjectSetSpec"
)]
struct ListedSpec<'a> {
    #[serde(borrow)]
    group: Scalar<'a>,
    #[serde(borrow)]
    revision: Scalar<'a>,
    #[serde(borrow)]
    lifecycle_state: Scalar<'a>,
}

impl ListedClusterObjectSet<'_> {
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.metadata.as_ref().map_or("", |m| Str::of(&m.name))
    }

    /// [`ClusterObjectSet::group`], read from the answer.
    pub fn group(&self) -> Option<&str> {
        let spec_group = self.spec.as_ref().and_then(|s| s.group.as_str());
        match spec_group {
            Some(group) if !group.is_empty() => Some(group),
            _ => self
                .metadata
                .as_ref()
                .and_then(|m| m.labels.get())
                .filter(|label| !label.is_empty()),
        }
    }

    /// The object as [`ClusterObjectSet::from_object`] reads it, as far as
    /// the listed fields go: a list or map in a spec field keeps its type
    /// (all a message says of it), not its content.
    pub fn to_object(&self) -> ClusterObjectSet {
        let mut object = ClusterObjectSet::default();
        if let Some(meta) = &self.metadata {
            object.metadata.name = Str::of(&meta.name).to_string();
            if let Some(owner) = meta.labels.get() {
                object
                    .metadata
                    .labels
                    .insert(OWNER_NAME_LABEL.to_string(), owner.to_string());
            }
        }
        if let Some(spec) = &self.spec {
            object.spec.group = scalar_value(&spec.group);
            object.spec.revision = scalar_value(&spec.revision);
            object.spec.lifecycle_state = scalar_value(&spec.lifecycle_state);
        }
        object
    }
}

/// The JSON value of a scalar; an empty list or map for a list or map.
fn scalar_value(scalar: &Scalar<'_>) -> Value {
    match scalar {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(*b),
        Scalar::Int(n) => Value::from(*n),
        Scalar::UInt(n) => Value::from(*n),
        Scalar::Float(x) => Value::from(*x),
        Scalar::Str(s) => Value::String(s.to_string()),
        Scalar::List => Value::Array(Vec::new()),
        Scalar::Map => Value::Object(Map::new()),
    }
}

/// See [`ClusterObjectSet::revision`]; public for raw values.
pub fn revision_of(value: &Value) -> Result<Option<i64>, RevisionProblem> {
    match value {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_i64() {
            Some(r) if r >= 1 => Ok(Some(r)),
            Some(r) => Err(RevisionProblem::BelowOne(r)),
            None if n.is_u64() => Err(RevisionProblem::TooLarge),
            None => Err(RevisionProblem::Fraction(n.as_f64().unwrap_or(f64::NAN))),
        },
        Value::String(s) => Err(RevisionProblem::Text(s.clone())),
        other => Err(RevisionProblem::NotANumber(json_type(other))),
    }
}

/// A copy of `object` with `spec.<field>` set to `value`, creating `spec`
/// when it is absent or `null`. `None` when `object` or its `spec` is not a
/// map ([`ClusterObjectSet::from_object`] has refused those already).
pub fn with_spec_field(object: &Value, field: &str, value: Value) -> Option<Value> {
    let mut object = object.clone();
    let map = object.as_object_mut()?;
    let spec = map
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    if spec.is_null() {
        *spec = Value::Object(Map::new());
    }
    spec.as_object_mut()?.insert(field.to_string(), value);
    Some(object)
}

/// The JSON type of a value with an article, for messages: `a string`,
/// `a number`, `a list`, `a map`, `true`.
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(true) => "true",
        Value::Bool(false) => "false",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// A value quoted for a message: the string in quotes, else the JSON
/// type and value (`a number (5)`), never Rust debug output.
pub fn describe_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("\"{s}\""),
        Value::Number(n) => format!("a number ({n})"),
        other => json_type(other).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cos(object: Value) -> ClusterObjectSet {
        ClusterObjectSet::from_object(&object).unwrap()
    }

    #[test]
    fn group_prefers_a_non_empty_spec_group_over_the_label() {
        let both = cos(json!({"metadata": {"labels": {OWNER_NAME_LABEL: "label"}},
                               "spec": {"group": "spec"}}));
        assert_eq!(both.group(), Some("spec"));
        let empty = cos(json!({"metadata": {"labels": {OWNER_NAME_LABEL: "label"}},
                                "spec": {"group": ""}}));
        assert_eq!(empty.group(), Some("label"));
        let numeric = cos(json!({"metadata": {"labels": {OWNER_NAME_LABEL: "label"}},
                                  "spec": {"group": 5}}));
        assert_eq!(numeric.group(), Some("label"));
        assert_eq!(numeric.spec_group(), SpecGroup::Invalid(&json!(5)));
    }

    #[test]
    fn an_object_without_group_or_label_is_in_no_group() {
        assert_eq!(cos(json!({})).group(), None);
        let empty_label = cos(json!({"metadata": {"labels": {OWNER_NAME_LABEL: ""}}}));
        assert_eq!(empty_label.group(), None);
        assert_eq!(cos(json!({"spec": null, "metadata": null})).group(), None);
    }

    #[test]
    fn revisions_must_be_json_integers_from_one() {
        assert_eq!(revision_of(&json!(1)), Ok(Some(1)));
        assert_eq!(revision_of(&json!(i64::MAX)), Ok(Some(i64::MAX)));
        assert_eq!(revision_of(&Value::Null), Ok(None));
        assert_eq!(revision_of(&json!(0)), Err(RevisionProblem::BelowOne(0)));
        assert_eq!(revision_of(&json!(-4)), Err(RevisionProblem::BelowOne(-4)));
        assert_eq!(
            revision_of(&json!(2.5)),
            Err(RevisionProblem::Fraction(2.5))
        );
        assert_eq!(
            revision_of(&json!(2.0)),
            Err(RevisionProblem::Fraction(2.0))
        );
        assert_eq!(
            revision_of(&json!(u64::MAX)),
            Err(RevisionProblem::TooLarge)
        );
        assert_eq!(
            revision_of(&json!("3")),
            Err(RevisionProblem::Text("3".into()))
        );
        assert_eq!(
            revision_of(&json!([1])),
            Err(RevisionProblem::NotANumber("a list"))
        );
    }

    #[test]
    fn revision_problems_say_what_to_write() {
        let text = RevisionProblem::Text("3".into()).to_string();
        assert!(text.contains("revision: 3"), "{text}");
        let whole = RevisionProblem::Fraction(2.0).to_string();
        assert!(whole.contains("whole number 2 "), "{whole}");
        let fraction = RevisionProblem::Fraction(2.5).to_string();
        assert!(
            fraction.contains("2.5, which is not a whole number"),
            "{fraction}"
        );
        let zero = RevisionProblem::BelowOne(0).to_string();
        assert!(zero.contains("start at 1"), "{zero}");
        let word = RevisionProblem::Text("latest".into()).to_string();
        assert!(
            word.contains("\"latest\"") && word.contains("at least 1"),
            "{word}"
        );
    }

    #[test]
    fn unreadable_objects_are_named() {
        let err = ClusterObjectSet::from_object(&json!("x"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("a string"), "{err}");
        let err = ClusterObjectSet::from_object(&json!({"spec": [1]}))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("spec is a list"), "{err}");
        let err = ClusterObjectSet::from_object(&json!({"metadata": {"labels": {"a": 1}}}))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("metadata.labels.a has the wrong type"),
            "{err}"
        );
    }

    #[test]
    fn real_samples_read_as_revision_one_in_no_group() {
        // operator-controller's docs/draft/concepts/clusterobjectsets.md: its objects carry
        // neither spec.group nor the label unless a ClusterExtension made them.
        let sample = cos(json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
            "metadata": {"name": "my-app-rev1"},
            "spec": {"revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent",
                     "phases": [{"name": "crds", "objects": []}]}
        }));
        assert_eq!(sample.revision(), Ok(Some(1)));
        assert_eq!(sample.lifecycle_state(), "Active");
        assert_eq!(sample.group(), None);
    }

    /// A listed object reads as the whole object does, for every field the
    /// policies read of the others.
    #[test]
    fn a_listed_object_reads_as_the_object() {
        let objects = [
            json!({"metadata": {"name": "a", "labels": {OWNER_NAME_LABEL: "l", "x": "y"}},
                   "spec": {"group": "g", "revision": 3, "lifecycleState": "Active",
                            "phases": [{"objects": [{}]}]}}),
            json!({"metadata": {"name": "b", "labels": {OWNER_NAME_LABEL: "l"}},
                   "spec": {"group": "", "revision": "3", "lifecycleState": 5}}),
            json!({"metadata": {"name": "c"}, "spec": {"group": 5, "revision": 2.5}}),
            json!({"metadata": {"name": "d", "labels": {OWNER_NAME_LABEL: ""}},
                   "spec": {"group": [1], "revision": {"a": 1}}}),
            json!({"metadata": null, "spec": null}),
            json!({"spec": {"revision": -1, "group": null}}),
            json!({"spec": {"revision": 18446744073709551615u64}}),
        ];
        let answer = serde_json::to_vec(&json!({"items": objects})).unwrap();
        let mut listed = Vec::new();
        olm_guard_core::listed::each_item(&answer, |item: ListedClusterObjectSet<'_>| {
            listed.push((
                item.name().to_string(),
                item.group().map(str::to_string),
                item.to_object(),
            ))
        })
        .unwrap();
        for (object, (name, group, read)) in objects.iter().zip(&listed) {
            let whole = ClusterObjectSet::from_object(object).unwrap();
            assert_eq!(name, whole.name());
            assert_eq!(group.as_deref(), whole.group());
            assert_eq!(read.group(), whole.group());
            assert_eq!(read.revision(), whole.revision());
            assert_eq!(read.lifecycle_state(), whole.lifecycle_state());
            assert_eq!(read.owner_label(), whole.owner_label());
            assert_eq!(
                matches!(read.spec_group(), SpecGroup::Name(_)),
                matches!(whole.spec_group(), SpecGroup::Name(_))
            );
            if let (SpecGroup::Invalid(a), SpecGroup::Invalid(b)) =
                (read.spec_group(), whole.spec_group())
            {
                assert_eq!(describe_value(a), describe_value(b));
            }
        }
        let err = olm_guard_core::listed::each_item(
            br#"{"items":[{"metadata":{"labels":{"a":1}}}]}"#,
            |_: ListedClusterObjectSet<'_>| {},
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid type: integer `1`, expected a string")
        );
    }

    #[test]
    fn with_spec_field_creates_a_missing_or_null_spec() {
        assert_eq!(
            with_spec_field(&json!({"spec": null}), "group", json!("g")),
            Some(json!({"spec": {"group": "g"}}))
        );
        assert_eq!(
            with_spec_field(&json!({"spec": {"revision": 1}}), "group", json!("g")),
            Some(json!({"spec": {"revision": 1, "group": "g"}}))
        );
        assert_eq!(
            with_spec_field(&json!({"spec": "x"}), "group", json!("g")),
            None
        );
        assert_eq!(with_spec_field(&json!(3), "group", json!("g")), None);
    }

    #[test]
    fn values_are_described_without_debug_output() {
        assert_eq!(describe_value(&json!("g")), "\"g\"");
        assert_eq!(describe_value(&json!(5)), "a number (5)");
        assert_eq!(describe_value(&json!({"a": 1})), "a map");
    }
}
