//! The Prometheus Operator's `PodMonitor` (`monitoring.coreos.com/v1`):
//! which pods Prometheus scrapes, on which port and path.
//!
//! Written from the CRD in `tests/data/crds/monitoring.coreos.com_podmonitors.yaml`
//! (prometheus-operator v0.85.0); only the fields a composer sets are typed.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde::{Deserialize, Serialize};

/// Pods for Prometheus to scrape.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodMonitor {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: PodMonitorSpec,
}

impl PodMonitor {
    pub(crate) const API_VERSION: &str = "monitoring.coreos.com/v1";
    pub(crate) const KIND: &str = "PodMonitor";
}

/// Not derived: the default carries the right apiVersion and kind.
impl Default for PodMonitor {
    fn default() -> Self {
        Self {
            api_version: Self::API_VERSION.to_owned(),
            kind: Self::KIND.to_owned(),
            metadata: ObjectMeta::default(),
            spec: PodMonitorSpec::default(),
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodMonitorSpec {
    pub selector: LabelSelector,
    pub pod_metrics_endpoints: Vec<PodMetricsEndpoint>,
}

#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodMetricsEndpoint {
    /// The container port's name.
    pub port: Option<String>,
    pub path: Option<String>,
    /// A Prometheus duration such as `15s`.
    pub interval: Option<String>,
}
