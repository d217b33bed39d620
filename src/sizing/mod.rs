//! The sizing engine: from a model and a GPU type to a vLLM layout.
//!
//! Pure and synchronous: catalogs embedded at compile time, no I/O, no
//! Kubernetes types. [`size`] turns a [`SizingRequest`] into a [`Plan`] that
//! carries its own reasons, or into a [`SizingError`] that says what would
//! work. The formulas are in the README (Sizing rules).
//!
//! - `gpus` and `models`: the catalogs and their forgiving name lookup.
//! - `params`: parameter counts and quantization markers read from strings.
//! - `memory`: weights, KV cache and overhead per GPU.
//! - `decide`: precision, layout (TP, PP, MIG), context length, reasons.
//! - `host`: CPU, memory, /dev/shm and startup budget per replica.

mod decide;
mod error;
mod gpus;
mod host;
mod memory;
mod models;
mod params;
mod precision;

pub use error::SizingError;
pub use gpus::{Gpu, MigProfile, gpu, gpu_names, gpus};
pub use memory::{Arch, GIB};
pub use models::{ModelMatch, ModelSpec, lookup as lookup_model, model, models};
pub use params::{ParamCount, count_from_id, parse_parameter_count, quantization_marker};
pub use precision::{MigChoice, Precision};

/// `gpu-memory-utilization` the engine pins when the caller says nothing:
/// vLLM's long-standing default (newer vLLM uses 0.92).
pub const DEFAULT_GPU_MEMORY_UTILIZATION: f64 = 0.9;

/// What to size.
#[derive(Debug, Clone, PartialEq)]
pub struct SizingRequest {
    pub model_id: String,
    pub gpu_type: String,
    /// Weight precision; `None` = from the id's quantization marker, else the
    /// checkpoint's dtype.
    pub quantization: Option<Precision>,
    /// vLLM `--quantization` method to use verbatim; `None` = derived.
    pub quantization_method: Option<String>,
    pub max_model_len: Option<u64>,
    /// `70B`, `8x7B`, `1.5T`; wins over the catalog and the id.
    pub parameter_count: Option<String>,
    /// GPUs per replica.
    pub gpu_count: Option<u32>,
    pub tensor_parallel: Option<u32>,
    pub pipeline_parallel: Option<u32>,
    pub mig: MigChoice,
    pub gpu_memory_utilization: f64,
    /// Full-length sequences the KV cache must hold at once; `None` = 1, the
    /// least vLLM starts with.
    pub concurrency: Option<u32>,
}

impl Default for SizingRequest {
    fn default() -> Self {
        SizingRequest {
            model_id: String::new(),
            gpu_type: String::new(),
            quantization: None,
            quantization_method: None,
            max_model_len: None,
            parameter_count: None,
            gpu_count: None,
            tensor_parallel: None,
            pipeline_parallel: None,
            mig: MigChoice::Auto,
            gpu_memory_utilization: DEFAULT_GPU_MEMORY_UTILIZATION,
            concurrency: None,
        }
    }
}

/// The memory arithmetic behind a plan, in GiB.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// All weights of one replica.
    pub weights_gib: f64,
    /// KV cache for `maxModelLen x concurrency` tokens, summed over the
    /// replica's GPUs (MLA caches are counted on every TP rank).
    pub kv_cache_gib: f64,
    /// Runtime overhead on each GPU.
    pub overhead_gib: f64,
    /// What one GPU (or slice) must hold: its weights, KV and overhead.
    pub per_gpu_gib: f64,
    /// What one GPU (or slice) offers: utilization x memory.
    pub gpu_capacity_gib: f64,
    /// KV cache bytes per token for the whole model (all layers and heads).
    pub kv_bytes_per_token: f64,
    /// Tokens the KV cache of one replica can hold after weights and overhead.
    pub kv_capacity_tokens: u64,
}

/// A sized vLLM deployment for one replica, with its reasons.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub model_id: String,
    /// The catalog entry used, when one matched.
    pub catalog_model: Option<String>,
    pub gpu: &'static Gpu,
    /// GPUs (or MIG slices) of one replica: TP x PP.
    pub gpu_count: u32,
    pub tensor_parallel_size: u32,
    pub pipeline_parallel_size: u32,
    pub nodes: u32,
    pub mig_profile: Option<String>,
    /// `nvidia.com/gpu`, `nvidia.com/mig-1g.10gb` or `amd.com/gpu`.
    pub gpu_resource_name: String,
    /// vLLM `--dtype`: `bfloat16`, `float16` or `float32`.
    pub dtype: String,
    pub weight_precision: Precision,
    /// vLLM `--quantization`, only when vLLM must quantize at load time or
    /// the caller named a method.
    pub quantization: Option<String>,
    pub max_model_len: u64,
    pub cpu: String,
    pub memory: String,
    pub shm_size: Option<String>,
    pub startup_probe_seconds: u32,
    pub gpu_memory_utilization: f64,
    pub parameters_b: f64,
    pub active_parameters_b: f64,
    pub attention_heads: u32,
    pub kv_heads: u32,
    pub estimate: Estimate,
    pub reasons: Vec<String>,
    pub warnings: Vec<String>,
}

/// Share of the datasheet bandwidth a decode step achieves in practice.
pub const BANDWIDTH_EFFICIENCY: f64 = 0.7;

impl Plan {
    /// Single-sequence decode rate of one replica in tokens per second, the
    /// memory-bandwidth bound: each generated token reads every active weight
    /// once, and the TP ranks read their shards in parallel.
    ///
    /// ```text
    /// tokens/s = 0.7 x TP x bandwidth (B/s) / (active parameters x bytes per parameter)
    /// ```
    ///
    /// Pipeline stages run one after another for a single sequence, so PP
    /// does not add to it; a MIG slice gets its share of the bandwidth
    /// (slice GB / GPU GB). Batching raises the aggregate rate well above this
    /// while the step stays memory-bound.
    pub fn decode_tokens_per_second(&self) -> f64 {
        let mut bandwidth = self.gpu.bandwidth_gbps * 1e9;
        if let Some(p) = self
            .mig_profile
            .as_deref()
            .and_then(|n| self.gpu.mig_profile(n))
        {
            bandwidth *= f64::from(p.memory_gb) / self.gpu.nominal_gb;
        }
        let bytes = self.active_parameters_b * 1e9 * self.weight_precision.bytes_per_param();
        if bytes <= 0.0 {
            return 0.0;
        }
        BANDWIDTH_EFFICIENCY * f64::from(self.tensor_parallel_size) * bandwidth / bytes
    }

    /// True when one replica spans more than one node.
    pub fn is_multi_node(&self) -> bool {
        self.nodes > 1
    }
}

/// Sizes one replica. See the module docs and the README (Sizing rules).
pub fn size(req: &SizingRequest) -> Result<Plan, SizingError> {
    decide::size(req)
}
