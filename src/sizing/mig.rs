//! Whether one replica runs on a MIG slice instead of whole GPUs.
//!
//! A slice is one device with part of a GPU's memory and bandwidth: it suits
//! small models (NIM: "works best with <= 8B") and never spans GPUs. `auto`
//! takes the smallest slice that leaves room for a few sequences, so that
//! the slice is useful rather than merely able to start.

use super::context::{Context, MIN_DEFAULT_CONTEXT};
use super::fit::{Device, Fit, RECIPE_HEADROOM, Sizer};
use super::memory::GIB;
use super::text::{gpus_with, thousands};
use super::{Gpu, MigChoice, MigProfile, SizingError, SizingRequest};

/// MIG suits small models (NIM: "works best with <= 8B"); 8.5B keeps the
/// 8B class (Llama-3.1-8B is 8.03B, Qwen3-8B 8.2B) in.
pub const MIG_MAX_PARAMS_B: f64 = 8.5;
/// `auto` takes a slice only when it holds this many full-length sequences.
pub const MIG_USEFUL_SEQUENCES: u64 = 4;

/// The slice one replica runs on, if any, and the sentence that says why.
pub fn choose_mig(
    req: &SizingRequest,
    gpu: &'static Gpu,
    sizer: &Sizer,
    ctx: &Context,
) -> Result<(Option<&'static MigProfile>, Option<String>), SizingError> {
    match &req.mig {
        MigChoice::Profile(name) => {
            let p = requested_slice(req, gpu, name, sizer, ctx)?;
            Ok((
                Some(p),
                Some(format!("MIG profile {} as requested.", p.name)),
            ))
        }
        MigChoice::Auto if gpu.has_mig() => Ok(auto_slice(req, gpu, sizer, ctx)),
        MigChoice::None if gpu.has_mig() => Ok((None, Some("No MIG (mig none).".to_string()))),
        _ => Ok((None, None)),
    }
}

/// True when the request asks for more than one GPU, which no slice gives.
fn requests_several_gpus(req: &SizingRequest) -> bool {
    req.gpu_count.unwrap_or(1) > 1
        || req.tensor_parallel.unwrap_or(1) > 1
        || req.pipeline_parallel.unwrap_or(1) > 1
}

/// The GPU's slices, smallest first.
fn slices_by_size(gpu: &Gpu) -> Vec<&MigProfile> {
    let mut slices: Vec<&MigProfile> = gpu.mig_profiles.iter().collect();
    slices.sort_by_key(|p| (p.memory_gb, p.compute_slices));
    slices
}

fn slice_fit(sizer: &Sizer, p: &MigProfile, tokens: u64) -> Fit {
    sizer.evaluate(Device::slice(p), 1, 1, tokens)
}

/// The profile the caller named: it must exist on this GPU, be the only
/// device, and hold the model at least at a short default context.
fn requested_slice(
    req: &SizingRequest,
    gpu: &'static Gpu,
    name: &str,
    sizer: &Sizer,
    ctx: &Context,
) -> Result<&'static MigProfile, SizingError> {
    if !gpu.has_mig() {
        return Err(SizingError::MigUnsupported {
            gpu: gpu.name.to_string(),
            mig_gpus: gpus_with(Gpu::has_mig),
        });
    }
    let Some(p) = gpu.mig_profile(name) else {
        return Err(SizingError::UnknownMigProfile {
            gpu: gpu.name.to_string(),
            profile: name.to_string(),
            profiles: gpu.mig_profile_list(),
        });
    };
    if requests_several_gpus(req) {
        let requested = req.gpu_count.unwrap_or(
            req.tensor_parallel
                .unwrap_or(1)
                .saturating_mul(req.pipeline_parallel.unwrap_or(1)),
        );
        return Err(SizingError::MigNeedsOneGpu { requested });
    }
    let need_tokens = if ctx.explicit {
        ctx.tokens()
    } else {
        MIN_DEFAULT_CONTEXT.min(ctx.target) * ctx.concurrency
    };
    let fit = slice_fit(sizer, p, need_tokens);
    if fit.fits() {
        return Ok(p);
    }
    let smallest = slices_by_size(gpu)
        .into_iter()
        .find(|q| slice_fit(sizer, q, need_tokens).fits());
    let suggestion = match smallest {
        Some(q) => format!("the smallest profile that holds it is {}", q.name),
        None => format!(
            "no profile of {} holds it; use whole GPUs (mig none)",
            gpu.name
        ),
    };
    Err(SizingError::MigProfileTooSmall {
        gpu: gpu.name.to_string(),
        profile: p.name.to_string(),
        model: sizer.model.name.clone(),
        usable_gib: fit.usable,
        need_gib: if fit.recipe_ok {
            fit.need
        } else {
            fit.need
                .max(RECIPE_HEADROOM * sizer.weights_gb() * 1e9 / GIB)
        },
        suggestion,
    })
}

/// `mig auto`: the smallest partial slice that holds a few full-length
/// sequences, for a small model on one device; else whole GPUs.
fn auto_slice(
    req: &SizingRequest,
    gpu: &'static Gpu,
    sizer: &Sizer,
    ctx: &Context,
) -> (Option<&'static MigProfile>, Option<String>) {
    let m = sizer.model;
    if m.total_b > MIG_MAX_PARAMS_B {
        let reason = format!(
            "No MIG: {} B parameters is above the 8B class that MIG suits (NIM guidance).",
            m.total_b
        );
        return (None, Some(reason));
    }
    if requests_several_gpus(req) {
        return (
            None,
            Some("No MIG: more than one GPU was requested.".to_string()),
        );
    }
    let useful = ctx.tokens().saturating_mul(MIG_USEFUL_SEQUENCES);
    // A slice as big as the GPU gains nothing over the GPU.
    let found = slices_by_size(gpu)
        .into_iter()
        .filter(|q| f64::from(q.memory_gb) < gpu.nominal_gb)
        .map(|q| (q, slice_fit(sizer, q, useful)))
        .find(|(_, f)| f.fits());
    match found {
        Some((q, f)) => {
            let reason = format!(
                "MIG {}: the smallest slice of {} that holds the weights and KV cache for {MIG_USEFUL_SEQUENCES} sequences of {} tokens ({:.1} of {:.1} GiB).",
                q.name,
                gpu.name,
                thousands(ctx.target),
                f.need,
                f.usable
            );
            (Some(q), Some(reason))
        }
        None => {
            let reason = format!(
                "No MIG: no partial slice of {} holds the weights and KV cache for {MIG_USEFUL_SEQUENCES} sequences of {} tokens.",
                gpu.name,
                thousands(ctx.target)
            );
            (None, Some(reason))
        }
    }
}
