//! A protobuf `Resource` kept as its encoded bytes.
//!
//! A reconcile carries every observed composed resource (managedFields and
//! all) and the desired state of earlier pipeline steps. The function looks at
//! a few of them; the rest only need to travel back unchanged. Keeping them as
//! bytes makes pass-through a copy and lets the handler decode exactly the
//! resources it inspects.

use bytes::{Buf, BufMut};
use prost::encoding::{self, DecodeContext, WireType, decode_varint, encode_key, encode_varint};
use prost::{DecodeError, Message};

use crate::proto::full;

/// The encoded fields of one `apiextensions.fn.proto.v1.Resource`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RawResource {
    bytes: Vec<u8>,
}

impl RawResource {
    /// Encodes a fully built resource.
    pub fn from_full(resource: &full::Resource) -> Self {
        Self {
            bytes: resource.encode_to_vec(),
        }
    }

    /// Decodes the resource.
    pub fn decode_full(&self) -> Result<full::Resource, DecodeError> {
        full::Resource::decode(self.bytes.as_slice())
    }

    /// The encoded `resource` Struct (field 1) as a slice of these bytes,
    /// for `convert::decode_object`. None when the field is absent, appears
    /// more than once (prost would merge the parts) or the framing is bad:
    /// then `decode_full` is the way to read it.
    pub fn struct_bytes(&self) -> Option<&[u8]> {
        let mut buf = self.bytes.as_slice();
        let mut found = None;
        while !buf.is_empty() {
            let (tag, wire_type) = encoding::decode_key(&mut buf).ok()?;
            match wire_type {
                WireType::LengthDelimited => {
                    let len = usize::try_from(decode_varint(&mut buf).ok()?).ok()?;
                    if len > buf.len() {
                        return None;
                    }
                    let (field, rest) = buf.split_at(len);
                    buf = rest;
                    if tag == 1 {
                        if found.is_some() {
                            return None;
                        }
                        found = Some(field);
                    }
                }
                WireType::Varint => {
                    decode_varint(&mut buf).ok()?;
                }
                _ => return None,
            }
        }
        found
    }

    /// The encoded message, without its length prefix.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl std::fmt::Debug for RawResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.decode_full() {
            Ok(r) => r.fmt(f),
            Err(_) => write!(f, "RawResource({} undecodable bytes)", self.bytes.len()),
        }
    }
}

impl Message for RawResource {
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
        let out = &mut self.bytes;
        match wire_type {
            WireType::Varint => {
                let value = decode_varint(buf)?;
                encode_key(tag, wire_type, out);
                encode_varint(value, out);
            }
            WireType::SixtyFourBit => {
                let mut value = 0u64;
                encoding::fixed64::merge(wire_type, &mut value, buf, ctx)?;
                encode_key(tag, wire_type, out);
                out.put_u64_le(value);
            }
            WireType::ThirtyTwoBit => {
                let mut value = 0u32;
                encoding::fixed32::merge(wire_type, &mut value, buf, ctx)?;
                encode_key(tag, wire_type, out);
                out.put_u32_le(value);
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
                encode_key(tag, wire_type, out);
                encode_varint(len, out);
                let mut left = len as usize;
                out.reserve(left);
                while left > 0 {
                    let chunk = buf.chunk();
                    let n = chunk.len().min(left);
                    out.extend_from_slice(&chunk[..n]);
                    buf.advance(n);
                    left -= n;
                }
            }
            // proto3 has no groups and the protocol defines none; skipping
            // validates their nesting.
            WireType::StartGroup | WireType::EndGroup => {
                encoding::skip_field(wire_type, tag, buf, ctx)?
            }
        }
        Ok(())
    }

    fn encoded_len(&self) -> usize {
        self.bytes.len()
    }

    fn clear(&mut self) {
        self.bytes.clear();
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
    fn truncated_input_is_an_error_not_a_panic() {
        let encoded = resource().encode_to_vec();
        for cut in 1..encoded.len() {
            let _ = RawResource::decode(&encoded[..cut]);
        }
    }
}
