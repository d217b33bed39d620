//! What the engine is asked ([`SizingRequest`]) and what it answers
//! ([`Plan`]): a layout with the memory arithmetic and the reasons behind it.

use super::config::ModelConfig;
use super::gpus::Gpu;
use super::memory::{Arch, Release};
use super::precision::{
    ComputeDtype, KvCacheDtype, MigChoice, MigStrategy, Objective, WeightPrecision,
};
use super::text::hundredths;

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
    pub quantization: Option<WeightPrecision>,
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
    /// How the device plugin offers a MIG slice, which names its resource.
    pub mig_strategy: MigStrategy,
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
    /// The server's own `--max-num-seqs`, when its arguments set one; `None`
    /// = vLLM's default for the device. It sets the sampler's warm-up peak
    /// that the layout must leave room for, and the batch.
    pub max_num_seqs: Option<u64>,
    /// Whether whoever asks can set the server's `--max-num-seqs` (an
    /// AgentPool cannot): only then does a refused layout say what a
    /// smaller batch would leave it.
    pub max_num_seqs_settable: bool,
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
            mig_strategy: MigStrategy::Mixed,
            gpu_memory_utilization: DEFAULT_GPU_MEMORY_UTILIZATION,
            concurrency: None,
            kv_cache_dtype: KvCacheDtype::Auto,
            objective: Objective::Balanced,
            model_config: None,
            checkpoint_bytes: None,
            vllm_version: None,
            max_num_seqs: None,
            max_num_seqs_settable: true,
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
    pub(crate) kv_cache_gib: f64,
    /// Runtime overhead on each GPU: the activation peak plus non-torch
    /// memory.
    pub(crate) overhead_gib: f64,
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
    pub(crate) catalog_model: Option<String>,
    pub gpu: &'static Gpu,
    /// GPUs (or MIG slices) of one replica: TP x PP.
    pub gpu_count: u32,
    pub tensor_parallel_size: u32,
    pub pipeline_parallel_size: u32,
    pub nodes: u32,
    pub mig_profile: Option<String>,
    /// `nvidia.com/gpu`, `nvidia.com/mig-1g.10gb` or `amd.com/gpu`.
    pub(crate) gpu_resource_name: String,
    /// vLLM `--dtype`.
    pub dtype: ComputeDtype,
    pub(crate) weight_precision: WeightPrecision,
    /// vLLM `--quantization`, only when vLLM must quantize at load time or
    /// the caller named a method.
    pub(crate) quantization_method: Option<String>,
    pub max_model_len: u64,
    pub cpu: String,
    pub memory: String,
    pub shm_size: Option<String>,
    pub startup_probe_seconds: u32,
    /// The checkpoint as downloaded and read, in GiB: the 16-bit weights
    /// when vLLM quantizes at load time, else the weights themselves.
    pub checkpoint_gib: f64,
    pub(crate) gpu_memory_utilization: f64,
    pub(crate) parameters_b: f64,
    pub(crate) active_parameters_b: f64,
    /// Of those, the vision tower's and its projector's (0 without one).
    pub(crate) vision_parameters_b: f64,
    pub attention_heads: u32,
    pub kv_heads: u32,
    /// The architecture sized: how much of a sequence each layer caches.
    pub(crate) arch: Arch,
    pub estimate: Estimate,
    /// How `estimate.weights_gib` was computed, in one line.
    pub(crate) weights_formula: String,
    /// vLLM `--kv-cache-dtype`, `Auto` when vLLM needs no flag.
    pub(crate) kv_cache_dtype: KvCacheDtype,
    /// The objective that chose the layout.
    pub(crate) objective: Objective,
    /// The server's own `--max-num-seqs` ([`SizingRequest::max_num_seqs`]).
    pub(crate) max_num_seqs: Option<u64>,
    /// The vLLM release the plan is for, when known
    /// ([`SizingRequest::vllm_version`]).
    pub(crate) vllm_release: Option<Release>,
    /// True when the architecture was guessed (no catalog entry, no
    /// config.json): the reasons say what to give.
    pub architecture_guessed: bool,
    pub reasons: Vec<String>,
    pub warnings: Vec<String>,
}

/// Full-length sequences the `throughput` objective makes room for.
pub const THROUGHPUT_SEQUENCES: u64 = 16;

/// A replica's decode rate at a batch size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throughput {
    /// Sequences decoded together.
    pub(crate) batch: u32,
    /// Tokens generated per second, all sequences together.
    pub(crate) tokens_per_second: f64,
}

/// Share of the datasheet bandwidth a decode step achieves in practice.
pub const BANDWIDTH_EFFICIENCY: f64 = 0.7;

impl Plan {
    /// The layout in a few words, for conditions: "4 x H100-80GB
    /// (bfloat16), tensor parallel 4, max model length 32768", or
    /// "(fp8 weights, bfloat16 compute)" for quantized weights, and the
    /// pipeline parallel size when there are stages.
    pub(crate) fn layout_summary(&self) -> String {
        let mig = self
            .mig_profile
            .as_ref()
            .map(|m| format!(" {m}"))
            .unwrap_or_default();
        // Quantized weights are the precision a reader asks about; the
        // compute dtype alone ("bfloat16") would hide them.
        let precision = if self.weight_precision.bytes_per_param() < 2.0 {
            format!("{} weights, {} compute", self.weight_precision, self.dtype)
        } else {
            self.dtype.to_string()
        };
        // Without its pipeline stages, 16 GPUs at tensor parallel 8 would
        // not add up.
        let pipeline = match self.pipeline_parallel_size {
            1 => String::new(),
            pp => format!(", pipeline parallel {pp}"),
        };
        format!(
            "{} x {}{mig} ({precision}), tensor parallel {}{pipeline}, max model length {}",
            self.gpu_count, self.gpu.name, self.tensor_parallel_size, self.max_model_len
        )
    }

    /// The share of a GPU each of the plan's devices is: 1, or a MIG
    /// slice's memory over the GPU's (its share of bandwidth and of price).
    pub(crate) fn gpu_share(&self) -> f64 {
        self.mig_profile
            .as_deref()
            .and_then(|n| self.gpu.mig_profile(n))
            .map_or(1.0, |p| f64::from(p.memory_gb) / self.gpu.nominal_gb)
    }

    /// GPUs of each pod: all of the replica's on one node, or a node's
    /// share across nodes (layouts across nodes take whole nodes).
    pub(crate) fn gpus_per_pod(&self) -> u32 {
        self.gpu_count.div_ceil(self.nodes.max(1))
    }

    /// The warning a plan across nodes carries: a runtime that serves one
    /// replica across nodes (a LeaderWorkerSet) answers it.
    pub(crate) fn multi_node_warning(&self) -> Option<String> {
        multi_node_warning(
            self.gpu,
            self.nodes,
            self.tensor_parallel_size,
            self.pipeline_parallel_size,
        )
    }

    /// Why the layout cannot hold the model, where the request fixed one
    /// that cannot: the plan stands, with a warning, since flags it does not
    /// size for may start it, but it serves nothing as planned, so it does
    /// not compete for the cheapest nor show as serving in a comparison.
    pub(crate) fn overflow(&self) -> Option<String> {
        (self.estimate.per_gpu_gib > self.estimate.gpu_capacity_gib).then(|| {
            format!(
                "{} x {} cannot hold it ({:.1} GiB per GPU of {:.1} GiB usable)",
                self.gpu_count,
                self.gpu.name,
                self.estimate.per_gpu_gib,
                self.estimate.gpu_capacity_gib
            )
        })
    }

    /// Sequences of `len` tokens the KV cache of one replica holds at once.
    /// Not `capacity / len` for a hybrid model: its capacity is counted in
    /// tokens of every layer, as vLLM logs it, while its sliding-window or
    /// linear-attention layers keep only part of each sequence (gpt-oss-120b
    /// on two H100s holds 39 sequences of 32,768 tokens, not 24).
    pub(crate) fn sequences_held(&self, len: u64) -> u64 {
        self.arch
            .sequences_in(self.estimate.kv_capacity_tokens, len)
    }

    /// The same as a fraction, for a table: 2.4 sequences.
    pub(crate) fn sequences_held_fraction(&self, len: u64) -> f64 {
        self.estimate.kv_capacity_tokens as f64 / self.cached_tokens(len) as f64
    }

    /// Tokens of every layer one sequence of `len` tokens takes in the cache.
    pub(crate) fn cached_tokens(&self, len: u64) -> u64 {
        self.arch.kv_tokens(len.max(1), 1).max(1)
    }

    /// The language model's parameters, total and active: what decoding
    /// reads. A vision tower encodes each image once, in the prefill, so no
    /// generated token reads it.
    pub(crate) fn language_model_b(&self) -> (f64, f64) {
        let vision = self.vision_parameters_b;
        // A parameterCount given below the catalog's tower leaves no room
        // for it: then the whole count is the language model's.
        if vision <= 0.0 || vision >= self.active_parameters_b {
            return (self.parameters_b, self.active_parameters_b);
        }
        // To the hundredth the catalog gives, so reasons say 7.61, not 7.609999.
        let less_vision = |b: f64| hundredths(b - vision);
        (
            less_vision(self.parameters_b),
            less_vision(self.active_parameters_b),
        )
    }

    /// Single-sequence decode rate of one replica in tokens per second, the
    /// memory-bandwidth bound: each generated token reads every active weight
    /// of the language model once ([`Self::language_model_b`]), and the TP
    /// ranks read their shards in parallel.
    ///
    /// ```text
    /// tokens/s = 0.7 x TP x bandwidth (B/s) / (active parameters x bytes per parameter)
    /// ```
    ///
    /// Pipeline stages run one after another for a single sequence, so PP
    /// does not add to it; a MIG slice gets its share of the bandwidth
    /// (slice GB / GPU GB). Batching raises the aggregate rate well above this
    /// while the step stays memory-bound.
    pub(crate) fn decode_tokens_per_second(&self) -> f64 {
        let (_, active) = self.language_model_b();
        let bytes = active * 1e9 * self.weight_precision.bytes_per_param();
        if bytes <= 0.0 {
            return 0.0;
        }
        self.read_bytes_per_second() / bytes
    }

    /// Bytes per second one replica reads while decoding: its TP ranks read
    /// their shards in parallel, each at the share of its GPU's bandwidth
    /// that a decode step reaches.
    fn read_bytes_per_second(&self) -> f64 {
        let bandwidth = self.gpu.bandwidth_gbps * 1e9 * self.gpu_share();
        BANDWIDTH_EFFICIENCY * f64::from(self.tensor_parallel_size) * bandwidth
    }

    /// Aggregate decode rate of one replica serving as many sequences as its
    /// KV cache holds (at most vLLM's default `--max-num-seqs` on its device:
    /// [`Self::engine_max_num_seqs`]), each
    /// `avg_context` tokens long on average. Still memory-bound: a decode
    /// step reads the weights once for the whole batch (of a mixture of
    /// experts, those its tokens are routed to: [`Self::weights_read_b`]),
    /// plus each sequence's KV cache as every GPU holds it (a KV head or an
    /// MLA latent that TP ranks copy is read by each copy), so
    ///
    /// ```text
    /// batch  = min(max-num-seqs, sequences of avg_context the KV cache holds)
    /// step   = (weight bytes read + batch x cached tokens per sequence x KV bytes per token per GPU x GPUs) / (TP x 0.7 x bandwidth)
    /// tokens/s = batch / step
    /// ```
    ///
    /// A sequence's cached tokens are `avg_context`, but for a hybrid
    /// model's windowed layers (see [`Self::sequences_held`]).
    ///
    /// With a batch of 1 this is close to [`Self::decode_tokens_per_second`].
    pub(crate) fn batched_decode(&self, avg_context: u64) -> Throughput {
        let single = self.decode_tokens_per_second();
        if single <= 0.0 {
            return Throughput {
                batch: 1,
                tokens_per_second: single.max(0.0),
            };
        }
        let bytes_per_param = self.weight_precision.bytes_per_param();
        let cached = self.cached_tokens(avg_context);
        let batch = self
            .sequences_held(avg_context)
            .clamp(1, self.engine_max_num_seqs());
        // What every GPU reads of the cache, on each of the replica's GPUs:
        // a KV head or MLA latent that TP ranks copy is read by each copy.
        let kv_bytes = batch as f64
            * cached as f64
            * self.estimate.kv_bytes_per_token_per_gpu.max(0.0)
            * f64::from(self.gpu_count.max(1));
        let weight_bytes = self.weights_read_b(batch) * 1e9 * bytes_per_param;
        let step_seconds = (weight_bytes + kv_bytes) / self.read_bytes_per_second();
        Throughput {
            batch: batch as u32,
            tokens_per_second: batch as f64 / step_seconds,
        }
    }

    /// Billions of weights a decode step of `batch` sequences reads, of the
    /// language model ([`Self::language_model_b`]). A dense model reads all
    /// of them, whatever the batch. A mixture of experts reads its dense
    /// part (attention, embeddings, shared experts) and every expert a token
    /// of the batch is routed to ([`Self::experts_touched`]): one sequence
    /// reads the active parameters, a large batch nearly all. An expert's
    /// size and the dense part follow from the total and active counts:
    ///
    /// ```text
    /// expert = (total - active) / (E - k)      dense = active - k x expert
    /// read   = dense + experts touched x expert
    /// ```
    ///
    /// Of a mixture whose experts the engine does not know (a guessed model
    /// with fewer active parameters than its total), a batch is taken to
    /// read every weight: the most it can.
    pub(crate) fn weights_read_b(&self, batch: u64) -> f64 {
        let (total, active) = self.language_model_b();
        if batch <= 1 || active >= total {
            return active;
        }
        let Some(touched) = self.experts_touched(batch) else {
            return total;
        };
        let (experts, k) = (
            f64::from(self.arch.experts),
            f64::from(self.arch.experts_per_token),
        );
        let expert = (total - active) / (experts - k);
        (active - k * expert + touched * expert).clamp(active, total)
    }

    /// Experts per layer that the tokens of a batch are routed to, on
    /// average: each of `batch` tokens picks `k` of the `E` experts, and
    /// routed evenly an expert is missed by all of them with probability
    /// `(1 - k/E)^batch`, so `E x (1 - (1 - k/E)^batch)` are read (`k` for
    /// one sequence). `None` for a dense model, or one whose experts per
    /// token are unknown.
    pub(crate) fn experts_touched(&self, batch: u64) -> Option<f64> {
        let (experts, k) = (self.arch.experts, self.arch.experts_per_token);
        if experts == 0 || k == 0 || k >= experts {
            return None;
        }
        let (experts, k) = (f64::from(experts), f64::from(k));
        let missed = (1.0 - k / experts).powf(batch.max(1) as f64);
        Some(experts * (1.0 - missed))
    }

    /// The `vllm serve` flags the plan needs beyond TP, PP, dtype,
    /// max-model-len and gpu-memory-utilization: `--quantization` when vLLM
    /// must quantize or was told a method, `--kv-cache-dtype fp8`.
    pub(crate) fn engine_args(&self) -> Vec<String> {
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

/// A replica across nodes needs a multi-node runtime; one pod cannot do it.
pub(super) fn multi_node_warning(gpu: &Gpu, nodes: u32, tp: u32, pp: u32) -> Option<String> {
    (nodes > 1).then(|| {
        format!(
            "One replica spans {nodes} nodes ({} per node, TP {tp} x PP {pp}): the runtime must support multi-node serving; a single pod cannot span nodes.",
            gpu.per_node
        )
    })
}
