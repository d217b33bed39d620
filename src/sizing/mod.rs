//! The sizing engine: from a model and a GPU type to a vLLM layout.
//!
//! Pure and synchronous: catalogs embedded at compile time, no I/O, no
//! Kubernetes types. [`size`] turns a [`SizingRequest`] into a [`Plan`] that
//! carries its own reasons, or into a `SizingError` that says what would
//! work. The formulas are in docs/sizing.md.
//!
//! - `gpus` and `model_catalog`: the catalogs and their forgiving name lookup.
//! - `params`: parameter counts and quantization markers read from strings.
//! - `memory`: what vLLM puts on a GPU: weights, activation peak, non-torch
//!   memory and KV cache (the formulas of docs/sizing.md).
//! - `config`: a model's `config.json` and weights index, read for sizing.
//! - `excluded_modules`: the modules a quantized checkpoint leaves in 16 bits.
//! - `plan`: what is sized ([`SizingRequest`]) and the answer ([`Plan`]).
//! - `decide`: [`size`] as the sequence of decisions below.
//! - `validate`: the ranges of the request's numbers.
//! - `resolved_model`: the model as the engine sees it (config.json,
//!   catalog or estimate).
//! - `release_support`: the vLLM releases that load an architecture and run
//!   on a GPU; a plan for another is refused.
//! - `precision`: the weights', computation's and KV cache's precisions.
//! - `weights`: precision, vLLM `--quantization` and `--dtype`.
//! - `context`: the context to size for, and capping it to what fits.
//! - `target`: what a layout must hold: that context, that many sequences at once.
//! - `fit`: the memory arithmetic of one layout on one device.
//! - `mig`: a MIG slice or whole GPUs.
//! - `candidates`: the layouts considered, and the smallest that holds a context.
//! - `gpu_choice`: the cheapest of the GPU types a platform offers.
//! - `layout`: TP x PP, requested or the smallest that holds the model.
//! - `no_fit`: the error when nothing fits, with what would.
//! - `scaling`: the requests one replica serves at once, and the
//!   autoscaling target derived from them.
//! - `host`: CPU, memory, /dev/shm and startup budget per replica.
//! - `text`: how numbers and lists read in reasons and errors.

mod candidates;
mod catalog_csv;
mod config;
mod context;
mod decide;
mod error;
mod excluded_modules;
mod fit;
mod gpu_choice;
mod gpus;
mod host;
mod layout;
mod memory;
mod mig;
mod model_catalog;
mod no_fit;
mod params;
mod plan;
mod precision;
mod release_support;
mod resolved_model;
mod scaling;
mod target;
#[cfg(test)]
mod test_requests;
mod text;
mod validate;
mod weights;

pub use config::{
    CheckpointQuantization, ConfigError, ModelConfig, read_hf_quant_config,
    weights_index_total_bytes,
};
pub(crate) use error::SizingError;
pub use gpu_choice::cheapest;
pub(crate) use gpu_choice::{
    GpuPrices, PriceFault, canonical_prices, cheapest_of, checked_price, hourly_cost,
    shared_refusal,
};
pub(crate) use gpus::{
    AMD_DEVICE_ID_LABEL, AMD_PARTITION_LABEL, ComputeCapability, EKS_AUTO_MODE_GPU_LABELS,
    GKE_ACCELERATOR_LABEL, GKE_PARTITION_LABEL, GKE_SHARING_LABEL, GPU_PRODUCT_LABEL,
    INSTANCE_TYPE_LABEL, KARPENTER_GPU_LABELS, MIXED_MIG_RESOURCE_PREFIX, WHOLE_AMD_GPU,
};
pub use gpus::{Gpu, MigProfile, gpu, gpu_names, gpus};
pub use memory::{Arch, GIB, Release, VllmGeneration, release};
pub use model_catalog::{ModelMatch, lookup as lookup_model, models};
pub use params::{
    MAX_CHECKPOINT_BYTES, ParamCount, count_from_id, parse_parameter_count, precision_marker,
};
pub use plan::{
    BANDWIDTH_EFFICIENCY, DEFAULT_GPU_MEMORY_UTILIZATION, Estimate, Plan, SizingRequest,
    THROUGHPUT_SEQUENCES, Throughput,
};
pub use precision::{
    ComputeDtype, KvCacheDtype, MigChoice, MigStrategy, Objective, WeightPrecision,
};
pub use scaling::{RequestShape, ScalingTarget, TARGET_SHARE};
pub(crate) use text::count_of;
pub(crate) use validate::MAX_CONCURRENCY;
pub use validate::check_tensor_parallel;
pub(crate) use weights::runs_on;

/// Sizes one replica. See the module docs and docs/sizing.md.
pub fn size(req: &SizingRequest) -> Result<Plan, SizingError> {
    decide::size(req)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(model: &str, gpu: &str) -> Plan {
        size(&SizingRequest {
            model_id: model.into(),
            gpu_type: gpu.into(),
            mig: MigChoice::None,
            ..Default::default()
        })
        .unwrap()
    }

    /// A 16-bit upload of gpt-oss is sized as gpt-oss in bf16, not as the
    /// MXFP4 checkpoint its catalog entry describes.
    #[test]
    fn a_bf16_upload_is_sized_at_bf16() {
        let upload = plan("unsloth/gpt-oss-20b-BF16", "H100-80GB");
        let original = plan("openai/gpt-oss-20b", "H100-80GB");
        let asked = size(&SizingRequest {
            quantization: Some(WeightPrecision::Bf16),
            ..SizingRequest {
                model_id: "openai/gpt-oss-20b".into(),
                gpu_type: "H100-80GB".into(),
                mig: MigChoice::None,
                ..Default::default()
            }
        })
        .unwrap();
        assert_eq!(upload.weight_precision, WeightPrecision::Bf16);
        assert_eq!(upload.quantization_method, None);
        assert_eq!(upload.estimate.weights_gib, asked.estimate.weights_gib);
        assert!(upload.estimate.weights_gib > 2.5 * original.estimate.weights_gib);
    }

    #[test]
    fn batched_decode_follows_its_formula() {
        let p = plan("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB");
        let single = p.decode_tokens_per_second();
        let weights = p.active_parameters_b * 1e9 * 2.0;
        let context = 4096;
        let batch = (p.estimate.kv_capacity_tokens / context).clamp(1, p.engine_max_num_seqs());
        let step = (weights + batch as f64 * context as f64 * p.estimate.kv_bytes_per_token)
            / (single * weights);
        let t = p.batched_decode(context);
        assert_eq!(u64::from(t.batch), batch);
        assert!((t.tokens_per_second - batch as f64 / step).abs() < 1e-9);
    }

    /// gpt-oss-120b routes each token to 4 of 128 experts: one sequence
    /// reads its 5.1 B active parameters a step, a batch every expert one of
    /// its tokens picks (an expert is (117 - 5.1) / (128 - 4) B, the rest
    /// 5.1 - 4 x that), so a batch of 99 reads nearly all 117 B.
    #[test]
    fn a_mixture_of_experts_batch_reads_the_experts_its_tokens_are_routed_to() {
        let p = plan("openai/gpt-oss-120b", "H100-80GB");
        assert_eq!(p.experts_touched(1), Some(4.0));
        assert_eq!(p.weights_read_b(1), p.active_parameters_b);
        let expert = (117.0 - 5.1) / 124.0;
        for batch in [2_u64, 8, 99, 256] {
            let touched = 128.0 * (1.0 - (1.0 - 4.0 / 128.0_f64).powi(batch as i32));
            assert!((p.experts_touched(batch).unwrap() - touched).abs() < 1e-9);
            let read = 5.1 - 4.0 * expert + touched * expert;
            assert!(
                (p.weights_read_b(batch) - read).abs() < 1e-9,
                "batch {batch}"
            );
        }
        assert!(p.weights_read_b(99) > 110.0 && p.weights_read_b(256) <= 117.0);

        let t = p.batched_decode(8192);
        let bytes_per_second = p.decode_tokens_per_second() * 5.1e9 * 0.5;
        let kv = f64::from(t.batch) * p.cached_tokens(8192) as f64 * p.estimate.kv_bytes_per_token;
        let step = (p.weights_read_b(u64::from(t.batch)) * 1e9 * 0.5 + kv) / bytes_per_second;
        assert!((t.tokens_per_second - f64::from(t.batch) / step).abs() < 1e-6);

        // A dense model reads all its weights at every batch size.
        let dense = plan("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB");
        assert_eq!(dense.experts_touched(64), None);
        assert_eq!(dense.weights_read_b(64), dense.active_parameters_b);
    }

    /// Qwen2.5-VL-7B's vision tower (0.68 of its 8.29 B) encodes each image
    /// once, in the prefill: a generated token reads the 7.61 B language
    /// model, so one H100 decodes it at 0.7 x 3350 / (7.61 x 2) tokens/s.
    #[test]
    fn decoding_does_not_read_the_vision_tower() {
        let p = plan("Qwen/Qwen2.5-VL-7B-Instruct", "H100-80GB");
        assert_eq!((p.parameters_b, p.vision_parameters_b), (8.29, 0.68));
        assert_eq!(p.language_model_b(), (7.61, 7.61));
        let want = 0.7 * 3350e9 / (7.61e9 * 2.0);
        assert!(
            (p.decode_tokens_per_second() - want).abs() < 1e-6,
            "{} against {want}",
            p.decode_tokens_per_second()
        );
        assert_eq!(p.weights_read_b(64), 7.61);
    }

    /// Every TP rank keeps an MLA latent whole, and every rank reads it:
    /// DeepSeek-V2-Lite on two GPUs reads its cache twice a step.
    #[test]
    fn a_cache_that_tp_ranks_copy_is_read_by_every_copy() {
        let p = size(&SizingRequest {
            model_id: "deepseek-ai/DeepSeek-V2-Lite".into(),
            gpu_type: "H100-80GB".into(),
            gpu_count: Some(2),
            mig: MigChoice::None,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(p.tensor_parallel_size, 2);
        let (full, per_gpu) = (
            p.estimate.kv_bytes_per_token,
            p.estimate.kv_bytes_per_token_per_gpu,
        );
        assert_eq!(per_gpu, full, "each rank holds the whole latent");
        let t = p.batched_decode(4096);
        let read = p.weights_read_b(u64::from(t.batch)) * 1e9 * 2.0;
        let kv = f64::from(t.batch) * p.cached_tokens(4096) as f64 * per_gpu * 2.0;
        let step = (read + kv) / (p.decode_tokens_per_second() * p.active_parameters_b * 1e9 * 2.0);
        assert!((t.tokens_per_second - f64::from(t.batch) / step).abs() < 1e-6);
    }

    /// Of every mixture in the catalog, a larger batch never reads fewer
    /// weights, and no batch reads fewer than one sequence or more than all.
    #[test]
    fn a_larger_batch_of_a_mixture_reads_more_weights_up_to_all_of_them() {
        let mut sized = 0;
        for m in models().iter().filter(|m| m.experts > 0) {
            let Ok(p) = size(&SizingRequest {
                model_id: m.id.clone(),
                gpu_type: "H200".into(),
                mig: MigChoice::None,
                ..Default::default()
            }) else {
                continue;
            };
            let (total, active) = p.language_model_b();
            let mut last = p.weights_read_b(1);
            assert_eq!(last, active, "{}", m.id);
            for batch in 2..=p.engine_max_num_seqs() {
                let read = p.weights_read_b(batch);
                assert!(read >= last && read <= total, "{} at {batch}", m.id);
                last = read;
            }
            sized += 1;
        }
        assert!(sized >= 15, "only {sized} mixtures sized");
    }

    /// Of a mixture the engine knows only by its counts (8x7B: 56 B, 14 B
    /// active), a batch is taken to read every weight.
    #[test]
    fn a_mixture_of_unknown_experts_reads_every_weight_in_a_batch() {
        let p = plan("acme/Foo-8x7B", "H100-80GB");
        assert_eq!((p.parameters_b, p.active_parameters_b), (56.0, 14.0));
        assert_eq!(p.experts_touched(8), None);
        assert_eq!(p.weights_read_b(1), 14.0);
        assert_eq!(p.weights_read_b(8), 56.0);
    }

    #[test]
    fn a_batch_beats_one_sequence_and_a_longer_context_never_speeds_it_up() {
        let p = plan("meta-llama/Llama-3.1-8B-Instruct", "L4");
        let short = p.batched_decode(1024);
        let long = p.batched_decode(16384);
        assert!(short.tokens_per_second > p.decode_tokens_per_second());
        assert!(long.tokens_per_second <= short.tokens_per_second);
        assert!(short.batch >= long.batch);
        let huge = p.batched_decode(u64::MAX);
        assert_eq!(
            huge.batch, 1,
            "a context longer than the cache still decodes one sequence"
        );
    }
}
