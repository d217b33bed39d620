//! The context length: what the engine sizes for, and what it settles on.
//!
//! A context the caller sets is a requirement: it fits or it is an error. A
//! default is a wish: the model's own context up to 32,768 tokens, capped to
//! what fits rather than buying more GPUs for a length nobody asked for.

use super::candidates::smallest_layout;
use super::error::SizingError;
use super::fit::{Fit, Sizer, layout_name};
use super::gpus::{Gpu, MigProfile};
use super::memory::GIB;
use super::plan::{SizingRequest, THROUGHPUT_SEQUENCES};
use super::precision::Objective;
use super::resolved_model::Model;
use super::target::{CONTEXT_STEP, ContextTarget};
use super::text::{count_of, gib, thousands};

/// Default context when the caller sets none: the model's own, up to this.
pub(crate) const DEFAULT_CONTEXT: u64 = 32_768;
/// Default context for a model the catalog does not know: the shortest
/// context of common models, so vLLM never rejects it as too long.
pub(crate) const UNKNOWN_MODEL_CONTEXT: u64 = 4_096;
/// The caller's `maxModelLen`, which must not exceed the model's context, or
/// the default.
pub(crate) fn context_target(req: &SizingRequest, m: &Model) -> Result<ContextTarget, SizingError> {
    if let (Some(l), Some(c)) = (req.max_model_len, m.context)
        && l > c
    {
        return Err(SizingError::ContextLongerThanModel {
            requested: l,
            context: c,
            model: m.name.clone(),
        });
    }
    let target = req.max_model_len.unwrap_or(match m.context {
        Some(c) => c.min(DEFAULT_CONTEXT),
        None => UNKNOWN_MODEL_CONTEXT,
    });
    let concurrency = u64::from(req.concurrency.unwrap_or(1));
    let serving = match req.objective {
        Objective::Throughput => concurrency.max(THROUGHPUT_SEQUENCES),
        Objective::Minimal | Objective::Balanced => concurrency,
    };
    Ok(ContextTarget {
        target,
        explicit: req.max_model_len.is_some(),
        concurrency_stated: req.concurrency.is_some(),
        concurrency,
        serving,
        arch: m.arch.clone(),
    })
}

/// The KV cache the context needs, with the per-token formula (MLA caches one
/// latent vector per layer, other models a K and a V per KV head).
pub(crate) fn kv_reason(m: &Model, kv_bytes: f64, ctx: &ContextTarget) -> String {
    let a = &m.arch;
    let per_token = a.kv_bytes_per_token(kv_bytes, 1, 1);
    let tokens = ctx.tokens();
    let partial_kind = if a.linear_layers > 0 {
        a.recurrent.name()
    } else {
        "sliding-window"
    };
    let layers = if a.kv_layers() != a.full_layers() + a.partial_layers() {
        let (full, partial) = (a.full_layers(), a.partial_layers());
        format!(
            "{} layer-equivalents (vLLM groups the {full} full and {partial} {partial_kind} layers in groups of {}, padded)",
            a.kv_layers(),
            full.min(partial)
        )
    } else {
        format!("{} layers", a.kv_layers())
    };
    let kv_formula = if a.indexer_head_dim > 0 {
        let indexer = a.indexer_bytes_per_layer();
        let latent = a.mla_latent_bytes_per_layer(kv_bytes);
        let format = if kv_bytes < 2.0 {
            " in DeepSeek's fp8_ds_mla format".to_string()
        } else {
            format!(" ({} elements x {kv_bytes} B)", a.mla_kv_dim)
        };
        format!(
            "{layers} x ({latent} B of latent{format} + {indexer} B of sparse-attention indexer keys)"
        )
    } else if a.mla_kv_dim > 0 {
        format!("{layers} x {} latent elements x {kv_bytes} B", a.mla_kv_dim)
    } else {
        format!(
            "2 x {layers} x {} KV heads x {} x {kv_bytes} B",
            a.kv_heads, a.head_dim
        )
    };
    let window = if tokens == ctx.target.saturating_mul(ctx.concurrency) {
        String::new()
    } else if a.linear_layers > 0 {
        format!(
            ", the {} groups keeping one {}-token block of each sequence (vLLM sizes a block so that a page holds a layer's state)",
            a.recurrent.name(),
            thousands(a.window_tokens())
        )
    } else {
        format!(
            ", the sliding-window groups keeping {} tokens (window {} + one 8,192-token chunk + a block) of each sequence",
            thousands(a.window_tokens()),
            thousands(u64::from(a.sliding_window))
        )
    };
    format!(
        "KV cache: {} B per token ({kv_formula}); {} for {} sequence{} of {} tokens{window}.",
        thousands(per_token as u64),
        gib(per_token * tokens as f64 / GIB),
        ctx.concurrency,
        if ctx.concurrency == 1 { "" } else { "s" },
        thousands(ctx.target)
    )
}

/// Why `maxModelLen` is the target, when the engine kept it.
fn context_reason(ctx: &ContextTarget, m: &Model, capacity_tokens: u64) -> String {
    let why = match (ctx.explicit, m.context) {
        (true, _) => "as requested".to_string(),
        (false, Some(c)) if c > DEFAULT_CONTEXT => format!(
            "the model advertises {} tokens; the sizing engine defaults to {} (set maxModelLen for more)",
            thousands(c),
            thousands(DEFAULT_CONTEXT)
        ),
        (false, Some(_)) => "the model's full context".to_string(),
        (false, None) => format!(
            "this model's context is not known, so the sizing engine assumes {} (set maxModelLen for more)",
            thousands(UNKNOWN_MODEL_CONTEXT)
        ),
    };
    // A hybrid model's capacity counts tokens of every layer, as vLLM logs
    // it; its windowed layers keep only part of each sequence, so the
    // sequences it holds are not capacity / length.
    let cached = m.arch.kv_tokens(ctx.target, 1);
    let sequences = if cached == ctx.target {
        String::new()
    } else {
        let kind = if m.arch.linear_layers > 0 {
            m.arch.recurrent.name()
        } else {
            "sliding-window"
        };
        format!(
            " of every layer, {:.1} sequences of {} tokens (its {kind} layers keep part of each)",
            capacity_tokens as f64 / cached.max(1) as f64,
            thousands(ctx.target)
        )
    };
    format!(
        "maxModelLen {}: {why}; the KV cache has room for {} tokens{sequences}.",
        thousands(ctx.target),
        thousands(capacity_tokens)
    )
}

/// The context a replica gets on its chosen device and layout, and the fit
/// at that context.
pub(crate) struct Settled {
    pub(crate) fit: Fit,
    pub(crate) max_model_len: u64,
    pub(crate) reasons: Vec<String>,
    pub(crate) warnings: Vec<String>,
}

/// Settles `maxModelLen` on the chosen layout. A default context that does
/// not fit is capped to what does; a requested one is an error. A layout the
/// caller fixed that cannot hold the weights with vLLM's overhead is a
/// warning, since flags the plan does not size for (a higher
/// `--gpu-memory-utilization`, a lower `--max-num-seqs` than it was given)
/// may start it; one whose weights alone exceed each GPU's memory is an
/// error, since nothing can. Both say which layout would hold them.
pub(crate) fn cap_context(
    sizer: &Sizer,
    gpu: &Gpu,
    slice: Option<&MigProfile>,
    fit: Fit,
    ctx: &ContextTarget,
) -> Result<Settled, SizingError> {
    let m = sizer.model;
    let mut settled = Settled {
        fit,
        max_model_len: ctx.target,
        reasons: Vec::new(),
        warnings: Vec::new(),
    };
    if !fit.fits() {
        let fits_ctx = ctx.longest_fitting(fit.capacity_tokens);
        let larger = || smallest_layout(sizer, gpu, ctx.tokens());
        if !fit.holds_weights() || fits_ctx == 0 {
            let placement = match slice {
                Some(p) => format!("MIG {}", p.name),
                None => layout_name(gpu, fit.tp, fit.pp),
            };
            if let Some(e) = too_many_sequences(sizer, gpu, &fit, ctx, &placement) {
                return Err(e);
            }
            let hint = match larger() {
                Some(f) => format!("; {} would hold it", layout_name(gpu, f.tp, f.pp)),
                None => String::new(),
            };
            if fit.weights_per_gpu > fit.device.gib {
                return Err(SizingError::WeightsExceedGpu {
                    layout: placement,
                    model: m.name.clone(),
                    weights: gib(fit.weights_per_gpu),
                    memory: gib(fit.device.gib),
                    hint,
                });
            }
            let smaller_batch = smaller_batch_start(sizer, &fit, ctx).unwrap_or_default();
            settled.warnings.push(format!(
                "{placement} cannot hold {}: each GPU needs {} ({} weights + {} overhead + {} KV cache) of {} usable; vLLM will fail with out-of-memory{smaller_batch}{hint}.",
                m.name,
                gib(fit.need),
                gib(fit.weights_per_gpu),
                gib(fit.overhead),
                gib(fit.kv_per_gpu),
                gib(fit.usable)
            ));
        } else if fit.need > fit.usable {
            if ctx.explicit {
                let suggestion = match larger() {
                    Some(f) => format!(
                        "use maxModelLen {fits_ctx} or {}",
                        layout_name(gpu, f.tp, f.pp)
                    ),
                    None => format!("use maxModelLen {fits_ctx} or a GPU with more memory"),
                };
                return Err(SizingError::ContextDoesNotFit {
                    requested: ctx.target,
                    fits: fits_ctx,
                    model: m.name.clone(),
                    layout: layout_name(gpu, fit.tp, fit.pp),
                    suggestion,
                });
            }
            settled.max_model_len = fits_ctx;
            settled.fit = sizer.refit(&fit, ctx.tokens_at(fits_ctx));
            // A stated concurrency is what shortened it, not the weights alone.
            let so_that = if ctx.concurrency_stated && ctx.concurrency > 1 {
                format!(
                    ", so that {} sequences fit at once, as asked",
                    thousands(ctx.concurrency)
                )
            } else {
                String::new()
            };
            settled.reasons.push(format!(
                "maxModelLen capped at {} tokens{so_that}: the KV cache left after the weights holds {} tokens.",
                thousands(fits_ctx),
                thousands(settled.fit.capacity_tokens)
            ));
        }
        let fit = settled.fit;
        if !fit.recipe_ok && fit.holds_weights() {
            settled.warnings.push(format!(
                "{:.0} GB of GPU memory is below the vLLM recipes' 1.2 x {:.1} GB of weights: expect a small KV cache and little concurrency.",
                fit.raw_gb,
                sizer.weights_gb()
            ));
        }
    }
    if settled.max_model_len == ctx.target {
        let reason = context_reason(ctx, m, settled.fit.capacity_tokens);
        settled.reasons.push(reason);
    }
    Ok(settled)
}

/// On a layout the caller fixed, a stated concurrency is at fault, not the
/// layout, when the weights fit and some sequences of the shortest context
/// the plan could settle on (or of the one requested) do, only not that
/// many: no `maxModelLen` would make vLLM hold them all.
fn too_many_sequences(
    sizer: &Sizer,
    gpu: &Gpu,
    fit: &Fit,
    ctx: &ContextTarget,
    placement: &str,
) -> Option<SizingError> {
    if !(ctx.concurrency_stated && fit.holds_weights()) {
        return None;
    }
    let length = if ctx.explicit {
        ctx.target
    } else {
        CONTEXT_STEP.min(ctx.target)
    };
    fewer_sequences_than_asked(
        placement.to_string(),
        fit,
        ctx,
        length,
        || match smallest_layout(sizer, gpu, ctx.tokens_at(length)) {
            Some(f) => format!("; {} would hold them", layout_name(gpu, f.tp, f.pp)),
            None => String::new(),
        },
    )
}

/// The sequences of `length` tokens `fit` holds beside the weights, when
/// that is some but fewer than the concurrency stated.
pub(crate) fn some_of_the_sequences(fit: &Fit, ctx: &ContextTarget, length: u64) -> Option<u64> {
    let fits = ctx.arch.sequences_in(fit.capacity_tokens, length);
    (fits > 0 && fits < ctx.concurrency).then_some(fits)
}

/// The error that `layout`, whose fit is `fit`, holds some sequences of
/// `length` tokens beside the weights but fewer than the concurrency
/// stated, with `hint` after it; `None` where it holds none, or enough.
pub(crate) fn fewer_sequences_than_asked(
    layout: String,
    fit: &Fit,
    ctx: &ContextTarget,
    length: u64,
    hint: impl FnOnce() -> String,
) -> Option<SizingError> {
    some_of_the_sequences(fit, ctx, length).map(|fits| SizingError::TooManySequences {
        layout,
        held: format!(
            "{} of {} tokens",
            count_of(fits, "sequence"),
            thousands(length)
        ),
        requested: thousands(ctx.concurrency),
        hint: hint(),
    })
}

/// On a layout the caller fixed that vLLM's default batch leaves no room
/// on, whether the smaller batch would start it, and with what context:
/// the sampler's warm-up at 1024 sequences can take the room that
/// 70B-class weights leave on two 80 GB GPUs.
fn smaller_batch_start(sizer: &Sizer, fit: &Fit, ctx: &ContextTarget) -> Option<String> {
    let smaller = sizer.with_smaller_batch(fit.device)?;
    let at = smaller.evaluate(fit.device, fit.tp, fit.pp, ctx.tokens());
    let length = if ctx.explicit {
        (at.need <= at.usable).then_some(ctx.target)?
    } else {
        ctx.longest_fitting(at.capacity_tokens)
    };
    (at.holds_weights() && length > 0).then(|| {
        format!(
            "; at --max-num-seqs {} (not vLLM's default {}) it would start, with maxModelLen {}",
            smaller.sequences_on(fit.device),
            fit.device.max_num_seqs,
            thousands(length)
        )
    })
}
