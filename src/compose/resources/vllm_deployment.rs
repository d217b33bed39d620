//! vLLM served by a plain `Deployment`: one pod per replica, no operator.
//! The pod is `vllm_pod`'s; this file decides what only a Deployment has:
//! the selector, the update strategy and the progress deadline.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::compose::resources::replacement::recreate;
use crate::compose::resources::spread;
use crate::compose::resources::vllm_pod::{
    PodParams, pod_spec, serve_args, serving_container, volumes,
};

/// What the Deployment is built from besides the pod.
pub(crate) struct DeploymentParams<'a> {
    pub(crate) name: &'a str,
    pub(crate) namespace: &'a str,
    /// The replica count; `None` when an autoscaler owns it.
    pub(crate) replicas: Option<i32>,
    /// Labels of the Deployment and its pods.
    pub(crate) labels: BTreeMap<String, String>,
    /// The part of them that selects the pods: never changes for the XR,
    /// since a Deployment's selector cannot change.
    pub(crate) selector: BTreeMap<String, String>,
    /// The PersistentVolumeClaim of the weights volume, when there is one.
    pub(crate) weights_claim: Option<&'a str>,
    /// Whether more than one replica may run: their pods then prefer
    /// other nodes than their siblings'.
    pub(crate) spread: bool,
    pub(crate) pod: PodParams<'a>,
}

/// Recreate when the pods must be ([`recreate`]), else a rolling update,
/// stated whole: the API server fills in a rolling update's parameters when
/// a Deployment names none, and would then refuse a later apply of Recreate
/// beside them (server-side apply removes only what its own field manager
/// set).
fn strategy(p: &PodParams) -> DeploymentStrategy {
    if recreate(p.plan, p.weights_cache) {
        return DeploymentStrategy {
            type_: Some("Recreate".into()),
            rolling_update: None,
        };
    }
    DeploymentStrategy {
        type_: Some("RollingUpdate".into()),
        // Kubernetes' defaults, owned so that a switch to Recreate drops them.
        rolling_update: Some(RollingUpdateDeployment {
            max_surge: Some(IntOrString::String("25%".into())),
            max_unavailable: Some(IntOrString::String("25%".into())),
        }),
    }
}

/// The Deployment.
pub(crate) fn vllm_deployment(d: &DeploymentParams) -> Deployment {
    let p = &d.pod;
    let container = serving_container(p, vec!["vllm".into(), "serve".into()], serve_args(p));
    let mut pod = pod_spec(p, vec![container], volumes(p, d.weights_claim));
    if d.spread {
        pod.topology_spread_constraints = Some(spread::across_nodes(&d.selector));
    }
    Deployment {
        metadata: ObjectMeta {
            name: Some(d.name.to_string()),
            namespace: Some(d.namespace.to_string()),
            labels: Some(d.labels.clone()),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: d.replicas,
            selector: LabelSelector {
                match_labels: Some(d.selector.clone()),
                match_expressions: None,
            },
            strategy: Some(strategy(p)),
            // The default 600 s would report a rollout as failed while the
            // weights still load.
            progress_deadline_seconds: i32::try_from(p.plan.startup_probe_seconds)
                .ok()
                .map(|s| s.saturating_add(600)),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(d.labels.clone()),
                    ..Default::default()
                }),
                spec: Some(pod),
            },
            ..Default::default()
        }),
        status: None,
    }
}
