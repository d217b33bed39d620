//! A vLLM production-stack `VLLMRuntime` carrying a sizing plan.
//!
//! The operator has quirks this builder handles deliberately: it turns an
//! unset `enableChunkedPrefill`/`enablePrefixCaching` into `--no-enable-...`
//! and an unset `v1` into `VLLM_USE_V1=0`, so all three are always set; its
//! pods get the container's 64Mi /dev/shm unless `shmSize` is set, too small
//! for tensor-parallel workers; and it defaults `runtimeClass` to `nvidia`.
//! Two more are fatal if ignored: a runtime without `nodeSelectorTerms` makes
//! the controller dereference a nil affinity on every reconcile once its
//! Deployment exists (so its status and later changes never land), and its
//! labels become the Deployment's immutable selector.

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::compose::resources::replacement::recreate;
use crate::compose::resources::weights_volume::{HF_HOME, WeightsCache};
use crate::input::{Image, Settings};
use crate::manifests::vllm_runtime::{
    DeploymentConfig, DeploymentStrategy, EnvVar, HfTokenSecret, ImageSpec, ResourceSpec,
    RuntimeModelSpec, VLLMConfig, VLLMRuntime, VLLMRuntimeSpec,
};
use crate::sizing::{self, MigStrategy, Plan};

/// Port of the Service the operator creates in front of the runtime.
pub(crate) const SERVICE_PORT: i32 = 80;

/// What a runtime is built from besides the plan.
pub(crate) struct RuntimeParams<'a> {
    pub(crate) name: &'a str,
    pub(crate) namespace: &'a str,
    /// What `vllm serve` loads: a Hugging Face id or a path.
    pub(crate) model_url: &'a str,
    pub(crate) plan: &'a Plan,
    pub(crate) image: &'a Image,
    /// The replica count; `None` when an autoscaler owns it.
    pub(crate) replicas: Option<i32>,
    pub(crate) hf_token: Option<(&'a str, &'a str)>,
    pub(crate) extra_args: &'a [String],
    pub(crate) settings: &'a Settings,
    pub(crate) weights_cache: Option<&'a WeightsCache>,
    /// Labels that never change for the XR: the operator copies them into
    /// the Deployment's selector, which cannot change.
    pub(crate) labels: Option<&'a std::collections::BTreeMap<String, String>>,
    /// Secrets to pull images with; the VLLMRuntime takes at most one.
    pub(crate) pull_secrets: &'a [String],
}

/// The VLLMRuntime manifest.
pub(crate) fn vllm_runtime(p: &RuntimeParams) -> crate::compose::composition::Manifest {
    let plan = p.plan;
    let tp = plan.tensor_parallel_size;
    // --quantization and --kv-cache-dtype, when the plan needs them.
    let mut args = plan.engine_args();
    args.extend(p.extra_args.iter().cloned());

    let mut env = Vec::new();
    if tp > 1 {
        // vLLM's default fork breaks CUDA in tensor-parallel workers.
        env.push(EnvVar {
            name: "VLLM_WORKER_MULTIPROC_METHOD".into(),
            value: "spawn".into(),
        });
    }
    if p.weights_cache.is_some() {
        // vLLM downloads into HF_HOME: on the volume, a restarted pod resumes.
        env.push(EnvVar {
            name: "HF_HOME".into(),
            value: HF_HOME.into(),
        });
    }
    let storage = p.weights_cache.map(|c| c.storage.clone());

    let gpu_type =
        (plan.gpu_resource_name != "nvidia.com/gpu").then(|| plan.gpu_resource_name.to_string());
    let runtime = VLLMRuntime {
        metadata: ObjectMeta {
            name: Some(p.name.to_string()),
            namespace: Some(p.namespace.to_string()),
            labels: p.labels.cloned(),
            ..Default::default()
        },
        spec: VLLMRuntimeSpec {
            model: RuntimeModelSpec {
                model_url: p.model_url.to_string(),
                dtype: Some(plan.dtype.as_str().into()),
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
                gpu_memory_utilization: Some(plan.gpu_memory_utilization.to_string()),
                tensor_parallel_size: i32::try_from(tp).ok(),
                ..Default::default()
            },
            deployment_config: DeploymentConfig {
                deployment_strategy: recreate(plan, p.weights_cache)
                    .then_some(DeploymentStrategy::Recreate),
                image: ImageSpec {
                    // The operator joins registry + "/" + name as they are.
                    registry: p.image.registry.trim_end_matches('/').into(),
                    name: p.image.name.clone(),
                    pull_secret_name: p.pull_secrets.first().cloned(),
                    ..Default::default()
                },
                node_selector_terms: Some(
                    gpu_node_terms(plan, p.settings).unwrap_or_else(|| vec![any_linux_node()]),
                ),
                replicas: p.replicas,
                resources: ResourceSpec {
                    cpu: Some(plan.cpu.clone()),
                    memory: Some(plan.memory.clone()),
                    gpu: Some(plan.gpu_count.to_string()),
                    gpu_type,
                },
                shm_size: if tp > 1 { plan.shm_size.clone() } else { None },
                toleration: tolerations(plan, p.settings),
                ..Default::default()
            },
            storage_config: storage,
            ..Default::default()
        },
        ..Default::default()
    };
    crate::compose::composition::Manifest::new(VLLMRuntime::KIND, runtime)
}

/// Node affinity terms (ORed) that keep a server on its GPU, when the
/// platform asks (`gpuNodeSelector`) or the plan's resource alone cannot: a
/// MIG slice under the single strategy is an nvidia.com/gpu like any other,
/// and only its node's labels say which profile it is. Whole GPUs are found
/// by the labels that name them, on nodes whose GPUs are whole: GPU feature
/// discovery's product (whose value names MIG-single and shared GPUs
/// apart), GKE's accelerator, EKS's EC2 GPU name, AMD's device IDs, AKS's
/// VM size.
pub(crate) fn gpu_node_terms(plan: &Plan, settings: &Settings) -> Option<Vec<NodeSelectorTerm>> {
    let requirement = |key: &str, operator: &str, values: &[&str]| NodeSelectorRequirement {
        key: key.to_string(),
        operator: operator.to_string(),
        values: (!values.is_empty()).then(|| values.iter().map(ToString::to_string).collect()),
    };
    let term = |requirements: Vec<NodeSelectorRequirement>| NodeSelectorTerm {
        match_expressions: Some(requirements),
        match_fields: None,
    };
    let gpu = &plan.gpu;
    let single_slice = plan
        .mig_profile
        .as_deref()
        .filter(|_| settings.mig_strategy == MigStrategy::Single);
    if single_slice.is_none() && !settings.gpu_node_selector {
        return None;
    }
    let mut terms = Vec::new();
    if let Some(product) = gpu.product_label.as_deref() {
        // Feature discovery names a single-strategy node's slices in its product.
        let value = match single_slice {
            Some(profile) => format!("{product}-MIG-{profile}"),
            None => product.to_string(),
        };
        terms.push(term(vec![requirement(
            sizing::GPU_PRODUCT_LABEL,
            "In",
            &[&value],
        )]));
    }
    // GKE offers MIG slices as nvidia.com/gpu, never as the mixed
    // strategy's nvidia.com/mig-<profile>: a slice is found by its
    // partition size, a whole GPU on a node without one.
    if !gpu.gke_accelerators.is_empty() && (single_slice.is_some() || plan.mig_profile.is_none()) {
        let accelerators: Vec<&str> = gpu.gke_accelerators.iter().map(String::as_str).collect();
        let partition = match single_slice {
            Some(profile) => requirement(sizing::GKE_PARTITION_LABEL, "In", &[profile]),
            None => requirement(sizing::GKE_PARTITION_LABEL, "DoesNotExist", &[]),
        };
        terms.push(term(vec![
            requirement(sizing::GKE_ACCELERATOR_LABEL, "In", &accelerators),
            partition,
            requirement(sizing::GKE_SHARING_LABEL, "DoesNotExist", &[]),
        ]));
    }
    // EKS labels the nodes it provisions (Auto Mode, Karpenter) with EC2's
    // name of their GPU, whole or time-shared alike: these terms hold only
    // where feature discovery, whose product label tells the two apart,
    // does not run. MIG needs the GPU Operator, and so feature discovery.
    if let Some(ec2) = gpu.ec2.as_ref().filter(|_| plan.mig_profile.is_none()) {
        for labels in [
            sizing::EKS_AUTO_MODE_GPU_LABELS,
            sizing::KARPENTER_GPU_LABELS,
        ] {
            let mut requirements = vec![requirement(labels.name, "In", &[&ec2.name])];
            if let Some((operator, mib)) = ec2.memory_bound {
                requirements.push(requirement(labels.memory, operator, &[&mib.to_string()]));
            }
            requirements.push(requirement(sizing::GPU_PRODUCT_LABEL, "DoesNotExist", &[]));
            terms.push(term(requirements));
        }
    }
    if !gpu.amd_device_ids.is_empty() {
        // A partitioned AMD GPU keeps its device ID, and the device
        // plugin counts its partitions as amd.com/gpu: a whole GPU is
        // one compute partition on one memory partition (spx_nps1), or
        // a node the labeller does not say it of. (AMD GPUs have no MIG.)
        let ids: Vec<&str> = gpu.amd_device_ids.iter().map(String::as_str).collect();
        for (operator, values) in [("In", &[sizing::WHOLE_AMD_GPU][..]), ("DoesNotExist", &[])] {
            terms.push(term(vec![
                requirement(sizing::AMD_DEVICE_ID_LABEL, "In", &ids),
                requirement(sizing::AMD_PARTITION_LABEL, operator, values),
            ]));
        }
    }
    // AKS labels a node with its VM size only, whole or shared GPUs alike:
    // like EC2's names, it holds where the vendor's labeller does not run
    // (AKS's MIG and time-slicing set-ups run it).
    if !gpu.azure_vm_sizes.is_empty() && plan.mig_profile.is_none() {
        let sizes: Vec<&str> = gpu.azure_vm_sizes.iter().map(String::as_str).collect();
        let labeller = if gpu.vendor == "amd" {
            sizing::AMD_DEVICE_ID_LABEL
        } else {
            sizing::GPU_PRODUCT_LABEL
        };
        terms.push(term(vec![
            requirement(sizing::INSTANCE_TYPE_LABEL, "In", &sizes),
            requirement(labeller, "DoesNotExist", &[]),
        ]));
    }
    if terms.is_empty() {
        terms.push(any_linux_node());
    }
    Some(terms)
}

/// The term every node matches: a VLLMRuntime's affinity is never empty,
/// which the operator's controller cannot handle.
fn any_linux_node() -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: Some(vec![NodeSelectorRequirement {
            key: "kubernetes.io/os".into(),
            operator: "In".into(),
            values: Some(vec!["linux".into()]),
        }]),
        match_fields: None,
    }
}

/// Why a VLLMRuntime cannot serve on the plan's GPU, if it cannot: the
/// operator runs `/opt/venv/bin/vllm` from a CUDA image under the `nvidia`
/// RuntimeClass, so only NVIDIA GPUs can work.
pub(crate) fn unsupported_gpu(plan: &Plan) -> Option<String> {
    (plan.gpu.vendor != "nvidia").then(|| {
        format!(
            "{} is an {} GPU, and the vLLM production-stack operator runs /opt/venv/bin/vllm from a CUDA image \
             with the nvidia RuntimeClass, so a VLLMRuntime cannot run on it; choose an NVIDIA GPU type \
             (for example H100-80GB, H200 or L40S)",
            plan.gpu.name,
            plan.gpu.vendor.to_ascii_uppercase()
        )
    })
}

/// The VLLMRuntime's tolerations: the GPU taint's where the platform asks
/// (unset by default, so dot-inference's runtimes keep their spec), then the
/// platform's own.
fn tolerations(plan: &Plan, settings: &Settings) -> Option<Vec<Toleration>> {
    let all: Vec<Toleration> = settings
        .gpu_toleration
        .then(|| gpu_toleration(plan))
        .into_iter()
        .chain(settings.model_server_tolerations.iter().cloned())
        .collect();
    (!all.is_empty()).then_some(all)
}

/// GPU nodes are commonly tainted with the GPU's resource name.
pub(crate) fn gpu_toleration(plan: &Plan) -> Toleration {
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
pub(crate) fn internal_url(name: &str, namespace: &str) -> String {
    ["http://", name, ".", namespace, ".svc.cluster.local/v1"].concat()
}
