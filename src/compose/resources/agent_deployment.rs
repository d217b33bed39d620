//! The agents' Deployment: hardened pods (non-root, read-only root
//! filesystem, no privilege escalation, no capabilities, RuntimeDefault
//! seccomp) with resource requests, TCP probes when they listen on a port,
//! the configuration mounted from its ConfigMap and the model server's
//! OpenAI-compatible URL in the environment.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMapVolumeSource, Container, ContainerPort, EmptyDirVolumeSource, EnvVar,
    PodSecurityContext, PodSpec, PodTemplateSpec, Probe, ResourceRequirements, SeccompProfile,
    SecurityContext, TCPSocketAction, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::compose::composition::Manifest;
use crate::compose::resources::agent_config::{CONFIG_DIR, CONFIG_FILE};
use crate::compose::resources::pull_secrets::image_pull_secrets;
use crate::compose::resources::spread;
use crate::compose::resources::vllm_pod::LOG_TAIL_ON_ERROR;
use crate::credential::{holds_credential, is_credential_key};

/// The unprivileged user the agents run as (distroless' nonroot).
const RUN_AS: i64 = 65532;
/// Pod annotation carrying the configuration hash.
pub(crate) const CONFIG_HASH_ANNOTATION: &str = "infer.dev/config-hash";

/// What the Deployment is built from.
pub(crate) struct AgentDeploymentParams<'a> {
    pub(crate) name: &'a str,
    pub(crate) namespace: &'a str,
    pub(crate) labels: BTreeMap<String, String>,
    /// The subset of labels the selector matches (immutable once created).
    pub(crate) selector: BTreeMap<String, String>,
    pub(crate) image: &'a str,
    /// The replica count; `None` when the pool's autoscaler owns it.
    pub(crate) replicas: Option<i32>,
    pub(crate) port: Option<i32>,
    /// Variables the function sets (model URL, config path, memory Secret).
    pub(crate) env: Vec<EnvVar>,
    /// The user's variables; they win over the function's of the same name.
    pub(crate) user_env: &'a [EnvVar],
    pub(crate) config_map: &'a str,
    pub(crate) config_hash: &'a str,
    pub(crate) node_selector: &'a BTreeMap<String, String>,
    /// Secrets to pull the agents' image with.
    pub(crate) pull_secrets: &'a [String],
    /// Whether more than one replica may run: their pods then prefer
    /// other nodes than their siblings'.
    pub(crate) spread: bool,
}

/// Refuses a literal credential in the agents' environment, where it would
/// sit in plain text in the Deployment (and in the XR's desired state): a
/// variable named like a credential with a value, or a value holding one (a
/// password in a URL, a secret `key=value` pair). The same rules as
/// agent.json's (credential.rs).
pub(crate) fn check_env_has_no_credentials(env: &[EnvVar]) -> Result<(), String> {
    for (i, var) in env.iter().enumerate() {
        let Some(value) = var.value.as_deref().filter(|v| !v.is_empty()) else {
            continue;
        };
        let name = &var.name;
        if is_credential_key(name) {
            return Err(format!(
                "spec.env[{i}].value: {name} looks like a credential, which would sit in plain text in the \
                 agents' Deployment; put it in a Secret and set spec.env[{i}].valueFrom.secretKeyRef {{name, key}} \
                 instead of value"
            ));
        }
        if holds_credential(value) {
            return Err(format!(
                "spec.env[{i}].value of {name} holds a credential (a password in a URL or a secret key=value pair), \
                 which would sit in plain text in the agents' Deployment; put it in a Secret and set \
                 spec.env[{i}].valueFrom.secretKeyRef {{name, key}} instead of value"
            ));
        }
    }
    Ok(())
}

/// The Deployment manifest.
pub(crate) fn agent_deployment(p: &AgentDeploymentParams) -> crate::compose::composition::Manifest {
    let mut env: Vec<EnvVar> = p
        .env
        .iter()
        .filter(|e| !p.user_env.iter().any(|u| u.name == e.name))
        .cloned()
        .collect();
    env.extend(p.user_env.iter().cloned());
    let probe = |initial: i32, period: i32| {
        p.port.map(|port| Probe {
            tcp_socket: Some(TCPSocketAction {
                port: IntOrString::Int(port),
                host: None,
            }),
            initial_delay_seconds: Some(initial),
            period_seconds: Some(period),
            ..Default::default()
        })
    };
    let container = Container {
        name: "agent".into(),
        image: Some(p.image.to_string()),
        env: Some(env),
        ports: p.port.map(|port| {
            vec![ContainerPort {
                name: Some("http".into()),
                container_port: port,
                protocol: Some("TCP".into()),
                ..Default::default()
            }]
        }),
        readiness_probe: probe(5, 10),
        liveness_probe: probe(15, 20),
        resources: Some(ResourceRequirements {
            requests: Some(BTreeMap::from([
                ("cpu".to_string(), Quantity("250m".into())),
                ("memory".to_string(), Quantity("256Mi".into())),
            ])),
            limits: Some(BTreeMap::from([(
                "memory".to_string(),
                Quantity("1Gi".into()),
            )])),
            ..Default::default()
        }),
        termination_message_policy: Some(LOG_TAIL_ON_ERROR.into()),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                add: None,
            }),
            ..Default::default()
        }),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "config".into(),
                mount_path: CONFIG_DIR.into(),
                read_only: Some(true),
                ..Default::default()
            },
            // The root filesystem is read-only; runtimes still need a scratch directory.
            VolumeMount {
                name: "tmp".into(),
                mount_path: "/tmp".into(),
                ..Default::default()
            },
        ]),
        ..Default::default()
    };
    let pod = PodSpec {
        containers: vec![container],
        // Agents call the model server over HTTP; they need no Kubernetes API token.
        automount_service_account_token: Some(false),
        // Service links would inject variables for every Service in the namespace.
        enable_service_links: Some(false),
        node_selector: (!p.node_selector.is_empty()).then(|| p.node_selector.clone()),
        topology_spread_constraints: p.spread.then(|| spread::across_nodes(&p.selector)),
        image_pull_secrets: image_pull_secrets(p.pull_secrets),
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(RUN_AS),
            run_as_group: Some(RUN_AS),
            fs_group: Some(RUN_AS),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".into(),
                localhost_profile: None,
            }),
            ..Default::default()
        }),
        volumes: Some(vec![
            Volume {
                name: "config".into(),
                config_map: Some(ConfigMapVolumeSource {
                    name: p.config_map.to_string(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            Volume {
                name: "tmp".into(),
                empty_dir: Some(EmptyDirVolumeSource {
                    size_limit: Some(Quantity("256Mi".into())),
                    medium: None,
                }),
                ..Default::default()
            },
        ]),
        ..Default::default()
    };
    let deployment = Deployment {
        metadata: ObjectMeta {
            name: Some(p.name.to_string()),
            namespace: Some(p.namespace.to_string()),
            labels: Some(p.labels.clone()),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: p.replicas,
            selector: LabelSelector {
                match_labels: Some(p.selector.clone()),
                match_expressions: None,
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(p.labels.clone()),
                    annotations: Some(BTreeMap::from([(
                        CONFIG_HASH_ANNOTATION.to_string(),
                        p.config_hash.to_string(),
                    )])),
                    ..Default::default()
                }),
                spec: Some(pod),
            },
            ..Default::default()
        }),
        status: None,
    };
    Manifest::of(deployment)
}

/// Where the configuration file is inside the pod.
pub(crate) fn config_path() -> String {
    format!("{CONFIG_DIR}/{CONFIG_FILE}")
}
