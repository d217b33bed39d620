//! Any `Serialize` value straight to the bytes of a protobuf `Struct`.
//!
//! Composed manifests are typed (k8s-openapi and this crate's CRD types);
//! the response carries them as `google.protobuf.Struct`s. Going through
//! `serde_json::Value` and `prost_types::Struct` on the way would build and
//! drop two trees per manifest. This serializer writes the protobuf bytes as
//! serde walks the value, and the result is byte for byte what prost gives
//! for `json_to_struct(serde_json::to_value(x))`: keys in byte order (prost
//! keeps `Struct.fields` in a BTreeMap; typed structs serialize in field
//! order, so each object's entries are sorted when it ends), the last of two
//! equal keys wins, the empty key is left out of its entry as prost leaves
//! out default map keys, numbers are doubles and a non-finite one is null.
//!
//! Lengths come before contents in protobuf. Each nested message reserves
//! one length byte and is widened in place in the rare case it holds 128
//! bytes or more, which costs a move of that message's bytes only.

use std::cell::Cell;

use serde::ser::{self, Serialize};

// Field keys of struct.proto: Struct.fields = 1 and
// ListValue.values = 1; a map entry's key = 1 and value = 2; Value's oneof:
// null = 1, number = 2 (double), string = 3, bool = 4, struct = 5, list = 6.
pub(super) const ENTRY: u8 = 1 << 3 | 2;
pub(super) const ENTRY_KEY: u8 = 1 << 3 | 2;
pub(super) const ENTRY_VALUE: u8 = 2 << 3 | 2;
const LIST_ITEM: u8 = 1 << 3 | 2;
const NULL: u8 = 1 << 3;
pub(super) const NUMBER: u8 = 2 << 3 | 1;
pub(super) const STRING: u8 = 3 << 3 | 2;
const BOOL: u8 = 4 << 3;
pub(super) const STRUCT: u8 = 5 << 3 | 2;
pub(super) const LIST: u8 = 6 << 3 | 2;
/// `Resource.resource`, field 1: the Struct at the top of a composed resource.
const RESOURCE: u8 = 1 << 3 | 2;

/// Why a value has no `Struct` form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Error(String);

impl ser::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Self(msg.to_string())
    }
}

/// `value`, which must serialize as an object, as the bytes of field 1 of a
/// `Resource` (the `Struct` with its key and length), appended to `out`.
pub fn encode_resource_field<T: Serialize + ?Sized>(
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let start = out.len();
    // Room for the entries of the objects open at once in a manifest.
    let mut writer = Writer::new(std::mem::take(out), 32);
    let result = value.serialize(&mut writer);
    *out = std::mem::take(&mut writer.out);
    result?;
    // A Value holding a Struct is `STRUCT, length, fields`; the Resource's
    // field has the same layout under its own key.
    if out.get(start) != Some(&STRUCT) {
        out.truncate(start);
        return Err(Error("a manifest must be an object".into()));
    }
    out[start] = RESOURCE;
    Ok(())
}

/// `value` as the bytes of a `google.protobuf.Struct` (its fields, without
/// a key or length), or an error when it is not an object.
pub fn to_struct_bytes<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, Error> {
    with_struct_bytes(|out| encode_resource_field(value, out), <[u8]>::to_vec)
}

/// Bytes of scratch a thread keeps for [`with_scratch`]; a larger buffer
/// (an unusually large status or manifest) is freed after use.
const SCRATCH_KEPT: usize = 32 * 1024;

thread_local! {
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// An empty buffer the thread keeps, lent to `use_buffer`: what is encoded
/// only to be copied or merged at once costs no allocation and no
/// regrowth. A `use_buffer` that asks again finds the buffer taken and is
/// lent a new one.
pub fn with_scratch<R>(use_buffer: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    let mut out = SCRATCH.take();
    out.clear();
    let result = use_buffer(&mut out);
    if out.capacity() <= SCRATCH_KEPT {
        SCRATCH.set(out);
    }
    result
}

/// The bytes of a `Struct` (its fields, without a key or length) that
/// `write_resource_field` writes as a `Resource`'s field 1, lent to `read`.
/// They are written into the thread's scratch ([`with_scratch`]): an XR's
/// status is encoded on every call only to be merged into the desired XR
/// at once, and a fresh buffer of its size cost an allocation, and a copy
/// to drop the field's header, each time.
pub fn with_struct_bytes<R>(
    write_resource_field: impl FnOnce(&mut Vec<u8>) -> Result<(), Error>,
    read: impl FnOnce(&[u8]) -> R,
) -> Result<R, Error> {
    with_scratch(|out| {
        write_resource_field(out)?;
        let mut fields = &out[1..];
        prost::encoding::decode_varint(&mut fields).map_err(|e| Error(e.to_string()))?;
        Ok(read(fields))
    })
}

/// `value` as the bytes of a `google.protobuf.Value` (its fields, without
/// a key or length): what [`super::encode_once`] keeps.
pub(super) fn to_value_bytes<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, Error> {
    let mut writer = Writer::new(Vec::with_capacity(4096), 0);
    value.serialize(&mut writer)?;
    Ok(std::mem::take(&mut writer.out))
}

/// One `Struct` entry, `key` and `value`, as prost writes a map entry;
/// appended to `out`.
pub fn encode_entry<T: Serialize + ?Sized>(
    key: &str,
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let mut writer = Writer::new(std::mem::take(out), 0);
    let entry = writer.open_entry(key);
    let result = value.serialize(&mut writer);
    if result.is_ok() {
        writer.close_entry(entry);
    } else {
        writer.out.truncate(entry.start);
    }
    *out = std::mem::take(&mut writer.out);
    result
}

/// Where one map entry's bytes, and its key's, are in `out`.
#[derive(Clone, Copy)]
struct EntrySpan {
    start: usize,
    end: usize,
    key_start: usize,
    key_end: usize,
}

struct Writer {
    out: Vec<u8>,
    /// The entries of the objects being written, innermost last.
    entries: Vec<EntrySpan>,
    /// Inside an `encode_once` value: the next bytes are its encoding.
    splicing: bool,
}

thread_local! {
    /// The list of open entries a writer uses, kept for the next writer on
    /// the thread: a call writes a few manifests, each needing room for a
    /// few dozen entries.
    static ENTRIES: Cell<Vec<EntrySpan>> = const { Cell::new(Vec::new()) };
}

impl Writer {
    /// A writer appending to `out`, with room for `entries` open entries.
    fn new(out: Vec<u8>, entries: usize) -> Self {
        // A writer inside another's value (see `encode_once`) finds the
        // list taken and starts its own.
        let mut spans = ENTRIES.take();
        spans.reserve(entries);
        Self {
            out,
            entries: spans,
            splicing: false,
        }
    }

    /// Writes `tag` and a one-byte length to fill in with [`Writer::close`];
    /// returns where the contents start.
    fn open(&mut self, tag: u8) -> usize {
        self.out.extend_from_slice(&[tag, 0]);
        self.out.len()
    }

    /// Sets the length of the message whose contents start at `start`.
    // Inlined: most messages are short, and the call cost more than
    // setting their one-byte length.
    #[inline]
    fn close(&mut self, start: usize) {
        let len = self.out.len() - start;
        if len < 0x80 {
            self.out[start - 1] = len as u8;
        } else {
            self.widen(start, len);
        }
    }

    /// Writes a length of 128 or more, moving the message up.
    #[inline(never)]
    fn widen(&mut self, start: usize, len: usize) {
        let mut varint = [0u8; 10];
        let mut rest = &mut varint[..];
        prost::encoding::encode_varint(len as u64, &mut rest);
        let n = 10 - rest.len();
        // The contents move up by the length's extra bytes.
        let end = self.out.len();
        self.out.resize(end + n - 1, 0);
        self.out.copy_within(start..end, start + n - 1);
        self.out[start - 1..start + n - 1].copy_from_slice(&varint[..n]);
    }

    fn delimited(&mut self, tag: u8, bytes: &[u8]) {
        match u8::try_from(bytes.len()) {
            Ok(len) if len < 0x80 => self.out.extend_from_slice(&[tag, len]),
            _ => {
                self.out.push(tag);
                prost::encoding::encode_varint(bytes.len() as u64, &mut self.out);
            }
        }
        self.out.extend_from_slice(bytes);
    }

    fn number(&mut self, n: f64) {
        if n.is_finite() {
            self.out.push(NUMBER);
            self.out.extend_from_slice(&n.to_le_bytes());
        } else {
            // serde_json has no non-finite numbers: it writes null.
            self.out.extend_from_slice(&[NULL, 0]);
        }
    }

    /// Starts a map entry: its key now, its value next.
    fn open_entry(&mut self, key: &str) -> OpenEntry {
        let start = self.out.len();
        let body = self.open(ENTRY);
        if !key.is_empty() {
            self.delimited(ENTRY_KEY, key.as_bytes());
        }
        let value = self.open(ENTRY_VALUE);
        OpenEntry {
            start,
            body,
            value,
            key_len: key.len(),
        }
    }

    fn close_entry(&mut self, entry: OpenEntry) {
        self.close(entry.value);
        // The key sits after the entry's tag and length, and its own tag and
        // length; it is found once here rather than at every comparison.
        let body_len = self.out.len() - entry.body;
        self.close(entry.body);
        let key_start = match entry.key_len {
            0 => entry.start,
            n => {
                entry.start
                    + 2
                    + prost::encoding::encoded_len_varint(body_len as u64)
                    + prost::encoding::encoded_len_varint(n as u64)
            }
        };
        self.entries.push(EntrySpan {
            start: entry.start,
            end: self.out.len(),
            key_start,
            key_end: key_start + entry.key_len,
        });
    }

    /// Ends an object: its entries (from `first` on) in key order, later
    /// duplicates winning, then its length.
    fn close_object(&mut self, start: usize, first: usize) {
        let spans = &self.entries[first..];
        let sorted = spans
            .windows(2)
            .all(|w| compare(key_of(&self.out, w[0]), key_of(&self.out, w[1])).is_lt());
        if !sorted {
            let out = &self.out;
            let order = &mut self.entries[first..];
            // Stable: of equal keys the last written stays last, and wins.
            order.sort_by(|a, b| compare(key_of(out, *a), key_of(out, *b)));
            // The entries are copied in order after the object, which then
            // moves down to where it starts.
            let end = self.out.len();
            for (i, span) in order.iter().enumerate() {
                let next = order.get(i + 1).map(|n| key_of(&self.out, *n));
                if next == Some(key_of(&self.out, *span)) {
                    continue;
                }
                self.out.extend_from_within(span.start..span.end);
            }
            self.out.drain(start..end);
        }
        self.entries.truncate(first);
        self.close(start);
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let mut spans = std::mem::take(&mut self.entries);
        spans.clear();
        ENTRIES.set(spans);
    }
}

/// A map entry being written: where it, its body and its value start.
#[derive(Clone, Copy)]
struct OpenEntry {
    start: usize,
    body: usize,
    value: usize,
    key_len: usize,
}

/// The key of the entry at `span` (empty when the entry has none).
fn key_of(out: &[u8], span: EntrySpan) -> &[u8] {
    &out[span.key_start..span.key_end]
}

/// Byte order of keys `a` and `b`. Most neighbours differ in their first
/// byte, which decides without comparing the rest.
fn compare(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    match (a.first(), b.first()) {
        (Some(x), Some(y)) if x != y => x.cmp(y),
        _ => a.cmp(b),
    }
}

impl<'a> ser::Serializer for &'a mut Writer {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = List<'a>;
    type SerializeTuple = List<'a>;
    type SerializeTupleStruct = List<'a>;
    type SerializeTupleVariant = Variant<List<'a>>;
    type SerializeMap = Object<'a>;
    type SerializeStruct = Object<'a>;
    type SerializeStructVariant = Variant<Object<'a>>;

    fn is_human_readable(&self) -> bool {
        !self.splicing
    }

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.out.extend_from_slice(&[BOOL, u8::from(v)]);
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.number(v as f64);
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.number(v as f64);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.number(v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.delimited(STRING, v.as_bytes());
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        if std::mem::take(&mut self.splicing) {
            self.out.extend_from_slice(v);
            return Ok(());
        }
        // As serde_json: a list of numbers.
        let mut list = ser::Serializer::serialize_seq(self, Some(v.len()))?;
        for b in v {
            ser::SerializeSeq::serialize_element(&mut list, b)?;
        }
        ser::SerializeSeq::end(list)
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.out.extend_from_slice(&[NULL, 0]);
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        if name == super::encode_once::NEWTYPE {
            // The value, no longer human-readable to itself, hands over
            // its bytes (see `encode_once`).
            self.splicing = true;
            let result = value.serialize(&mut *self);
            self.splicing = false;
            return result;
        }
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        let mut object = ser::Serializer::serialize_map(&mut *self, Some(1))?;
        ser::SerializeStruct::serialize_field(&mut object, variant, value)?;
        ser::SerializeStruct::end(object)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<List<'a>, Error> {
        let start = self.open(LIST);
        Ok(List {
            writer: self,
            start,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<List<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<List<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<List<'a>>, Error> {
        // As serde_json: {variant: [..]}.
        let (start, first) = self.open_object();
        let entry = self.open_entry(variant);
        let inner = self.serialize_seq(Some(len))?;
        Ok(Variant {
            inner,
            entry,
            start,
            first,
        })
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Object<'a>, Error> {
        let (start, first) = self.open_object();
        Ok(Object {
            writer: self,
            start,
            first,
            entry: None,
        })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Object<'a>, Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<Object<'a>>, Error> {
        let (start, first) = self.open_object();
        let entry = self.open_entry(variant);
        let inner = self.serialize_map(Some(len))?;
        Ok(Variant {
            inner,
            entry,
            start,
            first,
        })
    }
}

impl Writer {
    fn open_object(&mut self) -> (usize, usize) {
        (self.open(STRUCT), self.entries.len())
    }
}

#[doc(hidden)]
pub struct List<'a> {
    writer: &'a mut Writer,
    start: usize,
}

impl List<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let item = self.writer.open(LIST_ITEM);
        value.serialize(&mut *self.writer)?;
        self.writer.close(item);
        Ok(())
    }
    fn finish(self) -> Result<(), Error> {
        self.writer.close(self.start);
        Ok(())
    }
}

impl ser::SerializeSeq for List<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeTuple for List<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for List<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

#[doc(hidden)]
pub struct Object<'a> {
    writer: &'a mut Writer,
    start: usize,
    first: usize,
    /// The entry whose key was written and whose value comes next.
    entry: Option<OpenEntry>,
}

impl Object<'_> {
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        let entry = self.writer.open_entry(key);
        value.serialize(&mut *self.writer)?;
        self.writer.close_entry(entry);
        Ok(())
    }
    fn finish(self) -> Result<(), Error> {
        self.writer.close_object(self.start, self.first);
        Ok(())
    }
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        let key = key.serialize(KeySerializer)?;
        self.entry = Some(self.writer.open_entry(&key));
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let entry = self
            .entry
            .take()
            .ok_or_else(|| Error("a map value came without its key".into()))?;
        value.serialize(&mut *self.writer)?;
        self.writer.close_entry(entry);
        Ok(())
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeStruct for Object<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(key, value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

/// An enum variant with contents: `{variant: contents}`.
#[doc(hidden)]
pub struct Variant<I> {
    inner: I,
    entry: OpenEntry,
    start: usize,
    first: usize,
}

impl Variant<List<'_>> {
    fn finish(self) -> Result<(), Error> {
        let writer = self.inner.writer;
        writer.close(self.inner.start);
        writer.close_entry(self.entry);
        writer.close_object(self.start, self.first);
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Variant<List<'_>> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.inner.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeStructVariant for Variant<Object<'_>> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.inner.field(key, value)
    }
    fn end(self) -> Result<(), Error> {
        let writer = self.inner.writer;
        writer.close_object(self.inner.start, self.inner.first);
        writer.close_entry(self.entry);
        writer.close_object(self.start, self.first);
        Ok(())
    }
}

/// Map keys, which a `Struct` holds as strings: strings as they are, and
/// numbers and booleans as their text, as serde_json writes them.
struct KeySerializer;

impl ser::Serializer for KeySerializer {
    type Ok = String;
    type Error = Error;
    type SerializeSeq = ser::Impossible<String, Error>;
    type SerializeTuple = ser::Impossible<String, Error>;
    type SerializeTupleStruct = ser::Impossible<String, Error>;
    type SerializeTupleVariant = ser::Impossible<String, Error>;
    type SerializeMap = ser::Impossible<String, Error>;
    type SerializeStruct = ser::Impossible<String, Error>;
    type SerializeStructVariant = ser::Impossible<String, Error>;

    fn serialize_bool(self, v: bool) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i16(self, v: i16) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u16(self, v: u16) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u32(self, v: u32) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_f32(self, _: f32) -> Result<String, Error> {
        Err(key_error())
    }
    fn serialize_f64(self, _: f64) -> Result<String, Error> {
        Err(key_error())
    }
    fn serialize_char(self, v: char) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_str(self, v: &str) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, Error> {
        Err(key_error())
    }
    fn serialize_none(self) -> Result<String, Error> {
        Err(key_error())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, Error> {
        Err(key_error())
    }
    fn serialize_unit(self) -> Result<String, Error> {
        Err(key_error())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, Error> {
        Err(key_error())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String, Error> {
        Ok(variant.to_string())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<String, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, Error> {
        Err(key_error())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(key_error())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(key_error())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(key_error())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(key_error())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(key_error())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(key_error())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(key_error())
    }
}

fn key_error() -> Error {
    Error("a map key must be a string, a whole number or a boolean".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::struct_json::json_to_struct;
    use proptest::prelude::*;
    use prost::Message;
    use serde::Serialize;
    use serde_json::{Value, json};
    use std::collections::BTreeMap;

    /// What prost writes for the same value after serde_json.
    fn through_prost<T: Serialize>(value: &T) -> Vec<u8> {
        let json = serde_json::to_value(value).unwrap();
        json_to_struct(json.as_object().unwrap()).encode_to_vec()
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Manifest {
        kind: &'static str,
        api_version: &'static str,
        metadata: BTreeMap<String, String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        absent: Option<u32>,
        present_none: Option<u32>,
        replicas: i32,
        ratio: f32,
        huge: u64,
        not_a_number: f64,
        args: Vec<String>,
        nested: Vec<Nested>,
        mode: Mode,
        payload: Payload,
        pair: (u8, bool),
        bytes: serde_bytes_like::Bytes,
        #[serde(rename = "")]
        empty_key: &'static str,
        #[serde(flatten)]
        extra: BTreeMap<String, Value>,
    }

    #[derive(Serialize)]
    struct Nested {
        zeta: String,
        alpha: Option<BTreeMap<u32, bool>>,
    }

    #[derive(Serialize)]
    enum Mode {
        Recreate,
    }

    #[derive(Serialize)]
    enum Payload {
        Tuple(u8, String),
        Struct { b: u8, a: &'static str },
        Newtype(Vec<u8>),
    }

    mod serde_bytes_like {
        pub struct Bytes(pub Vec<u8>);
        impl serde::Serialize for Bytes {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(&self.0)
            }
        }
    }

    fn manifest(payload: Payload) -> Manifest {
        Manifest {
            kind: "Deployment",
            api_version: "apps/v1",
            metadata: [("name".into(), "x".repeat(300)), ("b".into(), "".into())].into(),
            absent: None,
            present_none: None,
            replicas: -3,
            ratio: 0.9,
            huge: u64::MAX,
            not_a_number: f64::NAN,
            args: vec!["--tensor-parallel-size".into(), "8".into()],
            nested: vec![
                Nested {
                    zeta: "z".into(),
                    alpha: Some([(2, true), (10, false)].into()),
                },
                Nested {
                    zeta: "".into(),
                    alpha: None,
                },
            ],
            mode: Mode::Recreate,
            payload,
            pair: (7, false),
            bytes: serde_bytes_like::Bytes(vec![0, 255]),
            empty_key: "value of the empty key",
            // Flattened after the fields: "kind" here is a later duplicate.
            extra: [
                ("kind".into(), json!("Later")),
                ("aaa".into(), json!({"deep": [[], {}, null]})),
                // A key whose length takes two bytes, out of order.
                ("b".repeat(200), json!("long key")),
            ]
            .into(),
        }
    }

    #[test]
    fn a_typed_manifest_encodes_as_prost_encodes_it_through_serde_json() {
        for payload in [
            Payload::Tuple(1, "t".into()),
            Payload::Struct { b: 2, a: "s" },
            Payload::Newtype(vec![1, 2, 3]),
        ] {
            let m = manifest(payload);
            assert_eq!(to_struct_bytes(&m).unwrap(), through_prost(&m));
        }
    }

    #[test]
    fn a_json_object_encodes_as_prost_encodes_its_struct() {
        let long = "x".repeat(300);
        let v = json!({
            "apiVersion": "v1", "kind": "ConfigMap", "": "empty key", "e": "",
            "metadata": {"name": "x", "labels": {"a": "b"}, "generation": 3},
            "data": {"k": "v", "long": long}, "n": [1, -2.5, 1e300, null, true, false, {}, [], [[0]]],
            "nested": {"deeper": {"deepest": [{"a": {"b": [long]}}]}},
        });
        assert_eq!(to_struct_bytes(&v).unwrap(), through_prost(&v));
    }

    #[test]
    fn lent_struct_bytes_are_what_prost_writes_also_when_lent_again_inside() {
        let long = "y".repeat(40_000);
        let small = json!({"b": 1, "a": {"c": [1, 2]}});
        let large = json!({"big": long, "z": {}});
        let lend = |v: &Value| {
            with_struct_bytes(|out| encode_resource_field(v, out), <[u8]>::to_vec).unwrap()
        };
        // Larger than the thread keeps, then smaller: the buffer is not reused stale.
        for v in [&small, &large, &small, &json!({})] {
            assert_eq!(lend(v), through_prost(v), "{v}");
        }
        let (outer, inner) = with_struct_bytes(
            |out| encode_resource_field(&small, out),
            |outer| (outer.to_vec(), lend(&large)),
        )
        .unwrap();
        assert_eq!(outer, through_prost(&small));
        assert_eq!(inner, through_prost(&large));
        let not_an_object =
            with_struct_bytes(|out| encode_resource_field(&json!([1]), out), |_| ());
        assert!(not_an_object.is_err());
    }

    #[test]
    fn the_resource_field_is_the_struct_under_key_one() {
        let m = manifest(Payload::Newtype(vec![]));
        let mut out = vec![9];
        encode_resource_field(&m, &mut out).unwrap();
        let mut want = vec![9];
        prost::encoding::message::encode(
            1,
            &json_to_struct(serde_json::to_value(&m).unwrap().as_object().unwrap()),
            &mut want,
        );
        assert_eq!(out, want);
    }

    #[test]
    fn only_objects_are_manifests() {
        let mut out = vec![1, 2];
        for value in [json!("x"), json!([1]), json!(null), json!(1.5)] {
            assert_eq!(
                encode_resource_field(&value, &mut out),
                Err(Error("a manifest must be an object".into()))
            );
            assert_eq!(out, [1, 2], "nothing is left behind");
        }
        let float_keys: BTreeMap<String, BTreeMap<u8, u8>> = [("k".into(), [(1, 1)].into())].into();
        assert!(to_struct_bytes(&float_keys).is_ok());
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            ".{0,200}".prop_map(Value::from),
        ];
        leaf.prop_recursive(6, 300, 12, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..12).prop_map(Value::from),
                prop::collection::btree_map(".{0,12}", inner, 0..12)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// An object whose entries serialize in the order given, duplicates
    /// and all, as typed structs and flattened maps do.
    #[derive(Debug, Clone)]
    enum Ordered {
        Leaf(Value),
        Object(Vec<(String, Ordered)>),
    }

    impl Serialize for Ordered {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            match self {
                Ordered::Leaf(v) => v.serialize(s),
                Ordered::Object(entries) => {
                    let mut map = s.serialize_map(Some(entries.len()))?;
                    for (k, v) in entries {
                        map.serialize_entry(k, v)?;
                    }
                    map.end()
                }
            }
        }
    }

    fn ordered() -> impl Strategy<Value = Ordered> {
        // Few keys, so that equal keys meet; values long enough that their
        // lengths take two bytes.
        let leaf = prop_oneof![
            "[a-z]{0,200}".prop_map(|s| Ordered::Leaf(Value::from(s))),
            any::<i32>().prop_map(|n| Ordered::Leaf(Value::from(n))),
        ];
        let key = prop_oneof![8 => "[a-c]{0,2}", 1 => "k{120,140}"];
        leaf.prop_recursive(4, 64, 8, move |inner| {
            prop::collection::vec((key.clone(), inner), 0..8).prop_map(Ordered::Object)
        })
    }

    proptest! {
        #[test]
        fn entries_in_any_order_encode_as_prost_encodes_them(
            entries in prop::collection::vec(("[a-c]{0,2}", ordered()), 0..8)
        ) {
            let object = Ordered::Object(entries);
            prop_assert_eq!(to_struct_bytes(&object).unwrap(), through_prost(&object));
        }

        #[test]
        fn any_json_object_encodes_as_prost_encodes_it(
            object in prop::collection::btree_map(".{0,12}", json_value(), 0..12)
        ) {
            let object: serde_json::Map<String, Value> = object.into_iter().collect();
            prop_assert_eq!(to_struct_bytes(&object).unwrap(), json_to_struct(&object).encode_to_vec());
        }
    }
}
