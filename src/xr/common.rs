//! Field types several XRs share.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::sizing::Reasons;

/// `spec.crossplane`, Crossplane's own fields (composition selection,
/// references to the composed resources). The function never reads them, so
/// they are skipped unread rather than built into a JSON tree that grows
/// with every composed resource; a spec still names the field because it
/// refuses unknown ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CrossplaneFields;

impl<'de> Deserialize<'de> for CrossplaneFields {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Self)
    }
}

impl Serialize for CrossplaneFields {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        s.serialize_map(Some(0))?.end()
    }
}

/// A reference to an object by name in the XR's namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct NameRef {
    /// Name of the object.
    #[schemars(length(min = 1, max = 253))]
    pub(crate) name: String,
}

/// A key in a Secret in the XR's namespace (or the target namespace).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SecretKeyRef {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub(crate) name: String,
    /// Key in the Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) key: Option<String>,
}

/// A container image as the VLLMRuntime takes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Image {
    /// Repository and tag, for example lmcache/vllm-openai:v0.3.13.
    pub(crate) name: String,
    /// Registry, for example docker.io.
    pub(crate) registry: String,
}

/// TLS for an Ingress.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Tls {
    /// Secret holding the certificate (tls.crt, tls.key) for the ingress host.
    #[schemars(length(min = 1, max = 253))]
    pub(crate) secret_name: String,
}

/// An endpoint the XR reports in its status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Endpoint {
    /// External URL through the Ingress, when one is composed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) external: Option<String>,
    /// In-cluster URL of the OpenAI-compatible API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) internal: Option<String>,
}

/// The memory estimate behind a sizing decision, in GiB.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EstimateStatus {
    /// Model weights, all GPUs of one replica together.
    #[serde(rename = "weightsGiB")]
    pub(crate) weights_gib: f64,
    /// KV cache for the context length and concurrency target.
    #[serde(rename = "kvCacheGiB")]
    pub(crate) kv_cache_gib: f64,
    /// Activations, CUDA graphs and runtime overhead.
    #[serde(rename = "overheadGiB")]
    pub(crate) overhead_gib: f64,
    /// What each GPU must hold.
    #[serde(rename = "perGpuGiB")]
    pub(crate) per_gpu_gib: f64,
    /// What each GPU (or MIG slice) offers vLLM.
    #[serde(rename = "gpuCapacityGiB")]
    pub(crate) gpu_capacity_gib: f64,
}

impl From<&crate::sizing::Estimate> for EstimateStatus {
    fn from(e: &crate::sizing::Estimate) -> Self {
        Self {
            weights_gib: round2(e.weights_gib),
            kv_cache_gib: round2(e.kv_cache_gib),
            overhead_gib: round2(e.overhead_gib),
            per_gpu_gib: round2(e.per_gpu_gib),
            gpu_capacity_gib: round2(e.gpu_capacity_gib),
        }
    }
}

/// Rounded to 0.01, as reported figures (GiB, billions) are.
pub(crate) fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// A serving plan as reported in an XR's status.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanStatus {
    // The names from the catalogs and the sizing vocabularies are shared
    // statics, not copies.
    pub(crate) gpu_type: Cow<'static, str>,
    /// GPUs per replica (tensorParallelSize x pipelineParallelSize).
    pub(crate) gpu_count: u32,
    pub(crate) tensor_parallel_size: u32,
    pub(crate) pipeline_parallel_size: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) mig_profile: Option<String>,
    /// Extended resource requested per GPU (nvidia.com/gpu, nvidia.com/mig-..., amd.com/gpu).
    pub(crate) gpu_resource_name: Cow<'static, str>,
    pub(crate) dtype: Cow<'static, str>,
    /// Weight precision (bf16, fp8, int4, ...), as `size` reports it.
    pub(crate) quantization: Cow<'static, str>,
    /// vLLM's --quantization, when vLLM quantizes at load time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) quantization_method: Option<String>,
    pub(crate) max_model_len: u64,
    pub(crate) cpu: String,
    pub(crate) memory: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) shm_size: Option<String>,
    pub estimate: EstimateStatus,
    /// The objective that chose the layout: minimal, balanced or throughput.
    pub(crate) objective: Cow<'static, str>,
    /// vLLM's --kv-cache-dtype: auto or fp8.
    pub(crate) kv_cache_dtype: Cow<'static, str>,
    /// True when the model's architecture was guessed (not in the catalog, no config.json): give the Model's config.
    pub(crate) architecture_guessed: bool,
    /// Why the plan is what it is, in short sentences with the numbers.
    #[serde(default, skip_serializing_if = "Reasons::is_empty")]
    pub(crate) reasons: Reasons,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) warnings: Vec<String>,
}

impl From<crate::sizing::Plan> for PlanStatus {
    fn from(plan: crate::sizing::Plan) -> Self {
        Self {
            gpu_type: Cow::Borrowed(plan.gpu.name),
            gpu_count: plan.gpu_count,
            tensor_parallel_size: plan.tensor_parallel_size,
            pipeline_parallel_size: plan.pipeline_parallel_size,
            mig_profile: plan.mig_profile,
            gpu_resource_name: plan.gpu_resource_name,
            dtype: Cow::Borrowed(plan.dtype.as_str()),
            quantization: Cow::Borrowed(plan.weight_precision.as_str()),
            quantization_method: plan.quantization_method,
            max_model_len: plan.max_model_len,
            cpu: plan.cpu,
            memory: plan.memory,
            shm_size: plan.shm_size,
            estimate: EstimateStatus::from(&plan.estimate),
            objective: Cow::Borrowed(plan.objective.as_str()),
            kv_cache_dtype: Cow::Borrowed(plan.kv_cache_dtype.as_str()),
            architecture_guessed: plan.architecture_guessed,
            reasons: plan.reasons,
            warnings: plan.warnings,
        }
    }
}

impl From<&crate::sizing::Plan> for PlanStatus {
    fn from(plan: &crate::sizing::Plan) -> Self {
        Self::from(plan.clone())
    }
}

/// What serves the model: the vLLM production-stack operator's VLLMRuntime,
/// a plain Deployment, a LeaderWorkerSet (multi-node), or the one of those
/// that can serve the plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum RuntimeChoice {
    /// The operator's VLLMRuntime (one pod per replica, NVIDIA only).
    #[default]
    VllmRuntime,
    /// A Deployment and a Service, no operator needed.
    Deployment,
    /// A LeaderWorkerSet: one group of pods per replica, across nodes.
    LeaderWorkerSet,
    /// The VLLMRuntime where it can serve the plan, else a Deployment, else a LeaderWorkerSet.
    Auto,
}

// The sizing engine's own vocabularies, with the schemas the XRs declare
// them by: each schema lists the names the type reads, from the same
// constants. No descriptions: each field that uses one describes it.
pub(crate) use crate::sizing::{KvCacheDtype, Objective, WeightPrecision};

/// A string schema admitting exactly `names`, as schemars derives for an
/// enum of unit variants.
fn names_schema(names: &[&str]) -> Schema {
    json_schema!({"type": "string", "enum": names})
}

impl JsonSchema for KvCacheDtype {
    fn schema_name() -> Cow<'static, str> {
        "KvCacheDtype".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        names_schema(&KvCacheDtype::NAMES)
    }
}

impl JsonSchema for Objective {
    fn schema_name() -> Cow<'static, str> {
        "Objective".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        names_schema(&Objective::NAMES)
    }
}

/// What an LLMInference's `quantization` reads: `auto` (the checkpoint's
/// own precision, as dot-inference spells it), then a precision.
const AUTO_OR_PRECISION: [&str; 8] = precision_names("auto", true);
/// What a Model's `quantization` reads: a precision, then `none` (the
/// checkpoint's own, as NeuroNetes spells it).
const PRECISION_OR_NONE: [&str; 8] = precision_names("none", false);

/// Reads a weight precision an XR asks for; `own`, the kind's word for the
/// checkpoint's own precision, asks for none.
fn read_precision<'de, D: serde::Deserializer<'de>>(
    d: D,
    own: &str,
    names: &'static [&'static str],
) -> Result<Option<WeightPrecision>, D::Error> {
    let Some(word) = Option::<Cow<'de, str>>::deserialize(d)? else {
        return Ok(None);
    };
    if word == own {
        return Ok(None);
    }
    WeightPrecision::ALL
        .into_iter()
        .find(|p| p.as_str() == word)
        .map(Some)
        .ok_or_else(|| serde::de::Error::unknown_variant(&word, names))
}

/// An LLMInference's `quantization`; see [`AUTO_OR_PRECISION`].
pub(crate) fn auto_or_precision<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<WeightPrecision>, D::Error> {
    read_precision(d, "auto", &AUTO_OR_PRECISION)
}

/// The schema of [`auto_or_precision`].
pub(crate) fn auto_or_precision_schema(_: &mut SchemaGenerator) -> Schema {
    optional_names_schema(&AUTO_OR_PRECISION)
}

/// A Model's `quantization`; see [`PRECISION_OR_NONE`].
pub(crate) fn precision_or_none<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<WeightPrecision>, D::Error> {
    read_precision(d, "none", &PRECISION_OR_NONE)
}

/// The schema of [`precision_or_none`].
pub(crate) fn precision_or_none_schema(_: &mut SchemaGenerator) -> Schema {
    optional_names_schema(&PRECISION_OR_NONE)
}

/// [`names_schema`] for an optional field, as schemars derives an `Option`
/// of such an enum.
fn optional_names_schema(names: &[&str]) -> Schema {
    let mut values: Vec<serde_json::Value> = names.iter().map(|n| (*n).into()).collect();
    values.push(serde_json::Value::Null);
    json_schema!({"type": ["string", "null"], "enum": values})
}

/// [`WeightPrecision::NAMES`] with `own` (the checkpoint's own precision)
/// before or after them.
const fn precision_names<const N: usize>(own: &'static str, own_first: bool) -> [&'static str; N] {
    let mut names = [own; N];
    let offset = if own_first { 1 } else { 0 };
    let mut i = 0;
    while i < WeightPrecision::NAMES.len() {
        names[i + offset] = WeightPrecision::NAMES[i];
        i += 1;
    }
    names
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Deserialize)]
    struct Spec {
        #[serde(default, deserialize_with = "auto_or_precision")]
        llm: Option<WeightPrecision>,
        #[serde(default, deserialize_with = "precision_or_none")]
        model: Option<WeightPrecision>,
    }

    fn read(v: serde_json::Value) -> Result<Spec, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    #[test]
    fn each_kind_reads_every_precision_and_its_own_word_for_the_checkpoints() {
        for p in WeightPrecision::ALL {
            let spec = read(json!({"llm": p.as_str(), "model": p.as_str()})).unwrap();
            assert_eq!((spec.llm, spec.model), (Some(p), Some(p)));
        }
        let own = read(json!({"llm": "auto", "model": "none"})).unwrap();
        assert_eq!((own.llm, own.model), (None, None));
        // Each kind keeps its own word: the other's is not a precision.
        assert_eq!(
            read(json!({"llm": "none"})).err().unwrap(),
            "unknown variant `none`, expected one of `auto`, `fp32`, `bf16`, `fp16`, `fp8`, `int8`, `int4`, `fp4`"
        );
        assert_eq!(
            read(json!({"model": "auto"})).err().unwrap(),
            "unknown variant `auto`, expected one of `fp32`, `bf16`, `fp16`, `fp8`, `int8`, `int4`, `fp4`, `none`"
        );
    }
}
