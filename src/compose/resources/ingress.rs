//! The Ingress in front of an OpenAI-compatible Service (or an AgentPool's
//! agents), and what faces users of either.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule,
    IngressServiceBackend, IngressSpec, IngressTLS, ServiceBackendPort,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The composed Ingress's resource name, in every kind that exposes one.
pub(crate) const INGRESS: &str = "ingress";

/// What the Ingress routes.
pub(crate) struct IngressParams<'a> {
    pub(crate) name: &'a str,
    pub(crate) namespace: &'a str,
    pub(crate) host: &'a str,
    /// The path prefix routed: [`OPENAI_API_PATH`] for a model server.
    pub(crate) path: &'a str,
    pub(crate) service: &'a str,
    pub(crate) port: i32,
    pub(crate) class_name: Option<&'a str>,
    pub(crate) tls_secret: Option<&'a str>,
}

/// What a model server's Ingress and HTTPRoute route: the OpenAI-compatible
/// API alone. `--api-key` guards only these paths, and vLLM serves others on
/// the same port that must not face users (its security guide: `/pause`,
/// `/update_weights`, `/invocations` run unauthenticated).
pub(crate) const OPENAI_API_PATH: &str = "/v1";

/// Longest request the Ingress controller or the Gateway waits for: a long
/// generation takes minutes, where proxies give up after 60 s by default.
pub(crate) const REQUEST_TIMEOUT_SECONDS: u32 = 300;

/// What ingress-nginx needs to carry an LLM's answers (other controllers
/// ignore them): the read and send timeouts of a long generation, and no
/// response buffering, which would hold streamed tokens back until a buffer
/// fills.
fn nginx_annotations() -> BTreeMap<String, String> {
    let timeout = REQUEST_TIMEOUT_SECONDS.to_string();
    [
        (
            "nginx.ingress.kubernetes.io/proxy-read-timeout",
            timeout.as_str(),
        ),
        (
            "nginx.ingress.kubernetes.io/proxy-send-timeout",
            timeout.as_str(),
        ),
        ("nginx.ingress.kubernetes.io/proxy-buffering", "off"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// An Ingress sending the paths under `path` on `host` to `service:port`.
pub(crate) fn ingress(p: &IngressParams) -> crate::compose::composition::Manifest {
    let ingress = Ingress {
        metadata: ObjectMeta {
            name: Some(p.name.to_string()),
            namespace: Some(p.namespace.to_string()),
            annotations: Some(nginx_annotations()),
            ..Default::default()
        },
        spec: Some(IngressSpec {
            ingress_class_name: p.class_name.map(String::from),
            rules: Some(vec![IngressRule {
                host: Some(p.host.to_string()),
                http: Some(HTTPIngressRuleValue {
                    paths: vec![HTTPIngressPath {
                        path: Some(p.path.into()),
                        path_type: "Prefix".into(),
                        backend: IngressBackend {
                            service: Some(IngressServiceBackend {
                                name: p.service.to_string(),
                                port: Some(ServiceBackendPort {
                                    number: Some(p.port),
                                    name: None,
                                }),
                            }),
                            resource: None,
                        },
                    }],
                }),
            }]),
            tls: p.tls_secret.map(|secret| {
                vec![IngressTLS {
                    hosts: Some(vec![p.host.to_string()]),
                    secret_name: Some(secret.to_string()),
                }]
            }),
            default_backend: None,
        }),
        status: None,
    };
    crate::compose::composition::Manifest::of(ingress)
}

/// The external base URL of the OpenAI-compatible API.
pub(crate) fn external_url(host: &str, tls: bool) -> String {
    [
        if tls { "https://" } else { "http://" },
        host,
        OPENAI_API_PATH,
    ]
    .concat()
}
