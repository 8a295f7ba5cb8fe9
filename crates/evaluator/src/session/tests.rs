use super::*;
use olm_guard_core::protocol::ResourceAttributes;

/// Verbatim from kubewarden/kubewarden-controller
/// `crates/kwctl/tests/data/host-capabilities-sessions/context-aware-demo-namespace-not-found.yml`
/// (recorded by kwctl before `field_masks` existed: a missing field is `None`).
const KWCTL_GET_NOT_FOUND: &str = "- type: Exchange
  request: |
    !KubernetesGetResource
    api_version: v1
    kind: Namespace
    name: test-policy
    namespace: null
    disable_cache: false
  response:
    type: Error
    message: Cannot find v1/Namespace named 'test-policy' inside of namespace 'None'
";

/// From kubewarden/kubewarden-controller
/// `crates/kwctl/tests/data/host-capabilities-sessions/context-aware-unique-ingress-duplicate.yml`
/// (its payload shortened to one item).
const KWCTL_LIST_ALL: &str = r#"- type: Exchange
  request: |
    !KubernetesListResourceAll
    api_version: networking.k8s.io/v1
    kind: Ingress
    label_selector: null
    field_selector: null
  response:
    type: Success
    payload: |
      {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion":"450657254"},
        "items":[{"metadata": {"name": "test", "namespace": "default"}}]
      }
"#;

/// A `can_i` exchange as kwctl records it: the `KubernetesCanI` variant
/// of policy-evaluator's `CallbackRequestType` holds the module's
/// SubjectAccessReview as `request` and `disable_cache` beside it
/// (`From<CanIRequest> for CallbackRequestType`); the payload is the
/// SubjectAccessReviewStatus JSON (`callback_handler/kubernetes.rs`).
const KWCTL_CAN_I: &str = r#"- type: Exchange
  request: |
    !KubernetesCanI
    request:
      groups: null
      resource_attributes:
        group: ''
        name: null
        namespace: null
        resource: pods
        subresource: null
        verb: create
        version: null
      user: system:serviceaccount:default:sa
    disable_cache: false
  response:
    type: Success
    payload: '{"allowed":true}'
"#;

#[test]
fn kwctl_sessions_parse_with_upstream_tags_and_fields() {
    let get = Session::from_yaml(KWCTL_GET_NOT_FOUND, "get").unwrap();
    assert_eq!(
        get.exchanges,
        vec![Exchange {
            request: CallbackRequest::Kubernetes(KubernetesRequest::KubernetesGetResource {
                api_version: "v1".into(),
                kind: "Namespace".into(),
                name: "test-policy".into(),
                namespace: None,
                disable_cache: false,
                field_masks: None,
            }),
            response: Response::Error {
                message: "Cannot find v1/Namespace named 'test-policy' inside of namespace 'None'"
                    .into()
            },
        }]
    );

    let list = Session::from_yaml(KWCTL_LIST_ALL, "list").unwrap();
    let exchange = &list.exchanges[0];
    assert_eq!(
        exchange.request,
        CallbackRequest::Kubernetes(KubernetesRequest::KubernetesListResourceAll {
            api_version: "networking.k8s.io/v1".into(),
            kind: "Ingress".into(),
            label_selector: None,
            field_selector: None,
            field_masks: None,
        })
    );
    let Response::Success { payload } = &exchange.response else {
        panic!("expected Success, got {:?}", exchange.response);
    };
    let list: serde_json::Value = serde_json::from_str(payload).unwrap();
    assert_eq!(list["items"][0]["metadata"]["name"], "test");

    let can_i = Session::from_yaml(KWCTL_CAN_I, "can_i").unwrap();
    let module_request = CanIRequest {
        subject_access_review: SubjectAccessReview {
            groups: None,
            resource_attributes: ResourceAttributes {
                group: Some(String::new()),
                resource: "pods".into(),
                verb: "create".into(),
                ..Default::default()
            },
            user: "system:serviceaccount:default:sa".into(),
        },
        disable_cache: false,
    };
    assert_eq!(
        can_i.exchanges[0].request,
        CallbackRequest::Kubernetes((&module_request).into())
    );
    let replay = SessionReplay::new(can_i, "can_i");
    assert!(replay.can_i(&module_request).unwrap().allowed);
    assert_eq!(replay.remaining(), 0);
}

#[test]
fn sessions_are_written_as_kwctl_writes_them() {
    let session = Session::from_yaml(KWCTL_GET_NOT_FOUND, "get").unwrap();
    let text = session.to_yaml().unwrap();
    // kwctl's serde_yaml output: the struct's tag first, the request a
    // literal block holding the tagged request, upstream's field order.
    assert_eq!(
        text,
        "- type: Exchange
  request: |
    !KubernetesGetResource
    api_version: v1
    kind: Namespace
    name: test-policy
    namespace: null
    disable_cache: false
    field_masks: null
  response:
    type: Error
    message: Cannot find v1/Namespace named 'test-policy' inside of namespace 'None'
"
    );
    assert_eq!(Session::from_yaml(&text, "again").unwrap(), session);
}

#[test]
fn other_callback_requests_load_and_save_unchanged() {
    let text = "- type: Exchange
  request: |
    !OciManifestDigest
    image: busybox
  response:
    type: Success
    payload: '\"sha256:0\"'
";
    let session = Session::from_yaml(text, "oci").unwrap();
    assert!(matches!(
        &session.exchanges[0].request,
        CallbackRequest::Other { tag, .. } if tag == "OciManifestDigest"
    ));
    assert_eq!(session.to_yaml().unwrap(), text);
}

#[test]
fn malformed_sessions_name_the_exchange_and_the_fix() {
    let not_a_list = Session::from_yaml("request: x", "s.yml").unwrap_err();
    assert!(
        not_a_list
            .to_string()
            .starts_with("s.yml: not a host-capabilities session")
    );

    let untagged =
        "- type: Exchange\n  request: 'api_version: v1'\n  response: {type: Error, message: x}\n";
    let e = Session::from_yaml(untagged, "s.yml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("exchange 1") && e.contains("!KubernetesGetResource"),
        "{e}"
    );

    let missing_field = "- type: Exchange\n  request: \"!KubernetesGetResource\\nkind: Namespace\\n\"\n  response: {type: Error, message: x}\n";
    let e = Session::from_yaml(missing_field, "s.yml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("exchange 1") && e.contains("api_version"), "{e}");
}

fn get(name: &str) -> GetResourceRequest {
    GetResourceRequest {
        api_version: "v1".into(),
        kind: "Namespace".into(),
        name: name.into(),
        ..Default::default()
    }
}

#[test]
fn replay_is_strictly_sequential_and_shows_expected_and_actual() {
    let session = Session {
        exchanges: vec![
            Exchange {
                request: CallbackRequest::Kubernetes((&get("a")).into()),
                response: Response::Success {
                    payload: "{\"metadata\":{\"name\":\"a\"}}".into(),
                },
            },
            Exchange {
                request: CallbackRequest::Kubernetes((&get("b")).into()),
                response: Response::Error {
                    message: "Cannot find v1/Namespace named 'b'".into(),
                },
            },
        ],
    };
    let replay = SessionReplay::new(session.clone(), "s.yml");
    assert_eq!(
        replay.get(&get("a")).unwrap(),
        b"{\"metadata\":{\"name\":\"a\"}}"
    );
    let err = replay.get(&get("b")).unwrap_err();
    assert_eq!(err.message, "Cannot find v1/Namespace named 'b'");
    assert_eq!(err.kind, ContextErrorKind::NotFound);
    let past = replay.get(&get("c")).unwrap_err().message;
    assert!(
        past.contains("no exchange left (2 recorded)") && past.contains("\"name\":\"c\""),
        "{past}"
    );
    assert_eq!(replay.problems().len(), 1);

    // Out of order: the first call takes the first exchange and fails.
    let replay = SessionReplay::new(session, "s.yml");
    let wrong = replay.get(&get("b")).unwrap_err().message;
    assert!(
            wrong.contains("exchange 1 of s.yml")
                && wrong.contains("expected !KubernetesGetResource {\"api_version\":\"v1\",\"kind\":\"Namespace\",\"name\":\"a\"")
                && wrong.contains("got !KubernetesGetResource {\"api_version\":\"v1\",\"kind\":\"Namespace\",\"name\":\"b\""),
            "{wrong}"
        );
    assert_eq!(replay.remaining(), 1);
}
