//! Reading a host's list answer for only what a rule reads.
//!
//! A list answer of 10,000 objects is several megabytes of JSON. Decoding
//! it into owned objects (every name, label and field a `String`, every map
//! a `BTreeMap`) allocates and frees hundreds of thousands of times per
//! admission request, and that was most of a request's time in a module
//! (docs/performance.md, "Large context"). Here an answer is read item by
//! item ([`ListAnswer::each`]) into a rule's own small borrowed struct:
//! serde derive with [`Str`], [`Scalar`], [`Labels`] or [`Label`] fields,
//! borrowing strings from the answer where JSON lets it (no escapes),
//! skipping every field the struct does not name (serde ignores unknown
//! fields, parsing but not keeping them). A rule then keeps, owned, only the
//! few items its object concerns.
//!
//! Fields a rule reads are type-checked as the owned types checked them,
//! with serde's own words (`invalid type: integer `5`, expected a string`)
//! and the position in the answer, so an answer the rule cannot read is
//! still a failed lookup naming the field. Fields it does not read are
//! skipped, as the API server's schema already typed them.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    self, Deserialize, DeserializeOwned, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

use crate::{Capability, ContextError, ContextErrorKind};

/// A list answer as the host sent it, with what was asked, so that a
/// failure to read it names the lookup as [`crate::ClusterExt`] does.
pub struct ListAnswer {
    bytes: Vec<u8>,
    /// `listing <Kind>`.
    what: String,
    capability: Capability,
    target: String,
}

impl ListAnswer {
    /// The answer `bytes` to `capability` on `target` (`v1/Namespace`),
    /// `what` saying what was asked (`listing Namespace`).
    pub fn new(bytes: Vec<u8>, what: String, capability: Capability, target: String) -> Self {
        ListAnswer {
            bytes,
            what,
            capability,
            target,
        }
    }

    /// Calls `each` with every item of the answer (`{"items": [...]}`), read
    /// as `T` borrowing from the answer, in list order. `items` absent or
    /// `null` is an empty list, as Kubernetes reads it. An item `T` cannot
    /// read stops the reading: the error names the field and the position.
    pub fn each<'a, T: Deserialize<'a>>(&'a self, each: impl FnMut(T)) -> Result<(), ContextError> {
        each_item(&self.bytes, each).map_err(|e| self.error(e))
    }

    /// Calls `each` with the items at `positions` (ascending, as
    /// [`ListAnswer::each`] counts them) read whole as `T`, skipping the
    /// others unread: the second pass of a rule that first chose, from a
    /// light reading of every item, the few it needs in full.
    pub fn pick<T: DeserializeOwned>(
        &self,
        positions: &[usize],
        mut each: impl FnMut(T),
    ) -> Result<(), ContextError> {
        // Nothing to read: the first reading has already checked the
        // answer, so it is not parsed a second time.
        if positions.is_empty() {
            return Ok(());
        }
        let sink = Pick {
            wanted: positions,
            at: 0,
            each: &mut each as &mut dyn FnMut(T),
        };
        read_list(&self.bytes, sink).map_err(|e| self.error(e))
    }

    /// Reads whole, as `T`, the item whose first key is `first_key`, as a
    /// first reading ([`ListAnswer::each`]) of [`Keyed`] items found it.
    /// Only that item is parsed, from where it starts, not the items
    /// before it. `None` when `first_key` is not the first key of an item
    /// of this answer; an `Err` carries serde's words with a position
    /// counted from the item, so a rule that reports it should read the
    /// item with [`ListAnswer::pick`] instead, whose position is the
    /// answer's.
    pub fn read_item<T: DeserializeOwned>(
        &self,
        first_key: &str,
    ) -> Option<Result<T, serde_json::Error>> {
        let start = self.item_start(first_key)?;
        let mut reader = serde_json::Deserializer::from_slice(self.bytes.get(start..)?);
        // One value from `start`; what follows is the rest of the list,
        // which the first reading has already checked.
        Some(T::deserialize(&mut reader))
    }

    /// Where the item opens whose first key is `first_key`: the `{` before
    /// the key's opening quote, with only JSON whitespace between.
    fn item_start(&self, first_key: &str) -> Option<usize> {
        let key_at = (first_key.as_ptr() as usize).checked_sub(self.bytes.as_ptr() as usize)?;
        self.bytes
            .get(key_at..key_at.checked_add(first_key.len())?)?;
        let quote_at = key_at.checked_sub(1)?;
        let (before_quote, from_quote) = self.bytes.split_at_checked(quote_at)?;
        let open = before_quote
            .iter()
            .rposition(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))?;
        (from_quote.first() == Some(&b'"') && before_quote.get(open) == Some(&b'{')).then_some(open)
    }

    /// A failure to read this answer, worded as every host answer's.
    pub fn error(&self, error: serde_json::Error) -> ContextError {
        decode_error(&self.what, &error, self.capability, self.target.clone())
    }
}

/// A host answer that is not what the rule reads.
pub(crate) fn decode_error(
    what: &str,
    error: &dyn fmt::Display,
    capability: Capability,
    target: String,
) -> ContextError {
    ContextError::new(
        ContextErrorKind::Decode,
        format!("the host's answer to {what} is not valid: {error}"),
    )
    .on(capability, target)
}

/// [`ListAnswer::each`] on bytes: every item of a `List` read as `T`.
pub fn each_item<'de, T: Deserialize<'de>>(
    answer: &'de [u8],
    mut each: impl FnMut(T),
) -> Result<(), serde_json::Error> {
    // Through `dyn`: one copy of the reader per item type, not one per
    // caller's closure (the modules' size).
    read_list(
        answer,
        Each {
            each: &mut each as &mut dyn FnMut(T),
        },
    )
}

/// Where the items of a list go, one by one, as they are read.
trait Sink<'de> {
    /// Reads the next item from `seq`; `false` at the end of the list.
    fn next<A: SeqAccess<'de>>(&mut self, seq: &mut A) -> Result<bool, A::Error>;
}

/// Every item, read as `T`.
struct Each<'f, T> {
    each: &'f mut dyn FnMut(T),
}

impl<'de, T: Deserialize<'de>> Sink<'de> for Each<'_, T> {
    fn next<A: SeqAccess<'de>>(&mut self, seq: &mut A) -> Result<bool, A::Error> {
        let item = seq.next_element::<T>()?;
        let more = item.is_some();
        if let Some(item) = item {
            (self.each)(item);
        }
        Ok(more)
    }
}

/// The items at the `wanted` positions (ascending), read whole as `T`;
/// the others parsed and dropped.
struct Pick<'p, 'f, T> {
    wanted: &'p [usize],
    at: usize,
    each: &'f mut dyn FnMut(T),
}

impl<'de, T: DeserializeOwned> Sink<'de> for Pick<'_, '_, T> {
    fn next<A: SeqAccess<'de>>(&mut self, seq: &mut A) -> Result<bool, A::Error> {
        let at = self.at;
        self.at += 1;
        match self.wanted.split_first() {
            Some((&next, rest)) if next == at => self.wanted = rest,
            _ => return Ok(seq.next_element::<IgnoredAny>()?.is_some()),
        }
        let item = seq.next_element::<T>()?;
        let more = item.is_some();
        if let Some(item) = item {
            (self.each)(item);
        }
        Ok(more)
    }
}

/// Reads a `List` answer, handing its items to `sink`.
fn read_list<'de, S: Sink<'de>>(answer: &'de [u8], sink: S) -> Result<(), serde_json::Error> {
    let mut reader = serde_json::Deserializer::from_slice(answer);
    // Named as the owned reader's struct was, so that serde's messages
    // (`expected struct ListOf`) stay what they were.
    reader.deserialize_struct("ListOf", &["items"], ListVisitor { sink })?;
    reader.end()
}

struct ListVisitor<S> {
    sink: S,
}

impl<'de, S: Sink<'de>> Visitor<'de> for ListVisitor<S> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct ListOf")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        let mut seen = false;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Items if seen => return Err(de::Error::duplicate_field("items")),
                Key::Items => {
                    seen = true;
                    map.next_value_seed(Items {
                        sink: &mut self.sink,
                    })?;
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        // A struct may also be written as a list of its fields, in order.
        seq.next_element_seed(Items {
            sink: &mut self.sink,
        })?;
        Ok(())
    }
}

/// A field name of the list: `items`, or one the reader skips.
enum Key {
    Items,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("field identifier")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(if key == "items" {
                    Key::Items
                } else {
                    Key::Other
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

/// `items`: `null` or a list, each element handed to the sink as it is
/// read.
struct Items<'s, S> {
    sink: &'s mut S,
}

impl<'de, S: Sink<'de>> de::DeserializeSeed<'de> for Items<'_, S> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, S: Sink<'de>> Visitor<'de> for Items<'_, S> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while self.sink.next(&mut seq)? {}
        Ok(())
    }
}

/// A string field, borrowed from the answer unless JSON escapes forced a
/// copy; `null` or absent reads as `""` (wrap it in `Option` with
/// `#[serde(default)]`, or use [`Str::of`]), as the owned types'
/// `DefaultOnNull` read it. Any other type is an error, `expected a string`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Str<'a>(pub Cow<'a, str>);

impl<'a> Str<'a> {
    /// The text of an optional field: `""` when absent or `null`.
    pub fn of<'s>(field: &'s Option<Str<'a>>) -> &'s str {
        field.as_ref().map_or("", |s| &s.0)
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Str<'a>, D::Error> {
        struct StrVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for StrVisitor<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Owned(s.to_string())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Owned(s)))
            }
        }
        deserializer.deserialize_str(StrVisitor(PhantomData))
    }
}

/// An item read as `T`, with its first key when serde gave it borrowed
/// from the answer (no JSON escapes in it): what
/// [`ListAnswer::read_item`] needs to read the item whole later, from
/// where it starts. `T` reads exactly as it reads alone: the first key is
/// handed back to it before the others, and an item that is not a map is
/// refused in `T`'s words ([`Named::EXPECTING`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Keyed<'a, T> {
    /// The item.
    pub item: T,
    /// Its first key, when borrowed; `None` for an empty item, a key with
    /// escapes, or an item written as a list.
    pub first_key: Option<&'a str>,
}

/// What serde says a struct was expected as (`struct ClusterRole`), the
/// `expecting` of its derive.
pub trait Named {
    /// E.g. `struct ClusterRole`.
    const EXPECTING: &'static str;
}

impl<'de: 'a, 'a, T: Deserialize<'de> + Named> Deserialize<'de> for Keyed<'a, T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_struct(T::EXPECTING, &[], KeyedVisitor(PhantomData))
    }
}

struct KeyedVisitor<'a, T>(PhantomData<(&'a (), T)>);

impl<'de: 'a, 'a, T: Deserialize<'de> + Named> Visitor<'de> for KeyedVisitor<'a, T> {
    type Value = Keyed<'a, T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let first = map.next_key::<Str<'de>>()?;
        let first_key = match &first {
            Some(Str(Cow::Borrowed(key))) => Some(*key),
            _ => None,
        };
        let item = T::deserialize(de::value::MapAccessDeserializer::new(FirstAgain {
            first,
            map,
        }))?;
        Ok(Keyed { item, first_key })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        let item = T::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(Keyed {
            item,
            first_key: None,
        })
    }
}

/// A map whose first key was already read: that key again, then the rest.
struct FirstAgain<'de, A> {
    first: Option<Str<'de>>,
    map: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for FirstAgain<'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.first.take() {
            Some(Str(Cow::Borrowed(key))) => seed
                .deserialize(de::value::BorrowedStrDeserializer::new(key))
                .map(Some),
            Some(Str(Cow::Owned(key))) => seed
                .deserialize(de::value::StringDeserializer::new(key))
                .map(Some),
            None => self.map.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A field of any JSON type, kept when it is a scalar: for fields the
/// owned types held as a raw `serde_json::Value` so that a wrong type is
/// reported as written (`spec.revision: "3"`). A list or map is parsed and
/// only its type kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Scalar<'a> {
    /// `null`, or absent (with `#[serde(default)]`).
    #[default]
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A negative integer.
    Int(i64),
    /// A non-negative integer.
    UInt(u64),
    /// A number with a fraction or an exponent.
    Float(f64),
    /// A string.
    Str(Cow<'a, str>),
    /// A list (its items skipped).
    List,
    /// A map (its fields skipped).
    Map,
}

impl Scalar<'_> {
    /// The string, when it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Scalar<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Scalar<'a>, D::Error> {
        struct ScalarVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ScalarVisitor<'a> {
            type Value = Scalar<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Null)
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Bool(b))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Scalar<'a>, E> {
                // serde_json gives non-negative integers as u64; keep the
                // same split whatever the reader.
                Ok(u64::try_from(n).map_or(Scalar::Int(n), Scalar::UInt))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Scalar<'a>, E> {
                Ok(Scalar::UInt(n))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Float(x))
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Str(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Str(Cow::Owned(s.to_string())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar<'a>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::List)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar<'a>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Map)
            }
        }
        deserializer.deserialize_any(ScalarVisitor(PhantomData))
    }
}

/// A map of strings (labels, annotations) kept as read, in answer order:
/// no map is built. `null` reads as empty; a value that is not a string is
/// an error, `expected a string`, as `BTreeMap<String, String>` read it. A
/// key written twice: the last one counts, as in a map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels<'a>(pub Vec<(Str<'a>, Str<'a>)>);

impl Labels<'_> {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k.0 == key)
            .map(|(_, v)| v.as_str())
    }

    /// The labels as an owned map, for the few items a rule keeps.
    pub fn to_map(&self) -> std::collections::BTreeMap<String, String> {
        self.0
            .iter()
            .map(|(k, v)| (k.0.to_string(), v.0.to_string()))
            .collect()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Labels<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Labels<'a>, D::Error> {
        deserializer.deserialize_option(StrMap(
            |labels: &mut Labels<'a>, key, value| labels.0.push((key, value)),
            PhantomData,
        ))
    }
}

/// The `metadata` most rules read of a listed item: name, namespace and
/// labels, borrowed; every other field skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default, expecting = "struct ObjectMeta")]
pub struct Meta<'a> {
    /// `metadata.name`.
    #[serde(borrow)]
    pub name: Option<Str<'a>>,
    /// `metadata.namespace`.
    #[serde(borrow)]
    pub namespace: Option<Str<'a>>,
    /// `metadata.labels`.
    #[serde(borrow)]
    pub labels: Labels<'a>,
}

/// The key of the one entry a [`Label`] keeps.
pub trait LabelKey {
    /// The key, e.g. `olm.operatorframework.io/owner-name`.
    const KEY: &'static str;
}

/// One entry of a map of strings (`K::KEY`), the others checked to be
/// strings and dropped: what a rule that reads one label or annotation of
/// every item keeps, without a vector per item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label<'a, K>(pub Option<Str<'a>>, PhantomData<K>);

impl<K> Default for Label<'_, K> {
    fn default() -> Self {
        Label(None, PhantomData)
    }
}

impl<K> Label<'_, K> {
    /// The value, when the map has the key.
    pub fn get(&self) -> Option<&str> {
        self.0.as_ref().map(Str::as_str)
    }
}

impl<'de: 'a, 'a, K: LabelKey> Deserialize<'de> for Label<'a, K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Label<'a, K>, D::Error> {
        deserializer.deserialize_option(StrMap(
            |label: &mut Label<'a, K>, key: Str<'a>, value| {
                if key.0 == K::KEY {
                    label.0 = Some(value);
                }
            },
            PhantomData,
        ))
    }
}

/// Reads `null` or a map of strings into an `M`, handing each entry to the
/// function.
struct StrMap<M, F>(F, PhantomData<fn() -> M>);

impl<'de: 'a, 'a, M: Default, F: FnMut(&mut M, Str<'a>, Str<'a>)> Visitor<'de> for StrMap<M, F> {
    type Value = M;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map")
    }

    fn visit_none<E: de::Error>(self) -> Result<M, E> {
        Ok(M::default())
    }

    fn visit_unit<E: de::Error>(self) -> Result<M, E> {
        Ok(M::default())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<M, D::Error> {
        deserializer.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<M, A::Error> {
        let mut kept = M::default();
        while let Some((key, value)) = map.next_entry::<Str<'a>, Str<'a>>()? {
            (self.0)(&mut kept, key, value);
        }
        Ok(kept)
    }
}

#[cfg(test)]
mod tests {
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
}
