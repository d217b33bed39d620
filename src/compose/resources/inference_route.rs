//! The InferencePool of a model server and the HTTPRoute from the
//! platform's Gateway to it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::compose::composition::Manifest;
use crate::compose::resources::endpoint_picker::EXT_PROC_PORT;
use crate::compose::resources::ingress::{OPENAI_API_PATH, REQUEST_TIMEOUT_SECONDS};
use crate::compose::resources::vllm_pod::CONTAINER_PORT;
use crate::manifests::http_route::{
    BackendRef, HeaderMatch, HttpRoute, HttpRouteSpec, Match, ParentRef, PathMatch, Rule, Timeouts,
};
use crate::manifests::inference_pool::{
    EndpointPickerRef, InferencePool, InferencePoolSpec, PoolSelector, Port,
};

/// The header the extension's body-based router sets from a request's
/// `model` (`pkg/bbr/handlers/request.go`).
pub(crate) const MODEL_HEADER: &str = "X-Gateway-Model-Name";

/// What the pool and the route are built from.
pub(crate) struct InferenceRouteParams<'a> {
    pub(crate) name: &'a str,
    pub(crate) namespace: &'a str,
    pub(crate) labels: BTreeMap<String, String>,
    /// The labels of the pods that serve the model's API.
    pub(crate) serving_pods: &'a BTreeMap<String, String>,
    pub(crate) endpoint_picker: &'a str,
    pub(crate) gateway: &'a str,
    pub(crate) gateway_namespace: Option<&'a str>,
    /// The host the route answers, when the XR names one; else requests
    /// are matched by the model their body names.
    pub(crate) host: Option<&'a str>,
    /// The names vLLM answers to: without a host, the route matches each.
    pub(crate) model_names: &'a [&'a str],
}

pub(crate) fn inference_pool(p: &InferenceRouteParams) -> Manifest {
    Manifest::new(
        InferencePool::KIND,
        InferencePool {
            metadata: metadata(p),
            spec: InferencePoolSpec {
                selector: PoolSelector {
                    match_labels: p.serving_pods.clone(),
                },
                target_ports: vec![Port {
                    number: CONTAINER_PORT,
                }],
                endpoint_picker_ref: EndpointPickerRef {
                    name: p.endpoint_picker.to_string(),
                    port: Some(Port {
                        number: EXT_PROC_PORT,
                    }),
                    failure_mode: None,
                },
            },
            ..Default::default()
        },
    )
}

pub(crate) fn http_route(p: &InferenceRouteParams) -> Manifest {
    let path = || {
        Some(PathMatch {
            type_: "PathPrefix".into(),
            value: OPENAI_API_PATH.into(),
        })
    };
    // A rule's matches are alternatives: one per name the model answers to.
    let matches = match p.host {
        Some(_) => vec![Match {
            path: path(),
            headers: Vec::new(),
        }],
        None => p
            .model_names
            .iter()
            .map(|name| Match {
                path: path(),
                headers: vec![HeaderMatch {
                    type_: "Exact".into(),
                    name: MODEL_HEADER.into(),
                    value: name.to_string(),
                }],
            })
            .collect(),
    };
    Manifest::new(
        HttpRoute::KIND,
        HttpRoute {
            metadata: metadata(p),
            spec: HttpRouteSpec {
                parent_refs: vec![ParentRef {
                    group: Some("gateway.networking.k8s.io".into()),
                    kind: Some("Gateway".into()),
                    name: p.gateway.to_string(),
                    namespace: p.gateway_namespace.map(str::to_string),
                }],
                hostnames: p.host.map(str::to_string).into_iter().collect(),
                rules: vec![Rule {
                    matches,
                    backend_refs: vec![BackendRef {
                        group: Some(InferencePool::GROUP.into()),
                        kind: Some(InferencePool::KIND.into()),
                        name: p.name.to_string(),
                    }],
                    timeouts: Some(Timeouts {
                        request: Some(format!("{REQUEST_TIMEOUT_SECONDS}s")),
                    }),
                }],
            },
            ..Default::default()
        },
    )
}

fn metadata(p: &InferenceRouteParams) -> ObjectMeta {
    ObjectMeta {
        name: Some(p.name.to_string()),
        namespace: Some(p.namespace.to_string()),
        labels: Some(p.labels.clone()),
        ..Default::default()
    }
}
