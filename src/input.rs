//! The function's step input: platform defaults a platform team sets once in
//! its Composition, so users' XRs stay small.
//!
//! ```yaml
//! input:
//!   apiVersion: inference.fn.crossplane.io/v1beta1
//!   kind: Input
//!   ttl: 60s
//!   defaults:
//!     gpuType: L4
//! ```
//!
//! Unknown fields are refused: a typo in a Composition should fail loudly,
//! not quietly fall back to a default.

use std::borrow::Cow;

use k8s_openapi::api::core::v1::Toleration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::sizing::{ComputeCapability, Gpu, WeightPrecision};
use crate::xr::shared_fields::{HF_TOKEN_KEY, SecretKeyRef};
pub(crate) use crate::xr::shared_fields::{Image, NameRef, PULL_SECRETS_MAX, RuntimeChoice};
use crate::xr::validate::at_most_chars;

/// API group of the step input.
pub(crate) const GROUP: &str = "inference.fn.crossplane.io";
/// API version of the step input.
pub(crate) const API_VERSION: &str = "inference.fn.crossplane.io/v1beta1";
/// Kind of the step input.
pub(crate) const KIND: &str = "Input";

/// The response's TTL when the input sets none (the SDKs' default).
pub(crate) const DEFAULT_TTL: std::time::Duration = std::time::Duration::from_secs(60);
/// Longest vLLM release (`0.19.0`) and Prometheus URL, in characters.
pub(crate) const VLLM_VERSION_MAX: usize = 64;
/// The share of each GPU's memory vLLM may be given: the schema states it,
/// the input's check, `size --gpu-memory-utilization` and an XR's extraArgs
/// hold to it ([`gpu_memory_utilization`]).
pub(crate) const GPU_MEMORY_UTILIZATION_MIN: f64 = 0.1;
pub(crate) const GPU_MEMORY_UTILIZATION_MAX: f64 = 0.99;

/// `written` as a share of each GPU's memory vLLM may be given, if it is one.
pub(crate) fn gpu_memory_utilization(written: &str) -> Option<f64> {
    written
        .parse()
        .ok()
        .filter(|u| (GPU_MEMORY_UTILIZATION_MIN..=GPU_MEMORY_UTILIZATION_MAX).contains(u))
}
const PROMETHEUS_ADDRESS_MAX: usize = 2048;

/// The step input of function-inference.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(description = "Input configures function-inference in a Composition's pipeline step.")]
pub(crate) struct Input {
    /// Must be inference.fn.crossplane.io/v1beta1.
    pub(crate) api_version: Option<String>,
    /// Must be Input.
    pub(crate) kind: Option<String>,
    /// Ignored; allowed so that the input can be written like any Kubernetes object.
    #[serde(default)]
    #[schemars(with = "Option<std::collections::BTreeMap<String, String>>")]
    pub(crate) metadata: Option<serde_json::Value>,
    /// The response's TTL, as a duration ("60s", "5m"). Crossplane v2 reconciles each XR again after it (give or take 10 %; realtime compositions, on by default), and with --enable-function-response-cache reuses the response for the same request until it ends. The Pods, Models and ConfigMaps the function reads are not watched: what changes in them shows on the XR within this time.
    #[serde(default, deserialize_with = "deserialize_ttl")]
    pub(crate) ttl: Option<kube_core::Duration>,
    /// Platform defaults applied where an XR leaves a field unset.
    pub(crate) defaults: Option<Defaults>,
}

/// Reads `ttl` with an error that shows the value and valid examples.
fn deserialize_ttl<'de, D>(d: D) -> Result<Option<kube_core::Duration>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::String(s) => crate::units::parse_duration(&s)
            .map(Some)
            .map_err(serde::de::Error::custom),
        other => Err(serde::de::Error::custom(format!(
            "{other} is not a duration; write one like 500ms, 30s, 5m or 1h30m"
        ))),
    }
}

/// Platform defaults.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Defaults {
    /// GPU type used when an XR names none (for example L4, A100-80GB, H100-80GB). Leave it unset and list offeredGpuTypes (or gpuPrices) to have the function choose the cheapest GPU type that serves each XR.
    pub(crate) gpu_type: Option<String>,
    /// GPU types the platform offers; a Model reports its serving plan on each, and with gpuType unset an XR that names no GPU type gets the cheapest of them. An XR that names another type (or a gpuType outside the list) is sized for it with a warning. Default: the GPU types of gpuPrices, else L4, L40S, A100-80GB and H100-80GB.
    pub(crate) offered_gpu_types: Option<Vec<String>>,
    /// Price of one GPU for one hour per GPU type (any currency, or relative costs such as 1 and 4.5), for example {L4: 0.8, H100-80GB: 4.1}: with gpuType unset, an XR that names no GPU type gets the cheapest replica. Each offered GPU type needs a price. Without prices the fewest GPUs win, then the smallest GPU type.
    pub(crate) gpu_prices: Option<std::collections::BTreeMap<String, f64>>,
    /// The vLLM image; the production-stack operator needs an lmcache/vllm-openai image.
    pub(crate) image: Option<Image>,
    /// Share of each GPU's memory vLLM may use (0.1 to 0.99).
    #[schemars(range(min = GPU_MEMORY_UTILIZATION_MIN, max = GPU_MEMORY_UTILIZATION_MAX))]
    pub(crate) gpu_memory_utilization: Option<f64>,
    /// Keep each model server on the GPU type it is sized for, with node affinity on the GPU type's node label (nvidia.com/gpu.product, GKE's cloud.google.com/gke-accelerator, EKS Auto Mode's eks.amazonaws.com/instance-gpu-name or Karpenter's karpenter.k8s.aws/instance-gpu-name on nodes without the first, AMD's amd.com/gpu.device-id, or AKS's Azure VM size as node.kubernetes.io/instance-type on nodes without the vendor's label), on whole GPUs rather than MIG slices, partitions or shared GPUs. Default: on where the function chooses GPU types (offeredGpuTypes or gpuPrices without gpuType), off otherwise, where a server may start on any GPU node.
    pub(crate) gpu_node_selector: Option<bool>,
    /// How the cluster's NVIDIA device plugin offers MIG slices, as the GPU Operator's mig.strategy says: mixed (the default) offers each profile as its own resource (nvidia.com/mig-1g.10gb); single offers the slices as nvidia.com/gpu, on nodes whose GPU feature discovery product label names the slice (NVIDIA-A100-SXM4-80GB-MIG-1g.10gb), as GKE's MIG node pools do with their partition size label. With single, a server sized for a MIG slice asks for one nvidia.com/gpu and node affinity on those labels, whatever gpuNodeSelector says: only the labels keep it on its slice.
    pub(crate) mig_strategy: Option<crate::sizing::MigStrategy>,
    /// Let the VLLMRuntime's pods tolerate the NoSchedule taint GPU nodes commonly carry (nvidia.com/gpu); the Deployment's and LeaderWorkerSet's always do. Default: on where the function chooses GPU types, as gpuNodeSelector, off otherwise.
    pub(crate) gpu_toleration: Option<bool>,
    /// While a model server or an AgentPool's agents do not serve, ask Crossplane for their pods to say why (a pod
    /// the scheduler cannot place, an image that cannot be pulled). Crossplane then keeps Pods in its cache and needs RBAC to list and
    /// watch them (true by default).
    pub(crate) diagnose_pods: Option<bool>,
    /// Kind of provider-kubernetes config that providerConfigName refers to.
    pub(crate) provider_config_kind: Option<ProviderConfigKind>,
    /// Storage classes of the weights volumes model servers get.
    pub(crate) weights_cache: Option<WeightsCacheSettings>,
    /// What model servers' layouts are chosen for when neither the XR nor its Model says: minimal, balanced (the default) or throughput.
    pub(crate) objective: Option<crate::sizing::Objective>,
    /// The vLLM release the platform's image runs, for example 0.19.0: sizing then uses that release's activation peak (0.19 and later need less). Unset, or when an XR sets its own image, plans use the larger peak of earlier releases, which never over-promises the KV cache.
    #[schemars(regex(pattern = r"^v?[0-9]+\.[0-9]+"), length(max = VLLM_VERSION_MAX))]
    pub(crate) vllm_version: Option<String>,
    /// What serves a model when an XR names no runtime: vllm-runtime (the
    /// default), deployment, leader-worker-set or auto.
    pub(crate) runtime: Option<RuntimeChoice>,
    /// vLLM images of the deployment and leader-worker-set runtimes, per GPU
    /// vendor (the VLLMRuntime uses image).
    pub(crate) vllm_images: Option<VllmImages>,
    /// The autoscaler the platform runs, for XRs that set spec.autoscaling: keda (a ScaledObject with a Prometheus trigger; needs prometheusAddress) or hpa (an autoscaling/v2 HorizontalPodAutoscaler on a Pods metric served by a custom metrics adapter). Unset: XRs that ask for autoscaling are refused.
    pub(crate) autoscaler: Option<Autoscaler>,
    /// The Prometheus that KEDA queries for vLLM's metrics, for example `http://prometheus-operated.monitoring.svc:9090`.
    #[schemars(length(min = 1, max = PROMETHEUS_ADDRESS_MAX))]
    pub(crate) prometheus_address: Option<String>,
    /// Compose a PodMonitor (Prometheus Operator, monitoring.coreos.com/v1) for each model server's /metrics (false by default).
    pub(crate) pod_monitor: Option<bool>,
    /// Route each LLMInference through this Gateway with the Gateway API Inference Extension: an InferencePool of its model server's pods, its endpoint picker, and an HTTPRoute from the Gateway (instead of an Ingress).
    pub(crate) inference_gateway: Option<InferenceGateway>,
    /// Secrets holding the credentials of the registries the platform's images come from (type kubernetes.io/dockerconfigjson), given to every pod the function composes: the model servers', the agents' and the endpoint pickers'. Each must exist where the pods run: the XR's namespace, or its targetNamespace. An XR's spec.imagePullSecrets adds its own.
    #[schemars(length(max = PULL_SECRETS_MAX))]
    pub(crate) image_pull_secrets: Option<Vec<NameRef>>,
    /// Tolerations the model servers' pods carry besides that of the GPU taint (gpuToleration), for the other taints the platform's GPU nodes carry: AKS's sku=gpu:NoSchedule, a dedicated pool's. Every runtime takes them (the VLLMRuntime too).
    #[schemars(length(max = TOLERATIONS_MAX))]
    pub(crate) model_server_tolerations: Option<Vec<Toleration>>,
    /// A Secret holding a Hugging Face token (key defaults to token) that model servers read when neither their XR nor its Model names one: for a platform that keeps one in every team namespace (External Secrets, a replicator). Gated models (meta-llama, mistralai, Gemma) need one.
    pub(crate) hf_token_secret_ref: Option<SecretKeyRef>,
    /// PriorityClass of the model servers' pods (a Deployment's, a LeaderWorkerSet's leaders and workers), so that they preempt batch work on shared GPU nodes; it must exist. A VLLMRuntime's pods take none: with it, runtime must be auto, deployment or leader-worker-set (auto then serves on a Deployment where it would have chosen the VLLMRuntime). Empty means none.
    pub(crate) model_server_priority_class_name: Option<String>,
    /// ServiceAccount of the model servers' pods (a Deployment's, a LeaderWorkerSet's leaders and workers), in each XR's namespace: the one the cloud's workload identity maps to a role that reads the weights' bucket (EKS IRSA or Pod Identity, GKE or Azure Workload Identity), so s3:// and gs:// weights load without keys. Its API token stays unmounted. A VLLMRuntime's pods take none: with it, runtime must be auto, deployment or leader-worker-set (auto then serves on a Deployment where it would have chosen the VLLMRuntime). Empty means none.
    pub(crate) model_server_service_account_name: Option<String>,
    /// Scheduler of the model servers' pods (a Deployment's, a LeaderWorkerSet's leaders and workers) instead of the cluster's default one: Volcano, which the LeaderWorkerSet controller's gang scheduling uses to place each multi-node group whole (so two groups that compete for nodes cannot each hold part of them and wait for ever), or a GPU-aware scheduler such as KAI. It must run, or the pods wait unplaced. A VLLMRuntime's pods take none: with it, runtime must be auto, deployment or leader-worker-set (auto then serves on a Deployment where it would have chosen the VLLMRuntime). Empty means the default scheduler.
    pub(crate) model_server_scheduler_name: Option<String>,
}

/// A name the platform gives every model server's pod (a PriorityClass, a
/// ServiceAccount, a scheduler), as its step-input field says it.
#[derive(Debug)]
pub(crate) struct PodSettingField {
    /// The field under input.defaults.
    pub(crate) name: &'static str,
    /// What it names ("PriorityClass").
    pub(crate) what: &'static str,
    /// What a Deployment's pods do with it ("carry it").
    pub(crate) on_a_deployment: &'static str,
    /// A valid name, for messages.
    example: &'static str,
}

pub(crate) const MODEL_SERVER_PRIORITY_CLASS: PodSettingField = PodSettingField {
    name: "modelServerPriorityClassName",
    what: "PriorityClass",
    on_a_deployment: "carry it",
    example: "inference-critical",
};
pub(crate) const MODEL_SERVER_SERVICE_ACCOUNT: PodSettingField = PodSettingField {
    name: "modelServerServiceAccountName",
    what: "ServiceAccount",
    on_a_deployment: "run as it",
    example: "model-server",
};
pub(crate) const MODEL_SERVER_SCHEDULER: PodSettingField = PodSettingField {
    name: "modelServerSchedulerName",
    what: "scheduler",
    on_a_deployment: "are placed by it",
    example: "volcano",
};

/// The name the platform gives the model servers' pods at `setting`: none
/// when empty, as a templated Composition may write it; refused when it is
/// not a DNS name, or when the platform's runtime is the VLLMRuntime, whose
/// pods take none (`runtime_is_default`: by default).
fn model_server_pod_name(
    setting: &PodSettingField,
    name: Option<&str>,
    runtime: RuntimeChoice,
    runtime_is_default: bool,
) -> Result<Option<String>, String> {
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        return Ok(None);
    };
    let field = format!("input.defaults.{}", setting.name);
    crate::names::require_subdomain(&field, name, setting.example)?;
    if runtime == RuntimeChoice::VllmRuntime {
        return Err(format!(
            "{field} is set, but input.defaults.runtime is vllm-runtime{}, whose pods take no {}; set \
             input.defaults.runtime to auto, deployment or leader-worker-set",
            if runtime_is_default {
                " (its default)"
            } else {
                ""
            },
            setting.what
        ));
    }
    Ok(Some(name.to_string()))
}

/// Most tolerations the platform adds to a model server.
const TOLERATIONS_MAX: usize = 16;

/// `tolerations`, the field `field`, as the API server checks them
/// (`validateTolerations`): so that a typo is refused here, naming it,
/// rather than by the API server when Crossplane applies every model server.
fn check_tolerations(field: &str, tolerations: &[Toleration]) -> Result<(), String> {
    if tolerations.len() > TOLERATIONS_MAX {
        return Err(format!(
            "{field} has {} tolerations; give at most {TOLERATIONS_MAX}",
            tolerations.len()
        ));
    }
    for (i, t) in tolerations.iter().enumerate() {
        let at = format!("{field}[{i}]");
        let key = t.key.as_deref().unwrap_or_default();
        if !key.is_empty() {
            crate::names::require_qualified_name(&format!("{at}.key"), key)?;
        }
        let value = t.value.as_deref().unwrap_or_default();
        // The API server reads an empty operator as Equal.
        match t
            .operator
            .as_deref()
            .filter(|o| !o.is_empty())
            .unwrap_or("Equal")
        {
            "Exists" if !value.is_empty() => {
                return Err(format!(
                    "{at}.value is {}; an Exists toleration matches every value of its key: drop value, or use operator Equal",
                    crate::quote::shown(value)
                ));
            }
            "Exists" => {}
            "Equal" if key.is_empty() => {
                return Err(format!(
                    "{at}.key is empty; an Equal toleration needs the taint's key (an empty key with operator Exists tolerates every taint)"
                ));
            }
            "Equal" if !crate::names::is_label_value(value) => {
                return Err(format!(
                    "{at}.value is {}; a taint's value is empty or {}",
                    crate::quote::shown(value),
                    crate::names::LABEL_VALUE_RULE
                ));
            }
            "Equal" => {}
            other => {
                return Err(format!(
                    "{at}.operator is {}; use Exists or Equal",
                    crate::quote::shown(other)
                ));
            }
        }
        let effect = t.effect.as_deref().unwrap_or_default();
        if !["", "NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect) {
            return Err(format!(
                "{at}.effect is {}; use NoSchedule, PreferNoSchedule or NoExecute, or leave it out to tolerate every effect",
                crate::quote::shown(effect)
            ));
        }
        if t.toleration_seconds.is_some() && effect != "NoExecute" {
            return Err(format!(
                "{at}.tolerationSeconds applies to the NoExecute effect only; set effect NoExecute or drop tolerationSeconds"
            ));
        }
    }
    Ok(())
}

/// The Gateway (gateway.networking.k8s.io/v1) model servers are routed through.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct InferenceGateway {
    /// The Gateway's name.
    #[schemars(length(min = 1, max = 253))]
    pub(crate) name: String,
    /// The Gateway's namespace; default: the XR's. A Gateway in another namespace must allow routes from the XR's (its listeners' allowedRoutes).
    #[schemars(length(min = 1, max = 63))]
    pub(crate) namespace: Option<String>,
    /// The endpoint picker's image; default registry.k8s.io gateway-api-inference-extension/epp:v1.3.0.
    pub(crate) endpoint_picker_image: Option<Image>,
}

/// The autoscalers a model server can be scaled by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Autoscaler {
    /// KEDA's ScaledObject with a Prometheus trigger.
    Keda,
    /// An autoscaling/v2 HorizontalPodAutoscaler on a Pods metric.
    Hpa,
}

impl Autoscaler {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Autoscaler::Keda => "keda",
            Autoscaler::Hpa => "hpa",
        }
    }
}

/// The vLLM image per GPU vendor for runtimes that run `vllm serve`
/// themselves: it must have `vllm` (and, for multi-node, `ray`) on its PATH.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct VllmImages {
    /// For NVIDIA GPUs; default docker.io vllm/vllm-openai (CUDA).
    pub(crate) nvidia: Option<Image>,
    /// For AMD GPUs; default docker.io rocm/vllm (ROCm).
    pub(crate) amd: Option<Image>,
}

/// Storage classes for weights volumes. A runtime with one replica gets a
/// ReadWriteOnce volume; several replicas share one volume, which needs
/// ReadWriteMany, and most clusters' default class cannot provide that.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct WeightsCacheSettings {
    /// Storage class of ReadWriteOnce volumes (one replica); unset: the cluster's default class.
    #[schemars(length(min = 1, max = 253))]
    pub(crate) storage_class_name: Option<String>,
    /// A storage class that provides ReadWriteMany volumes (several replicas);
    /// unset: several replicas get no shared volume.
    #[schemars(length(min = 1, max = 253))]
    pub(crate) shared_storage_class_name: Option<String>,
}

/// The two kinds of provider-kubernetes config a namespaced Object can use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) enum ProviderConfigKind {
    #[default]
    ProviderConfig,
    ClusterProviderConfig,
}

/// Defaults resolved against the built-in ones.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Settings {
    pub(crate) ttl: std::time::Duration,
    pub(crate) gpu_type: String,
    /// True when an XR that names no GPU type gets the cheapest of the
    /// offered ones instead of `gpu_type`: the platform listed what it
    /// offers (or priced it) and set no default type.
    pub(crate) choose_gpu_type: bool,
    pub(crate) offered_gpu_types: Vec<String>,
    /// The field the platform listed its GPU types in (offeredGpuTypes, or
    /// gpuPrices without it); `None` where the built-in list stands.
    pub(crate) offered_gpu_types_field: Option<&'static str>,
    /// Price per GPU and hour, by canonical GPU type name; empty when the
    /// platform gave none.
    pub(crate) gpu_prices: crate::sizing::GpuPrices,
    pub(crate) image: Image,
    pub(crate) gpu_memory_utilization: f64,
    pub(crate) gpu_node_selector: bool,
    pub(crate) mig_strategy: crate::sizing::MigStrategy,
    pub(crate) gpu_toleration: bool,
    pub(crate) diagnose_pods: bool,
    pub(crate) provider_config_kind: ProviderConfigKind,
    pub(crate) weights_cache: WeightsCacheSettings,
    pub(crate) objective: crate::sizing::Objective,
    /// The vLLM release of the platform's image, when the platform says.
    pub(crate) vllm_version: Option<String>,
    pub(crate) runtime: RuntimeChoice,
    /// Image of the deployment and leader-worker-set runtimes on NVIDIA GPUs.
    pub(crate) nvidia_image: Image,
    /// The same on AMD GPUs.
    pub(crate) amd_image: Image,
    /// The platform's autoscaler, if it has one.
    pub(crate) autoscaler: Option<Autoscaler>,
    /// The Prometheus KEDA queries.
    pub(crate) prometheus_address: Option<String>,
    pub(crate) pod_monitor: bool,
    /// The Gateway model servers are routed through.
    pub(crate) inference_gateway: Option<GatewaySettings>,
    /// Names of the Secrets every composed pod pulls its images with.
    pub(crate) image_pull_secrets: Vec<String>,
    /// Tolerations of the model servers' pods beyond the GPU taint's.
    pub(crate) model_server_tolerations: Vec<Toleration>,
    /// The platform's Hugging Face token: (Secret name, key).
    pub(crate) hf_token: Option<(String, String)>,
    /// The PriorityClass of the model servers' pods.
    pub(crate) model_server_priority_class: Option<String>,
    /// The ServiceAccount of the model servers' pods.
    pub(crate) model_server_service_account: Option<String>,
    /// The scheduler of the model servers' pods, when not the default one.
    pub(crate) model_server_scheduler: Option<String>,
}

/// [`InferenceGateway`] with the endpoint picker's image resolved.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GatewaySettings {
    pub(crate) name: String,
    pub(crate) namespace: Option<String>,
    pub(crate) endpoint_picker_image: Image,
}

/// The endpoint picker of the Inference Extension release whose CRDs are
/// vendored in tests/data/crds/.
pub(crate) const ENDPOINT_PICKER_IMAGE: &str = "gateway-api-inference-extension/epp:v1.3.0";

pub(crate) fn default_endpoint_picker_image() -> Image {
    Image {
        registry: "registry.k8s.io".into(),
        name: ENDPOINT_PICKER_IMAGE.into(),
    }
}

/// vLLM's own CUDA image (`vllm` and `ray` on the PATH), pinned to the
/// release the memory model is checked against (the start-up logs of
/// docs/sizing.md were taken with it).
pub(crate) const NVIDIA_VLLM_IMAGE: &str = "vllm/vllm-openai:v0.19.0";
/// The vLLM release of [`NVIDIA_VLLM_IMAGE`].
const NVIDIA_VLLM_RELEASE: &str = "0.19.0";
/// The CUDA 13 build of [`NVIDIA_VLLM_IMAGE`] (release tags up to 0.19 are
/// CUDA 12.9 builds, `-cu130` the CUDA 13 one). The CUDA 12.9 build has no
/// NVFP4 kernels for compute capability 10.3 (B300, GB300): vLLM loads fp4
/// weights there, then dies at engine start with "no kernel image is
/// available for execution on the device".
const NVIDIA_VLLM_IMAGE_CUDA_13: &str = "vllm/vllm-openai:v0.19.0-cu130";
/// The first vLLM release whose plain tags are CUDA 13 builds, `-cu129` the
/// CUDA 12.9 one (vllm-project/vllm#39878).
const CUDA_13_PLAIN_TAGS: crate::sizing::Release = (0, 20, 0);
/// AMD's ROCm build of vLLM, pinned.
pub(crate) const AMD_VLLM_IMAGE: &str = "rocm/vllm:rocm7.0.0_vllm_0.11.2_20251210";
/// The vLLM release of [`AMD_VLLM_IMAGE`] (its tag says it).
const AMD_VLLM_RELEASE: &str = "0.11.2";

impl Settings {
    /// The names the platform gives the model servers' pods, by field.
    pub(crate) fn model_server_pod_settings(
        &self,
    ) -> [(&'static PodSettingField, Option<&str>); 3] {
        [
            (
                &MODEL_SERVER_PRIORITY_CLASS,
                self.model_server_priority_class.as_deref(),
            ),
            (
                &MODEL_SERVER_SERVICE_ACCOUNT,
                self.model_server_service_account.as_deref(),
            ),
            (
                &MODEL_SERVER_SCHEDULER,
                self.model_server_scheduler.as_deref(),
            ),
        ]
    }

    /// The Gateway an XR is routed through: its own (`spec.gateway`), with
    /// the platform's endpoint picker image, else the platform's.
    pub(crate) fn gateway_for(
        &self,
        xr: Option<&crate::xr::shared_fields::GatewayRef>,
    ) -> Option<GatewaySettings> {
        match xr {
            Some(g) => Some(GatewaySettings {
                name: g.name.clone(),
                namespace: g.namespace.clone(),
                endpoint_picker_image: self
                    .inference_gateway
                    .as_ref()
                    .map_or_else(default_endpoint_picker_image, |p| {
                        p.endpoint_picker_image.clone()
                    }),
            }),
            None => self.inference_gateway.clone(),
        }
    }

    /// The vLLM release to size for when an XR sets no image: the
    /// platform's `vllmVersion`, else the release of the built-in image the
    /// function picks for `runtime` on `gpu_type`'s vendor. `None` when the
    /// image is the platform's own or the runtime is not known before
    /// sizing (auto on NVIDIA may pick the VLLMRuntime, whose lmcache image
    /// does not say its vLLM release): plans then use the larger activation
    /// peak of earlier releases.
    ///
    /// `gpu_type` is the XR's; `None` when it names none, where the type is
    /// the platform's default or, when the function chooses one, any offered
    /// type, which must then all be of one vendor for the release to be known.
    pub(crate) fn image_release(
        &self,
        runtime: RuntimeChoice,
        gpu_type: Option<&str>,
    ) -> Option<String> {
        if let Some(v) = &self.vllm_version {
            return Some(v.clone());
        }
        let vendor_of = |name: &str| crate::sizing::gpu(name).ok().map(|g| g.vendor.as_str());
        let vendor = match gpu_type {
            Some(name) => vendor_of(name)?,
            None if self.choose_gpu_type => {
                let mut vendors = self.offered_gpu_types.iter().map(|n| vendor_of(n));
                let first = vendors.next()??;
                vendors.all(|v| v == Some(first)).then_some(first)?
            }
            None => vendor_of(&self.gpu_type)?,
        };
        let runs_vllm_image = match runtime {
            RuntimeChoice::Deployment | RuntimeChoice::LeaderWorkerSet => true,
            // Auto serves AMD GPUs with a Deployment or a LeaderWorkerSet.
            RuntimeChoice::Auto => vendor == "amd",
            RuntimeChoice::VllmRuntime => false,
        };
        let (built_in, release) = if vendor == "amd" {
            (AMD_VLLM_IMAGE, AMD_VLLM_RELEASE)
        } else {
            (NVIDIA_VLLM_IMAGE, NVIDIA_VLLM_RELEASE)
        };
        (runs_vllm_image && *self.vllm_image(vendor) == docker_hub(built_in))
            .then(|| release.to_string())
    }

    /// The image of the deployment and leader-worker-set runtimes for
    /// weights of `precision` on `gpu`, and why, when it is not the
    /// platform's: the built-in image's CUDA 13 build for fp4 on Blackwell
    /// Ultra.
    pub(crate) fn vllm_image_for(
        &self,
        gpu: &Gpu,
        precision: WeightPrecision,
    ) -> (Cow<'_, Image>, Option<String>) {
        let image = self.vllm_image(&gpu.vendor);
        let fp4_on_blackwell_ultra =
            gpu.sm == Some(ComputeCapability::BLACKWELL_ULTRA) && precision == WeightPrecision::Fp4;
        if fp4_on_blackwell_ultra && *image == docker_hub(NVIDIA_VLLM_IMAGE) {
            let cuda_13 = docker_hub(NVIDIA_VLLM_IMAGE_CUDA_13);
            let why = format!(
                "Image {}, the CUDA 13 build of the same vLLM release: its CUDA 12.9 build ({}) has no fp4 \
                 kernels for {} (compute capability {}).",
                cuda_13.reference(),
                image.reference(),
                gpu.name,
                ComputeCapability::BLACKWELL_ULTRA
            );
            (Cow::Owned(cuda_13), Some(why))
        } else {
            (Cow::Borrowed(image), None)
        }
    }

    /// The image of the deployment and leader-worker-set runtimes for a GPU vendor.
    fn vllm_image(&self, vendor: &str) -> &Image {
        if vendor == "amd" {
            &self.amd_image
        } else {
            &self.nvidia_image
        }
    }
}

/// Why `image` cannot serve weights of `precision` on `gpu`, when it is
/// one of vLLM's own CUDA 12.9 builds (a plain tag up to 0.19, or a
/// `-cu129` one) and they are fp4 on Blackwell Ultra, whose NVFP4 kernels
/// only the CUDA 13 builds carry.
pub(crate) fn cuda_12_build_on_blackwell_ultra(
    image: &Image,
    gpu: &Gpu,
    precision: WeightPrecision,
) -> Option<String> {
    if gpu.sm != Some(ComputeCapability::BLACKWELL_ULTRA) || precision != WeightPrecision::Fp4 {
        return None;
    }
    let (repository, tag) = image.name.rsplit_once(':')?;
    if !(repository == "vllm/vllm-openai" || repository.ends_with("/vllm/vllm-openai")) {
        return None;
    }
    let (version, variant) = tag.split_once('-').unwrap_or((tag, ""));
    let plain_is_cuda_12 = crate::sizing::release(version)? < CUDA_13_PLAIN_TAGS;
    let cuda_12 = variant.starts_with("cu12") || (plain_is_cuda_12 && variant.is_empty());
    cuda_12.then(|| {
        format!(
            "Image {} is a CUDA 12.9 build of vLLM, which has no fp4 kernels for {} (compute capability {}): \
             vLLM loads the weights, then stops at engine start; use a CUDA 13 build (vllm/vllm-openai:v0.19.0-cu130, \
             or a plain tag from v0.20.0)",
            image.reference(),
            gpu.name,
            ComputeCapability::BLACKWELL_ULTRA
        )
    })
}

/// An image on Docker Hub.
fn docker_hub(name: &str) -> Image {
    Image {
        registry: "docker.io".into(),
        name: name.into(),
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            ttl: DEFAULT_TTL,
            gpu_type: "L4".into(),
            choose_gpu_type: false,
            offered_gpu_types_field: None,
            offered_gpu_types: ["L4", "L40S", "A100-80GB", "H100-80GB"]
                .map(String::from)
                .to_vec(),
            gpu_prices: crate::sizing::GpuPrices::new(),
            // dot-inference's image, so its XRs compose the same runtime.
            image: docker_hub("lmcache/vllm-openai:v0.3.13"),
            gpu_memory_utilization: 0.9,
            gpu_node_selector: false,
            mig_strategy: crate::sizing::MigStrategy::Mixed,
            gpu_toleration: false,
            diagnose_pods: true,
            provider_config_kind: ProviderConfigKind::ProviderConfig,
            weights_cache: WeightsCacheSettings::default(),
            // Today's VLLMRuntime, so existing XRs keep their resources.
            runtime: RuntimeChoice::VllmRuntime,
            nvidia_image: docker_hub(NVIDIA_VLLM_IMAGE),
            amd_image: docker_hub(AMD_VLLM_IMAGE),
            objective: crate::sizing::Objective::Balanced,
            vllm_version: None,
            autoscaler: None,
            prometheus_address: None,
            pod_monitor: false,
            inference_gateway: None,
            image_pull_secrets: Vec::new(),
            hf_token: None,
            model_server_priority_class: None,
            model_server_service_account: None,
            model_server_scheduler: None,
            model_server_tolerations: Vec::new(),
        }
    }
}

impl Input {
    /// Checks the input and resolves it over the built-in defaults. Errors
    /// name the input field and what would be valid.
    pub(crate) fn settings(&self) -> Result<Settings, String> {
        if let Some(v) = &self.api_version
            && v != API_VERSION
        {
            return Err(format!(
                "input.apiVersion is {}; expected {API_VERSION:?}",
                crate::quote::shown(v)
            ));
        }
        if let Some(k) = &self.kind
            && k != KIND
        {
            return Err(format!(
                "input.kind is {}; expected {KIND:?}",
                crate::quote::shown(k)
            ));
        }
        let mut s = Settings::default();
        if let Some(ttl) = self.ttl {
            if ttl.is_negative() {
                return Err(format!(
                    "input.ttl is negative ({ttl}); use a positive duration such as 60s"
                ));
            }
            let ttl = std::time::Duration::from(ttl);
            if ttl < std::time::Duration::from_secs(1) {
                return Err("input.ttl must be at least 1s".into());
            }
            s.ttl = ttl;
        }
        let Some(d) = &self.defaults else {
            return Ok(s);
        };
        if let Some(g) = &d.gpu_type {
            crate::sizing::gpu(g).map_err(|e| format!("input.defaults.gpuType: {e}"))?;
            s.gpu_type = g.clone();
        }
        let offered = d
            .offered_gpu_types
            .as_deref()
            .map(offered_types)
            .transpose()?;
        if let Some(g) = &d.offered_gpu_types {
            s.offered_gpu_types = g.clone();
            s.offered_gpu_types_field = Some("input.defaults.offeredGpuTypes");
        }
        if let Some(written) = &d.gpu_prices {
            s.gpu_prices = price_every_offered_type(written, offered.as_deref())?;
            if d.offered_gpu_types.is_none() {
                s.offered_gpu_types = s.gpu_prices.keys().cloned().collect();
                s.offered_gpu_types_field = Some("input.defaults.gpuPrices");
            }
        }
        s.choose_gpu_type =
            d.gpu_type.is_none() && (d.offered_gpu_types.is_some() || d.gpu_prices.is_some());
        if let Some(i) = &d.image {
            i.check("input.defaults.image")?;
            s.image = i.clone();
        }
        if let Some(u) = d.gpu_memory_utilization {
            s.gpu_memory_utilization = u;
        }
        // A type the function chooses holds only where the pod is kept on
        // it, and GPU nodes are commonly tainted.
        s.gpu_node_selector = d.gpu_node_selector.unwrap_or(s.choose_gpu_type);
        s.mig_strategy = d.mig_strategy.unwrap_or_default();
        s.gpu_toleration = d.gpu_toleration.unwrap_or(s.choose_gpu_type);
        s.diagnose_pods = d.diagnose_pods.unwrap_or(s.diagnose_pods);
        s.provider_config_kind = d.provider_config_kind.unwrap_or_default();
        if let Some(w) = &d.weights_cache {
            for (field, class) in [
                ("storageClassName", &w.storage_class_name),
                ("sharedStorageClassName", &w.shared_storage_class_name),
            ] {
                if let Some(c) = class {
                    crate::names::require_subdomain(
                        &format!("input.defaults.weightsCache.{field}"),
                        c,
                        "standard-rwo",
                    )?;
                }
            }
            s.weights_cache = w.clone();
        }
        s.runtime = d.runtime.unwrap_or(s.runtime);
        if let Some(images) = &d.vllm_images {
            for (vendor, image, target) in [
                ("nvidia", &images.nvidia, &mut s.nvidia_image),
                ("amd", &images.amd, &mut s.amd_image),
            ] {
                if let Some(i) = image {
                    i.check(&format!("input.defaults.vllmImages.{vendor}"))?;
                    *target = i.clone();
                }
            }
        }
        if let Some(o) = d.objective {
            s.objective = o;
        }
        if let Some(v) = &d.vllm_version {
            at_most_chars("input.defaults.vllmVersion", v, VLLM_VERSION_MAX)?;
            if crate::sizing::release(v).is_none() {
                return Err(format!(
                    "input.defaults.vllmVersion is {}; use the vLLM release the image runs, such as 0.19.0",
                    crate::quote::shown(v)
                ));
            }
            s.vllm_version = Some(v.clone());
        }
        s.autoscaler = d.autoscaler;
        s.pod_monitor = d.pod_monitor.unwrap_or(false);
        if let Some(a) = &d.prometheus_address {
            at_most_chars(
                "input.defaults.prometheusAddress",
                a,
                PROMETHEUS_ADDRESS_MAX,
            )?;
            let url = a.trim();
            if !(url.starts_with("http://") || url.starts_with("https://"))
                || url.contains(char::is_whitespace)
            {
                return Err(format!(
                    "input.defaults.prometheusAddress is {}; use the URL KEDA reaches Prometheus at, such as http://prometheus-operated.monitoring.svc:9090",
                    crate::quote::shown(a)
                ));
            }
            s.prometheus_address = Some(url.to_string());
        }
        if let Some(g) = &d.inference_gateway {
            crate::xr::shared_fields::check_gateway(
                "input.defaults.inferenceGateway",
                &g.name,
                g.namespace.as_deref(),
            )?;
            let image = match &g.endpoint_picker_image {
                Some(i) => {
                    i.check("input.defaults.inferenceGateway.endpointPickerImage")?;
                    i.clone()
                }
                None => default_endpoint_picker_image(),
            };
            s.inference_gateway = Some(GatewaySettings {
                name: g.name.clone(),
                namespace: g.namespace.clone(),
                endpoint_picker_image: image,
            });
        }
        s.image_pull_secrets = crate::xr::shared_fields::pull_secrets(
            "input.defaults.imagePullSecrets",
            &[],
            d.image_pull_secrets.as_deref().unwrap_or_default(),
        )?;
        if let Some(r) = &d.hf_token_secret_ref {
            r.check("input.defaults.hfTokenSecretRef", "hf-token", HF_TOKEN_KEY)?;
            let (name, key) = r.name_and_key(HF_TOKEN_KEY);
            s.hf_token = Some((name.to_string(), key.to_string()));
        }
        let (runtime, runtime_is_default) = (s.runtime, d.runtime.is_none());
        let pod_name = |setting: &PodSettingField, name: &Option<String>| {
            model_server_pod_name(setting, name.as_deref(), runtime, runtime_is_default)
        };
        s.model_server_priority_class = pod_name(
            &MODEL_SERVER_PRIORITY_CLASS,
            &d.model_server_priority_class_name,
        )?;
        s.model_server_service_account = pod_name(
            &MODEL_SERVER_SERVICE_ACCOUNT,
            &d.model_server_service_account_name,
        )?;
        s.model_server_scheduler =
            pod_name(&MODEL_SERVER_SCHEDULER, &d.model_server_scheduler_name)?;
        if let Some(t) = &d.model_server_tolerations {
            check_tolerations("input.defaults.modelServerTolerations", t)?;
            s.model_server_tolerations = t.clone();
        }
        if d.autoscaler == Some(Autoscaler::Keda) && s.prometheus_address.is_none() {
            return Err(
                "input.defaults.autoscaler is keda, which needs input.defaults.prometheusAddress: the Prometheus KEDA queries for vLLM's metrics, such as http://prometheus-operated.monitoring.svc:9090".into(),
            );
        }
        Ok(s)
    }
}

/// The catalog names of the offered GPU types, refused when the list is
/// empty, names a type the catalog lacks or names one twice: a typo would
/// otherwise drop a type from every choice without a word.
fn offered_types(offered: &[String]) -> Result<Vec<&'static str>, String> {
    const FIELD: &str = "input.defaults.offeredGpuTypes";
    if offered.is_empty() {
        return Err(format!("{FIELD} is empty; list at least one GPU type"));
    }
    let mut names: Vec<&'static str> = Vec::new();
    for (i, written) in offered.iter().enumerate() {
        let name = crate::sizing::gpu(written)
            .map_err(|e| format!("{FIELD}[{i}]: {e}"))?
            .name
            .as_str();
        if names.contains(&name) {
            return Err(format!(
                "{FIELD} lists {name} twice (as {}); keep one",
                offered
                    .iter()
                    .filter(|w| crate::sizing::gpu(w).is_ok_and(|g| g.name == name))
                    .map(|w| crate::quote::shown(w))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ));
        }
        names.push(name);
    }
    Ok(names)
}

/// The platform's prices by canonical GPU type name, refused unless each
/// offered type (by its catalog name) has one and each price is for an
/// offered type.
fn price_every_offered_type(
    written: &std::collections::BTreeMap<String, f64>,
    offered: Option<&[&'static str]>,
) -> Result<crate::sizing::GpuPrices, String> {
    const FIELD: &str = "input.defaults.gpuPrices";
    if written.is_empty() {
        return Err(format!(
            "{FIELD} is empty; price the offered GPU types, or leave it out"
        ));
    }
    let prices = crate::sizing::canonical_prices(written, FIELD)?;
    let Some(offered_names) = offered else {
        return Ok(prices);
    };
    let unpriced: Vec<_> = offered_names
        .iter()
        .filter(|n| !prices.contains_key(**n))
        .copied()
        .collect();
    if !unpriced.is_empty() {
        return Err(format!(
            "{FIELD} has no price for {}; price every GPU type of input.defaults.offeredGpuTypes",
            unpriced.join(", ")
        ));
    }
    let not_offered: Vec<_> = prices
        .keys()
        .filter(|n| !offered_names.contains(&n.as_str()))
        .map(String::as_str)
        .collect();
    if !not_offered.is_empty() {
        return Err(format!(
            "{FIELD} prices {}, which input.defaults.offeredGpuTypes does not offer; add it there or drop its price",
            not_offered.join(", ")
        ));
    }
    Ok(prices)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(defaults: serde_json::Value) -> Settings {
        serde_json::from_value::<Input>(serde_json::json!({ "defaults": defaults }))
            .unwrap()
            .settings()
            .unwrap()
    }

    /// What the API server accepts (`validateTolerations`) is accepted:
    /// an empty operator is Equal, an empty key with Exists tolerates
    /// every taint, NoExecute may bound how long.
    #[test]
    fn tolerations_the_api_server_takes_are_taken() {
        let tolerations = serde_json::json!([
            {"key": "sku", "operator": "", "value": "gpu", "effect": "NoSchedule"},
            {"operator": "Exists"},
            {"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "dedicated", "value": ""},
        ]);
        let s = settings(serde_json::json!({"modelServerTolerations": tolerations}));
        assert_eq!(
            serde_json::to_value(&s.model_server_tolerations).unwrap(),
            tolerations
        );
    }

    #[test]
    fn the_release_of_an_image_the_function_picks_is_known() {
        let built_in = Settings::default();
        let release = |s: &Settings, runtime, gpu| s.image_release(runtime, gpu);
        use RuntimeChoice::*;
        assert_eq!(
            release(&built_in, Deployment, Some("H100-80GB")).as_deref(),
            Some("0.19.0")
        );
        assert_eq!(
            release(&built_in, LeaderWorkerSet, None).as_deref(),
            Some("0.19.0")
        );
        assert_eq!(
            release(&built_in, Auto, Some("MI300X")).as_deref(),
            Some("0.11.2")
        );
        // The VLLMRuntime's lmcache image, and auto on NVIDIA (which may pick it), do not say.
        assert_eq!(release(&built_in, VllmRuntime, Some("H100-80GB")), None);
        assert_eq!(release(&built_in, Auto, Some("H100-80GB")), None);

        // A platform's own image is its release to state.
        let own = settings(
            serde_json::json!({"vllmImages": {"nvidia": {"registry": "r.example", "name": "vllm:1"}}}),
        );
        assert_eq!(release(&own, Deployment, Some("L4")), None);
        assert_eq!(
            release(&own, Deployment, Some("MI300X")).as_deref(),
            Some("0.11.2")
        );
        let stated = settings(serde_json::json!({"vllmVersion": "0.20.1"}));
        assert_eq!(
            release(&stated, VllmRuntime, Some("L4")).as_deref(),
            Some("0.20.1")
        );

        // Chosen among the offered types: known only when they share a vendor.
        let nvidia = settings(serde_json::json!({"offeredGpuTypes": ["L4", "H100-80GB"]}));
        assert_eq!(
            release(&nvidia, Deployment, None).as_deref(),
            Some("0.19.0")
        );
        let mixed = settings(serde_json::json!({"offeredGpuTypes": ["L4", "MI300X"]}));
        assert_eq!(release(&mixed, Deployment, None), None);
    }

    /// vLLM's CUDA 12.9 builds (plain tags up to 0.19, `-cu129` ones) have
    /// no fp4 kernels for Blackwell Ultra; its CUDA 13 builds do.
    #[test]
    fn a_cuda_12_build_of_vllm_is_named_for_fp4_on_blackwell_ultra() {
        let on = |registry: &str, name: &str, gpu: &str, p: WeightPrecision| {
            let image = Image {
                registry: registry.into(),
                name: name.into(),
            };
            cuda_12_build_on_blackwell_ultra(&image, crate::sizing::gpu(gpu).unwrap(), p).is_some()
        };
        let fp4 = WeightPrecision::Fp4;
        for cuda_12 in [
            "vllm/vllm-openai:v0.19.0",
            "vllm/vllm-openai:v0.18.1",
            "vllm/vllm-openai:v0.20.1-cu129",
            "mirror/vllm/vllm-openai:v0.19.1",
        ] {
            assert!(on("docker.io", cuda_12, "B300", fp4), "{cuda_12}");
        }
        assert!(on(
            "registry.example.com",
            "vllm/vllm-openai:v0.19.0",
            "B300",
            fp4
        ));
        for cuda_13_or_unknown in [
            "vllm/vllm-openai:v0.19.0-cu130",
            "vllm/vllm-openai:v0.20.1",
            "vllm/vllm-openai:latest",
            "lmcache/vllm-openai:v0.3.13",
            "acme/vllm-openai:v0.19.0",
        ] {
            assert!(
                !on("docker.io", cuda_13_or_unknown, "B300", fp4),
                "{cuda_13_or_unknown}"
            );
        }
        assert!(!on("docker.io", "vllm/vllm-openai:v0.19.0", "B200", fp4));
        assert!(!on(
            "docker.io",
            "vllm/vllm-openai:v0.19.0",
            "B300",
            WeightPrecision::Bf16
        ));
    }
}
