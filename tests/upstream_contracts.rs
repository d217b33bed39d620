//! What the components that consume our manifests need, read from their
//! source (../shared/reference/INTEGRATION.md has file and line): the vLLM
//! production-stack operator dereferences the runtime's node affinity on
//! every reconcile, names its Service after the runtime, copies the runtime's
//! labels into an immutable Deployment selector, runs a CUDA-only command
//! under the nvidia RuntimeClass and gives the pod a fixed 2,120 s to start;
//! Kubernetes refuses names and label values that do not fit their kind.
//! Each case would fail against the manifests the function composed before.

mod support;

use function_inference::protocol::fnv1;
use function_inference::protocol::resource::struct_to_json;
use serde_json::{Value, json};
use support::fixtures::*;
use support::models::with_model;
use support::*;

fn with_input(mut req: fnv1::RunFunctionRequest, fields: Value) -> fnv1::RunFunctionRequest {
    req.input = Some(input(fields));
    req
}

/// The manifest composed under `name`, unwrapped from its Object if wrapped.
fn manifest(rsp: &fnv1::RunFunctionResponse, name: &str) -> Value {
    let r = rsp
        .desired
        .as_ref()
        .unwrap()
        .resources
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", rsp.results));
    let v = Value::Object(struct_to_json(r.resource.as_ref().unwrap()));
    match v["kind"].as_str() {
        Some("Object") => v["spec"]["forProvider"]["manifest"].clone(),
        _ => v,
    }
}

fn fatal_of(rsp: &fnv1::RunFunctionResponse) -> Option<(&str, &str)> {
    rsp.results
        .iter()
        .find(|r| r.severity == fnv1::Severity::Fatal as i32)
        .map(|r| (r.reason.as_deref().unwrap_or_default(), r.message.as_str()))
}

fn linux_term() -> Value {
    json!([{"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}])
}

#[test]
fn every_runtime_carries_a_node_selector_term() {
    // Without the platform's gpuNodeSelector the runtime still names where it
    // may run (Linux), so the operator's controller finds an affinity.
    let rsp = call(&request(
        "t",
        LlmInference::new("qwen")
            .spec(json!({"model": "Qwen/Qwen2.5-1.5B-Instruct"}))
            .build(),
    ));
    let runtime = manifest(&rsp, "vllm_runtime");
    assert_eq!(
        runtime["spec"]["deploymentConfig"]["nodeSelectorTerms"],
        linux_term()
    );
    // Wrapped for a remote cluster: the same.
    let rsp = call(&request(
        "t",
        LlmInference::new("qwen")
            .spec(json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "providerConfigName": "incluster"}))
            .build(),
    ));
    assert_eq!(
        manifest(&rsp, "vllm_runtime")["spec"]["deploymentConfig"]["nodeSelectorTerms"],
        linux_term()
    );
    // With it: the GPU's product label, GKE accelerator or EKS GPU name on
    // whole GPUs, ORed.
    let rsp = call(&with_input(
        request(
            "t",
            LlmInference::new("llama")
                .spec(json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "H100-80GB"}))
                .build(),
        ),
        json!({"defaults": {"gpuNodeSelector": true}}),
    ));
    assert_eq!(
        manifest(&rsp, "vllm_runtime")["spec"]["deploymentConfig"]["nodeSelectorTerms"],
        json!([
            {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]}]},
            {"matchExpressions": [
                {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": ["nvidia-h100-80gb", "nvidia-h100-mega-80gb"]},
                {"key": "cloud.google.com/gke-gpu-partition-size", "operator": "DoesNotExist"},
                {"key": "cloud.google.com/gke-gpu-sharing-strategy", "operator": "DoesNotExist"},
            ]},
            {"matchExpressions": [
                {"key": "eks.amazonaws.com/instance-gpu-name", "operator": "In", "values": ["h100"]},
                {"key": "nvidia.com/gpu.product", "operator": "DoesNotExist"},
            ]},
            {"matchExpressions": [
                {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["h100"]},
                {"key": "nvidia.com/gpu.product", "operator": "DoesNotExist"},
            ]},
            {"matchExpressions": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["Standard_ND96isr_H100_v5"]},
                {"key": "nvidia.com/gpu.product", "operator": "DoesNotExist"},
            ]},
        ])
    );
    // An AgentPool's model server too.
    let rsp = call(&with_model(
        request("t", AgentPool::one_agent("llama-8b").build()),
        vec![
            Model::new("llama-8b")
                .weights_uri("hf://meta-llama/Llama-3.1-8B-Instruct")
                .build(),
        ],
    ));
    assert_eq!(
        manifest(&rsp, "model_server")["spec"]["deploymentConfig"]["nodeSelectorTerms"],
        linux_term()
    );
}

fn is_dns1035_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && !s.ends_with('-')
}

#[test]
fn xr_names_that_are_not_service_names_give_valid_runtime_names() {
    let long = format!("llama-{}", "x".repeat(57));
    assert_eq!(long.len(), 63);
    for name in ["70b-llama", "llama.v3", long.as_str(), "vllm"] {
        let spec = json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "ingressHost": "q.example.com"});
        let rsp = call(&request(
            "t",
            LlmInference::new(name).spec(spec.clone()).build(),
        ));
        assert_eq!(fatal_of(&rsp), None, "{name}");
        let runtime = manifest(&rsp, "vllm_runtime");
        let runtime_name = runtime["metadata"]["name"].as_str().unwrap().to_string();
        assert!(is_dns1035_label(&runtime_name), "{name}: {runtime_name}");
        assert_ne!(runtime_name, "vllm");
        // The Ingress and the endpoint reach the Service the operator names
        // after the runtime.
        let ingress = manifest(&rsp, "ingress");
        assert_eq!(
            ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"],
            json!(runtime_name),
            "{name}"
        );
        assert_eq!(
            desired_status(&rsp)["endpoint"]["internal"],
            json!(format!("http://{runtime_name}.team-a.svc.cluster.local/v1"))
        );
        // Stable across reconciles.
        let again = call(&request("t", LlmInference::new(name).spec(spec).build()));
        assert_eq!(
            manifest(&again, "vllm_runtime")["metadata"]["name"],
            json!(runtime_name)
        );
    }
    // Names that are already valid stay as they were.
    let rsp = call(&request(
        "t",
        LlmInference::new("qwen")
            .spec(json!({"model": "Qwen/Qwen2.5-1.5B-Instruct"}))
            .build(),
    ));
    assert_eq!(
        manifest(&rsp, "vllm_runtime")["metadata"]["name"],
        json!("qwen")
    );
    // Two XRs whose names differ only where the rewrite folds them differ
    // (both names valid: the API server admits no name ending in a dot).
    let a = call(&request(
        "t",
        LlmInference::new("70b.llama")
            .spec(json!({"model": "Qwen/Qwen2.5-1.5B-Instruct"}))
            .build(),
    ));
    let b = call(&request(
        "t",
        LlmInference::new("70b-llama")
            .spec(json!({"model": "Qwen/Qwen2.5-1.5B-Instruct"}))
            .build(),
    ));
    assert_ne!(
        manifest(&a, "vllm_runtime")["metadata"]["name"],
        manifest(&b, "vllm_runtime")["metadata"]["name"]
    );
}

#[test]
fn agent_pool_names_and_label_values_fit_their_kinds() {
    // The longest XR name Crossplane admits, with a dot no DNS-1035 label may hold.
    let name = format!("a.{}", "b".repeat(61));
    let mut xr = AgentPool::one_agent("llama-8b").build();
    xr["metadata"]["name"] = json!(name);
    xr["spec"]["port"] = json!(8080);
    let rsp = call(&with_model(
        request("t", xr),
        vec![
            Model::new("llama-8b")
                .weights_uri("hf://meta-llama/Llama-3.1-8B-Instruct")
                .build(),
        ],
    ));
    assert_eq!(fatal_of(&rsp), None);
    let server = manifest(&rsp, "model_server");
    assert!(is_dns1035_label(
        server["metadata"]["name"].as_str().unwrap()
    ));
    let service = manifest(&rsp, "agent_service");
    assert!(is_dns1035_label(
        service["metadata"]["name"].as_str().unwrap()
    ));
    for resource in rsp.desired.as_ref().unwrap().resources.keys() {
        let m = manifest(&rsp, resource);
        for (key, value) in m["metadata"]["labels"].as_object().into_iter().flatten() {
            let v = value.as_str().unwrap();
            assert!(
                v.len() <= 63,
                "{resource} label {key} is {} characters",
                v.len()
            );
        }
    }
}

#[test]
fn a_changed_model_ref_keeps_the_model_servers_labels() {
    // The operator copies these labels into the Deployment's selector, which
    // cannot change: a label naming the Model would fail every later update.
    let first = call(&with_model(
        request("t", AgentPool::one_agent("llama-8b").build()),
        vec![
            Model::new("llama-8b")
                .weights_uri("hf://meta-llama/Llama-3.1-8B-Instruct")
                .build(),
        ],
    ));
    let second = call(&with_model(
        request("t", AgentPool::one_agent("qwen-7b").build()),
        vec![
            Model::new("qwen-7b")
                .weights_uri("hf://Qwen/Qwen2.5-7B-Instruct")
                .build(),
        ],
    ));
    let labels = |rsp: &fnv1::RunFunctionResponse| {
        manifest(rsp, "model_server")["metadata"]["labels"].clone()
    };
    assert_eq!(labels(&first), labels(&second));
    assert_eq!(
        labels(&first),
        json!({
            "app.kubernetes.io/component": "model-server",
            "app.kubernetes.io/instance": "reviewers",
            "app.kubernetes.io/managed-by": "function-inference",
            "app.kubernetes.io/name": "agentpool",
        })
    );
    // The model's runtime did change.
    assert_ne!(
        manifest(&first, "model_server")["spec"]["model"],
        manifest(&second, "model_server")["spec"]["model"]
    );
}

#[test]
fn an_amd_gpu_is_refused_with_what_would_work() {
    let rsp = call(&request(
        "t",
        LlmInference::new("llama")
            .spec(json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "MI300X"}))
            .build(),
    ));
    assert_eq!(
        fatal_of(&rsp),
        Some((
            "UnsupportedGpu",
            "spec.gpuType: MI300X is an AMD GPU, and the vLLM production-stack operator runs /opt/venv/bin/vllm from a \
             CUDA image with the nvidia RuntimeClass, so a VLLMRuntime cannot run on it; choose an NVIDIA GPU type \
             (for example H100-80GB, H200 or L40S); or set spec.runtime to deployment (or auto), which runs the ROCm \
             build of vLLM"
        ))
    );
    assert!(rsp.desired.as_ref().unwrap().resources.is_empty());
    // The platform's default GPU type is named as such.
    let rsp = call(&with_input(
        request(
            "t",
            LlmInference::new("llama")
                .spec(json!({"model": "meta-llama/Llama-3.1-8B-Instruct"}))
                .build(),
        ),
        json!({"defaults": {"gpuType": "MI325X"}}),
    ));
    assert!(
        fatal_of(&rsp)
            .unwrap()
            .1
            .starts_with("input.defaults.gpuType: MI325X is an AMD GPU")
    );
    // A Model lists it, as a Deployment serves it, and says that the
    // platform's default runtime does not.
    let rsp = call(&with_input(
        request(
            "t",
            Model::new("llama-8b")
                .weights_uri("hf://meta-llama/Llama-3.1-8B-Instruct")
                .build(),
        ),
        json!({"defaults": {"offeredGpuTypes": ["L4", "MI300X"]}}),
    ));
    let status = desired_status(&rsp);
    assert_eq!(status["phase"], "Ready");
    assert_eq!(status["serveableOn"], json!("L4,MI300X"));
    assert_eq!(
        response_condition(&rsp, "Servable").unwrap().message,
        Some(
            "servable on L4, MI300X; the platform's default runtime (input.defaults.runtime) runs only on \
             NVIDIA, not on MI300X: XRs that serve it there set spec.runtime to deployment or auto"
                .into()
        )
    );
}

#[test]
fn weights_that_cannot_load_within_the_probe_get_a_volume() {
    // Llama-3.1-70B: 131 GiB of weights, a 2,940 s load estimate against the
    // operator's fixed 2,120 s probe. Without a volume the pod would restart
    // and download again for ever.
    let spec = json!({"model": "meta-llama/Llama-3.1-70B-Instruct", "gpuType": "H100-80GB"});
    let rsp = call(&request(
        "t",
        LlmInference::new("llama-70b").spec(spec.clone()).build(),
    ));
    assert_eq!(fatal_of(&rsp), None);
    let runtime = manifest(&rsp, "vllm_runtime");
    assert_eq!(
        runtime["spec"]["storageConfig"],
        json!({"accessMode": "ReadWriteOnce", "enabled": true, "mountPath": "/data", "size": "158Gi"})
    );
    assert_eq!(
        runtime["spec"]["deploymentConfig"]["deploymentStrategy"],
        json!("Recreate")
    );
    assert!(
        runtime["spec"]["vllmConfig"]["env"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "HF_HOME", "value": "/data/huggingface"}))
    );
    let warnings = desired_status(&rsp)["plan"]["warnings"].clone();
    assert!(
        warnings.as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("beyond the operator's fixed 2120 s startup probe: the runtime gets a weights volume")),
        "{warnings}"
    );

    // Several replicas share one volume: only a ReadWriteMany class the
    // platform names can hold it.
    let mut replicated = spec.clone();
    replicated["replicas"] = json!(2);
    let rsp = call(&request(
        "t",
        LlmInference::new("llama-70b")
            .spec(replicated.clone())
            .build(),
    ));
    let (reason, message) = fatal_of(&rsp).unwrap();
    assert_eq!(reason, "CannotStart");
    assert!(
        message
            .starts_with("spec.replicas: loading the 131.4 GiB checkpoint may take up to 2940 s"),
        "{message}"
    );
    assert!(message.contains("input.defaults.weightsCache.sharedStorageClassName"));
    let rsp = call(&with_input(
        request("t", LlmInference::new("llama-70b").spec(replicated).build()),
        json!({"defaults": {"weightsCache": {"sharedStorageClassName": "filestore-rwx"}}}),
    ));
    let runtime = manifest(&rsp, "vllm_runtime");
    assert_eq!(
        runtime["spec"]["storageConfig"]["accessMode"],
        json!("ReadWriteMany")
    );
    assert_eq!(
        runtime["spec"]["storageConfig"]["storageClassName"],
        json!("filestore-rwx")
    );

    // A model that loads in time gets no volume it did not ask for.
    let rsp = call(&request(
        "t",
        LlmInference::new("qwen")
            .spec(json!({"model": "Qwen/Qwen2.5-1.5B-Instruct"}))
            .build(),
    ));
    assert_eq!(
        manifest(&rsp, "vllm_runtime")["spec"].get("storageConfig"),
        None
    );
}

#[test]
fn a_storage_class_the_input_names_must_be_a_name() {
    let rsp = call(&with_input(
        request(
            "t",
            LlmInference::new("qwen")
                .spec(json!({"model": "Qwen/Qwen2.5-1.5B-Instruct"}))
                .build(),
        ),
        json!({"defaults": {"weightsCache": {"storageClassName": "Fast SSD"}}}),
    ));
    let (reason, message) = fatal_of(&rsp).unwrap();
    assert_eq!(reason, "InvalidInput");
    assert!(
        message.starts_with(
            "invalid step input: input.defaults.weightsCache.storageClassName is \"Fast SSD\""
        ),
        "{message}"
    );
}
