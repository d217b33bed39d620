//! The typed manifests in `src/manifests` against the CRDs they were written
//! from: a fully populated value must validate strictly and set every
//! property the CRD declares, and the validator itself must catch mistakes.

mod support;

use std::collections::BTreeMap;

use function_inference::manifests::leader_worker_set::{
    LeaderWorkerSet, LeaderWorkerSetSpec, LeaderWorkerSetStatus, LeaderWorkerTemplate,
    NetworkConfig, RollingUpdateConfiguration, RolloutStrategy, SubGroupPolicy,
};
use function_inference::manifests::provider_kubernetes::{
    Condition, ConnectionDetail, DeletionPropagationPolicy, DependsOn, LocalSecretReference,
    ManagementAction, Object, ObjectObservation, ObjectParameters, ObjectSpec, ObjectStatus,
    PatchesFrom, ProviderConfigReference, Readiness, Reference,
};
use function_inference::manifests::vllm_runtime::{
    AutoscalingConfig, AutoscalingTriggers, DeploymentConfig, DeploymentStrategy, EnvVar,
    HfTokenSecret, ImageSpec, LMCacheConfig, ResourceSpec, RuntimeModelSpec, ScaleDownPolicy,
    ScaleUpPolicy, SidecarConfig, StorageAccessMode, StorageConfig, VLLMConfig, VLLMRuntime,
    VLLMRuntimeSpec, VLLMRuntimeStatus,
};
use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, Toleration};
use serde_json::{Value, json};
use support::schema::{schema_for, unset_properties, validate, validate_against};

/// Compares problem lists regardless of order: the order of a JSON object's
/// keys depends on serde_json's features, which other crates may switch on.
fn assert_sorted_eq(mut actual: Vec<String>, expected: &[&str]) {
    let mut expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    actual.sort();
    expected.sort();
    assert_eq!(actual, expected);
}

fn env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: value.to_string(),
    }
}

fn requirement(key: &str, operator: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.into(),
        operator: operator.into(),
        values: Some(values.iter().map(|v| v.to_string()).collect()),
    }
}

/// A VLLMRuntime with every field of the CRD set (status included).
fn full_vllm_runtime() -> VLLMRuntime {
    let mut vr = VLLMRuntime::new(
        "llama-70b",
        VLLMRuntimeSpec {
            model: RuntimeModelSpec {
                model_url: "meta-llama/Llama-3.1-70B-Instruct".into(),
                chat_template: Some("{{ messages }}".into()),
                dtype: Some("bfloat16".into()),
                enable_lora: Some(false),
                enable_tool: Some(true),
                hf_token_secret: Some(HfTokenSecret {
                    hf_token_secret_name: Some("hf-token".into()),
                    hf_token_key_name: Some("token".into()),
                }),
                max_model_len: Some(32768),
                max_num_seqs: Some(64),
                tool_call_parser: Some("llama3_json".into()),
            },
            vllm_config: VLLMConfig {
                enable_chunked_prefill: Some(true),
                enable_prefix_caching: Some(true),
                env: Some(vec![env("VLLM_LOGGING_LEVEL", "INFO")]),
                extra_args: Some(vec!["--disable-log-requests".into()]),
                gpu_memory_utilization: Some("0.9".into()),
                max_loras: Some(4),
                port: Some(8000),
                tensor_parallel_size: Some(4),
                v1: Some(true),
            },
            deployment_config: DeploymentConfig {
                deployment_strategy: Some(DeploymentStrategy::Recreate),
                image: ImageSpec {
                    registry: "docker.io".into(),
                    name: "lmcache/vllm-openai:v0.3.5".into(),
                    pull_policy: Some("IfNotPresent".into()),
                    pull_secret_name: Some("regcred".into()),
                },
                node_selector_terms: Some(vec![NodeSelectorTerm {
                    match_expressions: Some(vec![requirement(
                        "nvidia.com/gpu.product",
                        "In",
                        &["NVIDIA-H100-80GB-HBM3"],
                    )]),
                    match_fields: Some(vec![requirement("metadata.name", "In", &["gpu-1"])]),
                }]),
                pod_annotations: Some(BTreeMap::from([("team".into(), "ml".into())])),
                replicas: Some(1),
                resources: ResourceSpec {
                    cpu: Some("32".into()),
                    memory: Some("256Gi".into()),
                    gpu: Some("4".into()),
                    gpu_type: Some("nvidia.com/gpu".into()),
                },
                runtime_class: Some("nvidia".into()),
                shm_size: Some("20Gi".into()),
                sidecar_config: Some(SidecarConfig {
                    args: Some(vec!["--watch".into()]),
                    command: Some(vec!["/bin/loader".into()]),
                    enabled: Some(true),
                    env: Some(vec![env("MODE", "sync")]),
                    image: ImageSpec {
                        registry: "ghcr.io".into(),
                        name: "example/loader:1".into(),
                        pull_policy: Some("Always".into()),
                        pull_secret_name: Some("regcred".into()),
                    },
                    mount_path: Some("/data".into()),
                    name: Some("loader".into()),
                    resources: Some(ResourceSpec {
                        cpu: Some("1".into()),
                        memory: Some("1Gi".into()),
                        gpu: Some("0".into()),
                        gpu_type: Some("nvidia.com/gpu".into()),
                    }),
                }),
                toleration: Some(vec![Toleration {
                    effect: Some("NoSchedule".into()),
                    key: Some("nvidia.com/gpu".into()),
                    operator: Some("Exists".into()),
                    toleration_seconds: Some(300),
                    value: Some(String::new()),
                }]),
            },
            lm_cache_config: Some(LMCacheConfig {
                cpu_offloading_buffer_size: Some("4Gi".into()),
                disk_offloading_buffer_size: Some("8Gi".into()),
                enabled: Some(true),
                remote_serde: Some("naive".into()),
                remote_url: Some("lm://cache:65432".into()),
            }),
            autoscaling_config: Some(AutoscalingConfig {
                enabled: Some(true),
                max_replicas: 4,
                min_replicas: Some(0),
                polling_interval: Some(15),
                scale_down_policy: Some(ScaleDownPolicy {
                    period_seconds: Some(60),
                    pod_value: Some(1),
                    scale_to_zero_delay_seconds: Some(1800),
                    stabilization_window_seconds: Some(300),
                }),
                scale_up_policy: Some(ScaleUpPolicy {
                    period_seconds: Some(60),
                    pod_value: Some(1),
                    stabilization_window_seconds: Some(0),
                }),
                triggers: Some(AutoscalingTriggers {
                    generation_tokens_threshold: Some(100),
                    prometheus_address: Some("http://prometheus.monitoring:9090".into()),
                    prompt_tokens_threshold: Some(100),
                    requests_running_threshold: Some(5),
                }),
            }),
            storage_config: Some(StorageConfig {
                access_mode: Some(StorageAccessMode::ReadWriteOnce),
                enabled: Some(true),
                mount_path: Some("/data".into()),
                size: Some("200Gi".into()),
                storage_class_name: Some("fast".into()),
                volume_name: Some("models".into()),
            }),
        },
    );
    vr.metadata.namespace = Some("inference".into());
    vr.status = Some(VLLMRuntimeStatus {
        available_replicas: Some(1),
        last_updated: Some("2025-01-01T00:00:00Z".into()),
        model_status: Some("Ready".into()),
        replicas: Some(1),
        selector: Some("app=llama-70b".into()),
        unavailable_replicas: Some(0),
        updated_replicas: Some(1),
    });
    vr
}

/// An Object with every field of the CRD set, wrapping a VLLMRuntime.
fn full_object() -> Object {
    let wrapped = VLLMRuntime {
        status: None,
        ..full_vllm_runtime()
    };
    let manifest = serde_json::to_value(&wrapped).unwrap();
    let mut object = Object::new(
        "llama-70b",
        ObjectSpec {
            connection_details: Some(vec![ConnectionDetail {
                api_version: Some("v1".into()),
                field_path: Some("spec.clusterIP".into()),
                kind: Some("Service".into()),
                name: Some("llama-70b".into()),
                namespace: Some("inference".into()),
                resource_version: Some("1".into()),
                to_connection_secret_key: Some("endpoint".into()),
                uid: Some("0000".into()),
            }]),
            for_provider: ObjectParameters {
                deletion_propagation_policy: Some(DeletionPropagationPolicy::Foreground),
                manifest: manifest.clone(),
            },
            management_policies: Some(vec![ManagementAction::Observe, ManagementAction::All]),
            provider_config_ref: Some(ProviderConfigReference::provider_config("gpu-cluster")),
            readiness: Some(Readiness::cel("object.status.availableReplicas >= 1")),
            references: Some(vec![Reference {
                depends_on: Some(DependsOn {
                    api_version: Some("kubernetes.m.crossplane.io/v1alpha1".into()),
                    kind: Some("Object".into()),
                    name: "namespace".into(),
                    namespace: Some("team-a".into()),
                }),
                patches_from: Some(PatchesFrom {
                    api_version: Some("v1".into()),
                    field_path: "metadata.name".into(),
                    kind: Some("Secret".into()),
                    name: "hf-token".into(),
                    namespace: Some("team-a".into()),
                }),
                to_field_path: Some("spec.model.hfTokenSecret.hfTokenSecretName".into()),
            }]),
            watch: Some(true),
            write_connection_secret_to_ref: Some(LocalSecretReference {
                name: "llama-70b-conn".into(),
            }),
        },
    );
    object.status = Some(ObjectStatus {
        at_provider: Some(ObjectObservation {
            manifest: Some(manifest),
        }),
        conditions: Some(vec![Condition {
            last_transition_time: "2025-01-01T00:00:00Z".into(),
            message: Some("applied".into()),
            observed_generation: Some(2),
            reason: "Available".into(),
            status: "True".into(),
            type_: "Ready".into(),
        }]),
        last_handled_reconcile_at: Some("token".into()),
        observed_generation: Some(2),
    });
    object
}

#[test]
fn a_fully_populated_vllm_runtime_is_valid_against_its_crd() {
    let value = serde_json::to_value(full_vllm_runtime()).unwrap();
    assert_eq!(validate(&value), Vec::<String>::new());
}

#[test]
fn a_fully_populated_vllm_runtime_sets_every_property_of_its_crd() {
    let value = serde_json::to_value(full_vllm_runtime()).unwrap();
    assert_eq!(unset_properties(&value), Vec::<String>::new());
}

#[test]
fn a_fully_populated_object_is_valid_against_its_crd() {
    let value = serde_json::to_value(full_object()).unwrap();
    assert_eq!(validate(&value), Vec::<String>::new());
}

#[test]
fn a_fully_populated_object_sets_every_property_of_its_crd() {
    let value = serde_json::to_value(full_object()).unwrap();
    assert_eq!(unset_properties(&value), Vec::<String>::new());
}

#[test]
fn both_kinds_survive_a_round_trip_through_json() {
    let vr = full_vllm_runtime();
    let back: VLLMRuntime = serde_json::from_value(serde_json::to_value(&vr).unwrap()).unwrap();
    assert_eq!(back, vr);
    let object = full_object();
    let back: Object = serde_json::from_value(serde_json::to_value(&object).unwrap()).unwrap();
    assert_eq!(back, object);
}

#[test]
fn the_constants_name_a_crd_in_tests_data() {
    assert!(schema_for(VLLMRuntime::API_VERSION, VLLMRuntime::KIND).is_some());
    assert!(schema_for(Object::<Value>::API_VERSION, Object::<Value>::KIND).is_some());
}

#[test]
fn the_validator_reports_each_problem_with_its_path() {
    let mut value = serde_json::to_value(full_vllm_runtime()).unwrap();
    let spec = &mut value["spec"];
    spec["vllmConfig"]["enableChunkedPrefil"] = json!(true);
    spec["deploymentConfig"]["replicas"] = json!("2");
    spec["deploymentConfig"]["resources"]["gpu"] = json!(1);
    spec["deploymentConfig"]["deploymentStrategy"] = json!("BlueGreen");
    spec["deploymentConfig"]["toleration"][0]["tolerationSecond"] = json!(1);
    spec["deploymentConfig"]["podAnnotations"]["team"] = json!(true);
    spec["autoscalingConfig"]["maxReplicas"] = json!(0);
    spec["model"]["maxModelLen"] = json!(1u64 << 32);
    spec["model"]["dtype"] = Value::Null;
    spec["model"].as_object_mut().unwrap().remove("modelURL");
    assert_sorted_eq(
        validate(&value),
        &[
            "spec.autoscalingConfig.maxReplicas: 0 is less than the minimum 1",
            "spec.deploymentConfig.deploymentStrategy: \"BlueGreen\" is not one of \
             [\"RollingUpdate\", \"Recreate\"]",
            "spec.deploymentConfig.podAnnotations.team: expected string, got boolean",
            "spec.deploymentConfig.replicas: expected integer, got string",
            "spec.deploymentConfig.resources.gpu: expected string, got integer",
            "spec.deploymentConfig.toleration[0].tolerationSecond: unknown field \
             (the API server would prune it)",
            "spec.model.modelURL: required field is missing",
            "spec.model.dtype: null is not allowed",
            "spec.model.maxModelLen: 4294967296 is out of range for int32",
            "spec.vllmConfig.enableChunkedPrefil: unknown field (the API server would prune it)",
        ],
    );
}

#[test]
fn the_validator_checks_a_wrapped_manifest_against_its_own_crd() {
    let mut value = serde_json::to_value(full_object()).unwrap();
    let manifest = &mut value["spec"]["forProvider"]["manifest"];
    manifest["spec"]["vllmConfig"]["tensorParallelSize"] = json!("4");
    value["spec"]["readiness"]["policy"] = json!("Eventually");
    value["spec"]["bogus"] = json!({});
    assert_sorted_eq(
        validate(&value),
        &[
            "spec.bogus: unknown field (the API server would prune it)",
            "spec.forProvider.manifest.spec.vllmConfig.tensorParallelSize: \
             expected integer, got string",
            "spec.readiness.policy: \"Eventually\" is not one of [\"SuccessfulCreate\", \
             \"DeriveFromObject\", \"AllTrue\", \"DeriveFromCelQuery\"]",
        ],
    );
}

#[test]
fn an_embedded_manifest_needs_api_version_and_kind() {
    let object = Object::new("x", ObjectSpec::for_manifest(json!({"metadata": {}})));
    assert_eq!(
        validate(&serde_json::to_value(object).unwrap()),
        vec!["spec.forProvider.manifest: an embedded resource needs apiVersion and kind"]
    );
}

#[test]
fn a_manifest_without_a_crd_is_reported_not_passed() {
    let problems = validate(&json!({"apiVersion": "example.org/v1", "kind": "Widget"}));
    assert_eq!(
        problems,
        vec!["<root>: no CRD in tests/data/crds for example.org/v1 Widget"]
    );
}

#[test]
fn int_or_string_accepts_both_and_nothing_else() {
    let schema = json!({
        "type": "object",
        "properties": {"port": {"x-kubernetes-int-or-string": true}}
    });
    assert!(validate_against(&schema, &json!({"port": 80})).is_empty());
    assert!(validate_against(&schema, &json!({"port": "http"})).is_empty());
    assert_eq!(
        validate_against(&schema, &json!({"port": true})),
        vec!["port: expected integer or string, got boolean"]
    );
}

#[test]
fn unset_properties_names_what_a_value_leaves_out() {
    let mut value = serde_json::to_value(full_vllm_runtime()).unwrap();
    value["spec"]["deploymentConfig"]["toleration"][0]
        .as_object_mut()
        .unwrap()
        .remove("tolerationSeconds");
    value["spec"]
        .as_object_mut()
        .unwrap()
        .remove("storageConfig");
    let unset = unset_properties(&value);
    assert!(unset.contains(&"spec.deploymentConfig.toleration[].tolerationSeconds".to_owned()));
    assert!(unset.contains(&"spec.storageConfig".to_owned()));
    assert!(unset.contains(&"spec.storageConfig.accessMode".to_owned()));
    assert_eq!(unset.len(), 8, "{unset:#?}");
}

/// A LeaderWorkerSet with every field of its own (status included); the
/// pod templates are Kubernetes' PodTemplateSpec, checked by the round trip
/// of `support::manifests`.
fn full_leader_worker_set() -> LeaderWorkerSet {
    use k8s_openapi::api::apps::v1::StatefulSetPersistentVolumeClaimRetentionPolicy;
    use k8s_openapi::api::core::v1::{
        Container, PersistentVolumeClaim, PersistentVolumeClaimSpec, PodSpec, PodTemplateSpec,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        Condition as MetaCondition, ObjectMeta, Time,
    };
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let pod = |name: &str| PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(BTreeMap::from([("role".into(), name.into())])),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: name.into(),
                image: Some("docker.io/vllm/vllm-openai:v0.19.0".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
    };
    LeaderWorkerSet {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("llama-405b".into()),
            namespace: Some("team-a".into()),
            ..Default::default()
        },
        spec: LeaderWorkerSetSpec {
            replicas: Some(2),
            leader_worker_template: LeaderWorkerTemplate {
                size: Some(2),
                restart_policy: Some("RecreateGroupOnPodRestart".into()),
                leader_template: Some(pod("leader")),
                worker_template: pod("worker"),
                sub_group_policy: Some(SubGroupPolicy {
                    sub_group_policy_type: Some("LeaderWorker".into()),
                    sub_group_size: Some(2),
                }),
                volume_claim_templates: Some(vec![PersistentVolumeClaim {
                    metadata: ObjectMeta {
                        name: Some("weights".into()),
                        ..Default::default()
                    },
                    spec: Some(PersistentVolumeClaimSpec {
                        access_modes: Some(vec!["ReadWriteOnce".into()]),
                        ..Default::default()
                    }),
                    status: None,
                }]),
                persistent_volume_claim_retention_policy: Some(
                    StatefulSetPersistentVolumeClaimRetentionPolicy {
                        when_deleted: Some("Delete".into()),
                        when_scaled: Some("Retain".into()),
                    },
                ),
            },
            rollout_strategy: Some(RolloutStrategy {
                r#type: Some("RollingUpdate".into()),
                rolling_update_configuration: Some(RollingUpdateConfiguration {
                    max_surge: Some(IntOrString::Int(1)),
                    max_unavailable: Some(IntOrString::String("25%".into())),
                    partition: Some(0),
                }),
            }),
            startup_policy: Some("LeaderReady".into()),
            network_config: Some(NetworkConfig {
                subdomain_policy: "UniquePerReplica".into(),
            }),
        },
        status: Some(LeaderWorkerSetStatus {
            conditions: Some(vec![MetaCondition {
                last_transition_time: Time(Default::default()),
                message: "all groups are ready".into(),
                observed_generation: Some(1),
                reason: "AllGroupsReady".into(),
                status: "True".into(),
                type_: "Available".into(),
            }]),
            hpa_pod_selector: Some("leaderworkerset.sigs.k8s.io/name=llama-405b".into()),
            observed_generation: Some(1),
            ready_replicas: Some(2),
            replicas: Some(2),
            updated_replicas: Some(2),
        }),
        ..Default::default()
    }
}

#[test]
fn a_fully_populated_leader_worker_set_is_valid_against_its_crd() {
    let value = serde_json::to_value(full_leader_worker_set()).unwrap();
    assert_eq!(validate(&value), Vec::<String>::new());
    assert_eq!(
        support::manifests::validate_composed(&value),
        Vec::<String>::new()
    );
}

#[test]
fn a_fully_populated_leader_worker_set_sets_every_property_of_its_own() {
    // Inside the pod and claim templates the CRD repeats Kubernetes' own
    // schemas, which k8s-openapi's types carry; every other property is set.
    let value = serde_json::to_value(full_leader_worker_set()).unwrap();
    let unset: Vec<String> = unset_properties(&value)
        .into_iter()
        .filter(|p| {
            !p.starts_with("spec.leaderWorkerTemplate.leaderTemplate.")
                && !p.starts_with("spec.leaderWorkerTemplate.workerTemplate.")
                && !p.starts_with("spec.leaderWorkerTemplate.volumeClaimTemplates[].")
        })
        .collect();
    assert_eq!(unset, Vec::<String>::new());
}

#[test]
fn the_leader_worker_set_crd_is_the_shared_reference() {
    assert!(schema_for(LeaderWorkerSet::API_VERSION, LeaderWorkerSet::KIND).is_some());
    let ours = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml"
    ))
    .unwrap();
    let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/reference/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml");
    // Outside this workspace (a plain checkout) there is nothing to compare with.
    if let Ok(shared) = std::fs::read(shared) {
        assert!(
            ours == shared,
            "tests/data/crds has another LeaderWorkerSet CRD than ../shared/reference/crds"
        );
    }
}

#[test]
fn the_validator_catches_leader_worker_set_mistakes() {
    let mut value = serde_json::to_value(full_leader_worker_set()).unwrap();
    value["spec"]["leaderWorkerTemplate"]["restartPolicy"] = json!("Always");
    value["spec"]["leaderWorkerTemplate"]["groupSize"] = json!(2);
    value["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["imag"] =
        json!("x");
    let problems = support::manifests::validate_composed(&value);
    assert!(
        problems.contains(
            &"spec.leaderWorkerTemplate.groupSize: unknown field (the API server would prune it)"
                .to_string()
        ),
        "{problems:#?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p
                .starts_with("spec.leaderWorkerTemplate.restartPolicy: \"Always\" is not one of")),
        "{problems:#?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("containers[0].imag")),
        "{problems:#?}"
    );
}
