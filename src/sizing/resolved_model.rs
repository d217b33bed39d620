//! The model as the engine sees it: from the model's own `config.json` when
//! the request carries it, else the catalog, else the architecture of the
//! Llama 3 model nearest in parameter count.
//!
//! Everything after this step works on a [`Model`] and never asks where its
//! figures came from; the reasons say it once, here, and name every fact
//! that was guessed and how to give it.

use super::config::ModelConfig;
use super::error::SizingError;
use super::memory::{
    Arch, GIB, GUESSED_ROPE_POSITIONS, GUESSED_VOCAB, RecurrentLayers, WeightParts, Weights,
    weights,
};
use super::model_catalog::{CatalogModel, ModelMatch, lookup, nearest_template, runs_in_float16};
use super::params::{ParamCount, count_from_id, parse_parameter_count, precision_marker};
use super::plan::SizingRequest;
use super::precision::WeightPrecision;
use super::text::{gib, thousands};

/// The model being sized.
pub(crate) struct Model {
    /// The id as the caller wrote it.
    pub(crate) id: String,
    pub(crate) spec: Option<&'static CatalogModel>,
    /// The name errors use: the catalog id, else the caller's.
    pub(crate) name: String,
    pub(crate) arch: Arch,
    pub(crate) total_b: f64,
    pub(crate) active_b: f64,
    /// Parameters a quantized checkpoint keeps in 16 bits beyond the
    /// embeddings and vision tower, when known (0 = derive).
    pub(crate) unquantized_b: f64,
    /// Parameters of the layers' modules its config.json lists as kept in
    /// 16 bits (see [`crate::sizing::ModelConfig`]), 0 when none.
    pub(crate) excluded_b: f64,
    /// The model's own context length, when known.
    pub(crate) context: Option<u64>,
    /// The checkpoint's own precision, when known.
    pub(crate) native: Option<WeightPrecision>,
    /// The checkpoint is MXFP4 (gpt-oss).
    pub(crate) mxfp4: bool,
    /// The checkpoint's int4 scale groups, when symmetric (Kimi K2's 32).
    pub(crate) int4_group: Option<u32>,
    /// config.json's `quant_method` (`awq`, `compressed-tensors`), when given.
    pub(crate) quant_method: Option<String>,
    /// vLLM runs it in float16; Gemma 2 and 3 it runs only in bfloat16 or
    /// float32.
    pub(crate) float16: bool,
    pub(crate) tied_embeddings: bool,
    pub(crate) vision_b: f64,
    /// The checkpoint's total bytes (`model.safetensors.index.json`).
    pub(crate) checkpoint_bytes: Option<u64>,
    /// The architecture is a guess (no catalog entry, no config.json).
    pub(crate) guessed: bool,
}

impl Model {
    /// Embedding parameters (vocab x hidden), in billions.
    pub(crate) fn embedding_b(&self) -> f64 {
        f64::from(self.arch.vocab) * f64::from(self.arch.hidden_size) / 1e9
    }

    /// The precision the checkpoint is stored at: its own, or for a guessed
    /// model the one the plan assumes (the id's quantization marker, else
    /// bf16), so that a weights index counts as its exact weights there too.
    fn checkpoint_precision(&self) -> Option<WeightPrecision> {
        if self.guessed {
            Some(assumed_precision(&self.id))
        } else {
            self.native
        }
    }

    /// The weights index's bytes when the weights are served at
    /// `precision` as the checkpoint stores them, so that they weigh that.
    pub(crate) fn indexed_bytes(&self, precision: WeightPrecision) -> Option<u64> {
        self.checkpoint_bytes
            .filter(|_| self.checkpoint_precision() == Some(precision))
    }

    fn parts(&self) -> WeightParts {
        WeightParts {
            params_b: self.total_b,
            embedding_b: self.embedding_b(),
            tied: self.tied_embeddings,
            vision_b: self.vision_b,
            unquantized_b: self.unquantized_b,
            excluded_b: self.excluded_b,
            mxfp4: self.mxfp4,
            int4_group: self.int4_group,
            moe: self.arch.experts > 0,
            hidden_size: self.arch.hidden_size,
        }
    }

    /// The weights at `precision`, as vLLM loads them. A checkpoint served
    /// as it is stored, whose total bytes are known, weighs exactly that.
    pub(crate) fn weights(&self, precision: WeightPrecision) -> Weights {
        let element = if precision == WeightPrecision::Fp32 {
            4.0
        } else {
            2.0
        };
        let mut w = weights(&self.parts(), precision, self.arch.rope_gib(element));
        if let Some(bytes) = self.indexed_bytes(precision) {
            w.total_gib = bytes as f64 / GIB * w.padding;
        }
        w
    }
}

/// The model of a request, with the sentences that say where its figures
/// came from.
pub(crate) fn resolve_model(req: &SizingRequest) -> Result<(Model, Vec<String>), SizingError> {
    let explicit = req
        .parameter_count
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .map(parse_parameter_count)
        .transpose()?;
    let (mut model, mut reasons) = match (&req.model_config, lookup(&req.model_id)) {
        (Some(config), found) => from_config(req, config, found, explicit)?,
        (None, Some(found)) => from_catalog(&req.model_id, found, explicit),
        (None, None) => guessed(req, explicit)?,
    };
    if let Some(bytes) = req.checkpoint_bytes {
        model.checkpoint_bytes = Some(bytes);
        reasons.push(format!(
            "Checkpoint: {} of weights (model.safetensors.index.json metadata.total_size).",
            gib(bytes as f64 / GIB)
        ));
    }
    Ok((model, reasons))
}

/// A weights index far from what the model's shapes weigh at its own
/// precision (a quarter or four times as much): most likely another file's
/// total, which the plan would take as the exact weights.
pub(crate) fn checkpoint_bytes_warning(req: &SizingRequest, m: &Model) -> Option<String> {
    let bytes = m.checkpoint_bytes? as f64;
    let (params_b, precision, source) = match (&req.model_config, m.spec) {
        (Some(c), _) => (
            c.estimated_params_b().0,
            c.quantization.as_ref().map(|q| q.precision).or(c.dtype),
            "config.json's shapes give",
        ),
        (None, Some(spec)) => (
            spec.params_b,
            Some(spec.native_precision()),
            "the catalog's parameter count gives",
        ),
        // A count read from the index itself agrees with it.
        (None, None) => (
            m.total_b,
            m.checkpoint_precision(),
            "the parameter count gives",
        ),
    };
    let precision = precision.unwrap_or(WeightPrecision::Bf16);
    let expected = params_b * 1e9 * precision.bytes_per_param();
    let ratio = bytes / expected;
    (!(0.25..=4.0).contains(&ratio)).then(|| {
        format!(
            "The weights index gives {} of weights, {ratio:.2} times the {} that {source} at {precision}: \
             check that it is metadata.total_size of this model's model.safetensors.index.json, since the plan \
             counts the weights as the index says",
            gib(bytes / GIB),
            gib(expected / GIB)
        )
    })
}

/// How far a given parameter count may be from the catalog's and still be
/// the catalog model's count, rounded ("7B" for 7.61 B, "8x7B" for 46.7 B).
const ROUNDED_COUNT: std::ops::RangeInclusive<f64> = 0.8..=1.25;

/// Whether `given_b` billion parameters is the catalog entry's count as
/// people write it: then the catalog's is exact (7 B for 7.61 B would
/// under-weigh the weights by 8% and over-promise the KV cache by as much).
fn rounds_to(given_b: f64, s: &CatalogModel) -> bool {
    ROUNDED_COUNT.contains(&(given_b / s.params_b))
}

/// An unquantized checkpoint whose config.json dtype names none of the
/// dtypes vLLM serves in: vLLM's auto dtype loads it in 16 bits, and so the
/// plan sizes it. (A quantized one's weights are its quantization's, and a
/// precision the caller asks for is theirs.)
pub(crate) fn config_dtype_warning(req: &SizingRequest) -> Option<String> {
    if req.quantization.is_some() {
        return None;
    }
    let c = req
        .model_config
        .as_ref()
        .filter(|c| c.quantization.is_none())?;
    let (field, written) = c.unread_dtype.as_ref()?;
    Some(format!(
        "config.json's {field} `{}` is none of bfloat16, float16 and float32, the dtypes vLLM serves in: \
         the plan sizes the weights at 16 bits, as vLLM's auto dtype loads them",
        crate::quote::cut(written)
    ))
}

/// A parameter count given for a catalog model but far from the catalog's
/// (outside [`ROUNDED_COUNT`]): the plan sizes for the count given, and
/// such a count is most likely a typo or another model's (70B for an 8B
/// model asks for 16 L4s instead of one). A pruned or merged variant may
/// differ on purpose, so it is a warning.
pub(crate) fn parameter_count_warning(req: &SizingRequest, m: &Model) -> Option<String> {
    let spec = m.spec?;
    req.parameter_count
        .as_deref()
        .filter(|c| !c.trim().is_empty())?;
    (!rounds_to(m.total_b, spec)).then(|| {
        let ratio = m.total_b / spec.params_b;
        format!(
            "The parameter count given, {} B, is {ratio:.2} times the {} B of {} in the catalog, and the plan \
             sizes for the count given: check it, or leave it out to take the catalog's",
            m.total_b, spec.params_b, spec.id
        )
    })
}

fn attention_words(a: &Arch) -> String {
    let mut s = if a.mla_kv_dim > 0 {
        let indexer = if a.indexer_head_dim > 0 {
            format!(
                " and DeepSeek sparse attention, whose indexer caches {}-element keys",
                a.indexer_head_dim
            )
        } else {
            String::new()
        };
        format!(
            "MLA with {} latent KV elements per token and layer{indexer}",
            a.mla_kv_dim
        )
    } else {
        format!(
            "{} attention heads, {} KV heads of dimension {}",
            a.attention_heads, a.kv_heads, a.head_dim
        )
    };
    if a.sliding_layers > 0 {
        s.push_str(&format!(
            ", {} of the {} layers with sliding-window attention",
            a.sliding_layers, a.layers
        ));
    }
    if a.linear_layers > 0 {
        s.push_str(&format!(
            ", {} of the {} layers {} ({} KiB of state per layer and sequence)",
            a.linear_layers,
            a.layers,
            match a.recurrent {
                RecurrentLayers::LinearAttention => "with linear attention",
                RecurrentLayers::Mamba => "Mamba-2",
            },
            a.linear_state_bytes / 1024
        ));
    }
    if a.cacheless_layers > 0 {
        s.push_str(&format!(
            ", {} with an MLP or experts alone, which cache nothing",
            a.cacheless_layers
        ));
    }
    s
}

/// A catalog entry. A parameter count the caller gave that is not the
/// entry's, rounded, still wins, because it may describe a pruned or merged
/// variant.
fn from_catalog(id: &str, found: ModelMatch, explicit: Option<ParamCount>) -> (Model, Vec<String>) {
    let s = found.spec;
    let mut reasons = Vec::new();
    if let Some(note) = found.note {
        reasons.push(format!("{note}."));
    }
    let (total_b, active_b) = match explicit {
        Some(c) if rounds_to(c.total_b, s) => {
            reasons.push(format!(
                "Parameter count {} B as given, taken as the catalog's exact {} B.",
                c.total_b, s.params_b
            ));
            (s.params_b, s.active_params_b)
        }
        Some(c) => {
            reasons.push(format!(
                "Parameter count {} B as given (the catalog says {} B).",
                c.total_b, s.params_b
            ));
            (c.total_b, c.active_b)
        }
        None => (s.params_b, s.active_params_b),
    };
    let arch = Arch::from_spec(s);
    reasons.push(format!(
        "Catalog entry {}: {} B parameters ({} B active), {} layers, {}, vocabulary {}, {}-token context.",
        s.id,
        s.params_b,
        s.active_params_b,
        s.layers,
        attention_words(&arch),
        thousands(u64::from(s.vocab)),
        thousands(s.context)
    ));
    let model = Model {
        id: id.to_string(),
        spec: Some(s),
        name: s.id.to_string(),
        arch,
        total_b,
        active_b,
        unquantized_b: s.unquantized_params_b,
        excluded_b: 0.0,
        context: Some(s.context),
        native: Some(s.native_precision()),
        mxfp4: s.native_dtype == "mxfp4",
        int4_group: s.int4_group(),
        quant_method: None,
        float16: s.float16,
        tied_embeddings: s.tied_embeddings,
        vision_b: s.vision_params_b,
        checkpoint_bytes: None,
        guessed: false,
    };
    (model, reasons)
}

/// The model's own config.json: its architecture exactly. The parameter
/// count comes from the caller, else the checkpoint's bytes, else the
/// catalog, else the config's shapes.
fn from_config(
    req: &SizingRequest,
    c: &ModelConfig,
    found: Option<ModelMatch>,
    explicit: Option<ParamCount>,
) -> Result<(Model, Vec<String>), SizingError> {
    let spec = found.map(|f| f.spec);
    let native = c
        .quantization
        .as_ref()
        .map(|q| q.precision)
        .or(c.dtype)
        .or(spec.map(CatalogModel::native_precision));
    let (shape_total, shape_active) = c.estimated_params_b();
    let (total_b, active_b, source) = if let Some(p) = explicit {
        match spec.filter(|s| rounds_to(p.total_b, s)) {
            Some(s) => (
                s.params_b,
                s.active_params_b,
                format!(
                    "{} B as given, taken as catalog entry {}'s exact count",
                    p.total_b, s.id
                ),
            ),
            None => (p.total_b, p.active_b, "as given".to_string()),
        }
    } else if let (Some(bytes), None, Some(p)) = (req.checkpoint_bytes, &c.quantization, native) {
        let total = bytes as f64 / p.bytes_per_param() / 1e9;
        let active = total * shape_active / shape_total.max(1e-9);
        (
            total,
            active,
            format!("{p} checkpoint bytes / {} B", p.bytes_per_param()),
        )
    } else if let Some(s) = spec {
        (
            s.params_b,
            s.active_params_b,
            format!("catalog entry {}", s.id),
        )
    } else {
        (
            shape_total,
            shape_active,
            "estimated from the config's shapes; give the weights index for the exact bytes"
                .to_string(),
        )
    };
    let vocab = if c.vocab > 0 { c.vocab } else { GUESSED_VOCAB };
    let arch = Arch {
        layers: c.layers,
        attention_heads: c.attention_heads,
        kv_heads: c.kv_heads,
        head_dim: c.head_dim,
        hidden_size: c.hidden_size,
        mla_kv_dim: c.mla_kv_dim,
        indexer_head_dim: c.indexer_head_dim,
        vocab,
        sliding_layers: c.sliding_layers,
        sliding_window: c.sliding_window,
        linear_layers: c.linear_layers,
        linear_state_bytes: c.linear_state_bytes,
        recurrent: c.recurrent,
        cacheless_layers: c.cacheless_layers,
        experts: c.experts,
        experts_per_token: c.experts_per_token,
        rope_positions: c.context.unwrap_or(GUESSED_ROPE_POSITIONS),
    };
    let reason = format!(
        "Architecture from the model's config.json{}: {} layers, {}, hidden size {}, vocabulary {}{}; {:.2} B parameters ({:.2} B active, {source}).",
        c.model_type
            .as_deref()
            .map(|t| format!(" ({t})"))
            .unwrap_or_default(),
        c.layers,
        attention_words(&arch),
        c.hidden_size,
        thousands(u64::from(vocab)),
        if c.experts > 0 {
            format!(", {} experts", c.experts)
        } else {
            String::new()
        },
        total_b,
        active_b,
    );
    let model = Model {
        id: req.model_id.clone(),
        spec,
        name: req.model_id.clone(),
        arch,
        total_b,
        active_b: active_b.min(total_b),
        unquantized_b: spec.map_or(0.0, |s| s.unquantized_params_b),
        excluded_b: c.quantization.as_ref().map_or(0.0, |q| q.excluded_b),
        context: c.context,
        native,
        mxfp4: c.quantization.as_ref().is_some_and(|q| q.mxfp4),
        int4_group: c.quantization.as_ref().and_then(|q| q.int4_group),
        quant_method: c.quantization.as_ref().map(|q| q.method.clone()),
        float16: c.model_type.as_deref().is_none_or(runs_in_float16),
        tied_embeddings: c.tied_embeddings,
        vision_b: if c.has_vision { c.vision_params_b } else { 0.0 },
        checkpoint_bytes: None,
        guessed: false,
    };
    Ok((model, vec![reason]))
}

/// The precision a checkpoint known by its id alone is taken to have: the
/// id's quantization marker (`-AWQ`, `-FP8`), else bf16, as the plan serves it.
fn assumed_precision(id: &str) -> WeightPrecision {
    precision_marker(id).map_or(WeightPrecision::Bf16, |(p, _)| p)
}

/// A model outside the catalog with no config.json: its size from the
/// caller, from the id (`...-13B`) or from its weights index, its
/// architecture that of the Llama 3 model nearest in size
/// ([`nearest_template`]).
fn guessed(
    req: &SizingRequest,
    explicit: Option<ParamCount>,
) -> Result<(Model, Vec<String>), SizingError> {
    let id = &req.model_id;
    let assumed = assumed_precision(id);
    let (count, source) = match (explicit, count_from_id(id), req.checkpoint_bytes) {
        (Some(c), _, _) => (c, "as given".to_string()),
        (None, Some(c), _) => (c, "read from the id".to_string()),
        (None, None, Some(bytes)) => {
            // To 0.01 B, for the reasons: the weights are the index's bytes.
            let total_b = (bytes as f64 / assumed.bytes_per_param() / 1e7).round() / 100.0;
            let count = ParamCount {
                total_b,
                active_b: total_b,
            };
            let source = format!(
                "the weights index's bytes / {} B, taking the checkpoint as {assumed}",
                assumed.bytes_per_param()
            );
            (count, source)
        }
        (None, None, None) => {
            return Err(SizingError::MissingParameterCount {
                model: id.to_string(),
            });
        }
    };
    let like = nearest_template(count.total_b);
    let arch = Arch::from_spec(like);
    let (kv_heads, heads) = (arch.kv_heads, arch.attention_heads);
    let reason = format!(
        "{id} is not in the model catalog and no config.json was given: {} B parameters ({source}); its architecture is assumed \
         to be that of {}, the Llama 3 model nearest in size (one family from 1 B to 405 B, built as today's dense models are \
         and growing with size, so a larger model is never assumed to need less): {} layers, grouped-query attention ({heads} heads and {kv_heads} KV heads of dimension {}), hidden size {}, a {}-token vocabulary \
         and no sliding window. A model with multi-head attention ({heads} KV heads) caches {}x as much per token and may need \
         more GPUs for a long context. Give the model's config.json (the Model's config, or `size --config`) for its exact \
         architecture{}.",
        count.total_b,
        like.id,
        arch.layers,
        arch.head_dim,
        arch.hidden_size,
        thousands(u64::from(arch.vocab)),
        heads / kv_heads.max(1),
        if req.checkpoint_bytes.is_some() {
            ""
        } else {
            ", and its model.safetensors.index.json for the exact weights"
        },
    );
    let model = Model {
        id: id.to_string(),
        spec: None,
        name: id.to_string(),
        arch,
        total_b: count.total_b,
        active_b: count.active_b,
        unquantized_b: 0.0,
        excluded_b: 0.0,
        context: None,
        native: None,
        mxfp4: false,
        int4_group: None,
        quant_method: None,
        float16: true,
        // Untied: a quantized checkpoint then keeps the larger 16-bit part.
        tied_embeddings: false,
        vision_b: 0.0,
        checkpoint_bytes: None,
        guessed: true,
    };
    Ok((model, vec![reason]))
}
