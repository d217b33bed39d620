//! Inference-aware routing: a model server's pods as an InferencePool with
//! its endpoint picker, and an HTTPRoute to it from the platform's Gateway.

use crate::compose::composition::{ComposeRequest, Composition};
use crate::compose::resources::endpoint_picker::{EndpointPickerParams, endpoint_picker};
use crate::compose::resources::inference_route::{
    InferenceRouteParams, MODEL_HEADER, http_route, inference_pool,
};
use crate::compose::resources::labels::{labels, selector_labels};
use crate::compose::resources::placement::Placement;
use crate::compose::steps::model_server::Served;
use crate::input::GatewaySettings;
use crate::names;

/// Composition-resource names of the routing objects.
pub(crate) const INFERENCE_POOL: &str = "inference_pool";
pub(crate) const HTTP_ROUTE: &str = "http_route";
pub(crate) const ENDPOINT_PICKER: &str = "endpoint_picker";
pub(crate) const ENDPOINT_PICKER_SERVICE: &str = "endpoint_picker_service";
pub(crate) const ENDPOINT_PICKER_ACCOUNT: &str = "endpoint_picker_account";
pub(crate) const ENDPOINT_PICKER_ROLE: &str = "endpoint_picker_role";
pub(crate) const ENDPOINT_PICKER_ROLE_BINDING: &str = "endpoint_picker_role_binding";
pub(crate) const ENDPOINT_PICKER_CONFIG: &str = "endpoint_picker_config";

/// A model server to route to.
pub(crate) struct Routed<'a> {
    pub(crate) xr_kind: &'a str,
    /// The pool's and route's name (the model server's).
    pub(crate) name: &'a str,
    pub(crate) served: &'a Served,
    /// What requests name in `model`: the names vLLM serves the model by.
    pub(crate) model_names: &'a [&'a str],
    pub(crate) host: Option<&'a str>,
    pub(crate) placement: &'a Placement,
    /// The Secrets the endpoint picker pulls its image with.
    pub(crate) pull_secrets: &'a [String],
}

/// Composes the pool, its picker and the route; returns how to reach the
/// model through the Gateway, for the XR's endpoint.
pub(crate) fn compose(
    req: &ComposeRequest,
    gateway: &GatewaySettings,
    r: &Routed,
    out: &mut Composition,
) -> String {
    let namespace = r.placement.namespace();
    let picker_name = names::dns_subdomain(r.name, "-epp");
    let picker_labels = labels(r.xr_kind, &req.xr.name, "endpoint-picker");
    let selector = selector_labels(&picker_labels);
    let picker = endpoint_picker(&EndpointPickerParams {
        name: &picker_name,
        namespace,
        pool: r.name,
        image: &gateway.endpoint_picker_image,
        labels: picker_labels,
        selector,
        pull_secrets: r.pull_secrets,
    });
    let route = InferenceRouteParams {
        name: r.name,
        namespace,
        labels: labels(r.xr_kind, &req.xr.name, "model-server"),
        serving_pods: &r.served.serving_pod_labels,
        endpoint_picker: &picker_name,
        gateway: &gateway.name,
        gateway_namespace: gateway.namespace.as_deref(),
        host: r.host,
        model_names: r.model_names,
    };
    for (key, manifest) in [
        (ENDPOINT_PICKER_ACCOUNT, picker.service_account),
        (ENDPOINT_PICKER_ROLE, picker.role),
        (ENDPOINT_PICKER_ROLE_BINDING, picker.role_binding),
        (ENDPOINT_PICKER_CONFIG, picker.config),
        (ENDPOINT_PICKER, picker.deployment),
        (ENDPOINT_PICKER_SERVICE, picker.service),
        (INFERENCE_POOL, inference_pool(&route)),
        (HTTP_ROUTE, http_route(&route)),
    ] {
        out.add(key, r.placement.place(manifest), &req.observed);
    }
    let gateway_ns = gateway.namespace.as_deref().unwrap_or(namespace);
    match r.host {
        Some(host) => format!(
            "Gateway {gateway_ns}/{} for host {host}, HTTPRoute {namespace}/{} to InferencePool {}",
            gateway.name, r.name, r.name
        ),
        None => format!(
            "Gateway {gateway_ns}/{} for requests whose model is {} (header {MODEL_HEADER}, set by the Gateway's \
             body-based router), HTTPRoute {namespace}/{} to InferencePool {}",
            gateway.name,
            r.model_names.join(" or "),
            r.name,
            r.name
        ),
    }
}
