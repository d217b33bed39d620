//! The composers, one per XR kind.

pub(crate) mod agent_pool;
pub(crate) mod llm_inference;
pub(crate) mod model;
