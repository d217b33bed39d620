//! Builders of one composed resource each, and how each kind reports readiness.

pub mod agent_config;
pub mod agent_deployment;
pub mod agent_service;
pub mod autoscaler;
pub mod config_map;
pub mod disruption_budget;
pub mod ingress;
pub mod kube;
pub mod leader_worker_set;
pub mod placement;
pub mod vllm_deployment;
pub mod vllm_pod;
pub mod vllm_runtime;
pub mod vllm_service;
pub mod weights_volume;
