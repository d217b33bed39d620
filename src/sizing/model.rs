//! The model as the engine sees it: catalog figures when the catalog knows
//! it, conservative estimates from the parameter count when it does not.
//!
//! Everything after this step works on a [`Model`] and never asks where its
//! figures came from; the reasons say it once, here.

use super::memory::Arch;
use super::models::{ModelMatch, ModelSpec, lookup};
use super::params::{ParamCount, count_from_id, parse_parameter_count};
use super::text::thousands;
use super::{SizingError, SizingRequest};

/// The model being sized.
pub struct Model {
    /// The id as the caller wrote it.
    pub id: String,
    pub spec: Option<&'static ModelSpec>,
    /// The name errors use: the catalog id, else the caller's.
    pub name: String,
    pub arch: Arch,
    pub total_b: f64,
    pub active_b: f64,
    /// Parameters a quantized checkpoint keeps in bf16.
    pub unquantized_b: f64,
    /// The model's own context length, when the catalog knows it.
    pub context: Option<u64>,
}

/// The model of a request, with the sentences that say where its figures
/// came from.
pub fn resolve_model(req: &SizingRequest) -> Result<(Model, Vec<String>), SizingError> {
    let explicit = req
        .parameter_count
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .map(parse_parameter_count)
        .transpose()?;
    match lookup(&req.model_id) {
        Some(found) => Ok(from_catalog(&req.model_id, found, explicit)),
        None => estimated(&req.model_id, explicit),
    }
}

/// A catalog entry; a parameter count the caller gave still wins, because it
/// may describe a pruned or merged variant.
fn from_catalog(id: &str, found: ModelMatch, explicit: Option<ParamCount>) -> (Model, Vec<String>) {
    let s = found.spec;
    let mut reasons = Vec::new();
    if let Some(note) = found.note {
        reasons.push(format!("{note}."));
    }
    let (total_b, active_b) = match explicit {
        Some(c) => {
            reasons.push(format!(
                "Parameter count {} B as given (the catalog says {} B).",
                c.total_b, s.params_b
            ));
            (c.total_b, c.active_b)
        }
        None => (s.params_b, s.active_params_b),
    };
    let attention = if s.is_mla() {
        format!(
            "MLA with {} latent KV elements per token and layer",
            s.mla_kv_dim
        )
    } else {
        format!(
            "{} attention heads, {} KV heads of dimension {}",
            s.attention_heads, s.kv_heads, s.head_dim
        )
    };
    reasons.push(format!(
        "Catalog entry {}: {} B parameters ({} B active), {} layers, {attention}, {}-token context.",
        s.id,
        s.params_b,
        s.active_params_b,
        s.layers,
        thousands(s.context)
    ));
    let model = Model {
        id: id.to_string(),
        spec: Some(s),
        name: s.id.to_string(),
        arch: Arch::from_spec(s),
        total_b,
        active_b,
        unquantized_b: s.unquantized_params_b,
        context: Some(s.context),
    };
    (model, reasons)
}

/// A model outside the catalog: its size from the caller or from the id
/// (`...-13B`), its architecture estimated on the safe side.
fn estimated(id: &str, explicit: Option<ParamCount>) -> Result<(Model, Vec<String>), SizingError> {
    let (count, source) = match explicit {
        Some(c) => (c, "as given"),
        None => match count_from_id(id) {
            Some(c) => (c, "read from the id"),
            None => {
                return Err(SizingError::MissingParameterCount {
                    model: id.to_string(),
                });
            }
        },
    };
    let arch = Arch::estimate(count.total_b);
    let reason = format!(
        "{id} is not in the model catalog: {} B parameters ({source}); architecture estimated conservatively as {} layers, {} attention heads, 8 KV heads of dimension {}, hidden size {} (models with full multi-head attention need more KV cache).",
        count.total_b, arch.layers, arch.attention_heads, arch.head_dim, arch.hidden_size
    );
    let model = Model {
        id: id.to_string(),
        spec: None,
        name: id.to_string(),
        arch,
        total_b: count.total_b,
        active_b: count.active_b,
        unquantized_b: 0.0,
        context: None,
    };
    Ok((model, vec![reason]))
}
