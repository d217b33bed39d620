//! `LeaderWorkerSet` (`leaderworkerset.x-k8s.io/v1`), the Kubernetes SIG Apps
//! API for groups of pods that serve as one: a leader and `size - 1`
//! workers per replica, recreated together.
//!
//! Written from the CRD in `tests/data/crds/` (a copy of the one in
//! `../shared/reference/crds`, kubernetes-sigs/lws v0.10.0); field names and
//! nesting follow that file. Pod templates are Kubernetes' own
//! `PodTemplateSpec`, as in the CRD. The controller injects
//! `LWS_LEADER_ADDRESS`, `LWS_GROUP_SIZE` and `LWS_WORKER_INDEX` into every
//! container, and labels each pod with `leaderworkerset.sigs.k8s.io/name`.

use k8s_openapi::api::apps::v1::StatefulSetPersistentVolumeClaimRetentionPolicy;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};

/// Label the controller puts on every pod of a LeaderWorkerSet: its name.
pub(crate) const NAME_LABEL: &str = "leaderworkerset.sigs.k8s.io/name";

/// Groups of pods that start, serve and restart together.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LeaderWorkerSet {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: LeaderWorkerSetSpec,
    /// Written by the controller; a composer never sets it.
    pub status: Option<LeaderWorkerSetStatus>,
}

impl LeaderWorkerSet {
    pub const API_VERSION: &str = "leaderworkerset.x-k8s.io/v1";
    pub const KIND: &str = "LeaderWorkerSet";
}

/// Not derived: the default carries the right apiVersion and kind.
impl Default for LeaderWorkerSet {
    fn default() -> Self {
        Self {
            api_version: Self::API_VERSION.to_owned(),
            kind: Self::KIND.to_owned(),
            metadata: ObjectMeta::default(),
            spec: LeaderWorkerSetSpec::default(),
            status: None,
        }
    }
}

#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LeaderWorkerSetSpec {
    pub leader_worker_template: LeaderWorkerTemplate,
    pub network_config: Option<NetworkConfig>,
    /// Groups (one per model replica); the scale subresource's field.
    pub replicas: Option<i32>,
    pub rollout_strategy: Option<RolloutStrategy>,
    /// `LeaderCreated` (default) or `LeaderReady`: when the workers start.
    pub startup_policy: Option<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LeaderWorkerTemplate {
    /// The leader's pod; the workers' template when unset.
    pub leader_template: Option<PodTemplateSpec>,
    /// What happens to those claims when the set is deleted or scaled down.
    pub persistent_volume_claim_retention_policy:
        Option<StatefulSetPersistentVolumeClaimRetentionPolicy>,
    /// `RecreateGroupOnPodRestart` (default), `RecreateGroupAfterStart`, `None`.
    pub restart_policy: Option<String>,
    /// Pods per group, the leader included.
    pub size: Option<i32>,
    pub sub_group_policy: Option<SubGroupPolicy>,
    /// One claim per pod from each template, kept across group restarts.
    pub volume_claim_templates: Option<Vec<PersistentVolumeClaim>>,
    pub worker_template: PodTemplateSpec,
}

#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SubGroupPolicy {
    /// `LeaderWorker` (default) or `LeaderExcluded`.
    pub sub_group_policy_type: Option<String>,
    pub sub_group_size: Option<i32>,
}

#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
    pub rolling_update_configuration: Option<RollingUpdateConfiguration>,
    /// `RollingUpdate`, the only type.
    pub r#type: Option<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RollingUpdateConfiguration {
    pub max_surge: Option<IntOrString>,
    pub max_unavailable: Option<IntOrString>,
    pub partition: Option<i32>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NetworkConfig {
    /// `Shared` or `UniquePerReplica`: the headless Service's subdomains.
    pub subdomain_policy: String,
}

/// What the controller reports; `readyReplicas` counts groups whose pods
/// are all ready.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LeaderWorkerSetStatus {
    pub conditions: Option<Vec<Condition>>,
    pub hpa_pod_selector: Option<String>,
    pub observed_generation: Option<i64>,
    pub ready_replicas: Option<i32>,
    pub replicas: Option<i32>,
    pub updated_replicas: Option<i32>,
}
