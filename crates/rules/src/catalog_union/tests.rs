//! Unit tests of catalog-union, by rule.
use super::*;
use crate::testing::{admission_request, assert_contains_all, assert_no_debug_output};
use olm_guard_core::NoCluster;
use rstest::rstest;
use serde_json::json;

/// `operatorhubio-catalog` from OLM's quickstart
/// (testdata/catalog-union/realworld/olm-quickstart-operatorhubio-catalog.yaml).
fn operatorhubio_spec() -> Value {
    json!({
        "sourceType": "grpc",
        "image": "quay.io/operatorhubio/catalog:latest",
        "displayName": "Community Operators",
        "publisher": "OperatorHub.io",
        "updateStrategy": {"registryPoll": {"interval": "60m"}}
    })
}

fn catalog(spec: Value) -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "CatalogSource",
        "metadata": {"name": "operatorhubio-catalog", "namespace": "olm"},
        "spec": spec
    })
}

fn request_for(operation: &str, object: Value) -> AdmissionRequest {
    admission_request(
        ["operators.coreos.com", "v1alpha1", "CatalogSource"],
        "catalogsources",
        json!({
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "name": "operatorhubio-catalog",
            "namespace": "olm",
            "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": object
        }),
    )
}

fn check_with(spec: Value, settings: &Settings) -> Verdict {
    validate(&request_for("CREATE", catalog(spec)), settings, &NoCluster)
}

fn check(spec: Value) -> Verdict {
    check_with(spec, &Settings::default())
}

fn legacy_off() -> Settings {
    Settings {
        allow_legacy: false,
        warn_legacy: false,
        migrate_legacy: false,
    }
}

fn warning() -> Settings {
    Settings {
        allow_legacy: true,
        warn_legacy: true,
        migrate_legacy: false,
    }
}

fn migrating() -> Settings {
    Settings {
        allow_legacy: true,
        warn_legacy: false,
        migrate_legacy: true,
    }
}

fn migrating_only() -> Settings {
    Settings {
        allow_legacy: false,
        warn_legacy: false,
        migrate_legacy: true,
    }
}

#[track_caller]
fn assert_clean_accept(verdict: &Verdict) {
    assert!(verdict.allowed, "denied: {:?}", verdict.message);
    assert!(
        verdict.warnings.is_empty(),
        "warnings: {:?}",
        verdict.warnings
    );
    assert_eq!(verdict.mutated_object, None);
}

#[track_caller]
fn denial(verdict: &Verdict) -> &str {
    assert!(
        !verdict.allowed,
        "accepted, warnings {:?}",
        verdict.warnings
    );
    let message = verdict.message.as_deref().unwrap_or_default();
    assert_no_debug_output(message);
    message
}

/// A denial whose advice names only fields of the CatalogSource CRD
/// clusters run today.
#[track_caller]
fn assert_legacy_terms(verdict: &Verdict) {
    let message = denial(verdict);
    for member in [
        "catalogImageSource",
        "catalogServiceSource",
        "configMapSource",
    ] {
        assert!(!message.contains(member), "{member} in: {message}");
    }
    assert!(!message.contains("deprecated"), "{message}");
}

/// The spec of a mutated object, after checking the mutation leaves the
/// rest of the object alone.
#[track_caller]
fn migrated_spec(verdict: &Verdict) -> Value {
    assert!(verdict.allowed, "denied: {:?}", verdict.message);
    let object = verdict.mutated_object.clone().expect("a mutation");
    assert_eq!(
        object["metadata"],
        json!({"name": "operatorhubio-catalog", "namespace": "olm"})
    );
    assert_eq!(object["kind"], "CatalogSource");
    object["spec"].clone()
}

// Settings.

#[test]
fn settings_default_to_legacy_allowed_and_not_migrated() {
    let defaults: Settings = olm_guard_core::settings::parse(&Value::Null).unwrap();
    assert_eq!(
        defaults,
        Settings {
            allow_legacy: true,
            warn_legacy: false,
            migrate_legacy: false
        }
    );
    let empty: Settings = olm_guard_core::settings::parse(&json!({})).unwrap();
    assert_eq!(empty, defaults);
    let set: Settings =
        olm_guard_core::settings::parse(&json!({"allowLegacy": false, "migrateLegacy": true}))
            .unwrap();
    assert_eq!(set, migrating_only());
    let warn: Settings = olm_guard_core::settings::parse(&json!({"warnLegacy": true})).unwrap();
    assert_eq!(warn, warning());
}

#[test]
fn settings_reject_unknown_keys_and_wrong_types() {
    let typo = olm_guard_core::settings::parse::<Settings>(&json!({"allowlegacy": false}));
    assert!(
        typo.unwrap_err()
            .to_string()
            .contains("unknown field `allowlegacy`")
    );
    let wrong = olm_guard_core::settings::parse::<Settings>(&json!({"migrateLegacy": "yes"}));
    assert!(
        wrong
            .unwrap_err()
            .to_string()
            .contains("expected a boolean")
    );
}

// Requests the policy does not judge.

#[test]
fn other_kinds_subresources_and_operations_pass_untouched() {
    let broken = catalog(json!({"catalogImageSource": {}, "configMapSource": {}}));
    let mut other_kind = request_for("CREATE", broken.clone());
    other_kind.kind.kind = "Subscription".into();
    assert_clean_accept(&validate(&other_kind, &Settings::default(), &NoCluster));

    let mut other_group = request_for("CREATE", broken.clone());
    other_group.kind.group = "example.com".into();
    assert_clean_accept(&validate(&other_group, &Settings::default(), &NoCluster));

    let mut status = request_for("UPDATE", broken.clone());
    status.sub_resource = Some("status".into());
    assert_clean_accept(&validate(&status, &Settings::default(), &NoCluster));

    for operation in ["DELETE", "CONNECT"] {
        let request = request_for(operation, broken.clone());
        assert_clean_accept(&validate(&request, &migrating_only(), &NoCluster));
    }
}

fn update(object: Value, old: Value, settings: &Settings) -> Verdict {
    let mut request = request_for("UPDATE", object);
    request.old_object = old;
    validate(&request, settings, &NoCluster)
}

#[test]
fn an_update_that_writes_a_violation_is_checked_like_create() {
    // Nothing stored: judged like a CREATE.
    let request = request_for(
        "UPDATE",
        catalog(json!({"catalogImageSource": {}, "configMapSource": {"configMap": "m"}})),
    );
    let verdict = validate(&request, &Settings::default(), &NoCluster);
    assert_contains_all(
        denial(&verdict),
        &["oneOf", "spec.catalogImageSource", "spec.configMapSource"],
    );

    let request = request_for("UPDATE", catalog(operatorhubio_spec()));
    let verdict = validate(&request, &migrating(), &NoCluster);
    assert!(verdict.mutated_object.is_some());

    // A valid stored object: a new violation is denied as on CREATE.
    let mut broken = operatorhubio_spec();
    broken["address"] = json!("h.ns.svc:50051");
    let verdict = update(
        catalog(broken),
        catalog(operatorhubio_spec()),
        &Settings::default(),
    );
    assert_contains_all(
        denial(&verdict),
        &["spec.address is ignored because spec.image is set"],
    );
}

/// Objects stored before the policy, each breaking it in its own way.
#[rstest]
#[case::grpc_alone(json!({"sourceType": "grpc"}))]
#[case::image_and_address(
    json!({"sourceType": "grpc", "image": "quay.io/x:1", "address": "h.ns.svc:50051"})
)]
#[case::config_map_with_grpc(
    json!({"sourceType": "grpc", "image": "quay.io/x:1", "configMap": "m"})
)]
#[case::two_members(json!({"catalogImageSource": {}, "configMapSource": {"configMap": "m"}}))]
#[case::empty(json!({}))]
fn a_stored_violation_does_not_freeze_metadata_updates(#[case] spec: Value) {
    let stored = catalog(spec.clone());
    let mut labelled = stored.clone();
    labelled["metadata"]["labels"] = json!({"team": "a"});
    labelled["metadata"]["finalizers"] = json!([]);
    labelled["metadata"]["annotations"] = json!({
        "kubectl.kubernetes.io/last-applied-configuration": "{}"
    });
    // On its own the object is denied; as an UPDATE of itself it
    // passes with a warning that says what is still wrong.
    let created = check(spec.clone());
    let problems = denial(&created).to_string();
    for settings in [Settings::default(), legacy_off(), warning(), migrating()] {
        let verdict = update(labelled.clone(), stored.clone(), &settings);
        assert!(verdict.allowed, "{spec}: {:?}", verdict.message);
        assert_eq!(verdict.mutated_object, None);
        assert_eq!(verdict.warnings.len(), 1, "{:?}", verdict.warnings);
        assert_contains_all(
            &verdict.warnings[0],
            &[
                "already breaks catalog-union",
                "leaves its catalog configuration as it was",
                "fix it: ",
            ],
        );
        assert_no_debug_output(&verdict.warnings[0]);
    }
    let verdict = update(labelled, stored, &Settings::default());
    assert_contains_all(&verdict.warnings[0], &[&problems]);
}

#[test]
fn null_valued_keys_do_not_change_the_configuration() {
    let stored = catalog(json!({"sourceType": "grpc"}));
    let nulls = catalog(json!({"sourceType": "grpc", "image": null, "configMapSource": null}));
    let verdict = update(nulls, stored, &Settings::default());
    assert!(verdict.allowed, "{:?}", verdict.message);
    assert_contains_all(&verdict.warnings.join("\n"), &["as it was"]);
}

#[test]
fn an_update_that_fixes_part_of_a_stored_violation_is_accepted() {
    let stored = catalog(json!({
        "sourceType": "grpc", "image": "quay.io/x:1", "address": "h.ns.svc:50051", "configMap": "m"
    }));
    let partly =
        catalog(json!({"sourceType": "grpc", "image": "quay.io/x:1", "address": "h.ns.svc:50051"}));
    let verdict = update(partly, stored.clone(), &Settings::default());
    assert!(verdict.allowed, "{:?}", verdict.message);
    assert_contains_all(
        &verdict.warnings.join("\n"),
        &[
            "this update fixes part of what this CatalogSource breaks",
            "still to fix: spec.address is ignored because spec.image is set",
        ],
    );
    assert!(
        !verdict
            .warnings
            .join("\n")
            .contains("spec.configMap is ignored")
    );

    let fixed = catalog(json!({"sourceType": "grpc", "image": "quay.io/x:1"}));
    assert_clean_accept(&update(fixed, stored, &Settings::default()));
}

#[test]
fn an_update_that_adds_a_violation_to_a_stored_one_is_denied() {
    let stored =
        catalog(json!({"sourceType": "grpc", "image": "quay.io/x:1", "address": "h.ns.svc:50051"}));
    // A new problem beside the stored one.
    let worse = catalog(json!({
        "sourceType": "grpc", "image": "quay.io/x:1", "address": "h.ns.svc:50051", "configMap": "m"
    }));
    let message = denial(&update(worse, stored.clone(), &Settings::default())).to_string();
    assert_contains_all(
        &message,
        &["spec.configMap is ignored", "spec.address is ignored"],
    );
    // A different problem instead of the stored one.
    let other = catalog(json!({"sourceType": "configmap", "configMap": "m", "image": "i"}));
    let message = denial(&update(other, stored, &Settings::default())).to_string();
    assert_contains_all(&message, &["spec.image is ignored with spec.sourceType"]);
}

#[rstest]
#[case::missing(Value::Null)]
#[case::a_string(json!("x"))]
#[case::a_list(json!([1]))]
#[case::spec_not_an_object(json!({"spec": "grpc"}))]
#[case::spec_of_the_wrong_type(json!({"spec": {"catalogImageSource": ["i"]}}))]
fn an_unreadable_or_missing_old_object_means_nothing_stored(#[case] old: Value) {
    let broken = catalog(json!({"sourceType": "grpc"}));
    let verdict = update(broken, old, &Settings::default());
    assert_contains_all(denial(&verdict), &["alone names no catalog"]);
}

#[test]
fn an_unreadable_new_object_is_a_bad_request_even_when_the_stored_one_broke() {
    let stored = catalog(json!({"sourceType": "grpc"}));
    let verdict = update(catalog(json!("grpc")), stored, &Settings::default());
    assert_eq!(verdict.code, Some(400));
}

// Unreadable input.

#[test]
fn a_missing_object_is_a_bad_request() {
    let mut request = request_for("CREATE", Value::Null);
    request.object = Value::Null;
    let verdict = validate(&request, &Settings::default(), &NoCluster);
    assert_eq!(verdict.code, Some(400));
    assert_contains_all(denial(&verdict), &["request.object"]);

    let request = request_for("UPDATE", json!(["not", "an", "object"]));
    let verdict = validate(&request, &Settings::default(), &NoCluster);
    assert_eq!(verdict.code, Some(400));
}

#[rstest]
#[case::a_string(json!("grpc"), "a string")]
#[case::a_list(json!([1]), "a list")]
#[case::a_number(json!(7), "a number")]
#[case::a_boolean(json!(true), "a boolean")]
fn a_spec_that_is_not_an_object_is_a_bad_request(#[case] spec: Value, #[case] kind: &str) {
    let verdict = check_with(spec.clone(), &warning());
    assert_eq!(verdict.code, Some(400));
    assert_contains_all(
        denial(&verdict),
        &["spec must be an object", kind, "catalogImageSource"],
    );
    // Today's CRD has no union members: the default names the
    // legacy fields only.
    let verdict = check(spec);
    assert_eq!(verdict.code, Some(400));
    let message = denial(&verdict);
    assert_contains_all(
        message,
        &[
            "spec must be an object holding sourceType and one of image, address or configMap",
            kind,
        ],
    );
    assert!(!message.contains("catalogImageSource"), "{message}");
}

#[test]
fn a_list_where_an_object_belongs_is_not_read_as_one() {
    let verdict = check(json!({"catalogImageSource": ["quay.io/x:1"]}));
    assert_eq!(verdict.code, Some(400));
    assert_contains_all(
        denial(&verdict),
        &[
            "spec.catalogImageSource has the wrong type",
            "expected an object",
            "catalogImage: <image>",
        ],
    );
    let verdict = check(
        json!({"sourceType": "grpc", "image": "i", "grpcPodConfig": {"tolerations": [["k"]]}}),
    );
    assert_contains_all(
        denial(&verdict),
        &["spec.grpcPodConfig.tolerations[0] has the wrong type"],
    );
}

#[test]
fn a_field_of_the_wrong_type_is_named_with_its_path() {
    let verdict = check(json!({"catalogImageSource": {"catalogImage": 5}}));
    assert_eq!(verdict.code, Some(400));
    assert_contains_all(
        denial(&verdict),
        &["spec.catalogImageSource.catalogImage", "expected a string"],
    );

    let verdict = check(
        json!({"sourceType": "grpc", "image": "i", "grpcPodConfig": {"nodeSelector": {"a": 1}}}),
    );
    assert_contains_all(
        denial(&verdict),
        &["spec.grpcPodConfig.nodeSelector.a", "expected a string"],
    );

    let verdict = check(json!({"configMapSource": "my-map"}));
    assert_contains_all(
        denial(&verdict),
        &[
            "spec.configMapSource has the wrong type",
            "expected an object",
            "configMapSource: {configMap: <name>}",
        ],
    );
}

// Rules 1 and 2.

#[test]
fn each_union_member_alone_is_accepted_without_warning() {
    assert_clean_accept(&check(
        json!({"catalogImageSource": {"catalogImage": "quay.io/operatorhubio/catalog:latest"}}),
    ));
    assert_clean_accept(&check(json!({
        "catalogImageSource": {
            "catalogImage": "quay.io/operatorhubio/catalog:latest",
            "podSpecOverrides": {"nodeSelector": {"label": "value"}, "priorityClassName": "high"}
        },
        "displayName": "Community Operators", "publisher": "OperatorHub.io"
    })));
    assert_clean_accept(&check(
        json!({"catalogServiceSource": {"address": "my-registry.default.svc:50051"}}),
    ));
    assert_clean_accept(&check(json!({"configMapSource": {"configMap": "somemap"}})));
    for settings in [legacy_off(), migrating(), migrating_only()] {
        assert_clean_accept(&check_with(
            json!({"configMapSource": {"configMap": "somemap"}}),
            &settings,
        ));
    }
}

#[test]
fn two_members_are_denied_naming_both() {
    let message = denial(&check(json!({
        "catalogImageSource": {"catalogImage": "i"},
        "catalogServiceSource": {"address": "h:1"}
    })))
    .to_string();
    assert_contains_all(
        &message,
        &[
            "oneOf",
            "configures 2",
            "spec.catalogImageSource and spec.catalogServiceSource",
            "keep one",
        ],
    );
}

#[test]
fn three_members_are_denied_naming_all() {
    let message = denial(&check(json!({
        "catalogImageSource": {"catalogImage": "i"},
        "catalogServiceSource": {"address": "h:1"},
        "configMapSource": {"configMap": "m"}
    })))
    .to_string();
    assert_contains_all(
        &message,
        &[
            "oneOf",
            "configures 3",
            "spec.catalogImageSource, spec.catalogServiceSource and spec.configMapSource",
        ],
    );
}

#[test]
fn a_member_beside_a_complete_legacy_source_is_two_alternatives() {
    let message = denial(&check(json!({
        "catalogImageSource": {"catalogImage": "i"},
        "sourceType": "grpc",
        "image": "i"
    })))
    .to_string();
    assert_contains_all(
        &message,
        &[
            "oneOf",
            "configures 2",
            "spec.catalogImageSource and the legacy spec.sourceType and spec.image",
            "remove the deprecated spec.sourceType and spec.image",
        ],
    );
}

#[rstest]
#[case::empty(json!({}))]
#[case::null(Value::Null)]
#[case::display_fields_only(json!({"displayName": "x", "priority": 3}))]
fn no_alternative_is_denied_saying_none_and_how_to_fix(#[case] spec: Value) {
    let message = denial(&check_with(spec.clone(), &warning())).to_string();
    assert_contains_all(
        &message,
        &[
            "oneOf",
            "configures none",
            "spec.catalogImageSource.catalogImage",
            "spec.catalogServiceSource.address",
            "spec.configMapSource.configMap",
        ],
    );
    assert_legacy_terms(&check(spec));
}

#[test]
fn a_missing_spec_configures_none() {
    let mut object = catalog(json!({}));
    object.as_object_mut().unwrap().remove("spec");
    let verdict = validate(
        &request_for("CREATE", object),
        &Settings::default(),
        &NoCluster,
    );
    // In today's CRD's terms: no `oneOf` to name.
    let message = denial(&verdict);
    assert_contains_all(message, &["exactly one catalog source but configures none"]);
    assert!(!message.contains("oneOf"), "{message}");
}

#[test]
fn null_valued_keys_count_as_absent() {
    assert_clean_accept(&check(json!({
        "catalogImageSource": null, "catalogServiceSource": null,
        "sourceType": null, "image": null, "address": null, "configMap": null, "grpcPodConfig": null,
        "configMapSource": {"configMap": "m"}
    })));
    let message = denial(&check(
        json!({"catalogImageSource": null, "sourceType": null}),
    ))
    .to_string();
    assert_contains_all(
        &message,
        &["exactly one catalog source but configures none"],
    );
    let verdict =
        check(json!({"sourceType": "grpc", "image": "i", "address": null, "configMap": null}));
    assert!(verdict.allowed);
}

#[test]
fn empty_keys_count_as_present() {
    let message = denial(&check(
        json!({"catalogImageSource": {}, "configMapSource": {"configMap": "m"}}),
    ))
    .to_string();
    assert_contains_all(&message, &["oneOf", "configures 2"]);
}

#[test]
fn incomplete_legacy_keys_are_explained_when_nothing_is_configured() {
    let message = denial(&check_with(json!({"image": "quay.io/x:1"}), &warning())).to_string();
    assert_contains_all(
        &message,
        &[
            "oneOf",
            "configures none",
            "spec.image has no spec.sourceType",
            "spec.catalogImageSource.catalogImage",
        ],
    );

    let message = denial(&check(json!({"sourceType": "grpc"}))).to_string();
    assert_contains_all(
        &message,
        &[
            "configures none",
            "spec.sourceType \"grpc\" alone names no catalog",
        ],
    );
    assert!(!message.contains("oneOf"), "{message}");

    let message = denial(&check_with(
        json!({"grpcPodConfig": {"priorityClassName": "p"}}),
        &warning(),
    ))
    .to_string();
    assert_contains_all(
        &message,
        &[
            "oneOf",
            "configures none (the deprecated spec.grpcPodConfig only tunes a registry pod and \
             names no catalog",
        ],
    );
    assert!(!message.contains("no spec.sourceType"), "{message}");
}

#[rstest]
#[case::image_without_source_type(
    json!({"image": "quay.io/x:1"}),
    "configures none (spec.image has no spec.sourceType, so no catalog is configured; add \
     spec.sourceType: grpc for spec.image)"
)]
#[case::config_map_without_source_type(
    json!({"configMap": "m"}),
    "add spec.sourceType: configmap for spec.configMap"
)]
#[case::two_sources_without_source_type(
    json!({"address": "h:1", "configMap": "m"}),
    "add spec.sourceType: grpc for spec.address and spec.sourceType: configmap for \
     spec.configMap and keep only one of them"
)]
#[case::grpc_pod_config_alone(
    json!({"grpcPodConfig": {"priorityClassName": "p"}}),
    "spec.grpcPodConfig only tunes the registry pod of spec.sourceType: grpc with spec.image \
     and names no catalog"
)]
#[case::source_type_alone(
    json!({"sourceType": "grpc"}),
    "spec.sourceType \"grpc\" alone names no catalog"
)]
#[case::grpc_without_image_or_address(
    json!({"sourceType": "grpc", "configMap": "m"}),
    "spec.sourceType \"grpc\" needs spec.image (an operator-registry image) or spec.address"
)]
#[case::configmap_without_config_map(
    json!({"sourceType": "configmap", "image": "i"}),
    "spec.sourceType \"configmap\" needs spec.configMap (the name of the ConfigMap"
)]
#[case::unknown_source_type(
    json!({"sourceType": "oci", "image": "i"}),
    "OLM accepts only \"grpc\", \"configmap\", \"internal\"; set spec.sourceType: grpc with \
     spec.image"
)]
fn incomplete_legacy_keys_are_explained_in_legacy_terms_by_default(
    #[case] spec: Value,
    #[case] part: &str,
) {
    let verdict = check(spec);
    assert_contains_all(denial(&verdict), &[part]);
    assert_legacy_terms(&verdict);
}

#[test]
fn a_union_member_in_the_object_allows_union_advice() {
    let message = denial(&check(json!({
        "catalogImageSource": {"catalogImage": "i"}, "grpcPodConfig": {"nodeSelector": {}}
    })))
    .to_string();
    assert_contains_all(&message, &["spec.catalogImageSource.podSpecOverrides"]);
}

#[test]
fn advice_to_move_grpc_pod_config_names_what_the_member_cannot_hold() {
    let config = json!({"securityContextConfig": "restricted", "memoryTarget": "30Mi", "nodeSelector": {"a": "b"}});
    let lost = "spec.grpcPodConfig.securityContextConfig and spec.grpcPodConfig.memoryTarget \
                has no place in spec.catalogImageSource.podSpecOverrides";
    // Beside a member.
    let message = denial(&check(
        json!({"catalogImageSource": {"catalogImage": "i"}, "grpcPodConfig": config}),
    ))
    .to_string();
    assert_contains_all(
        &message,
        &[
            "its replacement is spec.catalogImageSource.podSpecOverrides, but",
            lost,
        ],
    );
    // Alone, in union terms.
    let message = denial(&check_with(json!({"grpcPodConfig": config}), &warning())).to_string();
    assert_contains_all(&message, &["goes beside", lost]);
    // allowLegacy: false names the replacement of each key.
    let message = denial(&check_with(
        json!({"sourceType": "grpc", "image": "i", "grpcPodConfig": config}),
        &legacy_off(),
    ))
    .to_string();
    assert_contains_all(
        &message,
        &[
            "spec.grpcPodConfig with spec.catalogImageSource.podSpecOverrides (",
            lost,
        ],
    );
    // The legacy warning.
    let verdict = check_with(
        json!({"sourceType": "grpc", "image": "i", "grpcPodConfig": config}),
        &warning(),
    );
    assert!(verdict.allowed);
    assert_eq!(verdict.warnings.len(), 1, "{:?}", verdict.warnings);
    assert_contains_all(
        &verdict.warnings[0],
        &[
            "write spec.catalogImageSource.catalogImage: \"i\" instead; but",
            lost,
            "so that form would drop spec.grpcPodConfig.securityContextConfig and \
             spec.grpcPodConfig.memoryTarget",
        ],
    );
    // Nothing to lose, nothing said.
    let message = denial(&check(json!({
        "catalogImageSource": {"catalogImage": "i"}, "grpcPodConfig": {"nodeSelector": {"a": "b"}}
    })))
    .to_string();
    assert!(!message.contains("has no place"), "{message}");
}

// Rule 3.

#[rstest]
#[case::source_type("sourceType", json!("grpc"), None)]
#[case::image(
    "image",
    json!("quay.io/x:1"),
    Some("spec.catalogImageSource.catalogImage")
)]
#[case::address("address", json!("h:1"), Some("spec.catalogServiceSource.address"))]
#[case::config_map("configMap", json!("m"), Some("spec.configMapSource.configMap"))]
#[case::grpc_pod_config(
    "grpcPodConfig",
    json!({"priorityClassName": "p"}),
    Some("spec.catalogImageSource.podSpecOverrides")
)]
fn each_deprecated_key_beside_a_member_is_named(
    #[case] key: &str,
    #[case] value: Value,
    #[case] replacement: Option<&str>,
) {
    let mut spec = json!({"catalogImageSource": {"catalogImage": "quay.io/x:1"}});
    spec[key] = value;
    let message = denial(&check(spec)).to_string();
    assert_contains_all(
        &message,
        &[&format!(
            "spec.{key} is deprecated and OLM ignores it beside spec.catalogImageSource: remove it"
        )],
    );
    if let Some(replacement) = replacement {
        assert_contains_all(&message, &[replacement]);
    }
    assert!(!message.contains("oneOf"), "{message}");
}

#[test]
fn legacy_image_with_address_names_the_ignored_address() {
    let mut spec = operatorhubio_spec();
    spec["address"] = json!("operatorhubio-catalog.olm.svc:50051");
    let message = denial(&check(spec)).to_string();
    assert_contains_all(
        &message,
        &["spec.address is ignored because spec.image is set"],
    );
}

#[test]
fn grpc_pod_config_without_image_is_named() {
    let message = denial(&check(json!({
        "sourceType": "grpc", "address": "h:50051", "grpcPodConfig": {"priorityClassName": "p"}
    })))
    .to_string();
    assert_contains_all(
        &message,
        &["spec.grpcPodConfig is only used with", "spec.image"],
    );

    let message = denial(&check(json!({
        "sourceType": "configmap", "configMap": "m", "grpcPodConfig": {}
    })))
    .to_string();
    assert_contains_all(&message, &["spec.grpcPodConfig is only used with"]);
}

#[test]
fn config_map_with_grpc_is_named() {
    let mut spec = operatorhubio_spec();
    spec["configMap"] = json!("m");
    let message = denial(&check(spec)).to_string();
    assert_contains_all(
        &message,
        &["spec.configMap is ignored with spec.sourceType \"grpc\""],
    );
}

#[rstest]
#[case::configmap_image("configmap", "image")]
#[case::configmap_address("configmap", "address")]
#[case::internal_image("internal", "image")]
#[case::internal_address("internal", "address")]
fn image_or_address_with_configmap_or_internal_is_named(
    #[case] source_type: &str,
    #[case] key: &str,
) {
    let mut spec = json!({"sourceType": source_type, "configMap": "m"});
    spec[key] = json!("h:1");
    let message = denial(&check(spec)).to_string();
    assert_contains_all(
        &message,
        &[&format!(
            "spec.{key} is ignored with spec.sourceType \"{source_type}\""
        )],
    );
}

#[test]
fn image_with_configmap_and_no_config_map_names_both() {
    let message = denial(&check(json!({"sourceType": "configmap", "image": "i"}))).to_string();
    assert_contains_all(
        &message,
        &[
            "spec.image is ignored",
            "spec.sourceType \"configmap\" needs spec.configMap",
        ],
    );
}

#[test]
fn an_unknown_source_type_is_named_with_the_known_ones() {
    let message = denial(&check(json!({"sourceType": "gRPC", "image": "i"}))).to_string();
    assert_contains_all(
        &message,
        &[
            "spec.sourceType \"gRPC\" is not a source type OLM knows",
            "did you mean \"grpc\"",
            "\"grpc\", \"configmap\", \"internal\"",
        ],
    );

    let message = denial(&check_with(
        json!({"sourceType": "oci", "image": "i"}),
        &warning(),
    ))
    .to_string();
    assert_contains_all(
        &message,
        &[
            "spec.sourceType \"oci\"",
            "spec.catalogImageSource.catalogImage",
        ],
    );
    assert!(!message.contains("did you mean"));

    let message = denial(&check(json!({"sourceType": "", "configMap": "m"}))).to_string();
    assert_contains_all(&message, &["spec.sourceType \"\" is not a source type"]);
}

// Rule 4.

#[rstest]
#[case::no_image(json!({}), "missing")]
#[case::empty_image(json!({"catalogImage": ""}), "empty")]
#[case::blank_image(json!({"catalogImage": "  "}), "empty")]
#[case::null_image(json!({"catalogImage": null, "podSpecOverrides": {}}), "missing")]
fn an_image_member_must_name_an_image(#[case] member: Value, #[case] what: &str) {
    let message = denial(&check(json!({"catalogImageSource": member}))).to_string();
    assert_contains_all(
        &message,
        &[&format!("spec.catalogImageSource.catalogImage is {what}")],
    );
}

#[test]
fn a_service_member_needs_host_and_port() {
    let message = denial(&check(json!({"catalogServiceSource": {}}))).to_string();
    assert_contains_all(
        &message,
        &["spec.catalogServiceSource.address is missing", "host:port"],
    );
    // The enhancement's own example has no port: OLM could not dial it.
    let message = denial(&check(
        json!({"catalogServiceSource": {"address": "some.namespace.svc"}}),
    ))
    .to_string();
    assert_contains_all(
        &message,
        &[
            "spec.catalogServiceSource.address \"some.namespace.svc\" is not host:port",
            "port is missing",
        ],
    );
    assert_clean_accept(&check(
        json!({"catalogServiceSource": {"address": "[fd00::1]:65535"}}),
    ));
    assert_clean_accept(&check(
        json!({"catalogServiceSource": {"address": "10.96.0.10:1"}}),
    ));
}

#[rstest]
#[case::zero("0")]
#[case::above_range("65536")]
#[case::far_above_range("70000")]
#[case::not_a_number("http")]
fn a_service_member_port_must_be_a_port(#[case] port: &str) {
    let address = format!("registry.olm.svc:{port}");
    let message = denial(&check(
        json!({"catalogServiceSource": {"address": address}}),
    ))
    .to_string();
    assert_contains_all(&message, &[&format!("\"{address}\" is not host:port")]);
}

#[test]
fn a_config_map_member_must_name_a_config_map() {
    let message = denial(&check(json!({"configMapSource": {"configMap": ""}}))).to_string();
    assert_contains_all(&message, &["spec.configMapSource.configMap is empty"]);
    let message = denial(&check(json!({"configMapSource": {}}))).to_string();
    assert_contains_all(&message, &["spec.configMapSource.configMap is missing"]);
}

#[test]
fn legacy_values_must_configure_something_too() {
    let message = denial(&check(json!({"sourceType": "grpc", "image": ""}))).to_string();
    assert_contains_all(&message, &["spec.image is empty"]);
    let message = denial(&check(json!({"sourceType": "grpc", "address": "registry"}))).to_string();
    assert_contains_all(&message, &["spec.address \"registry\" is not host:port"]);
    let message = denial(&check(json!({"sourceType": "internal", "configMap": ""}))).to_string();
    assert_contains_all(&message, &["spec.configMap is empty"]);
}

#[test]
fn all_problems_of_one_spec_are_reported_together() {
    let message = denial(&check(
        json!({"catalogServiceSource": {"address": "x"}, "grpcPodConfig": {}}),
    ))
    .to_string();
    assert_contains_all(
        &message,
        &[
            "spec.grpcPodConfig is deprecated",
            "spec.catalogServiceSource.address \"x\" is not host:port",
        ],
    );
}

// Rule 5.

#[rstest]
#[case::grpc_image(operatorhubio_spec())]
#[case::grpc_image_with_marketplace_pod_config(json!({
    "sourceType": "grpc", "image": "i:1",
    "grpcPodConfig": {
        "nodeSelector": {"a": "b"}, "securityContextConfig": "restricted", "memoryTarget": "30Mi",
        "extractContent": {"catalogDir": "/configs", "cacheDir": "/tmp/cache"}
    }
}))]
#[case::grpc_address(json!({"sourceType": "grpc", "address": "h.ns.svc:50051"}))]
#[case::configmap(json!({"sourceType": "configmap", "configMap": "m"}))]
#[case::internal(json!({"sourceType": "internal", "configMap": "m"}))]
fn legacy_sources_are_accepted_without_warning_by_default(#[case] spec: Value) {
    assert_clean_accept(&check(spec.clone()));
    let object = catalog(spec);
    assert_clean_accept(&update(object.clone(), object, &Settings::default()));
}

#[rstest]
#[case::grpc_image(
    operatorhubio_spec(),
    "spec.sourceType and spec.image",
    "spec.catalogImageSource: {\"catalogImage\":\"quay.io/operatorhubio/catalog:latest\"}"
)]
#[case::grpc_image_pod_config(
    json!({"sourceType": "grpc", "image": "i:1", "grpcPodConfig": {"nodeSelector": {"a": "b"}}}),
    "spec.sourceType, spec.image and spec.grpcPodConfig",
    "spec.catalogImageSource: {\"catalogImage\":\"i:1\",\"podSpecOverrides\":{\"nodeSelector\":{\"a\":\"b\"}}}"
)]
#[case::grpc_address(
    json!({"sourceType": "grpc", "address": "h.ns.svc:50051"}),
    "spec.sourceType and spec.address",
    "spec.catalogServiceSource: {\"address\":\"h.ns.svc:50051\"}"
)]
#[case::configmap(
    json!({"sourceType": "configmap", "configMap": "m"}),
    "spec.sourceType and spec.configMap",
    "spec.configMapSource: {\"configMap\":\"m\"}"
)]
#[case::internal(
    json!({"sourceType": "internal", "configMap": "m"}),
    "spec.sourceType and spec.configMap",
    "spec.configMapSource: {\"configMap\":\"m\"}"
)]
fn warn_legacy_warns_about_legacy_sources_naming_the_replacement(
    #[case] spec: Value,
    #[case] deprecated: &str,
    #[case] replacement: &str,
) {
    let verdict = check_with(spec, &warning());
    assert!(verdict.allowed, "{:?}", verdict.message);
    assert_eq!(verdict.mutated_object, None);
    assert_eq!(verdict.warnings.len(), 1, "{:?}", verdict.warnings);
    assert_contains_all(
        &verdict.warnings[0],
        &[
            &format!("the deprecated {deprecated} configure this catalog"),
            &format!("write {replacement} instead"),
        ],
    );
    assert_no_debug_output(&verdict.warnings[0]);
}

#[test]
fn without_allow_legacy_a_legacy_source_is_denied_with_its_replacement() {
    let message = denial(&check_with(operatorhubio_spec(), &legacy_off())).to_string();
    assert_contains_all(
        &message,
        &[
            "oneOf",
            "configures none",
            "because allowLegacy is false",
            "replace spec.image with spec.catalogImageSource.catalogImage",
        ],
    );

    let message = denial(&check_with(
        json!({"sourceType": "configmap", "configMap": "m"}),
        &legacy_off(),
    ))
    .to_string();
    assert_contains_all(
        &message,
        &["spec.configMap with spec.configMapSource.configMap"],
    );
}

#[test]
fn without_allow_legacy_a_lone_deprecated_key_is_named() {
    let message = denial(&check_with(json!({"sourceType": "grpc"}), &legacy_off())).to_string();
    assert_contains_all(
        &message,
        &[
            "configures none (the deprecated spec.sourceType is not accepted here because allowLegacy is false)",
        ],
    );
}

#[test]
fn without_allow_legacy_legacy_keys_beside_a_member_are_stray() {
    let message = denial(&check_with(
        json!({"catalogImageSource": {"catalogImage": "i"}, "sourceType": "grpc", "image": "i"}),
        &legacy_off(),
    ))
    .to_string();
    assert_contains_all(
        &message,
        &[
            "spec.sourceType is deprecated and OLM ignores it",
            "spec.image is deprecated",
        ],
    );
    assert!(!message.contains("oneOf"));
}

// Rule 6.

#[test]
fn migration_rewrites_image_and_keeps_the_other_fields() {
    let verdict = check_with(operatorhubio_spec(), &migrating());
    assert_eq!(
        migrated_spec(&verdict),
        json!({
            "catalogImageSource": {"catalogImage": "quay.io/operatorhubio/catalog:latest"},
            "displayName": "Community Operators",
            "publisher": "OperatorHub.io",
            "updateStrategy": {"registryPoll": {"interval": "60m"}}
        })
    );
    assert_contains_all(
        &verdict.warnings.join("\n"),
        &["rewritten to spec.catalogImageSource"],
    );
}

#[test]
fn migration_moves_grpc_pod_config_to_pod_spec_overrides() {
    let fixture: Value =
        serde_yaml_ng::from_str(include_str!("fixtures/grpc-pod-config-migration.yaml")).unwrap();
    let verdict = check_with(fixture["spec"].clone(), &migrating());
    assert_eq!(migrated_spec(&verdict), fixture["migrated"]);
}

#[rstest]
#[case::grpc_address(
    json!({"sourceType": "grpc", "address": "h.ns.svc:50051"}),
    json!({"catalogServiceSource": {"address": "h.ns.svc:50051"}})
)]
#[case::configmap(
    json!({"sourceType": "configmap", "configMap": "m"}),
    json!({"configMapSource": {"configMap": "m"}})
)]
#[case::internal_with_null_image(
    json!({"sourceType": "internal", "configMap": "m", "image": null}),
    json!({"configMapSource": {"configMap": "m"}})
)]
#[case::empty_pod_config_is_dropped(
    json!({"sourceType": "grpc", "image": "i:1", "grpcPodConfig": {"tolerations": []}}),
    json!({"catalogImageSource": {"catalogImage": "i:1"}})
)]
fn migration_rewrites_address_and_config_maps(#[case] spec: Value, #[case] expected: Value) {
    for settings in [migrating(), migrating_only()] {
        assert_eq!(
            migrated_spec(&check_with(spec.clone(), &settings)),
            expected
        );
    }
}

#[rstest]
#[case::grpc_image(operatorhubio_spec())]
#[case::grpc_image_pod_config(json!({
    "sourceType": "grpc", "image": "i:1",
    "grpcPodConfig": {"nodeSelector": {"a": "b"}, "tolerations": [{"operator": "Exists"}], "priorityClassName": "p"}
}))]
#[case::grpc_address(json!({"sourceType": "grpc", "address": "h.ns.svc:50051"}))]
#[case::configmap(json!({"sourceType": "configmap", "configMap": "m"}))]
#[case::internal(json!({"sourceType": "internal", "configMap": "m"}))]
fn migrated_objects_are_accepted_without_warning(#[case] spec: Value) {
    for settings in [migrating(), migrating_only()] {
        let verdict = check_with(spec.clone(), &settings);
        let migrated = verdict.mutated_object.clone().expect("a mutation");
        for again in [
            Settings::default(),
            legacy_off(),
            migrating(),
            migrating_only(),
        ] {
            let request = request_for("CREATE", migrated.clone());
            assert_clean_accept(&validate(&request, &again, &NoCluster));
        }
    }
}

#[test]
fn invalid_legacy_specs_are_not_migrated() {
    let mut spec = operatorhubio_spec();
    spec["address"] = json!("h:1");
    let message = denial(&check_with(spec, &migrating())).to_string();
    assert_contains_all(&message, &["spec.address is ignored"]);
}

#[test]
fn grpc_pod_config_fields_overrides_cannot_hold_stop_the_migration() {
    let spec = json!({
        "sourceType": "grpc", "image": "i:1",
        "grpcPodConfig": {"securityContextConfig": "restricted", "nodeSelector": {"a": "b"}}
    });
    let verdict = check_with(spec.clone(), &migrating());
    assert!(verdict.allowed);
    assert_eq!(verdict.mutated_object, None);
    let warnings = verdict.warnings.join("\n");
    assert_contains_all(
        &warnings,
        &[
            "this spec was not migrated: spec.grpcPodConfig.securityContextConfig has no \
             place in spec.catalogImageSource.podSpecOverrides",
            "remove spec.grpcPodConfig.securityContextConfig to let it be migrated",
            "write spec.catalogImageSource.catalogImage: \"i:1\" instead",
        ],
    );

    let message = denial(&check_with(spec, &migrating_only())).to_string();
    assert_contains_all(
        &message,
        &[
            "allowLegacy is false, and this spec cannot be migrated: \
             spec.grpcPodConfig.securityContextConfig has no place",
            "remove spec.grpcPodConfig.securityContextConfig and write \
             spec.catalogImageSource.catalogImage: \"i:1\" instead",
        ],
    );
}

// Robustness.

#[test]
fn odd_json_never_panics_and_never_shows_debug_output() {
    let odd = [
        Value::Null,
        json!(true),
        json!(-1),
        json!(1.5),
        json!(""),
        json!("grpc"),
        json!([]),
        json!([null, {"a": 1}]),
        json!({}),
        json!({"catalogImage": {"x": []}}),
    ];
    let keys = [
        "sourceType",
        "image",
        "address",
        "configMap",
        "grpcPodConfig",
        "catalogImageSource",
        "catalogServiceSource",
        "configMapSource",
        "displayName",
    ];
    let settings = [
        Settings::default(),
        legacy_off(),
        warning(),
        migrating(),
        migrating_only(),
    ];
    for value in &odd {
        for key in keys {
            for base in [
                json!({}),
                operatorhubio_spec(),
                json!({"catalogImageSource": {"catalogImage": "i"}}),
            ] {
                let mut spec = base.clone();
                spec[key] = value.clone();
                for s in &settings {
                    let verdict = check_with(spec.clone(), s);
                    assert_no_debug_output(verdict.message.as_deref().unwrap_or_default());
                    verdict
                        .warnings
                        .iter()
                        .for_each(|w| assert_no_debug_output(w));
                }
            }
            let nested = json!({"catalogImageSource": {"catalogImage": "i", "podSpecOverrides": {key: value}}});
            let verdict = check(nested);
            assert_no_debug_output(verdict.message.as_deref().unwrap_or_default());
        }
        let mut object = catalog(json!({}));
        object["metadata"] = value.clone();
        let _ = validate(&request_for("UPDATE", object), &migrating(), &NoCluster);
        let _ = check(value.clone());
    }
}
