//! function-inference: a Crossplane composition function that sizes vLLM
//! runtimes from the model and the GPU, and composes them with the agents and
//! configuration around them.
//!
//! The core is pure: `sizing` decides, the composers turn a typed XR spec and a
//! sizing plan into manifests, and `function` runs one `RunFunction` call.
//! The gRPC server and the CLI commands are thin adapters over that core.

pub mod cli;
pub mod compose;
pub mod credential;
pub mod de;
pub mod function;
pub mod input;
pub mod manifests;
pub mod outcome;
pub mod package;
pub mod protocol;
pub mod redact;
pub mod schema;
pub mod server;
pub mod sizing;
pub mod units;
pub mod xr;
