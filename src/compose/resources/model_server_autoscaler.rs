//! The model server's autoscaler: a KEDA `ScaledObject` with a Prometheus
//! trigger, or an `autoscaling/v2` HorizontalPodAutoscaler on a Pods metric,
//! both on vLLM's in-flight requests (`vllm:num_requests_running` plus
//! `vllm:num_requests_waiting`, exported under these names from vLLM 0.6
//! through the V1 engine), with the per-replica target the plan derives and
//! a scale-in no faster than a replica can be brought back.

use std::collections::BTreeMap;

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HPAScalingPolicy, HPAScalingRules, HorizontalPodAutoscaler,
    HorizontalPodAutoscalerBehavior, HorizontalPodAutoscalerSpec, MetricIdentifier, MetricSpec,
    MetricTarget, PodsMetricSource,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::compose::composition::Manifest;
use crate::compose::resources::autoscaler::MAX_WINDOW_SECONDS;
use crate::input::Autoscaler;
use crate::manifests::keda::{
    Advanced, HpaConfig, ScaleTarget, ScaledObject, ScaledObjectSpec, Trigger,
};

/// The Pods metric an HPA reads through the custom metrics API: a metrics
/// adapter serves it as running plus waiting requests per pod
/// (docs/autoscaling.md has the prometheus-adapter rule).
pub(crate) const HPA_METRIC: &str = "vllm_requests_in_flight";
/// The vLLM metrics KEDA's Prometheus trigger sums over the serving pods:
/// running plus waiting requests.
pub(crate) const KEDA_METRICS: [&str; 2] =
    ["vllm:num_requests_running", "vllm:num_requests_waiting"];
/// The HPA's limit on a scaling policy's period, in seconds.
const MAX_POLICY_PERIOD_SECONDS: u32 = 1800;
/// KEDA's default wait before scaling to zero, which a slow start raises.
const KEDA_DEFAULT_COOLDOWN_SECONDS: u32 = 300;

/// The workload an autoscaler scales, by its scale subresource.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Workload {
    pub(crate) api_version: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) name: String,
    /// A regular expression for the names of its pods that serve (a
    /// LeaderWorkerSet's leaders), for a Prometheus query.
    pub(crate) serving_pods: String,
}

/// What the autoscaler is built from.
pub(crate) struct ModelServerAutoscalerParams<'a> {
    pub(crate) autoscaler: Autoscaler,
    pub(crate) name: &'a str,
    pub(crate) namespace: &'a str,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) workload: &'a Workload,
    pub(crate) min_replicas: i32,
    pub(crate) max_replicas: i32,
    pub(crate) target_requests_per_replica: u64,
    /// Seconds a replica takes to come back: no scale-in faster than that.
    pub(crate) scale_down_window_seconds: u32,
    /// The Prometheus KEDA queries.
    pub(crate) prometheus_address: Option<&'a str>,
}

/// The scale-in window for a replica that takes `startup_seconds` to
/// serve, within what the HPA accepts.
pub(crate) fn scale_down_window(startup_seconds: u32) -> u32 {
    startup_seconds.min(MAX_WINDOW_SECONDS)
}

/// The ScaledObject or the HPA.
pub(crate) fn model_server_autoscaler(p: &ModelServerAutoscalerParams) -> Manifest {
    let metadata = ObjectMeta {
        name: Some(p.name.to_string()),
        namespace: Some(p.namespace.to_string()),
        labels: Some(p.labels.clone()),
        ..Default::default()
    };
    match p.autoscaler {
        Autoscaler::Keda => Manifest::new(
            ScaledObject::KIND,
            ScaledObject {
                metadata,
                spec: ScaledObjectSpec {
                    scale_target_ref: ScaleTarget {
                        api_version: Some(p.workload.api_version.to_string()),
                        kind: Some(p.workload.kind.to_string()),
                        name: p.workload.name.clone(),
                    },
                    min_replica_count: Some(p.min_replicas),
                    max_replica_count: Some(p.max_replicas),
                    cooldown_period: (p.min_replicas == 0).then(|| {
                        i32::try_from(
                            p.scale_down_window_seconds
                                .max(KEDA_DEFAULT_COOLDOWN_SECONDS),
                        )
                        .unwrap_or(i32::MAX)
                    }),
                    polling_interval: Some(15),
                    advanced: Some(Advanced {
                        horizontal_pod_autoscaler_config: Some(HpaConfig {
                            behavior: Some(behavior(p.scale_down_window_seconds)),
                        }),
                    }),
                    triggers: vec![Trigger {
                        type_: "prometheus".into(),
                        name: Some("vllm-requests-in-flight".into()),
                        metric_type: Some("AverageValue".into()),
                        metadata: BTreeMap::from([
                            (
                                "serverAddress".to_string(),
                                p.prometheus_address.unwrap_or_default().to_string(),
                            ),
                            (
                                "query".to_string(),
                                in_flight_query(p.namespace, p.workload),
                            ),
                            (
                                "threshold".to_string(),
                                p.target_requests_per_replica.to_string(),
                            ),
                        ]),
                    }],
                },
                ..Default::default()
            },
        ),
        Autoscaler::Hpa => Manifest::of(HorizontalPodAutoscaler {
            metadata,
            spec: Some(HorizontalPodAutoscalerSpec {
                scale_target_ref: CrossVersionObjectReference {
                    api_version: Some(p.workload.api_version.to_string()),
                    kind: p.workload.kind.to_string(),
                    name: p.workload.name.clone(),
                },
                // An HPA never scales to zero; KEDA does.
                min_replicas: Some(p.min_replicas.max(1)),
                max_replicas: p.max_replicas,
                metrics: Some(vec![MetricSpec {
                    type_: "Pods".into(),
                    pods: Some(PodsMetricSource {
                        metric: MetricIdentifier {
                            name: HPA_METRIC.into(),
                            selector: None,
                        },
                        target: MetricTarget {
                            type_: "AverageValue".into(),
                            average_value: Some(Quantity(
                                p.target_requests_per_replica.to_string(),
                            )),
                            ..Default::default()
                        },
                    }),
                    ..Default::default()
                }]),
                behavior: Some(behavior(p.scale_down_window_seconds)),
            }),
            ..Default::default()
        }),
    }
}

/// In-flight requests of the workload's serving pods, summed: KEDA divides
/// by the replicas and compares with the threshold.
fn in_flight_query(namespace: &str, w: &Workload) -> String {
    let pods = format!("namespace=\"{namespace}\",pod=~\"{}\"", w.serving_pods);
    KEDA_METRICS
        .map(|m| format!("sum({m}{{{pods}}})"))
        .join(" + ")
}

/// Scale-in waits for `window` (from [`scale_down_window`]) and removes one
/// replica per window (at most what the HPA accepts as a policy's period);
/// scale-out keeps Kubernetes' defaults.
fn behavior(window: u32) -> HorizontalPodAutoscalerBehavior {
    HorizontalPodAutoscalerBehavior {
        scale_down: Some(HPAScalingRules {
            stabilization_window_seconds: Some(window as i32),
            policies: Some(vec![HPAScalingPolicy {
                type_: "Pods".into(),
                value: 1,
                period_seconds: window.clamp(1, MAX_POLICY_PERIOD_SECONDS) as i32,
            }]),
            ..Default::default()
        }),
        scale_up: None,
    }
}
