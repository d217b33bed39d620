//! The model catalog: architecture figures for models people serve.
//!
//! Embedded from `data/models.csv` like the GPU catalog. Lookup forgives the
//! spellings other tools use for the same weights (NIM's `meta/...` ids,
//! quantized re-uploads such as `neuralmagic/...-FP8`), but it never guesses
//! silently: [`lookup`] says which entry it used and why, and the plan repeats
//! that in its reasons.

use std::sync::LazyLock;

use serde::Deserialize;

use super::catalog_csv::{list, rows, yes_no};
use super::params::precision_marker;
use super::precision::WeightPrecision;

const MODELS_CSV: &str = include_str!("data/models.csv");

/// Architecture and size of one model, as its `config.json` and card say: a
/// row of `data/models.csv`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogModel {
    /// Hugging Face id, e.g. `meta-llama/Llama-3.1-8B-Instruct`.
    pub id: String,
    /// Other ids of the same weights' architecture.
    #[serde(deserialize_with = "list")]
    pub(crate) aliases: Vec<String>,
    /// Total parameters in billions (all experts for MoE models).
    pub params_b: f64,
    /// Parameters used per token in billions (equal to `params_b` when dense).
    #[serde(rename = "active_b")]
    pub(crate) active_params_b: f64,
    pub(crate) layers: u32,
    #[serde(rename = "heads")]
    pub(crate) attention_heads: u32,
    pub(crate) kv_heads: u32,
    pub(crate) head_dim: u32,
    #[serde(rename = "hidden")]
    pub(crate) hidden_size: u32,
    /// `max_position_embeddings`: the longest context the config advertises.
    pub(crate) context: u64,
    /// Checkpoint dtype: `bfloat16`, `float32`, `fp8`, `mxfp4`, `nvfp4` or `int4/32`
    /// (int4 in symmetric groups of 32, one 16-bit scale each).
    #[serde(rename = "native")]
    pub(crate) native_dtype: String,
    /// Routed experts (0 for dense models).
    pub(crate) experts: u32,
    /// Experts each token is routed to (`num_experts_per_tok`; 0 for dense
    /// models).
    pub(crate) experts_per_token: u32,
    /// MLA latent KV elements per token and layer (kv_lora_rank + rope dim);
    /// 0 for ordinary attention.
    #[serde(rename = "mla_kv")]
    pub(crate) mla_kv_dim: u32,
    /// Parameters a quantized checkpoint keeps in bf16 beyond the embeddings
    /// and vision tower (Meta's FP8 405B keeps attention too); 0 = derive.
    #[serde(rename = "unquantized_b")]
    pub(crate) unquantized_params_b: f64,
    /// `vocab_size`.
    pub vocab: u32,
    /// `tie_word_embeddings`: the lm_head is the embedding matrix.
    #[serde(rename = "tied", deserialize_with = "yes_no")]
    pub(crate) tied_embeddings: bool,
    /// Parameters of the vision tower and projector, in billions.
    #[serde(rename = "vision_b")]
    pub(crate) vision_params_b: f64,
    /// Layers with sliding-window attention (0 when none).
    #[serde(rename = "sliding")]
    pub(crate) sliding_layers: u32,
    /// Their window in tokens (0 when none).
    #[serde(rename = "window")]
    pub(crate) sliding_window: u32,
    /// Layers with linear attention (0 when none).
    #[serde(rename = "linear")]
    pub(crate) linear_layers: u32,
    /// Their recurrent state per layer and sequence as vLLM keeps it, in KiB.
    #[serde(rename = "state_kib")]
    pub(crate) linear_state_kib: u64,
    /// vLLM runs the model in float16 (see [`runs_in_float16`]).
    #[serde(rename = "fp16", deserialize_with = "yes_no")]
    pub(crate) float16: bool,
    /// The key dimension of its DeepSeek sparse-attention indexer
    /// (`index_head_dim`), 0 when it has none.
    #[serde(rename = "indexer")]
    pub(crate) indexer_head_dim: u32,
}

/// The model types vLLM refuses to run in float16 (numerical instability:
/// `_FLOAT16_NOT_SUPPORTED_MODELS`, vllm/config/model.py).
const FLOAT16_REFUSED: &[&str] = &["gemma2", "gemma3", "gemma3_text", "plamo2", "glm4"];

/// Whether vLLM runs a model of config.json's `model_type` in float16.
pub(crate) fn runs_in_float16(model_type: &str) -> bool {
    !FLOAT16_REFUSED.contains(&model_type)
}

impl CatalogModel {
    /// The precision the published checkpoint stores its weights in.
    pub(crate) fn native_precision(&self) -> WeightPrecision {
        match self.native_dtype.as_str() {
            "float32" => WeightPrecision::Fp32,
            "float16" => WeightPrecision::Fp16,
            "fp8" => WeightPrecision::Fp8,
            "mxfp4" | "nvfp4" => WeightPrecision::Fp4,
            int4 if int4.starts_with("int4") => WeightPrecision::Int4,
            _ => WeightPrecision::Bf16,
        }
    }

    /// The scale groups of an `int4/<group>` checkpoint.
    pub(crate) fn int4_group(&self) -> Option<u32> {
        self.native_dtype.strip_prefix("int4/")?.parse().ok()
    }
}

static MODELS: LazyLock<Vec<CatalogModel>> = LazyLock::new(|| rows("models.csv", MODELS_CSV));

/// The models an unknown model is assumed to be built like, smallest first:
/// Llama 3, one family of dense grouped-query models from 1 B to 405 B
/// parameters with one vocabulary, whose layers, width and KV cache per
/// token grow with its size. A guess that switched between families could
/// assume a larger model smaller: a 171 B model guessed as Qwen 2.5 72B (a
/// 152,064-token vocabulary, so a larger sampler warm-up) needed more GPUs
/// than a 177 B one guessed as Llama 3.1 405B.
const GUESS_TEMPLATES: [&str; 5] = [
    "meta-llama/Llama-3.2-1B",
    "meta-llama/Llama-3.2-3B",
    "meta-llama/Llama-3.1-8B",
    "meta-llama/Llama-3.1-70B",
    "meta-llama/Llama-3.1-405B",
];

/// The architecture an unknown model of `params_b` parameters is assumed to
/// have: that of the [`GUESS_TEMPLATES`] model nearest in size, by ratio.
pub(crate) fn nearest_template(params_b: f64) -> &'static CatalogModel {
    let distance = |m: &CatalogModel| (params_b.max(0.1) / m.params_b).ln().abs();
    GUESS_TEMPLATES
        .iter()
        .map(|id| {
            lookup(id)
                .expect("every guess template is in the catalog")
                .spec
        })
        .min_by(|a, b| distance(a).total_cmp(&distance(b)))
        .expect("there are guess templates")
}

/// Every model in the catalog.
pub fn models() -> &'static [CatalogModel] {
    &MODELS
}

/// A catalog hit and, when the id was not matched literally, how it was
/// matched (a sentence for the plan's reasons).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelMatch {
    pub(crate) spec: &'static CatalogModel,
    pub(crate) note: Option<String>,
}

/// Suffixes of quantized or renamed uploads that do not change the
/// architecture. Longest first, so `-fp8-dynamic` goes before `-fp8`.
const STRIP_SUFFIXES: &[&str] = &[
    // AMD's FP8 checkpoints with FP8 KV-cache scales (amd/...-FP8-KV).
    "-fp8-kv",
    "-quantized.w4a16",
    "-quantized.w8a8",
    "-quantized.w8a16",
    "-fp8-dynamic",
    "-fp8-static",
    "-gptq-int4",
    "-gptq-int8",
    "-awq-int4",
    "-bnb-4bit",
    "-w4a16",
    "-w8a8",
    "-w8a16",
    "-nvfp4",
    "-mxfp4",
    "-4bit",
    "-8bit",
    "-int4",
    "-int8",
    "-gptq",
    "-awq",
    "-fp8",
    "-fp4",
    "-bf16",
    "-fp16",
    "-base",
];

/// Finds the catalog entry for `id`. Tries, in order: the id or an alias
/// (case-insensitive); the same name under another organisation (NIM's
/// `meta/llama-3.1-8b-instruct`); the name without precision suffixes and
/// without a `Meta-` prefix (`neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8`).
pub fn lookup(id: &str) -> Option<ModelMatch> {
    let wanted = id.trim().to_ascii_lowercase();
    if wanted.is_empty() {
        return None;
    }
    let ids = |m: &'static CatalogModel| std::iter::once(&m.id).chain(&m.aliases);
    if let Some(spec) = models()
        .iter()
        .find(|m| ids(m).any(|i| i.eq_ignore_ascii_case(&wanted)))
    {
        // An alias is another model on the entry's architecture: the plan
        // says whose figures it uses.
        let note = (!spec.id.eq_ignore_ascii_case(&wanted)).then(|| {
            format!(
                "`{}` is an alias of the catalog entry {}: the same architecture",
                id.trim(),
                spec.id
            )
        });
        return Some(ModelMatch { spec, note });
    }
    // `Llama-2-70b-chat (vLLM backend)`: a note in parentheses is no part
    // of the name.
    let bare = wanted.split(" (").next().unwrap_or(&wanted).trim();
    let name = bare.rsplit('/').next().unwrap_or(bare);
    // An entry that names one organisation's quantized checkpoint (Meta's
    // own FP8 405B) describes those exact weights: another organisation's
    // upload of the same name quantizes differently, so only the full id
    // matches it.
    let by_name = |n: &str| {
        models().iter().find(|m| {
            precision_marker(&m.id).is_none()
                && ids(m).any(|i| i.rsplit('/').next().is_some_and(|base| same_name(base, n)))
        })
    };
    if let Some(spec) = by_name(name) {
        return Some(ModelMatch {
            spec,
            note: Some(format!(
                "`{id}` is not a catalog id; it matched {} by its model name",
                spec.id
            )),
        });
    }
    let mut base = name.to_string();
    loop {
        let before = base.len();
        for suffix in STRIP_SUFFIXES {
            if let Some(rest) = base.strip_suffix(suffix) {
                base = rest.to_string();
            }
        }
        if base.len() == before {
            break;
        }
    }
    if let Some(rest) = base.strip_prefix("meta-") {
        base = rest.to_string();
    }
    if base != name
        && let Some(spec) = by_name(&base)
    {
        return Some(ModelMatch {
            spec,
            note: Some(format!(
                "`{id}` is not a catalog id; its architecture was taken from {} (same name without the precision suffix or `Meta-` prefix)",
                spec.id
            )),
        });
    }
    None
}

/// Two model names are the same up to case and a trailing `-hf` (Meta's
/// Llama 2 repos end in `-hf`; other uploads drop it).
fn same_name(a: &str, b: &str) -> bool {
    let trim = |s: &str| {
        let l = s.to_ascii_lowercase();
        l.strip_suffix("-hf").map(str::to_string).unwrap_or(l)
    };
    trim(a) == trim(b)
}

/// The catalog entry for `id`, matched as [`lookup`] does (for tests).
#[cfg(test)]
pub(crate) fn model(id: &str) -> Option<&'static CatalogModel> {
    lookup(id).map(|m| m.spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_is_consistent() {
        assert!(models().len() >= 60);
        for m in models() {
            assert!(
                m.layers > 0 && m.attention_heads > 0 && m.kv_heads > 0,
                "{}",
                m.id
            );
            assert!(m.active_params_b <= m.params_b, "{}", m.id);
            assert!(m.context >= 2048, "{}", m.id);
            // A mixture routes each token to some of its experts, and its
            // active count is below its total; a dense model routes nowhere.
            if m.experts > 0 {
                assert!(
                    (1..m.experts).contains(&m.experts_per_token) && m.active_params_b < m.params_b,
                    "{}",
                    m.id
                );
            } else {
                assert_eq!(m.experts_per_token, 0, "{}", m.id);
            }
        }
    }

    /// What keeps a guess monotone: a larger template never caches, warms up
    /// or weighs less per parameter's worth of architecture than a smaller one.
    #[test]
    fn guess_templates_grow_with_size_and_cache_like_today() {
        let templates: Vec<_> = GUESS_TEMPLATES
            .iter()
            .map(|id| model(id).unwrap())
            .collect();
        for t in &templates {
            assert!(
                t.experts == 0 && t.mla_kv_dim == 0 && t.linear_layers == 0,
                "{}",
                t.id
            );
            assert!(
                t.sliding_layers == 0 && t.vision_params_b == 0.0,
                "{}",
                t.id
            );
            assert!(
                (2..t.attention_heads).contains(&t.kv_heads),
                "{}: grouped-query",
                t.id
            );
        }
        for pair in templates.windows(2) {
            let (small, large) = (pair[0], pair[1]);
            let kv_per_token = |m: &CatalogModel| m.layers * m.kv_heads * m.head_dim;
            assert!(
                small.params_b < large.params_b,
                "{} before {}",
                small.id,
                large.id
            );
            assert!(small.layers <= large.layers && small.hidden_size <= large.hidden_size);
            assert!(small.head_dim <= large.head_dim && small.context <= large.context);
            assert!(
                kv_per_token(small) <= kv_per_token(large),
                "{} -> {}",
                small.id,
                large.id
            );
            assert_eq!(small.vocab, large.vocab, "{} -> {}", small.id, large.id);
        }
    }

    #[test]
    fn lookup_table() {
        let cases: &[(&str, Option<&str>, bool)] = &[
            (
                "meta-llama/Llama-3.1-8B-Instruct",
                Some("meta-llama/Llama-3.1-8B-Instruct"),
                false,
            ),
            (
                "META-LLAMA/llama-3.1-8b-instruct",
                Some("meta-llama/Llama-3.1-8B-Instruct"),
                false,
            ),
            (
                "meta/llama-3.1-8b-instruct",
                Some("meta-llama/Llama-3.1-8B-Instruct"),
                true,
            ),
            (
                "meta/llama-3.1-8b-base",
                Some("meta-llama/Llama-3.1-8B"),
                true,
            ),
            (
                "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8",
                Some("meta-llama/Llama-3.1-70B-Instruct"),
                true,
            ),
            (
                "Qwen/Qwen3-235B-A22B-FP8",
                Some("Qwen/Qwen3-235B-A22B"),
                true,
            ),
            (
                "Qwen/Qwen2.5-7B-Instruct-AWQ",
                Some("Qwen/Qwen2.5-7B-Instruct"),
                true,
            ),
            // The vision-language model is its own entry, not its language model's.
            (
                "Qwen/Qwen2.5-VL-7B-Instruct-AWQ",
                Some("Qwen/Qwen2.5-VL-7B-Instruct"),
                true,
            ),
            (
                "deepseek-ai/DeepSeek-R1-0528",
                Some("deepseek-ai/DeepSeek-R1"),
                true,
            ),
            // V3.1 and its Terminus update keep V3's architecture.
            (
                "deepseek-ai/DeepSeek-V3.1-Terminus",
                Some("deepseek-ai/DeepSeek-V3"),
                true,
            ),
            // Qwen3's 2507 updates have entries of their own: a 262,144-token
            // context, not the first release's 40,960.
            (
                "Qwen/Qwen3-235B-A22B-Thinking-2507",
                Some("Qwen/Qwen3-235B-A22B-Instruct-2507"),
                true,
            ),
            (
                "Qwen/Qwen3-30B-A3B-Instruct-2507-FP8",
                Some("Qwen/Qwen3-30B-A3B-Instruct-2507"),
                true,
            ),
            // The coder keeps the 2507 architecture: 128 experts, 8 a
            // token, 262,144 tokens.
            (
                "Qwen/Qwen3-Coder-30B-A3B-Instruct",
                Some("Qwen/Qwen3-30B-A3B-Instruct-2507"),
                true,
            ),
            (
                "mistralai/mixtral-8x7b-instruct-v0.1",
                Some("mistralai/Mixtral-8x7B-Instruct-v0.1"),
                false,
            ),
            // A 16-bit upload of a model published in MXFP4.
            ("unsloth/gpt-oss-20b-BF16", Some("openai/gpt-oss-20b"), true),
            // Llama 3 is not Llama 3.1 (8K context): its own entry.
            (
                "meta-llama/Meta-Llama-3-70B-Instruct",
                Some("meta-llama/Meta-Llama-3-70B"),
                true,
            ),
            // The 3.1 repos' first names.
            (
                "meta-llama/Meta-Llama-3.1-70B-Instruct",
                Some("meta-llama/Llama-3.1-70B-Instruct"),
                true,
            ),
            (
                "RedHatAI/Mistral-Small-3.1-24B-Instruct-2503-quantized.w8a8",
                Some("mistralai/Mistral-Small-3.1-24B-Instruct-2503"),
                true,
            ),
            (
                "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
                Some("meta-llama/Llama-3.3-70B-Instruct"),
                true,
            ),
            // Meta's own FP8 405B keeps attention in bf16; neuralmagic's
            // quantizes every linear layer, so only Meta's id is Meta's entry.
            (
                "meta-llama/Meta-Llama-3.1-405B-Instruct-FP8",
                Some("meta-llama/Llama-3.1-405B-Instruct-FP8"),
                true,
            ),
            (
                "neuralmagic/Meta-Llama-3.1-405B-Instruct-FP8",
                Some("meta-llama/Llama-3.1-405B-Instruct"),
                true,
            ),
            (
                "amd/Llama-3.3-70B-Instruct-FP8-KV",
                Some("meta-llama/Llama-3.3-70B-Instruct"),
                true,
            ),
            // QwQ is built on Qwen2.5-32B (its model card): 64 layers,
            // 40 heads, 8 KV heads.
            ("Qwen/QwQ-32B", Some("Qwen/Qwen2.5-32B-Instruct"), true),
            // Phi-4-mini: its own entry (32 layers, 24 heads, 8 KV heads,
            // a tied 200,064-token vocabulary, 131,072 tokens).
            (
                "microsoft/Phi-4-mini-instruct",
                Some("microsoft/Phi-4-mini-instruct"),
                false,
            ),
            ("Qwen/QwQ-32B-AWQ", Some("Qwen/Qwen2.5-32B-Instruct"), true),
            // A fine-tune under a new name, on its base's architecture.
            (
                "nvidia/Llama-3.1-Nemotron-70B-Instruct-HF",
                Some("meta-llama/Llama-3.1-70B-Instruct"),
                true,
            ),
            ("moonshotai/Kimi-K2.5", Some("moonshotai/Kimi-K2.5"), false),
            (
                "Llama-2-70b-chat (vLLM backend)",
                Some("meta-llama/Llama-2-70b-hf"),
                true,
            ),
            (
                "Qwen/Qwen3-Next-80B-A3B-Instruct",
                Some("Qwen/Qwen3-Next-80B-A3B-Instruct"),
                false,
            ),
            (
                "Qwen/Qwen3-Next-80B-A3B-Instruct-FP8",
                Some("Qwen/Qwen3-Next-80B-A3B-Instruct"),
                true,
            ),
            (
                "Qwen/Qwen3-Coder-480B-A35B-Instruct",
                Some("Qwen/Qwen3-Coder-480B-A35B-Instruct"),
                false,
            ),
            // Repackagings and later releases of the 2026 entries.
            ("zai-org/GLM-4.6-FP8", Some("zai-org/GLM-4.6"), true),
            ("zai-org/GLM-4.7", Some("zai-org/GLM-4.6"), true),
            ("zai-org/GLM-4.5-Air-FP8", Some("zai-org/GLM-4.5-Air"), true),
            ("MiniMaxAI/MiniMax-M2.5", Some("MiniMaxAI/MiniMax-M2"), true),
            (
                "deepseek-ai/DeepSeek-V3.2-Exp",
                Some("deepseek-ai/DeepSeek-V3.2"),
                true,
            ),
            (
                "Qwen/Qwen3.5-397B-A17B-FP8",
                Some("Qwen/Qwen3.5-397B-A17B"),
                true,
            ),
            // GLM-5 is not in the catalog: the built-in images' vLLM 0.19
            // cannot read its configuration (transformers 4.57 has no
            // glm_moe_dsa).
            ("zai-org/GLM-5", None, false),
            ("", None, false),
        ];
        for (id, want, noted) in cases {
            let got = lookup(id);
            assert_eq!(got.as_ref().map(|m| m.spec.id.as_str()), *want, "{id}");
            if let Some(m) = got {
                assert_eq!(m.note.is_some(), *noted, "{id}: {:?}", m.note);
            }
        }
    }

    #[test]
    fn native_precisions() {
        assert_eq!(
            model("deepseek-ai/DeepSeek-V3").unwrap().native_precision(),
            WeightPrecision::Fp8
        );
        assert_eq!(
            model("openai/gpt-oss-20b").unwrap().native_precision(),
            WeightPrecision::Fp4
        );
        assert_eq!(
            model("allenai/OLMo-2-1124-7B").unwrap().native_precision(),
            WeightPrecision::Fp32
        );
        let kimi = model("moonshotai/Kimi-K2-Thinking").unwrap();
        assert_eq!(
            (kimi.native_precision(), kimi.int4_group()),
            (WeightPrecision::Int4, Some(32))
        );
        assert_eq!(model("deepseek-ai/DeepSeek-V3").unwrap().int4_group(), None);
    }

    /// Kimi K2's card says "1T"; its shapes hold 1026.41 B. The count is
    /// DeepSeek-V3's architecture (MLA, a few dense layers, then routed and
    /// shared experts), which gives DeepSeek-V3 its published 671 B.
    #[test]
    fn mla_mixtures_weigh_what_their_shapes_hold() {
        struct Shape {
            experts: f64,
            heads: f64,
            dense_layers: f64,
            vocab: f64,
        }
        let total_b = |s: &Shape| {
            let (h, layers, q_rank, kv_rank, nope, rope, v) =
                (7168.0, 61.0, 1536.0, 512.0, 128.0, 64.0, 128.0);
            let (dense_mlp, expert_mlp) = (18432.0, 2048.0);
            let attention = h * q_rank
                + q_rank
                + q_rank * s.heads * (nope + rope)
                + h * (kv_rank + rope)
                + kv_rank
                + kv_rank * s.heads * (nope + v)
                + s.heads * v * h
                + 2.0 * h;
            let expert = 3.0 * h * expert_mlp;
            let moe_layer = attention + (s.experts + 1.0) * expert + s.experts * h;
            let dense_layer = attention + 3.0 * h * dense_mlp;
            let embeddings = 2.0 * s.vocab * h + h;
            (embeddings + s.dense_layers * dense_layer + (layers - s.dense_layers) * moe_layer)
                / 1e9
        };
        for (id, shape) in [
            (
                "deepseek-ai/DeepSeek-V3",
                Shape {
                    experts: 256.0,
                    heads: 128.0,
                    dense_layers: 3.0,
                    vocab: 129280.0,
                },
            ),
            (
                "moonshotai/Kimi-K2-Instruct",
                Shape {
                    experts: 384.0,
                    heads: 64.0,
                    dense_layers: 1.0,
                    vocab: 163840.0,
                },
            ),
        ] {
            let catalogued = model(id).unwrap().params_b;
            let counted = total_b(&shape);
            assert!(
                (counted - catalogued).abs() < 0.05,
                "{id}: {counted} against {catalogued}"
            );
        }
    }
}
