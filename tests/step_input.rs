//! The step input, refused: every malformed input is answered with a FATAL
//! result that names the field under `input.` and what would be valid, and
//! the earlier steps' desired state is kept, whatever the kind of the XR.

mod support;

use function_inference::protocol::{from_server, to_server, view};
use serde_json::json;
use support::fixtures::*;
use support::refusals::*;
use support::*;

#[test]
fn malformed_step_inputs_are_fatal_and_name_the_field_and_what_is_valid() {
    Refusals::of(LlmInference::new("bad").model(QWEN).build()).check(vec![
refusal("input apiVersion", "input.apiVersion", json!("inference.fn.crossplane.io/v1"), fatal("InvalidInput", "invalid step input: input.apiVersion is \"inference.fn.crossplane.io/v1\"; expected \"inference.fn.crossplane.io/v1beta1\"")),
refusal("input kind", "input.kind", json!("Inputs"), fatal("InvalidInput", "invalid step input: input.kind is \"Inputs\"; expected \"Input\"")),
refusal("ttl number", "input.ttl", json!(60), fatal("InvalidInput", "cannot read the step input: input.ttl: 60 is not a duration; write one like 500ms, 30s, 5m or 1h30m")),
refusal("ttl words", "input.ttl", json!("soon"), fatal("InvalidInput", "cannot read the step input: input.ttl: \"soon\" is not a duration; write one like 500ms, 30s, 5m or 1h30m")),
refusal("ttl negative", "input.ttl", json!("-5s"), fatal("InvalidInput", "invalid step input: input.ttl is negative (-5s); use a positive duration such as 60s")),
refusal("ttl zero", "input.ttl", json!("0s"), fatal("InvalidInput", "invalid step input: input.ttl must be at least 1s")),
refusal("defaults not object", "input.defaults", json!("L4"), fatal("InvalidInput", "cannot read the step input: input.defaults: the string \"L4\" is not an object")),
refusal("default gpuType unknown", "input.defaults.gpuType", json!("Z9000"), fatal("InvalidInput", "invalid step input: input.defaults.gpuType: unknown GPU type `Z9000`: known GPU types are T4, V100, V100-PCIe, V100-32GB, V100-32GB-PCIe, L4, A10G, L40S, A30, A100-40GB, A100-40GB-PCIe, A100-80GB, A100-80GB-PCIe, H100-80GB, H100-PCIe, H100-NVL, H20, H200, H200-NVL, B200, GB200, B300, GH200, RTX-PRO-6000, MI300X, MI325X")),
refusal("offeredGpuTypes empty", "input.defaults.offeredGpuTypes", json!([]), fatal("InvalidInput", "invalid step input: input.defaults.offeredGpuTypes is empty; list at least one GPU type")),
refusal("offeredGpuTypes unknown type", "input.defaults.offeredGpuTypes", json!(["L4", "Z9000"]), fatal("InvalidInput", "invalid step input: input.defaults.offeredGpuTypes[1]: unknown GPU type `Z9000`: known GPU types are T4, V100, V100-PCIe, V100-32GB, V100-32GB-PCIe, L4, A10G, L40S, A30, A100-40GB, A100-40GB-PCIe, A100-80GB, A100-80GB-PCIe, H100-80GB, H100-PCIe, H100-NVL, H20, H200, H200-NVL, B200, GB200, B300, GH200, RTX-PRO-6000, MI300X, MI325X")),
refusal("offeredGpuTypes twice", "input.defaults.offeredGpuTypes", json!(["L4", "H100-80GB", "nvidia-l4"]), fatal("InvalidInput", "invalid step input: input.defaults.offeredGpuTypes lists L4 twice (as \"L4\" and \"nvidia-l4\"); keep one")),
refusal("offeredGpuTypes string", "input.defaults.offeredGpuTypes", json!("L4"), fatal("InvalidInput", "cannot read the step input: input.defaults.offeredGpuTypes: the string \"L4\" is not a list")),
refusal("gpuPrices empty", "input.defaults.gpuPrices", json!({}), fatal("InvalidInput", "invalid step input: input.defaults.gpuPrices is empty; price the offered GPU types, or leave it out")),
refusal("gpuPrices unknown type", "input.defaults.gpuPrices", json!({"Z9000": 1}), fatal("InvalidInput", "invalid step input: input.defaults.gpuPrices: unknown GPU type `Z9000`: known GPU types are T4, V100, V100-PCIe, V100-32GB, V100-32GB-PCIe, L4, A10G, L40S, A30, A100-40GB, A100-40GB-PCIe, A100-80GB, A100-80GB-PCIe, H100-80GB, H100-PCIe, H100-NVL, H20, H200, H200-NVL, B200, GB200, B300, GH200, RTX-PRO-6000, MI300X, MI325X")),
refusal("gpuPrices negative", "input.defaults.gpuPrices", json!({"L4": -1}), fatal("InvalidInput", "invalid step input: input.defaults.gpuPrices.L4 is -1; give a positive price per GPU and hour (any currency, or relative costs such as 1 and 4.5)")),
refusal("gpuPrices too large", "input.defaults.gpuPrices", json!({"L4": 2e9}), fatal("InvalidInput", "invalid step input: input.defaults.gpuPrices.L4 is 2e9, more than the 1e9 per GPU and hour a price may be; give it in a larger unit, or as relative costs such as 1 and 4.5")),
refusal("gpuPrices words", "input.defaults.gpuPrices", json!({"L4": "cheap"}), fatal("InvalidInput", "cannot read the step input: input.defaults.gpuPrices.L4: the string \"cheap\" is not a number")),
refusal("autoscaler unknown", "input.defaults.autoscaler", json!("vpa"), fatal("InvalidInput", "cannot read the step input: input.defaults.autoscaler: \"vpa\" is not valid; use one of keda or hpa")),
refusal("autoscaler as a one-key object", "input.defaults.autoscaler", json!({"keda": null}), fatal("InvalidInput", "cannot read the step input: input.defaults.autoscaler: an object is not a string; use one of keda or hpa")),
refusal("runtime number", "input.defaults.runtime", json!(1), fatal("InvalidInput", "cannot read the step input: input.defaults.runtime: 1 is not a string; use one of vllm-runtime, deployment, leader-worker-set, auto")),
refusal("keda without Prometheus", "input.defaults.autoscaler", json!("keda"), fatal("InvalidInput", "invalid step input: input.defaults.autoscaler is keda, which needs input.defaults.prometheusAddress: the Prometheus KEDA queries for vLLM's metrics, such as http://prometheus-operated.monitoring.svc:9090")),
refusal("prometheusAddress not a URL", "input.defaults.prometheusAddress", json!("prometheus:9090"), fatal("InvalidInput", "invalid step input: input.defaults.prometheusAddress is \"prometheus:9090\"; use the URL KEDA reaches Prometheus at, such as http://prometheus-operated.monitoring.svc:9090")),
refusal("podMonitor string", "input.defaults.podMonitor", json!("yes"), fatal("InvalidInput", "cannot read the step input: input.defaults.podMonitor: the string \"yes\" is not true or false")),
refusal("image with a space", "input.defaults.image", json!({"registry": "docker.io", "name": "lmcache/vllm-openai: v0.3.13"}), fatal("InvalidInput", "invalid step input: input.defaults.image.name is \"lmcache/vllm-openai: v0.3.13\"; an image reference holds no white space (for example vllm/vllm-openai:v0.19.0)")),
refusal("image empty registry", "input.defaults.image", json!({"registry": "", "name": "x"}), fatal("InvalidInput", "invalid step input: input.defaults.image needs a non-empty registry and name")),
refusal("image the kubelet cannot pull", "input.defaults.image", json!({"registry": "https://docker.io", "name": "lmcache/vllm-openai:v0.3.13"}), fatal("InvalidInput", "invalid step input: input.defaults.image: the kubelet cannot pull \"https://docker.io/lmcache/vllm-openai:v0.3.13\" (InvalidImageName); an image reference is an optional registry host, then lower-case path parts of letters, digits, '.', '_' and '-' separated by '/', then an optional :tag or @digest (for example registry docker.io, name vllm/vllm-openai:v0.19.0)")),
refusal("gpuMemoryUtilization 2", "input.defaults.gpuMemoryUtilization", json!(2), fatal("InvalidInput", "cannot read the step input: input.defaults.gpuMemoryUtilization: 2 is out of range; use a number from 0.1 to 0.99")),
refusal("gpuMemoryUtilization 1e308", "input.defaults.gpuMemoryUtilization", json!(1e308), fatal("InvalidInput", "cannot read the step input: input.defaults.gpuMemoryUtilization: 1e+308 is out of range; use a number from 0.1 to 0.99")),
refusal("gpuMemoryUtilization NaN", "input.defaults.gpuMemoryUtilization", json!("NaN"), fatal("InvalidInput", "cannot read the step input: input.defaults.gpuMemoryUtilization: the string \"NaN\" is not a number; use a number from 0.1 to 0.99")),
refusal("gpuNodeSelector string", "input.defaults.gpuNodeSelector", json!("yes"), fatal("InvalidInput", "cannot read the step input: input.defaults.gpuNodeSelector: the string \"yes\" is not true or false")),
refusal("providerConfigKind unknown", "input.defaults.providerConfigKind", json!("Cluster"), fatal("InvalidInput", "cannot read the step input: input.defaults.providerConfigKind: \"Cluster\" is not valid; use one of ProviderConfig or ClusterProviderConfig")),
refusal("vllmVersion not a release", "input.defaults.vllmVersion", json!("latest"), fatal("InvalidInput", "invalid step input: input.defaults.vllmVersion is \"latest\"; use the vLLM release the image runs, such as 0.19.0")),
refusal("objective unknown", "input.defaults.objective", json!("cheap"), fatal("InvalidInput", "cannot read the step input: input.defaults.objective: \"cheap\" is not valid; use one of minimal, balanced, throughput")),
refusal("imagePullSecrets not a name", "input.defaults.imagePullSecrets", json!([{"name": "Registry_Creds"}]), fatal("InvalidInput", "invalid step input: input.defaults.imagePullSecrets[0].name is \"Registry_Creds\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example registry-credentials)")),
refusal("imagePullSecrets strings", "input.defaults.imagePullSecrets", json!(["registry-creds"]), fatal("InvalidInput", "cannot read the step input: input.defaults.imagePullSecrets[0]: the string \"registry-creds\" is not an object")),
refusal("toleration key", "input.defaults.modelServerTolerations", json!([{"key": "sku pool", "operator": "Exists"}]), fatal("InvalidInput", "invalid step input: input.defaults.modelServerTolerations[0].key: the key \"sku pool\" is not a valid label key; use at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit, after an optional DNS prefix and '/' (for example node.example.com/pool)")),
refusal("toleration Exists with a value", "input.defaults.modelServerTolerations", json!([{"key": "sku", "operator": "Exists", "value": "gpu"}]), fatal("InvalidInput", "invalid step input: input.defaults.modelServerTolerations[0].value is \"gpu\"; an Exists toleration matches every value of its key: drop value, or use operator Equal")),
refusal("toleration Equal without a key", "input.defaults.modelServerTolerations", json!([{"operator": "Equal", "value": "gpu"}]), fatal("InvalidInput", "invalid step input: input.defaults.modelServerTolerations[0].key is empty; an Equal toleration needs the taint's key (an empty key with operator Exists tolerates every taint)")),
refusal("toleration value", "input.defaults.modelServerTolerations", json!([{"key": "sku", "value": "gpu pool"}]), fatal("InvalidInput", "invalid step input: input.defaults.modelServerTolerations[0].value is \"gpu pool\"; a taint's value is empty or at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit")),
refusal("toleration operator", "input.defaults.modelServerTolerations", json!([{"key": "sku", "operator": "In", "value": "gpu"}]), fatal("InvalidInput", "invalid step input: input.defaults.modelServerTolerations[0].operator is \"In\"; use Exists or Equal")),
refusal("toleration as a taint string", "input.defaults.modelServerTolerations", json!(["sku=gpu:NoSchedule"]), fatal("InvalidInput", "cannot read the step input: input.defaults.modelServerTolerations[0]: the string \"sku=gpu:NoSchedule\" is not an object")),
refusal("toleration effect", "input.defaults.modelServerTolerations", json!([{"key": "sku", "value": "gpu", "effect": "NoScheduling"}]), fatal("InvalidInput", "invalid step input: input.defaults.modelServerTolerations[0].effect is \"NoScheduling\"; use NoSchedule, PreferNoSchedule or NoExecute, or leave it out to tolerate every effect")),
refusal("toleration seconds without NoExecute", "input.defaults.modelServerTolerations", json!([{"key": "sku", "value": "gpu", "effect": "NoSchedule", "tolerationSeconds": 60}]), fatal("InvalidInput", "invalid step input: input.defaults.modelServerTolerations[0].tolerationSeconds applies to the NoExecute effect only; set effect NoExecute or drop tolerationSeconds")),
refusal("hfTokenSecretRef not a name", "input.defaults.hfTokenSecretRef", json!({"name": "HF Token"}), fatal("InvalidInput", "invalid step input: input.defaults.hfTokenSecretRef.name is \"HF Token\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example hf-token)")),
refusal("modelServerPriorityClassName not a name", "input.defaults", json!({"runtime": "deployment", "modelServerPriorityClassName": "Inference Critical"}), fatal("InvalidInput", "invalid step input: input.defaults.modelServerPriorityClassName is \"Inference Critical\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example inference-critical)")),
refusal("modelServerPriorityClassName on the VLLMRuntime", "input.defaults.modelServerPriorityClassName", json!("inference-critical"), fatal("InvalidInput", "invalid step input: input.defaults.modelServerPriorityClassName is set, but input.defaults.runtime is vllm-runtime (its default), whose pods take no PriorityClass; set input.defaults.runtime to auto, deployment or leader-worker-set")),
refusal("modelServerServiceAccountName not a name", "input.defaults", json!({"runtime": "deployment", "modelServerServiceAccountName": "Model Server"}), fatal("InvalidInput", "invalid step input: input.defaults.modelServerServiceAccountName is \"Model Server\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example model-server)")),
refusal("modelServerServiceAccountName on the VLLMRuntime", "input.defaults.modelServerServiceAccountName", json!("model-server"), fatal("InvalidInput", "invalid step input: input.defaults.modelServerServiceAccountName is set, but input.defaults.runtime is vllm-runtime (its default), whose pods take no ServiceAccount; set input.defaults.runtime to auto, deployment or leader-worker-set")),
refusal("modelServerSchedulerName not a name", "input.defaults", json!({"runtime": "deployment", "modelServerSchedulerName": "Volcano"}), fatal("InvalidInput", "invalid step input: input.defaults.modelServerSchedulerName is \"Volcano\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example volcano)")),
refusal("modelServerSchedulerName on the VLLMRuntime", "input.defaults.modelServerSchedulerName", json!("volcano"), fatal("InvalidInput", "invalid step input: input.defaults.modelServerSchedulerName is set, but input.defaults.runtime is vllm-runtime (its default), whose pods take no scheduler; set input.defaults.runtime to auto, deployment or leader-worker-set")),
refusal("unknown field", "input.default", json!({}), fatal("InvalidInput", "cannot read the step input: input.default: unknown field default; valid fields are apiVersion, kind, metadata, ttl, defaults")),
    ]);
}

#[test]
fn a_step_input_field_that_is_not_a_value_is_fatal_and_keeps_earlier_steps() {
    // The server reads the input's fields as they are used, so bytes that
    // are no protobuf Value reach the function rather than failing the
    // whole call.
    let mut req = request("bad", LlmInference::new("bad").model(QWEN).build());
    req.desired = Some(earlier_desired());
    let mut server_req = to_server(&req);
    // A string (field 3) whose declared length runs past the field.
    server_req.input = Some(view::Struct {
        fields: [("defaults".to_string(), vec![0x1a, 0x05, 0x61])].into(),
    });
    let rsp = from_server(&function_inference::run::run_function(server_req).response).unwrap();
    assert_eq!(
        rsp.results,
        vec![fatal(
            "InvalidInput",
            "cannot decode the step input: field \"defaults\" cannot be decoded (buffer underflow)"
        )]
    );
    assert_eq!(rsp.desired, Some(earlier_desired()));
}
