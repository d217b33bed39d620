//! Typed manifests for the custom resources function-inference composes.
//!
//! Kubernetes' own kinds come from k8s-openapi; the CRDs we compose have
//! no published Rust types, so they are written here by hand from the CRD
//! files kept in `tests/data/crds/`. Tests serialize fully populated values
//! and validate them against those CRDs' schemas made strict (unknown fields
//! rejected, as the API server would prune them), so a typo in a field name
//! fails a test instead of silently vanishing in a cluster.
//!
//! Conventions shared by every type here:
//! - every optional field is skipped when unset, so the composer's output
//!   carries only what it decided, and the operator's defaults apply to the
//!   rest;
//! - unknown fields are accepted when reading (observed resources may come
//!   from a newer operator) and never produced when writing;
//! - fields the CRD types as strings (quantities, `gpuMemoryUtilization`)
//!   are `String`s here too.

pub mod http_route;
pub mod inference_pool;
pub mod keda;
pub mod leader_worker_set;
pub mod pod_monitor;
pub mod provider_kubernetes;
pub mod vllm_runtime;
