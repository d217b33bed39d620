//! How the weights are stored and loaded: their precision, vLLM's
//! `--quantization` and `--dtype`, and the memory they take.
//!
//! The precision decides everything downstream (weights, KV element size,
//! which GPUs can run it), so it is settled first, and a GPU that cannot run
//! it is an error here rather than an out-of-memory at start-up.

use super::error::SizingError;
use super::gpus::{ComputeCapability, Gpu};
use super::memory::{Release, Weights, quantized_bytes, release_text};
use super::params::{has_word, precision_marker};
use super::precision::{ComputeDtype, KvCacheDtype, WeightPrecision};
use super::resolved_model::Model;
use super::text::{gib, gpus_with, hundredths, thousands};

/// The weight precision and whether the checkpoint is already stored in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PrecisionChoice {
    pub(crate) precision: WeightPrecision,
    /// True when vLLM loads the weights as they are, with no quantization.
    pub(crate) prequantized: bool,
}

/// The precision a request asks for, in order: the caller's, the id's
/// quantization marker (`-FP8`, `-AWQ`), the checkpoint's dtype; and the
/// words that say which.
fn wanted_precision(
    requested: Option<WeightPrecision>,
    model_id: &str,
    native: Option<WeightPrecision>,
) -> (PrecisionChoice, String) {
    let marker = precision_marker(model_id);
    let (precision, why, prequantized) = if let Some(p) = requested {
        let pre = marker.is_some_and(|(mp, _)| mp == p) || native == Some(p);
        (p, "requested".to_string(), pre)
    } else if let Some((p, name)) = marker {
        (p, format!("the `{name}` marker in the id"), true)
    } else {
        match native {
            Some(WeightPrecision::Fp32) => (
                WeightPrecision::Bf16,
                "the float32 checkpoint served in 16 bits".to_string(),
                false,
            ),
            Some(p) => (p, "the checkpoint's dtype".to_string(), p.is_quantized()),
            None => (
                WeightPrecision::Bf16,
                "the usual dtype of unquantized checkpoints".to_string(),
                false,
            ),
        }
    };
    let wp = PrecisionChoice {
        precision,
        prequantized,
    };
    (wp, why)
}

/// The vLLM release from which its Marlin kernels run on Turing (T4), so
/// that fp8 weights load there weight-only (vllm-project/vllm#29901, merged
/// in mid-December 2025, the week 0.13.0 came out: 0.14 is the first
/// release sure to carry it).
const TURING_MARLIN: Release = (0, 14, 0);

/// What of a checkpoint, beyond its precision, decides where vLLM loads it.
#[derive(Debug, Clone, Copy, Default)]
struct Checkpoint {
    /// gpt-oss's MXFP4 experts.
    mxfp4: bool,
    /// NVIDIA ModelOpt's format, whose fp8 loader asks for Ampere.
    modelopt: bool,
}

/// Whether vLLM (release `vllm`, `None` when unknown) can load weights of
/// precision `p` on `gpu` at all.
pub(crate) fn runs_on(p: WeightPrecision, gpu: &Gpu, vllm: Option<Release>) -> bool {
    runnable_precision(p, Checkpoint::default(), gpu, vllm).is_ok()
}

/// The wanted precision as `gpu` can run it, and a warning when vLLM runs
/// it more slowly than natively. bf16 falls back to fp16 on GPUs without
/// bf16. fp8 weights on a GPU without fp8 units (A100, A10G, A30) run
/// weight-only through vLLM's FP8 Marlin kernels, which need Ampere, or
/// Turing (T4) from vLLM 0.14 on, except ModelOpt's (its loader asks for
/// compute capability 8.0); an unknown release is not taken to be 0.14.
/// MXFP4 (gpt-oss) runs on Ampere, Hopper and AMD's MI300 series (AMD
/// publishes gpt-oss-120b on one MI300X); NVFP4 outside Blackwell runs
/// weight-only through FP4 Marlin on NVIDIA Ampere or newer. Only what vLLM
/// cannot load is refused: fp4 on Turing, fp8 and fp4 on Volta (V100);
/// [`needs_turing`] refuses the checkpoint formats whose kernels Volta lacks.
fn runnable_precision(
    p: WeightPrecision,
    checkpoint: Checkpoint,
    gpu: &Gpu,
    vllm: Option<Release>,
) -> Result<(WeightPrecision, Option<String>, Option<String>), SizingError> {
    let refused = |alternatives: String| SizingError::UnsupportedPrecision {
        precision: p.as_str(),
        gpu: gpu.name.to_string(),
        alternatives,
    };
    let unsupported = |features: &str, pred: fn(&Gpu) -> bool, others: &str| {
        refused(format!(
            "use a GPU with {features} ({}) or other weights ({others})",
            gpus_with(pred)
        ))
    };
    let marlin = gpu.sm >= Some(ComputeCapability::AMPERE);
    match p {
        WeightPrecision::Bf16 if !gpu.bf16 => Ok((
            WeightPrecision::Fp16,
            Some(format!(
                "{} has no bfloat16: weights and activations run in float16.",
                gpu.name
            )),
            None,
        )),
        WeightPrecision::Fp8 if !gpu.fp8 => {
            let turing = gpu.sm == Some(ComputeCapability::TURING);
            if turing && (vllm < Some(TURING_MARLIN) || checkpoint.modelopt) {
                return Err(refused(fp8_on_turing(gpu, checkpoint.modelopt, vllm)));
            }
            if !marlin && !turing {
                return Err(unsupported(
                    "fp8 units or FP8 Marlin kernels (Ampere or newer)",
                    |g| g.fp8 || (g.vendor == "nvidia" && g.bf16),
                    "bf16, int8, int4",
                ));
            }
            Ok((
                p,
                None,
                Some(format!(
                    "{} has no fp8 units: vLLM runs the fp8 weights weight-only through its FP8 Marlin kernels (compute in 16 bits), slower than on a GPU with fp8 (L4, L40S, H100 and newer).",
                    gpu.name
                )),
            ))
        }
        WeightPrecision::Fp4 if !gpu.fp4 => {
            let mxfp4_ok = checkpoint.mxfp4 && (marlin || gpu.vendor == "amd");
            if mxfp4_ok {
                let why = if gpu.vendor == "amd" {
                    format!(
                        "{} runs the MXFP4 experts through vLLM's ROCm kernels (AMD publishes gpt-oss on MI300X).",
                        gpu.name
                    )
                } else {
                    format!(
                        "{} has no native fp4: vLLM runs the MXFP4 experts with weight-only kernels.",
                        gpu.name
                    )
                };
                return Ok((p, Some(why), None));
            }
            if marlin {
                return Ok((
                    p,
                    None,
                    Some(format!(
                        "{} has no fp4 units: vLLM runs the fp4 weights weight-only through its FP4 Marlin kernels, slower than on Blackwell (B200, GB200, B300, RTX-PRO-6000).",
                        gpu.name
                    )),
                ));
            }
            Err(unsupported(
                "fp4 (or MXFP4 weights on Ampere, Hopper or MI300)",
                |g| g.fp4,
                "fp8, int4",
            ))
        }
        _ => Ok((p, None, None)),
    }
}

/// What would serve fp8 weights on a Turing GPU (T4) that cannot take them:
/// a vLLM release with FP8 Marlin there, a checkpoint its loader takes
/// there, another GPU or other weights.
fn fp8_on_turing(gpu: &Gpu, modelopt: bool, vllm: Option<Release>) -> String {
    let from = release_text(TURING_MARLIN);
    let runs =
        format!("vLLM runs them on Turing weight-only (FP8 Marlin) in release {from} and later");
    let instead =
        "another GPU (L4, A10G, A100, H100, MI300X and newer) or bf16, int8 or int4 weights";
    match vllm {
        _ if modelopt => format!(
            "vLLM's ModelOpt fp8 loader asks for compute capability 8.0 and {} has {}: use a compressed-tensors or fp8 checkpoint of the model, which vLLM {from} and later run there, {instead}",
            gpu.name,
            ComputeCapability::TURING
        ),
        Some(r) => format!(
            "{runs}, and the plan is for {}: use {from} or later, {instead}",
            release_text(r)
        ),
        None => format!(
            "{runs}, and this plan's release is not known: if the platform's image runs {from} or later, state it (the step input's vllmVersion; size --vllm-version); else use {instead}"
        ),
    }
}

/// Weight precision and where it came from, and a warning when the GPU runs
/// it more slowly than natively.
pub(crate) fn choose_precision(
    requested: Option<WeightPrecision>,
    m: &Model,
    gpu: &Gpu,
    vllm: Option<Release>,
) -> Result<(PrecisionChoice, Vec<String>, Option<String>), SizingError> {
    let (wanted, why) = wanted_precision(requested, &m.id, m.native);
    if let Some(format) = needs_turing(m).filter(|_| wanted.prequantized)
        && let Some(sm) = gpu.sm.filter(|&sm| sm < ComputeCapability::TURING)
    {
        return Err(SizingError::UnsupportedCheckpointFormat {
            model: m.id.clone(),
            format,
            gpu: gpu.name.clone(),
            sm: sm.to_string(),
        });
    }
    if gpu.vendor == "amd"
        && let Some(how) = through_bitsandbytes(m, wanted)
    {
        return Err(SizingError::BitsandbytesOnRocm {
            model: m.id.clone(),
            how,
            gpu: gpu.name.clone(),
        });
    }
    if !m.float16 && !gpu.bf16 {
        return in_float32(m, gpu, wanted, &why);
    }
    if !m.float16 && wanted.precision == WeightPrecision::Fp16 {
        return Err(SizingError::Float16Refused {
            model: m.id.clone(),
            instead: format!(
                ": use bf16 weights (quantization bf16), which {} runs",
                gpu.name
            ),
        });
    }
    let checkpoint = Checkpoint {
        mxfp4: m.mxfp4 || precision_marker(&m.id).is_some_and(|(_, name)| name == "mxfp4"),
        modelopt: wanted.prequantized && checkpoint_format(m) == Some("modelopt"),
    };
    let (precision, note, warning) = runnable_precision(wanted.precision, checkpoint, gpu, vllm)?;
    let mut reasons: Vec<String> = note.into_iter().collect();
    reasons.push(format!("Weights in {precision} ({why})."));
    let wp = PrecisionChoice {
        precision,
        prequantized: wanted.prequantized,
    };
    Ok((wp, reasons, warning))
}

/// A model vLLM does not run in float16 (Gemma 2 and 3) on a GPU without
/// bfloat16 (T4, V100): its 16-bit weights run in float32, as vLLM's own
/// `--dtype auto` would take there; quantized weights, which compute in
/// float16 on such a GPU, cannot run.
fn in_float32(
    m: &Model,
    gpu: &Gpu,
    wanted: PrecisionChoice,
    why: &str,
) -> Result<(PrecisionChoice, Vec<String>, Option<String>), SizingError> {
    if !matches!(
        wanted.precision,
        WeightPrecision::Bf16 | WeightPrecision::Fp32
    ) {
        let gpu = &gpu.name;
        return Err(SizingError::Float16Refused {
            model: m.id.clone(),
            instead: format!(
                ", and {gpu} has no bfloat16, so {} weights would compute in float16 there: use its 16-bit \
                 weights, which run in float32 on {gpu}, or a GPU with bfloat16 (Ampere or newer: L4, A10G, A100, \
                 H100 and the rest of the catalog but T4 and the V100s)",
                wanted.precision
            ),
        });
    }
    let precision = WeightPrecision::Fp32;
    let reasons = vec![
        format!(
            "vLLM does not run {} in float16 (numerical instability) and {} has no bfloat16: weights and activations run in float32.",
            m.name, gpu.name
        ),
        if wanted.precision == precision {
            format!("Weights in {precision} ({why}).")
        } else {
            format!(
                "Weights in {precision} (upcast from {}, {why}).",
                wanted.precision
            )
        },
    ];
    let choice = PrecisionChoice {
        precision,
        prequantized: wanted.prequantized && wanted.precision == precision,
    };
    Ok((choice, reasons, None))
}

/// The format a pre-quantized checkpoint is stored in: config.json's
/// `quant_method`, else the id's (`-AWQ`; `-w4a16`, `-w8a8`, `-w8a16`, the
/// names llm-compressor gives; `-bnb-4bit`; NVIDIA's own checkpoints on
/// Hugging Face are ModelOpt's).
fn checkpoint_format(m: &Model) -> Option<&str> {
    if let Some(method) = &m.quant_method {
        return Some(method);
    }
    let name = m.id.rsplit('/').next()?.to_ascii_lowercase();
    if has_word(&name, "awq") {
        Some("awq")
    } else if ["w4a16", "w8a8", "w8a16"]
        .iter()
        .any(|w| has_word(&name, w))
    {
        Some("compressed-tensors")
    } else if has_word(&name, "bnb") {
        Some("bitsandbytes")
    } else if m
        .id
        .split_once('/')
        .is_some_and(|(org, _)| org.eq_ignore_ascii_case("nvidia"))
    {
        Some("modelopt")
    } else {
        None
    }
}

/// What a pre-quantized checkpoint is when vLLM's kernels for it need
/// Turing or newer: AWQ (AWQConfig.get_min_capability 7.5) and
/// llm-compressor's integer schemes (compressed-tensors: W8A8 7.5, W4A16
/// 8.0); GPTQ's kernels (6.0) and bitsandbytes' (7.0) run on Volta.
fn needs_turing(m: &Model) -> Option<&'static str> {
    match checkpoint_format(m)? {
        "awq" => Some("an AWQ checkpoint"),
        "compressed-tensors" => Some("an llm-compressor (compressed-tensors) checkpoint"),
        _ => None,
    }
}

/// How the weights would load through bitsandbytes, if they would: vLLM
/// quantizes 16-bit weights to int4 with it at load time
/// ([`quantization_method`]), and a bitsandbytes checkpoint loads with it.
/// vLLM's ROCm build leaves it out on AMD Instinct GPUs (gfx9:
/// `RocmPlatform.supported_quantization`).
fn through_bitsandbytes(m: &Model, wanted: PrecisionChoice) -> Option<&'static str> {
    if quantization_method(None, wanted).method.as_deref() == Some("bitsandbytes") {
        return Some("quantized to int4 while loading");
    }
    (wanted.prequantized && checkpoint_format(m) == Some("bitsandbytes"))
        .then_some("its checkpoint's format")
}

/// vLLM's `--quantization` and what to tell the caller about it.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Quantization {
    pub(crate) method: Option<String>,
    /// True when vLLM quantizes a wider checkpoint while loading it, with a
    /// method the engine chose.
    pub(crate) online: bool,
    pub(crate) warning: Option<String>,
}

/// vLLM's `--quantization`: the caller's method verbatim; none for
/// unquantized or pre-quantized weights; else the method vLLM quantizes with
/// at load time (fp8, or bitsandbytes for int4). vLLM has none for the other
/// precisions, which need a pre-quantized checkpoint.
pub(crate) fn quantization_method(given: Option<&str>, wp: PrecisionChoice) -> Quantization {
    let precision = wp.precision;
    let mut warning = None;
    let method = match given {
        Some(method) if !method.trim().is_empty() => Some(method.trim().to_string()),
        _ if !precision.is_quantized() || wp.prequantized => None,
        _ => match precision {
            WeightPrecision::Fp8 => Some("fp8".to_string()),
            WeightPrecision::Int4 => Some("bitsandbytes".to_string()),
            _ => {
                warning = Some(format!(
                    "vLLM cannot quantize to {precision} while loading: point the model at a checkpoint already quantized to {precision}."
                ));
                None
            }
        },
    };
    Quantization {
        online: method.is_some() && given.is_none(),
        method,
        warning,
    }
}

/// The reason for an online quantization, if any.
pub(crate) fn quantization_reason(q: &Quantization, precision: WeightPrecision) -> Option<String> {
    match &q.method {
        Some(m) if q.online => Some(format!(
            "vLLM quantizes the checkpoint to {precision} while loading (--quantization {m})."
        )),
        _ => None,
    }
}

/// vLLM `--dtype`: the activations' type. Quantized weights still compute
/// in 16 bits, bf16 where the GPU has it.
pub(crate) fn dtype_for(precision: WeightPrecision, gpu: &Gpu) -> ComputeDtype {
    match precision {
        WeightPrecision::Fp32 => ComputeDtype::Float32,
        WeightPrecision::Fp16 => ComputeDtype::Float16,
        WeightPrecision::Bf16 => ComputeDtype::Bfloat16,
        _ if gpu.bf16 => ComputeDtype::Bfloat16,
        _ => ComputeDtype::Float16,
    }
}

/// Bytes per KV cache element: one with `--kv-cache-dtype fp8`, else the
/// activations' width, 4 in float32 and 2 otherwise.
pub(crate) fn kv_element_bytes(precision: WeightPrecision, kv: KvCacheDtype) -> f64 {
    match kv {
        KvCacheDtype::Fp8 => 1.0,
        KvCacheDtype::Auto if precision == WeightPrecision::Fp32 => 4.0,
        KvCacheDtype::Auto => 2.0,
    }
}

/// The weights' arithmetic in one line (a Model's card shows it): the
/// weights index's bytes where the plan counts them, else parameters x bytes.
pub(crate) fn weights_formula(m: &Model, precision: WeightPrecision, w: &Weights) -> String {
    match m.indexed_bytes(precision) {
        Some(bytes) => format!(
            "{} bytes of {precision} weights (the weights index){} = {:.2} GiB",
            thousands(bytes),
            if w.padding > 1.0 {
                format!(" x {:.3} MoE kernel padding", w.padding)
            } else {
                String::new()
            },
            w.total_gib
        ),
        None => format!(
            "{:.2}B parameters x {} bytes ({precision}) = {:.2} GiB",
            m.total_b,
            precision.bytes_per_param(),
            w.total_gib
        ),
    }
}

/// The weights of one replica, and the sentence with the arithmetic.
pub(crate) fn weights_reason(m: &Model, precision: WeightPrecision, w: &Weights) -> String {
    let rope = if w.rope_gib >= 0.005 {
        format!(
            "; every GPU also holds the {} rotary cache",
            gib_fine(w.rope_gib)
        )
    } else {
        String::new()
    };
    if let Some(bytes) = m.indexed_bytes(precision) {
        return format!(
            "Weights: {} ({} bytes, as the checkpoint's index says){}{rope}.",
            gib(w.total_gib),
            thousands(bytes),
            if w.padding > 1.0 {
                format!(
                    " with the expert weights padded x{:.3} by the MXFP4 kernels",
                    w.padding
                )
            } else {
                String::new()
            }
        );
    }
    if precision.is_quantized() {
        let q = quantized_bytes(precision, m.mxfp4, m.int4_group);
        let padding = if w.padding > 1.0 {
            format!(" x {:.3} MoE kernel padding", w.padding)
        } else {
            String::new()
        };
        return format!(
            "Weights: {:.2} B parameters kept in 16 bits (embeddings{}{}{}) x 2 B + {:.2} B quantized x {q} B{padding} = {}{rope}.",
            w.kept_16bit_b,
            if m.tied_embeddings {
                ", tied"
            } else {
                " and lm_head"
            },
            if m.vision_b > 0.0 {
                ", vision tower"
            } else {
                ""
            },
            if m.unquantized_b > 0.0 || m.excluded_b > 0.0 {
                ", what the checkpoint leaves unquantized"
            } else {
                ""
            },
            (m.total_b - w.kept_16bit_b).max(0.0),
            gib(w.total_gib)
        );
    }
    format!(
        "Weights: {} B parameters x {} B = {}{rope}.",
        hundredths(m.total_b),
        precision.bytes_per_param(),
        gib(w.total_gib)
    )
}

/// `0.03 GiB`: small figures need two decimals.
fn gib_fine(v: f64) -> String {
    format!("{v:.2} GiB")
}

/// Weights read through host memory while loading: online quantization reads
/// the checkpoint at its own 16-bit width.
pub(crate) fn load_gib(m: &Model, q: &Quantization, w: &Weights) -> f64 {
    if q.online {
        m.weights(WeightPrecision::Bf16).total_gib
    } else {
        w.total_gib
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::gpu;

    fn wp(precision: WeightPrecision, prequantized: bool) -> PrecisionChoice {
        PrecisionChoice {
            precision,
            prequantized,
        }
    }

    /// fp8 weights on a T4 run from vLLM 0.14 on, weight-only in float16
    /// and with a warning, unless the checkpoint is ModelOpt's; an unknown
    /// or earlier release is refused, as is every release on a V100.
    #[test]
    fn fp8_weights_run_on_turing_from_vllm_0_14() {
        use crate::sizing::{ModelConfig, SizingRequest, size};
        let modelopt = ModelConfig::from_json(
            r#"{"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                "hidden_size": 4096, "vocab_size": 128256, "max_position_embeddings": 131072,
                "torch_dtype": "bfloat16",
                "quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8"}}"#,
        )
        .unwrap();
        let redhat = "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8";
        // (model, GPU, vLLM release, config.json, runs)
        let cases = [
            (redhat, "T4", Some("0.14.0"), None, true),
            (redhat, "T4", Some("v0.19.1"), None, true),
            (redhat, "T4", Some("0.13.0"), None, false),
            (redhat, "T4", None, None, false),
            (redhat, "V100", Some("0.19.0"), None, false),
            (
                "nvidia/Llama-3.1-8B-Instruct-FP8",
                "T4",
                Some("0.19.0"),
                None,
                false,
            ),
            (
                "example/llama-8b-fp8",
                "T4",
                Some("0.19.0"),
                Some(modelopt.clone()),
                false,
            ),
            (
                "example/llama-8b-fp8",
                "A100-80GB",
                Some("0.19.0"),
                Some(modelopt),
                true,
            ),
        ];
        for (model, gpu_type, vllm, config, runs) in cases {
            let got = size(&SizingRequest {
                model_id: model.into(),
                gpu_type: gpu_type.into(),
                vllm_version: vllm.map(str::to_string),
                model_config: config,
                ..Default::default()
            });
            assert_eq!(
                got.is_ok(),
                runs,
                "{model} on {gpu_type} at {vllm:?}: {got:?}"
            );
            if let Ok(plan) = got
                && gpu_type == "T4"
            {
                assert_eq!(
                    (plan.weight_precision, plan.dtype),
                    (WeightPrecision::Fp8, ComputeDtype::Float16)
                );
                assert!(
                    plan.warnings.iter().any(|w| w.starts_with(
                        "T4 has no fp8 units: vLLM runs the fp8 weights weight-only through its FP8 Marlin kernels"
                    )),
                    "{:?}",
                    plan.warnings
                );
            }
        }
        let release = |v| Some(crate::sizing::release(v).unwrap());
        let t4 = gpu("T4").unwrap();
        assert!(runs_on(WeightPrecision::Fp8, t4, release("0.19.0")));
        assert!(!runs_on(WeightPrecision::Fp8, t4, release("0.13.0")));
        assert!(!runs_on(WeightPrecision::Fp8, t4, None));
        assert!(!runs_on(WeightPrecision::Fp4, t4, release("0.19.0")));
    }

    /// AWQ and llm-compressor checkpoints need Turing; GPTQ, bitsandbytes
    /// and a 4-bit quantization vLLM does at load time run on Volta.
    #[test]
    fn checkpoint_formats_whose_kernels_volta_lacks_are_refused_there() {
        use crate::sizing::{ModelConfig, SizingError, SizingRequest, size};
        let awq_config = ModelConfig::from_json(
            r#"{"num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
                "hidden_size": 3584, "vocab_size": 152064, "max_position_embeddings": 32768,
                "torch_dtype": "float16",
                "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}}"#,
        )
        .unwrap();
        // (case, model, config.json, requested precision, refused on V100)
        let cases = [
            (
                "AWQ by its id",
                "Qwen/Qwen2.5-7B-Instruct-AWQ",
                None,
                None,
                true,
            ),
            (
                "AWQ-INT4 by its id",
                "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4",
                None,
                None,
                true,
            ),
            (
                "AWQ by its config.json",
                "acme/coder-7b",
                Some(awq_config),
                None,
                true,
            ),
            (
                "W4A16",
                "neuralmagic/Meta-Llama-3.1-8B-Instruct-quantized.w4a16",
                None,
                None,
                true,
            ),
            (
                "W8A8",
                "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8",
                None,
                None,
                true,
            ),
            (
                "GPTQ",
                "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4",
                None,
                None,
                false,
            ),
            (
                "bitsandbytes",
                "unsloth/llama-3-8b-bnb-4bit",
                None,
                None,
                false,
            ),
            (
                "int4 at load time",
                "Qwen/Qwen2.5-7B-Instruct",
                None,
                Some(WeightPrecision::Int4),
                false,
            ),
        ];
        for (case, model, config, quantization, refused) in cases {
            let on = |gpu: &str| {
                size(&SizingRequest {
                    model_id: model.into(),
                    gpu_type: gpu.into(),
                    model_config: config.clone(),
                    quantization,
                    parameter_count: config.as_ref().map(|_| "7.6B".to_string()),
                    ..Default::default()
                })
            };
            match on("V100") {
                Err(SizingError::UnsupportedCheckpointFormat { .. }) => assert!(refused, "{case}"),
                Err(e) => panic!("{case}: {e}"),
                Ok(_) => assert!(!refused, "{case}"),
            }
            // Turing runs them all.
            assert!(on("T4").is_ok(), "{case}");
        }
        let e = size(&SizingRequest {
            model_id: "Qwen/Qwen2.5-7B-Instruct-AWQ".into(),
            gpu_type: "V100-32GB".into(),
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(
                "Qwen/Qwen2.5-7B-Instruct-AWQ is an AWQ checkpoint, whose vLLM kernels need compute capability 7.5 \
                 (Turing) or newer, which V100-32GB (7.0) lacks: use a GPTQ or bitsandbytes checkpoint of it, whose \
                 kernels run on V100-32GB, or a GPU of Turing or newer (T4, L4, A100, H100 and the rest of the \
                 catalog but the V100s)"
            ),
            "{e}"
        );
    }

    /// vLLM refuses float16 for Gemma 2 and 3: without bfloat16 they run
    /// in float32, and quantized weights, which would compute in float16,
    /// cannot run; other models keep float16 there.
    #[test]
    fn models_vllm_refuses_in_float16_run_in_float32_without_bfloat16() {
        use crate::sizing::{ComputeDtype, ModelConfig, SizingError, SizingRequest, size};
        let gemma3_config = ModelConfig::from_json(
            r#"{"model_type": "gemma3_text", "num_hidden_layers": 34, "num_attention_heads": 8,
                "num_key_value_heads": 4, "head_dim": 256, "hidden_size": 2560,
                "vocab_size": 262208, "max_position_embeddings": 131072}"#,
        )
        .unwrap();
        let plan = |model: &str, gpu: &str, quantization, config: Option<ModelConfig>| {
            size(&SizingRequest {
                model_id: model.into(),
                gpu_type: gpu.into(),
                quantization,
                parameter_count: config.as_ref().map(|_| "3.9B".to_string()),
                model_config: config,
                ..Default::default()
            })
        };
        // (case, model, GPU, requested, config.json, weights and dtype or refused)
        let cases = [
            (
                "Gemma 2 on T4",
                "google/gemma-2-9b-it",
                "T4",
                None,
                None,
                Some(ComputeDtype::Float32),
            ),
            (
                "Gemma 3 on V100",
                "google/gemma-3-4b-it",
                "V100",
                None,
                None,
                Some(ComputeDtype::Float32),
            ),
            (
                "Gemma 3 by its config.json",
                "acme/tuned-gemma",
                "T4",
                None,
                Some(gemma3_config),
                Some(ComputeDtype::Float32),
            ),
            (
                "Gemma 2 where bf16 runs",
                "google/gemma-2-9b-it",
                "L4",
                None,
                None,
                Some(ComputeDtype::Bfloat16),
            ),
            (
                "Gemma 2 in fp16 by request",
                "google/gemma-2-9b-it",
                "T4",
                Some(WeightPrecision::Fp16),
                None,
                None,
            ),
            (
                "Gemma 2 in int4",
                "google/gemma-2-9b-it",
                "T4",
                Some(WeightPrecision::Int4),
                None,
                None,
            ),
            (
                "Gemma 2 in fp16 where bf16 runs",
                "google/gemma-2-9b-it",
                "L4",
                Some(WeightPrecision::Fp16),
                None,
                None,
            ),
            (
                "a Gemma 2 upload named fp16",
                "acme/gemma-2-9b-it-fp16",
                "L4",
                None,
                None,
                None,
            ),
            (
                "Llama keeps float16",
                "meta-llama/Llama-3.1-8B-Instruct",
                "T4",
                None,
                None,
                Some(ComputeDtype::Float16),
            ),
            (
                "the first Gemma runs in float16",
                "google/gemma-7b",
                "T4",
                None,
                None,
                Some(ComputeDtype::Float16),
            ),
        ];
        for (case, model, gpu, quantization, config, want) in cases {
            match (plan(model, gpu, quantization, config), want) {
                (Ok(p), Some(dtype)) => {
                    assert_eq!(p.dtype, dtype, "{case}");
                    let fp32 = dtype == ComputeDtype::Float32;
                    assert_eq!(p.weight_precision == WeightPrecision::Fp32, fp32, "{case}");
                }
                (Err(SizingError::Float16Refused { .. }), None) => {}
                (got, want) => panic!("{case}: {got:?}, want {want:?}"),
            }
        }
    }

    /// vLLM's ROCm build has no bitsandbytes on MI300 (gfx9): int4 at
    /// load time and bitsandbytes checkpoints are refused there; AWQ, GPTQ
    /// and fp8 run, and NVIDIA keeps bitsandbytes.
    #[test]
    fn bitsandbytes_is_refused_on_amd_instinct() {
        use crate::sizing::{SizingError, SizingRequest, size};
        // (model, GPU, requested precision, refused)
        let cases = [
            (
                "meta-llama/Llama-3.1-70B-Instruct",
                "MI300X",
                Some(WeightPrecision::Int4),
                true,
            ),
            ("unsloth/llama-3-8b-bnb-4bit", "MI325X", None, true),
            ("Qwen/Qwen2.5-7B-Instruct-AWQ", "MI300X", None, false),
            ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "MI300X", None, false),
            (
                "meta-llama/Llama-3.1-70B-Instruct",
                "MI300X",
                Some(WeightPrecision::Fp8),
                false,
            ),
            (
                "meta-llama/Llama-3.1-70B-Instruct",
                "H100-80GB",
                Some(WeightPrecision::Int4),
                false,
            ),
            ("unsloth/llama-3-8b-bnb-4bit", "L4", None, false),
        ];
        for (model, gpu, quantization, refused) in cases {
            let got = size(&SizingRequest {
                model_id: model.into(),
                gpu_type: gpu.into(),
                quantization,
                ..Default::default()
            });
            match got {
                Err(SizingError::BitsandbytesOnRocm { .. }) => assert!(refused, "{model} on {gpu}"),
                Err(e) => panic!("{model} on {gpu}: {e}"),
                Ok(_) => assert!(!refused, "{model} on {gpu}"),
            }
        }
    }

    #[test]
    fn quantization_method_table() {
        // (case, caller's method, precision, prequantized, method, online, warns)
        let cases = [
            (
                "bf16 needs no method",
                None,
                WeightPrecision::Bf16,
                false,
                None,
                false,
                false,
            ),
            (
                "fp8 from a bf16 checkpoint quantizes online",
                None,
                WeightPrecision::Fp8,
                false,
                Some("fp8"),
                true,
                false,
            ),
            (
                "an -FP8 checkpoint loads as it is",
                None,
                WeightPrecision::Fp8,
                true,
                None,
                false,
                false,
            ),
            (
                "int4 online uses bitsandbytes",
                None,
                WeightPrecision::Int4,
                false,
                Some("bitsandbytes"),
                true,
                false,
            ),
            (
                "an AWQ checkpoint carries its method",
                None,
                WeightPrecision::Int4,
                true,
                None,
                false,
                false,
            ),
            (
                "int8 cannot be made at load time",
                None,
                WeightPrecision::Int8,
                false,
                None,
                false,
                true,
            ),
            (
                "fp4 cannot be made at load time",
                None,
                WeightPrecision::Fp4,
                false,
                None,
                false,
                true,
            ),
            (
                "the caller's method wins, verbatim",
                Some(" awq "),
                WeightPrecision::Int4,
                false,
                Some("awq"),
                false,
                false,
            ),
            (
                "a blank method counts as none",
                Some("  "),
                WeightPrecision::Fp8,
                false,
                Some("fp8"),
                false,
                false,
            ),
        ];
        for (case, given, precision, pre, method, online, warns) in cases {
            let q = quantization_method(given, wp(precision, pre));
            assert_eq!(q.method.as_deref(), method, "{case}");
            assert_eq!(q.online, online, "{case}");
            assert_eq!(q.warning.is_some(), warns, "{case}");
        }
    }

    #[test]
    fn dtype_follows_the_gpu_for_quantized_weights() {
        let (t4, h100) = (gpu("T4").unwrap(), gpu("H100-80GB").unwrap());
        let cases = [
            (WeightPrecision::Fp32, t4, "float32"),
            (WeightPrecision::Fp16, h100, "float16"),
            (WeightPrecision::Bf16, h100, "bfloat16"),
            (WeightPrecision::Fp8, h100, "bfloat16"),
            (WeightPrecision::Int4, h100, "bfloat16"),
            // T4 has no bf16: quantized weights compute in float16 there.
            (WeightPrecision::Int4, t4, "float16"),
            (WeightPrecision::Int8, t4, "float16"),
        ];
        for (precision, gpu, want) in cases {
            assert_eq!(
                dtype_for(precision, gpu).as_str(),
                want,
                "{precision} on {}",
                gpu.name
            );
        }
    }

    #[test]
    fn the_kv_cache_follows_the_activations() {
        assert_eq!(
            kv_element_bytes(WeightPrecision::Fp32, KvCacheDtype::Auto),
            4.0
        );
        assert_eq!(
            kv_element_bytes(WeightPrecision::Bf16, KvCacheDtype::Fp8),
            1.0
        );
        for p in [
            WeightPrecision::Bf16,
            WeightPrecision::Fp16,
            WeightPrecision::Fp8,
            WeightPrecision::Int4,
        ] {
            assert_eq!(kv_element_bytes(p, KvCacheDtype::Auto), 2.0, "{p}");
        }
    }
}
