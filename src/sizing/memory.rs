//! The memory model: what vLLM puts on one GPU for a given layout.
//!
//! vLLM (V1 engine) sizes its KV cache at start-up as
//!
//! ```text
//! KV cache = utilization x total memory - weights - activation peak - non-torch memory
//! ```
//!
//! per GPU, with the total memory as CUDA reports it to vLLM (below the
//! marketing size), and refuses to start when one sequence of
//! `max-model-len` tokens does not fit. This module holds each term: the
//! weights as vLLM loads them (16-bit parts of quantized checkpoints
//! included), the activation peak of its profiling run, the non-torch
//! memory of the communication buffers, and the KV bytes per token (MLA and
//! hybrid sliding-window groups included). The figures and where they come
//! from are in docs/sizing.md and `../shared/reference/VLLM-MEMORY.md`.

use super::model_catalog::CatalogModel;
use super::precision::WeightPrecision;

/// Bytes in a GiB.
pub const GIB: f64 = 1_073_741_824.0;

/// Non-torch memory (CUDA context increase, cuBLAS workspaces) of a single
/// rank: 0.24-0.26 GiB in vLLM 0.19 logs.
pub(crate) const NON_TORCH_SINGLE_GIB: f64 = 0.25;
/// Non-torch memory of each rank of a multi-GPU replica: NCCL and custom
/// all-reduce buffers, 2.06-2.21 GiB at TP 2 and 4 in vLLM 0.19 logs. Used
/// for pipeline stages too, whose slowest stage sets the KV cache (the logs
/// show the first stage's figures a few GiB above what the cache got).
pub(crate) const NON_TORCH_MULTI_GIB: f64 = 2.2;

/// The smallest activation peak seen (CodeLlama, Granite): the forward
/// pass of one 8,192-token chunk, whatever the vocabulary.
pub(crate) const ACTIVATION_FLOOR_GIB: f64 = 0.75;
/// fp32 copies of the `max_num_seqs x vocabulary` logits that vLLM 0.19's
/// sampler warm-up holds at its peak (fitted on its logs: 3.7-4.0).
pub(crate) const SAMPLER_COPIES_CURRENT: f64 = 3.9;
/// The same for vLLM releases before 0.19, or an unknown version: earlier
/// V1 engines held about 9.7 copies (llm-d-benchmark's runs: Llama-3.1-8B
/// 4.76 GiB, Qwen3 5.56-5.64 GiB, gpt-oss 7.38 GiB), the figure llm-d's
/// planner calibrated on. The larger figure is the safe one when the version
/// is unknown.
pub(crate) const SAMPLER_COPIES_EARLIER: f64 = 9.7;
/// MoE models peak about 15% higher (expert routing buffers): Qwen3-30B-A3B,
/// Kimi-VL and DeepSeek-V2-Lite 1.2x, Llama-4-Scout 1.06x.
pub(crate) const MOE_ACTIVATION_FACTOR: f64 = 1.15;

/// vLLM's default `--max-num-seqs` for `vllm serve` on a device: 1024 on
/// GPUs with at least 70 GiB other than the A100, 256 elsewhere
/// (`EngineArgs._set_default_args`, vllm/engine/arg_utils.py).
pub(crate) fn default_max_num_seqs(device_gib: f64, is_a100: bool) -> u64 {
    if device_gib >= 70.0 && !is_a100 {
        1024
    } else {
        SMALLER_DEFAULT_MAX_NUM_SEQS
    }
}

/// vLLM's default `--max-num-seqs` below 70 GiB and on A100s.
pub(crate) const SMALLER_DEFAULT_MAX_NUM_SEQS: u64 = 256;

/// A vLLM release as major, minor, patch.
pub type Release = (u32, u32, u32);

/// `0.19.0`, `v0.10.2`, `0.11` (patch 0), `0.10.2rc1` and `0.19.0+cu128`
/// (their numbers); `None` unless it starts with a number, a dot and a
/// number.
pub fn release(v: &str) -> Option<Release> {
    let mut parts = v.strip_prefix('v').unwrap_or(v).splitn(3, '.');
    let leading = |p: &str| -> Option<u32> {
        let end = p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len());
        p[..end].parse().ok()
    };
    let major = parts
        .next()
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))?;
    let minor = leading(parts.next()?)?;
    let patch = parts.next().and_then(leading).unwrap_or(0);
    Some((major.parse().ok()?, minor, patch))
}

/// The vLLM release the memory model is checked against: the start-up logs
/// of docs/sizing.md, and the built-in NVIDIA image.
pub(crate) const CHECKED_RELEASE: Release = (0, 19, 0);

/// `release` as vLLM numbers it: `0.14.0`.
pub(crate) fn release_text((major, minor, patch): Release) -> String {
    format!("{major}.{minor}.{patch}")
}

/// The vLLM release the plan is for, as far as its memory use differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VllmGeneration {
    /// vLLM 0.19 or later: the figures measured in its logs.
    Current,
    /// An earlier release, or one the caller did not name: the larger
    /// activation peak, so that the plan never over-promises.
    #[default]
    EarlierOrUnknown,
}

impl VllmGeneration {
    /// `0.19.0`, `v0.19.1`, `0.20` are current; anything else (including an
    /// unparsable string) is treated as earlier.
    pub(crate) fn from_version(v: Option<&str>) -> VllmGeneration {
        match v.and_then(release) {
            Some(r) if r >= CHECKED_RELEASE => VllmGeneration::Current,
            _ => VllmGeneration::EarlierOrUnknown,
        }
    }

    pub(crate) fn sampler_copies(self) -> f64 {
        match self {
            VllmGeneration::Current => SAMPLER_COPIES_CURRENT,
            VllmGeneration::EarlierOrUnknown => SAMPLER_COPIES_EARLIER,
        }
    }
}

/// What a hybrid model's layers of fixed state per sequence are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum RecurrentLayers {
    /// Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5).
    #[default]
    LinearAttention,
    /// Mamba-2 (Nemotron-H).
    Mamba,
}

impl RecurrentLayers {
    /// The layers' name in reasons ("the 36 linear-attention layers").
    pub(crate) fn name(self) -> &'static str {
        match self {
            RecurrentLayers::LinearAttention => "linear-attention",
            RecurrentLayers::Mamba => "Mamba-2",
        }
    }
}

/// The shape of a model as far as memory is concerned.
#[derive(Debug, Clone, PartialEq)]
pub struct Arch {
    pub(crate) layers: u32,
    pub(crate) attention_heads: u32,
    pub(crate) kv_heads: u32,
    pub(crate) head_dim: u32,
    pub(crate) hidden_size: u32,
    /// MLA latent elements per token and layer (kv_lora_rank +
    /// qk_rope_head_dim), 0 for ordinary attention.
    pub(crate) mla_kv_dim: u32,
    /// The key dimension of a DeepSeek sparse-attention indexer
    /// (DeepSeek-V3.2, GLM-5), 0 for other models: see
    /// [`Self::kv_bytes_per_token`].
    pub(crate) indexer_head_dim: u32,
    /// `vocab_size`: the sampler's warm-up scales with it.
    pub(crate) vocab: u32,
    /// Layers with sliding-window attention, 0 when none.
    pub(crate) sliding_layers: u32,
    /// Their window in tokens.
    pub(crate) sliding_window: u32,
    /// Layers with linear attention (Qwen3-Next's Gated DeltaNet) or
    /// Mamba-2 (Nemotron-H), which keep a fixed recurrent state per sequence
    /// instead of a KV cache; which of the two is `recurrent`.
    pub(crate) linear_layers: u32,
    /// That state per layer and sequence in bytes on one GPU (temporal
    /// state plus convolution state), as vLLM keeps it.
    pub(crate) linear_state_bytes: u64,
    pub(crate) recurrent: RecurrentLayers,
    /// Layers that cache nothing per token (Nemotron-H's blocks of an MLP
    /// or experts alone, Nemotron-NAS's layers without attention).
    pub(crate) cacheless_layers: u32,
    /// Routed experts, 0 for dense models.
    pub(crate) experts: u32,
    /// Experts each token is routed to, 0 for dense models.
    pub(crate) experts_per_token: u32,
    /// Positions of the rotary cache (`max_position_embeddings`).
    pub(crate) rope_positions: u64,
}

impl Arch {
    pub(crate) fn from_spec(m: &CatalogModel) -> Arch {
        Arch {
            layers: m.layers,
            attention_heads: m.attention_heads,
            kv_heads: m.kv_heads,
            head_dim: m.head_dim,
            hidden_size: m.hidden_size,
            mla_kv_dim: m.mla_kv_dim,
            indexer_head_dim: m.indexer_head_dim,
            vocab: m.vocab,
            sliding_layers: m.sliding_layers,
            sliding_window: m.sliding_window,
            linear_layers: m.linear_layers,
            linear_state_bytes: m.linear_state_kib * 1024,
            recurrent: RecurrentLayers::LinearAttention,
            cacheless_layers: 0,
            experts: m.experts,
            experts_per_token: m.experts_per_token,
            rope_positions: m.context,
        }
    }

    /// Layers that do not cache the whole context: sliding-window layers,
    /// or recurrent layers (a model has one kind or the other).
    pub(crate) fn partial_layers(&self) -> u32 {
        (self.sliding_layers + self.linear_layers).min(self.layers)
    }

    /// Layers that cache the whole context: those with full attention.
    pub(crate) fn full_layers(&self) -> u32 {
        self.layers
            .saturating_sub(self.partial_layers())
            .saturating_sub(self.cacheless_layers)
    }

    /// Layers the KV cache holds per token. vLLM's hybrid allocator groups a
    /// hybrid model's layers into groups of `g` = the smaller layer count of
    /// the two kinds, padding the last group of each kind, and gives every
    /// group a full page per block: `g x (ceil(full / g) + ceil(partial /
    /// g))`. Gemma-3-27B: 10 full and 52 sliding layers cache as 70 (573,440 B
    /// per token, its log says 573,583). Gemma 2 and gpt-oss alternate 1:1,
    /// which is every layer; Qwen3-Next's 12 full and 36 linear-attention
    /// layers count as 48 (vLLM pads their state to an attention page).
    pub(crate) fn kv_layers(&self) -> u32 {
        self.layer_groups().map_or(
            self.layers.saturating_sub(self.cacheless_layers),
            |(g, full, partial)| g * (full + partial),
        )
    }

    /// The layers grouped as vLLM's hybrid allocator groups them: the group
    /// size and the padded group counts (full, partial); `None` when every
    /// layer is of one kind.
    fn layer_groups(&self) -> Option<(u32, u32, u32)> {
        let (partial, full) = (self.partial_layers(), self.full_layers());
        if partial == 0 || full == 0 {
            return None;
        }
        let g = full.min(partial);
        Some((g, full.div_ceil(g), partial.div_ceil(g)))
    }

    /// The padded groups of a hybrid model: (full groups, partial groups),
    /// or `None` when every layer caches the whole context.
    fn groups(&self) -> Option<(u64, u64)> {
        if self.linear_layers == 0 && self.sliding_window == 0 {
            return None;
        }
        self.layer_groups()
            .map(|(_, full, partial)| (u64::from(full), u64::from(partial)))
    }

    /// Tokens a partial group keeps per sequence at most. Sliding window:
    /// the window, plus one chunk of [`MAX_NUM_BATCHED_TOKENS`] being
    /// prefilled, plus a block (vLLM's `SlidingWindowSpec.max_memory_usage_bytes`).
    /// Linear attention: one block, whose size vLLM raises so that an
    /// attention page holds a layer's state (a multiple of 16 tokens; with
    /// a 16-bit KV cache on one GPU, the largest it gets).
    pub(crate) fn window_tokens(&self) -> u64 {
        if self.linear_layers > 0 {
            // One layer's 16-bit KV bytes per token on one GPU.
            let page_per_token =
                (self.kv_bytes_per_token(2.0, 1, 1) / f64::from(self.kv_layers())) as u64;
            return self.linear_state_bytes.div_ceil(16 * page_per_token.max(1)) * 16;
        }
        u64::from(self.sliding_window) + MAX_NUM_BATCHED_TOKENS + KV_BLOCK_TOKENS
    }

    /// Sequences of `len` tokens that a KV cache of `capacity` tokens holds
    /// at once, each counted as [`Self::kv_tokens`] counts it.
    pub(crate) fn sequences_in(&self, capacity: u64, len: u64) -> u64 {
        capacity / self.kv_tokens(len.max(1), 1).max(1)
    }

    /// The KV cache `sequences` sequences of `len` tokens need, in tokens of
    /// [`Self::kv_bytes_per_token`]: `len x sequences`, except that the
    /// sliding-window and linear-attention groups of a hybrid model hold at
    /// most [`Self::window_tokens`] of each sequence.
    pub(crate) fn kv_tokens(&self, len: u64, sequences: u64) -> u64 {
        let Some((full, sliding)) = self.groups() else {
            return len.saturating_mul(sequences);
        };
        // A linear-attention group holds its block however short the
        // sequence; a sliding-window group at most the sequence.
        let partial = if self.linear_layers > 0 {
            self.window_tokens()
        } else {
            len.min(self.window_tokens())
        };
        let per_seq = (full as u128 * len as u128 + sliding as u128 * u128::from(partial))
            .div_ceil(u128::from(full + sliding));
        u64::try_from(per_seq.saturating_mul(u128::from(sequences))).unwrap_or(u64::MAX)
    }

    /// The longest sequence of which `sequences` fit in `capacity` tokens of
    /// [`Self::kv_bytes_per_token`]: the inverse of [`Self::kv_tokens`].
    pub(crate) fn longest_sequence(&self, capacity: u64, sequences: u64) -> u64 {
        let per_seq = capacity / sequences.max(1);
        let Some((full, sliding)) = self.groups() else {
            return per_seq;
        };
        let w = self.window_tokens();
        if per_seq <= w && self.linear_layers == 0 {
            return per_seq;
        }
        // per_seq x (full + sliding) = full x len + sliding x w
        let total = u128::from(per_seq) * u128::from(full + sliding);
        let len = total.saturating_sub(u128::from(sliding) * u128::from(w)) / u128::from(full);
        u64::try_from(len).unwrap_or(u64::MAX)
    }

    /// KV cache bytes one token takes on one GPU of a TP x PP layout.
    ///
    /// Ordinary attention: `2 (K and V) x layers/PP x max(1, kv_heads/TP) x
    /// head_dim x bytes`. MLA caches one latent vector per layer that every
    /// tensor-parallel rank keeps whole: `layers/PP x`
    /// [`Self::mla_bytes_per_layer`]. Layers are [`Self::kv_layers`].
    pub(crate) fn kv_bytes_per_token(&self, kv_bytes: f64, tp: u32, pp: u32) -> f64 {
        let layers = f64::from(self.kv_layers().div_ceil(pp.max(1)));
        if self.mla_kv_dim > 0 {
            return layers * self.mla_bytes_per_layer(kv_bytes);
        }
        let heads = (self.kv_heads / tp.max(1)).max(1);
        2.0 * layers * f64::from(heads) * f64::from(self.head_dim) * kv_bytes
    }

    /// An MLA layer's cache per token: its latent at `kv_bytes` an element,
    /// and with a sparse-attention indexer (DeepSeek-V3.2, GLM-5) that
    /// indexer's keys, which vLLM keeps whatever the KV cache's dtype
    /// (`DeepseekV32IndexerCache`: `index_head_dim` fp8 values and an fp32
    /// scale per 128, 132 B). Such a model's fp8 latent is in DeepSeek's
    /// `fp8_ds_mla` format on Hopper, where vLLM's FlashMLA sparse backend
    /// serves it: the latent in fp8, an fp32 scale per 128 and the rotary
    /// part in 16 bits (656 B for 512 + 64); Blackwell's FlashInfer sparse
    /// backend keeps plain fp8 (576 B). The plan sizes the larger on every
    /// GPU, which never promises more cache than vLLM gives.
    pub(crate) fn mla_bytes_per_layer(&self, kv_bytes: f64) -> f64 {
        self.mla_latent_bytes_per_layer(kv_bytes) + self.indexer_bytes_per_layer()
    }

    /// The latent of [`Self::mla_bytes_per_layer`], without the indexer.
    pub(crate) fn mla_latent_bytes_per_layer(&self, kv_bytes: f64) -> f64 {
        if self.indexer_head_dim > 0 && kv_bytes < 2.0 {
            let nope = self.mla_kv_dim.saturating_sub(MLA_ROPE_DIM);
            return fp8_with_scales(nope) + f64::from(MLA_ROPE_DIM) * 2.0;
        }
        f64::from(self.mla_kv_dim) * kv_bytes
    }

    /// A sparse-attention indexer's keys per token and layer, 0 without one.
    pub(crate) fn indexer_bytes_per_layer(&self) -> f64 {
        if self.indexer_head_dim == 0 {
            return 0.0;
        }
        fp8_with_scales(self.indexer_head_dim)
    }

    /// The activation peak of vLLM's profiling run, in GiB: the sampler's
    /// warm-up over `max_num_seqs` sequences' logits dominates and scales
    /// with the vocabulary, `copies x max_num_seqs x vocab x 4 B`, at least
    /// [`ACTIVATION_FLOOR_GIB`], and [`MOE_ACTIVATION_FACTOR`] more for
    /// MoE models. The same at every TP size.
    pub(crate) fn activation_gib(&self, max_num_seqs: u64, generation: VllmGeneration) -> f64 {
        let sampler =
            generation.sampler_copies() * max_num_seqs as f64 * f64::from(self.vocab) * 4.0 / GIB;
        let moe = if self.experts > 0 {
            MOE_ACTIVATION_FACTOR
        } else {
            1.0
        };
        sampler.max(ACTIVATION_FLOOR_GIB) * moe
    }

    /// The rotary embedding's cos/sin cache, which every rank holds whole:
    /// `max_position_embeddings x rotary dim x 2 B` (32 MiB at 131,072
    /// positions, 2.5 GiB for Llama-4-Scout's 10M). vLLM counts it with the
    /// weights.
    pub(crate) fn rope_gib(&self, element_bytes: f64) -> f64 {
        let rotary = if self.mla_kv_dim > 0 {
            MLA_ROPE_DIM
        } else {
            self.head_dim
        };
        self.rope_positions as f64 * f64::from(rotary) * element_bytes / GIB
    }
}

/// vLLM's largest default `--max-num-batched-tokens` for `vllm serve`
/// (8,192 on H100-class GPUs, 2,048 elsewhere): the chunk a sliding-window
/// layer keeps beside its window, taken at its largest.
pub(crate) const MAX_NUM_BATCHED_TOKENS: u64 = 8192;
/// vLLM's default KV block size.
pub(crate) const KV_BLOCK_TOKENS: u64 = 16;

/// Vocabulary assumed for a model whose config is not known.
pub(crate) const GUESSED_VOCAB: u32 = 262_144;
/// Rotary positions assumed for a model whose config is not known.
pub(crate) const GUESSED_ROPE_POSITIONS: u64 = 131_072;
/// Rotary dimension of the MLA models in the catalog (qk_rope_head_dim).
const MLA_ROPE_DIM: u32 = 64;
/// Values that share one fp32 scale in vLLM's fp8 caches of DeepSeek's
/// sparse attention (its indexer's `quant_block_size`, `fp8_ds_mla`'s tiles).
const FP8_SCALE_BLOCK: u32 = 128;

/// Bytes of `values` fp8 values with an fp32 scale per [`FP8_SCALE_BLOCK`].
fn fp8_with_scales(values: u32) -> f64 {
    f64::from(values + values.div_ceil(FP8_SCALE_BLOCK) * 4)
}

/// Non-torch memory per GPU: [`NON_TORCH_SINGLE_GIB`] for one rank,
/// [`NON_TORCH_MULTI_GIB`] as soon as ranks talk to each other.
pub(crate) fn non_torch_gib(tp: u32, pp: u32) -> f64 {
    if u64::from(tp) * u64::from(pp) > 1 {
        NON_TORCH_MULTI_GIB
    } else {
        NON_TORCH_SINGLE_GIB
    }
}

/// Bytes per parameter of quantized weights, their scales included:
/// fp8 and int8 1 (per-channel scales are negligible), int4 0.5 plus a
/// 16-bit scale and a 4-bit zero point per group of 128 (GPTQ, AWQ,
/// W4A16), or a 16-bit scale alone per `int4_group` (compressed-tensors'
/// symmetric groups: Kimi K2's 32 take 0.5625), MXFP4 4.25 bits (an 8-bit
/// scale per 32), NVFP4 4.5 bits (an fp8 scale per 16).
pub(crate) fn quantized_bytes(
    precision: WeightPrecision,
    mxfp4: bool,
    int4_group: Option<u32>,
) -> f64 {
    match precision {
        WeightPrecision::Int4 => match int4_group {
            Some(group) => 0.5 + 2.0 / f64::from(group.max(1)),
            None => 0.5 + 2.5 / 128.0,
        },
        WeightPrecision::Fp4 if mxfp4 => 4.25 / 8.0,
        WeightPrecision::Fp4 => 4.5 / 8.0,
        p => p.bytes_per_param(),
    }
}

/// The weights of one replica as vLLM loads them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Weights {
    /// All weights, in GiB.
    pub(crate) total_gib: f64,
    /// One copy of the token embedding (the size of the lm_head too), in
    /// GiB: the first and the last pipeline stage each hold one.
    pub(crate) embedding_gib: f64,
    /// The lm_head is the embedding, counted once in `total_gib`.
    pub(crate) tied: bool,
    /// Parameters kept in 16 bits by a quantized checkpoint, in billions.
    pub(crate) kept_16bit_b: f64,
    /// The rotary cache every rank holds, in GiB.
    pub(crate) rope_gib: f64,
    /// Expert weights padded by the MXFP4 MoE kernels (hidden size rounded
    /// up to a multiple of 256): the factor, 1 when none.
    pub(crate) padding: f64,
}

impl Weights {
    /// Weights on one GPU of a TP x PP layout: everything split by TP; with
    /// pipeline stages, the layers split by stage and the first and last
    /// stage each holding an embedding-sized matrix (the embedding, the
    /// lm_head); plus the rotary cache.
    pub(crate) fn per_gpu(&self, layers: u32, tp: u32, pp: u32) -> f64 {
        let tp = f64::from(tp.max(1));
        if pp <= 1 {
            return self.total_gib / tp + self.rope_gib;
        }
        let edges = self.embedding_gib * if self.tied { 1.0 } else { 2.0 };
        let body = (self.total_gib - edges).max(0.0);
        let stage = body * f64::from(layers.div_ceil(pp)) / f64::from(layers.max(1));
        (stage + self.embedding_gib) / tp + self.rope_gib
    }
}

/// What the weights are made of, for [`weights`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct WeightParts {
    pub(crate) params_b: f64,
    /// Embedding parameters (vocab x hidden), in billions.
    pub(crate) embedding_b: f64,
    pub(crate) tied: bool,
    pub(crate) vision_b: f64,
    /// Parameters the checkpoint keeps in 16 bits, when it says (0 = the
    /// embeddings, lm_head and vision tower).
    pub(crate) unquantized_b: f64,
    /// Parameters of the layers' modules a checkpoint's config lists as kept
    /// in 16 bits, beyond the embeddings, lm_head and vision tower.
    pub(crate) excluded_b: f64,
    /// The checkpoint's weights are MXFP4 (gpt-oss).
    pub(crate) mxfp4: bool,
    /// Its int4 weights' scale groups, when symmetric (see [`quantized_bytes`]).
    pub(crate) int4_group: Option<u32>,
    /// MoE model: the MXFP4 kernels pad its expert weights.
    pub(crate) moe: bool,
    pub(crate) hidden_size: u32,
}

/// The weights at `precision`. 16-bit and fp32 weights are parameters x 2 or
/// 4 B. Quantized weights keep the embeddings, the lm_head (once when tied),
/// the vision tower and the modules the checkpoint's config lists in 16
/// bits, or what its catalog row says when more:
/// `kept x 2 B + (parameters - kept) x quantized bytes`.
pub(crate) fn weights(parts: &WeightParts, precision: WeightPrecision, rope_gib: f64) -> Weights {
    let p = parts.params_b.max(0.0);
    let edges_b = parts.embedding_b * if parts.tied { 1.0 } else { 2.0 };
    if !precision.is_quantized() {
        let bytes = precision.bytes_per_param();
        return Weights {
            total_gib: p * bytes * 1e9 / GIB,
            embedding_gib: parts.embedding_b * bytes * 1e9 / GIB,
            tied: parts.tied,
            kept_16bit_b: 0.0,
            rope_gib,
            padding: 1.0,
        };
    }
    let kept = parts
        .unquantized_b
        .max(edges_b + parts.vision_b + parts.excluded_b)
        .clamp(0.0, p);
    let padding = if parts.mxfp4 && parts.moe && parts.hidden_size > 0 {
        f64::from(parts.hidden_size.div_ceil(256) * 256) / f64::from(parts.hidden_size)
    } else {
        1.0
    };
    let q = quantized_bytes(precision, parts.mxfp4, parts.int4_group);
    Weights {
        total_gib: (kept * 2.0 + (p - kept) * q * padding) * 1e9 / GIB,
        embedding_gib: parts.embedding_b * 2.0 * 1e9 / GIB,
        tied: parts.tied,
        kept_16bit_b: kept,
        rope_gib,
        padding,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::model_catalog::model;

    fn arch(id: &str) -> Arch {
        Arch::from_spec(model(id).unwrap())
    }

    #[test]
    fn llama_70b_kv_per_token() {
        let a = arch("meta-llama/Llama-3.1-70B-Instruct");
        assert_eq!(a.kv_bytes_per_token(2.0, 1, 1), 327_680.0);
        assert_eq!(a.kv_bytes_per_token(2.0, 8, 1), 40_960.0);
        // 8 KV heads under TP 16 stay at one head per rank.
        assert_eq!(a.kv_bytes_per_token(2.0, 16, 1), 40_960.0);
        assert_eq!(a.kv_bytes_per_token(2.0, 1, 2), 163_840.0);
        // An fp8 cache halves it.
        assert_eq!(a.kv_bytes_per_token(1.0, 1, 1), 163_840.0);
    }

    #[test]
    fn mla_kv_is_not_split_by_tp() {
        let a = arch("deepseek-ai/DeepSeek-V3");
        assert_eq!(a.kv_bytes_per_token(2.0, 1, 1), 61.0 * 576.0 * 2.0);
        assert_eq!(a.kv_bytes_per_token(2.0, 8, 1), 61.0 * 576.0 * 2.0);
        // Kimi-VL's log: 41.32 GiB for 1,426,368 tokens = 31,104 B.
        let k = arch("moonshotai/Kimi-VL-A3B-Instruct");
        assert_eq!(k.kv_bytes_per_token(2.0, 1, 1), 31_104.0);
    }

    /// DeepSeek-V3.2: DeepSeek-V3's layers with a sparse-attention indexer
    /// (index_head_dim 128). vLLM 0.19 caches the indexer's keys in 132 B
    /// (128 fp8 values and an fp32 scale) beside the latent, whose fp8 form
    /// on FlashMLA's sparse backend is fp8_ds_mla: 512 fp8 values, 4 fp32
    /// scales and 64 rotary values in 16 bits, 656 B (its
    /// `MLAAttentionSpec.real_page_size_bytes`).
    #[test]
    fn a_sparse_attention_indexer_caches_its_keys_beside_the_latent() {
        let v3_2 = Arch {
            indexer_head_dim: 128,
            ..arch("deepseek-ai/DeepSeek-V3")
        };
        assert_eq!(v3_2.kv_bytes_per_token(2.0, 1, 1), 61.0 * (1152.0 + 132.0));
        assert_eq!(v3_2.kv_bytes_per_token(2.0, 8, 1), 61.0 * (1152.0 + 132.0));
        assert_eq!(v3_2.kv_bytes_per_token(1.0, 8, 1), 61.0 * (656.0 + 132.0));
        assert_eq!(v3_2.kv_bytes_per_token(1.0, 8, 2), 31.0 * (656.0 + 132.0));
        // Without an indexer, plain fp8 MLA: one byte an element.
        let v3 = arch("deepseek-ai/DeepSeek-V3");
        assert_eq!(v3.kv_bytes_per_token(1.0, 8, 1), 61.0 * 576.0);
        assert_eq!(v3.indexer_bytes_per_layer(), 0.0);
    }

    /// Int4 weights weigh half a byte and their scales: a 16-bit scale and
    /// a 4-bit zero point per 128 (GPTQ, AWQ), or a 16-bit scale per
    /// symmetric group (Kimi K2 Thinking's 32: its 1,014.69 B routed expert
    /// parameters and 11.72 B in 16 bits make the 594 GB it downloads).
    #[test]
    fn int4_scales_weigh_by_their_group() {
        let int4 = WeightPrecision::Int4;
        assert_eq!(quantized_bytes(int4, false, None), 0.5 + 2.5 / 128.0);
        assert_eq!(quantized_bytes(int4, false, Some(32)), 0.5625);
        assert_eq!(quantized_bytes(WeightPrecision::Fp8, false, Some(32)), 1.0);
        let kimi = crate::sizing::model_catalog::model("moonshotai/Kimi-K2-Thinking").unwrap();
        let parts = WeightParts {
            params_b: kimi.params_b,
            embedding_b: f64::from(kimi.vocab) * f64::from(kimi.hidden_size) / 1e9,
            tied: false,
            vision_b: 0.0,
            unquantized_b: kimi.unquantized_params_b,
            excluded_b: 0.0,
            mxfp4: false,
            int4_group: kimi.int4_group(),
            moe: true,
            hidden_size: kimi.hidden_size,
        };
        let gb = weights(&parts, int4, 0.0).total_gib * GIB / 1e9;
        assert!((gb - 594.2).abs() < 0.1, "{gb}");
    }

    /// (model, layers the cache holds, bytes per token in bf16): the logs'
    /// KV GiB / tokens.
    #[test]
    fn sliding_window_groups() {
        let cases = [
            ("google/gemma-3-27b-it", 70, 573_440.0),
            ("google/gemma-2-27b-it", 46, 376_832.0),
            ("google/gemma-2-2b-it", 26, 106_496.0),
            ("google/gemma-3-12b-it", 48, 393_216.0),
            ("google/gemma-3-4b-it", 35, 143_360.0),
            ("openai/gpt-oss-20b", 24, 49_152.0),
            ("meta-llama/Llama-3.1-8B-Instruct", 32, 131_072.0),
        ];
        for (id, layers, bytes) in cases {
            let a = arch(id);
            assert_eq!(a.kv_layers(), layers, "{id}");
            assert_eq!(a.kv_bytes_per_token(2.0, 1, 1), bytes, "{id}");
        }
    }

    #[test]
    fn sliding_window_sequences_cost_less() {
        // Gemma-3-12B: 1 full and 5 sliding groups of 8 layers; a sliding
        // group keeps 1,024 + 8,192 + 16 tokens of a sequence.
        let a = arch("google/gemma-3-12b-it");
        assert_eq!(a.kv_tokens(32_768, 1), (32_768u64 + 5 * 9_232).div_ceil(6));
        assert_eq!(a.kv_tokens(4_096, 2), 8_192);
        for len in [100, 9_232, 20_000, 32_768, 131_072] {
            let need = a.kv_tokens(len, 3);
            assert!(a.longest_sequence(need, 3) >= len - 1, "{len}");
            assert!(a.kv_tokens(a.longest_sequence(need, 3), 3) <= need, "{len}");
        }
        let llama = arch("meta-llama/Llama-3.1-8B-Instruct");
        assert_eq!(llama.kv_tokens(32_768, 4), 131_072);
        assert_eq!(llama.longest_sequence(131_072, 4), 32_768);
    }

    #[test]
    fn linear_attention_keeps_one_block_per_sequence() {
        // Qwen3-Next: 12 full and 36 Gated DeltaNet layers (3 groups of 12)
        // count as 48; a layer's 1,072 KiB state fits a page of 544 tokens
        // (34 x 16) at 2 KiB per token and layer, which each linear group
        // keeps per sequence, however short.
        let a = arch("Qwen/Qwen3-Next-80B-A3B-Instruct");
        assert_eq!(a.kv_layers(), 48);
        assert_eq!(a.kv_bytes_per_token(2.0, 1, 1), 98_304.0);
        assert_eq!(a.window_tokens(), 544);
        assert_eq!(a.kv_tokens(32_768, 1), (32_768u64 + 3 * 544).div_ceil(4));
        assert_eq!(a.kv_tokens(16, 2), 2 * (16u64 + 3 * 544).div_ceil(4));
        for len in [1, 544, 20_000, 262_144] {
            let need = a.kv_tokens(len, 3);
            assert!(a.longest_sequence(need, 3) >= len - 1, "{len}");
            assert!(a.kv_tokens(a.longest_sequence(need, 3), 3) <= need, "{len}");
        }
        assert_eq!(a.longest_sequence(100, 1), 0);
    }

    /// Nemotron 3 Nano: 6 attention layers, 23 Mamba-2 layers (2,134,016 B
    /// of state each) and 23 expert layers that cache nothing. The hybrid
    /// allocator groups the 6 and the 23 by 6 (1 + 4 groups, 30 layers),
    /// and sizes an attention block so that its page (1,024 B a token on
    /// one GPU) holds a Mamba state: 16 x ceil(2,134,016 / (16 x 1,024)).
    #[test]
    fn mamba_layers_group_like_linear_attention_and_expert_layers_cache_nothing() {
        let a = Arch {
            layers: 52,
            attention_heads: 32,
            kv_heads: 2,
            head_dim: 128,
            linear_layers: 23,
            linear_state_bytes: 2_134_016,
            recurrent: RecurrentLayers::Mamba,
            cacheless_layers: 23,
            ..arch("Qwen/Qwen3-Next-80B-A3B-Instruct")
        };
        assert_eq!((a.full_layers(), a.partial_layers()), (6, 23));
        assert_eq!(a.kv_layers(), 30);
        assert_eq!(
            a.kv_bytes_per_token(2.0, 1, 1),
            2.0 * 30.0 * 2.0 * 128.0 * 2.0
        );
        assert_eq!(a.window_tokens(), 2096);
        // Without recurrent layers, layers that cache nothing still do not count.
        let dense_and_experts = Arch {
            linear_layers: 0,
            linear_state_bytes: 0,
            ..a.clone()
        };
        assert_eq!(dense_and_experts.kv_layers(), 29);
    }

    #[test]
    fn activation_follows_the_vocabulary() {
        let now = VllmGeneration::Current;
        // (model, max_num_seqs, GiB in the vLLM 0.19 logs)
        let cases = [
            ("Qwen/Qwen2.5-7B-Instruct", 1024, 2.21),
            ("meta-llama/Llama-3.1-8B-Instruct", 1024, 1.89),
            ("google/gemma-3-27b-it", 1024, 3.99),
            ("google/gemma-2-9b-it", 1024, 3.65),
            ("codellama/CodeLlama-7b-hf", 1024, 0.77),
            ("moonshotai/Kimi-VL-A3B-Instruct", 1024, 2.92),
        ];
        for (id, seqs, want) in cases {
            let got = arch(id).activation_gib(seqs, now);
            assert!((got - want).abs() / want < 0.12, "{id}: {got} vs {want}");
        }
        // Earlier releases: llm-d-benchmark's Qwen3-32B peaked at 5.64 GiB.
        let got = arch("Qwen/Qwen3-32B").activation_gib(1024, VllmGeneration::EarlierOrUnknown);
        assert!((got - 5.64).abs() < 0.1, "{got}");
    }

    #[test]
    fn releases_compare_by_their_numbers() {
        assert_eq!(release("0.19.0"), Some((0, 19, 0)));
        assert_eq!(release("v0.10.2"), Some((0, 10, 2)));
        assert_eq!(release("0.11"), Some((0, 11, 0)));
        assert_eq!(release("0.10.2rc1"), Some((0, 10, 2)));
        assert_eq!(release("latest"), None);
        assert_eq!(release("0.19.0+cu128"), Some((0, 19, 0)));
        assert_eq!(release("1a.2"), None);
        assert_eq!(release("0."), None);
        assert!(release("0.10.10") > release("0.10.2"));
    }

    #[test]
    fn versions() {
        use VllmGeneration::*;
        for (v, want) in [
            (Some("0.19.0"), Current),
            (Some("v0.19.1"), Current),
            (Some("0.20"), Current),
            (Some("1.0.0"), Current),
            (Some("0.8.2"), EarlierOrUnknown),
            (Some("0.6.5.dev (PR #10511)"), EarlierOrUnknown),
            (Some(""), EarlierOrUnknown),
            (None, EarlierOrUnknown),
        ] {
            assert_eq!(VllmGeneration::from_version(v), want, "{v:?}");
        }
    }

    #[test]
    fn quantized_checkpoints_keep_16_bit_parts() {
        // Qwen2.5-7B FP8-dynamic: 8.14 GiB in its log (one byte for every
        // parameter would say 7.1).
        let parts = WeightParts {
            params_b: 7.61,
            embedding_b: 152_064.0 * 3584.0 / 1e9,
            tied: false,
            vision_b: 0.0,
            unquantized_b: 0.0,
            excluded_b: 0.0,
            mxfp4: false,
            int4_group: None,
            moe: false,
            hidden_size: 3584,
        };
        let w = weights(&parts, WeightPrecision::Fp8, 0.0);
        assert!((w.total_gib - 8.10).abs() < 0.05, "{}", w.total_gib);
        let w16 = weights(&parts, WeightPrecision::Bf16, 0.0);
        assert!((w16.total_gib - 14.17).abs() < 0.05, "{}", w16.total_gib);
        // Pipeline stages: the first holds the embedding, the last the lm_head.
        let llama = WeightParts {
            params_b: 8.03,
            embedding_b: 128_256.0 * 4096.0 / 1e9,
            ..parts
        };
        let w = weights(&llama, WeightPrecision::Bf16, 0.0);
        // llm-d-planner's PP runs: 7.51 GiB at PP 2, 4.26 at PP 4.
        assert!((w.per_gpu(32, 1, 2) - 7.49).abs() < 0.05);
        assert!((w.per_gpu(32, 1, 4) - 4.24).abs() < 0.05);
        assert!((w.per_gpu(32, 2, 1) - w.total_gib / 2.0).abs() < 1e-9);
    }
}
