//! The agents' HorizontalPodAutoscaler (`autoscaling/v2`).
//!
//! Each `autoscaling.metrics` type maps to one HPA metric (the table is in
//! docs/agents.md, Autoscaling metric mapping): agent metrics become `Pods` metrics averaged per pod,
//! which a metrics adapter (for example prometheus-adapter) serves under the
//! names below; cpu and memory become `Resource` utilization. A type with
//! no mapping is not dropped silently: it comes back as a warning and a
//! status note. `behavior` and `cooldownPeriod` become the HPA's scaling
//! rules.

use std::collections::BTreeMap;

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HPAScalingPolicy, HPAScalingRules, HorizontalPodAutoscaler,
    HorizontalPodAutoscalerBehavior, HorizontalPodAutoscalerSpec, MetricIdentifier, MetricSpec,
    MetricTarget, PodsMetricSource, ResourceMetricSource,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::compose::composition::Manifest;
use crate::units::{parse_duration_seconds, whole_seconds};
use crate::xr::agent_pool::{Autoscaling, AutoscalingMetric, MetricMapping, ScalingPolicy};

/// Kubernetes' own target when an HPA names no metric.
const DEFAULT_CPU_UTILIZATION: i32 = 80;
/// The HPA's limit on stabilization windows.
pub(crate) const MAX_WINDOW_SECONDS: u32 = 3600;

/// How each supported metric type maps: (type, Pods metric name, the target is a duration).
const POD_METRICS: &[(&str, &str, bool)] = &[
    ("concurrent-sessions", "agent_concurrent_sessions", false),
    ("tokens-in-queue", "agent_tokens_in_queue", false),
    ("queue-depth", "agent_queue_depth", false),
    ("tokens-per-second", "agent_tokens_per_second", false),
    ("tool-call-rate", "agent_tool_calls_per_second", false),
    ("context-length", "agent_context_length_tokens", false),
    ("ttft-p95", "agent_ttft_p95_seconds", true),
];

/// What the autoscaler is built from.
pub(crate) struct AutoscalerParams<'a> {
    pub(crate) name: &'a str,
    pub(crate) namespace: &'a str,
    pub(crate) labels: BTreeMap<String, String>,
    /// The Deployment it scales.
    pub(crate) target: &'a str,
    pub(crate) min_replicas: i32,
    pub(crate) max_replicas: i32,
    pub(crate) spec: Option<&'a Autoscaling>,
}

/// The autoscaler, how each metric mapped, and what did not apply.
#[derive(Debug)]
pub(crate) struct AutoscalerPlan {
    pub(crate) manifest: crate::compose::composition::Manifest,
    pub(crate) mappings: Vec<MetricMapping>,
    /// Unsupported metric types: warnings (on transition) and status notes.
    pub(crate) warnings: Vec<String>,
    pub(crate) notes: Vec<String>,
}

/// Builds the HPA. Errors name the field and what would be valid.
pub(crate) fn autoscaler(p: &AutoscalerParams) -> Result<AutoscalerPlan, String> {
    let mut metrics = Vec::new();
    let mut mappings = Vec::new();
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    let wanted = p.spec.map(|a| a.metrics.as_slice()).unwrap_or_default();
    for (i, m) in wanted.iter().enumerate() {
        let field = format!("spec.autoscaling.metrics[{i}]");
        match map_metric(m, &field)? {
            Some((spec, mapped_to)) => {
                metrics.push(spec);
                mappings.push(MetricMapping {
                    type_: m.type_.clone(),
                    mapped_to,
                });
            }
            None => {
                let w = format!(
                    "{field}.type {} has no HorizontalPodAutoscaler mapping and is not applied; use {}, cpu or memory",
                    crate::quote::shown(&m.type_),
                    POD_METRICS
                        .iter()
                        .map(|(t, _, _)| *t)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                mappings.push(MetricMapping {
                    type_: m.type_.clone(),
                    mapped_to: "not applied: no mapping".into(),
                });
                warnings.push(w);
            }
        }
        if m.averaging_window.is_some() {
            notes.push(format!(
                "{field}.averagingWindow is not applied: an HPA has no per-metric window; average in the metrics adapter's query"
            ));
        }
    }
    if metrics.is_empty() {
        metrics.push(resource_metric("cpu", DEFAULT_CPU_UTILIZATION));
        mappings.push(MetricMapping {
            type_: "cpu".into(),
            mapped_to: format!("Resource cpu averageUtilization {DEFAULT_CPU_UTILIZATION}% (no supported metric given)"),
        });
    }
    let behavior = behavior(p.spec, &mut notes)?;
    let hpa = HorizontalPodAutoscaler {
        metadata: ObjectMeta {
            name: Some(p.name.to_string()),
            namespace: Some(p.namespace.to_string()),
            labels: Some(p.labels.clone()),
            ..Default::default()
        },
        spec: Some(HorizontalPodAutoscalerSpec {
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".into()),
                kind: "Deployment".into(),
                name: p.target.to_string(),
            },
            min_replicas: Some(p.min_replicas.max(1)),
            max_replicas: p.max_replicas,
            metrics: Some(metrics),
            behavior,
        }),
        status: None,
    };
    Ok(AutoscalerPlan {
        manifest: Manifest::of(hpa),
        mappings,
        warnings,
        notes,
    })
}

/// One metric as an HPA metric and a description, or `None` when its type has no mapping.
fn map_metric(m: &AutoscalingMetric, field: &str) -> Result<Option<(MetricSpec, String)>, String> {
    let type_ = m.type_.trim();
    if type_ == "cpu" || type_ == "memory" {
        let pct = m.target.trim().trim_end_matches('%');
        let pct: i32 = pct
            .parse()
            .ok()
            .filter(|v| (1..=1000).contains(v))
            .ok_or_else(|| format!("{field}.target is {}; a {type_} target is a utilization percentage such as 70%", crate::quote::shown(&m.target)))?;
        return Ok(Some((
            resource_metric(type_, pct),
            format!("Resource {type_} averageUtilization {pct}%"),
        )));
    }
    let Some((_, metric, duration)) = POD_METRICS.iter().find(|(t, _, _)| *t == type_) else {
        return Ok(None);
    };
    let value = if *duration {
        parse_duration_seconds(&m.target)
            .map_err(|e| format!("{field}.target: {e} (a ttft-p95 target is a duration)"))?
    } else {
        m.target.trim().parse::<f64>().map_err(|_| {
            format!(
                "{field}.target is {}; use a number such as 30",
                crate::quote::shown(&m.target)
            )
        })?
    };
    if !(value > 0.0 && value.is_finite()) {
        return Err(format!(
            "{field}.target is {}; use a value above 0",
            crate::quote::shown(&m.target)
        ));
    }
    let quantity = quantity(value);
    let spec = MetricSpec {
        type_: "Pods".into(),
        pods: Some(PodsMetricSource {
            metric: MetricIdentifier {
                name: metric.to_string(),
                selector: None,
            },
            target: MetricTarget {
                type_: "AverageValue".into(),
                average_value: Some(Quantity(quantity.clone())),
                ..Default::default()
            },
        }),
        ..Default::default()
    };
    Ok(Some((
        spec,
        format!("Pods {metric} averageValue {quantity}"),
    )))
}

fn resource_metric(name: &str, utilization: i32) -> MetricSpec {
    MetricSpec {
        type_: "Resource".into(),
        resource: Some(ResourceMetricSource {
            name: name.into(),
            target: MetricTarget {
                type_: "Utilization".into(),
                average_utilization: Some(utilization),
                ..Default::default()
            },
        }),
        ..Default::default()
    }
}

/// A number as a Kubernetes quantity: whole numbers as they are, fractions in milli-units.
fn quantity(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{}m", (v * 1000.0).round() as i64)
    }
}

/// `behavior` and `cooldownPeriod` as the HPA's scaling rules.
fn behavior(
    spec: Option<&Autoscaling>,
    notes: &mut Vec<String>,
) -> Result<Option<HorizontalPodAutoscalerBehavior>, String> {
    let Some(a) = spec else { return Ok(None) };
    let b = a.behavior.as_ref();
    let scale_up = b
        .and_then(|b| b.scale_up.as_ref())
        .map(|p| rules(p, "spec.autoscaling.behavior.scaleUp", notes))
        .transpose()?;
    let mut scale_down = b
        .and_then(|b| b.scale_down.as_ref())
        .map(|p| rules(p, "spec.autoscaling.behavior.scaleDown", notes))
        .transpose()?;
    if let Some(cooldown) = &a.cooldown_period {
        let seconds = window_seconds(cooldown, "spec.autoscaling.cooldownPeriod", notes)?;
        let down = scale_down.get_or_insert_with(HPAScalingRules::default);
        // An explicit scale-down window wins over the cooldown.
        down.stabilization_window_seconds.get_or_insert(seconds);
    }
    if scale_up.is_none() && scale_down.is_none() {
        return Ok(None);
    }
    Ok(Some(HorizontalPodAutoscalerBehavior {
        scale_up,
        scale_down,
    }))
}

fn rules(
    p: &ScalingPolicy,
    field: &str,
    notes: &mut Vec<String>,
) -> Result<HPAScalingRules, String> {
    let period = p.period_seconds.unwrap_or(60);
    let mut policies = Vec::new();
    if let Some(n) = p.max_change_absolute {
        policies.push(HPAScalingPolicy {
            type_: "Pods".into(),
            value: n,
            period_seconds: period,
        });
    }
    if let Some(pct) = p.max_change_percent {
        policies.push(HPAScalingPolicy {
            type_: "Percent".into(),
            value: pct,
            period_seconds: period,
        });
    }
    Ok(HPAScalingRules {
        stabilization_window_seconds: p
            .stabilization_window
            .as_deref()
            .map(|w| window_seconds(w, &format!("{field}.stabilizationWindow"), notes))
            .transpose()?,
        // Both limits given: the stricter one holds.
        select_policy: (policies.len() > 1).then(|| "Min".to_string()),
        policies: (!policies.is_empty()).then_some(policies),
        ..Default::default()
    })
}

fn window_seconds(d: &str, field: &str, notes: &mut Vec<String>) -> Result<i32, String> {
    let s = parse_duration_seconds(d).map_err(|e| format!("{field}: {e}"))?;
    if !(0.0..=f64::from(MAX_WINDOW_SECONDS)).contains(&s) {
        return Err(format!(
            "{field} is {d}; use 0s to 1h (the autoscaler's limit)"
        ));
    }
    let whose = "a HorizontalPodAutoscaler's window";
    Ok(whole_seconds(field, d, s, 0, whose, notes) as i32)
}
