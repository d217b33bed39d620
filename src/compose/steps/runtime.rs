//! Which runtime serves a plan: the production-stack operator's
//! `VLLMRuntime`, a plain `Deployment`, or a `LeaderWorkerSet` across nodes.
//!
//! The operator runs one pod per replica with a CUDA command and a fixed
//! 2,120 s startup probe, so it cannot serve a plan that spans nodes, an AMD
//! GPU, a checkpoint that loads too slowly without a weights volume, an API
//! key from a Secret, more than one pull secret, or the platform's
//! PriorityClass, ServiceAccount or scheduler. A Deployment lifts all but the first; a LeaderWorkerSet
//! lifts that one too. `auto` takes the first of them that serves the plan,
//! so the operator's users keep it wherever it works. An explicit choice
//! that cannot serve the plan is refused with the runtime that would.

use crate::compose::composition::Refusal;
use crate::compose::resources::vllm_runtime::unsupported_gpu;
use crate::compose::steps::weights_cache::{self, CacheDecision, VolumeScope};
use crate::input::{PodSettingField, WeightsCacheSettings};
use crate::sizing::{self, Plan, WeightPrecision};
use crate::xr::shared_fields::{PullSecrets, RuntimeChoice};

/// A runtime that serves a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runtime {
    /// The production-stack operator's `VLLMRuntime`.
    Operator,
    Deployment,
    LeaderWorkerSet,
}

impl Runtime {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Operator => "vllm-runtime",
            Self::Deployment => "deployment",
            Self::LeaderWorkerSet => "leader-worker-set",
        }
    }
}

/// The runtime an XR asked for and the field that asked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Asked {
    pub(crate) choice: RuntimeChoice,
    /// `spec.runtime` or `input.defaults.runtime`.
    pub(crate) field: &'static str,
}

impl Asked {
    /// `spec` when the XR sets it, else the platform's default.
    pub(crate) fn new(spec: Option<RuntimeChoice>, default: RuntimeChoice) -> Self {
        match spec {
            Some(choice) => Self {
                choice,
                field: "spec.runtime",
            },
            None => Self {
                choice: default,
                field: "input.defaults.runtime",
            },
        }
    }
}

/// What a model server's pods need that a VLLMRuntime cannot give them.
#[derive(Clone, Copy, Debug)]
pub(crate) enum OperatorCannotGive<'a> {
    /// An API key read from a Secret (named at the field): the operator's
    /// environment holds only literal values.
    ApiKeyFromSecret(&'a str),
    /// More than one pull secret: the operator takes one.
    PullSecrets(&'a PullSecrets),
    /// The bucket's keys in the Model's Secret: the operator's environment
    /// holds only literal values.
    StorageKeys(&'a str),
    /// What the platform gives the model servers' pods (a PriorityClass,
    /// a ServiceAccount, a scheduler): the operator's pods take none.
    PodSetting(PodSetting<'a>),
}

/// A name the platform's step input gives the model servers' pods.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PodSetting<'a> {
    field: &'static PodSettingField,
    value: &'a str,
}

impl<'a> PodSetting<'a> {
    /// The first name the platform gives the model servers' pods.
    pub(crate) fn first_of(settings: &'a crate::input::Settings) -> Option<Self> {
        settings
            .model_server_pod_settings()
            .into_iter()
            .find_map(|(field, value)| {
                Some(Self {
                    field,
                    value: value?,
                })
            })
    }
}

impl<'a> OperatorCannotGive<'a> {
    /// The first thing the pods need that the operator cannot give.
    pub(crate) fn of(
        api_key_field: Option<&'a str>,
        pull_secrets: &'a PullSecrets,
        storage_keys: Option<&'a str>,
        pod_setting: Option<PodSetting<'a>>,
    ) -> Option<Self> {
        if let Some(field) = api_key_field {
            Some(Self::ApiKeyFromSecret(field))
        } else if pull_secrets.names.len() > 1 {
            Some(Self::PullSecrets(pull_secrets))
        } else {
            storage_keys
                .map(Self::StorageKeys)
                .or(pod_setting.map(Self::PodSetting))
        }
    }

    /// The refusal of a VLLMRuntime that was asked for.
    fn refusal(self) -> Refusal {
        let message = match self {
            Self::ApiKeyFromSecret(field) => format!(
                "{field}: a VLLMRuntime's environment (vllmConfig.env) holds only literal values, so the key would \
                 stand in plain text in it; set spec.runtime to deployment or leader-worker-set, whose pods read \
                 VLLM_API_KEY from the Secret"
            ),
            Self::PullSecrets(p) => format!(
                "{}: the model server's pods would pull with {} Secrets ({}), but a VLLMRuntime takes one \
                 (spec.deploymentConfig.image.pullSecretName); name one Secret that holds every registry's \
                 credentials, or set spec.runtime to deployment",
                p.field,
                p.names.len(),
                p.names.join(", ")
            ),
            Self::StorageKeys(secret) => format!(
                "the Model's spec.storageSecretRef: a VLLMRuntime's environment (vllmConfig.env) holds only literal \
                 values, so it cannot take the bucket's keys from Secret {secret}; set spec.runtime to deployment \
                 or leader-worker-set (or auto), whose pods take them as their environment"
            ),
            Self::PodSetting(p) => format!(
                "input.defaults.{}: the platform gives model servers the {} {}, but a VLLMRuntime's pods take \
                 none (its deploymentConfig has no field for one); set spec.runtime to deployment or \
                 leader-worker-set (or auto)",
                p.field.name, p.field.what, p.value
            ),
        };
        Refusal::new("CannotStart", message)
    }

    /// Why auto serves on a Deployment instead.
    fn why_a_deployment(self) -> String {
        match self {
            Self::ApiKeyFromSecret(field) => format!(
                "a VLLMRuntime's environment holds only literal values, so it cannot read {field}'s key from the \
                 Secret; a Deployment's pods read VLLM_API_KEY from it"
            ),
            Self::PullSecrets(p) => format!(
                "a VLLMRuntime pulls with one Secret, and {} names {} ({}); a Deployment's pods pull with each",
                p.field,
                p.names.len(),
                p.names.join(", ")
            ),
            Self::StorageKeys(secret) => format!(
                "a VLLMRuntime's environment holds only literal values, so it cannot take the bucket's keys from \
                 Secret {secret} (the Model's spec.storageSecretRef); a Deployment's pods take them as their \
                 environment"
            ),
            Self::PodSetting(p) => format!(
                "a VLLMRuntime's pods take no {}, and the platform gives model servers {} (input.defaults.{}); \
                 a Deployment's pods {}",
                p.field.what, p.value, p.field.name, p.field.on_a_deployment
            ),
        }
    }
}

/// The runtime for `plan`, with the sentence the plan's reasons carry.
/// `operator_cannot_start` says why the VLLMRuntime's fixed startup probe
/// cannot load the checkpoint, when no weights volume can rescue it;
/// `cannot_give`, what else the operator cannot give the pods. `fit` names
/// the fields a refusal of a plan across nodes advises changing (per XR
/// kind); `gpu_field` names the field that chose the GPU type.
pub(crate) fn choose(
    asked: Asked,
    plan: &Plan,
    operator_cannot_start: Option<&str>,
    cannot_give: Option<OperatorCannotGive>,
    fit: &FitFields,
    gpu_field: &str,
) -> Result<(Runtime, String), Refusal> {
    let Asked { choice, field } = asked;
    let what_would_fit = what_would_fit(plan, fit);
    let nodes = plan.nodes;
    let across_nodes = || {
        format!(
            "one replica of {} needs {} {} GPUs on {nodes} nodes (tensor parallel {} x pipeline parallel {})",
            plan.model_id,
            plan.gpu_count,
            plan.gpu.name,
            plan.tensor_parallel_size,
            plan.pipeline_parallel_size
        )
    };
    let runtime = match choice {
        RuntimeChoice::VllmRuntime => {
            if nodes > 1 {
                return Err(Refusal::new(
                    "DoesNotFitOnePod",
                    format!(
                        "{field} is vllm-runtime, but {}, and a VLLMRuntime runs each replica as one pod on one \
                         node; set spec.runtime to leader-worker-set (or auto) to serve it across nodes, or {what_would_fit}",
                        across_nodes()
                    ),
                ));
            }
            if let Some(why) = unsupported_gpu(plan) {
                return Err(Refusal::new(
                    "UnsupportedGpu",
                    format!(
                        "{gpu_field}: {why}; or set spec.runtime to deployment (or auto), which runs the ROCm \
                         build of vLLM"
                    ),
                ));
            }
            if let Some(why) = operator_cannot_start {
                return Err(Refusal::new(
                    "CannotStart",
                    format!(
                        "{why}; or set spec.runtime to deployment (or auto), whose startup probe covers the load"
                    ),
                ));
            }
            if let Some(lack) = cannot_give {
                let mut refusal = lack.refusal();
                // A user who named no runtime learns where it came from.
                if field == "input.defaults.runtime" {
                    refusal.message.push_str(
                        " (spec.runtime is unset, and the platform's input.defaults.runtime is vllm-runtime)",
                    );
                }
                return Err(refusal);
            }
            return Ok((
                Runtime::Operator,
                format!(
                    "Runtime: vllm-runtime ({field}), the vLLM production-stack operator's VLLMRuntime: one pod per \
                     replica."
                ),
            ));
        }
        RuntimeChoice::Deployment => {
            if nodes > 1 {
                return Err(Refusal::new(
                    "DoesNotFitOnePod",
                    format!(
                        "{field} is deployment, but {}, and a Deployment runs each replica as one pod on one node; \
                         set spec.runtime to leader-worker-set (or auto) to serve it across nodes, or {what_would_fit}",
                        across_nodes()
                    ),
                ));
            }
            (
                Runtime::Deployment,
                format!(
                    "Runtime: deployment ({field}): a Deployment and a Service, one pod per replica, with a startup \
                     probe that covers the load-time estimate."
                ),
            )
        }
        RuntimeChoice::LeaderWorkerSet => (
            Runtime::LeaderWorkerSet,
            format!(
                "Runtime: leader-worker-set ({field}): one LeaderWorkerSet group of {nodes} pod(s) per replica, \
                 {} GPUs each, the leader serving (tensor parallel {} x pipeline parallel {}).",
                plan.gpus_per_pod(),
                plan.tensor_parallel_size,
                plan.pipeline_parallel_size
            ),
        ),
        RuntimeChoice::Auto => {
            if nodes > 1 {
                (
                    Runtime::LeaderWorkerSet,
                    format!(
                        "Runtime: leader-worker-set ({field} auto): {}, so each replica is a LeaderWorkerSet group \
                         of {nodes} pods with {} GPUs each, the leader running the Ray head and vllm serve, the \
                         others joining it.",
                        across_nodes(),
                        plan.gpus_per_pod()
                    ),
                )
            } else if unsupported_gpu(plan).is_some() {
                (
                    Runtime::Deployment,
                    format!(
                        "Runtime: deployment ({field} auto): {} is an {} GPU, which the VLLMRuntime's CUDA command \
                         cannot use; a Deployment runs the ROCm vLLM image.",
                        plan.gpu.name,
                        plan.gpu.vendor.to_ascii_uppercase()
                    ),
                )
            } else if let Some(why) = operator_cannot_start {
                (
                    Runtime::Deployment,
                    format!(
                        "Runtime: deployment ({field} auto): the VLLMRuntime cannot start it ({why}); a \
                         Deployment's startup probe covers the load-time estimate."
                    ),
                )
            } else if let Some(lack) = cannot_give {
                (
                    Runtime::Deployment,
                    format!(
                        "Runtime: deployment ({field} auto): {}.",
                        lack.why_a_deployment()
                    ),
                )
            } else {
                (
                    Runtime::Operator,
                    format!(
                        "Runtime: vllm-runtime ({field} auto): one NVIDIA node serves a replica and the checkpoint \
                         loads within the operator's fixed startup probe (or on a weights volume), so the \
                         production-stack operator's VLLMRuntime serves it."
                    ),
                )
            }
        }
    };
    Ok(runtime)
}

/// Why a runtime cannot serve a plan, for a Model's per-GPU plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unserved {
    /// A replica needs several nodes, and the runtime runs it as one pod.
    AcrossNodes,
    /// The GPU is not NVIDIA, and the runtime is the operator's.
    NotNvidia,
}

/// Why the runtime `choice` cannot serve `plan`; `None` when it can (auto
/// and leader-worker-set serve every plan the sizing engine makes).
pub(crate) fn cannot_serve(choice: RuntimeChoice, plan: &Plan) -> Option<Unserved> {
    match choice {
        RuntimeChoice::VllmRuntime if unsupported_gpu(plan).is_some() => Some(Unserved::NotNvidia),
        RuntimeChoice::VllmRuntime | RuntimeChoice::Deployment if plan.nodes > 1 => {
            Some(Unserved::AcrossNodes)
        }
        _ => None,
    }
}

/// What a composer knows when it picks the runtime of its model server.
pub(crate) struct ServerChoice<'a> {
    pub(crate) asked: Asked,
    /// True when the Model's cachePolicy asks for a weights volume.
    pub(crate) requested_cache: bool,
    pub(crate) replicas: i32,
    /// What set the replica count, in words, for messages.
    pub(crate) replicas_from: &'a str,
    /// The field a refusal of the operator's volume names.
    pub(crate) operator_field: &'a str,
    /// What would fit when no runtime can serve the plan.
    pub(crate) fit: FitFields<'a>,
    pub(crate) gpu_field: &'a str,
}

/// The fields of an XR kind that would let one pod hold a plan.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FitFields<'a> {
    /// The GPU type's field, with examples if any.
    pub(crate) gpu: &'a str,
    pub(crate) precision: &'a str,
    pub(crate) context: &'a str,
}

/// "use a GPU type with more memory (...), a lower precision (... fp8 or
/// int4) or a shorter context (...)": only precisions below the plan's
/// that vLLM runs on its GPU type.
fn what_would_fit(plan: &Plan, f: &FitFields) -> String {
    let lower: Vec<&str> = [WeightPrecision::Fp8, WeightPrecision::Int4]
        .into_iter()
        .filter(|p| p.bytes_per_param() < plan.weight_precision.bytes_per_param())
        .filter(|p| sizing::runs_on(*p, plan.gpu, plan.vllm_release))
        .map(WeightPrecision::as_str)
        .collect();
    let precision = match lower.as_slice() {
        [] => String::new(),
        lower => format!(
            ", a lower precision ({} {})",
            f.precision,
            lower.join(" or ")
        ),
    };
    format!(
        "use a GPU type with more memory ({}){precision} or a shorter context ({})",
        f.gpu, f.context
    )
}

/// The runtime that serves `plan` (see [`choose`]) and the weights volume
/// it gets. The choice and the volume are added to the plan's reasons; the
/// sizing engine's warning that a plan across nodes needs a multi-node
/// runtime is dropped when a LeaderWorkerSet is that runtime.
pub(crate) fn choose_with_volume(
    c: &ServerChoice,
    cannot_give: Option<OperatorCannotGive>,
    plan: &mut Plan,
    settings: &WeightsCacheSettings,
) -> Result<(Runtime, CacheDecision), Refusal> {
    // The operator's volume, or why its fixed startup probe cannot work.
    let operator_cache = weights_cache::decide(
        c.requested_cache,
        plan,
        c.replicas,
        c.replicas_from,
        settings,
    )
    .map_err(|e| format!("{}: {e}", c.operator_field));
    let (runtime, why) = choose(
        c.asked,
        plan,
        operator_cache.as_ref().err().map(String::as_str),
        cannot_give,
        &c.fit,
        c.gpu_field,
    )?;
    plan.reasons.push(why);
    if runtime == Runtime::LeaderWorkerSet
        && let Some(answered) = plan.multi_node_warning()
    {
        plan.warnings.retain(|w| *w != answered);
    }
    let cache = match runtime {
        Runtime::Operator => operator_cache.unwrap_or_default(),
        Runtime::Deployment | Runtime::LeaderWorkerSet => weights_cache::decide_own_probe(
            c.requested_cache,
            plan,
            c.replicas,
            c.replicas_from,
            if runtime == Runtime::Deployment {
                VolumeScope::Shared
            } else {
                VolumeScope::PerPod
            },
            settings,
        ),
    };
    if let Some(v) = &cache.cache {
        plan.reasons.push(format!("Weights cache: {}.", v.applied));
    }
    Ok((runtime, cache))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::{self, MigChoice, SizingRequest, WeightPrecision};

    const FIT: FitFields = FitFields {
        gpu: "spec.gpuType",
        precision: "spec.quantization",
        context: "spec.maxModelLen",
    };

    fn plan(model: &str, gpu: &str, quantization: Option<WeightPrecision>) -> Plan {
        sizing::size(&SizingRequest {
            model_id: model.into(),
            gpu_type: gpu.into(),
            quantization,
            mig: MigChoice::None,
            ..Default::default()
        })
        .unwrap()
    }

    /// (why, choice, plan, why the operator cannot start it, expected runtime or refusal reason)
    type Case<'a> = (
        &'a str,
        RuntimeChoice,
        &'a Plan,
        Option<&'a str>,
        Result<Runtime, &'a str>,
    );

    fn asked(choice: RuntimeChoice) -> Asked {
        Asked::new(Some(choice), RuntimeChoice::VllmRuntime)
    }

    #[test]
    fn each_choice_serves_what_it_can_and_refuses_the_rest() {
        use RuntimeChoice as C;
        let one_node = plan("Qwen/Qwen2.5-7B-Instruct", "L4", None);
        let amd = plan("Qwen/Qwen2.5-7B-Instruct", "MI300X", None);
        let two_nodes = plan(
            "meta-llama/Llama-3.1-405B-Instruct",
            "H100-80GB",
            Some(WeightPrecision::Bf16),
        );
        assert_eq!(two_nodes.nodes, 2);
        let slow = Some("spec.replicas: loading takes too long");
        let cases: [Case; 13] = [
            (
                "operator, one NVIDIA node",
                C::VllmRuntime,
                &one_node,
                None,
                Ok(Runtime::Operator),
            ),
            (
                "operator, AMD",
                C::VllmRuntime,
                &amd,
                None,
                Err("UnsupportedGpu"),
            ),
            (
                "operator, two nodes",
                C::VllmRuntime,
                &two_nodes,
                None,
                Err("DoesNotFitOnePod"),
            ),
            (
                "operator, too slow",
                C::VllmRuntime,
                &one_node,
                slow,
                Err("CannotStart"),
            ),
            (
                "deployment, one node",
                C::Deployment,
                &one_node,
                None,
                Ok(Runtime::Deployment),
            ),
            (
                "deployment, AMD",
                C::Deployment,
                &amd,
                None,
                Ok(Runtime::Deployment),
            ),
            (
                "deployment, slow",
                C::Deployment,
                &one_node,
                slow,
                Ok(Runtime::Deployment),
            ),
            (
                "deployment, two nodes",
                C::Deployment,
                &two_nodes,
                None,
                Err("DoesNotFitOnePod"),
            ),
            (
                "lws, two nodes",
                C::LeaderWorkerSet,
                &two_nodes,
                None,
                Ok(Runtime::LeaderWorkerSet),
            ),
            (
                "lws, one node",
                C::LeaderWorkerSet,
                &one_node,
                None,
                Ok(Runtime::LeaderWorkerSet),
            ),
            (
                "auto, one NVIDIA node",
                C::Auto,
                &one_node,
                None,
                Ok(Runtime::Operator),
            ),
            ("auto, AMD", C::Auto, &amd, None, Ok(Runtime::Deployment)),
            (
                "auto, too slow for the operator",
                C::Auto,
                &one_node,
                slow,
                Ok(Runtime::Deployment),
            ),
        ];
        for (why, choice, plan, cannot_start, want) in cases {
            let got = choose(
                asked(choice),
                plan,
                cannot_start,
                None,
                &FIT,
                "spec.gpuType",
            )
            .map(|(r, reason)| {
                assert!(
                    reason.starts_with(&format!("Runtime: {} (spec.runtime", r.as_str())),
                    "{why}: {reason}"
                );
                r
            })
            .map_err(|r| r.reason);
            assert_eq!(got, want, "{why}");
        }
        let (runtime, _) =
            choose(asked(C::Auto), &two_nodes, None, None, &FIT, "spec.gpuType").unwrap();
        assert_eq!(runtime, Runtime::LeaderWorkerSet, "auto, two nodes");
    }

    #[test]
    fn the_advice_for_a_plan_across_nodes_names_only_lower_precisions() {
        let advice = |precision| {
            what_would_fit(
                &plan("meta-llama/Llama-3.1-405B-Instruct", "L4", Some(precision)),
                &FIT,
            )
        };
        let lower = |list: &str| {
            format!(
                "use a GPU type with more memory (spec.gpuType){list} or a shorter context (spec.maxModelLen)"
            )
        };
        assert_eq!(
            advice(WeightPrecision::Bf16),
            lower(", a lower precision (spec.quantization fp8 or int4)")
        );
        assert_eq!(
            advice(WeightPrecision::Fp8),
            lower(", a lower precision (spec.quantization int4)")
        );
        assert_eq!(advice(WeightPrecision::Int4), lower(""));
        // T4 cannot load fp8 weights: int4 alone.
        assert_eq!(
            what_would_fit(&plan("meta-llama/Llama-3.1-70B-Instruct", "T4", None), &FIT),
            lower(", a lower precision (spec.quantization int4)")
        );
    }

    #[test]
    fn a_model_reports_what_the_default_runtime_cannot_serve() {
        let two_nodes = plan(
            "meta-llama/Llama-3.1-405B-Instruct",
            "H100-80GB",
            Some(WeightPrecision::Bf16),
        );
        assert_eq!(
            cannot_serve(RuntimeChoice::VllmRuntime, &two_nodes),
            Some(Unserved::AcrossNodes)
        );
        assert_eq!(
            cannot_serve(RuntimeChoice::Deployment, &two_nodes),
            Some(Unserved::AcrossNodes)
        );
        assert_eq!(
            cannot_serve(RuntimeChoice::LeaderWorkerSet, &two_nodes),
            None
        );
        assert_eq!(cannot_serve(RuntimeChoice::Auto, &two_nodes), None);
        assert_eq!(two_nodes.gpus_per_pod(), 8);
    }
}
