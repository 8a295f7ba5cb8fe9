//! aggregation-escalation: who may build or feed an aggregated ClusterRole.
//!
//! The rules of a ClusterRole with an `aggregationRule` are written by the
//! aggregation controller, which holds `escalate`: whoever sets the selectors
//! decides which permissions the role collects, and whoever labels a role
//! so that a selector matches it adds rules to the aggregated role and to
//! everyone bound to it. The API server guards the first (kubernetes
//! `pkg/registry/rbac/clusterrole/policybased/storage.go`); this rule repeats
//! that check at admission, can loosen it to a Covers check (the seed's
//! proposal), and adds the second, which upstream leaves open.
//!
//! Contract (contracts.md, aggregation-escalation), ClusterRole CREATE/UPDATE:
//! 1. allowed for `system:masters`, for users authorized for `escalate` on
//!    `clusterroles` (name = request name on UPDATE, "" on CREATE), and for
//!    UPDATEs that only change ownerReferences/finalizers;
//! 2. an aggregationRule with a selector, on the new or the old object, needs
//!    full authority in the user's cluster-wide rules (`mode: strict`), or
//! 3. (`mode: covers`) the rules of every other ClusterRole the selectors match;
//! 4. a role whose labels a ClusterRole T aggregates may be created, or
//!    updated to newly match T or to add rules, only by users authorized to
//!    `update` ClusterRole T (or holding `escalate`), unless T is in
//!    `allowFeeding`.

use std::collections::HashSet;

use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_core::{AdmissionRequest, Cluster, ClusterExt, Operation, PolicySettings, Verdict};
use olm_guard_rbac::aggregation::{fed_by, selected, selectors_of};
use olm_guard_rbac::compact::compact;
use olm_guard_rbac::{
    ClusterRole, Holder, PolicyRule, RBAC_GROUP, RbacStore, SYSTEM_MASTERS, Selector, covers,
    from_json, full_authority,
};
use serde::Deserialize;

/// How much an aggregationRule author must hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Upstream parity: full authority (what `cluster-admin` holds).
    #[default]
    Strict,
    /// Only the rules the selectors collect today.
    Covers,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    pub mode: Mode,
    /// Aggregated ClusterRoles anyone may feed (e.g. a role meant to be
    /// extended by every operator).
    pub allow_feeding: Vec<String>,
}

impl PolicySettings for Settings {
    fn validate(&self) -> Result<(), String> {
        if self.allow_feeding.iter().any(|n| n.is_empty()) {
            return Err(
                "allowFeeding contains an empty name: list the names of aggregated ClusterRoles"
                    .into(),
            );
        }
        Ok(())
    }
}

const KIND: &str = "ClusterRole";
/// Longest list of missing rules a message shows; the rest is counted.
const SHOWN_RULES: usize = 20;
/// Longest list of role names a message shows.
const SHOWN_NAMES: usize = 10;

pub fn validate(request: &AdmissionRequest, settings: &Settings, cluster: &dyn Cluster) -> Verdict {
    if !request.targets(RBAC_GROUP, KIND) {
        return Verdict::accept();
    }
    match evaluate(request, settings, cluster) {
        Ok(()) => Verdict::accept(),
        Err(verdict) => verdict,
    }
}

/// `Err` carries the denial; `?` keeps the flow of checks readable.
fn evaluate(
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Result<(), Verdict> {
    let change = match request.operation {
        Operation::Create => Change::new(request, parse_role(&request.object, "object")?, None),
        Operation::Update => Change::new(
            request,
            parse_role(&request.object, "object")?,
            Some(parse_role(&request.old_object, "oldObject")?),
        ),
        Operation::Delete | Operation::Connect => return Ok(()),
    };
    if change.only_gc_fields_changed() || request.user_info.in_group(SYSTEM_MASTERS) {
        return Ok(());
    }
    let aggregation = change.involves_aggregation_rule();
    if !aggregation && !change.may_feed() {
        return Ok(());
    }
    let store = olm_guard_rbac::cluster::load(cluster, "").map_err(|e| {
        Verdict::context_unavailable("the cluster's ClusterRoles and ClusterRoleBindings", e)
    })?;
    let feeds = change.feeds(&store, settings);
    if !aggregation && feeds.is_empty() {
        return Ok(());
    }
    if change.holds_escalate(cluster)? {
        return Ok(());
    }

    let mut problems = Vec::new();
    if aggregation {
        problems.extend(match settings.mode {
            Mode::Strict => change.check_full_authority(&store),
            Mode::Covers => change.check_covers_selected(&store)?,
        });
    }
    let denied = change.feeds_without_update_right(cluster, &feeds)?;
    if !denied.is_empty() {
        problems.push(change.feeding_message(&denied));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Verdict::deny(problems.join(" Also: ")))
    }
}

/// A ClusterRole from the request; a shape the API server would not accept
/// is a 400 naming the field.
fn parse_role(value: &serde_json::Value, field: &str) -> Result<ClusterRole, Verdict> {
    if !value.is_object() {
        return Err(Verdict::bad_request(format!(
            "request.{field} must be a ClusterRole object; the request carries none"
        )));
    }
    from_json(value).map_err(|e| {
        Verdict::bad_request(format!(
            "request.{field} is not a valid ClusterRole: {e}; fix that field"
        ))
    })
}

/// One aggregated role T the object would feed, and why it is checked.
struct Feed<'a> {
    target: &'a ClusterRole,
    /// T's first selector matching the object, for the message.
    selector: Selector,
}

struct Change<'r> {
    request: &'r AdmissionRequest,
    new: ClusterRole,
    old: Option<ClusterRole>,
}

impl<'r> Change<'r> {
    fn new(request: &'r AdmissionRequest, new: ClusterRole, old: Option<ClusterRole>) -> Self {
        Change { request, new, old }
    }

    /// The object's name; on CREATE with generateName it may be empty.
    fn name(&self) -> &str {
        if self.new.metadata.name.is_empty() {
            &self.request.name
        } else {
            &self.new.metadata.name
        }
    }

    fn user_text(&self) -> String {
        self.request.user_info.describe()
    }

    /// upstream `IsOnlyMutatingGCFields`: with ownerReferences and finalizers
    /// (and uid, which only the server sets) taken from the old object the
    /// objects are equal. Fields this type does not model are server-managed
    /// (resourceVersion, managedFields, timestamps) and ignored as upstream
    /// ignores them.
    fn only_gc_fields_changed(&self) -> bool {
        let Some(old) = &self.old else {
            return false;
        };
        let mut new = self.new.clone();
        new.metadata.owner_references = old.metadata.owner_references.clone();
        new.metadata.finalizers = old.metadata.finalizers.clone();
        new.metadata.uid = old.metadata.uid.clone();
        new == *old
    }

    /// upstream `hasAggregationRule` on the new object, or the old one: a
    /// role that had one carries controller-written rules its editor may not hold.
    fn involves_aggregation_rule(&self) -> bool {
        self.new.has_aggregation_rule()
            || self
                .old
                .as_ref()
                .is_some_and(ClusterRole::has_aggregation_rule)
    }

    /// Whether the object could newly feed some role, before listing any:
    /// every CREATE; an UPDATE only if its labels or its rules grow.
    fn may_feed(&self) -> bool {
        match &self.old {
            None => true,
            Some(old) => old.metadata.labels != self.new.metadata.labels || self.adds_rules(old),
        }
    }

    /// New rules grant something the old ones did not (reordering or
    /// splitting a rule adds nothing).
    fn adds_rules(&self, old: &ClusterRole) -> bool {
        covers(&old.rules, &self.new.rules).is_err()
    }

    /// The aggregated roles this change feeds and must be checked for.
    fn feeds<'s>(&self, store: &'s RbacStore, settings: &Settings) -> Vec<Feed<'s>> {
        let labels = &self.new.metadata.labels;
        let adds_rules = self.old.as_ref().is_none_or(|old| self.adds_rules(old));
        fed_by(store, labels, self.name())
            .into_iter()
            .filter(|t| !settings.allow_feeding.contains(&t.metadata.name))
            .filter_map(|target| {
                let selectors = selectors_of(target).ok()?;
                let fed_before = self
                    .old
                    .as_ref()
                    .is_some_and(|old| selectors.iter().any(|s| s.matches(&old.metadata.labels)));
                if fed_before && !adds_rules {
                    return None;
                }
                let selector = selectors.into_iter().find(|s| s.matches(labels))?;
                Some(Feed { target, selector })
            })
            .collect()
    }

    /// Step 1's `escalate` bypass. The name is the request's on UPDATE; a
    /// CREATE is a POST to the collection and has none, so an `escalate`
    /// grant restricted by resourceNames does not help there, as upstream.
    fn holds_escalate(&self, cluster: &dyn Cluster) -> Result<bool, Verdict> {
        let name = match self.old {
            Some(_) if !self.request.name.is_empty() => self.request.name.as_str(),
            Some(_) => self.new.metadata.name.as_str(),
            None => "",
        };
        let attrs = ResourceAttributes::new("escalate", RBAC_GROUP, "clusterroles").name(name);
        cluster
            .authorized(&self.request.user_info, attrs)
            .map_err(|e| {
                Verdict::context_unavailable(
                    "whether the user may escalate ClusterRoles (kubernetes/can_i)",
                    e,
                )
            })
    }

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

    /// Rule 2: the user's cluster-wide rules must cover full authority.
    fn check_full_authority(&self, store: &RbacStore) -> Option<String> {
        let held = store.rules_for(&self.request.user_info, "");
        let missing = covers(&held, &full_authority()).err()?;
        Some(format!(
            "{} requires cluster-admin privileges (\"must have cluster-admin privileges to use \
             the aggregationRule\"): an aggregated role receives whatever rules its selectors \
             match, now or later. {} lacks {} and the escalate verb on clusterroles. Remove \
             aggregationRule and list the rules directly, or have a cluster administrator apply \
             this ClusterRole.",
            self.aggregation_subject(),
            self.user_text(),
            rules_text(&missing)
        ))
    }

    /// Rule 3: cover the rules of every role the selectors match now. The
    /// selectors of the old object count too: removing an aggregationRule
    /// leaves the rules it collected in the object.
    fn check_covers_selected(&self, store: &RbacStore) -> Result<Option<String>, Verdict> {
        let mut selectors = selectors_of(&self.new).map_err(|e| {
            Verdict::bad_request(format!(
                "object.{e}; write a valid label selector (operators In, NotIn, Exists, DoesNotExist)"
            ))
        })?;
        if let Some(old) = &self.old {
            selectors.extend(selectors_of(old).unwrap_or_default());
        }
        let held = store.rules_for(&self.request.user_info, "");
        let holder = Holder::new(&held);
        let mut missing: Vec<PolicyRule> = Vec::new();
        let mut seen: HashSet<PolicyRule> = HashSet::new();
        let mut sources: Vec<&str> = Vec::new();
        for role in selected(store, &selectors, self.name()) {
            let uncovered = holder.uncovered(&role.rules);
            if uncovered.is_empty() {
                continue;
            }
            sources.push(&role.metadata.name);
            missing.extend(
                uncovered
                    .into_iter()
                    .filter(|atom| seen.insert(atom.clone())),
            );
        }
        if missing.is_empty() {
            return Ok(None);
        }
        Ok(Some(format!(
            "{} requires holding every rule its selectors collect (mode covers), but {} does \
             not hold these rules of the selected ClusterRole{} {}: {}. Narrow \
             aggregationRule.clusterRoleSelectors to roles whose rules you hold, obtain those \
             rules first, or have someone with the escalate verb on clusterroles apply it.",
            self.aggregation_subject(),
            self.user_text(),
            plural(sources.len()),
            names_text(&sources),
            rules_text(&missing)
        )))
    }

    /// Rule 4: for each fed role, `update` on it; the ones denied.
    fn feeds_without_update_right<'f, 's>(
        &self,
        cluster: &dyn Cluster,
        feeds: &'f [Feed<'s>],
    ) -> Result<Vec<&'f Feed<'s>>, Verdict> {
        let mut denied = Vec::new();
        for feed in feeds {
            let name = &feed.target.metadata.name;
            let attrs = ResourceAttributes::new("update", RBAC_GROUP, "clusterroles").name(name);
            let allowed = cluster
                .authorized(&self.request.user_info, attrs)
                .map_err(|e| {
                    Verdict::context_unavailable(
                        &format!(
                            "whether the user may update ClusterRole \"{name}\" (kubernetes/can_i)"
                        ),
                        e,
                    )
                })?;
            if !allowed {
                denied.push(feed);
            }
        }
        Ok(denied)
    }

    fn feeding_message(&self, denied: &[&Feed<'_>]) -> String {
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
    let rules = compact(atoms);
    let shown: Vec<String> = rules
        .iter()
        .take(SHOWN_RULES)
        .map(|r| r.to_string())
        .collect();
    let mut text = shown.join(", ");
    if rules.len() > SHOWN_RULES {
        text.push_str(&format!(" and {} more", rules.len() - SHOWN_RULES));
    }
    text
}

/// Role names, at most [`SHOWN_NAMES`].
fn names_text(names: &[&str]) -> String {
    let mut text = quoted_list(names.get(..SHOWN_NAMES).unwrap_or(names));
    if names.len() > SHOWN_NAMES {
        text.push_str(&format!(" and {} more", names.len() - SHOWN_NAMES));
    }
    text
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Probe, admission_request, assert_allowed, assert_denied, snapshot};
    use olm_guard_core::{NoCluster, UserInfo};
    use olm_guard_snapshot::Snapshot;
    use serde_json::{Value, json};

    /// Kubernetes' bootstrap ClusterRoles (admin/edit/view aggregation) and
    /// bindings, the cert-manager bundle roles, and the test users' grants.
    const BOOTSTRAP_ROLES: &str = include_str!("../../rbac/tests/fixtures/cluster-roles.yaml");
    const BOOTSTRAP_BINDINGS: &str =
        include_str!("../../rbac/tests/fixtures/cluster-role-bindings.openshift-kubernetes.yaml");
    const CERT_MANAGER_EDIT: &str =
        include_str!("../../../testdata/aggregation-escalation/_fixtures/cert-manager-edit.yaml");
    const CERT_MANAGER_VIEW: &str =
        include_str!("../../../testdata/aggregation-escalation/_fixtures/cert-manager-view.yaml");
    const CERT_MANAGER_CLUSTER_VIEW: &str = include_str!(
        "../../../testdata/aggregation-escalation/_fixtures/cert-manager-cluster-view.yaml"
    );
    const USERS: &str =
        include_str!("../../../testdata/aggregation-escalation/_fixtures/users.yaml");

    fn cluster() -> Snapshot {
        snapshot(&[
            BOOTSTRAP_ROLES,
            BOOTSTRAP_BINDINGS,
            CERT_MANAGER_VIEW,
            CERT_MANAGER_CLUSTER_VIEW,
            USERS,
        ])
    }

    fn yaml(text: &str) -> Value {
        serde_yaml::from_str(text).unwrap()
    }

    fn user(name: &str) -> UserInfo {
        UserInfo {
            username: name.into(),
            groups: vec!["system:authenticated".into()],
            ..UserInfo::default()
        }
    }

    fn request(operation: Operation, who: UserInfo, object: Value, old: Value) -> AdmissionRequest {
        let name = olm_guard_core::ObjectMeta::of(&object).name;
        admission_request(
            ["rbac.authorization.k8s.io", "v1", "ClusterRole"],
            "clusterroles",
            json!({
                "name": if operation == Operation::Create { String::new() } else { name },
                "operation": operation,
                "userInfo": who,
                "object": object,
                "oldObject": old,
            }),
        )
    }

    fn create(who: &str, object: Value) -> AdmissionRequest {
        request(Operation::Create, user(who), object, Value::Null)
    }

    fn update(who: &str, object: Value, old: Value) -> AdmissionRequest {
        request(Operation::Update, user(who), object, old)
    }

    fn strict() -> Settings {
        Settings::default()
    }

    fn covers_mode() -> Settings {
        Settings {
            mode: Mode::Covers,
            ..Settings::default()
        }
    }

    fn run(req: &AdmissionRequest, settings: &Settings) -> Verdict {
        validate(req, settings, &cluster())
    }

    fn aggregated(name: &str, selectors: Value) -> Value {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name},
            "aggregationRule": {"clusterRoleSelectors": selectors},
            "rules": [],
        })
    }

    fn cert_manager_aggregate() -> Value {
        aggregated(
            "cert-manager-all",
            json!([{"matchLabels": {"app.kubernetes.io/name": "cert-manager"}}]),
        )
    }

    // --- scope --------------------------------------------------------------

    #[test]
    fn other_kinds_subresources_and_deletes_are_untouched() {
        let mut req = create("nobody", aggregated("x", json!([{}])));
        req.kind.kind = "Role".into();
        assert_allowed(&validate(&req, &strict(), &NoCluster));
        let mut req = create("nobody", aggregated("x", json!([{}])));
        req.sub_resource = Some("status".into());
        assert_allowed(&validate(&req, &strict(), &NoCluster));
        let req = request(
            Operation::Delete,
            user("nobody"),
            Value::Null,
            aggregated("x", json!([{}])),
        );
        assert_allowed(&validate(&req, &strict(), &NoCluster));
    }

    // --- rule 1: bypasses -----------------------------------------------------

    #[test]
    fn system_masters_bypasses_everything() {
        let mut who = user("root");
        who.groups.push(SYSTEM_MASTERS.into());
        let req = request(
            Operation::Create,
            who,
            aggregated("x", json!([{}])),
            Value::Null,
        );
        // No lookup at all: NoCluster would fail any.
        assert_allowed(&validate(&req, &strict(), &NoCluster));
    }

    #[test]
    fn escalate_on_clusterroles_bypasses() {
        assert_allowed(&run(
            &create("escalator", aggregated("x", json!([{}]))),
            &strict(),
        ));
        let edit = yaml(CERT_MANAGER_EDIT);
        assert_allowed(&run(&create("escalator", edit), &strict()));
    }

    #[test]
    fn escalate_restricted_by_name_helps_on_update_only() {
        let old = aggregated("team-agg", json!([{"matchLabels": {"team": "a"}}]));
        let new = aggregated("team-agg", json!([{"matchLabels": {"team": "b"}}]));
        assert_allowed(&run(
            &update("named-escalator", new.clone(), old),
            &strict(),
        ));
        // A CREATE has no name, so the grant on "team-agg" does not apply.
        assert_denied(
            &run(&create("named-escalator", new), &strict()),
            &["aggregationRule"],
        );
        // On another role's update it does not apply either.
        let other_old = aggregated("other", json!([{"matchLabels": {"team": "a"}}]));
        let other_new = aggregated("other", json!([{"matchLabels": {"team": "b"}}]));
        assert_denied(
            &run(&update("named-escalator", other_new, other_old), &strict()),
            &["\"other\""],
        );
    }

    #[test]
    fn owner_references_and_finalizers_only_updates_pass() {
        let old = aggregated("team-agg", json!([{"matchLabels": {"team": "a"}}]));
        let mut new = old.clone();
        new["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "u"}]);
        new["metadata"]["finalizers"] = json!(["example.com/cleanup"]);
        new["metadata"]["resourceVersion"] = json!("42");
        assert_allowed(&validate(
            &update("nobody", new.clone(), old.clone()),
            &strict(),
            &NoCluster,
        ));
        // Anything else changing is checked.
        new["metadata"]["labels"] = json!({"x": "y"});
        assert_denied(
            &run(&update("nobody", new, old), &strict()),
            &["aggregationRule"],
        );
    }

    // --- rule 2: strict -------------------------------------------------------

    #[test]
    fn strict_needs_full_authority() {
        let v = run(&create("rbac-editor", cert_manager_aggregate()), &strict());
        let message = assert_denied(
            &v,
            &[
                "ClusterRole \"cert-manager-all\" sets aggregationRule",
                "must have cluster-admin privileges to use the aggregationRule",
                "user \"rbac-editor\" (groups=[system:authenticated])",
                r#"{APIGroups:["*"], Resources:["*"], Verbs:["*"]}"#,
                r#"{NonResourceURLs:["*"], Verbs:["*"]}"#,
                "Remove aggregationRule",
            ],
        );
        assert_eq!(v.code, Some(403), "{message}");
    }

    #[test]
    fn strict_checks_the_old_object_too() {
        let old = aggregated("team-agg", json!([{"matchLabels": {"team": "a"}}]));
        let new = json!({"metadata": {"name": "team-agg"}, "rules": []});
        assert_denied(
            &run(&update("rbac-editor", new, old), &strict()),
            &["ClusterRole \"team-agg\" had an aggregationRule, so changing it"],
        );
    }

    /// Whoever holds full authority also holds `escalate` and is waved
    /// through by rule 1, so the check itself is tested directly.
    #[test]
    fn full_authority_check() {
        let store = olm_guard_rbac::cluster::load(&cluster(), "").unwrap();
        let check = |who: &str| {
            let req = create(who, cert_manager_aggregate());
            let change = Change::new(&req, parse_role(&req.object, "object").unwrap(), None);
            change.check_full_authority(&store)
        };
        assert_eq!(check("cluster-admin-user"), None);
        assert!(check("rbac-editor").is_some());
        assert_allowed(&run(
            &create("cluster-admin-user", cert_manager_aggregate()),
            &strict(),
        ));
    }

    #[test]
    fn empty_selector_list_needs_nothing() {
        let role = aggregated("empty", json!([]));
        assert_allowed(&run(&create("creator", role.clone()), &strict()));
        assert_allowed(&run(
            &create(
                "creator",
                json!({"metadata": {"name": "plain"}, "rules": []}),
            ),
            &strict(),
        ));
    }

    // --- rule 3: covers -------------------------------------------------------

    #[test]
    fn covers_mode_allows_collecting_held_rules() {
        let mut s = cluster();
        s.add_yaml(CERT_MANAGER_EDIT).unwrap();
        let req = create("cert-manager-installer", cert_manager_aggregate());
        assert_allowed(&validate(&req, &covers_mode(), &s));
        // Strict mode still refuses it.
        assert!(!validate(&req, &strict(), &s).allowed);
    }

    #[test]
    fn covers_mode_lists_the_missing_rules_and_their_roles() {
        let role = aggregated(
            "views",
            json!([{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]),
        );
        let v = run(&create("cert-manager-installer", role), &covers_mode());
        let message = assert_denied(
            &v,
            &[
                "ClusterRole \"views\" sets aggregationRule",
                "(mode covers)",
                "selected ClusterRole \"system:aggregate-to-view\":",
                r#"{APIGroups:[""], Resources:["configmaps"], Verbs:["get" "list" "watch"]}"#,
                "aggregationRule.clusterRoleSelectors",
            ],
        );
        // cert-manager-view is selected too, but its rules are held.
        assert!(!message.contains("cert-manager-view"), "{message}");
    }

    #[test]
    fn covers_mode_empty_selector_selects_everything() {
        let v = run(
            &create("cert-manager-installer", aggregated("all", json!([{}]))),
            &covers_mode(),
        );
        assert_denied(
            &v,
            &[
                "selected ClusterRoles \"cluster-admin\", \"system:aggregate-to-admin\"",
                "and 19 more:",
                r#"{APIGroups:["*"], Resources:["*"], Verbs:["*""#,
                r#"{NonResourceURLs:["*"], Verbs:["*"]}"#,
            ],
        );
    }

    #[test]
    fn covers_mode_expressions() {
        let role = aggregated(
            "cm",
            json!([{"matchExpressions": [
                {"key": "app.kubernetes.io/name", "operator": "In", "values": ["cert-manager"]},
                {"key": "rbac.authorization.k8s.io/aggregate-to-edit", "operator": "DoesNotExist"},
            ]}]),
        );
        // Selects only cert-manager-cluster-view, whose rules the user holds.
        assert_allowed(&run(
            &create("cert-manager-installer", role),
            &covers_mode(),
        ));
        let role = aggregated(
            "cm",
            json!([{"matchExpressions": [
                {"key": "kubernetes.io/bootstrapping", "operator": "Exists"},
                {"key": "rbac.authorization.k8s.io/aggregate-to-edit", "operator": "NotIn", "values": ["false"]},
                {"key": "rbac.authorization.k8s.io/aggregate-to-edit", "operator": "Exists"},
            ]}]),
        );
        // Selects system:aggregate-to-edit (and view): not held.
        assert_denied(
            &run(&create("cert-manager-installer", role), &covers_mode()),
            &["\"system:aggregate-to-edit\""],
        );
    }

    #[test]
    fn covers_mode_rejects_invalid_selectors() {
        let role = aggregated(
            "bad",
            json!([{"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["b"]}]}]),
        );
        let v = run(&create("cert-manager-installer", role), &covers_mode());
        assert_denied(
            &v,
            &[
                "object.aggregationRule.clusterRoleSelectors[0]",
                "\"Equals\" is not a valid",
            ],
        );
        assert_eq!(v.code, Some(400));
    }

    #[test]
    fn covers_mode_ignores_the_role_itself() {
        // An update of an existing aggregated role that selects itself
        // needs nothing for its own rules.
        let old = json!({"metadata": {"name": "self-agg", "labels": {"agg": "me"}},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "me"}}]},
            "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]});
        let mut new = old.clone();
        new["metadata"]["annotations"] = json!({"note": "x"});
        let mut s = cluster();
        s.add(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": old["metadata"], "aggregationRule": old["aggregationRule"], "rules": old["rules"]})).unwrap();
        assert_allowed(&validate(
            &update("cert-manager-installer", new, old),
            &covers_mode(),
            &s,
        ));
    }

    // --- rule 4: feeding ------------------------------------------------------

    #[test]
    fn creating_a_feeding_role_needs_update_on_the_targets() {
        let v = run(
            &create("cert-manager-installer", yaml(CERT_MANAGER_EDIT)),
            &strict(),
        );
        assert_denied(
            &v,
            &[
                "ClusterRole \"cert-manager-edit\" would feed the aggregated ClusterRoles \"admin\", \"edit\"",
                "\"admin\" aggregates roles matching \"rbac.authorization.k8s.io/aggregate-to-admin=true\"",
                "may not update ClusterRoles \"admin\", \"edit\"",
                "metadata.labels",
                "allowFeeding",
            ],
        );
        assert_allowed(&run(
            &create("role-maintainer", yaml(CERT_MANAGER_EDIT)),
            &strict(),
        ));
    }

    #[test]
    fn allow_feeding_exempts_targets() {
        let settings = Settings {
            allow_feeding: vec!["admin".into(), "edit".into()],
            ..Settings::default()
        };
        assert_allowed(&run(
            &create("cert-manager-installer", yaml(CERT_MANAGER_EDIT)),
            &settings,
        ));
        let only_admin = Settings {
            allow_feeding: vec!["admin".into()],
            ..Settings::default()
        };
        let v = run(
            &create("cert-manager-installer", yaml(CERT_MANAGER_EDIT)),
            &only_admin,
        );
        let message = assert_denied(&v, &["the aggregated ClusterRole \"edit\" ("]);
        assert!(!message.contains("\"admin\""), "{message}");
    }

    #[test]
    fn labels_nobody_aggregates_are_free() {
        // aggregate-to-cluster-reader is an OpenShift role absent here.
        assert_allowed(&run(
            &create("cert-manager-installer", yaml(CERT_MANAGER_CLUSTER_VIEW)),
            &strict(),
        ));
    }

    #[test]
    fn feeding_updates() {
        let old = yaml(CERT_MANAGER_VIEW);
        // Metadata-only change of an existing feeder: nothing new flows.
        let mut annotated = old.clone();
        annotated["metadata"]["annotations"] = json!({"note": "x"});
        assert_allowed(&run(
            &update("cert-manager-installer", annotated, old.clone()),
            &strict(),
        ));
        // Removing a rule adds nothing either.
        let mut fewer = old.clone();
        fewer["rules"] = json!([fewer["rules"][0].clone()]);
        assert_allowed(&run(
            &update("cert-manager-installer", fewer, old.clone()),
            &strict(),
        ));
        // Adding a rule flows into admin, edit and view.
        let mut more = old.clone();
        more["rules"]
            .as_array_mut()
            .unwrap()
            .push(json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}));
        assert_denied(
            &run(
                &update("cert-manager-installer", more, old.clone()),
                &strict(),
            ),
            &[
                "adds rules that flow into the aggregated ClusterRoles \"admin\", \"edit\", \"view\"",
            ],
        );
        // Relabelling to feed one more role: only that role is checked.
        let mut edit_old = yaml(CERT_MANAGER_EDIT);
        edit_old["metadata"]["labels"]
            .as_object_mut()
            .unwrap()
            .remove("rbac.authorization.k8s.io/aggregate-to-admin");
        let v = run(
            &update("cert-manager-installer", yaml(CERT_MANAGER_EDIT), edit_old),
            &strict(),
        );
        let message = assert_denied(
            &v,
            &["is relabelled to feed the aggregated ClusterRole \"admin\""],
        );
        assert!(!message.contains("\"edit\""), "{message}");
    }

    #[test]
    fn both_problems_are_reported_together() {
        let mut role = cert_manager_aggregate();
        role["metadata"]["labels"] = json!({"rbac.authorization.k8s.io/aggregate-to-view": "true"});
        let v = run(&create("rbac-editor-no-update", role), &strict());
        assert_denied(
            &v,
            &[
                "must have cluster-admin privileges",
                " Also: ",
                "would feed the aggregated ClusterRole \"view\"",
            ],
        );
    }

    // --- bad input and failing lookups ---------------------------------------

    #[test]
    fn malformed_objects_are_named() {
        let mut req = create("rbac-editor", json!("role"));
        let v = validate(&req, &strict(), &NoCluster);
        assert_denied(&v, &["request.object must be a ClusterRole object"]);
        assert_eq!(v.code, Some(400));
        req.object = json!({"metadata": {"name": "x"}, "rules": [{"verbs": "get"}]});
        assert_denied(
            &validate(&req, &strict(), &NoCluster),
            &["rules[0].verbs: invalid type"],
        );
        req.object = json!({"aggregationRule": {"clusterRoleSelectors": {"matchLabels": {}}}});
        assert_denied(
            &validate(&req, &strict(), &NoCluster),
            &["aggregationRule.clusterRoleSelectors: invalid type"],
        );
        let req = update("rbac-editor", aggregated("x", json!([{}])), Value::Null);
        assert_denied(
            &validate(&req, &strict(), &NoCluster),
            &["request.oldObject must be a ClusterRole object"],
        );
        // nulls are absent, not errors
        let req = create(
            "creator",
            json!({"metadata": {"name": "n", "labels": null}, "rules": null, "aggregationRule": null}),
        );
        assert_allowed(&run(&req, &strict()));
    }

    #[test]
    fn failing_lookups_fail_closed() {
        let v = validate(
            &create("rbac-editor", cert_manager_aggregate()),
            &strict(),
            &NoCluster,
        );
        assert_denied(
            &v,
            &[
                "the cluster's ClusterRoles and ClusterRoleBindings",
                "fails closed",
            ],
        );
        assert_eq!(v.code, Some(500));

        // Lists from a snapshot, but every can_i fails.
        let snapshot = cluster();
        let no_can_i = Probe::new(&snapshot).failing_can_i("can_i is down");
        let v = validate(
            &create("rbac-editor", cert_manager_aggregate()),
            &strict(),
            &no_can_i,
        );
        assert_denied(
            &v,
            &[
                "whether the user may escalate ClusterRoles",
                "can_i is down",
            ],
        );
        // A plain role feeding nothing needs no can_i at all.
        let plain = json!({"metadata": {"name": "plain"}, "rules": []});
        assert_allowed(&validate(
            &create("rbac-editor", plain),
            &strict(),
            &no_can_i,
        ));
    }

    #[test]
    fn settings() {
        use olm_guard_core::settings::parse;
        assert_eq!(
            parse::<Settings>(&Value::Null).unwrap(),
            Settings::default()
        );
        let s: Settings = parse(&json!({"mode": "covers", "allowFeeding": ["admin"]})).unwrap();
        assert_eq!(s.mode, Mode::Covers);
        let err = parse::<Settings>(&json!({"mode": "loose"})).unwrap_err();
        assert!(err.contains("unknown variant `loose`"), "{err}");
        let err = parse::<Settings>(&json!({"allowFeding": []})).unwrap_err();
        assert!(err.contains("unknown field `allowFeding`"), "{err}");
        let err = parse::<Settings>(&json!({"allowFeeding": [""]})).unwrap_err();
        assert!(err.contains("allowFeeding contains an empty name"), "{err}");
    }

    /// 5,000 ClusterRoles and 5,000 bindings still reach the right verdicts
    /// (speed is measured by `olm-guard bench --workload rbac-5k`, not here).
    #[test]
    fn large_cluster_reaches_the_right_verdicts() {
        let mut objects = Vec::new();
        for i in 0..5000 {
            objects.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": format!("role-{i}"), "labels": {"team": format!("t{}", i % 50)}},
                "rules": [{"verbs": ["get"], "apiGroups": ["example.com"], "resources": [format!("r{i}")]}]}));
            objects.push(
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": format!("b-{i}")},
                "subjects": [{"kind": "User", "name": format!("u-{}", i % 100)}],
                "roleRef": {"kind": "ClusterRole", "name": format!("role-{i}")}}),
            );
        }
        for i in 0..20 {
            objects.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": format!("agg-{i}")},
                "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"team": format!("t{i}")}}]}}));
        }
        let s = Snapshot::from_objects(objects);
        let everything = aggregated("everything", json!([{}]));
        let v = validate(&create("u-1", everything), &covers_mode(), &s);
        assert_denied(&v, &["and 4930 more"]);
        let feeder = json!({"metadata": {"name": "feeder", "labels": {"team": "t3"}}, "rules": []});
        assert_denied(
            &validate(&create("u-1", feeder), &strict(), &s),
            &["\"agg-3\""],
        );
    }
}
