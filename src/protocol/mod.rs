//! Crossplane's function protocol (`apiextensions.fn.proto.v1`), generated
//! from `proto/`, and the machinery that makes it cheap: messages kept as
//! bytes until something reads them, and `Struct`s read and written without
//! intermediate trees. Nothing outside this module needs a field number.

pub mod encode_once;
pub mod raw_message;
pub mod struct_deserializer;
pub mod struct_json;
pub mod struct_serializer;

/// Every message fully decoded: what clients, `render` and tests build and read.
pub mod full {
    #![allow(clippy::all, missing_docs)]
    include!(concat!(
        env!("OUT_DIR"),
        "/full/apiextensions.r#fn.proto.v1.rs"
    ));
}

/// The same wire format with each `Resource` and `Struct` left encoded (see
/// `crate::protocol::raw_message`), so what the function does not inspect costs a
/// copy, not a parse.
pub mod wire {
    #![allow(clippy::all, missing_docs)]
    include!(concat!(
        env!("OUT_DIR"),
        "/wire/apiextensions.r#fn.proto.v1.rs"
    ));
}

use prost::Message;

/// Re-reads a full request as the server's wire view (tests, `render`, benchmarks).
pub fn to_wire(req: &full::RunFunctionRequest) -> wire::RunFunctionRequest {
    wire::RunFunctionRequest::decode(req.encode_to_vec().as_slice())
        .expect("a full request always re-decodes as its wire view")
}

/// Decodes a wire response fully.
pub fn from_wire(
    rsp: &wire::RunFunctionResponse,
) -> Result<full::RunFunctionResponse, prost::DecodeError> {
    full::RunFunctionResponse::decode(rsp.encode_to_vec().as_slice())
}
