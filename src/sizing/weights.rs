//! How the weights are stored and loaded: their precision, vLLM's
//! `--quantization` and `--dtype`, and the memory they take.
//!
//! The precision decides everything downstream (weights, KV element size,
//! which GPUs can run it), so it is settled first, and a GPU that cannot run
//! it is an error here rather than an out-of-memory at start-up.

use super::memory::weights_gib;
use super::model::Model;
use super::models::ModelSpec;
use super::params::quantization_marker;
use super::text::{gib, gpus_with};
use super::{Gpu, Precision, SizingError};

/// The weight precision and whether the checkpoint is already stored in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeightPrecision {
    pub precision: Precision,
    /// True when vLLM loads the weights as they are, with no quantization.
    pub prequantized: bool,
}

/// The precision a request asks for, in order: the caller's, the id's
/// quantization marker (`-FP8`, `-AWQ`), the checkpoint's dtype; and the
/// words that say which.
fn wanted_precision(
    requested: Option<Precision>,
    model_id: &str,
    native: Option<Precision>,
) -> (WeightPrecision, String) {
    let marker = quantization_marker(model_id);
    let (precision, why, prequantized) = if let Some(p) = requested {
        let pre = marker.is_some_and(|(mp, _)| mp == p) || native == Some(p);
        (p, "requested".to_string(), pre)
    } else if let Some((p, name)) = marker {
        (p, format!("the `{name}` marker in the id"), true)
    } else {
        match native {
            Some(Precision::Fp32) => (
                Precision::Bf16,
                "the float32 checkpoint served in 16 bits".to_string(),
                false,
            ),
            Some(p) => (p, "the checkpoint's dtype".to_string(), p.is_quantized()),
            None => (
                Precision::Bf16,
                "the usual dtype of unquantized checkpoints".to_string(),
                false,
            ),
        }
    };
    let wp = WeightPrecision {
        precision,
        prequantized,
    };
    (wp, why)
}

/// The wanted precision as `gpu` can run it: bf16 falls back to fp16 on GPUs
/// without bf16; fp8 and fp4 need GPU support, except MXFP4 checkpoints,
/// which vLLM runs with weight-only kernels on any NVIDIA GPU with bf16.
fn runnable_precision(
    p: Precision,
    native: Option<Precision>,
    gpu: &Gpu,
) -> Result<(Precision, Option<String>), SizingError> {
    let unsupported =
        |features: &str, pred: fn(&Gpu) -> bool, others: &str| SizingError::UnsupportedPrecision {
            precision: p,
            gpu: gpu.name.to_string(),
            alternatives: format!(
                "use a GPU with {features} ({}) or other weights ({others})",
                gpus_with(pred)
            ),
        };
    match p {
        Precision::Bf16 if !gpu.bf16 => Ok((
            Precision::Fp16,
            Some(format!(
                "{} has no bfloat16: weights and activations run in float16.",
                gpu.name
            )),
        )),
        Precision::Fp8 if !gpu.fp8 => Err(unsupported("fp8", |g| g.fp8, "bf16, int8, int4")),
        Precision::Fp4 if !gpu.fp4 => {
            let mxfp4_native = native == Some(Precision::Fp4) && gpu.vendor == "nvidia" && gpu.bf16;
            if !mxfp4_native {
                return Err(unsupported("fp4", |g| g.fp4, "fp8, int4"));
            }
            Ok((
                p,
                Some(format!(
                    "{} has no native fp4: vLLM runs the MXFP4 experts with weight-only kernels.",
                    gpu.name
                )),
            ))
        }
        _ => Ok((p, None)),
    }
}

/// Weight precision and where it came from.
pub fn choose_precision(
    requested: Option<Precision>,
    m: &Model,
    gpu: &Gpu,
) -> Result<(WeightPrecision, Vec<String>), SizingError> {
    let native = m.spec.map(ModelSpec::native_precision);
    let (wanted, why) = wanted_precision(requested, &m.id, native);
    let (precision, note) = runnable_precision(wanted.precision, native, gpu)?;
    let mut reasons: Vec<String> = note.into_iter().collect();
    reasons.push(format!("Weights in {precision} ({why})."));
    let wp = WeightPrecision {
        precision,
        prequantized: wanted.prequantized,
    };
    Ok((wp, reasons))
}

/// vLLM's `--quantization` and what to tell the caller about it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Quantization {
    pub method: Option<String>,
    /// True when vLLM quantizes a wider checkpoint while loading it, with a
    /// method the engine chose.
    pub online: bool,
    pub warning: Option<String>,
}

/// vLLM's `--quantization`: the caller's method verbatim; none for
/// unquantized or pre-quantized weights; else the method vLLM quantizes with
/// at load time (fp8, or bitsandbytes for int4). vLLM has none for the other
/// precisions, which need a pre-quantized checkpoint.
pub fn quantization_method(given: Option<&str>, wp: WeightPrecision) -> Quantization {
    let precision = wp.precision;
    let mut warning = None;
    let method = match given {
        Some(method) if !method.trim().is_empty() => Some(method.trim().to_string()),
        _ if !precision.is_quantized() || wp.prequantized => None,
        _ => match precision {
            Precision::Fp8 => Some("fp8".to_string()),
            Precision::Int4 => Some("bitsandbytes".to_string()),
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
pub fn quantization_reason(q: &Quantization, precision: Precision) -> Option<String> {
    match &q.method {
        Some(m) if q.online => Some(format!(
            "vLLM quantizes the checkpoint to {precision} while loading (--quantization {m})."
        )),
        _ => None,
    }
}

/// vLLM `--dtype`: the activations' type. Quantized weights still compute
/// in 16 bits, bf16 where the GPU has it.
pub fn dtype_for(precision: Precision, gpu: &Gpu) -> String {
    match precision {
        Precision::Fp32 => "float32",
        Precision::Fp16 => "float16",
        Precision::Bf16 => "bfloat16",
        _ if gpu.bf16 => "bfloat16",
        _ => "float16",
    }
    .to_string()
}

/// Bytes per KV cache element: the cache follows the activations, so 4 in
/// float32 and 2 otherwise.
pub fn kv_element_bytes(precision: Precision) -> f64 {
    if precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    }
}

/// The weights of one replica, and the sentence with the arithmetic.
pub fn weights_reason(m: &Model, precision: Precision, weights: f64) -> String {
    let kept = if precision.is_quantized() && m.unquantized_b > 0.0 {
        format!(" ({} B of them kept in bf16)", m.unquantized_b)
    } else {
        String::new()
    };
    format!(
        "Weights: {} B parameters x {} B{kept} = {}.",
        m.total_b,
        precision.bytes_per_param(),
        gib(weights)
    )
}

/// Weights read through host memory while loading: online quantization reads
/// the checkpoint at its own 16-bit width.
pub fn load_gib(m: &Model, q: &Quantization, weights: f64) -> f64 {
    if q.online {
        weights_gib(m.total_b, 0.0, Precision::Bf16)
    } else {
        weights
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::gpu;

    fn wp(precision: Precision, prequantized: bool) -> WeightPrecision {
        WeightPrecision {
            precision,
            prequantized,
        }
    }

    #[test]
    fn quantization_method_table() {
        // (case, caller's method, precision, prequantized, method, online, warns)
        let cases = [
            (
                "bf16 needs no method",
                None,
                Precision::Bf16,
                false,
                None,
                false,
                false,
            ),
            (
                "fp8 from a bf16 checkpoint quantizes online",
                None,
                Precision::Fp8,
                false,
                Some("fp8"),
                true,
                false,
            ),
            (
                "an -FP8 checkpoint loads as it is",
                None,
                Precision::Fp8,
                true,
                None,
                false,
                false,
            ),
            (
                "int4 online uses bitsandbytes",
                None,
                Precision::Int4,
                false,
                Some("bitsandbytes"),
                true,
                false,
            ),
            (
                "an AWQ checkpoint carries its method",
                None,
                Precision::Int4,
                true,
                None,
                false,
                false,
            ),
            (
                "int8 cannot be made at load time",
                None,
                Precision::Int8,
                false,
                None,
                false,
                true,
            ),
            (
                "fp4 cannot be made at load time",
                None,
                Precision::Fp4,
                false,
                None,
                false,
                true,
            ),
            (
                "the caller's method wins, verbatim",
                Some(" awq "),
                Precision::Int4,
                false,
                Some("awq"),
                false,
                false,
            ),
            (
                "a blank method counts as none",
                Some("  "),
                Precision::Fp8,
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
            (Precision::Fp32, t4, "float32"),
            (Precision::Fp16, h100, "float16"),
            (Precision::Bf16, h100, "bfloat16"),
            (Precision::Fp8, h100, "bfloat16"),
            (Precision::Int4, h100, "bfloat16"),
            // T4 has no bf16: quantized weights compute in float16 there.
            (Precision::Int4, t4, "float16"),
            (Precision::Int8, t4, "float16"),
        ];
        for (precision, gpu, want) in cases {
            assert_eq!(
                dtype_for(precision, gpu),
                want,
                "{precision} on {}",
                gpu.name
            );
        }
    }

    #[test]
    fn the_kv_cache_follows_the_activations() {
        assert_eq!(kv_element_bytes(Precision::Fp32), 4.0);
        for p in [
            Precision::Bf16,
            Precision::Fp16,
            Precision::Fp8,
            Precision::Int4,
        ] {
            assert_eq!(kv_element_bytes(p), 2.0, "{p}");
        }
    }
}
