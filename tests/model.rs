//! The specification of Model: its behaviour, then its refusals.
//!
//! Behaviour, call by call: its plans on each GPU type the platform offers,
//! its size and card, shard specs the heads cannot be split by, its
//! config.json inline or from a ConfigMap read through Crossplane, and what
//! an LLMInference with `modelRef` reads from it.
//!
//! Refusals: every malformed spec is a FATAL result that names the field and
//! what would be valid, and keeps the earlier steps' desired state (one
//! table shape, `support::refusals`).

mod support;

use function_inference::protocol::fnv1;
use serde_json::{Value, json};
use support::fixtures::*;
use support::models::*;
use support::refusals::*;
use support::*;

#[test]
fn a_model_reports_its_plans_its_size_and_its_card() {
    let rsp = call(&request(
        "m1",
        model_xr(llama_8b()["spec"].clone(), json!({})),
    ));
    assert_eq!(rsp.results, vec![]);
    let st = desired_status(&rsp);
    assert_eq!(st["phase"], "Ready");
    // Ready as its model card is.
    assert_eq!(xr_readiness(&rsp), fnv1::Ready::Unspecified);
    assert_eq!(st["modelId"], "meta-llama/Llama-3.1-8B-Instruct");
    assert_eq!(st["serveableOn"], "L4,L40S,A100-80GB,H100-80GB");
    assert_eq!(
        st["size"],
        json!({"declared": "16Gi", "derivedGiB": 14.96, "formula": "8.03B parameters x 2 bytes (fp16) = 14.96 GiB", "consistent": true})
    );
    assert_eq!(st["plans"].as_array().map(Vec::len), Some(4));
    assert_eq!(
        rsp.conditions,
        vec![condition(
            "Servable",
            fnv1::Status::ConditionTrue,
            "Planned",
            "servable on L4, L40S, A100-80GB, H100-80GB"
        )]
    );
    let card = manifest(&rsp, "model_card");
    assert_eq!(card["metadata"]["name"], "llama-8b-model");
    let model_json: Value =
        serde_json::from_str(card["data"]["model.json"].as_str().unwrap()).unwrap();
    assert_eq!(
        model_json,
        json!({"name": "llama-8b", "weightsURI": "hf://meta-llama/Llama-3.1-8B-Instruct",
               "modelId": "meta-llama/Llama-3.1-8B-Instruct", "size": "16Gi", "quantization": "fp16",
               "parameterCount": "8B", "architecture": "llama"})
    );

    // A declared size that contradicts parameters x precision is a warning, once.
    let mut spec = llama_8b()["spec"].clone();
    spec["size"] = json!("4Gi");
    let rsp = call(&request("m2", model_xr(spec.clone(), json!({}))));
    let w = "spec.size 4Gi (4.00 GiB) contradicts 8.03B parameters x 2 bytes (fp16) = 14.96 GiB; check spec.parameterCount and spec.quantization, or correct spec.size";
    assert_eq!(rsp.results, vec![warning("ModelWarning", w)]);
    assert_eq!(desired_status(&rsp)["size"]["consistent"], false);
    assert_eq!(
        call(&request("m3", model_xr(spec, json!({"warnings": [w]})))).results,
        vec![]
    );

    // Weights counted from the index: the formula and the hint say so.
    let mut spec = json!({"weightsURI": "hf://meta-llama/Llama-3.1-8B-Instruct", "size": "16Gi",
                          "weightsIndex": {"totalSize": 12_000_000_000_u64}});
    let rsp = call(&request("m2i", model_xr(spec.clone(), json!({}))));
    let formula = "12,000,000,000 bytes of bf16 weights (the weights index) = 11.18 GiB";
    assert_eq!(desired_status(&rsp)["size"]["formula"], formula);
    assert_eq!(
        rsp.results,
        vec![warning(
            "ModelWarning",
            &format!(
                "spec.size 16Gi (16.00 GiB) contradicts {formula}; check spec.parameterCount, \
                 spec.weightsIndex.totalSize and spec.quantization, or correct spec.size"
            )
        )]
    );
    spec["size"] = json!("11Gi");
    let rsp = call(&request("m2j", model_xr(spec, json!({}))));
    assert_eq!(rsp.results, vec![]);
    assert_eq!(desired_status(&rsp)["size"]["consistent"], true);

    // Llama-3.1-405B in fp32 (1.5 TiB) on a platform offering one GPU type.
    let fp32_405b_on = |tag: &str, gpu_type: &str| {
        let mut req = request(
            tag,
            model_xr(
                json!({"weightsURI": "hf://meta-llama/Llama-3.1-405B-Instruct", "quantization": "fp32"}),
                json!({}),
            ),
        );
        req.input = Some(input(json!({"defaults": {"offeredGpuTypes": [gpu_type]}})));
        call(&req)
    };

    // Weights no offered GPU can hold: Failed, with each GPU type's reason.
    let rsp = fp32_405b_on("m4", "T4");
    let st = desired_status(&rsp);
    assert_eq!(st["phase"], "Failed");
    // Of no use to what references it, whatever its model card says.
    assert_eq!(xr_readiness(&rsp), fnv1::Ready::False);
    assert!(
        st["reason"]
            .as_str()
            .unwrap()
            .starts_with("no offered GPU type (T4) can serve the Model: T4: "),
        "{}",
        st["reason"]
    );
    assert_eq!(
        rsp.conditions[0].status,
        fnv1::Status::ConditionFalse as i32
    );
    assert_eq!(
        rsp.results,
        vec![warning("ModelWarning", st["reason"].as_str().unwrap())]
    );

    // A refusal no GPU type changes is said once, not once per offered type.
    let mut req = request(
        "m4b",
        model_xr(
            json!({"weightsURI": "hf://meta-llama/Llama-3.2-11B-Vision-Instruct"}),
            json!({}),
        ),
    );
    req.input = Some(input(
        json!({"defaults": {"offeredGpuTypes": ["L4", "H100-80GB"], "vllmVersion": "0.19.0"}}),
    ));
    let st = desired_status(&call(&req));
    assert_eq!(st["phase"], "Failed");
    assert_eq!(
        st["reason"],
        "no offered GPU type (L4, H100-80GB) can serve the Model: meta-llama/Llama-3.2-11B-Vision-Instruct is a \
         MllamaForConditionalGeneration model, which vLLM loads only up to release 0.10.2; vLLM 0.19.0 cannot \
         start it: serve a vision model it runs, such as google/gemma-3-12b-it or \
         mistralai/Mistral-Small-3.1-24B-Instruct-2503, or an image of vLLM 0.10.2 or earlier"
    );

    // On L4 they need 16 nodes, which the platform's default runtime (one
    // pod per replica) cannot run but a LeaderWorkerSet can: servable, and
    // the condition says which runtime the XRs serving it need.
    let rsp = fp32_405b_on("m5", "L4");
    let st = desired_status(&rsp);
    assert_eq!(
        (&st["phase"], &st["serveableOn"]),
        (&json!("Ready"), &json!("L4"))
    );
    assert_eq!(xr_readiness(&rsp), fnv1::Ready::Unspecified);
    assert_eq!(
        response_condition(&rsp, "Servable")
            .unwrap()
            .message
            .unwrap(),
        "servable on L4; the platform's default runtime (input.defaults.runtime) runs a replica as one pod on \
         one node, and a replica needs several nodes on L4 (128 GPUs on 16 nodes): XRs that serve it there set \
         spec.runtime to leader-worker-set or auto"
    );
}

/// A Model's plans are those of the platform's default runtime, whose image
/// may say its vLLM release: fp8 weights on a T4 run from vLLM 0.14 on.
#[test]
fn a_models_plans_follow_the_release_of_the_default_runtimes_image() {
    let on_t4 = |tag: &str, defaults: Value| {
        let mut req = request(
            tag,
            model_xr(
                json!({"weightsURI": "hf://neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8"}),
                json!({}),
            ),
        );
        req.input = Some(input(json!({ "defaults": defaults })));
        desired_status(&call(&req))
    };
    // The built-in Deployment image runs vLLM 0.19.0.
    let st = on_t4(
        "m6",
        json!({"offeredGpuTypes": ["T4"], "runtime": "deployment"}),
    );
    assert_eq!(
        (
            &st["phase"],
            &st["serveableOn"],
            &st["plans"][0]["plan"]["quantization"]
        ),
        (&json!("Ready"), &json!("T4"), &json!("fp8")),
        "{st}"
    );
    // The VLLMRuntime's image does not say its release.
    let st = on_t4("m7", json!({"offeredGpuTypes": ["T4"]}));
    assert_eq!(st["phase"], "Failed");
    assert!(
        st["reason"]
            .as_str()
            .unwrap()
            .starts_with("no offered GPU type (T4) can serve the Model: T4: fp8 weights need a GPU with fp8 support, which T4 lacks"),
        "{st}"
    );
}

/// A Model deleted under a serving LLMInference: what it composed is kept,
/// and so is the status that describes it (Crossplane removes every status
/// field an answer leaves out); only `ready` and the conditions change.
#[test]
fn an_llm_inference_whose_model_is_gone_keeps_the_status_of_what_it_kept() {
    let last = json!({
        "model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "L4", "gpuCount": 1,
        "runtime": "deployment", "ready": "True",
        "endpoint": {"internal": "http://chat.team-a.svc.cluster.local/v1"},
        "plan": {"gpuCount": 1, "tensorParallelSize": 1},
        "servingLayout": "1 x L4 (bfloat16), tensor parallel 1, max model length 32768",
        "conditions": [{"type": "Serving", "status": "True", "reason": "Available"}],
    });
    let xr = LlmInference::new("chat")
        .model_ref("llama-8b")
        .gpu_type("L4")
        .status(last.clone())
        .build();
    let mut req = with_model(request("g1", xr), vec![]);
    req.observed.as_mut().unwrap().resources = [(
        "deployment".to_string(),
        resource(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": "chat", "namespace": "team-a"}, "spec": {"replicas": 1}})),
    )]
    .into();
    let rsp = call(&req);
    assert_eq!(names(&rsp), vec!["deployment".to_string()]);
    let mut want = last;
    want.as_object_mut().unwrap().remove("conditions");
    want["ready"] = json!("False");
    assert_eq!(desired_status(&rsp), want);
    assert_eq!(xr_readiness(&rsp), fnv1::Ready::False);

    // Nothing composed before: nothing of an older status is carried over.
    let mut fresh = req.clone();
    fresh.observed.as_mut().unwrap().resources.clear();
    assert_eq!(desired_status(&call(&fresh)), json!({"ready": "False"}));
}

#[test]
fn llm_inference_model_ref_waits_for_and_serves_the_model() {
    let xr = LlmInference::new("chat")
        .model_ref("llama-8b")
        .gpu_type("L40S")
        .build();
    let rsp = call(&request("l1", xr.clone()));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert_eq!(rsp.requirements, requirement());
    assert_eq!(names(&rsp), Vec::<String>::new());
    assert_eq!(rsp.conditions[0].reason, "WaitingForModel");
    // Composing nothing yet, it would be Ready by its composed resources.
    assert_eq!(xr_readiness(&rsp), fnv1::Ready::False);

    let mut m = llama_8b();
    m["spec"]["cachePolicy"] = json!({"priority": "low"});
    let rsp = call(&with_model(request("l2", xr), vec![m]));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    // Found; until the runtime serves, its pods are asked for too.
    let mut want = requirement().unwrap();
    want.resources.insert(
        "model_server_pods".into(),
        pods_selector(&[("app", "chat")]),
    );
    want.resources.extend(crd_requirements(&[VLLM_RUNTIME_CRD]));
    assert_eq!(rsp.requirements, Some(want));
    assert_eq!(xr_readiness(&rsp), fnv1::Ready::Unspecified);
    let runtime = manifest(&rsp, "vllm_runtime");
    assert_eq!(
        runtime["spec"]["model"]["modelURL"],
        "meta-llama/Llama-3.1-8B-Instruct"
    );
    assert_eq!(runtime["spec"]["model"]["dtype"], "float16");
    assert_eq!(runtime["spec"]["storageConfig"]["size"], "18Gi");
    // A Model that names no tool-call parser serves without one.
    assert_eq!(runtime["spec"]["vllmConfig"].get("extraArgs"), None);
    // Found: the condition that said it was missing is replaced.
    assert_eq!(
        rsp.conditions[0],
        condition(
            "ModelResolved",
            fnv1::Status::ConditionTrue,
            "Found",
            "Model team-a/llama-8b served as meta-llama/Llama-3.1-8B-Instruct"
        )
    );
}

/// A Model's tool-call parser reaches every runtime that serves it: an
/// LLMInference's clients can send tools (tool_choice auto).
#[test]
fn llm_inference_model_ref_parses_tool_calls_with_the_models_parser() {
    let xr = LlmInference::new("chat")
        .model_ref("llama-8b")
        .gpu_type("L40S")
        .build();
    let mut m = llama_8b();
    m["spec"]["toolCallParser"] = json!("llama3_json");
    let rsp = call(&with_model(request("t1", xr), vec![m]));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert_eq!(
        manifest(&rsp, "vllm_runtime")["spec"]["vllmConfig"]["extraArgs"],
        json!([
            "--enable-auto-tool-choice",
            "--tool-call-parser",
            "llama3_json"
        ])
    );
    let reasons: Vec<String> =
        serde_json::from_value(desired_status(&rsp)["plan"]["reasons"].clone()).unwrap();
    assert!(reasons.contains(
        &"Tool calling: vLLM parses tool calls with llama3_json, the Model's spec.toolCallParser \
          (--enable-auto-tool-choice --tool-call-parser llama3_json)."
            .to_string()
    ), "{reasons:#?}");
}

/// Weights whose repository's code vLLM must run (Kimi K2's tokenizer)
/// fail the Model until it trusts that code, and what serves it is refused;
/// once trusted, every runtime serving it starts with --trust-remote-code.
#[test]
fn weights_that_need_their_repositorys_code_are_served_only_when_trusted() {
    let kimi = || {
        Model::new("kimi")
            .weights_uri("hf://moonshotai/Kimi-K2-Instruct")
            .build()
    };
    let why = "moonshotai/Kimi-K2-Instruct ships its tokenizer as Python code in its repository \
               (tokenization_kimi.py), which vLLM runs only with --trust-remote-code: without it the model server \
               stops at startup; set spec.trustRemoteCode to true (the code then runs in the model server's pods: \
               trust only repositories you would run)";
    let rsp = call(&request("m", kimi()));
    assert!(
        rsp.results.contains(&warning("ModelWarning", why)),
        "{:#?}",
        rsp.results
    );
    assert_eq!(desired_status(&rsp)["phase"], "Failed");
    assert_eq!(
        rsp.conditions,
        vec![condition(
            "Servable",
            fnv1::Status::ConditionFalse,
            "RemoteCodeNotTrusted",
            why
        )]
    );
    let pool = || {
        AgentPool::one_agent("kimi")
            .field("gpuRequirements", json!({"type": "H200"}))
            .field("runtime", json!("auto"))
            .build()
    };
    let rsp = call(&with_model(request("r", pool()), vec![kimi()]));
    assert_eq!(
        fatals(&rsp),
        vec![format!("spec.agentClass.modelRef: Model team-a/kimi: {why}").as_str()]
    );

    let mut trusted = kimi();
    trusted["spec"]["trustRemoteCode"] = json!(true);
    let rsp = call(&request("m", trusted.clone()));
    assert_eq!(desired_status(&rsp)["phase"], "Ready", "{:?}", rsp.results);
    let chat = LlmInference::new("chat")
        .model_ref("kimi")
        .gpu_type("H200")
        .field("runtime", json!("auto"))
        .build();
    for (xr, lws) in [
        (pool(), "model_server_leader_worker_set"),
        (chat, "leader_worker_set"),
    ] {
        let rsp = call(&with_model(request("r", xr), vec![trusted.clone()]));
        assert_eq!(fatals(&rsp), Vec::<&str>::new(), "{lws}");
        let leader = &manifest(&rsp, lws)["spec"]["leaderWorkerTemplate"]["leaderTemplate"];
        let args = leader["spec"]["containers"][0]["args"].to_string();
        assert!(args.contains("\"--trust-remote-code\""), "{lws}: {args}");
    }
}

/// The card records any format, but the model server loads what vLLM finds
/// (safetensors, else PyTorch): a format it would not load is a note, not
/// silently taken for applied.
#[test]
fn a_format_the_model_server_does_not_load_is_a_note() {
    let model = |format: &str| {
        Model::new("llama")
            .spec(
                json!({"weightsURI": "hf://meta-llama/Llama-3.1-8B-Instruct",
                         "parameterCount": "8B", "architecture": "llama", "format": format}),
            )
            .build()
    };
    let notes = |format: &str| desired_status(&call(&request("m", model(format))))["notes"].clone();
    assert_eq!(notes("safetensors"), Value::Null);
    assert_eq!(notes("PyTorch"), Value::Null);
    assert_eq!(
        notes("gguf"),
        json!([
            "spec.format \"gguf\" is not applied: the model server loads the safetensors weights it finds at \
                spec.weightsURI (from Hugging Face, else PyTorch ones)"
        ])
    );
}

/// Weights in a bucket the nodes' role cannot read (MinIO, Ceph, another
/// account's S3) load with static keys: the Model names a Secret, and the
/// pods of every runtime serving it take its keys as their environment. A
/// VLLMRuntime's environment holds literal values only, so auto serves on a
/// Deployment and an explicit vllm-runtime is refused.
#[test]
fn weights_in_a_bucket_load_with_the_keys_of_the_models_secret() {
    let bucket = || {
        Model::new("llama-s3")
            .spec(
                json!({"weightsURI": "s3://models/meta-llama/Llama-3.1-8B-Instruct",
                         "parameterCount": "8B", "architecture": "llama",
                         "storageSecretRef": {"name": "minio-keys"}}),
            )
            .build()
    };
    let rsp = call(&request("m", bucket()));
    assert_eq!(rsp.results, vec![]);
    let status = desired_status(&rsp);
    assert_eq!(status["phase"], "Ready");
    assert_eq!(
        status["notes"],
        json!([
            "weights from s3:// load through the Run:ai Model Streamer (--load-format runai_streamer), \
                with the keys in Secret minio-keys (spec.storageSecretRef) as the model server's environment; \
                the Secret must exist where its pods run"
        ])
    );
    let mut role = bucket();
    role["spec"]
        .as_object_mut()
        .unwrap()
        .remove("storageSecretRef");
    assert_eq!(
        desired_status(&call(&request("m", role)))["notes"],
        json!([
            "weights from s3:// load through the Run:ai Model Streamer (--load-format runai_streamer); the \
                model server's pods need read access to the bucket: the platform's ServiceAccount with workload \
                identity (input.defaults.modelServerServiceAccountName), keys in a Secret \
                (spec.storageSecretRef), or the nodes' own role"
        ])
    );
    let keys = json!([{"secretRef": {"name": "minio-keys"}}]);
    let serve = |xr: Value| call(&with_model(request("r", xr), vec![bucket()]));
    let chat = |runtime: &str| {
        LlmInference::new("chat")
            .model_ref("llama-s3")
            .gpu_type("L4")
            .runtime(runtime)
            .build()
    };
    let rsp = serve(chat("deployment"));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    let pod = &manifest(&rsp, "deployment")["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["envFrom"], keys);
    let rsp = serve(
        AgentPool::one_agent("llama-s3")
            .field("runtime", json!("deployment"))
            .build(),
    );
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    let server = &manifest(&rsp, "model_server_deployment")["spec"]["template"]["spec"];
    assert_eq!(server["containers"][0]["envFrom"], keys);
    let agents = &manifest(&rsp, "agents")["spec"]["template"]["spec"];
    assert_eq!(
        agents["containers"][0].get("envFrom"),
        None,
        "the agents read no bucket"
    );
    // Every pod of a LeaderWorkerSet group streams its share of the weights.
    let rsp = serve(chat("leader-worker-set"));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    let template = &manifest(&rsp, "leader_worker_set")["spec"]["leaderWorkerTemplate"];
    for role in ["leaderTemplate", "workerTemplate"] {
        assert_eq!(
            template[role]["spec"]["containers"][0]["envFrom"], keys,
            "{role}"
        );
    }

    let rsp = serve(chat("auto"));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert!(
        names(&rsp).contains(&"deployment".to_string()),
        "{:?}",
        names(&rsp)
    );
    let reasons: Vec<String> =
        serde_json::from_value(desired_status(&rsp)["plan"]["reasons"].clone()).unwrap();
    let reason = "Runtime: deployment (spec.runtime auto): a VLLMRuntime's environment holds only literal values, \
                  so it cannot take the bucket's keys from Secret minio-keys (the Model's spec.storageSecretRef); \
                  a Deployment's pods take them as their environment.";
    assert!(reasons.contains(&reason.to_string()), "{reasons:#?}");
    assert_eq!(
        fatals(&serve(chat("vllm-runtime"))),
        vec![
            "the Model's spec.storageSecretRef: a VLLMRuntime's environment (vllmConfig.env) holds only literal \
             values, so it cannot take the bucket's keys from Secret minio-keys; set spec.runtime to deployment \
             or leader-worker-set (or auto), whose pods take them as their environment"
        ]
    );
}

/// A Model pinned to a revision of its repository loads that revision on
/// every runtime serving it, so a replica started later (a scale-out, a
/// node drain) serves the weights, tokenizer and code the others serve.
#[test]
fn a_pinned_revision_is_what_every_runtime_loads() {
    let sha = "0e9e39f249a16976918f6564b8830bc894c89659";
    let mut pinned = llama_8b();
    pinned["spec"]["revision"] = json!(sha);
    let rsp = call(&request("m", pinned.clone()));
    assert_eq!(rsp.results, vec![]);
    assert_eq!(desired_status(&rsp)["phase"], "Ready");
    for (runtime, key, args_at) in [
        (
            "vllm-runtime",
            "vllm_runtime",
            vec!["spec", "vllmConfig", "extraArgs"],
        ),
        (
            "deployment",
            "deployment",
            vec!["spec", "template", "spec", "containers", "0", "args"],
        ),
    ] {
        let chat = LlmInference::new("chat")
            .model_ref("llama-8b")
            .gpu_type("L4")
            .runtime(runtime)
            .build();
        let rsp = call(&with_model(request("r", chat), vec![pinned.clone()]));
        assert_eq!(fatals(&rsp), Vec::<&str>::new(), "{runtime}");
        let mut args = manifest(&rsp, key);
        for part in &args_at {
            args = match part.parse::<usize>() {
                Ok(i) => args[i].clone(),
                Err(_) => args[*part].clone(),
            };
        }
        let args: Vec<String> = serde_json::from_value(args).unwrap();
        let at = args.iter().position(|a| a == "--revision");
        assert_eq!(
            at.map(|i| args[i + 1].as_str()),
            Some(sha),
            "{runtime}: {args:?}"
        );
    }
}

/// A tensor-parallel shardSpec the Model's attention heads cannot be split
/// by fails the Model itself (phase Failed, the field and the rule named
/// once), not each plan on its own, and not only once a runtime serves it.
#[test]
fn a_shard_spec_the_heads_cannot_be_split_by_fails_the_model() {
    let mut m = example_model();
    m["spec"]["shardSpec"] = json!({"count": 3, "strategy": "tensor-parallel"});
    let rsp = call(&request("m", m.clone()));
    let reason = "spec.shardSpec.count: tensor parallel 3 does not split the 32 attention heads and 8 KV heads of \
                  meta-llama/Llama-3.1-8B-Instruct: the attention heads must divide by it, and the KV heads divide \
                  by it or it by them; use 1, 2, 4, 8, 16, 32";
    // A WARNING result (an event on the Model) when it first fails, not a
    // FATAL: the status is what the runtimes referencing it read.
    assert_eq!(rsp.results, vec![warning("ModelWarning", reason)]);
    let status = desired_status(&rsp);
    assert_eq!(status["phase"], "Failed");
    assert_eq!(xr_readiness(&rsp), fnv1::Ready::False);
    assert_eq!(status["reason"], reason);
    assert_eq!(status["warnings"], json!([reason]));
    let mut reported = m.clone();
    reported["status"] = json!({"warnings": [reason]});
    assert_eq!(call(&request("m", reported)).results, vec![]);
    assert_eq!(
        rsp.conditions,
        vec![condition(
            "Servable",
            fnv1::Status::ConditionFalse,
            "InvalidShardSpec",
            reason
        )]
    );
    assert!(names(&rsp).contains(&"model_card".to_string()));
    // A valid one is still Ready.
    let mut m = example_model();
    m["spec"]["shardSpec"] = json!({"count": 2, "strategy": "tensor-parallel"});
    assert_eq!(desired_status(&call(&request("m", m)))["phase"], "Ready");
}

/// Weights no runtime loads (pvc://, https://) fail the Model, with the
/// URIs that would work, and what references it is refused with the same.
#[test]
fn weights_no_runtime_loads_fail_the_model_and_refuse_what_serves_it() {
    for (uri, scheme) in [
        ("pvc://weights/llama-3.1-8b", "pvc"),
        ("https://models.example.com/llama-3.1-8b", "https"),
    ] {
        let m = Model::new("llama-8b")
            .spec(json!({"weightsURI": uri, "parameterCount": "8B", "architecture": "llama"}))
            .build();
        let why = format!(
            "weightsURI \"{uri}\": no runtime loads {scheme}:// weights (vLLM loads Hugging Face ids and object \
             stores); use hf://org/name, s3://bucket/path or gs://bucket/path"
        );
        let reason = format!("spec.{why}");
        let rsp = call(&request("m", m.clone()));
        assert_eq!(rsp.results, vec![warning("ModelWarning", &reason)], "{uri}");
        let status = desired_status(&rsp);
        assert_eq!(status["phase"], "Failed", "{uri}");
        assert_eq!(status["reason"], reason.as_str(), "{uri}");
        assert_eq!(status["serveableOn"], Value::Null, "{uri}");
        assert_eq!(xr_readiness(&rsp), fnv1::Ready::False, "{uri}");
        assert_eq!(
            rsp.conditions,
            vec![condition(
                "Servable",
                fnv1::Status::ConditionFalse,
                "UnsupportedWeightsURI",
                &reason
            )],
            "{uri}"
        );
        for (xr, field) in [
            (
                LlmInference::new("chat").model_ref("llama-8b").build(),
                "spec.modelRef",
            ),
            (
                AgentPool::one_agent("llama-8b").build(),
                "spec.agentClass.modelRef",
            ),
        ] {
            let rsp = call(&with_model(request("r", xr), vec![m.clone()]));
            assert_eq!(
                fatals(&rsp),
                vec![format!("{field}: Model team-a/llama-8b: spec.{why}").as_str()],
                "{uri}"
            );
        }
    }
}

fn example_model() -> Value {
    example("examples/configuration/agents/model.yaml")
}

/// CodeLlama-7b under a name the catalog does not know.
fn codellama() -> Model {
    Model::new("llama-8b").weights_uri("hf://example/my-codellama")
}

/// The codellama Model sized from the ConfigMap codellama-config.
fn codellama_from_config_map() -> Model {
    codellama().field(
        "configFrom",
        json!({"configMapRef": {"name": "codellama-config"}}),
    )
}

fn first_plan(rsp: &fnv1::RunFunctionResponse) -> Value {
    desired_status(rsp)["plans"][0]["plan"].clone()
}

#[test]
fn a_model_with_its_config_json_is_sized_exactly_and_without_it_warns() {
    let index = std::fs::read_to_string(data("models/codellama-7b-index.json")).unwrap();
    let total = function_inference::sizing::weights_index_total_bytes(&index).unwrap();
    let rsp = call(&request(
        "c1",
        codellama()
            .field("config", codellama_config())
            .field("weightsIndex", json!({"totalSize": total}))
            .field("kvCacheDtype", json!("fp8"))
            .field("objective", json!("minimal"))
            .build(),
    ));
    assert_eq!(rsp.results, vec![]);
    let st = desired_status(&rsp);
    assert_eq!(st["phase"], "Ready");
    let plan = first_plan(&rsp);
    assert_eq!(plan["architectureGuessed"], false);
    assert_eq!(plan["kvCacheDtype"], "fp8");
    assert_eq!(plan["objective"], "minimal");
    // The engine with the same config and index gives the same plan.
    let engine = function_inference::sizing::size(&function_inference::sizing::SizingRequest {
        model_id: "example/my-codellama".into(),
        gpu_type: "L4".into(),
        mig: function_inference::sizing::MigChoice::None,
        kv_cache_dtype: function_inference::sizing::KvCacheDtype::Fp8,
        objective: function_inference::sizing::Objective::Minimal,
        model_config: Some(
            function_inference::sizing::ModelConfig::from_json(&codellama_config().to_string())
                .unwrap(),
        ),
        checkpoint_bytes: Some(total),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(plan["gpuCount"], engine.gpu_count);
    assert_eq!(plan["reasons"], json!(engine.reasons));
    // The card keeps what was given.
    let card: Value = serde_json::from_str(
        manifest(&rsp, "model_card")["data"]["model.json"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(card["config"], codellama_config());
    assert_eq!(card["weightsIndex"], json!({"totalSize": total}));

    // Without it: the id's size, a guessed architecture, and a warning
    // saying how to give the config, once.
    let guessed = codellama().field("parameterCount", json!("7B")).build();
    let rsp = call(&request("c2", guessed.clone()));
    let w = "example/my-codellama is not in the model catalog and no config.json was given: its architecture is \
             assumed to be that of the Llama 3 model nearest in size (grouped-query attention), and a model \
             that caches more per token may need more GPUs for a long context; set the \
             Model's spec.config to the model's config.json, or spec.configFrom.configMapRef to a ConfigMap with the key \
             config.json";
    assert_eq!(rsp.results, vec![warning("ModelWarning", w)]);
    assert_eq!(first_plan(&rsp)["architectureGuessed"], true);
    let mut seen = guessed;
    seen["status"] = json!({"warnings": [w]});
    assert_eq!(call(&request("c3", seen)).results, vec![]);

    // Both an inline config and a ConfigMap: which one is meant is unclear.
    let both = codellama_from_config_map()
        .field("config", codellama_config())
        .build();
    assert_eq!(
        fatals(&call(&request("c4", both))),
        vec![
            "spec.config and spec.configFrom are both set; give the config.json once: inline (config) or from a ConfigMap (configFrom)"
        ]
    );
}

#[test]
fn a_model_reads_its_config_from_a_config_map_through_crossplane() {
    let xr = codellama_from_config_map().build();
    let requirements = Some(fnv1::Requirements {
        resources: [(
            "model-config".to_string(),
            config_map_selector("codellama-config"),
        )]
        .into(),
        ..Default::default()
    });
    // Not looked up yet: ask, and wait without a FATAL.
    let rsp = call(&request("r1", xr.clone()));
    let message = "waiting for Crossplane to look up ConfigMap team-a/codellama-config (spec.configFrom.configMapRef)";
    assert_eq!(rsp.results, vec![]);
    assert_eq!(rsp.requirements, requirements);
    assert_eq!(
        rsp.conditions,
        vec![condition(
            "ModelConfigResolved",
            fnv1::Status::ConditionUnknown,
            "WaitingForModelConfig",
            message
        )]
    );
    assert_eq!(desired_status(&rsp)["waitingFor"], message);
    assert_eq!(xr_readiness(&rsp), fnv1::Ready::False);
    assert_eq!(names(&rsp), Vec::<String>::new());

    // Looked up and missing: a warning once, the condition False.
    let rsp = call(&with_config_map(request("r2", xr.clone()), vec![]));
    let missing = "waiting for ConfigMap team-a/codellama-config (spec.configFrom.configMapRef): it does not exist; \
                   create it with the model's config.json under the key config.json";
    assert_eq!(rsp.results, vec![warning("ModelConfigNotFound", missing)]);
    assert_eq!(rsp.requirements, requirements);
    assert_eq!(rsp.conditions[0].reason, "ModelConfigNotFound");
    assert_eq!(xr_readiness(&rsp), fnv1::Ready::False);
    let mut seen = xr.clone();
    seen["status"] = json!({"waitingFor": missing});
    assert_eq!(
        call(&with_config_map(request("r3", seen), vec![])).results,
        vec![]
    );

    // Found: sized from it, the requirement kept.
    let index = std::fs::read_to_string(data("models/codellama-7b-index.json")).unwrap();
    let found = config_map(
        "codellama-config",
        json!({"config.json": codellama_config().to_string(), "model.safetensors.index.json": index}),
    );
    let rsp = call(&with_config_map(request("r4", xr.clone()), vec![found]));
    assert_eq!(rsp.results, vec![]);
    assert_eq!(rsp.requirements, requirements);
    assert_eq!(desired_status(&rsp)["phase"], "Ready");
    assert_eq!(xr_readiness(&rsp), fnv1::Ready::Unspecified);
    // Said on every call: Crossplane would keep the False one otherwise.
    assert_eq!(
        response_condition(&rsp, "ModelConfigResolved"),
        model_config_found(
            "sized from ConfigMap team-a/codellama-config (spec.configFrom.configMapRef)"
        )
    );
    assert_eq!(first_plan(&rsp)["architectureGuessed"], false);

    // Deleted once sized: the card is kept, and so are the plans it holds
    // in the status, under what it now waits for.
    let mut sized = xr.clone();
    sized["status"] = desired_status(&rsp);
    sized["status"]["conditions"] = json!([{"type": "Servable", "status": "True"}]);
    // As a Model that failed before would have it: a verdict, not a wait.
    sized["status"]["reason"] = json!("no offered GPU type (L4) can serve the Model");
    let mut req = with_config_map(request("r4b", sized), vec![]);
    req.observed.as_mut().unwrap().resources = [(
        "model_card".to_string(),
        resource(desired_resource(&rsp, "model_card")),
    )]
    .into();
    let waiting = call(&req);
    let status = desired_status(&waiting);
    assert_eq!(status["phase"], "Pending");
    assert_eq!(status["waitingFor"], missing);
    assert_eq!(status["plans"], desired_status(&rsp)["plans"]);
    assert_eq!(status.get("conditions"), None);
    assert_eq!(status.get("reason"), None, "a Pending Model has no verdict");
    assert_eq!(
        names(&waiting),
        vec!["model_card".to_string()],
        "the card is kept"
    );
    let inline = call(&request(
        "r5",
        codellama()
            .field("config", codellama_config())
            .field(
                "weightsIndex",
                json!({"totalSize": function_inference::sizing::weights_index_total_bytes(&index).unwrap()}),
            )
            .build(),
    ));
    assert_eq!(
        desired_status(&rsp)["plans"],
        desired_status(&inline)["plans"],
        "a ConfigMap and the same config inline size alike"
    );
    // A Model that never named a ConfigMap has no such condition; one that
    // drops its configFrom is told there is nothing left to read.
    assert_eq!(response_condition(&inline, "ModelConfigResolved"), None);
    let mut dropped = codellama().field("config", codellama_config()).build();
    dropped["status"] = json!({"conditions": [{"type": "ModelConfigResolved", "status": "False",
                                               "reason": "ModelConfigNotFound"}]});
    assert_eq!(
        response_condition(&call(&request("r6", dropped)), "ModelConfigResolved"),
        Some(condition(
            "ModelConfigResolved",
            fnv1::Status::ConditionTrue,
            "NoConfigMap",
            "spec.configFrom.configMapRef is not set: there is no ConfigMap to read"
        ))
    );

    // Unusable: a FATAL naming the field and the key, the requirement kept.
    for (data, why) in [
        (
            json!({"config.json": "{not json"}),
            "key config.json: config.json is not valid JSON: key must be a string at line 1 column 2",
        ),
        (
            json!({"README": "see hf"}),
            "has neither config.json nor model.safetensors.index.json under data (its keys: README); put the model's config.json under config.json",
        ),
        (
            json!({"hf_quant_config.json": "{}"}),
            "has hf_quant_config.json but no config.json; put the model's config.json beside it under config.json",
        ),
        (
            json!({"config.json": codellama_config().to_string(), "hf_quant_config.json": "[]"}),
            "key hf_quant_config.json is not a JSON object",
        ),
        (
            json!({"config.json": format!("{{\"pad\": \"{}\"}}", "x".repeat(300 * 1024))}),
            "key config.json is 301 KiB; a config.json is a few KiB (at most 256 KiB accepted): give the model's config.json, not its weights or tokenizer",
        ),
    ] {
        let rsp = call(&with_config_map(
            request("r6", xr.clone()),
            vec![config_map("codellama-config", data)],
        ));
        assert_eq!(
            fatals(&rsp),
            vec![
                format!("spec.configFrom.configMapRef: ConfigMap team-a/codellama-config: {why}")
                    .as_str()
            ]
        );
        assert_eq!(rsp.requirements, requirements);
    }
}

#[test]
fn llm_inference_model_ref_inherits_the_models_config_kv_dtype_and_objective() {
    let m = model(
        "llama-8b",
        json!({"weightsURI": "hf://example/my-codellama", "kvCacheDtype": "fp8", "objective": "minimal",
               "configFrom": {"configMapRef": {"name": "codellama-config"}}}),
    );
    let xr = LlmInference::new("code")
        .model_ref("llama-8b")
        .gpu_type("L4")
        .build();
    let mut want_requirements = requirement().unwrap();
    want_requirements.resources.insert(
        "model-config".into(),
        config_map_selector("codellama-config"),
    );

    // The Model found: its ConfigMap asked for, and waited for.
    let rsp = call(&with_model(request("i1", xr.clone()), vec![m.clone()]));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert_eq!(rsp.requirements, Some(want_requirements.clone()));
    assert_eq!(rsp.conditions[0].reason, "WaitingForModelConfig");
    assert_eq!(names(&rsp), Vec::<String>::new());

    // Both there: served with the Model's facts.
    let cm = config_map(
        "codellama-config",
        json!({"config.json": codellama_config().to_string()}),
    );
    let rsp = call(&with_config_map(
        with_model(request("i2", xr.clone()), vec![m.clone()]),
        vec![cm.clone()],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    let mut with_pods = want_requirements.clone();
    with_pods.resources.insert(
        "model_server_pods".into(),
        pods_selector(&[("app", "code")]),
    );
    with_pods
        .resources
        .extend(crd_requirements(&[VLLM_RUNTIME_CRD]));
    assert_eq!(rsp.requirements, Some(with_pods));
    let runtime = manifest(&rsp, "vllm_runtime");
    assert_eq!(
        runtime["spec"]["vllmConfig"]["extraArgs"],
        json!(["--kv-cache-dtype", "fp8"])
    );
    assert_eq!(
        response_condition(&rsp, "ModelConfigResolved"),
        model_config_found(
            "sized from ConfigMap team-a/codellama-config (Model team-a/llama-8b spec.configFrom.configMapRef)"
        )
    );
    let plan = &desired_status(&rsp)["plan"];
    assert_eq!(plan["objective"], "minimal");
    assert_eq!(plan["kvCacheDtype"], "fp8");
    assert_eq!(plan["architectureGuessed"], false);

    // The LLMInference's own fields win.
    let mut own = xr;
    own["spec"]["objective"] = json!("balanced");
    own["spec"]["kvCacheDtype"] = json!("auto");
    let rsp = call(&with_config_map(
        with_model(request("i3", own), vec![m]),
        vec![cm],
    ));
    assert_eq!(fatals(&rsp), Vec::<&str>::new(), "{:?}", rsp.results);
    let plan = &desired_status(&rsp)["plan"];
    assert_eq!(plan["objective"], "balanced");
    assert_eq!(plan["kvCacheDtype"], "auto");
    assert_eq!(
        manifest(&rsp, "vllm_runtime")["spec"]["vllmConfig"]["extraArgs"],
        Value::Null
    );
}

// ---------------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------------

#[test]
fn malformed_models_are_fatal_and_name_the_field_and_what_is_valid() {
    let long = "x".repeat(5000);
    let rows = vec![
        refusal(
            "weightsURI missing",
            "spec.weightsURI",
            Remove,
            fatal("InvalidSpec", "spec: weightsURI is required"),
        ),
        refusal(
            "weightsURI number",
            "spec.weightsURI",
            json!(7),
            fatal("InvalidSpec", "spec.weightsURI: 7 is not a string"),
        ),
        refusal(
            "weightsURI empty",
            "spec.weightsURI",
            json!(""),
            fatal(
                "InvalidSpec",
                "spec.weightsURI is empty; set it (for example hf://meta-llama/Llama-3.1-8B-Instruct)",
            ),
        ),
        refusal(
            "weightsURI scheme",
            "spec.weightsURI",
            json!("ftp://x/y"),
            fatal(
                "InvalidSpec",
                "spec.weightsURI has scheme ftp://; use hf://, s3://, gs://, https:// or pvc://",
            ),
        ),
        refusal(
            "weightsURI not a Hugging Face id",
            "spec.weightsURI",
            json!("hf://Qwen/Qwen2.5-7B-Instruct:main"),
            fatal(
                "InvalidSpec",
                "spec.weightsURI \"hf://Qwen/Qwen2.5-7B-Instruct:main\": Qwen/Qwen2.5-7B-Instruct:main is not a Hugging Face id (':' is not a letter, digit, '-', '_' or '.'); a Hugging Face URI is hf://org/name",
            ),
        ),
        refusal(
            "weightsURI a GGUF repository",
            "spec.weightsURI",
            json!("hf://TheBloke/Llama-2-7B-GGUF"),
            fatal(
                "InvalidSpec",
                "spec.weightsURI \"hf://TheBloke/Llama-2-7B-GGUF\": TheBloke/Llama-2-7B-GGUF is a repository of GGUF files, which function-inference does not serve: by its id vLLM finds no safetensors checkpoint, and a GGUF file (id:quant) it loads only experimentally, under-optimized; name the checkpoint it was converted from (its model card says which), or an AWQ, GPTQ or FP8 quantization for less memory",
            ),
        ),
        refusal(
            "weightsURI long",
            "spec.weightsURI",
            json!(format!("hf://{long}")),
            fatal(
                "InvalidSpec",
                "spec.weightsURI is 5005 characters long; use at most 1024 (for example hf://meta-llama/Llama-3.1-8B-Instruct)",
            ),
        ),
        refusal(
            "size bad quantity",
            "spec.size",
            json!("sixteen gigs"),
            fatal(
                "InvalidSpec",
                "spec.size: \"sixteen gigs\" is not a quantity; write one like 16Gi, 40G or 500Mi",
            ),
        ),
        refusal(
            "size negative",
            "spec.size",
            json!("-16Gi"),
            fatal(
                "InvalidSpec",
                "spec.size: \"-16Gi\" is not a quantity; write one like 16Gi, 40G or 500Mi",
            ),
        ),
        refusal(
            "size huge",
            "spec.size",
            json!("1e30Gi"),
            fatal(
                "InvalidSpec",
                "spec.size: \"1e30Gi\" is not a quantity; write one like 16Gi, 40G or 500Mi",
            ),
        ),
        refusal(
            "quantization unknown",
            "spec.quantization",
            json!("int3"),
            fatal(
                "InvalidSpec",
                "spec.quantization: \"int3\" is not valid; use one of fp32, bf16, fp16, fp8, int8, int4, fp4, none",
            ),
        ),
        refusal(
            "parameterCount 1e30B",
            "spec.parameterCount",
            json!("1e30B"),
            fatal(
                "InvalidSpec",
                "spec.parameterCount: invalid parameter count `1e30B`: it is not a number with a unit; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
        ),
        refusal(
            "parameterCount zero",
            "spec.parameterCount",
            json!("0B"),
            fatal(
                "InvalidSpec",
                "spec.parameterCount: invalid parameter count `0B`: it must be a positive number; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
        ),
        refusal(
            "parameterCount number",
            "spec.parameterCount",
            json!(8),
            fatal("InvalidSpec", "spec.parameterCount: 8 is not a string"),
        ),
        refusal(
            "shardSpec strategy short name",
            "spec.shardSpec",
            json!({"count": 2, "strategy": "tensor"}),
            fatal(
                "InvalidSpec",
                "spec.shardSpec.strategy: \"tensor\" is not valid; use one of tensor-parallel, pipeline-parallel, data-parallel",
            ),
        ),
        refusal(
            "shardSpec count huge",
            "spec.shardSpec",
            json!({"count": 1e30, "strategy": "tensor"}),
            fatal(
                "InvalidSpec",
                "spec.shardSpec.count: 1e+30 is out of range; use a whole number from 1 to 64",
            ),
        ),
        refusal(
            "shardSpec strategy unknown",
            "spec.shardSpec",
            json!({"count": 2, "strategy": "diagonal"}),
            fatal(
                "InvalidSpec",
                "spec.shardSpec.strategy: \"diagonal\" is not valid; use one of tensor-parallel, pipeline-parallel, data-parallel",
            ),
        ),
        refusal(
            "cachePolicy priority unknown",
            "spec.cachePolicy.priority",
            json!("urgent"),
            fatal(
                "InvalidSpec",
                "spec.cachePolicy.priority: \"urgent\" is not valid; use one of critical, high, medium, low",
            ),
        ),
        refusal(
            "cachePolicy pinDuration bad",
            "spec.cachePolicy.pinDuration",
            json!("forever"),
            fatal(
                "InvalidSpec",
                "spec.cachePolicy.pinDuration: \"forever\" is not a duration; write one like 500ms, 30s, 5m or 1h30m",
            ),
        ),
        refusal(
            "cachePolicy pinDuration negative",
            "spec.cachePolicy.pinDuration",
            json!("-24h"),
            fatal(
                "InvalidSpec",
                "spec.cachePolicy.pinDuration is \"-24h\"; use a duration above zero, such as 500ms, 30s or 1h, or omit it",
            ),
        ),
        refusal(
            "cachePolicy preloadNodes over 64",
            "spec.cachePolicy.preloadNodes",
            json!((0..65).map(|i| format!("gpu-{i}")).collect::<Vec<_>>()),
            fatal(
                "InvalidSpec",
                "spec.cachePolicy.preloadNodes has 65 entries; use at most 64",
            ),
        ),
        refusal(
            "evictionPolicy unknown",
            "spec.cachePolicy.evictionPolicy",
            json!("sometimes"),
            fatal(
                "InvalidSpec",
                "spec.cachePolicy.evictionPolicy: \"sometimes\" is not valid; use one of never, idle, low-priority",
            ),
        ),
        refusal(
            "hfTokenSecretRef configmap",
            "spec.hfTokenSecretRef",
            json!({"name": "hf", "kind": "ConfigMap"}),
            fatal(
                "InvalidSpec",
                "spec.hfTokenSecretRef.kind: unknown field kind; valid fields are name or key",
            ),
        ),
        refusal(
            "hfTokenSecretRef key with a slash",
            "spec.hfTokenSecretRef",
            json!({"name": "hf-token", "key": "hf/token"}),
            fatal(
                "InvalidSpec",
                "spec.hfTokenSecretRef.key is \"hf/token\"; a key of a Secret or ConfigMap is at most 253 letters, digits, '-', '_' and '.', and not '.' or starting with '..' (for example token)",
            ),
        ),
        refusal(
            "hfTokenSecretRef empty name",
            "spec.hfTokenSecretRef",
            json!({"name": ""}),
            fatal(
                "InvalidSpec",
                "spec.hfTokenSecretRef.name is \"\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example hf-token)",
            ),
        ),
        refusal(
            "storageSecretRef not a name",
            "spec.storageSecretRef",
            json!({"name": "MinIO keys"}),
            fatal(
                "InvalidSpec",
                "spec.storageSecretRef.name is \"MinIO keys\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example bucket-keys)",
            ),
        ),
        refusal(
            "storageSecretRef with a key",
            "spec.storageSecretRef",
            json!({"name": "minio-keys", "key": "access"}),
            fatal(
                "InvalidSpec",
                "spec.storageSecretRef.key: unknown field key; valid fields are name",
            ),
        ),
        refusal(
            "storageSecretRef for hf://",
            "spec.storageSecretRef",
            json!({"name": "minio-keys"}),
            fatal(
                "InvalidSpec",
                "spec.storageSecretRef gives a bucket's keys, for s3:// weights; hf:// weights download from Hugging Face, with the token of spec.hfTokenSecretRef",
            ),
        ),
        refusal(
            "storageSecretRef for gs://",
            "spec",
            json!({"weightsURI": "gs://models/llama", "parameterCount": "8B", "storageSecretRef": {"name": "gcs-keys"}}),
            fatal(
                "InvalidSpec",
                "spec.storageSecretRef gives a bucket's keys to the S3 client, but gs:// weights load through Google's client, which takes workload identity (input.defaults.modelServerServiceAccountName) or a key file, not keys in its environment; for HMAC keys, write the URI as s3://bucket/path and put AWS_ENDPOINT_URL=https://storage.googleapis.com and RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING=0 in the Secret",
            ),
        ),
        refusal(
            "revision with a space",
            "spec.revision",
            json!("main branch"),
            fatal(
                "InvalidSpec",
                "spec.revision is \"main branch\"; use a commit hash, branch or tag of the repository (letters, digits, '.', '_', '-' and '/'), for example 0e9e39f249a16976918f6564b8830bc894c89659",
            ),
        ),
        refusal(
            "revision of a bucket",
            "spec",
            json!({"weightsURI": "s3://models/llama", "parameterCount": "8B", "revision": "v2"}),
            fatal(
                "InvalidSpec",
                "spec.revision pins a revision of a Hugging Face repository, and s3:// weights are the bucket's files; put the version in the path instead (for example s3://models/llama/v2)",
            ),
        ),
        refusal(
            "parameterCount long",
            "spec.parameterCount",
            json!(long),
            fatal(
                "InvalidSpec",
                "spec.parameterCount: invalid parameter count `xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... (5000 characters)`: the expert count is not a number; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
        ),
        refusal(
            "architecture long",
            "spec.architecture",
            json!(long),
            fatal(
                "InvalidSpec",
                "spec.architecture is 5000 characters long; use at most 64 (for example llama)",
            ),
        ),
        refusal(
            "config not an object",
            "spec.config",
            json!("see config.json"),
            fatal(
                "InvalidSpec",
                "spec.config is not an object; give the content of the model's config.json",
            ),
        ),
        refusal(
            "config describes no language model",
            "spec.config",
            json!({"model_type": "llama", "hidden_size": 4096}),
            fatal(
                "InvalidSpec",
                "spec.config: config.json has no num_hidden_layers (nor under text_config): it does not describe a language model sizing can read",
            ),
        ),
        refusal(
            "config too large",
            "spec.config",
            json!({"num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096, "padding": "x".repeat(300 * 1024)}),
            fatal(
                "InvalidSpec",
                "spec.config is 301 KiB; a config.json is a few KiB (at most 256 KiB accepted): give the model's config.json, not its weights or tokenizer",
            ),
        ),
        refusal(
            "configFrom name invalid",
            "spec.configFrom",
            json!({"configMapRef": {"name": "Llama_Config"}}),
            fatal(
                "InvalidSpec",
                "spec.configFrom.configMapRef.name is \"Llama_Config\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example llama-config)",
            ),
        ),
        refusal(
            "weightsIndex zero",
            "spec.weightsIndex",
            json!({"totalSize": 0}),
            fatal(
                "InvalidSpec",
                "spec.weightsIndex.totalSize: 0 is out of range; use a whole number from 1 to 400000000000000",
            ),
        ),
        refusal(
            "weightsIndex in gigabytes",
            "spec.weightsIndex",
            json!({"totalSize": "16GB"}),
            fatal(
                "InvalidSpec",
                "spec.weightsIndex.totalSize: the string \"16GB\" is not a whole number; use a whole number from 1 to 400000000000000",
            ),
        ),
        refusal(
            "weightsIndex beyond any model",
            "spec.weightsIndex",
            json!({"totalSize": 9_000_000_000_000_000_u64}),
            fatal(
                "InvalidSpec",
                "spec.weightsIndex.totalSize: 9000000000000000 is out of range; use a whole number from 1 to 400000000000000",
            ),
        ),
        refusal(
            "toolCallParser not a name",
            "spec.toolCallParser",
            json!("Hermes 2"),
            fatal(
                "InvalidSpec",
                "spec.toolCallParser is \"Hermes 2\"; use the name of a vLLM tool-call parser: at most 64 lower-case letters, digits, '_' and '-', such as hermes, llama3_json or mistral",
            ),
        ),
        refusal(
            "unknown field",
            "spec.weights",
            json!("hf://x"),
            fatal(
                "InvalidSpec",
                "spec.weights: unknown field weights; valid fields are weightsURI, size, quantization, shardSpec, cachePolicy, format, architecture, parameterCount, revision, hfTokenSecretRef, storageSecretRef, config, weightsIndex, configFrom, kvCacheDtype, objective, toolCallParser, trustRemoteCode, crossplane",
            ),
        ),
        refusal(
            "spec list",
            "spec",
            json!([]),
            fatal("InvalidSpec", "spec must be an object; it is a list"),
        ),
        refusal(
            "cachePolicy too large for a ConfigMap",
            "spec.cachePolicy",
            json!({"priority": "high", "preloadNodes": ["n".repeat(1 << 20)]}),
            fatal(
                "ConfigTooLarge",
                "spec.cachePolicy (about 1048615 bytes) makes the model card ConfigMap 1058513 bytes, more than \
                     the 1048576 bytes a ConfigMap holds; shorten it",
            ),
        ),
        refusal(
            "weightsURI over the schema's 1024 characters",
            "spec.weightsURI",
            json!(format!("hf://org/{}", "w".repeat(1100))),
            fatal(
                "InvalidSpec",
                "spec.weightsURI is 1109 characters long; use at most 1024 (for example hf://meta-llama/Llama-3.1-8B-Instruct)",
            ),
        ),
        refusal(
            "shardSpec a list that serde would read by position",
            "spec.shardSpec",
            json!([2, "tensor-parallel"]),
            fatal(
                "InvalidSpec",
                "spec.shardSpec must be an object; it is a list",
            ),
        ),
    ];
    assert!(rows.len() >= 20, "at least twenty cases");
    Refusals::of(example("examples/configuration/agents/model.yaml")).check(rows);
}

/// What an LLMInference cannot size because of its Model is refused naming
/// the Model's field, not a field the LLMInference does not set; its own
/// field, when it sets one, wins and is named.
#[test]
fn sizing_refusals_from_a_referenced_model_name_the_models_field() {
    let refused = |model_spec: Value, xr: Value| {
        let m = Model::new("llama-8b").spec(model_spec).build();
        let rsp = call(&with_model(request("s", xr), vec![m]));
        fatals(&rsp)
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let llama = |extra: Value| {
        let mut spec = json!({"weightsURI": "hf://meta-llama/Llama-3.1-8B-Instruct"});
        spec.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        spec
    };
    let xr = || {
        LlmInference::new("chat")
            .model_ref("llama-8b")
            .gpu_type("L4")
    };
    let tp3 = llama(json!({"shardSpec": {"count": 3, "strategy": "tensor-parallel"}}));
    assert_eq!(
        refused(tp3.clone(), xr().build()),
        vec![
            "Model team-a/llama-8b spec.shardSpec.count: tensor parallel size 3 is not valid for \
             meta-llama/Llama-3.1-8B-Instruct (32 attention heads, 8 KV heads, 8 L4 per node): use 1, 2, 4, 8"
        ]
    );
    // spec.gpu sets the parallelism instead of the Model's shardSpec.
    assert_eq!(refused(tp3, xr().gpu(2).build()), Vec::<String>::new());
    assert_eq!(
        refused(
            json!({"weightsURI": "hf://example/unknown-llm"}),
            xr().build()
        ),
        vec![
            "Model team-a/llama-8b spec.parameterCount: cannot tell how many parameters `example/unknown-llm` has: \
             it is not in the model catalog and its id carries no size; give its parameter count (for example 8B, 70B \
             or 8x7B)"
        ]
    );
    assert_eq!(
        refused(
            llama(json!({"quantization": "fp8"})),
            xr().gpu_type("T4").build()
        ),
        vec![
            "Model team-a/llama-8b spec.quantization: fp8 weights need a GPU with fp8 support, which T4 lacks: \
             vLLM runs them on Turing weight-only (FP8 Marlin) in release 0.14.0 and later, and this plan's \
             release is not known: if the platform's image runs 0.14.0 or later, state it (the step input's \
             vllmVersion; size --vllm-version); else use another GPU (L4, A10G, A100, H100, MI300X and newer) or \
             bf16, int8 or int4 weights"
        ]
    );
    // Without the Model's quantization, its weights' id chose fp8.
    assert_eq!(
        refused(
            json!({"weightsURI": "hf://nvidia/Llama-3.1-8B-Instruct-FP8"}),
            xr().gpu_type("V100-32GB").build()
        ),
        vec![
            "Model team-a/llama-8b spec.weightsURI: fp8 weights need a GPU with fp8 support, which V100-32GB \
             lacks: use a GPU with fp8 units or FP8 Marlin kernels (Ampere or newer) (L4, A10G, L40S, A30, \
             A100-40GB, A100-40GB-PCIe, A100-80GB, A100-80GB-PCIe, H100-80GB, H100-PCIe, H100-NVL, H20, H200, \
             H200-NVL, B200, GB200, B300, GH200, RTX-PRO-6000, MI300X, MI325X) or other weights (bf16, int8, int4)"
        ]
    );
}

/// The built-in images run vLLM 0.19.0 on NVIDIA and 0.11.2 on AMD: a model
/// whose architecture vLLM added in between is servable on the NVIDIA GPU
/// types only, and the AMD row says which release would serve it.
#[test]
fn a_model_newer_than_an_offered_gpu_types_image_is_not_servable_there() {
    let mut req = request(
        "m-qwen35",
        model_xr(json!({"weightsURI": "hf://Qwen/Qwen3.5-27B"}), json!({})),
    );
    req.input = Some(input(
        json!({"defaults": {"offeredGpuTypes": ["MI300X", "H100-80GB"], "runtime": "deployment"}}),
    ));
    let rsp = call(&req);
    let st = desired_status(&rsp);
    assert_eq!(st["phase"], "Ready");
    assert_eq!(st["serveableOn"], "H100-80GB");
    assert_eq!(
        st["plans"][0],
        json!({"gpuType": "MI300X", "error": "Qwen/Qwen3.5-27B is a Qwen3_5ForConditionalGeneration model, which \
               vLLM loads from release 0.17.0; vLLM 0.11.2 cannot start it: serve it on an image of vLLM 0.17.0 or \
               later, or serve a model vLLM 0.11.2 runs"})
    );
    assert_eq!(st["plans"][1]["plan"]["gpuCount"], 1);
    assert_eq!(
        rsp.conditions,
        vec![condition(
            "Servable",
            fnv1::Status::ConditionTrue,
            "Planned",
            "servable on H100-80GB"
        )]
    );
    assert_eq!(rsp.results, vec![]);
}

#[test]
fn a_config_map_gives_the_hf_quant_config_json_that_older_modelopt_checkpoints_keep_apart() {
    let xr = codellama_from_config_map().build();
    // ModelOpt 0.29 and earlier: FP8, with every attention left in bf16.
    let file = json!({"producer": {"name": "modelopt", "version": "0.29.0"},
        "quantization": {"quant_algo": "FP8", "exclude_modules": ["lm_head", "model.layers.*.self_attn*"]}});
    let sized = |data: Value| {
        let rsp = call(&with_config_map(
            request("q1", xr.clone()),
            vec![config_map("codellama-config", data)],
        ));
        assert_eq!(fatals(&rsp), Vec::<&str>::new());
        desired_status(&rsp)["plans"].clone()
    };
    let config = codellama_config();
    let with_file =
        sized(json!({"config.json": config.to_string(), "hf_quant_config.json": file.to_string()}));
    let plan = &with_file[0]["plan"];
    assert_eq!(plan["quantization"], "fp8");
    // 32 layers' attention (4 x 4096 x 4096) stay in bf16 beside the
    // embeddings and lm_head.
    assert!(
        plan["reasons"].as_array().unwrap().iter().any(|r| r
            .as_str()
            .unwrap()
            .starts_with("Weights: 2.41 B parameters kept in 16 bits")),
        "{plan:#}"
    );
    // The same file where vLLM puts it, inline: sized alike.
    let mut inline = config.clone();
    inline["quantization_config"] = file.clone();
    let rsp = call(&request("q2", codellama().field("config", inline).build()));
    assert_eq!(desired_status(&rsp)["plans"], with_file);
    // Without it, config.json alone describes a bf16 checkpoint.
    let alone = sized(json!({"config.json": config.to_string()}));
    assert_eq!(alone[0]["plan"]["quantization"], "bf16");
}
