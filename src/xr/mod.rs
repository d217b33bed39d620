//! The XR types users write: `LLMInference`, `Model` and `AgentPool` in
//! `infer.dev/v1alpha1`. Their XRDs in `package/configuration/` are generated
//! from these types (see `package`), so schema and code cannot drift.

pub mod agent_pool;
pub mod common;
pub mod llm_inference;
pub mod model;
pub mod validate;

/// API group of the XRs.
pub const GROUP: &str = "infer.dev";
/// API version of the XRs.
pub const VERSION: &str = "v1alpha1";
/// `GROUP/VERSION`.
pub const API_VERSION: &str = "infer.dev/v1alpha1";
