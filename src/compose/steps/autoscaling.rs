//! A model server that scales with load: the XR's `autoscaling` checked
//! against the platform's autoscaler, the target the plan derives, and the
//! ScaledObject or HPA that applies it to the runtime's workload; and the
//! PodMonitor that scrapes its metrics, when the platform has one.

use std::collections::BTreeMap;

use crate::compose::composition::{ComposeRequest, Composition, Refusal};
use crate::compose::resources::model_server_autoscaler::{
    HPA_METRIC, KEDA_METRICS, ModelServerAutoscalerParams, model_server_autoscaler,
    scale_down_window,
};
use crate::compose::resources::placement::Placement;
use crate::compose::resources::pod_monitor::pod_monitor;
use crate::compose::steps::model_server::Served;
use crate::input::Autoscaler;
use crate::sizing::Plan;
use crate::xr::model_server_autoscaling::{AutoscalingStatus, ModelServerAutoscaling};

/// Autoscaling as asked and allowed by the platform.
pub(crate) struct Asked<'a> {
    pub(crate) spec: &'a ModelServerAutoscaling,
    /// Where the XR asks for it, for messages.
    pub(crate) field: &'static str,
    /// What sets a longer context, for a stated request that is longer.
    pub(crate) context_field: &'static str,
    pub(crate) autoscaler: Autoscaler,
    pub(crate) min_replicas: i32,
    pub(crate) max_replicas: i32,
}

/// The XR's autoscaling at `field`, refused when the platform has no
/// autoscaler or the one it has cannot do what is asked; `instead` says
/// what fixes the replicas without one, `context_field` what sets the
/// server's context.
pub(crate) fn check<'a>(
    req: &ComposeRequest,
    spec: Option<&'a ModelServerAutoscaling>,
    field: &'static str,
    context_field: &'static str,
    instead: &str,
) -> Result<Option<Asked<'a>>, Refusal> {
    let Some(spec) = spec else { return Ok(None) };
    let invalid = |m: String| Refusal::new("InvalidSpec", m);
    let (min_replicas, max_replicas) = spec.range(field).map_err(invalid)?;
    let autoscaler = req.settings.autoscaler.ok_or_else(|| {
        Refusal::new(
            "AutoscalerUnavailable",
            format!(
                "{field} is set, but the platform names no autoscaler (input.defaults.autoscaler: keda or hpa); \
                 ask the platform team for one, or {instead}"
            ),
        )
    })?;
    if min_replicas == 0 && autoscaler == Autoscaler::Hpa {
        return Err(invalid(format!(
            "{field}.minReplicas 0 needs KEDA: the platform's autoscaler is an HPA, which keeps at least one replica; \
             use minReplicas 1 or more"
        )));
    }
    Ok(Some(Asked {
        spec,
        field,
        context_field,
        autoscaler,
        min_replicas,
        max_replicas,
    }))
}

/// What the step composes under.
pub(crate) struct Scaled<'a> {
    /// The autoscaler's and the PodMonitor's composition-resource names.
    pub(crate) key: &'static str,
    pub(crate) pod_monitor_key: &'static str,
    pub(crate) name: &'a str,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) placement: &'a Placement,
}

/// The PodMonitor of `served`, when the platform asks for one, and its
/// autoscaler, when the XR does, with the status that explains it; warnings
/// (scale to zero and its cold start) go to `notes`.
pub(crate) fn compose(
    req: &ComposeRequest,
    asked: Option<&Asked>,
    plan: &Plan,
    served: &Served,
    at: &Scaled,
    out: &mut Composition,
    notes: &mut Vec<String>,
) -> Option<AutoscalingStatus> {
    if req.settings.pod_monitor {
        let monitor = pod_monitor(
            at.name,
            at.placement.namespace(),
            at.labels.clone(),
            &served.pod_labels,
        );
        out.add(
            at.pod_monitor_key,
            at.placement.place(monitor),
            &req.observed,
        );
    }
    let asked = asked?;
    let tokens = |v: Option<i64>| v.map(|t| t.max(1) as u64);
    let shape = plan.request_shape(
        tokens(asked.spec.prompt_tokens),
        tokens(asked.spec.output_tokens),
    );
    let field = asked.field;
    let stated_by = match (asked.spec.prompt_tokens, asked.spec.output_tokens) {
        (Some(_), Some(_)) => format!("{field}.promptTokens + outputTokens"),
        (Some(_), None) => format!("{field}.promptTokens"),
        _ => format!("{field}.outputTokens"),
    };
    notes.extend(shape.beyond_context_warning(&stated_by, asked.context_field));
    let target_field = format!("{field}.targetRequestsPerReplica");
    let overridden =
        tokens(asked.spec.target_requests_per_replica).map(|t| (t, target_field.as_str()));
    let target = plan.scaling_target(shape, overridden);
    let startup = plan.startup_probe_seconds;
    let window = scale_down_window(startup);
    let manifest = model_server_autoscaler(&ModelServerAutoscalerParams {
        autoscaler: asked.autoscaler,
        name: at.name,
        namespace: at.placement.namespace(),
        labels: at.labels.clone(),
        workload: &served.workload,
        min_replicas: asked.min_replicas,
        max_replicas: asked.max_replicas,
        target_requests_per_replica: target.requests_per_replica,
        scale_down_window_seconds: window,
        prometheus_address: req.settings.prometheus_address.as_deref(),
    });
    out.add(at.key, at.placement.place(manifest), &req.observed);
    if asked.min_replicas == 0 {
        notes.push(format!(
            "{}.minReplicas is 0: KEDA scales the model server to zero when idle, and a replica takes up \
             to {startup} s to serve again (its load-time estimate); with no replica vLLM exports no metrics, so a \
             request alone does not bring one back: scale it up from outside (a gateway's request metric or kubectl \
             scale)",
            asked.field
        ));
    }
    let (metric, via) = match asked.autoscaler {
        Autoscaler::Keda => (KEDA_METRICS.join(" + "), "KEDA's Prometheus trigger"),
        Autoscaler::Hpa => (HPA_METRIC.to_string(), "the custom metrics API"),
    };
    Some(AutoscalingStatus {
        autoscaler: asked.autoscaler.as_str().to_string(),
        min_replicas: asked.min_replicas,
        max_replicas: asked.max_replicas,
        target_requests_per_replica: target.requests_per_replica,
        kv_cache_requests: target.kv_requests,
        scale_down_window_seconds: window,
        reason: format!(
            "{} {} scales between {} and {} replicas on {metric} through {via}: it {}; it scales in by one replica \
             per {window} s at most, since a replica takes up to {startup} s to load.",
            served.workload.kind,
            served.workload.name,
            asked.min_replicas,
            asked.max_replicas,
            target.reason
        ),
    })
}
