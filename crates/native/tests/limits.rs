//! The largest inputs each native policy decides within the API server's
//! CEL cost limits (1,000,000 per expression, 10,000,000 per evaluation,
//! the authorizer's check at 350,000 from Kubernetes 1.32), measured with
//! the cost the API server charges (`olm_guard_native::interpreter`), and
//! what happens above them: a denial that says the object is too large for
//! the native policy and to run the module, never an out-of-budget error
//! and never a verdict about the object. docs/native.md states the limits;
//! every real object of `testdata/` stays far below them.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use olm_guard_core::UserInfo;
use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_native::admission::{EvaluationReport, NoParams, Outcome, Policies};
use olm_guard_native::authorizer::{Authorize, AuthorizerError};
use olm_guard_native::cost::PER_CALL_LIMIT;
use olm_guard_native::policies::{aggregation_escalation, catalog_union, scope_rbac};
use olm_guard_native::{KubernetesVersion, Options, generate};

/// A requester who holds every ordinary permission but no escalation:
/// not `escalate`, not `update` (of the aggregated roles), not `*`.
struct Ordinary;

impl Authorize for Ordinary {
    fn resource(&self, _: &UserInfo, a: &ResourceAttributes) -> Result<bool, AuthorizerError> {
        Ok(!matches!(a.verb.as_str(), "escalate" | "update" | "*"))
    }

    fn non_resource(&self, _: &UserInfo, _: &str, _: &str) -> Result<bool, AuthorizerError> {
        Ok(false)
    }
}

/// The versions whose cost rules differ: the authorizer's check charged
/// (1.32+) or not (1.30-1.31).
fn versions() -> [Options; 2] {
    [
        Options::default(),
        Options::version(KubernetesVersion::new(31)),
    ]
}

fn request(kind: (&str, &str, &str, &str), operation: &str, object: Value, old: Value) -> Value {
    let (group, version, name, resource) = kind;
    let kind = json!({"group": group, "version": version, "kind": name});
    json!({"uid": "1", "kind": kind, "requestKind": kind, "name": "x", "namespace": "",
           "resource": {"group": group, "version": version, "resource": resource},
           "operation": operation,
           "userInfo": {"username": "dev", "groups": ["system:authenticated"]},
           "object": object, "oldObject": old})
}

const CLUSTER_ROLE: (&str, &str, &str, &str) = (
    "rbac.authorization.k8s.io",
    "v1",
    "ClusterRole",
    "clusterroles",
);

/// Every evaluation's report; fails on an out-of-budget stop or an
/// expression over its limit, which on a cluster is an error, not a
/// decision.
fn decided(policies: &Policies, request: &Value, options: Options) -> (Outcome, u64) {
    let report = policies.evaluate_detailed(request, Arc::new(Ordinary), &NoParams, options);
    let evaluations: Vec<&EvaluationReport> = report
        .policies
        .iter()
        .flat_map(|p| &p.evaluations)
        .collect();
    let mut most = 0;
    for evaluation in evaluations {
        assert!(
            evaluation.out_of_budget.is_none(),
            "out of budget: {:?}",
            evaluation.out_of_budget
        );
        for expression in &evaluation.expressions {
            assert!(
                !expression.over_limit && expression.error.is_none(),
                "{} ({:?}): cost {} {:?}",
                expression.field,
                expression.phase,
                expression.cost,
                expression.error
            );
            most = most.max(expression.cost);
        }
    }
    (report.outcome, most)
}

fn denial(outcome: &Outcome) -> &str {
    match outcome {
        Outcome::Denied { message } => message,
        other => panic!("not denied: {other:?}"),
    }
}

/// A ClusterRole labelled to feed `view`, with `rules` rules of
/// `resources` resources and `verbs` verbs each.
fn feeding_role(rules: usize, resources: usize, verbs: usize, note: &str) -> Value {
    let all = [
        "get", "list", "watch", "create", "update", "patch", "delete",
    ];
    let rules: Vec<Value> = (0..rules)
        .map(|i| {
            let resources: Vec<String> = (0..resources).map(|r| format!("r{r}")).collect();
            json!({"apiGroups": [format!("g{i}.example.com")], "resources": resources,
                   "verbs": all[..verbs]})
        })
        .collect();
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
           "metadata": {"name": "x",
                        "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"},
                        "annotations": {"note": note}},
           "rules": rules})
}

#[test]
fn an_annotation_update_of_a_large_feeding_role_is_admitted_on_every_version() {
    // The case the API server denied: 90 rules x 1 resource x 7 verbs, or
    // 45 x 4 x 7, labelled into view, from a requester who is neither in
    // system:masters nor holds escalate.
    let native = generate("aggregation-escalation", &Value::Null, None).unwrap();
    let policies = Policies::compile(&native.policies).unwrap();
    for (rules, resources) in [(90, 1), (45, 4), (2_000, 4)] {
        let update = request(
            CLUSTER_ROLE,
            "UPDATE",
            feeding_role(rules, resources, 7, "after"),
            feeding_role(rules, resources, 7, "before"),
        );
        for options in versions() {
            let (outcome, _) = decided(&policies, &update, options);
            assert!(
                matches!(outcome, Outcome::Allowed { .. }),
                "{rules} x {resources} x 7 on {options:?}: {outcome:?}"
            );
        }
    }
}

/// An update of a feeding role with `stored` rules, the last of which
/// grants everything (so every atom is covered, but only by the last rule:
/// the walk's worst case), adding `changed` rules of `atoms` verbs each.
fn walk(stored: usize, changed: usize, atoms: usize) -> Value {
    let mut old = feeding_role(stored - 1, 1, 7, "");
    let rules = old["rules"].as_array_mut().unwrap();
    rules.push(json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}));
    let mut new = old.clone();
    let verbs: Vec<String> = (0..atoms).map(|v| format!("verb{v}")).collect();
    for i in 0..changed {
        new["rules"]
            .as_array_mut()
            .unwrap()
            .push(json!({"apiGroups": [format!("new{i}")], "resources": ["r"], "verbs": verbs}));
    }
    request(CLUSTER_ROLE, "UPDATE", new, old)
}

#[test]
fn rule_comparisons_are_decided_up_to_the_stated_limits_and_larger_ones_say_so() {
    let native = generate("aggregation-escalation", &Value::Null, None).unwrap();
    let policies = Policies::compile(&native.policies).unwrap();
    let too_large = "more than this ValidatingAdmissionPolicy can do within the API server's CEL \
                     cost limits";
    // Changed-rule atoms x stored rules: 35 x 7 x 100 = 24,500 is judged
    // (everything is covered: allowed), 36 x 7 x 100 = 25,200 is not.
    let limit = aggregation_escalation::MAX_ATOM_PAIRS;
    assert!((35 * 7 * 100..36 * 7 * 100).contains(&limit));
    for options in versions() {
        let (outcome, most) = decided(&policies, &walk(100, 35, 7), options);
        assert!(matches!(outcome, Outcome::Allowed { .. }), "{outcome:?}");
        assert!(most < PER_CALL_LIMIT, "{most}");
        let (outcome, _) = decided(&policies, &walk(100, 36, 7), options);
        assert!(denial(&outcome).contains(too_large), "{outcome:?}");
    }
    // New x stored rules: 701 x 700 = 490,700 is judged, 711 x 710 is not.
    let limit = aggregation_escalation::MAX_RULE_PAIRS;
    assert!((701 * 700..711 * 710).contains(&limit));
    let (outcome, most) = decided(&policies, &walk(700, 1, 1), Options::default());
    assert!(matches!(outcome, Outcome::Allowed { .. }), "{outcome:?}");
    assert!(most < PER_CALL_LIMIT, "{most}");
    let (outcome, _) = decided(&policies, &walk(710, 1, 1), Options::default());
    assert!(denial(&outcome).contains(too_large), "{outcome:?}");
}

/// A ScopeTemplate of `atoms` permissions: one rule, one resource, that
/// many verbs.
fn template(atoms: usize) -> Value {
    let verbs: Vec<String> = (0..atoms).map(|v| format!("verb{v}")).collect();
    json!({"apiVersion": "operators.io.operator-framework/v1alpha1", "kind": "ScopeTemplate",
           "metadata": {"name": "t"},
           "spec": {"clusterRoles": [{"generateName": "operator-manager",
                                      "rules": [{"apiGroups": ["apps"], "resources": ["deployments"],
                                                 "verbs": verbs}]}]}})
}

#[test]
fn scope_templates_are_checked_atom_by_atom_up_to_the_stated_limit() {
    let native = generate("scope-rbac", &Value::Null, None).unwrap();
    let policies = Policies::compile(&native.policies).unwrap();
    let kind = (
        "operators.io.operator-framework",
        "v1alpha1",
        "ScopeTemplate",
        "scopetemplates",
    );
    for options in versions() {
        for atoms in [1, scope_rbac::MAX_ATOMS] {
            let create = request(kind, "CREATE", template(atoms), Value::Null);
            let (outcome, most) = decided(&policies, &create, options);
            assert!(
                matches!(outcome, Outcome::Allowed { .. }),
                "{atoms}: {outcome:?}"
            );
            assert!(most < PER_CALL_LIMIT);
        }
        let larger = request(
            kind,
            "CREATE",
            template(scope_rbac::MAX_ATOMS + 1),
            Value::Null,
        );
        let (outcome, _) = decided(&policies, &larger, options);
        assert!(
            denial(&outcome).contains("its rules grant 27 permissions")
                && denial(&outcome).contains("run the scope-rbac module"),
            "{outcome:?}"
        );
        // Within the limit, a permission the author lacks is named.
        let mut escalating = template(3);
        escalating["spec"]["clusterRoles"][0]["rules"][0]["verbs"] = json!(["get", "escalate"]);
        let (outcome, _) = decided(
            &policies,
            &request(kind, "CREATE", escalating, Value::Null),
            options,
        );
        assert!(
            denial(&outcome).contains(
                "needs [{APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"escalate\"]}]"
            ),
            "{outcome:?}"
        );
    }
}

#[test]
fn catalog_sources_are_judged_up_to_the_stated_length_and_longer_ones_say_so() {
    let native = generate("catalog-union", &Value::Null, None).unwrap();
    let policies = Policies::compile(&native.policies).unwrap();
    let kind = (
        "operators.coreos.com",
        "v1alpha1",
        "CatalogSource",
        "catalogsources",
    );
    let source = |address: String| {
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
               "metadata": {"name": "c", "namespace": "olm"},
               "spec": {"sourceType": "grpc", "address": address}})
    };
    let limit = catalog_union::MAX_SOURCE_LENGTH;
    // The address is the costliest field: its form is read by regular
    // expressions.
    let longest = format!("{}:50051", "a".repeat(limit - 6));
    let (outcome, most) = decided(
        &policies,
        &request(kind, "CREATE", source(longest), Value::Null),
        Options::default(),
    );
    assert!(matches!(outcome, Outcome::Allowed { .. }), "{outcome:?}");
    assert!(most < PER_CALL_LIMIT, "{most}");
    let longer = format!("{}:50051", "a".repeat(limit));
    let (outcome, _) = decided(
        &policies,
        &request(kind, "CREATE", source(longer), Value::Null),
        Options::default(),
    );
    assert!(
        denial(&outcome).contains("spec.address is longer than the 100000 characters"),
        "{outcome:?}"
    );
}

/// Every object of kind `kind` in the YAML and JSON files below `dir`.
fn objects(dir: &Path, kind: &str, out: &mut Vec<Value>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            objects(&path, kind, out);
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let documents: Vec<Value> = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str::<Value>(&text).into_iter().collect()
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            serde_yaml_ng::Deserializer::from_str(&text)
                .filter_map(|d| serde::Deserialize::deserialize(d).ok())
                .collect()
        } else {
            continue;
        };
        let mut stack = documents;
        while let Some(value) = stack.pop() {
            match value {
                Value::Object(map) => {
                    if map.get("kind").and_then(Value::as_str) == Some(kind) {
                        out.push(Value::Object(map.clone()));
                    }
                    stack.extend(map.into_iter().map(|(_, v)| v));
                }
                Value::Array(items) => stack.extend(items),
                _ => {}
            }
        }
    }
}

#[test]
fn every_real_object_of_testdata_stays_far_below_the_limits() {
    let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
    let size = |v: &Value, field: &str| v.get(field).and_then(Value::as_array).map_or(0, Vec::len);

    let mut roles = Vec::new();
    objects(&testdata, "ClusterRole", &mut roles);
    assert!(roles.len() > 50, "found {} ClusterRoles", roles.len());
    let most_rules = roles.iter().map(|r| size(r, "rules")).max().unwrap();
    assert!(
        most_rules * most_rules * 10 <= aggregation_escalation::MAX_RULE_PAIRS,
        "{most_rules}"
    );

    let mut templates = Vec::new();
    objects(&testdata, "ScopeTemplate", &mut templates);
    assert!(!templates.is_empty());
    for template in &templates {
        let atoms = scope_rbac::template_atoms(&json!({"object": template}));
        // Real templates (oria's samples) are small; the limit is the
        // budget's, not theirs.
        assert!(atoms <= scope_rbac::MAX_ATOMS * 4, "{atoms}");
    }

    let mut sources = Vec::new();
    objects(&testdata, "CatalogSource", &mut sources);
    assert!(sources.len() > 20);
    let longest = sources
        .iter()
        .filter_map(|s| s.get("spec").and_then(Value::as_object))
        .flat_map(|spec| spec.values().filter_map(Value::as_str).map(str::len))
        .max()
        .unwrap();
    assert!(
        longest * 100 <= catalog_union::MAX_SOURCE_LENGTH,
        "{longest}"
    );
}
