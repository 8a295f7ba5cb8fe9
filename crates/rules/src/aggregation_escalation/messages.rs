//! The denial texts: what the user did, what they lack, and how to fix it.

use olm_guard_rbac::PolicyRule;
use olm_guard_rbac::compact::compact;

use super::change::Change;
use super::feeding::Feed;
use crate::common::listing;

/// Longest list of missing rules a message shows; the rest is counted.
const SHOWN_RULES: usize = 20;
/// Longest list of role names a message shows.
const SHOWN_NAMES: usize = 10;

impl Change<'_> {
    /// The start of an aggregationRule denial: what the user is doing.
    fn aggregation_subject(&self) -> String {
        if self.new.has_aggregation_rule() {
            format!(
                "ClusterRole \"{}\" sets aggregationRule, which",
                self.name()
            )
        } else {
            format!(
                "ClusterRole \"{}\" had an aggregationRule, so changing it",
                self.name()
            )
        }
    }

    /// Rule 2's denial: `missing` is what full authority needs beyond the
    /// user's rules.
    pub(super) fn full_authority_message(&self, missing: &[PolicyRule]) -> String {
        format!(
            "{} requires cluster-admin privileges (\"must have cluster-admin privileges to use \
             the aggregationRule\"): an aggregated role receives whatever rules its selectors \
             match, now or later. {} lacks {} and the escalate verb on clusterroles. Remove \
             aggregationRule and list the rules directly, or have a cluster administrator apply \
             this ClusterRole.",
            self.aggregation_subject(),
            self.user_text(),
            rules_text(missing)
        )
    }

    /// Rule 3's denial: the selected roles with rules the user lacks, and
    /// those rules.
    pub(super) fn covers_message(&self, sources: &[&str], missing: &[PolicyRule]) -> String {
        format!(
            "{} requires holding every rule its selectors collect (mode covers), but {} does \
             not hold these rules of the selected ClusterRole{} {}: {}. Narrow \
             aggregationRule.clusterRoleSelectors to roles whose rules you hold, obtain those \
             rules first, or have someone with the escalate verb on clusterroles apply it.",
            self.aggregation_subject(),
            self.user_text(),
            plural(sources.len()),
            names_text(sources),
            rules_text(missing)
        )
    }

    /// Rule 4's denial: the fed roles the user may not update, how each
    /// selects the object, and what to change.
    pub(super) fn feeding_message(&self, denied: &[&Feed<'_>]) -> String {
        let targets: Vec<&str> = denied
            .iter()
            .map(|f| f.target.metadata.name.as_str())
            .collect();
        let how: Vec<String> = denied
            .iter()
            .map(|f| {
                let selector = if f.selector.is_everything() {
                    "{} (every ClusterRole)".to_string()
                } else {
                    format!("\"{}\"", f.selector)
                };
                format!(
                    "\"{}\" aggregates roles matching {selector}",
                    f.target.metadata.name
                )
            })
            .collect();
        let (what, fix) = match &self.old {
            None => (
                "would feed",
                "Remove the matching labels from metadata.labels",
            ),
            Some(old) if self.adds_rules(old) => (
                "adds rules that flow into",
                "Leave the new rules out, remove the matching labels from metadata.labels",
            ),
            Some(_) => (
                "is relabelled to feed",
                "Remove the added labels from metadata.labels",
            ),
        };
        let (names, them) = (
            quoted_list(&targets),
            if targets.len() == 1 { "it" } else { "them" },
        );
        format!(
            "ClusterRole \"{}\" {what} the aggregated ClusterRole{} {names} ({}): the \
             aggregation controller copies its rules into {names}, granting them to everyone \
             bound to {them}. {} may not update ClusterRole{} {names} and does not hold the \
             escalate verb on clusterroles. {fix}, have someone allowed to update {names} \
             apply this ClusterRole, or list {names} in the policy setting allowFeeding.",
            self.name(),
            plural(targets.len()),
            how.join("; "),
            self.user_text(),
            plural(targets.len()),
        )
    }
}

/// Missing rules in upstream's compact form, at most [`SHOWN_RULES`].
fn rules_text(atoms: &[PolicyRule]) -> String {
    let rules: Vec<String> = compact(atoms).iter().map(ToString::to_string).collect();
    listing(&rules, SHOWN_RULES, ", ")
}

/// Role names, quoted, at most [`SHOWN_NAMES`].
fn names_text(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    listing(&quoted, SHOWN_NAMES, ", ")
}

fn quoted_list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
