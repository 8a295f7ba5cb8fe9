use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;

fn key(group: &str, version: &str, kind: &str) -> ApiKey {
    ApiKey::new(group, version, kind)
}

fn apis(annotation: &str) -> ApiSet {
    ApiSet::parse_annotation(annotation)
}

fn ns(names: &[&str]) -> NamespaceSet {
    NamespaceSet::new(names.iter().copied())
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// groups_test.go `buildOperatorGroup`: a group whose status lists
/// `targets` and whose annotation is the `gvks` joined by commas.
fn group(namespace: &str, name: &str, targets: &[&str], gvks: &[&str]) -> GroupSurface {
    GroupSurface::from_status(&og(namespace, name, Some(targets), &gvks.join(",")))
}

fn og(namespace: &str, name: &str, status: Option<&[&str]>, annotation: &str) -> OperatorGroup {
    let mut object = json!({
        "apiVersion": "operators.coreos.com/v1",
        "kind": "OperatorGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {PROVIDED_APIS_ANNOTATION: annotation},
        },
    });
    if let Some(targets) = status {
        object["status"] = json!({"namespaces": targets, "lastUpdated": "2024-01-01T00:00:00Z"});
    }
    OperatorGroup::from_object(&object).unwrap()
}

// --- ApiKey / ApiSet -------------------------------------------------

#[test]
fn parse_kind_arg_needs_two_dots_and_keeps_dots_in_the_group() {
    assert_eq!(
        ApiKey::parse_kind_arg("Goose.v1alpha1.birds.com"),
        Some(key("birds.com", "v1alpha1", "Goose"))
    );
    assert_eq!(ApiKey::parse_kind_arg("Goose.v1alpha1"), None);
    assert_eq!(ApiKey::parse_kind_arg("Goose"), None);
    assert_eq!(ApiKey::parse_kind_arg(""), None);
    // ParseKindArg does not validate the parts: empty ones are kept.
    assert_eq!(
        ApiKey::parse_kind_arg("Goose..birds"),
        Some(key("birds", "", "Goose"))
    );
}

#[test]
fn annotation_one_api() {
    assert_eq!(
        apis("Goose.v1alpha1.birds.com"),
        [key("birds.com", "v1alpha1", "Goose")]
            .into_iter()
            .collect()
    );
}

#[test]
fn annotation_bad_provided_api_is_dropped() {
    // groups_test.go "OneTargetNamespace/BadProvidedAPI"
    assert!(apis("Goose.v1alpha1").is_empty());
}

#[test]
fn annotation_multiple_provided_apis_one_bad() {
    // groups_test.go "OneTargetNamespace/MultipleProvidedAPIs/OneBad"
    assert_eq!(
        apis("Goose.v1alpha1,Moose.v1alpha1.mammals.com"),
        [key("mammals.com", "v1alpha1", "Moose")]
            .into_iter()
            .collect()
    );
}

#[test]
fn annotation_multiple_provided_apis() {
    assert_eq!(
        apis("Goose.v1alpha1.birds.com,Moose.v1alpha1.mammals.com"),
        [
            key("birds.com", "v1alpha1", "Goose"),
            key("mammals.com", "v1alpha1", "Moose")
        ]
        .into_iter()
        .collect()
    );
}

#[test]
fn annotation_spaces_and_empty_pieces_are_ignored_case_is_kept() {
    let set = apis(" Goose.v1alpha1.birds.com , ,Moose.v1alpha1.mammals.com,,");
    assert_eq!(set.len(), 2);
    assert!(set.contains(&key("birds.com", "v1alpha1", "Goose")));
    // Comparison is case-sensitive: OLM has a TODO, no lower-casing.
    assert!(!set.contains(&key("birds.com", "v1alpha1", "goose")));
    assert!(apis("").is_empty());
}

#[test]
fn version_is_part_of_the_identity() {
    let v1 = apis("Widget.v1.example.com");
    let v1beta1 = apis("Widget.v1beta1.example.com");
    assert!(!v1.intersects(&v1beta1));
}

#[test]
fn annotation_printer_sorts_and_round_trips() {
    let set = apis("Prometheus.v1.monitoring.coreos.com,Alertmanager.v1.monitoring.coreos.com");
    let printed = set.to_string();
    assert_eq!(
        printed,
        "Alertmanager.v1.monitoring.coreos.com,Prometheus.v1.monitoring.coreos.com"
    );
    assert_eq!(apis(&printed), set);
    assert_eq!(ApiSet::new().to_string(), "");
}

#[test]
fn api_set_algebra() {
    let ab = apis("A.v1.g,B.v1.g");
    let bc = apis("B.v1.g,C.v1.g");
    assert_eq!(ab.union(&bc), apis("A.v1.g,B.v1.g,C.v1.g"));
    assert_eq!(ab.intersection(&bc), apis("B.v1.g"));
    assert_eq!(ab.difference(&bc), apis("A.v1.g"));
    assert!(ab.intersects(&bc));
    assert!(!ab.intersects(&apis("C.v1.g")));
    assert!(apis("A.v1.g").is_subset(&ab));
    assert!(!bc.is_subset(&ab));
    assert!(ApiSet::new().is_subset(&ApiSet::new()));
}

// --- NamespaceSet (groups_test.go TestNamespaceSet*) ------------------

/// (name, left, right, want)
type SetCase<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [&'a str]);

#[test]
fn namespace_set_intersection_table() {
    let cases: &[SetCase] = &[
        ("EmptySets", &[], &[], &[]),
        (
            "EmptyLeft/MultipleRight/NoIntersection",
            &[],
            &["ns", "ns-1", "ns-2"],
            &[],
        ),
        (
            "MultipleLeft/EmptyRight/NoIntersection",
            &["ns", "ns-1", "ns-2"],
            &[],
            &[],
        ),
        ("OneLeft/OneRight/Intersection", &["ns"], &["ns"], &["ns"]),
        (
            "MultipleLeft/MultipleRight/SomeIntersect",
            &["ns", "ns-1", "ns-2"],
            &["ns", "ns-1", "ns-3"],
            &["ns", "ns-1"],
        ),
        (
            "MultipleLeft/MultipleRight/AllIntersect",
            &["ns", "ns-1", "ns-2"],
            &["ns", "ns-1", "ns-2"],
            &["ns", "ns-1", "ns-2"],
        ),
        (
            "AllLeft/MultipleRight/RightIsIntersection",
            &[""],
            &["ns", "ns-1", "ns-2"],
            &["ns", "ns-1", "ns-2"],
        ),
        (
            "MultipleLeft/AllRight/LeftIsIntersection",
            &["ns", "ns-1", "ns-2"],
            &[""],
            &["ns", "ns-1", "ns-2"],
        ),
        ("AllLeft/EmptyRight/NoIntersection", &[""], &[], &[]),
        ("EmptyLeft/AllRight/NoIntersection", &[], &[""], &[]),
        ("AllLeft/AllRight/Intersection", &[""], &[""], &[""]),
    ];
    for (name, left, right, want) in cases {
        let got = ns(left).intersection(&ns(right));
        assert_eq!(got, ns(want), "{name}");
        assert_eq!(
            ns(left).intersects(&ns(right)),
            !want.is_empty(),
            "{name} (intersects)"
        );
    }
}

#[test]
fn namespace_set_union_table() {
    let cases: &[SetCase] = &[
        ("EmptySets", &[], &[], &[]),
        (
            "EmptyLeft/MultipleRight",
            &[],
            &["ns", "ns-1"],
            &["ns", "ns-1"],
        ),
        (
            "MultipleLeft/EmptyRight",
            &["ns", "ns-1"],
            &[],
            &["ns", "ns-1"],
        ),
        ("OneLeft/SameRight", &["ns"], &["ns"], &["ns"]),
        (
            "MultipleLeft/MultipleRight/Differ",
            &["ns", "ns-1", "ns-2"],
            &["ns", "ns-1", "ns-3"],
            &["ns", "ns-1", "ns-2", "ns-3"],
        ),
        ("AllLeft/MultipleRight", &[""], &["ns", "ns-1"], &[""]),
        ("MultipleLeft/AllRight", &["ns", "ns-1"], &[""], &[""]),
        ("AllLeft/EmptyRight", &[""], &[], &[""]),
        ("EmptyLeft/AllRight", &[], &[""], &[""]),
        ("AllLeft/AllRight", &[""], &[""], &[""]),
    ];
    for (name, left, right, want) in cases {
        assert_eq!(ns(left).union(&ns(right)), ns(want), "{name}");
    }
}

#[test]
fn namespace_set_is_all_and_contains() {
    assert!(NamespaceSet::all().is_all_namespaces());
    assert!(!ns(&["a"]).is_all_namespaces());
    assert!(!ns(&["a", "b", "c"]).is_all_namespaces());
    // "" among others is a literal member, not "all".
    assert!(!ns(&["", "a"]).is_all_namespaces());
    assert!(NamespaceSet::all().contains("any"));
    assert!(ns(&["a", "b"]).contains("a"));
    assert!(ns(&["a", "b"]).contains("b"));
    assert!(!ns(&["a", "b"]).contains("c"));
    assert_eq!(ns(&["b", "a"]).sorted(), vec!["a", "b"]);
}

// --- target sets (groups_test.go TestNewOperatorGroup) -----------------

/// (name, status.namespaces, annotation, want targets, want APIs)
type GroupCase<'a> = (
    &'a str,
    Option<&'a [&'a str]>,
    &'a str,
    &'a [&'a str],
    ApiSet,
);

#[test]
fn new_operator_group_table() {
    let cases: &[GroupCase] = &[
        (
            "NoTargetNamespaces/NoProvidedAPIs",
            Some(&[]),
            "",
            &[],
            ApiSet::new(),
        ),
        (
            "OneTargetNamespace/NoProvidedAPIs",
            Some(&["ns-1"]),
            "",
            &["ns", "ns-1"],
            ApiSet::new(),
        ),
        (
            "OwnTargetNamespace/NoProvidedAPIs",
            Some(&["ns"]),
            "",
            &["ns"],
            ApiSet::new(),
        ),
        (
            "MultipleTargetNamespaces/NoProvidedAPIs",
            Some(&["ns-1", "ns-2"]),
            "",
            &["ns", "ns-1", "ns-2"],
            ApiSet::new(),
        ),
        (
            "AllTargetNamespaces/NoProvidedAPIs",
            Some(&[""]),
            "",
            &[""],
            ApiSet::new(),
        ),
        (
            "OneTargetNamespace/OneProvidedAPI",
            Some(&["ns-1"]),
            "Goose.v1alpha1.birds.com",
            &["ns", "ns-1"],
            apis("Goose.v1alpha1.birds.com"),
        ),
        (
            "OneTargetNamespace/BadProvidedAPI",
            Some(&["ns-1"]),
            "Goose.v1alpha1",
            &["ns", "ns-1"],
            ApiSet::new(),
        ),
        (
            "OneTargetNamespace/MultipleProvidedAPIs/OneBad",
            Some(&["ns-1"]),
            "Goose.v1alpha1,Moose.v1alpha1.mammals.com",
            &["ns", "ns-1"],
            apis("Moose.v1alpha1.mammals.com"),
        ),
        ("Unsynced/NoStatus", None, "", &[], ApiSet::new()),
    ];
    for (name, status, annotation, targets, provided) in cases {
        let surface = GroupSurface::from_status(&og("ns", "group", *status, annotation));
        assert_eq!(surface.namespace, "ns", "{name}");
        assert_eq!(surface.name, "group", "{name}");
        assert_eq!(surface.targets, ns(targets), "{name}");
        assert_eq!(&surface.provided_apis, provided, "{name}");
    }
}

#[test]
fn target_set_appends_own_namespace_unless_empty_or_all() {
    assert_eq!(target_set(&strings(&["a"]), "own"), ns(&["a", "own"]));
    assert_eq!(target_set(&[], "own"), ns(&[]));
    assert_eq!(target_set(&strings(&[""]), "own"), NamespaceSet::all());
    // Only the first element is looked at, as in OLM.
    assert_eq!(target_set(&strings(&["", "a"]), "own"), ns(&["", "a"]));
    assert_eq!(
        target_set(&strings(&["a", ""]), "own"),
        ns(&["a", "", "own"])
    );
}

#[test]
fn synced_namespaces_distinguishes_unsynced_from_empty() {
    let unsynced = OperatorGroup::from_object(&json!({"metadata": {"name": "g"}})).unwrap();
    assert_eq!(unsynced.synced_namespaces(), None);
    let empty_status = OperatorGroup::from_object(&json!({"status": {}})).unwrap();
    assert_eq!(empty_status.synced_namespaces(), None);
    let null_status = OperatorGroup::from_object(&json!({"status": null})).unwrap();
    assert_eq!(null_status.synced_namespaces(), None);
    // OLM omits an empty `namespaces` but always writes lastUpdated.
    let synced_empty =
        OperatorGroup::from_object(&json!({"status": {"lastUpdated": "2024-01-01T00:00:00Z"}}))
            .unwrap();
    assert_eq!(synced_empty.synced_namespaces(), Some(&[][..]));
    let synced = OperatorGroup::from_object(&json!({"status": {"namespaces": [""]}})).unwrap();
    assert_eq!(synced.synced_namespaces(), Some(&strings(&[""])[..]));
}

// --- spec target resolution (getOperatorGroupTargets) ------------------

fn spec(value: Value) -> OperatorGroupSpec {
    OperatorGroup::from_object(&json!({ "spec": value }))
        .unwrap()
        .spec
}

fn namespaces() -> Vec<Namespace> {
    vec![
        Namespace::named("prod-a", BTreeMap::from([("env".into(), "prod".into())])),
        Namespace::named("prod-b", BTreeMap::from([("env".into(), "prod".into())])),
        Namespace::named("dev", BTreeMap::from([("env".into(), "dev".into())])),
    ]
}

fn resolve(spec: &OperatorGroupSpec) -> Result<Vec<String>, TargetsError> {
    let listed = namespaces();
    Ok(spec
        .targets()?
        .resolve(|selector| Ok::<_, ()>(select_namespaces(selector, &listed)))
        .unwrap_or_default())
}

#[test]
fn explicit_target_namespaces_win_over_the_selector() {
    let s = spec(
        json!({"targetNamespaces": ["b", "a", "b"], "selector": {"matchLabels": {"env": "prod"}}}),
    );
    assert_eq!(resolve(&s), Ok(strings(&["b", "a"])));
}

#[test]
fn target_namespaces_with_namespace_all_fail() {
    let s = spec(json!({"targetNamespaces": ["a", ""]}));
    assert_eq!(resolve(&s), Err(TargetsError::ContainsNamespaceAll));
}

#[test]
fn no_selector_or_empty_selector_means_all_namespaces() {
    for value in [
        json!({}),
        json!({"selector": null}),
        json!({"selector": {}}),
        json!({"selector": {"matchLabels": {}}}),
        json!({"targetNamespaces": [], "selector": {"matchExpressions": []}}),
        json!({"targetNamespaces": null}),
    ] {
        assert_eq!(resolve(&spec(value.clone())), Ok(strings(&[""])), "{value}");
    }
}

#[test]
fn a_selector_picks_matching_namespaces_without_listing_otherwise() {
    let s = spec(json!({"selector": {"matchLabels": {"env": "prod"}}}));
    assert_eq!(resolve(&s), Ok(strings(&["prod-a", "prod-b"])));
    let none = spec(json!({"selector": {"matchLabels": {"env": "staging"}}}));
    assert_eq!(resolve(&none), Ok(vec![]));
    let expr = spec(
        json!({"selector": {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}}),
    );
    assert_eq!(resolve(&expr), Ok(strings(&["dev"])));
    // Explicit targets never ask for the namespace list.
    let explicit = spec(json!({"targetNamespaces": ["x"]})).targets().unwrap();
    let listed: Result<Vec<String>, &str> = explicit.resolve(|_| Err("listed"));
    assert_eq!(listed, Ok(strings(&["x"])));
}

#[test]
fn an_invalid_selector_fails_even_with_target_namespaces() {
    let s = spec(json!({
        "targetNamespaces": ["a"],
        "selector": {"matchExpressions": [{"key": "env", "operator": "Equals", "values": ["x"]}]}
    }));
    assert!(matches!(resolve(&s), Err(TargetsError::InvalidSelector(_))));
}

// --- GroupIntersection (groups_test.go TestGroupIntersection) ----------

#[test]
fn group_intersection_table() {
    type Case<'a> = (&'a str, GroupSurface, Vec<GroupSurface>, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        (
            "NoTargets/NilGroups/NoIntersection",
            group("ns", "empty-group", &[], &[]),
            vec![],
            vec![],
        ),
        (
            "MatchingTarget/SingleOtherGroup/Intersection",
            group("ns", "group-a", &["ns-1"], &[]),
            vec![group("ns-2", "group-b", &["ns-1"], &[])],
            vec!["group-b/ns-2"],
        ),
        (
            "TargetIsOperatorNamespace/SingleOtherGroup/Intersection",
            group("ns", "group-a", &["ns-1"], &[]),
            vec![group("ns-2", "group-b", &["ns"], &[])],
            vec!["group-b/ns-2"],
        ),
        (
            "MatchingOperatorNamespaces/SingleOtherGroup/Intersection",
            group("ns", "group-a", &["ns-1"], &[]),
            vec![group("ns", "group-b", &["ns-2"], &[])],
            vec!["group-b/ns"],
        ),
        (
            "MatchingTarget/MultipleOtherGroups/Intersection",
            group("ns", "group-a", &["ns-1"], &[]),
            vec![
                group("ns-2", "group-b", &["ns-1"], &[]),
                group("ns-3", "group-c", &["ns-1"], &[]),
            ],
            vec!["group-b/ns-2", "group-c/ns-3"],
        ),
        (
            "NonMatchingTargets/MultipleOtherGroups/NoIntersection",
            group("ns", "group-a", &["ns-1", "ns-2", "ns-3"], &[]),
            vec![
                group("ns-4", "group-b", &["ns-6", "ns-7", "ns-8"], &[]),
                group("ns-5", "group-c", &["ns-6", "ns-7", "ns-8"], &[]),
            ],
            vec![],
        ),
        (
            "AllNamespaces/MultipleTargets/Intersection",
            group("ns", "group-a", &[""], &[]),
            vec![
                group("ns-4", "group-b", &["ns-6", "ns-7", "ns-8"], &[]),
                group("ns-5", "group-c", &["ns-9", "ns-10", "ns-11"], &[]),
                group("ns-6", "group-d", &["ns-11", "ns-12"], &[]),
            ],
            vec!["group-b/ns-4", "group-c/ns-5", "group-d/ns-6"],
        ),
        (
            "MatchingTargetAllNamespace/MultipleTargets/Intersection",
            group("ns", "group-a", &["ns-1", "ns-2", "ns-3"], &[]),
            vec![
                group("ns-4", "group-b", &[""], &[]),
                group("ns-5", "group-c", &["ns-9", "ns-10", "ns-11"], &[]),
                group("ns-6", "group-d", &["ns-11", "ns-12"], &[]),
            ],
            vec!["group-b/ns-4"],
        ),
        (
            "AllNamespace/MultipleTargets/OneAllNamespace/Intersection",
            group("ns", "group-a", &[""], &[]),
            vec![
                group("ns-4", "group-b", &[""], &[]),
                group("ns-5", "group-c", &["ns-9", "ns-10", "ns-11"], &[]),
                group("ns-6", "group-d", &["ns-11", "ns-12"], &[]),
            ],
            vec!["group-b/ns-4", "group-c/ns-5", "group-d/ns-6"],
        ),
        (
            "AllNamespace/AllNamespace/Intersection",
            group("ns", "group-a", &[""], &[]),
            vec![group("ns-4", "group-b", &[""], &[])],
            vec!["group-b/ns-4"],
        ),
        (
            "Self/Skipped",
            group("ns", "group-a", &[""], &[]),
            vec![group("ns", "group-a", &[""], &[])],
            vec![],
        ),
        (
            "All/UnsyncedOther/NoIntersection",
            group("ns", "group-a", &[""], &[]),
            vec![GroupSurface::from_status(&og("ns-2", "group-b", None, ""))],
            vec![],
        ),
    ];
    for (name, left, right, want) in cases {
        let got: Vec<String> = left
            .group_intersection(&right)
            .iter()
            .map(|g| g.identifier())
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

// --- ReconcileAPIIntersection (groups_test.go apiIntersectionReconcilerSuite)

#[test]
fn reconcile_api_intersection_table() {
    use ApiReconciliation::*;
    let goose = "Goose.v1alpha1.birds.com";
    let goose_moose = "Goose.v1alpha1.birds.com,Moose.v1alpha1.mammals.com";
    type Case<'a> = (
        &'a str,
        &'a str,
        GroupSurface,
        Vec<GroupSurface>,
        ApiReconciliation,
    );
    let cases: Vec<Case> = vec![
        (
            "Empty/NoAPIConflict",
            "",
            group("ns", "g1", &["ns"], &[]),
            vec![],
            NoApiConflict,
        ),
        (
            "NoNamespaceIntersection/APIIntersection/NoAPIConflict",
            goose,
            group("ns", "g1", &["ns-1"], &[goose]),
            vec![group("ns-2", "g1", &["ns-3"], &[goose])],
            NoApiConflict,
        ),
        (
            "NamespaceIntersection/NoAPIIntersection/NoAPIConflict",
            goose,
            group("ns", "g1", &["ns-1"], &[goose]),
            vec![group(
                "ns-2",
                "g1",
                &["ns-1"],
                &["Moose.v1alpha1.mammals.com"],
            )],
            NoApiConflict,
        ),
        (
            "MultipleNamespaceIntersections/NoAPIIntersection/NoAPIConflict",
            goose,
            group("ns", "g1", &["ns-1"], &[goose]),
            vec![
                group("ns-2", "g1", &["ns-1"], &["Moose.v1alpha1.mammals.com"]),
                group("ns-2", "g1", &["ns"], &["Egret.v1alpha1.birds.com"]),
            ],
            NoApiConflict,
        ),
        (
            "SomeNamespaceIntersection/NoAPIIntersection/NoAPIConflict",
            goose_moose,
            group("ns", "g1", &["ns-1", "ns-2", "ns-3"], &[goose_moose]),
            vec![
                group("ns-7", "g1", &["ns-4"], &["Moose.v1alpha1.mammals.com"]),
                group("ns-8", "g1", &["ns-5"], &[goose]),
                group("ns-9", "g1", &[""], &["Goat.v1alpha1.mammals.com"]),
            ],
            NoApiConflict,
        ),
        (
            "AllNamespaceIntersection/NoAPIIntersection/NoAPIConflict",
            goose,
            group("ns", "g1", &[""], &[goose]),
            vec![group(
                "ns-2",
                "g1",
                &["ns-1"],
                &["Moose.v1alpha1.mammals.com"],
            )],
            NoApiConflict,
        ),
        (
            "AllNamespaceIntersectionOnOther/NoAPIIntersection/NoAPIConflict",
            goose,
            group("ns", "g1", &["ns-1"], &[goose]),
            vec![group("ns-2", "g1", &[""], &["Moose.v1alpha1.mammals.com"])],
            NoApiConflict,
        ),
        (
            "AllNamespaceInstersectionOnOther/NoAPIIntersection/NoAPIConflict",
            goose,
            group("ns", "g1", &[""], &[goose]),
            vec![group("ns-2", "g1", &[""], &["Moose.v1alpha1.mammals.com"])],
            NoApiConflict,
        ),
        (
            "NamespaceIntersection/NoAPIIntersection/NoAPIConflict (no annotation)",
            goose,
            group("ns", "g1", &["ns-1"], &[goose]),
            vec![group("ns-2", "g1", &["ns-1"], &[])],
            NoApiConflict,
        ),
        (
            "NamespaceIntersection/APIIntersection/APIConflict",
            goose,
            group("ns", "g1", &["ns-1"], &[]),
            vec![group("ns-2", "g1", &["ns-1"], &[goose])],
            ApiConflict,
        ),
        (
            "AllNamespaceIntersection/APIIntersection/APIConflict",
            goose,
            group("ns", "g1", &[""], &[]),
            vec![group("ns-2", "g1", &["ns-1"], &[goose])],
            ApiConflict,
        ),
        (
            "AllNamespaceIntersectionOnOther/APIIntersection/APIConflict",
            goose,
            group("ns", "g1", &["ns-1"], &[]),
            vec![group("ns-2", "g1", &[""], &[goose])],
            ApiConflict,
        ),
        (
            "AllNamespaceIntersectionOnBoth/APIIntersection/APIConflict",
            goose,
            group("ns", "g1", &[""], &[]),
            vec![group("ns-2", "g1", &[""], &[goose])],
            ApiConflict,
        ),
        (
            "NamespaceIntersection/SomeAPIIntersection/APIConflict",
            goose,
            group("ns", "g1", &["ns-1"], &[]),
            vec![
                group("ns-2", "g1", &["ns-1"], &["Moose.v1alpha1.birds.com"]),
                group(
                    "ns-3",
                    "g1",
                    &["ns-1"],
                    &["Goose.v1alpha1.birds.com,Egret.v1alpha1.birds.com"],
                ),
            ],
            ApiConflict,
        ),
        (
            "NamespaceIntersectionOnOperatorNamespace/SomeAPIIntersection/APIConflict",
            goose,
            group("ns", "g1", &["ns-1"], &[]),
            vec![group(
                "ns-3",
                "g1",
                &["ns"],
                &["Goose.v1alpha1.birds.com,Egret.v1alpha1.birds.com"],
            )],
            ApiConflict,
        ),
        (
            "NoNamespaceIntersection/NoAPIIntersection/AddAPIs",
            goose,
            group("ns", "g1", &["ns-1"], &[]),
            vec![group("ns-2", "g1", &["ns-2"], &[goose])],
            AddApis,
        ),
        (
            "NamespaceIntersection/NoAPIIntersection/AddAPIs",
            goose,
            group("ns", "g1", &["ns-1"], &[]),
            vec![group(
                "ns-2",
                "g1",
                &["ns-1"],
                &["Moose.v1alpha1.mammals.com"],
            )],
            AddApis,
        ),
        (
            "OperatorNamespaceIntersection/NoAPIIntersection/AddAPIs",
            goose,
            group("ns", "g1", &["ns-1"], &[]),
            vec![group(
                "ns-2",
                "g1",
                &["ns"],
                &["Moose.v1alpha1.mammals.com"],
            )],
            AddApis,
        ),
        (
            "AllNamespaceIntersection/NoAPIIntersection/AddAPIs",
            goose,
            group("ns", "g1", &[""], &[]),
            vec![
                group("ns-2", "g1", &["ns-1"], &["Moose.v1alpha1.mammals.com"]),
                group(
                    "ns-3",
                    "g1",
                    &["ns-1"],
                    &["Goat.v1alpha1.mammals.com,Egret.v1alpha1.birds.com"],
                ),
            ],
            AddApis,
        ),
        (
            "AllNamespaceIntersectionOnOthers/NoAPIIntersection/AddAPIs",
            goose,
            group("ns", "g1", &["ns-1"], &[]),
            vec![
                group("ns-2", "g1", &[""], &["Moose.v1alpha1.mammals.com"]),
                group(
                    "ns-3",
                    "g1",
                    &[""],
                    &["Goat.v1alpha1.mammals.com,Egret.v1alpha1.birds.com"],
                ),
            ],
            AddApis,
        ),
        (
            "AllNamespaceIntersectionOnOthers/NoAPIIntersection/AddAPIs/PrexistingAddition",
            "Goose.v1alpha1.birds.com,Cow.v1alpha1.mammals.com",
            group("ns", "g1", &["ns-1"], &["Cow.v1alpha1.mammals.com"]),
            vec![
                group("ns-2", "g1", &[""], &["Moose.v1alpha1.mammals.com"]),
                group(
                    "ns-3",
                    "g1",
                    &[""],
                    &["Goat.v1alpha1.mammals.com,Egret.v1alpha1.birds.com"],
                ),
            ],
            AddApis,
        ),
        (
            "NamespaceInstersection/APIIntersection/RemoveAPIs",
            goose,
            group("ns", "g1", &["ns-1"], &[goose]),
            vec![group("ns-2", "g1", &["ns-1"], &[goose])],
            RemoveApis,
        ),
        (
            "AllNamespaceInstersection/APIIntersection/RemoveAPIs",
            goose,
            group("ns", "g1", &[""], &[goose]),
            vec![group("ns-2", "g1", &["ns-1"], &[goose])],
            RemoveApis,
        ),
        (
            "AllNamespaceInstersectionOnOther/APIIntersection/RemoveAPIs",
            goose,
            group("ns", "g1", &[""], &[goose]),
            vec![group("ns-2", "g1", &[""], &[goose])],
            RemoveApis,
        ),
        (
            "MultipleNamespaceIntersections/APIIntersection/RemoveAPIs",
            goose,
            group("ns", "g1", &["ns-1"], &[goose]),
            vec![
                group("ns-2", "g1", &["ns-1"], &[goose]),
                group("ns-2", "g1", &["ns"], &[goose]),
            ],
            RemoveApis,
        ),
        (
            "SomeNamespaceIntersection/APIIntersection/RemoveAPIs",
            goose_moose,
            group("ns", "g1", &["ns-1", "ns-2", "ns-3"], &[goose_moose]),
            vec![
                group("ns-7", "g1", &["ns-4"], &["Moose.v1alpha1.mammals.com"]),
                group("ns-8", "g1", &["ns-5", "ns-3"], &[goose]),
                group("ns-9", "g1", &[""], &["Goat.v1alpha1.mammals.com"]),
            ],
            RemoveApis,
        ),
        (
            "UnsyncedOther/APIIntersection/AddAPIs",
            goose,
            group("ns", "g1", &[""], &[]),
            vec![GroupSurface::from_status(&og("ns-2", "g2", None, goose))],
            AddApis,
        ),
    ];
    for (name, add, own, others, want) in cases {
        assert_eq!(
            reconcile_api_intersection(&apis(add), &own, &others),
            want,
            "{name}"
        );
    }
}

// --- OperatorGroup reading ---------------------------------------------

#[test]
fn reads_the_real_operator_group_from_operator_framework_api() {
    // operator-framework/api pkg/validation/internal/testdata/correct.og.yaml
    let object = json!({
        "apiVersion": "operators.coreos.com/v1",
        "kind": "OperatorGroup",
        "metadata": {
            "annotations": {"olm.providedAPIs": "NginxIngressController.v1alpha1.k8s.nginx.org"},
            "generateName": "nginx-",
            "name": "nginx-hbvsw",
            "namespace": "nginx",
        },
        "spec": {"targetNamespaces": ["nginx"]},
    });
    let og = OperatorGroup::from_object(&object).unwrap();
    assert_eq!(
        og.provided_apis(),
        apis("NginxIngressController.v1alpha1.k8s.nginx.org")
    );
    assert_eq!(og.display_name(), "nginx/nginx-hbvsw");
    assert!(og.is_same_group("nginx", "nginx-hbvsw"));
    assert!(!og.spec.static_provided_apis);
    // badAnnotationNames.og.yaml: the mis-cased key is not the annotation.
    let mut bad = object.clone();
    bad["metadata"]["annotations"] =
        json!({"olm.providedapis": "NginxIngressController.v1alpha1.k8s.nginx.org"});
    assert!(
        OperatorGroup::from_object(&bad)
            .unwrap()
            .provided_apis()
            .is_empty()
    );
}

#[test]
fn reads_static_provided_apis_and_nulls() {
    let og = OperatorGroup::from_object(&json!({
        "metadata": {"annotations": null},
        "spec": {"staticProvidedAPIs": true, "targetNamespaces": null, "selector": null},
        "status": null,
    }))
    .unwrap();
    assert!(og.spec.static_provided_apis);
    assert!(og.spec.target_namespaces.is_empty());
    assert!(og.provided_apis().is_empty());
    assert!(OperatorGroup::from_object(&json!({"spec": null})).is_ok());
}

#[test]
fn wrong_types_name_the_field() {
    let err = OperatorGroup::from_object(&json!({"spec": {"targetNamespaces": "nginx"}}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("spec.targetNamespaces"), "{err}");
    let err = OperatorGroup::from_object(&json!({"spec": {"staticProvidedAPIs": "yes"}}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("spec.staticProvidedAPIs"), "{err}");
    let err = OperatorGroup::from_object(&json!("text"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a JSON object"), "{err}");
    let err = ClusterServiceVersion::from_object(
        &json!({"spec": {"customresourcedefinitions": {"owned": [{"name": 7}]}}}),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("spec.customresourcedefinitions.owned"),
        "{err}"
    );
}

// --- ClusterServiceVersion ---------------------------------------------

fn csv(value: Value) -> ClusterServiceVersion {
    ClusterServiceVersion::from_object(&value).unwrap()
}

#[test]
fn provided_apis_of_owned_crds_split_at_the_first_dot() {
    // etcdoperator.v0.9.4 (operator-framework/api testdata)
    let etcd = csv(json!({"spec": {"customresourcedefinitions": {"owned": [
        {"name": "etcdclusters.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster"},
        {"name": "etcdbackups.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdBackup"},
        {"name": "etcdrestores.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdRestore"},
    ]}}}));
    assert_eq!(
        etcd.provided_apis().unwrap().to_string(),
        "EtcdBackup.v1beta2.etcd.database.coreos.com,EtcdCluster.v1beta2.etcd.database.coreos.com,EtcdRestore.v1beta2.etcd.database.coreos.com"
    );
}

#[test]
fn provided_apis_include_owned_api_services_not_required_ones() {
    // OLM quickstart packageserver CSV
    let packageserver = csv(json!({"spec": {
        "apiservicedefinitions": {"owned": [{
            "group": "packages.operators.coreos.com", "version": "v1",
            "kind": "PackageManifest", "name": "packagemanifests"
        }]},
        "customresourcedefinitions": {"required": [
            {"name": "catalogsources.operators.coreos.com", "version": "v1alpha1", "kind": "CatalogSource"}
        ]},
    }}));
    assert_eq!(
        packageserver.provided_apis().unwrap(),
        apis("PackageManifest.v1.packages.operators.coreos.com")
    );
}

#[test]
fn same_gvk_with_another_plural_is_one_api() {
    let c = csv(json!({"spec": {
        "customresourcedefinitions": {"owned": [
            {"name": "widgets.example.com", "version": "v1", "kind": "Widget"},
        ]},
        "apiservicedefinitions": {"owned": [
            {"name": "widgetz", "group": "example.com", "version": "v1", "kind": "Widget"},
        ]},
    }}));
    assert_eq!(c.provided_apis().unwrap().len(), 1);
}

#[test]
fn an_owned_crd_name_without_a_dot_is_an_error() {
    let c = csv(json!({"spec": {"customresourcedefinitions": {"owned": [
        {"name": "widgets.example.com", "version": "v1", "kind": "Widget"},
        {"name": "gadgets", "version": "v1", "kind": "Gadget"},
    ]}}}));
    assert_eq!(
        c.provided_apis(),
        Err(CrdNameError {
            index: 1,
            name: "gadgets".to_string()
        })
    );
}

#[test]
fn empty_and_null_definitions_provide_nothing() {
    // kiali.v1.4.2 and memcached write `apiservicedefinitions: {}`.
    let c = csv(json!({"spec": {"apiservicedefinitions": {}, "customresourcedefinitions": null}}));
    assert!(c.provided_apis().unwrap().is_empty());
    assert!(csv(json!({})).provided_apis().unwrap().is_empty());
}

#[test]
fn provides_same_apis_compares_the_surface_not_the_text() {
    let etcd = json!({"spec": {"customresourcedefinitions": {"owned": [
        {"name": "etcdclusters.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster", "displayName": "etcd Cluster"},
        {"name": "etcdbackups.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdBackup"},
    ]}}});
    // Reordered, another description, another plural: the same APIs.
    let reworded = json!({"spec": {"customresourcedefinitions": {"owned": [
        {"name": "etcdbackupz.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdBackup"},
        {"name": "etcdclusters.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster", "displayName": "Cluster"},
    ]}}});
    assert!(csv(etcd.clone()).provides_same_apis(&csv(reworded)));
    let mut new_version = etcd.clone();
    new_version["spec"]["customresourcedefinitions"]["owned"][1]["version"] = json!("v1");
    assert!(!csv(etcd.clone()).provides_same_apis(&csv(new_version)));
    let mut with_api_service = etcd.clone();
    with_api_service["spec"]["apiservicedefinitions"] = json!({"owned": [
        {"group": "packages.operators.coreos.com", "version": "v1", "kind": "PackageManifest", "name": "packagemanifests"}
    ]});
    assert!(!csv(etcd.clone()).provides_same_apis(&csv(with_api_service)));
    // `required` entries are not provided APIs.
    let mut with_required = etcd.clone();
    with_required["spec"]["customresourcedefinitions"]["required"] = json!([
        {"name": "widgets.example.com", "version": "v1", "kind": "Widget"}
    ]);
    assert!(csv(etcd).provides_same_apis(&csv(with_required)));
}

#[test]
fn provides_same_apis_with_an_unparsable_crd_name() {
    let broken = json!({"spec": {"customresourcedefinitions": {"owned": [
        {"name": "widgets.example.com", "version": "v1", "kind": "Widget"},
        {"name": "gadgets", "version": "v1", "kind": "Gadget"},
    ]}}});
    assert!(csv(broken.clone()).provides_same_apis(&csv(broken.clone())));
    let mut fixed = broken.clone();
    fixed["spec"]["customresourcedefinitions"]["owned"][1]["name"] = json!("gadgets.example.com");
    assert!(!csv(broken.clone()).provides_same_apis(&csv(fixed.clone())));
    assert!(!csv(fixed).provides_same_apis(&csv(broken.clone())));
    // Still broken, but another entry changed: a change.
    let mut edited = broken.clone();
    edited["spec"]["customresourcedefinitions"]["owned"][0]["kind"] = json!("Widget2");
    assert!(!csv(broken).provides_same_apis(&csv(edited)));
}

#[test]
fn is_copied_table() {
    let cases = [
        ("plain", json!({"metadata": {"namespace": "a"}}), false),
        (
            "reason Copied",
            json!({"metadata": {"namespace": "a"}, "status": {"reason": "Copied"}}),
            true,
        ),
        (
            "other reason",
            json!({"metadata": {"namespace": "a"}, "status": {"reason": "InstallSucceeded"}}),
            false,
        ),
        (
            "operatorNamespace elsewhere",
            json!({"metadata": {"namespace": "a", "annotations": {"olm.operatorNamespace": "b"}}}),
            true,
        ),
        (
            "operatorNamespace here",
            json!({"metadata": {"namespace": "a", "annotations": {"olm.operatorNamespace": "a"}}}),
            false,
        ),
        (
            "copiedFrom label",
            json!({"metadata": {"namespace": "a", "labels": {"olm.copiedFrom": "b"}}}),
            true,
        ),
    ];
    for (name, value, want) in cases {
        assert_eq!(csv(value).is_copied(), want, "{name}");
    }
}
