//! aggregation-escalation, natively (mode `strict`): a ClusterRole with an
//! `aggregationRule` only from a requester holding full authority, and a
//! ClusterRole that feeds an aggregated ClusterRole only from a requester
//! who may `update` that role, with the bypasses of
//! `olm_guard_rules::aggregation_escalation` (system:masters, `escalate` on
//! clusterroles, garbage-collector-only updates, updates that add neither
//! labels nor rules). The aggregated ClusterRoles and their selectors are
//! written into the policy when it is generated: Kubernetes' bootstrap
//! `admin`, `edit` and `view`, or those of a cluster snapshot.

use olm_guard_core::selector::{LabelSelector, Selector};
use olm_guard_rbac::{ClusterRole, RBAC_GROUP, from_json};
use olm_guard_rules::aggregation_escalation::{Mode, Settings};
use serde_json::Value as Json;

use super::{Check, Enforcement, GenerateError, Native, cel_string, user_text};
use crate::model::{BoundPolicy, MatchResources, PolicySpec, Validation, named, rule_for};

/// The rule's name.
pub const RULE: &str = "aggregation-escalation";

/// Every check of the rule and where it is enforced.
pub const CHECKS: &[Check] = &[
    Check::new(
        "bypasses: system:masters, escalate on clusterroles, updates of garbage-collector fields \
         only (rule 1)",
        Enforcement::Policy,
        "userInfo, the authorizer, and object against oldObject",
    ),
    Check::new(
        "mode strict: an aggregationRule (set, changed or removed) only by a requester holding \
         full authority (rule 2)",
        Enforcement::Policy,
        "two authorizer checks, * on *.* and * on the non-resource URL *, ask exactly what \
         covering full authority asks of the RBAC authorizer",
    ),
    Check::new(
        "mode covers: an aggregationRule only by a requester holding every rule its selectors \
         collect (rule 3)",
        Enforcement::ModuleOnly,
        "the collected rules are those of the ClusterRoles the selectors match at request time; \
         CEL cannot list them",
    ),
    Check::new(
        "a ClusterRole whose labels feed an aggregated ClusterRole only by a requester who may \
         update that role, unless it is listed in allowFeeding; an update that adds neither \
         labels nor rules is not checked (rule 4)",
        Enforcement::Policy,
        "the aggregated ClusterRoles' selectors are written into the policy when it is \
         generated (bootstrap admin, edit and view, or those of --cluster); regenerate it when \
         an aggregated ClusterRole is added or its selectors change",
    ),
];

/// The bootstrap aggregated roles of Kubernetes (kubernetes
/// `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`,
/// `ClusterRoles`): `admin`, `edit` and `view` aggregate the roles labelled
/// `rbac.authorization.k8s.io/aggregate-to-<name>: "true"`.
fn bootstrap_aggregators() -> Vec<(String, Vec<LabelSelector>)> {
    ["admin", "edit", "view"]
        .into_iter()
        .map(|name| {
            let selector = LabelSelector {
                match_labels: [(
                    format!("rbac.authorization.k8s.io/aggregate-to-{name}"),
                    "true".to_string(),
                )]
                .into(),
                match_expressions: Vec::new(),
            };
            (name.to_string(), vec![selector])
        })
        .collect()
}

/// The aggregated ClusterRoles of a cluster: those with a non-empty,
/// valid `aggregationRule`, as the module's `fed_by` counts them.
fn aggregators_of(objects: &[Json]) -> Vec<(String, Vec<LabelSelector>)> {
    let mut found: Vec<(String, Vec<LabelSelector>)> = objects
        .iter()
        .filter(|o| {
            o.get("kind").and_then(Json::as_str) == Some("ClusterRole")
                && o.get("apiVersion").and_then(Json::as_str)
                    == Some("rbac.authorization.k8s.io/v1")
        })
        .filter_map(|o| from_json::<ClusterRole>(o).ok())
        .filter(ClusterRole::has_aggregation_rule)
        .filter_map(|role| {
            let selectors = role.aggregation_rule?.cluster_role_selectors;
            selectors
                .iter()
                .all(|s| Selector::from_label_selector(s).is_ok())
                .then_some((role.metadata.name, selectors))
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// A LabelSelector on `labels` (a CEL map) as CEL, with the API server's
/// semantics (an empty selector matches everything).
fn selector_matches(labels: &str, selector: &LabelSelector) -> String {
    let mut terms: Vec<String> = selector
        .match_labels
        .iter()
        .map(|(k, v)| {
            let k = cel_string(k);
            format!("({k} in {labels} && {labels}[{k}] == {})", cel_string(v))
        })
        .collect();
    for e in &selector.match_expressions {
        let k = cel_string(&e.key);
        let values = format!(
            "[{}]",
            e.values
                .iter()
                .map(|v| cel_string(v))
                .collect::<Vec<_>>()
                .join(", ")
        );
        terms.push(match e.operator.as_str() {
            "In" => format!("({k} in {labels} && {labels}[{k}] in {values})"),
            "NotIn" => format!("(!({k} in {labels}) || !({labels}[{k}] in {values}))"),
            "Exists" => format!("({k} in {labels})"),
            _ => format!("!({k} in {labels})"),
        });
    }
    if terms.is_empty() {
        "true".into()
    } else {
        terms.join(" && ")
    }
}

/// The policies for `settings`, with the aggregated ClusterRoles of
/// `cluster` (a snapshot's objects) or, without one, Kubernetes' bootstrap
/// ones.
pub fn generate(settings: &Settings, cluster: Option<&[Json]>) -> Result<Native, GenerateError> {
    if settings.mode == Mode::Covers {
        return Err(GenerateError::NotNative {
            rule: RULE,
            setting: "mode: covers",
            reason: "it needs the rules of the ClusterRoles the selectors match at request \
                     time, which CEL cannot list; use mode: strict natively, or the module",
        });
    }
    let aggregators = match cluster {
        Some(objects) => aggregators_of(objects),
        None => bootstrap_aggregators(),
    };
    // One authorizer check per aggregated role, three more for escalate and
    // full authority: each costs 350,000 of the 10,000,000 one evaluation
    // may spend.
    let budget = (crate::budget::RUNTIME_BUDGET / crate::budget::AUTHZ_CHECK_COST - 3) as usize;
    if aggregators.len() > budget {
        return Err(GenerateError::NotNative {
            rule: RULE,
            setting: "the cluster's aggregated ClusterRoles",
            reason: "more than 25 aggregated ClusterRoles need more authorizer checks than the \
                     API server lets one policy evaluation make (each costs 350,000 of \
                     10,000,000); list the ones anyone may feed in allowFeeding, or run the \
                     module",
        });
    }
    let fed_names: Vec<&(String, Vec<LabelSelector>)> = aggregators
        .iter()
        .filter(|(name, _)| !settings.allow_feeding.contains(name))
        .collect();
    // The aggregated roles whose selectors match `labels` (a CEL map), by
    // name: the module's `fed_by`.
    let fed = |labels: &str| -> String {
        let entries: Vec<String> = fed_names
            .iter()
            .map(|(name, selectors)| {
                let any = selectors
                    .iter()
                    .map(|s| format!("({})", selector_matches(labels, s)))
                    .collect::<Vec<_>>()
                    .join(" || ");
                format!("({any} ? [{}] : [])", cel_string(name))
            })
            .collect();
        if entries.is_empty() {
            "[]".into()
        } else {
            entries.join(" + ")
        }
    };
    let labels_of = |x: &str| format!("(has({x}.metadata.labels) ? {x}.metadata.labels : {{}})");
    let meta = |x: &str, field: &str, default: &str| {
        format!("(has({x}.metadata.{field}) ? {x}.metadata.{field} : {default})")
    };
    let list = |r: &str, field: &str| format!("(has({r}.{field}) ? {r}.{field} : [])");
    let rules_of = |x: &str| format!("(has({x}.rules) ? {x}.rules : [])");
    let aggregation_of = |x: &str| {
        format!(
            "(has({x}.aggregationRule) && has({x}.aggregationRule.clusterRoleSelectors) && \
             size({x}.aggregationRule.clusterRoleSelectors) > 0)"
        )
    };
    // What the module compares for a garbage-collector-only update: every
    // field it reads but ownerReferences, finalizers and uid.
    let same_fields = {
        let aggregation =
            |x: &str| format!("(has({x}.aggregationRule) ? {x}.aggregationRule : null)");
        [
            ("name", "''"),
            ("generateName", "''"),
            ("namespace", "''"),
            ("labels", "{}"),
            ("annotations", "{}"),
        ]
        .map(|(field, default)| {
            format!(
                "{} == {}",
                meta("object", field, default),
                meta("oldObject", field, default)
            )
        })
        .into_iter()
        .chain([
            "variables.rulesUnchanged".to_string(),
            format!("{} == {}", aggregation("object"), aggregation("oldObject")),
        ])
        .collect::<Vec<_>>()
        .join(" && ")
    };
    // rbac `covers`: every atom of the changed rules is covered by one
    // stored rule.
    let cov_url = format!(
        "('*' in {ov} || v in {ov}) && size({on}) == 0 && {ou}.exists(x, x == u || \
         (x.endsWith('*') && u.startsWith(x.substring(0, size(x) - 1))))",
        ov = list("o", "verbs"),
        on = list("o", "resourceNames"),
        ou = list("o", "nonResourceURLs"),
    );
    let covered_by_old = format!(
        "variables.changedRules.all(r, {groups}.all(g, {resources}.all(res, {verbs}.all(v, \
         size({names}) == 0 ? variables.oldRules.exists(o, {cov_unnamed}) : {names}.all(n, \
         variables.oldRules.exists(o, {cov_named}))))) && {urls}.all(u, {verbs}.all(v, \
         variables.oldRules.exists(o, {cov_url}))))",
        groups = list("r", "apiGroups"),
        resources = list("r", "resources"),
        verbs = list("r", "verbs"),
        names = list("r", "resourceNames"),
        urls = list("r", "nonResourceURLs"),
        cov_unnamed = owner_covers("o", "v", "g", "res", None),
        cov_named = owner_covers("o", "v", "g", "res", Some("n")),
        cov_url = cov_url,
    );
    // The atoms of one rule: verbs × (groups × resources × names, at least
    // one, + non-resource URLs).
    let atoms = format!(
        "size({v}) * (size({g}) * size({res}) * (size({n}) == 0 ? 1 : size({n})) + size({u}))",
        v = list("r", "verbs"),
        g = list("r", "apiGroups"),
        res = list("r", "resources"),
        n = list("r", "resourceNames"),
        u = list("r", "nonResourceURLs"),
    );
    let clusterroles = |name: &str, verb: &str| {
        format!(
            "authorizer.group({}).resource('clusterroles').name({name}).check({}).allowed()",
            cel_string(RBAC_GROUP),
            cel_string(verb)
        )
    };
    let mut variables = vec![
        named(
            "selfName",
            &format!(
                "{} != '' ? {} : request.name",
                meta("object", "name", "''"),
                meta("object", "name", "''")
            ),
        ),
        named("labels", &labels_of("object")),
        named(
            "oldLabels",
            &format!(
                "request.operation == 'UPDATE' ? {} : {{}}",
                labels_of("oldObject")
            ),
        ),
        named("setsAggregation", &aggregation_of("object")),
        named(
            "involvesAggregation",
            &format!(
                "variables.setsAggregation || (request.operation == 'UPDATE' && {})",
                aggregation_of("oldObject")
            ),
        ),
        named("newRules", &rules_of("object")),
        named(
            "oldRules",
            &format!(
                "request.operation == 'UPDATE' ? {} : []",
                rules_of("oldObject")
            ),
        ),
        // Cheap first: an update that leaves the rules as they are (an
        // annotation, a finalizer, a label) adds none, whatever their size.
        named(
            "rulesUnchanged",
            "request.operation == 'UPDATE' && variables.newRules == variables.oldRules",
        ),
        named(
            "gcOnly",
            &format!("request.operation == 'UPDATE' && {same_fields}"),
        ),
        named(
            "masters",
            "has(request.userInfo.groups) && 'system:masters' in request.userInfo.groups",
        ),
        // The aggregated roles this object's labels feed, before and after.
        named(
            "fedNow",
            &format!(
                "({}).filter(t, t != variables.selfName)",
                fed("variables.labels")
            ),
        ),
        named(
            "newlyFed",
            &format!(
                "request.operation == 'CREATE' ? variables.fedNow : variables.fedNow.filter(t, \
                 !(t in ({})))",
                fed("variables.oldLabels")
            ),
        ),
        // Whether comparing the rules would not fit one CEL expression's
        // cost: finding the changed rules costs about one per (new, stored)
        // pair, the comparison about 30 per (atom, stored rule) pair.
        named(
            "tooManyRules",
            &format!("size(variables.newRules) * size(variables.oldRules) > {MAX_RULE_PAIRS}"),
        ),
        // The rules an update writes that the stored object does not have:
        // only these can add anything.
        named(
            "changedRules",
            "variables.rulesUnchanged || variables.tooManyRules ? [] : \
             variables.newRules.filter(r, !(r in variables.oldRules))",
        ),
        named(
            "tooLarge",
            &format!(
                "variables.tooManyRules || variables.changedRules.exists(r, {atoms} * \
                 size(variables.changedRules) * size(variables.oldRules) > {MAX_ATOM_PAIRS})"
            ),
        ),
        named(
            "addsRules",
            &format!(
                "request.operation == 'UPDATE' && size(variables.changedRules) > 0 && \
                 !variables.tooLarge && !({covered_by_old})"
            ),
        ),
        // The aggregated roles the object feeds and must be checked for:
        // on CREATE every one; on UPDATE the newly fed ones, and all when
        // the update adds rules. The comparison runs only when its answer
        // matters.
        named(
            "feeds",
            "size(variables.fedNow) == 0 || request.operation == 'CREATE' || \
             size(variables.newlyFed) == size(variables.fedNow) ? variables.fedNow : \
             variables.addsRules ? variables.fedNow : variables.newlyFed",
        ),
        // The comparison is needed (an update that changes rules of a role
        // already feeding an aggregated role) but too large to make.
        named(
            "undecidable",
            "request.operation == 'UPDATE' && size(variables.fedNow) > \
             size(variables.newlyFed) && !variables.rulesUnchanged && variables.tooLarge",
        ),
        named(
            "escalate",
            &clusterroles(
                "request.operation == 'UPDATE' ? (request.name != '' ? request.name : \
                 variables.selfName) : ''",
                "escalate",
            ),
        ),
        named(
            "bypassed",
            "variables.gcOnly || variables.masters || (!variables.involvesAggregation && \
             size(variables.feeds) == 0 && !variables.undecidable) || variables.escalate",
        ),
        // Full authority, one authorizer check per variable (each check
        // costs 350,000 of an expression's 1,000,000).
        named(
            "holdsAllResources",
            "authorizer.group('*').resource('*').check('*').allowed()",
        ),
        named("holdsAllURLs", "authorizer.path('*').check('*').allowed()"),
    ];
    // `update` on each aggregated role, one check each, asked only for a
    // role the object feeds.
    for (i, (name, _)) in fed_names.iter().enumerate() {
        variables.push(named(
            &format!("mayUpdate{i}"),
            &clusterroles(&cel_string(name), "update"),
        ));
    }
    // Whoever may update every role the object feeds may feed them, added
    // rules or not.
    let may_update_all = if fed_names.is_empty() {
        "true".to_string()
    } else {
        fed_names
            .iter()
            .enumerate()
            .map(|(i, (name, _))| {
                format!(
                    "(!({} in variables.fedNow) || variables.mayUpdate{i})",
                    cel_string(name)
                )
            })
            .collect::<Vec<_>>()
            .join(" && ")
    };
    // Messages read only what the API server gives a messageExpression:
    // the request and the variables that need no authorizer.
    let user = user_text();
    let aggregation_message = |lacks: &str| {
        format!(
            "'ClusterRole \"' + variables.selfName + '\" ' + (variables.setsAggregation ? 'sets \
             aggregationRule, which' : 'had an aggregationRule, so changing it') + ' requires \
             cluster-admin privileges (\"must have cluster-admin privileges to use the \
             aggregationRule\"): an aggregated role receives whatever rules its selectors \
             match, now or later. ' + {user} + ' lacks {lacks} and the escalate verb on \
             clusterroles. Remove aggregationRule and list the rules directly, or have a \
             cluster administrator apply this ClusterRole.'"
        )
    };
    const ALL_RESOURCES: &str = "{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}";
    const ALL_URLS: &str = "{NonResourceURLs:[\"*\"], Verbs:[\"*\"]}";
    let aggregation = |condition: &str, lacks: &str| Validation {
        expression: format!("variables.bypassed || !variables.involvesAggregation || {condition}"),
        message: Some(
            "this ClusterRole's aggregationRule requires cluster-admin privileges".into(),
        ),
        message_expression: Some(aggregation_message(lacks)),
        reason: Some("Forbidden".into()),
    };
    let mut validations = vec![
        Validation {
            expression: format!(
                "!variables.undecidable || variables.gcOnly || variables.masters || \
                 variables.escalate || ({})",
                may_update_all
            ),
            message: Some(TOO_LARGE.into()),
            message_expression: Some(format!(
                "'ClusterRole \"' + variables.selfName + '\" changes its rules (' + \
                 string(size(variables.newRules)) + ', ' + string(size(variables.oldRules)) + \
                 ' stored) while feeding ' + variables.fedNow.map(t, '\"' + t + '\"').join(', ') \
                 + ': comparing them with the stored rules is more than this \
                 ValidatingAdmissionPolicy can do within the API server\\'s CEL cost limits (at \
                 most {MAX_RULE_PAIRS} new x stored rules, and {MAX_ATOM_PAIRS} changed-rule atoms \
                 x stored rules); run olm-guard\\'s aggregation-escalation module to judge it, or \
                 have a cluster administrator apply this ClusterRole'"
            )),
            reason: Some("Forbidden".into()),
        },
        aggregation(
            "variables.holdsAllResources || variables.holdsAllURLs",
            &format!("{ALL_RESOURCES}, {ALL_URLS}"),
        ),
        aggregation(
            "variables.holdsAllResources || !variables.holdsAllURLs",
            ALL_RESOURCES,
        ),
        aggregation(
            "!variables.holdsAllResources || variables.holdsAllURLs",
            ALL_URLS,
        ),
    ];
    // One validation per aggregated role and situation, so that each
    // message is static but for the request's own fields.
    for (i, (name, selectors)) in fed_names.iter().enumerate() {
        let quoted = format!("\\\"{name}\\\"");
        let how = selectors
            .iter()
            .map(|s| {
                let text = match Selector::from_label_selector(s) {
                    Ok(selector) if selector.is_everything() => "{} (every ClusterRole)".into(),
                    Ok(selector) => format!("\\\"{selector}\\\""),
                    Err(_) => "its selector".into(),
                };
                (selector_matches("variables.labels", s), text)
            })
            .rev()
            .fold(String::from("''"), |rest, (matches, text)| {
                format!("({matches} ? '{text}' : {rest})")
            });
        for (situation, what, fix) in [
            (
                "request.operation != 'CREATE'",
                "would feed",
                "Remove the matching labels from metadata.labels",
            ),
            (
                "request.operation != 'UPDATE' || !variables.addsRules",
                "adds rules that flow into",
                "Leave the new rules out, remove the matching labels from metadata.labels",
            ),
            (
                "request.operation != 'UPDATE' || variables.addsRules",
                "is relabelled to feed",
                "Remove the added labels from metadata.labels",
            ),
        ] {
            validations.push(Validation {
                expression: format!(
                    "variables.bypassed || !({} in variables.feeds) || {situation} || \
                     variables.mayUpdate{i}",
                    cel_string(name)
                ),
                message: Some(format!(
                    "this ClusterRole feeds the aggregated ClusterRole \"{name}\", which the \
                     requester may not update"
                )),
                message_expression: Some(format!(
                    "'ClusterRole \"' + variables.selfName + '\" {what} the aggregated \
                     ClusterRole {quoted} ({quoted} aggregates roles matching ' + {how} + '): \
                     the aggregation controller copies its rules into {quoted}, granting them \
                     to everyone bound to it. ' + {user} + ' may not update ClusterRole \
                     {quoted} and does not hold the escalate verb on clusterroles. {fix}, have \
                     someone allowed to update {quoted} apply this ClusterRole, or list \
                     {quoted} in the policy setting allowFeeding.'"
                )),
                reason: Some("Forbidden".into()),
            });
        }
    }
    let policy = BoundPolicy::new(
        "olm-guard-aggregation-escalation",
        RULE,
        "an aggregationRule, or labels that feed an aggregated ClusterRole, grant no more than \
         the requester holds",
        PolicySpec::fail_closed(
            MatchResources {
                resource_rules: vec![rule_for(
                    RBAC_GROUP,
                    "v1",
                    "clusterroles",
                    &["CREATE", "UPDATE"],
                )],
            },
            variables,
            std::mem::take(&mut validations),
        ),
        &["Deny"],
    );
    Ok(Native {
        rule: RULE,
        policies: vec![policy],
        schema_patches: Vec::new(),
        mutations: Vec::new(),
        mutation_previews: Vec::new(),
        checks: CHECKS,
    })
}

/// The most new × stored rules an update may have for the native policy
/// to find its changed rules (about one unit of cel-go's cost per pair, of
/// the 1,000,000 one expression may spend; `crates/native/tests/limits.rs`
/// has Kubernetes decide an update at this limit and refuse a larger one).
pub const MAX_RULE_PAIRS: usize = 500_000;
/// The most (atom of a changed rule) × (stored rule) pairs the native
/// policy compares (about 30 each); an atom is a verb × group × resource ×
/// name, or a verb × non-resource URL.
pub const MAX_ATOM_PAIRS: usize = 25_000;
/// The static message of the denial above those sizes.
const TOO_LARGE: &str = "this ClusterRole is too large for the native policy to judge: run \
                         olm-guard's aggregation-escalation module";

/// rbac `OwnerRule::covers` for one atom (verb `v`, group `g`, resource
/// `res`, name `n` or none) and one owner rule `o`.
fn owner_covers(o: &str, v: &str, g: &str, res: &str, name: Option<&str>) -> String {
    let list =
        |field: &str| format!("(has({o}.{field}) && {o}.{field} != null ? {o}.{field} : [])");
    let names = match name {
        None => format!("size({}) == 0", list("resourceNames")),
        Some(n) => format!("(size({l}) == 0 || {n} in {l})", l = list("resourceNames")),
    };
    format!(
        "('*' in {verbs} || {v} in {verbs}) && ('*' in {groups} || {g} in {groups}) && ('*' in \
         {resources} || {res} in {resources} || ({res}.indexOf('/') >= 0 && '*/' + \
         {res}.substring({res}.indexOf('/') + 1) in {resources})) && {names}",
        verbs = list("verbs"),
        groups = list("apiGroups"),
        resources = list("resources"),
    )
}
