//! XR names and namespaces the API server would refuse, for every kind: a
//! FATAL result before anything is composed, naming `metadata.name` (or
//! `metadata.namespace`) and what Kubernetes accepts: an XR's name is at
//! most 63 characters, as the CRDs of Crossplane's XRDs say. The longest
//! valid name composes, and XRs of different kinds may share a name.

mod support;

use std::collections::BTreeMap;

use serde_json::json;
use support::fixtures::*;
use support::models;
use support::refusals::*;
use support::*;

#[test]
fn xr_names_the_api_server_would_refuse_are_fatal_before_composing() {
    let subdomain = "use a DNS-1123 subdomain, as Kubernetes names objects: at most 253 characters of \
                     lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for \
                     example qwen-7b)";
    let label = "an XR's name is at most 63 characters: Crossplane labels everything it composes \
                 crossplane.io/composite=<XR name>, a label value is at most 63 characters, and the API server \
                 refuses longer XR names (for example qwen-7b)";
    let huge = "a".repeat(9 << 20);
    let rows = || {
        vec![
            refusal(
                "9 MiB name",
                "metadata.name",
                json!(huge),
                fatal(
                    "InvalidName",
                    &format!(
                        "metadata.name is \"{}\"... (9437184 characters); {subdomain}",
                        "a".repeat(64)
                    ),
                ),
            ),
            refusal(
                "254 characters",
                "metadata.name",
                json!(&huge[..254]),
                fatal(
                    "InvalidName",
                    &format!(
                        "metadata.name is \"{}\"... (254 characters); {subdomain}",
                        "a".repeat(64)
                    ),
                ),
            ),
            refusal(
                "64 characters",
                "metadata.name",
                json!(&huge[..64]),
                fatal(
                    "InvalidName",
                    &format!(
                        "metadata.name is \"{}\" (64 characters); {label}",
                        &huge[..64]
                    ),
                ),
            ),
            refusal(
                "a 200-character subdomain",
                "metadata.name",
                json!(format!("{}.{}", &huge[..100], &huge[..99])),
                fatal(
                    "InvalidName",
                    &format!(
                        "metadata.name is \"{}\"... (200 characters); {label}",
                        "a".repeat(64)
                    ),
                ),
            ),
            refusal(
                "ends with a dot",
                "metadata.name",
                json!("llama-v3."),
                fatal(
                    "InvalidName",
                    &format!("metadata.name is \"llama-v3.\"; {subdomain}"),
                ),
            ),
            refusal(
                "upper case and underscore",
                "metadata.name",
                json!("Bad_Name"),
                fatal(
                    "InvalidName",
                    &format!("metadata.name is \"Bad_Name\"; {subdomain}"),
                ),
            ),
            refusal(
                "empty",
                "metadata.name",
                json!(""),
                fatal(
                    "InvalidName",
                    &format!("metadata.name is \"\"; {subdomain}"),
                ),
            ),
        ]
    };
    for xr in [
        LlmInference::new("bad").model(QWEN).build(),
        example("examples/configuration/agents/model.yaml"),
        example("examples/configuration/agents/agentpool.yaml"),
    ] {
        Refusals::of(xr).check(rows());
    }
    // A namespace is a DNS label.
    let mut req = request("bad", LlmInference::new("bad").model(QWEN).build());
    req.observed.as_mut().unwrap().composite = Some(resource(
        LlmInference::new("ok")
            .namespace("team.a")
            .model(QWEN)
            .build(),
    ));
    assert_eq!(
        call(&req).results,
        vec![fatal(
            "InvalidName",
            "metadata.namespace is \"team.a\"; use at most 63 lower-case letters, digits and '-', starting and \
             ending with a letter or digit (for example team-a)"
        )]
    );
    // The longest valid name composes (names.rs shortens what derives from it).
    let longest = format!("{}.{}", &huge[..40], &huge[..22]);
    assert_eq!(longest.len(), 63);
    let rsp = call(&request(
        "ok",
        LlmInference::new(&longest).model(QWEN).build(),
    ));
    assert_not_fatal(&rsp.results, "the longest valid name");
}

/// An LLMInference, a Model and an AgentPool may share a name in one
/// namespace, as a Deployment and a Service do: on every runtime, no two of
/// them compose an object of one kind and name (nor one the operator or
/// LeaderWorkerSet makes from what they compose), which the API server
/// would refuse to whichever is applied second.
#[test]
fn an_llm_inference_a_model_and_an_agent_pool_may_share_a_name() {
    let platform = input(json!({"defaults": {
        "autoscaler": "hpa",
        "prometheusAddress": "http://prometheus.monitoring:9090",
        "podMonitor": true,
        "inferenceGateway": {"name": "inference-gateway", "namespace": "gateway-system"},
    }}));
    for runtime in ["vllm-runtime", "deployment", "leader-worker-set"] {
        let llm_inference = LlmInference::new("chat")
            .model("meta-llama/Llama-3.1-8B-Instruct")
            .gpu_type("L4")
            .runtime(runtime)
            .field("ingressHost", json!("chat.example.com"))
            .field("autoscaling", json!({"minReplicas": 1, "maxReplicas": 3}))
            .build();
        let model = models::model(
            "chat",
            json!({"weightsURI": "hf://meta-llama/Llama-3.1-8B-Instruct", "size": "16Gi"}),
        );
        let agent_pool = AgentPool::new("chat")
            .spec(json!({
                "agentClass": {"modelRef": {"name": "chat"}},
                "image": "ghcr.io/example/agent-runtime:1.0",
                "port": 8080, "ingressHost": "agents.example.com",
                "minReplicas": 2, "maxReplicas": 4,
                "modelServerAutoscaling": {"maxReplicas": 3},
                "gpuRequirements": {"type": "L4"},
                "runtime": runtime,
            }))
            .build();
        let mut named: BTreeMap<(String, String), String> = BTreeMap::new();
        for xr in [llm_inference, model.clone(), agent_pool] {
            let kind = xr["kind"].as_str().unwrap().to_string();
            let mut req = models::with_model(request(&kind, xr), vec![model.clone()]);
            req.input = Some(platform.clone());
            let rsp = call(&req);
            assert_not_fatal(&rsp.results, &format!("{kind} on {runtime}"));
            for key in composed_names(&rsp) {
                let object = desired_resource(&rsp, &key);
                let name = object["metadata"]["name"].as_str().unwrap().to_string();
                let mut made = vec![(object["kind"].as_str().unwrap().to_string(), name.clone())];
                // What the production-stack operator and LeaderWorkerSet
                // create under the same name.
                match made[0].0.as_str() {
                    "VLLMRuntime" => made.extend(
                        ["Deployment", "Service", "PersistentVolumeClaim"]
                            .map(|k| (k.to_string(), name.clone())),
                    ),
                    "LeaderWorkerSet" => made.push(("StatefulSet".into(), name.clone())),
                    _ => {}
                }
                for object in made {
                    let by = format!("{kind} chat ({key})");
                    if let Some(first) = named.insert(object.clone(), by.clone()) {
                        panic!("on {runtime}, {by} and {first} both make {object:?}");
                    }
                }
            }
        }
    }
}
