//! The reader and the field types on answers as the host gives them.

use std::borrow::Cow;

use super::*;
use serde::Deserialize;

#[derive(Debug)]
struct Owner;
impl LabelKey for Owner {
    const KEY: &'static str = "owner";
}

#[derive(Debug, Deserialize)]
#[serde(rename = "Item")]
struct Item<'a> {
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    labels: Labels<'a>,
    #[serde(borrow, default)]
    owner: Label<'a, Owner>,
    #[serde(borrow, default)]
    revision: Scalar<'a>,
}

fn items(answer: &str) -> Result<Vec<Item<'_>>, serde_json::Error> {
    let mut read = Vec::new();
    each_item(answer.as_bytes(), |item| read.push(item))?;
    Ok(read)
}

#[test]
fn items_are_read_in_order_borrowing_what_they_can() {
    let answer = r#"{"apiVersion":"v1","items":[
        {"name":"a","labels":{"x":"1","x":"2"},"owner":{"owner":"o","y":"z"},"revision":3,"skipped":[{}]},
        {"name":"b\"q","labels":null,"owner":null,"revision":-2},
        {"name":null,"revision":"3"},
        {"revision":[1,{"a":2}]}
    ],"kind":"List"}"#;
    let read = items(answer).unwrap();
    assert_eq!(read.len(), 4);
    assert_eq!(Str::of(&read[0].name), "a");
    assert!(matches!(read[0].name, Some(Str(Cow::Borrowed(_)))));
    assert_eq!(read[0].labels.get("x"), Some("2"));
    assert_eq!(read[0].owner.get(), Some("o"));
    assert_eq!(read[0].revision, Scalar::UInt(3));
    assert_eq!(Str::of(&read[1].name), "b\"q");
    assert_eq!(read[1].revision, Scalar::Int(-2));
    assert_eq!(read[1].owner.get(), None);
    assert_eq!(Str::of(&read[2].name), "");
    assert_eq!(read[2].revision.as_str(), Some("3"));
    assert_eq!(read[3].revision, Scalar::List);
}

#[test]
fn absent_or_null_items_are_no_items() {
    assert!(items(r#"{"kind":"List"}"#).unwrap().is_empty());
    assert!(items(r#"{"items":null}"#).unwrap().is_empty());
}

/// The errors are serde's, with the position in the answer, as the
/// owned types gave them.
#[test]
fn fields_read_keep_their_types() {
    let err = items(r#"{"items":[{"name":5}]}"#).unwrap_err().to_string();
    assert_eq!(
        err,
        "invalid type: integer `5`, expected a string at line 1 column 19"
    );
    let err = items(r#"{"items":[{"labels":{"a":1}}]}"#)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("invalid type: integer `1`, expected a string"));
    let err = items(r#"{"items":[{"owner":[]}]}"#)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("invalid type: sequence, expected a map"));
    let err = items(r#"{"items":{}}"#).unwrap_err().to_string();
    assert!(err.starts_with("invalid type: map, expected a sequence"));
    let err = items(r#"["x"]"#).unwrap_err().to_string();
    assert!(err.starts_with("invalid type: string \"x\", expected a sequence"));
    let err = items(r#"{"items":[null]}"#).unwrap_err().to_string();
    assert!(err.starts_with("invalid type: null, expected struct Item"));
    let err = items(r#"{"items":[],"items":[]}"#).unwrap_err().to_string();
    assert!(err.starts_with("duplicate field `items`"));
    assert!(items(r#"{"items":[]} x"#).is_err());
}

/// A light reading of an item: its name.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(expecting = "struct Item")]
struct Light<'a> {
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
}

impl Named for Light<'_> {
    const EXPECTING: &'static str = "struct Item";
}

/// Keyed<T> reads what T reads and fails as T fails, word for word;
/// it adds the first key when that is borrowed.
#[test]
fn keyed_reads_as_its_item_reads() {
    for answer in [
        r#"{"items":[{"name":"a","n":1},{"n":2,"name":"b"},{},{"na\u006de":"c"}]}"#,
        r#"{"items":[["a"]]}"#,
        r#"{"items":[5]}"#,
        r#"{"items":[null]}"#,
        r#"{"items":[{"name":"a","name":"b"}]}"#,
        r#"{"items":[{"name":5}]}"#,
        r#"{"items":[{"name":"a"}"#,
    ] {
        let mut keyed: Vec<Keyed<'_, Light<'_>>> = Vec::new();
        let keyed_read = each_item(answer.as_bytes(), |item| keyed.push(item));
        let mut alone: Vec<Light<'_>> = Vec::new();
        let alone_read = each_item(answer.as_bytes(), |item| alone.push(item));
        assert_eq!(
            keyed_read.map_err(|e| e.to_string()),
            alone_read.map_err(|e| e.to_string()),
            "{answer}"
        );
        let items: Vec<&Light<'_>> = keyed.iter().map(|k| &k.item).collect();
        assert_eq!(items, alone.iter().collect::<Vec<_>>(), "{answer}");
    }
    let mut first_keys = Vec::new();
    each_item(
        br#"{"items":[{"name":"a"},{"n":2,"name":"b"},{},{"na\u006de":"c"},["d"]]}"#,
        |item: Keyed<'_, Light<'_>>| first_keys.push(item.first_key),
    )
    .unwrap();
    assert_eq!(first_keys, [Some("name"), Some("n"), None, None, None]);
}

/// An item found by its first key, as a first reading of Keyed items
/// found it, reads whole from where it starts, whitespace and all; a
/// key that is not an item's first, or not from this answer, finds
/// nothing.
#[test]
fn read_item_reads_the_item_a_first_key_opens() {
    let answer = ListAnswer::new(
        b"{\"items\": [ {\"name\":\"a\",\"n\":1},\n\t{ \"name\" : \"b\", \"n\":2 }, {\"n\":\"x\"}]}"
            .to_vec(),
        "listing Item".into(),
        Capability::ListAll,
        "v1/Item".into(),
    );
    #[derive(Debug, PartialEq, Deserialize)]
    struct Whole {
        #[serde(default)]
        name: String,
        n: u32,
    }
    let mut read = Vec::new();
    answer
        .each(|item: Keyed<'_, Light<'_>>| read.push(item))
        .unwrap();
    let whole = |key: Option<&str>| {
        answer
            .read_item::<Whole>(key?)
            .map(|r| r.map_err(|e| e.to_string()))
    };
    assert_eq!(
        whole(read[0].first_key),
        Some(Ok(Whole {
            name: "a".into(),
            n: 1
        }))
    );
    assert_eq!(
        whole(read[1].first_key),
        Some(Ok(Whole {
            name: "b".into(),
            n: 2
        }))
    );
    assert_eq!(
        whole(read[2].first_key),
        Some(Err(
            "invalid type: string \"x\", expected u32 at line 1 column 8".into()
        ))
    );
    let a_value = read[0].item.name.as_ref().map(Str::as_str);
    assert_eq!(whole(a_value), None, "a value, not an item's first key");
    assert_eq!(whole(Some("name")), None, "not borrowed from the answer");
}

#[test]
fn pick_reads_the_items_asked_for_whole() {
    let answer = ListAnswer::new(
        br#"{"items":[{"name":"a"},{"name":5},{"name":"c"},{"name":"d"}]}"#.to_vec(),
        "listing Item".into(),
        Capability::ListAll,
        "v1/Item".into(),
    );
    #[derive(serde::Deserialize)]
    struct Whole {
        name: String,
    }
    let mut read = Vec::new();
    answer
        .pick(&[0, 2, 3], |item: Whole| read.push(item.name))
        .unwrap();
    assert_eq!(read, ["a", "c", "d"]);
    let err = answer.pick(&[1], |_: Whole| {}).unwrap_err();
    assert!(
        err.message.starts_with(
            "the host's answer to listing Item is not valid: invalid type: integer `5`"
        ),
        "{err}"
    );
    assert!(answer.pick(&[], |_: Whole| {}).is_ok());
}

/// What the owned reader said of the same answers, word for word.
#[test]
fn errors_are_the_owned_readers() {
    #[serde_with::serde_as]
    #[derive(serde::Deserialize)]
    #[serde(bound = "T: serde::de::DeserializeOwned")]
    #[allow(dead_code)]
    struct ListOf<T> {
        #[serde_as(as = "serde_with::DefaultOnNull")]
        #[serde(default = "Vec::new")]
        items: Vec<T>,
    }
    #[derive(serde::Deserialize)]
    #[serde(expecting = "struct Item")]
    #[allow(dead_code)]
    struct Owned {
        #[serde(default)]
        name: Option<String>,
    }
    for answer in [
        r#"{"items":[{"name":5}]}"#,
        r#"{"items":{}}"#,
        r#"{"items":[null]}"#,
        r#""x""#,
        r#"{"items":[],"items":[]}"#,
        r#"{"items":[{"name":"a"}]"#,
    ] {
        let owned = serde_json::from_str::<ListOf<Owned>>(answer)
            .err()
            .map(|e| e.to_string());
        let read = items(answer).err().map(|e| e.to_string());
        assert_eq!(read, owned, "{answer}");
    }
}
