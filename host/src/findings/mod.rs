//! What evaluating objects with modules found, in the words of the report
//! CRDs (`pass`, `fail`, `warn`, `error`, `skip`): the results of `audit`,
//! and of `run` with several modules, and the table both print.

pub mod table;

use serde::Serialize;

/// The object a result is about (the evaluator's, shared with `run all`).
pub use olm_guard_evaluator::preflight::Subject;

/// The policy name of results about the snapshot itself (an object that
/// could not be read), which no module evaluated.
pub const SNAPSHOT_POLICY: &str = "snapshot";

/// What an evaluation says, in the words of the report CRDs' `result` enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The module admitted the CREATE.
    Pass,
    /// The module denied it: the object breaks the rule today.
    Fail,
    /// Admitted with admission warnings (the audit scanner, which never
    /// writes `warn`, would say `pass`).
    Warn,
    /// Not evaluated: the object could not be read, the module failed, or
    /// its lookup failed (code 500, as the audit scanner counts it).
    Error,
    /// Not evaluated for a requester: the module's verdict depends on who
    /// asks and no `--as` was given.
    Skip,
}

impl Outcome {
    /// Every outcome, in report order.
    pub const ALL: [Outcome; 5] = [
        Outcome::Pass,
        Outcome::Fail,
        Outcome::Warn,
        Outcome::Error,
        Outcome::Skip,
    ];

    /// `pass`, `fail`, ...
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Warn => "warn",
            Outcome::Error => "error",
            Outcome::Skip => "skip",
        }
    }
}

/// One result: an object (or a snapshot document), a policy, what it said.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// The object; `None` for a snapshot document that is no object.
    pub object: Option<Subject>,
    /// Where the object was read: `file: document N[: items[i]]`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// The module's name (`dist/<name>.wasm`), or [`SNAPSHOT_POLICY`].
    pub policy: String,
    /// pass, fail, warn, error or skip.
    pub result: Outcome,
    /// The module's message (denial, warnings, error), or why it was skipped.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}
