//! How many GPUs, split how: tensor parallelism (TP) within a node, pipeline
//! stages (PP) within a node, then whole nodes of TP = GPUs per node.
//!
//! The caller may fix the layout (a GPU count, TP, PP); otherwise the engine
//! takes the smallest layout that holds the model ([`candidates`]): TP
//! before stages at each GPU count, because TP within a node is the fastest
//! way to add memory, and whole nodes last, because crossing nodes is the
//! slowest.

use super::candidates::{candidates, valid_tp};
use super::error::{SizingError, TpLimits};
use super::fit::{Device, Fit, Sizer, layout_name};
use super::gpus::Gpu;
use super::memory::SMALLER_DEFAULT_MAX_NUM_SEQS;
use super::no_fit::no_fit;
use super::plan::SizingRequest;
use super::precision::{Objective, WeightPrecision};
use super::resolved_model::Model;
use super::target::{ContextTarget, MIN_DEFAULT_CONTEXT};
use super::text::{count_of, gib, join_counts, thousands};

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

/// The layout for an explicit GPU count: TP = count within a node, whole
/// nodes (one included) of TP = the largest valid TP beyond.
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
    // A full node counts too: when TP = per_node is ruled out by the heads,
    // a node of 8 still serves as the largest valid TP x pipeline stages.
    if count >= per_node
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
pub(crate) fn requested_layout(
    req: &SizingRequest,
    m: &Model,
    gpu: &Gpu,
    tps: &[u32],
) -> Result<Option<(u32, u32)>, SizingError> {
    let tp_splits = |t: u32| valid_tp(m.arch.attention_heads, m.arch.kv_heads, t);
    // `validate` refuses 0 first; refusing it here too keeps `c % p` safe.
    let pp_fits = |p: u32| (1..=m.arch.layers).contains(&p);
    let check_tp = |t: u32| -> Result<u32, SizingError> {
        if tp_splits(t) {
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
        if pp_fits(p) {
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
        // A size derived from the GPU count is the count's problem, not
        // that of a size the request did not give.
        (Some(c), Some(t), None) => {
            if c % t != 0 {
                return Err(not_a_multiple(c, "tensor parallel", t));
            }
            let p = c / t;
            if !pp_fits(p) {
                return Err(SizingError::invalid(
                    "gpu count",
                    c.to_string(),
                    format!(
                        "with tensor parallel {t} it makes {p} pipeline stages, and {} has {} layers: use at most {} GPUs",
                        m.name,
                        m.arch.layers,
                        u64::from(t) * u64::from(m.arch.layers)
                    ),
                ));
            }
            Some((t, p))
        }
        (Some(c), None, Some(p)) => {
            if c % p != 0 {
                return Err(not_a_multiple(c, "pipeline parallel", p));
            }
            let t = c / p;
            if !tp_splits(t) {
                let counts: Vec<u32> = tps.iter().map(|t| t.saturating_mul(p)).collect();
                return Err(SizingError::InvalidGpuCount {
                    count: c,
                    limits: tp_limits(m, gpu),
                    valid: format!("{} with pipeline parallel {p}", join_counts(&counts)),
                });
            }
            Some((t, p))
        }
        (Some(c), None, None) => Some(layout_for_count(m, gpu, c, tps)?),
    };
    Ok(layout)
}

/// The smallest layout that holds the model at the target context, or, for
/// a default context that fits nowhere, at a short one (the context is
/// capped later); with the sentence that says why no smaller layout would do.
pub(crate) fn choose_layout(
    req: &SizingRequest,
    sizer: &Sizer,
    gpu: &Gpu,
    precision: WeightPrecision,
    ctx: &ContextTarget,
    tps: &[u32],
) -> Result<(Fit, String), SizingError> {
    let m = sizer.model;
    let tokens = ctx.tokens();
    let cands = candidates(m, gpu, req.tensor_parallel, req.pipeline_parallel);
    // A stated concurrency at the default context is sized at the shortest
    // default, the context then capped to what that layout holds: GPUs
    // bought for 32,768 tokens nobody asked for made 500 sequences of an 8B
    // model take 128 L4s and 1,000 of them 32.
    let shortest_default = !ctx.explicit && ctx.concurrency_stated;
    let length = if shortest_default {
        ctx.length_to_hold()
    } else {
        ctx.target
    };
    // The throughput objective first looks for room for its batch; when no
    // layout has it, the balanced choice stands and the reason says so.
    let mut serving_note = String::new();
    let (mut found, mut miss) = (None, None);
    if ctx.serving > ctx.concurrency {
        let (f, m) = sizer.search(gpu, &cands, ctx.serving_tokens_at(length));
        match f {
            Some(f) => {
                found = Some(sizer.refit(&f, tokens));
                miss = m;
                serving_note = format!(
                    "; its KV cache holds {} sequences of {} tokens (objective throughput)",
                    ctx.serving,
                    thousands(length)
                );
            }
            None => {
                serving_note = format!(
                    "; no layout holds {} sequences of {} tokens, so the throughput objective keeps the balanced layout",
                    ctx.serving,
                    thousands(length)
                );
            }
        }
    }
    if found.is_none() && !shortest_default {
        (found, miss) = sizer.search(gpu, &cands, tokens);
    }
    let (found, miss) = match found {
        Some(f) => (Some(f), miss),
        None if shortest_default || (!ctx.explicit && ctx.target > MIN_DEFAULT_CONTEXT) => {
            let (f, miss) = sizer.search(gpu, &cands, ctx.tokens_at(ctx.length_to_hold()));
            (f.map(|f| sizer.refit(&f, tokens)), miss)
        }
        None => (None, miss),
    };
    let Some(fit) = found else {
        return Err(no_fit(sizer, gpu, precision, &cands, ctx));
    };
    let why_not = match miss {
        Some(f) if !f.recipe_ok => format!(
            "; {} would have {:.0} GB for {:.1} GB of weights, below the vLLM recipes' 1.2 x weights",
            count_of(u64::from(f.devices()), "GPU"),
            f.raw_gb,
            sizer.weights_gb()
        ),
        Some(f) if !f.room_ok && f.need <= f.usable => format!(
            "; {} would leave the KV cache {} of {} usable per GPU, less than the sixth the balanced objective keeps for it{}",
            layout_name(gpu, f.tp, f.pp),
            gib(f.kv_free_gib),
            gib(f.usable),
            smaller_batch_hint(sizer, &f, tokens)
        ),
        Some(f) if serving_note.contains("(objective throughput)") => format!(
            "; {} would hold {} tokens",
            layout_name(gpu, f.tp, f.pp),
            thousands(f.capacity_tokens)
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
        "{}: the smallest layout that holds it (objective {}{}){why_not}{serving_note}. Valid TP sizes for {} attention heads and {} KV heads on {} GPUs per node: {}.",
        layout_name(gpu, fit.tp, fit.pp),
        sizer.objective,
        match (
            sizer.objective == Objective::Balanced && !sizer.headroom,
            shortest_default
        ) {
            (false, _) => String::new(),
            (true, false) =>
                ", sized for the stated context without the recipes' headroom".to_string(),
            (true, true) => format!(
                ", sized for the stated concurrency at {} tokens without the recipes' headroom",
                thousands(length)
            ),
        },
        m.arch.attention_heads,
        m.arch.kv_heads,
        gpu.per_node,
        join_counts(tps)
    );
    Ok((fit, reason))
}

/// How the layout `f`, refused for the KV headroom it leaves, would still
/// serve: on a server that batches fewer sequences than vLLM's default,
/// the sampler's smaller warm-up leaves the room. Said only where the
/// request's server can be given a `--max-num-seqs` of its own.
fn smaller_batch_hint(sizer: &Sizer, f: &Fit, tokens: u64) -> String {
    let Some(smaller) = sizer.with_smaller_batch(f.device) else {
        return String::new();
    };
    let at = smaller.evaluate(f.device, f.tp, f.pp, tokens);
    if at.fits() {
        format!(
            " (at --max-num-seqs {SMALLER_DEFAULT_MAX_NUM_SEQS}, not vLLM's default {}, it would keep {}, enough)",
            f.device.max_num_seqs,
            gib(at.kv_free_gib)
        )
    } else {
        String::new()
    }
}

/// A layout the request fixed, evaluated at the target context.
pub(crate) fn fixed_layout(
    sizer: &Sizer,
    gpu: &Gpu,
    (tp, pp): (u32, u32),
    ctx: &ContextTarget,
) -> (Fit, String) {
    let fit = sizer.evaluate(Device::gpu(gpu), tp, pp, ctx.tokens());
    (fit, format!("{} as requested.", layout_name(gpu, tp, pp)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::candidates::{smallest_layout, valid_tps};
    use crate::sizing::context::context_target;
    use crate::sizing::gpu;
    use crate::sizing::resolved_model::resolve_model;
    use crate::sizing::test_requests::{
        FALCON_7B, LLAMA_8B, LLAMA_70B, LLAMA_405B, QWEN_0_5B, QWEN_1_5B, QWEN_7B,
        whole_gpus as req,
    };

    /// TP x PP.
    type Layout = (u32, u32);
    type Layouts = Vec<Layout>;

    fn model(id: &str) -> Model {
        resolve_model(&req(id, "")).unwrap().0
    }

    /// Runs `f` on the request's GPU, a bf16 sizer (2-byte KV cache, 0.9
    /// utilization), the context the request asks for and the valid TPs, as
    /// `size` does.
    fn with<T>(r: &SizingRequest, f: impl FnOnce(&Gpu, &Sizer, &ContextTarget, &[u32]) -> T) -> T {
        let m = resolve_model(r).unwrap().0;
        let ctx = context_target(r, &m).unwrap();
        let g = gpu(&r.gpu_type).unwrap();
        let tps = valid_tps(m.arch.attention_heads, m.arch.kv_heads, g.per_node);
        let sizer = Sizer::for_request(&m, m.weights(WeightPrecision::Bf16), 2.0, r, &ctx);
        f(g, &sizer, &ctx, &tps)
    }

    /// The parts of a layout error that the rows tell apart.
    fn label(e: SizingError) -> String {
        match e {
            SizingError::InvalidTensorParallel { tp, valid, .. } => {
                format!("TP {tp} invalid; use {valid}")
            }
            SizingError::InvalidPipelineParallel { pp, layers, .. } => {
                format!("PP {pp} not in 1 to {layers} layers")
            }
            SizingError::ParallelismMismatch {
                gpu_count, product, ..
            } => format!("{gpu_count} GPUs != {product}"),
            SizingError::InvalidGpuCount { count, valid, .. } => {
                format!("{count} GPUs invalid; use {valid}")
            }
            SizingError::DoesNotFit { gpu, .. } => format!("does not fit on {gpu}"),
            SizingError::ContextDoesNotFit { fits, layout, .. } => {
                format!("{fits} tokens fit on {layout}")
            }
            e @ SizingError::InvalidValue { .. } => e.to_string(),
            e => panic!("not a layout error: {e}"),
        }
    }

    #[test]
    fn valid_tp_table() {
        // (case, heads, KV heads, TP, valid)
        let cases = [
            ("Llama-3.1-70B TP 8", 64, 8, 8, true),
            // More ranks than KV heads: each KV head is replicated.
            ("Llama-3.1-70B TP 16", 64, 8, 16, true),
            ("Qwen2.5-1.5B TP 4 over 2 KV heads", 12, 2, 4, true),
            ("Qwen2.5-1.5B TP 8 splits no head count", 12, 2, 8, false),
            ("Qwen2.5-7B TP 8: 28 heads", 28, 4, 8, false),
            ("Phi-3-medium TP 2", 40, 10, 2, true),
            // 40 heads split by 4, but 10 KV heads neither split nor replicate.
            ("Phi-3-medium TP 4", 40, 10, 4, false),
            ("falcon-7b TP 2: 71 heads", 71, 1, 2, false),
            ("falcon-7b TP 1", 71, 1, 1, true),
            ("TP 0", 64, 8, 0, false),
            ("no KV heads", 64, 0, 1, false),
        ];
        for (case, heads, kv, tp, want) in cases {
            assert_eq!(valid_tp(heads, kv, tp), want, "{case}");
        }
    }

    #[test]
    fn valid_tps_table() {
        // (case, heads, KV heads, GPUs per node, valid TPs)
        let cases: [(&str, u32, u32, u32, &[u32]); 10] = [
            ("Llama-3.1-70B on 8 per node", 64, 8, 8, &[1, 2, 4, 8]),
            ("Qwen2.5-7B: 28 heads over 4 KV heads", 28, 4, 8, &[1, 2, 4]),
            (
                "Qwen2.5-1.5B: 12 heads over 2 KV heads",
                12,
                2,
                8,
                &[1, 2, 4],
            ),
            ("falcon-7b: 71 heads", 71, 1, 8, &[1]),
            ("Llama-3.1-70B on T4's 4 per node", 64, 8, 4, &[1, 2, 4]),
            ("Llama-3.1-70B on GH200's 1 per node", 64, 8, 1, &[1]),
            ("Qwen2.5-0.5B: 14 heads", 14, 2, 8, &[1, 2]),
            ("Phi-3-medium", 40, 10, 8, &[1, 2]),
            // Only powers of two are offered, up to the node.
            ("6 per node", 64, 8, 6, &[1, 2, 4]),
            ("0 per node still offers TP 1", 64, 8, 0, &[1]),
        ];
        for (case, heads, kv, per_node, want) in cases {
            assert_eq!(valid_tps(heads, kv, per_node), want, "{case}");
        }
    }

    #[test]
    fn tp_limits_names_model_and_gpu() {
        let l = tp_limits(&model(QWEN_7B), gpu("L4").unwrap());
        assert_eq!(
            l,
            TpLimits {
                model: QWEN_7B.into(),
                heads: 28,
                kv_heads: 4,
                gpu: "L4".into(),
                per_node: 8,
            }
        );
    }

    #[test]
    fn candidates_table() {
        let nodes_of = |tp: u32, pps: std::ops::RangeInclusive<u32>, step: usize| {
            pps.step_by(step).map(move |p| (tp, p))
        };
        // (case, model, gpu, TP, PP, layouts in order of preference)
        type Row<'a> = (&'a str, &'a str, &'a str, Option<u32>, Option<u32>, Layouts);
        let cases: Vec<Row> = vec![
            (
                // In a node by GPU count, 1, 2 or 4, fewer stages first;
                // then whole nodes of the largest TP, 4: up to 16 nodes.
                "Qwen2.5-1.5B on T4",
                QWEN_1_5B,
                "T4",
                None,
                None,
                [(1, 1), (2, 1), (1, 2), (4, 1), (2, 2), (1, 4)]
                    .into_iter()
                    .chain(nodes_of(4, 2..=16, 1))
                    .collect(),
            ),
            (
                // TP 1 is the largest valid TP: stages alone, any count in a
                // node, and whole nodes of 4 stages.
                "falcon-7b on T4",
                FALCON_7B,
                "T4",
                None,
                None,
                [(1, 1), (1, 2), (1, 3), (1, 4)]
                    .into_iter()
                    .chain(nodes_of(1, 8..=32, 4))
                    .collect(),
            ),
            (
                "one GPU per node: PP across nodes",
                QWEN_1_5B,
                "GH200",
                None,
                None,
                nodes_of(1, 1..=16, 1).collect(),
            ),
            (
                // A TP the caller fixed may fill nodes below the largest TP;
                // PP stops at the 28 layers.
                "a fixed TP 2 on T4",
                QWEN_7B,
                "T4",
                Some(2),
                None,
                [(2, 1), (2, 2)]
                    .into_iter()
                    .chain(nodes_of(2, 4..=28, 2))
                    .collect(),
            ),
            (
                "a fixed PP takes every valid TP",
                LLAMA_70B,
                "H100-80GB",
                None,
                Some(2),
                vec![(1, 2), (2, 2), (4, 2), (8, 2)],
            ),
            (
                "a fixed PP keeps a GPU count that is no power of two",
                LLAMA_70B,
                "H100-80GB",
                None,
                Some(3),
                vec![(1, 3), (2, 3), (8, 3)],
            ),
            (
                "a fixed TP may span nodes",
                LLAMA_70B,
                "H100-80GB",
                Some(16),
                Some(1),
                vec![(16, 1)],
            ),
            (
                "nothing beyond 16 nodes",
                LLAMA_70B,
                "H100-80GB",
                Some(8),
                Some(17),
                vec![],
            ),
        ];
        for (case, m, g, tp, pp, want) in cases {
            assert_eq!(
                candidates(&model(m), gpu(g).unwrap(), tp, pp),
                want,
                "{case}"
            );
        }
    }

    #[test]
    fn smallest_layout_table() {
        // (case, model, gpu, tokens, TP x PP)
        let cases = [
            ("a small model", QWEN_1_5B, "L4", 32_768, Some((1, 1))),
            // 2 x 80 GB < 1.2 x 141 GB of weights.
            (
                "the recipe rules out TP 2",
                LLAMA_70B,
                "H100-80GB",
                32_768,
                Some((4, 1)),
            ),
            // 8 GPUs need 20.7 GiB each of 20.2 usable, however split.
            ("a second node of L4", LLAMA_70B, "L4", 32_768, Some((8, 2))),
            // 64 T4s would need 16.3 GiB each of 13.5 usable.
            ("nothing holds it", LLAMA_405B, "T4", 4_096, None),
        ];
        for (case, m, g, tokens, want) in cases {
            let r = req(m, g);
            let got = with(&r, |g, s, _, _| smallest_layout(s, g, tokens));
            assert_eq!(got.map(|f| (f.tp, f.pp)), want, "{case}");
        }
    }

    #[test]
    fn layout_for_count_table() {
        let qwen_7b_l4 = "1, 2, 4 on one node, or a multiple of 8 across nodes";
        // (case, model, gpu, count, TP x PP or what is valid)
        type Row<'a> = (&'a str, &'a str, &'a str, u32, Result<Layout, String>);
        let cases: Vec<Row> = vec![
            ("TP = count within a node", QWEN_7B, "L4", 4, Ok((4, 1))),
            (
                "3 is no TP",
                QWEN_7B,
                "L4",
                3,
                Err(format!("3 GPUs invalid; use {qwen_7b_l4}")),
            ),
            // TP 8 is ruled out by 28 heads; a full node is TP 4 x PP 2.
            ("a node of 8 for 28 heads", QWEN_7B, "L4", 8, Ok((4, 2))),
            ("two nodes: TP 4 x PP 4", QWEN_7B, "L4", 16, Ok((4, 4))),
            ("two nodes of H100", LLAMA_70B, "H100-80GB", 16, Ok((8, 2))),
            (
                "a node and a half",
                LLAMA_70B,
                "H100-80GB",
                12,
                Err(
                    "12 GPUs invalid; use 1, 2, 4, 8 on one node, or a multiple of 8 across nodes"
                        .into(),
                ),
            ),
            ("TP 1 only: stages", FALCON_7B, "T4", 8, Ok((1, 8))),
            ("one stage per layer", QWEN_0_5B, "T4", 48, Ok((2, 24))),
            (
                "more stages than 24 layers",
                QWEN_0_5B,
                "T4",
                64,
                Err(
                    "64 GPUs invalid; use 1, 2 on one node, or a multiple of 4 across nodes".into(),
                ),
            ),
            ("one GPU per node", LLAMA_8B, "GH200", 2, Ok((1, 2))),
        ];
        for (case, m, g, count, want) in cases {
            let m = model(m);
            let g = gpu(g).unwrap();
            let tps = valid_tps(m.arch.attention_heads, m.arch.kv_heads, g.per_node);
            let got = layout_for_count(&m, g, count, &tps).map_err(label);
            assert_eq!(got, want, "{case}");
        }
    }

    #[test]
    fn requested_layout_table() {
        // Llama-3.1-70B on H100-80GB: 80 layers, TP 1, 2, 4 or 8 per node.
        let r = |gpu_count, tensor_parallel, pipeline_parallel| SizingRequest {
            gpu_count,
            tensor_parallel,
            pipeline_parallel,
            ..req(LLAMA_70B, "H100-80GB")
        };
        // (case, request, fixed layout or error)
        type Row<'a> = (&'a str, SizingRequest, Result<Option<Layout>, &'a str>);
        let cases: Vec<Row> = vec![
            ("nothing fixed", r(None, None, None), Ok(None)),
            (
                "TP alone is left to the search",
                r(None, Some(4), None),
                Ok(None),
            ),
            (
                "PP alone is left to the search",
                r(None, None, Some(2)),
                Ok(None),
            ),
            (
                "TP alone is still checked",
                r(None, Some(3), None),
                Err("TP 3 invalid; use 1, 2, 4, 8"),
            ),
            (
                "PP alone is still checked",
                r(None, None, Some(81)),
                Err("PP 81 not in 1 to 80 layers"),
            ),
            // `validate` refuses it first; here it must not divide by zero.
            (
                "a count with PP 0",
                r(Some(8), None, Some(0)),
                Err("PP 0 not in 1 to 80 layers"),
            ),
            ("TP and PP", r(None, Some(4), Some(2)), Ok(Some((4, 2)))),
            (
                "all three agree",
                r(Some(8), Some(4), Some(2)),
                Ok(Some((4, 2))),
            ),
            (
                "all three disagree",
                r(Some(6), Some(4), Some(2)),
                Err("6 GPUs != 8"),
            ),
            ("count and TP", r(Some(8), Some(2), None), Ok(Some((2, 4)))),
            (
                "count not a multiple of TP",
                r(Some(6), Some(4), None),
                Err("invalid gpu count `6`: it must be a multiple of the tensor parallel size 4"),
            ),
            (
                "count over TP is too many stages",
                r(Some(160), Some(1), None),
                Err(
                    "invalid gpu count `160`: with tensor parallel 1 it makes 160 pipeline stages, and \
                     meta-llama/Llama-3.1-70B-Instruct has 80 layers: use at most 80 GPUs",
                ),
            ),
            ("count and PP", r(Some(8), None, Some(2)), Ok(Some((4, 2)))),
            (
                "count not a multiple of PP",
                r(Some(6), None, Some(4)),
                Err("invalid gpu count `6`: it must be a multiple of the pipeline parallel size 4"),
            ),
            (
                "count over PP is an invalid TP",
                r(Some(6), None, Some(2)),
                Err("6 GPUs invalid; use 2, 4, 8, 16 with pipeline parallel 2"),
            ),
            ("count alone", r(Some(16), None, None), Ok(Some((8, 2)))),
            (
                "count alone, invalid",
                r(Some(3), None, None),
                Err("3 GPUs invalid; use 1, 2, 4, 8 on one node, or a multiple of 8 across nodes"),
            ),
        ];
        for (case, r, want) in cases {
            let got = with(&r, |g, s, _, tps| requested_layout(&r, s.model, g, tps));
            assert_eq!(got.map_err(label), want.map_err(String::from), "{case}");
        }
    }

    #[test]
    fn choose_layout_table() {
        let valid = |heads, kv, tps| {
            format!(
                "Valid TP sizes for {heads} attention heads and {kv} KV heads on 8 GPUs per node: {tps}."
            )
        };
        let llama = valid(64, 8, "1, 2, 4, 8");
        let llama_8b = valid(32, 8, "1, 2, 4, 8");
        // (case, request, TP x PP, fits at the target context, reason or error)
        type Row<'a> = (
            &'a str,
            SizingRequest,
            Layout,
            bool,
            Result<String, &'a str>,
        );
        let cases: Vec<Row> = vec![
            (
                "the first candidate holds it",
                req(QWEN_1_5B, "L4"),
                (1, 1),
                true,
                Ok(format!(
                    "1 x L4 (TP 1, PP 1): the smallest layout that holds it (objective balanced). {}",
                    valid(12, 2, "1, 2, 4")
                )),
            ),
            (
                // 14.99 weights + 1.44 overhead + 4 KV cache.
                "one GPU short of memory",
                req(LLAMA_8B, "L4"),
                (2, 1),
                true,
                Ok(format!(
                    "2 x L4 (TP 2, PP 1): the smallest layout that holds it (objective balanced); 1 x L4 (TP 1, PP 1) would need 20.4 GiB per GPU of 19.7 GiB usable. {llama_8b}"
                )),
            ),
            (
                "two GPUs short of the recipe",
                req(LLAMA_70B, "H100-80GB"),
                (4, 1),
                true,
                Ok(format!(
                    "4 x H100-80GB (TP 4, PP 1): the smallest layout that holds it (objective balanced); 2 GPUs would have 160 GB for 141.1 GB of weights, below the vLLM recipes' 1.2 x weights. {llama}"
                )),
            ),
            (
                // The last miss is the last in-node layout, 1 x 8 stages.
                "a second node",
                req(LLAMA_70B, "L4"),
                (8, 2),
                true,
                Ok(format!(
                    "16 x L4 (TP 8, PP 2): the smallest layout that holds it (objective balanced); 8 x L4 (TP 8, PP 1) would need 21.1 GiB per GPU of 19.7 GiB usable. {llama}"
                )),
            ),
            (
                "a fixed PP",
                SizingRequest {
                    pipeline_parallel: Some(2),
                    ..req(LLAMA_8B, "L4")
                },
                (1, 2),
                true,
                Ok(format!(
                    "2 x L4 (TP 1, PP 2): the smallest layout that holds it (objective balanced). {llama_8b}"
                )),
            ),
            (
                "a fixed TP",
                SizingRequest {
                    tensor_parallel: Some(8),
                    ..req(LLAMA_8B, "L4")
                },
                (8, 1),
                true,
                Ok(format!(
                    "8 x L4 (TP 8, PP 1): the smallest layout that holds it (objective balanced). {llama_8b}"
                )),
            ),
            (
                // A stated concurrency at the default context is sized at
                // 4,096 tokens: 2,500 of them fit 8 GPUs at 1.5 KiB per
                // token, and the fit is for the target.
                "a stated concurrency at the default context",
                SizingRequest {
                    concurrency: Some(2_500),
                    ..req(QWEN_0_5B, "L4")
                },
                (2, 4),
                false,
                Ok(format!(
                    "8 x L4 (TP 2, PP 4): the smallest layout that holds it (objective balanced, sized for the stated concurrency at 4,096 tokens without the recipes' headroom); 4 x L4 (TP 2, PP 2) would need 33.2 GiB per GPU of 19.7 GiB usable. {}",
                    valid(14, 2, "1, 2")
                )),
            ),
            (
                // An explicit context gets no fallback: the error says how
                // much fits on the roomiest layout, one stage per layer.
                "an explicit context that fits nowhere",
                SizingRequest {
                    concurrency: Some(2_500),
                    max_model_len: Some(32_768),
                    ..req(QWEN_0_5B, "L4")
                },
                (0, 0),
                false,
                Err("26624 tokens fit on 48 x L4 (TP 2, PP 24)"),
            ),
            (
                "too big for any layout",
                req(LLAMA_405B, "T4"),
                (0, 0),
                false,
                Err("does not fit on T4"),
            ),
        ];
        for (case, r, layout, fits, want) in cases {
            let got = with(&r, |g, s, c, tps| {
                choose_layout(&r, s, g, WeightPrecision::Bf16, c, tps)
            });
            match got {
                Ok((f, why)) => {
                    assert_eq!(((f.tp, f.pp), f.fits()), (layout, fits), "{case}");
                    assert_eq!(Ok(why), want, "{case}");
                }
                Err(e) => assert_eq!(Err(label(e)), want.map_err(String::from), "{case}"),
            }
        }
    }

    #[test]
    fn fixed_layout_table() {
        // (case, model, gpu, TP x PP, fits, reason)
        let cases = [
            (
                "two nodes as asked",
                LLAMA_70B,
                "H100-80GB",
                (4, 4),
                true,
                "16 x H100-80GB (TP 4, PP 4) as requested.",
            ),
            // Evaluated, not judged: the context step warns about it.
            (
                "one GPU that cannot hold it",
                LLAMA_70B,
                "L4",
                (1, 1),
                false,
                "1 x L4 (TP 1, PP 1) as requested.",
            ),
        ];
        for (case, m, g, layout, fits, want) in cases {
            let r = req(m, g);
            let (f, why) = with(&r, |g, s, c, _| fixed_layout(s, g, layout, c));
            assert_eq!(
                ((f.tp, f.pp), f.fits(), why.as_str()),
                (layout, fits, want),
                "{case}"
            );
        }
    }
}
