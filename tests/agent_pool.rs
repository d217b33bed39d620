//! AgentPool, call by call: the requirement and the wait while the Model is
//! missing, the whole composition once it is there, a changed Model
//! resizing the runtime, the model server on each runtime, credentials kept
//! out of ConfigMaps, the autoscaler's metric mapping, and every composed
//! manifest schema-valid.

mod support;

use function_inference::protocol::full;
use serde_json::{Value, json};
use support::manifests::validate_composed;
use support::models::*;
use support::*;

fn pool(spec: Value, status: Value) -> Value {
    json!({
        "apiVersion": "infer.dev/v1alpha1", "kind": "AgentPool",
        "metadata": {"name": "reviewers", "namespace": "team-a", "uid": "0a9e"},
        "spec": spec, "status": status,
    })
}

/// The smallest pool worth composing: two warm agents of up to six, no port.
fn small_pool() -> Value {
    json!({
        "agentClass": {
            "modelRef": {"name": "llama-8b"},
            "systemPrompt": "You are a careful code reviewer.",
            "temperature": 0.2, "maxTokens": 1024, "maxContextLength": 8192,
        },
        "image": "ghcr.io/example/agent-runtime:1.0",
        "minReplicas": 2, "maxReplicas": 6,
        "gpuRequirements": {"count": 1, "type": "L4"},
    })
}

#[test]
fn before_crossplane_looks_the_model_up_the_pool_asks_and_waits() {
    let rsp = call(&request("w1", pool(small_pool(), json!({}))));
    let message =
        "waiting for Crossplane to look up Model team-a/llama-8b (spec.agentClass.modelRef)";
    let want = full::RunFunctionResponse {
        meta: meta("w1", 60),
        desired: Some(full::State {
            composite: Some(resource(json!({
                "apiVersion": "infer.dev/v1alpha1", "kind": "AgentPool",
                "status": {"phase": "WaitingForModel", "waitingFor": message, "model": "team-a/llama-8b"},
            }))),
            resources: Default::default(),
        }),
        conditions: vec![condition(
            "ModelResolved",
            full::Status::ConditionUnknown,
            "WaitingForModel",
            message,
        )],
        requirements: requirement(),
        ..Default::default()
    };
    assert_eq!(rsp, want);
    // Crossplane calls until the requirements stop changing: they must not.
    assert_eq!(call(&request("w1", pool(small_pool(), json!({})))), want);
}

#[test]
fn a_missing_model_keeps_what_was_composed_and_warns_once() {
    // Looked up, none found; the agents' Deployment exists from before.
    let observed_agents = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "reviewers", "namespace": "team-a", "uid": "d1", "resourceVersion": "42",
                     "annotations": {"crossplane.io/composition-resource-name": "agents"}},
        "spec": {"replicas": 4},
        "status": {"availableReplicas": 4},
    });
    let mut req = with_model(request("w2", pool(small_pool(), json!({}))), vec![]);
    req.observed.as_mut().unwrap().resources =
        [("agents".to_string(), resource(observed_agents))].into();
    let message = "waiting for Model team-a/llama-8b (spec.agentClass.modelRef): it does not exist yet; create it in namespace team-a";
    let want = full::RunFunctionResponse {
        meta: meta("w2", 60),
        desired: Some(full::State {
            composite: Some(resource(json!({
                "apiVersion": "infer.dev/v1alpha1", "kind": "AgentPool",
                "status": {"phase": "WaitingForModel", "waitingFor": message, "model": "team-a/llama-8b"},
            }))),
            resources: [(
                "agents".to_string(),
                resource(json!({
                    "apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "reviewers", "namespace": "team-a",
                                 "annotations": {"crossplane.io/composition-resource-name": "agents"}},
                    "spec": {"replicas": 4},
                })),
            )]
            .into(),
        }),
        results: vec![warning("ModelNotFound", message)],
        conditions: vec![condition(
            "ModelResolved",
            full::Status::ConditionFalse,
            "ModelNotFound",
            message,
        )],
        requirements: requirement(),
        ..Default::default()
    };
    assert_eq!(call(&req), want);

    // The status already says so: no second event.
    let mut again = req.clone();
    again.observed.as_mut().unwrap().composite =
        Some(resource(pool(small_pool(), json!({"waitingFor": message}))));
    assert_eq!(call(&again).results, vec![]);
}

/// The VLLMRuntime the small pool gets for the 8B Model on one L4.
fn small_pool_runtime() -> Value {
    json!({
        "apiVersion": "production-stack.vllm.ai/v1alpha1", "kind": "VLLMRuntime",
        "metadata": {"name": "reviewers-model", "namespace": "team-a", "labels": {
            "app.kubernetes.io/component": "model-server", "app.kubernetes.io/instance": "reviewers",
            "app.kubernetes.io/managed-by": "function-inference", "app.kubernetes.io/name": "agentpool"}},
        "spec": {
            "model": {"modelURL": "meta-llama/Llama-3.1-8B-Instruct", "dtype": "float16", "maxModelLen": 8192},
            "vllmConfig": {"enableChunkedPrefill": true, "enablePrefixCaching": true, "v1": true,
                           "gpuMemoryUtilization": "0.9", "tensorParallelSize": 1},
            "deploymentConfig": {
                "image": {"registry": "docker.io", "name": "lmcache/vllm-openai:v0.3.13"},
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}],
                "replicas": 1,
                "resources": {"cpu": "2", "memory": "19Gi", "gpu": "1"},
            },
        },
    })
}

fn agent_labels() -> Value {
    json!({"app.kubernetes.io/component": "agent", "app.kubernetes.io/instance": "reviewers",
           "app.kubernetes.io/managed-by": "function-inference", "app.kubernetes.io/name": "agentpool",
           "infer.dev/model": "llama-8b"})
}

fn selector() -> Value {
    json!({"app.kubernetes.io/component": "agent", "app.kubernetes.io/instance": "reviewers"})
}

#[test]
fn with_its_model_the_pool_composes_server_agents_config_autoscaler_and_budget() {
    let rsp = call(&with_model(
        request("f1", pool(small_pool(), json!({}))),
        vec![llama_8b()],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert_eq!(rsp.requirements, requirement());
    assert_eq!(
        names(&rsp),
        [
            "agent_config",
            "agents",
            "autoscaler",
            "disruption_budget",
            "model_server"
        ]
    );
    assert_eq!(manifest(&rsp, "model_server"), small_pool_runtime());

    let config = manifest(&rsp, "agent_config");
    let document: Value =
        serde_json::from_str(config["data"]["agent.json"].as_str().unwrap()).unwrap();
    assert_eq!(
        document,
        json!({
            "model": {"name": "llama-8b", "servedModel": "meta-llama/Llama-3.1-8B-Instruct",
                      "baseURL": "http://reviewers-model.team-a.svc.cluster.local/v1"},
            "systemPrompt": "You are a careful code reviewer.",
            "sampling": {"temperature": 0.2, "maxTokens": 1024, "maxContextLength": 8192},
            "tools": [], "guardrails": [],
        })
    );
    let hash = manifest(&rsp, "agents")["spec"]["template"]["metadata"]["annotations"]["infer.dev/config-hash"].clone();
    assert_eq!(hash.as_str().map(str::len), Some(16));
    assert_eq!(
        manifest(&rsp, "agents"),
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "reviewers", "namespace": "team-a", "labels": agent_labels()},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": selector()},
                "template": {
                    "metadata": {"labels": agent_labels(), "annotations": {"infer.dev/config-hash": hash}},
                    "spec": {
                        "automountServiceAccountToken": false,
                        "enableServiceLinks": false,
                        "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                                            "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
                        "containers": [{
                            "name": "agent",
                            "image": "ghcr.io/example/agent-runtime:1.0",
                            "env": [
                                {"name": "OPENAI_BASE_URL", "value": "http://reviewers-model.team-a.svc.cluster.local/v1"},
                                {"name": "OPENAI_MODEL", "value": "meta-llama/Llama-3.1-8B-Instruct"},
                                {"name": "AGENT_CONFIG", "value": "/etc/agent/agent.json"},
                            ],
                            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
                            "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                                                "runAsNonRoot": true, "capabilities": {"drop": ["ALL"]}},
                            "volumeMounts": [
                                {"name": "config", "mountPath": "/etc/agent", "readOnly": true},
                                {"name": "tmp", "mountPath": "/tmp"},
                            ],
                        }],
                        "volumes": [
                            {"name": "config", "configMap": {"name": "reviewers-agent-config"}},
                            {"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}},
                        ],
                    },
                },
            },
        })
    );
    assert_eq!(
        manifest(&rsp, "autoscaler"),
        json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "reviewers", "namespace": "team-a", "labels": agent_labels()},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "reviewers"},
                "minReplicas": 2, "maxReplicas": 6,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                             "target": {"type": "Utilization", "averageUtilization": 80}}}],
            },
        })
    );
    assert_eq!(
        manifest(&rsp, "disruption_budget"),
        json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "reviewers", "namespace": "team-a", "labels": agent_labels()},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector()}},
        })
    );
    let st = desired_status(&rsp);
    assert_eq!(st["phase"], "Starting");
    assert_eq!(st["model"], "team-a/llama-8b");
    assert_eq!(
        st["modelServer"],
        json!({
            "name": "reviewers-model", "runtime": "vllm-runtime", "replicas": 1,
            "baseUrl": "http://reviewers-model.team-a.svc.cluster.local/v1",
            "tokensPerSecondPerReplica": 65.6,
            "formula": "batch 6 (KV cache room for 27296 tokens / 4096 average context, at most 256) x single-sequence \
                        13.1 tokens/s, slowed by reading the batch's KV cache = 65.6 tokens/s per replica; \
                        no tokensPerSecondBudget: 1 replica(s) (the Model's data-parallel shards, or 1)",
        })
    );
    assert_eq!(
        st["agents"],
        json!({"warmReplicas": 2, "maxReplicas": 6, "configMap": "reviewers-agent-config"})
    );
    assert_eq!(
        rsp.conditions,
        vec![
            condition(
                "ModelResolved",
                full::Status::ConditionTrue,
                "Found",
                "Model team-a/llama-8b served as meta-llama/Llama-3.1-8B-Instruct"
            ),
            condition(
                "Sized",
                full::Status::ConditionTrue,
                "Sized",
                "1 model-server replica(s) of 1 x L4 (float16), tensor parallel 1, max model length 8192"
            ),
            condition(
                "Serving",
                full::Status::ConditionFalse,
                "ModelServerStarting",
                "the model server has no available replica yet"
            ),
        ]
    );
}

#[test]
fn a_token_budget_sets_model_server_replicas_and_prewarm_sets_agent_replicas() {
    let mut spec = small_pool();
    spec["tokensPerSecondBudget"] = json!(200);
    spec["maxReplicas"] = json!(20);
    spec["prewarmPercent"] = json!(25);
    let rsp = call(&with_model(
        request("b1", pool(spec.clone(), json!({}))),
        vec![llama_8b()],
    ));
    // A batch of 6 sequences of 4,096 tokens on average decodes 65.6
    // tokens/s: ceil(200 / 65.6) = 4 model servers; max(2, ceil(20 x 25 / 100)) = 5 agents.
    assert_eq!(
        manifest(&rsp, "model_server")["spec"]["deploymentConfig"]["replicas"],
        4
    );
    assert_eq!(manifest(&rsp, "agents")["spec"]["replicas"], 5);
    assert_eq!(manifest(&rsp, "autoscaler")["spec"]["minReplicas"], 5);
    assert_eq!(
        desired_status(&rsp)["modelServer"]["formula"],
        "batch 6 (KV cache room for 27296 tokens / 4096 average context, at most 256) x single-sequence \
         13.1 tokens/s, slowed by reading the batch's KV cache = 65.6 tokens/s per replica; \
         replicas = ceil(tokensPerSecondBudget 200 / 65.6) = 4"
    );
    // Once the autoscaler scaled the agents, the observed count is carried forward.
    let mut req = with_model(request("b2", pool(spec, json!({}))), vec![llama_8b()]);
    req.observed.as_mut().unwrap().resources = [(
        "agents".to_string(),
        resource(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "reviewers"}, "spec": {"replicas": 9}})),
    )]
    .into();
    assert_eq!(manifest(&call(&req), "agents")["spec"]["replicas"], 9);
}

#[test]
fn a_changed_model_resizes_the_runtime() {
    let before = call(&with_model(
        request("c1", pool(small_pool(), json!({}))),
        vec![llama_8b()],
    ));
    assert_eq!(manifest(&before, "model_server"), small_pool_runtime());

    // The Model now points at 70B fp8 weights with four tensor-parallel shards.
    let mut spec = small_pool();
    spec["gpuRequirements"] = json!({"type": "L4"});
    let bigger = model(
        "llama-8b",
        json!({"weightsURI": "hf://meta-llama/Llama-3.1-70B-Instruct", "quantization": "fp8",
               "parameterCount": "70B", "shardSpec": {"count": 4, "strategy": "tensor-parallel"}}),
    );
    let after = call(&with_model(
        request("c2", pool(spec, json!({}))),
        vec![bigger],
    ));
    assert_eq!(fatals(&after), Vec::<&str>::new());
    let runtime = manifest(&after, "model_server");
    assert_eq!(
        runtime["spec"]["model"]["modelURL"],
        "meta-llama/Llama-3.1-70B-Instruct"
    );
    assert_eq!(runtime["spec"]["vllmConfig"]["tensorParallelSize"], 4);
    // TP 4 x PP 2: four L4 cannot hold 67.7 GiB of fp8 weights (their
    // embeddings stay 16-bit) beside vLLM's activation peak and the 2.2 GiB
    // of all-reduce buffers each rank keeps.
    assert_eq!(runtime["spec"]["deploymentConfig"]["resources"]["gpu"], "8");
    // vLLM quantizes the 16-bit checkpoint at load: 131 GiB to download,
    // beyond the operator's startup probe, so the server gets a volume.
    assert_eq!(
        runtime["spec"]["vllmConfig"]["env"],
        json!([{"name": "VLLM_WORKER_MULTIPROC_METHOD", "value": "spawn"},
               {"name": "HF_HOME", "value": "/data/huggingface"}])
    );
    assert_eq!(runtime["spec"]["storageConfig"]["size"], "157Gi");
    // The agents now talk to the new model.
    let env = &manifest(&after, "agents")["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(
        env[1],
        json!({"name": "OPENAI_MODEL", "value": "meta-llama/Llama-3.1-70B-Instruct"})
    );

    // A shard count the head count does not allow names the Model's field.
    let invalid = model(
        "llama-8b",
        json!({"weightsURI": "hf://meta-llama/Llama-3.1-8B-Instruct",
               "shardSpec": {"count": 3, "strategy": "tensor-parallel"}}),
    );
    let mut spec = small_pool();
    spec["gpuRequirements"] = json!({"type": "L4"});
    let rsp = call(&with_model(
        request("c3", pool(spec, json!({}))),
        vec![invalid],
    ));
    let f = fatals(&rsp);
    assert_eq!(f.len(), 1);
    assert!(
        f[0].starts_with(
            "Model team-a/llama-8b spec.shardSpec.count: tensor parallel size 3 is not valid"
        ),
        "{}",
        f[0]
    );
}

#[test]
fn a_cache_policy_gives_the_runtime_a_weights_volume_and_says_what_it_cannot_do() {
    let mut m = llama_8b();
    m["spec"]["cachePolicy"] =
        json!({"priority": "high", "pinDuration": "2h", "evictionPolicy": "idle"});
    let rsp = call(&with_model(
        request("k1", pool(small_pool(), json!({}))),
        vec![m],
    ));
    let runtime = manifest(&rsp, "model_server");
    assert_eq!(
        runtime["spec"]["storageConfig"],
        json!({"enabled": true, "size": "18Gi", "mountPath": "/data", "accessMode": "ReadWriteOnce"})
    );
    assert_eq!(
        runtime["spec"]["vllmConfig"]["env"],
        json!([{"name": "HF_HOME", "value": "/data/huggingface"}])
    );
    assert_eq!(
        desired_status(&rsp)["notes"],
        json!([
            "cachePolicy.priority high is not applied: Kubernetes has no shared weights cache to rank; the volume holds the weights for as long as the runtime exists",
            "cachePolicy.pinDuration is not applied: the volume is not evicted while the runtime exists",
            "cachePolicy.evictionPolicy idle is not applied: the volume is deleted with the runtime, not on idleness or priority",
        ])
    );
}

#[test]
fn credentials_never_reach_a_config_map() {
    // A password inside the connection string: FATAL, naming the safe field,
    // never echoing the value, and still asking for the Model.
    let mut spec = small_pool();
    spec["agentClass"]["memoryConfig"] = json!({"type": "redis", "ttl": "2h", "connectionString": "redis://:s3cr3t-p4ss@redis:6379/0"});
    let rsp = call(&with_model(
        request("s1", pool(spec, json!({}))),
        vec![llama_8b()],
    ));
    assert_eq!(
        rsp,
        full::RunFunctionResponse {
            meta: meta("s1", 60),
            desired: Some(full::State::default()),
            results: vec![fatal(
                "CredentialInConfig",
                "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; \
                 put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef \
                 {name, key} instead",
            )],
            requirements: requirement(),
            ..Default::default()
        }
    );

    // A guardrail setting that looks like a key: FATAL too.
    let mut spec = small_pool();
    spec["agentClass"]["guardrails"] =
        json!([{"type": "content-filter", "action": "block", "config": {"apiKey": "sk-123"}}]);
    let rsp = call(&with_model(
        request("s2", pool(spec, json!({}))),
        vec![llama_8b()],
    ));
    assert_eq!(
        fatals(&rsp),
        vec![
            "spec.agentClass.guardrails[0].config.apiKey looks like a credential, which would land in a ConfigMap; \
              put it in a Secret and pass it with spec.env valueFrom.secretKeyRef"
        ]
    );

    // The Secret reference: the ConfigMap names only the variable, the pod reads the Secret.
    let mut spec = small_pool();
    spec["agentClass"]["memoryConfig"] = json!({"type": "redis", "ttl": "2h", "encrypted": true, "connectionSecretRef": {"name": "redis-auth"}});
    let rsp = call(&with_model(
        request("s3", pool(spec, json!({}))),
        vec![llama_8b()],
    ));
    let config = manifest(&rsp, "agent_config");
    let document: Value =
        serde_json::from_str(config["data"]["agent.json"].as_str().unwrap()).unwrap();
    assert_eq!(
        document["memory"],
        json!({"type": "redis", "ttl": "2h", "encrypted": true, "connectionStringFromEnv": "AGENT_MEMORY_URL"})
    );
    assert!(!config.to_string().contains("redis-auth"));
    let env = &manifest(&rsp, "agents")["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(
        env[3],
        json!({"name": "AGENT_MEMORY_URL", "valueFrom": {"secretKeyRef": {"name": "redis-auth", "key": "connectionString"}}})
    );
}

#[test]
fn autoscaling_metrics_map_to_the_hpa() {
    let mut spec = small_pool();
    spec["autoscaling"] = json!({
        "metrics": [
            {"type": "concurrent-sessions", "target": "30"},
            {"type": "ttft-p95", "target": "500ms", "averagingWindow": "1m"},
            {"type": "tokens-in-queue", "target": "100"},
            {"type": "queue-depth", "target": "5"},
            {"type": "tokens-per-second", "target": "2.5"},
            {"type": "tool-call-rate", "target": "10"},
            {"type": "context-length", "target": "4000"},
            {"type": "cpu", "target": "70%"},
            {"type": "gpu-temperature", "target": "80"},
        ],
        "behavior": {"scaleUp": {"stabilizationWindow": "45s", "maxChangeAbsolute": 3, "maxChangePercent": 50}},
        "cooldownPeriod": "5m",
    });
    let rsp = call(&with_model(
        request("h1", pool(spec.clone(), json!({}))),
        vec![llama_8b()],
    ));
    let pods = |name: &str, value: &str| json!({"type": "Pods", "pods": {"metric": {"name": name}, "target": {"type": "AverageValue", "averageValue": value}}});
    let hpa = manifest(&rsp, "autoscaler");
    assert_eq!(
        hpa["spec"],
        json!({
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "reviewers"},
            "minReplicas": 2, "maxReplicas": 6,
            "metrics": [
                pods("agent_concurrent_sessions", "30"),
                pods("agent_ttft_p95_seconds", "500m"),
                pods("agent_tokens_in_queue", "100"),
                pods("agent_queue_depth", "5"),
                pods("agent_tokens_per_second", "2500m"),
                pods("agent_tool_calls_per_second", "10"),
                pods("agent_context_length_tokens", "4000"),
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
            ],
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": 45, "selectPolicy": "Min", "policies": [
                    {"type": "Pods", "value": 3, "periodSeconds": 60},
                    {"type": "Percent", "value": 50, "periodSeconds": 60},
                ]},
                "scaleDown": {"stabilizationWindowSeconds": 300},
            },
        })
    );
    let unsupported = "spec.autoscaling.metrics[8].type \"gpu-temperature\" has no HorizontalPodAutoscaler mapping and is not applied; \
                       use concurrent-sessions, tokens-in-queue, queue-depth, tokens-per-second, tool-call-rate, context-length, ttft-p95, cpu or memory";
    assert_eq!(rsp.results, vec![warning("AgentPoolWarning", unsupported)]);
    let st = desired_status(&rsp);
    assert_eq!(st["warnings"], json!([unsupported]));
    assert_eq!(
        st["notes"],
        json!([
            unsupported,
            "spec.autoscaling.metrics[1].averagingWindow is not applied: an HPA has no per-metric window; average in the metrics adapter's query",
        ])
    );
    assert_eq!(
        st["autoscaling"]["metrics"][8],
        json!({"type": "gpu-temperature", "mappedTo": "not applied: no mapping"})
    );
    assert_eq!(
        st["autoscaling"]["metrics"][1],
        json!({"type": "ttft-p95", "mappedTo": "Pods agent_ttft_p95_seconds averageValue 500m"})
    );

    // The warning is an event once: the observed status already carries it.
    let rsp = call(&with_model(
        request("h2", pool(spec.clone(), json!({"warnings": [unsupported]}))),
        vec![llama_8b()],
    ));
    assert_eq!(rsp.results, vec![]);

    // A target that is not a number names its field.
    spec["autoscaling"]["metrics"] = json!([{"type": "queue-depth", "target": "lots"}]);
    let rsp = call(&with_model(
        request("h3", pool(spec, json!({}))),
        vec![llama_8b()],
    ));
    assert_eq!(
        fatals(&rsp),
        vec!["spec.autoscaling.metrics[0].target is \"lots\"; use a number such as 30"]
    );
}

#[test]
fn bad_specs_are_fatal_results_naming_the_field() {
    let cases = [
        (
            "temperature out of range",
            json!({"agentClass": {"temperature": 3.0}}),
            "spec.agentClass.temperature is 3; use 0 to 2",
        ),
        (
            "min above max",
            json!({"minReplicas": 8, "maxReplicas": 4}),
            "spec.minReplicas 8 exceeds spec.maxReplicas 4",
        ),
        (
            "ingress without port",
            json!({"ingressHost": "agents.example.com"}),
            "spec.ingressHost needs spec.port: the Ingress routes to the agents' Service on that port",
        ),
        (
            "GPU too small",
            json!({"gpuRequirements": {"type": "L4", "count": 1, "memory": "40Gi"}}),
            "spec.gpuRequirements.memory 40Gi exceeds the 22 GiB of a L4; choose a larger spec.gpuRequirements.type",
        ),
    ];
    for (reason, patch, want) in cases {
        let mut spec = small_pool();
        merge(&mut spec, &patch);
        let rsp = call(&with_model(
            request("e", pool(spec, json!({}))),
            vec![llama_8b()],
        ));
        assert_eq!(fatals(&rsp), vec![want], "{reason}");
        assert_eq!(
            rsp.requirements,
            requirement(),
            "{reason}: the requirement stays"
        );
    }
}

fn merge(into: &mut Value, patch: &Value) {
    match (into, patch) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

#[test]
fn every_composed_manifest_is_schema_valid() {
    let mut full_pool = small_pool();
    merge(
        &mut full_pool,
        &json!({
            "port": 8080, "ingressHost": "reviewers.example.com", "tokensPerSecondBudget": 30,
            "env": [{"name": "LOG_LEVEL", "value": "debug"},
                    {"name": "TOOL_TOKEN", "valueFrom": {"secretKeyRef": {"name": "tools", "key": "token"}}}],
            "sessionAffinity": {"enabled": true, "keyHeader": "X-Session-ID", "ttl": "1h", "type": "conversation-id"},
            "scheduling": {"priority": 80, "nodeSelector": {"workload": "ai-agent"}},
            "autoscaling": {"metrics": [{"type": "concurrent-sessions", "target": "30"}, {"type": "memory", "target": "75"}],
                            "behavior": {"scaleDown": {"maxChangePercent": 10, "periodSeconds": 120}}},
            "agentClass": {
                "toolPermissions": [{"name": "code_search", "rateLimit": "100/min", "timeout": "10s", "maxConcurrency": 3, "requiredScopes": ["read:code"]}],
                "guardrails": [{"type": "pii-detection", "action": "redact", "threshold": 0.8, "config": {"mode": "strict"}}],
                "slo": {"ttft": "500ms", "tokensPerSecond": 50, "p95Latency": "2s", "maxCostPerRequest": 0.01, "availabilityPercent": 99.9},
                "memoryConfig": {"type": "postgres", "connectionSecretRef": {"name": "pg", "key": "dsn"}},
            },
        }),
    );
    let mut cached = llama_8b();
    cached["spec"]["cachePolicy"] = json!({"priority": "critical"});
    let mut problems = Vec::new();
    for (spec, m) in [(small_pool(), llama_8b()), (full_pool, cached)] {
        let rsp = call(&with_model(request("v", pool(spec, json!({}))), vec![m]));
        assert_eq!(fatals(&rsp), Vec::<&str>::new());
        for name in names(&rsp) {
            problems.extend(
                validate_composed(&manifest(&rsp, &name))
                    .into_iter()
                    .map(|p| format!("{name}: {p}")),
            );
        }
    }
    let rsp = call(&request(
        "v",
        json!({"apiVersion": "infer.dev/v1alpha1", "kind": "Model",
        "metadata": {"name": "llama-8b", "namespace": "team-a"}, "spec": llama_8b()["spec"]}),
    ));
    problems.extend(validate_composed(&manifest(&rsp, "model_card")));
    assert_eq!(problems, Vec::<String>::new());
}

/// The env value `name` of the agents' container.
fn agent_env(rsp: &full::RunFunctionResponse, name: &str) -> Value {
    manifest(rsp, "agents")["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .map(|e| e["value"].clone())
        .unwrap_or(Value::Null)
}

#[test]
fn the_model_server_runs_on_the_runtime_the_pool_asks_for_behind_the_same_url() {
    let base_url = json!("http://reviewers-model.team-a.svc.cluster.local/v1");
    let server_keys = |rsp: &full::RunFunctionResponse| -> Vec<String> {
        names(rsp)
            .into_iter()
            .filter(|n| n.starts_with("model_server"))
            .collect()
    };
    // The default: the operator's VLLMRuntime.
    let rsp = call(&with_model(
        request("rt", pool(small_pool(), json!({}))),
        vec![llama_8b()],
    ));
    assert_eq!(server_keys(&rsp), ["model_server"]);
    assert_eq!(agent_env(&rsp, "OPENAI_BASE_URL"), base_url);

    // A Deployment and its Service, named like the runtime was.
    let mut spec = small_pool();
    spec["runtime"] = json!("deployment");
    let rsp = call(&with_model(
        request("rt", pool(spec, json!({}))),
        vec![llama_8b()],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert_eq!(
        server_keys(&rsp),
        ["model_server_deployment", "model_server_service"]
    );
    assert_eq!(agent_env(&rsp, "OPENAI_BASE_URL"), base_url);
    let server = manifest(&rsp, "model_server_deployment");
    assert_eq!(server["metadata"]["name"], "reviewers-model");
    let pod = &server["spec"]["template"]["spec"];
    assert_eq!(
        pod["containers"][0]["args"][0],
        "meta-llama/Llama-3.1-8B-Instruct"
    );
    assert_eq!(
        pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
        "1"
    );
    let service = manifest(&rsp, "model_server_service");
    assert_eq!(service["metadata"]["name"], "reviewers-model");
    assert_eq!(
        service["spec"]["selector"]["app.kubernetes.io/component"],
        "model-server"
    );
    assert_eq!(
        server["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"],
        "model-server"
    );
    assert_ne!(
        service["spec"]["selector"],
        manifest(&rsp, "agents")["spec"]["selector"]["matchLabels"],
        "the model server's Service never selects the agents"
    );
    for name in names(&rsp) {
        let problems = validate_composed(&manifest(&rsp, &name));
        assert!(problems.is_empty(), "{name}: {problems:#?}");
    }
}

#[test]
fn a_pool_whose_model_needs_several_nodes_is_served_on_a_leader_worker_set() {
    let big = model(
        "llama-8b",
        json!({"weightsURI": "hf://meta-llama/Llama-3.1-405B-Instruct", "quantization": "bf16"}),
    );
    let mut spec = small_pool();
    spec["gpuRequirements"] = json!({"type": "H100-80GB"});
    spec["agentClass"]["maxContextLength"] = json!(32768);
    // The operator cannot: refused with the runtime that can.
    let rsp = call(&with_model(
        request("big", pool(spec.clone(), json!({}))),
        vec![big.clone()],
    ));
    let fatal = fatals(&rsp);
    assert_eq!(fatal.len(), 1);
    assert!(fatal[0].starts_with("input.defaults.runtime is vllm-runtime, but one replica of meta-llama/Llama-3.1-405B-Instruct needs 16 H100-80GB GPUs on 2 nodes"), "{}", fatal[0]);
    assert!(
        fatal[0].contains("set spec.runtime to leader-worker-set (or auto)"),
        "{}",
        fatal[0]
    );
    // auto serves it.
    spec["runtime"] = json!("auto");
    let rsp = call(&with_model(
        request("big", pool(spec, json!({}))),
        vec![big],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    let lws = manifest(&rsp, "model_server_leader_worker_set");
    assert_eq!(lws["spec"]["leaderWorkerTemplate"]["size"], 2);
    let service = manifest(&rsp, "model_server_service");
    assert_eq!(
        service["spec"]["selector"],
        json!({"leaderworkerset.sigs.k8s.io/name": "reviewers-model", "role": "leader"})
    );
    assert_eq!(
        agent_env(&rsp, "OPENAI_BASE_URL"),
        "http://reviewers-model.team-a.svc.cluster.local/v1"
    );
    let status = desired_status(&rsp);
    let reasons = status["plan"]["reasons"].as_array().unwrap();
    assert!(
        reasons.iter().any(|r| r
            .as_str()
            .unwrap()
            .starts_with("Runtime: leader-worker-set (spec.runtime auto)")),
        "{reasons:#?}"
    );
    for name in names(&rsp) {
        let problems = validate_composed(&manifest(&rsp, &name));
        assert!(problems.is_empty(), "{name}: {problems:#?}");
    }
}

#[test]
fn an_agent_pool_sizes_with_its_objective_and_the_models_config_map() {
    let mut m = llama_8b();
    m["spec"]["configFrom"] = json!({"configMapRef": {"name": "llama-config"}});
    let mut spec = small_pool();
    spec["objective"] = json!("minimal");
    spec["gpuRequirements"] = json!({"type": "L4"});
    let mut want_requirements = requirement().unwrap();
    want_requirements
        .resources
        .insert("model-config".into(), config_map_selector("llama-config"));
    let rsp = call(&with_model(
        request("p1", pool(spec.clone(), json!({}))),
        vec![m.clone()],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert_eq!(rsp.requirements, Some(want_requirements.clone()));
    assert_eq!(desired_status(&rsp)["phase"], "WaitingForModelConfig");

    let cm = config_map("llama-config", json!({"config.json": "[]"}));
    let rsp = call(&with_config_map(
        with_model(
            request("p2", pool(spec.clone(), json!({}))),
            vec![m.clone()],
        ),
        vec![cm],
    ));
    assert_eq!(
        fatals(&rsp),
        vec![
            "spec.agentClass.modelRef: Model team-a/llama-8b spec.configFrom.configMapRef: ConfigMap team-a/llama-config: key config.json: config.json is not a JSON object"
        ]
    );
    assert_eq!(rsp.requirements, Some(want_requirements.clone()));

    let cm = config_map(
        "llama-config",
        json!({"config.json": codellama_config().to_string()}),
    );
    let rsp = call(&with_config_map(
        with_model(request("p3", pool(spec, json!({}))), vec![m]),
        vec![cm],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    let plan = &desired_status(&rsp)["plan"];
    assert_eq!(plan["objective"], "minimal");
    assert_eq!(plan["architectureGuessed"], false);
}
