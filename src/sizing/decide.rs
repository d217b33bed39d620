//! The decisions: which precision, how many GPUs in which layout, MIG or not,
//! how long a context, and the sentences that explain each choice.
//!
//! Sizing rule: a layout holds the model when, on every GPU,
//! `weights/(TP x PP) + overhead + KV(maxModelLen x concurrency) <= utilization x memory`
//! (vLLM's own start-up check) and the layout's memory is at least 1.2 x the
//! weights (the vLLM recipes' minimum, which leaves room for a useful KV
//! cache). The engine takes the smallest layout that holds the model at the
//! target context, preferring tensor parallelism within a node, then pipeline
//! stages within a node, then whole nodes of TP = GPUs per node.

use super::host::host;
use super::memory::{Arch, GIB, weights_gib};
use super::models::{ModelSpec, lookup};
use super::params::{count_from_id, parse_parameter_count, quantization_marker};
use super::{
    Estimate, Gpu, MigChoice, MigProfile, Plan, Precision, SizingError, SizingRequest, gpu, gpus,
};

/// Default context when the caller sets none: the model's own, up to this.
pub const DEFAULT_CONTEXT: u64 = 32_768;
/// Default context for a model the catalog does not know: the shortest
/// context of common models, so vLLM never rejects it as too long.
pub const UNKNOWN_MODEL_CONTEXT: u64 = 4_096;
/// When the default context does not fit anywhere, the engine sizes for this
/// much and caps `maxModelLen` to what fits.
pub const MIN_DEFAULT_CONTEXT: u64 = 4_096;
/// Capped contexts are rounded down to a multiple of this.
pub const CONTEXT_STEP: u64 = 256;
/// The vLLM recipes' minimum VRAM: weights x 1.2.
pub const RECIPE_HEADROOM: f64 = 1.2;
/// MIG suits small models (NIM: "works best with <= 8B"); 8.5B keeps the
/// 8B class (Llama-3.1-8B is 8.03B, Qwen3-8B 8.2B) in.
pub const MIG_MAX_PARAMS_B: f64 = 8.5;
/// `auto` takes a slice only when it holds this many full-length sequences.
pub const MIG_USEFUL_SEQUENCES: u64 = 4;
/// Largest replica the engine plans, in nodes.
pub const MAX_NODES: u32 = 16;
/// Upper bounds on user numbers, far above real use, so that products stay
/// exact in u64 and f64.
pub const MAX_MODEL_LEN: u64 = 100_000_000;
pub const MAX_GPU_COUNT: u32 = 4_096;
pub const MAX_CONCURRENCY: u32 = 100_000;

/// The model as the engine sees it: catalog figures or estimates.
struct Model {
    id: String,
    spec: Option<&'static ModelSpec>,
    name: String,
    arch: Arch,
    total_b: f64,
    active_b: f64,
    unquantized_b: f64,
    context: Option<u64>,
}

/// Memory arithmetic for one model at one precision.
struct Sizer<'a> {
    model: &'a Model,
    weights_gib: f64,
    kv_bytes: f64,
    util: f64,
}

/// One layout evaluated on one device size.
#[derive(Debug, Clone, Copy)]
struct Fit {
    tp: u32,
    pp: u32,
    weights_per_gpu: f64,
    overhead: f64,
    kv_per_gpu: f64,
    need: f64,
    usable: f64,
    capacity_tokens: u64,
    recipe_ok: bool,
    raw_gb: f64,
}

impl Fit {
    fn fits(&self) -> bool {
        self.need <= self.usable && self.recipe_ok
    }
    fn holds_weights(&self) -> bool {
        self.weights_per_gpu + self.overhead < self.usable
    }
    fn devices(&self) -> u32 {
        self.tp * self.pp
    }
}

impl Sizer<'_> {
    fn evaluate(&self, device_gib: f64, nominal_gb: f64, tp: u32, pp: u32, tokens: u64) -> Fit {
        let n = f64::from(tp * pp);
        let usable = self.util * device_gib;
        let weights_per_gpu = self.weights_gib / n;
        let overhead = self.model.arch.overhead_gib();
        let per_token = self.model.arch.kv_bytes_per_token(self.kv_bytes, tp, pp);
        let kv_per_gpu = per_token * tokens as f64 / GIB;
        let free = usable - weights_per_gpu - overhead;
        let capacity_tokens = if free > 0.0 && per_token > 0.0 {
            (free * GIB / per_token).floor().min(1e15) as u64
        } else {
            0
        };
        let raw_gb = n * nominal_gb;
        Fit {
            tp,
            pp,
            weights_per_gpu,
            overhead,
            kv_per_gpu,
            need: weights_per_gpu + overhead + kv_per_gpu,
            usable,
            capacity_tokens,
            recipe_ok: raw_gb >= RECIPE_HEADROOM * self.weights_gb(),
            raw_gb,
        }
    }

    fn weights_gb(&self) -> f64 {
        self.weights_gib * GIB / 1e9
    }

    /// The first candidate that holds `tokens`, and the last one that did not.
    fn search(&self, gpu: &Gpu, cands: &[(u32, u32)], tokens: u64) -> (Option<Fit>, Option<Fit>) {
        let mut last_miss = None;
        for &(tp, pp) in cands {
            let fit = self.evaluate(gpu.memory_gib, gpu.nominal_gb, tp, pp, tokens);
            if fit.fits() {
                return (Some(fit), last_miss);
            }
            last_miss = Some(fit);
        }
        (None, last_miss)
    }
}

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

fn join_counts(v: &[u32]) -> String {
    let s: Vec<String> = v.iter().map(u32::to_string).collect();
    s.join(", ")
}

/// Layouts in order of preference: TP alone within a node, then TP x PP
/// within a node, then whole nodes with TP = the largest valid TP.
fn candidates(m: &Model, gpu: &Gpu, tp: Option<u32>, pp: Option<u32>) -> Vec<(u32, u32)> {
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

fn gib(v: f64) -> String {
    format!("{v:.1} GiB")
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn layout_name(gpu: &Gpu, tp: u32, pp: u32) -> String {
    format!("{} x {} (TP {tp}, PP {pp})", tp * pp, gpu.name)
}

fn validate(req: &SizingRequest) -> Result<(), SizingError> {
    let bad = |field: &'static str, value: String, reason: &str| {
        Err(SizingError::InvalidValue {
            field,
            value,
            reason: reason.to_string(),
        })
    };
    let u = req.gpu_memory_utilization;
    if !u.is_finite() || u <= 0.0 || u > 1.0 {
        return bad(
            "gpuMemoryUtilization",
            u.to_string(),
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

fn resolve_model(req: &SizingRequest, reasons: &mut Vec<String>) -> Result<Model, SizingError> {
    let explicit = req
        .parameter_count
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .map(parse_parameter_count)
        .transpose()?;
    if let Some(found) = lookup(&req.model_id) {
        let s = found.spec;
        if let Some(note) = found.note {
            reasons.push(format!("{note}."));
        }
        let (total_b, active_b) = match explicit {
            Some(c) => {
                reasons.push(format!(
                    "Parameter count {} B as given (the catalog says {} B).",
                    c.total_b, s.params_b
                ));
                (c.total_b, c.active_b)
            }
            None => (s.params_b, s.active_params_b),
        };
        let attention = if s.is_mla() {
            format!(
                "MLA with {} latent KV elements per token and layer",
                s.mla_kv_dim
            )
        } else {
            format!(
                "{} attention heads, {} KV heads of dimension {}",
                s.attention_heads, s.kv_heads, s.head_dim
            )
        };
        reasons.push(format!(
            "Catalog entry {}: {} B parameters ({} B active), {} layers, {attention}, {}-token context.",
            s.id,
            s.params_b,
            s.active_params_b,
            s.layers,
            thousands(s.context)
        ));
        return Ok(Model {
            id: req.model_id.clone(),
            spec: Some(s),
            name: s.id.to_string(),
            arch: Arch::from_spec(s),
            total_b,
            active_b,
            unquantized_b: s.unquantized_params_b,
            context: Some(s.context),
        });
    }
    let (count, source) = match explicit {
        Some(c) => (c, "as given"),
        None => match count_from_id(&req.model_id) {
            Some(c) => (c, "read from the id"),
            None => {
                return Err(SizingError::MissingParameterCount {
                    model: req.model_id.clone(),
                });
            }
        },
    };
    let arch = Arch::estimate(count.total_b);
    reasons.push(format!(
        "{} is not in the model catalog: {} B parameters ({source}); architecture estimated conservatively as {} layers, {} attention heads, 8 KV heads of dimension {}, hidden size {} (models with full multi-head attention need more KV cache).",
        req.model_id, count.total_b, arch.layers, arch.attention_heads, arch.head_dim, arch.hidden_size
    ));
    Ok(Model {
        id: req.model_id.clone(),
        spec: None,
        name: req.model_id.clone(),
        arch,
        total_b: count.total_b,
        active_b: count.active_b,
        unquantized_b: 0.0,
        context: None,
    })
}

fn gpus_with(pred: impl Fn(&Gpu) -> bool) -> String {
    let names: Vec<&str> = gpus().iter().filter(|g| pred(g)).map(|g| g.name).collect();
    names.join(", ")
}

/// Weight precision and where it came from.
fn resolve_precision(
    req: &SizingRequest,
    m: &Model,
    gpu: &Gpu,
    reasons: &mut Vec<String>,
) -> Result<(Precision, bool), SizingError> {
    let marker = quantization_marker(&req.model_id);
    let native = m.spec.map(ModelSpec::native_precision);
    let (mut p, why, prequantized) = if let Some(p) = req.quantization {
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
    if p == Precision::Bf16 && !gpu.bf16 {
        reasons.push(format!(
            "{} has no bfloat16: weights and activations run in float16.",
            gpu.name
        ));
        p = Precision::Fp16;
    }
    if p == Precision::Fp8 && !gpu.fp8 {
        return Err(SizingError::UnsupportedPrecision {
            precision: p,
            gpu: gpu.name.to_string(),
            alternatives: format!(
                "use a GPU with fp8 ({}) or other weights (bf16, int8, int4)",
                gpus_with(|g| g.fp8)
            ),
        });
    }
    if p == Precision::Fp4 && !gpu.fp4 {
        let mxfp4_native = native == Some(Precision::Fp4) && gpu.vendor == "nvidia" && gpu.bf16;
        if !mxfp4_native {
            return Err(SizingError::UnsupportedPrecision {
                precision: p,
                gpu: gpu.name.to_string(),
                alternatives: format!(
                    "use a GPU with fp4 ({}) or other weights (fp8, int4)",
                    gpus_with(|g| g.fp4)
                ),
            });
        }
        reasons.push(format!(
            "{} has no native fp4: vLLM runs the MXFP4 experts with weight-only kernels.",
            gpu.name
        ));
    }
    reasons.push(format!("Weights in {p} ({why})."));
    Ok((p, prequantized))
}

/// Sizes one replica.
pub fn size(req: &SizingRequest) -> Result<Plan, SizingError> {
    validate(req)?;
    let gpu = gpu(&req.gpu_type)?;
    let mut reasons = Vec::new();
    let mut warnings = Vec::new();
    let m = resolve_model(req, &mut reasons)?;
    let (precision, prequantized) = resolve_precision(req, &m, gpu, &mut reasons)?;

    let quantization = match &req.quantization_method {
        Some(method) if !method.trim().is_empty() => Some(method.trim().to_string()),
        _ if !precision.is_quantized() || prequantized => None,
        _ => match precision {
            Precision::Fp8 => Some("fp8".to_string()),
            Precision::Int4 => Some("bitsandbytes".to_string()),
            _ => {
                warnings.push(format!(
                    "vLLM cannot quantize to {precision} while loading: point the model at a checkpoint already quantized to {precision}."
                ));
                None
            }
        },
    };
    if let Some(q) = &quantization
        && req.quantization_method.is_none()
    {
        reasons.push(format!(
            "vLLM quantizes the checkpoint to {precision} while loading (--quantization {q})."
        ));
    }
    let dtype = match precision {
        Precision::Fp32 => "float32",
        Precision::Fp16 => "float16",
        Precision::Bf16 => "bfloat16",
        _ if gpu.bf16 => "bfloat16",
        _ => "float16",
    }
    .to_string();
    let kv_bytes = if precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    };

    let weights = weights_gib(m.total_b, m.unquantized_b, precision);
    let sizer = Sizer {
        model: &m,
        weights_gib: weights,
        kv_bytes,
        util: req.gpu_memory_utilization,
    };
    let kept = if precision.is_quantized() && m.unquantized_b > 0.0 {
        format!(" ({} B of them kept in bf16)", m.unquantized_b)
    } else {
        String::new()
    };
    reasons.push(format!(
        "Weights: {} B parameters x {} B{kept} = {}.",
        m.total_b,
        precision.bytes_per_param(),
        gib(weights)
    ));

    // Context target.
    if let (Some(l), Some(c)) = (req.max_model_len, m.context)
        && l > c
    {
        return Err(SizingError::ContextLongerThanModel {
            requested: l,
            context: c,
            model: m.name.clone(),
        });
    }
    let explicit_ctx = req.max_model_len.is_some();
    let target = req.max_model_len.unwrap_or(match m.context {
        Some(c) => c.min(DEFAULT_CONTEXT),
        None => UNKNOWN_MODEL_CONTEXT,
    });
    let concurrency = u64::from(req.concurrency.unwrap_or(1));
    let tokens = target.saturating_mul(concurrency);
    let per_token = m.arch.kv_bytes_per_token(kv_bytes, 1, 1);
    let kv_formula = if m.arch.mla_kv_dim > 0 {
        format!(
            "{} layers x {} latent elements x {kv_bytes} B",
            m.arch.layers, m.arch.mla_kv_dim
        )
    } else {
        format!(
            "2 x {} layers x {} KV heads x {} x {kv_bytes} B",
            m.arch.layers, m.arch.kv_heads, m.arch.head_dim
        )
    };
    reasons.push(format!(
        "KV cache: {} B per token ({kv_formula}); {} for {} tokens ({concurrency} x {}).",
        thousands(per_token as u64),
        gib(per_token * tokens as f64 / GIB),
        thousands(tokens),
        thousands(target)
    ));
    let overhead = m.arch.overhead_gib();
    reasons.push(format!(
        "Overhead: {} per GPU (1.5 GiB CUDA context, workspaces and graphs + {} activations for an 8,192-token chunk at hidden size {}).",
        gib(overhead),
        gib(overhead - 1.5),
        m.arch.hidden_size
    ));

    // MIG.
    let requested_multi = req.gpu_count.unwrap_or(1) > 1
        || req.tensor_parallel.unwrap_or(1) > 1
        || req.pipeline_parallel.unwrap_or(1) > 1;
    let mut slices: Vec<&MigProfile> = gpu.mig_profiles.iter().collect();
    slices.sort_by_key(|p| (p.memory_gb, p.compute_slices));
    let slice_fit = |p: &MigProfile, tokens: u64| {
        sizer.evaluate(p.usable_gib(), f64::from(p.memory_gb), 1, 1, tokens)
    };
    let mut chosen_slice: Option<&MigProfile> = None;
    match &req.mig {
        MigChoice::Profile(name) => {
            if !gpu.has_mig() {
                return Err(SizingError::MigUnsupported {
                    gpu: gpu.name.to_string(),
                    mig_gpus: gpus_with(Gpu::has_mig),
                });
            }
            let Some(p) = gpu.mig_profile(name) else {
                return Err(SizingError::UnknownMigProfile {
                    gpu: gpu.name.to_string(),
                    profile: name.clone(),
                    profiles: gpu.mig_profile_list(),
                });
            };
            if requested_multi {
                let requested = req.gpu_count.unwrap_or(
                    req.tensor_parallel
                        .unwrap_or(1)
                        .saturating_mul(req.pipeline_parallel.unwrap_or(1)),
                );
                return Err(SizingError::MigNeedsOneGpu { requested });
            }
            let need_tokens = if explicit_ctx {
                tokens
            } else {
                MIN_DEFAULT_CONTEXT.min(target) * concurrency
            };
            let fit = slice_fit(p, need_tokens);
            if !fit.fits() {
                let smallest = slices.iter().find(|q| slice_fit(q, need_tokens).fits());
                let suggestion = match smallest {
                    Some(q) => format!("the smallest profile that holds it is {}", q.name),
                    None => format!(
                        "no profile of {} holds it; use whole GPUs (mig none)",
                        gpu.name
                    ),
                };
                return Err(SizingError::MigProfileTooSmall {
                    gpu: gpu.name.to_string(),
                    profile: p.name.to_string(),
                    model: m.name.clone(),
                    usable_gib: fit.usable,
                    need_gib: if fit.recipe_ok {
                        fit.need
                    } else {
                        fit.need
                            .max(RECIPE_HEADROOM * sizer.weights_gb() * 1e9 / GIB)
                    },
                    suggestion,
                });
            }
            reasons.push(format!("MIG profile {} as requested.", p.name));
            chosen_slice = Some(p);
        }
        MigChoice::Auto if gpu.has_mig() => {
            if m.total_b > MIG_MAX_PARAMS_B {
                reasons.push(format!(
                    "No MIG: {} B parameters is above the 8B class that MIG suits (NIM guidance).",
                    m.total_b
                ));
            } else if requested_multi {
                reasons.push("No MIG: more than one GPU was requested.".to_string());
            } else {
                let useful = tokens.saturating_mul(MIG_USEFUL_SEQUENCES);
                // A slice as big as the GPU gains nothing over the GPU.
                let mut partial = slices
                    .iter()
                    .filter(|q| f64::from(q.memory_gb) < gpu.nominal_gb);
                match partial.find(|q| slice_fit(q, useful).fits()) {
                    Some(q) => {
                        reasons.push(format!(
                            "MIG {}: the smallest slice of {} that holds the weights and KV cache for {MIG_USEFUL_SEQUENCES} sequences of {} tokens ({:.1} of {:.1} GiB).",
                            q.name,
                            gpu.name,
                            thousands(target),
                            slice_fit(q, useful).need,
                            slice_fit(q, useful).usable
                        ));
                        chosen_slice = Some(*q);
                    }
                    None => reasons.push(format!(
                        "No MIG: no partial slice of {} holds the weights and KV cache for {MIG_USEFUL_SEQUENCES} sequences of {} tokens.",
                        gpu.name,
                        thousands(target)
                    )),
                }
            }
        }
        MigChoice::None if gpu.has_mig() => reasons.push("No MIG (mig none).".to_string()),
        _ => {}
    }

    let heads = m.arch.attention_heads;
    let kv = m.arch.kv_heads;
    let tps = valid_tps(heads, kv, gpu.per_node);
    let tp_list = join_counts(&tps);

    let (fit, device_gib, device_gb) = if let Some(p) = chosen_slice {
        (slice_fit(p, tokens), p.usable_gib(), f64::from(p.memory_gb))
    } else {
        let check_tp = |t: u32| -> Result<(), SizingError> {
            if valid_tp(heads, kv, t) {
                Ok(())
            } else {
                Err(SizingError::InvalidTensorParallel {
                    tp: t,
                    model: m.name.clone(),
                    heads,
                    kv_heads: kv,
                    gpu: gpu.name.to_string(),
                    per_node: gpu.per_node,
                    valid: tp_list.clone(),
                })
            }
        };
        let check_pp = |p: u32| -> Result<(), SizingError> {
            if p <= m.arch.layers {
                Ok(())
            } else {
                Err(SizingError::InvalidPipelineParallel {
                    pp: p,
                    model: m.name.clone(),
                    layers: m.arch.layers,
                })
            }
        };
        if let Some(t) = req.tensor_parallel {
            check_tp(t)?;
        }
        if let Some(p) = req.pipeline_parallel {
            check_pp(p)?;
        }
        let fixed = match (req.gpu_count, req.tensor_parallel, req.pipeline_parallel) {
            (None, _, None) | (None, None, _) => None,
            (count, Some(t), Some(p)) => {
                check_tp(t)?;
                check_pp(p)?;
                if let Some(c) = count
                    && u64::from(c) != u64::from(t) * u64::from(p)
                {
                    return Err(SizingError::ParallelismMismatch {
                        gpu_count: c,
                        tp: t,
                        pp: p,
                        product: u64::from(t) * u64::from(p),
                    });
                }
                Some((t, p))
            }
            (Some(c), Some(t), None) => {
                check_tp(t)?;
                if c % t != 0 {
                    return Err(SizingError::InvalidValue {
                        field: "gpu count",
                        value: c.to_string(),
                        reason: format!("it must be a multiple of the tensor parallel size {t}"),
                    });
                }
                check_pp(c / t)?;
                Some((t, c / t))
            }
            (Some(c), None, Some(p)) => {
                check_pp(p)?;
                if c % p != 0 {
                    return Err(SizingError::InvalidValue {
                        field: "gpu count",
                        value: c.to_string(),
                        reason: format!("it must be a multiple of the pipeline parallel size {p}"),
                    });
                }
                check_tp(c / p)?;
                Some((c / p, p))
            }
            (Some(c), None, None) => Some(layout_for_count(&m, gpu, c, &tps)?),
        };
        match fixed {
            Some((t, p)) => {
                let fit = sizer.evaluate(gpu.memory_gib, gpu.nominal_gb, t, p, tokens);
                reasons.push(format!("{} as requested.", layout_name(gpu, t, p)));
                (fit, gpu.memory_gib, gpu.nominal_gb)
            }
            None => {
                let cands = candidates(&m, gpu, req.tensor_parallel, req.pipeline_parallel);
                let (found, miss) = sizer.search(gpu, &cands, tokens);
                let (found, miss) = match found {
                    Some(f) => (Some(f), miss),
                    None if !explicit_ctx && target > MIN_DEFAULT_CONTEXT => {
                        let (f, miss) =
                            sizer.search(gpu, &cands, MIN_DEFAULT_CONTEXT * concurrency);
                        (
                            f.map(|f| {
                                sizer.evaluate(gpu.memory_gib, gpu.nominal_gb, f.tp, f.pp, tokens)
                            }),
                            miss,
                        )
                    }
                    None => (None, miss),
                };
                let Some(fit) = found else {
                    return Err(no_fit(
                        &sizer,
                        &m,
                        gpu,
                        precision,
                        &cands,
                        tokens,
                        target,
                        explicit_ctx,
                        concurrency,
                    ));
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
                reasons.push(format!(
                    "{}: the smallest layout that holds it{why_not}. Valid TP sizes for {heads} attention heads and {kv} KV heads on {} GPUs per node: {tp_list}.",
                    layout_name(gpu, fit.tp, fit.pp),
                    gpu.per_node
                ));
                (fit, gpu.memory_gib, gpu.nominal_gb)
            }
        }
    };

    // Final context and what does not fit.
    let mut fit = fit;
    let mut max_model_len = target;
    if !fit.fits() {
        let fits_ctx = (fit.capacity_tokens / concurrency) / CONTEXT_STEP * CONTEXT_STEP;
        let fits_ctx = fits_ctx.min(target);
        if !fit.holds_weights() || fits_ctx == 0 {
            let more = candidates(&m, gpu, None, None);
            let hint = match sizer.search(gpu, &more, tokens).0 {
                Some(f) => format!("; {} would hold it", layout_name(gpu, f.tp, f.pp)),
                None => String::new(),
            };
            warnings.push(format!(
                "{} cannot hold {}: each GPU needs {} ({} weights + {} overhead + {} KV cache) of {} usable; vLLM will fail with out-of-memory{hint}.",
                if chosen_slice.is_some() { format!("MIG {}", chosen_slice.map_or("", |p| p.name)) } else { layout_name(gpu, fit.tp, fit.pp) },
                m.name,
                gib(fit.need),
                gib(fit.weights_per_gpu),
                gib(fit.overhead),
                gib(fit.kv_per_gpu),
                gib(fit.usable)
            ));
        } else if fit.need > fit.usable {
            if explicit_ctx {
                let more = candidates(&m, gpu, None, None);
                let suggestion = match sizer.search(gpu, &more, tokens).0 {
                    Some(f) => format!(
                        "use maxModelLen {fits_ctx} or {}",
                        layout_name(gpu, f.tp, f.pp)
                    ),
                    None => format!("use maxModelLen {fits_ctx} or a GPU with more memory"),
                };
                return Err(SizingError::ContextDoesNotFit {
                    requested: target,
                    fits: fits_ctx,
                    model: m.name.clone(),
                    layout: layout_name(gpu, fit.tp, fit.pp),
                    suggestion,
                });
            }
            max_model_len = fits_ctx;
            fit = sizer.evaluate(
                device_gib,
                device_gb,
                fit.tp,
                fit.pp,
                fits_ctx * concurrency,
            );
            reasons.push(format!(
                "maxModelLen capped at {} tokens: the KV cache left after the weights holds {} tokens.",
                thousands(fits_ctx),
                thousands(fit.capacity_tokens)
            ));
        }
        if !fit.recipe_ok && fit.holds_weights() {
            warnings.push(format!(
                "{:.0} GB of GPU memory is below the vLLM recipes' 1.2 x {:.1} GB of weights: expect a small KV cache and little concurrency.",
                fit.raw_gb,
                sizer.weights_gb()
            ));
        }
    }
    if max_model_len == target {
        let why = match (explicit_ctx, m.context) {
            (true, _) => "as requested".to_string(),
            (false, Some(c)) if c > DEFAULT_CONTEXT => format!(
                "the model advertises {} tokens; the engine defaults to {} (set maxModelLen for more)",
                thousands(c),
                thousands(DEFAULT_CONTEXT)
            ),
            (false, Some(_)) => "the model's full context".to_string(),
            (false, None) => format!(
                "the catalog does not know this model's context, so the engine assumes {} (set maxModelLen for more)",
                thousands(UNKNOWN_MODEL_CONTEXT)
            ),
        };
        reasons.push(format!(
            "maxModelLen {}: {why}; the KV cache has room for {} tokens.",
            thousands(max_model_len),
            thousands(fit.capacity_tokens)
        ));
    }

    let devices = fit.devices();
    let nodes = devices.div_ceil(gpu.per_node).max(1);
    if nodes > 1 {
        warnings.push(format!(
            "One replica spans {nodes} nodes ({} per node, TP {} x PP {}): the runtime must support multi-node serving; a single pod cannot span nodes.",
            gpu.per_node, fit.tp, fit.pp
        ));
    }
    reasons.push(format!(
        "Per GPU: {} weights + {} KV cache + {} overhead = {} of {} usable ({} x {}).",
        gib(fit.weights_per_gpu),
        gib(fit.kv_per_gpu),
        gib(fit.overhead),
        gib(fit.need),
        gib(fit.usable),
        req.gpu_memory_utilization,
        gib(device_gib)
    ));

    // Host side: online quantization reads the checkpoint at its own width.
    let load_gib = if quantization.is_some() && req.quantization_method.is_none() {
        weights_gib(m.total_b, 0.0, Precision::Bf16)
    } else {
        weights
    };
    let h = host(devices, fit.tp * fit.pp, load_gib);
    reasons.push(format!(
        "Host: {} CPU and {} memory per replica (at least 2 CPU and 8 GiB per GPU; {} to load the weights plus 4 GiB){}; startup probe budget {} s (300 s + 20 s per GiB of weights, 600 s to 3 h).",
        h.cpu,
        h.memory,
        gib(load_gib),
        if h.shm_size.is_some() { format!("; /dev/shm {} for {} ranks", super::host::SHM_SIZE, devices) } else { String::new() },
        h.startup_probe_seconds
    ));

    let (mig_profile, resource) = match chosen_slice {
        Some(p) => (Some(p.name.to_string()), p.resource_name()),
        None => (None, gpu.resource_name.to_string()),
    };
    let kv_cache_gib = fit.kv_per_gpu * f64::from(devices);
    Ok(Plan {
        model_id: m.id.clone(),
        catalog_model: m.spec.map(|s| s.id.to_string()),
        gpu,
        gpu_count: devices,
        tensor_parallel_size: fit.tp,
        pipeline_parallel_size: fit.pp,
        nodes,
        mig_profile,
        gpu_resource_name: resource,
        dtype,
        weight_precision: precision,
        quantization,
        max_model_len,
        cpu: h.cpu,
        memory: h.memory,
        shm_size: h.shm_size,
        startup_probe_seconds: h.startup_probe_seconds,
        gpu_memory_utilization: req.gpu_memory_utilization,
        parameters_b: m.total_b,
        active_parameters_b: m.active_b,
        attention_heads: heads,
        kv_heads: kv,
        estimate: Estimate {
            weights_gib: weights,
            kv_cache_gib,
            overhead_gib: fit.overhead,
            per_gpu_gib: fit.need,
            gpu_capacity_gib: fit.usable,
            kv_bytes_per_token: per_token,
            kv_capacity_tokens: fit.capacity_tokens,
        },
        reasons,
        warnings,
    })
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
        model: m.name.clone(),
        heads: m.arch.attention_heads,
        kv_heads: m.arch.kv_heads,
        gpu: gpu.name.to_string(),
        per_node,
        valid: format!(
            "{} on one node, or a multiple of {per_node} across nodes",
            join_counts(tps)
        ),
    })
}

/// The error when no layout holds the model: says what would.
#[allow(clippy::too_many_arguments)]
fn no_fit(
    sizer: &Sizer,
    m: &Model,
    gpu: &Gpu,
    precision: Precision,
    cands: &[(u32, u32)],
    tokens: u64,
    target: u64,
    explicit_ctx: bool,
    concurrency: u64,
) -> SizingError {
    // The context is the problem when the largest layout holds the weights.
    let best = cands
        .iter()
        .map(|&(t, p)| sizer.evaluate(gpu.memory_gib, gpu.nominal_gb, t, p, tokens))
        .filter(|f| f.recipe_ok && f.holds_weights())
        .max_by_key(|f| f.capacity_tokens);
    if explicit_ctx && let Some(f) = best {
        let fits = (f.capacity_tokens / concurrency) / CONTEXT_STEP * CONTEXT_STEP;
        if fits > 0 {
            return SizingError::ContextDoesNotFit {
                requested: target,
                fits: fits.min(target),
                model: m.name.clone(),
                layout: layout_name(gpu, f.tp, f.pp),
                suggestion: "use a shorter maxModelLen or a GPU with more memory".to_string(),
            };
        }
    }
    let mut ideas = Vec::new();
    for p in [Precision::Fp8, Precision::Int4] {
        if p.bytes_per_param() >= precision.bytes_per_param() || (p == Precision::Fp8 && !gpu.fp8) {
            continue;
        }
        let s = Sizer {
            model: m,
            weights_gib: weights_gib(m.total_b, m.unquantized_b, p),
            kv_bytes: sizer.kv_bytes,
            util: sizer.util,
        };
        if let (Some(f), _) = s.search(gpu, &candidates(m, gpu, None, None), tokens) {
            ideas.push(format!(
                "{p} weights would fit on {}",
                layout_name(gpu, f.tp, f.pp)
            ));
            break;
        }
    }
    // Among bigger GPUs: same vendor first, then the fewest nodes, then the least memory.
    let bigger = gpus()
        .iter()
        .filter(|g| g.memory_gib > gpu.memory_gib && (precision != Precision::Fp8 || g.fp8))
        .filter_map(|g| {
            sizer
                .search(g, &candidates(m, g, None, None), tokens)
                .0
                .map(|f| (g, f))
        })
        .min_by(|(a, fa), (b, fb)| {
            let nodes = |g: &Gpu, f: &Fit| f.devices().div_ceil(g.per_node);
            (a.vendor != gpu.vendor)
                .cmp(&(b.vendor != gpu.vendor))
                .then(nodes(a, fa).cmp(&nodes(b, fb)))
                .then(a.memory_gib.total_cmp(&b.memory_gib))
        });
    if let Some((g, f)) = bigger {
        ideas.push(format!(
            "a bigger GPU would: {}",
            layout_name(g, f.tp, f.pp)
        ));
    }
    if explicit_ctx {
        ideas.push("a shorter maxModelLen needs less KV cache".to_string());
    }
    let suggestion = if ideas.is_empty() {
        format!(
            "no layout of up to {MAX_NODES} nodes holds it; use lower-precision weights or a GPU with more memory"
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
        precision,
        weights_gib: sizer.weights_gib,
        suggestion,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(model: &str, gpu: &str) -> SizingRequest {
        SizingRequest {
            model_id: model.into(),
            gpu_type: gpu.into(),
            mig: MigChoice::None,
            ..SizingRequest::default()
        }
    }

    fn err(r: SizingRequest) -> String {
        size(&r).unwrap_err().to_string()
    }

    #[test]
    fn valid_tp_follows_vllm() {
        assert_eq!(valid_tps(28, 4, 8), vec![1, 2, 4]);
        assert_eq!(valid_tps(12, 2, 8), vec![1, 2, 4]);
        assert_eq!(valid_tps(40, 10, 8), vec![1, 2]);
        assert_eq!(valid_tps(71, 1, 8), vec![1]);
        assert_eq!(valid_tps(64, 8, 8), vec![1, 2, 4, 8]);
    }

    #[test]
    fn dot_inference_host_contract() {
        let p = size(&SizingRequest {
            gpu_count: Some(1),
            ..req("Qwen/Qwen2.5-1.5B-Instruct", "L4")
        })
        .unwrap();
        assert_eq!(
            (p.cpu.as_str(), p.memory.as_str(), p.shm_size.clone()),
            ("2", "8Gi", None)
        );
        let p = size(&SizingRequest {
            gpu_count: Some(2),
            ..req("Qwen/Qwen2.5-1.5B-Instruct", "L4")
        })
        .unwrap();
        assert_eq!((p.cpu.as_str(), p.memory.as_str()), ("4", "16Gi"));
        assert_eq!(p.shm_size.as_deref(), Some("8Gi"));
        assert_eq!(p.tensor_parallel_size, 2);
    }

    #[test]
    fn decisions() {
        // T4 has no bf16.
        let p = size(&req("Qwen/Qwen2.5-1.5B-Instruct", "T4")).unwrap();
        assert_eq!(
            (p.dtype.as_str(), p.weight_precision),
            ("float16", Precision::Fp16)
        );
        // Online fp8 on an fp8 GPU.
        let p = size(&SizingRequest {
            quantization: Some(Precision::Fp8),
            ..req("meta-llama/Llama-3.1-70B-Instruct", "H100")
        })
        .unwrap();
        assert_eq!(p.quantization.as_deref(), Some("fp8"));
        assert_eq!(p.gpu_count, 2);
        // Pre-quantized checkpoints need no --quantization.
        let p = size(&req("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", "H100")).unwrap();
        assert_eq!(
            (p.weight_precision, p.quantization.clone()),
            (Precision::Fp8, None)
        );
        assert!(p.reasons[0].contains("meta-llama/Llama-3.1-70B-Instruct"));
        // Advertised 10M context is never the default.
        let p = size(&req("meta-llama/Llama-4-Scout-17B-16E-Instruct", "H100")).unwrap();
        assert_eq!(p.max_model_len, DEFAULT_CONTEXT);
        // Llama-3.1-405B bf16 spans nodes.
        let p = size(&req("meta-llama/Llama-3.1-405B-Instruct", "H100")).unwrap();
        assert_eq!(
            (p.tensor_parallel_size, p.nodes),
            (8, p.pipeline_parallel_size)
        );
        assert!(p.nodes >= 2 && !p.warnings.is_empty());
        // MIG auto for a small model on an H100.
        let p = size(&SizingRequest {
            mig: MigChoice::Auto,
            ..req("Qwen/Qwen2.5-1.5B-Instruct", "H100")
        })
        .unwrap();
        assert_eq!(p.gpu_resource_name, "nvidia.com/mig-1g.20gb");
        // Explicit too-few GPUs: a warning, not an error.
        let p = size(&SizingRequest {
            gpu_count: Some(1),
            ..req("meta-llama/Llama-3.1-70B-Instruct", "L4")
        })
        .unwrap();
        assert!(
            p.warnings.iter().any(|w| w.contains("out-of-memory")),
            "{:?}",
            p.warnings
        );
        // An explicit GPU count caps the default context to what fits.
        let p = size(&SizingRequest {
            gpu_count: Some(1),
            ..req("meta-llama/Llama-3.1-8B-Instruct", "A10G")
        })
        .unwrap();
        assert!(
            p.max_model_len < DEFAULT_CONTEXT && p.max_model_len > 4096,
            "{}",
            p.max_model_len
        );
        assert!(p.warnings.is_empty());
    }

    #[test]
    fn error_messages() {
        let h100_fp8 = "L4, L40S, H100-80GB, H100-NVL, H20, H200, B200, GB200, B300, GH200, RTX-PRO-6000, MI300X, MI325X";
        let cases: Vec<(SizingRequest, String)> = vec![
            (
                SizingRequest { quantization: Some(Precision::Fp8), ..req("meta-llama/Llama-3.1-8B-Instruct", "A100-80GB") },
                format!("fp8 weights need a GPU with fp8 support, which A100-80GB lacks: use a GPU with fp8 ({h100_fp8}) or other weights (bf16, int8, int4)"),
            ),
            (
                SizingRequest { mig: MigChoice::Profile("1g.10gb".into()), ..req("Qwen/Qwen2.5-1.5B-Instruct", "L4") },
                "L4 has no MIG: use mig none, or a GPU with MIG (A30, A100-40GB, A100-80GB, H100-80GB, H100-NVL, H20, H200, B200, GB200, B300, GH200, RTX-PRO-6000)".into(),
            ),
            (
                SizingRequest { mig: MigChoice::Profile("2g.11gb".into()), ..req("Qwen/Qwen2.5-1.5B-Instruct", "A100-80GB") },
                "A100-80GB has no MIG profile `2g.11gb`: its profiles are 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb".into(),
            ),
            (
                SizingRequest { mig: MigChoice::Profile("1g.10gb".into()), ..req("meta-llama/Llama-3.1-8B-Instruct", "H100") },
                "MIG profile 1g.10gb of H100-80GB (8.1 GiB usable) cannot hold meta-llama/Llama-3.1-8B-Instruct, which needs 17.9 GiB: the smallest profile that holds it is 3g.40gb".into(),
            ),
            (
                SizingRequest { gpu_count: Some(3), ..req("Qwen/Qwen2.5-7B-Instruct", "L4") },
                "3 GPUs is not a valid tensor-parallel layout for Qwen/Qwen2.5-7B-Instruct (28 attention heads, 4 KV heads, 8 L4 per node): use 1, 2, 4 on one node, or a multiple of 8 across nodes".into(),
            ),
            (
                SizingRequest { tensor_parallel: Some(8), ..req("microsoft/Phi-3-medium-4k-instruct", "H100") },
                "tensor parallel size 8 is not valid for microsoft/Phi-3-medium-4k-instruct (40 attention heads, 10 KV heads, 8 H100-80GB per node): use 1, 2".into(),
            ),
            (
                SizingRequest { max_model_len: Some(1_000_000_000_000_000), ..req("Qwen/Qwen2.5-7B-Instruct", "L4") },
                "invalid maxModelLen `1000000000000000`: it must be between 1 and 100000000 tokens".into(),
            ),
            (
                SizingRequest { max_model_len: Some(65_536), ..req("Qwen/Qwen2.5-7B-Instruct", "L4") },
                "maxModelLen 65536 exceeds the 32768-token context of Qwen/Qwen2.5-7B-Instruct: use at most 32768".into(),
            ),
            (
                SizingRequest { gpu_count: Some(0), ..req("Qwen/Qwen2.5-7B-Instruct", "L4") },
                "invalid gpu count `0`: it must be between 1 and 4096".into(),
            ),
            (
                req("someorg/mystery-model", "L4"),
                "cannot tell how many parameters `someorg/mystery-model` has: it is not in the model catalog and its id carries no size; set parameterCount (for example 8B, 70B or 8x7B)".into(),
            ),
            (
                SizingRequest { gpu_memory_utilization: 1.5, ..req("Qwen/Qwen2.5-7B-Instruct", "L4") },
                "invalid gpuMemoryUtilization `1.5`: it must be above 0 and at most 1 (0.9 is usual)".into(),
            ),
            (
                SizingRequest { gpu_count: Some(2), tensor_parallel: Some(2), pipeline_parallel: Some(2), ..req("Qwen/Qwen2.5-7B-Instruct", "L4") },
                "2 GPUs do not match tensor parallel 2 x pipeline parallel 2: set gpu count to 4 or drop it".into(),
            ),
            (
                SizingRequest { max_model_len: Some(131_072), gpu_count: Some(1), ..req("meta-llama/Llama-3.1-8B-Instruct", "L4") },
                "maxModelLen 131072 does not fit next to meta-llama/Llama-3.1-8B-Instruct on 1 x L4 (TP 1, PP 1): at most 24832 tokens fit; use maxModelLen 24832 or 2 x L4 (TP 2, PP 1)".into(),
            ),
            (
                req("deepseek-ai/DeepSeek-V3", "A100-80GB"),
                format!("fp8 weights need a GPU with fp8 support, which A100-80GB lacks: use a GPU with fp8 ({h100_fp8}) or other weights (bf16, int8, int4)"),
            ),
            (
                SizingRequest { quantization: Some(Precision::Fp32), ..req("meta-llama/Llama-3.1-405B-Instruct", "T4") },
                "meta-llama/Llama-3.1-405B-Instruct with fp32 weights (1511.9 GiB) does not fit on T4: no layout of up to 16 nodes holds it; int4 weights would fit on 28 x T4 (TP 4, PP 7); a bigger GPU would: 8 x B300 (TP 8, PP 1)".into(),
            ),
        ];
        for (r, want) in cases {
            assert_eq!(err(r.clone()), want, "{r:?}");
        }
    }
}
