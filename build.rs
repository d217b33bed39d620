//! Compiles `proto/` with protox (pure Rust), so building needs no system `protoc`.
//!
//! The one proto file is turned into two Rust modules:
//! - `full`: every message decoded, for clients, `render` and tests;
//! - `wire`: the same wire format, but every `Resource` and every
//!   `google.protobuf.Struct` (the step input, the pipeline context) kept as
//!   its encoded bytes (`crate::protocol::raw_message`). The server decodes only what
//!   it inspects and writes the rest back byte for byte.

use std::{env, fs, path::PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/fn/v1/run_function.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    let out = PathBuf::from(env::var("OUT_DIR")?);

    let full = out.join("full");
    fs::create_dir_all(&full)?;
    tonic_prost_build::configure()
        .out_dir(&full)
        .btree_map(".")
        .build_server(false)
        .compile_fds(fds.clone())?;

    let wire = out.join("wire");
    fs::create_dir_all(&wire)?;
    // The request's messages can be hashed, as the server's memo does
    // (without meta) to find an earlier answer. prost derives it already
    // for those without maps (RequestMeta), and a path covers the types
    // nested in it (Credentials' oneof).
    let mut wire_config = tonic_prost_build::configure();
    for message in [
        "RunFunctionRequest",
        "State",
        "Resources",
        "Credentials",
        "CredentialData",
        "Schema",
    ] {
        wire_config = wire_config.type_attribute(
            format!(".apiextensions.fn.proto.v1.{message}"),
            "#[derive(Hash)]",
        );
    }
    wire_config
        .out_dir(&wire)
        .btree_map(".")
        .build_client(false)
        .extern_path(
            ".apiextensions.fn.proto.v1.Resource",
            "crate::protocol::raw_message::RawResource",
        )
        .extern_path(
            ".google.protobuf.Struct",
            "crate::protocol::raw_message::RawStruct",
        )
        .compile_fds(fds)?;
    Ok(())
}
