//! Inference-aware routing: with a Gateway in the step input, a model
//! server becomes an InferencePool of the pods that serve its API, behind
//! its own endpoint picker, with an HTTPRoute from the Gateway; an
//! ingressHost becomes the route's host instead of an Ingress.

mod support;

use serde_json::{Value, json};
use support::fixtures::*;
use support::manifests::validate_composed;
use support::refusals::*;
use support::*;

fn gateway_platform(runtime: &str) -> Value {
    json!({"defaults": {"gpuType": "H100-80GB", "runtime": runtime,
        "inferenceGateway": {"name": "inference-gateway", "namespace": "gateway-system"}}})
}

#[test]
fn a_host_is_routed_by_the_gateway_instead_of_an_ingress() {
    let xr = LlmInference::new("chat")
        .model(QWEN)
        .field("ingressHost", json!("chat.example.com"))
        .build();
    let mut req = request("g1", xr);
    req.input = Some(input(gateway_platform("deployment")));
    let rsp = call(&req);
    assert_not_fatal(&rsp.results, "gateway");
    let keys = composed_names(&rsp);
    assert_eq!(
        keys,
        [
            "deployment",
            "endpoint_picker",
            "endpoint_picker_account",
            "endpoint_picker_config",
            "endpoint_picker_role",
            "endpoint_picker_role_binding",
            "endpoint_picker_service",
            "http_route",
            "inference_pool",
            "service",
        ]
    );
    for key in &keys {
        assert_eq!(
            validate_composed(&desired_resource(&rsp, key)),
            Vec::<String>::new(),
            "{key}"
        );
    }
    let route = desired_resource(&rsp, "http_route");
    assert_eq!(route["spec"]["hostnames"], json!(["chat.example.com"]));
    assert_eq!(
        route["spec"]["rules"][0]["matches"],
        json!([{"path": {"type": "PathPrefix", "value": "/"}}])
    );
    let endpoint = &desired_status(&rsp)["endpoint"];
    assert_eq!(endpoint["external"], "http://chat.example.com/v1");
    assert_eq!(
        endpoint["gateway"],
        "Gateway gateway-system/inference-gateway for host chat.example.com, HTTPRoute team-a/chat to InferencePool chat"
    );
    let picker = desired_resource(&rsp, "endpoint_picker");
    assert_eq!(
        picker["spec"]["template"]["spec"]["containers"][0]["args"],
        json!([
            "--pool-name",
            "chat",
            "--pool-namespace",
            "team-a",
            "--zap-encoder",
            "json",
            "--config-file",
            "/config/default-plugins.yaml",
            "--tracing=false",
            "--metrics-endpoint-auth=false"
        ])
    );
}

#[test]
fn a_leader_worker_sets_pool_is_its_leaders() {
    let xr = LlmInference::new("big")
        .model("meta-llama/Llama-3.1-405B-Instruct")
        .gpu_type("A100-80GB")
        .build();
    let mut req = request("g2", xr);
    req.input = Some(input(gateway_platform("leader-worker-set")));
    let rsp = call(&req);
    assert_not_fatal(&rsp.results, "lws");
    assert_eq!(
        desired_resource(&rsp, "inference_pool")["spec"]["selector"]["matchLabels"],
        json!({"leaderworkerset.sigs.k8s.io/name": "big", "role": "leader"})
    );
}

#[test]
fn malformed_gateways_are_refused() {
    Refusals::of(LlmInference::new("bad").model(QWEN).build()).check(vec![
        refusal("gateway name", "input.defaults.inferenceGateway", json!({"name": "Not A Name"}), fatal("InvalidInput", "invalid step input: input.defaults.inferenceGateway.name is \"Not A Name\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example inference-gateway)")),
        refusal("gateway image", "input.defaults.inferenceGateway", json!({"name": "gw", "endpointPickerImage": {"registry": "", "name": "epp"}}), fatal("InvalidInput", "invalid step input: input.defaults.inferenceGateway.endpointPickerImage needs a non-empty registry and name")),
        refusal("gateway unknown field", "input.defaults.inferenceGateway", json!({"name": "gw", "port": 80}), fatal("InvalidInput", "cannot read the step input: input.defaults.inferenceGateway.port: unknown field port; valid fields are name, namespace, endpointPickerImage")),
    ]);
}

#[test]
fn an_xr_can_ask_for_a_gateway_the_platform_does_not_name() {
    let xr = LlmInference::new("chat")
        .model(QWEN)
        .field("gateway", json!({"name": "team-gateway"}))
        .build();
    let rsp = call(&request("g3", xr));
    assert_not_fatal(&rsp.results, "xr gateway");
    let route = desired_resource(&rsp, "http_route");
    assert_eq!(
        route["spec"]["parentRefs"],
        json!([{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "team-gateway"}])
    );
    assert_eq!(
        desired_resource(&rsp, "endpoint_picker")["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry.k8s.io/gateway-api-inference-extension/epp:v1.3.0"
    );
    // Without a Gateway anywhere: the runtime alone, as before.
    let rsp = call(&request(
        "g4",
        LlmInference::new("chat").model(QWEN).build(),
    ));
    assert_eq!(composed_names(&rsp), ["vllm_runtime"]);
}
