//! A vLLM production-stack `VLLMRuntime` carrying a sizing plan.
//!
//! The operator has quirks this builder handles deliberately: it turns an
//! unset `enableChunkedPrefill`/`enablePrefixCaching` into `--no-enable-...`
//! and an unset `v1` into `VLLM_USE_V1=0`, so all three are always set; its
//! pods get the container's 64Mi /dev/shm unless `shmSize` is set, too small
//! for tensor-parallel workers; and it defaults `runtimeClass` to `nvidia`.

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use crate::input::{Image, Settings};
use crate::manifests::vllm_runtime::{
    DeploymentConfig, DeploymentStrategy, EnvVar, HfTokenSecret, ImageSpec, ModelSpec,
    ResourceSpec, StorageConfig, VLLMConfig, VLLMRuntime, VLLMRuntimeSpec,
};
use crate::sizing::Plan;

/// Port of the Service the operator creates in front of the runtime.
pub const SERVICE_PORT: i32 = 80;

/// What a runtime is built from besides the plan.
pub struct RuntimeParams<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    /// What `vllm serve` loads: a Hugging Face id or a path.
    pub model_url: &'a str,
    pub plan: &'a Plan,
    pub image: &'a Image,
    pub replicas: i32,
    pub hf_token: Option<(&'a str, &'a str)>,
    pub extra_args: &'a [String],
    pub settings: &'a Settings,
    pub storage: Option<StorageConfig>,
    pub labels: Option<std::collections::BTreeMap<String, String>>,
}

/// The VLLMRuntime manifest.
pub fn vllm_runtime(p: &RuntimeParams) -> Value {
    let plan = p.plan;
    let tp = plan.tensor_parallel_size;
    let mut args = Vec::new();
    if let Some(q) = &plan.quantization {
        args.extend(["--quantization".to_string(), q.clone()]);
    }
    args.extend(p.extra_args.iter().cloned());

    let mut env = Vec::new();
    if tp > 1 {
        // vLLM's default fork breaks CUDA in tensor-parallel workers.
        env.push(EnvVar {
            name: "VLLM_WORKER_MULTIPROC_METHOD".into(),
            value: "spawn".into(),
        });
    }

    let gpu_type =
        (plan.gpu_resource_name != "nvidia.com/gpu").then(|| plan.gpu_resource_name.clone());
    let runtime = VLLMRuntime {
        metadata: ObjectMeta {
            name: Some(p.name.to_string()),
            namespace: Some(p.namespace.to_string()),
            labels: p.labels.clone(),
            ..Default::default()
        },
        spec: VLLMRuntimeSpec {
            model: ModelSpec {
                model_url: p.model_url.to_string(),
                dtype: Some(plan.dtype.clone()),
                max_model_len: i32::try_from(plan.max_model_len).ok(),
                hf_token_secret: p.hf_token.map(|(name, key)| HfTokenSecret {
                    hf_token_secret_name: Some(name.to_string()),
                    hf_token_key_name: Some(key.to_string()),
                }),
                ..Default::default()
            },
            vllm_config: VLLMConfig {
                // Both are on by default in vLLM's V1 engine; unset, the operator turns them off.
                enable_chunked_prefill: Some(true),
                enable_prefix_caching: Some(true),
                // Unset, the operator forces the deprecated V0 engine.
                v1: Some(true),
                env: (!env.is_empty()).then_some(env),
                extra_args: (!args.is_empty()).then_some(args),
                gpu_memory_utilization: Some(format!("{}", p.settings.gpu_memory_utilization)),
                tensor_parallel_size: i32::try_from(tp).ok(),
                ..Default::default()
            },
            deployment_config: DeploymentConfig {
                // A pod holding every GPU of a node cannot be surged next to itself.
                deployment_strategy: (plan.gpu_count >= plan.gpu.per_node)
                    .then_some(DeploymentStrategy::Recreate),
                image: ImageSpec {
                    registry: p.image.registry.clone(),
                    name: p.image.name.clone(),
                    ..Default::default()
                },
                node_selector_terms: p
                    .settings
                    .gpu_node_selector
                    .then(|| node_selector_terms(plan))
                    .flatten(),
                replicas: Some(p.replicas),
                resources: ResourceSpec {
                    cpu: Some(plan.cpu.clone()),
                    memory: Some(plan.memory.clone()),
                    gpu: Some(plan.gpu_count.to_string()),
                    gpu_type,
                },
                shm_size: if tp > 1 { plan.shm_size.clone() } else { None },
                toleration: p
                    .settings
                    .gpu_toleration
                    .then(|| vec![gpu_toleration(plan)]),
                ..Default::default()
            },
            storage_config: p.storage.clone(),
            ..Default::default()
        },
        ..Default::default()
    };
    serde_json::to_value(runtime).unwrap_or(Value::Null)
}

/// Node affinity terms (ORed) that land the pod on this GPU: the GPU feature
/// discovery product label, or GKE's accelerator label.
fn node_selector_terms(plan: &Plan) -> Option<Vec<NodeSelectorTerm>> {
    let term = |key: &str, value: &str| NodeSelectorTerm {
        match_expressions: Some(vec![NodeSelectorRequirement {
            key: key.to_string(),
            operator: "In".into(),
            values: Some(vec![value.to_string()]),
        }]),
        match_fields: None,
    };
    let mut terms = Vec::new();
    if let Some(product) = plan.gpu.product_label {
        terms.push(term("nvidia.com/gpu.product", product));
    }
    if let Some(gke) = plan.gpu.gke_accelerator {
        terms.push(term("cloud.google.com/gke-accelerator", gke));
    }
    (!terms.is_empty()).then_some(terms)
}

/// GPU nodes are commonly tainted with the GPU's resource name.
fn gpu_toleration(plan: &Plan) -> Toleration {
    let key = if plan.gpu.resource_name.starts_with("amd.com") {
        "amd.com/gpu"
    } else {
        "nvidia.com/gpu"
    };
    Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        effect: Some("NoSchedule".into()),
        ..Default::default()
    }
}

/// The in-cluster base URL of the runtime's OpenAI-compatible API.
pub fn internal_url(name: &str, namespace: &str) -> String {
    format!("http://{name}.{namespace}.svc.cluster.local/v1")
}
