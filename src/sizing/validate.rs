//! The ranges of the request's numbers, checked before any decision.
//!
//! The bounds are far above real use; they exist so that every product the
//! engine forms stays exact in u64 and f64, and so that a typo gets an error
//! that names the field instead of an absurd plan.

use super::error::SizingError;
use super::plan::SizingRequest;

/// Upper bounds on user numbers, far above real use, so that products stay
/// exact in u64 and f64.
pub(crate) const MAX_MODEL_LEN: u64 = 100_000_000;
pub(crate) const MAX_GPU_COUNT: u32 = 4_096;
pub(crate) const MAX_CONCURRENCY: u32 = 100_000;

/// The first field out of range, as an error.
pub(crate) fn validate(req: &SizingRequest) -> Result<(), SizingError> {
    let bad = |field: &'static str, value: String, reason: &str| {
        Err(SizingError::invalid(field, value, reason))
    };
    let u = req.gpu_memory_utilization;
    if !u.is_finite() || u <= 0.0 || u > 1.0 {
        return bad(
            "gpuMemoryUtilization",
            crate::quote::shown_number(u),
            "it must be above 0 and at most 1 (0.9 is usual)",
        );
    }
    if let Some(l) = req.max_model_len
        && (l == 0 || l > MAX_MODEL_LEN)
    {
        return bad(
            "maxModelLen",
            l.to_string(),
            "it must be between 1 and 100000000 tokens",
        );
    }
    for (field, v) in [
        ("gpu count", req.gpu_count),
        ("tensor parallel size", req.tensor_parallel),
        ("pipeline parallel size", req.pipeline_parallel),
    ] {
        if let Some(v) = v
            && (v == 0 || v > MAX_GPU_COUNT)
        {
            return bad(field, v.to_string(), "it must be between 1 and 4096");
        }
    }
    if let Some(c) = req.concurrency
        && (c == 0 || c > MAX_CONCURRENCY)
    {
        return bad(
            "concurrency",
            c.to_string(),
            "it must be between 1 and 100000",
        );
    }
    if req.model_id.trim().is_empty() {
        return bad("model", String::new(), "it must name a model");
    }
    Ok(())
}

/// Checks a tensor-parallel size against the attention heads of the model
/// `req` names, with the rule sizing applies on every GPU type (see
/// `candidates::valid_tp`): for a Model's shardSpec, which no GPU type is chosen
/// for. Ok when the model cannot be resolved: sizing then says why.
pub fn check_tensor_parallel(req: &SizingRequest, tp: u32) -> Result<(), String> {
    let Ok((m, _)) = super::resolved_model::resolve_model(req) else {
        return Ok(());
    };
    let (heads, kv) = (m.arch.attention_heads, m.arch.kv_heads);
    if super::candidates::valid_tp(heads, kv, tp) {
        return Ok(());
    }
    let valid = super::candidates::valid_tps(heads, kv, u32::MAX)
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
