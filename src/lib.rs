//! function-inference: a Crossplane composition function that sizes vLLM
//! runtimes from the model and the GPU, and composes them with the agents and
//! configuration around them.
//!
//! The core is pure: `sizing` decides, the composers turn a typed XR spec and a
//! sizing plan into manifests, and `function` runs one `RunFunction` call.
//! The gRPC server and the CLI commands are thin adapters over that core.

pub mod cli;
pub mod compose;
mod credential;
mod de;
mod input;
pub mod manifests;
mod names;
pub mod package;
pub mod protocol;
pub mod request;
pub mod response;
pub mod run;
pub mod schema;
pub mod server;
pub mod sizing;
mod units;
mod xr;
