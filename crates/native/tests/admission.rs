//! The evaluator behaves as the API server does on the cases the generated
//! policies rely on: matching, match conditions, messages (evaluated on
//! every request, without the authorizer, in a fresh composition context),
//! Deny and Warn, params, lazy variables, the authorizer library, the
//! strings functions, the cost of an evaluation per Kubernetes version and
//! the budget, and the warning limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use olm_guard_core::UserInfo;
use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_native::admission::{
    Action, Evaluation, NoParams, OUT_OF_BUDGET, Options, Outcome, Params, Phase, Policies,
    evaluate,
};
use olm_guard_native::authorizer::{Authorize, AuthorizerError};
use olm_guard_native::cost::KubernetesVersion;
use olm_guard_native::model::{
    BoundPolicy, MatchResources, ParamKind, ParamRef, PolicySpec, Validation, named, rule_for,
};

/// Allows `get` on anything, and `/healthz`; counts its calls.
#[derive(Default)]
struct Fake {
    calls: AtomicUsize,
}

impl Authorize for Fake {
    fn resource(
        &self,
        user: &UserInfo,
        attributes: &ResourceAttributes,
    ) -> Result<bool, AuthorizerError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if user.username == "broken" {
            return Err(AuthorizerError("the authorizer is unreachable".into()));
        }
        Ok(attributes.verb == "get"
            || (attributes.subresource.as_deref() == Some("scale") && attributes.verb == "patch"))
    }

    fn non_resource(&self, _: &UserInfo, verb: &str, path: &str) -> Result<bool, AuthorizerError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Ok(verb == "get" && path == "/healthz")
    }
}

struct Widgets(Vec<Value>);
impl Params for Widgets {
    fn params(&self, _: &str, kind: &str, _: &Value) -> Vec<Value> {
        if kind == "Widget" {
            self.0.clone()
        } else {
            Vec::new()
        }
    }
}

fn policy(validations: Vec<Validation>, actions: &[&str]) -> BoundPolicy {
    BoundPolicy::new(
        "p",
        "test",
        "a test policy",
        PolicySpec {
            failure_policy: "Fail".into(),
            param_kind: None,
            match_constraints: MatchResources {
                resource_rules: vec![rule_for(
                    "example.com",
                    "v1",
                    "widgets",
                    &["CREATE", "UPDATE"],
                )],
            },
            match_conditions: Vec::new(),
            variables: vec![named("size", "has(object.spec) ? object.spec.size : 0")],
            validations,
        },
        actions,
    )
}

fn check(expression: &str) -> Validation {
    Validation {
        expression: expression.into(),
        message: Some("fixed message".into()),
        message_expression: None,
        reason: None,
    }
}

fn request(operation: &str, object: Value, user: &str) -> Value {
    json!({
        "operation": operation,
        "resource": {"group": "example.com", "version": "v1", "resource": "widgets"},
        "name": "w",
        "userInfo": {"username": user, "groups": ["team"]},
        "object": object,
        "oldObject": null,
    })
}

fn run(policies: &[BoundPolicy], request: &Value) -> Outcome {
    evaluate(policies, request, Arc::new(Fake::default()), &NoParams).unwrap()
}

fn denied(outcome: &Outcome) -> &str {
    match outcome {
        Outcome::Denied { message } => message,
        other => panic!("not denied: {other:?}"),
    }
}

#[test]
fn only_matching_requests_are_judged() {
    let p = [policy(vec![check("false")], &["Deny"])];
    let mut other = request("CREATE", json!({}), "alice");
    other["resource"]["resource"] = json!("gadgets");
    assert_eq!(run(&p, &other), Outcome::NotMatched);
    let mut status = request("UPDATE", json!({}), "alice");
    status["subResource"] = json!("status");
    assert_eq!(run(&p, &status), Outcome::NotMatched);
    assert_eq!(
        run(&p, &request("DELETE", json!(null), "alice")),
        Outcome::NotMatched
    );
    assert!(matches!(
        run(&p, &request("CREATE", json!({}), "alice")),
        Outcome::Denied { .. }
    ));
}

#[test]
fn messages_are_the_api_servers() {
    let mut v = check("variables.size < 3");
    v.message_expression = Some("'size ' + string(variables.size) + ' is too big'".into());
    let p = [policy(vec![v.clone()], &["Deny"])];
    let big = request("CREATE", json!({"spec": {"size": 5}}), "alice");
    assert_eq!(
        denied(&run(&p, &big)),
        "widgets.example.com \"w\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'p' denied request: size 5 is too big"
    );
    // A messageExpression that errors falls back to message.
    v.message_expression = Some("object.nope".into());
    assert!(denied(&run(&[policy(vec![v.clone()], &["Deny"])], &big)).ends_with("fixed message"));
    // Without either, the expression is quoted.
    v.message = None;
    assert!(
        denied(&run(&[policy(vec![v], &["Deny"])], &big))
            .ends_with("failed expression: variables.size < 3")
    );
    // An error fails closed (failurePolicy: Fail) and says so.
    let p = [policy(vec![check("object.spec.nope == 1")], &["Deny"])];
    assert!(denied(&run(&p, &big)).contains("resulted in error"));
}

#[test]
fn warn_bindings_warn_and_deny_bindings_deny() {
    let warn = policy(vec![check("false")], &["Warn"]);
    match run(&[warn], &request("CREATE", json!({}), "alice")) {
        Outcome::Allowed { warnings } => assert_eq!(
            warnings,
            ["Validation failed for ValidatingAdmissionPolicy 'p' with binding 'p': fixed message"]
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn variables_are_lazy_so_an_unread_error_is_no_error() {
    let mut p = policy(vec![check("true || variables.broken")], &["Deny"]);
    p.policy
        .spec
        .variables
        .push(named("broken", "object.no.such.field"));
    assert_eq!(
        run(&[p.clone()], &request("CREATE", json!({}), "alice")),
        Outcome::Allowed { warnings: vec![] }
    );
    p.policy.spec.validations = vec![check("variables.broken")];
    assert!(denied(&run(&[p], &request("CREATE", json!({}), "alice"))).contains("error"));
}

#[test]
fn the_authorizer_library_asks_the_authorizer() {
    let allowed = |expression: &str, user: &str| {
        let p = [policy(vec![check(expression)], &["Deny"])];
        matches!(
            run(&p, &request("CREATE", json!({}), user)),
            Outcome::Allowed { .. }
        )
    };
    assert!(allowed(
        "authorizer.group('').resource('pods').check('get').allowed()",
        "alice"
    ));
    assert!(!allowed(
        "authorizer.group('').resource('pods').check('list').allowed()",
        "alice"
    ));
    assert!(allowed(
        "authorizer.group('apps').resource('deployments').subresource('scale').namespace('ns')\
         .name('d').check('patch').allowed()",
        "alice"
    ));
    assert!(allowed(
        "authorizer.path('/healthz').check('get').allowed()",
        "alice"
    ));
    assert!(allowed(
        "authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('get').allowed()",
        "alice"
    ));
    // A failed authorizer is a decision that is not allowed, and errored.
    assert!(!allowed(
        "authorizer.group('').resource('pods').check('get').allowed()",
        "broken"
    ));
    assert!(allowed(
        "authorizer.group('').resource('pods').check('get').errored()",
        "broken"
    ));
    // `allowed` is a function, as Kubernetes defines it, not a field.
    assert!(!allowed(
        "authorizer.group('').resource('pods').check('get').allowed",
        "alice"
    ));
}

#[test]
fn the_strings_functions_are_cel_gos() {
    let holds = |expression: &str| {
        let p = [policy(vec![check(expression)], &["Deny"])];
        matches!(
            run(&p, &request("CREATE", json!({}), "alice")),
            Outcome::Allowed { .. }
        )
    };
    assert!(holds("['a', 'b'].join(', ') == 'a, b'"));
    assert!(holds("[].join(', ') == ''"));
    assert!(holds(
        "'pods/log'.indexOf('/') == 4 && 'pods'.indexOf('/') == -1"
    ));
    assert!(holds(
        "'pods/log'.substring(5) == 'log' && 'pods/log'.substring(0, 4) == 'pods'"
    ));
    assert!(holds(
        "'héllo'.indexOf('l') == 2 && 'héllo'.substring(1, 2) == 'é'"
    ));
    assert!(!holds("'abc'.substring(4) == ''"));
}

#[test]
fn authorizer_checks_cost_as_the_api_server_charges_them() {
    let three = "authorizer.group('').resource('a').check('get').allowed() && \
                 authorizer.group('').resource('b').check('get').allowed() && \
                 authorizer.group('').resource('c').check('get').allowed()";
    let two = "authorizer.group('').resource('a').check('get').allowed() && \
               authorizer.group('').resource('b').check('get').allowed()";
    let p = [policy(vec![check(two)], &["Deny"])];
    assert!(matches!(
        run(&p, &request("CREATE", json!({}), "alice")),
        Outcome::Allowed { .. }
    ));
    // Three checks cost 1,050,000: over the per-expression limit.
    let p = [policy(vec![check(three)], &["Deny"])];
    assert!(
        denied(&run(&p, &request("CREATE", json!({}), "alice")))
            .contains("actual cost limit exceeded")
    );
    // Two per expression, but 30 in one evaluation: over its budget.
    let many: Vec<Validation> = (0..15).map(|_| check(two)).collect();
    let p = [policy(many, &["Deny"])];
    assert!(
        denied(&run(&p, &request("CREATE", json!({}), "alice")))
            .contains("running out of cost budget")
    );
    // A variable is charged on its own.
    let mut p = policy(
        vec![check(&format!("variables.pair && ({two})"))],
        &["Deny"],
    );
    p.policy.spec.variables.push(named("pair", two));
    assert!(matches!(
        run(&[p], &request("CREATE", json!({}), "alice")),
        Outcome::Allowed { .. }
    ));
}

#[test]
fn a_policy_with_params_is_evaluated_once_per_param() {
    let mut p = policy(
        vec![check("params.spec.size != object.spec.size")],
        &["Deny"],
    );
    p.policy.spec.param_kind = Some(ParamKind {
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
    });
    p.binding.spec.param_ref = Some(ParamRef {
        selector: json!({}),
        parameter_not_found_action: "Allow".into(),
    });
    let object = json!({"spec": {"size": 2}});
    let params = Widgets(vec![
        json!({"spec": {"size": 1}}),
        json!({"spec": {"size": 2}}),
    ]);
    let outcome = evaluate(
        std::slice::from_ref(&p),
        &request("CREATE", object.clone(), "alice"),
        Arc::new(Fake::default()),
        &params,
    )
    .unwrap();
    assert!(matches!(outcome, Outcome::Denied { .. }));
    // No param: Allow, as the binding says.
    let outcome = evaluate(
        &[p],
        &request("CREATE", object, "alice"),
        Arc::new(Fake::default()),
        &NoParams,
    )
    .unwrap();
    assert_eq!(outcome, Outcome::Allowed { warnings: vec![] });
}

fn detailed(
    policies: &[BoundPolicy],
    request: &Value,
    options: Options,
) -> olm_guard_native::Report {
    Policies::compile(policies).unwrap().evaluate_detailed(
        request,
        Arc::new(Fake::default()),
        &NoParams,
        options,
    )
}

#[test]
fn the_cost_of_an_evaluation_is_reported_as_cel_go_counts_it() {
    // `size`: has(object.spec) 1 (its qualifier; has() itself is free on
    // the API server), and the branch taken, object.spec.size, 2 (a branch
    // of `?:` is resolved, not evaluated: its qualifiers only) = 3; the
    // validation: variables.size 2 + `<` 1 = 3.
    let p = [policy(vec![check("variables.size < 3")], &["Deny"])];
    let report = detailed(
        &p,
        &request("CREATE", json!({"spec": {"size": 1}}), "alice"),
        Options::default(),
    );
    let evaluation = &report.policies[0].evaluations[0];
    assert_eq!(evaluation.cost, 6);
    let costs: Vec<(&str, u64)> = evaluation
        .expressions
        .iter()
        .map(|e| (e.field.as_str(), e.cost))
        .collect();
    assert_eq!(
        costs,
        [("variables.size", 3), ("validations[0].expression", 3)]
    );
    assert_eq!(evaluation.decisions[0].action, Action::Admit);
}

#[test]
fn messages_run_without_the_authorizer_and_recompute_the_variables() {
    let mut v = check("variables.mayList");
    v.message_expression = Some("'may list: ' + string(variables.mayList)".into());
    let mut p = policy(vec![v], &["Deny"]);
    p.policy.spec.variables.push(named(
        "mayList",
        "authorizer.group('').resource('pods').check('list').allowed()",
    ));
    let fake = Arc::new(Fake::default());
    let policies = Policies::compile(std::slice::from_ref(&p)).unwrap();
    let report = policies.evaluate_detailed(
        &request("CREATE", json!({}), "alice"),
        fake.clone(),
        &NoParams,
        Options::default(),
    );
    // The message's variable has no authorizer to call: it errors, and the
    // static message is shown.
    assert_eq!(
        report.outcome,
        Outcome::Denied {
            message: "widgets.example.com \"w\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'p' denied request: fixed message"
                .into()
        }
    );
    assert_eq!(fake.calls.load(Ordering::Relaxed), 1);
    let evaluation = &report.policies[0].evaluations[0];
    let recomputed = evaluation
        .expressions
        .iter()
        .find(|e| e.phase == Phase::Messages && e.field == "variables.mayList")
        .expect("the variable is computed again for the message");
    assert!(recomputed.error.as_deref().unwrap().contains("authorizer"));
}

/// `!s.contains(t)` over two strings of 9,000 letters costs 900 × 900 +
/// 7 = 810,007: twelve such validations leave 279,916 of the budget, less
/// than one message expression of the same cost needs.
fn expensive(validations: usize, with_messages: bool) -> (Vec<BoundPolicy>, Value) {
    let validations = (0..validations)
        .map(|_| {
            let mut v = check("!object.spec.s.contains(object.spec.t)");
            if with_messages {
                v.message_expression =
                    Some("object.spec.s.contains(object.spec.t) ? 'contained' : 'not'".into());
            }
            v
        })
        .collect();
    let object = json!({"spec": {"s": "a".repeat(9000), "t": "b".repeat(9000)}});
    (
        vec![policy(validations, &["Deny"])],
        request("CREATE", object, "alice"),
    )
}

#[test]
fn every_message_runs_on_the_budget_the_validations_left() {
    let (p, r) = expensive(12, false);
    let report = detailed(&p, &r, Options::default());
    assert_eq!(report.outcome, Outcome::Allowed { warnings: vec![] });
    assert_eq!(report.policies[0].evaluations[0].cost, 12 * 810_007);
    // The same validations, all holding, with messages: the first message
    // runs out of budget, and every decision becomes an error that denies.
    let (p, r) = expensive(12, true);
    let report = detailed(&p, &r, Options::default());
    let evaluation = &report.policies[0].evaluations[0];
    let exhausted = evaluation.out_of_budget.as_ref().expect("out of budget");
    assert_eq!(
        (
            exhausted.phase,
            exhausted.field.as_str(),
            exhausted.remaining,
            exhausted.needed
        ),
        (
            Phase::Messages,
            "validations[0].messageExpression",
            279_916,
            810_006
        )
    );
    assert_eq!(evaluation.decisions.len(), 12);
    assert!(
        evaluation
            .decisions
            .iter()
            .all(|d| d.evaluation == Evaluation::Error
                && d.message == format!("failed messageExpression: {OUT_OF_BUDGET}"))
    );
    assert!(
        denied(&report.outcome).ends_with(&format!("failed messageExpression: {OUT_OF_BUDGET}"))
    );
    // Thirteen validations run out before any message: one decision.
    let (p, r) = expensive(13, true);
    let report = detailed(&p, &r, Options::default());
    let evaluation = &report.policies[0].evaluations[0];
    assert_eq!(
        evaluation.out_of_budget.as_ref().unwrap().phase,
        Phase::Validations
    );
    assert_eq!(evaluation.decisions.len(), 1);
    assert!(denied(&report.outcome).ends_with(OUT_OF_BUDGET));
}

#[test]
fn a_check_costs_350000_from_kubernetes_1_32_and_1_before() {
    let three = "authorizer.group('').resource('a').check('get').allowed() && \
                 authorizer.group('').resource('b').check('get').allowed() && \
                 authorizer.group('').resource('c').check('get').allowed()";
    let p = [policy(vec![check(three)], &["Deny"])];
    let r = request("CREATE", json!({}), "alice");
    for minor in [32, 33, 34] {
        let report = detailed(&p, &r, Options::version(KubernetesVersion::new(minor)));
        assert!(
            denied(&report.outcome).contains("actual cost limit exceeded"),
            "1.{minor}"
        );
        let expression = &report.policies[0].evaluations[0].expressions[0];
        assert!(expression.over_limit);
        // Stopped at the third check: 3 × (1 + 1 + 1) + 2 × 350,001 + 350,000.
        assert_eq!(expression.cost, 1_050_011);
    }
    for minor in [30, 31] {
        let version = KubernetesVersion::new(minor);
        let report = detailed(&p, &r, Options::version(version));
        assert_eq!(
            report.outcome,
            Outcome::Allowed { warnings: vec![] },
            "1.{minor}"
        );
        assert_eq!(report.policies[0].evaluations[0].cost, 15);
        // The beta gate turned on: as 1.32.
        let strict = Options {
            version,
            strict_cost: Some(true),
        };
        assert!(denied(&detailed(&p, &r, strict).outcome).contains("actual cost limit exceeded"));
    }
}

#[test]
fn match_conditions_skip_or_fail_the_policy() {
    let mut p = policy(vec![check("false")], &["Deny"]);
    p.policy.spec.match_conditions = vec![named("widgets-only", "has(object.spec)")];
    let r = request("CREATE", json!({}), "alice");
    let report = detailed(std::slice::from_ref(&p), &r, Options::default());
    assert_eq!(report.outcome, Outcome::Allowed { warnings: vec![] });
    assert!(!report.policies[0].evaluations[0].conditions_matched);
    p.policy.spec.match_conditions = vec![named("broken", "object.spec.size > 1")];
    assert_eq!(
        denied(&detailed(&[p], &r, Options::default()).outcome),
        "widgets.example.com \"w\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'p' denied request: expression \
         'object.spec.size > 1' resulted in error: no such key: spec"
    );
}

#[test]
fn warnings_are_cut_as_the_api_servers_recorder_cuts_them() {
    // Twenty warnings of about 400 characters: past 4,096 in all, each is
    // cut to 256.
    let validations = (0..20)
        .map(|i| Validation {
            expression: "false".into(),
            message: Some(format!("{i:02} {}", "x".repeat(400))),
            message_expression: None,
            reason: None,
        })
        .collect();
    let p = [policy(validations, &["Warn"])];
    match run(&p, &request("CREATE", json!({}), "alice")) {
        Outcome::Allowed { warnings } => {
            assert_eq!(warnings.len(), 16);
            assert!(warnings.iter().all(|w| w.chars().count() == 256));
            assert!(warnings[15].contains("': 15 xxx"));
        }
        other => panic!("{other:?}"),
    }
}
