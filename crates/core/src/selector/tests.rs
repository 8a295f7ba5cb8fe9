//! The selectors against apimachinery's grammar and validation.

use super::*;
use crate::ObjectMeta;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn expr(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.into(),
        operator: operator.into(),
        values: values.iter().map(|v| v.to_string()).collect(),
    }
}

#[test]
fn string_grammar_table() {
    let app_web = labels(&[("app", "web"), ("tier", "front")]);
    let app_db = labels(&[("app", "db")]);
    let none = labels(&[]);
    let cases = [
        ("", [true, true, true]),
        ("app=web", [true, false, false]),
        ("app==web", [true, false, false]),
        ("app = web", [true, false, false]),
        ("app!=web", [false, true, true]),
        ("app in (web, db)", [true, true, false]),
        ("app in(web)", [true, false, false]),
        ("app notin (web)", [false, true, true]),
        ("app", [true, true, false]),
        ("!app", [false, false, true]),
        ("app,!tier", [false, true, false]),
        ("app=db, tier", [false, false, false]),
        ("tier=", [false, false, false]),
    ];
    for (s, want) in cases {
        let sel = Selector::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        let got = [
            sel.matches(&app_web),
            sel.matches(&app_db),
            sel.matches(&none),
        ];
        assert_eq!(got, want, "{s:?}");
    }
    assert!(Selector::parse("").unwrap().is_everything());
    assert!(Selector::parse("  ").unwrap().is_everything());
    assert!(!Selector::parse("a").unwrap().is_everything());
    let empty_value = Selector::parse("tier=").unwrap();
    assert!(empty_value.matches(&labels(&[("tier", "")])));
}

#[test]
fn numeric_comparisons() {
    let sel = Selector::parse("replicas>2,replicas<5").unwrap();
    assert!(sel.matches(&labels(&[("replicas", "3")])));
    assert!(!sel.matches(&labels(&[("replicas", "5")])));
    assert!(!sel.matches(&labels(&[("replicas", "x")])));
    assert!(Selector::parse("replicas>x").is_err());
}

#[test]
fn string_grammar_errors() {
    for bad in [
        "app in web",
        "app in (web",
        "app=web tier=x",
        ",app",
        "app,",
        "=web",
        "app in ()x",
        "-app=x",
        "app=-x-",
        "bad_Prefix.io/app=x",
    ] {
        let err = Selector::parse(bad).expect_err(bad);
        assert!(err.to_string().contains(bad), "{bad}: {err}");
    }
}

#[test]
fn structured_form() {
    let s = LabelSelector {
        match_labels: labels(&[("rbac.authorization.k8s.io/aggregate-to-admin", "true")]),
        match_expressions: vec![
            expr("tier", "In", &["front", "back"]),
            expr("legacy", "DoesNotExist", &[]),
            expr("env", "NotIn", &["prod"]),
            expr("app", "Exists", &[]),
        ],
    };
    let sel = Selector::from_label_selector(&s).unwrap();
    let base = [
        ("rbac.authorization.k8s.io/aggregate-to-admin", "true"),
        ("tier", "front"),
        ("app", "x"),
    ];
    assert!(sel.matches(&labels(&base)));
    let mut with_env = base.to_vec();
    with_env.push(("env", "prod"));
    assert!(!sel.matches(&labels(&with_env)));
    let mut legacy = base.to_vec();
    legacy.push(("legacy", ""));
    assert!(!sel.matches(&labels(&legacy)));
    assert!(!sel.matches(&labels(&base[..2])));
    assert!(
        Selector::from_label_selector(&LabelSelector::default())
            .unwrap()
            .is_everything()
    );
}

#[test]
fn structured_form_errors() {
    let with = |e: LabelSelectorRequirement| LabelSelector {
        match_expressions: vec![e],
        ..LabelSelector::default()
    };
    let err = Selector::from_label_selector(&with(expr("a", "Equals", &["x"]))).unwrap_err();
    assert!(
        err.to_string()
            .contains("\"Equals\" is not a valid label selector operator"),
        "{err}"
    );
    let err = Selector::from_label_selector(&with(expr("a", "In", &[]))).unwrap_err();
    assert!(err.to_string().contains("need at least one value"), "{err}");
    let err = Selector::from_label_selector(&with(expr("a", "Exists", &["x"]))).unwrap_err();
    assert!(err.to_string().contains("take no values"), "{err}");
    let err = Selector::from_label_selector(&with(expr("", "Exists", &[]))).unwrap_err();
    assert!(err.to_string().contains("label key \"\""), "{err}");
}

#[test]
fn both_forms_agree_and_print_parseably() {
    let structured = Selector::from_label_selector(&LabelSelector {
        match_labels: labels(&[("b", "1")]),
        match_expressions: vec![expr("a", "In", &["y", "x"]), expr("c", "DoesNotExist", &[])],
    })
    .unwrap();
    let text = structured.to_string();
    assert_eq!(text, "a in (x,y),b=1,!c");
    assert_eq!(Selector::parse(&text).unwrap(), structured);
    assert_eq!(Selector::parse("!c, b==1, a in (y,x)").unwrap(), structured);
}

#[test]
fn field_selector_forms() {
    let meta = ObjectMeta {
        name: "a".into(),
        namespace: "ns".into(),
        ..Default::default()
    };
    assert!(
        FieldSelector::parse("metadata.name=a")
            .unwrap()
            .matches(&meta)
    );
    assert!(
        FieldSelector::parse("metadata.name==a,metadata.namespace=ns")
            .unwrap()
            .matches(&meta)
    );
    assert!(
        !FieldSelector::parse("metadata.namespace!=ns")
            .unwrap()
            .matches(&meta)
    );
    assert!(FieldSelector::parse("").unwrap().matches(&meta));
    let err = FieldSelector::parse("spec.group=x").unwrap_err();
    assert!(err.to_string().contains("spec.group"), "{err}");
    assert!(FieldSelector::parse("metadata.name").is_err());
}
