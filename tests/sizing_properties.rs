//! Invariants of the sizing engine over generated requests.

use function_inference::sizing::{self, MigChoice, Precision, SizingRequest, gpus};
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
        quantization: Some(Precision::Bf16),
        max_model_len: ctx,
        mig,
        ..SizingRequest::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn more_parameters_never_need_fewer_gpus(a in 0.1f64..800.0, b in 0.1f64..800.0, g in 0..GPUS.len()) {
        let (small, large) = if a <= b { (a, b) } else { (b, a) };
        let s = sizing::size(&request(small, GPUS[g], None, MigChoice::None));
        let l = sizing::size(&request(large, GPUS[g], None, MigChoice::None));
        if let (Ok(s), Ok(l)) = (&s, &l) {
            prop_assert!(s.gpu_count <= l.gpu_count, "{small}B: {} > {large}B: {}", s.gpu_count, l.gpu_count);
        }
        // Whatever fits the larger model fits the smaller one.
        prop_assert!(l.is_err() || s.is_ok());
    }

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
        if let Ok(p) = sizing::size(&request(params, gpu.name, None, MigChoice::Auto)) {
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
