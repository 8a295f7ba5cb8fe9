//! The largest inputs each native policy decides within the API server's
//! CEL cost limits, and what happens above them, asked of Kubernetes' own
//! admission code (`olm_guard_kube_harness`: the validating policy
//! dispatcher of k8s.io/apiserver v0.36, which charges every expression
//! its actual cost and fails a policy that runs out): an input at a stated
//! limit is decided (admitted, where nothing else is wrong with it), and a
//! larger one is denied with a message that says the object is too large
//! for the native policy and to run the module, never with an
//! out-of-budget error and never with a verdict about the object.
//!
//! Kubernetes 1.36's cost rules are the strictest of the supported
//! versions: an authorizer check costs 350,000 from 1.32
//! (`StrictCostEnforcementForVAP`, locked on) and 1 on 1.30-1.31 with the
//! gate off (`olm_guard_native::budget`), so what 1.36 decides, every
//! version decides. docs/native.md states the limits; every real object of
//! `testdata/` stays far below them.

mod common;

use serde_json::{Value, json};

use olm_guard_kube_harness::{Admitted, AuthorizerAnswer, KubeHarness};
use olm_guard_native::budget::{AUTHZ_CHECK_COST, PER_CALL_LIMIT, RUNTIME_BUDGET, checks_written};
use olm_guard_native::model::BoundPolicy;
use olm_guard_native::policies::{aggregation_escalation, catalog_union, scope_rbac};
use olm_guard_native::{Native, generate};

use common::{admitted, every_native_form, root};

/// A requester who holds every ordinary permission but no escalation:
/// not `escalate`, not `update` (of the aggregated roles), not `*`, and no
/// non-resource URL.
fn ordinary(check: &AuthorizerAnswer) -> Result<bool, String> {
    Ok(check.path.is_empty() && !matches!(check.verb.as_str(), "escalate" | "update" | "*"))
}

fn request(kind: (&str, &str, &str, &str), operation: &str, object: Value, old: Value) -> Value {
    let (group, version, name, resource) = kind;
    let kind = json!({"group": group, "version": version, "kind": name});
    let namespace = object
        .pointer("/metadata/namespace")
        .cloned()
        .unwrap_or(json!(""));
    json!({"uid": "1", "kind": kind, "requestKind": kind, "name": object["metadata"]["name"],
           "namespace": namespace,
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

/// Kubernetes' answer to `request` on a cluster with `native`, the
/// requester [`ordinary`].
fn judged(kube: &mut KubeHarness, native: &Native, request: Value) -> Admitted {
    admitted(kube, native, request, &mut ordinary).0
}

/// Admitted, with nothing to say: no denial, no schema error, no warning.
fn assert_admitted(answer: &Admitted, what: &str) {
    assert!(
        answer.allowed && answer.schema_error.is_none() && answer.warnings.is_empty(),
        "{what}: {answer:?}"
    );
}

/// How the API server fails an expression over its limit (google/cel-go
/// `interpreter/runtimecost.go`, `CostLimitExceeded`) and an evaluation
/// over its budget (k8s.io/apiserver `pkg/admission/plugin/cel/activation.go`):
/// `the_api_servers_limits_are_the_ones_the_policies_are_written_to` shows
/// both.
const BUDGET_ERRORS: [&str; 2] = ["cost limit exceeded", "running out of cost budget"];

/// The denial's message, which is the policy's own, not the API server's
/// budget error.
fn denial(answer: &Admitted) -> &str {
    let message = answer
        .status
        .as_ref()
        .map(|s| s.message.as_str())
        .unwrap_or_else(|| panic!("not denied: {answer:?}"));
    assert!(
        !BUDGET_ERRORS.iter().any(|error| message.contains(error)),
        "an out-of-budget error, not the policy's denial: {message}"
    );
    message
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
fn an_annotation_update_of_a_large_feeding_role_is_admitted() {
    // The case the API server denied: 90 rules x 1 resource x 7 verbs, or
    // 45 x 4 x 7, labelled into view, from a requester who is neither in
    // system:masters nor holds escalate.
    let mut kube = KubeHarness::start().unwrap_or_else(|e| panic!("{e}"));
    let native = generate("aggregation-escalation", &Value::Null, None).unwrap();
    for (rules, resources) in [(90, 1), (45, 4), (2_000, 4)] {
        let update = request(
            CLUSTER_ROLE,
            "UPDATE",
            feeding_role(rules, resources, 7, "after"),
            feeding_role(rules, resources, 7, "before"),
        );
        assert_admitted(
            &judged(&mut kube, &native, update),
            &format!("{rules} x {resources} x 7"),
        );
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
    let mut kube = KubeHarness::start().unwrap_or_else(|e| panic!("{e}"));
    let native = generate("aggregation-escalation", &Value::Null, None).unwrap();
    let too_large = "more than this ValidatingAdmissionPolicy can do within the API server's CEL \
                     cost limits";
    // Changed-rule atoms x stored rules: 35 x 7 x 100 = 24,500 is judged
    // (everything is covered: allowed), 36 x 7 x 100 = 25,200 is not.
    let limit = aggregation_escalation::MAX_ATOM_PAIRS;
    assert!((35 * 7 * 100..36 * 7 * 100).contains(&limit));
    assert_admitted(
        &judged(&mut kube, &native, walk(100, 35, 7)),
        "35 x 7 x 100",
    );
    let larger = judged(&mut kube, &native, walk(100, 36, 7));
    assert!(denial(&larger).contains(too_large), "{larger:?}");
    // New x stored rules: 701 x 700 = 490,700 is judged, 711 x 710 is not.
    let limit = aggregation_escalation::MAX_RULE_PAIRS;
    assert!((701 * 700..711 * 710).contains(&limit));
    assert_admitted(&judged(&mut kube, &native, walk(700, 1, 1)), "701 x 700");
    let larger = judged(&mut kube, &native, walk(710, 1, 1));
    assert!(denial(&larger).contains(too_large), "{larger:?}");
}

/// A ScopeTemplate of `atoms` permissions: one rule, one resource, that
/// many verbs.
fn template(atoms: usize) -> Value {
    let verbs: Vec<String> = (0..atoms).map(|v| format!("verb{v}")).collect();
    json!({"apiVersion": "operators.io.operator-framework/v1alpha1", "kind": "ScopeTemplate",
           "metadata": {"name": "t"},
           "spec": {"clusterRoles": [{"generateName": "operator-manager",
                                      "rules": [{"apiGroups": ["apps"], "resources": ["deployments"],
                                                 "verbs": verbs}],
                                      "subjects": [{"kind": "ServiceAccount", "name": "operator",
                                                    "namespace": "operators"}]}]}})
}

#[test]
fn scope_templates_are_checked_atom_by_atom_up_to_the_stated_limit() {
    let mut kube = KubeHarness::start().unwrap_or_else(|e| panic!("{e}"));
    let native = generate("scope-rbac", &Value::Null, None).unwrap();
    let kind = (
        "operators.io.operator-framework",
        "v1alpha1",
        "ScopeTemplate",
        "scopetemplates",
    );
    // Every atom a check of its own (the verbs are the requester's):
    // escalate and 26 atoms, 27 x 350,000 of the 10,000,000.
    for atoms in [1, scope_rbac::MAX_ATOMS] {
        let create = request(kind, "CREATE", template(atoms), Value::Null);
        let (answer, asked) = admitted(&mut kube, &native, create, &mut ordinary);
        assert_admitted(&answer, &format!("{atoms}"));
        assert_eq!(asked.len(), atoms + 1, "{asked:?}");
    }
    let larger = request(
        kind,
        "CREATE",
        template(scope_rbac::MAX_ATOMS + 1),
        Value::Null,
    );
    let larger = judged(&mut kube, &native, larger);
    assert!(
        denial(&larger).contains("its rules grant 27 permissions")
            && denial(&larger).contains("run the scope-rbac module"),
        "{larger:?}"
    );
    // Within the limit, a permission the author lacks is named.
    let mut escalating = template(3);
    escalating["spec"]["clusterRoles"][0]["rules"][0]["verbs"] = json!(["get", "escalate"]);
    let escalating = judged(
        &mut kube,
        &native,
        request(kind, "CREATE", escalating, Value::Null),
    );
    assert!(
        denial(&escalating).contains(
            "needs [{APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"escalate\"]}]"
        ),
        "{escalating:?}"
    );
}

#[test]
fn catalog_sources_are_judged_up_to_the_stated_length_and_longer_ones_say_so() {
    let mut kube = KubeHarness::start().unwrap_or_else(|e| panic!("{e}"));
    let native = generate("catalog-union", &Value::Null, None).unwrap();
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
    assert_admitted(
        &judged(
            &mut kube,
            &native,
            request(kind, "CREATE", source(longest), Value::Null),
        ),
        "the longest address",
    );
    let longer = format!("{}:50051", "a".repeat(limit));
    let longer = judged(
        &mut kube,
        &native,
        request(kind, "CREATE", source(longer), Value::Null),
    );
    assert!(
        denial(&longer).contains("spec.address is longer than the 100000 characters"),
        "{longer:?}"
    );
}

/// A ConfigMap written by "dev", judged by one policy with `validations`
/// (each an expression), Kubernetes' answer with every check allowed.
fn configmap_judged(kube: &mut KubeHarness, validations: &[String]) -> Admitted {
    let rules = json!([{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                        "resources": ["configmaps"]}]);
    let validations: Vec<Value> = validations
        .iter()
        .map(|expression| json!({"expression": expression}))
        .collect();
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "budget"},
        "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": rules},
                 "validations": validations},
    });
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "budget"},
        "spec": {"policyName": "budget", "validationActions": ["Deny"]},
    });
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "c", "namespace": "ns"}});
    let mut admit = olm_guard_kube_harness::Admit {
        request: request(
            ("", "v1", "ConfigMap", "configmaps"),
            "CREATE",
            object,
            Value::Null,
        ),
        validating_policies: vec![policy],
        validating_bindings: vec![binding],
        ..Default::default()
    };
    olm_guard_kube_harness::authorizer::admit_answering(kube, &mut admit, &mut |_| Ok(true))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// An expression of `checks` authorizer checks (each on a resource of its
/// own), true when all are allowed.
fn checks(first: usize, checks: usize) -> String {
    (first..first + checks)
        .map(|i| format!("authorizer.group('').resource('r{i}').check('get').allowed()"))
        .collect::<Vec<_>>()
        .join(" && ")
}

#[test]
fn the_api_servers_limits_are_the_ones_the_policies_are_written_to() {
    // The stated limits rest on these: an expression may make
    // PER_CALL_LIMIT / AUTHZ_CHECK_COST checks (2), an evaluation
    // RUNTIME_BUDGET / AUTHZ_CHECK_COST (28; scope-rbac's templates use 27,
    // aggregation-escalation leaves 3 for its own).
    let mut kube = KubeHarness::start().unwrap_or_else(|e| panic!("{e}"));
    let per_expression = (PER_CALL_LIMIT / AUTHZ_CHECK_COST) as usize;
    let per_evaluation = (RUNTIME_BUDGET / AUTHZ_CHECK_COST) as usize;
    assert_eq!((per_expression, per_evaluation), (2, 28));

    let fits = configmap_judged(&mut kube, &[checks(0, per_expression)]);
    assert!(fits.allowed, "{fits:?}");
    let over = configmap_judged(&mut kube, &[checks(0, per_expression + 1)]);
    let message = over.status.map(|s| s.message).unwrap_or_default();
    assert!(message.contains(BUDGET_ERRORS[0]), "{message}");

    let one_each = |n: usize| (0..n).map(|i| checks(i, 1)).collect::<Vec<_>>();
    let fits = configmap_judged(&mut kube, &one_each(per_evaluation));
    assert!(fits.allowed, "{fits:?}");
    let over = configmap_judged(&mut kube, &one_each(per_evaluation + 1));
    let message = over.status.map(|s| s.message).unwrap_or_default();
    assert!(message.contains(BUDGET_ERRORS[1]), "{message}");
}

/// Every expression of `bound` that writes an authorizer check inside a
/// comprehension.
fn checks_in_comprehensions(bound: &BoundPolicy) -> Vec<String> {
    let spec = &bound.policy.spec;
    spec.variables
        .iter()
        .map(|v| (format!("variables.{}", v.name), &v.expression))
        .chain(
            spec.validations
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("validations[{i}].expression"), &v.expression)),
        )
        .filter(|(_, expression)| checks_written(expression).1)
        .map(|(field, _)| field)
        .collect()
}

#[test]
fn no_authorizer_check_runs_once_per_element() {
    // A check in a comprehension would cost 350,000 per element of a list
    // the object sets the length of.
    for native in every_native_form() {
        for bound in &native.policies {
            let found = checks_in_comprehensions(bound);
            assert!(
                found.is_empty(),
                "{}: an authorizer check inside a comprehension in {found:?}",
                bound.policy.metadata.name
            );
        }
    }
    let mut native = generate("group-authorization", &Value::Null, None).unwrap();
    let validation = &mut native.policies[0].policy.spec.validations[0];
    validation.expression =
        "['a', 'b', 'c'].all(g, authorizer.group(g).resource('r').check('get').allowed())".into();
    assert_eq!(
        checks_in_comprehensions(&native.policies[0]),
        ["validations[0].expression"]
    );
}

/// Every object of kind `kind` in the YAML and JSON files below `dir`.
fn objects(dir: &std::path::Path, kind: &str, out: &mut Vec<Value>) {
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
    let testdata = root().join("testdata");
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
