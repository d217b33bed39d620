//! The composers, one per XR kind.

pub mod agent_pool;
pub mod llm_inference;
pub mod model;
