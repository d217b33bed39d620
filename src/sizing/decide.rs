//! The decisions in order, from a request to a [`Plan`].
//!
//! [`size`] reads as the sequence the engine follows: which model, which
//! precision, which context to aim for, MIG or not, which layout, which
//! context it settles on, and what the host needs. Each step lives in its
//! own module and returns the sentences that explain it, so the plan carries
//! its reasons in the order the decisions were made.
//!
//! Sizing rule: a layout holds the model when, on every GPU,
//! `weights per GPU + activation peak + non-torch + KV(maxModelLen x concurrency) <= utilization x memory`
//! (vLLM's own start-up check, with the memory as vLLM sees it) and the
//! objective's headroom holds (`balanced` without a stated context or
//! concurrency, and `throughput`: the recipes' 1.2 x weights and a sixth of
//! the memory for the KV cache). The engine takes the smallest
//! layout that holds the model at the target context: within a node 1, 2, 4
//! or 8 GPUs, tensor parallelism before pipeline stages at each count, then
//! whole nodes of TP = GPUs per node.

use super::candidates::valid_tps;
use super::context::{cap_context, context_target, kv_reason};
use super::error::SizingError;
use super::fit::{Device, Fit, Sizer};
use super::gpus::{Gpu, MigProfile, family_name_warning, gpu};
use super::host::{host, host_reason};
use super::layout::{choose_layout, fixed_layout, requested_layout};
use super::memory::{
    ACTIVATION_FLOOR_GIB, NON_TORCH_MULTI_GIB, NON_TORCH_SINGLE_GIB, VllmGeneration, release,
};
use super::mig::choose_mig;
use super::plan::{Estimate, Plan, SizingRequest};
use super::precision::{KvCacheDtype, MigStrategy};
use super::release_support::{architecture_check, gpu_check};
use super::resolved_model::{
    checkpoint_bytes_warning, config_dtype_warning, parameter_count_warning, resolve_model,
};
use super::text::{gib, hundredths, thousands};
use super::validate::validate;
use super::weights::{
    choose_precision, dtype_for, kv_element_bytes, load_gib, quantization_method,
    quantization_reason, weights_formula, weights_reason,
};

#[cfg(test)]
use super::context::DEFAULT_CONTEXT;
#[cfg(test)]
use super::precision::{MigChoice, Objective, WeightPrecision};

/// The KV cache's dtype: as asked, and fp8 for a checkpoint published with
/// FP8 KV-cache scales (AMD's `...-FP8-KV`), whose model cards serve it with
/// `--kv-cache-dtype fp8`.
fn kv_cache_dtype_for(req: &SizingRequest) -> KvCacheDtype {
    let fp8_kv_checkpoint = req
        .model_id
        .trim()
        .to_ascii_lowercase()
        .ends_with("-fp8-kv");
    if req.kv_cache_dtype == KvCacheDtype::Auto && fp8_kv_checkpoint {
        KvCacheDtype::Fp8
    } else {
        req.kv_cache_dtype
    }
}

/// Sizes one replica.
pub(crate) fn size(req: &SizingRequest) -> Result<Plan, SizingError> {
    validate(req)?;
    let gpu = gpu(&req.gpu_type)?;
    let mut reasons = Vec::new();
    let mut warnings: Vec<String> = family_name_warning(&req.gpu_type, gpu)
        .into_iter()
        .collect();

    warnings.extend(gpu_check(gpu, req)?);
    warnings.extend(architecture_check(req)?);
    let (m, about_model) = resolve_model(req)?;
    reasons.extend(about_model);
    warnings.extend(checkpoint_bytes_warning(req, &m));
    warnings.extend(parameter_count_warning(req, &m));
    warnings.extend(config_dtype_warning(req));

    let vllm = req.vllm_version.as_deref().and_then(release);
    let (wp, about_precision, slower) = choose_precision(req.quantization, &m, gpu, vllm)?;
    reasons.extend(about_precision);
    warnings.extend(slower);
    let precision = wp.precision;
    let quantization = quantization_method(req.quantization_method.as_deref(), wp);
    warnings.extend(quantization.warning.clone());
    reasons.extend(quantization_reason(&quantization, precision));
    let dtype = dtype_for(precision, gpu);
    let kv_cache_dtype = kv_cache_dtype_for(req);
    let kv_bytes = kv_element_bytes(precision, kv_cache_dtype);
    if let Some(kv) = kv_cache_dtype.vllm_arg() {
        let why = if kv_cache_dtype == req.kv_cache_dtype {
            String::new()
        } else {
            " as the checkpoint's -FP8-KV name says: it carries FP8 KV-cache scales, which vLLM only uses with that flag".into()
        };
        reasons.push(format!(
            "KV cache in {kv} (--kv-cache-dtype {kv}){why}: 1 byte per element, twice the tokens of a 16-bit cache."
        ));
    }

    let weights = m.weights(precision);
    reasons.push(weights_reason(&m, precision, &weights));
    let weights_formula = weights_formula(&m, precision, &weights);
    let ctx = context_target(req, &m)?;
    let sizer = Sizer::for_request(&m, weights, kv_bytes, req, &ctx);

    reasons.push(kv_reason(&m, kv_bytes, &ctx));
    let (slice, about_mig) = choose_mig(req, gpu, &sizer, &ctx)?;
    reasons.push(overhead_reason(
        &sizer,
        gpu,
        slice,
        req.vllm_version.as_deref(),
    ));
    reasons.extend(about_mig);

    let tps = valid_tps(m.arch.attention_heads, m.arch.kv_heads, gpu.per_node);
    let fit = match slice {
        Some(p) => sizer.evaluate(Device::slice(gpu, p), 1, 1, ctx.tokens()),
        None => {
            let (fit, about_layout) = match requested_layout(req, &m, gpu, &tps)? {
                Some(layout) => fixed_layout(&sizer, gpu, layout, &ctx),
                None => choose_layout(req, &sizer, gpu, precision, &ctx, &tps)?,
            };
            reasons.push(about_layout);
            fit
        }
    };

    let settled = cap_context(&sizer, gpu, slice, fit, &ctx)?;
    reasons.extend(settled.reasons);
    warnings.extend(settled.warnings);
    let fit = settled.fit;

    let devices = fit.devices();
    let nodes = devices.div_ceil(gpu.per_node).max(1);
    warnings.extend(super::plan::multi_node_warning(gpu, nodes, fit.tp, fit.pp));
    reasons.push(per_gpu_reason(&fit, req.gpu_memory_utilization));

    let load = load_gib(&m, &quantization, &sizer.weights);
    let h = host(devices, fit.tp * fit.pp, load);
    reasons.push(host_reason(&h, devices, load));

    let (mig_profile, resource) = match slice {
        Some(p) if req.mig_strategy == MigStrategy::Single => {
            reasons.push(format!(
                "The {0} slice is asked for as one {1} on a node partitioned into {0} slices: the device \
                 plugin's single MIG strategy.",
                p.name, gpu.resource_name
            ));
            (Some(p.name.to_string()), gpu.resource_name.clone())
        }
        Some(p) => (Some(p.name.to_string()), p.resource_name()),
        None => (None, gpu.resource_name.clone()),
    };
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
        quantization_method: quantization.method,
        max_model_len: settled.max_model_len,
        cpu: h.cpu,
        memory: h.memory,
        shm_size: h.shm_size,
        startup_probe_seconds: h.startup_probe_seconds,
        checkpoint_gib: load,
        gpu_memory_utilization: req.gpu_memory_utilization,
        parameters_b: m.total_b,
        active_parameters_b: m.active_b,
        vision_parameters_b: m.vision_b,
        attention_heads: m.arch.attention_heads,
        kv_heads: m.arch.kv_heads,
        arch: m.arch.clone(),
        estimate: Estimate {
            weights_gib: sizer.weights.total_gib,
            kv_cache_gib: fit.kv_per_gpu * f64::from(devices),
            overhead_gib: fit.overhead,
            per_gpu_gib: fit.need,
            gpu_capacity_gib: fit.usable,
            kv_bytes_per_token: m.arch.kv_bytes_per_token(kv_bytes, 1, 1),
            kv_capacity_tokens: fit.capacity_tokens,
            weights_per_gpu_gib: fit.weights_per_gpu,
            kv_bytes_per_token_per_gpu: m.arch.kv_bytes_per_token(kv_bytes, fit.tp, fit.pp),
            kv_cache_per_gpu_gib: fit.kv_free_gib,
        },
        weights_formula,
        kv_cache_dtype,
        objective: req.objective,
        max_num_seqs: req.max_num_seqs,
        vllm_release: vllm,
        architecture_guessed: m.guessed,
        reasons,
        warnings,
    })
}

/// The overhead on each GPU (or on the MIG slice the plan runs on), which
/// the layout must leave room for: the activation peak of vLLM's profiling
/// run and its non-torch memory.
fn overhead_reason(
    sizer: &Sizer,
    gpu: &Gpu,
    slice: Option<&MigProfile>,
    version: Option<&str>,
) -> String {
    let a = &sizer.model.arch;
    // A slice's smaller memory gets a smaller default batch, and so a
    // smaller warm-up peak than the whole GPU's.
    let (device, seen_on) = match slice {
        Some(p) => (
            Device::slice(gpu, p),
            format!("a {} slice of {}", p.name, gpu.name),
        ),
        None => (Device::gpu(gpu), gpu.name.clone()),
    };
    let sequences = sizer.sequences_on(device);
    let activation = a.activation_gib(sequences, sizer.generation);
    let set_by = if sizer.max_num_seqs.is_some() {
        " (the --max-num-seqs given)"
    } else {
        ""
    };
    let copies = sizer.generation.sampler_copies();
    let release = match sizer.generation {
        VllmGeneration::Current => format!("vLLM {}", version.unwrap_or("0.19+").trim()),
        VllmGeneration::EarlierOrUnknown => match version {
            Some(v) if !v.trim().is_empty() => format!("vLLM {} (before 0.19)", v.trim()),
            _ => "an unknown vLLM release, sized as the earlier, larger peak".to_string(),
        },
    };
    format!(
        "Overhead per GPU: activation peak {activation:.2} GiB (sampler warm-up {copies} x {sequences} sequences{set_by} x {} vocabulary x 4 B{}, at least {ACTIVATION_FLOOR_GIB} GiB; {release}) + non-torch memory {NON_TORCH_SINGLE_GIB} GiB on one GPU or {NON_TORCH_MULTI_GIB} GiB per GPU with TP or PP (NCCL and all-reduce buffers). Usable memory is {} x {} GiB, the total vLLM sees on {}.",
        thousands(u64::from(a.vocab)),
        if a.experts > 0 { " x 1.15 for MoE" } else { "" },
        sizer.util,
        hundredths(device.gib),
        seen_on
    )
}

/// What one GPU (or slice) holds against what it offers, and the KV cache
/// vLLM will allocate there.
fn per_gpu_reason(fit: &Fit, util: f64) -> String {
    format!(
        "Per GPU: {} weights + {} KV cache + {} overhead ({:.2} GiB activation + {:.2} GiB non-torch) = {} of {} usable ({} x {}); vLLM's KV cache gets the {} left after weights and overhead, {} tokens.",
        gib(fit.weights_per_gpu),
        gib(fit.kv_per_gpu),
        gib(fit.overhead),
        fit.activation,
        fit.non_torch,
        gib(fit.need),
        gib(fit.usable),
        util,
        gib(fit.device.gib),
        gib(fit.kv_free_gib),
        thousands(fit.capacity_tokens)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::ComputeDtype;
    use crate::sizing::test_requests::whole_gpus as req;

    fn err(r: SizingRequest) -> String {
        size(&r).unwrap_err().to_string()
    }

    /// The overhead reason speaks of the device the plan runs on: on an
    /// H100's 3g.40gb slice, vLLM batches 256 sequences, not the 1,024 of
    /// the whole GPU, and warms its sampler up for those.
    #[test]
    fn the_overhead_reason_is_the_slices_when_the_plan_runs_on_one() {
        let plan = size(&SizingRequest {
            mig: MigChoice::Auto,
            ..req("Qwen/Qwen2.5-7B-Instruct", "H100")
        })
        .unwrap();
        assert_eq!(plan.mig_profile.as_deref(), Some("3g.40gb"));
        let overhead = plan
            .reasons
            .iter()
            .find(|r| r.starts_with("Overhead per GPU"))
            .unwrap();
        assert!(
            overhead.starts_with(
                "Overhead per GPU: activation peak 1.41 GiB (sampler warm-up 9.7 x 256 sequences x 152,064"
            ),
            "{overhead}"
        );
        assert!(
            overhead.ends_with(
                "Usable memory is 0.9 x 39.5 GiB, the total vLLM sees on a 3g.40gb slice of H100-80GB."
            ),
            "{overhead}"
        );
        let per_gpu = plan
            .reasons
            .iter()
            .find(|r| r.starts_with("Per GPU"))
            .unwrap();
        assert!(per_gpu.contains("(1.41 GiB activation"), "{per_gpu}");
    }

    #[test]
    fn an_fp8_kv_checkpoint_gets_an_fp8_kv_cache_unless_asked_otherwise() {
        let amd = size(&req("amd/Llama-3.3-70B-Instruct-FP8-KV", "MI300X")).unwrap();
        assert_eq!(amd.kv_cache_dtype, KvCacheDtype::Fp8);
        assert_eq!(amd.engine_args(), ["--kv-cache-dtype", "fp8"]);
        // 2 x 80 layers x 8 KV heads x 128 x 1 B: half the 16-bit 327,680 B.
        assert_eq!(amd.estimate.kv_bytes_per_token, 163_840.0);
        assert!(amd.reasons.iter().any(|r| r.starts_with(
            "KV cache in fp8 (--kv-cache-dtype fp8) as the checkpoint's -FP8-KV name says"
        )));
        let plain = size(&req(
            "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
            "MI300X",
        ))
        .unwrap();
        assert_eq!(plain.kv_cache_dtype, KvCacheDtype::Auto);
        assert_eq!(plain.estimate.kv_bytes_per_token, 327_680.0);
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
            (p.dtype, p.weight_precision),
            (ComputeDtype::Float16, WeightPrecision::Fp16)
        );
        // Online fp8 on an fp8 GPU.
        let p = size(&SizingRequest {
            quantization: Some(WeightPrecision::Fp8),
            ..req("meta-llama/Llama-3.1-70B-Instruct", "H100")
        })
        .unwrap();
        assert_eq!(p.quantization_method.as_deref(), Some("fp8"));
        assert_eq!(p.gpu_count, 2);
        // Pre-quantized checkpoints need no --quantization.
        let p = size(&req("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", "H100")).unwrap();
        assert_eq!(
            (p.weight_precision, p.quantization_method.clone()),
            (WeightPrecision::Fp8, None)
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
        assert_eq!(p.gpu_resource_name, "nvidia.com/mig-1g.10gb");
        // Explicit too few GPUs: weights beyond each GPU's memory cannot
        // load, whatever vLLM's flags, so an error that names the layout
        // that would hold them.
        let e = size(&SizingRequest {
            gpu_count: Some(1),
            ..req("meta-llama/Llama-3.1-70B-Instruct", "L4")
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "1 x L4 (TP 1, PP 1) cannot hold meta-llama/Llama-3.1-70B-Instruct: each GPU's share of the weights \
             is 131.4 GiB, more than its 21.9 GiB, so vLLM cannot load them whatever its flags; 16 x L4 (TP 8, PP \
             2) would hold it"
        );
        // Weights that load, with too little room left at the default
        // utilization: a warning, since flags the plan does not size for (a
        // higher --gpu-memory-utilization, a lower --max-num-seqs) may start
        // it; the smaller batch is named with the context it would start with,
        // where the caller can set it (an AgentPool cannot).
        let two_h100 = SizingRequest {
            gpu_count: Some(2),
            ..req("meta-llama/Llama-3.1-70B-Instruct", "H100")
        };
        let too_full = "2 x H100-80GB (TP 2, PP 1) cannot hold meta-llama/Llama-3.1-70B-Instruct: each GPU needs \
             77.7 GiB (65.7 GiB weights + 6.9 GiB overhead + 5.0 GiB KV cache) of 71.3 GiB usable; vLLM will fail \
             with out-of-memory";
        let p = size(&two_h100).unwrap();
        assert_eq!(
            p.warnings,
            [format!(
                "{too_full}; at --max-num-seqs 256 (not vLLM's default 1024) it would start, with maxModelLen \
                 13,824; 4 x H100-80GB (TP 4, PP 1) would hold it."
            )]
        );
        let p = size(&SizingRequest {
            max_num_seqs_settable: false,
            ..two_h100.clone()
        })
        .unwrap();
        assert_eq!(
            p.warnings,
            [format!(
                "{too_full}; 4 x H100-80GB (TP 4, PP 1) would hold it."
            )]
        );
        let p = size(&SizingRequest {
            max_num_seqs: Some(256),
            ..two_h100
        })
        .unwrap();
        assert_eq!(p.max_model_len, 13_824);
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

    /// A weights index far from what the model weighs is most likely another
    /// file's: the plan says so, since it counts the index's bytes.
    #[test]
    fn a_weights_index_far_from_the_models_weight_is_a_warning() {
        let warnings = |bytes: u64| {
            size(&SizingRequest {
                checkpoint_bytes: Some(bytes),
                ..req("meta-llama/Llama-3.1-8B-Instruct", "L40S")
            })
            .unwrap()
            .warnings
        };
        // Llama 3.1 8B's own index: 16,060,522,496 bytes.
        assert_eq!(warnings(16_060_522_496), Vec::<String>::new());
        assert_eq!(
            warnings(1_000_000_000),
            [
                "The weights index gives 0.9 GiB of weights, 0.06 times the 15.0 GiB that the catalog's parameter \
                 count gives at bf16: check that it is metadata.total_size of this model's \
                 model.safetensors.index.json, since the plan counts the weights as the index says"
            ]
        );
    }

    /// A model known by its id alone is taken to be stored as it is served
    /// (bf16, or its id's marker): its weights index gives the exact weights,
    /// and the parameter count when nothing else does.
    #[test]
    fn a_weights_index_weighs_a_model_known_by_its_id_alone() {
        let plan = |count: Option<&str>, bytes: u64| {
            size(&SizingRequest {
                parameter_count: count.map(str::to_string),
                checkpoint_bytes: Some(bytes),
                ..req("acme/reviewer", "L40S")
            })
            .unwrap()
        };
        let given = plan(Some("7B"), 28_000_000_000);
        assert_eq!(format!("{:.2}", given.estimate.weights_gib), "26.08");
        assert_eq!(given.parameters_b, 7.0);
        // Twice what 7 B weigh in bf16 (a float32 checkpoint, say) is within the band.
        assert!(given.warnings.is_empty(), "{:?}", given.warnings);
        let read = plan(None, 28_000_000_000);
        assert_eq!(format!("{:.2}", read.estimate.weights_gib), "26.08");
        assert_eq!(read.parameters_b, 14.0);
        assert!(read.warnings.is_empty(), "{:?}", read.warnings);
        assert!(
            read.reasons[0].contains(
                "14 B parameters (the weights index's bytes / 2 B, taking the checkpoint as bf16)"
            ),
            "{}",
            read.reasons[0]
        );
        let far = plan(Some("70B"), 14_000_000_000);
        assert_eq!(
            far.warnings,
            [
                "The weights index gives 13.0 GiB of weights, 0.10 times the 130.4 GiB that the parameter count \
                 gives at bf16: check that it is metadata.total_size of this model's \
                 model.safetensors.index.json, since the plan counts the weights as the index says"
            ]
        );
    }

    /// A count given for a catalog model is the catalog's exact one when it
    /// is that count rounded; far from it, it is sized as given, with a
    /// warning: 70B for an 8B model asks for 16 L4s.
    #[test]
    fn a_parameter_count_far_from_the_catalogs_is_a_warning() {
        let plan = |count: &str| {
            size(&SizingRequest {
                parameter_count: Some(count.to_string()),
                ..req("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB")
            })
            .unwrap()
        };
        let warnings = |count: &str| plan(count).warnings;
        assert_eq!(plan("8B").parameters_b, 8.03);
        assert_eq!(plan("7B").parameters_b, 8.03);
        assert_eq!(plan("70B").parameters_b, 70.0);
        // Rounded, as people write it: no warning.
        assert_eq!(warnings("8B"), Vec::<String>::new());
        assert_eq!(warnings("7B"), Vec::<String>::new());
        assert_eq!(
            warnings("70B"),
            [
                "The parameter count given, 70 B, is 8.72 times the 8.03 B of meta-llama/Llama-3.1-8B-Instruct \
                 in the catalog, and the plan sizes for the count given: check it, or leave it out to take the \
                 catalog's"
            ]
        );
        assert_eq!(warnings("6B").len(), 1);
    }

    /// `A100` is sold with 40 and 80 GB: the plan says which it sized for.
    #[test]
    fn a_gpu_family_name_says_which_board_it_is_read_as() {
        let warnings = |gpu: &str| {
            size(&req("Qwen/Qwen2.5-7B-Instruct", gpu))
                .unwrap()
                .warnings
        };
        assert_eq!(
            warnings("A100"),
            vec![
                "GPU type `A100` names boards of two memory sizes; it is read as A100-40GB (40 GB): name A100-80GB for the larger board, or A100-40GB to say this one"
            ]
        );
        assert_eq!(
            warnings("v100"),
            vec![
                "GPU type `v100` names boards of two memory sizes; it is read as V100 (16 GB): name V100-32GB for the larger board, or V100 to say this one",
                "V100 is a GPU of compute capability 7.0, which vLLM runs only before release 0.20.0: the pods start only if the image runs an earlier vLLM"
            ]
        );
        // The board's own name, and GKE's label for it, are not ambiguous.
        for named in ["A100-40GB", "nvidia-tesla-a100", "A100-80GB", "H100"] {
            assert_eq!(warnings(named), Vec::<String>::new(), "{named}");
        }
    }

    #[test]
    fn objectives_choose_the_layout_and_say_so() {
        let with = |objective, model: &str, gpu: &str, max_model_len| {
            size(&SizingRequest {
                objective,
                max_model_len,
                vllm_version: Some("0.19.0".into()),
                ..req(model, gpu)
            })
            .unwrap()
        };
        let layout = |p: &Plan| {
            p.reasons
                .iter()
                .find(|r| r.contains("smallest layout"))
                .cloned()
                .unwrap_or_default()
        };
        // (model, GPU, maxModelLen, GPUs for minimal, balanced, throughput).
        // A stated context sizes `balanced` for it, without the headroom.
        let cases = [
            (
                "meta-llama/Llama-3.1-8B-Instruct",
                "L4",
                Some(8192),
                1,
                1,
                2,
            ),
            ("meta-llama/Llama-3.1-70B-Instruct", "H100", None, 4, 4, 8),
            ("meta-llama/Llama-2-70b-hf", "A100-80GB", None, 2, 4, 4),
            (
                "meta-llama/Llama-3.1-70B-Instruct",
                "H100",
                Some(8192),
                2,
                2,
                4,
            ),
            ("Qwen/Qwen2.5-7B-Instruct", "A10G", Some(8192), 1, 1, 2),
        ];
        for (model, gpu, context, minimal, balanced, throughput) in cases {
            let got = [
                Objective::Minimal,
                Objective::Balanced,
                Objective::Throughput,
            ]
            .map(|o| with(o, model, gpu, context));
            assert_eq!(
                got.each_ref().map(|p| p.gpu_count),
                [minimal, balanced, throughput],
                "{model} on {gpu}"
            );
            for p in &got {
                assert!(
                    layout(p).contains(&format!("(objective {}", p.objective)),
                    "{}",
                    layout(p)
                );
            }
        }
        // A throughput plan names the batch it made room for.
        let p = with(
            Objective::Throughput,
            "meta-llama/Llama-3.1-8B-Instruct",
            "L4",
            Some(8192),
        );
        assert!(
            layout(&p).contains("holds 16 sequences of 8,192 tokens"),
            "{}",
            layout(&p)
        );
    }

    #[test]
    fn error_messages() {
        let h100_fp8 = "L4, A10G, L40S, A30, A100-40GB, A100-40GB-PCIe, A100-80GB, A100-80GB-PCIe, H100-80GB, H100-PCIe, H100-NVL, H20, H200, H200-NVL, B200, GB200, B300, GH200, RTX-PRO-6000, MI300X, MI325X";
        let cases: Vec<(SizingRequest, String)> = vec![
            (
                SizingRequest { quantization: Some(WeightPrecision::Fp8), ..req("meta-llama/Llama-3.1-8B-Instruct", "T4") },
                "fp8 weights need a GPU with fp8 support, which T4 lacks: vLLM runs them on Turing weight-only (FP8 Marlin) in release 0.14.0 and later, and this plan's release is not known: if the platform's image runs 0.14.0 or later, state it (the step input's vllmVersion; size --vllm-version); else use another GPU (L4, A10G, A100, H100, MI300X and newer) or bf16, int8 or int4 weights".into(),
            ),
            (
                SizingRequest { vllm_version: Some("0.13.0".into()), ..req("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8", "T4") },
                "fp8 weights need a GPU with fp8 support, which T4 lacks: vLLM runs them on Turing weight-only (FP8 Marlin) in release 0.14.0 and later, and the plan is for 0.13.0: use 0.14.0 or later, another GPU (L4, A10G, A100, H100, MI300X and newer) or bf16, int8 or int4 weights".into(),
            ),
            (
                SizingRequest { vllm_version: Some("0.19.0".into()), ..req("nvidia/Llama-3.1-8B-Instruct-FP8", "T4") },
                "fp8 weights need a GPU with fp8 support, which T4 lacks: vLLM's ModelOpt fp8 loader asks for compute capability 8.0 and T4 has 7.5: use a compressed-tensors or fp8 checkpoint of the model, which vLLM 0.14.0 and later run there, another GPU (L4, A10G, A100, H100, MI300X and newer) or bf16, int8 or int4 weights".into(),
            ),
            (
                SizingRequest { mig: MigChoice::Profile("1g.10gb".into()), ..req("Qwen/Qwen2.5-1.5B-Instruct", "L4") },
                "L4 has no MIG: use mig none, or a GPU with MIG (A30, A100-40GB, A100-40GB-PCIe, A100-80GB, A100-80GB-PCIe, H100-80GB, H100-PCIe, H100-NVL, H20, H200, H200-NVL, B200, GB200, B300, GH200, RTX-PRO-6000)".into(),
            ),
            (
                SizingRequest { mig: MigChoice::Profile("2g.11gb".into()), ..req("Qwen/Qwen2.5-1.5B-Instruct", "A100-80GB") },
                "A100-80GB has no MIG profile `2g.11gb`: its profiles are 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb".into(),
            ),
            (
                SizingRequest { mig: MigChoice::Profile("1g.10gb".into()), ..req("meta-llama/Llama-3.1-8B-Instruct", "H100") },
                "MIG profile 1g.10gb of H100-80GB (8.8 GiB usable) cannot hold meta-llama/Llama-3.1-8B-Instruct, which needs 17.9 GiB: the smallest profile that holds it is 3g.40gb".into(),
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
                "cannot tell how many parameters `someorg/mystery-model` has: it is not in the model catalog and its id carries no size; give its parameter count (for example 8B, 70B or 8x7B)".into(),
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
                "maxModelLen 131072 does not fit next to meta-llama/Llama-3.1-8B-Instruct on 1 x L4 (TP 1, PP 1): at most 26624 tokens fit; use maxModelLen 26624 or 2 x L4 (TP 2, PP 1)".into(),
            ),
            (
                req("deepseek-ai/DeepSeek-V3", "V100"),
                format!("fp8 weights need a GPU with fp8 support, which V100 lacks: use a GPU with fp8 units or FP8 Marlin kernels (Ampere or newer) ({h100_fp8}) or other weights (bf16, int8, int4)"),
            ),
            (
                SizingRequest { quantization: Some(WeightPrecision::Fp32), ..req("meta-llama/Llama-3.1-405B-Instruct", "T4") },
                "meta-llama/Llama-3.1-405B-Instruct with fp32 weights (1511.9 GiB) does not fit on T4: no layout of up to 16 nodes holds it; int4 weights would fit on 32 x T4 (TP 4, PP 8); a bigger GPU would: 8 x B300 (TP 8, PP 1)".into(),
            ),
            (
                SizingRequest { gpu_memory_utilization: 0.01, ..req("meta-llama/Llama-3.1-8B-Instruct", "L4") },
                "meta-llama/Llama-3.1-8B-Instruct with bf16 weights (15.0 GiB) does not fit on L4: no layout of up to 16 nodes holds it; gpuMemoryUtilization 0.9 (not 0.01) would fit on 2 x L4 (TP 2, PP 1)".into(),
            ),
        ];
        for (r, want) in cases {
            assert_eq!(err(r.clone()), want, "{r:?}");
        }
    }
}
