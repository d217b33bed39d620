//! A protobuf message kept as its encoded bytes.
//!
//! A reconcile carries every observed composed resource (managedFields and
//! all), the desired state of earlier pipeline steps, the step input and the
//! pipeline context. The function looks at a few of those; the rest only
//! need to travel back unchanged. Keeping them as bytes makes pass-through a
//! copy and lets the handler decode exactly what it inspects. The bytes are
//! reference counted, so handing a memoized resource to a response is a
//! counter increment, not a copy.

use std::marker::PhantomData;

use bytes::{Buf, BufMut, Bytes};
use prost::encoding::{
    self, DecodeContext, WireType, decode_varint, encode_key, encode_varint, encoded_len_varint,
    key_len,
};
use prost::{DecodeError, Message};

use crate::protocol::full;

/// The encoded fields of one message of type `M`, as read or as built.
pub struct RawMessage<M> {
    bytes: Bytes,
    message: PhantomData<fn() -> M>,
}

/// An `apiextensions.fn.proto.v1.Resource`, left encoded.
pub type RawResource = RawMessage<full::Resource>;

/// A `google.protobuf.Struct` (the step input, the pipeline context), left encoded.
pub type RawStruct = RawMessage<prost_types::Struct>;

impl<M> RawMessage<M> {
    /// The encoded message, without its length prefix.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl<M: Message + Default> RawMessage<M> {
    /// Encodes a fully built message.
    pub fn from_full(message: &M) -> Self {
        Self::from(Bytes::from(message.encode_to_vec()))
    }

    /// Decodes the message.
    pub fn decode_full(&self) -> Result<M, DecodeError> {
        M::decode(self.as_bytes())
    }
}

impl<M> From<Bytes> for RawMessage<M> {
    /// Wraps bytes that are already an encoded `M`.
    fn from(bytes: Bytes) -> Self {
        Self {
            bytes,
            message: PhantomData,
        }
    }
}

/// One top-level field of an encoded message: its tag, its whole encoding
/// (key included) and, for a length-delimited field, its payload.
struct Field<'a> {
    tag: u32,
    encoded: &'a [u8],
    payload: Option<&'a [u8]>,
}

/// The top-level fields of an encoded message, in order, each passed to
/// `each`. None when the framing is bad or a field is neither a varint nor
/// length-delimited (a `Resource` has no other kind).
fn for_each_field<'a>(mut buf: &'a [u8], mut each: impl FnMut(Field<'a>)) -> Option<()> {
    while !buf.is_empty() {
        let start = buf;
        let (tag, wire_type) = encoding::decode_key(&mut buf).ok()?;
        let payload = match wire_type {
            WireType::LengthDelimited => {
                let len = usize::try_from(decode_varint(&mut buf).ok()?).ok()?;
                if len > buf.len() {
                    return None;
                }
                let (field, rest) = buf.split_at(len);
                buf = rest;
                Some(field)
            }
            WireType::Varint => {
                decode_varint(&mut buf).ok()?;
                None
            }
            _ => return None,
        };
        each(Field {
            tag,
            encoded: &start[..start.len() - buf.len()],
            payload,
        });
    }
    Some(())
}

impl RawResource {
    /// The encoded `resource` Struct (field 1) as a slice of these bytes,
    /// for `convert::decode_object`. None when the field is absent, appears
    /// more than once (prost would merge the parts) or the framing is bad:
    /// then `decode_full` is the way to read it.
    pub fn struct_bytes(&self) -> Option<&[u8]> {
        let (mut found, mut twice) = (None, false);
        for_each_field(self.as_bytes(), |field| {
            if let (1, Some(payload)) = (field.tag, field.payload) {
                twice |= found.replace(payload).is_some();
            }
        })?;
        if twice { None } else { found }
    }

    /// The `resource` Struct (field 1) and the other fields, each still
    /// encoded: the parts of a resource the function passes through without
    /// reading all of it. A Struct given in several parts is concatenated,
    /// which is how protobuf merges it. None when the framing is bad.
    pub fn parts(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let (mut object, mut rest) = (Vec::new(), Vec::new());
        for_each_field(self.as_bytes(), |field| match (field.tag, field.payload) {
            (1, Some(payload)) => object.extend_from_slice(payload),
            _ => rest.extend_from_slice(field.encoded),
        })?;
        Some((object, rest))
    }
}

/// What is wrong with a message prost could not decode, without the path
/// of nested fields prost prefixes (as long as the nesting, which is often
/// the problem): "recursion limit reached", "buffer underflow".
pub fn decode_problem(e: &DecodeError) -> String {
    let text = e.to_string();
    match text.rsplit_once(": ") {
        Some((_, problem)) => problem.to_string(),
        None => text,
    }
}

// Written out rather than derived: a derive would require `M` itself to be
// Clone, Default and so on, which the marker does not need.
impl<M> Clone for RawMessage<M> {
    fn clone(&self) -> Self {
        Self::from(self.bytes.clone())
    }
}

impl<M> Default for RawMessage<M> {
    fn default() -> Self {
        Self::from(Bytes::new())
    }
}

impl<M> PartialEq for RawMessage<M> {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl<M> Eq for RawMessage<M> {}

impl<M> std::hash::Hash for RawMessage<M> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.bytes.hash(state);
    }
}

impl<M: Message + Default + std::fmt::Debug> std::fmt::Debug for RawMessage<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.decode_full() {
            Ok(m) => std::fmt::Debug::fmt(&m, f),
            Err(_) => write!(f, "RawMessage({} undecodable bytes)", self.bytes.len()),
        }
    }
}

impl<M: Message + Default + std::fmt::Debug> Message for RawMessage<M> {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        buf.put_slice(&self.bytes);
    }

    /// Re-emits each field exactly as read. prost calls this once per field of
    /// the nested message, with `buf` limited to the message's bytes; prost's
    /// own field decoders do the bounds checks.
    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        // The bytes read so far become a Vec again without a copy (they are
        // not shared while decoding), so a message of many fields (a Struct
        // with many keys) is assembled in amortized linear time. A first
        // field is sized exactly and becomes `Bytes` without reallocating.
        let mut field = |extra: usize| {
            let mut out = Vec::from(std::mem::take(&mut self.bytes));
            out.reserve(key_len(tag) + extra);
            encode_key(tag, wire_type, &mut out);
            out
        };
        let out = match wire_type {
            WireType::Varint => {
                let value = decode_varint(buf)?;
                let mut out = field(encoded_len_varint(value));
                encode_varint(value, &mut out);
                out
            }
            WireType::SixtyFourBit => {
                let mut value = 0u64;
                encoding::fixed64::merge(wire_type, &mut value, buf, ctx)?;
                let mut out = field(8);
                out.put_u64_le(value);
                out
            }
            WireType::ThirtyTwoBit => {
                let mut value = 0u32;
                encoding::fixed32::merge(wire_type, &mut value, buf, ctx)?;
                let mut out = field(4);
                out.put_u32_le(value);
                out
            }
            // Copied straight from the request's buffer: this is most of a
            // request's bytes, so no intermediate Vec.
            WireType::LengthDelimited => {
                let len = decode_varint(buf)?;
                if len > buf.remaining() as u64 {
                    // prost's own error for a field longer than its message
                    // (its constructor is not public): a 1-byte field with no bytes.
                    let mut short: &[u8] = &[1];
                    return encoding::bytes::merge(wire_type, &mut Vec::new(), &mut short, ctx);
                }
                let mut left = len as usize;
                let mut out = field(encoded_len_varint(len) + left);
                encode_varint(len, &mut out);
                while left > 0 {
                    let chunk = buf.chunk();
                    let n = chunk.len().min(left);
                    out.extend_from_slice(&chunk[..n]);
                    buf.advance(n);
                    left -= n;
                }
                out
            }
            // proto3 has no groups and the protocol defines none; skipping
            // validates their nesting.
            WireType::StartGroup | WireType::EndGroup => {
                return encoding::skip_field(wire_type, tag, buf, ctx);
            }
        };
        self.bytes = Bytes::from(out);
        Ok(())
    }

    fn encoded_len(&self) -> usize {
        self.bytes.len()
    }

    fn clear(&mut self) {
        self.bytes = Bytes::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_types::{Struct, Value, value::Kind};

    fn resource() -> full::Resource {
        let mut fields = std::collections::BTreeMap::new();
        fields.insert(
            "kind".to_string(),
            Value {
                kind: Some(Kind::StringValue("ConfigMap".into())),
            },
        );
        fields.insert(
            "n".to_string(),
            Value {
                kind: Some(Kind::NumberValue(1.5)),
            },
        );
        full::Resource {
            resource: Some(Struct { fields }),
            connection_details: [("password".to_string(), b"s3cret".to_vec())].into(),
            ready: full::Ready::True as i32,
        }
    }

    #[test]
    fn decoding_and_re_encoding_keeps_every_byte() {
        let r = resource();
        let encoded = r.encode_to_vec();
        let raw = RawResource::decode(encoded.as_slice()).unwrap();
        assert_eq!(raw.encode_to_vec(), encoded);
        assert_eq!(raw.decode_full().unwrap(), r);
    }

    #[test]
    fn struct_bytes_is_the_resource_field() {
        let r = resource();
        let raw = RawResource::decode(r.encode_to_vec().as_slice()).unwrap();
        let bytes = raw.struct_bytes().expect("the resource field");
        assert_eq!(Struct::decode(bytes).unwrap(), r.resource.unwrap());
        assert_eq!(RawResource::default().struct_bytes(), None);
    }

    #[test]
    fn a_struct_of_many_keys_keeps_every_byte() {
        // Each key is a field of its own, so this exercises reassembly.
        let fields = (0..300)
            .map(|i| {
                let v = Value {
                    kind: Some(Kind::StringValue(format!("value-{i}"))),
                };
                (format!("key-{i:03}"), v)
            })
            .collect();
        let s = Struct { fields };
        let encoded = s.encode_to_vec();
        let raw = RawStruct::decode(encoded.as_slice()).unwrap();
        assert_eq!(raw.as_bytes(), encoded.as_slice());
        assert_eq!(raw.decode_full().unwrap(), s);
    }

    #[test]
    fn a_clone_shares_the_bytes() {
        let raw = RawResource::from_full(&resource());
        assert_eq!(raw.clone().as_bytes().as_ptr(), raw.as_bytes().as_ptr());
        assert_eq!(raw.clone(), raw);
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        let encoded = resource().encode_to_vec();
        for cut in 1..encoded.len() {
            let _ = RawResource::decode(&encoded[..cut]);
        }
    }
}
