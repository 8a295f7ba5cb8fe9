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

use std::fmt;

use serde::de::{
    self, Deserialize, DeserializeOwned, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

use crate::{Capability, ContextError, ContextErrorKind};

mod fields;
#[cfg(test)]
mod tests;

pub use fields::{Keyed, Label, LabelKey, Labels, Meta, Named, Scalar, Str};

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
