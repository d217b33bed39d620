//! Steps the composers of several kinds share: resolving a Model, sizing, the weights cache, the model server and its conditions.

pub(crate) mod autoscaling;
pub(crate) mod conditions;
pub(crate) mod extra_args;
pub(crate) mod hf_access;
pub(crate) mod inference_routing;
pub(crate) mod model_config;
pub(crate) mod model_facts;
pub(crate) mod model_ref;
pub(crate) mod model_server;
pub(crate) mod remote_code;
pub(crate) mod replaced_objects;
pub(crate) mod routing_condition;
pub(crate) mod runtime;
pub(crate) mod scaling_condition;
pub(crate) mod served_model;
pub(crate) mod serving;
pub(crate) mod sizing;
pub(crate) mod tool_calling;
pub(crate) mod weights_cache;
