//! The XR types users write: `LLMInference`, `Model` and `AgentPool` in
//! `infer.dev/v1alpha1`. Their XRDs in `package/configuration/` are generated
//! from these types (see `package`), so schema and code cannot drift.

pub(crate) mod agent_pool;
pub(crate) mod llm_inference;
pub(crate) mod model;
pub(crate) mod model_server_autoscaling;
pub(crate) mod plan_status;
pub(crate) mod shared_fields;
pub(crate) mod sizing_vocabulary;
pub(crate) mod validate;

/// API group of the XRs.
pub(crate) const GROUP: &str = "infer.dev";
/// API version of the XRs.
pub(crate) const VERSION: &str = "v1alpha1";
/// `GROUP/VERSION`.
pub(crate) const API_VERSION: &str = "infer.dev/v1alpha1";
