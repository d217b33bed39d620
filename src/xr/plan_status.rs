//! A sizing plan as an XR's status reports it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The memory estimate behind a sizing decision, in GiB.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EstimateStatus {
    /// Model weights, all GPUs of one replica together.
    #[serde(rename = "weightsGiB")]
    pub(crate) weights_gib: f64,
    /// KV cache for the context length and concurrency target.
    #[serde(rename = "kvCacheGiB")]
    pub(crate) kv_cache_gib: f64,
    /// Activations, CUDA graphs and runtime overhead.
    #[serde(rename = "overheadGiB")]
    pub(crate) overhead_gib: f64,
    /// What each GPU must hold.
    #[serde(rename = "perGpuGiB")]
    pub(crate) per_gpu_gib: f64,
    /// What each GPU (or MIG slice) offers vLLM.
    #[serde(rename = "gpuCapacityGiB")]
    pub(crate) gpu_capacity_gib: f64,
}

impl From<&crate::sizing::Estimate> for EstimateStatus {
    fn from(e: &crate::sizing::Estimate) -> Self {
        Self {
            weights_gib: round2(e.weights_gib),
            kv_cache_gib: round2(e.kv_cache_gib),
            overhead_gib: round2(e.overhead_gib),
            per_gpu_gib: round2(e.per_gpu_gib),
            gpu_capacity_gib: round2(e.gpu_capacity_gib),
        }
    }
}

/// Rounded to 0.01, as reported figures (GiB, billions) are.
pub(crate) fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// A serving plan as reported in an XR's status.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanStatus {
    /// The GPU type of the catalog the plan is for.
    pub(crate) gpu_type: String,
    /// GPUs per replica (tensorParallelSize x pipelineParallelSize).
    pub(crate) gpu_count: u32,
    /// vLLM's --tensor-parallel-size: GPUs that split each layer.
    pub(crate) tensor_parallel_size: u32,
    /// vLLM's --pipeline-parallel-size: groups of layers, one a node when the layout spans nodes.
    pub(crate) pipeline_parallel_size: u32,
    /// The MIG slice each replica gets instead of a whole GPU (e.g. 3g.40gb).
    pub(crate) mig_profile: Option<String>,
    /// Extended resource requested per GPU (nvidia.com/gpu, nvidia.com/mig-..., amd.com/gpu).
    pub(crate) gpu_resource_name: String,
    /// vLLM's --dtype: the precision it computes in.
    pub(crate) dtype: String,
    /// Weight precision (bf16, fp8, int4, ...), as `size` reports it.
    pub(crate) quantization: String,
    /// vLLM's --quantization, when vLLM quantizes at load time.
    pub(crate) quantization_method: Option<String>,
    /// vLLM's --max-model-len: the longest prompt and output together, in tokens.
    pub(crate) max_model_len: u64,
    /// CPU of one replica: at least 2 a GPU.
    pub(crate) cpu: String,
    /// Host memory of one replica, enough to load the weights; its pods also get /dev/shm.
    pub(crate) memory: String,
    /// Size of the in-memory /dev/shm that tensor and pipeline parallel ranks share.
    pub(crate) shm_size: Option<String>,
    pub estimate: EstimateStatus,
    /// The objective that chose the layout: minimal, balanced or throughput.
    pub(crate) objective: String,
    /// vLLM's --kv-cache-dtype: auto or fp8.
    pub(crate) kv_cache_dtype: String,
    /// True when the model's architecture was guessed (not in the catalog, no config.json): give the Model's config.
    pub(crate) architecture_guessed: bool,
    /// Why the plan is what it is, in short sentences with the numbers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) reasons: Vec<String>,
    /// What deserves attention although the plan serves (also a WARNING event when it appears).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) warnings: Vec<String>,
}

impl From<crate::sizing::Plan> for PlanStatus {
    fn from(plan: crate::sizing::Plan) -> Self {
        Self {
            gpu_type: plan.gpu.name.to_string(),
            gpu_count: plan.gpu_count,
            tensor_parallel_size: plan.tensor_parallel_size,
            pipeline_parallel_size: plan.pipeline_parallel_size,
            mig_profile: plan.mig_profile,
            gpu_resource_name: plan.gpu_resource_name,
            dtype: plan.dtype.as_str().into(),
            quantization: plan.weight_precision.as_str().into(),
            quantization_method: plan.quantization_method,
            max_model_len: plan.max_model_len,
            cpu: plan.cpu,
            memory: plan.memory,
            shm_size: plan.shm_size,
            estimate: EstimateStatus::from(&plan.estimate),
            objective: plan.objective.as_str().into(),
            kv_cache_dtype: plan.kv_cache_dtype.as_str().into(),
            architecture_guessed: plan.architecture_guessed,
            reasons: plan.reasons,
            warnings: plan.warnings,
        }
    }
}

impl From<&crate::sizing::Plan> for PlanStatus {
    fn from(plan: &crate::sizing::Plan) -> Self {
        Self::from(plan.clone())
    }
}
