//! The layouts the engine considers for a model on a GPU, in order of
//! preference, and the smallest of them that holds a given context: the
//! search every other decision (the chosen layout, the context cap, the
//! suggestions when nothing fits) is built on.

use super::fit::{Fit, Sizer};
use super::gpus::Gpu;
use super::resolved_model::Model;

/// Largest replica the engine plans, in nodes.
pub(crate) const MAX_NODES: u32 = 16;

/// vLLM's rule: heads % tp == 0 and (kv % tp == 0 or tp % kv == 0).
pub(crate) fn valid_tp(heads: u32, kv_heads: u32, tp: u32) -> bool {
    tp > 0
        && kv_heads > 0
        && heads.is_multiple_of(tp)
        && (kv_heads.is_multiple_of(tp) || tp.is_multiple_of(kv_heads))
}

/// Powers of two up to `per_node` that are valid tensor-parallel sizes.
pub(crate) fn valid_tps(heads: u32, kv_heads: u32, per_node: u32) -> Vec<u32> {
    std::iter::successors(Some(1u32), |t| t.checked_mul(2))
        .take_while(|t| *t <= per_node.max(1))
        .filter(|t| valid_tp(heads, kv_heads, *t))
        .collect()
}

/// Layouts in order of preference: within a node by GPU count, TP before
/// pipeline stages at each count, then whole nodes with TP = the largest
/// valid TP. Within a node the engine plans 1, 2, 4 or 8 GPUs, as the
/// published recipes do, unless the caller fixed PP or the model allows no
/// TP but 1 (then stages alone, any count). By GPU count, so that more
/// sequences never get a smaller layout: trying TP alone up to the whole
/// node first put 4 x L4 (TP 4) before 2 x L4 (TP 1, PP 2), and a model
/// whose KV heads TP copies (gemma-2b has one) got 4 L4s for 96 sequences
/// and 2 for 128.
pub(crate) fn candidates(
    m: &Model,
    gpu: &Gpu,
    tp: Option<u32>,
    pp: Option<u32>,
) -> Vec<(u32, u32)> {
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
    let mut in_node = Vec::new();
    let mut multi = Vec::new();
    for &t in &tps {
        for &p in &pps {
            let Some(n) = t.checked_mul(p).filter(|n| *n <= max_gpus) else {
                continue;
            };
            if n <= per_node {
                if n.is_power_of_two() || pp.is_some() || max_tp == 1 {
                    in_node.push((t, p));
                }
            } else if n % per_node == 0 && (t == max_tp || tp.is_some()) {
                multi.push((t, p));
            }
        }
    }
    in_node.sort_by_key(|&(t, p)| (t * p, p));
    multi.sort_by_key(|&(t, p)| (t * p, p));
    in_node.into_iter().chain(multi).collect()
}

/// The smallest layout of any shape that holds `tokens`, for suggestions.
pub(crate) fn smallest_layout(sizer: &Sizer, gpu: &Gpu, tokens: u64) -> Option<Fit> {
    sizer
        .search(gpu, &candidates(sizer.model, gpu, None, None), tokens)
        .0
}
