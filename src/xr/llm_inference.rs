//! `LLMInference`: a model served by a sized vLLM runtime.
//!
//! dot-inference's fields (`model`, `gpu`, `ingressHost`,
//! `providerConfigName`, `targetNamespace`) keep their meaning, so its XRs
//! compose the same essentials; everything else is optional.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::model_server_autoscaling::{AutoscalingStatus, ModelServerAutoscaling};
use super::plan_status::PlanStatus;
use super::shared_fields::{
    API_KEY_KEY, CONTEXT_TOKENS_MAX, CONTEXT_TOKENS_MIN, Endpoint, GPU_TYPE_MAX,
    GPUS_PER_REPLICA_MAX, GatewayRef, HF_TOKEN_KEY, Image, MIG_PROFILE_MAX,
    MODEL_SERVER_REPLICAS_MAX, NameRef, PULL_SECRETS_MAX, RuntimeChoice, SecretKeyRef, Tls,
};
use super::sizing_vocabulary::{KvCacheDtype, Objective, WeightPrecision};
use super::validate::{at_most, model_id, required_text, text};
use crate::names::{require_dns1123_label, require_subdomain};

/// Kind name.
pub(crate) const KIND: &str = "LLMInference";

// Limits of its own fields (those the kinds share are in shared_fields):
// the schema and the check use the same constants.
/// Longest model id, in characters.
pub(crate) const MODEL_MAX: usize = 256;
/// Most extra vLLM arguments, and the longest one in characters.
pub(crate) const EXTRA_ARGS_MAX: usize = 64;
pub(crate) const EXTRA_ARG_MAX: usize = 4096;

/// The desired state of an LLMInference.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(
    extend("x-kubernetes-validations" = [
        {"rule": "has(self.model) || has(self.modelRef)", "message": "set model (a Hugging Face id) or modelRef (a Model)"},
        {"rule": "!(has(self.model) && has(self.modelRef))", "message": "set model or modelRef, not both"}
    ])
)]
pub(crate) struct LlmInferenceSpec {
    /// Hugging Face model id, for example Qwen/Qwen2.5-1.5B-Instruct (not an hf:// or https:// URI), or an absolute path to weights in the image. Required unless modelRef is set.
    #[schemars(length(min = 1, max = MODEL_MAX))]
    pub(crate) model: Option<String>,
    /// A Model in this namespace whose weights to serve, instead of model.
    pub(crate) model_ref: Option<NameRef>,
    /// GPUs per replica. Derived from the model and the GPU type when omitted; checked when given.
    #[schemars(range(min = 1, max = GPUS_PER_REPLICA_MAX))]
    pub(crate) gpu: Option<i64>,
    /// GPU type, for example L4, A100-80GB or H100-80GB. Defaults to the platform's default type, or, where the platform offers several and names none, the cheapest offered type that serves the model (status.plan.reasons says why).
    #[schemars(length(min = 1, max = GPU_TYPE_MAX))]
    pub(crate) gpu_type: Option<String>,
    /// Weight precision: auto (from the model) or fp32, bf16, fp16, fp8, int8, int4, fp4.
    #[serde(
        default,
        deserialize_with = "super::sizing_vocabulary::auto_or_precision"
    )]
    #[schemars(schema_with = "super::sizing_vocabulary::auto_or_precision_schema")]
    pub(crate) quantization: Option<WeightPrecision>,
    /// Context length in tokens. Derived (and capped to what fits) when omitted.
    #[schemars(range(min = CONTEXT_TOKENS_MIN, max = CONTEXT_TOKENS_MAX))]
    pub(crate) max_model_len: Option<i64>,
    /// Parameter count for models the catalog does not know and whose id does not say, for example 70B or 8x7B.
    #[schemars(regex(pattern = r"^[0-9]+(\.[0-9]+)?([xX][0-9]+(\.[0-9]+)?)?[MmBbTt]$"))]
    pub(crate) parameter_count: Option<String>,
    /// MIG: auto (a slice when the model is small enough), none, or a profile such as 1g.10gb.
    #[schemars(length(min = 1, max = MIG_PROFILE_MAX))]
    pub(crate) mig_profile: Option<String>,
    /// vLLM's KV cache dtype: auto (the model's) or fp8 (half the memory per token). Defaults to the Model's with modelRef, else auto.
    pub(crate) kv_cache_dtype: Option<KvCacheDtype>,
    /// What the layout is chosen for: minimal (fewest GPUs that start), balanced (room for the stated maxModelLen, else the recipes' headroom) or throughput (room for a batch). Defaults to the Model's with modelRef, else the platform's (step input).
    pub(crate) objective: Option<Objective>,
    /// Model-server replicas, each with the plan's GPUs. Defaults to 1 (or the Model's data-parallel count with modelRef). More than 1 adds a PodDisruptionBudget, so drains evict one pod at a time. 0 keeps everything composed but runs no replica: nothing serves, and the XR is not Ready.
    #[schemars(range(min = 0, max = MODEL_SERVER_REPLICAS_MAX))]
    pub(crate) replicas: Option<i64>,
    /// Scale the replicas with load instead of fixing them (replaces replicas): the platform's autoscaler adds a replica above a per-replica number of in-flight requests that the sizing plan derives. The autoscaler owns the count: a new server starts at one replica and the autoscaler brings it to minReplicas; a running server keeps its replicas until the autoscaler first scales it.
    pub(crate) autoscaling: Option<ModelServerAutoscaling>,
    /// Secret holding a Hugging Face token, for gated models (key defaults to token).
    pub(crate) hf_token_secret_ref: Option<SecretKeyRef>,
    /// Secret holding the API key clients must send (Authorization: Bearer) to the OpenAI API under /v1, vLLM's VLLM_API_KEY (key defaults to api-key); /health and /metrics stay open for probes and Prometheus. The deployment and leader-worker-set runtimes take it; a VLLMRuntime's environment holds only literal values.
    pub(crate) api_key_secret_ref: Option<SecretKeyRef>,
    /// What serves the model: vllm-runtime (the production-stack operator), deployment (a plain Deployment and Service), leader-worker-set (multi-node, one LeaderWorkerSet group per replica) or auto (the one that can serve the plan). Defaults to the platform's (step input).
    pub(crate) runtime: Option<RuntimeChoice>,
    /// The vLLM image; defaults to the platform's (per runtime and GPU vendor).
    pub(crate) image: Option<Image>,
    /// Secrets to pull this XR's images with (type kubernetes.io/dockerconfigjson), after the platform's (step input defaults.imagePullSecrets), for an image from a private registry; they must exist where the pods run (the XR's namespace, or targetNamespace). A VLLMRuntime takes one in all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = PULL_SECRETS_MAX))]
    pub(crate) image_pull_secrets: Vec<NameRef>,
    /// Route the model through this Gateway with the Gateway API Inference Extension (an InferencePool, its endpoint picker and an HTTPRoute), instead of the platform's Gateway or none.
    pub(crate) gateway: Option<GatewayRef>,
    /// Host name for an Ingress to the model's OpenAI-compatible API. No Ingress when omitted.
    #[schemars(length(min = 1, max = 253))]
    pub(crate) ingress_host: Option<String>,
    /// IngressClass of the Ingress.
    pub(crate) ingress_class_name: Option<String>,
    /// Serve the Ingress over TLS with this Secret.
    pub(crate) tls: Option<Tls>,
    /// Extra vllm serve arguments, appended after the derived ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = EXTRA_ARGS_MAX))]
    pub(crate) extra_args: Vec<String>,
    /// provider-kubernetes ProviderConfig of the cluster to deploy to. Without it, resources are composed natively.
    #[schemars(length(min = 1, max = 253))]
    pub(crate) provider_config_name: Option<String>,
    /// Namespace in the target cluster (with providerConfigName). Defaults to the XR's namespace; without providerConfigName it does not apply and a warning says so.
    #[schemars(length(min = 1, max = 63))]
    pub(crate) target_namespace: Option<String>,
    /// Crossplane's own fields (composition selection and the like); skipped unread.
    #[schemars(skip)]
    pub(crate) crossplane: Option<crate::xr::shared_fields::CrossplaneFields>,
}

/// What the function reports about an LLMInference.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LlmInferenceStatus {
    /// Where to reach the model.
    pub(crate) endpoint: Option<Endpoint>,
    /// Copied from the plan for printer columns.
    pub(crate) gpu_count: Option<u32>,
    /// Copied from the plan for printer columns.
    pub(crate) gpu_type: Option<String>,
    /// The model served (from model or the referenced Model).
    pub(crate) model: Option<String>,
    /// The sizing plan.
    pub(crate) plan: Option<PlanStatus>,
    /// How the model server scales, when spec.autoscaling asks.
    pub(crate) autoscaling: Option<AutoscalingStatus>,
    /// "True" when the runtime serves, as dot-inference reported it.
    pub(crate) ready: Option<String>,
    /// What serves the model: vllm-runtime, deployment or leader-worker-set (spec.runtime auto resolved).
    pub(crate) runtime: Option<String>,
    /// The layout that serves now: the current plan's once every replica runs it, the previous one while a
    /// rollout replaces it, none while nothing serves.
    pub(crate) serving_layout: Option<String>,
}

impl LlmInferenceSpec {
    /// What the schema cannot state (rules across fields, strings only the
    /// consumer would refuse): the first problem, naming the field and what
    /// would be valid. Ranges were checked as the spec was read
    /// ([`crate::de::from_object`]).
    pub(crate) fn validate(&self) -> Result<(), String> {
        if let Some(a) = &self.autoscaling {
            if let Some(r) = self.replicas {
                return Err(format!(
                    "spec.replicas ({r}) and spec.autoscaling are both set: with autoscaling the autoscaler sets the \
                     replicas between spec.autoscaling.minReplicas and maxReplicas; drop one of them"
                ));
            }
            a.range("spec.autoscaling")?;
        }
        check_strings(self)
    }
}

/// The string fields serde accepts as any string, checked for what
/// Kubernetes and the operator will accept.
fn check_strings(spec: &LlmInferenceSpec) -> Result<(), String> {
    if let Some(m) = &spec.model {
        text(
            "spec.model",
            m.trim(),
            MODEL_MAX,
            "Qwen/Qwen2.5-7B-Instruct",
        )?;
        model_id("spec.model", m.trim())?;
    }
    if let Some(g) = &spec.gpu_type {
        text(
            "spec.gpuType",
            g,
            GPU_TYPE_MAX,
            "L4, A100-80GB or H100-80GB",
        )?;
    }
    if let Some(m) = &spec.mig_profile {
        text(
            "spec.migProfile",
            m,
            MIG_PROFILE_MAX,
            "auto, none or 1g.10gb",
        )?;
    }
    if let Some(p) = &spec.parameter_count {
        text("spec.parameterCount", p, 32, "8B, 70B or 8x7B")?;
    }
    if let Some(r) = &spec.hf_token_secret_ref {
        r.check("spec.hfTokenSecretRef", "hf-token", HF_TOKEN_KEY)?;
    }
    if let Some(r) = &spec.api_key_secret_ref {
        r.check("spec.apiKeySecretRef", "qwen-api-key", API_KEY_KEY)?;
    }
    if let Some(i) = &spec.image {
        required_text("spec.image.registry", &i.registry, 253, "docker.io")?;
        required_text(
            "spec.image.name",
            &i.name,
            512,
            "lmcache/vllm-openai:v0.3.13",
        )?;
        i.check("spec.image")?;
    }
    // An empty host means no Ingress, as in dot-inference.
    if let Some(h) = spec.ingress_host.as_deref().filter(|h| !h.is_empty()) {
        require_subdomain("spec.ingressHost", h, "qwen.example.com")?;
    }
    if let Some(c) = &spec.ingress_class_name {
        require_subdomain("spec.ingressClassName", c, "nginx")?;
    }
    if let Some(t) = &spec.tls {
        require_subdomain("spec.tls.secretName", &t.secret_name, "qwen-tls")?;
    }
    if let Some(g) = &spec.gateway {
        super::shared_fields::check_gateway("spec.gateway", &g.name, g.namespace.as_deref())?;
    }
    if let Some(p) = &spec.provider_config_name {
        require_subdomain("spec.providerConfigName", p, "incluster")?;
    }
    if let Some(n) = &spec.target_namespace {
        require_dns1123_label("spec.targetNamespace", n, "inference")?;
    }
    at_most("spec.extraArgs", &spec.extra_args, EXTRA_ARGS_MAX)?;
    for (i, a) in spec.extra_args.iter().enumerate() {
        if a.chars().count() > EXTRA_ARG_MAX {
            return Err(format!(
                "spec.extraArgs[{i}] is {} characters long; use at most {EXTRA_ARG_MAX}",
                a.chars().count()
            ));
        }
    }
    Ok(())
}
