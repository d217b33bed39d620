//! A model server that scales with load: the autoscaler the platform names
//! (KEDA or an HPA) on the runtime's workload, the target the plan derives,
//! replicas left to the autoscaler once they exist, and the refusals when
//! the platform cannot do what the XR asks.

mod support;

use function_inference::protocol::fnv1;
use serde_json::{Value, json};
use support::fixtures::*;
use support::manifests::validate_composed;
use support::*;

const LLAMA_8B: &str = "meta-llama/Llama-3.1-8B-Instruct";

fn platform(autoscaler: &str, runtime: &str) -> Value {
    json!({"defaults": {
        "gpuType": "H100-80GB",
        "runtime": runtime,
        "autoscaler": autoscaler,
        "prometheusAddress": "http://prometheus.monitoring:9090",
        "podMonitor": true,
    }})
}

fn scaled(autoscaling: Value) -> Value {
    LlmInference::new("chat")
        .model(LLAMA_8B)
        .field("hfTokenSecretRef", json!({"name": "hf-token"}))
        .field("autoscaling", autoscaling)
        .build()
}

#[test]
fn keda_scales_a_deployment_at_the_target_the_plan_derives() {
    let mut req = request(
        "k1",
        scaled(
            json!({"minReplicas": 1, "maxReplicas": 8, "promptTokens": 6144, "outputTokens": 2048}),
        ),
    );
    req.input = Some(input(platform("keda", "deployment")));
    let rsp = call(&req);
    assert_not_fatal(&rsp.results, "keda");
    let so = desired_resource(&rsp, "autoscaler");
    assert_eq!(validate_composed(&so), Vec::<String>::new());
    let status = desired_status(&rsp);
    let target = status["autoscaling"]["targetRequestsPerReplica"]
        .as_u64()
        .unwrap();
    let kv = status["autoscaling"]["kvCacheRequests"].as_u64().unwrap();
    // 80 % of what the KV cache holds at 8,192 tokens.
    assert_eq!(target, (kv as f64 * 0.8) as u64, "{status:#}");
    assert!(kv > 10, "{status:#}");
    assert_eq!(
        so["spec"],
        json!({
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "chat"},
            "minReplicaCount": 1, "maxReplicaCount": 8, "pollingInterval": 15,
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {
                "stabilizationWindowSeconds": 600,
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 600}]}}}},
            "triggers": [{"type": "prometheus", "name": "vllm-requests-in-flight", "metricType": "AverageValue",
                "metadata": {
                    "serverAddress": "http://prometheus.monitoring:9090",
                    "query": "sum(vllm:num_requests_running{namespace=\"team-a\",pod=~\"chat-[a-z0-9]+-[a-z0-9]+\"}) + sum(vllm:num_requests_waiting{namespace=\"team-a\",pod=~\"chat-[a-z0-9]+-[a-z0-9]+\"})",
                    "threshold": target.to_string()}}],
        })
    );
    assert!(
        status["autoscaling"]["reason"].as_str().unwrap().starts_with(&format!(
            "Deployment chat scales between 1 and 8 replicas on vllm:num_requests_running + vllm:num_requests_waiting through KEDA's Prometheus trigger: it scales out above {target} requests per replica (80 % of what one serves at once): the KV cache holds {kv} requests of 8,192 tokens (prompt and output)"
        )),
        "{status:#}"
    );
    // The count is the autoscaler's: the Deployment starts at its default,
    // one replica, which proves the server starts.
    assert_eq!(
        desired_resource(&rsp, "deployment")["spec"].get("replicas"),
        None
    );
    let monitor = desired_resource(&rsp, "pod_monitor");
    assert_eq!(validate_composed(&monitor), Vec::<String>::new());
    assert_eq!(
        monitor["spec"]["podMetricsEndpoints"],
        json!([{"port": "http", "path": "/metrics", "interval": "15s"}])
    );
}

/// A server whose arguments cap the requests it runs at once
/// (--max-num-seqs) serves no more than that, whatever its KV cache holds:
/// the target is a share of the cap, or the queue would build before the
/// autoscaler scaled out.
#[test]
fn the_target_follows_the_max_num_seqs_the_servers_arguments_set() {
    let target_with = |extra_args: Value| {
        let mut xr = scaled(
            json!({"minReplicas": 1, "maxReplicas": 8, "promptTokens": 1024, "outputTokens": 1024}),
        );
        xr["spec"]["extraArgs"] = extra_args;
        let mut req = request("k1", xr);
        req.input = Some(input(platform("keda", "deployment")));
        let rsp = call(&req);
        assert_not_fatal(&rsp.results, "keda");
        desired_status(&rsp)["autoscaling"].clone()
    };
    let derived = target_with(json!([]));
    let kv = derived["kvCacheRequests"].as_u64().unwrap();
    assert!(kv > 64 * 2, "{derived:#}");
    let uncapped = derived["targetRequestsPerReplica"].as_u64().unwrap();
    assert!(uncapped > 51, "{derived:#}");
    for args in [
        json!(["--max-num-seqs", "64"]),
        json!(["--max_num_seqs=32", "--max-num-seqs=64"]),
    ] {
        let capped = target_with(args.clone());
        assert_eq!(capped["targetRequestsPerReplica"], 51, "{args}");
        let reason = capped["reason"].as_str().unwrap();
        assert!(
            reason.contains(
                "it scales out above 51 requests per replica (80 % of what one serves at once): vLLM runs at most \
                 64 at once (--max-num-seqs, as the server's arguments set it), though the KV cache holds "
            ),
            "{reason}"
        );
        assert!(
            reason.contains(" requests of 2,048 tokens (prompt and output)"),
            "{reason}"
        );
    }
}

#[test]
fn the_replicas_an_autoscaler_set_are_left_to_it() {
    let xr = scaled(json!({"minReplicas": 1, "maxReplicas": 8}));
    let first = {
        let mut req = request("k2", xr.clone());
        req.input = Some(input(platform("hpa", "deployment")));
        call(&req)
    };
    // The autoscaler scaled the Deployment to 5, and all 5 serve.
    let mut deployment = desired_resource(&first, "deployment");
    deployment["spec"]["replicas"] = json!(5);
    let rolled_out = json!({"observedGeneration": 1, "replicas": 5, "updatedReplicas": 5, "availableReplicas": 5});
    let mut req = request("k3", xr);
    req.input = Some(input(platform("hpa", "deployment")));
    req.observed.as_mut().unwrap().resources.insert(
        "deployment".into(),
        resource(applied(deployment, 1, rolled_out)),
    );
    let rsp = call(&req);
    // Composed again without a count: Crossplane's server-side apply
    // neither sets it back nor takes it from the autoscaler. The Deployment
    // still counts as applied from this spec: it is ready, and its layout
    // is recorded as serving.
    let mut again = desired_resource(&rsp, "deployment");
    let annotations = again["metadata"]["annotations"].as_object_mut().unwrap();
    let served = annotations.remove("infer.dev/served-layout");
    let served_spec = annotations.remove("infer.dev/served-spec-digest");
    assert_eq!(
        served,
        Some(json!(
            "1 x H100-80GB (bfloat16), tensor parallel 1, max model length 32768"
        ))
    );
    assert_eq!(
        served_spec.as_ref(),
        desired_resource(&first, "deployment")["metadata"]["annotations"]
            .get("infer.dev/spec-digest")
    );
    assert_eq!(again, desired_resource(&first, "deployment"));
    assert_eq!(again["spec"].get("replicas"), None);
    assert_eq!(
        rsp.desired.as_ref().unwrap().resources["deployment"].ready,
        fnv1::Ready::True as i32
    );
}

#[test]
fn a_new_server_is_ready_once_the_autoscalers_floor_serves() {
    let xr = scaled(json!({"minReplicas": 2, "maxReplicas": 8}));
    let at = |replicas: i64| {
        let mut first = request("f1", xr.clone());
        first.input = Some(input(platform("hpa", "deployment")));
        let mut deployment = desired_resource(&call(&first), "deployment");
        deployment["spec"]["replicas"] = json!(replicas);
        let rolled_out = json!({"observedGeneration": 1, "replicas": replicas,
                                "updatedReplicas": replicas, "availableReplicas": replicas});
        let mut req = request("f2", xr.clone());
        req.input = Some(input(platform("hpa", "deployment")));
        req.observed.as_mut().unwrap().resources.insert(
            "deployment".into(),
            resource(applied(deployment, 1, rolled_out)),
        );
        call(&req)
    };
    // The Deployment starts at one replica, which serves; the autoscaler has
    // not brought it to its minimum of two yet (or is not running), so it is
    // not ready, and the XR says what it waits for.
    let one = at(1);
    assert_eq!(
        one.desired.as_ref().unwrap().resources["deployment"].ready,
        fnv1::Ready::False as i32
    );
    let layout = "1 x H100-80GB (bfloat16), tensor parallel 1, max model length 32768";
    assert_eq!(
        response_condition(&one, "Serving"),
        Some(condition(
            "Serving",
            fnv1::Status::ConditionFalse,
            "BelowMinReplicas",
            &format!(
                "meta-llama/Llama-3.1-8B-Instruct serves at http://chat.team-a.svc.cluster.local/v1 ({layout}) on 1 replica, fewer than minReplicas 2: the autoscaler has not scaled it up yet"
            ),
        ))
    );
    let two = at(2);
    assert_eq!(
        two.desired.as_ref().unwrap().resources["deployment"].ready,
        fnv1::Ready::True as i32
    );
    assert_eq!(
        response_condition(&two, "Serving").map(|c| c.status),
        Some(fnv1::Status::ConditionTrue as i32)
    );
}

#[test]
fn a_server_the_autoscaler_scales_up_beyond_its_floor_stays_ready() {
    let xr = scaled(json!({"minReplicas": 2, "maxReplicas": 8}));
    let composed = {
        let mut first = request("u1", xr.clone());
        first.input = Some(input(platform("hpa", "deployment")));
        desired_resource(&call(&first), "deployment")
    };
    // The autoscaler asked for 3 replicas; `updated` run the current spec
    // (`total` pods exist), `available` serve.
    let at = |xr: Value, updated: i64, total: i64, available: i64, pods: Vec<Value>| {
        let mut deployment = composed.clone();
        deployment["spec"]["replicas"] = json!(3);
        let status = json!({"observedGeneration": 1, "replicas": total,
                            "updatedReplicas": updated, "availableReplicas": available});
        let mut req = request("u2", xr);
        req.input = Some(input(platform("hpa", "deployment")));
        req.observed.as_mut().unwrap().resources.insert(
            "deployment".into(),
            resource(applied(deployment, 1, status)),
        );
        call(&with_required(req, "model_server_pods", pods))
    };
    let ready = |rsp: &fnv1::RunFunctionResponse| {
        rsp.desired.as_ref().unwrap().resources["deployment"].ready == fnv1::Ready::True as i32
    };
    let serving = |rsp: &fnv1::RunFunctionResponse| {
        let c = response_condition(rsp, "Serving").unwrap();
        (c.status, c.reason, c.message.unwrap_or_default())
    };
    let serves = "meta-llama/Llama-3.1-8B-Instruct serves at http://chat.team-a.svc.cluster.local/v1 (1 x \
                  H100-80GB (bfloat16), tensor parallel 1, max model length 32768) on 2 of 3 replicas: 1 more";

    // Two serve the current spec, the third starts: Ready, and it says so.
    let rsp = at(xr.clone(), 3, 3, 2, vec![]);
    assert!(ready(&rsp));
    assert_eq!(
        serving(&rsp),
        (
            fnv1::Status::ConditionTrue as i32,
            "Available".into(),
            format!("{serves} starting")
        )
    );
    assert_eq!(rsp.results, vec![]);

    // The third cannot be placed: still Ready, with why, as a warning once.
    let pending = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "chat-5d9c7b-x2k4q", "namespace": "team-a"},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]}});
    let rsp = at(xr.clone(), 3, 3, 2, vec![pending.clone()]);
    assert!(ready(&rsp));
    let message = format!(
        "{serves} cannot start: pod chat-5d9c7b-x2k4q cannot be scheduled: 0/3 nodes are available: 3 \
         Insufficient nvidia.com/gpu"
    );
    assert_eq!(
        serving(&rsp),
        (
            fnv1::Status::ConditionTrue as i32,
            "Available".into(),
            message.clone()
        )
    );
    assert_eq!(rsp.results, vec![warning("Unschedulable", &message)]);
    let said = json!({"conditions": [{"type": "Serving", "status": "True", "reason": "Available",
                                      "message": message}]});
    let xr_said = LlmInference::new("chat")
        .model(LLAMA_8B)
        .field("hfTokenSecretRef", json!({"name": "hf-token"}))
        .field("autoscaling", json!({"minReplicas": 2, "maxReplicas": 8}))
        .status(said)
        .build();
    assert_eq!(
        at(xr_said, 3, 3, 2, vec![pending]).results,
        vec![],
        "no second event"
    );

    // Not while a new spec rolls out, nor below the floor.
    assert!(!ready(&at(xr.clone(), 2, 3, 3, vec![])), "a rollout");
    assert!(!ready(&at(xr.clone(), 3, 4, 3, vec![])), "old pods left");
    assert!(!ready(&at(xr.clone(), 3, 3, 1, vec![])), "below the floor");
    // Nor before the spec composed now is applied.
    let other_model = LlmInference::new("chat")
        .model("Qwen/Qwen2.5-7B-Instruct")
        .field("autoscaling", json!({"minReplicas": 2, "maxReplicas": 8}))
        .build();
    assert!(!ready(&at(other_model, 3, 3, 2, vec![])), "not applied yet");
}

#[test]
fn a_count_crossplane_applied_is_kept_until_the_autoscaler_takes_it_over() {
    // The server ran 3 fixed replicas; Crossplane's field manager applied
    // the count. Autoscaling is then turned on.
    let mut deployment = desired_resource(
        &{
            let mut req = request("o1", scaled(json!({"minReplicas": 1, "maxReplicas": 8})));
            req.input = Some(input(platform("hpa", "deployment")));
            call(&req)
        },
        "deployment",
    );
    deployment["spec"]["replicas"] = json!(3);
    let crossplane = json!({"manager": "apiextensions.crossplane.io/composed/0b1c", "operation": "Apply",
                            "fieldsV1": {"f:spec": {"f:replicas": {}, "f:selector": {}}}});
    deployment["metadata"]["managedFields"] = json!([crossplane]);
    let composed = |range: Value, observed: &Value| {
        let mut req = request("o2", scaled(range));
        req.input = Some(input(platform("hpa", "deployment")));
        req.observed
            .as_mut()
            .unwrap()
            .resources
            .insert("deployment".into(), resource(observed.clone()));
        desired_resource(&call(&req), "deployment")["spec"]["replicas"].clone()
    };
    // Left out, the count would drop to one: it stays, within the range.
    assert_eq!(
        composed(json!({"minReplicas": 2, "maxReplicas": 4}), &deployment),
        3
    );
    assert_eq!(
        composed(json!({"minReplicas": 1, "maxReplicas": 2}), &deployment),
        2
    );
    // The autoscaler scaled through the scale subresource, which took the
    // count over: from then on it is left to it.
    deployment["spec"]["replicas"] = json!(4);
    deployment["metadata"]["managedFields"] = json!([
        {"manager": "apiextensions.crossplane.io/composed/0b1c", "operation": "Apply",
         "fieldsV1": {"f:spec": {"f:selector": {}}}},
        {"manager": "kube-controller-manager", "operation": "Update", "subresource": "scale",
         "fieldsV1": {"f:spec": {"f:replicas": {}}}},
    ]);
    assert_eq!(
        composed(json!({"minReplicas": 2, "maxReplicas": 4}), &deployment),
        Value::Null
    );
}

#[test]
fn an_hpa_scales_a_leader_worker_set_and_a_vllm_runtime_by_their_scale_subresources() {
    for (runtime, api_version, kind, replicas_path) in [
        (
            "leader-worker-set",
            "leaderworkerset.x-k8s.io/v1",
            "LeaderWorkerSet",
            vec!["spec", "replicas"],
        ),
        (
            "vllm-runtime",
            "production-stack.vllm.ai/v1alpha1",
            "VLLMRuntime",
            vec!["spec", "deploymentConfig", "replicas"],
        ),
    ] {
        let mut req = request("h1", scaled(json!({"minReplicas": 2, "maxReplicas": 4})));
        req.input = Some(input(platform("hpa", runtime)));
        let rsp = call(&req);
        assert_not_fatal(&rsp.results, runtime);
        let hpa = desired_resource(&rsp, "autoscaler");
        assert_eq!(validate_composed(&hpa), Vec::<String>::new());
        assert_eq!(hpa["kind"], "HorizontalPodAutoscaler");
        assert_eq!(
            hpa["spec"]["scaleTargetRef"],
            json!({"apiVersion": api_version, "kind": kind, "name": "chat"})
        );
        assert_eq!(hpa["spec"]["minReplicas"], 2);
        assert_eq!(
            hpa["spec"]["metrics"][0]["pods"]["metric"]["name"],
            "vllm_requests_in_flight"
        );
        let key = if runtime == "vllm-runtime" {
            "vllm_runtime"
        } else {
            "leader_worker_set"
        };
        // The autoscaler raises the workload from its default, one, to 2.
        let mut at = desired_resource(&rsp, key);
        for step in &replicas_path {
            at = at[step].clone();
        }
        assert_eq!(at, Value::Null, "{runtime}");
    }
}

/// A server at zero replicas, as `spec.replicas: 0` asks or as KEDA scaled
/// it when idle, serves nothing: it is not ready, `Serving` says so, and
/// with no pod to ask about, none is asked for and the TTL is the usual one.
#[test]
fn a_server_at_zero_replicas_does_not_serve_and_says_so() {
    let at_zero = |xr: Value, autoscaler: &str| {
        let mut first = request("zero", xr.clone());
        first.input = Some(input(platform(autoscaler, "deployment")));
        let mut deployment = desired_resource(&call(&first), "deployment");
        deployment["spec"]["replicas"] = json!(0);
        let mut req = request("zero", xr);
        req.input = Some(input(platform(autoscaler, "deployment")));
        req.observed.as_mut().unwrap().resources.insert(
            "deployment".into(),
            resource(applied(deployment, 1, json!({"observedGeneration": 1}))),
        );
        call(&req)
    };
    let paused = LlmInference::new("chat")
        .model(LLAMA_8B)
        .field("replicas", json!(0))
        .build();
    let idle = scaled(json!({"minReplicas": 0, "maxReplicas": 2}));
    for (what, rsp) in [
        ("spec.replicas 0", at_zero(paused, "keda")),
        ("KEDA at zero", at_zero(idle, "keda")),
    ] {
        assert_eq!(
            rsp.desired.as_ref().unwrap().resources["deployment"].ready,
            fnv1::Ready::False as i32,
            "{what}"
        );
        assert_eq!(
            response_condition(&rsp, "Serving"),
            Some(condition(
                "Serving",
                fnv1::Status::ConditionFalse,
                "ScaledToZero",
                "meta-llama/Llama-3.1-8B-Instruct is scaled to zero replicas: nothing serves at \
                 http://chat.team-a.svc.cluster.local/v1; it serves 1 x H100-80GB (bfloat16), tensor parallel 1, \
                 max model length 32768 once it is scaled up"
            )),
            "{what}"
        );
        // No pod is asked for (only the CRDs of the kinds not observed yet).
        let asked: Vec<String> = rsp
            .requirements
            .map(|r| r.resources.into_keys().collect())
            .unwrap_or_default();
        assert!(
            asked.iter().all(|k| k.starts_with("crd/")),
            "{what}: {asked:?}"
        );
        assert_eq!(rsp.meta, meta("zero", 60), "{what}");
        assert!(
            rsp.results
                .iter()
                .all(|r| r.reason.as_deref() != Some("ScaledToZero")),
            "{what}: a choice is no problem to warn of: {:?}",
            rsp.results
        );
    }
}

/// An AgentPool whose model server KEDA scaled to zero says so in its
/// phase and `Serving`, not that it is starting.
#[test]
fn an_agent_pool_whose_model_server_is_at_zero_says_so() {
    use support::models::{llama_8b, with_model};
    let pool = AgentPool::new("reviewers")
        .spec(json!({
            "agentClass": {"modelRef": {"name": "llama-8b"}, "maxContextLength": 8192},
            "image": "ghcr.io/example/agent-runtime:1.0",
            "gpuRequirements": {"type": "L4"},
            "modelServerAutoscaling": {"minReplicas": 0, "maxReplicas": 2},
        }))
        .build();
    let pool_request = || {
        let mut req = with_model(request("zero", pool.clone()), vec![llama_8b()]);
        req.input = Some(input(platform("keda", "deployment")));
        req
    };
    let first = call(&pool_request());
    assert_not_fatal(&first.results, "pool");
    let mut server = desired_resource(&first, "model_server_deployment");
    server["spec"]["replicas"] = json!(0);
    let agents = desired_resource(&first, "agents");
    let mut req = pool_request();
    req.observed.as_mut().unwrap().resources = [
        (
            "model_server_deployment".to_string(),
            resource(applied(server, 1, json!({"observedGeneration": 1}))),
        ),
        (
            "agents".to_string(),
            resource(applied(
                agents,
                1,
                json!({"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}),
            )),
        ),
    ]
    .into();
    let rsp = call(&req);
    assert_eq!(desired_status(&rsp)["phase"], "ScaledToZero");
    assert_eq!(
        response_condition(&rsp, "Serving").map(|c| (c.status, c.reason)),
        Some((
            fnv1::Status::ConditionFalse as i32,
            "ScaledToZero".to_string()
        ))
    );
}

#[test]
fn scale_to_zero_needs_keda_and_says_what_it_costs() {
    let mut req = request("z1", scaled(json!({"minReplicas": 0, "maxReplicas": 2})));
    req.input = Some(input(platform("keda", "deployment")));
    let rsp = call(&req);
    assert_not_fatal(&rsp.results, "keda to zero");
    let so = desired_resource(&rsp, "autoscaler");
    assert_eq!(so["spec"]["minReplicaCount"], 0);
    assert_eq!(so["spec"]["cooldownPeriod"], 600);
    let warnings = desired_status(&rsp)["plan"]["warnings"].clone();
    assert!(
        warnings.as_array().unwrap().iter().any(|w| w.as_str().unwrap().starts_with(
            "spec.autoscaling.minReplicas is 0: KEDA scales the model server to zero when idle, and a replica takes up to 600 s to serve again"
        )),
        "{warnings:#}"
    );

    let mut req = request("z2", scaled(json!({"minReplicas": 0, "maxReplicas": 2})));
    req.input = Some(input(platform("hpa", "deployment")));
    assert_eq!(
        call(&req).results,
        vec![fatal(
            "InvalidSpec",
            "spec.autoscaling.minReplicas 0 needs KEDA: the platform's autoscaler is an HPA, which keeps at least one replica; use minReplicas 1 or more"
        )]
    );
}

#[test]
fn a_platform_without_the_prometheus_operator_gets_no_pod_monitor() {
    let mut platform = platform("hpa", "deployment");
    platform["defaults"]["podMonitor"] = json!(false);
    let mut req = request("m1", scaled(json!({"maxReplicas": 2})));
    req.input = Some(input(platform));
    let rsp = call(&req);
    let keys = composed_names(&rsp);
    assert_eq!(
        keys,
        ["autoscaler", "deployment", "disruption_budget", "service"]
    );
}

#[test]
fn an_agent_pools_model_server_scales_like_an_llm_inference() {
    use support::models::{llama_8b, with_model};
    let pool = |extra: Value| {
        let mut spec = json!({
            "agentClass": {"modelRef": {"name": "llama-8b"}, "systemPrompt": "Review.", "maxContextLength": 8192},
            "image": "ghcr.io/example/agent-runtime:1.0",
            "minReplicas": 1, "maxReplicas": 2,
            "gpuRequirements": {"count": 1, "type": "L4"},
        });
        spec.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        AgentPool::new("reviewers").spec(spec).build()
    };
    let mut req = with_model(
        request(
            "a1",
            pool(
                json!({"modelServerAutoscaling": {"minReplicas": 1, "maxReplicas": 4, "promptTokens": 2048, "outputTokens": 512}}),
            ),
        ),
        vec![llama_8b()],
    );
    req.input = Some(input(platform("hpa", "deployment")));
    let rsp = call(&req);
    assert_not_fatal(&rsp.results, "pool");
    let hpa = desired_resource(&rsp, "model_server_autoscaler");
    assert_eq!(validate_composed(&hpa), Vec::<String>::new());
    assert_eq!(
        hpa["spec"]["scaleTargetRef"],
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "reviewers-model"})
    );
    assert_eq!(hpa["spec"]["maxReplicas"], 4);
    // Up to four replicas: evicted one pod at a time.
    let budget = desired_resource(&rsp, "model_server_disruption_budget");
    assert_eq!(validate_composed(&budget), Vec::<String>::new());
    assert_eq!(budget["metadata"]["name"], "reviewers-model");
    assert_eq!(
        budget["spec"]["selector"],
        desired_resource(&rsp, "model_server_deployment")["spec"]["selector"]
    );
    let server = &desired_status(&rsp)["modelServer"];
    assert_eq!(server["replicas"], 1);
    assert_eq!(server["autoscaling"]["autoscaler"], "hpa");
    assert_eq!(
        server["autoscaling"]["targetRequestsPerReplica"],
        hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    );
    assert_eq!(
        validate_composed(&desired_resource(&rsp, "model_server_pod_monitor")),
        Vec::<String>::new()
    );
    // One condition for both autoscalers: the model server's and the agents'.
    let autoscaling = |rsp: &fnv1::RunFunctionResponse| response_condition(rsp, "Autoscaling");
    assert_eq!(
        autoscaling(&rsp),
        Some(condition(
            "Autoscaling",
            fnv1::Status::ConditionUnknown,
            "NotReported",
            "the HorizontalPodAutoscaler reviewers-model and the HorizontalPodAutoscaler reviewers-agents have not yet \
             said whether they can scale"
        ))
    );
    let hpa_status = |name: &str, scaling_active: Value| {
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": name, "namespace": "team-a"},
               "status": {"conditions": [{"type": "AbleToScale", "status": "True"}, scaling_active]}})
    };
    let active = json!({"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound"});
    req.observed.as_mut().unwrap().resources = [
        (
            "model_server_autoscaler".to_string(),
            resource(hpa_status("reviewers-model", active.clone())),
        ),
        (
            "autoscaler".to_string(),
            resource(hpa_status("reviewers-agents", active)),
        ),
    ]
    .into();
    assert_eq!(
        autoscaling(&call(&req)),
        Some(condition(
            "Autoscaling",
            fnv1::Status::ConditionTrue,
            "Active",
            "the HorizontalPodAutoscaler reviewers-model and the HorizontalPodAutoscaler reviewers-agents can scale: each \
             reads its metrics and sets the replicas"
        ))
    );
    req.observed.as_mut().unwrap().resources.insert(
        "autoscaler".into(),
        resource(hpa_status(
            "reviewers-agents",
            json!({"type": "ScalingActive", "status": "False", "reason": "FailedGetResourceMetric",
                   "message": "the HPA was unable to compute the replica count: failed to get cpu utilization"}),
        )),
    );
    assert_eq!(
        autoscaling(&call(&req)),
        Some(condition(
            "Autoscaling",
            fnv1::Status::ConditionFalse,
            "FailedGetResourceMetric",
            "the HorizontalPodAutoscaler reviewers-agents cannot scale: the HPA was unable to compute the replica count: \
             failed to get cpu utilization"
        ))
    );

    let results = |tag: &str, spec: Value| {
        let mut req = with_model(request(tag, pool(spec)), vec![llama_8b()]);
        req.input = Some(input(platform("hpa", "deployment")));
        call(&req).results
    };
    assert_eq!(
        results(
            "a2",
            json!({"tokensPerSecondBudget": 100, "modelServerAutoscaling": {"maxReplicas": 4}})
        ),
        vec![fatal(
            "InvalidSpec",
            "spec.tokensPerSecondBudget and spec.modelServerAutoscaling are both set: the budget fixes the model server's replicas, the autoscaler moves them with load; drop one of them"
        )]
    );
    // A request shape of no tokens was once taken as one token.
    assert_eq!(
        results(
            "a3",
            json!({"modelServerAutoscaling": {"maxReplicas": 4, "outputTokens": 0}})
        ),
        vec![fatal(
            "InvalidSpec",
            "spec.modelServerAutoscaling.outputTokens: 0 is out of range; use a whole number from 1 to 10485760"
        )]
    );
}

#[test]
fn an_autoscaler_that_cannot_scale_says_so_on_the_xr() {
    let autoscaling = || scaled(json!({"minReplicas": 1, "maxReplicas": 3}));
    let call_with = |xr: Value, autoscaler: &str, observed: Option<Value>| {
        let mut req = request("a1", xr);
        req.input = Some(input(platform(autoscaler, "deployment")));
        if let Some(observed) = observed {
            req.observed
                .as_mut()
                .unwrap()
                .resources
                .insert("autoscaler".into(), resource(observed));
        }
        call(&req)
    };
    let autoscaling_condition =
        |rsp: &fnv1::RunFunctionResponse| response_condition(rsp, "Autoscaling");
    let hpa = |conditions: Value| {
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": "chat", "namespace": "team-a"},
               "status": {"currentReplicas": 1, "desiredReplicas": 1, "conditions": conditions}})
    };

    // Composed, not reported on yet.
    let rsp = call_with(autoscaling(), "hpa", None);
    assert_eq!(
        autoscaling_condition(&rsp),
        Some(condition(
            "Autoscaling",
            fnv1::Status::ConditionUnknown,
            "NotReported",
            "the HorizontalPodAutoscaler chat has not yet said whether it can scale"
        ))
    );
    // Only KEDA's operator writes a ScaledObject's status, and a platform
    // may name KEDA without running it.
    assert_eq!(
        autoscaling_condition(&call_with(autoscaling(), "keda", None)),
        Some(condition(
            "Autoscaling",
            fnv1::Status::ConditionUnknown,
            "NotReported",
            "the ScaledObject chat has not yet said whether it can scale (if this lasts, check that KEDA's \
             operator is installed and running: it writes a ScaledObject's status)"
        ))
    );

    // No custom metrics API: the HPA's own words, and a warning event once.
    let no_metrics = "the HorizontalPodAutoscaler chat cannot scale: the HPA was unable to compute the replica \
                      count: unable to get metric vllm_requests_in_flight: unable to fetch metrics from custom \
                      metrics API: no custom metrics API (custom.metrics.k8s.io) registered";
    let failing = hpa(json!([
        {"type": "AbleToScale", "status": "True", "reason": "SucceededGetScale",
         "message": "the HPA controller was able to get the target's current scale"},
        {"type": "ScalingActive", "status": "False", "reason": "FailedGetPodsMetric",
         "message": "the HPA was unable to compute the replica count: unable to get metric vllm_requests_in_flight: unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered"},
    ]));
    let rsp = call_with(autoscaling(), "hpa", Some(failing.clone()));
    let said = condition(
        "Autoscaling",
        fnv1::Status::ConditionFalse,
        "FailedGetPodsMetric",
        no_metrics,
    );
    assert_eq!(autoscaling_condition(&rsp), Some(said.clone()));
    assert_eq!(
        rsp.results,
        vec![warning("FailedGetPodsMetric", no_metrics)]
    );
    let already_said = LlmInference::new("chat")
        .model(LLAMA_8B)
        .field("hfTokenSecretRef", json!({"name": "hf-token"}))
        .field("autoscaling", json!({"minReplicas": 1, "maxReplicas": 3}))
        .status(
            json!({"conditions": [{"type": "Autoscaling", "status": "False",
                                       "reason": "FailedGetPodsMetric", "message": no_metrics}]}),
        )
        .build();
    assert_eq!(
        call_with(already_said, "hpa", Some(failing.clone())).results,
        vec![]
    );

    // Through provider-kubernetes, from what the Object last observed.
    let remote = LlmInference::new("chat")
        .model(LLAMA_8B)
        .field("autoscaling", json!({"minReplicas": 1, "maxReplicas": 3}))
        .field("providerConfigName", json!("gpu-cluster"))
        .build();
    let mut object = desired_resource(&call_with(remote.clone(), "hpa", None), "autoscaler");
    object["metadata"]["name"] = json!("chat-autoscaler");
    object["spec"]["managementPolicies"] = json!(["*"]);
    object["status"] = json!({"atProvider": {"manifest": failing.clone()}});
    assert_eq!(
        autoscaling_condition(&call_with(remote, "hpa", Some(object))),
        Some(said.clone())
    );

    // Once it reads its metric.
    let active = hpa(json!([
        {"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"},
        {"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound"},
    ]));
    assert_eq!(
        autoscaling_condition(&call_with(autoscaling(), "hpa", Some(active))),
        Some(condition(
            "Autoscaling",
            fnv1::Status::ConditionTrue,
            "Active",
            "the HorizontalPodAutoscaler chat can scale: it reads its metrics and sets the replicas"
        ))
    );

    // KEDA says it in its ScaledObject's Ready condition.
    let scaled_object = json!({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": {"name": "chat", "namespace": "team-a"},
        "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "ScaledObjectCheckFailed",
                                   "message": "Failed to ensure HPA is correctly created for ScaledObject"}]}});
    assert_eq!(
        autoscaling_condition(&call_with(autoscaling(), "keda", Some(scaled_object))),
        Some(condition(
            "Autoscaling",
            fnv1::Status::ConditionFalse,
            "ScaledObjectCheckFailed",
            "the ScaledObject chat cannot scale: Failed to ensure HPA is correctly created for ScaledObject"
        ))
    );

    // Autoscaling dropped from the spec: the condition Crossplane keeps is
    // told so; an XR that never autoscaled gets none.
    let fixed = LlmInference::new("chat")
        .model(LLAMA_8B)
        .status(
            json!({"conditions": [{"type": "Autoscaling", "status": "False",
                                       "reason": "FailedGetPodsMetric", "message": no_metrics}]}),
        )
        .build();
    assert_eq!(
        autoscaling_condition(&call_with(fixed, "hpa", None)),
        Some(condition(
            "Autoscaling",
            fnv1::Status::ConditionFalse,
            "NotAutoscaled",
            "no autoscaler is composed: the replicas are fixed by the spec"
        ))
    );
    let never = LlmInference::new("chat").model(LLAMA_8B).build();
    assert_eq!(autoscaling_condition(&call_with(never, "hpa", None)), None);
}

/// A typical request longer than the server's context is one vLLM refuses:
/// the XR is warned, naming the fields, and the target is for requests of
/// the whole context. A target the XR sets is said to be set by its own
/// field, the AgentPool's as much as the LLMInference's, and the pool's
/// model server warns as an LLMInference does (it was a status note).
#[test]
fn a_request_longer_than_the_context_is_warned_and_a_set_target_names_its_field() {
    use support::models::{llama_8b, with_model};
    let mut req = request(
        "k1",
        LlmInference::new("chat")
            .model(LLAMA_8B)
            .field("hfTokenSecretRef", json!({"name": "hf-token"}))
            .field("maxModelLen", json!(8192))
            .field(
                "autoscaling",
                json!({"maxReplicas": 8, "promptTokens": 8000, "outputTokens": 1000}),
            )
            .build(),
    );
    req.input = Some(input(platform("keda", "deployment")));
    let rsp = call(&req);
    let warned = "A typical request of 9,000 tokens (spec.autoscaling.promptTokens + outputTokens) is longer than \
                  maxModelLen 8,192: vLLM refuses such requests, so the autoscaling target is for requests of 8,192 \
                  tokens; state a request that fits, or set a longer spec.maxModelLen";
    assert_eq!(rsp.results, vec![warning("SizingWarning", warned)]);
    let status = desired_status(&rsp);
    assert_eq!(status["plan"]["warnings"], json!([warned]));
    assert!(
        status["autoscaling"]["reason"].as_str().unwrap().contains(
            "the KV cache holds 54 requests of 8,192 tokens (maxModelLen, shorter than the 9,000 stated, which vLLM refuses)"
        ),
        "{status:#}"
    );

    let pool = AgentPool::new("reviewers")
        .spec(json!({
            "agentClass": {"modelRef": {"name": "llama-8b"}, "systemPrompt": "Review.", "maxContextLength": 8192},
            "image": "ghcr.io/example/agent-runtime:1.0",
            "minReplicas": 1, "maxReplicas": 2,
            "gpuRequirements": {"count": 1, "type": "L4"},
            "modelServerAutoscaling": {"maxReplicas": 4, "promptTokens": 9000, "targetRequestsPerReplica": 5},
        }))
        .build();
    let mut req = with_model(request("a1", pool), vec![llama_8b()]);
    req.input = Some(input(platform("hpa", "deployment")));
    let rsp = call(&req);
    let warned = "A typical request of 9,000 tokens (spec.modelServerAutoscaling.promptTokens) is longer than \
                  maxModelLen 8,192: vLLM refuses such requests, so the autoscaling target is for requests of 8,192 \
                  tokens; state a request that fits, or set a longer spec.agentClass.maxContextLength";
    assert_eq!(rsp.results, vec![warning("AgentPoolWarning", warned)]);
    let status = desired_status(&rsp);
    assert_eq!(status["warnings"], json!([warned]));
    assert_eq!(status.get("notes"), None, "{status:#}");
    assert!(
        status["modelServer"]["autoscaling"]["reason"]
            .as_str()
            .unwrap()
            .contains(
                "it scales out above 5 requests per replica, as spec.modelServerAutoscaling.targetRequestsPerReplica \
                 says; the plan's target is 2: the KV cache holds 3 requests of 8,192 tokens (maxModelLen, shorter \
                 than the 9,000 stated, which vLLM refuses)"
            ),
        "{status:#}"
    );
}
