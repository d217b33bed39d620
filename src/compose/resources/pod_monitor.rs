//! A `PodMonitor` for the model server's vLLM `/metrics` on its `http` port
//! (the port every runtime names so, the operator's included).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use crate::compose::composition::Manifest;
use crate::compose::resources::vllm_pod::PORT_NAME;
use crate::manifests::pod_monitor::{PodMetricsEndpoint, PodMonitor, PodMonitorSpec};

/// How often Prometheus scrapes vLLM: the autoscaler polls every 15 s.
const SCRAPE_INTERVAL: &str = "15s";

/// Scrapes the pods `pod_labels` select.
pub(crate) fn pod_monitor(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    pod_labels: &BTreeMap<String, String>,
) -> Manifest {
    Manifest::new(
        PodMonitor::KIND,
        PodMonitor {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()),
                labels: Some(labels),
                ..Default::default()
            },
            spec: PodMonitorSpec {
                selector: LabelSelector {
                    match_labels: Some(pod_labels.clone()),
                    ..Default::default()
                },
                pod_metrics_endpoints: vec![PodMetricsEndpoint {
                    port: Some(PORT_NAME.to_string()),
                    path: Some("/metrics".to_string()),
                    interval: Some(SCRAPE_INTERVAL.to_string()),
                }],
            },
            ..Default::default()
        },
    )
}
