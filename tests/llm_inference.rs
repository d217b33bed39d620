//! LLMInference, call by call: whole responses for the first call, for
//! readiness transitions, for warnings that must appear once, and for
//! refusals. The sizing plan itself is tested in the sizing tests; here it is
//! taken from the engine so these cases test what the composer does with it.

mod support;

use function_inference::compose::llm_inference::plan_status;
use function_inference::protocol::full;
use function_inference::sizing::{self, MigChoice, SizingRequest};
use serde_json::{Value, json};
use support::*;

const DOT: fn() -> Value = || json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu": 1, "ingressHost": "qwen.127.0.0.1.nip.io", "providerConfigName": "incluster"});

fn xr(name: &str, spec: Value, status: Value) -> Value {
    json!({
        "apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference",
        "metadata": {"name": name, "namespace": "team-a", "uid": "0c1d"},
        "spec": spec, "status": status,
    })
}

fn composed(rsp: &full::RunFunctionResponse, name: &str) -> (Value, i32) {
    let r = &rsp.desired.as_ref().unwrap().resources[name];
    (
        Value::Object(function_inference::protocol::struct_json::struct_to_json(
            r.resource.as_ref().unwrap(),
        )),
        r.ready,
    )
}

fn dot_plan() -> sizing::Plan {
    sizing::size(&SizingRequest {
        model_id: "Qwen/Qwen2.5-1.5B-Instruct".into(),
        gpu_type: "L4".into(),
        gpu_count: Some(1),
        mig: MigChoice::None,
        ..Default::default()
    })
    .unwrap()
}

fn dot_runtime_object() -> Value {
    json!({
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "Object",
        "metadata": {},
        "spec": {
            "forProvider": {"manifest": {
                "apiVersion": "production-stack.vllm.ai/v1alpha1", "kind": "VLLMRuntime",
                "metadata": {"name": "test-qwen", "namespace": "team-a"},
                "spec": {
                    "model": {"modelURL": "Qwen/Qwen2.5-1.5B-Instruct", "dtype": "bfloat16", "maxModelLen": 32768},
                    "vllmConfig": {"enableChunkedPrefill": true, "enablePrefixCaching": true, "v1": true,
                                   "gpuMemoryUtilization": "0.9", "tensorParallelSize": 1},
                    "deploymentConfig": {
                        "image": {"registry": "docker.io", "name": "lmcache/vllm-openai:v0.3.13"},
                        "nodeSelectorTerms": [{"matchExpressions": [
                            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}],
                        "replicas": 1,
                        "resources": {"cpu": "2", "memory": "8Gi", "gpu": "1"},
                    },
                },
            }},
            "providerConfigRef": {"kind": "ProviderConfig", "name": "incluster"},
            "readiness": {"policy": "DeriveFromCelQuery",
                          "celQuery": "has(object.status) && has(object.status.availableReplicas) && object.status.availableReplicas >= 1"},
        },
    })
}

fn dot_ingress_object() -> Value {
    json!({
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "Object",
        "metadata": {},
        "spec": {
            "forProvider": {"manifest": {
                "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                "metadata": {"name": "test-qwen", "namespace": "team-a"},
                "spec": {"rules": [{"host": "qwen.127.0.0.1.nip.io", "http": {"paths": [{
                    "path": "/", "pathType": "Prefix",
                    "backend": {"service": {"name": "test-qwen", "port": {"number": 80}}}}]}}]},
            }},
            "providerConfigRef": {"kind": "ProviderConfig", "name": "incluster"},
        },
    })
}

#[test]
fn first_call_composes_dot_inference_essentials_and_reports_the_plan() {
    // dot-inference's XR, unchanged: 1 GPU -> 2 CPU, 8Gi; Objects for the
    // runtime and the Ingress; nothing observed yet, so nothing is ready.
    let req = request("t1", xr("test-qwen", DOT(), json!({})));
    let plan = dot_plan();
    let want = full::RunFunctionResponse {
        meta: meta("t1", 60),
        desired: Some(full::State {
            composite: Some(resource(json!({
                "apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference",
                "status": {
                    "model": "Qwen/Qwen2.5-1.5B-Instruct",
                    "plan": serde_json::to_value(plan_status(&plan)).unwrap(),
                    "gpuType": "L4", "gpuCount": 1,
                    "endpoint": {"internal": "http://test-qwen.team-a.svc.cluster.local/v1",
                                 "external": "http://qwen.127.0.0.1.nip.io/v1"},
                    "ready": "False",
                },
            }))),
            resources: [
                (
                    "ingress".to_string(),
                    full::Resource {
                        ready: full::Ready::False as i32,
                        ..resource(dot_ingress_object())
                    },
                ),
                (
                    "vllm_runtime".to_string(),
                    full::Resource {
                        ready: full::Ready::False as i32,
                        ..resource(dot_runtime_object())
                    },
                ),
            ]
            .into(),
        }),
        conditions: vec![
            condition(
                "Sized",
                full::Status::ConditionTrue,
                "Sized",
                "1 x L4 (bfloat16), tensor parallel 1, max model length 32768",
            ),
            condition(
                "Serving",
                full::Status::ConditionFalse,
                "Starting",
                "the vLLM runtime has no available replica yet; it will serve at http://test-qwen.team-a.svc.cluster.local/v1",
            ),
        ],
        ..Default::default()
    };
    assert_eq!(call(&req), want);
}

#[test]
fn readiness_follows_each_observed_resource() {
    // Observed Objects: the runtime's Ready is False, the Ingress's True.
    let mut req = request("t2", xr("test-qwen", DOT(), json!({})));
    let with_ready = |mut v: Value, status: &str| {
        v["status"] = json!({"conditions": [{"type": "Ready", "status": status, "reason": "x"}]});
        resource(v)
    };
    req.observed.as_mut().unwrap().resources = [
        (
            "vllm_runtime".to_string(),
            with_ready(dot_runtime_object(), "False"),
        ),
        (
            "ingress".to_string(),
            with_ready(dot_ingress_object(), "True"),
        ),
    ]
    .into();
    let rsp = call(&req);
    assert_eq!(composed(&rsp, "vllm_runtime").1, full::Ready::False as i32);
    assert_eq!(composed(&rsp, "ingress").1, full::Ready::True as i32);
    assert_eq!(desired_status(&rsp)["ready"], "False");

    // Once the runtime's Object is Ready, the XR reports it serves.
    req.observed.as_mut().unwrap().resources.insert(
        "vllm_runtime".into(),
        with_ready(dot_runtime_object(), "True"),
    );
    let rsp = call(&req);
    assert_eq!(composed(&rsp, "vllm_runtime").1, full::Ready::True as i32);
    assert_eq!(desired_status(&rsp)["ready"], "True");
    assert_eq!(
        rsp.conditions[1],
        condition(
            "Serving",
            full::Status::ConditionTrue,
            "Available",
            "Qwen/Qwen2.5-1.5B-Instruct serves at http://test-qwen.team-a.svc.cluster.local/v1"
        )
    );
}

#[test]
fn a_native_runtime_is_ready_when_a_replica_is_available() {
    let spec = json!({"model": "Qwen/Qwen2.5-1.5B-Instruct"});
    let mut req = request("t3", xr("qwen", spec, json!({})));
    let first = call(&req);
    let (runtime, ready) = composed(&first, "vllm_runtime");
    assert_eq!(
        runtime["kind"], "VLLMRuntime",
        "composed natively without providerConfigName"
    );
    assert_eq!(ready, full::Ready::False as i32);
    for (available, want) in [(0, full::Ready::False), (1, full::Ready::True)] {
        let mut observed = runtime.clone();
        observed["status"] = json!({"availableReplicas": available, "replicas": 1});
        req.observed
            .as_mut()
            .unwrap()
            .resources
            .insert("vllm_runtime".into(), resource(observed));
        assert_eq!(
            composed(&call(&req), "vllm_runtime").1,
            want as i32,
            "availableReplicas {available}"
        );
    }
}

#[test]
fn an_undersized_gpu_count_warns_once_and_stays_in_status() {
    // 70B in bf16 on one H100 is an explicit choice the function honours,
    // but says (once, as a transition) that it will not fit.
    let spec =
        json!({"model": "meta-llama/Llama-3.1-70B-Instruct", "gpuType": "H100-80GB", "gpu": 1});
    let result = sizing::size(&SizingRequest {
        model_id: "meta-llama/Llama-3.1-70B-Instruct".into(),
        gpu_type: "H100-80GB".into(),
        gpu_count: Some(1),
        mig: MigChoice::None,
        ..Default::default()
    });
    match result {
        Ok(plan) => {
            assert!(
                !plan.warnings.is_empty(),
                "an undersized explicit count must warn"
            );
            let first = call(&request("t4", xr("big", spec.clone(), json!({}))));
            // The engine's warnings, then the composer's note that loading
            // 131 GiB outlasts the operator's fixed startup probe, so the
            // runtime gets a weights volume.
            let mut expected = plan.warnings.clone();
            expected.push(format!(
                "loading the {:.1} GiB checkpoint may take up to {} s, beyond the operator's fixed 2120 s startup probe: \
                 the runtime gets a weights volume so that a pod the probe restarts resumes the download instead of \
                 starting over; the first start may take several restarts (pre-load the volume, or use a faster \
                 storage path, to avoid them)",
                plan.checkpoint_gib, plan.startup_probe_seconds
            ));
            let warnings: Vec<full::Result> = expected
                .iter()
                .map(|w| warning("SizingWarning", w))
                .collect();
            assert_eq!(first.results, warnings);
            assert_eq!(desired_status(&first)["plan"]["warnings"], json!(expected));
            assert_eq!(first.conditions[0].reason, "SizedWithWarnings");
            // The next reconcile observes the warning in status: no new event.
            let again = call(&request("t5", xr("big", spec, desired_status(&first))));
            assert_eq!(again.results, vec![]);
            assert_eq!(desired_status(&again)["plan"]["warnings"], json!(expected));
        }
        Err(e) => {
            // The engine may refuse outright; then the XR gets a FATAL naming spec.gpu.
            let rsp = call(&request("t4", xr("big", spec, json!({}))));
            assert_eq!(
                rsp.results,
                vec![fatal("CannotSize", &format!("spec.gpu: {e}"))]
            );
        }
    }
}

#[test]
fn target_namespace_without_provider_config_is_reported_not_ignored() {
    let spec = json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "targetNamespace": "elsewhere"});
    let rsp = call(&request("t6", xr("qwen", spec.clone(), json!({}))));
    let note = "spec.targetNamespace \"elsewhere\" does not apply without spec.providerConfigName: Crossplane composes into the XR's namespace \"team-a\"";
    assert_eq!(rsp.results, vec![warning("SizingWarning", note)]);
    assert_eq!(
        composed(&rsp, "vllm_runtime").0["metadata"]["namespace"],
        "team-a"
    );
    assert!(
        desired_status(&rsp)["plan"]["warnings"]
            .as_array()
            .unwrap()
            .contains(&json!(note))
    );
    let again = call(&request("t7", xr("qwen", spec, desired_status(&rsp))));
    assert_eq!(
        again.results,
        vec![],
        "a steady-state note is not repeated as an event"
    );
}

/// Admission lets targetNamespace without providerConfigName through, so
/// that the function's warning above is what the user gets.
#[test]
fn admission_leaves_target_namespace_to_the_function() {
    let xrd = function_inference::package::llm_inference_xrd();
    let spec = &xrd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(
        spec["x-kubernetes-validations"],
        json!([{"rule": "has(self.model) || has(self.modelRef)",
                "message": "set model (a Hugging Face id) or modelRef (a Model)"},
               {"rule": "!(has(self.model) && has(self.modelRef))",
                "message": "set model or modelRef, not both"}])
    );
}

/// The values every node selector requirement on `key` allows, wherever
/// the runtime places them.
fn required_values(v: &Value, key: &str, out: &mut Vec<Value>) {
    match v {
        Value::Object(o) if o.get("key") == Some(&json!(key)) => out.push(o["values"].clone()),
        Value::Object(o) => o.values().for_each(|v| required_values(v, key, out)),
        Value::Array(a) => a.iter().for_each(|v| required_values(v, key, out)),
        _ => {}
    }
}

/// GPU feature discovery labels PCIe and NVL boards apart from SXM ones; a
/// runtime asking for the SXM label on them would never schedule.
#[test]
fn pcie_and_nvl_gpu_types_ask_for_their_own_product_label() {
    for (gpu_type, name, label) in [
        ("h100-pcie", "H100-PCIe", "NVIDIA-H100-PCIe"),
        ("a100-80gb-pcie", "A100-80GB-PCIe", "NVIDIA-A100-80GB-PCIe"),
        ("a100-pcie-40gb", "A100-40GB-PCIe", "NVIDIA-A100-PCIE-40GB"),
        ("v100-pcie-32gb", "V100-32GB-PCIe", "Tesla-V100-PCIE-32GB"),
        ("h200-nvl", "H200-NVL", "NVIDIA-H200-NVL"),
    ] {
        let spec = json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "gpuType": gpu_type});
        let mut req = request("pcie", xr("qwen", spec, json!({})));
        req.input = Some(input(json!({"defaults": {"gpuNodeSelector": true}})));
        let rsp = call(&req);
        assert_eq!(rsp.results, vec![], "{gpu_type}");
        assert_eq!(desired_status(&rsp)["gpuType"], name, "{gpu_type}");
        let mut values = Vec::new();
        required_values(
            &composed(&rsp, "vllm_runtime").0,
            "nvidia.com/gpu.product",
            &mut values,
        );
        assert_eq!(values, vec![json!([label])], "{gpu_type}");
    }
}

#[test]
fn a_runtime_named_vllm_is_renamed_so_its_service_does_not_break_vllm() {
    let rsp = call(&request(
        "t8",
        xr(
            "vllm",
            json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "ingressHost": "a.example.com"}),
            json!({}),
        ),
    ));
    assert_eq!(
        composed(&rsp, "vllm_runtime").0["metadata"]["name"],
        "vllm-server"
    );
    assert_eq!(
        composed(&rsp, "ingress").0["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"],
        "vllm-server"
    );
}

#[test]
fn refusals_are_fatal_and_name_the_field_and_what_would_work() {
    let gpu_error = sizing::gpu("Z9000").unwrap_err();
    let cases: Vec<(&str, Value, String)> = vec![
        ("no model", json!({"gpu": 1}), "spec.model is required: set a Hugging Face model id such as Qwen/Qwen2.5-7B-Instruct (or spec.modelRef to a Model)".into()),
        ("empty model", json!({"model": " "}), "spec.model is empty; set a Hugging Face model id such as Qwen/Qwen2.5-7B-Instruct".into()),
        ("negative gpu", json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu": -3}), "spec.gpu is -3; use a whole number from 1 to 64; omit it to derive the count from the model and GPU type".into()),
        ("gpu as words", json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu": "lots"}), "spec.gpu: the string \"lots\" is not a whole number; use a whole number from 1 to 64".into()),
        ("unknown field", json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "gpus": 2}), "spec.gpus: unknown field gpus; valid fields are model, modelRef, gpu, gpuType, quantization, maxModelLen, parameterCount, migProfile, kvCacheDtype, objective, replicas, hfTokenSecretRef, image, ingressHost, ingressClassName, tls, extraArgs, providerConfigName, targetNamespace, crossplane".into()),
        ("unknown GPU", json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "gpuType": "Z9000"}), format!("spec.gpuType: {gpu_error}")),
        ("bad quantization", json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "quantization": "int3"}), "spec.quantization is \"int3\"; use auto, fp32, bf16, fp16, fp8, int8, int4 or fp4".into()),
        ("too many replicas", json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "replicas": 1000}), "spec.replicas is 1000; use a whole number from 0 to 100".into()),
    ];
    for (name, spec, message) in cases {
        let rsp = call(&request("r", xr("bad", spec, json!({}))));
        let reason = if message.starts_with("spec.gpuType") {
            "CannotSize"
        } else {
            "InvalidSpec"
        };
        assert_eq!(rsp.results, vec![fatal(reason, &message)], "{name}");
        assert_eq!(
            rsp.desired,
            Some(full::State::default()),
            "{name}: a refusal composes nothing"
        );
    }
}

#[test]
fn a_model_that_needs_more_than_one_node_is_refused_with_what_would_work() {
    let spec = json!({"model": "deepseek-ai/DeepSeek-R1", "gpuType": "L4"});
    let rsp = call(&request("m", xr("r1", spec, json!({}))));
    assert_eq!(rsp.results.len(), 1);
    let r = &rsp.results[0];
    assert_eq!(r.severity, full::Severity::Fatal as i32);
    for needle in ["deepseek-ai/DeepSeek-R1", "spec.gpuType"] {
        assert!(
            r.message.contains(needle),
            "{needle:?} not in {:?}",
            r.message
        );
    }
}

#[test]
fn desired_state_of_earlier_steps_survives_a_composition() {
    let mut req = request("p", xr("test-qwen", DOT(), json!({})));
    req.desired = Some(full::State {
        composite: Some(resource(
            json!({"apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference", "status": {"fromEarlierStep": "kept"}}),
        )),
        resources: [(
            "earlier".to_string(),
            resource(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})),
        )]
        .into(),
    });
    let rsp = call(&req);
    let desired = rsp.desired.as_ref().unwrap();
    assert_eq!(
        desired.resources["earlier"],
        resource(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}))
    );
    assert_eq!(desired_status(&rsp)["fromEarlierStep"], "kept");
    assert_eq!(desired_status(&rsp)["gpuCount"], 1);
}

#[test]
fn extra_args_that_override_the_plan_are_reported() {
    let spec = json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "extraArgs": ["--max-model-len=4096", "--max-num-seqs", "8"]});
    let rsp = call(&request("x", xr("qwen", spec, json!({}))));
    let note = "spec.extraArgs sets --max-model-len, which overrides the sizing plan: the reported plan no longer describes the runtime";
    assert_eq!(rsp.results, vec![warning("SizingWarning", note)]);
    assert_eq!(
        composed(&rsp, "vllm_runtime").0["spec"]["vllmConfig"]["extraArgs"],
        json!(["--max-model-len=4096", "--max-num-seqs", "8"]),
        "extra arguments are passed on, after the derived ones"
    );
}

#[test]
fn the_pipeline_context_reaches_later_steps_unchanged() {
    // Crossplane passes the context returned by one step to the next; a
    // function that returns none would drop the environment and every
    // earlier step's notes.
    let context = object(json!({
        "apiextensions.crossplane.io/environment": {"region": "eu-west-1", "tier": {"gpu": "L4"}},
        "example.org/earlier-step": ["a", 1, true],
    }));
    let mut req = request("ctx", xr("test-qwen", DOT(), json!({})));
    req.context = Some(context.clone());
    assert_eq!(call(&req).context, Some(context.clone()));
    // Also when the function refuses the XR.
    let mut bad = request("ctx2", xr("bad", json!({"gpu": 1}), json!({})));
    bad.context = Some(context.clone());
    assert_eq!(call(&bad).context, Some(context));
}

/// A value as it reads back from the protobuf Struct of a response
/// (whole floats become integers).
fn as_in_response(v: Value) -> Value {
    Value::Object(function_inference::protocol::struct_json::struct_to_json(
        &object(json!({"v": v})),
    ))["v"]
        .clone()
}

/// The runtime's extra arguments.
fn runtime_args(rsp: &full::RunFunctionResponse) -> Value {
    composed(rsp, "vllm_runtime").0["spec"]["vllmConfig"]["extraArgs"].clone()
}

#[test]
fn an_fp8_kv_cache_reaches_vllm_and_the_plan_says_so() {
    let spec = json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "L4", "kvCacheDtype": "fp8"});
    let rsp = call(&request("kv", xr("chat", spec, json!({}))));
    assert_eq!(rsp.results, vec![]);
    assert_eq!(runtime_args(&rsp), json!(["--kv-cache-dtype", "fp8"]));
    let plan = sizing::size(&SizingRequest {
        model_id: "meta-llama/Llama-3.1-8B-Instruct".into(),
        gpu_type: "L4".into(),
        mig: MigChoice::None,
        kv_cache_dtype: sizing::KvCacheDtype::Fp8,
        ..Default::default()
    })
    .unwrap();
    let status = desired_status(&rsp);
    assert_eq!(
        status["plan"],
        as_in_response(serde_json::to_value(plan_status(&plan)).unwrap())
    );
    assert_eq!(status["plan"]["kvCacheDtype"], "fp8");
    assert_eq!(status["plan"]["objective"], "balanced");
    assert_eq!(status["plan"]["architectureGuessed"], false);

    // auto: no flag, and vLLM's own default.
    let spec = json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "L4", "kvCacheDtype": "auto"});
    let rsp = call(&request("kv", xr("chat", spec, json!({}))));
    assert_eq!(runtime_args(&rsp), Value::Null);
    assert_eq!(desired_status(&rsp)["plan"]["kvCacheDtype"], "auto");

    // An extra argument that sets it is passed on, and reported.
    let spec = json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "L4", "kvCacheDtype": "fp8",
                      "extraArgs": ["--kv-cache-dtype=auto"]});
    let rsp = call(&request("kv", xr("chat", spec, json!({}))));
    let note = "spec.extraArgs sets --kv-cache-dtype, which overrides the sizing plan: the reported plan no longer describes the runtime";
    assert_eq!(rsp.results, vec![warning("SizingWarning", note)]);
    assert_eq!(
        runtime_args(&rsp),
        json!(["--kv-cache-dtype", "fp8", "--kv-cache-dtype=auto"])
    );
}

#[test]
fn the_objective_comes_from_the_spec_else_the_platform_default() {
    // Llama-3.1-70B FP8 with an fp8 KV cache at 16K on H100s at utilization
    // 0.95: one GPU starts it (minimal), balanced keeps the recipes' headroom.
    let plan_for = |objective| {
        sizing::size(&SizingRequest {
            model_id: "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8".into(),
            gpu_type: "H100-80GB".into(),
            mig: MigChoice::None,
            max_model_len: Some(16384),
            kv_cache_dtype: sizing::KvCacheDtype::Fp8,
            gpu_memory_utilization: 0.95,
            objective,
            ..Default::default()
        })
        .unwrap()
    };
    let spec = |objective: Option<&str>| {
        let mut s = json!({"model": "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", "gpuType": "H100-80GB",
                           "maxModelLen": 16384, "kvCacheDtype": "fp8"});
        if let Some(o) = objective {
            s["objective"] = json!(o);
        }
        s
    };
    let with_input = |spec: Value, defaults: Value| {
        let mut req = request("o", xr("chat", spec, json!({})));
        let mut d = json!({"gpuMemoryUtilization": 0.95});
        d.as_object_mut()
            .unwrap()
            .extend(defaults.as_object().unwrap().clone());
        req.input = Some(input(json!({"defaults": d})));
        desired_status(&call(&req))
    };
    use sizing::Objective::*;
    for (spec, defaults, want) in [
        (spec(None), json!({}), Balanced),
        (spec(Some("minimal")), json!({}), Minimal),
        (spec(None), json!({"objective": "minimal"}), Minimal),
        (
            spec(Some("throughput")),
            json!({"objective": "minimal"}),
            Throughput,
        ),
    ] {
        let status = with_input(spec.clone(), defaults.clone());
        let plan = plan_for(want);
        assert_eq!(
            status["plan"]["objective"],
            want.to_string(),
            "{spec} {defaults}"
        );
        assert_eq!(status["gpuCount"], plan.gpu_count, "{spec} {defaults}");
    }
    assert_ne!(plan_for(Minimal).gpu_count, plan_for(Balanced).gpu_count);
}

#[test]
fn the_platform_vllm_release_sizes_its_image_only() {
    let engine = |version: Option<&str>| {
        plan_status(
            &sizing::size(&SizingRequest {
                model_id: "meta-llama/Llama-3.1-8B-Instruct".into(),
                gpu_type: "H100-80GB".into(),
                mig: MigChoice::None,
                vllm_version: version.map(String::from),
                ..Default::default()
            })
            .unwrap(),
        )
    };
    let call_with = |spec: Value| {
        let mut req = request("v", xr("chat", spec, json!({})));
        req.input = Some(input(json!({"defaults": {"vllmVersion": "0.19.0"}})));
        desired_status(&call(&req))["plan"].clone()
    };
    let spec = json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "H100-80GB"});
    assert_eq!(
        call_with(spec.clone()),
        as_in_response(serde_json::to_value(engine(Some("0.19.0"))).unwrap())
    );
    assert_ne!(engine(Some("0.19.0")).estimate, engine(None).estimate);
    // An XR's own image may run any release: the larger, earlier peak.
    let mut own_image = spec;
    own_image["image"] = json!({"registry": "docker.io", "name": "vllm/vllm-openai:v0.6.5"});
    assert_eq!(
        call_with(own_image),
        as_in_response(serde_json::to_value(engine(None)).unwrap())
    );
}

#[test]
fn a_guessed_architecture_warns_once_and_says_how_to_give_the_config() {
    let spec = json!({"model": "example/my-codellama-7B", "gpuType": "L40S"});
    let rsp = call(&request("g", xr("code", spec.clone(), json!({}))));
    let w = "example/my-codellama-7B is not in the model catalog and no config.json was given: its architecture was guessed \
             on the safe side (multi-head attention, a large vocabulary), which can plan more GPUs than it needs; serve it \
             through a Model (spec.modelRef) whose spec.config holds the model's config.json, or whose \
             spec.configFrom.configMapRef names a ConfigMap with the key config.json";
    assert_eq!(rsp.results, vec![warning("SizingWarning", w)]);
    let status = desired_status(&rsp);
    assert_eq!(status["plan"]["architectureGuessed"], true);
    assert!(
        status["plan"]["warnings"]
            .as_array()
            .unwrap()
            .contains(&json!(w))
    );
    // Reported in the status already: no new event.
    let again = call(&request(
        "g",
        xr("code", spec, json!({"plan": {"warnings": [w]}})),
    ));
    assert_eq!(again.results, vec![]);
}
