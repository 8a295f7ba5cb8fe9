//! What can go wrong while reading a snapshot, said so that a user can find
//! the object: which source, which document, which object, and why.

use std::fmt;

use olm_guard_core::decode::FieldTypeError;

/// Where an object was read: the source the caller named (usually a file
/// path), the 1-based document of a multi-document YAML, and the index in a
/// `List`'s `items` when the object came from one. Parts the caller could not
/// give are left out of the message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Location {
    /// The caller's label for the text, e.g. `cluster.yaml`; empty for none.
    pub source: String,
    /// 1-based index of the YAML document; `None` for objects not read from
    /// YAML.
    pub document: Option<usize>,
    /// 0-based index in `items`, for an object of a `List` (or of the
    /// objects given to [`Snapshot::try_from_objects`](crate::Snapshot::try_from_objects)).
    pub item: Option<usize>,
}

impl Location {
    /// The location as a message prefix (`cluster.yaml: document 2: `), or
    /// nothing when no part is known.
    fn prefix(&self) -> String {
        let text = self.to_string();
        if text.is_empty() { text } else { text + ": " }
    }
}

/// `cluster.yaml: document 2: items[3]`.
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if !self.source.is_empty() {
            parts.push(self.source.clone());
        }
        if let Some(document) = self.document {
            parts.push(format!("document {document}"));
        }
        if let Some(item) = self.item {
            parts.push(format!("items[{item}]"));
        }
        f.write_str(&parts.join(": "))
    }
}

/// Which object: its type and, when it has them, namespace and name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ObjectRef {
    /// `apiVersion`, e.g. `rbac.authorization.k8s.io/v1`.
    pub api_version: String,
    /// `kind`, e.g. `RoleBinding`.
    pub kind: String,
    /// `metadata.namespace`; empty for cluster-scoped objects.
    pub namespace: String,
    /// `metadata.name`; empty when the object has none.
    pub name: String,
}

impl ObjectRef {
    /// `namespace/name`, `name`, or `<unnamed>`.
    pub fn qualified_name(&self) -> String {
        match (self.namespace.as_str(), self.name.as_str()) {
            (_, "") => "<unnamed>".to_string(),
            ("", name) => name.to_string(),
            (namespace, name) => format!("{namespace}/{name}"),
        }
    }
}

/// `rbac.authorization.k8s.io/v1 RoleBinding ns1/alice`.
impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}",
            self.api_version,
            self.kind,
            self.qualified_name()
        )
    }
}

/// A problem with one document or object of a snapshot, and where it is.
///
/// In strict mode (the default) the first one is the error of the load; in
/// lenient mode each one becomes a [`SnapshotWarning`] and the load goes on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{problem}", .at.prefix())]
pub struct SnapshotError {
    /// Where the document or object is.
    pub at: Location,
    /// What is wrong with it.
    pub problem: Problem,
}

impl SnapshotError {
    /// The object at fault, when the problem is with a typed object.
    pub fn object(&self) -> Option<&ObjectRef> {
        match &self.problem {
            Problem::WrongRbacField { object, .. }
            | Problem::UnservedRbacVersion { object }
            | Problem::Duplicate { object, .. } => Some(object.as_ref()),
            Problem::NotYaml(_) | Problem::NotAnObject(_) | Problem::NoType(_) => None,
        }
    }
}

/// Why a document or object cannot be part of a snapshot as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// The document is not valid YAML (or JSON); the reason is the parser's.
    /// Nothing after it in the same source can be read.
    #[error("not valid YAML: {0}")]
    NotYaml(String),
    /// The document (or a `List` item) is a scalar or a sequence, not an
    /// object; the value names what it is instead (`a sequence`).
    #[error("expected a Kubernetes object, found {0}")]
    NotAnObject(&'static str),
    /// The object has no `apiVersion` or no `kind`, so no list or get could
    /// ever return it; the value is its `namespace/name` or `<unnamed>`.
    #[error("object {0:?} has no apiVersion and kind")]
    NoType(String),
    /// An RBAC object with a field of the wrong type (a RoleBinding whose
    /// `subjects` is a string): the API server would have refused it, and
    /// evaluating the rest of it would change `can_i` answers.
    #[error(
        "{object}: field {} has the wrong type ({}); the API server would refuse this object, \
         so its RBAC cannot be evaluated",
        .error.path,
        .error.reason
    )]
    WrongRbacField {
        /// The object.
        object: Box<ObjectRef>,
        /// The field, as a path below the object (`subjects[0].name`), and
        /// serde's account of the mismatch (boxed: it would double the size
        /// of every snapshot result).
        error: Box<FieldTypeError>,
    },
    /// A Role, ClusterRole or binding in an RBAC version other than
    /// `rbac.authorization.k8s.io/v1`, which Kubernetes no longer serves and
    /// the snapshot does not evaluate.
    #[error(
        "{object}: only rbac.authorization.k8s.io/v1 RBAC objects are evaluated for can_i; \
         write it as rbac.authorization.k8s.io/v1"
    )]
    UnservedRbacVersion {
        /// The object.
        object: Box<ObjectRef>,
    },
    /// A second object with the same apiVersion, kind, namespace and name.
    #[error(
        "{object} was already read{}; an object may appear only once in a snapshot",
        describe_first(.first)
    )]
    Duplicate {
        /// The object.
        object: Box<ObjectRef>,
        /// Where the first one was read.
        first: Box<Location>,
    },
}

fn describe_first(first: &Location) -> String {
    let at = first.to_string();
    if at.is_empty() {
        at
    } else {
        format!(" (at {at})")
    }
}

/// A problem that lenient loading reported instead of failing, with what it
/// did about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotWarning {
    /// The problem, as strict loading would have reported it.
    pub error: SnapshotError,
}

impl SnapshotWarning {
    /// What lenient loading did about the problem.
    pub fn consequence(&self) -> &'static str {
        match self.error.problem {
            Problem::NotYaml(_) => "the rest of the source was skipped",
            Problem::NotAnObject(_) | Problem::NoType(_) => "it was skipped",
            Problem::WrongRbacField { .. } | Problem::UnservedRbacVersion { .. } => {
                "it is listed but grants nothing in can_i"
            }
            Problem::Duplicate { .. } => "the first one is kept",
        }
    }
}

/// The error, then what was done about it:
/// `cluster.yaml: document 4: ...; the first one is kept`.
impl fmt::Display for SnapshotWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; {}", self.error, self.consequence())
    }
}

/// How to read a snapshot source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Keep going past problems and return them as warnings, instead of
    /// failing on the first one (the default).
    pub lenient: bool,
}

impl LoadOptions {
    /// Fail on the first problem (the default).
    pub const STRICT: LoadOptions = LoadOptions { lenient: false };
    /// Report problems as warnings and leave out what cannot be used.
    pub const LENIENT: LoadOptions = LoadOptions { lenient: true };
}
