//! The one place where protobuf `Struct`s become serde values and back.
//!
//! Kubernetes objects travel as `google.protobuf.Struct`, whose numbers are
//! all doubles. Integral doubles become JSON integers here, so typed specs can
//! read `gpu: 1` as an integer and rendered YAML shows `1`, not `1.0`.
//! Non-finite doubles have no JSON form; they become the strings protobuf's
//! JSON mapping uses ("NaN", "Infinity", "-Infinity"), so a typed field that
//! expects a number rejects them with its path instead of reading garbage.
//!
//! [`decode_object`] reads an encoded `Struct` straight into JSON, without
//! building the `prost_types` tree first: the function decodes the observed
//! XR and a few observed resources on every call, and the intermediate tree
//! (a map and a string for every key, then dropped) cost more than the rest
//! of the call. It gives exactly what `struct_to_json` of the decoded
//! `Struct` gives, minus `metadata.managedFields`, which no composer reads
//! and which is often half of an object's bytes. The way back, any
//! serializable value straight to a `Struct`'s bytes, is `struct_serializer`.

use std::collections::BTreeMap;

use prost::encoding::WireType;
use prost_types::{ListValue, Struct, Value as PbValue, value::Kind};
use serde_json::{Map, Number, Value};

/// Largest integer a double holds exactly (2^53): the JSON path reads a
/// whole number up to it as an integer.
pub(crate) const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

/// Converts a protobuf `Struct` into a JSON object.
pub fn struct_to_json(s: &Struct) -> Map<String, Value> {
    s.fields
        .iter()
        .map(|(k, v)| (k.clone(), value_to_json(v)))
        .collect()
}

/// Converts a protobuf `Value` into a JSON value. An unset kind is `null`.
pub fn value_to_json(v: &PbValue) -> Value {
    match &v.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(*b),
        Some(Kind::StringValue(s)) => Value::String(s.clone()),
        Some(Kind::NumberValue(n)) => number_to_json(*n),
        Some(Kind::StructValue(s)) => Value::Object(struct_to_json(s)),
        Some(Kind::ListValue(l)) => Value::Array(l.values.iter().map(value_to_json).collect()),
    }
}

fn number_to_json(n: f64) -> Value {
    if n.is_nan() {
        return Value::String("NaN".into());
    }
    if n.is_infinite() {
        return Value::String(if n > 0.0 { "Infinity" } else { "-Infinity" }.into());
    }
    if n.fract() == 0.0 && n.abs() <= MAX_EXACT_INTEGER {
        // Exact: |n| <= 2^53 fits an i64 without rounding.
        return Value::Number(Number::from(n as i64));
    }
    Number::from_f64(n).map_or(Value::Null, Value::Number)
}

/// Converts a JSON object into a protobuf `Struct`.
pub fn json_to_struct(m: &Map<String, Value>) -> Struct {
    Struct {
        fields: m
            .iter()
            .map(|(k, v)| (k.clone(), json_to_value(v)))
            .collect::<BTreeMap<_, _>>(),
    }
}

/// Converts a JSON value into a protobuf `Value`. Integers beyond 2^53 lose
/// precision, as they would in Crossplane itself.
pub fn json_to_value(v: &Value) -> PbValue {
    let kind = match v {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Array(a) => Kind::ListValue(ListValue {
            values: a.iter().map(json_to_value).collect(),
        }),
        Value::Object(m) => Kind::StructValue(json_to_struct(m)),
    };
    PbValue { kind: Some(kind) }
}

use super::struct_serializer::{ENTRY, ENTRY_KEY, ENTRY_VALUE, STRUCT};

/// A one-byte key, a varint length and `len` bytes.
fn delimited_len(len: usize) -> usize {
    1 + prost::encoding::encoded_len_varint(len as u64) + len
}

fn put_varint(n: usize, out: &mut Vec<u8>) {
    prost::encoding::encode_varint(n as u64, out);
}

/// The path [`decode_object`] leaves out.
pub const SKIPPED_PATH: [&str; 2] = ["metadata", "managedFields"];

/// Deepest nesting accepted, as prost's own limit.
const RECURSION_LIMIT: u32 = 100;

/// A decode failure; the caller falls back to prost's decoder for its message.
#[derive(Debug, PartialEq, Eq)]
pub struct DecodeError;

/// Decodes the bytes of a `google.protobuf.Struct` into a JSON object equal
/// to `struct_to_json(&Struct::decode(bytes)?)`, without `metadata.managedFields`.
pub fn decode_object(bytes: &[u8]) -> Result<Map<String, Value>, DecodeError> {
    let mut out = Map::new();
    decode_struct_into(bytes, &mut out, Some(&SKIPPED_PATH), 0)?;
    Ok(out)
}

/// Decodes the bytes of a `google.protobuf.Struct` into a JSON object equal
/// to `struct_to_json(&Struct::decode(bytes)?)`, every field kept.
pub fn decode_struct(bytes: &[u8]) -> Result<Map<String, Value>, DecodeError> {
    let mut out = Map::new();
    decode_struct_into(bytes, &mut out, None, 0)?;
    Ok(out)
}

type Skip<'a> = Option<&'a [&'a str]>;

fn decode_struct_into(
    mut buf: &[u8],
    out: &mut Map<String, Value>,
    skip: Skip,
    depth: u32,
) -> Result<(), DecodeError> {
    if depth > RECURSION_LIMIT {
        return Err(DecodeError);
    }
    while let Some((name, value)) = next_entry(&mut buf)? {
        let below = match skip {
            Some([first, rest @ ..]) if *first == name => {
                if rest.is_empty() {
                    out.remove(name);
                    continue;
                }
                Some(rest)
            }
            _ => None,
        };
        let decoded = match value {
            Some(v) => decode_value(v, below, depth + 1)?,
            None => Value::Null,
        };
        out.insert(name.to_string(), decoded);
    }
    Ok(())
}

/// A Struct's map entry: its key and its encoded Value, if present.
type Entry<'a> = (&'a str, Option<&'a [u8]>);

/// The next entry of a Struct's map (field 1), skipping any other field;
/// None at the end of the bytes.
fn next_entry<'a>(buf: &mut &'a [u8]) -> Result<Option<Entry<'a>>, DecodeError> {
    while !buf.is_empty() {
        let (field, wire) = key(buf)?;
        if field == 1 {
            return map_entry(length_delimited(wire, buf)?).map(Some);
        }
        skip_field(wire, buf)?;
    }
    Ok(None)
}

/// One entry of a Struct's map: key = 1 (string), value = 2 (Value);
/// absent means default.
fn map_entry(mut entry: &[u8]) -> Result<Entry<'_>, DecodeError> {
    let mut name: &str = "";
    let mut value = None;
    while !entry.is_empty() {
        let (f, w) = key(&mut entry)?;
        match f {
            1 => {
                name = std::str::from_utf8(length_delimited(w, &mut entry)?)
                    .map_err(|_| DecodeError)?
            }
            2 => value = Some(length_delimited(w, &mut entry)?),
            _ => skip_field(w, &mut entry)?,
        }
    }
    Ok((name, value))
}

/// Decodes a `google.protobuf.Value`. A oneof set twice keeps the last, and
/// merges when both are structs or both lists, as prost does.
fn decode_value(mut buf: &[u8], skip: Skip, depth: u32) -> Result<Value, DecodeError> {
    if depth > RECURSION_LIMIT {
        return Err(DecodeError);
    }
    let mut v = Value::Null;
    while !buf.is_empty() {
        let (field, wire) = key(&mut buf)?;
        match (field, wire) {
            (1, WireType::Varint) => {
                varint(&mut buf)?;
                v = Value::Null;
            }
            (2, WireType::SixtyFourBit) => {
                let (n, rest) = buf.split_first_chunk::<8>().ok_or(DecodeError)?;
                buf = rest;
                v = number_to_json(f64::from_le_bytes(*n));
            }
            (3, WireType::LengthDelimited) => {
                let s = length_delimited(wire, &mut buf)?;
                v = Value::String(std::str::from_utf8(s).map_err(|_| DecodeError)?.to_string());
            }
            (4, WireType::Varint) => v = Value::Bool(varint(&mut buf)? != 0),
            (5, WireType::LengthDelimited) => {
                let s = length_delimited(wire, &mut buf)?;
                if !v.is_object() {
                    v = Value::Object(Map::new());
                }
                if let Value::Object(m) = &mut v {
                    decode_struct_into(s, m, skip, depth + 1)?;
                }
            }
            (6, WireType::LengthDelimited) => {
                let mut list = length_delimited(wire, &mut buf)?;
                if !v.is_array() {
                    v = Value::Array(Vec::new());
                }
                if let Value::Array(items) = &mut v {
                    while !list.is_empty() {
                        let (f, w) = key(&mut list)?;
                        if f == 1 {
                            let item = length_delimited(w, &mut list)?;
                            items.push(decode_value(item, None, depth + 2)?);
                        } else {
                            skip_field(w, &mut list)?;
                        }
                    }
                }
            }
            (1..=6, _) => return Err(DecodeError),
            _ => skip_field(wire, &mut buf)?,
        }
    }
    Ok(v)
}

/// The top-level entries of the bytes of a `google.protobuf.Struct`: each
/// key with its `Value` still encoded, in key order. Nothing below the top
/// level is read, so this works on objects nested deeper than
/// [`decode_struct`] accepts: what the function only passes through (an
/// earlier step's desired XR, an observed resource it keeps) is spliced as
/// bytes instead of being dropped. A key given twice keeps the last, as
/// prost's map decoding does.
pub fn raw_entries(mut buf: &[u8]) -> Result<BTreeMap<&str, &[u8]>, DecodeError> {
    let mut out = BTreeMap::new();
    while let Some((name, value)) = next_entry(&mut buf)? {
        out.insert(name, value.unwrap_or_default());
    }
    Ok(out)
}

/// The Struct an encoded `google.protobuf.Value` holds, still encoded;
/// None when it holds something else. Parts of a struct set more than once
/// are concatenated, which is how protobuf merges them.
pub fn raw_struct_value(mut buf: &[u8]) -> Result<Option<Vec<u8>>, DecodeError> {
    let mut found: Option<Vec<u8>> = None;
    while !buf.is_empty() {
        let (field, wire) = key(&mut buf)?;
        match field {
            5 => found
                .get_or_insert_with(Vec::new)
                .extend_from_slice(length_delimited(wire, &mut buf)?),
            // Another kind of the oneof replaces the struct.
            1..=6 => {
                skip_field(wire, &mut buf)?;
                found = None;
            }
            _ => skip_field(wire, &mut buf)?,
        }
    }
    Ok(found)
}

/// Writes one Struct entry whose `Value` is already encoded, as prost
/// writes a map entry (an empty key or value is left out).
pub fn encode_raw_entry(key: &str, value: &[u8], out: &mut Vec<u8>) {
    write_entry(key, value.len(), out, |out| out.extend_from_slice(value));
}

/// Writes one Struct entry whose `Value` holds the Struct with the encoded
/// `fields`: the entry `encode_raw_entry` writes for that Value, without
/// building the Value first.
pub fn encode_struct_entry(key: &str, fields: &[u8], out: &mut Vec<u8>) {
    write_entry(key, delimited_len(fields.len()), out, |out| {
        out.push(STRUCT);
        put_varint(fields.len(), out);
        out.extend_from_slice(fields);
    });
}

/// A map entry of `key` and a Value of `value_len` bytes that
/// `write_value` writes.
fn write_entry(
    key: &str,
    value_len: usize,
    out: &mut Vec<u8>,
    write_value: impl FnOnce(&mut Vec<u8>),
) {
    let key_len = if key.is_empty() {
        0
    } else {
        delimited_len(key.len())
    };
    let value_field_len = if value_len == 0 {
        0
    } else {
        delimited_len(value_len)
    };
    out.push(ENTRY);
    put_varint(key_len + value_field_len, out);
    if !key.is_empty() {
        out.push(ENTRY_KEY);
        put_varint(key.len(), out);
        out.extend_from_slice(key.as_bytes());
    }
    if value_len != 0 {
        out.push(ENTRY_VALUE);
        put_varint(value_len, out);
        write_value(out);
    }
}

// Inlined where it is read: keys and short lengths, most varints in a
// Struct, are one byte, the lengths of most larger values (up to 16 KiB)
// two, and the call cost more than reading them.
#[inline(always)]
pub(super) fn varint(buf: &mut &[u8]) -> Result<u64, DecodeError> {
    let bytes: &[u8] = buf;
    match bytes {
        [byte, rest @ ..] if *byte < 0x80 => {
            *buf = rest;
            Ok(u64::from(*byte))
        }
        [low, high, rest @ ..] if (1..0x80).contains(high) => {
            *buf = rest;
            Ok(u64::from(low & 0x7f) | u64::from(*high) << 7)
        }
        _ => long_varint(buf),
    }
}

#[inline(never)]
fn long_varint(buf: &mut &[u8]) -> Result<u64, DecodeError> {
    prost::encoding::decode_varint(buf).map_err(|_| DecodeError)
}

#[inline]
fn key(buf: &mut &[u8]) -> Result<(u32, WireType), DecodeError> {
    let k = varint(buf)?;
    let wire = WireType::try_from(k & 7).map_err(|_| DecodeError)?;
    let field = u32::try_from(k >> 3).map_err(|_| DecodeError)?;
    if field == 0 {
        return Err(DecodeError);
    }
    Ok((field, wire))
}

#[inline]
fn length_delimited<'a>(wire: WireType, buf: &mut &'a [u8]) -> Result<&'a [u8], DecodeError> {
    if wire != WireType::LengthDelimited {
        return Err(DecodeError);
    }
    let len = usize::try_from(varint(buf)?).map_err(|_| DecodeError)?;
    if len > buf.len() {
        return Err(DecodeError);
    }
    let (head, rest) = buf.split_at(len);
    *buf = rest;
    Ok(head)
}

fn skip_field(wire: WireType, buf: &mut &[u8]) -> Result<(), DecodeError> {
    let n = match wire {
        WireType::Varint => return varint(buf).map(|_| ()),
        WireType::SixtyFourBit => 8,
        WireType::ThirtyTwoBit => 4,
        WireType::LengthDelimited => return length_delimited(wire, buf).map(|_| ()),
        // proto3 has no groups; prost's decoder gives the real error.
        WireType::StartGroup | WireType::EndGroup => return Err(DecodeError),
    };
    if n > buf.len() {
        return Err(DecodeError);
    }
    *buf = &buf[n..];
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn varints_read_as_prost_reads_them() {
        let mut encodings: Vec<Vec<u8>> =
            [0u64, 1, 127, 128, 300, 16_383, 16_384, 1 << 40, u64::MAX]
                .into_iter()
                .map(|n| {
                    let mut b = Vec::new();
                    prost::encoding::encode_varint(n, &mut b);
                    b
                })
                .collect();
        // Every one- and two-byte prefix, canonical or not, cut short or not.
        for low in 0..=255u8 {
            encodings.push(vec![low]);
            for high in [0u8, 1, 0x7f, 0x80, 0xff] {
                encodings.push(vec![low, high]);
                encodings.push(vec![low, high, 5]);
            }
        }
        for bytes in encodings {
            let (mut ours, mut theirs) = (&bytes[..], &bytes[..]);
            let read = varint(&mut ours).ok();
            let expected = prost::encoding::decode_varint(&mut theirs).ok();
            assert_eq!((read, ours.len()), (expected, theirs.len()), "{bytes:?}");
        }
    }

    #[test]
    fn round_trips_kubernetes_shaped_json() {
        let v = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "labels": {"a": "b"}, "generation": 3},
            "data": {"k": "v"}, "list": [1, 2.5, null, true, {"n": -7}],
        });
        let s = json_to_struct(v.as_object().unwrap());
        assert_eq!(Value::Object(struct_to_json(&s)), v);
    }

    #[test]
    fn integral_doubles_become_integers() {
        let cases = [
            (1.0, json!(1)),
            (-3.0, json!(-3)),
            (2.5, json!(2.5)),
            (1e300, json!(1e300)),
        ];
        for (n, want) in cases {
            assert_eq!(number_to_json(n), want, "{n}");
        }
    }

    #[test]
    fn non_finite_doubles_use_protobuf_json_strings() {
        assert_eq!(number_to_json(f64::NAN), json!("NaN"));
        assert_eq!(number_to_json(f64::INFINITY), json!("Infinity"));
        assert_eq!(number_to_json(f64::NEG_INFINITY), json!("-Infinity"));
    }

    #[test]
    fn an_unset_value_is_null() {
        assert_eq!(value_to_json(&PbValue { kind: None }), Value::Null);
    }

    #[test]
    fn decoding_bytes_equals_decoding_the_struct_without_managed_fields() {
        use prost::Message;
        let v = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "labels": {"a": "b"}, "generation": 3,
                         "managedFields": [{"manager": "m", "fieldsV1": {"f:data": {}}}]},
            "data": {"k": "v", "": "empty key"}, "list": [1, 2.5, null, true, {"n": -7}, [], [[1]]],
            "empty": {}, "s": "", "f": false, "nested": {"metadata": {"managedFields": "kept"}},
        });
        let s = json_to_struct(v.as_object().unwrap());
        let bytes = s.encode_to_vec();
        let mut want = struct_to_json(&s);
        want["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        assert_eq!(decode_object(&bytes), Ok(want));
        // Non-finite numbers and an unset value, which JSON cannot express.
        let odd = Struct {
            fields: [
                (
                    "nan".to_string(),
                    PbValue {
                        kind: Some(Kind::NumberValue(f64::NAN)),
                    },
                ),
                ("unset".to_string(), PbValue { kind: None }),
            ]
            .into(),
        };
        assert_eq!(
            decode_object(&odd.encode_to_vec()),
            Ok(struct_to_json(&odd))
        );
        // Truncations fail or agree with prost; none panics.
        for cut in 0..bytes.len() {
            if let (Ok(got), Ok(s)) = (decode_object(&bytes[..cut]), Struct::decode(&bytes[..cut]))
            {
                let mut want = struct_to_json(&s);
                if let Some(Value::Object(md)) = want.get_mut("metadata") {
                    md.remove("managedFields");
                }
                assert_eq!(got, want, "cut at {cut}");
            }
        }
    }
}
