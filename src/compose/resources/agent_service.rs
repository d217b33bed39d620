//! The agents' Service, with client-IP session affinity when asked.
//!
//! A Service can only pin sessions by client IP; the header a session is
//! keyed on goes to the agents in their configuration, and the status says so.

use std::collections::BTreeMap;

use crate::compose::composition::Manifest;
use k8s_openapi::api::core::v1::{
    ClientIPConfig, Service, ServicePort, ServiceSpec, SessionAffinityConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// What the Service is built from.
pub(crate) struct AgentServiceParams<'a> {
    pub(crate) name: &'a str,
    pub(crate) namespace: &'a str,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) selector: BTreeMap<String, String>,
    pub(crate) port: i32,
    /// Seconds a client stays pinned to one agent, when affinity is on.
    pub(crate) affinity_seconds: Option<i32>,
}

/// The Service manifest.
pub(crate) fn agent_service(p: &AgentServiceParams) -> crate::compose::composition::Manifest {
    let service = Service {
        metadata: ObjectMeta {
            name: Some(p.name.to_string()),
            namespace: Some(p.namespace.to_string()),
            labels: Some(p.labels.clone()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(p.selector.clone()),
            ports: Some(vec![ServicePort {
                name: Some("http".into()),
                port: p.port,
                target_port: Some(IntOrString::String("http".into())),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            session_affinity: p.affinity_seconds.map(|_| "ClientIP".to_string()),
            session_affinity_config: p.affinity_seconds.map(|s| SessionAffinityConfig {
                client_ip: Some(ClientIPConfig {
                    timeout_seconds: Some(s),
                }),
            }),
            ..Default::default()
        }),
        status: None,
    };
    Manifest::of(service)
}
