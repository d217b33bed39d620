//! `VLLMRuntime` (`production-stack.vllm.ai/v1alpha1`), the vLLM
//! production-stack operator's resource for one vLLM server.
//!
//! Written from `tests/data/crds/production-stack.vllm.ai_vllmruntimes.yaml`;
//! field names, nesting and types follow that file exactly. The operator turns
//! one VLLMRuntime into a Deployment (requests equal limits), a Service on
//! port 80 named like the VLLMRuntime, and a `vllm serve` command line.
//!
//! A few fields do more than their names say (see the field docs):
//! `vllmConfig.enableChunkedPrefill`, `vllmConfig.enablePrefixCaching` and
//! `vllmConfig.v1` are *negated* by the operator when unset, so the composer
//! must set them deliberately.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// One vLLM server, as the production-stack operator reads it.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VLLMRuntime {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: VLLMRuntimeSpec,
    /// Written by the operator; a composer never sets it.
    pub status: Option<VLLMRuntimeStatus>,
}

impl VLLMRuntime {
    pub const API_VERSION: &str = "production-stack.vllm.ai/v1alpha1";
    pub const KIND: &str = "VLLMRuntime";

    /// A VLLMRuntime named `name` with apiVersion and kind set.
    pub fn new(name: impl Into<String>, spec: VLLMRuntimeSpec) -> Self {
        Self {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec,
            ..Self::default()
        }
    }
}

/// Not derived: the default carries the right apiVersion and kind, so
/// `VLLMRuntime { .., ..Default::default() }` is always a valid object head.
impl Default for VLLMRuntime {
    fn default() -> Self {
        Self {
            api_version: Self::API_VERSION.to_owned(),
            kind: Self::KIND.to_owned(),
            metadata: ObjectMeta::default(),
            spec: VLLMRuntimeSpec::default(),
            status: None,
        }
    }
}

/// `spec`: what to serve and how to run it.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct VLLMRuntimeSpec {
    /// KEDA-based autoscaling; the operator creates a ScaledObject.
    pub autoscaling_config: Option<AutoscalingConfig>,
    /// The pod: image, resources, scheduling, replicas.
    pub deployment_config: DeploymentConfig,
    pub lm_cache_config: Option<LMCacheConfig>,
    /// The model and the `vllm serve` options tied to it.
    pub model: RuntimeModelSpec,
    /// A PersistentVolumeClaim mounted into the vLLM container.
    pub storage_config: Option<StorageConfig>,
    /// vLLM server options. Required by the CRD even when empty.
    pub vllm_config: VLLMConfig,
}

/// `spec.model`.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeModelSpec {
    pub chat_template: Option<String>,
    /// `--dtype`, e.g. `bfloat16`, `float16`, `auto`.
    pub dtype: Option<String>,
    #[serde(rename = "enableLoRA", skip_serializing_if = "Option::is_none")]
    pub enable_lora: Option<bool>,
    /// Adds `--enable-auto-tool-choice` (needs `tool_call_parser`).
    pub enable_tool: Option<bool>,
    /// The Secret holding a Hugging Face token, for gated models.
    pub hf_token_secret: Option<HfTokenSecret>,
    /// `--max-model-len`. vLLM's default is the model's full context, which
    /// may not fit the KV cache.
    pub max_model_len: Option<i32>,
    pub max_num_seqs: Option<i32>,
    /// What `vllm serve` loads: a Hugging Face repository id or a path.
    #[serde(rename = "modelURL")]
    pub model_url: String,
    pub tool_call_parser: Option<String>,
}

/// `spec.model.hfTokenSecret`. Older CRDs had `{name}` instead; this follows
/// the current `{hfTokenSecretName, hfTokenKeyName}`.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct HfTokenSecret {
    /// The key in the Secret; the CRD defaults it to `token`.
    pub hf_token_key_name: Option<String>,
    pub hf_token_secret_name: Option<String>,
}

/// `spec.vllmConfig`: options of `vllm serve`.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct VLLMConfig {
    /// Quirk: unset is not "vLLM's default" but `--no-enable-chunked-prefill`.
    pub enable_chunked_prefill: Option<bool>,
    /// Quirk: unset is not "vLLM's default" but `--no-enable-prefix-caching`.
    pub enable_prefix_caching: Option<bool>,
    /// Extra environment of the vLLM container; plain values only.
    pub env: Option<Vec<EnvVar>>,
    /// Appended to the `vllm serve` command line as given.
    pub extra_args: Option<Vec<String>>,
    /// `--gpu-memory-utilization`, a decimal in a string (e.g. `"0.9"`).
    /// vLLM's own default has changed between releases, so pin it.
    pub gpu_memory_utilization: Option<String>,
    pub max_loras: Option<i32>,
    /// Container port of the server; the CRD defaults it to 8000.
    pub port: Option<i32>,
    pub tensor_parallel_size: Option<i32>,
    /// Quirk: unset sets `VLLM_USE_V1=0`, forcing vLLM's legacy engine.
    pub v1: Option<bool>,
}

/// An environment variable with a literal value (the CRD has no
/// `valueFrom`); both fields are required.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

/// `spec.deploymentConfig`: the pod the operator creates.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentConfig {
    pub deployment_strategy: Option<DeploymentStrategy>,
    /// The vLLM image. The operator runs `/opt/venv/bin/vllm serve`, which
    /// only the `lmcache/vllm-openai` images have.
    pub image: ImageSpec,
    /// Required node affinity terms (ORed), as in a pod's
    /// `nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    pub node_selector_terms: Option<Vec<NodeSelectorTerm>>,
    pub pod_annotations: Option<BTreeMap<String, String>>,
    /// The scale subresource's `specReplicasPath`; the CRD defaults it to 1.
    pub replicas: Option<i32>,
    /// Requests, which the operator also uses as limits.
    pub resources: ResourceSpec,
    /// The CRD defaults it to `nvidia`.
    pub runtime_class: Option<String>,
    /// A quantity; when set, /dev/shm becomes a memory-backed emptyDir of this
    /// size. The container default (64Mi) is too small for tensor parallelism.
    pub shm_size: Option<String>,
    pub sidecar_config: Option<SidecarConfig>,
    /// Tolerations of the pod. The CRD names the list in the singular.
    pub toleration: Option<Vec<Toleration>>,
}

/// `spec.deploymentConfig.deploymentStrategy`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DeploymentStrategy {
    /// The CRD's default.
    #[default]
    RollingUpdate,
    /// Stop the old pod before starting the new one: a rolling update of a
    /// pod that holds every GPU of its node can never schedule.
    Recreate,
}

/// An image as registry and name (the operator joins them with `/`).
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ImageSpec {
    /// Repository and tag, e.g. `lmcache/vllm-openai:v0.3.5`.
    pub name: String,
    pub pull_policy: Option<String>,
    pub pull_secret_name: Option<String>,
    /// e.g. `docker.io`.
    pub registry: String,
}

/// Resources of a container, all as strings.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// A CPU quantity, e.g. `"8"`.
    pub cpu: Option<String>,
    /// The number of GPUs (or MIG slices), e.g. `"1"`.
    pub gpu: Option<String>,
    /// The extended resource name requested instead of `nvidia.com/gpu`,
    /// e.g. `nvidia.com/mig-1g.10gb`.
    pub gpu_type: Option<String>,
    /// A memory quantity, e.g. `"32Gi"`.
    pub memory: Option<String>,
}

/// `spec.deploymentConfig.sidecarConfig`: one extra container sharing a
/// volume with vLLM.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct SidecarConfig {
    pub args: Option<Vec<String>>,
    pub command: Option<Vec<String>>,
    pub enabled: Option<bool>,
    pub env: Option<Vec<EnvVar>>,
    pub image: ImageSpec,
    pub mount_path: Option<String>,
    pub name: Option<String>,
    pub resources: Option<ResourceSpec>,
}

/// `spec.lmCacheConfig`: KV cache offloading with LMCache.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct LMCacheConfig {
    /// A quantity; the CRD defaults it to `4Gi`.
    pub cpu_offloading_buffer_size: Option<String>,
    /// A quantity; the CRD defaults it to `8Gi`.
    pub disk_offloading_buffer_size: Option<String>,
    pub enabled: Option<bool>,
    pub remote_serde: Option<String>,
    pub remote_url: Option<String>,
}

/// `spec.autoscalingConfig`.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct AutoscalingConfig {
    pub enabled: Option<bool>,
    /// At least 1.
    pub max_replicas: i32,
    /// 0 enables scale to zero; the CRD defaults it to 1.
    pub min_replicas: Option<i32>,
    /// Seconds between KEDA's metric queries.
    pub polling_interval: Option<i32>,
    pub scale_down_policy: Option<ScaleDownPolicy>,
    pub scale_up_policy: Option<ScaleUpPolicy>,
    pub triggers: Option<AutoscalingTriggers>,
}

/// `spec.autoscalingConfig.scaleDownPolicy`.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ScaleDownPolicy {
    pub period_seconds: Option<i32>,
    pub pod_value: Option<i32>,
    /// Only used when `minReplicas` is 0.
    pub scale_to_zero_delay_seconds: Option<i32>,
    pub stabilization_window_seconds: Option<i32>,
}

/// `spec.autoscalingConfig.scaleUpPolicy`.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ScaleUpPolicy {
    pub period_seconds: Option<i32>,
    pub pod_value: Option<i32>,
    pub stabilization_window_seconds: Option<i32>,
}

/// `spec.autoscalingConfig.triggers`: per-pod thresholds read from Prometheus.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct AutoscalingTriggers {
    pub generation_tokens_threshold: Option<i32>,
    pub prometheus_address: Option<String>,
    pub prompt_tokens_threshold: Option<i32>,
    pub requests_running_threshold: Option<i32>,
}

/// `spec.storageConfig`.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct StorageConfig {
    pub access_mode: Option<StorageAccessMode>,
    pub enabled: Option<bool>,
    pub mount_path: Option<String>,
    /// A quantity; the CRD defaults it to `10Gi`.
    pub size: Option<String>,
    pub storage_class_name: Option<String>,
    pub volume_name: Option<String>,
}

/// `spec.storageConfig.accessMode`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum StorageAccessMode {
    ReadWriteOnce,
    ReadOnlyMany,
    /// The CRD's default.
    #[default]
    ReadWriteMany,
}

/// `status`, as the operator reports it: replica counts, no conditions.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct VLLMRuntimeStatus {
    /// Pods that are ready and serving.
    pub available_replicas: Option<i32>,
    /// An RFC 3339 timestamp.
    pub last_updated: Option<String>,
    pub model_status: Option<String>,
    pub replicas: Option<i32>,
    pub selector: Option<String>,
    pub unavailable_replicas: Option<i32>,
    pub updated_replicas: Option<i32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn new_sets_api_version_kind_and_name() {
        let vr = VLLMRuntime::new("qwen", VLLMRuntimeSpec::default());
        assert_eq!(vr.api_version, "production-stack.vllm.ai/v1alpha1");
        assert_eq!(vr.kind, "VLLMRuntime");
        assert_eq!(vr.metadata.name.as_deref(), Some("qwen"));
    }

    #[test]
    fn unset_options_are_not_serialized_but_required_objects_are() {
        let vr = VLLMRuntime::new(
            "qwen",
            VLLMRuntimeSpec {
                model: RuntimeModelSpec {
                    model_url: "Qwen/Qwen2.5-1.5B-Instruct".into(),
                    ..Default::default()
                },
                deployment_config: DeploymentConfig {
                    image: ImageSpec {
                        registry: "docker.io".into(),
                        name: "lmcache/vllm-openai:latest".into(),
                        ..Default::default()
                    },
                    ..Default::default()
                },
                ..Default::default()
            },
        );
        assert_eq!(
            serde_json::to_value(&vr).unwrap(),
            json!({
                "apiVersion": "production-stack.vllm.ai/v1alpha1",
                "kind": "VLLMRuntime",
                "metadata": {"name": "qwen"},
                "spec": {
                    "model": {"modelURL": "Qwen/Qwen2.5-1.5B-Instruct"},
                    "vllmConfig": {},
                    "deploymentConfig": {
                        "image": {"registry": "docker.io", "name": "lmcache/vllm-openai:latest"},
                        "resources": {}
                    }
                }
            })
        );
    }

    #[test]
    fn reads_an_observed_object_with_status_and_unknown_fields() {
        let observed = json!({
            "apiVersion": "production-stack.vllm.ai/v1alpha1",
            "kind": "VLLMRuntime",
            "metadata": {"name": "qwen", "namespace": "ai", "generation": 3},
            "spec": {
                "model": {"modelURL": "m", "someFutureField": true},
                "vllmConfig": {"v1": true, "gpuMemoryUtilization": "0.9"},
                "deploymentConfig": {
                    "image": {"registry": "r", "name": "n"},
                    "resources": {"gpu": "1"},
                    "deploymentStrategy": "Recreate"
                }
            },
            "status": {"availableReplicas": 1, "replicas": 1, "modelStatus": "Ready"}
        });
        let vr: VLLMRuntime = serde_json::from_value(observed).unwrap();
        assert_eq!(vr.spec.vllm_config.v1, Some(true));
        assert_eq!(
            vr.spec.deployment_config.deployment_strategy,
            Some(DeploymentStrategy::Recreate)
        );
        assert_eq!(vr.status.unwrap().available_replicas, Some(1));
    }
}
