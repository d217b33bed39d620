//! Requests and model ids the sizing steps' tests share.

use super::plan::SizingRequest;
use super::precision::MigChoice;

pub(crate) const QWEN_0_5B: &str = "Qwen/Qwen2.5-0.5B-Instruct";
pub(crate) const QWEN_1_5B: &str = "Qwen/Qwen2.5-1.5B-Instruct";
pub(crate) const QWEN_7B: &str = "Qwen/Qwen2.5-7B-Instruct";
pub(crate) const LLAMA_8B: &str = "meta-llama/Llama-3.1-8B-Instruct";
pub(crate) const LLAMA_70B: &str = "meta-llama/Llama-3.1-70B-Instruct";
pub(crate) const LLAMA_405B: &str = "meta-llama/Llama-3.1-405B-Instruct";
pub(crate) const FALCON_7B: &str = "tiiuae/falcon-7b";

/// A request for `model` on `gpu`, everything else at its default.
pub(crate) fn request(model: &str, gpu: &str) -> SizingRequest {
    SizingRequest {
        model_id: model.into(),
        gpu_type: gpu.into(),
        ..SizingRequest::default()
    }
}

/// The same without MIG, so that whole-GPU choices are what a test sees.
pub(crate) fn whole_gpus(model: &str, gpu: &str) -> SizingRequest {
    SizingRequest {
        mig: MigChoice::None,
        ..request(model, gpu)
    }
}
