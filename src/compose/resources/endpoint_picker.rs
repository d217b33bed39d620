//! The Gateway API Inference Extension's endpoint picker (EPP) for one
//! InferencePool: its ServiceAccount and namespaced RBAC, its plugin
//! configuration, its Deployment and its Service. Written from the
//! extension's own chart and flags (v1.3.0, `config/charts/inferencepool`,
//! `pkg/epp/server/options.go`): the pool by name and namespace, the
//! default scorers (queue 2, KV-cache use 2, prefix cache 3), vLLM's metric
//! names (its defaults), no tracing, and the metrics endpoint without
//! authentication (which would need a ClusterRole for token reviews).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EnvVar, EnvVarSource,
    GRPCAction, ObjectFieldSelector, PodSecurityContext, PodSpec, PodTemplateSpec, Probe,
    ResourceRequirements, SeccompProfile, SecurityContext, Service, ServiceAccount, ServicePort,
    ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::compose::composition::Manifest;
use crate::compose::resources::pull_secrets::image_pull_secrets;
use crate::input::Image;
use crate::manifests::inference_pool::InferencePool;

/// The gRPC port the Gateway's ext_proc filter calls.
pub(crate) const EXT_PROC_PORT: i32 = 9002;
const HEALTH_PORT: i32 = 9003;
const METRICS_PORT: i32 = 9090;
/// The gRPC health service the picker answers for (one replica).
const HEALTH_SERVICE: &str = "inference-extension";
const CONFIG_FILE: &str = "default-plugins.yaml";
/// The chart's default scheduling profile.
const DEFAULT_PLUGINS: &str = "\
apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: queue-scorer
- type: kv-cache-utilization-scorer
- type: prefix-cache-scorer
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
    weight: 2
  - pluginRef: kv-cache-utilization-scorer
    weight: 2
  - pluginRef: prefix-cache-scorer
    weight: 3
";
/// The distroless `nonroot` user of the picker's image.
const NONROOT_UID: i64 = 65532;

/// What the picker is built from.
pub(crate) struct EndpointPickerParams<'a> {
    /// The picker's name (its Deployment, Service, account and config).
    pub(crate) name: &'a str,
    pub(crate) namespace: &'a str,
    /// The InferencePool it picks for.
    pub(crate) pool: &'a str,
    pub(crate) image: &'a Image,
    pub(crate) labels: BTreeMap<String, String>,
    /// The labels that select its pod, a subset of `labels`.
    pub(crate) selector: BTreeMap<String, String>,
    /// Secrets to pull its image with.
    pub(crate) pull_secrets: &'a [String],
}

/// The picker's objects, under their composition-resource names' suffixes.
pub(crate) struct EndpointPicker {
    pub(crate) service_account: Manifest,
    pub(crate) role: Manifest,
    pub(crate) role_binding: Manifest,
    pub(crate) config: Manifest,
    pub(crate) deployment: Manifest,
    pub(crate) service: Manifest,
}

pub(crate) fn endpoint_picker(p: &EndpointPickerParams) -> EndpointPicker {
    let meta = || ObjectMeta {
        name: Some(p.name.to_string()),
        namespace: Some(p.namespace.to_string()),
        labels: Some(p.labels.clone()),
        ..Default::default()
    };
    let read = |group: &str, resources: &[&str]| PolicyRule {
        api_groups: Some(vec![group.to_string()]),
        resources: Some(resources.iter().map(|r| r.to_string()).collect()),
        verbs: ["get", "watch", "list"].map(String::from).to_vec(),
        ..Default::default()
    };
    EndpointPicker {
        service_account: Manifest::of(ServiceAccount {
            metadata: meta(),
            ..Default::default()
        }),
        role: Manifest::of(Role {
            metadata: meta(),
            rules: Some(vec![
                read(
                    "inference.networking.x-k8s.io",
                    &["inferenceobjectives", "inferencemodelrewrites"],
                ),
                read(InferencePool::GROUP, &["inferencepools"]),
                read("", &["pods"]),
            ]),
        }),
        role_binding: Manifest::of(RoleBinding {
            metadata: meta(),
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "Role".into(),
                name: p.name.to_string(),
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".into(),
                name: p.name.to_string(),
                namespace: Some(p.namespace.to_string()),
                ..Default::default()
            }]),
        }),
        config: Manifest::of(ConfigMap {
            metadata: meta(),
            data: Some(BTreeMap::from([(
                CONFIG_FILE.to_string(),
                DEFAULT_PLUGINS.to_string(),
            )])),
            ..Default::default()
        }),
        deployment: Manifest::of(Deployment {
            metadata: meta(),
            spec: Some(DeploymentSpec {
                replicas: Some(1),
                // One picker at a time: two would need leader election.
                strategy: Some(DeploymentStrategy {
                    type_: Some("Recreate".into()),
                    ..Default::default()
                }),
                selector: LabelSelector {
                    match_labels: Some(p.selector.clone()),
                    ..Default::default()
                },
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(p.labels.clone()),
                        ..Default::default()
                    }),
                    spec: Some(pod(p)),
                },
                ..Default::default()
            }),
            ..Default::default()
        }),
        service: Manifest::of(Service {
            metadata: meta(),
            spec: Some(ServiceSpec {
                selector: Some(p.selector.clone()),
                ports: Some(vec![
                    service_port("grpc-ext-proc", EXT_PROC_PORT),
                    service_port("http-metrics", METRICS_PORT),
                ]),
                type_: Some("ClusterIP".into()),
                ..Default::default()
            }),
            ..Default::default()
        }),
    }
}

fn service_port(name: &str, port: i32) -> ServicePort {
    ServicePort {
        name: Some(name.into()),
        protocol: Some("TCP".into()),
        port,
        target_port: Some(IntOrString::Int(port)),
        ..Default::default()
    }
}

/// The picker's pod, as the chart runs it, within the restricted Pod
/// Security profile.
fn pod(p: &EndpointPickerParams) -> PodSpec {
    let probe = |period: i32, initial: Option<i32>| Probe {
        grpc: Some(GRPCAction {
            port: HEALTH_PORT,
            service: Some(HEALTH_SERVICE.into()),
        }),
        initial_delay_seconds: initial,
        period_seconds: Some(period),
        ..Default::default()
    };
    let field = |path: &str| EnvVarSource {
        field_ref: Some(ObjectFieldSelector {
            field_path: path.into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let args = [
        "--pool-name",
        p.pool,
        "--pool-namespace",
        p.namespace,
        "--zap-encoder",
        "json",
        "--config-file",
        &format!("/config/{CONFIG_FILE}"),
        "--tracing=false",
        "--metrics-endpoint-auth=false",
    ]
    .map(String::from)
    .to_vec();
    PodSpec {
        service_account_name: Some(p.name.to_string()),
        image_pull_secrets: image_pull_secrets(p.pull_secrets),
        termination_grace_period_seconds: Some(130),
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(NONROOT_UID),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        containers: vec![Container {
            name: "epp".into(),
            image: Some(p.image.reference()),
            image_pull_policy: Some("IfNotPresent".into()),
            args: Some(args),
            ports: Some(vec![
                container_port("grpc", EXT_PROC_PORT),
                container_port("grpc-health", HEALTH_PORT),
                container_port("metrics", METRICS_PORT),
            ]),
            liveness_probe: Some(probe(10, Some(5))),
            readiness_probe: Some(probe(2, None)),
            env: Some(vec![
                EnvVar {
                    name: "NAMESPACE".into(),
                    value_from: Some(field("metadata.namespace")),
                    ..Default::default()
                },
                EnvVar {
                    name: "POD_NAME".into(),
                    value_from: Some(field("metadata.name")),
                    ..Default::default()
                },
            ]),
            resources: Some(ResourceRequirements {
                requests: Some(BTreeMap::from([
                    ("cpu".to_string(), Quantity("250m".into())),
                    ("memory".to_string(), Quantity("256Mi".into())),
                ])),
                ..Default::default()
            }),
            security_context: Some(SecurityContext {
                allow_privilege_escalation: Some(false),
                capabilities: Some(Capabilities {
                    drop: Some(vec!["ALL".into()]),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            volume_mounts: Some(vec![VolumeMount {
                name: "plugins-config".into(),
                mount_path: "/config".into(),
                read_only: Some(true),
                ..Default::default()
            }]),
            ..Default::default()
        }],
        volumes: Some(vec![Volume {
            name: "plugins-config".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: p.name.to_string(),
                ..Default::default()
            }),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

fn container_port(name: &str, port: i32) -> ContainerPort {
    ContainerPort {
        name: Some(name.into()),
        container_port: port,
        protocol: Some("TCP".into()),
        ..Default::default()
    }
}
