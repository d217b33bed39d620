//! function-inference: a Crossplane composition function that sizes vLLM
//! runtimes from the model and the GPU, and composes them with the agents and
//! configuration around them.
//!
//! # Layout
//!
//! A call enters at the edges and goes down, never up:
//!
//! - **Entry points.** `main.rs` parses the command line (`cli`): with no
//!   subcommand it runs the gRPC server (`server`: Crossplane's
//!   `FunctionRunnerService`, TLS, limits, metrics); `render` and `size` are
//!   the CLI's adapters. Server and `render` both call [`run::run_function`].
//! - **One call.** `run` is one `RunFunction` call with no I/O: `response::to`
//!   starts the response from the request, `request` reads the XR, the
//!   observed and required resources and the step input (`input`), `run`
//!   dispatches on the XR's kind to a composer and writes what it returns;
//!   `served_kinds` first asks whether the cluster serves each custom kind
//!   composed.
//!   `protocol` holds the generated protobuf types and the `Struct` <-> JSON
//!   conversion; nothing else sees a field number.
//! - **What users write.** `xr` holds the XR types (`LLMInference`, `Model`,
//!   `AgentPool`) their XRDs are generated from (`schema`, `package`); `de`
//!   turns serde's errors into messages naming the field and what is valid.
//! - **Composers.** `compose::kinds` has one composer per kind, made of
//!   named steps; steps several kinds share (resolving a Model, sizing, the
//!   model server, the weights cache, conditions) are in `compose::steps`;
//!   each composed object is built by one function in `compose::resources`,
//!   from k8s-openapi types or the typed custom resources of `manifests`.
//!   `compose::composition` is what a composer returns; `compose::rollout`
//!   reads readiness from what is observed, `compose::pod_problem` why the
//!   pods do not run.
//! - **Sizing.** `sizing` is the pure engine: catalogs (`sizing/data/`) and
//!   decisions, each plan with its reasons. It knows nothing of Kubernetes.
//! - **Rules used everywhere.** `names` (every Kubernetes name rule),
//!   `units` (quantities and durations), `credential` (what counts as a
//!   credential), `quote` (a user's value in a message), `yaml` (YAML that
//!   Kubernetes' YAML 1.1 readers read as written).
//!
//! Where new things go: a new kind is a type in `xr`, a composer in
//! `compose::kinds` and a line in `run`'s dispatch; a new composed object is
//! a function in `compose::resources` (and a typed manifest in `manifests` if
//! it is a custom resource); a new sizing decision is a module of `sizing`
//! called from `sizing::decide`.

pub mod cli;
pub mod compose;
mod credential;
mod de;
mod input;
pub mod manifests;
mod names;
pub mod package;
pub mod protocol;
mod quote;
pub mod request;
pub mod response;
pub mod run;
pub mod schema;
mod served_kinds;
pub mod server;
pub mod sizing;
mod units;
mod xr;
pub mod yaml;
