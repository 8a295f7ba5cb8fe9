//! The borrowed field types a rule's item struct is made of: [`Str`],
//! [`Scalar`], [`Labels`], [`Label`], [`Meta`] and [`Keyed`] maps, each read
//! as the owned types read it, borrowing from the answer where JSON lets it.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
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
/// [`ListAnswer::read_item`](super::ListAnswer::read_item) needs to read the item whole later, from
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
