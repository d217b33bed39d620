//! A typed value read straight from the bytes of a protobuf `Struct`.
//!
//! The observed XR's spec and the status of observed resources are read on
//! every call; decoding them into `serde_json::Value` first builds a map and
//! a string for every field, most of which the typed reader then drops.
//! This deserializer walks the bytes instead: fields a type does not name
//! are skipped unread (neither their key nor their value is checked, as the
//! parts of a request the function never reads travel unchecked), strings
//! are borrowed.
//!
//! It is a fast path, not a second meaning. It reads what the JSON path
//! (`struct_json` then serde_json) reads, with the same visitor calls
//! (whole numbers up to 2^53 as integers, non-finite numbers as the strings
//! "NaN", "Infinity", "-Infinity", an unset value as null), and it refuses
//! everything unusual: a Value with two kinds set, a list where a struct is
//! wanted, bytes that are not a canonical encoding. Its caller then takes
//! the JSON path, whose answer, or error message, is the one that counts.

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

use super::struct_json::MAX_EXACT_INTEGER;
use super::struct_serializer::{ENTRY, ENTRY_KEY, ENTRY_VALUE, LIST, NUMBER, STRING, STRUCT};

/// Why the bytes were not read; the caller takes the JSON path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Error(String);

impl de::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Self(msg.to_string())
    }
}

/// Deepest nesting read, as prost's own limit.
const RECURSION_LIMIT: u32 = 100;

/// `T` read from the bytes of a `google.protobuf.Struct`.
pub fn from_struct_bytes<'de, T: de::Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, Error> {
    T::deserialize(ValueReader {
        value: Value::Read(Kind::Struct(bytes)),
        depth: 0,
    })
}

/// `T` read from one entry of the bytes of a `google.protobuf.Struct`
/// (for example an object's `spec`); None when the entry is absent.
pub fn field_from_struct_bytes<'de, T: de::Deserialize<'de>>(
    bytes: &'de [u8],
    name: &str,
) -> Result<Option<T>, Error> {
    at_path(bytes, &[name])
}

/// `T` read from the value at `path` in the bytes of a
/// `google.protobuf.Struct` (for example `["status", "plan", "warnings"]`),
/// reading nothing else; None when any part of the path is absent.
pub fn at_path<'de, T: de::Deserialize<'de>>(
    bytes: &'de [u8],
    path: &[&str],
) -> Result<Option<T>, Error> {
    let Some((last, parents)) = path.split_last() else {
        return from_struct_bytes(bytes).map(Some);
    };
    let mut object = bytes;
    let mut depth = 0;
    for name in parents {
        let Some(value) = entry(object, name)? else {
            return Ok(None);
        };
        depth += 1;
        match read_value(value, depth)? {
            Kind::Struct(inner) => object = inner,
            _ => return Err(unusual("a path through something other than objects")),
        }
    }
    entry(object, last)?
        .map(|value| T::deserialize(ValueReader::encoded(value, depth + 1)))
        .transpose()
}

/// The encoded Value of the entry `name`, if there is one.
fn entry<'de>(bytes: &'de [u8], name: &str) -> Result<Option<&'de [u8]>, Error> {
    let mut found = None;
    let mut entries = Entries { buf: bytes };
    while let Some((key, value)) = entries.next()? {
        if key == name.as_bytes() && found.replace(value).is_some() {
            return Err(unusual("a key given twice"));
        }
    }
    Ok(found)
}

fn unusual(what: &str) -> Error {
    Error(format!("unusual encoding: {what}"))
}

/// One decoded `google.protobuf.Value`, its contents still encoded.
#[derive(Clone, Copy)]
enum Kind<'de> {
    Null,
    Number(f64),
    String(&'de str),
    Bool(bool),
    Struct(&'de [u8]),
    List(&'de [u8]),
}

/// A Value to deserialize. It is read when the type asks for it: a value
/// the type ignores is skipped unread, as `entry` skips the entries a path
/// does not name and as the request's unread parts travel unchecked.
struct ValueReader<'de> {
    value: Value<'de>,
    depth: u32,
}

enum Value<'de> {
    Encoded(&'de [u8]),
    Read(Kind<'de>),
}

impl<'de> ValueReader<'de> {
    fn encoded(buf: &'de [u8], depth: u32) -> Self {
        Self {
            value: Value::Encoded(buf),
            depth,
        }
    }

    fn kind(&self) -> Result<Kind<'de>, Error> {
        match self.value {
            Value::Read(kind) => Ok(kind),
            Value::Encoded(buf) => read_value(buf, self.depth),
        }
    }
}

/// Reads the encoded Value `buf`: exactly one kind, or none (null).
// Inlined, with the general case out of line: most Values are one field
// with a short length, read here without a loop.
#[inline]
fn read_value(buf: &[u8], depth: u32) -> Result<Kind<'_>, Error> {
    if depth <= RECURSION_LIMIT {
        match buf {
            [NUMBER, rest @ ..] if rest.len() == 8 => {
                let n: [u8; 8] = rest.try_into().expect("eight bytes");
                return Ok(Kind::Number(f64::from_le_bytes(n)));
            }
            [tag @ (STRING | STRUCT | LIST), rest @ ..] => {
                if let Some((len, rest)) = short_length(rest)
                    && len == rest.len()
                {
                    return match *tag {
                        STRING => std::str::from_utf8(rest)
                            .map(Kind::String)
                            .map_err(|_| unusual("a string that is not UTF-8")),
                        STRUCT => Ok(Kind::Struct(rest)),
                        _ => Ok(Kind::List(rest)),
                    };
                }
            }
            _ => {}
        }
    }
    read_value_long(buf, depth)
}

/// Reads the encoded Value `buf` the general way: any layout prost accepts.
#[inline(never)]
fn read_value_long(mut buf: &[u8], depth: u32) -> Result<Kind<'_>, Error> {
    if depth > RECURSION_LIMIT {
        return Err(unusual("nested too deep"));
    }
    let mut kind = None;
    while !buf.is_empty() {
        let (field, wire) = key(&mut buf)?;
        let k = match (field, wire) {
            (1, 0) => {
                varint(&mut buf)?;
                Kind::Null
            }
            (2, 1) => {
                let (n, rest) = buf
                    .split_first_chunk::<8>()
                    .ok_or_else(|| unusual("a short number"))?;
                buf = rest;
                Kind::Number(f64::from_le_bytes(*n))
            }
            (3, 2) => Kind::String(
                std::str::from_utf8(delimited(&mut buf)?)
                    .map_err(|_| unusual("a string that is not UTF-8"))?,
            ),
            (4, 0) => Kind::Bool(varint(&mut buf)? != 0),
            (5, 2) => Kind::Struct(delimited(&mut buf)?),
            (6, 2) => Kind::List(delimited(&mut buf)?),
            _ => return Err(unusual("an unknown field of a Value")),
        };
        if kind.replace(k).is_some() {
            return Err(unusual("a Value with two kinds"));
        }
    }
    Ok(kind.unwrap_or(Kind::Null))
}

impl<'de> de::Deserializer<'de> for ValueReader<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.kind()? {
            Kind::Null => visitor.visit_unit(),
            Kind::Bool(b) => visitor.visit_bool(b),
            Kind::String(s) => visitor.visit_borrowed_str(s),
            Kind::Number(n) if n.is_nan() => visitor.visit_borrowed_str("NaN"),
            Kind::Number(n) if n.is_infinite() => {
                visitor.visit_borrowed_str(if n > 0.0 { "Infinity" } else { "-Infinity" })
            }
            // As serde_json reads the integer the JSON path makes of it.
            Kind::Number(n) if n.fract() == 0.0 && n.abs() <= MAX_EXACT_INTEGER => {
                let i = n as i64;
                if i >= 0 {
                    visitor.visit_u64(i as u64)
                } else {
                    visitor.visit_i64(i)
                }
            }
            Kind::Number(n) => visitor.visit_f64(n),
            Kind::Struct(buf) => visitor.visit_map(Entries { buf }.reader(self.depth)),
            Kind::List(buf) => visitor.visit_seq(Items {
                buf,
                depth: self.depth,
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.kind()? {
            Kind::Null => visitor.visit_none(),
            kind => visitor.visit_some(ValueReader {
                value: Value::Read(kind),
                depth: self.depth,
            }),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // serde_json reads a struct from a list by position; the JSON path
        // refuses that with its own message.
        match self.kind()? {
            Kind::Struct(buf) => visitor.visit_map(Entries { buf }.reader(self.depth)),
            _ => Err(unusual("a struct that is not an object")),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.kind()? {
            Kind::String(s) => visitor.visit_enum(s.into_deserializer()),
            _ => Err(unusual("an enum that is not a string")),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier
    }
}

/// One entry of an encoded Struct: its key's bytes and its encoded Value.
type Entry<'de> = (&'de [u8], &'de [u8]);

/// The entries of an encoded Struct.
struct Entries<'de> {
    buf: &'de [u8],
}

impl<'de> Entries<'de> {
    /// The next entry's key, as bytes (see [`KeyReader`]), and value.
    // Inlined, with the general case out of line: most entries are short,
    // and the call cost a third of reading one.
    #[inline]
    fn next(&mut self) -> Result<Option<Entry<'de>>, Error> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        if let Some(entry) = self.next_short() {
            return Ok(Some(entry));
        }
        self.next_long()
    }

    /// The next entry read the general way: any layout prost accepts.
    #[inline(never)]
    fn next_long(&mut self) -> Result<Option<Entry<'de>>, Error> {
        let (field, wire) = key(&mut self.buf)?;
        if (field, wire) != (1, 2) {
            return Err(unusual("a Struct field other than its entries"));
        }
        let mut entry = delimited(&mut self.buf)?;
        let (mut name, mut value) = (&[][..], &[][..]);
        while !entry.is_empty() {
            match key(&mut entry)? {
                (1, 2) => name = delimited(&mut entry)?,
                (2, 2) => value = delimited(&mut entry)?,
                _ => return Err(unusual("an unknown field of an entry")),
            }
        }
        Ok(Some((name, value)))
    }

    /// The next entry when it has the layout most have: a key and a value
    /// in that order, the key and every tag one byte, the entry's and the
    /// value's lengths one or two bytes (an entry under 16 KiB). `None`:
    /// read it the general way.
    #[inline(always)]
    fn next_short(&mut self) -> Option<Entry<'de>> {
        let [ENTRY, rest @ ..] = self.buf else {
            return None;
        };
        let (len, rest) = short_length(rest)?;
        if len > rest.len() {
            return None;
        }
        let (body, after) = rest.split_at(len);
        let [ENTRY_KEY, key_len, body @ ..] = body else {
            return None;
        };
        let key_len = usize::from(*key_len);
        if key_len >= 0x80 || key_len > body.len() {
            return None;
        }
        let (key, body) = body.split_at(key_len);
        let [ENTRY_VALUE, body @ ..] = body else {
            return None;
        };
        let (value_len, value) = short_length(body)?;
        if value_len != value.len() {
            return None;
        }
        self.buf = after;
        Some((key, value))
    }

    fn reader(self, depth: u32) -> MapReader<'de> {
        MapReader {
            entries: self,
            value: None,
            depth,
        }
    }
}

struct MapReader<'de> {
    entries: Entries<'de>,
    value: Option<&'de [u8]>,
    depth: u32,
}

impl<'de> de::MapAccess<'de> for MapReader<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((name, value)) = self.entries.next()? else {
            return Ok(None);
        };
        self.value = Some(value);
        seed.deserialize(KeyReader(name)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = self
            .value
            .take()
            .ok_or_else(|| unusual("a value without a key"))?;
        seed.deserialize(ValueReader::encoded(value, self.depth + 1))
    }
}

/// A key of a Struct. A struct's field names are matched as bytes, so the
/// key of a field the type ignores is skipped unchecked, like its value;
/// a key read as a string (a map's key) must be UTF-8.
struct KeyReader<'de>(&'de [u8]);

impl<'de> KeyReader<'de> {
    fn as_str(&self) -> Result<&'de str, Error> {
        std::str::from_utf8(self.0).map_err(|_| unusual("a key that is not UTF-8"))
    }
}

impl<'de> de::Deserializer<'de> for KeyReader<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_borrowed_str(self.as_str()?)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_borrowed_bytes(self.0)
    }

    /// A map keyed by an enum: its unit variants, as serde's own string
    /// key deserializer reads them.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_enum(self.as_str()?.into_deserializer())
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct ignored_any
    }
}

struct Items<'de> {
    buf: &'de [u8],
    depth: u32,
}

impl<'de> de::SeqAccess<'de> for Items<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        if key(&mut self.buf)? != (1, 2) {
            return Err(unusual("a ListValue field other than its values"));
        }
        let item = delimited(&mut self.buf)?;
        seed.deserialize(ValueReader::encoded(item, self.depth + 1))
            .map(Some)
    }
}

// Inlined where it is read: most varints in a Struct (keys, short
// lengths) are one byte, and the call cost more than reading it.
// `struct_json::varint` has the same one-byte case; calling it inline here
// instead measured 1.1k more instructions per cold call (callgrind), as it
// grows every reader it is inlined into.
#[inline(always)]
fn varint(buf: &mut &[u8]) -> Result<u64, Error> {
    if let Some((&byte, rest)) = buf.split_first()
        && byte < 0x80
    {
        *buf = rest;
        return Ok(u64::from(byte));
    }
    long_varint(buf)
}

#[inline(never)]
fn long_varint(buf: &mut &[u8]) -> Result<u64, Error> {
    super::struct_json::varint(buf).map_err(|_| unusual("a broken varint"))
}

/// A length of one or two bytes at the start of `buf`, and what follows.
/// `struct_json::varint` reads the same two cases, but with its general
/// fallback inlined into every reader it measured 1.5k more instructions
/// per cold call (callgrind); a longer length takes the general path here.
#[inline(always)]
fn short_length(buf: &[u8]) -> Option<(usize, &[u8])> {
    match buf {
        [byte, rest @ ..] if *byte < 0x80 => Some((usize::from(*byte), rest)),
        [low, high, rest @ ..] if *high < 0x80 => {
            Some((usize::from(low & 0x7f) | usize::from(*high) << 7, rest))
        }
        _ => None,
    }
}

/// A field's number and wire type.
fn key(buf: &mut &[u8]) -> Result<(u64, u64), Error> {
    let k = varint(buf)?;
    Ok((k >> 3, k & 7))
}

fn delimited<'a>(buf: &mut &'a [u8]) -> Result<&'a [u8], Error> {
    let len = usize::try_from(varint(buf)?).map_err(|_| unusual("a huge length"))?;
    if len > buf.len() {
        return Err(unusual("a length beyond the bytes"));
    }
    let (head, rest) = buf.split_at(len);
    *buf = rest;
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::struct_json::{json_to_struct, struct_to_json};
    use proptest::prelude::*;
    use prost::Message;
    use serde::Deserialize;
    use serde_json::{Value, json};
    use std::collections::BTreeMap;

    fn bytes(v: &Value) -> Vec<u8> {
        json_to_struct(v.as_object().unwrap()).encode_to_vec()
    }

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Spec {
        model: String,
        gpu: Option<u32>,
        ratio: Option<f64>,
        args: Vec<String>,
        labels: BTreeMap<String, String>,
        mode: Option<Mode>,
        nested: Option<Box<Spec>>,
        #[serde(default)]
        odd: Option<Value>,
    }

    #[derive(Deserialize, Debug, PartialEq, Eq, PartialOrd, Ord)]
    #[serde(rename_all = "kebab-case")]
    enum Mode {
        TensorParallel,
    }

    #[test]
    fn a_typed_spec_reads_as_through_json() {
        let spec = json!({
            "model": "Qwen/Qwen2.5-7B", "gpu": 2, "ratio": 0.9, "args": ["--a", "b"],
            "labels": {"a": "b"}, "mode": "tensor-parallel", "unknown": {"deep": [1, {}]},
            "nested": {"model": "m", "args": [], "labels": {}, "odd": [1.5, -3, 1e300, null, "NaN"]},
            "odd": {"x": true},
        });
        let fast: Spec = from_struct_bytes(&bytes(&spec)).unwrap();
        let slow: Spec = serde_json::from_value(spec).unwrap();
        assert_eq!(fast, slow);
    }

    #[test]
    fn one_field_is_read_alone() {
        let object = json!({"kind": "X", "spec": {"model": "m", "args": [], "labels": {}}});
        let spec: Option<Spec> = field_from_struct_bytes(&bytes(&object), "spec").unwrap();
        assert_eq!(spec.unwrap().model, "m");
        let none: Option<Spec> = field_from_struct_bytes(&bytes(&object), "status").unwrap();
        assert_eq!(none, None);
    }

    #[test]
    fn truncated_bytes_are_an_error_not_a_panic() {
        let object = json!({"kind": "X", "status": {"conditions": [{"type": "Ready"}]}, "n": 1.5,
                            "long": "x".repeat(200)});
        let encoded = bytes(&object);
        for cut in 0..encoded.len() {
            let _ = from_struct_bytes::<Value>(&encoded[..cut]);
            let _ = at_path::<Value>(&encoded[..cut], &["status", "conditions"]);
        }
    }

    #[test]
    fn a_value_deep_in_an_object_is_read_alone() {
        let object = json!({"status": {"plan": {"warnings": ["a", "b"]}, "ready": "True"}});
        let warnings: Option<Vec<String>> =
            at_path(&bytes(&object), &["status", "plan", "warnings"]).unwrap();
        assert_eq!(warnings, Some(vec!["a".to_string(), "b".to_string()]));
        let absent: Option<Vec<String>> =
            at_path(&bytes(&object), &["status", "none", "x"]).unwrap();
        assert_eq!(absent, None);
        assert!(at_path::<Value>(&bytes(&object), &["status", "ready", "x"]).is_err());
    }

    #[test]
    fn what_the_json_path_must_decide_is_refused() {
        // A list where a struct is wanted, which serde_json would read by position.
        let list = json!({"spec": ["m", 1, [], {}]});
        assert!(field_from_struct_bytes::<Spec>(&bytes(&list), "spec").is_err());
        // Wrong types are errors here too (their message is the JSON path's to give).
        let wrong = json!({"model": 1, "args": [], "labels": {}});
        assert!(from_struct_bytes::<Spec>(&bytes(&wrong)).is_err());
        // A Value with two kinds set.
        let mut two = Vec::new();
        prost::encoding::string::encode(3, &"a".to_string(), &mut two);
        prost::encoding::bool::encode(4, &true, &mut two);
        assert!(read_value(&two, 0).is_err());
    }

    #[test]
    fn what_a_type_does_not_read_is_not_checked() {
        let mut encoded = bytes(&json!({"model": "m", "args": [], "labels": {}}));
        // An entry whose key (0xff) and string value (0xfe) are not UTF-8.
        encoded.extend_from_slice(&[0x0a, 0x08, 0x0a, 0x01, 0xff, 0x12, 0x03, 0x1a, 0x01, 0xfe]);
        let spec: Spec = from_struct_bytes(&encoded).unwrap();
        assert_eq!(spec.model, "m");
        // Read as a map, every key is a string and is checked.
        assert!(from_struct_bytes::<BTreeMap<String, Value>>(&encoded).is_err());
        assert!(from_struct_bytes::<Value>(&encoded).is_err());
    }

    #[test]
    fn a_map_keyed_by_an_enum_reads_as_through_json() {
        let object = json!({"tensor-parallel": 2});
        let fast: BTreeMap<Mode, u32> = from_struct_bytes(&bytes(&object)).unwrap();
        let slow: BTreeMap<Mode, u32> = serde_json::from_value(object).unwrap();
        assert_eq!(fast, slow);
    }

    #[test]
    fn entries_in_any_field_order_read_as_prost_reads_them() {
        let value = prost_types::Value {
            kind: Some(prost_types::value::Kind::StringValue("v".into())),
        };
        let mut value_bytes = Vec::new();
        value.encode(&mut value_bytes).unwrap();
        let entry = |fields: &[(u32, &[u8])]| {
            let mut body = Vec::new();
            for (tag, bytes) in fields {
                prost::encoding::bytes::encode(*tag, &bytes.to_vec(), &mut body);
            }
            let mut out = Vec::new();
            prost::encoding::bytes::encode(1, &body, &mut out);
            out
        };
        for struct_bytes in [
            // The value before the key.
            entry(&[(2, &value_bytes), (1, b"k")]),
            // The key given twice: the last wins.
            entry(&[(1, b"a"), (2, &value_bytes), (1, b"b")]),
            // No key: the empty key.
            entry(&[(2, &value_bytes)]),
            // No value: null.
            entry(&[(1, b"k")]),
        ] {
            let fast: Value = from_struct_bytes(&struct_bytes).unwrap();
            let slow = Value::Object(struct_to_json(
                &prost_types::Struct::decode(&struct_bytes[..]).unwrap(),
            ));
            assert_eq!(fast, slow, "{struct_bytes:?}");
        }
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            ".{0,20}".prop_map(Value::from),
            // A length of two bytes.
            ".{120,140}".prop_map(Value::from),
        ];
        leaf.prop_recursive(5, 200, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::from),
                prop::collection::btree_map(prop_oneof![".{0,8}", "k{125,130}"], inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn lengths_of_one_two_and_three_bytes_read_as_the_json_path_reads_them() {
        let mut object = serde_json::Map::new();
        for n in [126, 127, 128, 16_382, 16_383, 16_384] {
            object.insert("k".repeat(n), json!("v".repeat(n)));
            object.insert(format!("list-{n}"), json!(["x".repeat(n)]));
            object.insert(format!("object-{n}"), json!({"s": "y".repeat(n)}));
        }
        let encoded = json_to_struct(&object).encode_to_vec();
        let fast: Value = from_struct_bytes(&encoded).unwrap();
        let slow = Value::Object(struct_to_json(
            &prost_types::Struct::decode(&encoded[..]).unwrap(),
        ));
        assert_eq!(fast, slow);
    }

    proptest! {
        /// Read as untyped JSON, any object is what the JSON path makes of it.
        #[test]
        fn any_object_reads_as_the_json_path_reads_it(
            object in prop::collection::btree_map(".{0,8}", json_value(), 0..8)
        ) {
            let object: serde_json::Map<String, Value> = object.into_iter().collect();
            let encoded = json_to_struct(&object).encode_to_vec();
            let fast: Value = from_struct_bytes(&encoded).unwrap();
            let slow = Value::Object(struct_to_json(&prost_types::Struct::decode(&encoded[..]).unwrap()));
            prop_assert_eq!(fast, slow);
        }
    }
}
