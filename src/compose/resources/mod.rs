//! Builders of one composed resource each, and how each kind reports readiness.

pub(crate) mod agent_config;
pub(crate) mod agent_deployment;
pub(crate) mod agent_service;
pub(crate) mod autoscaler;
pub(crate) mod config_map;
pub(crate) mod disruption_budget;
pub(crate) mod endpoint_picker;
pub(crate) mod env_vars;
pub(crate) mod inference_route;
pub(crate) mod ingress;
pub(crate) mod labels;
pub(crate) mod leader_worker_set;
pub(crate) mod model_server_autoscaler;
pub(crate) mod placement;
pub(crate) mod pod_monitor;
pub(crate) mod pull_secrets;
pub(crate) mod replacement;
pub(crate) mod spread;
pub(crate) mod vllm_deployment;
pub(crate) mod vllm_pod;
pub(crate) mod vllm_runtime;
pub(crate) mod vllm_service;
pub(crate) mod weights_volume;
