//! The GPU type chosen for an XR that names none, on a platform that offers
//! several: the cheapest plan at the platform's prices (without prices, the
//! fewest GPUs, then the smallest type), explained in the status with the
//! runner-up; the platform's own default type and an XR's type still win.

mod support;

use serde_json::{Value, json};
use support::fixtures::*;
use support::models::*;
use support::*;

const LLAMA_70B: &str = "meta-llama/Llama-3.1-70B-Instruct";

fn priced_platform() -> Value {
    json!({"defaults": {
        "offeredGpuTypes": ["L4", "L40S", "H100-80GB"],
        "gpuPrices": {"L4": 0.8, "L40S": 1.9, "H100-80GB": 4.1},
    }})
}

/// The response for an LLMInference serving `model` on the GPU type it
/// names, on [`priced_platform`].
fn named_on_priced_platform(
    tag: &str,
    model: &str,
    gpu_type: &str,
) -> function_inference::protocol::fnv1::RunFunctionResponse {
    let mut req = request(
        tag,
        LlmInference::new("chat")
            .model(model)
            .gpu_type(gpu_type)
            .build(),
    );
    req.input = Some(input(priced_platform()));
    call(&req)
}

/// The plan in the status of the response, and its first reason.
fn plan_and_first_reason(
    rsp: &function_inference::protocol::fnv1::RunFunctionResponse,
) -> (Value, String) {
    let status = desired_status(rsp);
    let plan = status["plan"].clone();
    let first = plan["reasons"][0].as_str().unwrap_or_default().to_string();
    (plan, first)
}

#[test]
fn an_llm_inference_without_a_gpu_type_gets_the_cheapest_offered_plan() {
    let mut req = request("c1", LlmInference::new("chat").model(LLAMA_70B).build());
    req.input = Some(input(priced_platform()));
    let rsp = call(&req);
    assert_not_fatal(&rsp.results, "priced platform");
    let (plan, first) = plan_and_first_reason(&rsp);
    assert_eq!(
        (plan["gpuType"].as_str(), plan["gpuCount"].as_u64()),
        (Some("L40S"), Some(8))
    );
    assert_eq!(
        first,
        "GPU type chosen from the offered ones (one node before several, then the cheapest replica per hour): 8 x L40S at 15.20/h beats 4 x H100-80GB at 16.40/h; then 16 x L4 on 2 nodes at 12.80/h"
    );
}

#[test]
fn without_prices_the_fewest_gpus_then_the_smallest_type_win() {
    let mut req = request("c2", LlmInference::new("chat").model(QWEN).build());
    req.input = Some(input(
        json!({"defaults": {"offeredGpuTypes": ["H100-80GB", "L40S", "L4"]}}),
    ));
    let rsp = call(&req);
    assert_not_fatal(&rsp.results, "unpriced platform");
    let (plan, first) = plan_and_first_reason(&rsp);
    assert_eq!(plan["gpuType"], "L4");
    assert_eq!(
        first,
        "GPU type chosen from the offered ones (without prices, the fewest GPUs, then the smallest GPU type): 1 x L4 beats 1 x L40S; then 1 x H100-80GB"
    );
}

#[test]
fn the_platform_default_type_and_the_xr_type_are_never_second_guessed() {
    // The XR names its type: no choice, no explanation.
    let rsp = named_on_priced_platform("c3", LLAMA_70B, "H100-80GB");
    let (plan, first) = plan_and_first_reason(&rsp);
    assert_eq!(plan["gpuType"], "H100-80GB");
    assert!(first.starts_with("Catalog entry"), "{first}");

    // The platform names a default type: it is used as before.
    let mut platform = priced_platform();
    platform["defaults"]["gpuType"] = json!("H100-80GB");
    let mut req = request("c4", LlmInference::new("chat").model(LLAMA_70B).build());
    req.input = Some(input(platform));
    let (plan, first) = plan_and_first_reason(&call(&req));
    assert_eq!(plan["gpuType"], "H100-80GB");
    assert!(first.starts_with("Catalog entry"), "{first}");
}

/// A type outside the platform's list is served as named, with a warning:
/// its pods wait unless the cluster has such nodes after all.
#[test]
fn a_type_the_platform_does_not_offer_is_sized_with_a_warning() {
    let warned = |rsp: &function_inference::protocol::fnv1::RunFunctionResponse| {
        let (plan, _) = plan_and_first_reason(rsp);
        assert_eq!(plan["gpuType"], "H200");
        let warnings: Vec<String> = serde_json::from_value(plan["warnings"].clone()).unwrap();
        let results: Vec<String> = rsp.results.iter().map(|r| r.message.clone()).collect();
        (warnings, results)
    };
    let rsp = named_on_priced_platform("c5", QWEN, "nvidia-h200");
    assert_not_fatal(&rsp.results, "a type outside the offer");
    let (warnings, results) = warned(&rsp);
    let want = "spec.gpuType is H200, which the platform does not offer (input.defaults.offeredGpuTypes: \
                L4, L40S, H100-80GB): its pods wait unless the cluster has H200 nodes all the same; name \
                an offered type, or leave spec.gpuType unset for the cheapest offered type that serves the model";
    assert_eq!(warnings, vec![want]);
    assert!(results.iter().any(|r| r == want), "{results:?}");

    // The platform's default type outside its own list of prices.
    let mut req = request("c6", LlmInference::new("chat").model(QWEN).build());
    req.input = Some(input(json!({"defaults": {
        "gpuType": "H200",
        "gpuPrices": {"L4": 0.8, "H100-80GB": 4.1},
    }})));
    let (warnings, _) = warned(&call(&req));
    assert_eq!(
        warnings,
        vec![
            "input.defaults.gpuType is H200, which the platform does not offer (input.defaults.gpuPrices: \
             H100-80GB, L4): its pods wait unless the cluster has H200 nodes all the same; name an offered type"
        ]
    );

    // An offered type, written as the device plugin names it: no warning.
    let rsp = named_on_priced_platform("c7", QWEN, "NVIDIA-H100-80GB-HBM3");
    let (plan, _) = plan_and_first_reason(&rsp);
    assert_eq!(plan["gpuType"], "H100-80GB");
    assert_eq!(plan.get("warnings"), None);
}

#[test]
fn when_no_offered_type_serves_the_refusal_says_why_for_each() {
    let mut req = request(
        "c5",
        LlmInference::new("chat").model(LLAMA_70B).gpu(1).build(),
    );
    req.input = Some(input(
        json!({"defaults": {"offeredGpuTypes": ["L4", "L40S"]}}),
    ));
    let rsp = call(&req);
    assert_eq!(rsp.results.len(), 1, "{:?}", rsp.results);
    assert_eq!(
        rsp.results[0].message,
        "spec.gpu: none of the offered GPU types (L4, L40S) serves it: L4: 1 x L4 (TP 1, PP 1) cannot hold \
         meta-llama/Llama-3.1-70B-Instruct: each GPU's share of the weights is 131.4 GiB, more than its 21.9 \
         GiB, so vLLM cannot load them whatever its flags; 16 x L4 (TP 8, PP 2) would hold it; L40S: 1 x L40S \
         (TP 1, PP 1) cannot hold meta-llama/Llama-3.1-70B-Instruct: each GPU's share of the weights is 131.4 \
         GiB, more than its 44.4 GiB, so vLLM cannot load them whatever its flags; 8 x L40S (TP 8, PP 1) \
         would hold it"
    );
}

#[test]
fn a_refusal_every_offered_type_shares_is_the_specs_own() {
    // No GPU type tells how big an uncatalogued model is: the field to set
    // is spec.parameterCount, said once, not the offer, once per type.
    let mut req = request(
        "c7",
        LlmInference::new("chat")
            .model("example/support-bot")
            .build(),
    );
    req.input = Some(input(
        json!({"defaults": {"offeredGpuTypes": ["L4", "L40S"]}}),
    ));
    let rsp = call(&req);
    assert_eq!(rsp.results.len(), 1, "{:?}", rsp.results);
    assert_eq!(
        rsp.results[0].message,
        "spec.parameterCount: cannot tell how many parameters `example/support-bot` has: it is not in the model \
         catalog and its id carries no size; give its parameter count (for example 8B, 70B or 8x7B)"
    );
    assert_eq!(
        rsp.results[0].severity,
        function_inference::protocol::fnv1::Severity::Fatal as i32
    );
}

#[test]
fn when_the_offer_itself_cannot_serve_the_refusal_names_the_offer() {
    // No fixed layout: T4 has no fp8, which no count changes.
    let mut req = request(
        "c6",
        LlmInference::new("chat")
            .model(LLAMA_70B)
            .field("quantization", json!("fp8"))
            .build(),
    );
    req.input = Some(input(json!({"defaults": {"offeredGpuTypes": ["T4"]}})));
    let rsp = call(&req);
    assert_eq!(rsp.results.len(), 1, "{:?}", rsp.results);
    let message = &rsp.results[0].message;
    assert!(
        message.starts_with(
            "input.defaults.offeredGpuTypes: none of the offered GPU types (T4) serves it: T4: fp8 weights need"
        ),
        "{message}"
    );
}

#[test]
fn an_agent_pool_without_a_gpu_type_gets_the_cheapest_type_with_the_memory_it_asks() {
    let pool = |gpu: Value| {
        json!({
            "agentClass": {"modelRef": {"name": "llama-8b"}, "systemPrompt": "Review.", "maxContextLength": 8192},
            "image": "ghcr.io/example/agent-runtime:1.0",
            "minReplicas": 1, "maxReplicas": 2,
            "gpuRequirements": gpu,
        })
    };
    let run = |gpu: Value| {
        let mut req = with_model(
            request("p1", AgentPool::new("reviewers").spec(pool(gpu)).build()),
            vec![llama_8b()],
        );
        req.input = Some(input(priced_platform()));
        call(&req)
    };
    let rsp = run(json!({"count": 1}));
    assert_not_fatal(&rsp.results, "priced pool");
    let (plan, first) = plan_and_first_reason(&rsp);
    assert_eq!(plan["gpuType"], "L4");
    assert!(
        first.contains(": 1 x L4 at 0.80/h beats 1 x L40S at 1.90/h; then 1 x H100-80GB at 4.10/h"),
        "{first}"
    );

    // 40Gi of GPU memory rules the L4 out before prices are compared.
    let rsp = run(json!({"count": 1, "memory": "40Gi"}));
    assert_not_fatal(&rsp.results, "pool asking for 40Gi");
    let (plan, first) = plan_and_first_reason(&rsp);
    assert_eq!(plan["gpuType"], "L40S");
    assert!(
        first.contains(": 1 x L40S at 1.90/h beats 1 x H100-80GB at 4.10/h"),
        "{first}"
    );

    // A named type outside the offer is served, with a warning.
    let rsp = run(json!({"count": 1, "type": "H200"}));
    let (plan, _) = plan_and_first_reason(&rsp);
    assert_eq!(plan["gpuType"], "H200");
    assert_eq!(
        plan["warnings"],
        json!([
            "spec.gpuRequirements.type is H200, which the platform does not offer \
             (input.defaults.offeredGpuTypes: L4, L40S, H100-80GB): its pods wait unless the cluster has \
             H200 nodes all the same; name an offered type, or leave spec.gpuRequirements.type unset for \
             the cheapest offered type that serves the model"
        ])
    );

    let rsp = run(json!({"count": 1, "memory": "200Gi"}));
    assert_eq!(
        rsp.results
            .iter()
            .map(|r| r.message.as_str())
            .collect::<Vec<_>>(),
        vec![
            "spec.gpuRequirements.memory 200Gi exceeds every offered GPU type (L4, L40S, H100-80GB); ask for less memory or name a larger spec.gpuRequirements.type"
        ]
    );

    // One GPU for a 70B Model on every offered type: the count is the
    // field to change, not the platform's offer.
    let mut req = with_model(
        request(
            "p2",
            AgentPool::new("reviewers")
                .spec(pool(json!({"count": 1})))
                .build(),
        ),
        vec![model(
            "llama-8b",
            json!({"weightsURI": "hf://meta-llama/Llama-3.1-70B-Instruct", "parameterCount": "70B"}),
        )],
    );
    req.input = Some(input(priced_platform()));
    let rsp = call(&req);
    assert_eq!(rsp.results.len(), 1, "{:?}", rsp.results);
    assert!(
        rsp.results[0].message.starts_with(
            "spec.gpuRequirements.count: none of the offered GPU types (L4, L40S, H100-80GB) serves it: L4: 1 x L4 \
             (TP 1, PP 1) cannot hold meta-llama/Llama-3.1-70B-Instruct"
        ),
        "{}",
        rsp.results[0].message
    );
}

#[test]
fn prices_that_do_not_match_the_offered_types_are_refused() {
    let refused = |defaults: Value| {
        let mut req = request("c6", LlmInference::new("chat").model(QWEN).build());
        req.input = Some(input(json!({"defaults": defaults})));
        call(&req)
            .results
            .iter()
            .map(|r| r.message.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        refused(json!({"offeredGpuTypes": ["L4", "l40s-48gb"], "gpuPrices": {"L4": 0.8}})),
        vec![
            "invalid step input: input.defaults.gpuPrices has no price for L40S; price every GPU type of input.defaults.offeredGpuTypes"
        ]
    );
    assert_eq!(
        refused(json!({"offeredGpuTypes": ["L4"], "gpuPrices": {"L4": 0.8, "H100": 4.1}})),
        vec![
            "invalid step input: input.defaults.gpuPrices prices H100-80GB, which input.defaults.offeredGpuTypes does not offer; add it there or drop its price"
        ]
    );
}

/// A type the function chooses is held by node affinity: on by default where
/// it chooses, and a platform that turns it off gets each XR whose type would
/// be chosen refused, since its server could start on GPUs of another type.
#[test]
fn a_chosen_type_is_held_by_node_affinity() {
    let compose = |xr: Value, defaults: Value| {
        let mut req = with_model(request("c7", xr), vec![llama_8b()]);
        req.input = Some(input(json!({"defaults": defaults})));
        call(&req)
    };
    let chat = || LlmInference::new("chat").model(LLAMA_70B);
    let node_terms = |rsp: &function_inference::protocol::fnv1::RunFunctionResponse| {
        desired_resource(rsp, "vllm_runtime")["spec"]["deploymentConfig"]["nodeSelectorTerms"]
            .clone()
    };

    let rsp = compose(chat().build(), priced_platform()["defaults"].clone());
    assert_not_fatal(&rsp.results, "chosen type");
    assert_eq!(
        desired_resource(&rsp, "vllm_runtime")["spec"]["deploymentConfig"]["toleration"],
        json!([{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}])
    );
    assert_eq!(
        node_terms(&rsp),
        json!([
            {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-L40S"]}]},
            {"matchExpressions": [
                {"key": "eks.amazonaws.com/instance-gpu-name", "operator": "In", "values": ["l40s"]},
                {"key": "nvidia.com/gpu.product", "operator": "DoesNotExist"},
            ]},
            {"matchExpressions": [
                {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["l40s"]},
                {"key": "nvidia.com/gpu.product", "operator": "DoesNotExist"},
            ]},
        ])
    );

    let mut off = priced_platform()["defaults"].clone();
    off["gpuNodeSelector"] = json!(false);
    let rsp = compose(chat().build(), off.clone());
    assert_eq!(
        rsp.results,
        vec![fatal(
            "InvalidInput",
            "input.defaults.gpuNodeSelector is false, and the function chooses this XR's GPU type from the offered \
             ones (input.defaults.offeredGpuTypes or gpuPrices): without node affinity nothing keeps the server on \
             the type chosen for it, and a plan for one type may start on GPUs of another; leave gpuNodeSelector \
             unset or true (GPU nodes need the nvidia.com/gpu.product, cloud.google.com/gke-accelerator, \
             eks.amazonaws.com/instance-gpu-name, karpenter.k8s.aws/instance-gpu-name or \
             amd.com/gpu.device-id label, or on AKS a GPU VM size as node.kubernetes.io/instance-type), \
             set input.defaults.gpuType, or name the GPU type in spec.gpuType"
        )]
    );
    assert_eq!(composed_names(&rsp), Vec::<String>::new());

    // An XR that names its type is not refused, and the platform's choice
    // of no affinity stands.
    let rsp = compose(chat().gpu_type("H100-80GB").build(), off.clone());
    assert_not_fatal(&rsp.results, "named type");
    assert_eq!(
        node_terms(&rsp),
        json!([{"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}])
    );

    let pool = AgentPool::new("reviewers")
        .spec(json!({
            "agentClass": {"modelRef": {"name": "llama-8b"}},
            "image": "ghcr.io/example/agent-runtime:1.0",
        }))
        .build();
    let rsp = compose(pool, off);
    assert_eq!(rsp.results.len(), 1, "{:?}", rsp.results);
    assert!(
        rsp.results[0].message.ends_with(
            "set input.defaults.gpuType, or name the GPU type in spec.gpuRequirements.type"
        ),
        "{}",
        rsp.results[0].message
    );
}
