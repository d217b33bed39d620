//! The error when no layout holds the model, and what would instead.
//!
//! "Does not fit" alone leaves the reader guessing; the engine already knows
//! how to size, so it tries the obvious ways out (a shorter context, lower
//! precision, a bigger GPU) and names the ones that work.

use super::candidates::{MAX_NODES, smallest_layout};
use super::context::{fewer_sequences_than_asked, some_of_the_sequences};
use super::error::SizingError;
use super::fit::{Device, Fit, Sizer, layout_name};
use super::gpus::{Gpu, gpus};
use super::plan::DEFAULT_GPU_MEMORY_UTILIZATION;
use super::precision::WeightPrecision;
use super::target::ContextTarget;

/// The error for a model that no candidate layout holds.
pub(crate) fn no_fit(
    sizer: &Sizer,
    gpu: &Gpu,
    precision: WeightPrecision,
    cands: &[(u32, u32)],
    ctx: &ContextTarget,
) -> SizingError {
    let m = sizer.model;
    // How much context or concurrency fits is said only of a stated one.
    let roomiest = if ctx.need_stated() {
        roomiest_layout(sizer, gpu, cands, ctx)
    } else {
        None
    };
    if ctx.explicit
        && let Some(best) = &roomiest
        && let Some(e) = context_is_the_problem(sizer, gpu, best, ctx)
    {
        return e;
    }
    // A default context falls back to 4,096 tokens before the engine gives
    // up, so its sequences are counted at that length.
    let length = ctx.length_to_hold();
    // The weights fit and some of a stated concurrency's sequences do: the
    // concurrency is at fault, not the model's size.
    let too_many_sequences = roomiest.as_ref().filter(|best| {
        ctx.concurrency_stated && some_of_the_sequences(best, ctx, length).is_some()
    });
    let tokens = match too_many_sequences {
        Some(_) => ctx.tokens_at(length),
        None => ctx.tokens(),
    };
    let mut ideas = Vec::new();
    if let Some(idea) = usual_utilization(sizer, gpu, tokens) {
        ideas.push(idea);
    }
    if let Some(idea) = lower_precision(sizer, gpu, precision, tokens) {
        ideas.push(idea);
    }
    if let Some((g, f)) = bigger_gpu(sizer, gpu, precision, tokens) {
        ideas.push(format!(
            "a bigger GPU would: {}",
            layout_name(g, f.tp, f.pp)
        ));
    }
    if let Some(best) = too_many_sequences {
        let roomiest = format!(
            "the roomiest layout of up to {MAX_NODES} nodes, {},",
            layout_name(gpu, best.tp, best.pp)
        );
        let hint = || ideas.iter().map(|idea| format!("; {idea}")).collect();
        if let Some(e) = fewer_sequences_than_asked(roomiest, best, ctx, length, hint) {
            return e;
        }
    }
    if ctx.explicit {
        ideas.push("a shorter maxModelLen needs less KV cache".to_string());
    }
    // Narrower weights and bigger GPUs were tried above: when neither helps,
    // the model's size itself is the likely mistake.
    let suggestion = if ideas.is_empty() {
        format!(
            "no layout of up to {MAX_NODES} nodes holds it, nor would narrower weights or a bigger GPU type; \
             check the model's size (its parameter count or weights index)"
        )
    } else {
        format!(
            "no layout of up to {MAX_NODES} nodes holds it; {}",
            ideas.join("; ")
        )
    };
    SizingError::DoesNotFit {
        model: m.name.clone(),
        gpu: gpu.name.to_string(),
        precision: precision.as_str(),
        weights_gib: sizer.weights.total_gib,
        suggestion,
    }
}

/// The candidate layout that holds the weights with the most room left for
/// the KV cache.
fn roomiest_layout(
    sizer: &Sizer,
    gpu: &Gpu,
    cands: &[(u32, u32)],
    ctx: &ContextTarget,
) -> Option<Fit> {
    cands
        .iter()
        .map(|&(t, p)| sizer.evaluate(Device::gpu(gpu), t, p, ctx.tokens()))
        .filter(|f| f.recipe_ok && f.holds_weights())
        .max_by_key(|f| f.capacity_tokens)
}

/// The context is the problem when the roomiest layout, `best`, holds the
/// weights: then the error names the longest context that fits.
fn context_is_the_problem(
    sizer: &Sizer,
    gpu: &Gpu,
    best: &Fit,
    ctx: &ContextTarget,
) -> Option<SizingError> {
    let fits = ctx.longest_fitting(best.capacity_tokens);
    (fits > 0).then(|| SizingError::ContextDoesNotFit {
        requested: ctx.target,
        fits,
        model: sizer.model.name.clone(),
        layout: layout_name(gpu, best.tp, best.pp),
        suggestion: "use a shorter maxModelLen or a GPU with more memory".to_string(),
    })
}

/// vLLM's usual share of GPU memory, when the request asked for less and
/// that share would hold the model: the cause may be the setting, not the
/// GPU.
fn usual_utilization(sizer: &Sizer, gpu: &Gpu, tokens: u64) -> Option<String> {
    if sizer.util >= DEFAULT_GPU_MEMORY_UTILIZATION {
        return None;
    }
    let usual = Sizer {
        util: DEFAULT_GPU_MEMORY_UTILIZATION,
        ..sizer.clone()
    };
    smallest_layout(&usual, gpu, tokens).map(|f| {
        format!(
            "gpuMemoryUtilization {DEFAULT_GPU_MEMORY_UTILIZATION} (not {}) would fit on {}",
            sizer.util,
            layout_name(gpu, f.tp, f.pp)
        )
    })
}

/// fp8 or int4 weights, whichever narrower one first fits on this GPU.
fn lower_precision(
    sizer: &Sizer,
    gpu: &Gpu,
    precision: WeightPrecision,
    tokens: u64,
) -> Option<String> {
    let m = sizer.model;
    for p in [WeightPrecision::Fp8, WeightPrecision::Int4] {
        if p.bytes_per_param() >= precision.bytes_per_param()
            || (p == WeightPrecision::Fp8 && !gpu.fp8)
        {
            continue;
        }
        let narrower = sizer.with_weights(m.weights(p));
        if let Some(f) = smallest_layout(&narrower, gpu, tokens) {
            return Some(format!(
                "{p} weights would fit on {}",
                layout_name(gpu, f.tp, f.pp)
            ));
        }
    }
    None
}

/// Among bigger GPUs that hold the model: same vendor first, then the
/// fewest nodes, then the least memory.
fn bigger_gpu(
    sizer: &Sizer,
    gpu: &Gpu,
    precision: WeightPrecision,
    tokens: u64,
) -> Option<(&'static Gpu, Fit)> {
    gpus()
        .iter()
        .filter(|g| g.memory_gib > gpu.memory_gib && (precision != WeightPrecision::Fp8 || g.fp8))
        .filter_map(|g| smallest_layout(sizer, g, tokens).map(|f| (g, f)))
        .min_by(|(a, fa), (b, fb)| {
            let nodes = |g: &Gpu, f: &Fit| f.devices().div_ceil(g.per_node);
            (a.vendor != gpu.vendor)
                .cmp(&(b.vendor != gpu.vendor))
                .then(nodes(a, fa).cmp(&nodes(b, fb)))
                .then(a.memory_gib.total_cmp(&b.memory_gib))
        })
}
