//! Invariants of the sizing engine over generated requests.

use function_inference::sizing::{
    self, KvCacheDtype, MigChoice, Objective, SizingRequest, WeightPrecision, gpus,
};
use proptest::prelude::*;

const GPUS: &[&str] = &[
    "T4",
    "L4",
    "A10G",
    "L40S",
    "A100-40GB",
    "A100-80GB",
    "H100",
    "H200",
    "B200",
    "MI300X",
];

fn request(params_b: f64, gpu: &str, ctx: Option<u64>, mig: MigChoice) -> SizingRequest {
    SizingRequest {
        model_id: "example/custom-model".into(),
        gpu_type: gpu.into(),
        parameter_count: Some(format!("{params_b}B")),
        quantization: Some(WeightPrecision::Bf16),
        max_model_len: ctx,
        mig,
        ..SizingRequest::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn plans_hold_the_model(
        params in 0.1f64..1000.0,
        g in 0..GPUS.len(),
        ctx in proptest::option::of(256u64..65_536),
        model in 0usize..8,
    ) {
        let ids = [
            None,
            Some("meta-llama/Llama-3.1-8B-Instruct"),
            Some("Qwen/Qwen2.5-7B-Instruct"),
            Some("microsoft/Phi-3-medium-4k-instruct"),
            Some("tiiuae/falcon-7b"),
            Some("deepseek-ai/DeepSeek-V3"),
            Some("meta-llama/Llama-4-Scout-17B-16E-Instruct"),
            Some("Qwen/Qwen3-30B-A3B"),
        ];
        let mut r = request(params, GPUS[g], ctx, MigChoice::Auto);
        if let Some(id) = ids[model] {
            r.model_id = id.into();
            r.parameter_count = None;
            r.quantization = None;
        }
        let Ok(p) = sizing::size(&r) else { return Ok(()) };
        let e = &p.estimate;
        // Holds the model by the engine's own memory model, context included.
        prop_assert!(p.warnings.iter().all(|w| !w.contains("out-of-memory")));
        prop_assert!(e.per_gpu_gib <= e.gpu_capacity_gib + 1e-9, "{} > {}", e.per_gpu_gib, e.gpu_capacity_gib);
        prop_assert!(p.max_model_len >= 1 && e.kv_capacity_tokens >= p.max_model_len);
        if let Some(c) = ctx { prop_assert!(p.max_model_len <= c); }
        // TP divides the heads and works with the KV heads.
        let tp = p.tensor_parallel_size;
        prop_assert_eq!(p.attention_heads % tp, 0);
        prop_assert!(p.kv_heads % tp == 0 || tp % p.kv_heads == 0);
        prop_assert!(tp.is_power_of_two());
        // MIG only on GPUs that have it.
        if p.mig_profile.is_some() {
            prop_assert!(p.gpu.has_mig());
            prop_assert_eq!(p.gpu_count, 1);
        } else {
            prop_assert_eq!(p.gpu_count, tp * p.pipeline_parallel_size);
        }
    }

    #[test]
    fn mig_never_on_gpus_without_it(params in 0.1f64..10.0, g in 0..20usize) {
        let gpu = &gpus()[g % gpus().len()];
        if let Ok(p) = sizing::size(&request(params, &gpu.name, None, MigChoice::Auto)) {
            prop_assert!(p.mig_profile.is_none() || gpu.has_mig());
        }
    }

    #[test]
    fn user_numbers_never_panic(
        gpu in proptest::option::of(any::<u32>()),
        ctx in proptest::option::of(any::<u64>()),
        count in "[0-9]{1,40}(\\.[0-9]{1,5})?[MBTk]?",
        util in any::<f64>(),
        conc in proptest::option::of(any::<u32>()),
    ) {
        let r = SizingRequest {
            model_id: "example/x".into(),
            gpu_type: "H100".into(),
            gpu_count: gpu,
            max_model_len: ctx,
            parameter_count: Some(count),
            gpu_memory_utilization: util,
            concurrency: conc,
            ..SizingRequest::default()
        };
        let _ = sizing::size(&r);
    }
}

/// What vLLM's logs allow for the KV cache on one GPU, from below: its
/// formula `utilization x total - weights - activation - non-torch` with the
/// smallest activation and non-torch figures any log shows (sampler warm-up
/// 3.7 fp32 copies of `max_num_seqs x vocabulary` logits, at least 0.75 GiB;
/// non-torch 0.24 GiB on one GPU, 2.06 GiB per GPU with TP or PP).
fn kv_allowed_by_the_logs(plan: &sizing::Plan, vocab: u32, util: f64) -> f64 {
    let g = plan.gpu;
    let seqs = if g.vllm_gib >= 70.0 && !g.name.starts_with("A100") {
        1024.0
    } else {
        256.0
    };
    let activation = (3.7 * seqs * f64::from(vocab) * 4.0 / sizing::GIB).max(0.75);
    let non_torch = if plan.gpu_count > 1 { 2.06 } else { 0.24 };
    util * g.vllm_gib - plan.estimate.weights_per_gpu_gib - activation - non_torch
}

const LAYOUT_GPUS: &[&str] = &["L4", "A100-80GB", "H100", "H200", "MI300X"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever the model, GPU, layout, utilization, KV dtype and vLLM
    /// release, the KV cache the engine promises never exceeds what vLLM's
    /// own formula leaves, in GiB and in tokens.
    #[test]
    fn kv_capacity_never_exceeds_the_logs_formula(
        m in 0..sizing::models().len(),
        g in 0..LAYOUT_GPUS.len(),
        tp_log in 0u32..4,
        util in 0.5f64..0.97,
        fp8_kv in any::<bool>(),
        current in any::<bool>(),
    ) {
        let spec = &sizing::models()[m];
        let r = SizingRequest {
            model_id: spec.id.clone(),
            gpu_type: LAYOUT_GPUS[g].into(),
            tensor_parallel: Some(1 << tp_log),
            pipeline_parallel: Some(1),
            mig: MigChoice::None,
            gpu_memory_utilization: util,
            kv_cache_dtype: if fp8_kv { KvCacheDtype::Fp8 } else { KvCacheDtype::Auto },
            vllm_version: current.then(|| "0.19.0".to_string()),
            ..SizingRequest::default()
        };
        let Ok(p) = sizing::size(&r) else { return Ok(()) };
        let allowed = kv_allowed_by_the_logs(&p, spec.vocab, util).max(0.0);
        let e = &p.estimate;
        prop_assert!(e.kv_cache_per_gpu_gib <= allowed + 1e-9, "{}: {} > {allowed}", spec.id, e.kv_cache_per_gpu_gib);
        let tokens = (allowed * sizing::GIB / e.kv_bytes_per_token_per_gpu).floor() as u64;
        prop_assert!(e.kv_capacity_tokens <= tokens, "{}: {} > {tokens}", spec.id, e.kv_capacity_tokens);
    }
}

/// A larger model never gets fewer GPUs, and whatever fits a larger model
/// fits a smaller one: swept from 0.1 B to 800 B parameters in steps of
/// 0.5 % on every GPU type. A sweep, not random pairs: the guessed
/// architecture changes at a few sizes, and random pairs rarely straddle one
/// (an 8.09 B model once got 2 L4s and an 8.14 B one a single L4).
#[test]
fn more_parameters_never_need_fewer_gpus() {
    for gpu in GPUS {
        // The GPU count of the last size sized; None once one was refused.
        let mut last: Option<(f64, u32)> = Some((0.0, 0));
        let mut params_b = 0.1f64;
        while params_b < 800.0 {
            let plan = sizing::size(&request(params_b, gpu, None, MigChoice::None));
            match (plan, last) {
                (Ok(plan), Some((smaller, gpus))) => {
                    assert!(
                        gpus <= plan.gpu_count,
                        "{gpu}: {smaller} B gets {gpus} GPUs, {params_b} B {}",
                        plan.gpu_count
                    );
                    last = Some((params_b, plan.gpu_count));
                }
                (Ok(_), None) => panic!("{gpu}: {params_b} B fits where a smaller model did not"),
                (Err(_), _) => last = None,
            }
            params_b *= 1.005;
        }
    }
}

/// More sequences at once never need fewer GPUs, and whatever holds more
/// holds fewer: every catalog model on three GPU types, 1 to 2,048
/// sequences of 8,192 tokens, and of the default context on two, with each
/// objective. gemma-2b
/// once got 4 L4s (TP 4, which copies its one KV head) for 96 sequences
/// and 2 (PP 2) for 128; Llama-3.2-3B 112 L4s for 512 sequences of the
/// default 32,768 tokens and 32 for 1,024, capped to 4,096; Llama-3.1-8B 8
/// L4s for 15 sequences at the throughput objective and 2 for 16.
#[test]
fn more_sequences_never_need_fewer_gpus() {
    for spec in sizing::models() {
        for (gpu, max_model_len, objective) in [
            ("L4", Some(8192), Objective::Balanced),
            ("H100", Some(8192), Objective::Balanced),
            ("MI300X", Some(8192), Objective::Balanced),
            ("L4", None, Objective::Balanced),
            ("H100", None, Objective::Balanced),
            ("L4", Some(8192), Objective::Throughput),
            ("L4", None, Objective::Throughput),
            ("H100", None, Objective::Minimal),
        ] {
            let mut last: Option<(u32, u32)> = Some((0, 0));
            for concurrency in [
                1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 512, 1024, 2048,
            ] {
                let r = SizingRequest {
                    model_id: spec.id.clone(),
                    gpu_type: gpu.into(),
                    max_model_len,
                    concurrency: Some(concurrency),
                    objective,
                    mig: MigChoice::None,
                    ..SizingRequest::default()
                };
                match (sizing::size(&r), last) {
                    (Ok(plan), Some((fewer, gpus))) => {
                        assert!(
                            gpus <= plan.gpu_count,
                            "{} on {gpu} at {max_model_len:?}, {objective}: {fewer} sequences get {gpus} GPUs, {concurrency} {}",
                            spec.id,
                            plan.gpu_count
                        );
                        last = Some((concurrency, plan.gpu_count));
                    }
                    (Ok(_), None) => panic!(
                        "{} on {gpu}: {concurrency} sequences fit where fewer did not",
                        spec.id
                    ),
                    // One sequence, stated, sizes wherever the default does.
                    (Err(e), _) if concurrency == 1 => {
                        let unstated = SizingRequest {
                            concurrency: None,
                            ..r
                        };
                        assert!(
                            sizing::size(&unstated).is_err(),
                            "{} on {gpu} at {max_model_len:?}: one stated sequence is refused ({e}) where the default sizes",
                            spec.id
                        );
                        last = None;
                    }
                    (Err(_), _) => last = None,
                }
            }
        }
    }
}

/// The KV cache holds the sequences a plan was sized for: for every catalog
/// model, the autoscaler's count of full-length requests one replica holds
/// is at least the concurrency asked for. A hybrid model's capacity counts
/// tokens of every layer while its windowed layers keep part of each
/// sequence; dividing it by the length once said Qwen3-Next held no
/// 100,000-token request on the B200 sized for one.
#[test]
fn the_kv_cache_holds_the_sequences_it_was_sized_for() {
    let mut checked = 0;
    for spec in sizing::models() {
        for gpu in ["L4", "H100", "B200", "MI300X"] {
            for (max_model_len, concurrency) in [(None, 1), (Some(100_000), 1), (Some(8192), 8)] {
                let r = SizingRequest {
                    model_id: spec.id.clone(),
                    gpu_type: gpu.into(),
                    max_model_len,
                    concurrency: Some(concurrency),
                    mig: MigChoice::None,
                    ..SizingRequest::default()
                };
                let Ok(plan) = sizing::size(&r) else { continue };
                if max_model_len.is_some_and(|l| plan.max_model_len < l) {
                    continue;
                }
                let held = plan
                    .scaling_target(plan.request_shape(None, None), None)
                    .kv_requests;
                assert!(
                    held >= u64::from(concurrency),
                    "{} on {gpu} at {}: the KV cache holds {held} requests, sized for {concurrency}",
                    spec.id,
                    plan.max_model_len
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 500, "{checked}");
}

/// A model sized without its architecture (its parameter count only, so the
/// architecture of the Llama 3 model nearest in size) is never
/// refused where its real architecture is served, and gets at most twice or
/// half the GPUs, on three GPU types and for every catalog model in 16
/// bits, at the default context and at a long one.
#[test]
fn a_guessed_architecture_plans_within_twice_the_real_layout() {
    let mut checked = 0;
    for spec in sizing::models() {
        for gpu in ["H100-80GB", "L40S", "MI300X"] {
            for max_model_len in [None, Some(120_000)] {
                let known = SizingRequest {
                    model_id: spec.id.clone(),
                    gpu_type: gpu.into(),
                    mig: MigChoice::None,
                    // The same weights: what is guessed is the architecture.
                    quantization: Some(WeightPrecision::Bf16),
                    max_model_len,
                    ..SizingRequest::default()
                };
                let guessed = SizingRequest {
                    model_id: "example/unknown-model".into(),
                    parameter_count: Some(format!("{}B", spec.params_b)),
                    ..known.clone()
                };
                let Ok(k) = sizing::size(&known) else {
                    continue;
                };
                let g = sizing::size(&guessed).unwrap_or_else(|e| {
                    panic!(
                        "{} on {gpu} ({max_model_len:?}): served as itself, refused as a guess: {e}",
                        spec.id
                    )
                });
                checked += 1;
                assert!(g.architecture_guessed && !k.architecture_guessed);
                assert!(
                    g.gpu_count <= 2 * k.gpu_count && k.gpu_count <= 2 * g.gpu_count,
                    "{} on {gpu} ({max_model_len:?}): guessed {} GPUs, really {}",
                    spec.id,
                    g.gpu_count,
                    k.gpu_count
                );
            }
        }
    }
    assert!(checked > 50, "only {checked} models sized");
}
