//! Compiles `proto/` with protox (pure Rust), so building needs no system `protoc`.
//!
//! - `fnv1`: Crossplane's function protocol (`proto/fn/v1`), every message
//!   decoded, as the SDKs have it: what clients, `render` and tests build.
//! - `server`: the same protocol with every `google.protobuf.Struct` read as
//!   `view::Struct` (`proto/view`), whose fields stay encoded until the
//!   function reads them, so that what it passes through goes back as it
//!   came and a request decodes however deep its objects nest.

use std::{env, fs, path::PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protocol = "proto/fn/v1/run_function.proto";
    let view = "proto/view/view.proto";
    println!("cargo:rerun-if-changed={protocol}");
    println!("cargo:rerun-if-changed={view}");
    let out = PathBuf::from(env::var("OUT_DIR")?);
    let generate = |dir: &str| -> Result<PathBuf, std::io::Error> {
        let path = out.join(dir);
        fs::create_dir_all(&path)?;
        Ok(path)
    };

    let fds = protox::compile([protocol], ["proto"])?;
    tonic_prost_build::configure()
        .out_dir(generate("fnv1")?)
        .btree_map(".")
        .build_server(false)
        .compile_fds(fds.clone())?;
    tonic_prost_build::configure()
        .out_dir(generate("server")?)
        .btree_map(".")
        .build_client(false)
        .extern_path(".google.protobuf.Struct", "crate::protocol::view::Struct")
        .compile_fds(fds)?;

    prost_build::Config::new()
        .out_dir(generate("view")?)
        .btree_map(["."])
        .compile_fds(protox::compile([view], ["proto"])?)?;
    Ok(())
}
