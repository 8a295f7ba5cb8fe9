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

use super::{Check, Enforcement, GenerateError, Native, cel_string, object_shape, user_text};
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
    let budget = (crate::cost::RUNTIME_BUDGET / crate::cost::AUTHZ_CHECK_COST - 3) as usize;
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
    let fed = |labels: &str| -> String {
        let entries: Vec<String> = aggregators
            .iter()
            .filter(|(name, _)| !settings.allow_feeding.contains(name))
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
    let labels_of = |x: &str| {
        format!(
            "({x} != null && has({x}.metadata) && {x}.metadata != null && \
             has({x}.metadata.labels) && {x}.metadata.labels != null ? {x}.metadata.labels : \
             {{}})"
        )
    };
    let meta = |x: &str, field: &str, default: &str| {
        format!(
            "(has({x}.metadata) && {x}.metadata != null && has({x}.metadata.{field}) && \
             {x}.metadata.{field} != null ? {x}.metadata.{field} : {default})"
        )
    };
    let list = |r: &str, field: &str| {
        format!("(has({r}.{field}) && {r}.{field} != null ? {r}.{field} : [])")
    };
    let rules_of = |x: &str| format!("(has({x}.rules) && {x}.rules != null ? {x}.rules : [])");
    let aggregation_of = |x: &str| {
        format!(
            "(has({x}.aggregationRule) && {x}.aggregationRule != null && \
             has({x}.aggregationRule.clusterRoleSelectors) && \
             {x}.aggregationRule.clusterRoleSelectors != null && \
             size({x}.aggregationRule.clusterRoleSelectors) > 0)"
        )
    };
    // What the module compares for a garbage-collector-only update: every
    // field it reads but ownerReferences, finalizers and uid.
    // What the module compares for a garbage-collector-only update: every
    // field it reads but ownerReferences, finalizers and uid, field by
    // field (Kubernetes' CEL wants list literals of one type).
    let same_fields = {
        let same = |a: String, b: String| format!("{a} == {b}");
        let rules = |x: &str| {
            format!(
                "{}.map(r, [{}, {}, {}, {}, {}])",
                rules_of(x),
                list("r", "verbs"),
                list("r", "apiGroups"),
                list("r", "resources"),
                list("r", "resourceNames"),
                list("r", "nonResourceURLs"),
            )
        };
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
            same(
                meta("object", field, default),
                meta("oldObject", field, default),
            )
        })
        .into_iter()
        .chain([
            same(rules("object"), rules("oldObject")),
            same(aggregation("object"), aggregation("oldObject")),
        ])
        .collect::<Vec<_>>()
        .join(" && ")
    };
    // rbac `covers`: every atom of the new rules is covered by one old rule.
    let cov_url = format!(
        "('*' in {ov} || v in {ov}) && size({on}) == 0 && {ou}.exists(x, x == u || \
         (x.endsWith('*') && u.startsWith(x.substring(0, size(x) - 1))))",
        ov = list("o", "verbs"),
        on = list("o", "resourceNames"),
        ou = list("o", "nonResourceURLs"),
    );
    let covered_by_old = format!(
        "{new}.all(r, {groups}.all(g, {resources}.all(res, {verbs}.all(v, size({names}) == 0 ? \
         {old}.exists(o, {cov_unnamed}) : {names}.all(n, {old}.exists(o, {cov_named}))))) && \
         {urls}.all(u, {verbs}.all(v, {old}.exists(o, {cov_url}))))",
        new = rules_of("object"),
        old = rules_of("oldObject"),
        groups = list("r", "apiGroups"),
        resources = list("r", "resources"),
        verbs = list("r", "verbs"),
        names = list("r", "resourceNames"),
        urls = list("r", "nonResourceURLs"),
        cov_unnamed = owner_covers("o", "v", "g", "res", None),
        cov_named = owner_covers("o", "v", "g", "res", Some("n")),
        cov_url = cov_url,
    );
    let clusterroles = |name: &str, verb: &str| {
        format!(
            "authorizer.group({}).resource('clusterroles').name({name}).check({}).allowed()",
            cel_string(RBAC_GROUP),
            cel_string(verb)
        )
    };
    let variables = vec![
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
        named(
            "gcOnly",
            &format!("request.operation == 'UPDATE' && {same_fields}"),
        ),
        named(
            "addsRules",
            &format!("request.operation == 'UPDATE' && !({covered_by_old})"),
        ),
        named(
            "masters",
            "has(request.userInfo.groups) && \
             'system:masters' in request.userInfo.groups",
        ),
        // The aggregated ClusterRoles the object feeds and must be checked for.
        named(
            "feeds",
            &format!(
                "request.operation == 'CREATE' || variables.labels != variables.oldLabels || \
                 variables.addsRules ? ({}).filter(t, t != variables.selfName && \
                 (variables.addsRules || request.operation == 'CREATE' || !(t in ({})))) : []",
                fed("variables.labels"),
                fed("variables.oldLabels"),
            ),
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
             size(variables.feeds) == 0) || variables.escalate",
        ),
        // Full authority, one authorizer check per variable (each check
        // costs 350,000 of an expression's 1,000,000).
        named(
            "holdsAllResources",
            "authorizer.group('*').resource('*').check('*').allowed()",
        ),
        named("holdsAllURLs", "authorizer.path('*').check('*').allowed()"),
        named(
            "fullAuthority",
            "variables.holdsAllResources && variables.holdsAllURLs",
        ),
    ];
    let mut variables = variables;
    // `update` on each aggregated role the object feeds, one check each.
    let fed_names: Vec<&String> = aggregators
        .iter()
        .map(|(name, _)| name)
        .filter(|name| !settings.allow_feeding.contains(name))
        .collect();
    for (i, name) in fed_names.iter().enumerate() {
        variables.push(named(
            &format!("mayUpdate{i}"),
            &format!(
                "!({} in variables.feeds) || {}",
                cel_string(name),
                clusterroles(&cel_string(name), "update")
            ),
        ));
    }
    let denied: Vec<String> = fed_names
        .iter()
        .enumerate()
        .map(|(i, name)| format!("(variables.mayUpdate{i} ? [] : [{}])", cel_string(name)))
        .collect();
    variables.push(named(
        "deniedFeeds",
        &if denied.is_empty() {
            "[]".to_string()
        } else {
            denied.join(" + ")
        },
    ));
    let aggregation_problem = format!(
        "'ClusterRole \"' + variables.selfName + '\" ' + (variables.setsAggregation ? 'sets \
         aggregationRule, which' : 'had an aggregationRule, so changing it') + ' requires \
         cluster-admin privileges (\"must have cluster-admin privileges to use the \
         aggregationRule\"): an aggregated role receives whatever rules its selectors match, now \
         or later. ' + {user} + ' lacks ' + [variables.holdsAllResources ? '' : \
         '{{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}}', variables.holdsAllURLs ? \
         '' : '{{NonResourceURLs:[\"*\"], Verbs:[\"*\"]}}'].filter(x, x != '').join(', ') + ' and the escalate verb on \
         clusterroles. Remove aggregationRule and list the rules directly, or have a cluster \
         administrator apply this ClusterRole.'",
        user = user_text(),
    );
    let names = "variables.deniedFeeds.map(t, '\"' + t + '\"').join(', ')";
    let feeding_problem = format!(
        "'ClusterRole \"' + variables.selfName + '\" ' + (request.operation == 'CREATE' ? \
         'would feed' : variables.addsRules ? 'adds rules that flow into' : 'is relabelled to \
         feed') + ' the aggregated ClusterRole' + (size(variables.deniedFeeds) == 1 ? '' : 's') \
         + ' ' + {names} + ': the aggregation controller copies its rules into ' + {names} + ', \
         granting them to everyone bound to ' + (size(variables.deniedFeeds) == 1 ? 'it' : \
         'them') + '. ' + {user} + ' may not update ClusterRole' + \
         (size(variables.deniedFeeds) == 1 ? '' : 's') + ' ' + {names} + ' and does not hold \
         the escalate verb on clusterroles. ' + (request.operation == 'CREATE' ? 'Remove the \
         matching labels from metadata.labels' : variables.addsRules ? 'Leave the new rules \
         out, remove the matching labels from metadata.labels' : 'Remove the added labels from \
         metadata.labels') + ', have someone allowed to update ' + {names} + ' apply this \
         ClusterRole, or list ' + {names} + ' in the policy setting allowFeeding.'",
        user = user_text(),
    );
    let validations = vec![
        Validation {
            expression: format!(
                "({}) && (request.operation != 'UPDATE' || (oldObject != null && ({}))) && \
                 ({})",
                object_shape("object"),
                object_shape("oldObject"),
                rules_shape("object"),
            ),
            message: Some(
                "request.object (and, on UPDATE, request.oldObject) must be a ClusterRole: \
                 metadata and the rules' fields as the RBAC API defines them"
                    .into(),
            ),
            message_expression: None,
            reason: Some("Invalid".into()),
        },
        Validation {
            expression: "variables.bypassed || ((!variables.involvesAggregation || \
                         variables.fullAuthority) && size(variables.deniedFeeds) == 0)"
                .into(),
            message: Some(
                "this ClusterRole would grant more than the requester holds through aggregation"
                    .into(),
            ),
            message_expression: Some(format!(
                "((variables.involvesAggregation && !variables.fullAuthority ? \
                 [{aggregation_problem}] : []) + (size(variables.deniedFeeds) > 0 ? \
                 [{feeding_problem}] : [])).join(' Also: ')"
            )),
            reason: Some("Forbidden".into()),
        },
    ];
    let policy = BoundPolicy::new(
        "olm-guard-aggregation-escalation",
        RULE,
        "an aggregationRule, or labels that feed an aggregated ClusterRole, grant no more than \
         the requester holds",
        PolicySpec::fail_closed(
            MatchResources {
                resource_rules: vec![rule_for(RBAC_GROUP, "clusterroles", &["CREATE", "UPDATE"])],
            },
            variables,
            validations,
        ),
        &["Deny"],
    );
    Ok(Native {
        rule: RULE,
        policies: vec![policy],
        schema_patches: Vec::new(),
        checks: CHECKS,
    })
}

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

/// The rules of a ClusterRole are a list of maps whose fields are lists of
/// strings, as the RBAC API decodes them.
pub(super) fn rules_shape(x: &str) -> String {
    format!(
        "!has({x}.rules) || {x}.rules == null || (type({x}.rules) == list && {x}.rules.all(r, \
         type(r) == map && ['verbs', 'apiGroups', 'resources', 'resourceNames', \
         'nonResourceURLs'].all(f, !(f in r) || r[f] == null || (type(r[f]) == list && \
         r[f].all(s, type(s) == string)))))"
    )
}
