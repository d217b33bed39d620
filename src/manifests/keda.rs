//! KEDA's `ScaledObject` (`keda.sh/v1alpha1`): scales a workload through
//! its scale subresource on external metrics, down to zero replicas if
//! allowed, by managing an HPA of its own.
//!
//! Written from the CRD in `tests/data/crds/keda.sh_scaledobjects.yaml`
//! (kedacore/keda v2.19.0); only the fields a composer sets are typed.

use std::collections::BTreeMap;

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerBehavior;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// A workload KEDA scales.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ScaledObject {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: ScaledObjectSpec,
}

impl ScaledObject {
    pub(crate) const API_VERSION: &str = "keda.sh/v1alpha1";
    pub(crate) const KIND: &str = "ScaledObject";
}

/// Not derived: the default carries the right apiVersion and kind.
impl Default for ScaledObject {
    fn default() -> Self {
        Self {
            api_version: Self::API_VERSION.to_owned(),
            kind: Self::KIND.to_owned(),
            metadata: ObjectMeta::default(),
            spec: ScaledObjectSpec::default(),
        }
    }
}

#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ScaledObjectSpec {
    pub scale_target_ref: ScaleTarget,
    pub min_replica_count: Option<i32>,
    pub max_replica_count: Option<i32>,
    /// Seconds after the last active trigger before scaling to zero.
    pub cooldown_period: Option<i32>,
    /// Seconds between metric checks.
    pub polling_interval: Option<i32>,
    pub advanced: Option<Advanced>,
    pub triggers: Vec<Trigger>,
}

/// The workload, by its scale subresource.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ScaleTarget {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub name: String,
}

#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Advanced {
    pub horizontal_pod_autoscaler_config: Option<HpaConfig>,
}

/// What KEDA puts into the HPA it manages.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HpaConfig {
    pub behavior: Option<HorizontalPodAutoscalerBehavior>,
}

/// One scaler: its type and its string metadata.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Trigger {
    #[serde(rename = "type")]
    pub type_: String,
    pub name: Option<String>,
    /// `AverageValue` (the default), `Value` or `Utilization`.
    pub metric_type: Option<String>,
    pub metadata: BTreeMap<String, String>,
}
