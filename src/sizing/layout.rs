//! How many GPUs, split how: tensor parallelism (TP) within a node, pipeline
//! stages (PP) within a node, then whole nodes of TP = GPUs per node.
//!
//! The caller may fix the layout (a GPU count, TP, PP); otherwise the engine
//! takes the smallest layout that holds the model, in that order of
//! preference, because TP within a node is the fastest way to add memory and
//! crossing nodes is the slowest.

use super::context::{Context, MIN_DEFAULT_CONTEXT};
use super::fit::{Device, Fit, Sizer, layout_name};
use super::model::Model;
use super::no_fit::no_fit;
use super::text::{gib, join_counts};
use super::{Gpu, Precision, SizingError, SizingRequest, TpLimits};

/// Largest replica the engine plans, in nodes.
pub const MAX_NODES: u32 = 16;

/// vLLM's rule: heads % tp == 0 and (kv % tp == 0 or tp % kv == 0).
pub fn valid_tp(heads: u32, kv_heads: u32, tp: u32) -> bool {
    tp > 0
        && kv_heads > 0
        && heads.is_multiple_of(tp)
        && (kv_heads.is_multiple_of(tp) || tp.is_multiple_of(kv_heads))
}

/// Powers of two up to `per_node` that are valid tensor-parallel sizes.
pub fn valid_tps(heads: u32, kv_heads: u32, per_node: u32) -> Vec<u32> {
    std::iter::successors(Some(1u32), |t| t.checked_mul(2))
        .take_while(|t| *t <= per_node.max(1))
        .filter(|t| valid_tp(heads, kv_heads, *t))
        .collect()
}

/// What an invalid TP or GPU count is checked against, for its error.
fn tp_limits(m: &Model, gpu: &Gpu) -> TpLimits {
    TpLimits {
        model: m.name.clone(),
        heads: m.arch.attention_heads,
        kv_heads: m.arch.kv_heads,
        gpu: gpu.name.to_string(),
        per_node: gpu.per_node,
    }
}

/// Layouts in order of preference: TP alone within a node, then TP x PP
/// within a node, then whole nodes with TP = the largest valid TP.
pub fn candidates(m: &Model, gpu: &Gpu, tp: Option<u32>, pp: Option<u32>) -> Vec<(u32, u32)> {
    let per_node = gpu.per_node;
    let tps = match tp {
        Some(t) => vec![t],
        None => valid_tps(m.arch.attention_heads, m.arch.kv_heads, per_node),
    };
    let max_tp = tps.iter().copied().max().unwrap_or(1);
    let max_gpus = per_node.saturating_mul(MAX_NODES);
    let pps: Vec<u32> = match pp {
        Some(p) => vec![p],
        None => (1..=m.arch.layers.min(max_gpus)).collect(),
    };
    let mut single = Vec::new();
    let mut staged = Vec::new();
    let mut multi = Vec::new();
    for &t in &tps {
        for &p in &pps {
            let Some(n) = t.checked_mul(p).filter(|n| *n <= max_gpus) else {
                continue;
            };
            if n <= per_node {
                if p == 1 {
                    single.push((t, p));
                } else {
                    staged.push((t, p));
                }
            } else if n % per_node == 0 && (t == max_tp || tp.is_some()) {
                multi.push((t, p));
            }
        }
    }
    single.sort_by_key(|&(t, _)| t);
    staged.sort_by_key(|&(t, p)| (t * p, p));
    multi.sort_by_key(|&(t, p)| (t * p, p));
    single.into_iter().chain(staged).chain(multi).collect()
}

/// The smallest layout of any shape that holds `tokens`, for suggestions.
pub fn smallest_layout(sizer: &Sizer, gpu: &Gpu, tokens: u64) -> Option<Fit> {
    sizer
        .search(gpu, &candidates(sizer.model, gpu, None, None), tokens)
        .0
}

/// The layout for an explicit GPU count: TP = count within a node, whole
/// nodes of TP = the largest valid TP beyond.
fn layout_for_count(
    m: &Model,
    gpu: &Gpu,
    count: u32,
    tps: &[u32],
) -> Result<(u32, u32), SizingError> {
    let per_node = gpu.per_node;
    if count <= per_node && tps.contains(&count) {
        return Ok((count, 1));
    }
    let max_tp = tps.iter().copied().max().unwrap_or(1);
    if count > per_node
        && count.is_multiple_of(per_node)
        && count.is_multiple_of(max_tp)
        && count / max_tp <= m.arch.layers
    {
        return Ok((max_tp, count / max_tp));
    }
    Err(SizingError::InvalidGpuCount {
        count,
        limits: tp_limits(m, gpu),
        valid: format!(
            "{} on one node, or a multiple of {per_node} across nodes",
            join_counts(tps)
        ),
    })
}

/// The layout the request fixes, if it fixes one: TP x PP from any two of
/// GPU count, TP and PP, or the layout for a GPU count alone. `None` leaves
/// the choice (and any single TP or PP given) to [`choose_layout`].
pub fn requested_layout(
    req: &SizingRequest,
    m: &Model,
    gpu: &Gpu,
    tps: &[u32],
) -> Result<Option<(u32, u32)>, SizingError> {
    let check_tp = |t: u32| -> Result<u32, SizingError> {
        if valid_tp(m.arch.attention_heads, m.arch.kv_heads, t) {
            Ok(t)
        } else {
            Err(SizingError::InvalidTensorParallel {
                tp: t,
                limits: tp_limits(m, gpu),
                valid: join_counts(tps),
            })
        }
    };
    let check_pp = |p: u32| -> Result<u32, SizingError> {
        if p <= m.arch.layers {
            Ok(p)
        } else {
            Err(SizingError::InvalidPipelineParallel {
                pp: p,
                model: m.name.clone(),
                layers: m.arch.layers,
            })
        }
    };
    let not_a_multiple = |c: u32, of: &str, size: u32| {
        SizingError::invalid(
            "gpu count",
            c.to_string(),
            format!("it must be a multiple of the {of} size {size}"),
        )
    };
    if let Some(t) = req.tensor_parallel {
        check_tp(t)?;
    }
    if let Some(p) = req.pipeline_parallel {
        check_pp(p)?;
    }
    let layout = match (req.gpu_count, req.tensor_parallel, req.pipeline_parallel) {
        (None, _, None) | (None, None, _) => None,
        (count, Some(t), Some(p)) => {
            let product = u64::from(t) * u64::from(p);
            if let Some(c) = count
                && u64::from(c) != product
            {
                return Err(SizingError::ParallelismMismatch {
                    gpu_count: c,
                    tp: t,
                    pp: p,
                    product,
                });
            }
            Some((t, p))
        }
        (Some(c), Some(t), None) => {
            if c % t != 0 {
                return Err(not_a_multiple(c, "tensor parallel", t));
            }
            Some((t, check_pp(c / t)?))
        }
        (Some(c), None, Some(p)) => {
            if c % p != 0 {
                return Err(not_a_multiple(c, "pipeline parallel", p));
            }
            Some((check_tp(c / p)?, p))
        }
        (Some(c), None, None) => Some(layout_for_count(m, gpu, c, tps)?),
    };
    Ok(layout)
}

/// The smallest layout that holds the model at the target context, or, for
/// a default context that fits nowhere, at a short one (the context is
/// capped later); with the sentence that says why no smaller layout would do.
pub fn choose_layout(
    req: &SizingRequest,
    sizer: &Sizer,
    gpu: &Gpu,
    precision: Precision,
    ctx: &Context,
    tps: &[u32],
) -> Result<(Fit, String), SizingError> {
    let m = sizer.model;
    let tokens = ctx.tokens();
    let cands = candidates(m, gpu, req.tensor_parallel, req.pipeline_parallel);
    let (found, miss) = sizer.search(gpu, &cands, tokens);
    let (found, miss) = match found {
        Some(f) => (Some(f), miss),
        None if !ctx.explicit && ctx.target > MIN_DEFAULT_CONTEXT => {
            let (f, miss) = sizer.search(gpu, &cands, MIN_DEFAULT_CONTEXT * ctx.concurrency);
            (f.map(|f| sizer.refit(&f, tokens)), miss)
        }
        None => (None, miss),
    };
    let Some(fit) = found else {
        return Err(no_fit(sizer, gpu, precision, &cands, ctx));
    };
    let why_not = match miss {
        Some(f) if !f.recipe_ok => format!(
            "; {} GPU{} would have {:.0} GB for {:.1} GB of weights, below the vLLM recipes' 1.2 x weights",
            f.devices(),
            if f.devices() == 1 { "" } else { "s" },
            f.raw_gb,
            sizer.weights_gb()
        ),
        Some(f) => format!(
            "; {} would need {} per GPU of {} usable",
            layout_name(gpu, f.tp, f.pp),
            gib(f.need),
            gib(f.usable)
        ),
        None => String::new(),
    };
    let reason = format!(
        "{}: the smallest layout that holds it{why_not}. Valid TP sizes for {} attention heads and {} KV heads on {} GPUs per node: {}.",
        layout_name(gpu, fit.tp, fit.pp),
        m.arch.attention_heads,
        m.arch.kv_heads,
        gpu.per_node,
        join_counts(tps)
    );
    Ok((fit, reason))
}

/// A layout the request fixed, evaluated at the target context.
pub fn fixed_layout(
    sizer: &Sizer,
    gpu: &Gpu,
    (tp, pp): (u32, u32),
    ctx: &Context,
) -> (Fit, String) {
    let fit = sizer.evaluate(Device::gpu(gpu), tp, pp, ctx.tokens());
    (fit, format!("{} as requested.", layout_name(gpu, tp, pp)))
}
