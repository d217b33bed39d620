//! Realistic `RunFunctionRequest`s for the benchmarks.
//!
//! A reconcile carries every observed composed resource as the API server
//! returns it: labels, annotations, owner references, status and, above all,
//! `metadata.managedFields`, which is often half of an object's bytes. The
//! generators here build such objects (Deployments, ConfigMaps and
//! provider-kubernetes Objects of about 5-10 KB each when encoded), so that
//! measurements see the request sizes Crossplane really sends.
//!
//! Compiled into the benchmarks with `#[path]`. It depends only on the
//! library and serde_json, and everything in it is deterministic.
#![allow(dead_code)]

use std::collections::BTreeMap;

use function_inference::protocol::fnv1;
use function_inference::protocol::resource::json_to_struct;
use serde_json::{Value, json};

/// The composition-resource-name annotation Crossplane sets.
pub const RESOURCE_NAME: &str = "crossplane.io/composition-resource-name";

/// A request as Crossplane sends it: the tag, every capability, the observed
/// XR and composed resources, the desired state of earlier steps, the input.
pub fn request(
    tag: &str,
    composite: &Value,
    observed: &BTreeMap<String, Value>,
    desired: &BTreeMap<String, Value>,
    input: Option<&Value>,
) -> fnv1::RunFunctionRequest {
    fnv1::RunFunctionRequest {
        meta: Some(fnv1::RequestMeta {
            tag: tag.into(),
            capabilities: (1..=5).collect(),
        }),
        observed: Some(fnv1::State {
            composite: Some(resource(composite)),
            resources: observed
                .iter()
                .map(|(k, v)| (k.clone(), resource(v)))
                .collect(),
        }),
        desired: Some(fnv1::State {
            composite: None,
            resources: desired
                .iter()
                .map(|(k, v)| (k.clone(), resource(v)))
                .collect(),
        }),
        input: input.and_then(Value::as_object).map(json_to_struct),
        ..Default::default()
    }
}

fn resource(v: &Value) -> fnv1::Resource {
    fnv1::Resource {
        resource: v.as_object().map(json_to_struct),
        ..Default::default()
    }
}

/// An LLMInference XR as Crossplane observes it after a few reconciles:
/// spec, managedFields from kubectl and Crossplane, and the status the
/// function wrote before (so no warning is new).
pub fn llm_inference_xr(name: &str, remote: bool) -> Value {
    let mut spec = json!({
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "gpuType": "L4",
        "ingressHost": format!("{name}.example.com"),
        "hfTokenSecretRef": {"name": "hf-token"},
        "crossplane": {
            "compositionRef": {"name": "llminference"},
            "compositionRevisionRef": {"name": "llminference-8f2b1c7"},
            "compositionUpdatePolicy": "Automatic",
            "resourceRefs": [
                {"apiVersion": "production-stack.vllm.ai/v1alpha1", "kind": "VLLMRuntime", "name": name},
                {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": name},
            ],
        },
    });
    if remote {
        spec["providerConfigName"] = json!("gpu-cluster");
        spec["targetNamespace"] = json!("inference");
    }
    json!({
        "apiVersion": "infer.dev/v1alpha1",
        "kind": "LLMInference",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": uid(name, 0),
            "resourceVersion": "48213",
            "generation": 3,
            "creationTimestamp": "2026-11-20T09:12:44Z",
            "labels": {"team": "a", "app.kubernetes.io/part-of": "chat"},
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": format!(
                    "{{\"apiVersion\":\"infer.dev/v1alpha1\",\"kind\":\"LLMInference\",\"metadata\":{{\"name\":\"{name}\",\"namespace\":\"team-a\"}},\"spec\":{{\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"gpuType\":\"L4\"}}}}"
                ),
            },
            "finalizers": ["composite.apiextensions.crossplane.io"],
            "managedFields": [
                managed_field("kubectl-client-side-apply", "Update", "", &["spec.model", "spec.gpuType", "spec.ingressHost", "spec.hfTokenSecretRef.name"]),
                managed_field("apiextensions.crossplane.io/composite", "Apply", "", &["spec.crossplane.compositionRef.name", "spec.crossplane.resourceRefs"]),
                managed_field("apiextensions.crossplane.io/composite", "Apply", "status", &["status.model", "status.plan", "status.gpuType", "status.gpuCount", "status.endpoint", "status.ready", "status.conditions"]),
            ],
        },
        "spec": spec,
        "status": {
            "model": "meta-llama/Llama-3.1-8B-Instruct",
            "gpuType": "L4",
            "gpuCount": 1,
            "ready": "True",
            "endpoint": {"internal": format!("http://{name}.team-a.svc.cluster.local:80")},
            "conditions": [
                condition("Synced", "ReconcileSuccess"),
                condition("Ready", "Available"),
                condition("Sized", "Sized"),
                condition("Serving", "Available"),
            ],
        },
    })
}

/// `n` observed composed resources for an XR of `xr_kind`: first the ones
/// its composer reads (so readiness is computed from a realistic object),
/// then a mix of Deployments, ConfigMaps and provider-kubernetes Objects.
pub fn observed_resources(xr_kind: &str, xr_name: &str, n: usize) -> BTreeMap<String, Value> {
    let read: &[&str] = match xr_kind {
        "LLMInference" => &["vllm_runtime", "ingress"],
        "AgentPool" => &["deployment", "service", "configmap"],
        _ => &[],
    };
    let mut out = BTreeMap::new();
    for i in 0..n {
        let (name, object) = match read.get(i) {
            Some(&"vllm_runtime") => ("vllm_runtime".to_string(), vllm_runtime(xr_name, i)),
            Some(&"ingress") => ("ingress".to_string(), object_wrapper("ingress", xr_name, i)),
            Some(&"deployment") => (
                "deployment".to_string(),
                deployment("deployment", xr_name, i),
            ),
            Some(&other) => (other.to_string(), configmap(other, xr_name, i)),
            None => {
                let name = format!("extra-{i:03}");
                let object = match i % 3 {
                    0 => deployment(&name, xr_name, i),
                    1 => configmap(&name, xr_name, i),
                    _ => object_wrapper(&name, xr_name, i),
                };
                (name, object)
            }
        };
        out.insert(name, object);
    }
    out
}

fn uid(name: &str, i: usize) -> String {
    let h = name.bytes().fold(i as u64 * 7919 + 17, |h, b| {
        h.wrapping_mul(31) ^ u64::from(b)
    });
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        h as u32,
        (h >> 32) as u16,
        (h >> 48) as u16 & 0xfff,
        (h >> 8) as u16 & 0xfff,
        h & 0xffff_ffff_ffff
    )
}

fn condition(type_: &str, reason: &str) -> Value {
    json!({
        "type": type_,
        "status": "True",
        "reason": reason,
        "lastTransitionTime": "2026-11-20T09:14:02Z",
        "observedGeneration": 3,
    })
}

/// A managedFields entry whose fieldsV1 lists `paths` (dotted), the way the
/// API server records them: `{"f:spec": {"f:model": {}}}`.
fn managed_field(manager: &str, operation: &str, subresource: &str, paths: &[&str]) -> Value {
    let mut fields = serde_json::Map::new();
    for path in paths {
        let mut at = &mut fields;
        for part in path.split('.') {
            at = at
                .entry(format!("f:{part}"))
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("an object");
        }
        at.insert(".".into(), json!({}));
    }
    let mut entry = json!({
        "manager": manager,
        "operation": operation,
        "apiVersion": "v1",
        "time": "2026-11-20T09:14:02Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": Value::Object(fields),
    });
    if !subresource.is_empty() {
        entry["subresource"] = json!(subresource);
    }
    entry
}

fn metadata(name: &str, xr_name: &str, i: usize, resource_name: &str, paths: &[&str]) -> Value {
    json!({
        "name": format!("{xr_name}-{name}"),
        "namespace": "team-a",
        "uid": uid(name, i),
        "resourceVersion": format!("{}", 51_000 + i),
        "generation": 2,
        "creationTimestamp": "2026-11-20T09:12:50Z",
        "labels": {
            "crossplane.io/composite": xr_name,
            "app.kubernetes.io/name": name,
            "app.kubernetes.io/managed-by": "crossplane",
        },
        "annotations": {RESOURCE_NAME: resource_name},
        "ownerReferences": [{
            "apiVersion": "infer.dev/v1alpha1",
            "kind": "LLMInference",
            "name": xr_name,
            "uid": uid(xr_name, 0),
            "controller": true,
            "blockOwnerDeletion": true,
        }],
        "managedFields": [
            managed_field("apiextensions.crossplane.io/composed", "Apply", "", paths),
            managed_field("kube-controller-manager", "Update", "status", &["status.observedGeneration", "status.replicas", "status.readyReplicas", "status.availableReplicas", "status.conditions"]),
        ],
    })
}

fn container(name: &str, i: usize) -> Value {
    json!({
        "name": name,
        "image": format!("registry.example.com/platform/{name}:v1.{i}.0"),
        "imagePullPolicy": "IfNotPresent",
        "args": ["--port=8080", "--log-level=info", format!("--shard={i}")],
        "env": (0..6).map(|e| json!({"name": format!("SETTING_{e}"), "value": format!("value-{i}-{e}")})).collect::<Vec<_>>(),
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
        "readinessProbe": {"httpGet": {"path": "/health", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    })
}

const DEPLOYMENT_PATHS: &[&str] = &[
    "metadata.labels.crossplane.io/composite",
    "metadata.annotations.crossplane.io/composition-resource-name",
    "metadata.ownerReferences",
    "spec.replicas",
    "spec.selector.matchLabels.app",
    "spec.template.metadata.labels.app",
    "spec.template.spec.containers.k:{\"name\":\"app\"}.image",
    "spec.template.spec.containers.k:{\"name\":\"app\"}.args",
    "spec.template.spec.containers.k:{\"name\":\"app\"}.env",
    "spec.template.spec.containers.k:{\"name\":\"app\"}.ports",
    "spec.template.spec.containers.k:{\"name\":\"app\"}.resources.requests.cpu",
    "spec.template.spec.containers.k:{\"name\":\"app\"}.resources.requests.memory",
    "spec.template.spec.containers.k:{\"name\":\"app\"}.readinessProbe.httpGet.path",
    "spec.template.spec.containers.k:{\"name\":\"sidecar\"}.image",
];

/// An observed Deployment (about 6 KB encoded).
pub fn deployment(name: &str, xr_name: &str, i: usize) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(name, xr_name, i, name, DEPLOYMENT_PATHS),
        "spec": {
            "replicas": 2,
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": name}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [container("app", i), container("sidecar", i)],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "schedulerName": "default-scheduler",
                    "securityContext": {},
                },
            },
        },
        "status": {
            "observedGeneration": 2,
            "replicas": 2,
            "updatedReplicas": 2,
            "readyReplicas": 2,
            "availableReplicas": 2,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability.", "lastUpdateTime": "2026-11-20T09:14:02Z", "lastTransitionTime": "2026-11-20T09:14:02Z"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": format!("ReplicaSet \"{name}-6d4cf56db6\" has successfully progressed."), "lastUpdateTime": "2026-11-20T09:14:02Z", "lastTransitionTime": "2026-11-20T09:12:50Z"},
            ],
        },
    })
}

/// An observed ConfigMap with a few KB of configuration (about 5 KB encoded).
pub fn configmap(name: &str, xr_name: &str, i: usize) -> Value {
    let data: serde_json::Map<String, Value> = (0..8)
        .map(|k| {
            let body: String = (0..12)
                .map(|l| format!("  setting_{k}_{l}: \"value {i} {k} {l}\"\n"))
                .collect();
            (
                format!("config-{k}.yaml"),
                Value::String(format!("section_{k}:\n{body}")),
            )
        })
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(name, xr_name, i, name, &["metadata.labels.crossplane.io/composite", "metadata.ownerReferences", "data.config-0.yaml", "data.config-1.yaml", "data.config-2.yaml", "data.config-3.yaml"]),
        "data": Value::Object(data),
    })
}

/// An observed provider-kubernetes Object wrapping a Deployment: the manifest
/// twice (desired and `status.atProvider`), as provider-kubernetes reports it
/// (about 10 KB encoded).
pub fn object_wrapper(name: &str, xr_name: &str, i: usize) -> Value {
    let inner = deployment(name, xr_name, i);
    json!({
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": metadata(name, xr_name, i, name, &["metadata.ownerReferences", "spec.forProvider.manifest", "spec.providerConfigRef.name", "spec.readiness.policy"]),
        "spec": {
            "forProvider": {"manifest": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "inference"}, "spec": inner["spec"].clone()}},
            "providerConfigRef": {"kind": "ProviderConfig", "name": "gpu-cluster"},
            "readiness": {"policy": "DeriveFromObject"},
            "managementPolicies": ["*"],
        },
        "status": {
            "atProvider": {"manifest": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "inference", "uid": uid(name, i + 1), "resourceVersion": "7712"}, "status": inner["status"].clone()}},
            "conditions": [condition("Ready", "Available"), condition("Synced", "ReconcileSuccess")],
        },
    })
}

/// The VLLMRuntime the LLMInference composer reads back for readiness.
pub fn vllm_runtime(xr_name: &str, i: usize) -> Value {
    json!({
        "apiVersion": "production-stack.vllm.ai/v1alpha1",
        "kind": "VLLMRuntime",
        "metadata": metadata("vllm_runtime", xr_name, i, "vllm_runtime", &["metadata.ownerReferences", "spec.model.modelURL", "spec.model.maxModelLen", "spec.vllmConfig.tensorParallelSize", "spec.deploymentConfig.replicas", "spec.deploymentConfig.resources.gpu"]),
        "spec": {
            "model": {"modelURL": "meta-llama/Llama-3.1-8B-Instruct", "maxModelLen": 32768, "dtype": "bfloat16"},
            "vllmConfig": {"tensorParallelSize": 1, "gpuMemoryUtilization": "0.9", "port": 8000, "v1": true},
            "deploymentConfig": {"replicas": 1, "resources": {"cpu": "4", "memory": "24Gi", "gpu": 1}, "image": {"registry": "docker.io", "name": "lmcache/vllm-openai:v0.3.13", "pullPolicy": "IfNotPresent"}},
        },
        "status": {"availableReplicas": 1, "lastUpdated": "2026-11-20T09:20:11Z", "modelStatus": "Ready"},
    })
}
