//! The sizing engine: from a model and a GPU type to a vLLM layout.
//!
//! Pure and synchronous: catalogs embedded at compile time, no I/O, no
//! Kubernetes types. [`size`] turns a [`SizingRequest`] into a [`Plan`] that
//! carries its own reasons, or into a [`SizingError`] that says what would
//! work. The formulas are in docs/sizing.md.
//!
//! - `gpus` and `models`: the catalogs and their forgiving name lookup.
//! - `params`: parameter counts and quantization markers read from strings.
//! - `memory`: what vLLM puts on a GPU: weights, activation peak, non-torch
//!   memory and KV cache (the formulas of docs/sizing.md).
//! - `config`: a model's `config.json` and weights index, read for sizing.
//! - `decide`: [`size`] as the sequence of decisions below, and the plan.
//! - `validate`: the ranges of the request's numbers.
//! - `model`: the model as the engine sees it (catalog or estimate).
//! - `weights`: precision, vLLM `--quantization` and `--dtype`.
//! - `context`: the context to size for, and capping it to what fits.
//! - `target`: what a layout must hold: that context, that many sequences at once.
//! - `fit`: the memory arithmetic of one layout on one device.
//! - `mig`: a MIG slice or whole GPUs.
//! - `candidates`: the layouts considered, and the smallest that holds a context.
//! - `layout`: TP x PP, requested or the smallest that holds the model.
//! - `no_fit`: the error when nothing fits, with what would.
//! - `host`: CPU, memory, /dev/shm and startup budget per replica.
//! - `text`: how numbers and lists read in reasons and errors.

mod candidates;
mod config;
mod context;
mod decide;
mod error;
mod fit;
mod gpus;
mod host;
mod layout;
mod memory;
mod mig;
mod model;
mod models;
mod no_fit;
mod params;
mod precision;
mod reasons;
mod target;
#[cfg(test)]
mod test_requests;
mod text;
mod validate;
mod weights;

use std::borrow::Cow;

pub use config::{CheckpointQuantization, ConfigError, ModelConfig, weights_index_total_bytes};
pub use error::{SizingError, TpLimits};
pub use gpus::{Gpu, MigProfile, gpu, gpu_names, gpus};
pub use memory::{Arch, GIB, VllmGeneration};
pub use models::{CatalogModel, ModelMatch, lookup as lookup_model, model, models};
pub use params::{ParamCount, count_from_id, parse_parameter_count, quantization_marker};
pub use precision::{KvCacheDtype, MigChoice, Objective, Precision};
pub use reasons::Reasons;

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
    /// vLLM `--kv-cache-dtype`: `fp8` halves the KV cache per token.
    pub kv_cache_dtype: KvCacheDtype,
    /// What the layout is chosen for: the fewest GPUs that start, the
    /// recipes' headroom (default), or room for a full batch.
    pub objective: Objective,
    /// The model's own `config.json`, parsed: its architecture exactly, for
    /// any model (wins over the catalog's).
    pub model_config: Option<ModelConfig>,
    /// The checkpoint's total bytes (`metadata.total_size` of
    /// `model.safetensors.index.json`): the exact weights.
    pub checkpoint_bytes: Option<u64>,
    /// The vLLM release the plan is for (`0.19.0`); `None` = unknown, sized
    /// with the larger activation peak of earlier releases.
    pub vllm_version: Option<String>,
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
            kv_cache_dtype: KvCacheDtype::Auto,
            objective: Objective::Balanced,
            model_config: None,
            checkpoint_bytes: None,
            vllm_version: None,
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
    /// Runtime overhead on each GPU: the activation peak plus non-torch
    /// memory.
    pub overhead_gib: f64,
    /// What one GPU (or slice) must hold: its weights, KV and overhead.
    pub per_gpu_gib: f64,
    /// What one GPU (or slice) offers: utilization x memory.
    pub gpu_capacity_gib: f64,
    /// KV cache bytes per token for the whole model (all layers and heads;
    /// sliding-window groups as vLLM pads them).
    pub kv_bytes_per_token: f64,
    /// Tokens the KV cache of one replica can hold after weights and overhead.
    pub kv_capacity_tokens: u64,
    /// Weights on one GPU (the largest pipeline stage), rotary cache included.
    pub weights_per_gpu_gib: f64,
    /// KV cache bytes per token on one GPU of the layout.
    pub kv_bytes_per_token_per_gpu: f64,
    /// The KV cache vLLM allocates on each GPU: usable memory minus weights
    /// and overhead.
    pub kv_cache_per_gpu_gib: f64,
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
    pub gpu_resource_name: Cow<'static, str>,
    /// vLLM `--dtype`: `bfloat16`, `float16` or `float32`.
    pub dtype: &'static str,
    pub weight_precision: Precision,
    /// vLLM `--quantization`, only when vLLM must quantize at load time or
    /// the caller named a method.
    pub quantization_method: Option<String>,
    pub max_model_len: u64,
    pub cpu: String,
    pub memory: String,
    pub shm_size: Option<String>,
    pub startup_probe_seconds: u32,
    /// The checkpoint as downloaded and read, in GiB: the 16-bit weights
    /// when vLLM quantizes at load time, else the weights themselves.
    pub checkpoint_gib: f64,
    pub gpu_memory_utilization: f64,
    pub parameters_b: f64,
    pub active_parameters_b: f64,
    pub attention_heads: u32,
    pub kv_heads: u32,
    pub estimate: Estimate,
    /// vLLM `--kv-cache-dtype`, `Auto` when vLLM needs no flag.
    pub kv_cache_dtype: KvCacheDtype,
    /// The objective that chose the layout.
    pub objective: Objective,
    /// True when the architecture was guessed (no catalog entry, no
    /// config.json): the reasons say what to give.
    pub architecture_guessed: bool,
    pub reasons: Reasons,
    pub warnings: Vec<String>,
}

/// vLLM's default `--max-num-seqs`: sequences one replica batches at most.
pub const MAX_NUM_SEQS: u64 = 256;

/// Full-length sequences the `throughput` objective makes room for.
pub const THROUGHPUT_SEQUENCES: u64 = 16;

/// A replica's decode rate at a batch size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throughput {
    /// Sequences decoded together.
    pub batch: u32,
    /// Tokens generated per second, all sequences together.
    pub tokens_per_second: f64,
}

/// Share of the datasheet bandwidth a decode step achieves in practice.
pub const BANDWIDTH_EFFICIENCY: f64 = 0.7;

impl Plan {
    /// The warning a plan across nodes carries: a runtime that serves one
    /// replica across nodes (a LeaderWorkerSet) answers it.
    pub fn multi_node_warning(&self) -> Option<String> {
        decide::multi_node_warning(
            self.gpu,
            self.nodes,
            self.tensor_parallel_size,
            self.pipeline_parallel_size,
        )
    }

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

    /// Aggregate decode rate of one replica serving as many sequences as its
    /// KV cache holds (at most vLLM's default `--max-num-seqs`, 256), each
    /// `avg_context` tokens long on average. Still memory-bound: a decode
    /// step reads every active weight once for the whole batch, plus each
    /// sequence's KV cache, so
    ///
    /// ```text
    /// batch  = min(256, KV capacity tokens / avg_context)
    /// step   = (active weight bytes + batch x avg_context x KV bytes per token) / (TP x 0.7 x bandwidth)
    /// tokens/s = batch / step
    /// ```
    ///
    /// With a batch of 1 this is close to [`Self::decode_tokens_per_second`].
    pub fn batched_decode(&self, avg_context: u64) -> Throughput {
        let single = self.decode_tokens_per_second();
        let weight_bytes = self.active_parameters_b * 1e9 * self.weight_precision.bytes_per_param();
        if single <= 0.0 || weight_bytes <= 0.0 {
            return Throughput {
                batch: 1,
                tokens_per_second: single.max(0.0),
            };
        }
        // Bytes per second the replica reads, from the single-sequence bound.
        let bytes_per_second = single * weight_bytes;
        let context = avg_context.max(1);
        let batch = (self.estimate.kv_capacity_tokens / context).clamp(1, MAX_NUM_SEQS);
        let kv_bytes = batch as f64 * context as f64 * self.estimate.kv_bytes_per_token.max(0.0);
        let step_seconds = (weight_bytes + kv_bytes) / bytes_per_second;
        Throughput {
            batch: batch as u32,
            tokens_per_second: batch as f64 / step_seconds,
        }
    }

    /// The `vllm serve` flags the plan needs beyond TP, PP, dtype,
    /// max-model-len and gpu-memory-utilization: `--quantization` when vLLM
    /// must quantize or was told a method, `--kv-cache-dtype fp8`.
    pub fn engine_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(q) = &self.quantization_method {
            args.extend(["--quantization".to_string(), q.clone()]);
        }
        if let Some(kv) = self.kv_cache_dtype.vllm_arg() {
            args.extend(["--kv-cache-dtype".to_string(), kv.to_string()]);
        }
        args
    }
}

/// Sizes one replica. See the module docs and docs/sizing.md.
pub fn size(req: &SizingRequest) -> Result<Plan, SizingError> {
    decide::size(req)
}

/// Checks a tensor-parallel size against the attention heads of the model
/// `req` names, with the rule [`size`] applies on every GPU type (see
/// `candidates::valid_tp`): for a Model's shardSpec, which no GPU type is chosen
/// for. Ok when the model cannot be resolved: sizing then says why.
pub fn check_tensor_parallel(req: &SizingRequest, tp: u32) -> Result<(), String> {
    let Ok((m, _)) = model::resolve_model(req) else {
        return Ok(());
    };
    let (heads, kv) = (m.arch.attention_heads, m.arch.kv_heads);
    if candidates::valid_tp(heads, kv, tp) {
        return Ok(());
    }
    let valid = candidates::valid_tps(heads, kv, u32::MAX)
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    Err(format!(
        "tensor parallel {tp} does not split the {heads} attention heads and {kv} KV heads of {}: the attention \
         heads must divide by it, and the KV heads divide by it or it by them; use {valid}",
        m.name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(model: &str, gpu: &str) -> Plan {
        size(&SizingRequest {
            model_id: model.into(),
            gpu_type: gpu.into(),
            mig: MigChoice::None,
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn batched_decode_follows_its_formula() {
        let p = plan("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB");
        let single = p.decode_tokens_per_second();
        let weights = p.active_parameters_b * 1e9 * 2.0;
        let context = 4096;
        let batch = (p.estimate.kv_capacity_tokens / context).clamp(1, MAX_NUM_SEQS);
        let step = (weights + batch as f64 * context as f64 * p.estimate.kv_bytes_per_token)
            / (single * weights);
        let t = p.batched_decode(context);
        assert_eq!(u64::from(t.batch), batch);
        assert!((t.tokens_per_second - batch as f64 / step).abs() < 1e-9);
    }

    #[test]
    fn a_batch_beats_one_sequence_and_a_longer_context_never_speeds_it_up() {
        let p = plan("meta-llama/Llama-3.1-8B-Instruct", "L4");
        let short = p.batched_decode(1024);
        let long = p.batched_decode(16384);
        assert!(short.tokens_per_second > p.decode_tokens_per_second());
        assert!(long.tokens_per_second <= short.tokens_per_second);
        assert!(short.batch >= long.batch);
        let huge = p.batched_decode(u64::MAX);
        assert_eq!(
            huge.batch, 1,
            "a context longer than the cache still decodes one sequence"
        );
    }
}
