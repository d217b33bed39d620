//! The specification of AgentPool: its behaviour, then its refusals.
//!
//! Behaviour, call by call: the requirement and the wait while the Model is
//! missing, the whole composition once it is there, a changed Model
//! resizing the runtime, the model server on each runtime, the agents' pods
//! saying why they do not run, credentials kept out of ConfigMaps, the
//! autoscaler's metric mapping, and every composed manifest schema-valid.
//!
//! Refusals: every malformed spec is a FATAL result (or, where a field is
//! only not applied, a warning) that names the field and what would be
//! valid, keeps the earlier steps' desired state and still asks for the
//! Model (one table shape, `support::refusals`).

mod support;

use function_inference::protocol::fnv1;
use serde_json::{Value, json};
use support::fixtures::*;
use support::manifests::validate_composed;
use support::models::*;
use support::refusals::*;
use support::*;

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

/// The agents of a pool of one replica keep their pod template free of
/// spreading (a pool of more prefers other nodes: see the pool's
/// full composition below).
#[test]
fn a_pool_of_one_agent_has_nothing_to_spread() {
    let rsp = call(&with_model(
        request("s", AgentPool::one_agent("llama-8b").build()),
        vec![llama_8b()],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert_eq!(
        manifest(&rsp, "agents")["spec"]["template"]["spec"].get("topologySpreadConstraints"),
        None
    );
}

#[test]
fn before_crossplane_looks_the_model_up_the_pool_asks_and_waits() {
    let rsp = call(&request(
        "w1",
        AgentPool::new("reviewers").spec(small_pool()).build(),
    ));
    let message =
        "waiting for Crossplane to look up Model team-a/llama-8b (spec.agentClass.modelRef)";
    let want = fnv1::RunFunctionResponse {
        meta: meta("w1", 10),
        desired: Some(fnv1::State {
            composite: Some(not_ready(json!({
                "apiVersion": "infer.dev/v1alpha1", "kind": "AgentPool",
                "status": {"phase": "WaitingForModel", "waitingFor": message, "model": "team-a/llama-8b"},
            }))),
            resources: Default::default(),
        }),
        conditions: [
            vec![condition(
                "ModelResolved",
                fnv1::Status::ConditionUnknown,
                "WaitingForModel",
                message,
            )],
            // Nothing composed yet: nothing is said to be kept.
            waiting_conditions("WaitingForModel", message),
        ]
        .concat(),
        requirements: requirement(),
        ..Default::default()
    };
    assert_eq!(rsp, want);
    // Crossplane calls until the requirements stop changing: they must not.
    assert_eq!(
        call(&request(
            "w1",
            AgentPool::new("reviewers").spec(small_pool()).build()
        )),
        want
    );
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
    let mut req = with_model(
        request("w2", AgentPool::new("reviewers").spec(small_pool()).build()),
        vec![],
    );
    req.observed.as_mut().unwrap().resources =
        [("agents".to_string(), resource(observed_agents))].into();
    let message = "waiting for Model team-a/llama-8b (spec.agentClass.modelRef): it does not exist; create it in namespace team-a";
    let want = fnv1::RunFunctionResponse {
        meta: meta("w2", 10),
        desired: Some(fnv1::State {
            composite: Some(not_ready(json!({
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
        conditions: [
            vec![condition(
                "ModelResolved",
                fnv1::Status::ConditionFalse,
                "ModelNotFound",
                message,
            )],
            // The kept agents have replicas available: they still serve.
            vec![
                sized_waiting("WaitingForModel", message),
                condition(
                    "Serving",
                    fnv1::Status::ConditionTrue,
                    "Available",
                    &format!(
                        "{message}; what was composed before is kept as it was and still serves"
                    ),
                ),
            ],
        ]
        .concat(),
        requirements: requirement(),
        ..Default::default()
    };
    assert_eq!(call(&req), want);

    // The status already says so: no second event.
    let mut again = req.clone();
    again.observed.as_mut().unwrap().composite = Some(resource(
        AgentPool::new("reviewers")
            .spec(small_pool())
            .status(json!({"waitingFor": message}))
            .build(),
    ));
    assert_eq!(call(&again).results, vec![]);
}

/// The VLLMRuntime the small pool gets for the 8B Model on one L4.
fn small_pool_runtime() -> Value {
    digested(json!({
        "apiVersion": "production-stack.vllm.ai/v1alpha1", "kind": "VLLMRuntime",
        "metadata": {"name": "reviewers-model", "namespace": "team-a", "labels": {
            "app.kubernetes.io/component": "model-server", "app.kubernetes.io/instance": "reviewers",
            "app.kubernetes.io/managed-by": "function-inference", "app.kubernetes.io/name": "agentpool"}},
        "spec": {
            "model": {"modelURL": "meta-llama/Llama-3.1-8B-Instruct", "dtype": "float16", "maxModelLen": 8192,
                      "hfTokenSecret": {"hfTokenSecretName": "hf-token", "hfTokenKeyName": "token"}},
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
    }))
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
        request("f1", AgentPool::new("reviewers").spec(small_pool()).build()),
        vec![llama_8b()],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    // Nothing serves yet: the operator's pods say why, once they exist,
    // and the agents' pods whether they can start meanwhile.
    let mut requirements = requirement_with_pods(&[("app", "reviewers-model")]).unwrap();
    requirements.resources.insert(
        "agent_pods".into(),
        pods_selector(&[
            ("app.kubernetes.io/component", "agent"),
            ("app.kubernetes.io/instance", "reviewers"),
        ]),
    );
    requirements
        .resources
        .extend(crd_requirements(&[VLLM_RUNTIME_CRD]));
    assert_eq!(rsp.requirements, Some(requirements));
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
        digested(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "reviewers-agents", "namespace": "team-a", "labels": agent_labels()},
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
                                {"name": "OPENAI_API_KEY", "value": "EMPTY"},
                                {"name": "AGENT_CONFIG", "value": "/etc/agent/agent.json"},
                            ],
                            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
                            "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                                                "runAsNonRoot": true, "capabilities": {"drop": ["ALL"]}},
                            "terminationMessagePolicy": "FallbackToLogsOnError",
                            "volumeMounts": [
                                {"name": "config", "mountPath": "/etc/agent", "readOnly": true},
                                {"name": "tmp", "mountPath": "/tmp"},
                            ],
                        }],
                        "volumes": [
                            {"name": "config", "configMap": {"name": "reviewers-agent-config"}},
                            {"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}},
                        ],
                        // Up to 6 replicas: each prefers a node of its own.
                        "topologySpreadConstraints": [
                            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                             "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": selector()}}
                        ],
                    },
                },
            },
        }))
    );
    assert_eq!(
        manifest(&rsp, "autoscaler"),
        json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "reviewers-agents", "namespace": "team-a", "labels": agent_labels()},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "reviewers-agents"},
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
            "metadata": {"name": "reviewers-agents", "namespace": "team-a", "labels": agent_labels()},
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
            "tokensPerSecondPerReplica": 65.3,
            "formula": "batch 6 (KV cache room for 26839 tokens / 4096 average context, at most 256) x single-sequence \
                        13.1 tokens/s, slowed by reading the batch's KV cache = 65.3 tokens/s per replica; \
                        no tokensPerSecondBudget: 1 replica (the Model's data-parallel shards, or 1)",
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
                fnv1::Status::ConditionTrue,
                "Found",
                "Model team-a/llama-8b served as meta-llama/Llama-3.1-8B-Instruct"
            ),
            condition(
                "Sized",
                fnv1::Status::ConditionTrue,
                "Sized",
                "1 model-server replica of 1 x L4 (float16), tensor parallel 1, max model length 8192"
            ),
            condition(
                "Serving",
                fnv1::Status::ConditionFalse,
                "Starting",
                "the model server for meta-llama/Llama-3.1-8B-Instruct has no available replica yet: it will serve \
                 1 x L4 (float16), tensor parallel 1, max model length 8192 at \
                 http://reviewers-model.team-a.svc.cluster.local/v1"
            ),
            condition(
                "Autoscaling",
                fnv1::Status::ConditionUnknown,
                "NotReported",
                "the HorizontalPodAutoscaler reviewers-agents has not yet said whether it can scale"
            ),
        ]
    );
}

/// vLLM batches up to 1,024 sequences on a GPU of 70 GiB or more (but the
/// A100), 256 elsewhere: the pool's decode rate takes the device's limit,
/// as the memory model does. On an H100 at 2,048 tokens the cache holds
/// 410 sequences of 1,024 on average, all of which vLLM runs at once; the
/// rate was counted for 256 (11,906 tokens/s).
#[test]
fn a_pool_on_a_large_gpu_batches_as_many_sequences_as_vllm_does() {
    let mut spec = small_pool();
    spec["agentClass"]["maxContextLength"] = json!(2048);
    spec["agentClass"]["maxTokens"] = json!(512);
    spec["gpuRequirements"] = json!({"count": 1, "type": "H100-80GB"});
    let rsp = call(&with_model(
        request("h100", AgentPool::new("reviewers").spec(spec).build()),
        vec![llama_8b()],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert_eq!(
        desired_status(&rsp)["modelServer"]["formula"],
        "batch 410 (KV cache room for 420068 tokens / 1024 average context, at most 1024) x single-sequence \
         146.0 tokens/s, slowed by reading the batch's KV cache = 13524.5 tokens/s per replica; \
         no tokensPerSecondBudget: 1 replica (the Model's data-parallel shards, or 1)"
    );
}

/// A layout refused for the KV headroom it leaves is not said to fit at a
/// smaller `--max-num-seqs`: a pool gives its model server no arguments of
/// its own, so it could not act on that (`size` and an LLMInference can).
#[test]
fn a_pool_is_not_told_of_a_batch_size_it_cannot_set() {
    let gemma = model(
        "gemma",
        json!({"weightsURI": "hf://google/gemma-3-27b-it", "hfTokenSecretRef": {"name": "hf-token"}}),
    );
    let mut spec = small_pool();
    spec["agentClass"]["modelRef"] = json!({"name": "gemma"});
    // No context stated: the layout keeps the recipes' headroom.
    spec["agentClass"]
        .as_object_mut()
        .unwrap()
        .remove("maxContextLength");
    spec["gpuRequirements"] = json!({"type": "H100-80GB"});
    let rsp = call(&with_model(
        request("gemma", AgentPool::new("reviewers").spec(spec).build()),
        vec![gemma],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    let plan = &desired_status(&rsp)["plan"];
    assert_eq!(plan["gpuCount"], 2);
    let layout = plan["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|r| r.starts_with("2 x H100-80GB"))
        .unwrap();
    assert_eq!(
        layout,
        "2 x H100-80GB (TP 2, PP 1): the smallest layout that holds it (objective balanced); \
         1 x H100-80GB (TP 1, PP 1) would leave the KV cache 10.2 GiB of 71.3 GiB usable per GPU, \
         less than the sixth the balanced objective keeps for it. \
         Valid TP sizes for 32 attention heads and 16 KV heads on 8 GPUs per node: 1, 2, 4, 8."
    );
}

/// A mixture of experts batches at less than its active parameters
/// suggest: each step reads every expert some token of the batch is routed
/// to. gpt-oss-120b routes a token to 4 of 128 experts: one sequence reads
/// 5.1 B parameters a step, a batch of 199 nearly every expert, 116.8 B.
/// Counting only the active ones gave 14,898 tokens/s per replica and two
/// servers where three are needed; at a short context, where the weights
/// rather than the KV cache fill a step, it overstated a replica up to
/// total / active times (23 here).
#[test]
fn a_mixture_of_experts_pool_counts_the_experts_a_batch_reads() {
    let mut spec = small_pool();
    spec["agentClass"]["modelRef"]["name"] = json!("gpt-oss");
    spec["gpuRequirements"] = json!({"count": 2, "type": "H100-80GB"});
    spec["tokensPerSecondBudget"] = json!(20000);
    let gpt_oss = model("gpt-oss", json!({"weightsURI": "hf://openai/gpt-oss-120b"}));
    let rsp = call(&with_model(
        request("moe", AgentPool::new("reviewers").spec(spec).build()),
        vec![gpt_oss],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert_eq!(
        desired_status(&rsp)["modelServer"]["formula"],
        "batch 199 (KV cache room for 817918 tokens / 4096 average context, at most 1024) x single-sequence \
         1839.2 tokens/s, slowed by reading the batch's KV cache and the experts its tokens are routed to \
         (127.8 of 128 per layer on average: 116.8 B of the 117 B parameters a step, against 5.1 B for one \
         sequence) = 7876.6 tokens/s per replica; replicas = ceil(tokensPerSecondBudget 20000 / 7876.6) = 3"
    );
    assert_eq!(
        manifest(&rsp, "model_server")["spec"]["deploymentConfig"]["replicas"],
        3
    );
}

#[test]
fn a_token_budget_sets_model_server_replicas_and_prewarm_sets_agent_replicas() {
    let mut spec = small_pool();
    spec["tokensPerSecondBudget"] = json!(200);
    spec["maxReplicas"] = json!(20);
    spec["prewarmPercent"] = json!(25);
    let rsp = call(&with_model(
        request("b1", AgentPool::new("reviewers").spec(spec.clone()).build()),
        vec![llama_8b()],
    ));
    // A batch of 6 sequences of 4,096 tokens on average decodes 65.3
    // tokens/s: ceil(200 / 65.3) = 4 model servers; max(2, ceil(20 x 25 / 100)) = 5 agents,
    // the autoscaler's floor.
    assert_eq!(
        manifest(&rsp, "model_server")["spec"]["deploymentConfig"]["replicas"],
        4
    );
    assert_eq!(manifest(&rsp, "agents")["spec"]["replicas"], 5);
    assert_eq!(manifest(&rsp, "autoscaler")["spec"]["minReplicas"], 5);
    assert_eq!(desired_status(&rsp)["agents"]["warmReplicas"], 5);
    assert_eq!(
        desired_status(&rsp)["modelServer"]["formula"],
        "batch 6 (KV cache room for 26839 tokens / 4096 average context, at most 256) x single-sequence \
         13.1 tokens/s, slowed by reading the batch's KV cache = 65.3 tokens/s per replica; \
         replicas = ceil(tokensPerSecondBudget 200 / 65.3) = 4"
    );
    // While Crossplane's field manager owns the count, it is composed again
    // (within the range); once the autoscaler scaled the agents, the count
    // is its own: a count composed from a stale read would scale them back.
    let observed = |replicas: i64, replicas_owner: Value| {
        let crossplane = "apiextensions.crossplane.io/composed/0b1c";
        [(
            "agents".to_string(),
            resource(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "reviewers-agents", "managedFields": [
                    {"manager": crossplane, "operation": "Apply", "fieldsV1": {"f:spec": {"f:selector": {}}}},
                    replicas_owner]},
                "spec": {"replicas": replicas}})),
        )]
        .into()
    };
    let by_crossplane = json!({"manager": "apiextensions.crossplane.io/composed/0b1c", "operation": "Apply",
                               "fieldsV1": {"f:spec": {"f:replicas": {}}}});
    let by_a_scale = json!({"manager": "kube-controller-manager", "operation": "Update", "subresource": "scale",
                            "fieldsV1": {"f:spec": {"f:replicas": {}}}});
    let mut req = with_model(
        request("b2", AgentPool::new("reviewers").spec(spec).build()),
        vec![llama_8b()],
    );
    let agents =
        |req: &fnv1::RunFunctionRequest| manifest(&call(req), "agents")["spec"]["replicas"].clone();
    req.observed.as_mut().unwrap().resources = observed(5, by_crossplane.clone());
    assert_eq!(agents(&req), 5);
    req.observed.as_mut().unwrap().resources = observed(30, by_crossplane);
    assert_eq!(agents(&req), 20);
    req.observed.as_mut().unwrap().resources = observed(9, by_a_scale);
    assert_eq!(agents(&req), Value::Null);
}

#[test]
fn a_changed_model_resizes_the_runtime() {
    let before = call(&with_model(
        request("c1", AgentPool::new("reviewers").spec(small_pool()).build()),
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
        request("c2", AgentPool::new("reviewers").spec(spec).build()),
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
    assert_eq!(runtime["spec"]["storageConfig"]["size"], "158Gi");
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
        request("c3", AgentPool::new("reviewers").spec(spec).build()),
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
fn a_gpu_count_too_small_for_the_model_it_now_serves_is_refused_with_the_layout_that_holds_it() {
    // The pool asked for one L4 for an 8B model; the Model now points at
    // 70B: one L4 cannot load it, so nothing is applied and the refusal
    // says which layout would (this once composed model servers that could
    // never start, with a warning).
    let bigger = model(
        "llama-8b",
        json!({"weightsURI": "hf://meta-llama/Llama-3.1-70B-Instruct", "parameterCount": "70B"}),
    );
    let rsp = call(&with_model(
        request("g1", AgentPool::new("reviewers").spec(small_pool()).build()),
        vec![bigger],
    ));
    assert_eq!(
        fatals(&rsp),
        vec![
            "spec.gpuRequirements.count: 1 x L4 (TP 1, PP 1) cannot hold meta-llama/Llama-3.1-70B-Instruct: each \
             GPU's share of the weights is 131.4 GiB, more than its 21.9 GiB, so vLLM cannot load them whatever \
             its flags; 16 x L4 (TP 8, PP 2) would hold it"
        ]
    );
    assert!(rsp.desired.unwrap().resources.is_empty());

    // A Model whose shardSpec fixes the layout is the field to change.
    let sharded = model(
        "llama-8b",
        json!({"weightsURI": "hf://meta-llama/Llama-3.1-70B-Instruct", "parameterCount": "70B",
               "shardSpec": {"count": 2, "strategy": "pipeline-parallel"}}),
    );
    let mut spec = small_pool();
    spec["gpuRequirements"] = json!({"type": "L4"});
    let rsp = call(&with_model(
        request("g2", AgentPool::new("reviewers").spec(spec).build()),
        vec![sharded],
    ));
    assert_eq!(
        fatals(&rsp),
        vec![
            "Model team-a/llama-8b spec.shardSpec.count: 2 x L4 (TP 1, PP 2) cannot hold \
             meta-llama/Llama-3.1-70B-Instruct: each GPU's share of the weights is 65.7 GiB, more than its 21.9 \
             GiB, so vLLM cannot load them whatever its flags; 16 x L4 (TP 8, PP 2) would hold it"
        ]
    );
}

#[test]
fn a_cache_policy_gives_the_runtime_a_weights_volume_and_says_what_it_cannot_do() {
    let mut m = llama_8b();
    m["spec"]["cachePolicy"] =
        json!({"priority": "high", "pinDuration": "2h", "evictionPolicy": "idle"});
    let rsp = call(&with_model(
        request("k1", AgentPool::new("reviewers").spec(small_pool()).build()),
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

    // Three replicas cannot share the operator's one volume without
    // ReadWriteMany storage: a warning, as an LLMInference gets (it was a
    // note, among the fields that have no effect, with no event).
    let mut spec = small_pool();
    spec["tokensPerSecondBudget"] = json!(150);
    let mut cached = llama_8b();
    cached["spec"]["cachePolicy"] = json!({"priority": "critical"});
    let rsp = call(&with_model(
        request("k2", AgentPool::new("reviewers").spec(spec).build()),
        vec![cached],
    ));
    let warned = "cachePolicy is not applied: 3 replicas (from spec.tokensPerSecondBudget and the Model's data-parallel \
                  shards) share the operator's one weights volume, which needs ReadWriteMany, and the platform names \
                  no ReadWriteMany storage class (input.defaults.weightsCache.sharedStorageClassName); each pod \
                  downloads the weights itself";
    assert_eq!(rsp.results, vec![warning("AgentPoolWarning", warned)]);
    let status = desired_status(&rsp);
    assert_eq!(status["warnings"], json!([warned]));
    assert_eq!(status["plan"]["warnings"], json!([warned]));
    // What has no effect stays a note.
    assert_eq!(
        status["notes"],
        json!([
            "cachePolicy.priority critical is not applied: Kubernetes has no shared weights cache to rank; the volume holds the weights for as long as the runtime exists"
        ])
    );
}

#[test]
fn session_affinity_ttl_becomes_whole_seconds_within_a_day_and_says_so() {
    for (ttl, seconds, note) in [
        ("1h", 3600, None),
        (
            "1500ms",
            2,
            Some(
                "spec.sessionAffinity.ttl 1500ms is rounded to 2s: a Service's affinity timeout counts whole seconds",
            ),
        ),
        (
            "100ms",
            1,
            Some(
                "spec.sessionAffinity.ttl 100ms is rounded to 1s: a Service's affinity timeout counts whole seconds",
            ),
        ),
        (
            "48h",
            86_400,
            Some("spec.sessionAffinity.ttl 48h is capped at 24h, a Service's limit"),
        ),
    ] {
        let mut spec = small_pool();
        spec["port"] = json!(8080);
        spec["sessionAffinity"] = json!({"enabled": true, "ttl": ttl});
        let rsp = call(&with_model(
            request("a", AgentPool::new("reviewers").spec(spec).build()),
            vec![llama_8b()],
        ));
        assert_eq!(fatals(&rsp), Vec::<&str>::new(), "{ttl}");
        assert_eq!(
            manifest(&rsp, "agent_service")["spec"]["sessionAffinityConfig"],
            json!({"clientIP": {"timeoutSeconds": seconds}}),
            "{ttl}"
        );
        let notes = desired_status(&rsp)["notes"].clone();
        let about_ttl: Vec<&Value> = notes
            .as_array()
            .into_iter()
            .flatten()
            .filter(|n| {
                n.as_str()
                    .is_some_and(|n| n.starts_with("spec.sessionAffinity.ttl"))
            })
            .collect();
        assert_eq!(
            about_ttl,
            note.map(|n| json!(n)).iter().collect::<Vec<_>>(),
            "{ttl}"
        );
    }
}

#[test]
fn autoscaling_windows_become_whole_seconds_and_say_so() {
    let mut spec = small_pool();
    spec["autoscaling"] = json!({
        "cooldownPeriod": "90500ms",
        "behavior": {"scaleUp": {"stabilizationWindow": "1m"}},
    });
    let rsp = call(&with_model(
        request("w", AgentPool::new("reviewers").spec(spec).build()),
        vec![llama_8b()],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    let behavior = &manifest(&rsp, "autoscaler")["spec"]["behavior"];
    assert_eq!(
        (
            &behavior["scaleUp"]["stabilizationWindowSeconds"],
            &behavior["scaleDown"]["stabilizationWindowSeconds"]
        ),
        (&json!(60), &json!(91))
    );
    assert_eq!(
        desired_status(&rsp)["notes"],
        json!([
            "spec.autoscaling.cooldownPeriod 90500ms is rounded to 91s: a HorizontalPodAutoscaler's window counts whole seconds"
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
        request("s1", AgentPool::new("reviewers").spec(spec).build()),
        vec![llama_8b()],
    ));
    assert_eq!(
        rsp,
        fnv1::RunFunctionResponse {
            meta: meta("s1", 60),
            desired: Some(fnv1::State::default()),
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
        request("s2", AgentPool::new("reviewers").spec(spec).build()),
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
        request("s3", AgentPool::new("reviewers").spec(spec).build()),
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
        env[4],
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
        request("h1", AgentPool::new("reviewers").spec(spec.clone()).build()),
        vec![llama_8b()],
    ));
    let pods = |name: &str, value: &str| json!({"type": "Pods", "pods": {"metric": {"name": name}, "target": {"type": "AverageValue", "averageValue": value}}});
    let hpa = manifest(&rsp, "autoscaler");
    assert_eq!(
        hpa["spec"],
        json!({
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "reviewers-agents"},
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
        request(
            "h2",
            AgentPool::new("reviewers")
                .spec(spec.clone())
                .status(json!({"warnings": [unsupported]}))
                .build(),
        ),
        vec![llama_8b()],
    ));
    assert_eq!(rsp.results, vec![]);

    // A target that is not a number names its field.
    spec["autoscaling"]["metrics"] = json!([{"type": "queue-depth", "target": "lots"}]);
    let rsp = call(&with_model(
        request("h3", AgentPool::new("reviewers").spec(spec).build()),
        vec![llama_8b()],
    ));
    assert_eq!(
        fatals(&rsp),
        vec!["spec.autoscaling.metrics[0].target is \"lots\"; use a number such as 30"]
    );
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
        let rsp = call(&with_model(
            request("v", AgentPool::new("reviewers").spec(spec).build()),
            vec![m],
        ));
        assert_eq!(fatals(&rsp), Vec::<&str>::new());
        for name in names(&rsp) {
            problems.extend(
                validate_composed(&manifest(&rsp, &name))
                    .into_iter()
                    .map(|p| format!("{name}: {p}")),
            );
        }
    }
    let rsp = call(&request("v", llama_8b()));
    problems.extend(validate_composed(&manifest(&rsp, "model_card")));
    assert_eq!(problems, Vec::<String>::new());
}

/// The env value `name` of the agents' container.
fn agent_env(rsp: &fnv1::RunFunctionResponse, name: &str) -> Value {
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
    let server_keys = |rsp: &fnv1::RunFunctionResponse| -> Vec<String> {
        names(rsp)
            .into_iter()
            .filter(|n| n.starts_with("model_server"))
            .collect()
    };
    // The default: the operator's VLLMRuntime.
    let rsp = call(&with_model(
        request("rt", AgentPool::new("reviewers").spec(small_pool()).build()),
        vec![llama_8b()],
    ));
    assert_eq!(server_keys(&rsp), ["model_server"]);
    assert_eq!(agent_env(&rsp, "OPENAI_BASE_URL"), base_url);

    // A Deployment and its Service, named like the runtime was.
    let rsp = call(&deployment_pool("rt"));
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

/// The agents' image from the team's registry: the agents and the model
/// server pull with the platform's Secret, then the pool's.
#[test]
fn the_agents_pull_their_image_with_the_pools_secret() {
    let mut spec = small_pool();
    spec["runtime"] = json!("deployment");
    spec["imagePullSecrets"] = json!([{"name": "team-registry"}]);
    let mut req = with_model(
        request("pull", AgentPool::new("reviewers").spec(spec).build()),
        vec![llama_8b()],
    );
    req.input = Some(input(
        json!({"defaults": {"imagePullSecrets": [{"name": "mirror"}]}}),
    ));
    let rsp = call(&req);
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    let both = json!([{"name": "mirror"}, {"name": "team-registry"}]);
    for key in ["agents", "model_server_deployment"] {
        assert_eq!(
            manifest(&rsp, key)["spec"]["template"]["spec"]["imagePullSecrets"],
            both,
            "{key}"
        );
    }
    assert_eq!(
        validate_composed(&manifest(&rsp, "agents")),
        Vec::<String>::new()
    );
}

/// The small pool served by a Deployment, with its Model, under `tag`.
fn deployment_pool(tag: &str) -> fnv1::RunFunctionRequest {
    let mut spec = small_pool();
    spec["runtime"] = json!("deployment");
    with_model(
        request(tag, AgentPool::new("reviewers").spec(spec).build()),
        vec![llama_8b()],
    )
}

/// An agent pod no node takes: the pool's nodeSelector matches none.
fn unschedulable_agent_pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "reviewers-agents-5c8d-q7", "namespace": "team-a"},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable",
            "message": "0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector."}]}})
}

/// The model server comes first in `Serving`, but agents that cannot
/// start are said while it starts, not minutes later once it serves.
#[test]
fn while_the_model_server_starts_agents_that_cannot_start_are_said_too() {
    let pool_request = || deployment_pool("as");
    let first = call(&pool_request());
    let loading = json!({"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                         "unavailableReplicas": 1,
                         "conditions": [{"type": "Progressing", "status": "True"}]});
    let call_with = |agent_pods: Vec<Value>| {
        let mut req = pool_request();
        req.observed.as_mut().unwrap().resources = [
            (
                "model_server_deployment".to_string(),
                resource(applied(
                    manifest(&first, "model_server_deployment"),
                    1,
                    loading.clone(),
                )),
            ),
            (
                "agents".to_string(),
                resource(applied(manifest(&first, "agents"), 1, loading.clone())),
            ),
        ]
        .into();
        call(&with_required(req, "agent_pods", agent_pods))
    };
    let serving = |rsp: &fnv1::RunFunctionResponse| response_condition(rsp, "Serving").unwrap();

    let starting = call_with(vec![]);
    let server_starting = serving(&starting);
    assert_eq!(server_starting.reason, "Starting");
    assert_eq!(starting.results, vec![]);

    let rsp = call_with(vec![unschedulable_agent_pod()]);
    let message = format!(
        "{}; the agents cannot start either: pod reviewers-agents-5c8d-q7 cannot be scheduled: 0/6 nodes are \
         available: 6 node(s) didn't match Pod's node affinity/selector",
        server_starting.message.unwrap().trim_end_matches('.')
    );
    assert_eq!(
        serving(&rsp),
        condition(
            "Serving",
            fnv1::Status::ConditionFalse,
            "Starting",
            &message
        )
    );
    assert_eq!(rsp.results, vec![warning("Unschedulable", &message)]);
}

#[test]
fn once_the_model_server_serves_the_agents_pods_say_why_the_agents_do_not() {
    let pool_request = || deployment_pool("ag");
    let first = call(&pool_request());
    let server = applied(
        manifest(&first, "model_server_deployment"),
        1,
        json!({"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1,
               "conditions": [{"type": "Available", "status": "True"}]}),
    );
    let agents = |status: Value| applied(manifest(&first, "agents"), 1, status);
    let call_with = |agents: Value, pods: Option<Vec<Value>>| {
        let mut req = pool_request();
        req.observed.as_mut().unwrap().resources = [
            (
                "model_server_deployment".to_string(),
                resource(server.clone()),
            ),
            ("agents".to_string(), resource(agents)),
        ]
        .into();
        if let Some(pods) = pods {
            req = with_required(req, "agent_pods", pods);
        }
        call(&req)
    };
    let serving = |rsp: &fnv1::RunFunctionResponse| response_condition(rsp, "Serving").unwrap();
    let not_serving = |reason: &str, message: &str| {
        condition("Serving", fnv1::Status::ConditionFalse, reason, message)
    };
    let agent_pods = || {
        let mut requirements = requirement().unwrap();
        requirements.resources.insert(
            "agent_pods".into(),
            pods_selector(&[
                ("app.kubernetes.io/component", "agent"),
                ("app.kubernetes.io/instance", "reviewers"),
            ]),
        );
        Some(requirements)
    };
    let starting = json!({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
                          "unavailableReplicas": 2,
                          "conditions": [{"type": "Progressing", "status": "True"}]});

    // Created, its pods not yet looked at: starting, and Crossplane is
    // asked for the pods, which it does not watch, soon again.
    let rsp = call_with(agents(starting.clone()), None);
    assert_eq!(
        serving(&rsp),
        not_serving(
            "AgentsStarting",
            "the model server serves; the agent Deployment is not available yet"
        )
    );
    assert_eq!(rsp.requirements, agent_pods());
    assert_eq!(rsp.meta, meta("ag", 15));
    assert_eq!(rsp.results, vec![]);
    assert_eq!(desired_status(&rsp)["phase"], "Starting");

    // No node matches the pool's nodeSelector: the pods say so, once, as a warning.
    let pending = unschedulable_agent_pod();
    let unschedulable = "the agent Deployment: pod reviewers-agents-5c8d-q7 cannot be scheduled: 0/6 nodes are \
                         available: 6 node(s) didn't match Pod's node affinity/selector";
    let rsp = call_with(agents(starting.clone()), Some(vec![pending.clone()]));
    assert_eq!(serving(&rsp), not_serving("Unschedulable", unschedulable));
    assert_eq!(rsp.results, vec![warning("Unschedulable", unschedulable)]);
    assert_eq!(desired_status(&rsp)["phase"], "Starting");

    // Past its deadline: the controller's words, and the pod's reason.
    let stuck = json!({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
                       "unavailableReplicas": 2,
                       "conditions": [{"type": "Progressing", "status": "False",
                                       "reason": "ProgressDeadlineExceeded",
                                       "message": "ReplicaSet \"reviewers-agents-5c8d\" has timed out progressing."}]});
    let rsp = call_with(agents(stuck), Some(vec![pending.clone()]));
    assert_eq!(
        serving(&rsp),
        not_serving(
            "ProgressDeadlineExceeded",
            "the agent Deployment: ReplicaSet \"reviewers-agents-5c8d\" has timed out progressing: pod reviewers-agents-5c8d-q7 \
             cannot be scheduled: 0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector"
        )
    );

    // Every agent runs the current spec, and one starts again (its pod
    // evicted by a node drain): nothing rolls out.
    let one_starting = json!({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
                              "availableReplicas": 1, "unavailableReplicas": 1});
    let rsp = call_with(agents(one_starting), None);
    assert_eq!(
        serving(&rsp),
        not_serving(
            "AgentsStarting",
            "the model server serves; the agents serve on 1 of 2 replicas: 1 more starting"
        )
    );
    assert_eq!(rsp.results, vec![]);

    // A new spec rolls out while the earlier agents still run...
    let rolling = json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 1,
                         "availableReplicas": 2, "unavailableReplicas": 1,
                         "conditions": [{"type": "Available", "status": "True"},
                                        {"type": "Progressing", "status": "True"}]});
    let rsp = call_with(agents(rolling.clone()), None);
    assert_eq!(
        serving(&rsp),
        not_serving(
            "AgentsRollingOut",
            "the model server serves; the agent Deployment rolls out: 1 of 2 replicas updated, 2 available"
        )
    );
    assert_eq!(rsp.results, vec![]);
    // ...and the nodes cannot take it.
    let rsp = call_with(agents(rolling), Some(vec![pending.clone()]));
    assert_eq!(
        serving(&rsp),
        not_serving(
            "Unschedulable",
            &format!("{unschedulable}; 2 agent replicas still available")
        )
    );

    // The autoscaler adds a third agent beyond the floor of two: the pool
    // serves, says so, and says why the third cannot start (once).
    let mut scaled_up = agents(
        json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3,
                                      "availableReplicas": 2, "unavailableReplicas": 1}),
    );
    scaled_up["spec"]["replicas"] = json!(3);
    let above_floor = "agents serve with meta-llama/Llama-3.1-8B-Instruct at \
                       http://reviewers-model.team-a.svc.cluster.local/v1 on 2 of 3 replicas: 1 more";
    let rsp = call_with(scaled_up.clone(), None);
    assert_eq!(
        serving(&rsp),
        condition(
            "Serving",
            fnv1::Status::ConditionTrue,
            "Available",
            &format!("{above_floor} starting")
        )
    );
    assert_eq!(
        rsp.desired.as_ref().unwrap().resources["agents"].ready,
        fnv1::Ready::True as i32
    );
    assert_eq!(desired_status(&rsp)["phase"], "Serving");
    assert_eq!(
        rsp.requirements,
        agent_pods(),
        "its pods are still looked at"
    );
    let rsp = call_with(scaled_up, Some(vec![pending.clone()]));
    let cannot = format!(
        "{above_floor} cannot start: pod reviewers-agents-5c8d-q7 cannot be scheduled: 0/6 nodes are available: 6 \
         node(s) didn't match Pod's node affinity/selector"
    );
    assert_eq!(
        serving(&rsp),
        condition("Serving", fnv1::Status::ConditionTrue, "Available", &cannot)
    );
    assert_eq!(rsp.results, vec![warning("Unschedulable", &cannot)]);

    // Every agent available: serving, and the pods are no longer asked for.
    let rsp = call_with(
        agents(
            json!({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
                      "availableReplicas": 2,
                      "conditions": [{"type": "Available", "status": "True"}]}),
        ),
        None,
    );
    assert_eq!(
        serving(&rsp),
        condition(
            "Serving",
            fnv1::Status::ConditionTrue,
            "Available",
            "agents serve with meta-llama/Llama-3.1-8B-Instruct at http://reviewers-model.team-a.svc.cluster.local/v1"
        )
    );
    assert_eq!(rsp.requirements, requirement());
    assert_eq!(rsp.results, vec![]);
    assert_eq!(desired_status(&rsp)["phase"], "Serving");
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
        request(
            "big",
            AgentPool::new("reviewers").spec(spec.clone()).build(),
        ),
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
        request("big", AgentPool::new("reviewers").spec(spec).build()),
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
        request("p1", AgentPool::new("reviewers").spec(spec.clone()).build()),
        vec![m.clone()],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert_eq!(rsp.requirements, Some(want_requirements.clone()));
    assert_eq!(desired_status(&rsp)["phase"], "WaitingForModelConfig");

    let cm = config_map("llama-config", json!({"config.json": "[]"}));
    let rsp = call(&with_config_map(
        with_model(
            request("p2", AgentPool::new("reviewers").spec(spec.clone()).build()),
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
        with_model(
            request("p3", AgentPool::new("reviewers").spec(spec).build()),
            vec![m],
        ),
        vec![cm],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert_eq!(
        response_condition(&rsp, "ModelConfigResolved"),
        model_config_found(
            "sized from ConfigMap team-a/llama-config (Model team-a/llama-8b spec.configFrom.configMapRef)"
        )
    );
    let plan = &desired_status(&rsp)["plan"];
    assert_eq!(plan["objective"], "minimal");
    assert_eq!(plan["architectureGuessed"], false);
}

// ---------------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------------

#[test]
fn malformed_agent_pools_are_refused_and_name_the_field_and_what_is_valid() {
    let long = "x".repeat(5000);
    let rows = vec![
        refusal(
            "image missing",
            "spec.image",
            Remove,
            fatal("InvalidSpec", "spec: image is required"),
        )
        .requiring_nothing(),
        refusal(
            "image empty",
            "spec.image",
            json!(""),
            fatal(
                "InvalidSpec",
                "spec.image is empty; set the agent runtime image",
            ),
        ),
        refusal(
            "image long",
            "spec.image",
            json!(long),
            fatal(
                "InvalidSpec",
                "spec.image is 5000 characters long; use at most 512 (for example ghcr.io/example/agent-runtime:1.0)",
            ),
        ),
        refusal(
            "port zero",
            "spec.port",
            json!(0),
            fatal("InvalidSpec", "spec.port: 0 is out of range; use a whole number from 1 to 65535"),
        )
        .requiring_nothing(),
        refusal(
            "port huge",
            "spec.port",
            json!(70000),
            fatal("InvalidSpec", "spec.port: 70000 is out of range; use a whole number from 1 to 65535"),
        )
        .requiring_nothing(),
        refusal(
            "port fraction",
            "spec.port",
            json!(80.5),
            fatal("InvalidSpec", "spec.port: 80.5 is not a whole number; use a whole number from 1 to 65535"),
        )
        .requiring_nothing(),
        refusal(
            "minReplicas negative",
            "spec.minReplicas",
            json!(-1),
            fatal("InvalidSpec", "spec.minReplicas: -1 is out of range; use a whole number from 0 to 1000"),
        )
        .requiring_nothing(),
        refusal(
            "maxReplicas below min",
            "spec.maxReplicas",
            json!(1),
            fatal(
                "InvalidSpec",
                "spec.minReplicas 2 exceeds spec.maxReplicas 1",
            ),
        ),
        refusal(
            "maxReplicas 1e30",
            "spec.maxReplicas",
            json!(1e30),
            fatal(
                "InvalidSpec",
                "spec.maxReplicas: 1e+30 is out of range; use a whole number from 1 to 1000",
            ),
        )
        .requiring_nothing(),
        refusal(
            "prewarmPercent 150",
            "spec.prewarmPercent",
            json!(150),
            fatal("InvalidSpec", "spec.prewarmPercent: 150 is out of range; use a whole number from 0 to 100"),
        )
        .requiring_nothing(),
        refusal(
            "tokensPerSecondBudget negative",
            "spec.tokensPerSecondBudget",
            json!(-5),
            fatal(
                "InvalidSpec",
                "spec.tokensPerSecondBudget: -5 is out of range; use a whole number of at least 1",
            ),
        )
        .requiring_nothing(),
        refusal(
            "tokensPerSecondBudget beyond 64 model-server replicas",
            "spec.tokensPerSecondBudget",
            json!(100_000),
            fatal(
                "BudgetTooLarge",
                "spec.tokensPerSecondBudget needs 3061 model-server replicas at 32.7 tokens/s each, more than 64; \
                 lower the budget, shorten spec.agentClass.maxContextLength (a replica batches more sequences of a \
                 shorter context) or choose a faster spec.gpuRequirements.type",
            ),
        ),
        refusal(
            "temperature NaN",
            "spec.agentClass.temperature",
            json!("NaN"),
            fatal(
                "InvalidSpec",
                "spec.agentClass.temperature: the string \"NaN\" is not a number; use a number from 0 to 2",
            ),
        )
        .requiring_nothing(),
        refusal(
            "temperature 5",
            "spec.agentClass.temperature",
            json!(5),
            fatal(
                "InvalidSpec",
                "spec.agentClass.temperature: 5 is out of range; use a number from 0 to 2",
            ),
        )
        .requiring_nothing(),
        refusal(
            "temperature negative",
            "spec.agentClass.temperature",
            json!(-0.5),
            fatal(
                "InvalidSpec",
                "spec.agentClass.temperature: -0.5 is out of range; use a number from 0 to 2",
            ),
        )
        .requiring_nothing(),
        refusal(
            "maxTokens zero",
            "spec.agentClass.maxTokens",
            json!(0),
            fatal(
                "InvalidSpec",
                "spec.agentClass.maxTokens: 0 is out of range; use a whole number of at least 1",
            ),
        )
        .requiring_nothing(),
        refusal(
            "maxTokens huge",
            "spec.agentClass.maxTokens",
            json!(1e30),
            fatal(
                "InvalidSpec",
                "spec.agentClass.maxTokens: 1e+30 is out of range; use a whole number of at least 1",
            ),
        )
        .requiring_nothing(),
        refusal(
            "maxContextLength string",
            "spec.agentClass.maxContextLength",
            json!("16k"),
            fatal(
                "InvalidSpec",
                "spec.agentClass.maxContextLength: the string \"16k\" is not a whole number; use a whole number from 256 to 10485760",
            ),
        )
        .requiring_nothing(),
        refusal(
            "modelRef missing name",
            "spec.agentClass.modelRef",
            json!({}),
            fatal("InvalidSpec", "spec.agentClass.modelRef: name is required"),
        )
        .requiring_nothing(),
        refusal(
            "modelRef empty name",
            "spec.agentClass.modelRef",
            json!({"name": ""}),
            fatal(
                "InvalidSpec",
                "spec.agentClass.modelRef.name is empty; name a Model in the AgentPool's namespace",
            ),
        )
        .requiring_nothing(),
        refusal(
            "modelRef name no Model can have",
            "spec.agentClass.modelRef",
            json!({"name": "Llama_Big"}),
            fatal(
                "InvalidSpec",
                "spec.agentClass.modelRef.name is \"Llama_Big\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example llama-3-1-8b)",
            ),
        )
        .requiring_nothing(),
        refusal(
            "memory credential in configmap",
            "spec.agentClass.memoryConfig",
            json!({"type": "redis", "connectionString": "redis://:pw@redis:6379"}),
            fatal(
                "CredentialInConfig",
                "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead",
            ),
        ),
        refusal(
            "memory password with spaces",
            "spec.agentClass.memoryConfig",
            json!({"type": "postgres", "connectionString": "host=db user=agent password = pw dbname=m"}),
            fatal(
                "CredentialInConfig",
                "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead",
            ),
        ),
        refusal(
            "memory ADO.NET password",
            "spec.agentClass.memoryConfig",
            json!({"type": "postgres", "connectionString": "Server=db;User Id=agent;Password=x;"}),
            fatal(
                "CredentialInConfig",
                "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead",
            ),
        ),
        refusal(
            "memory api_key parameter",
            "spec.agentClass.memoryConfig",
            json!({"type": "postgres", "connectionString": "rediss://redis:6380?api_key=k"}),
            fatal(
                "CredentialInConfig",
                "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead",
            ),
        ),
        refusal(
            "memory compact password pair",
            "spec.agentClass.memoryConfig",
            json!({"type": "redis", "connectionString": "redis:6379,password:1234"}),
            fatal(
                "CredentialInConfig",
                "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead",
            ),
        ),
        refusal(
            "env literal api key",
            "spec.env",
            json!([{"name": "LOG_LEVEL", "value": "info"}, {"name": "OPENAI_API_KEY", "value": "sk-live-123"}]),
            fatal(
                "CredentialInEnv",
                "spec.env[1].value: OPENAI_API_KEY looks like a credential, which would sit in plain text in the agents' Deployment; put it in a Secret and set spec.env[1].valueFrom.secretKeyRef {name, key} instead of value",
            ),
        ),
        refusal(
            "env password in a url",
            "spec.env",
            json!([{"name": "DATABASE_URL", "value": "postgres://agent:hunter2@db:5432/memory"}]),
            fatal(
                "CredentialInEnv",
                "spec.env[0].value of DATABASE_URL holds a credential (a password in a URL or a secret key=value pair), which would sit in plain text in the agents' Deployment; put it in a Secret and set spec.env[0].valueFrom.secretKeyRef {name, key} instead of value",
            ),
        ),
        refusal(
            "memory access_token parameter",
            "spec.agentClass.memoryConfig",
            json!({"type": "postgres", "connectionString": "https://mem.example.com/v1?access_token=t"}),
            fatal(
                "CredentialInConfig",
                "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead",
            ),
        ),
        refusal(
            "memory sslpassword",
            "spec.agentClass.memoryConfig",
            json!({"type": "postgres", "connectionString": "host=db sslpassword=x"}),
            fatal(
                "CredentialInConfig",
                "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead",
            ),
        ),
        refusal(
            "memory userinfo without scheme",
            "spec.agentClass.memoryConfig",
            json!({"type": "postgres", "connectionString": "agent:pw@db:5432/memory"}),
            fatal(
                "CredentialInConfig",
                "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead",
            ),
        ),
        refusal(
            "guardrail authorization key",
            "spec.agentClass.guardrails",
            json!([{"type": "content-filter", "action": "block", "config": {"authorization": "x"}}]),
            fatal(
                "CredentialInConfig",
                "spec.agentClass.guardrails[0].config.authorization looks like a credential, which would land in a ConfigMap; put it in a Secret and pass it with spec.env valueFrom.secretKeyRef",
            ),
        ),
        refusal(
            "guardrail auth key",
            "spec.agentClass.guardrails",
            json!([{"type": "content-filter", "action": "block", "config": {"auth": "x"}}]),
            fatal(
                "CredentialInConfig",
                "spec.agentClass.guardrails[0].config.auth looks like a credential, which would land in a ConfigMap; put it in a Secret and pass it with spec.env valueFrom.secretKeyRef",
            ),
        ),
        refusal(
            "guardrail accessKey",
            "spec.agentClass.guardrails",
            json!([{"type": "content-filter", "action": "block", "config": {"accessKey": "x"}}]),
            fatal(
                "CredentialInConfig",
                "spec.agentClass.guardrails[0].config.accessKey looks like a credential, which would land in a ConfigMap; put it in a Secret and pass it with spec.env valueFrom.secretKeyRef",
            ),
        ),
        refusal(
            "guardrail password in a URL value",
            "spec.agentClass.guardrails",
            json!([{"type": "content-filter", "action": "block", "config": {"endpoint": "https://u:p@filter.example.com"}}]),
            fatal(
                "CredentialInConfig",
                "spec.agentClass.guardrails[0].config.endpoint holds a credential (a password in a URL or a secret key=value pair), which would land in a ConfigMap; put it in a Secret and pass it with spec.env valueFrom.secretKeyRef",
            ),
        ),
        refusal(
            "memory type unknown",
            "spec.agentClass.memoryConfig.type",
            json!("floppy"),
            fatal(
                "InvalidSpec",
                "spec.agentClass.memoryConfig.type: \"floppy\" is not valid; use one of ephemeral, redis, memcached, postgres",
            ),
        )
        .requiring_nothing(),
        refusal(
            "memory ttl bad",
            "spec.agentClass.memoryConfig.ttl",
            json!("a while"),
            fatal(
                "InvalidSpec",
                "spec.agentClass.memoryConfig.ttl: \"a while\" is not a duration; write one like 500ms, 30s, 5m or 1h30m",
            ),
        ),
        refusal(
            "slo ttft bad",
            "spec.agentClass.slo.ttft",
            json!("fast"),
            fatal(
                "InvalidSpec",
                "spec.agentClass.slo.ttft: \"fast\" is not a duration; write one like 500ms, 30s, 5m or 1h30m",
            ),
        ),
        refusal(
            "tool timeout bad",
            "spec.agentClass.toolPermissions",
            json!([{"name": "x", "timeout": "soon"}]),
            fatal(
                "InvalidSpec",
                "spec.agentClass.toolPermissions[0].timeout: \"soon\" is not a duration; write one like 500ms, 30s, 5m or 1h30m",
            ),
        ),
        refusal(
            "tool timeout long",
            "spec.agentClass.toolPermissions",
            json!([{"name": "x", "timeout": long}]),
            fatal(
                "InvalidSpec",
                "spec.agentClass.toolPermissions[0].timeout: \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"... (5000 characters) is not a duration; write one like 500ms, 30s, 5m or 1h30m",
            ),
        ),
        refusal(
            "tool timeout negative",
            "spec.agentClass.toolPermissions",
            json!([{"name": "x", "timeout": "-5s"}]),
            fatal(
                "InvalidSpec",
                "spec.agentClass.toolPermissions[0].timeout is \"-5s\"; use a duration above zero, such as 500ms, 30s or 1h, or omit it",
            ),
        ),
        refusal(
            "slo ttft zero",
            "spec.agentClass.slo",
            json!({"ttft": "0s"}),
            fatal(
                "InvalidSpec",
                "spec.agentClass.slo.ttft is \"0s\"; use a duration above zero, such as 500ms, 30s or 1h, or omit it",
            ),
        ),
        refusal(
            "rateLimit bad",
            "spec.agentClass.toolPermissions",
            json!([{"name": "x", "rateLimit": "lots"}]),
            fatal(
                "InvalidSpec",
                "spec.agentClass.toolPermissions[0].rateLimit is \"lots\"; write it like 100/min, 10/s or 1000/h",
            ),
        ),
        refusal(
            "tool given twice",
            "spec.agentClass.toolPermissions",
            json!([{"name": "code-search", "rateLimit": "100/min"}, {"name": "web"}, {"name": "code-search", "rateLimit": "10/min"}]),
            fatal(
                "InvalidSpec",
                "spec.agentClass.toolPermissions[2].name \"code-search\" is also toolPermissions[0]'s: with two entries, which limits hold is the agents' guess; give each tool one entry with all its limits",
            ),
        ),
        refusal(
            "guardrail action unknown",
            "spec.agentClass.guardrails",
            json!([{"type": "pii-detection", "action": "explode"}]),
            fatal(
                "InvalidSpec",
                "spec.agentClass.guardrails[0].action: \"explode\" is not valid; use one of block, redact, warn, log",
            ),
        )
        .requiring_nothing(),
        refusal(
            "autoscaling metric unknown",
            "spec.autoscaling.metrics",
            json!([{"type": "vibes", "target": "1"}]),
            warning(
                "AgentPoolWarning",
                "spec.autoscaling.metrics[0].type \"vibes\" has no HorizontalPodAutoscaler mapping and is not applied; use concurrent-sessions, tokens-in-queue, queue-depth, tokens-per-second, tool-call-rate, context-length, ttft-p95, cpu or memory",
            ),
        ),
        refusal(
            "gpu count 1e30",
            "spec.gpuRequirements.count",
            json!(1e30),
            fatal(
                "InvalidSpec",
                "spec.gpuRequirements.count: 1e+30 is out of range; use a whole number from 1 to 64",
            ),
        )
        .requiring_nothing(),
        refusal(
            "gpu type unknown",
            "spec.gpuRequirements.type",
            json!("Z9000"),
            fatal(
                "CannotSize",
                "spec.gpuRequirements.type: unknown GPU type `Z9000`: known GPU types are T4, V100, V100-PCIe, V100-32GB, V100-32GB-PCIe, L4, A10G, L40S, A30, A100-40GB, A100-40GB-PCIe, A100-80GB, A100-80GB-PCIe, H100-80GB, H100-PCIe, H100-NVL, H20, H200, H200-NVL, B200, GB200, B300, GH200, RTX-PRO-6000, MI300X, MI325X",
            ),
        ),
        refusal(
            "migProfile unknown",
            "spec.migProfile",
            json!("9g.1tb"),
            fatal(
                "InvalidSpec",
                "spec.migProfile: invalid MIG choice `9g.1tb`: use auto, none or a profile such as 1g.10gb",
            ),
        ),
        refusal(
            "migProfile empty",
            "spec.migProfile",
            json!(""),
            fatal(
                "InvalidSpec",
                "spec.migProfile is empty; set it (for example auto, none or 1g.10gb) or omit it",
            ),
        ),
        refusal(
            "sessionAffinity ttl bad",
            "spec.sessionAffinity.ttl",
            json!("1 hour"),
            fatal(
                "InvalidSpec",
                "spec.sessionAffinity.ttl: \"1 hour\" is not a duration; write one like 500ms, 30s, 5m or 1h30m",
            ),
        ),
        refusal(
            "sessionAffinity ttl negative",
            "spec.sessionAffinity.ttl",
            json!("-1h"),
            fatal(
                "InvalidSpec",
                "spec.sessionAffinity.ttl is \"-1h\"; use a duration above zero, such as 500ms, 30s or 1h, or omit it",
            ),
        ),
        refusal(
            "ingressHost invalid",
            "spec.ingressHost",
            json!("Not A Host"),
            fatal(
                "InvalidSpec",
                "spec.ingressHost is \"Not A Host\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example agents.example.com)",
            ),
        ),
        refusal(
            "guardrails too large for a ConfigMap",
            "spec.agentClass.guardrails",
            json!([
                {"type": "content-filter", "action": "block", "config": {"blocklist": "x".repeat(700 << 10)}},
                {"type": "pii-detection", "action": "redact", "config": {"patterns": "y".repeat(400 << 10)}},
            ]),
            fatal(
                "ConfigTooLarge",
                "spec.agentClass.guardrails (about 1126538 bytes) makes the agent ConfigMap 1127920 bytes, more \
                     than the 1048576 bytes a ConfigMap holds; shorten it",
            ),
        ),
        refusal(
            "tool maxConcurrency zero",
            "spec.agentClass.toolPermissions",
            json!([{"name": "code-search", "maxConcurrency": 0}]),
            fatal(
                "InvalidSpec",
                "spec.agentClass.toolPermissions[0].maxConcurrency: 0 is out of range; use a whole number of at least 1",
            ),
        )
        .requiring_nothing(),
        refusal(
            "guardrail threshold above 1",
            "spec.agentClass.guardrails",
            json!([{"type": "pii-detection", "action": "redact", "threshold": 1.5}]),
            fatal(
                "InvalidSpec",
                "spec.agentClass.guardrails[0].threshold: 1.5 is out of range; use a number from 0 to 1",
            ),
        )
        .requiring_nothing(),
        refusal(
            "slo tokensPerSecond zero",
            "spec.agentClass.slo.tokensPerSecond",
            json!(0),
            fatal(
                "InvalidSpec",
                "spec.agentClass.slo.tokensPerSecond: 0 is out of range; use a whole number of at least 1",
            ),
        )
        .requiring_nothing(),
        refusal(
            "slo maxCostPerRequest negative",
            "spec.agentClass.slo.maxCostPerRequest",
            json!(-0.5),
            fatal(
                "InvalidSpec",
                "spec.agentClass.slo.maxCostPerRequest: -0.5 is out of range; use a number of at least 0",
            ),
        )
        .requiring_nothing(),
        refusal(
            "slo availabilityPercent above 100",
            "spec.agentClass.slo.availabilityPercent",
            json!(101),
            fatal(
                "InvalidSpec",
                "spec.agentClass.slo.availabilityPercent: 101 is out of range; use a number from 0 to 100",
            ),
        )
        .requiring_nothing(),
        refusal(
            "memory maxSize zero",
            "spec.agentClass.memoryConfig.maxSize",
            json!(0),
            fatal(
                "InvalidSpec",
                "spec.agentClass.memoryConfig.maxSize: 0 is out of range; use a whole number of at least 1",
            ),
        )
        .requiring_nothing(),
        refusal(
            "scaleUp periodSeconds zero",
            "spec.autoscaling.behavior.scaleUp.periodSeconds",
            json!(0),
            fatal(
                "InvalidSpec",
                "spec.autoscaling.behavior.scaleUp.periodSeconds: 0 is out of range; use a whole number from 1 to 1800",
            ),
        )
        .requiring_nothing(),
        refusal(
            "scaleDown maxChangePercent above 1000",
            "spec.autoscaling.behavior.scaleDown.maxChangePercent",
            json!(2000),
            fatal(
                "InvalidSpec",
                "spec.autoscaling.behavior.scaleDown.maxChangePercent: 2000 is out of range; use a whole number from 1 to 1000",
            ),
        )
        .requiring_nothing(),
        refusal(
            "scaleDown maxChangeAbsolute zero",
            "spec.autoscaling.behavior.scaleDown.maxChangeAbsolute",
            json!(0),
            fatal(
                "InvalidSpec",
                "spec.autoscaling.behavior.scaleDown.maxChangeAbsolute: 0 is out of range; use a whole number from 1 to 1000",
            ),
        )
        .requiring_nothing(),
        refusal(
            "systemPrompt 2 MiB",
            "spec.agentClass.systemPrompt",
            json!("p".repeat(2 << 20)),
            fatal(
                "InvalidSpec",
                "spec.agentClass.systemPrompt is 2097152 characters long; use at most 65536",
            ),
        ),
        refusal(
            "env over 64",
            "spec.env",
            json!((0..65).map(|i| json!({"name": format!("E{i}"), "value": "v"})).collect::<Vec<_>>()),
            fatal("InvalidSpec", "spec.env has 65 entries; use at most 64"),
        ),
        refusal(
            "tools over 128",
            "spec.agentClass.toolPermissions",
            json!((0..129).map(|i| json!({"name": format!("t{i}")})).collect::<Vec<_>>()),
            fatal(
                "InvalidSpec",
                "spec.agentClass.toolPermissions has 129 entries; use at most 128",
            ),
        ),
        refusal(
            "guardrails over 64",
            "spec.agentClass.guardrails",
            json!((0..65).map(|i| json!({"type": format!("g{i}"), "action": "log"})).collect::<Vec<_>>()),
            fatal(
                "InvalidSpec",
                "spec.agentClass.guardrails has 65 entries; use at most 64",
            ),
        ),
        refusal(
            "autoscaling metrics over 16",
            "spec.autoscaling",
            json!({"metrics": (0..17).map(|_| json!({"type": "cpu", "target": "70%"})).collect::<Vec<_>>()}),
            fatal(
                "InvalidSpec",
                "spec.autoscaling.metrics has 17 entries; use at most 16",
            ),
        ),
        refusal(
            "guardrail type over 64",
            "spec.agentClass.guardrails",
            json!([{"type": "g".repeat(65), "action": "block"}]),
            fatal(
                "InvalidSpec",
                "spec.agentClass.guardrails[0].type is 65 characters long; use at most 64 (for example pii-detection)",
            ),
        ),
        refusal(
            "autoscaling metric type over 64",
            "spec.autoscaling",
            json!({"metrics": [{"type": "m".repeat(65), "target": "4"}]}),
            fatal(
                "InvalidSpec",
                "spec.autoscaling.metrics[0].type is 65 characters long; use at most 64 (for example concurrent-sessions)",
            ),
        ),
        refusal(
            "tool name empty",
            "spec.agentClass.toolPermissions",
            json!([{"name": " "}]),
            fatal(
                "InvalidSpec",
                "spec.agentClass.toolPermissions[0].name is empty; set it (for example code-search)",
            ),
        ),
        refusal(
            "tool name over 128",
            "spec.agentClass.toolPermissions",
            json!([{"name": "t".repeat(129)}]),
            fatal(
                "InvalidSpec",
                "spec.agentClass.toolPermissions[0].name is 129 characters long; use at most 128 (for example code-search)",
            ),
        ),
        refusal(
            "env entry a list that serde would read by position",
            "spec.env",
            json!([["A", "B"]]),
            fatal("InvalidSpec", "spec.env[0] must be an object; it is a list"),
        )
        .requiring_nothing(),
        refusal(
            "modelRef a list that serde would read by position",
            "spec.agentClass.modelRef",
            json!(["llama-3-1-8b"]),
            fatal(
                "InvalidSpec",
                "spec.agentClass.modelRef must be an object; it is a list",
            ),
        )
        .requiring_nothing(),
        refusal(
            "imagePullSecrets not a name",
            "spec.imagePullSecrets",
            json!([{"name": "agents.registry"}, {"name": "-agents"}]),
            fatal(
                "InvalidSpec",
                "spec.imagePullSecrets[1].name is \"-agents\"; use a DNS name: at most 253 characters of lower-case \
                 letters, digits, '-' and '.', starting and ending with a letter or digit (for example registry-credentials)",
            ),
        ),
        refusal(
            "nodeSelector key",
            "spec.scheduling",
            json!({"nodeSelector": {"node pool": "inference"}}),
            fatal(
                "InvalidSpec",
                "spec.scheduling.nodeSelector: the key \"node pool\" is not a valid label key; use at most 63 letters, \
                 digits, '-', '_' and '.', starting and ending with a letter or digit, after an optional DNS prefix \
                 and '/' (for example node.example.com/pool)",
            ),
        ),
        refusal(
            "nodeSelector value",
            "spec.scheduling",
            json!({"nodeSelector": {"example.com/pool": "gpu inference"}}),
            fatal(
                "InvalidSpec",
                "spec.scheduling.nodeSelector[\"example.com/pool\"] is \"gpu inference\"; a label value is empty or at \
                 most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit (for example \
                 inference)",
            ),
        ),
        refusal(
            "maxTokens as long as the context",
            "spec.agentClass.maxTokens",
            json!(16384),
            fatal(
                "InvalidSpec",
                "spec.agentClass.maxTokens is 16384, but the model server's context (spec.agentClass.maxContextLength) \
                 is 16384 tokens and holds the prompt too: vLLM refuses every request whose prompt and maxTokens \
                 exceed it (400, \"'max_tokens' or 'max_completion_tokens' is too large\"); use fewer than 16384, \
                 leaving room for the system prompt and the conversation, or raise spec.agentClass.maxContextLength",
            ),
        ),
        refusal(
            "maxTokens beyond the derived context",
            "spec.agentClass",
            json!({"modelRef": {"name": "llama-3-1-8b"}, "maxTokens": 200000}),
            fatal(
                "InvalidSpec",
                "spec.agentClass.maxTokens is 200000, but the model server's context (as the plan derived it) is \
                 26624 tokens and holds the prompt too: vLLM refuses every request whose prompt and maxTokens exceed \
                 it (400, \"'max_tokens' or 'max_completion_tokens' is too large\"); use fewer than 26624, leaving \
                 room for the system prompt and the conversation, or raise spec.agentClass.maxContextLength",
            ),
        ),
        refusal(
            "image the kubelet cannot pull",
            "spec.image",
            json!("ghcr.io/example/agent-runtime:1.0:beta"),
            fatal(
                "InvalidSpec",
                "spec.image: the kubelet cannot pull \"ghcr.io/example/agent-runtime:1.0:beta\" (InvalidImageName); \
                 an image reference is an optional registry host, then lower-case path parts of letters, digits, \
                 '.', '_' and '-' separated by '/', then an optional :tag or @digest (for example \
                 ghcr.io/example/agent-runtime:1.0)",
            ),
        ),
        refusal(
            "image with a space inside",
            "spec.image",
            json!(" ghcr.io/example/agent-runtime 1.0"),
            fatal(
                "InvalidSpec",
                "spec.image is \"ghcr.io/example/agent-runtime 1.0\"; an image reference holds no white space (for \
                 example ghcr.io/example/agent-runtime:1.0)",
            ),
        ),
        refusal(
            "env name with '='",
            "spec.env",
            json!([{"name": "LOG_LEVEL", "value": "info"}, {"name": "MODE=fast", "value": "1"}]),
            fatal(
                "InvalidSpec",
                "spec.env[1].name is \"MODE=fast\"; name the variable with printable ASCII characters other than '=' \
                 (for example LOG_LEVEL)",
            ),
        ),
        refusal(
            "env value and valueFrom",
            "spec.env",
            json!([{"name": "REDIS_URL", "value": "redis://cache:6379",
                    "valueFrom": {"secretKeyRef": {"name": "redis", "key": "url"}}}]),
            fatal(
                "InvalidSpec",
                "spec.env[0] has both value and valueFrom; give one: a literal value, or where to read it from",
            ),
        ),
        refusal(
            "env valueFrom empty",
            "spec.env",
            json!([{"name": "REDIS_URL", "valueFrom": {}}]),
            fatal(
                "InvalidSpec",
                "spec.env[0].valueFrom reads nothing; give one of secretKeyRef, configMapKeyRef, fieldRef or \
                 resourceFieldRef",
            ),
        ),
        refusal(
            "env valueFrom two sources",
            "spec.env",
            json!([{"name": "REDIS_URL", "valueFrom": {"secretKeyRef": {"name": "redis", "key": "url"},
                                                        "configMapKeyRef": {"name": "redis", "key": "url"}}}]),
            fatal(
                "InvalidSpec",
                "spec.env[0].valueFrom reads from several sources; give one of secretKeyRef, configMapKeyRef, \
                 fieldRef or resourceFieldRef",
            ),
        ),
        refusal(
            "env Secret not a name",
            "spec.env",
            json!([{"name": "REDIS_URL", "valueFrom": {"secretKeyRef": {"name": "Redis", "key": "url"}}}]),
            fatal(
                "InvalidSpec",
                "spec.env[0].valueFrom.secretKeyRef.name is \"Redis\"; use a DNS name: at most 253 characters of \
                 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example \
                 agent-secrets)",
            ),
        ),
        refusal(
            "env Secret key with a space",
            "spec.env",
            json!([{"name": "REDIS_URL", "valueFrom": {"secretKeyRef": {"name": "redis", "key": "redis url"}}}]),
            fatal(
                "InvalidSpec",
                "spec.env[0].valueFrom.secretKeyRef.key is \"redis url\"; a key of a Secret or ConfigMap is at most \
                 253 letters, digits, '-', '_' and '.', and not '.' or starting with '..' (for example api-key)",
            ),
        ),
        refusal(
            "env ConfigMap key empty",
            "spec.env",
            json!([{"name": "LOG_LEVEL", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": ""}}}]),
            fatal(
                "InvalidSpec",
                "spec.env[0].valueFrom.configMapKeyRef.key is \"\"; a key of a Secret or ConfigMap is at most 253 \
                 letters, digits, '-', '_' and '.', and not '.' or starting with '..' (for example log-level)",
            ),
        ),
        refusal(
            "env fieldRef a field pods do not give",
            "spec.env",
            json!([{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeSelector"}}}]),
            fatal(
                "InvalidSpec",
                "spec.env[0].valueFrom.fieldRef.fieldPath is \"spec.nodeSelector\"; a variable reads one of \
                 metadata.name, metadata.namespace, metadata.uid, spec.nodeName, spec.serviceAccountName, \
                 status.hostIP, status.hostIPs, status.podIP, status.podIPs, or metadata.labels['<key>'] or \
                 metadata.annotations['<key>']",
            ),
        ),
        refusal(
            "env resourceFieldRef not a resource",
            "spec.env",
            json!([{"name": "GPUS", "valueFrom": {"resourceFieldRef": {"resource": "limits.nvidia.com/gpu"}}}]),
            fatal(
                "InvalidSpec",
                "spec.env[0].valueFrom.resourceFieldRef.resource is \"limits.nvidia.com/gpu\"; use one of \
                 limits.cpu, limits.memory, limits.ephemeral-storage, requests.cpu, requests.memory, \
                 requests.ephemeral-storage, or limits.hugepages-<size>",
            ),
        ),
        refusal(
            "memory Secret not a name",
            "spec.agentClass.memoryConfig.connectionSecretRef",
            json!({"name": "Redis URL"}),
            fatal(
                "InvalidSpec",
                "spec.agentClass.memoryConfig.connectionSecretRef.name is \"Redis URL\"; use a DNS name: at most 253 \
                 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit \
                 (for example agent-memory)",
            ),
        ),
        refusal(
            "memory Secret key starting with ..",
            "spec.agentClass.memoryConfig.connectionSecretRef",
            json!({"name": "redis", "key": "..url"}),
            fatal(
                "InvalidSpec",
                "spec.agentClass.memoryConfig.connectionSecretRef.key is \"..url\"; a key of a Secret or ConfigMap is \
                 at most 253 letters, digits, '-', '_' and '.', and not '.' or starting with '..' (for example \
                 connectionString)",
            ),
        ),
        refusal(
            "modelServerApiKeySecretRef on a VLLMRuntime",
            "spec.modelServerApiKeySecretRef",
            json!({"name": "code-assistant-model-key"}),
            fatal(
                "CannotStart",
                "spec.modelServerApiKeySecretRef: a VLLMRuntime's environment (vllmConfig.env) holds only literal \
                 values, so the key would stand in plain text in it; set spec.runtime to deployment or \
                 leader-worker-set, whose pods read VLLM_API_KEY from the Secret (spec.runtime is unset, and the \
                 platform's input.defaults.runtime is vllm-runtime)",
            ),
        ),
        refusal(
            "modelServerApiKeySecretRef not a name",
            "spec.modelServerApiKeySecretRef",
            json!({"name": "Model Key"}),
            fatal(
                "InvalidSpec",
                "spec.modelServerApiKeySecretRef.name is \"Model Key\"; use a DNS name: at most 253 characters of \
                 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example \
                 code-assistant-model-key)",
            ),
        ),
        refusal(
            "modelServerApiKeySecretRef key with a space",
            "spec.modelServerApiKeySecretRef",
            json!({"name": "code-assistant-model-key", "key": "api key"}),
            fatal(
                "InvalidSpec",
                "spec.modelServerApiKeySecretRef.key is \"api key\"; a key of a Secret or ConfigMap is at most 253 \
                 letters, digits, '-', '_' and '.', and not '.' or starting with '..' (for example api-key)",
            ),
        ),
        refusal(
            "env not list",
            "spec.env",
            json!("A=B"),
            fatal("InvalidSpec", "spec.env: the string \"A=B\" is not a list"),
        )
        .requiring_nothing(),
        refusal(
            "unknown field",
            "spec.replicas",
            json!(3),
            fatal(
                "InvalidSpec",
                "spec.replicas: unknown field replicas; valid fields are agentClass, image, imagePullSecrets, env, port, minReplicas, maxReplicas, prewarmPercent, tokensPerSecondBudget, migProfile, objective, autoscaling, modelServerAutoscaling, modelServerApiKeySecretRef, gpuRequirements, runtime, sessionAffinity, scheduling, ingressHost, crossplane",
            ),
        )
        .requiring_nothing(),
    ];
    assert!(rows.len() >= 20, "at least twenty cases");
    Refusals::of(example("examples/configuration/agents/agentpool.yaml"))
        .with_model(example("examples/configuration/agents/model.yaml"))
        .requiring(requirement_of("llama-3-1-8b"))
        .check(rows);
}

#[test]
fn bad_specs_are_fatal_results_naming_the_field() {
    Refusals::of(AgentPool::new("reviewers").spec(small_pool()).build())
        .tag("e")
        .with_model(llama_8b())
        .after(fnv1::State::default())
        .requiring(requirement())
        .check(vec![
            refusal(
                "temperature out of range",
                "spec",
                Merge(json!({"agentClass": {"temperature": 3.0}})),
                fatal("InvalidSpec", "spec.agentClass.temperature: 3 is out of range; use a number from 0 to 2"),
            )
        .requiring_nothing(),
            refusal(
                "min above max",
                "spec",
                Merge(json!({"minReplicas": 8, "maxReplicas": 4})),
                fatal("InvalidSpec", "spec.minReplicas 8 exceeds spec.maxReplicas 4"),
            ),
            refusal(
                "ingress without port",
                "spec",
                Merge(json!({"ingressHost": "agents.example.com"})),
                fatal("InvalidSpec", "spec.ingressHost needs spec.port: the Ingress routes to the agents' Service on that port"),
            ),
            refusal(
                "GPU too small",
                "spec",
                Merge(json!({"gpuRequirements": {"type": "L4", "count": 1, "memory": "40Gi"}})),
                fatal("InvalidSpec", "spec.gpuRequirements.memory 40Gi exceeds the 22 GiB of a L4; choose a larger spec.gpuRequirements.type"),
            ),
        ]);
}

#[test]
fn an_agent_pool_waiting_for_its_model_still_checks_its_numbers() {
    // No Model yet: a number out of range is refused as the spec is read,
    // before the Model is looked up or asked for.
    Refusals::of(example("examples/configuration/agents/agentpool.yaml"))
        .tag("w")
        .after(fnv1::State::default())
        .requiring(requirement_of("llama-3-1-8b"))
        .check(vec![
            refusal(
                "gpu count zero",
                "spec.gpuRequirements.count",
                json!(0),
                fatal(
                    "InvalidSpec",
                    "spec.gpuRequirements.count: 0 is out of range; use a whole number from 1 to 64",
                ),
            )
        .requiring_nothing(),
            refusal(
                "maxContextLength 100",
                "spec.agentClass.maxContextLength",
                json!(100),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.maxContextLength: 100 is out of range; use a whole number from 256 to 10485760",
                ),
            )
        .requiring_nothing(),
            refusal(
                "tokensPerSecondBudget zero",
                "spec.tokensPerSecondBudget",
                json!(0),
                fatal(
                    "InvalidSpec",
                    "spec.tokensPerSecondBudget: 0 is out of range; use a whole number of at least 1",
                ),
            )
        .requiring_nothing(),
        ]);
}

/// Agents with tools send OpenAI requests with `tools` (tool_choice auto),
/// which vLLM refuses (400) unless it parses tool calls: the model server
/// gets the parser vLLM documents for the model family, or the Model's own.
#[test]
fn agents_with_tools_get_a_model_server_that_parses_tool_calls() {
    let tools = json!([{"name": "code_search", "requiredScopes": ["read:code"]}]);
    let with_tools = |model: Value| {
        let mut spec = small_pool();
        spec["runtime"] = json!("deployment");
        spec["agentClass"]["toolPermissions"] = tools.clone();
        call(&with_model(
            request("tools", AgentPool::new("reviewers").spec(spec).build()),
            vec![model],
        ))
    };
    let serve_args = |rsp: &fnv1::RunFunctionResponse| -> Vec<String> {
        serde_json::from_value(
            manifest(rsp, "model_server_deployment")["spec"]["template"]["spec"]["containers"][0]["args"].clone(),
        )
        .unwrap()
    };
    let tool_args = |args: &[String]| -> Vec<String> {
        args.iter()
            .skip_while(|a| *a != "--enable-auto-tool-choice")
            .take(3)
            .cloned()
            .collect()
    };
    let reasons = |rsp: &fnv1::RunFunctionResponse| -> Vec<String> {
        serde_json::from_value(desired_status(rsp)["plan"]["reasons"].clone()).unwrap()
    };

    // The family's parser: Llama 3.1 Instruct's JSON tool calls.
    let rsp = with_tools(llama_8b());
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert_eq!(
        tool_args(&serve_args(&rsp)),
        [
            "--enable-auto-tool-choice",
            "--tool-call-parser",
            "llama3_json"
        ]
    );
    assert!(reasons(&rsp).contains(
        &"Tool calling: the agents have tools (spec.agentClass.toolPermissions), so vLLM parses tool calls with \
          llama3_json, the parser it documents for meta-llama/Llama-3.1-8B-Instruct (--enable-auto-tool-choice \
          --tool-call-parser llama3_json; the Model's spec.toolCallParser names another)."
            .to_string()
    ), "{:#?}", reasons(&rsp));

    // On the operator's VLLMRuntime too, through its extra arguments.
    let mut spec = small_pool();
    spec["agentClass"]["toolPermissions"] = tools.clone();
    let rsp = call(&with_model(
        request("tools", AgentPool::new("reviewers").spec(spec).build()),
        vec![llama_8b()],
    ));
    assert_eq!(
        manifest(&rsp, "model_server")["spec"]["vllmConfig"]["extraArgs"],
        json!([
            "--enable-auto-tool-choice",
            "--tool-call-parser",
            "llama3_json"
        ])
    );

    // The Model's own parser wins (a fine-tune trained on another format).
    let mut own_parser = llama_8b();
    own_parser["spec"]["toolCallParser"] = json!("pythonic");
    let rsp = with_tools(own_parser);
    assert_eq!(
        tool_args(&serve_args(&rsp)),
        [
            "--enable-auto-tool-choice",
            "--tool-call-parser",
            "pythonic"
        ]
    );
    assert!(
        reasons(&rsp).contains(
            &"Tool calling: vLLM parses tool calls with pythonic, the Model's spec.toolCallParser \
          (--enable-auto-tool-choice --tool-call-parser pythonic)."
                .to_string()
        ),
        "{:#?}",
        reasons(&rsp)
    );

    // A model whose parser nobody documented: the pool serves, and says so.
    let fine_tune = model(
        "llama-8b",
        json!({"weightsURI": "hf://acme/support-bot-8b", "parameterCount": "8B"}),
    );
    let rsp = with_tools(fine_tune);
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert_eq!(tool_args(&serve_args(&rsp)), Vec::<String>::new());
    let unknown = "spec.agentClass.toolPermissions gives the agents tools, but no tool-call parser is known for \
                   acme/support-bot-8b, and vLLM refuses requests with tools (tool_choice auto) without one: set the \
                   Model's spec.toolCallParser to the parser of the model's tool-call format (vLLM's tool calling \
                   guide lists them: hermes, llama3_json, mistral, pythonic, ...)";
    let warnings: Vec<String> =
        serde_json::from_value(desired_status(&rsp)["plan"]["warnings"].clone()).unwrap();
    assert!(warnings.contains(&unknown.to_string()), "{warnings:#?}");
    assert!(
        rsp.results.contains(&warning("AgentPoolWarning", unknown)),
        "{:#?}",
        rsp.results
    );

    // Without tools, nothing changes.
    let mut spec = small_pool();
    spec["runtime"] = json!("deployment");
    let rsp = call(&with_model(
        request("tools", AgentPool::new("reviewers").spec(spec).build()),
        vec![llama_8b()],
    ));
    assert_eq!(tool_args(&serve_args(&rsp)), Vec::<String>::new());
}

/// The model server takes no key, but OpenAI's SDKs (Python, JavaScript,
/// LangChain) refuse to start without one: the agents get vLLM's documented
/// placeholder, which a key of the pool's own (from a Secret) replaces.
#[test]
fn the_agents_get_a_placeholder_api_key_their_own_replaces() {
    let api_keys = |spec: Value| -> Vec<Value> {
        let rsp = call(&with_model(
            request("key", AgentPool::new("reviewers").spec(spec).build()),
            vec![llama_8b()],
        ));
        assert_eq!(fatals(&rsp), Vec::<&str>::new());
        manifest(&rsp, "agents")["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "OPENAI_API_KEY")
            .cloned()
            .collect()
    };
    assert_eq!(
        api_keys(small_pool()),
        [json!({"name": "OPENAI_API_KEY", "value": "EMPTY"})]
    );
    let own = json!({"name": "OPENAI_API_KEY", "valueFrom": {"secretKeyRef": {"name": "gateway-key", "key": "key"}}});
    let mut spec = small_pool();
    spec["env"] = json!([own]);
    assert_eq!(api_keys(spec), [own]);
}

/// A key for the pool's model server: its pods require it under /v1 and
/// the agents send it, both read from the pool's Secret, so no other pod
/// that reaches the Service can use the GPUs. Auto serves on a Deployment,
/// whose pods read the key from the Secret; the VLLMRuntime cannot (see the
/// refusals).
#[test]
fn a_model_server_key_is_required_by_the_server_and_sent_by_the_agents() {
    let mut spec = small_pool();
    spec["runtime"] = json!("auto");
    spec["modelServerApiKeySecretRef"] = json!({"name": "reviewers-model-key"});
    let rsp = call(&with_model(
        request("k", AgentPool::new("reviewers").spec(spec).build()),
        vec![llama_8b()],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    let from_secret = json!({"secretKeyRef": {"name": "reviewers-model-key", "key": "api-key"}});
    let env_named = |key: &str, name: &str| -> Vec<Value> {
        manifest(&rsp, key)["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == name)
            .cloned()
            .collect()
    };
    assert_eq!(
        env_named("model_server_deployment", "VLLM_API_KEY"),
        [json!({"name": "VLLM_API_KEY", "valueFrom": from_secret})]
    );
    assert_eq!(
        env_named("agents", "OPENAI_API_KEY"),
        [json!({"name": "OPENAI_API_KEY", "valueFrom": from_secret})]
    );
    let reasons = desired_status(&rsp)["plan"]["reasons"].clone();
    let said = |start: &str| {
        reasons
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .find(|r| r.starts_with(start))
            .map(str::to_string)
    };
    assert_eq!(
        said("Runtime:").as_deref(),
        Some(
            "Runtime: deployment (spec.runtime auto): a VLLMRuntime's environment holds only literal values, so it \
             cannot read spec.modelServerApiKeySecretRef's key from the Secret; a Deployment's pods read \
             VLLM_API_KEY from it."
        )
    );
    assert_eq!(
        said("API key").as_deref(),
        Some(
            "API key: requests under /v1 need Authorization: Bearer with the key api-key of Secret \
             reviewers-model-key (VLLM_API_KEY); /health and /metrics stay open for the probes and Prometheus."
        )
    );
    for key in ["agents", "model_server_deployment"] {
        assert_eq!(
            validate_composed(&manifest(&rsp, key)),
            Vec::<String>::new(),
            "{key}"
        );
    }

    // The agents' own OPENAI_API_KEY replaces the server's key: unless it
    // is the same, the server answers them 401, which is said. Beside an
    // OPENAI_BASE_URL of their own (a gateway's), it is theirs to choose.
    let with_env = |env: Value| {
        let mut spec = small_pool();
        spec["runtime"] = json!("deployment");
        spec["modelServerApiKeySecretRef"] = json!({"name": "reviewers-model-key"});
        spec["env"] = env;
        call(&with_model(
            request("k", AgentPool::new("reviewers").spec(spec).build()),
            vec![llama_8b()],
        ))
    };
    let own_key = |secret: &str, key: &str| json!({"name": "OPENAI_API_KEY", "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}});
    let replaced = "spec.env sets OPENAI_API_KEY, which replaces in the agents the key the model server requires \
                    (key api-key of Secret reviewers-model-key, spec.modelServerApiKeySecretRef): unless it holds \
                    the same key, the model server answers the agents 401; drop it from spec.env, or set \
                    OPENAI_BASE_URL there too for a gateway that takes it";
    let rsp = with_env(json!([own_key("team-key", "api-key")]));
    assert_eq!(rsp.results, vec![warning("AgentPoolWarning", replaced)]);
    assert_eq!(desired_status(&rsp)["plan"]["warnings"], json!([replaced]));
    for env in [
        json!([own_key("reviewers-model-key", "api-key")]),
        json!([own_key("gateway-key", "key"),
               {"name": "OPENAI_BASE_URL", "value": "http://gateway.example.com/v1"}]),
    ] {
        let rsp = with_env(env.clone());
        assert_eq!(rsp.results, vec![], "{env}");
    }
}

/// A Model of gated weights without a token: the pool says where the
/// token goes (the Model), before its model server fails to download.
#[test]
fn a_gated_model_without_a_token_is_said_on_the_pool() {
    let mut no_token = llama_8b();
    no_token["spec"]
        .as_object_mut()
        .unwrap()
        .remove("hfTokenSecretRef");
    let rsp = call(&with_model(
        request("g", AgentPool::new("reviewers").spec(small_pool()).build()),
        vec![no_token],
    ));
    let gated = "meta-llama/Llama-3.1-8B-Instruct is gated on Hugging Face (an account must accept its publisher's \
                 licence) and no token is given: unless the platform's image or mirror provides one, vLLM cannot \
                 download it and the model server never starts; set the Model's spec.hfTokenSecretRef to a Secret \
                 holding the token of an account that accepted it (key token)";
    assert_eq!(rsp.results, vec![warning("AgentPoolWarning", gated)]);
    assert_eq!(desired_status(&rsp)["plan"]["warnings"], json!([gated]));

    // The platform's token serves it.
    let mut no_token = llama_8b();
    no_token["spec"]
        .as_object_mut()
        .unwrap()
        .remove("hfTokenSecretRef");
    let mut req = with_model(
        request("g", AgentPool::new("reviewers").spec(small_pool()).build()),
        vec![no_token],
    );
    req.input = Some(input(
        json!({"defaults": {"hfTokenSecretRef": {"name": "platform-hf"}}}),
    ));
    let rsp = call(&req);
    assert_eq!(rsp.results, vec![]);
    assert_eq!(
        manifest(&rsp, "model_server")["spec"]["model"]["hfTokenSecret"],
        json!({"hfTokenSecretName": "platform-hf", "hfTokenKeyName": "token"})
    );
}

/// The platform's model-server PriorityClass, ServiceAccount and scheduler
/// reach the pool's model server, not its agents, which need no GPU and
/// read no weights.
#[test]
fn the_pools_model_server_runs_at_the_platforms_priority_and_account_and_its_agents_do_not() {
    let mut spec = small_pool();
    spec["runtime"] = json!("deployment");
    let mut req = with_model(
        request("p", AgentPool::new("reviewers").spec(spec).build()),
        vec![llama_8b()],
    );
    req.input = Some(input(json!({"defaults": {"runtime": "auto",
        "modelServerPriorityClassName": "inference-critical",
        "modelServerServiceAccountName": "model-server",
        "modelServerSchedulerName": "volcano"}})));
    let rsp = call(&req);
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    let server = &manifest(&rsp, "model_server_deployment")["spec"]["template"]["spec"];
    let agents = &manifest(&rsp, "agents")["spec"]["template"]["spec"];
    for (field, value) in [
        ("priorityClassName", "inference-critical"),
        ("serviceAccountName", "model-server"),
        ("schedulerName", "volcano"),
    ] {
        assert_eq!(server[field], value, "{field}");
        assert_eq!(agents.get(field), None, "{field}");
    }
}
