//! `AgentPool`: a fleet of agent replicas served by a Model.
//!
//! Field names follow the NeuroNetes CRD reference, with its AgentClass
//! inlined as `agentClass`, so its examples translate line by line. The pool
//! composes the model server (a sized VLLMRuntime, Deployment or
//! LeaderWorkerSet), the agents (a Deployment
//! with its ConfigMap) and what scales and exposes them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::EnvVar;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::model::Topology;
use super::model_server_autoscaling::ModelServerAutoscaling;
use super::plan_status::PlanStatus;
use super::shared_fields::{
    API_KEY_KEY, CONTEXT_TOKENS_MAX, CONTEXT_TOKENS_MIN, Endpoint, GPU_TYPE_MAX,
    GPUS_PER_REPLICA_MAX, MIG_PROFILE_MAX, NameRef, PULL_SECRETS_MAX, RuntimeChoice, SecretKeyRef,
};
use super::sizing_vocabulary::Objective;
use super::validate::{at_most, at_most_chars, image_part, image_reference, required_text, text};
use crate::names::require_subdomain;

/// Kind name.
pub(crate) const KIND: &str = "AgentPool";
/// The key of `memoryConfig.connectionSecretRef` when it names none.
pub(crate) const MEMORY_KEY: &str = "connectionString";

// Limits of the numeric and free-text fields: the schema states each and
// the composer checks it with the same constant, since Crossplane may call
// the function with XRs admitted under an older schema (and render with
// ones no API server saw). Lower bounds of 0 and 1 are written out.
/// Largest port.
pub(crate) const PORT_MAX: i32 = 65535;
/// Most agent replicas.
pub(crate) const REPLICAS_MAX: i32 = 1000;
/// Largest percentage.
pub(crate) const PERCENT_MAX: i32 = 100;
/// Highest sampling temperature.
pub(crate) const TEMPERATURE_MAX: f64 = 2.0;
/// Longest system prompt, in characters.
pub(crate) const SYSTEM_PROMPT_MAX: usize = 65536;
/// Longest tool name.
pub(crate) const TOOL_NAME_MAX: usize = 128;
/// Longest guardrail or autoscaling metric type.
const TYPE_MAX: usize = 64;
/// Longest autoscaling metric target (`30`, `500ms`, `70%`).
const METRIC_TARGET_MAX: usize = 32;
/// Most entries of the pool's lists.
const ENV_MAX: usize = 64;
const TOOLS_MAX: usize = 128;
const GUARDRAILS_MAX: usize = 64;
const METRICS_MAX: usize = 16;
/// Longest memory connection string.
const CONNECTION_STRING_MAX: usize = 2048;
/// Largest guardrail threshold.
pub(crate) const THRESHOLD_MAX: f64 = 1.0;
/// Largest availability percentage.
pub(crate) const AVAILABILITY_MAX: f64 = 100.0;
/// Largest change per scaling period, in pods or percent.
pub(crate) const SCALING_CHANGE_MAX: i32 = 1000;
/// Longest scaling period, in seconds (the HorizontalPodAutoscaler's limit).
pub(crate) const SCALING_PERIOD_MAX: i32 = 1800;

/// The desired state of an AgentPool.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas", "message": "minReplicas must not exceed maxReplicas"},
    {"rule": "!has(self.ingressHost) || has(self.port)", "message": "ingressHost needs port: the Ingress routes to the agents' Service"}
]))]
pub(crate) struct AgentPoolSpec {
    /// What every agent of the pool is: its model, prompt, tools, guardrails, SLO and memory.
    pub(crate) agent_class: AgentClass,
    /// The agent runtime image, for example ghcr.io/example/agent-runtime:1.0.
    #[schemars(length(min = 1, max = 512))]
    pub(crate) image: String,
    /// Secrets to pull the agents' image (and the model server's) with (type kubernetes.io/dockerconfigjson), after the platform's (step input defaults.imagePullSecrets), for an image from a private registry; they must exist in the pool's namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = PULL_SECRETS_MAX))]
    pub(crate) image_pull_secrets: Vec<NameRef>,
    /// Extra environment variables of the agents (secrets through valueFrom.secretKeyRef).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = ENV_MAX))]
    pub(crate) env: Vec<EnvVar>,
    /// Port the agents listen on. With it: a Service, TCP probes and (with ingressHost) an Ingress.
    #[schemars(range(min = 1, max = PORT_MAX))]
    pub(crate) port: Option<i32>,
    /// Fewest agent replicas.
    #[schemars(range(min = 0, max = REPLICAS_MAX))]
    pub(crate) min_replicas: Option<i32>,
    /// Most agent replicas. The agents start at the warm floor; when maxReplicas is above it, a HorizontalPodAutoscaler owns the count from its first scale on.
    #[schemars(range(min = 1, max = REPLICAS_MAX))]
    pub(crate) max_replicas: Option<i32>,
    /// Share of maxReplicas kept running (warm) even when idle, 0 to 100.
    #[schemars(range(min = 0, max = PERCENT_MAX))]
    pub(crate) prewarm_percent: Option<i32>,
    /// Tokens per second the model server must sustain; sets its replicas.
    #[schemars(range(min = 1))]
    pub(crate) tokens_per_second_budget: Option<i64>,
    /// MIG profile for the model server, such as 1g.10gb, or auto or none.
    #[schemars(length(min = 1, max = MIG_PROFILE_MAX))]
    pub(crate) mig_profile: Option<String>,
    /// What the model server's layout is chosen for: minimal, balanced or throughput. Defaults to the Model's, else the platform's (step input).
    pub(crate) objective: Option<Objective>,
    /// How the agents scale.
    pub(crate) autoscaling: Option<Autoscaling>,
    /// Scale the model server with load instead of tokensPerSecondBudget: the platform's autoscaler adds a replica above a per-replica number of in-flight requests that the sizing plan derives.
    pub(crate) model_server_autoscaling: Option<ModelServerAutoscaling>,
    /// Secret holding the API key the model server requires under /v1 (vLLM's VLLM_API_KEY; key defaults to api-key); the agents send it as OPENAI_API_KEY. Without it any pod that reaches the model server's Service can use its GPUs. /health and /metrics stay open for the probes and Prometheus. The deployment and leader-worker-set runtimes take it; a VLLMRuntime's environment holds only literal values.
    pub(crate) model_server_api_key_secret_ref: Option<SecretKeyRef>,
    /// The model server's GPUs.
    pub(crate) gpu_requirements: Option<GpuRequirements>,
    /// What serves the model server: vllm-runtime, deployment, leader-worker-set or auto. Defaults to the platform's (step input).
    pub(crate) runtime: Option<RuntimeChoice>,
    /// Sticky sessions.
    pub(crate) session_affinity: Option<SessionAffinity>,
    /// Where the agents run.
    pub(crate) scheduling: Option<Scheduling>,
    /// Host name for an Ingress to the agents (needs port). No Ingress when omitted.
    #[schemars(length(min = 1, max = 253))]
    pub(crate) ingress_host: Option<String>,
    /// Crossplane's own fields (composition selection and the like); skipped unread.
    #[schemars(skip)]
    pub(crate) crossplane: Option<crate::xr::shared_fields::CrossplaneFields>,
}

/// The agents' behaviour (NeuroNetes' AgentClass, inlined).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct AgentClass {
    /// The Model in this namespace that serves the agents.
    pub(crate) model_ref: NameRef,
    /// The agents' system prompt, passed to them in agent.json.
    #[schemars(length(max = SYSTEM_PROMPT_MAX))]
    pub(crate) system_prompt: Option<String>,
    /// Sampling temperature, 0 to 2.
    #[schemars(range(min = 0.0, max = TEMPERATURE_MAX))]
    pub(crate) temperature: Option<f64>,
    /// Most tokens per answer.
    #[schemars(range(min = 1))]
    pub(crate) max_tokens: Option<i64>,
    /// Context window in tokens; also the model server's max model length.
    #[schemars(range(min = CONTEXT_TOKENS_MIN, max = CONTEXT_TOKENS_MAX))]
    pub(crate) max_context_length: Option<i64>,
    /// Tools the agents may call and their limits, passed to them in agent.json for the agents to enforce.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = TOOLS_MAX))]
    pub(crate) tool_permissions: Vec<ToolPermission>,
    /// Safety and policy checks, passed to the agents in agent.json for them to apply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = GUARDRAILS_MAX))]
    pub(crate) guardrails: Vec<Guardrail>,
    /// The agents' service level objectives, passed to them in agent.json.
    pub(crate) slo: Option<Slo>,
    /// Conversation memory: its back end, limits and connection.
    pub(crate) memory_config: Option<MemoryConfig>,
}

/// A tool the agents may call.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ToolPermission {
    /// The tool's name, as the agents know it.
    #[schemars(length(min = 1, max = TOOL_NAME_MAX))]
    pub(crate) name: String,
    /// Calls per period, such as 100/min.
    #[schemars(regex(pattern = r"^[0-9]+/(s|sec|second|m|min|minute|h|hour|d|day)$"))]
    pub(crate) rate_limit: Option<String>,
    /// Longest call, a duration such as 10s.
    pub(crate) timeout: Option<String>,
    /// Most calls of the tool at once.
    #[schemars(range(min = 1))]
    pub(crate) max_concurrency: Option<i64>,
    /// Scopes a caller must hold to use the tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) required_scopes: Vec<String>,
}

/// A safety or policy check.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Guardrail {
    /// For example pii-detection, safety-check, content-filter, jailbreak-detection, prompt-injection.
    #[serde(rename = "type")]
    #[schemars(length(min = 1, max = TYPE_MAX))]
    pub(crate) type_: String,
    pub(crate) action: GuardrailAction,
    /// Guardrail-specific settings (never credentials: they land in a ConfigMap).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) config: BTreeMap<String, String>,
    /// Confidence threshold, 0 to 1.
    #[schemars(range(min = 0.0, max = THRESHOLD_MAX))]
    pub(crate) threshold: Option<f64>,
}

/// What a guardrail does when it fires.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum GuardrailAction {
    #[default]
    Block,
    Redact,
    Warn,
    Log,
}

/// Service level objectives.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Slo {
    /// Time to first token, a duration such as 500ms.
    pub(crate) ttft: Option<String>,
    /// Output tokens per second each agent should receive.
    #[schemars(range(min = 1))]
    pub(crate) tokens_per_second: Option<i64>,
    /// 95th percentile of a whole answer's latency, a duration such as 5s.
    pub(crate) p95_latency: Option<String>,
    /// US dollars.
    #[schemars(range(min = 0.0))]
    pub(crate) max_cost_per_request: Option<f64>,
    /// Share of time the agents should answer, 0 to 100, such as 99.9.
    #[schemars(range(min = 0.0, max = AVAILABILITY_MAX))]
    pub(crate) availability_percent: Option<f64>,
}

/// Conversation memory.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!(has(self.connectionString) && has(self.connectionSecretRef))", "message": "set connectionString or connectionSecretRef, not both"}
]))]
pub(crate) struct MemoryConfig {
    #[serde(rename = "type")]
    pub(crate) type_: MemoryType,
    /// How long entries live, a duration such as 2h.
    pub(crate) ttl: Option<String>,
    /// Most entries per session.
    #[schemars(range(min = 1))]
    pub(crate) max_size: Option<i64>,
    /// Whether the agents encrypt what they store.
    pub(crate) encrypted: Option<bool>,
    /// Connection string without credentials (it lands in a ConfigMap); use connectionSecretRef for one with a password.
    #[schemars(length(max = CONNECTION_STRING_MAX))]
    pub(crate) connection_string: Option<String>,
    /// Secret key holding the connection string (key defaults to connectionString); reaches the agents as AGENT_MEMORY_URL.
    pub(crate) connection_secret_ref: Option<SecretKeyRef>,
}

/// Memory back ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum MemoryType {
    #[default]
    Ephemeral,
    Redis,
    Memcached,
    Postgres,
}

/// Agent autoscaling.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Autoscaling {
    /// Metrics to scale on; see docs/agents.md (Autoscaling metric mapping) for how each type maps to the HorizontalPodAutoscaler.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = METRICS_MAX))]
    pub(crate) metrics: Vec<AutoscalingMetric>,
    pub(crate) behavior: Option<ScalingBehavior>,
    /// Wait after scaling down before scaling down again (the scale-down stabilization window).
    pub(crate) cooldown_period: Option<String>,
}

/// One scaling metric.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct AutoscalingMetric {
    /// tokens-in-queue, ttft-p95, concurrent-sessions, tokens-per-second, queue-depth, context-length, tool-call-rate, cpu or memory.
    #[serde(rename = "type")]
    #[schemars(length(min = 1, max = TYPE_MAX))]
    pub(crate) type_: String,
    /// Target per agent: a number, a duration for ttft-p95 (500ms), a percentage for cpu and memory (70%).
    #[schemars(length(min = 1, max = METRIC_TARGET_MAX))]
    pub(crate) target: String,
    /// Window to average the metric over, a duration such as 1m; the HorizontalPodAutoscaler has no such setting (a status note says so: average in the metrics adapter's query).
    pub(crate) averaging_window: Option<String>,
}

/// Scaling velocity.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ScalingBehavior {
    pub(crate) scale_up: Option<ScalingPolicy>,
    pub(crate) scale_down: Option<ScalingPolicy>,
}

/// Rate limits of one scaling direction.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ScalingPolicy {
    /// A duration such as 45s.
    pub(crate) stabilization_window: Option<String>,
    /// Most change per period, in percent of the current replicas (a Percent policy).
    #[schemars(range(min = 1, max = SCALING_CHANGE_MAX))]
    pub(crate) max_change_percent: Option<i32>,
    /// Most change per period, in replicas (a Pods policy); with maxChangePercent the smaller change wins.
    #[schemars(range(min = 1, max = SCALING_CHANGE_MAX))]
    pub(crate) max_change_absolute: Option<i32>,
    /// The period of maxChangePercent and maxChangeAbsolute, in seconds (default 60).
    #[schemars(range(min = 1, max = SCALING_PERIOD_MAX))]
    pub(crate) period_seconds: Option<i32>,
}

/// The model server's GPUs.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct GpuRequirements {
    /// GPUs per model-server replica. Derived when omitted.
    #[schemars(range(min = 1, max = GPUS_PER_REPLICA_MAX))]
    pub(crate) count: Option<i64>,
    /// Least memory per GPU, a quantity such as 40Gi.
    pub(crate) memory: Option<String>,
    /// GPU type such as L4, A100-80GB or H100-80GB. Defaults to the platform's default type, or, where the platform offers several and names none, the cheapest offered type that serves the model.
    #[schemars(length(min = 1, max = GPU_TYPE_MAX))]
    pub(crate) r#type: Option<String>,
    pub(crate) topology: Option<Topology>,
}

/// Sticky sessions.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SessionAffinity {
    /// Whether a client keeps reaching the same agent: the agents' Service uses ClientIP affinity for ttl.
    pub(crate) enabled: bool,
    /// HTTP header carrying the session key; passed to the agents in their config.
    pub(crate) key_header: Option<String>,
    /// How long affinity lasts, a duration such as 1h (at most 24h).
    pub(crate) ttl: Option<String>,
    pub(crate) r#type: Option<AffinityType>,
}

/// What a session is keyed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum AffinityType {
    ConversationId,
    UserId,
    Custom,
}

/// Where the agents run.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Scheduling {
    /// Relative priority; reported, not applied (pods take a PriorityClass, not a number).
    pub(crate) priority: Option<i32>,
    /// Node labels the agent pods require.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) node_selector: BTreeMap<String, String>,
}

/// What the function reports about an AgentPool.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AgentPoolStatus {
    pub(crate) agents: Option<AgentsStatus>,
    pub(crate) autoscaling: Option<AutoscalingStatus>,
    /// Where to reach the agents.
    pub(crate) endpoint: Option<Endpoint>,
    /// Copied from the plan for printer columns.
    pub(crate) gpu_type: Option<String>,
    /// The Model served, as resolved.
    pub(crate) model: Option<String>,
    pub(crate) model_server: Option<ModelServerStatus>,
    /// Fields that have no effect, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
    /// WaitingForModel, Starting, Serving, or ScaledToZero while its model server runs no replica.
    pub(crate) phase: Option<String>,
    /// The model server's sizing plan.
    pub(crate) plan: Option<PlanStatus>,
    /// What the pool waits for, while it waits.
    pub(crate) waiting_for: Option<String>,
    /// What deserves attention although the pool composes (also a WARNING event when it appears).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) warnings: Vec<String>,
}

/// The model server.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModelServerStatus {
    /// OpenAI-compatible base URL the agents use.
    pub(crate) base_url: String,
    /// How the estimate and the replica count were computed.
    pub(crate) formula: String,
    /// The model server and its Service.
    pub(crate) name: String,
    /// Replicas of the model server: the tokensPerSecondBudget's count, or with modelServerAutoscaling the count it runs now.
    pub(crate) replicas: i32,
    /// What serves it: vllm-runtime, deployment or leader-worker-set.
    pub(crate) runtime: Option<String>,
    /// The layout that serves now: the current plan's once every replica runs it, the previous one while a
    /// rollout replaces it, none while nothing serves.
    pub(crate) serving_layout: Option<String>,
    /// Single-sequence decode rate of one replica (memory-bandwidth bound), tokens per second.
    pub(crate) tokens_per_second_per_replica: f64,
    /// How the model server scales, when spec.modelServerAutoscaling asks.
    pub(crate) autoscaling: Option<crate::xr::model_server_autoscaling::AutoscalingStatus>,
}

/// The agents.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AgentsStatus {
    /// The ConfigMap holding the agents' agent.json.
    pub(crate) config_map: String,
    /// Most agent replicas the autoscaler may run.
    pub(crate) max_replicas: i32,
    /// Replicas kept warm: max(minReplicas, ceil(maxReplicas x prewarmPercent / 100)); the autoscaler's floor.
    pub(crate) warm_replicas: i32,
}

/// The autoscaler.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AutoscalingStatus {
    /// Each spec metric and the HorizontalPodAutoscaler metric it became.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) metrics: Vec<MetricMapping>,
}

/// How one metric maps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MetricMapping {
    /// The HPA metric, or why there is none.
    pub(crate) mapped_to: String,
    /// The spec's metric type.
    #[serde(rename = "type")]
    pub(crate) type_: String,
}

impl AgentPoolSpec {
    /// What the schema cannot state (rules across fields, strings and
    /// durations only the consumer would refuse): the first problem, naming
    /// the field and what would be valid. Ranges were checked as the spec
    /// was read ([`crate::de::from_object`]); all of it before the Model is
    /// looked up, so that a pool waiting for its Model reports it too.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if let (Some(min), Some(max)) = (self.min_replicas, self.max_replicas)
            && min > max
        {
            return Err(format!(
                "spec.minReplicas {min} exceeds spec.maxReplicas {max}"
            ));
        }
        if let Some(a) = &self.model_server_autoscaling {
            if self.tokens_per_second_budget.is_some() {
                return Err(
                    "spec.tokensPerSecondBudget and spec.modelServerAutoscaling are both set: the budget fixes the \
                     model server's replicas, the autoscaler moves them with load; drop one of them"
                        .into(),
                );
            }
            a.range("spec.modelServerAutoscaling")?;
        }
        if self.ingress_host.is_some() && self.port.is_none() {
            return Err(
                "spec.ingressHost needs spec.port: the Ingress routes to the agents' Service on that port".into(),
            );
        }
        if self.image.trim().is_empty() {
            return Err("spec.image is empty; set the agent runtime image".into());
        }
        check_strings_and_durations(self)
    }
}

/// Strings Kubernetes or the agent runtime would reject, and durations the
/// runtime could not read or that are not above zero, checked here so that
/// the error names the field.
fn check_strings_and_durations(spec: &AgentPoolSpec) -> Result<(), String> {
    let class = &spec.agent_class;
    required_text(
        "spec.image",
        &spec.image,
        512,
        "ghcr.io/example/agent-runtime:1.0",
    )?;
    // The composer trims the image.
    image_part(
        "spec.image",
        spec.image.trim(),
        "ghcr.io/example/agent-runtime:1.0",
    )?;
    image_reference(
        "spec.image",
        spec.image.trim(),
        "ghcr.io/example/agent-runtime:1.0",
    )?;
    if let Some(h) = spec.ingress_host.as_deref() {
        require_subdomain("spec.ingressHost", h, "agents.example.com")?;
    }
    if let Some(r) = &spec.model_server_api_key_secret_ref {
        r.check(
            "spec.modelServerApiKeySecretRef",
            "code-assistant-model-key",
            API_KEY_KEY,
        )?;
    }
    if let Some(s) = &spec.scheduling {
        crate::names::require_labels("spec.scheduling.nodeSelector", &s.node_selector)?;
    }
    if let Some(p) = &class.system_prompt {
        at_most_chars("spec.agentClass.systemPrompt", p, SYSTEM_PROMPT_MAX)?;
    }
    if let Some(c) = class
        .memory_config
        .as_ref()
        .and_then(|m| m.connection_string.as_ref())
    {
        at_most_chars(
            "spec.agentClass.memoryConfig.connectionString",
            c,
            CONNECTION_STRING_MAX,
        )?;
    }
    // A timeout, a latency objective or a lifetime of zero or less means
    // nothing the agents or a Service could follow.
    let duration = |field: String, d: &Option<String>| -> Result<(), String> {
        match d {
            Some(d) => crate::units::positive_duration_seconds(&field, d).map(|_| ()),
            None => Ok(()),
        }
    };
    if let Some(a) = &spec.session_affinity {
        duration("spec.sessionAffinity.ttl".into(), &a.ttl)?;
    }
    if let Some(slo) = &class.slo {
        duration("spec.agentClass.slo.ttft".into(), &slo.ttft)?;
        duration("spec.agentClass.slo.p95Latency".into(), &slo.p95_latency)?;
    }
    if let Some(m) = &class.memory_config {
        duration("spec.agentClass.memoryConfig.ttl".into(), &m.ttl)?;
        if let Some(r) = &m.connection_secret_ref {
            r.check(
                "spec.agentClass.memoryConfig.connectionSecretRef",
                "agent-memory",
                MEMORY_KEY,
            )?;
        }
    }
    if let Some(t) = spec
        .gpu_requirements
        .as_ref()
        .and_then(|g| g.r#type.as_ref())
    {
        text(
            "spec.gpuRequirements.type",
            t,
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
    at_most("spec.env", &spec.env, ENV_MAX)?;
    at_most(
        "spec.agentClass.toolPermissions",
        &class.tool_permissions,
        TOOLS_MAX,
    )?;
    at_most(
        "spec.agentClass.guardrails",
        &class.guardrails,
        GUARDRAILS_MAX,
    )?;
    if let Some(a) = &spec.autoscaling {
        at_most("spec.autoscaling.metrics", &a.metrics, METRICS_MAX)?;
    }
    for (i, g) in class.guardrails.iter().enumerate() {
        required_text(
            &format!("spec.agentClass.guardrails[{i}].type"),
            &g.type_,
            TYPE_MAX,
            "pii-detection",
        )?;
    }
    for (i, m) in spec.autoscaling.iter().flat_map(|a| &a.metrics).enumerate() {
        required_text(
            &format!("spec.autoscaling.metrics[{i}].type"),
            &m.type_,
            TYPE_MAX,
            "concurrent-sessions",
        )?;
        required_text(
            &format!("spec.autoscaling.metrics[{i}].target"),
            &m.target,
            METRIC_TARGET_MAX,
            "30, 500ms or 70%",
        )?;
    }
    for (i, t) in class.tool_permissions.iter().enumerate() {
        required_text(
            &format!("spec.agentClass.toolPermissions[{i}].name"),
            &t.name,
            TOOL_NAME_MAX,
            "code-search",
        )?;
        // agent.json lists the tools as given: an agent reading them into a
        // map by name keeps one entry's limits and silently drops the other's.
        if let Some(j) = class.tool_permissions[..i]
            .iter()
            .position(|earlier| earlier.name == t.name)
        {
            return Err(format!(
                "spec.agentClass.toolPermissions[{i}].name {:?} is also toolPermissions[{j}]'s: with two entries, \
                 which limits hold is the agents' guess; give each tool one entry with all its limits",
                t.name
            ));
        }
        duration(
            format!("spec.agentClass.toolPermissions[{i}].timeout"),
            &t.timeout,
        )?;
        if let Some(r) = &t.rate_limit {
            let ok = r.split_once('/').is_some_and(|(n, per)| {
                n.trim().parse::<u64>().is_ok_and(|n| n > 0)
                    && matches!(
                        per.trim(),
                        "s" | "sec"
                            | "second"
                            | "m"
                            | "min"
                            | "minute"
                            | "h"
                            | "hour"
                            | "d"
                            | "day"
                    )
            });
            if !ok {
                return Err(format!(
                    "spec.agentClass.toolPermissions[{i}].rateLimit is {}; write it like 100/min, 10/s or 1000/h",
                    crate::quote::shown(r)
                ));
            }
        }
    }
    Ok(())
}
