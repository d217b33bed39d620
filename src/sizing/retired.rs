//! What vLLM once ran and has dropped: model architectures, and GPUs older
//! than its builds. A release without one cannot start the model whatever
//! its memory, so the plan refuses it rather than compose a pod that
//! crashes at start-up, and warns when the release is not known.

use super::error::SizingError;
use super::gpus::{ComputeCapability, Gpu};
use super::memory::{Release, release, release_text};
use super::plan::SizingRequest;

/// The first vLLM release that does not run on Volta (V100, compute
/// capability 7.0): 0.20.0 moved to PyTorch 2.11, whose CUDA 12.8 and 13
/// builds dropped Volta (pytorch/pytorch#172352; vllm-project/vllm#39878
/// made CUDA 13 the default), and vLLM's installation guide since asks for
/// 7.5. 0.19 runs on PyTorch 2.10, which still has it.
const WITHOUT_VOLTA: Release = (0, 20, 0);

/// Refuses a GPU older than the plan's vLLM release runs on; warns when the
/// release is unknown.
pub(crate) fn retired_gpu_check(
    gpu: &Gpu,
    req: &SizingRequest,
) -> Result<Option<String>, SizingError> {
    let Some(sm) = gpu.sm.filter(|&sm| sm < ComputeCapability::TURING) else {
        return Ok(None);
    };
    let from = release_text(WITHOUT_VOLTA);
    match req.vllm_version.as_deref().map(|v| (v, release(v))) {
        Some((v, Some(r))) if r >= WITHOUT_VOLTA => Err(SizingError::GpuRetired {
            gpu: gpu.name.clone(),
            sm: sm.to_string(),
            release: v.strip_prefix('v').unwrap_or(v).to_string(),
            from,
        }),
        Some((_, Some(_))) => Ok(None),
        _ => Ok(Some(format!(
            "{} is a GPU of compute capability {sm}, which vLLM runs only before release {from}: the pods start only \
             if the image runs an earlier vLLM",
            gpu.name
        ))),
    }
}

/// Each architecture with the last vLLM release that loads it, as vLLM's
/// model registry lists them (`_PREVIOUSLY_SUPPORTED_MODELS` in
/// `vllm/model_executor/models/registry.py`). The encoder-decoder models
/// went with the V0 engine after 0.10.2; Whisper alone stayed.
const RETIRED: &[(&str, Release)] = &[
    ("MllamaForConditionalGeneration", (0, 10, 2)),
    ("DonutForConditionalGeneration", (0, 10, 2)),
    ("MotifForCausalLM", (0, 10, 2)),
    ("Phi3SmallForCausalLM", (0, 9, 2)),
    ("Phi4FlashForCausalLM", (0, 10, 2)),
    ("Phi4MultimodalForCausalLM", (0, 12, 0)),
    ("JAISLMHeadModel", (0, 22, 0)),
    ("InternLM2VEForCausalLM", (0, 23, 0)),
    ("InternLMForCausalLM", (0, 23, 0)),
    ("QWenLMHeadModel", (0, 23, 0)),
    ("QwenVLForConditionalGeneration", (0, 23, 0)),
    ("XverseForCausalLM", (0, 23, 0)),
    ("Dots1ForCausalLM", (0, 23, 0)),
    ("BambaForCausalLM", (0, 23, 0)),
    ("MiniMaxForCausalLM", (0, 23, 0)),
    ("MiniMaxText01ForCausalLM", (0, 23, 0)),
    ("MiniMaxM1ForCausalLM", (0, 23, 0)),
    ("MiniMaxVL01ForConditionalGeneration", (0, 23, 0)),
    ("BaiChuanForCausalLM", (0, 23, 0)),
    ("BaichuanForCausalLM", (0, 23, 0)),
    ("Tarsier2ForConditionalGeneration", (0, 23, 0)),
    ("AquilaModel", (0, 24, 0)),
    ("AquilaForCausalLM", (0, 24, 0)),
    ("Grok1ModelForCausalLM", (0, 24, 0)),
    ("Grok1ForCausalLM", (0, 24, 0)),
    ("TarsierForConditionalGeneration", (0, 24, 0)),
    ("MantisForConditionalGeneration", (0, 24, 0)),
    ("AyaVisionForConditionalGeneration", (0, 24, 0)),
    ("TeleChatForCausalLM", (0, 25, 0)),
    ("PersimmonForCausalLM", (0, 25, 0)),
    ("FuyuForCausalLM", (0, 25, 0)),
    ("Plamo2ForCausalLM", (0, 26, 0)),
    ("OuroForCausalLM", (0, 26, 0)),
];

/// The architecture of the model, when it is one vLLM retired: from the
/// config.json's `architectures`, else from the names of the popular
/// checkpoints of one (Llama 3.2 Vision and Llama Guard 3 Vision,
/// Phi-4-multimodal), which need no config to be known.
fn retired_architecture(req: &SizingRequest) -> Option<(&'static str, Release)> {
    let name = req.model_id.rsplit('/').next()?.to_ascii_lowercase();
    let llama_3_2_vision = ["llama-3.2-", "llama-guard-3-"]
        .iter()
        .any(|family| name.starts_with(family))
        && name.contains("-vision");
    let by_name = if llama_3_2_vision {
        Some("MllamaForConditionalGeneration")
    } else if name.starts_with("phi-4-multimodal") {
        Some("Phi4MultimodalForCausalLM")
    } else {
        None
    };
    let declared = req
        .model_config
        .as_ref()
        .map(|c| c.architectures.as_slice());
    RETIRED.iter().copied().find(|(arch, _)| match declared {
        Some(archs) if !archs.is_empty() => archs.iter().any(|a| a == arch),
        _ => by_name == Some(*arch),
    })
}

/// Refuses a model whose architecture the plan's vLLM release no longer
/// has; warns when the release is unknown (a platform's own image).
pub(crate) fn retired_architecture_check(
    req: &SizingRequest,
) -> Result<Option<String>, SizingError> {
    let Some((architecture, last)) = retired_architecture(req) else {
        return Ok(None);
    };
    let last_text = release_text(last);
    match req.vllm_version.as_deref().map(|v| (v, release(v))) {
        Some((v, Some(r))) if r > last => Err(SizingError::ArchitectureRetired {
            model: req.model_id.clone(),
            architecture,
            last: last_text,
            release: v.strip_prefix('v').unwrap_or(v).to_string(),
            instead: if architecture == "MllamaForConditionalGeneration" {
                "a vision model it runs, such as google/gemma-3-12b-it or \
                 mistralai/Mistral-Small-3.1-24B-Instruct-2503"
            } else {
                "a model it runs"
            },
        }),
        Some((_, Some(_))) => Ok(None),
        _ => Ok(Some(format!(
            "{} is a {architecture} model, which vLLM loads only up to release {last_text}: the pods start only if \
             the image runs vLLM {last_text} or earlier",
            req.model_id
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::ModelConfig;

    fn request(model: &str, vllm: Option<&str>) -> SizingRequest {
        SizingRequest {
            model_id: model.into(),
            gpu_type: "L40S".into(),
            vllm_version: vllm.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn llama_3_2_vision_is_refused_after_0_10_2() {
        let e = retired_architecture_check(&request(
            "meta-llama/Llama-3.2-11B-Vision-Instruct",
            Some("0.19.0"),
        ))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "meta-llama/Llama-3.2-11B-Vision-Instruct is a MllamaForConditionalGeneration model, which vLLM \
             loads only up to release 0.10.2; vLLM 0.19.0 cannot start it: serve a vision model it runs, such as \
             google/gemma-3-12b-it or mistralai/Mistral-Small-3.1-24B-Instruct-2503, or an image of vLLM 0.10.2 \
             or earlier"
        );
        // Its own release serves it; an unknown one is warned about.
        for ok in ["0.10.2", "0.9.1"] {
            assert_eq!(
                retired_architecture_check(&request("unsloth/Llama-3.2-90B-Vision", Some(ok))),
                Ok(None)
            );
        }
        let warning =
            retired_architecture_check(&request("unsloth/Llama-3.2-90B-Vision", None)).unwrap();
        assert!(
            warning.is_some_and(|w| w.contains("only if the image runs vLLM 0.10.2 or earlier"))
        );
        // Llama Guard 3 Vision is built on it.
        assert!(matches!(
            retired_architecture_check(&request(
                "meta-llama/Llama-Guard-3-11B-Vision",
                Some("0.19.0")
            )),
            Err(SizingError::ArchitectureRetired { .. })
        ));
        // Text-only Llama 3.2 and Llama Guard 3 are current.
        assert_eq!(
            retired_architecture_check(&request("meta-llama/Llama-Guard-3-8B", Some("0.19.0"))),
            Ok(None)
        );
        assert_eq!(
            retired_architecture_check(&request(
                "meta-llama/Llama-3.2-3B-Instruct",
                Some("0.19.0")
            )),
            Ok(None)
        );
    }

    #[test]
    fn volta_runs_only_vllm_releases_before_0_20() {
        let check = |gpu: &str, vllm: Option<&str>| {
            retired_gpu_check(
                crate::sizing::gpu(gpu).unwrap(),
                &request("Qwen/Qwen2.5-7B-Instruct", vllm),
            )
        };
        assert!(matches!(
            check("V100", Some("v0.20.0")),
            Err(SizingError::GpuRetired { release, .. }) if release == "0.20.0"
        ));
        assert!(matches!(
            check("V100-32GB-PCIe", Some("0.26.0")),
            Err(SizingError::GpuRetired { .. })
        ));
        assert_eq!(check("V100", Some("0.19.0")), Ok(None));
        assert!(check("V100", None).unwrap().is_some());
        assert!(check("V100", Some("latest")).unwrap().is_some());
        // Turing and newer, and AMD's GPUs, run every release.
        for gpu in ["T4", "H100-80GB", "MI300X"] {
            assert_eq!(check(gpu, Some("0.26.0")), Ok(None), "{gpu}");
            assert_eq!(check(gpu, None), Ok(None), "{gpu}");
        }
    }

    #[test]
    fn a_config_json_names_the_architecture() {
        let config = |arch: &str| {
            ModelConfig::from_json(&format!(
                r#"{{"architectures":["{arch}"],"hidden_size":4096,"num_attention_heads":32,
                "num_hidden_layers":32,"vocab_size":64000}}"#
            ))
            .unwrap()
        };
        let mut req = request("example/my-baichuan", Some("0.24.0"));
        req.model_config = Some(config("BaichuanForCausalLM"));
        assert!(matches!(
            retired_architecture_check(&req),
            Err(SizingError::ArchitectureRetired { last, .. }) if last == "0.23.0"
        ));
        req.vllm_version = Some("0.19.0".into());
        assert_eq!(retired_architecture_check(&req), Ok(None));
        // The config's architecture wins over a name that looks retired.
        let mut req = request("example/Llama-3.2-11B-Vision-text-only", Some("0.19.0"));
        req.model_config = Some(config("LlamaForCausalLM"));
        assert_eq!(retired_architecture_check(&req), Ok(None));
    }
}
