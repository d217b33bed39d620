//! Steps the composers of several kinds share: resolving a Model, sizing, the weights cache, the model server and its conditions.

pub mod conditions;
pub mod model_config;
pub mod model_facts;
pub mod model_ref;
pub mod model_server;
pub mod runtime;
pub mod serving;
pub mod weights_cache;
