//! Whether one replica runs on a MIG slice instead of whole GPUs.
//!
//! A slice is one device with part of a GPU's memory and bandwidth: it suits
//! small models (NIM: "works best with <= 8B") and never spans GPUs. `auto`
//! takes the smallest slice that leaves room for a few sequences, so that
//! the slice is useful rather than merely able to start.

use super::context::fewer_sequences_than_asked;
use super::error::{MigShortfall, SizingError};
use super::fit::{Device, Fit, RECIPE_HEADROOM, Sizer};
use super::gpus::{Gpu, MigProfile};
use super::memory::GIB;
use super::plan::SizingRequest;
use super::precision::MigChoice;
use super::target::ContextTarget;
use super::text::{count_of, gpus_with, hundredths, thousands};

/// MIG suits small models (NIM: "works best with <= 8B"); 8.5B keeps the
/// 8B class (Llama-3.1-8B is 8.03B, Qwen3-8B 8.2B) in.
pub(crate) const MIG_MAX_PARAMS_B: f64 = 8.5;
/// `auto` takes a slice only when it holds this many full-length sequences.
pub(crate) const MIG_USEFUL_SEQUENCES: u64 = 4;

/// The slice one replica runs on, if any, and the sentence that says why.
pub(crate) fn choose_mig(
    req: &SizingRequest,
    gpu: &'static Gpu,
    sizer: &Sizer,
    ctx: &ContextTarget,
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

fn slice_fit(sizer: &Sizer, gpu: &Gpu, p: &MigProfile, tokens: u64) -> Fit {
    sizer.evaluate(Device::slice(gpu, p), 1, 1, tokens)
}

/// The profile the caller named: it must exist on this GPU, be the only
/// device, and hold the model at least at a short default context.
fn requested_slice(
    req: &SizingRequest,
    gpu: &'static Gpu,
    name: &str,
    sizer: &Sizer,
    ctx: &ContextTarget,
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
        // The larger of the count and the layout: `gpu: 1` with TP 2 still
        // asks for two GPUs.
        let layout = req
            .tensor_parallel
            .unwrap_or(1)
            .saturating_mul(req.pipeline_parallel.unwrap_or(1));
        let requested = req.gpu_count.unwrap_or(1).max(layout);
        return Err(SizingError::MigNeedsOneGpu { requested });
    }
    let need_length = ctx.length_to_hold();
    let need_tokens = ctx.tokens_at(need_length);
    let fit = slice_fit(sizer, gpu, p, need_tokens);
    if fit.fits() {
        return Ok(p);
    }
    let smallest = slices_by_size(gpu)
        .into_iter()
        .find(|q| slice_fit(sizer, gpu, q, need_tokens).fits());
    if let Some(e) = too_many_sequences(gpu, p, &fit, ctx, need_length, smallest) {
        return Err(e);
    }
    let suggestion = match smallest {
        Some(q) => format!("the smallest profile that holds it is {}", q.name),
        None => format!(
            "no profile of {} holds it; use whole GPUs (mig none)",
            gpu.name
        ),
    };
    let shortfall = if !fit.recipe_ok {
        let recipe_gib = RECIPE_HEADROOM * sizer.weights_gb() * 1e9 / GIB;
        MigShortfall::Memory {
            need_gib: fit.need.max(recipe_gib),
        }
    } else if fit.need <= fit.usable {
        MigShortfall::KvShare {
            kv_gib: fit.kv_free_gib,
        }
    } else {
        MigShortfall::Memory { need_gib: fit.need }
    };
    Err(SizingError::MigProfileTooSmall {
        gpu: &gpu.name,
        profile: &p.name,
        model: sizer.model.name.clone(),
        usable_gib: fit.usable,
        shortfall,
        suggestion,
    })
}

/// A stated concurrency is at fault, not the model, when the slice holds
/// the weights and some sequences of the length it must hold, only not
/// that many.
fn too_many_sequences(
    gpu: &Gpu,
    p: &MigProfile,
    fit: &Fit,
    ctx: &ContextTarget,
    length: u64,
    smallest: Option<&MigProfile>,
) -> Option<SizingError> {
    if !(ctx.concurrency_stated && fit.recipe_ok) {
        return None;
    }
    fewer_sequences_than_asked(
        format!("MIG profile {} of {}", p.name, gpu.name),
        fit,
        ctx,
        length,
        || match smallest {
            Some(q) => format!("; profile {} would hold them", q.name),
            None => format!(
                "; no profile of {} holds them: use whole GPUs (mig none)",
                gpu.name
            ),
        },
    )
}

/// `mig auto`: the smallest partial slice that holds a few full-length
/// sequences, for a small model on one device; else whole GPUs.
fn auto_slice(
    req: &SizingRequest,
    gpu: &'static Gpu,
    sizer: &Sizer,
    ctx: &ContextTarget,
) -> (Option<&'static MigProfile>, Option<String>) {
    let m = sizer.model;
    if m.total_b > MIG_MAX_PARAMS_B {
        let reason = format!(
            "No MIG: {} B parameters is above the 8B class that MIG suits (NIM guidance).",
            hundredths(m.total_b)
        );
        return (None, Some(reason));
    }
    if requests_several_gpus(req) {
        return (
            None,
            Some("No MIG: more than one GPU was requested.".to_string()),
        );
    }
    // A stated concurrency says what the slice must hold: that many
    // sequences, of 4,096 tokens when no context is stated (it is then
    // capped to what the slice holds). Else a few full-length sequences
    // make a slice useful.
    let (sequences, length, useful) = if ctx.concurrency_stated {
        let length = ctx.length_to_hold();
        (ctx.concurrency, length, ctx.tokens_at(length))
    } else {
        let useful = ctx.tokens().saturating_mul(MIG_USEFUL_SEQUENCES);
        (MIG_USEFUL_SEQUENCES, ctx.target, useful)
    };
    let holding = format!(
        "the weights and KV cache for {} of {} tokens",
        count_of(sequences, "sequence"),
        thousands(length)
    );
    // A slice as big as the GPU gains nothing over the GPU.
    let found = slices_by_size(gpu)
        .into_iter()
        .filter(|q| f64::from(q.memory_gb) < gpu.nominal_gb)
        .map(|q| (q, slice_fit(sizer, gpu, q, useful)))
        .find(|(_, f)| f.fits());
    match found {
        Some((q, f)) => {
            let reason = format!(
                "MIG {}: the smallest slice of {} that holds {holding} ({:.1} of {:.1} GiB).",
                q.name, gpu.name, f.need, f.usable
            );
            (Some(q), Some(reason))
        }
        None => {
            let reason = format!("No MIG: no partial slice of {} holds {holding}.", gpu.name);
            (None, Some(reason))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::context::context_target;
    use crate::sizing::resolved_model::{Model, resolve_model};
    use crate::sizing::test_requests::{LLAMA_8B, LLAMA_70B, QWEN_0_5B, QWEN_1_5B, request as req};

    const GEMMA_2_9B: &str = "google/gemma-2-9b-it";
    use crate::sizing::{MigChoice, WeightPrecision, gpu};

    /// Runs `f` on the request's GPU, a bf16 sizer (2-byte KV cache, 0.9
    /// utilization) and the context the request asks for, as `size` does.
    fn with<T>(r: &SizingRequest, f: impl FnOnce(&'static Gpu, &Sizer, &ContextTarget) -> T) -> T {
        let m: Model = resolve_model(r).unwrap().0;
        let ctx = context_target(r, &m).unwrap();
        let sizer = Sizer::for_request(&m, m.weights(WeightPrecision::Bf16), 2.0, r, &ctx);
        f(gpu(&r.gpu_type).unwrap(), &sizer, &ctx)
    }

    /// The parts of a MIG error that the rows tell apart.
    fn label(e: SizingError) -> String {
        match e {
            SizingError::MigUnsupported { gpu, .. } => format!("{gpu} has no MIG"),
            SizingError::UnknownMigProfile {
                profile, profiles, ..
            } => format!("no {profile} in {profiles}"),
            SizingError::MigNeedsOneGpu { requested } => format!("{requested} GPUs requested"),
            SizingError::MigProfileTooSmall {
                profile,
                usable_gib,
                shortfall,
                suggestion,
                ..
            } => format!("{profile} ({usable_gib:.1} GiB usable), {shortfall}; {suggestion}"),
            e @ SizingError::TooManySequences { .. } => e.to_string(),
            e => panic!("not a MIG error: {e}"),
        }
    }

    #[test]
    fn choose_mig_table() {
        let profile = |p: &str| MigChoice::Profile(p.into());
        // (case, model, gpu, mig choice, (slice, reason) or error)
        type Want = Result<(Option<&'static str>, Option<&'static str>), &'static str>;
        let cases: [(&str, &str, &str, MigChoice, Want); 6] = [
            (
                "auto on a MIG GPU picks a slice",
                QWEN_1_5B,
                "A100-80GB",
                MigChoice::Auto,
                Ok((
                    Some("1g.10gb"),
                    Some(
                        "MIG 1g.10gb: the smallest slice of A100-80GB that holds the weights and KV cache for 4 sequences of 32,768 tokens (8.0 of 8.6 GiB).",
                    ),
                )),
            ),
            (
                "auto on a GPU without MIG says nothing",
                QWEN_1_5B,
                "L4",
                MigChoice::Auto,
                Ok((None, None)),
            ),
            (
                "none on a MIG GPU says so",
                QWEN_1_5B,
                "A100-80GB",
                MigChoice::None,
                Ok((None, Some("No MIG (mig none)."))),
            ),
            (
                "none on a GPU without MIG says nothing",
                QWEN_1_5B,
                "L4",
                MigChoice::None,
                Ok((None, None)),
            ),
            (
                "a requested profile, named in any case",
                LLAMA_8B,
                "A100-80GB",
                profile("3G.40GB"),
                Ok((Some("3g.40gb"), Some("MIG profile 3g.40gb as requested."))),
            ),
            (
                "a requested profile on a GPU without MIG",
                QWEN_1_5B,
                "L4",
                profile("1g.10gb"),
                Err("L4 has no MIG"),
            ),
        ];
        for (case, model, g, mig, want) in cases {
            let r = SizingRequest {
                mig,
                ..req(model, g)
            };
            let got = with(&r, |g, s, c| choose_mig(&r, g, s, c));
            let got = got
                .map(|(p, why)| (p.map(|p| p.name.as_str()), why))
                .map_err(label);
            let want = want
                .map(|(p, why)| (p, why.map(String::from)))
                .map_err(String::from);
            assert_eq!(got, want, "{case}");
        }
    }

    #[test]
    fn requests_several_gpus_table() {
        // (gpu count, TP, PP, several GPUs)
        let cases = [
            (None, None, None, false),
            (Some(1), Some(1), Some(1), false),
            (Some(2), None, None, true),
            (None, Some(2), None, true),
            (None, None, Some(2), true),
            // Any one of them above 1 is enough, even against a count of 1.
            (Some(1), Some(2), None, true),
        ];
        for (gpu_count, tensor_parallel, pipeline_parallel, want) in cases {
            let r = SizingRequest {
                gpu_count,
                tensor_parallel,
                pipeline_parallel,
                ..SizingRequest::default()
            };
            assert_eq!(
                requests_several_gpus(&r),
                want,
                "{gpu_count:?} {tensor_parallel:?} {pipeline_parallel:?}"
            );
        }
    }

    #[test]
    fn slices_by_size_table() {
        let mut reversed = gpu("A100-80GB").unwrap().clone();
        reversed.mig_profiles.reverse();
        let a100 = [
            "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb",
        ];
        // (case, GPU, slices smallest first)
        let cases: [(&str, &Gpu, &[&str]); 4] = [
            // Equal memory: fewer compute slices first (1g.20gb, 2g.20gb).
            ("A100-80GB", gpu("A100-80GB").unwrap(), &a100),
            ("the catalog order does not matter", &reversed, &a100),
            (
                "RTX-PRO-6000",
                gpu("RTX-PRO-6000").unwrap(),
                &["1g.24gb", "2g.48gb", "4g.96gb"],
            ),
            ("no MIG, no slices", gpu("L4").unwrap(), &[]),
        ];
        for (case, g, want) in cases {
            let got: Vec<&str> = slices_by_size(g).iter().map(|p| p.name.as_str()).collect();
            assert_eq!(got, want, "{case}");
        }
    }

    #[test]
    fn slice_fit_table() {
        // Usable = 0.9 x the slice's memory: 8.55 GiB on 1g.10gb (9.5), 17.55
        // on 2g.20gb (19.5), 35.3 on 3g.40gb (39.25). Llama-3.1-8B: 14.99 GiB
        // weights + 1.44 overhead, 128 KiB KV per token; Qwen2.5-1.5B: 2.88 +
        // 1.66, 28 KiB per token; gemma-2-9b: 17.21 weights, below 17.55,
        // + 2.62 overhead.
        // (case, model, profile, tokens, fits, KV capacity in tokens)
        let cases = [
            ("room to spare", LLAMA_8B, "3g.40gb", 4_096, true, 154_830),
            (
                "the weights alone overflow",
                LLAMA_8B,
                "1g.10gb",
                0,
                false,
                0,
            ),
            ("no KV cache left", GEMMA_2_9B, "2g.20gb", 0, false, 0),
            (
                "exactly the capacity",
                QWEN_1_5B,
                "1g.10gb",
                150_478,
                true,
                150_478,
            ),
            (
                "one token over",
                QWEN_1_5B,
                "1g.10gb",
                150_479,
                false,
                150_478,
            ),
        ];
        for (case, model, name, tokens, fits, capacity) in cases {
            let r = req(model, "A100-80GB");
            let f = with(&r, |g, s, _| {
                slice_fit(s, g, g.mig_profile(name).unwrap(), tokens)
            });
            assert_eq!((f.fits(), f.capacity_tokens), (fits, capacity), "{case}");
            assert_eq!((f.tp, f.pp), (1, 1), "{case}");
        }
    }

    #[test]
    fn requested_slice_table() {
        let llama_8b_suggestion = "the smallest profile that holds it is 3g.40gb";
        // (case, request, profile, slice or error)
        let cases: Vec<(&str, SizingRequest, &str, Result<&str, String>)> = vec![
            (
                "a GPU without MIG",
                req(QWEN_1_5B, "L4"),
                "1g.10gb",
                Err("L4 has no MIG".into()),
            ),
            (
                "an unknown profile lists the GPU's own",
                req(QWEN_1_5B, "A100-80GB"),
                "2g.11gb",
                Err("no 2g.11gb in 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb".into()),
            ),
            (
                // A default context only needs 4,096 tokens here; auto wants
                // 4 x 32,768 and takes 1g.20gb.
                "the smallest slice at a short default context",
                req(QWEN_1_5B, "A100-80GB"),
                "1g.10gb",
                Ok("1g.10gb"),
            ),
            (
                "the default context times a concurrency the slice falls short of",
                SizingRequest {
                    concurrency: Some(40),
                    ..req(QWEN_1_5B, "A100-80GB")
                },
                "1g.10gb",
                Err("MIG profile 1g.10gb of A100-80GB holds the KV cache of at most 36 sequences of 4,096 tokens beside the weights, not 40: a lower concurrency would fit; profile 1g.20gb would hold them".into()),
            ),
            (
                "a stated concurrency does not hide that the weights overflow",
                SizingRequest {
                    concurrency: Some(10),
                    ..req(LLAMA_8B, "A100-80GB")
                },
                "1g.10gb",
                Err("1g.10gb (8.6 GiB usable), which needs 21.4 GiB; the smallest profile that holds it is 3g.40gb".into()),
            ),
            (
                "tensor parallel asks for several GPUs",
                SizingRequest {
                    tensor_parallel: Some(2),
                    ..req(QWEN_1_5B, "A100-80GB")
                },
                "1g.10gb",
                Err("2 GPUs requested".into()),
            ),
            (
                "TP x PP when no count is given",
                SizingRequest {
                    tensor_parallel: Some(2),
                    pipeline_parallel: Some(2),
                    ..req(QWEN_1_5B, "A100-80GB")
                },
                "1g.10gb",
                Err("4 GPUs requested".into()),
            ),
            (
                "a GPU count",
                SizingRequest {
                    gpu_count: Some(3),
                    ..req(QWEN_1_5B, "A100-80GB")
                },
                "1g.10gb",
                Err("3 GPUs requested".into()),
            ),
            (
                "one GPU but TP 2: the layout is what asks for more",
                SizingRequest {
                    gpu_count: Some(1),
                    tensor_parallel: Some(2),
                    ..req(QWEN_1_5B, "A100-80GB")
                },
                "1g.10gb",
                Err("2 GPUs requested".into()),
            ),
            (
                // 10 GB < 1.2 x 16.06 GB: the error shows 1.2 x weights.
                "below the recipes' 1.2 x weights",
                req(LLAMA_8B, "A100-80GB"),
                "1g.10gb",
                Err(format!("1g.10gb (8.6 GiB usable), which needs 17.9 GiB; {llama_8b_suggestion}")),
            ),
            (
                // 15.0 weights + 1.4 overhead + 0.5 KV = 16.9 GiB of 17.55,
                // which leaves the KV cache 1.1 GiB, not the sixth (2.9).
                "the memory holds but the balanced objective's KV share does not",
                req(LLAMA_8B, "A100-80GB"),
                "2g.20gb",
                Err(format!("2g.20gb (17.6 GiB usable), which would leave the KV cache 1.1 GiB, less than the sixth the balanced objective keeps for it; {llama_8b_suggestion}")),
            ),
            (
                "the recipe holds but the memory does not",
                SizingRequest {
                    max_model_len: Some(16_384),
                    ..req(LLAMA_8B, "A100-80GB")
                },
                "2g.20gb",
                Err(format!("2g.20gb (17.6 GiB usable), which needs 18.4 GiB; {llama_8b_suggestion}")),
            ),
            (
                "Llama-3.1-8B on 3g.40gb",
                req(LLAMA_8B, "A100-80GB"),
                "3g.40gb",
                Ok("3g.40gb"),
            ),
            (
                // 4 GiB of KV cache: a default context would shrink to fit.
                "an explicit context must fit whole",
                SizingRequest {
                    max_model_len: Some(32_768),
                    ..req(LLAMA_8B, "A100-80GB")
                },
                "2g.20gb",
                Err(format!("2g.20gb (17.6 GiB usable), which needs 20.4 GiB; {llama_8b_suggestion}")),
            ),
            (
                "a model too big for any slice",
                req(LLAMA_70B, "A100-80GB"),
                "7g.80gb",
                Err("7g.80gb (71.1 GiB usable), which needs 157.7 GiB; no profile of A100-80GB holds it; use whole GPUs (mig none)".into()),
            ),
        ];
        for (case, r, name, want) in cases {
            let got = with(&r, |g, s, c| requested_slice(&r, g, name, s, c));
            assert_eq!(got.map(|p| p.name.as_str()).map_err(label), want, "{case}");
        }
    }

    #[test]
    fn auto_slice_table() {
        // (case, request, slice, reason)
        let cases: Vec<(&str, SizingRequest, Option<&str>, &str)> = vec![
            (
                // 2.88 weights + 1.66 overhead + 3.5 KV = 8.04 GiB <= 8.55.
                "inside the smallest slice",
                req(QWEN_1_5B, "A100-80GB"),
                Some("1g.10gb"),
                "MIG 1g.10gb: the smallest slice of A100-80GB that holds the weights and KV cache for 4 sequences of 32,768 tokens (8.0 of 8.6 GiB).",
            ),
            (
                "a shorter context fits the smallest slice",
                SizingRequest {
                    max_model_len: Some(16_384),
                    ..req(QWEN_1_5B, "A100-80GB")
                },
                Some("1g.10gb"),
                "MIG 1g.10gb: the smallest slice of A100-80GB that holds the weights and KV cache for 4 sequences of 16,384 tokens (6.3 of 8.6 GiB).",
            ),
            (
                "A30 slices",
                req(QWEN_1_5B, "A30"),
                Some("2g.12gb"),
                "MIG 2g.12gb: the smallest slice of A30 that holds the weights and KV cache for 4 sequences of 32,768 tokens (8.0 of 9.7 GiB).",
            ),
            (
                "a tiny model on the smallest A30 slice",
                req(QWEN_0_5B, "A30"),
                Some("1g.6gb"),
                "MIG 1g.6gb: the smallest slice of A30 that holds the weights and KV cache for 4 sequences of 32,768 tokens (4.1 of 4.9 GiB).",
            ),
            (
                // 15.0 weights + 1.4 overhead + 16 KV = 32.4 GiB <= 35.3.
                "an 8B model's 4 x 32,768 tokens on 3g.40gb",
                req(LLAMA_8B, "A100-80GB"),
                Some("3g.40gb"),
                "MIG 3g.40gb: the smallest slice of A100-80GB that holds the weights and KV cache for 4 sequences of 32,768 tokens (32.4 of 35.3 GiB).",
            ),
            (
                // 48.4 GiB > 35.3 on 3g.40gb; 7g.80gb is the whole GPU.
                "no partial slice holds 4 x 65,536 tokens",
                SizingRequest {
                    max_model_len: Some(65_536),
                    ..req(LLAMA_8B, "A100-80GB")
                },
                None,
                "No MIG: no partial slice of A100-80GB holds the weights and KV cache for 4 sequences of 65,536 tokens.",
            ),
            (
                "a shorter context does",
                SizingRequest {
                    max_model_len: Some(8_192),
                    ..req(LLAMA_8B, "A100-80GB")
                },
                Some("3g.40gb"),
                "MIG 3g.40gb: the smallest slice of A100-80GB that holds the weights and KV cache for 4 sequences of 8,192 tokens (20.4 of 35.3 GiB).",
            ),
            (
                // 8.2 B is inside the 8.5 B limit.
                "Qwen3-8B is in the 8B class",
                SizingRequest {
                    max_model_len: Some(8_192),
                    ..req("Qwen/Qwen3-8B", "H100-80GB")
                },
                Some("3g.40gb"),
                "MIG 3g.40gb: the smallest slice of H100-80GB that holds the weights and KV cache for 4 sequences of 8,192 tokens (21.4 of 35.6 GiB).",
            ),
            (
                // Not 4 x 10 sequences of 32,768 tokens (no partial slice,
                // said as 4): the 10 asked, of 4,096 tokens, the context
                // then capped to what the slice holds.
                "a stated concurrency at the default context",
                SizingRequest {
                    concurrency: Some(10),
                    ..req(QWEN_1_5B, "A100-80GB")
                },
                Some("1g.10gb"),
                "MIG 1g.10gb: the smallest slice of A100-80GB that holds the weights and KV cache for 10 sequences of 4,096 tokens (5.6 of 8.6 GiB).",
            ),
            (
                "a stated concurrency and context",
                SizingRequest {
                    concurrency: Some(10),
                    max_model_len: Some(32_768),
                    ..req(QWEN_1_5B, "A100-80GB")
                },
                Some("1g.20gb"),
                "MIG 1g.20gb: the smallest slice of A100-80GB that holds the weights and KV cache for 10 sequences of 32,768 tokens (13.3 of 17.6 GiB).",
            ),
            (
                // Where 4 x 65,536 tokens fit no partial slice (above).
                "one sequence, stated",
                SizingRequest {
                    concurrency: Some(1),
                    max_model_len: Some(65_536),
                    ..req(LLAMA_8B, "A100-80GB")
                },
                Some("3g.40gb"),
                "MIG 3g.40gb: the smallest slice of A100-80GB that holds the weights and KV cache for 1 sequence of 65,536 tokens (24.4 of 35.3 GiB).",
            ),
            (
                "a big model",
                req(LLAMA_70B, "A100-80GB"),
                None,
                "No MIG: 70.55 B parameters is above the 8B class that MIG suits (NIM guidance).",
            ),
            (
                "several GPUs requested",
                SizingRequest {
                    gpu_count: Some(2),
                    ..req(QWEN_1_5B, "A100-80GB")
                },
                None,
                "No MIG: more than one GPU was requested.",
            ),
            (
                "pipeline stages are several GPUs too",
                SizingRequest {
                    pipeline_parallel: Some(2),
                    ..req(QWEN_1_5B, "A100-80GB")
                },
                None,
                "No MIG: more than one GPU was requested.",
            ),
        ];
        for (case, r, slice, why) in cases {
            let (p, reason) = with(&r, |g, s, c| auto_slice(&r, g, s, c));
            assert_eq!(p.map(|p| p.name.as_str()), slice, "{case}");
            assert_eq!(reason.as_deref(), Some(why), "{case}");
        }
    }
}
