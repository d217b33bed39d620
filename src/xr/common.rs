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
            dtype: Cow::Borrowed(plan.dtype),
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
pub(crate) use crate::sizing::{KvCacheDtype, Objective, Precision};

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

/// A weight precision an XR asks for: one of [`Precision`]'s, or the
/// checkpoint's own, which each kind spells its own way (`auto` on an
/// LLMInference as dot-inference does, `none` on a Model as NeuroNetes
/// does). `$name` is the type, `$own` that word and `$names` every value
/// the type reads, `$own` included.
macro_rules! quantization {
    ($(#[$doc:meta])* $name:ident, $own:literal, $names:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum $name {
            /// The checkpoint's own precision.
            Checkpoint,
            Precision($crate::sizing::Precision),
        }

        impl $name {
            /// The precision asked for; `None` for the checkpoint's own.
            pub(crate) fn precision(self) -> Option<$crate::sizing::Precision> {
                match self {
                    Self::Checkpoint => None,
                    Self::Precision(p) => Some(p),
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(match self {
                    Self::Checkpoint => $own,
                    Self::Precision(p) => p.as_str(),
                })
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let word = std::borrow::Cow::<'de, str>::deserialize(d)?;
                if word == $own {
                    return Ok(Self::Checkpoint);
                }
                $crate::sizing::Precision::ALL
                    .into_iter()
                    .find(|p| p.as_str() == word)
                    .map(Self::Precision)
                    .ok_or_else(|| serde::de::Error::unknown_variant(&word, &$names))
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "enum": $names})
            }
        }
    };
}
pub(crate) use quantization;

/// [`Precision::NAMES`] with `own` (the checkpoint's own precision) before
/// or after them.
pub(crate) const fn precision_names<const N: usize>(
    own: &'static str,
    own_first: bool,
) -> [&'static str; N] {
    let mut names = [own; N];
    let offset = if own_first { 1 } else { 0 };
    let mut i = 0;
    while i < Precision::NAMES.len() {
        names[i + offset] = Precision::NAMES[i];
        i += 1;
    }
    names
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Precision;
    use crate::xr::{llm_inference, model};

    #[test]
    fn each_kind_reads_every_precision_and_its_own_word_for_the_checkpoints() {
        for p in Precision::ALL {
            let llm: llm_inference::Quantization =
                serde_json::from_value(json!(p.as_str())).unwrap();
            let m: model::Quantization = serde_json::from_value(json!(p.as_str())).unwrap();
            assert_eq!((llm.precision(), m.precision()), (Some(p), Some(p)));
            assert_eq!(serde_json::to_value(llm).unwrap(), p.as_str());
            assert_eq!(serde_json::to_value(m).unwrap(), p.as_str());
        }
        let auto: llm_inference::Quantization = serde_json::from_value(json!("auto")).unwrap();
        let none: model::Quantization = serde_json::from_value(json!("none")).unwrap();
        assert_eq!((auto.precision(), none.precision()), (None, None));
        assert_eq!(serde_json::to_value(auto).unwrap(), "auto");
        assert_eq!(serde_json::to_value(none).unwrap(), "none");
        // Each kind keeps its own word: the other's is not a precision.
        let err = serde_json::from_value::<llm_inference::Quantization>(json!("none")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown variant `none`, expected one of `auto`, `fp32`, `bf16`, `fp16`, `fp8`, `int8`, `int4`, `fp4`"
        );
        let err = serde_json::from_value::<model::Quantization>(json!("auto")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown variant `auto`, expected one of `fp32`, `bf16`, `fp16`, `fp8`, `int8`, `int4`, `fp4`, `none`"
        );
    }
}
