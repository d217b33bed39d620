//! Which vLLM releases can start a model and a GPU: vLLM adds model
//! architectures release by release, drops some, and leaves GPUs older than
//! its builds behind. A release that cannot load the model or run on the GPU
//! fails at start-up whatever the memory, so the plan refuses it rather than
//! compose a pod that crashes, and warns when the release is not known.

use super::error::SizingError;
use super::gpus::{ComputeCapability, Gpu};
use super::memory::{CHECKED_RELEASE, Release, release, release_text};
use super::plan::SizingRequest;

/// The first vLLM release that does not run on Volta (V100, compute
/// capability 7.0): 0.20.0 moved to PyTorch 2.11, whose CUDA 12.8 and 13
/// builds dropped Volta (pytorch/pytorch#172352; vllm-project/vllm#39878
/// made CUDA 13 the default), and vLLM's installation guide since asks for
/// 7.5. 0.19 runs on PyTorch 2.10, which still has it.
const WITHOUT_VOLTA: Release = (0, 20, 0);

/// Refuses a GPU older than the plan's vLLM release runs on; warns when the
/// release is unknown.
pub(crate) fn gpu_check(gpu: &Gpu, req: &SizingRequest) -> Result<Option<String>, SizingError> {
    let Some(sm) = gpu.sm.filter(|&sm| sm < ComputeCapability::TURING) else {
        return Ok(None);
    };
    let from = release_text(WITHOUT_VOLTA);
    match plan_release(req) {
        Some((v, r)) if r >= WITHOUT_VOLTA => Err(SizingError::GpuRetired {
            gpu: gpu.name.clone(),
            sm: sm.to_string(),
            release: v,
            from,
        }),
        Some(_) => Ok(None),
        None => Ok(Some(format!(
            "{} is a GPU of compute capability {sm}, which vLLM runs only before release {from}: the pods start only \
             if the image runs an earlier vLLM",
            gpu.name
        ))),
    }
}

/// The release the plan is for, as written (without a leading `v`) and as
/// numbers, when it is known.
fn plan_release(req: &SizingRequest) -> Option<(String, Release)> {
    let v = req.vllm_version.as_deref()?;
    Some((v.strip_prefix('v').unwrap_or(v).to_string(), release(v)?))
}

/// Each architecture with the last vLLM release that loads it, as vLLM's
/// model registry lists them (`_PREVIOUSLY_SUPPORTED_MODELS` in
/// `vllm/model_executor/models/registry.py`, as of 0.34.0): those that
/// generate text. The encoder-decoder models went with the V0 engine after
/// 0.10.2; Whisper alone stayed.
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
    ("MusicFlamingoForConditionalGeneration", (0, 24, 0)),
    ("AyaVisionForConditionalGeneration", (0, 24, 0)),
    ("TeleChatForCausalLM", (0, 25, 0)),
    ("PersimmonForCausalLM", (0, 25, 0)),
    ("FuyuForCausalLM", (0, 25, 0)),
    ("Plamo2ForCausalLM", (0, 26, 0)),
    ("OuroForCausalLM", (0, 26, 0)),
    ("ArcticForCausalLM", (0, 28, 0)),
    ("ChameleonForConditionalGeneration", (0, 28, 0)),
    ("CheersForConditionalGeneration", (0, 28, 0)),
    ("Fairseq2LlamaForCausalLM", (0, 28, 0)),
    ("HCXVisionForCausalLM", (0, 28, 0)),
    ("MPTForCausalLM", (0, 28, 0)),
    ("MptForCausalLM", (0, 28, 0)),
    ("RWForCausalLM", (0, 28, 0)),
    ("StableLMEpochForCausalLM", (0, 28, 0)),
    ("KeyeForConditionalGeneration", (0, 33, 0)),
    ("KeyeVL1_5ForConditionalGeneration", (0, 33, 0)),
];

/// Each architecture that generates text with the first vLLM release that
/// loads it, for those added since 0.10.2 (the registries of every release
/// from 0.10.2 to 0.34.0 compared, and the Transformers each requires): a
/// plan for an earlier release cannot start the model. The built-in images run 0.19.0 on
/// NVIDIA and 0.11.2 on AMD.
const ADDED: &[(&str, Release)] = &[
    ("DeepseekV32ForCausalLM", (0, 11, 0)),
    ("LongcatFlashForCausalLM", (0, 11, 0)),
    ("Olmo3ForCausalLM", (0, 11, 0)),
    ("Qwen3VLForConditionalGeneration", (0, 11, 0)),
    ("Qwen3VLMoeForConditionalGeneration", (0, 11, 0)),
    ("BailingMoeV2ForCausalLM", (0, 11, 0)),
    ("AfmoeForCausalLM", (0, 11, 1)),
    ("FlexOlmoForCausalLM", (0, 11, 1)),
    ("KimiLinearForCausalLM", (0, 11, 1)),
    ("MiniMaxM2ForCausalLM", (0, 11, 1)),
    ("PanguEmbeddedForCausalLM", (0, 11, 1)),
    ("PanguUltraMoEForCausalLM", (0, 11, 1)),
    ("Qwen3OmniMoeForConditionalGeneration", (0, 11, 1)),
    ("MistralLarge3ForCausalLM", (0, 12, 0)),
    ("HunYuanVLForConditionalGeneration", (0, 12, 0)),
    ("Plamo3ForCausalLM", (0, 12, 0)),
    ("IQuestCoderForCausalLM", (0, 14, 0)),
    ("MiMoV2FlashForCausalLM", (0, 14, 0)),
    ("PanguProMoEV2ForCausalLM", (0, 14, 0)),
    ("KimiK25ForConditionalGeneration", (0, 15, 0)),
    ("Step1ForCausalLM", (0, 15, 1)),
    ("Step3p5ForCausalLM", (0, 15, 1)),
    ("InternS1ProForConditionalGeneration", (0, 16, 0)),
    ("NemotronHPuzzleForCausalLM", (0, 16, 0)),
    ("AXK1ForCausalLM", (0, 17, 0)),
    ("BailingMoeV2_5ForCausalLM", (0, 17, 0)),
    ("Qwen3_5ForConditionalGeneration", (0, 17, 0)),
    ("Qwen3_5MoeForConditionalGeneration", (0, 17, 0)),
    ("HyperCLOVAXForCausalLM", (0, 18, 0)),
    ("OlmoHybridForCausalLM", (0, 18, 0)),
    ("SarvamMLAForCausalLM", (0, 18, 0)),
    ("SarvamMoEForCausalLM", (0, 18, 0)),
    // Listed earlier, but their config or model code needs Transformers 5
    // (vLLM's own test registry gives each a min_transformers_version past
    // 4.57), which vLLM's requirements keep below 5 until 0.20.0: GLM-5 from
    // 0.16.0, Gemma 4 from 0.19.0 (whose module imports transformers'
    // gemma4), GLM-4.7-Flash from 0.15.0, and the rest.
    ("AudioFlamingo3ForConditionalGeneration", (0, 20, 0)),
    ("CwmForCausalLM", (0, 20, 0)),
    ("ExaoneMoEForCausalLM", (0, 20, 0)),
    ("Gemma4ForCausalLM", (0, 20, 0)),
    ("Gemma4ForConditionalGeneration", (0, 20, 0)),
    ("Glm4MoeLiteForCausalLM", (0, 20, 0)),
    ("GlmMoeDsaForCausalLM", (0, 20, 0)),
    ("GlmOcrForConditionalGeneration", (0, 20, 0)),
    ("Jais2ForCausalLM", (0, 20, 0)),
    ("Lfm2MoeForCausalLM", (0, 20, 0)),
    ("Lfm2VlForConditionalGeneration", (0, 20, 0)),
    // Added with 0.20.0.
    ("DeepseekV4ForCausalLM", (0, 20, 0)),
    ("Exaone4_5_ForConditionalGeneration", (0, 20, 0)),
    ("HYV3ForCausalLM", (0, 20, 0)),
    ("Ministral3ForCausalLM", (0, 20, 0)),
    ("Param2MoEForCausalLM", (0, 20, 0)),
    ("Rnj1ForCausalLM", (0, 20, 0)),
    ("TeleChat3ForCausalLM", (0, 20, 0)),
    ("Cohere2MoeForCausalLM", (0, 21, 0)),
    ("LagunaForCausalLM", (0, 21, 0)),
    ("MiMoV2ForCausalLM", (0, 21, 0)),
    ("MiMoV2OmniForCausalLM", (0, 21, 0)),
    ("InternS2PreviewForConditionalGeneration", (0, 22, 0)),
    ("MellumForCausalLM", (0, 22, 1)),
    ("Gemma4UnifiedForConditionalGeneration", (0, 23, 0)),
    ("Step3p7ForConditionalGeneration", (0, 23, 0)),
    ("HrmTextForCausalLM", (0, 24, 0)),
    ("MiniMaxM3SparseForCausalLM", (0, 24, 0)),
    ("MiniMaxM3SparseForConditionalGeneration", (0, 24, 0)),
    ("LlavaOnevision2ForConditionalGeneration", (0, 25, 0)),
    ("InklingForCausalLM", (0, 26, 0)),
    ("InklingForConditionalGeneration", (0, 26, 0)),
    ("LongcatFlashNgramForCausalLM", (0, 26, 0)),
    ("ExaoneMoeForCausalLM", (0, 27, 0)),
    ("KimiK3ForConditionalGeneration", (0, 27, 0)),
    ("Qwen3_5ForCausalLM", (0, 27, 0)),
    ("Qwen3_5MoeForCausalLM", (0, 27, 0)),
    ("VaultGemmaForCausalLM", (0, 27, 0)),
    ("BailingMoeV3ForCausalLM", (0, 28, 0)),
    ("Dots3NoteForCausalLM", (0, 28, 0)),
    ("MuseGlimmerForCausalLM", (0, 28, 0)),
    ("MuseGlimmerForConditionalGeneration", (0, 28, 0)),
    ("GraniteMoeSWAForCausalLM", (0, 29, 0)),
    ("GraniteSWAForCausalLM", (0, 29, 0)),
    ("HYV4ForCausalLM", (0, 29, 0)),
    ("Qwen4ExpForCausalLM", (0, 29, 0)),
    ("Qwen4ExpForConditionalGeneration", (0, 29, 0)),
    ("BailingMoeV3VLForConditionalGeneration", (0, 30, 0)),
    ("DeepseekV41ForCausalLM", (0, 30, 0)),
    ("DeepseekV4ForConditionalGeneration", (0, 30, 0)),
    ("Glm5NextForCausalLM", (0, 30, 0)),
    ("Glm5NextForConditionalGeneration", (0, 30, 0)),
    ("K2HorizonForCausalLM", (0, 30, 0)),
    ("NanbeigeForCausalLM", (0, 30, 0)),
    ("MiniCPMV4_7ForConditionalGeneration", (0, 32, 0)),
    ("AliceAIForCausalLM", (0, 33, 0)),
    ("BeamForCausalLM", (0, 33, 0)),
    ("DomynEdgeForCausalLM", (0, 33, 0)),
    ("DoryForCausalLM", (0, 33, 0)),
    ("FlintForCausalLM", (0, 33, 0)),
    ("Kolibri1ForCausalLM", (0, 33, 0)),
    ("MuseSparkForConditionalGeneration", (0, 33, 0)),
    ("Step5ForCausalLM", (0, 33, 0)),
    ("Step5ForConditionalGeneration", (0, 33, 0)),
    ("KimiK31ForConditionalGeneration", (0, 34, 0)),
    ("Lfm3ForCausalLM", (0, 34, 0)),
    ("Lfm3VlForConditionalGeneration", (0, 34, 0)),
    ("MistralLarge4ForCausalLM", (0, 34, 0)),
    ("RicursiveForCausalLM", (0, 34, 0)),
    ("ZayaForCausalLM", (0, 34, 0)),
];

/// The architectures of popular checkpoints, known from their names
/// without a config.json: those vLLM retired or added since 0.10.2 (the
/// model catalog's among them). A name stands for a model when the model's
/// name is it or starts with it and a dash (`GLM-5.1-FP8`).
const BY_NAME: &[(&[&str], &str)] = &[
    (
        &[
            "llama-3.2-11b-vision",
            "llama-3.2-90b-vision",
            "llama-guard-3-11b-vision",
        ],
        "MllamaForConditionalGeneration",
    ),
    (&["phi-4-multimodal"], "Phi4MultimodalForCausalLM"),
    (&["deepseek-v3.2"], "DeepseekV32ForCausalLM"),
    (
        &["minimax-m2", "minimax-m2.1", "minimax-m2.5", "minimax-m2.7"],
        "MiniMaxM2ForCausalLM",
    ),
    (
        &["kimi-k2.5", "kimi-k2.6", "kimi-k2.7"],
        "KimiK25ForConditionalGeneration",
    ),
    (
        &["qwen3.5-27b", "qwen3.6-27b"],
        "Qwen3_5ForConditionalGeneration",
    ),
    (
        &[
            "qwen3.5-35b-a3b",
            "qwen3.5-122b-a10b",
            "qwen3.5-397b-a17b",
            "qwen3.6-35b-a3b",
        ],
        "Qwen3_5MoeForConditionalGeneration",
    ),
    (
        &[
            "gemma-4-e2b",
            "gemma-4-e4b",
            "gemma-4-26b-a4b",
            "gemma-4-31b",
        ],
        "Gemma4ForConditionalGeneration",
    ),
    (&["glm-5", "glm-5.1", "glm-5.2"], "GlmMoeDsaForCausalLM"),
    (
        &["deepseek-v4-flash", "deepseek-v4-pro"],
        "DeepseekV4ForCausalLM",
    ),
    (&["kimi-k3"], "KimiK3ForConditionalGeneration"),
];

/// The releases that load an architecture.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Loaded {
    /// Up to this release.
    UpTo(Release),
    /// From this release.
    From(Release),
}

impl Loaded {
    fn by(self, release: Release) -> bool {
        match self {
            Loaded::UpTo(last) => release <= last,
            Loaded::From(first) => release >= first,
        }
    }
}

/// The model's architecture, when it is one vLLM retired or added since
/// 0.10.2: from the config.json's `architectures`, else from the names of
/// popular checkpoints of one ([`BY_NAME`]).
fn architecture(req: &SizingRequest) -> Option<(&'static str, Loaded)> {
    let declared = req
        .model_config
        .as_ref()
        .map(|c| c.architectures.as_slice())
        .filter(|archs| !archs.is_empty());
    let name = req.model_id.rsplit('/').next()?.to_ascii_lowercase();
    let by_name = BY_NAME.iter().find_map(|(names, arch)| {
        names
            .iter()
            .any(|n| {
                name.strip_prefix(n)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
            })
            .then_some(*arch)
    });
    let is_it = |arch: &str| match declared {
        Some(archs) => archs.iter().any(|a| a == arch),
        None => by_name == Some(arch),
    };
    let retired = RETIRED.iter().map(|&(a, r)| (a, Loaded::UpTo(r)));
    let added = ADDED.iter().map(|&(a, r)| (a, Loaded::From(r)));
    retired.chain(added).find(|(arch, _)| is_it(arch))
}

/// Refuses a model whose architecture the plan's vLLM release does not
/// load (no longer, or not yet); warns when the release is unknown (a
/// platform's own image) and the one the function is built for does not
/// load it either.
pub(crate) fn architecture_check(req: &SizingRequest) -> Result<Option<String>, SizingError> {
    let Some((architecture, loaded)) = architecture(req) else {
        return Ok(None);
    };
    let model = req.model_id.clone();
    let Some((release, r)) = plan_release(req) else {
        // An image of a release the function does not know is taken to be
        // like the one it is built for.
        if loaded.by(CHECKED_RELEASE) {
            return Ok(None);
        }
        return Ok(Some(match loaded {
            Loaded::UpTo(last) => format!(
                "{model} is a {architecture} model, which vLLM loads only up to release {last}: the pods start \
                 only if the image runs vLLM {last} or earlier",
                last = release_text(last)
            ),
            Loaded::From(first) => format!(
                "{model} is a {architecture} model, which vLLM loads from release {first}: the pods start only \
                 if the image runs vLLM {first} or later",
                first = release_text(first)
            ),
        }));
    };
    if loaded.by(r) {
        return Ok(None);
    }
    Err(match loaded {
        Loaded::UpTo(last) => SizingError::ArchitectureRetired {
            model,
            architecture,
            last: release_text(last),
            release,
            instead: if architecture == "MllamaForConditionalGeneration" {
                "a vision model it runs, such as google/gemma-3-12b-it or \
                 mistralai/Mistral-Small-3.1-24B-Instruct-2503"
            } else {
                "a model it runs"
            },
        },
        Loaded::From(first) => SizingError::ArchitectureTooNew {
            model,
            architecture,
            first: release_text(first),
            release,
        },
    })
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
        let e = architecture_check(&request(
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
                architecture_check(&request("unsloth/Llama-3.2-90B-Vision", Some(ok))),
                Ok(None)
            );
        }
        let warning = architecture_check(&request("unsloth/Llama-3.2-90B-Vision", None)).unwrap();
        assert!(
            warning.is_some_and(|w| w.contains("only if the image runs vLLM 0.10.2 or earlier"))
        );
        // Llama Guard 3 Vision is built on it.
        assert!(matches!(
            architecture_check(&request(
                "meta-llama/Llama-Guard-3-11B-Vision",
                Some("0.19.0")
            )),
            Err(SizingError::ArchitectureRetired { .. })
        ));
        // Text-only Llama 3.2 and Llama Guard 3 are current.
        assert_eq!(
            architecture_check(&request("meta-llama/Llama-Guard-3-8B", Some("0.19.0"))),
            Ok(None)
        );
        assert_eq!(
            architecture_check(&request("meta-llama/Llama-3.2-3B-Instruct", Some("0.19.0"))),
            Ok(None)
        );
    }

    #[test]
    fn volta_runs_only_vllm_releases_before_0_20() {
        let check = |gpu: &str, vllm: Option<&str>| {
            gpu_check(
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
            architecture_check(&req),
            Err(SizingError::ArchitectureRetired { last, .. }) if last == "0.23.0"
        ));
        req.vllm_version = Some("0.19.0".into());
        assert_eq!(architecture_check(&req), Ok(None));
        // MPT, retired after 0.28.0, is no warning on an image of unknown
        // release: the release the function is built for loads it.
        let mut mpt = request("mosaicml/mpt-7b", None);
        mpt.model_config = Some(config("MPTForCausalLM"));
        assert_eq!(architecture_check(&mpt), Ok(None));
        mpt.vllm_version = Some("0.29.0".into());
        assert!(matches!(
            architecture_check(&mpt),
            Err(SizingError::ArchitectureRetired { last, .. }) if last == "0.28.0"
        ));
        // An architecture added since the release, declared by a config.
        let mut req = request("example/my-v4", Some("0.19.0"));
        req.model_config = Some(config("DeepseekV4ForCausalLM"));
        assert!(matches!(
            architecture_check(&req),
            Err(SizingError::ArchitectureTooNew { first, .. }) if first == "0.20.0"
        ));
        // The catalog's earliest additions, known by name.
        for (id, before, first) in [
            ("deepseek-ai/DeepSeek-V3.2-Exp", "0.10.2", "0.11.0"),
            ("MiniMaxAI/MiniMax-M2.5", "0.11.0", "0.11.1"),
        ] {
            assert!(
                matches!(
                    architecture_check(&request(id, Some(before))),
                    Err(SizingError::ArchitectureTooNew { first: f, .. }) if f == first
                ),
                "{id}"
            );
        }
        // The config's architecture wins over a name that looks retired.
        let mut req = request("example/Llama-3.2-11B-Vision-text-only", Some("0.19.0"));
        req.model_config = Some(config("LlamaForCausalLM"));
        assert_eq!(architecture_check(&req), Ok(None));
    }

    #[test]
    fn a_model_newer_than_the_release_is_refused_with_the_first_that_loads_it() {
        let e = architecture_check(&request("deepseek-ai/DeepSeek-V4-Pro", Some("0.19.0")))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "deepseek-ai/DeepSeek-V4-Pro is a DeepseekV4ForCausalLM model, which vLLM loads from release 0.20.0; \
             vLLM 0.19.0 cannot start it: serve it on an image of vLLM 0.20.0 or later, or serve a model vLLM \
             0.19.0 runs"
        );
        // That release and later ones load it; an unknown one is warned about.
        for ok in ["0.20.0", "v0.34.0"] {
            assert_eq!(
                architecture_check(&request("deepseek-ai/DeepSeek-V4-Flash", Some(ok))),
                Ok(None)
            );
        }
        assert_eq!(
            architecture_check(&request("sgl-project/DeepSeek-V4-Flash-FP8", None)),
            Ok(Some(
                "sgl-project/DeepSeek-V4-Flash-FP8 is a DeepseekV4ForCausalLM model, which vLLM loads from \
                 release 0.20.0: the pods start only if the image runs vLLM 0.20.0 or later"
                    .into()
            ))
        );
        // Architectures the release the function is built for loads are
        // not warned about on an image of unknown release.
        assert_eq!(
            architecture_check(&request("Qwen/Qwen3.5-27B", None)),
            Ok(None)
        );
        // GLM-5's config and Gemma 4's model need the Transformers 5 that
        // vLLM takes from 0.20.0.
        for glm5 in [
            "zai-org/GLM-5",
            "zai-org/GLM-5.1-FP8",
            "nvidia/GLM-5.2-NVFP4",
            "google/gemma-4-31B-it",
            "google/gemma-4-26B-A4B-it",
        ] {
            assert!(
                matches!(
                    architecture_check(&request(glm5, Some("0.19.0"))),
                    Err(SizingError::ArchitectureTooNew { first, .. }) if first == "0.20.0"
                ),
                "{glm5}"
            );
        }
        // A name only starts a model's name before a dash: DeepSeek-V4.1 is
        // another architecture, GLM-4.5 an older one.
        for other in [
            "deepseek-ai/DeepSeek-V4.1",
            "zai-org/GLM-4.5",
            "moonshotai/Kimi-K2-Instruct",
        ] {
            assert_eq!(
                architecture_check(&request(other, Some("0.19.0"))),
                Ok(None),
                "{other}"
            );
        }
    }

    /// The built-in AMD image runs vLLM 0.11.2: the catalog's models of
    /// architectures added since are refused there, with the release that
    /// would serve them, and served by the NVIDIA image's 0.19.0.
    #[test]
    fn the_catalog_models_added_since_0_11_2_are_refused_on_it() {
        let mut added: Vec<String> = crate::sizing::models()
            .iter()
            .flat_map(|m| std::iter::once(&m.id).chain(&m.aliases))
            .filter_map(
                |id| match architecture_check(&request(id, Some("0.11.2"))) {
                    Err(SizingError::ArchitectureTooNew { first, .. }) => {
                        assert_eq!(
                            architecture_check(&request(id, Some("0.19.0"))),
                            Ok(None),
                            "{id}"
                        );
                        Some(format!("{id} from {first}"))
                    }
                    Ok(None) => None,
                    other => panic!("{id}: {other:?}"),
                },
            )
            .collect();
        added.sort();
        assert_eq!(
            added,
            [
                "Qwen/Qwen3.5-122B-A10B from 0.17.0",
                "Qwen/Qwen3.5-27B from 0.17.0",
                "Qwen/Qwen3.5-35B-A3B from 0.17.0",
                "Qwen/Qwen3.5-397B-A17B from 0.17.0",
                "moonshotai/Kimi-K2.5 from 0.15.0",
            ]
        );
    }
}
