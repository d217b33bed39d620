//! Arbitrary bytes as a wire `RunFunctionRequest`, answered by the same core
//! the gRPC server calls. Bytes that do not decode are refused by gRPC
//! before the function runs; everything that decodes must be answered with
//! the tag echoed, and nothing may panic.
#![no_main]

use function_inference::run::run_function;
use function_inference::protocol::server::RunFunctionRequest;
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    if let Ok(req) = RunFunctionRequest::decode(data) {
        let tag = req.meta.as_ref().map(|m| m.tag.clone()).unwrap_or_default();
        let rsp = run_function(req).response;
        assert_eq!(rsp.meta.map(|m| m.tag).unwrap_or_default(), tag);
    }
});
