//! Field types several XRs share: references, images, endpoints, the
//! runtime choice and Crossplane's own fields.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

/// Most image pull secrets an XR or the platform names.
pub(crate) const PULL_SECRETS_MAX: usize = 16;
/// Longest MIG profile choice (`auto`, `none`, `1g.10gb`), in characters.
pub(crate) const MIG_PROFILE_MAX: usize = 32;
/// Longest GPU type name (`H100-80GB`), in characters.
pub(crate) const GPU_TYPE_MAX: usize = 64;

// Limits the kinds share: each XR schema states them and each reader
// checks them with these constants, so one rule has one number.
/// Most GPUs one model-server replica spans (and a Model's shards).
pub(crate) const GPUS_PER_REPLICA_MAX: i64 = 64;
/// Shortest and longest context, in tokens: LLMInference's maxModelLen,
/// an agent class's maxContextLength; the longest is also the most tokens
/// a request may state.
pub(crate) const CONTEXT_TOKENS_MIN: i64 = 256;
pub(crate) const CONTEXT_TOKENS_MAX: i64 = 10_485_760;
/// Most model-server replicas, set or autoscaled.
pub(crate) const MODEL_SERVER_REPLICAS_MAX: i64 = 100;

/// The image pull secrets of a pod: the platform's, then `own` (the field
/// `field`), each once. A name that no Secret can have is refused.
pub(crate) fn pull_secrets(
    field: &str,
    platform: &[String],
    own: &[NameRef],
) -> Result<Vec<String>, String> {
    if own.len() > PULL_SECRETS_MAX {
        return Err(format!(
            "{field} names {} Secrets; name at most {PULL_SECRETS_MAX} (one Secret may hold the credentials of several registries)",
            own.len()
        ));
    }
    let mut names = platform.to_vec();
    for (i, r) in own.iter().enumerate() {
        crate::names::require_subdomain(
            &format!("{field}[{i}].name"),
            &r.name,
            "registry-credentials",
        )?;
        if !names.contains(&r.name) {
            names.push(r.name.clone());
        }
    }
    Ok(names)
}

/// The Secrets an XR's pods pull their images with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PullSecrets {
    /// The platform's, then the XR's `spec.imagePullSecrets`.
    pub(crate) names: Vec<String>,
    /// The field a refusal of them names.
    pub(crate) field: &'static str,
}

impl PullSecrets {
    /// The platform's Secrets and the XR's own.
    pub(crate) fn of(platform: &[String], own: &[NameRef]) -> Result<Self, String> {
        const FIELD: &str = "spec.imagePullSecrets";
        Ok(Self {
            names: pull_secrets(FIELD, platform, own)?,
            field: if own.is_empty() {
                "input.defaults.imagePullSecrets"
            } else {
                FIELD
            },
        })
    }
}

/// A key in a Secret in the XR's namespace (or the target namespace).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SecretKeyRef {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub(crate) name: String,
    /// Key in the Secret.
    pub(crate) key: Option<String>,
}

/// The key of a Hugging Face token's Secret when a reference names none.
pub(crate) const HF_TOKEN_KEY: &str = "token";

/// The key of a model server's API key Secret when a reference names none.
pub(crate) const API_KEY_KEY: &str = "api-key";

impl SecretKeyRef {
    /// The reference at `field` as the API server takes it: the name a DNS
    /// subdomain (`example_name` in the message), and a given key one a
    /// Secret may hold (`default_key` in the message, and where none is
    /// given).
    pub(crate) fn check(
        &self,
        field: &str,
        example_name: &str,
        default_key: &str,
    ) -> Result<(), String> {
        crate::names::require_subdomain(&format!("{field}.name"), &self.name, example_name)?;
        if let Some(k) = self.key.as_deref().filter(|k| !k.is_empty()) {
            crate::names::require_data_key(&format!("{field}.key"), k, default_key)?;
        }
        Ok(())
    }

    /// The Secret's name and key, `default_key` where the key is unset or empty.
    pub(crate) fn name_and_key<'a>(&'a self, default_key: &'a str) -> (&'a str, &'a str) {
        (
            &self.name,
            self.key
                .as_deref()
                .filter(|k| !k.is_empty())
                .unwrap_or(default_key),
        )
    }
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

impl Image {
    /// Refuses an image whose registry or name is empty or holds white
    /// space, or that the kubelet cannot pull, as `field`.
    pub(crate) fn check(&self, field: &str) -> Result<(), String> {
        if self.registry.trim().is_empty() || self.name.trim().is_empty() {
            return Err(format!("{field} needs a non-empty registry and name"));
        }
        super::validate::image_part(&format!("{field}.registry"), &self.registry, "docker.io")?;
        super::validate::image_part(
            &format!("{field}.name"),
            &self.name,
            "vllm/vllm-openai:v0.19.0",
        )?;
        super::validate::image_reference(
            field,
            &self.reference(),
            "registry docker.io, name vllm/vllm-openai:v0.19.0",
        )
    }

    /// `registry/name`, as a pod runs it (the VLLMRuntime's operator joins
    /// the two the same way).
    pub(crate) fn reference(&self) -> String {
        format!("{}/{}", self.registry.trim_end_matches('/'), self.name)
    }
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
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Endpoint {
    /// External URL through the Ingress, when one is composed.
    pub(crate) external: Option<String>,
    /// In-cluster URL of the OpenAI-compatible API.
    pub(crate) internal: Option<String>,
    /// The Gateway that routes to the model through its endpoint picker, and which requests it routes, when the platform has one.
    pub(crate) gateway: Option<String>,
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

/// A Gateway (gateway.networking.k8s.io/v1) to route a model server through.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct GatewayRef {
    /// The Gateway's name.
    #[schemars(length(min = 1, max = 253))]
    pub(crate) name: String,
    /// Its namespace; default: the XR's.
    #[schemars(length(min = 1, max = 63))]
    pub(crate) namespace: Option<String>,
}

/// A Gateway's name and namespace at `field` (`spec.gateway`,
/// `input.defaults.inferenceGateway`), checked as Kubernetes names.
pub(crate) fn check_gateway(
    field: &str,
    name: &str,
    namespace: Option<&str>,
) -> Result<(), String> {
    crate::names::require_subdomain(&format!("{field}.name"), name, "inference-gateway")?;
    if let Some(ns) = namespace {
        crate::names::require_dns1123_label(&format!("{field}.namespace"), ns, "gateway-system")?;
    }
    Ok(())
}
