//! A model's Hugging Face `config.json` and `model.safetensors.index.json`,
//! read for the facts sizing needs, so that any model can be sized exactly
//! without the catalog and without the network.
//!
//! Only the fields that change memory are read, each under the names the
//! common architectures use (`num_key_value_heads`, `n_routed_experts`,
//! `layer_types`, ...). Multimodal configs nest the language model under
//! `text_config` (Gemma 3, Mistral 3, Llama 4, Kimi-VL); its fields win over
//! the top level's, which fills in the rest.

use serde::Deserialize;
use serde_json::Value;

use super::excluded_modules::{Module, Part, excluded_params_b};
use super::memory::RecurrentLayers;
use super::params::MAX_CHECKPOINT_BYTES;
use super::precision::WeightPrecision;
use super::text::thousands;

/// What sizing reads from a `config.json`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelConfig {
    /// `architectures`: the model classes vLLM is asked to load
    /// (`LlamaForCausalLM`); the top level's, not a nested language model's.
    pub(crate) architectures: Vec<String>,
    /// `model_type` of the language model (`llama`, `gemma3_text`, ...).
    pub(crate) model_type: Option<String>,
    pub(crate) layers: u32,
    pub(crate) attention_heads: u32,
    /// `num_key_value_heads`; the attention heads when absent (multi-head
    /// attention).
    pub(crate) kv_heads: u32,
    /// `head_dim`, else `hidden_size / num_attention_heads`; for MLA the
    /// query-key head (`qk_nope_head_dim + qk_rope_head_dim`).
    pub(crate) head_dim: u32,
    pub(crate) hidden_size: u32,
    pub(crate) intermediate_size: u32,
    pub(crate) vocab: u32,
    /// `max_position_embeddings`.
    pub(crate) context: Option<u64>,
    /// `tie_word_embeddings`; false when absent (the safe side: an untied
    /// lm_head is one more 16-bit matrix in a quantized checkpoint).
    pub(crate) tied_embeddings: bool,
    /// Routed experts (`num_local_experts`, `num_experts`, `n_routed_experts`).
    pub(crate) experts: u32,
    /// Experts each token is routed to.
    pub(crate) experts_per_token: u32,
    /// `moe_intermediate_size`, else `intermediate_size`.
    pub(crate) moe_intermediate_size: u32,
    /// Shared experts (DeepSeek, Kimi, Llama 4), counted in the total.
    pub(crate) shared_experts: u32,
    /// MLA: `kv_lora_rank + qk_rope_head_dim` latent elements per token and
    /// layer, 0 for ordinary attention.
    pub(crate) mla_kv_dim: u32,
    /// Layers with sliding-window attention (`layer_types`, Gemma 3's
    /// `sliding_window_pattern`, Gemma 2's alternation).
    pub(crate) sliding_layers: u32,
    /// The key dimension of a DeepSeek sparse-attention indexer
    /// (`index_head_dim` of a config with `index_topk`: DeepSeek-V3.2,
    /// GLM-5), 0 for other models.
    pub(crate) indexer_head_dim: u32,
    /// `sliding_window` in tokens, when some layers slide.
    pub(crate) sliding_window: u32,
    /// Layers with linear attention (`layer_types`, else every layer but
    /// each `full_attention_interval`-th), or Nemotron-H's Mamba-2 layers:
    /// which of the two is `recurrent`.
    pub(crate) linear_layers: u32,
    /// Their recurrent state per layer and sequence on one GPU, in bytes:
    /// for linear attention `linear_num_value_heads x linear_key_head_dim x
    /// linear_value_head_dim` at the state's dtype (`mamba_ssm_dtype`, else
    /// 16 bits), plus the convolution's `(2 x key heads x key dim + value
    /// heads x value dim) x (linear_conv_kernel_dim - 1)` at 16 bits; for
    /// Mamba-2 see [`mamba2_state_bytes`].
    pub(crate) linear_state_bytes: u64,
    /// Which kind of layer `linear_layers` counts.
    pub(crate) recurrent: RecurrentLayers,
    /// Layers that cache nothing per token: Nemotron-H's blocks of an MLP
    /// or experts alone, Nemotron-NAS's layers whose attention is a no-op.
    pub(crate) cacheless_layers: u32,
    /// Parameters (total, active) in billions counted from the shapes:
    /// [`ModelConfig::estimated_params_b`].
    shape_params_b: (f64, f64),
    /// `torch_dtype` (or `dtype`).
    pub(crate) dtype: Option<WeightPrecision>,
    /// The field and value of a `torch_dtype` (or `dtype`) that names none
    /// of the dtypes vLLM serves in, which `dtype` then leaves out.
    pub(crate) unread_dtype: Option<(&'static str, String)>,
    /// The checkpoint's quantization (`quantization_config`).
    pub(crate) quantization: Option<CheckpointQuantization>,
    /// A vision tower (`vision_config`) is part of the checkpoint.
    pub(crate) has_vision: bool,
    /// Parameters of the vision tower estimated from `vision_config`, in
    /// billions.
    pub(crate) vision_params_b: f64,
}

/// A pre-quantized checkpoint's format, from `quantization_config`.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointQuantization {
    /// `quant_method` as written (`fp8`, `compressed-tensors`, `awq`, ...).
    pub(crate) method: String,
    pub(crate) precision: WeightPrecision,
    /// MXFP4 (gpt-oss) rather than NVFP4.
    pub(crate) mxfp4: bool,
    /// Int4 weights in groups that share one 16-bit scale and no zero
    /// point (compressed-tensors' symmetric schemes; Kimi K2's 32): the
    /// group size, which sets the scales' share of the bytes.
    pub(crate) int4_group: Option<u32>,
    /// Parameters of the layers' modules the checkpoint leaves in 16 bits
    /// (its `exclude_modules`, `ignore` or `modules_to_not_convert`), in
    /// billions: 0 when it names none.
    pub(crate) excluded_b: f64,
}

/// Why a `config.json` could not be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// A value of the type sizing reads, or absent: a value of another type
/// (a string where a number belongs, a null) is read as absent, so that a
/// config.json written by a tool sizing does not know still sizes.
#[derive(Debug, Clone, PartialEq)]
struct Lenient<T>(Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Self(serde_json::from_value(Value::deserialize(d)?).ok()))
    }
}

impl Lenient<u32> {
    /// The value for the parameter arithmetic, 0 when absent.
    fn num(&self) -> f64 {
        f64::from(self.0.unwrap_or(0))
    }
}

impl Lenient<u64> {
    /// The value for the parameter arithmetic, 0 when absent.
    fn num(&self) -> f64 {
        self.0.unwrap_or(0) as f64
    }

    /// The value for the state arithmetic, 0 when absent.
    fn or_zero(&self) -> u64 {
        self.0.unwrap_or(0)
    }
}

/// The largest layer count, head count, width or vocabulary a config.json
/// may give: far beyond any model (the widest have about 2^17), small
/// enough that products of two stay exact.
const DIMENSION_MAX: u32 = 1 << 24;

/// The largest linear-attention state per layer and sequence: 1 TiB, more
/// than any GPU's memory.
const LINEAR_STATE_MAX_BYTES: u64 = 1 << 40;

/// The first of `values` that is present and positive.
fn positive(values: &[&Lenient<u32>]) -> Option<u32> {
    values.iter().find_map(|v| v.0.filter(|n| *n > 0))
}

/// The first of `values` that is present.
fn first<T: Copy>(values: &[&Lenient<T>]) -> Option<T> {
    values.iter().find_map(|v| v.0)
}

/// The fields of a config.json that change memory, under every name the
/// common architectures give them; each set of aliases is read in order.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawConfig {
    model_type: Lenient<String>,
    num_hidden_layers: Lenient<u32>,
    n_layer: Lenient<u32>,
    num_layers: Lenient<u32>,
    num_attention_heads: Lenient<u32>,
    n_head: Lenient<u32>,
    hidden_size: Lenient<u32>,
    n_embd: Lenient<u32>,
    d_model: Lenient<u32>,
    num_key_value_heads: Lenient<u32>,
    num_kv_heads: Lenient<u32>,
    kv_lora_rank: Lenient<u32>,
    qk_rope_head_dim: Lenient<u32>,
    qk_nope_head_dim: Lenient<u32>,
    q_lora_rank: Lenient<u32>,
    v_head_dim: Lenient<u32>,
    index_n_heads: Lenient<u32>,
    /// The first layers of a mixture of experts that have a dense MLP.
    first_k_dense_replace: Lenient<u32>,
    /// Gemma 4's MoE layers: a dense MLP and a block of experts side by side.
    enable_moe_block: Lenient<bool>,
    top_k_experts: Lenient<u32>,
    /// Qwen3-Next and Qwen3.5 gate the attention's output with a second
    /// query-sized projection.
    attn_output_gate: Lenient<bool>,
    attention_bias: Lenient<bool>,
    index_head_dim: Lenient<u32>,
    index_topk: Lenient<u32>,
    head_dim: Lenient<u32>,
    intermediate_size: Lenient<u32>,
    ffn_dim: Lenient<u32>,
    n_inner: Lenient<u32>,
    num_local_experts: Lenient<u32>,
    num_experts: Lenient<u32>,
    n_routed_experts: Lenient<u32>,
    moe_num_experts: Lenient<u32>,
    num_experts_per_tok: Lenient<u32>,
    num_experts_per_token: Lenient<u32>,
    moe_topk: Lenient<u32>,
    experts_per_token: Lenient<u32>,
    moe_intermediate_size: Lenient<u32>,
    expert_intermediate_size: Lenient<u32>,
    n_shared_experts: Lenient<u32>,
    num_shared_experts: Lenient<u32>,
    shared_expert_intermediate_size: Lenient<u64>,
    vocab_size: Lenient<u32>,
    padded_vocab_size: Lenient<u32>,
    max_position_embeddings: Lenient<u64>,
    n_positions: Lenient<u64>,
    seq_length: Lenient<u64>,
    tie_word_embeddings: Lenient<bool>,
    /// NVIDIA's Nemotron-NAS (DeciLM): each layer's own attention and MLP.
    block_configs: Lenient<Vec<DeciBlock>>,
    layer_types: Lenient<Vec<Lenient<String>>>,
    sliding_window: Lenient<u32>,
    use_sliding_window: Lenient<bool>,
    sliding_window_pattern: Lenient<u32>,
    /// Gemma 4's full-attention layers: their own head size and, when
    /// `attention_k_eq_v`, KV heads (vLLM loads their keys as values too).
    global_head_dim: Lenient<u32>,
    num_global_key_value_heads: Lenient<u32>,
    attention_k_eq_v: Lenient<bool>,
    full_attention_interval: Lenient<u32>,
    linear_num_key_heads: Lenient<u64>,
    linear_key_head_dim: Lenient<u64>,
    linear_num_value_heads: Lenient<u64>,
    linear_value_head_dim: Lenient<u64>,
    linear_conv_kernel_dim: Lenient<u64>,
    /// The recurrent state's dtype (Qwen3.5: `float32`).
    mamba_ssm_dtype: Lenient<String>,
    /// Nemotron-H: one letter per layer (`M` Mamba-2, `*` attention, `-`
    /// MLP, `E` experts), or the same as names (`layers_block_type`).
    hybrid_override_pattern: Lenient<String>,
    layers_block_type: Lenient<Vec<Lenient<String>>>,
    mamba_num_heads: Lenient<u64>,
    mamba_head_dim: Lenient<u64>,
    n_groups: Lenient<u64>,
    ssm_state_size: Lenient<u64>,
    conv_kernel: Lenient<u64>,
    /// Nemotron-H's temporal state dtype (`float32`; vLLM's default for it
    /// is float16).
    mamba_ssm_cache_dtype: Lenient<String>,
    /// Nemotron-H's experts work on a smaller latent of the hidden state.
    moe_latent_size: Lenient<u64>,
    moe_shared_expert_intermediate_size: Lenient<u64>,
    torch_dtype: Lenient<String>,
    dtype: Lenient<String>,
    quantization_config: Lenient<QuantizationConfig>,
    vision_config: Lenient<VisionConfig>,
}

/// `quantization_config`, or the hf_quant_config.json of a checkpoint made
/// by ModelOpt 0.29 or earlier, which vLLM reads in its place when
/// config.json has none (see [`QuantizationConfig::unnested`]).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
struct QuantizationConfig {
    quant_method: Lenient<String>,
    /// hf_quant_config.json's: who wrote it, and what it says.
    producer: Lenient<Producer>,
    quantization: Lenient<Box<QuantizationConfig>>,
    bits: Lenient<u64>,
    load_in_8bit: Lenient<bool>,
    quant_algo: Lenient<String>,
    /// compressed-tensors' groups, in the file's order.
    config_groups: Lenient<serde_json::Map<String, Value>>,
    /// The modules left in 16 bits: modelopt's.
    exclude_modules: Lenient<Vec<String>>,
    /// compressed-tensors'.
    ignore: Lenient<Vec<String>>,
    /// gpt-oss's (MXFP4).
    modules_to_not_convert: Lenient<Vec<String>>,
}

/// hf_quant_config.json's `producer`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
struct Producer {
    name: Lenient<String>,
}

impl QuantizationConfig {
    /// ModelOpt's hf_quant_config.json nests its method, algorithm and
    /// exclusions under `quantization`, with no `quant_method`: read it as
    /// the config.json form vLLM turns it into (`modelopt`).
    fn unnested(mut self) -> QuantizationConfig {
        let by_modelopt =
            self.producer.0.as_ref().and_then(|p| p.name.0.as_deref()) == Some("modelopt");
        match self.quantization.0.take() {
            Some(inner) if by_modelopt && self.quant_method.0.is_none() => QuantizationConfig {
                quant_method: Lenient(Some("modelopt".into())),
                ..*inner
            },
            _ => self,
        }
    }

    /// The modules the checkpoint leaves in 16 bits, in whichever list its
    /// format writes them.
    fn excluded_modules(&self) -> Vec<String> {
        [
            &self.exclude_modules,
            &self.ignore,
            &self.modules_to_not_convert,
        ]
        .into_iter()
        .filter_map(|list| list.0.clone())
        .flatten()
        .collect()
    }
}

/// The `weights` of a compressed-tensors config group.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct GroupWeights {
    num_bits: Lenient<u64>,
    #[serde(rename = "type")]
    kind: Lenient<String>,
    group_size: Lenient<u32>,
    symmetric: Lenient<bool>,
}

/// `vision_config`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
struct VisionConfig {
    hidden_size: Lenient<u32>,
    embed_dim: Lenient<u32>,
    width: Lenient<u32>,
    num_hidden_layers: Lenient<u32>,
    depth: Lenient<u32>,
    num_layers: Lenient<u32>,
    intermediate_size: Lenient<u32>,
    hidden_act: Lenient<String>,
}

/// The dtypes vLLM serves in, by their torch names (transformers reads the
/// field as `getattr(torch, name)`, so `half` and `float` are theirs too).
fn dtype_of(s: &str) -> Option<WeightPrecision> {
    match s {
        "bfloat16" => Some(WeightPrecision::Bf16),
        "float16" | "half" => Some(WeightPrecision::Fp16),
        "float32" | "float" => Some(WeightPrecision::Fp32),
        _ => None,
    }
}

impl ModelConfig {
    /// Parses a `config.json`. The language model's layers, heads and hidden
    /// size are required; everything else has a documented default.
    pub fn from_json(text: &str) -> Result<ModelConfig, ConfigError> {
        Self::from_files(text, None)
    }

    /// Parses a `config.json` and the `hf_quant_config.json` beside it, if
    /// any: as vLLM does, that file is the quantization_config of a
    /// config.json that has none (ModelOpt 0.29 and earlier wrote it apart).
    /// The file is read by [`read_hf_quant_config`].
    pub fn from_files(
        text: &str,
        hf_quant_config: Option<Value>,
    ) -> Result<ModelConfig, ConfigError> {
        let root: Value = serde_json::from_str(&non_finite_as_null(text))
            .map_err(|e| ConfigError(format!("config.json is not valid JSON: {e}")))?;
        let Some(top) = root.as_object() else {
            return Err(ConfigError("config.json is not a JSON object".into()));
        };
        // The language model of a multimodal config, with the top level
        // filling in what it lacks (vocab_size, tie_word_embeddings, ...);
        // the checkpoint's quantization, tied embeddings and vision tower
        // are the top level's first.
        let mut merged = top.clone();
        if let Some(text_cfg) = top
            .get("text_config")
            .or_else(|| top.get("language_config"))
            .and_then(Value::as_object)
        {
            for (k, v) in text_cfg {
                if !matches!(
                    k.as_str(),
                    "quantization_config" | "tie_word_embeddings" | "vision_config"
                ) || !top.contains_key(k)
                {
                    merged.insert(k.clone(), v.clone());
                }
            }
        }
        if let Some(file) = hf_quant_config
            && merged.get("quantization_config").is_none_or(Value::is_null)
        {
            merged.insert("quantization_config".into(), file);
        }
        let mut m = RawConfig::deserialize(&Value::Object(merged.clone()))
            .map_err(|e| ConfigError(format!("config.json cannot be read: {e}")))?;
        m.quantization_config.0 = m
            .quantization_config
            .0
            .take()
            .map(QuantizationConfig::unnested);
        let missing = |field: &str| match merged.get(field) {
            Some(value) => ConfigError(format!(
                "config.json's {field} is {}, not a whole number above zero",
                crate::quote::shown_value(value)
            )),
            None => ConfigError(format!(
                "config.json has no {field} (nor under text_config): it does not describe a language model sizing can read"
            )),
        };
        let blocks = Blocks::of(&m);
        // vLLM builds a Nemotron-H layer per letter of its pattern.
        let layers = blocks
            .map(Blocks::layers)
            .filter(|n| *n > 0)
            .or_else(|| positive(&[&m.num_hidden_layers, &m.n_layer, &m.num_layers]))
            .ok_or_else(|| missing("num_hidden_layers"))?;
        let attention_heads = positive(&[&m.num_attention_heads, &m.n_head])
            .ok_or_else(|| missing("num_attention_heads"))?;
        let hidden_size = positive(&[&m.hidden_size, &m.n_embd, &m.d_model])
            .ok_or_else(|| missing("hidden_size"))?;
        let deci = DeciLayers::of(&m, attention_heads, hidden_size);
        let kv_heads = positive(&[&m.num_key_value_heads, &m.num_kv_heads])
            .or(deci.as_ref().map(|d| d.kv_heads))
            .unwrap_or(attention_heads);
        let kv_lora = m.kv_lora_rank.0.unwrap_or(0);
        let rope = m.qk_rope_head_dim.0.unwrap_or(0);
        let nope = m.qk_nope_head_dim.0.unwrap_or(0);
        let mla_kv_dim = if kv_lora > 0 {
            kv_lora.saturating_add(rope)
        } else {
            0
        };
        // vLLM gives a layer its indexer when the config has index_topk
        // (deepseek_v2.py's is_v32).
        let indexer_head_dim = match (mla_kv_dim, m.index_topk.0) {
            (1.., Some(_)) => m.index_head_dim.0.unwrap_or(0),
            _ => 0,
        };
        let head_dim = if kv_lora > 0 && nope.saturating_add(rope) > 0 {
            nope.saturating_add(rope)
        } else {
            positive(&[&m.head_dim]).unwrap_or(hidden_size / attention_heads)
        };
        let intermediate_size = first(&[&m.intermediate_size, &m.ffn_dim, &m.n_inner])
            .unwrap_or(hidden_size.saturating_mul(4));
        let experts = first(&[
            &m.num_local_experts,
            &m.num_experts,
            &m.n_routed_experts,
            &m.moe_num_experts,
        ])
        .unwrap_or(0);
        let experts_per_token = first(&[
            &m.num_experts_per_tok,
            &m.num_experts_per_token,
            &m.moe_topk,
            &m.experts_per_token,
            &m.top_k_experts,
        ])
        .unwrap_or(if experts > 0 { 2 } else { 0 });
        let moe_intermediate_size = first(&[&m.moe_intermediate_size, &m.expert_intermediate_size])
            .unwrap_or(intermediate_size);
        let shared_experts = first(&[&m.n_shared_experts, &m.num_shared_experts])
            .unwrap_or(0)
            .max(u32::from(
                m.shared_expert_intermediate_size.0.is_some_and(|v| v > 0),
            ));
        let sliding_layers = sliding_layers(&m, layers);
        let sliding_window = if sliding_layers > 0 {
            m.sliding_window.0.unwrap_or(0)
        } else {
            0
        };
        let (linear_layers, linear_state_bytes, recurrent) = match blocks {
            Some(b) if b.mamba > 0 => (b.mamba, mamba2_state_bytes(&m), RecurrentLayers::Mamba),
            _ => {
                let linear = linear_layers(&m, layers);
                let state = if linear > 0 {
                    linear_state_bytes(&m)
                } else {
                    0
                };
                (linear, state, RecurrentLayers::LinearAttention)
            }
        };
        let written = [("torch_dtype", &m.torch_dtype), ("dtype", &m.dtype)];
        let dtype = written
            .iter()
            .find_map(|(_, d)| d.0.as_deref().and_then(dtype_of));
        let unread_dtype = written
            .into_iter()
            .find_map(|(field, d)| Some((field, d.0.clone()?)))
            .filter(|_| dtype.is_none());
        let vision = m.vision_config.0.as_ref();
        let mut config = ModelConfig {
            architectures: top
                .get("architectures")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            model_type: m.model_type.0.clone(),
            layers,
            attention_heads,
            kv_heads,
            head_dim,
            hidden_size,
            intermediate_size,
            vocab: first(&[&m.vocab_size, &m.padded_vocab_size]).unwrap_or(0),
            context: first(&[&m.max_position_embeddings, &m.n_positions, &m.seq_length]),
            tied_embeddings: m.tie_word_embeddings.0.unwrap_or(false),
            experts,
            experts_per_token,
            moe_intermediate_size,
            shared_experts,
            mla_kv_dim,
            indexer_head_dim,
            sliding_layers,
            sliding_window,
            linear_layers,
            linear_state_bytes,
            recurrent,
            cacheless_layers: blocks
                .map(|b| b.mlp + b.moe)
                .or(deci.as_ref().map(|d| d.without_attention))
                .unwrap_or(0),
            shape_params_b: (0.0, 0.0),
            dtype,
            unread_dtype,
            quantization: m
                .quantization_config
                .0
                .as_ref()
                .and_then(checkpoint_quantization),
            has_vision: vision.is_some(),
            vision_params_b: vision.map(vision_params_b).unwrap_or(0.0),
        };
        config.check_dimensions()?;
        let (shape_params_b, layers) = match (blocks, &deci) {
            (Some(b), _) => (b.params_b(&m, &config), None),
            (None, Some(d)) => ((d.params_b, d.params_b), None),
            (None, None) => {
                let kinds = LayerKinds::of(&m, &config);
                let layers = kinds.layers(&m, &config);
                (uniform_params_b(&config, &kinds, &layers), Some(layers))
            }
        };
        config.shape_params_b = shape_params_b;
        // Models whose layers are alike: the others' modules are not named.
        let excluded_b = match (&layers, &m.quantization_config.0) {
            (Some(layers), Some(q)) => excluded_params_b(&q.excluded_modules(), layers),
            _ => 0.0,
        };
        if let Some(q) = config.quantization.as_mut() {
            q.excluded_b = excluded_b;
        }
        Ok(config)
    }

    /// Refuses shapes no model has, naming the field: a ConfigMap's
    /// config.json is anyone's text, and the memory arithmetic multiplies
    /// these numbers (a hidden_size of 4294967295 once overflowed it).
    fn check_dimensions(&self) -> Result<(), ConfigError> {
        let dimensions = [
            ("num_hidden_layers", self.layers),
            ("num_attention_heads", self.attention_heads),
            ("num_key_value_heads", self.kv_heads),
            // Before head_dim, which is hidden_size / heads unless given.
            ("hidden_size", self.hidden_size),
            ("head_dim", self.head_dim),
            ("intermediate_size", self.intermediate_size),
            ("vocab_size", self.vocab),
            ("num_experts", self.experts),
            ("num_experts_per_tok", self.experts_per_token),
            ("moe_intermediate_size", self.moe_intermediate_size),
            ("n_shared_experts", self.shared_experts),
            ("kv_lora_rank + qk_rope_head_dim", self.mla_kv_dim),
            ("index_head_dim", self.indexer_head_dim),
            ("sliding_window", self.sliding_window),
        ]
        .map(|(field, value)| (field, u64::from(value)));
        // vLLM's rotary cache holds a row per position on every GPU.
        let context = ("max_position_embeddings", self.context.unwrap_or(0));
        for (field, value) in dimensions.into_iter().chain([context]) {
            if value > u64::from(DIMENSION_MAX) {
                return Err(ConfigError(format!(
                    "config.json {field} is {value}, more than any model has (at most {})",
                    thousands(u64::from(DIMENSION_MAX))
                )));
            }
        }
        if self.kv_heads > self.attention_heads {
            return Err(ConfigError(format!(
                "config.json num_key_value_heads is {}, more than num_attention_heads {}: each KV head serves one or more attention heads",
                self.kv_heads, self.attention_heads
            )));
        }
        // vLLM's Attention layer asserts it when the model loads.
        if !self.attention_heads.is_multiple_of(self.kv_heads) {
            return Err(ConfigError(format!(
                "config.json num_attention_heads {} is not a multiple of num_key_value_heads {}: each KV head serves the same number of attention heads, and vLLM refuses the model otherwise",
                self.attention_heads, self.kv_heads
            )));
        }
        if self.experts > 0 && self.experts_per_token > self.experts {
            return Err(ConfigError(format!(
                "config.json num_experts_per_tok is {}, more than its {} experts: each token is routed to some of the experts",
                self.experts_per_token, self.experts
            )));
        }
        if self.linear_state_bytes > LINEAR_STATE_MAX_BYTES {
            return Err(ConfigError(format!(
                "config.json's linear-attention shapes (linear_num_value_heads, linear_key_head_dim, linear_value_head_dim, ...) give {} bytes of state per layer and sequence, more than a GPU holds",
                self.linear_state_bytes
            )));
        }
        Ok(())
    }

    /// Parameters (total, active) in billions counted from the shapes, as
    /// vLLM builds the layers (see [`uniform_params_b`] and, for a model
    /// with one kind per layer, `Blocks::params_b`). The weights index gives
    /// the exact bytes; this is the fallback.
    pub(crate) fn estimated_params_b(&self) -> (f64, f64) {
        self.shape_params_b
    }
}

/// Parameters (total, active) in billions of a model whose layers are alike
/// but for their attention, counted from the shapes: embeddings; each
/// layer's attention (grouped-query with its output gate and biases; MLA
/// with its low-rank projections and a sparse-attention indexer; or, on
/// linear-attention layers, Gated DeltaNet's projections and convolution)
/// and its gated MLP, or experts with their shared experts and router after
/// the first `first_k_dense_replace` dense layers; and the vision tower.
/// Norms, a few thousand parameters a layer, are left out.
fn uniform_params_b(c: &ModelConfig, kinds: &LayerKinds, layers: &[Vec<Module>]) -> (f64, f64) {
    let sum = |attention: bool| {
        layers
            .iter()
            .flatten()
            .filter(|m| matches!(m.part, Part::Attention | Part::LinearAttention) == attention)
            .map(|m| m.params)
            .sum::<f64>()
    };
    let (attention, mlp) = (sum(true), sum(false));
    // The routed experts a token does not reach.
    let moe_layers = (0..c.layers).filter(|&i| kinds.is_moe_layer(c, i)).count() as f64;
    let idle = moe_layers * (f64::from(c.experts) - f64::from(c.experts_per_token)) * kinds.expert;
    let h = f64::from(c.hidden_size);
    let embeddings = f64::from(c.vocab) * h * if c.tied_embeddings { 1.0 } else { 2.0 };
    let fixed = embeddings + c.vision_params_b * 1e9;
    (
        (fixed + attention + mlp) / 1e9,
        (fixed + attention + (mlp - idle)) / 1e9,
    )
}

/// The modules of each kind of layer of a model whose layers are alike, as
/// vLLM builds them and checkpoints name them (see [`uniform_params_b`]).
struct LayerKinds {
    /// A full-attention layer's attention (a sliding-window layer's too).
    attention: Vec<Module>,
    /// Gemma 4's full-attention layers' attention, of their own shape.
    global_attention: Option<Vec<Module>>,
    /// A linear-attention layer's Gated DeltaNet.
    linear: Vec<Module>,
    /// A dense layer's gated MLP.
    dense_mlp: Vec<Module>,
    /// What every expert layer has besides its routed experts: shared
    /// experts and the router.
    moe_fixed: Vec<Module>,
    /// One routed expert's parameters.
    expert: f64,
    /// The dense layers before the experts (`first_k_dense_replace`).
    dense_layers: u32,
    /// Every expert layer also has a dense MLP, its experts in a block of
    /// their own (Gemma 4's `enable_moe_block`).
    dense_beside_experts: bool,
}

impl LayerKinds {
    fn of(m: &RawConfig, c: &ModelConfig) -> LayerKinds {
        use Part::{Attention, LinearAttention, Mlp};
        let h = f64::from(c.hidden_size);
        let (heads, kv_heads, d) = (
            f64::from(c.attention_heads),
            f64::from(c.kv_heads),
            f64::from(c.head_dim),
        );
        // Projections of `kv_heads` KV heads of `d`, with Qwen's output
        // gate and the biases the config names.
        let standard_attention = |kv_heads: f64, d: f64| {
            let gate = if m.attn_output_gate.0 == Some(true) {
                2.0
            } else {
                1.0
            };
            let bias = if m.attention_bias.0 == Some(true) {
                heads * d + 2.0 * kv_heads * d
            } else {
                0.0
            };
            vec![
                Module::new(Attention, &["q_proj"], h * heads * d * gate),
                Module::new(Attention, &["k_proj"], h * kv_heads * d),
                Module::new(Attention, &["v_proj"], h * kv_heads * d),
                Module::new(Attention, &["o_proj"], heads * d * h + bias),
            ]
        };
        let attention = if c.mla_kv_dim > 0 {
            let (rank, rope, nope) = (
                m.kv_lora_rank.num(),
                m.qk_rope_head_dim.num(),
                m.qk_nope_head_dim.num(),
            );
            let v = m.v_head_dim.0.map_or(nope, f64::from);
            let q_rank = m.q_lora_rank.num();
            let mut modules = if q_rank > 0.0 {
                vec![
                    Module::new(Attention, &["q_a_proj"], h * q_rank),
                    Module::new(Attention, &["q_b_proj"], q_rank * heads * (nope + rope)),
                ]
            } else {
                vec![Module::new(
                    Attention,
                    &["q_proj"],
                    h * heads * (nope + rope),
                )]
            };
            modules.extend([
                Module::new(Attention, &["kv_a_proj_with_mqa"], h * (rank + rope)),
                Module::new(Attention, &["kv_b_proj"], rank * heads * (nope + v)),
                Module::new(Attention, &["o_proj"], heads * v * h),
            ]);
            let index_dim = f64::from(c.indexer_head_dim);
            if index_dim > 0.0 {
                let index_heads = m.index_n_heads.num();
                modules.push(Module::new(
                    Attention,
                    &["indexer.wk"],
                    q_rank * index_heads * index_dim + h * index_dim + h * index_heads,
                ));
            }
            modules
        } else {
            standard_attention(kv_heads, d)
        };
        let global_attention = m.global_head_dim.0.map(|global_d| {
            let global_kv = match m.num_global_key_value_heads.0 {
                Some(n) if m.attention_k_eq_v.0 == Some(true) => f64::from(n),
                _ => kv_heads,
            };
            standard_attention(global_kv, f64::from(global_d))
        });
        let linear = {
            let (key_heads, key_dim) = (m.linear_num_key_heads.num(), m.linear_key_head_dim.num());
            let (value_heads, value_dim) = (
                m.linear_num_value_heads.num(),
                m.linear_value_head_dim.num(),
            );
            let conv_dim = 2.0 * key_heads * key_dim + value_heads * value_dim;
            let params = h * (2.0 * key_heads * key_dim + 2.0 * value_heads * value_dim)
                + h * 2.0 * value_heads
                + conv_dim * m.linear_conv_kernel_dim.num()
                + 2.0 * value_heads
                + value_dim
                + value_heads * value_dim * h;
            vec![Module::new(LinearAttention, &["in_proj_qkvz"], params)]
        };
        let projection = h * f64::from(c.intermediate_size);
        let dense_mlp = vec![
            Module::new(Mlp, &["gate_proj"], projection),
            Module::new(Mlp, &["up_proj"], projection),
            Module::new(Mlp, &["down_proj"], projection),
        ];
        let expert = 3.0 * h * f64::from(c.moe_intermediate_size);
        let shared = match m.shared_expert_intermediate_size.num() {
            // Qwen's one shared expert of its own size, with its gate.
            size if size > 0.0 => 3.0 * h * size + h,
            _ => f64::from(c.shared_experts) * expert,
        };
        let moe_fixed = vec![
            Module::new(
                Mlp,
                &["shared_experts.down_proj", "shared_expert.down_proj"],
                shared,
            ),
            Module::new(Mlp, &["gate"], h * f64::from(c.experts)),
        ];
        LayerKinds {
            attention,
            global_attention,
            linear,
            dense_mlp,
            moe_fixed,
            expert,
            dense_layers: m.first_k_dense_replace.0.unwrap_or(0).min(c.layers),
            dense_beside_experts: m.enable_moe_block.0 == Some(true),
        }
    }

    /// Each layer's modules, in order: its attention or Gated DeltaNet, and
    /// its MLP or experts.
    fn layers(&self, m: &RawConfig, c: &ModelConfig) -> Vec<Vec<Module>> {
        let experts = Module::new(
            if self.dense_beside_experts {
                Part::MoeBlock
            } else {
                Part::Mlp
            },
            &["experts.0.down_proj"],
            f64::from(c.experts) * self.expert,
        );
        (0..c.layers)
            .map(|i| {
                let mut modules = match &self.global_attention {
                    _ if is_linear_layer(m, i) => self.linear.clone(),
                    Some(global) if !is_sliding_layer(m, i) => global.clone(),
                    _ => self.attention.clone(),
                };
                if !self.is_moe_layer(c, i) || self.dense_beside_experts {
                    modules.extend(self.dense_mlp.iter().cloned());
                }
                if self.is_moe_layer(c, i) {
                    modules.extend(self.moe_fixed.iter().cloned());
                    modules.push(experts.clone());
                }
                modules
            })
            .collect()
    }

    /// Whether layer `i` (from 0) has experts: past the dense layers of a
    /// mixture of experts.
    fn is_moe_layer(&self, c: &ModelConfig, i: u32) -> bool {
        c.experts > 0 && i >= self.dense_layers
    }
}

/// `text` with each bare `NaN`, `Infinity` and `-Infinity` outside a string
/// written as `null`. transformers writes config.json with Python's json
/// module, which writes a non-finite float as one of those words, and JSON
/// has none of them (NVIDIA's Nemotron-H configs hold `"time_step_limit":
/// [0.0, Infinity]`): serde_json would refuse the whole file. No field
/// sizing reads takes one, and a null reads as absent.
fn non_finite_as_null(text: &str) -> std::borrow::Cow<'_, str> {
    const WORDS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];
    if !WORDS.iter().any(|w| text.contains(w)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            (in_string, escaped) = (escaped || c != '"', !escaped && c == '\\');
        } else if c == '"' {
            in_string = true;
        } else if let Some(word) = WORDS.iter().find(|w| rest.starts_with(**w)) {
            out.push_str("null");
            rest = &rest[word.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    std::borrow::Cow::Owned(out)
}

/// Sliding-window layers: `layer_types` when given; Gemma 3's
/// `sliding_window_pattern` (every n-th layer is global); Gemma 2's 1:1
/// alternation. A `sliding_window` on every layer (Mistral 7B v0.1) is one
/// kind of layer, which the KV cache counts like full attention, so 0.
fn sliding_layers(m: &RawConfig, layers: u32) -> u32 {
    if let Some(n) = layers_of_type(m, "sliding", layers) {
        return n;
    }
    if m.sliding_window.0.is_none_or(|w| w == 0) || m.use_sliding_window.0 == Some(false) {
        return 0;
    }
    if let Some(pattern) = m.sliding_window_pattern.0.filter(|p| *p > 1) {
        return layers - layers / pattern;
    }
    match m.model_type.0.as_deref() {
        Some("gemma2") => layers / 2,
        Some("gemma3" | "gemma3_text") => layers - layers / 6,
        _ => 0,
    }
}

/// The layers `layer_types` names with `kind` in their type (for example
/// `sliding_attention`), at most `layers`; `None` without `layer_types`.
fn layers_of_type(m: &RawConfig, kind: &str, layers: u32) -> Option<u32> {
    let types = m.layer_types.0.as_ref()?;
    let n = types
        .iter()
        .filter(|t| t.0.as_deref().is_some_and(|s| s.contains(kind)))
        .count();
    Some(u32::try_from(n).unwrap_or(0).min(layers))
}

/// Whether `layer_types` gives layer `i` (from 0) a type with `kind` in it
/// (`sliding_attention`); `None` without `layer_types`.
fn layer_is(m: &RawConfig, i: u32, kind: &str) -> Option<bool> {
    let types = m.layer_types.0.as_ref()?;
    Some(
        types
            .get(i as usize)
            .and_then(|t| t.0.as_deref())
            .is_some_and(|t| t.contains(kind)),
    )
}

/// Whether layer `i` (from 0) has sliding-window attention, as its
/// `layer_types` entry says.
fn is_sliding_layer(m: &RawConfig, i: u32) -> bool {
    layer_is(m, i, "sliding").unwrap_or(false)
}

/// Whether layer `i` (from 0) is one of [`linear_layers`].
fn is_linear_layer(m: &RawConfig, i: u32) -> bool {
    if let Some(linear) = layer_is(m, i, "linear") {
        return linear;
    }
    match m.full_attention_interval.0.filter(|n| *n > 1) {
        Some(n) if m.linear_num_value_heads.0.is_some() => !(i + 1).is_multiple_of(n),
        _ => false,
    }
}

/// Linear-attention layers: `layer_types` when given, else every layer but
/// each `full_attention_interval`-th (Qwen3-Next).
fn linear_layers(m: &RawConfig, layers: u32) -> u32 {
    if let Some(n) = layers_of_type(m, "linear", layers) {
        return n;
    }
    match m.full_attention_interval.0.filter(|i| *i > 1) {
        Some(interval) if m.linear_num_value_heads.0.is_some() => layers - layers / interval,
        _ => 0,
    }
}

/// The kinds of layer a hybrid model with one kind per layer has
/// (Nemotron-H: `hybrid_override_pattern` or `layers_block_type`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Blocks {
    mamba: u32,
    attention: u32,
    mlp: u32,
    moe: u32,
}

impl Blocks {
    fn of(m: &RawConfig) -> Option<Blocks> {
        let kinds: Vec<char> = match (&m.hybrid_override_pattern.0, &m.layers_block_type.0) {
            (Some(pattern), _) => pattern.chars().collect(),
            (None, Some(names)) => names
                .iter()
                .map(|n| match n.0.as_deref() {
                    Some("mamba") => 'M',
                    Some("attention") => '*',
                    Some("mlp") => '-',
                    Some("moe") => 'E',
                    _ => '?',
                })
                .collect(),
            (None, None) => return None,
        };
        let count = |kind: char| {
            u32::try_from(kinds.iter().filter(|k| **k == kind).count()).unwrap_or(u32::MAX)
        };
        Some(Blocks {
            mamba: count('M'),
            attention: count('*'),
            mlp: count('-'),
            moe: count('E'),
        })
    }

    fn layers(self) -> u32 {
        self.mamba
            .saturating_add(self.attention)
            .saturating_add(self.mlp)
            .saturating_add(self.moe)
    }

    /// Parameters (total, active) in billions, block by block as vLLM's
    /// NemotronH builds them: a Mamba-2 mixer (input projection to x, z, B,
    /// C and dt; convolution; A, D, dt bias; gated norm; output projection),
    /// attention, a non-gated MLP (up and down), or experts (non-gated,
    /// on the latent when `moe_latent_size` is set, with a shared expert and
    /// a router), each after a norm; embeddings and lm_head.
    fn params_b(self, m: &RawConfig, c: &ModelConfig) -> (f64, f64) {
        let h = f64::from(c.hidden_size);
        let (inner, groups, state) = mamba2_shape(m);
        let mamba_heads = m.mamba_num_heads.num();
        let conv_dim = inner + 2.0 * groups * state;
        let kernel = m.conv_kernel.num();
        let mamba = h * (2.0 * inner + 2.0 * groups * state + mamba_heads)
            + conv_dim * (kernel + 1.0)
            + 3.0 * mamba_heads
            + inner
            + inner * h;
        let head_dim = f64::from(c.head_dim);
        let q = f64::from(c.attention_heads) * head_dim;
        let attention = 2.0 * h * q + 2.0 * h * f64::from(c.kv_heads) * head_dim;
        let mlp = 2.0 * h * m.intermediate_size.num();
        let experts = f64::from(first(&[&m.n_routed_experts, &m.num_experts]).unwrap_or(0));
        let per_token = m.num_experts_per_tok.num();
        let latent = m.moe_latent_size.num();
        let expert = 2.0 * if latent > 0.0 { latent } else { h } * m.moe_intermediate_size.num();
        let shared =
            2.0 * h * m.moe_shared_expert_intermediate_size.num() * m.n_shared_experts.num();
        let moe_fixed = h * experts + experts + shared + 2.0 * h * latent;
        let vocab = m.vocab_size.num();
        let tied = m.tie_word_embeddings.0.unwrap_or(false);
        let fixed = vocab * h * if tied { 1.0 } else { 2.0 }
            + f64::from(self.layers() + 1) * h
            + f64::from(self.mamba) * mamba
            + f64::from(self.attention) * attention
            + f64::from(self.mlp) * mlp
            + f64::from(self.moe) * moe_fixed;
        let moe = f64::from(self.moe);
        (
            (fixed + moe * experts * expert) / 1e9,
            (fixed + moe * per_token * expert) / 1e9,
        )
    }
}

/// One layer of a Nemotron-NAS (DeciLM) model, as its `block_configs` says.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct DeciBlock {
    attention: DeciAttention,
    ffn: DeciFfn,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct DeciAttention {
    no_op: Lenient<bool>,
    /// Attention heads per KV head.
    n_heads_in_group: Lenient<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct DeciFfn {
    no_op: Lenient<bool>,
    ffn_mult: Lenient<f64>,
    intermediate_size: Lenient<u32>,
}

/// What a Nemotron-NAS model's layers add up to, as vLLM's DeciLM builds
/// them: a layer whose attention is a no-op caches nothing; the others
/// cache `heads / n_heads_in_group` KV heads (the most of any layer, so
/// that a plan never promises more cache than one layer leaves); each MLP
/// is `ffn_mult x 2/3 x hidden` rounded up to 256 wide, gated.
struct DeciLayers {
    kv_heads: u32,
    without_attention: u32,
    params_b: f64,
}

impl DeciLayers {
    fn of(m: &RawConfig, heads: u32, hidden: u32) -> Option<DeciLayers> {
        let blocks = m.block_configs.0.as_ref().filter(|b| !b.is_empty())?;
        let h = f64::from(hidden);
        let head_dim = f64::from(hidden / heads.max(1));
        let q = f64::from(heads) * head_dim;
        let vocab = m.vocab_size.num();
        let tied = m.tie_word_embeddings.0.unwrap_or(false);
        let mut params = vocab * h * if tied { 1.0 } else { 2.0 };
        let (mut kv_heads, mut without_attention) = (0, 0);
        for b in blocks {
            if b.attention.no_op.0 == Some(true) {
                without_attention += 1;
            } else {
                let group = b
                    .attention
                    .n_heads_in_group
                    .0
                    .filter(|g| *g > 0)
                    .unwrap_or(1);
                let kv = (heads / group).max(1);
                kv_heads = kv_heads.max(kv);
                params += 2.0 * h * q + 2.0 * h * f64::from(kv) * head_dim;
            }
            if b.ffn.no_op.0 != Some(true) {
                let width = match (b.ffn.ffn_mult.0, b.ffn.intermediate_size.0) {
                    (Some(mult), _) => ((2.0 * mult * h / 3.0).floor() / 256.0).ceil() * 256.0,
                    (None, Some(width)) => f64::from(width),
                    (None, None) => 0.0,
                };
                params += 3.0 * h * width;
            }
        }
        Some(DeciLayers {
            kv_heads: kv_heads.max(1),
            without_attention,
            params_b: params / 1e9,
        })
    }
}

/// A Mamba-2 mixer's inner width (heads x head dim), groups and state size.
fn mamba2_shape(m: &RawConfig) -> (f64, f64, f64) {
    (
        m.mamba_num_heads.num() * m.mamba_head_dim.num(),
        m.n_groups.num(),
        m.ssm_state_size.num(),
    )
}

/// A Mamba-2 layer's state per sequence, in bytes, as vLLM allocates it
/// (`MambaStateShapeCalculator.mamba2_state_shape`): the convolution's
/// `(heads x head dim + 2 x groups x state size) x (conv_kernel - 1)` at
/// 16 bits, and the temporal `heads x head dim x state size` at
/// `mamba_ssm_cache_dtype` (vLLM's `NemotronHForCausalLMConfig` takes the
/// config's, else float16).
fn mamba2_state_bytes(m: &RawConfig) -> u64 {
    let inner = m
        .mamba_num_heads
        .or_zero()
        .saturating_mul(m.mamba_head_dim.or_zero());
    let conv = inner
        .saturating_add(
            2u64.saturating_mul(m.n_groups.or_zero())
                .saturating_mul(m.ssm_state_size.or_zero()),
        )
        .saturating_mul(m.conv_kernel.or_zero().max(1) - 1);
    let temporal = inner.saturating_mul(m.ssm_state_size.or_zero());
    recurrent_state_bytes(conv, temporal, &m.mamba_ssm_cache_dtype)
}

/// A recurrent layer's state in bytes: `conv` convolution elements at 16
/// bits and `temporal` elements at `dtype` (4 B for float32, else 2).
fn recurrent_state_bytes(conv: u64, temporal: u64, dtype: &Lenient<String>) -> u64 {
    let temporal_bytes = match dtype.0.as_deref() {
        Some("float32") => 4,
        _ => 2,
    };
    conv.saturating_mul(2)
        .saturating_add(temporal.saturating_mul(temporal_bytes))
}

/// A linear-attention layer's recurrent state per sequence, in bytes: the
/// temporal state and the convolution's, as vLLM allocates them. vLLM keeps
/// the temporal state in the config's `mamba_ssm_dtype` when it names one
/// (its `Qwen3_5ForConditionalGenerationConfig`; Qwen3.5 says float32), the
/// convolution's in the model's 16 bits.
fn linear_state_bytes(m: &RawConfig) -> u64 {
    let (key_heads, key_dim) = (
        m.linear_num_key_heads.or_zero(),
        m.linear_key_head_dim.or_zero(),
    );
    let (value_heads, value_dim) = (
        m.linear_num_value_heads.or_zero(),
        m.linear_value_head_dim.or_zero(),
    );
    let kernel = m.linear_conv_kernel_dim.or_zero().max(1);
    // Saturating: check_dimensions refuses a state no GPU could hold.
    let temporal = value_heads
        .saturating_mul(key_dim)
        .saturating_mul(value_dim);
    let conv = (2u64.saturating_mul(key_heads).saturating_mul(key_dim))
        .saturating_add(value_heads.saturating_mul(value_dim))
        .saturating_mul(kernel - 1);
    recurrent_state_bytes(conv, temporal, &m.mamba_ssm_dtype)
}

/// The format of a pre-quantized checkpoint, when sizing knows it.
fn checkpoint_quantization(q: &QuantizationConfig) -> Option<CheckpointQuantization> {
    let method = q
        .quant_method
        .0
        .as_deref()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let precision = match method.as_str() {
        "fp8" | "fbgemm_fp8" | "ptpc_fp8" => Some(WeightPrecision::Fp8),
        "mxfp4" => Some(WeightPrecision::Fp4),
        "awq" | "gptq" | "awq_marlin" | "gptq_marlin" => match q.bits.0 {
            Some(8) => Some(WeightPrecision::Int8),
            _ => Some(WeightPrecision::Int4),
        },
        "bitsandbytes" if q.load_in_8bit.0 == Some(true) => Some(WeightPrecision::Int8),
        "bitsandbytes" => Some(WeightPrecision::Int4),
        "modelopt" => {
            let algo = q
                .quant_algo
                .0
                .as_deref()
                .unwrap_or_default()
                .to_ascii_uppercase();
            Some(if algo.contains("FP4") {
                WeightPrecision::Fp4
            } else {
                WeightPrecision::Fp8
            })
        }
        "compressed-tensors" => compressed_tensors(q),
        _ => None,
    }?;
    let int4_group = compressed_tensors_weights(q)
        .filter(|w| method == "compressed-tensors" && w.num_bits.0 == Some(4))
        .filter(|w| w.kind.0.as_deref() != Some("float") && w.symmetric.0 != Some(false))
        .and_then(|w| w.group_size.0)
        .filter(|g| *g > 0);
    Some(CheckpointQuantization {
        mxfp4: method == "mxfp4",
        int4_group,
        excluded_b: 0.0,
        method,
        precision,
    })
}

/// The weights of compressed-tensors' first config group.
fn compressed_tensors_weights(q: &QuantizationConfig) -> Option<GroupWeights> {
    let groups = q.config_groups.0.as_ref()?;
    let weights = groups.values().find_map(|g| g.get("weights"))?;
    GroupWeights::deserialize(weights).ok()
}

/// compressed-tensors (RedHatAI, neuralmagic): the weights' bits and type of
/// the first config group.
fn compressed_tensors(q: &QuantizationConfig) -> Option<WeightPrecision> {
    let weights = compressed_tensors_weights(q)?;
    let bits = weights.num_bits.0?;
    let float = weights.kind.0.as_deref() == Some("float");
    match (bits, float) {
        (8, true) => Some(WeightPrecision::Fp8),
        (8, false) => Some(WeightPrecision::Int8),
        (4, true) => Some(WeightPrecision::Fp4),
        (4, false) => Some(WeightPrecision::Int4),
        _ => None,
    }
}

/// A vision tower's parameters from its `vision_config`: per layer 4 h^2
/// (attention) + 2 h x intermediate (MLP), or 3 h x intermediate for the
/// gated SiLU MLP of Qwen2.5-VL's and Pixtral's towers (SigLIP's and
/// Qwen2-VL's GELU MLP has no gate), in billions; 0.4B (SigLIP) when the
/// shapes are not given.
fn vision_params_b(v: &VisionConfig) -> f64 {
    let h = first(&[&v.hidden_size, &v.embed_dim, &v.width]).map(f64::from);
    let layers = first(&[&v.num_hidden_layers, &v.depth, &v.num_layers]).map(f64::from);
    match (h, layers) {
        (Some(h), Some(l)) => {
            let i = v.intermediate_size.0.map_or(4.0 * h, f64::from);
            let mlp_matrices = if v.hidden_act.0.as_deref() == Some("silu") {
                3.0
            } else {
                2.0
            };
            l * (4.0 * h * h + mlp_matrices * h * i) / 1e9
        }
        _ => 0.4,
    }
}

/// An `hf_quant_config.json`'s text as [`ModelConfig::from_files`] takes it.
pub fn read_hf_quant_config(text: &str) -> Result<Value, ConfigError> {
    match serde_json::from_str::<Value>(text) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(ConfigError("not a JSON object".into())),
        Err(e) => Err(ConfigError(format!("not valid JSON: {e}"))),
    }
}

/// `metadata.total_size` of a `model.safetensors.index.json`: the bytes of
/// all the checkpoint's tensors.
pub fn weights_index_total_bytes(text: &str) -> Result<u64, ConfigError> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        ConfigError(format!(
            "model.safetensors.index.json is not valid JSON: {e}"
        ))
    })?;
    let Some(size) = v.pointer("/metadata/total_size") else {
        return Err(ConfigError(
            "model.safetensors.index.json has no metadata.total_size: give the index that lists the weights' total bytes"
                .into(),
        ));
    };
    // Some indexes write the size as a string.
    let bytes = size
        .as_u64()
        .or_else(|| size.as_str().and_then(|s| s.parse().ok()))
        .or_else(|| {
            size.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                .map(|f| f as u64)
        });
    bytes
        .filter(|b| (1..=MAX_CHECKPOINT_BYTES).contains(b))
        .ok_or_else(|| {
            ConfigError(format!(
                "model.safetensors.index.json's metadata.total_size is {}; it must be the checkpoint's bytes, \
                 a whole number from 1 to {MAX_CHECKPOINT_BYTES} (100T parameters in float32)",
                crate::quote::shown_value(size)
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn codellama_is_multi_head() {
        let c = ModelConfig::from_json(
            r#"{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":4096,
            "intermediate_size":11008,"max_position_embeddings":16384,"num_attention_heads":32,
            "num_hidden_layers":32,"num_key_value_heads":32,"rms_norm_eps":1e-05,
            "tie_word_embeddings":false,"torch_dtype":"bfloat16","vocab_size":32016}"#,
        )
        .unwrap();
        assert_eq!(
            (c.layers, c.attention_heads, c.kv_heads, c.head_dim, c.vocab),
            (32, 32, 32, 128, 32016)
        );
        assert_eq!(c.context, Some(16384));
        assert_eq!(c.dtype, Some(WeightPrecision::Bf16));
        let (total, active) = c.estimated_params_b();
        assert!((total - 6.74).abs() < 0.05, "{total}");
        assert_eq!(total, active);
    }

    /// transformers reads the dtype as `getattr(torch, name)`: `half` and
    /// `float` are float16 and float32; any other name is kept aside, for a
    /// warning, rather than read as a dtype vLLM serves in.
    #[test]
    fn the_dtype_by_its_torch_names() {
        let with = |fields: &str| {
            let c = ModelConfig::from_json(&format!(
                r#"{{"model_type":"llama","hidden_size":4096,"num_attention_heads":32,
                "num_hidden_layers":32,"vocab_size":32000{fields}}}"#
            ))
            .unwrap();
            (c.dtype, c.unread_dtype)
        };
        let cases = [
            ("", (None, None)),
            (
                r#","torch_dtype":"bfloat16""#,
                (Some(WeightPrecision::Bf16), None),
            ),
            (
                r#","torch_dtype":"half""#,
                (Some(WeightPrecision::Fp16), None),
            ),
            (r#","dtype":"float""#, (Some(WeightPrecision::Fp32), None)),
            (
                r#","torch_dtype":"int7""#,
                (None, Some(("torch_dtype", "int7".to_string()))),
            ),
            (
                r#","torch_dtype":"float64","dtype":"float16""#,
                (Some(WeightPrecision::Fp16), None),
            ),
        ];
        for (fields, want) in cases {
            assert_eq!(with(fields), want, "{fields}");
        }
    }

    #[test]
    fn qwen2_5_configs_agree_with_the_catalog() {
        // Their cards say 14.7 and 32.5 B; the shapes (and a 65.5 GB float16
        // GGUF of the 32B) say 14.77 and 32.76 B, as the catalog does.
        for (id, layers, mlp) in [
            ("Qwen/Qwen2.5-14B-Instruct", 48, 13824),
            ("Qwen/Qwen2.5-32B-Instruct", 64, 27648),
        ] {
            let c = ModelConfig::from_json(&format!(
                r#"{{"architectures":["Qwen2ForCausalLM"],"model_type":"qwen2","hidden_size":5120,
                "intermediate_size":{mlp},"max_position_embeddings":32768,"num_attention_heads":40,
                "num_hidden_layers":{layers},"num_key_value_heads":8,"tie_word_embeddings":false,
                "torch_dtype":"bfloat16","vocab_size":152064}}"#
            ))
            .unwrap();
            let catalogued = crate::sizing::model_catalog::model(id).unwrap().params_b;
            let (total, _) = c.estimated_params_b();
            assert!(
                (total - catalogued).abs() < 0.01,
                "{id}: {total} against {catalogued}"
            );
        }
    }

    #[test]
    fn gemma3_nests_its_text_config_and_slides() {
        let c = ModelConfig::from_json(
            r#"{"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3",
            "text_config":{"model_type":"gemma3_text","hidden_size":5376,"intermediate_size":21504,
              "num_attention_heads":32,"num_hidden_layers":62,"num_key_value_heads":16,"head_dim":128,
              "sliding_window":1024,"sliding_window_pattern":6,"max_position_embeddings":131072,
              "vocab_size":262208},
            "vision_config":{"hidden_size":1152,"intermediate_size":4304,"num_hidden_layers":27},
            "torch_dtype":"bfloat16"}"#,
        )
        .unwrap();
        assert_eq!((c.layers, c.kv_heads, c.head_dim), (62, 16, 128));
        assert_eq!(c.sliding_layers, 52);
        assert_eq!(c.vocab, 262_208);
        assert!(c.has_vision && (c.vision_params_b - 0.41).abs() < 0.05);
    }

    #[test]
    fn a_gated_vision_tower_counts_its_gate() {
        // Qwen2.5-VL-7B's tower: 32 blocks of 1280 with a SiLU-gated MLP of
        // 3420, 0.63 B before its patch merger (0.67 B in the checkpoint).
        let tower = |act: &str| {
            ModelConfig::from_json(&format!(
                r#"{{"model_type":"qwen2_5_vl","hidden_size":3584,"intermediate_size":18944,
                "num_attention_heads":28,"num_hidden_layers":28,"num_key_value_heads":4,
                "vocab_size":152064,"torch_dtype":"bfloat16",
                "vision_config":{{"depth":32,"hidden_size":1280,"intermediate_size":3420,
                  "hidden_act":"{act}"}}}}"#
            ))
            .unwrap()
            .vision_params_b
        };
        assert!((tower("silu") - 0.63).abs() < 0.01, "{}", tower("silu"));
        assert!(
            (tower("quick_gelu") - 0.49).abs() < 0.01,
            "{}",
            tower("quick_gelu")
        );
    }

    /// NVIDIA's Nemotron-H: one kind per layer, Mamba-2 (`M`), attention
    /// (`*`), experts (`E`) or an MLP (`-`). Nemotron 3 Nano's config.json:
    /// 6 attention layers cache tokens, 23 Mamba-2 layers keep a state, 23
    /// expert layers keep nothing; its card's 31.6 B parameters, 3.6 B
    /// active with the embeddings, are what its blocks hold.
    #[test]
    fn nemotron_h_layers_are_of_one_kind_each() {
        let nano = r#"{"architectures":["NemotronHForCausalLM"],"model_type":"nemotron_h","hidden_size":2688,
            "hybrid_override_pattern":"MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME","num_hidden_layers":52,
            "num_attention_heads":32,"num_key_value_heads":2,"head_dim":128,"intermediate_size":1856,
            "mamba_num_heads":64,"mamba_head_dim":64,"n_groups":8,"ssm_state_size":128,"conv_kernel":4,
            "mamba_ssm_cache_dtype":"float32","moe_intermediate_size":1856,"moe_shared_expert_intermediate_size":3712,
            "n_routed_experts":128,"n_shared_experts":1,"num_experts_per_tok":6,"vocab_size":131072,
            "max_position_embeddings":262144,"tie_word_embeddings":false,"time_step_limit":[0.0, Infinity]}"#;
        let c = ModelConfig::from_json(nano).unwrap();
        assert_eq!(c.recurrent, RecurrentLayers::Mamba);
        assert_eq!(
            (c.layers, c.linear_layers, c.cacheless_layers),
            (52, 23, 23)
        );
        // Convolution (64 x 64 + 2 x 8 x 128) x 3 at 2 B, state 64 x 64 x 128 at 4 B.
        assert_eq!(c.linear_state_bytes, 6144 * 3 * 2 + 64 * 64 * 128 * 4);
        let (total, active) = c.estimated_params_b();
        assert!((total - 31.58).abs() < 0.01, "{total}");
        assert!((active - 3.58).abs() < 0.01, "{active}");
        // Without the config's dtype vLLM keeps the state in float16.
        let f16 = ModelConfig::from_json(&nano.replace("float32", "auto")).unwrap();
        assert_eq!(f16.linear_state_bytes, 6144 * 3 * 2 + 64 * 64 * 128 * 2);
        // Nemotron 3 Ultra names its blocks and gives no layer count; its
        // experts work on a 2,048-wide latent: its card's 550 B, 55 B active.
        let kinds: Vec<&str> = [("mamba", 48), ("attention", 12), ("moe", 48)]
            .iter()
            .flat_map(|(kind, n)| std::iter::repeat_n(*kind, *n))
            .collect();
        let ultra = format!(
            r#"{{"model_type":"nemotron_h","hidden_size":8192,"layers_block_type":{},"num_attention_heads":64,
            "num_key_value_heads":2,"head_dim":128,"mamba_num_heads":256,"mamba_head_dim":64,"n_groups":8,
            "ssm_state_size":128,"conv_kernel":4,"moe_intermediate_size":5120,"moe_latent_size":2048,
            "moe_shared_expert_intermediate_size":10240,"n_routed_experts":512,"n_shared_experts":1,
            "num_experts_per_tok":22,"vocab_size":131072}}"#,
            serde_json::json!(kinds)
        );
        let u = ModelConfig::from_json(&ultra).unwrap();
        assert_eq!(
            (u.layers, u.linear_layers, u.cacheless_layers),
            (108, 48, 48)
        );
        let (total, active) = u.estimated_params_b();
        assert!((total - 549.31).abs() < 0.01, "{total}");
        assert!((active - 56.06).abs() < 0.01, "{active}");
    }

    /// NVIDIA's Nemotron-NAS (Llama-3.3-Nemotron-Super-49B): 31 of its 80
    /// layers have no attention, the rest 8 KV heads, and each layer its own
    /// MLP width; its card's 49.9 B parameters are what they hold. Read as
    /// 80 layers of 64 KV heads, it cached 2.6 MB a token and weighed 88 B.
    #[test]
    fn nemotron_nas_layers_have_their_own_attention_and_mlp() {
        let block = |attention: &str, mult: f64| {
            format!(r#"{{"attention":{attention},"ffn":{{"ffn_mult":{mult},"no_op":false}}}}"#)
        };
        let attention = r#"{"n_heads_in_group":8,"no_op":false}"#;
        let no_op = r#"{"n_heads_in_group":null,"no_op":true}"#;
        let blocks: Vec<String> = [
            (attention, 5.25, 48),
            (attention, 2.625, 1),
            (no_op, 1.3125, 10),
            (no_op, 1.0, 8),
            (no_op, 0.5, 6),
            (no_op, 2.625, 5),
            (no_op, 3.28125, 1),
            (no_op, 5.25, 1),
        ]
        .iter()
        .flat_map(|(a, mult, n)| std::iter::repeat_n(block(a, *mult), *n))
        .collect();
        let c = ModelConfig::from_json(&format!(
            r#"{{"architectures":["DeciLMForCausalLM"],"model_type":"nemotron-nas","hidden_size":8192,
            "num_attention_heads":64,"num_hidden_layers":80,"num_key_value_heads":null,
            "intermediate_size":null,"vocab_size":128256,"tie_word_embeddings":false,
            "max_position_embeddings":131072,"block_configs":[{}]}}"#,
            blocks.join(",")
        ))
        .unwrap();
        assert_eq!((c.layers, c.kv_heads, c.cacheless_layers), (80, 8, 31));
        let (total, active) = c.estimated_params_b();
        assert!((total - 49.87).abs() < 0.01 && total == active, "{total}");
    }

    /// The catalog entries added for 2026's models say what their
    /// config.json files say (the fields sizing reads, as published), and
    /// hold the parameters those shapes count (the vision towers' within
    /// 0.06 B: the catalog counts their merger, the estimate does not).
    #[test]
    fn the_2026_catalog_entries_agree_with_their_config_json() {
        let qwen3_5 = |shape: &str, value_heads: u32, mlp: &str| {
            format!(
                r#"{{"model_type":"qwen3_5_text",{shape},"head_dim":256,"full_attention_interval":4,
                "attn_output_gate":true,"linear_conv_kernel_dim":4,"linear_key_head_dim":128,
                "linear_num_key_heads":16,"linear_num_value_heads":{value_heads},"linear_value_head_dim":128,
                "max_position_embeddings":262144,"vocab_size":248320,"mamba_ssm_dtype":"float32",
                "tie_word_embeddings":false,{mlp},"vision_config":{{"depth":27,"hidden_size":1152,
                "intermediate_size":4304,"hidden_act":"gelu_pytorch_tanh"}}}}"#
            )
        };
        let moe = |experts: u32, per_token: u32, size: u32| {
            format!(
                r#""num_experts":{experts},"num_experts_per_tok":{per_token},"moe_intermediate_size":{size},
                "shared_expert_intermediate_size":{size}"#
            )
        };
        let cases = [
            (
                "deepseek-ai/DeepSeek-V3.2",
                r#"{"model_type":"deepseek_v32","hidden_size":7168,"num_hidden_layers":61,"num_attention_heads":128,
                "num_key_value_heads":128,"kv_lora_rank":512,"q_lora_rank":1536,"qk_rope_head_dim":64,
                "qk_nope_head_dim":128,"v_head_dim":128,"index_head_dim":128,"index_n_heads":64,"index_topk":2048,
                "intermediate_size":18432,"moe_intermediate_size":2048,"n_routed_experts":256,"n_shared_experts":1,
                "num_experts_per_tok":8,"first_k_dense_replace":3,"max_position_embeddings":163840,
                "vocab_size":129280,"tie_word_embeddings":false}"#
                    .to_string(),
            ),
            (
                "zai-org/GLM-4.6",
                r#"{"model_type":"glm4_moe","num_hidden_layers":92,"hidden_size":5120,"num_attention_heads":96,
                "num_key_value_heads":8,"head_dim":128,"attention_bias":true,"intermediate_size":12288,
                "moe_intermediate_size":1536,"n_routed_experts":160,"n_shared_experts":1,"num_experts_per_tok":8,
                "first_k_dense_replace":3,"vocab_size":151552,"max_position_embeddings":202752,
                "tie_word_embeddings":false}"#
                    .to_string(),
            ),
            (
                "MiniMaxAI/MiniMax-M2",
                r#"{"model_type":"minimax_m2","num_hidden_layers":62,"hidden_size":3072,"num_attention_heads":48,
                "num_key_value_heads":8,"head_dim":128,"intermediate_size":1536,"num_local_experts":256,
                "num_experts_per_tok":8,"vocab_size":200064,"max_position_embeddings":196608,
                "tie_word_embeddings":false}"#
                    .to_string(),
            ),
            (
                "Qwen/Qwen3-Coder-480B-A35B-Instruct",
                r#"{"model_type":"qwen3_moe","num_hidden_layers":62,"hidden_size":6144,"num_attention_heads":96,
                "num_key_value_heads":8,"head_dim":128,"intermediate_size":8192,"moe_intermediate_size":2560,
                "num_experts":160,"num_experts_per_tok":8,"vocab_size":151936,"max_position_embeddings":262144,
                "tie_word_embeddings":false}"#
                    .to_string(),
            ),
            (
                "Qwen/Qwen3.5-27B",
                qwen3_5(
                    r#""num_hidden_layers":64,"hidden_size":5120,"num_attention_heads":24,"num_key_value_heads":4"#,
                    48,
                    r#""intermediate_size":17408"#,
                ),
            ),
            (
                "Qwen/Qwen3.5-35B-A3B",
                qwen3_5(
                    r#""num_hidden_layers":40,"hidden_size":2048,"num_attention_heads":16,"num_key_value_heads":2"#,
                    32,
                    &moe(256, 8, 512),
                ),
            ),
            (
                "Qwen/Qwen3.5-122B-A10B",
                qwen3_5(
                    r#""num_hidden_layers":48,"hidden_size":3072,"num_attention_heads":32,"num_key_value_heads":2"#,
                    64,
                    &moe(256, 8, 1024),
                ),
            ),
            (
                "Qwen/Qwen3.5-397B-A17B",
                qwen3_5(
                    r#""num_hidden_layers":60,"hidden_size":4096,"num_attention_heads":32,"num_key_value_heads":2"#,
                    64,
                    &moe(512, 10, 1024),
                ),
            ),
        ];
        for (id, json) in cases {
            let c = ModelConfig::from_json(&json).unwrap();
            let m = crate::sizing::model_catalog::model(id).unwrap();
            assert_eq!(
                (c.layers, c.attention_heads, c.kv_heads, c.head_dim),
                (m.layers, m.attention_heads, m.kv_heads, m.head_dim),
                "{id}"
            );
            assert_eq!(
                (c.hidden_size, c.vocab, c.context),
                (m.hidden_size, m.vocab, Some(m.context)),
                "{id}"
            );
            assert_eq!(
                (
                    c.experts,
                    c.experts_per_token,
                    c.mla_kv_dim,
                    c.indexer_head_dim
                ),
                (
                    m.experts,
                    m.experts_per_token,
                    m.mla_kv_dim,
                    m.indexer_head_dim
                ),
                "{id}"
            );
            assert_eq!(
                (c.linear_layers, c.linear_state_bytes),
                (m.linear_layers, m.linear_state_kib * 1024),
                "{id}"
            );
            let (total, active) = c.estimated_params_b();
            assert!(
                (total - m.params_b).abs() < 0.06 && (active - m.active_params_b).abs() < 0.06,
                "{id}: ({total}, {active}) against ({}, {})",
                m.params_b,
                m.active_params_b
            );
        }
    }

    /// Qwen3.5-27B's config.json (its text_config): vLLM keeps the Gated
    /// DeltaNet state in the float32 its mamba_ssm_dtype names, twice what
    /// 16 bits take; the convolution's state stays in 16 bits.
    #[test]
    fn qwen3_5_keeps_its_recurrent_state_in_float32() {
        let text_config = r#"{"model_type":"qwen3_5_text","hidden_size":5120,"num_hidden_layers":64,
            "num_attention_heads":24,"num_key_value_heads":4,"head_dim":256,"intermediate_size":17408,
            "full_attention_interval":4,"linear_conv_kernel_dim":4,"linear_key_head_dim":128,
            "linear_num_key_heads":16,"linear_num_value_heads":48,"linear_value_head_dim":128,
            "max_position_embeddings":262144,"vocab_size":248320,"mamba_ssm_dtype":"float32"}"#;
        let c = ModelConfig::from_json(&format!(
            r#"{{"architectures":["Qwen3_5ForConditionalGeneration"],"model_type":"qwen3_5",
            "text_config":{text_config},"tie_word_embeddings":false}}"#
        ))
        .unwrap();
        let temporal = 48 * 128 * 128;
        let conv = (2 * 16 * 128 + 48 * 128) * 3;
        assert_eq!(c.linear_layers, 48);
        assert_eq!(c.linear_state_bytes, temporal * 4 + conv * 2);
        let at_16_bits = ModelConfig::from_json(&text_config.replace("float32", "bfloat16"))
            .unwrap()
            .linear_state_bytes;
        assert_eq!(at_16_bits, (temporal + conv) * 2);
    }

    #[test]
    fn qwen3_next_has_linear_attention_layers() {
        // Qwen3-Next's config.json: every fourth layer is full attention,
        // the others Gated DeltaNet; the catalog entry says the same.
        let json = r#"{"model_type":"qwen3_next","hidden_size":2048,"num_hidden_layers":48,
            "num_attention_heads":16,"num_key_value_heads":2,"head_dim":256,"vocab_size":151936,
            "num_experts":512,"num_experts_per_tok":10,"moe_intermediate_size":512,
            "shared_expert_intermediate_size":512,"linear_num_key_heads":16,"linear_key_head_dim":128,
            "linear_num_value_heads":32,"linear_value_head_dim":128,"linear_conv_kernel_dim":4,
            "full_attention_interval":4,"max_position_embeddings":262144,"tie_word_embeddings":false,
            "torch_dtype":"bfloat16"}"#;
        let c = ModelConfig::from_json(json).unwrap();
        assert_eq!((c.linear_layers, c.sliding_layers), (36, 0));
        assert_eq!(c.linear_state_bytes, 1_097_728);
        let catalog =
            crate::sizing::model_catalog::lookup("Qwen/Qwen3-Next-80B-A3B-Instruct").unwrap();
        assert_eq!(c.linear_state_bytes, catalog.spec.linear_state_kib * 1024);
        assert_eq!(c.linear_layers, catalog.spec.linear_layers);
        let mut typed: serde_json::Value = serde_json::from_str(json).unwrap();
        typed["layer_types"] = serde_json::json!(
            (0..48)
                .map(|i| if i % 4 == 3 {
                    "full_attention"
                } else {
                    "linear_attention"
                })
                .collect::<Vec<_>>()
        );
        assert_eq!(
            ModelConfig::from_json(&typed.to_string())
                .unwrap()
                .linear_layers,
            36
        );
    }

    #[test]
    fn layer_types_count_sliding_layers() {
        let types: Vec<&str> = (0..24)
            .map(|i| {
                if i % 2 == 0 {
                    "sliding_attention"
                } else {
                    "full_attention"
                }
            })
            .collect();
        let json = serde_json::json!({
            "model_type": "gpt_oss", "hidden_size": 2880, "num_attention_heads": 64,
            "num_hidden_layers": 24, "num_key_value_heads": 8, "head_dim": 64,
            "layer_types": types, "num_local_experts": 32, "num_experts_per_tok": 4,
            "vocab_size": 201088, "quantization_config": {"quant_method": "mxfp4"}
        });
        let c = ModelConfig::from_json(&json.to_string()).unwrap();
        assert_eq!(c.sliding_layers, 12);
        assert_eq!(c.experts, 32);
        let q = c.quantization.unwrap();
        assert_eq!((q.precision, q.mxfp4), (WeightPrecision::Fp4, true));
    }

    /// DeepSeek-V3.2's config.json: MLA, and the sparse-attention indexer
    /// vLLM builds because of index_topk; DeepSeek-V3's has none.
    #[test]
    fn a_sparse_attention_indexer_comes_with_index_topk() {
        let v3 = r#""architectures":["DeepseekV3ForCausalLM"],"model_type":"deepseek_v3","hidden_size":7168,
            "num_hidden_layers":61,"num_attention_heads":128,"num_key_value_heads":128,"kv_lora_rank":512,
            "qk_rope_head_dim":64,"qk_nope_head_dim":128,"v_head_dim":128,"vocab_size":129280"#;
        let c = ModelConfig::from_json(&format!("{{{v3}}}")).unwrap();
        assert_eq!((c.mla_kv_dim, c.indexer_head_dim), (576, 0));
        let v3_2 = ModelConfig::from_json(&format!(
            r#"{{{v3},"index_head_dim":128,"index_n_heads":64,"index_topk":2048}}"#
        ))
        .unwrap();
        assert_eq!((v3_2.mla_kv_dim, v3_2.indexer_head_dim), (576, 128));
        // Without index_topk vLLM builds no indexer.
        let no_topk = ModelConfig::from_json(&format!(r#"{{{v3},"index_head_dim":128}}"#)).unwrap();
        assert_eq!(no_topk.indexer_head_dim, 0);
    }

    #[test]
    fn mla_latent_from_kv_lora_rank() {
        let c = ModelConfig::from_json(
            r#"{"model_type":"deepseek_v2","hidden_size":2048,"num_attention_heads":16,
            "num_hidden_layers":27,"num_key_value_heads":16,"kv_lora_rank":512,"qk_rope_head_dim":64,
            "qk_nope_head_dim":128,"v_head_dim":128,"n_routed_experts":64,"n_shared_experts":2,
            "num_experts_per_tok":6,"moe_intermediate_size":1408,"vocab_size":102400}"#,
        )
        .unwrap();
        assert_eq!((c.mla_kv_dim, c.head_dim, c.experts), (576, 192, 64));
    }

    #[test]
    fn quantization_configs() {
        let ct = |bits: u32, ty: &str| {
            format!(
                r#"{{"hidden_size":8,"num_attention_heads":1,"num_hidden_layers":1,
                "quantization_config":{{"quant_method":"compressed-tensors",
                "config_groups":{{"group_0":{{"weights":{{"num_bits":{bits},"type":"{ty}"}}}}}}}}}}"#
            )
        };
        let precision = |json: &str| {
            ModelConfig::from_json(json)
                .unwrap()
                .quantization
                .map(|q| q.precision)
        };
        assert_eq!(precision(&ct(8, "float")), Some(WeightPrecision::Fp8));
        assert_eq!(precision(&ct(8, "int")), Some(WeightPrecision::Int8));
        assert_eq!(precision(&ct(4, "int")), Some(WeightPrecision::Int4));
        // Kimi K2.5's int4: symmetric groups of 32, whose scales weigh more
        // than the groups of 128 taken otherwise.
        let group = |weights: &str| {
            ModelConfig::from_json(&format!(
                r#"{{"hidden_size":8,"num_attention_heads":1,"num_hidden_layers":1,
                "quantization_config":{{"quant_method":"compressed-tensors",
                "config_groups":{{"group_0":{{"weights":{weights}}}}}}}}}"#
            ))
            .unwrap()
            .quantization
            .and_then(|q| q.int4_group)
        };
        let kimi =
            r#"{"num_bits":4,"type":"int","group_size":32,"symmetric":true,"strategy":"group"}"#;
        assert_eq!(group(kimi), Some(32));
        assert_eq!(group(&kimi.replace("true", "false")), None);
        assert_eq!(group(&kimi.replace("\"int\"", "\"float\"")), None);
        assert_eq!(
            group(r#"{"num_bits":8,"type":"int","group_size":32}"#),
            None
        );
        assert_eq!(
            precision(
                r#"{"hidden_size":8,"num_attention_heads":1,"num_hidden_layers":1,
                "quantization_config":{"quant_method":"awq","bits":4}}"#
            ),
            Some(WeightPrecision::Int4)
        );
    }

    /// Gemma-4-31B's full-attention layers (every sixth) have heads of 512
    /// and 4 KV heads whose keys vLLM loads as values too; its sliding ones
    /// 16 KV heads of 256.
    #[test]
    fn gemma_4_full_attention_layers_have_their_own_shape() {
        let types = ["\"sliding_attention\""; 5]
            .into_iter()
            .chain(["\"full_attention\""])
            .cycle()
            .take(60)
            .collect::<Vec<_>>()
            .join(",");
        let c = ModelConfig::from_json(&format!(
            r#"{{"architectures":["Gemma4ForConditionalGeneration"],"model_type":"gemma4","text_config":{{
            "model_type":"gemma4_text","hidden_size":5376,"num_hidden_layers":60,"num_attention_heads":32,
            "num_key_value_heads":16,"head_dim":256,"global_head_dim":512,"num_global_key_value_heads":4,
            "attention_k_eq_v":true,"intermediate_size":21504,"vocab_size":262144,"tie_word_embeddings":true,
            "sliding_window":1024,"max_position_embeddings":262144,"layer_types":[{types}]}}}}"#
        ))
        .unwrap();
        let attention = |kv: f64, d: f64| 2.0 * 5376.0 * 32.0 * d + 2.0 * 5376.0 * kv * d;
        let expected = 262_144.0 * 5376.0
            + 50.0 * attention(16.0, 256.0)
            + 10.0 * attention(4.0, 512.0)
            + 60.0 * 3.0 * 5376.0 * 21504.0;
        assert_eq!(c.sliding_layers, 50);
        assert_eq!(c.estimated_params_b().0, expected / 1e9);
        assert_eq!((expected / 1e7).round() / 100.0, 30.81);
    }

    /// A DeepSeek-like model of 4 layers, the first dense: per layer an MLA
    /// attention of 5,120 parameters (q_a 1,024, q_b 768, kv_a 768, kv_b
    /// 512, o 2,048), a dense MLP of 24,576, or a shared expert of 6,144
    /// beside 4 routed ones.
    #[test]
    fn a_quantized_checkpoint_names_the_modules_it_leaves_in_16_bits() {
        let excluded_b = |quantization: &str| {
            ModelConfig::from_json(&format!(
                r#"{{"architectures":["DeepseekV3ForCausalLM"],"model_type":"deepseek_v3","hidden_size":64,
                "num_attention_heads":4,"num_key_value_heads":4,"num_hidden_layers":4,"q_lora_rank":16,
                "kv_lora_rank":8,"qk_rope_head_dim":4,"qk_nope_head_dim":8,"v_head_dim":8,
                "intermediate_size":128,"moe_intermediate_size":32,"n_routed_experts":4,"n_shared_experts":1,
                "num_experts_per_tok":2,"first_k_dense_replace":1,"vocab_size":100,
                "quantization_config":{quantization}}}"#
            ))
            .unwrap()
            .quantization
            .map(|q| (q.excluded_b * 1e9).round())
        };
        // NVIDIA's NVFP4 (modelopt): the first layer whole, then two of each
        // attention's projections.
        let nvfp4 = r#"{"quant_method":"modelopt","quant_algo":"NVFP4","exclude_modules":["lm_head",
            "model.layers.0*","model.layers.1.self_attn.q_a_proj","model.layers.1.self_attn.kv_a_proj_with_mqa",
            "model.layers.2.self_attn.q_a_proj","model.layers.2.self_attn.kv_a_proj_with_mqa",
            "model.layers.3.self_attn.q_a_proj","model.layers.3.self_attn.kv_a_proj_with_mqa"]}"#;
        assert_eq!(excluded_b(nvfp4), Some(5_120.0 + 24_576.0 + 3.0 * 1_792.0));
        // compressed-tensors' expressions (Kimi K2.5's): every attention,
        // the dense MLP and the shared experts, not the routed ones.
        let int4 = r#"{"quant_method":"compressed-tensors","config_groups":{"group_0":{"weights":
            {"num_bits":4,"type":"int","group_size":32,"symmetric":true}}},"ignore":["lm_head",
            "re:.*mlp\\.(gate|up|gate_up|down)_proj.*","re:.*self_attn.*","re:.*shared_experts.*"]}"#;
        assert_eq!(
            excluded_b(int4),
            Some(4.0 * 5_120.0 + 24_576.0 + 3.0 * 6_144.0)
        );
        // A list of what is not a layer's module names none.
        assert_eq!(
            excluded_b(r#"{"quant_method":"fp8","modules_to_not_convert":["lm_head"]}"#),
            Some(0.0)
        );
    }

    #[test]
    fn modelopt_hf_quant_config_is_the_quantization_config_config_json_lacks() {
        let config = r#"{"architectures":["LlamaForCausalLM"],"hidden_size":64,"num_attention_heads":4,
            "num_key_value_heads":4,"num_hidden_layers":2,"intermediate_size":128,"vocab_size":100}"#;
        // ModelOpt 0.29's file: all it says nests under `quantization`.
        let file = json!({"producer": {"name": "modelopt", "version": "0.29.0"},
            "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                "exclude_modules": ["lm_head", "model.layers.0.self_attn*"]}});
        let read = |config: &str, file: Option<Value>| {
            let q = ModelConfig::from_files(config, file)
                .unwrap()
                .quantization?;
            Some((q.method, q.precision, (q.excluded_b * 1e9).round()))
        };
        // Layer 0's attention: 4 projections of 64 x 64.
        let nvfp4 = Some(("modelopt".to_string(), WeightPrecision::Fp4, 16_384.0));
        assert_eq!(read(config, Some(file.clone())), nvfp4);
        // The same object under config.json's quantization_config, where
        // vLLM puts it.
        let inline = config.replacen('{', &format!(r#"{{"quantization_config":{file},"#), 1);
        assert_eq!(read(&inline, None), nvfp4);
        // A config.json that has its own is read, not the file (as vLLM does).
        let own = config.replacen('{', r#"{"quantization_config":{"quant_method":"fp8"},"#, 1);
        assert_eq!(
            read(&own, Some(file)),
            Some(("fp8".to_string(), WeightPrecision::Fp8, 0.0))
        );
        // Another producer's nesting is not ModelOpt's.
        let other = json!({"producer": {"name": "other"}, "quantization": {"quant_algo": "NVFP4"}});
        assert_eq!(read(config, Some(other)), None);
        assert_eq!(
            read_hf_quant_config("[1]").unwrap_err().0,
            "not a JSON object"
        );
        assert!(
            read_hf_quant_config("{")
                .unwrap_err()
                .0
                .starts_with("not valid JSON: ")
        );
    }

    #[test]
    fn errors_name_the_missing_field() {
        assert_eq!(
            ModelConfig::from_json(r#"{"hidden_size":8}"#)
                .unwrap_err()
                .to_string(),
            "config.json has no num_hidden_layers (nor under text_config): it does not describe a language model sizing can read"
        );
        assert!(ModelConfig::from_json("[1]").is_err());
        assert_eq!(
            weights_index_total_bytes(r#"{"metadata":{"total_size":16060522496},"weight_map":{}}"#)
                .unwrap(),
            16_060_522_496
        );
        assert!(weights_index_total_bytes(r#"{"weight_map":{}}"#).is_err());
        // Present but no checkpoint's size: said so, not "has no total_size".
        for (total, shown) in [
            ("0", "0"),
            ("-5", "-5"),
            ("1e30", "1e+30"),
            ("\"many\"", "\"many\""),
        ] {
            assert_eq!(
                weights_index_total_bytes(&format!(r#"{{"metadata":{{"total_size":{total}}}}}"#))
                    .unwrap_err()
                    .to_string(),
                format!(
                    "model.safetensors.index.json's metadata.total_size is {shown}; it must be the checkpoint's \
                     bytes, a whole number from 1 to 400000000000000 (100T parameters in float32)"
                )
            );
        }
    }

    /// Python's json module writes non-finite floats as bare words, and
    /// transformers writes config.json with it: such a file still reads,
    /// and the same words inside a string stay as written.
    #[test]
    fn python_non_finite_numbers_read_as_absent() {
        let c = ModelConfig::from_json(
            r#"{"model_type":"NaN-Infinity \"Infinity\"","hidden_size":4096,"num_attention_heads":32,
            "num_hidden_layers":32,"time_step_limit":[0.0, Infinity],"time_step_min":-Infinity,
            "sliding_window":NaN,"vocab_size":32000}"#,
        )
        .unwrap();
        assert_eq!(c.model_type.as_deref(), Some("NaN-Infinity \"Infinity\""));
        assert_eq!((c.layers, c.hidden_size, c.sliding_window), (32, 4096, 0));
        assert!(ModelConfig::from_json(r#"{"hidden_size": Infinityx}"#).is_err());
    }

    /// Shapes no model has are refused by name, before the arithmetic
    /// multiplies them.
    #[test]
    fn shapes_no_model_has_are_refused() {
        let base = r#""num_hidden_layers":32,"num_attention_heads":32,"vocab_size":32000"#;
        let cases = [
            (
                r#""hidden_size":4294967295"#,
                "config.json hidden_size is 4294967295, more than any model has (at most 16,777,216)",
            ),
            (
                r#""hidden_size":4096,"num_key_value_heads":64"#,
                "config.json num_key_value_heads is 64, more than num_attention_heads 32: each KV head serves one or more attention heads",
            ),
            (
                r#""hidden_size":4096,"num_local_experts":8,"num_experts_per_tok":16"#,
                "config.json num_experts_per_tok is 16, more than its 8 experts: each token is routed to some of the experts",
            ),
            (
                r#""hidden_size":4096,"num_key_value_heads":5"#,
                "config.json num_attention_heads 32 is not a multiple of num_key_value_heads 5: each KV head serves the same number of attention heads, and vLLM refuses the model otherwise",
            ),
            (
                r#""hidden_size":4096,"layer_types":["linear_attention","full_attention"],"linear_num_value_heads":4000000,"linear_key_head_dim":4000000,"linear_value_head_dim":4000000"#,
                "config.json's linear-attention shapes (linear_num_value_heads, linear_key_head_dim, linear_value_head_dim, ...) give 18446744073709551615 bytes of state per layer and sequence, more than a GPU holds",
            ),
            (
                r#""hidden_size":4096,"max_position_embeddings":2147483648"#,
                "config.json max_position_embeddings is 2147483648, more than any model has (at most 16,777,216)",
            ),
            (
                r#""hidden_size":-1"#,
                "config.json's hidden_size is -1, not a whole number above zero",
            ),
            (
                r#""hidden_size":"4096""#,
                "config.json's hidden_size is \"4096\", not a whole number above zero",
            ),
        ];
        for (fields, message) in cases {
            let text = format!("{{{base},{fields}}}");
            let got = ModelConfig::from_json(&text).unwrap_err().to_string();
            assert_eq!(got, message, "{fields}");
        }
    }
}
