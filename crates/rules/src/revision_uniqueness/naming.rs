//! Rule 6: `metadata.name` is `<group>-<revision>` (setting
//! `requireNameSuffix`), so that the API server's unique names settle the
//! races a list cannot see (*Why names close the race* in the README).

use olm_guard_olm::cluster_object_set::ClusterObjectSet;

/// A name that is not `<group>-<revision>`: what it should be, and what
/// was found instead (`it is "x"`).
pub(super) struct NameProblem {
    pub(super) expected: String,
    pub(super) found: String,
}

impl NameProblem {
    /// The problem with the name of `cos` as revision `revision` of `group`,
    /// if it has one.
    pub(super) fn of(cos: &ClusterObjectSet, group: &str, revision: i64) -> Option<NameProblem> {
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
