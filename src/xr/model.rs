//! `Model`: the catalog entry for a set of weights.
//!
//! Field names follow the NeuroNetes CRD reference, so its Model examples
//! work with `apiVersion: infer.dev/v1alpha1`. A Model composes no workload:
//! it reports how it would be served on each GPU type the platform offers,
//! and the runtimes that serve it (AgentPool, LLMInference `modelRef`) read
//! its spec as a required resource.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::plan_status::PlanStatus;
use super::shared_fields::{GPUS_PER_REPLICA_MAX, HF_TOKEN_KEY, NameRef, SecretKeyRef};
use super::sizing_vocabulary::{KvCacheDtype, Objective, WeightPrecision};
use super::validate::{at_most, required_text, text};
use crate::names::require_subdomain;

/// Kind name.
pub(crate) const KIND: &str = "Model";

/// Longest `format` and `architecture`.
pub(crate) const DESCRIPTOR_MAX: usize = 64;
/// Longest weightsURI: the schema states it and the composer checks it.
pub(crate) const WEIGHTS_URI_MAX: usize = 1024;
/// Longest `revision`: Git refuses longer ref names on most file systems.
pub(crate) const REVISION_MAX: usize = 255;
/// Longest `toolCallParser` accepted: vLLM's names are a few words.
pub(crate) const TOOL_CALL_PARSER_MAX: usize = 64;
/// Most nodes a cache policy names.
const PRELOAD_NODES_MAX: usize = 64;

/// The desired state of a Model.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!(has(self.config) && has(self.configFrom))", "message": "set config (inline) or configFrom (a ConfigMap), not both"}
]))]
pub(crate) struct ModelSpec {
    /// Where the weights are: hf://org/name, s3://bucket/path or gs://bucket/path. https://... and pvc://claim/path are catalogued, but no runtime loads them: the Model is Failed.
    #[serde(rename = "weightsURI")]
    #[schemars(regex(pattern = r"^(hf|s3|gs|https|pvc)://.+$"), length(max = WEIGHTS_URI_MAX))]
    pub(crate) weights_uri: String,
    /// Total size of the weights, a quantity such as 16Gi. Checked against parameters x precision.
    #[schemars(regex(pattern = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$"))]
    pub(crate) size: Option<String>,
    /// Weight precision; none means the checkpoint's own.
    #[serde(
        default,
        deserialize_with = "super::sizing_vocabulary::precision_or_none"
    )]
    #[schemars(schema_with = "super::sizing_vocabulary::precision_or_none_schema")]
    pub(crate) quantization: Option<WeightPrecision>,
    /// How the weights are split across GPUs; overrides the derived parallelism.
    pub(crate) shard_spec: Option<ShardSpec>,
    /// How the weights are cached on the runtimes that serve the Model.
    pub(crate) cache_policy: Option<CachePolicy>,
    /// Checkpoint format, for example safetensors, pytorch or gguf.
    #[schemars(length(max = DESCRIPTOR_MAX))]
    pub(crate) format: Option<String>,
    /// Architecture, for example llama, qwen2 or mistral.
    #[schemars(length(max = DESCRIPTOR_MAX))]
    pub(crate) architecture: Option<String>,
    /// Parameter count such as 8B, 70B or 8x7B; needed when the model catalog does not know the weights.
    #[schemars(regex(
        pattern = r"^[0-9]+(\.[0-9]+)?([xX][0-9]+(\.[0-9]+)?)?[MmBbTt]?(-[Aa][0-9]+(\.[0-9]+)?[MmBbTt]?)?$"
    ))]
    pub(crate) parameter_count: Option<String>,
    /// The revision of the hf:// repository to load (a commit hash, branch or tag; vLLM's --revision) on every runtime serving the Model, so replicas started later (a scale-out, a drained node) load the weights, tokenizer and code the running ones serve. A commit hash pins them; a branch follows it.
    #[schemars(regex(pattern = r"^[A-Za-z0-9._/-]+$"), length(max = REVISION_MAX))]
    pub(crate) revision: Option<String>,
    /// Secret holding a Hugging Face token for gated hf:// weights (key defaults to token); an extension of the NeuroNetes Model.
    pub(crate) hf_token_secret_ref: Option<SecretKeyRef>,
    /// Secret whose keys the model servers' pods take as their environment (envFrom), for s3:// weights in a bucket the nodes' role cannot read: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN, AWS_REGION), plus AWS_ENDPOINT_URL and RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING=0 for an S3-compatible store such as MinIO or Ceph. It must exist where the pods run. A VLLMRuntime's environment holds literal values only: runtimes serving the Model run on a Deployment or a LeaderWorkerSet.
    pub(crate) storage_secret_ref: Option<NameRef>,
    /// The model's Hugging Face config.json, as an object: its exact architecture (layers, heads, KV heads, vocabulary, sliding window, MLA, quantization) for models the catalog does not know. A checkpoint whose quantization is in hf_quant_config.json (ModelOpt 0.29 and earlier) takes that file's content as quantization_config, where vLLM puts it. At most 256 KiB. Not with configFrom.
    #[serde(default)]
    #[schemars(schema_with = "free_form_object")]
    pub(crate) config: Option<serde_json::Value>,
    /// The checkpoint's weights index (model.safetensors.index.json): its total size gives the exact weights.
    pub(crate) weights_index: Option<WeightsIndex>,
    /// A ConfigMap in the Model's namespace holding the model's config.json (key config.json) and, optionally, its model.safetensors.index.json (key model.safetensors.index.json) and hf_quant_config.json (key hf_quant_config.json: read, as vLLM reads it, when config.json has no quantization_config). Not with config.
    pub(crate) config_from: Option<ConfigFrom>,
    /// vLLM's KV cache dtype for the runtimes that serve the Model: auto (the model's) or fp8 (half the memory per token).
    pub(crate) kv_cache_dtype: Option<KvCacheDtype>,
    /// What the layouts of the runtimes serving the Model are chosen for: minimal, balanced or throughput. Defaults to the platform's (step input).
    pub(crate) objective: Option<Objective>,
    /// vLLM's --tool-call-parser for the weights' tool-call format (for example hermes, llama3_json, mistral, pythonic): every runtime serving the Model starts with --enable-auto-tool-choice and it, so OpenAI requests with tools (tool_choice auto) work. Unset, only AgentPools whose agents have tools get one: the parser vLLM documents for the model family, when known.
    #[schemars(regex(pattern = r"^[a-z0-9][a-z0-9_-]*$"), length(max = TOOL_CALL_PARSER_MAX))]
    pub(crate) tool_call_parser: Option<String>,
    /// Let vLLM run the Python code the weights' repository ships (--trust-remote-code) on every runtime serving the Model. Some checkpoints cannot load without it (Kimi K2's tokenizer): such a Model is Failed until it is true. The code runs in the model server's pods: set it only for repositories the platform would run.
    pub(crate) trust_remote_code: Option<bool>,
    /// Crossplane's own fields (composition selection and the like); skipped unread.
    #[schemars(skip)]
    pub(crate) crossplane: Option<crate::xr::shared_fields::CrossplaneFields>,
}

/// The schema of a free-form object (a config.json): any fields, kept as given.
fn free_form_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// What sizing reads from a checkpoint's model.safetensors.index.json.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct WeightsIndex {
    /// metadata.total_size: the bytes of all weights as stored.
    #[schemars(range(min = 1, max = crate::sizing::MAX_CHECKPOINT_BYTES))]
    pub(crate) total_size: i64,
}

/// Where a Model's config.json comes from when it is not inline.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ConfigFrom {
    /// The ConfigMap, in the Model's namespace, with the keys config.json and (optionally) model.safetensors.index.json.
    pub(crate) config_map_ref: NameRef,
}

/// How a Model's weights are split.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ShardSpec {
    /// Number of shards: GPUs per replica for tensor/pipeline parallelism, replicas for data parallelism.
    #[schemars(range(min = 1, max = GPUS_PER_REPLICA_MAX))]
    pub(crate) count: i64,
    pub(crate) strategy: ShardStrategy,
    /// GPU topology the shards need.
    pub(crate) topology: Option<Topology>,
}

/// The parallelism a shard count means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
// The variants are the API's values (tensor-parallel, ...), suffix and all.
#[allow(clippy::enum_variant_names)]
pub(crate) enum ShardStrategy {
    TensorParallel,
    PipelineParallel,
    DataParallel,
}

/// GPU topology constraints.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Topology {
    pub(crate) locality: Locality,
    /// Minimum inter-GPU bandwidth, a quantity such as 600Gi.
    pub(crate) min_bandwidth: Option<String>,
}

/// Where the GPUs of one replica must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Locality {
    SameNode,
    SameSocket,
    Nvlink,
    Any,
}

/// How the weights are cached.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CachePolicy {
    pub(crate) priority: CachePriority,
    /// How long to keep the weights pinned, a duration such as 2h.
    pub(crate) pin_duration: Option<String>,
    /// Nodes to preload the weights on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = PRELOAD_NODES_MAX))]
    pub(crate) preload_nodes: Vec<String>,
    pub(crate) eviction_policy: Option<EvictionPolicy>,
}

/// Cache priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum CachePriority {
    Critical,
    High,
    Medium,
    Low,
}

/// When cached weights may be evicted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum EvictionPolicy {
    Never,
    Idle,
    LowPriority,
}

/// What the function reports about a Model.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModelStatus {
    /// What the cache policy changes on the runtimes that serve the Model, and what it does not.
    pub(crate) cache: Option<CacheStatus>,
    /// The ConfigMap holding the model card and plans.
    pub(crate) config_map: Option<String>,
    /// What vLLM loads (a Hugging Face id or the URI).
    pub(crate) model_id: Option<String>,
    /// Fields that have no effect, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
    /// Parameters in billions, as sized.
    pub(crate) parameters_billions: Option<f64>,
    /// Ready when the Model can be served on at least one offered GPU type; Failed otherwise; Pending while it waits for its configFrom ConfigMap.
    pub(crate) phase: Option<String>,
    /// The serving plan on each offered GPU type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) plans: Vec<GpuPlanStatus>,
    /// Weight precision, as sized.
    pub(crate) precision: Option<String>,
    /// Why the phase is Failed.
    pub(crate) reason: Option<String>,
    /// GPU types the Model can be served on, for printer columns.
    pub(crate) serveable_on: Option<String>,
    /// The weights' size: declared, derived and whether they agree.
    pub(crate) size: Option<SizeStatus>,
    /// What the Model waits for (its spec.configFrom ConfigMap), while it waits.
    pub(crate) waiting_for: Option<String>,
    /// What deserves attention although the Model is usable (also a WARNING event when it appears).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) warnings: Vec<String>,
}

/// The size of the weights.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SizeStatus {
    /// False when the declared size contradicts the derived one.
    pub(crate) consistent: bool,
    /// spec.size, when set.
    pub(crate) declared: Option<String>,
    /// Parameters x bytes per parameter, in GiB.
    #[serde(rename = "derivedGiB")]
    pub(crate) derived_gib: f64,
    /// How derivedGiB was computed.
    pub(crate) formula: String,
}

/// A Model's plan on one GPU type.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GpuPlanStatus {
    /// An offered GPU type (the step input's defaults.offeredGpuTypes).
    pub(crate) gpu_type: String,
    /// The plan, when the Model can be served on this GPU type.
    pub(crate) plan: Option<PlanStatus>,
    /// Why it cannot, otherwise.
    pub(crate) error: Option<String>,
}

/// What a cache policy does.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CacheStatus {
    /// What runtimes serving the Model get, for example a weights volume.
    pub(crate) applied: Option<String>,
    /// Fields of the policy that have no effect, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) not_applied: Vec<String>,
}

impl ModelSpec {
    /// The fields serde accepts as any string, checked as Kubernetes, the
    /// sizing engine and the runtimes will read them: the first problem,
    /// naming the field and what would be valid, never echoing a long value
    /// whole.
    pub(crate) fn validate(&self) -> Result<(), String> {
        required_text(
            "spec.weightsURI",
            &self.weights_uri,
            WEIGHTS_URI_MAX,
            "hf://meta-llama/Llama-3.1-8B-Instruct",
        )?;
        if let Some(p) = &self.parameter_count {
            crate::sizing::parse_parameter_count(p)
                .map_err(|e| format!("spec.parameterCount: {e}"))?;
        }
        if let Some(r) = &self.revision {
            let example = "0e9e39f249a16976918f6564b8830bc894c89659";
            text("spec.revision", r, REVISION_MAX, example)?;
            if !r
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c))
            {
                return Err(format!(
                    "spec.revision is {}; use a commit hash, branch or tag of the repository (letters, digits, '.', \
                     '_', '-' and '/'), for example {example}",
                    crate::quote::shown(r)
                ));
            }
        }
        if let Some(r) = &self.hf_token_secret_ref {
            r.check("spec.hfTokenSecretRef", "hf-token", HF_TOKEN_KEY)?;
        }
        if let Some(r) = &self.storage_secret_ref {
            require_subdomain("spec.storageSecretRef.name", &r.name, "bucket-keys")?;
        }
        if let Some(c) = &self.config_from {
            require_subdomain(
                "spec.configFrom.configMapRef.name",
                &c.config_map_ref.name,
                "llama-config",
            )?;
        }
        if let Some(a) = &self.architecture {
            text("spec.architecture", a, DESCRIPTOR_MAX, "llama")?;
        }
        if let Some(f) = &self.format {
            text("spec.format", f, DESCRIPTOR_MAX, "safetensors")?;
        }
        if let Some(c) = &self.cache_policy {
            if let Some(d) = &c.pin_duration {
                crate::units::positive_duration_seconds("spec.cachePolicy.pinDuration", d)?;
            }
            at_most(
                "spec.cachePolicy.preloadNodes",
                &c.preload_nodes,
                PRELOAD_NODES_MAX,
            )?;
        }
        Ok(())
    }
}
