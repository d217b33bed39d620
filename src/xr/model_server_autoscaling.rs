//! `spec.autoscaling` of a model server: the replica range and what a
//! request looks like, from which the sizing plan derives how many
//! in-flight requests one replica takes before the autoscaler adds another.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared_fields::{CONTEXT_TOKENS_MAX, MODEL_SERVER_REPLICAS_MAX};

/// Highest per-replica target: vLLM's largest default batch is 1,024.
pub(crate) const TARGET_MAX: i64 = 4096;

/// Replicas between minReplicas and maxReplicas, scaled on vLLM's running
/// and waiting requests by the platform's autoscaler (KEDA or an HPA).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ModelServerAutoscaling {
    /// Fewest replicas (default 1). 0 lets KEDA scale the server to zero when idle; vLLM's metrics cannot bring it back, so something outside must (a gateway's request metric, kubectl scale).
    #[schemars(range(min = 0, max = MODEL_SERVER_REPLICAS_MAX))]
    pub(crate) min_replicas: Option<i64>,
    /// Most replicas. Required.
    #[schemars(range(min = 1, max = MODEL_SERVER_REPLICAS_MAX))]
    pub(crate) max_replicas: Option<i64>,
    /// Prompt tokens of a typical request. With outputTokens, the request size the per-replica target is derived for; unset, requests are taken to fill the whole context.
    #[schemars(range(min = 1, max = CONTEXT_TOKENS_MAX))]
    pub(crate) prompt_tokens: Option<i64>,
    /// Output tokens of a typical request.
    #[schemars(range(min = 1, max = CONTEXT_TOKENS_MAX))]
    pub(crate) output_tokens: Option<i64>,
    /// In-flight requests per replica above which to scale out, instead of the target the plan derives.
    #[schemars(range(min = 1, max = TARGET_MAX))]
    pub(crate) target_requests_per_replica: Option<i64>,
}

impl ModelServerAutoscaling {
    /// The replica range, checked across its bounds (each bound's own range
    /// was checked as the spec was read): `field` is where the spec has it.
    pub(crate) fn range(&self, field: &str) -> Result<(i32, i32), String> {
        let max = self.max_replicas.ok_or_else(|| {
            format!("{field}.maxReplicas is required: the most replicas the autoscaler may run, 1 to {MODEL_SERVER_REPLICAS_MAX}")
        })?;
        let min = self.min_replicas.unwrap_or(1);
        if min > max {
            return Err(format!(
                "{field}.minReplicas {min} is above maxReplicas {max}; lower minReplicas or raise maxReplicas"
            ));
        }
        Ok((min as i32, max as i32))
    }
}

/// How the model server scales, as reported in the XR's status.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AutoscalingStatus {
    /// keda (a ScaledObject) or hpa (a HorizontalPodAutoscaler).
    pub(crate) autoscaler: String,
    /// Fewest replicas the autoscaler keeps.
    pub(crate) min_replicas: i32,
    /// Most replicas the autoscaler may run.
    pub(crate) max_replicas: i32,
    /// In-flight (running plus waiting) requests per replica above which a replica is added.
    pub(crate) target_requests_per_replica: u64,
    /// Requests of the stated size the KV cache of one replica holds at once.
    pub(crate) kv_cache_requests: u64,
    /// Seconds a scale-in waits: a replica takes about this long to come back.
    pub(crate) scale_down_window_seconds: u32,
    /// Why the target and the window are what they are.
    pub(crate) reason: String,
}
