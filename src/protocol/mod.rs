//! Crossplane's function protocol (`apiextensions.fn.proto.v1`), generated
//! from `proto/` by prost, and the conversion of its `Struct`s to and from
//! JSON ([`resource`]). Nothing outside this module needs a field number.

pub mod resource;

/// The protocol as the SDKs have it, every message decoded: what clients,
/// `render` and tests build and read.
pub mod fnv1 {
    #![allow(clippy::all, missing_docs)]
    include!(concat!(
        env!("OUT_DIR"),
        "/fnv1/apiextensions.r#fn.proto.v1.rs"
    ));
}

/// The protocol as the server reads it: every `google.protobuf.Struct` is a
/// [`view::Struct`], whose fields stay encoded until read (see `proto/view`).
pub mod server {
    #![allow(clippy::all, missing_docs)]
    include!(concat!(
        env!("OUT_DIR"),
        "/server/apiextensions.r#fn.proto.v1.rs"
    ));
}

/// Wire-compatible views of `google.protobuf.Struct` (see `proto/view`).
pub mod view {
    #![allow(clippy::all, missing_docs)]
    include!(concat!(env!("OUT_DIR"), "/view/function_inference.view.rs"));
}

use prost::Message;

/// A request as the server reads it (for `render`, tests and benchmarks,
/// which build the SDK's message).
pub fn to_server(req: &fnv1::RunFunctionRequest) -> server::RunFunctionRequest {
    server::RunFunctionRequest::decode(req.encode_to_vec().as_slice())
        .expect("the server's view reads every request the SDK's types encode")
}

/// A response the server wrote, as the SDK's message.
pub fn from_server(
    rsp: &server::RunFunctionResponse,
) -> Result<fnv1::RunFunctionResponse, prost::DecodeError> {
    fnv1::RunFunctionResponse::decode(rsp.encode_to_vec().as_slice())
}
