//! The Service in front of a model server the function builds itself. It
//! keeps the operator's contract (named like the runtime, port 80 to vLLM's
//! port), so the endpoint and the Ingress stay the same whichever runtime
//! serves, and an XR moved between runtimes keeps its URL.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::compose::resources::vllm_pod::PORT_NAME;
use crate::compose::resources::vllm_runtime::SERVICE_PORT;

/// A ClusterIP Service `name` on port 80 to the pods `selector` picks.
pub(crate) fn vllm_service(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    selector: BTreeMap<String, String>,
) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some(labels),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".into()),
            selector: Some(selector),
            ports: Some(vec![ServicePort {
                name: Some(PORT_NAME.into()),
                port: SERVICE_PORT,
                target_port: Some(IntOrString::String(PORT_NAME.into())),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    }
}
