//! `authorizer::admit_answering` through Kubernetes' validating policy
//! dispatcher: the checks a policy makes are the ones Kubernetes asks, a
//! check that depends on an earlier answer is asked once that answer is
//! given, and the verdict is the one the answers lead to.

use serde_json::json;

use olm_guard_kube_harness::authorizer::admit_answering;
use olm_guard_kube_harness::{Admit, Admitted, AuthorizerAnswer, KubeHarness};

/// A ConfigMap written by `user` (in `groups`), judged by one policy
/// whose only validation is `expression`, with a variable `update`, the
/// decision of a check that `user` may update deployments (evaluated
/// only where read).
fn admit(user: &str, groups: &[&str], expression: &str) -> Admit {
    let kind = json!({"group": "", "version": "v1", "kind": "ConfigMap"});
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "c", "namespace": "ns"}});
    let rules = json!([{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                        "resources": ["configmaps"]}]);
    Admit {
        request: json!({"uid": "1", "kind": kind, "requestKind": kind, "name": "c",
                        "namespace": "ns",
                        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
                        "operation": "CREATE",
                        "userInfo": {"username": user, "groups": groups},
                        "object": object}),
        validating_policies: vec![json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "p"},
            "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": rules},
                     "variables": [{"name": "update", "expression":
                         "authorizer.group('apps').resource('deployments').namespace('ns')\
                          .check('update')"}],
                     "validations": [{"expression": expression, "message": "refused"}]},
        })],
        validating_bindings: vec![json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "b"},
            "spec": {"policyName": "p", "validationActions": ["Deny"]},
        })],
        ..Admit::default()
    }
}

fn run(
    kube: &mut KubeHarness,
    admit: &mut Admit,
    authorize: &mut dyn FnMut(&AuthorizerAnswer) -> Result<bool, String>,
) -> Admitted {
    admit_answering(kube, admit, authorize).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn kubernetes_asks_and_the_caller_answers() {
    let mut kube = KubeHarness::start().unwrap_or_else(|e| panic!("{e}"));
    // The second check is made only once the first is answered without
    // an error and allowed: two rounds.
    // (Two checks in one expression: a third would cost more than the
    // API server lets one expression spend.)
    let chained = "variables.update.errored() ? false : (variables.update.allowed() ? \
                   authorizer.path('/healthz').check('get').allowed() : true)";
    let mut grants = |q: &AuthorizerAnswer| Ok(q.verb == "update" || q.path == "/healthz");
    let mut admit_chained = admit("ali\"ce", &["system:authenticated", "dev"], chained);
    let admitted = run(&mut kube, &mut admit_chained, &mut grants);
    assert!(admitted.allowed, "{admitted:?}");
    let asked: Vec<(&str, &str, &str)> = admit_chained
        .authorizer
        .iter()
        .map(|a| (a.verb.as_str(), a.resource.as_str(), a.path.as_str()))
        .collect();
    assert_eq!(
        asked,
        [("update", "deployments", ""), ("get", "", "/healthz")]
    );
    let first = &admit_chained.authorizer[0];
    assert_eq!(
        (
            first.user.as_str(),
            first.api_group.as_str(),
            first.namespace.as_str()
        ),
        ("ali\"ce", "apps", "ns")
    );
    assert_eq!(first.groups, ["system:authenticated", "dev"]);

    // The same admission sent again asks nothing more.
    let again = kube.admit(&admit_chained).unwrap();
    assert!(again.unasked.is_empty() && again.allowed, "{again:?}");

    // Other answers, another verdict: the URL refused.
    let mut admit_refused = admit("alice", &[], chained);
    let mut no_url = |q: &AuthorizerAnswer| Ok(q.path.is_empty());
    let admitted = run(&mut kube, &mut admit_refused, &mut no_url);
    assert!(!admitted.allowed, "{admitted:?}");
    assert!(
        admitted
            .status
            .as_ref()
            .is_some_and(|s| s.message.contains("refused")),
        "{admitted:?}"
    );

    // An authorizer that cannot answer: its error reaches the policy.
    let mut admit_failing = admit("alice", &[], chained);
    let mut failing = |_: &AuthorizerAnswer| Err("the authorizer is down".to_string());
    let admitted = run(&mut kube, &mut admit_failing, &mut failing);
    assert!(!admitted.allowed, "{admitted:?}");
    assert_eq!(admit_failing.authorizer.len(), 1);
    assert_eq!(admit_failing.authorizer[0].error, "the authorizer is down");
}

#[test]
fn a_policy_without_checks_asks_nothing() {
    let mut kube = KubeHarness::start().unwrap_or_else(|e| panic!("{e}"));
    // The variable that would check is never read.
    let mut admit = admit("alice", &[], "object.metadata.name == 'c'");
    let mut never = |q: &AuthorizerAnswer| -> Result<bool, String> { panic!("asked {q:?}") };
    let admitted = run(&mut kube, &mut admit, &mut never);
    assert!(admitted.allowed, "{admitted:?}");
    assert!(admit.authorizer.is_empty());
}
