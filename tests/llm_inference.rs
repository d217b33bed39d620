//! The specification of LLMInference: its behaviour, then its refusals.
//!
//! Behaviour, call by call: whole responses for the first call, readiness
//! transitions, warnings that must appear once, and each runtime
//! (vllm-runtime, deployment, leader-worker-set, auto). The sizing plan
//! itself is tested in the sizing tests; here it is taken from the engine so
//! these cases test what the composer does with it.
//!
//! Refusals: every malformed spec is a FATAL result that names the field and
//! what would be valid, and keeps the earlier steps' desired state (one
//! table shape, `support::refusals`).

mod support;

use function_inference::cli::size::SizeOutput;
use function_inference::protocol::fnv1;
use function_inference::sizing::{self, MigChoice, SizingRequest};
use serde_json::{Value, json};
use support::fixtures::*;
use support::refusals::*;
use support::*;

const DOT: fn() -> Value = || json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu": 1, "ingressHost": "qwen.127.0.0.1.nip.io", "providerConfigName": "incluster"});

fn composed(rsp: &fnv1::RunFunctionResponse, name: &str) -> (Value, i32) {
    let ready = rsp.desired.as_ref().unwrap().resources[name].ready;
    (desired_resource(rsp, name), ready)
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

/// The runtime reason of an XR served by the platform's default runtime.
const VLLM_RUNTIME_BY_DEFAULT: &str = "Runtime: vllm-runtime (input.defaults.runtime), the vLLM production-stack \
     operator's VLLMRuntime: one pod per replica.";

fn dot_runtime_object() -> Value {
    digested(json!({
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "Object",
        "metadata": {},
        "spec": {
            "forProvider": {"manifest": {
                "apiVersion": "production-stack.vllm.ai/v1alpha1", "kind": "VLLMRuntime",
                "metadata": {"name": "test-qwen", "namespace": "team-a",
                             "annotations": {"infer.dev/owner": "LLMInference team-a/test-qwen"}},
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
            "readiness": {"policy": "DeriveFromCelQuery", "celQuery": VLLM_RUNTIME_READY},
        },
    }))
}

/// An Object's readiness query for a VLLMRuntime: every desired replica of
/// the current spec available, as far as the operator's status says.
const VLLM_RUNTIME_READY: &str = "has(object.status) && has(object.status.availableReplicas) && \
     object.status.availableReplicas >= object.spec.deploymentConfig.replicas && \
     (!has(object.status.updatedReplicas) || object.status.updatedReplicas >= object.spec.deploymentConfig.replicas) && \
     (!has(object.status.unavailableReplicas) || object.status.unavailableReplicas == 0) && \
     (!has(object.status.replicas) || object.status.replicas <= object.spec.deploymentConfig.replicas) && \
     (!has(object.status.modelStatus) || object.status.modelStatus == 'Ready')";

fn dot_ingress_object() -> Value {
    json!({
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "Object",
        "metadata": {},
        "spec": {
            "forProvider": {"manifest": {
                "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                "metadata": {"name": "test-qwen", "namespace": "team-a",
                             "annotations": {
                                 "infer.dev/owner": "LLMInference team-a/test-qwen",
                                 "nginx.ingress.kubernetes.io/proxy-buffering": "off",
                                 "nginx.ingress.kubernetes.io/proxy-read-timeout": "300",
                                 "nginx.ingress.kubernetes.io/proxy-send-timeout": "300",
                             }},
                "spec": {"rules": [{"host": "qwen.127.0.0.1.nip.io", "http": {"paths": [{
                    "path": "/v1", "pathType": "Prefix",
                    "backend": {"service": {"name": "test-qwen", "port": {"number": 80}}}}]}}]},
            }},
            "providerConfigRef": {"kind": "ProviderConfig", "name": "incluster"},
        },
    })
}

#[test]
fn first_call_composes_dot_inference_essentials_and_reports_the_plan() {
    // dot-inference's XR, unchanged: 1 GPU -> 2 CPU, 8Gi; Objects for the
    // runtime and the Ingress; nothing observed yet, so nothing is ready,
    // and the new Objects only look until their names are known to be free.
    let req = request("t1", LlmInference::new("test-qwen").spec(DOT()).build());
    let mut plan = dot_plan();
    plan.reasons.push(VLLM_RUNTIME_BY_DEFAULT.into());
    let want = fnv1::RunFunctionResponse {
        // Nothing serves yet, and Crossplane does not watch what would say
        // why: it is asked to call again soon.
        meta: meta("t1", 15),
        desired: Some(fnv1::State {
            composite: Some(resource(json!({
                "apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference",
                "status": {
                    "model": "Qwen/Qwen2.5-1.5B-Instruct",
                    "plan": serde_json::to_value(SizeOutput::from(&plan).plan).unwrap(),
                    "gpuType": "L4", "gpuCount": 1, "runtime": "vllm-runtime",
                    "endpoint": {"internal": "http://test-qwen.team-a.svc.cluster.local/v1",
                                 "external": "http://qwen.127.0.0.1.nip.io/v1"},
                    "ready": "False",
                },
            }))),
            resources: [
                (
                    "ingress".to_string(),
                    fnv1::Resource {
                        ready: fnv1::Ready::False as i32,
                        ..resource(observe_only(dot_ingress_object()))
                    },
                ),
                (
                    "vllm_runtime".to_string(),
                    fnv1::Resource {
                        ready: fnv1::Ready::False as i32,
                        ..resource(observe_only(dot_runtime_object()))
                    },
                ),
            ]
            .into(),
        }),
        conditions: vec![
            condition(
                "Sized",
                fnv1::Status::ConditionTrue,
                "Sized",
                "1 x L4 (bfloat16), tensor parallel 1, max model length 32768",
            ),
            condition(
                "Serving",
                fnv1::Status::ConditionFalse,
                "Starting",
                "Qwen/Qwen2.5-1.5B-Instruct has no available replica yet: it will serve 1 x L4 (bfloat16), tensor \
                 parallel 1, max model length 32768 at http://test-qwen.team-a.svc.cluster.local/v1",
            ),
            condition(
                "Routed",
                fnv1::Status::ConditionUnknown,
                "NoAddress",
                "no Ingress controller has given Ingress team-a/test-qwen an address yet (if this lasts, check \
                 that the cluster has a default IngressClass and that its controller runs: kubectl get \
                 ingressclass)",
            ),
        ],
        // Whether the cluster serves provider-kubernetes' Object: its CRD;
        // and the namespace's Objects: none of the XR's may still be being
        // deleted.
        requirements: Some(fnv1::Requirements {
            resources: crd_requirements(&[OBJECT_CRD])
                .into_iter()
                .chain([(
                    "remote-objects".to_string(),
                    fnv1::ResourceSelector {
                        api_version: "kubernetes.m.crossplane.io/v1alpha1".into(),
                        kind: "Object".into(),
                        namespace: Some("team-a".into()),
                        r#match: Some(fnv1::resource_selector::Match::MatchLabels(
                            fnv1::MatchLabels::default(),
                        )),
                    },
                )])
                .collect(),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(call(&req), want);
}

#[test]
fn readiness_follows_each_observed_resource() {
    // Observed Objects: the runtime's Ready is False, the Ingress's True.
    let mut req = request("t2", LlmInference::new("test-qwen").spec(DOT()).build());
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
    assert_eq!(composed(&rsp, "vllm_runtime").1, fnv1::Ready::False as i32);
    assert_eq!(composed(&rsp, "ingress").1, fnv1::Ready::True as i32);
    assert_eq!(desired_status(&rsp)["ready"], "False");

    // Once the runtime's Object is Ready, the XR reports it serves.
    req.observed.as_mut().unwrap().resources.insert(
        "vllm_runtime".into(),
        with_ready(dot_runtime_object(), "True"),
    );
    let rsp = call(&req);
    assert_eq!(composed(&rsp, "vllm_runtime").1, fnv1::Ready::True as i32);
    assert_eq!(desired_status(&rsp)["ready"], "True");
    assert_eq!(
        rsp.conditions[1],
        condition(
            "Serving",
            fnv1::Status::ConditionTrue,
            "Available",
            "Qwen/Qwen2.5-1.5B-Instruct serves at http://test-qwen.team-a.svc.cluster.local/v1 (1 x L4 \
             (bfloat16), tensor parallel 1, max model length 32768)"
        )
    );
    assert_eq!(
        desired_status(&rsp)["servingLayout"],
        "1 x L4 (bfloat16), tensor parallel 1, max model length 32768"
    );
}

#[test]
fn a_native_runtime_is_ready_when_a_replica_is_available() {
    let spec = json!({"model": "Qwen/Qwen2.5-1.5B-Instruct"});
    let mut req = request("t3", LlmInference::new("qwen").spec(spec).build());
    let first = call(&req);
    let (runtime, ready) = composed(&first, "vllm_runtime");
    assert_eq!(
        runtime["kind"], "VLLMRuntime",
        "composed natively without providerConfigName"
    );
    assert_eq!(ready, fnv1::Ready::False as i32);
    for (available, want) in [(0, fnv1::Ready::False), (1, fnv1::Ready::True)] {
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

    // Applied, and no operator has written its status: the XR says which
    // controller it waits for, not replica counts nobody reported.
    req.observed
        .as_mut()
        .unwrap()
        .resources
        .insert("vllm_runtime".into(), resource(runtime));
    let rsp = call(&req);
    assert_eq!(composed(&rsp, "vllm_runtime").1, fnv1::Ready::False as i32);
    assert_eq!(
        response_condition(&rsp, "Serving"),
        Some(condition(
            "Serving",
            fnv1::Status::ConditionFalse,
            "Starting",
            "Qwen/Qwen2.5-1.5B-Instruct has no available replica yet: its VLLMRuntime has no status yet, which \
             the vLLM production-stack operator writes (if this lasts, check that the vLLM production-stack \
             operator is installed and running): it will serve 1 x L4 (bfloat16), tensor parallel 1, max model \
             length 32768 at http://qwen.team-a.svc.cluster.local/v1"
        ))
    );
    assert_eq!(
        rsp.results,
        vec![],
        "no warning: a new runtime has no status either"
    );
}

#[test]
fn moving_to_another_cluster_and_back_replaces_each_object_of_another_kind() {
    // Crossplane keeps a composed resource's name whatever its kind: the
    // Deployment would be named after the Object and the Object left
    // running, unreferenced. So the function leaves the object out once
    // (Crossplane deletes it) and composes the new one on the next call.
    let spec =
        json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "gpuType": "L4", "runtime": "deployment"});
    let remote = json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "gpuType": "L4", "runtime": "deployment",
                        "providerConfigName": "gpu-cluster"});
    let native_req = request("t", LlmInference::new("qwen").spec(spec.clone()).build());
    let remote_req = request("t", LlmInference::new("qwen").spec(remote).build());
    for (from, to, kinds) in [
        (&remote_req, &native_req, ("Object", "Deployment")),
        (&native_req, &remote_req, ("Deployment", "Object")),
    ] {
        let mut req = to.clone();
        for key in ["deployment", "service"] {
            let mut old = desired_resource(&call(from), key);
            old["metadata"]["name"] = json!(format!("qwen-{key}-1"));
            req.observed
                .as_mut()
                .unwrap()
                .resources
                .insert(key.into(), resource(old));
        }
        let rsp = call(&req);
        assert_eq!(
            composed_names(&rsp)
                .iter()
                .filter(|n| *n == "deployment" || *n == "service")
                .count(),
            0,
            "{kinds:?}: left out, so that Crossplane deletes them"
        );
        assert_eq!(xr_readiness(&rsp), fnv1::Ready::False);
        assert!(
            rsp.results.iter().any(|r| r.severity == fnv1::Severity::Normal as i32
                && r.reason.as_deref() == Some("Replacing")
                && r.message
                    == format!(
                        "replacing the {} qwen-deployment-1 (composed as deployment): it would now be a \
                         {}, and Crossplane cannot change the kind of a composed resource; it is deleted \
                         now, and its replacement is composed on the next reconcile",
                        kinds.0, kinds.1
                    )),
            "{:?}",
            rsp.results
        );
        // Deleted: the new kind is composed.
        let rsp = call(to);
        assert_eq!(desired_resource(&rsp, "deployment")["kind"], kinds.1);
    }
}

#[test]
fn an_undersized_gpu_count_warns_once_and_stays_in_status() {
    // 70B in bf16 on two H100s loads its weights but leaves vLLM too little
    // at the default utilization: an explicit choice the function honours
    // (flags in spec.extraArgs may start it), saying once, as a transition,
    // that it will not fit.
    let spec = json!({"model": "meta-llama/Llama-3.1-70B-Instruct", "gpuType": "H100-80GB", "gpu": 2,
               "hfTokenSecretRef": {"name": "hf-token"}});
    let plan = sizing::size(&SizingRequest {
        model_id: "meta-llama/Llama-3.1-70B-Instruct".into(),
        gpu_type: "H100-80GB".into(),
        gpu_count: Some(2),
        mig: MigChoice::None,
        ..Default::default()
    })
    .unwrap();
    // The engine's text is pinned in its own tests (sizing::decide).
    assert!(
        plan.warnings.len() == 1
            && plan.warnings[0].starts_with(
                "2 x H100-80GB (TP 2, PP 1) cannot hold meta-llama/Llama-3.1-70B-Instruct"
            ),
        "{:?}",
        plan.warnings
    );
    let first = call(&request(
        "t4",
        LlmInference::new("big").spec(spec.clone()).build(),
    ));
    // The engine's warning, then the composer's note that loading 131 GiB
    // outlasts the operator's fixed startup probe, so the runtime gets a
    // weights volume.
    let mut expected = plan.warnings.clone();
    expected.push(format!(
        "loading the {:.1} GiB checkpoint may take up to {} s, beyond the operator's fixed 2120 s startup probe: \
         the runtime gets a weights volume so that a pod the probe restarts resumes the download instead of \
         starting over; the first start may take several restarts (pre-load the volume, or use a faster \
         storage path, to avoid them)",
        plan.checkpoint_gib, plan.startup_probe_seconds
    ));
    let warnings: Vec<fnv1::Result> = expected
        .iter()
        .map(|w| warning("SizingWarning", w))
        .collect();
    assert_eq!(first.results, warnings);
    assert_eq!(desired_status(&first)["plan"]["warnings"], json!(expected));
    assert_eq!(first.conditions[0].reason, "SizedWithWarnings");
    // The next reconcile observes the warning in status: no new event.
    let again = call(&request(
        "t5",
        LlmInference::new("big")
            .spec(spec)
            .status(desired_status(&first))
            .build(),
    ));
    assert_eq!(again.results, vec![]);
    assert_eq!(desired_status(&again)["plan"]["warnings"], json!(expected));
}

#[test]
fn a_gpu_count_whose_gpus_cannot_load_the_weights_is_refused() {
    // 70B in bf16 on one H100: 131 GiB of weights on an 80 GB GPU cannot
    // load whatever vLLM's flags, so nothing is composed and the refusal
    // names spec.gpu and the layout that would hold it.
    let spec =
        json!({"model": "meta-llama/Llama-3.1-70B-Instruct", "gpuType": "H100-80GB", "gpu": 1});
    let rsp = call(&request("t6", LlmInference::new("big").spec(spec).build()));
    assert_eq!(
        rsp.results,
        vec![fatal(
            "CannotSize",
            "spec.gpu: 1 x H100-80GB (TP 1, PP 1) cannot hold meta-llama/Llama-3.1-70B-Instruct: each GPU's \
             share of the weights is 131.4 GiB, more than its 79.2 GiB, so vLLM cannot load them whatever its \
             flags; 4 x H100-80GB (TP 4, PP 1) would hold it"
        )]
    );
    assert!(rsp.desired.unwrap().resources.is_empty());
}

#[test]
fn target_namespace_without_provider_config_is_reported_not_ignored() {
    let spec = json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "targetNamespace": "elsewhere"});
    let rsp = call(&request(
        "t6",
        LlmInference::new("qwen").spec(spec.clone()).build(),
    ));
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
    let again = call(&request(
        "t7",
        LlmInference::new("qwen")
            .spec(spec)
            .status(desired_status(&rsp))
            .build(),
    ));
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

/// The values every node selector requirement `key In [...]` allows,
/// wherever the runtime places them.
fn required_values(v: &Value, key: &str, out: &mut Vec<Value>) {
    match v {
        Value::Object(o) if o.get("key") == Some(&json!(key)) && o["operator"] == "In" => {
            out.push(o["values"].clone());
        }
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
        let mut req = request("pcie", LlmInference::new("qwen").spec(spec).build());
        req.input = Some(input(json!({"defaults": {"gpuNodeSelector": true}})));
        let rsp = call(&req);
        // The VLLMRuntime's image does not say its vLLM release.
        let volta = (name == "V100-32GB-PCIe").then(|| {
            warning(
                "SizingWarning",
                "V100-32GB-PCIe is a GPU of compute capability 7.0, which vLLM runs only before release \
                 0.20.0: the pods start only if the image runs an earlier vLLM",
            )
        });
        assert_eq!(rsp.results, Vec::from_iter(volta), "{gpu_type}");
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

/// AMD GPUs carry no `nvidia.com/gpu.product`: AMD's node labeller sets
/// `amd.com/gpu.device-id` to the PCI device ID, which tells an MI300X
/// (192 GB) from an MI325X (256 GB). Without it a server sized for the
/// larger board could start on the smaller one. A partitioned GPU keeps
/// its device ID, and each partition counts as an amd.com/gpu: only a whole
/// GPU (spx_nps1, or no partition label) serves a plan for one.
#[test]
fn amd_gpu_types_ask_for_their_device_ids() {
    // Azure's MI300X VMs are found by their size where the labeller does
    // not run; Azure offers no MI325X.
    let mi300x_vm = aks(&["Standard_ND96isr_MI300X_v5"], "amd.com/gpu.device-id");
    for (gpu_type, ids, azure) in [
        (
            "MI300X",
            json!(["74a1", "74a9", "74b5", "74bd"]),
            vec![mi300x_vm],
        ),
        ("mi325x", json!(["74a5", "74b9"]), vec![]),
    ] {
        let spec =
            json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": gpu_type, "runtime": "auto"});
        let mut req = request("amd", LlmInference::new("qwen").spec(spec).build());
        req.input = Some(pinned_gpu_type());
        let rsp = call(&req);
        assert_eq!(rsp.results, vec![], "{gpu_type}");
        let (deployment, _) = composed(&rsp, "deployment");
        let mut terms = vec![
            json!({"matchExpressions": [
                {"key": "amd.com/gpu.device-id", "operator": "In", "values": ids},
                {"key": "amd.com/gpu.compute-memory-partition", "operator": "In", "values": ["spx_nps1"]},
            ]}),
            json!({"matchExpressions": [
                {"key": "amd.com/gpu.device-id", "operator": "In", "values": ids},
                {"key": "amd.com/gpu.compute-memory-partition", "operator": "DoesNotExist"},
            ]}),
        ];
        terms.extend(azure);
        assert_eq!(
            deployment["spec"]["template"]["spec"]["affinity"],
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}),
            "{gpu_type}"
        );
    }
}

/// GKE runs no GPU feature discovery: its own accelerator label is all a
/// GPU node carries, and GKE names its H100 machine types apart (A3 Mega
/// nodes say nvidia-h100-mega-80gb for the same board). The label is the
/// same on MIG-partitioned and time-shared GPUs, whose parts each count as
/// an nvidia.com/gpu: only their own labels keep a whole-GPU plan off them.
/// Under the device plugin's single MIG strategy (the GPU Operator's
/// mig.strategy=single, and GKE's MIG node pools) a slice is an
/// nvidia.com/gpu: only its node's labels say which profile it is, so a
/// MIG plan asks for one nvidia.com/gpu on nodes labelled with its slice,
/// whether or not the platform pins whole GPUs to their type. Every
/// runtime gets the same terms; a whole-GPU plan is unchanged.
#[test]
fn a_mig_slice_under_the_single_strategy_is_a_gpu_on_nodes_labelled_with_the_slice() {
    let slice_terms = json!([
        {"matchExpressions": [
            {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"]},
        ]},
        {"matchExpressions": [
            {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": ["nvidia-a100-80gb"]},
            {"key": "cloud.google.com/gke-gpu-partition-size", "operator": "In", "values": ["1g.10gb"]},
            {"key": "cloud.google.com/gke-gpu-sharing-strategy", "operator": "DoesNotExist"},
        ]},
    ]);
    let affinity_of = |pod: &Value| {
        pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"]
            .clone()
    };
    for pinned in [false, true] {
        let input =
            input(json!({"defaults": {"migStrategy": "single", "gpuNodeSelector": pinned}}));
        let call_with = |runtime: &str, mig: &str| {
            let spec = json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "gpuType": "A100-80GB",
                "migProfile": mig, "runtime": runtime});
            let mut req = request("team", LlmInference::new("qwen").spec(spec).build());
            req.input = Some(input.clone());
            let rsp = call(&req);
            assert_eq!(rsp.results, vec![], "{runtime} {mig} pinned {pinned}");
            rsp
        };

        let rsp = call_with("deployment", "1g.10gb");
        let (deployment, _) = composed(&rsp, "deployment");
        let pod = &deployment["spec"]["template"];
        assert_eq!(
            pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
            json!("1")
        );
        assert_eq!(
            pod["spec"]["containers"][0]["resources"]["limits"]
                .as_object()
                .unwrap()
                .keys()
                .filter(|k| k.starts_with("nvidia.com/mig-"))
                .count(),
            0
        );
        assert_eq!(affinity_of(pod), slice_terms, "pinned {pinned}");
        let plan = &desired_status(&rsp)["plan"];
        assert_eq!(plan["gpuResourceName"], json!("nvidia.com/gpu"));
        assert_eq!(plan["migProfile"], json!("1g.10gb"));
        assert!(
            plan["reasons"].as_array().unwrap().contains(&json!(
                "The 1g.10gb slice is asked for as one nvidia.com/gpu on a node partitioned into 1g.10gb \
                 slices: the device plugin's single MIG strategy."
            )),
            "{plan}"
        );

        let rsp = call_with("vllm-runtime", "1g.10gb");
        let (runtime, _) = composed(&rsp, "vllm_runtime");
        let config = &runtime["spec"]["deploymentConfig"];
        assert_eq!(config["resources"]["gpuType"], Value::Null);
        assert_eq!(config["resources"]["gpu"], json!("1"));
        assert_eq!(config["nodeSelectorTerms"], slice_terms);

        // A whole GPU keeps what gpuNodeSelector says.
        let rsp = call_with("deployment", "none");
        let (deployment, _) = composed(&rsp, "deployment");
        let pod = &deployment["spec"]["template"];
        if pinned {
            assert_eq!(
                affinity_of(pod)[0],
                json!({"matchExpressions": [
                    {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-A100-SXM4-80GB"]},
                ]})
            );
        } else {
            assert_eq!(pod["spec"]["affinity"], Value::Null);
        }
    }
}

/// The node selector terms of a small model's Deployment on `gpu_type`
/// (`mig` its profile, or `none`) where the platform pins servers to their
/// GPU type.
fn pinned_affinity(gpu_type: &str, mig: &str) -> Value {
    let spec = json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "gpuType": gpu_type,
        "migProfile": mig, "runtime": "deployment"});
    let mut req = request("team", LlmInference::new("qwen").spec(spec).build());
    req.input = Some(input(json!({"defaults": {"gpuNodeSelector": true}})));
    let rsp = call(&req);
    assert_eq!(rsp.results, vec![], "{gpu_type} {mig}");
    let (deployment, _) = composed(&rsp, "deployment");
    deployment["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        .clone()
}

/// The term of nodes whose GPU feature discovery product label is `label`.
fn product(label: &str) -> Value {
    json!({"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": [label]}]})
}

/// The term AKS nodes of `sizes` match where `labeller`'s label is absent.
fn aks(sizes: &[&str], labeller: &str) -> Value {
    json!({"matchExpressions": [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": sizes},
        {"key": labeller, "operator": "DoesNotExist"},
    ]})
}

/// AKS labels a node with its Azure VM size and nothing else that names its
/// GPU (it runs no feature discovery unless the cluster adds it): the size
/// keeps a server on its GPU where the vendor's labeller has not labelled
/// the node, whose label would say that its GPUs are shared. A MIG slice,
/// which AKS's MIG set-up has feature discovery label, gets no such term.
#[test]
fn azure_vm_sizes_keep_a_server_on_its_gpu_where_no_labeller_runs() {
    assert_eq!(
        pinned_affinity("H100-NVL", "none"),
        json!([
            product("NVIDIA-H100-NVL"),
            aks(
                &["Standard_NC40ads_H100_v5", "Standard_NC80adis_H100_v5"],
                "nvidia.com/gpu.product"
            ),
        ])
    );
    assert_eq!(
        pinned_affinity("A100-80GB-PCIe", "none"),
        json!([
            product("NVIDIA-A100-80GB-PCIe"),
            aks(
                &[
                    "Standard_NC24ads_A100_v4",
                    "Standard_NC48ads_A100_v4",
                    "Standard_NC96ads_A100_v4"
                ],
                "nvidia.com/gpu.product"
            ),
        ])
    );
    // A GB200 VM is a 4-GPU tray of an NVL72 rack, whose GPUs are whole.
    assert_eq!(
        pinned_affinity("GB200", "none").as_array().unwrap().last(),
        Some(&aks(
            &["Standard_ND128isr_NDR_GB200_v6"],
            "nvidia.com/gpu.product"
        ))
    );
    assert_eq!(
        pinned_affinity("A100-80GB-PCIe", "1g.10gb"),
        json!([product("NVIDIA-A100-80GB-PCIe")])
    );
    // Azure offers no L4: the term is absent, not empty.
    assert_eq!(
        pinned_affinity("L4", "none"),
        json!([
            product("NVIDIA-L4"),
            {"matchExpressions": [
                {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": ["nvidia-l4"]},
                {"key": "cloud.google.com/gke-gpu-partition-size", "operator": "DoesNotExist"},
                {"key": "cloud.google.com/gke-gpu-sharing-strategy", "operator": "DoesNotExist"},
            ]},
            {"matchExpressions": [
                {"key": "eks.amazonaws.com/instance-gpu-name", "operator": "In", "values": ["l4"]},
                {"key": "nvidia.com/gpu.product", "operator": "DoesNotExist"},
            ]},
            {"matchExpressions": [
                {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["l4"]},
                {"key": "nvidia.com/gpu.product", "operator": "DoesNotExist"},
            ]},
        ])
    );
}

/// EKS (Auto Mode, Karpenter) labels the nodes it provisions with EC2's
/// name of their GPU, which is `a100` for both A100 sizes: the GPU's memory
/// label tells them apart. EC2's name is the same on a node whose GPUs are
/// time-shared, so it counts only where feature discovery, whose product
/// label says so, has not labelled the node. A MIG slice needs the GPU
/// Operator, and so feature discovery: it gets no EKS terms.
#[test]
fn eks_gpu_names_keep_a_server_on_its_gpu_where_feature_discovery_does_not_run() {
    let eks = |prefix: &str, name: &str, memory: Option<(&str, &str)>| {
        let mut requirements = vec![json!(
            {"key": format!("{prefix}/instance-gpu-name"), "operator": "In", "values": [name]}
        )];
        if let Some((operator, mib)) = memory {
            requirements.push(json!(
                {"key": format!("{prefix}/instance-gpu-memory"), "operator": operator, "values": [mib]}
            ));
        }
        requirements.push(json!({"key": "nvidia.com/gpu.product", "operator": "DoesNotExist"}));
        json!({"matchExpressions": requirements})
    };
    let gke = |accelerator: &str| {
        json!({"matchExpressions": [
            {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": [accelerator]},
            {"key": "cloud.google.com/gke-gpu-partition-size", "operator": "DoesNotExist"},
            {"key": "cloud.google.com/gke-gpu-sharing-strategy", "operator": "DoesNotExist"},
        ]})
    };
    let both = |name: &str, memory: Option<(&str, &str)>| {
        [
            eks("eks.amazonaws.com", name, memory),
            eks("karpenter.k8s.aws", name, memory),
        ]
    };

    let [auto, karpenter] = both("a100", Some(("Gt", "61440")));
    assert_eq!(
        pinned_affinity("A100-80GB", "none"),
        json!([
            product("NVIDIA-A100-SXM4-80GB"),
            gke("nvidia-a100-80gb"),
            auto,
            karpenter,
            aks(&["Standard_ND96amsr_A100_v4"], "nvidia.com/gpu.product"),
        ])
    );
    let [auto, karpenter] = both("a100", Some(("Lt", "61440")));
    assert_eq!(
        pinned_affinity("A100-40GB", "none"),
        json!([
            product("NVIDIA-A100-SXM4-40GB"),
            gke("nvidia-tesla-a100"),
            auto,
            karpenter,
            aks(&["Standard_ND96asr_v4"], "nvidia.com/gpu.product"),
        ])
    );
    let [auto, karpenter] = both("l40s", None);
    assert_eq!(
        pinned_affinity("L40S", "none"),
        json!([product("NVIDIA-L40S"), auto, karpenter])
    );
    // EC2 offers no PCIe H100, and a MIG slice is placed by feature discovery.
    assert_eq!(
        pinned_affinity("H100-PCIe", "none"),
        json!([product("NVIDIA-H100-PCIe")])
    );
    assert_eq!(
        pinned_affinity("A100-80GB", "1g.10gb"),
        json!([product("NVIDIA-A100-SXM4-80GB")])
    );
}

#[test]
fn gke_accelerator_labels_cover_every_gke_name_of_the_gpu() {
    for (gpu_type, accelerators) in [
        (
            "H100-80GB",
            json!(["nvidia-h100-80gb", "nvidia-h100-mega-80gb"]),
        ),
        (
            "h100-mega-80gb",
            json!(["nvidia-h100-80gb", "nvidia-h100-mega-80gb"]),
        ),
        ("GB200", json!(["nvidia-gb200"])),
        ("RTX-PRO-6000", json!(["nvidia-rtx-pro-6000"])),
        ("L4", json!(["nvidia-l4"])),
    ] {
        let spec = json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": gpu_type, "runtime": "deployment"});
        let mut req = request("gke", LlmInference::new("qwen").spec(spec).build());
        req.input = Some(pinned_gpu_type());
        let rsp = call(&req);
        assert_not_fatal(&rsp.results, gpu_type);
        let mut values = Vec::new();
        required_values(
            &composed(&rsp, "deployment").0,
            "cloud.google.com/gke-accelerator",
            &mut values,
        );
        assert_eq!(values, vec![accelerators.clone()], "{gpu_type}");
        let terms = &composed(&rsp, "deployment").0["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
        assert_eq!(
            terms[1],
            json!({"matchExpressions": [
                {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": accelerators},
                {"key": "cloud.google.com/gke-gpu-partition-size", "operator": "DoesNotExist"},
                {"key": "cloud.google.com/gke-gpu-sharing-strategy", "operator": "DoesNotExist"},
            ]}),
            "{gpu_type}"
        );
    }
    // A MIG plan asks for nvidia.com/mig-<profile>, the device plugin's
    // mixed strategy, which GKE never offers: only the product label holds.
    let spec = json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "gpuType": "A100-80GB", "migProfile": "auto",
        "runtime": "deployment"});
    let mut req = request("gke", LlmInference::new("qwen").spec(spec).build());
    req.input = Some(pinned_gpu_type());
    let rsp = call(&req);
    assert_not_fatal(&rsp.results, "mig");
    assert_eq!(
        composed(&rsp, "deployment").0["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"],
        json!([{"matchExpressions": [
            {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-A100-SXM4-80GB"]},
        ]}])
    );
}

#[test]
fn a_runtime_named_vllm_is_renamed_so_its_service_does_not_break_vllm() {
    let rsp = call(&request(
        "t8",
        LlmInference::new("vllm")
            .spec(json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "ingressHost": "a.example.com"}))
            .build(),
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
fn desired_state_of_earlier_steps_survives_a_composition() {
    let mut req = request("p", LlmInference::new("test-qwen").spec(DOT()).build());
    req.desired = Some(fnv1::State {
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
    let rsp = call(&request("x", LlmInference::new("qwen").spec(spec).build()));
    let note = "spec.extraArgs sets --max-model-len, which overrides the sizing plan: the reported plan no longer describes the runtime; set spec.maxModelLen, which the plan sizes the KV cache for";
    assert_eq!(rsp.results, vec![warning("SizingWarning", note)]);
    assert_eq!(
        composed(&rsp, "vllm_runtime").0["spec"]["vllmConfig"]["extraArgs"],
        json!(["--max-model-len=4096", "--max-num-seqs", "8"]),
        "extra arguments are passed on, after the derived ones"
    );
}

/// vLLM's sampler warms up over --max-num-seqs sequences, so a server
/// whose arguments lower it needs less room: on an H100 (1,024 by default)
/// Qwen3-30B-A3B takes two GPUs, and one at the A100's 256.
#[test]
fn the_max_num_seqs_the_servers_arguments_set_sizes_the_layout() {
    let sized = |extra_args: Value| {
        let spec =
            json!({"model": "Qwen/Qwen3-30B-A3B", "gpuType": "H100-80GB", "extraArgs": extra_args});
        let rsp = call(&request("x", LlmInference::new("qwen").spec(spec).build()));
        assert_not_fatal(&rsp.results, "qwen");
        let status = desired_status(&rsp);
        let overhead = status["plan"]["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .find(|r| r.starts_with("Overhead per GPU"))
            .unwrap()
            .to_string();
        (status["gpuCount"].clone(), overhead)
    };
    let (gpus, overhead) = sized(json!([]));
    assert_eq!(gpus, 2);
    assert!(
        overhead.starts_with("Overhead per GPU: activation peak 6.47 GiB (sampler warm-up 9.7 x 1024 sequences x 151,936"),
        "{overhead}"
    );
    for args in [
        json!(["--max-num-seqs", "256"]),
        json!(["--max-num-seqs=256"]),
    ] {
        let (gpus, overhead) = sized(args.clone());
        assert_eq!(gpus, 1, "{args}");
        assert!(
            overhead.starts_with(
                "Overhead per GPU: activation peak 1.62 GiB (sampler warm-up 9.7 x 256 sequences (the --max-num-seqs given) x 151,936"
            ),
            "{args}: {overhead}"
        );
    }
}

/// A server's own --gpu-memory-utilization is what the plan sizes for and
/// what every runtime is given, so it is no override to warn about.
#[test]
fn the_gpu_memory_utilization_the_servers_arguments_set_sizes_the_plan() {
    for runtime in ["vllm-runtime", "deployment"] {
        let spec = json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "L4", "runtime": runtime,
                          "extraArgs": ["--gpu-memory-utilization", "0.95"]});
        let rsp = call(&request("x", LlmInference::new("qwen").spec(spec).build()));
        assert_eq!(rsp.results, vec![], "{runtime}");
        let status = desired_status(&rsp);
        let reasons = status["plan"]["reasons"].to_string();
        assert!(
            reasons.contains("Usable memory is 0.95 x 21.89 GiB, the total vLLM sees on L4"),
            "{runtime}: {reasons}"
        );
        assert!(
            reasons.contains("of 20.8 GiB usable (0.95 x 21.9 GiB)"),
            "{runtime}: {reasons}"
        );
        if runtime == "vllm-runtime" {
            let config = &composed(&rsp, "vllm_runtime").0["spec"]["vllmConfig"];
            assert_eq!(config["gpuMemoryUtilization"], "0.95");
            assert_eq!(
                config["extraArgs"],
                json!(["--gpu-memory-utilization", "0.95"])
            );
        } else {
            let args = &composed(&rsp, "deployment").0["spec"]["template"]["spec"]["containers"][0]
                ["args"];
            // The derived flag and the user's, which vLLM's parser takes last.
            let given: Vec<&Value> = args
                .as_array()
                .unwrap()
                .windows(2)
                .filter(|w| w[0] == "--gpu-memory-utilization")
                .map(|w| &w[1])
                .collect();
            assert_eq!(given, [&json!("0.95"), &json!("0.95")], "{args}");
        }
    }
}

/// Tool calling from extraArgs: the parser in either spelling is enough
/// (a missing one is refused, with the rows of the refusal table).
#[test]
fn extra_args_may_turn_tool_calling_on_with_a_parser() {
    for args in [
        json!(["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]),
        json!(["--tool-call-parser=hermes", "--enable-auto-tool-choice"]),
    ] {
        let spec = json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "extraArgs": args});
        let rsp = call(&request("x", LlmInference::new("qwen").spec(spec).build()));
        assert_eq!(rsp.results, vec![], "{args}");
        assert_eq!(
            composed(&rsp, "vllm_runtime").0["spec"]["vllmConfig"]["extraArgs"],
            args
        );
    }
}

/// A model whose repository's code vLLM must run starts once spec.extraArgs
/// trusts it (the refusal without it is a row of the refusal table).
#[test]
fn extra_args_may_trust_the_models_own_code() {
    let spec = json!({"model": "moonshotai/Kimi-K2-Instruct", "gpuType": "H200", "runtime": "auto",
                      "extraArgs": ["--trust-remote-code"]});
    let rsp = call(&request("x", LlmInference::new("kimi").spec(spec).build()));
    assert_eq!(rsp.results, vec![]);
    let leader =
        &composed(&rsp, "leader_worker_set").0["spec"]["leaderWorkerTemplate"]["leaderTemplate"];
    let args: Vec<String> =
        serde_json::from_value(leader["spec"]["containers"][0]["args"].clone()).unwrap();
    assert_eq!(
        args.iter().filter(|a| *a == "--trust-remote-code").count(),
        1,
        "{args:?}"
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
    let mut req = request("ctx", LlmInference::new("test-qwen").spec(DOT()).build());
    req.context = Some(context.clone());
    assert_eq!(call(&req).context, Some(context.clone()));
    // Also when the function refuses the XR.
    let mut bad = request(
        "ctx2",
        LlmInference::new("bad").spec(json!({"gpu": 1})).build(),
    );
    bad.context = Some(context.clone());
    assert_eq!(call(&bad).context, Some(context));
}

// ---------------------------------------------------------------------------
// Runtimes: vllm-runtime, deployment, leader-worker-set, auto.
// ---------------------------------------------------------------------------

/// The plan's reasons, as the desired status states them.
fn reasons(rsp: &fnv1::RunFunctionResponse) -> Vec<String> {
    desired_status(rsp)["plan"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect()
}

fn runtime_reason(rsp: &fnv1::RunFunctionResponse) -> String {
    reasons(rsp)
        .into_iter()
        .find(|r| r.starts_with("Runtime: "))
        .expect("a runtime reason")
}

/// The container `name` of a pod spec.
fn container<'a>(pod_spec: &'a Value, name: &str) -> &'a Value {
    pod_spec["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no container {name} in {pod_spec}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// The value after `flag` in an argument list.
fn flag<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// Seconds a startup probe allows before the kubelet restarts the container.
fn startup_seconds(c: &Value) -> u64 {
    let p = &c["startupProbe"];
    p["initialDelaySeconds"].as_u64().unwrap_or(0)
        + p["failureThreshold"].as_u64().unwrap() * p["periodSeconds"].as_u64().unwrap()
}

fn plan_for(model: &str, gpu: &str, quantization: Option<sizing::WeightPrecision>) -> sizing::Plan {
    sizing::size(&SizingRequest {
        model_id: model.into(),
        gpu_type: gpu.into(),
        quantization,
        mig: MigChoice::None,
        ..Default::default()
    })
    .unwrap()
}

/// The load-time estimate of a plan: the sizing engine's budget, and its
/// formula (300 s + 20 s per GiB of checkpoint) without the engine's 3 h cap.
fn load_time_estimate(plan: &sizing::Plan) -> u64 {
    u64::from(plan.startup_probe_seconds).max((300.0 + 20.0 * plan.checkpoint_gib).ceil() as u64)
}

#[test]
fn the_deployment_runtime_puts_the_whole_plan_in_a_deployment_service_and_weights_claim() {
    let spec = json!({
        "model": "meta-llama/Llama-3.1-70B-Instruct", "gpuType": "H100-80GB", "runtime": "deployment",
        "hfTokenSecretRef": {"name": "hf-token"}, "extraArgs": ["--max-num-seqs", "64"],
    });
    let mut req = request("d", LlmInference::new("llama").spec(spec).build());
    req.input = Some(input(json!({"defaults": {"gpuNodeSelector": true,
        "weightsCache": {"storageClassName": "fast-rwo"}}})));
    let rsp = call(&req);
    assert_not_fatal(&rsp.results, "deployment");
    assert_eq!(
        composed_names(&rsp),
        ["deployment", "service", "weights_cache"]
    );
    let plan = plan_for("meta-llama/Llama-3.1-70B-Instruct", "H100-80GB", None);

    let (deployment, ready) = composed(&rsp, "deployment");
    assert_eq!(ready, fnv1::Ready::False as i32, "nothing observed yet");
    assert_eq!(deployment["apiVersion"], "apps/v1");
    let spec = &deployment["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(
        spec["strategy"],
        json!({"type": "Recreate"}),
        "a ReadWriteOnce volume"
    );
    let pod = &spec["template"]["spec"];
    let c = container(pod, "vllm");
    assert_eq!(strings(&c["command"]), ["vllm", "serve"]);
    let args = strings(&c["args"]);
    assert_eq!(args[0], "meta-llama/Llama-3.1-70B-Instruct");
    let tp = plan.tensor_parallel_size.to_string();
    let len = plan.max_model_len.to_string();
    for (f, want) in [
        ("--tensor-parallel-size", tp.as_str()),
        ("--max-model-len", len.as_str()),
        ("--dtype", &plan.dtype.to_string()),
        ("--gpu-memory-utilization", "0.9"),
        ("--port", "8000"),
        ("--max-num-seqs", "64"),
    ] {
        assert_eq!(flag(&args, f), Some(want), "{f} in {args:?}");
    }
    assert_eq!(
        args[args.len() - 2..],
        ["--max-num-seqs", "64"],
        "extra arguments come last"
    );
    // GPUs, CPU and memory (the plan's plus /dev/shm), requests = limits.
    let limits = &c["resources"]["limits"];
    assert_eq!(limits["nvidia.com/gpu"], plan.gpu_count.to_string());
    assert_eq!(limits["cpu"], plan.cpu);
    let memory: u64 = plan.memory.trim_end_matches("Gi").parse().unwrap();
    assert_eq!(limits["memory"], format!("{}Gi", memory + 8));
    assert_eq!(
        c["resources"]["requests"], *limits,
        "the weights volume holds the download"
    );
    // /dev/shm in memory, of the plan's size.
    let shm = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "dshm")
        .unwrap();
    assert_eq!(
        shm["emptyDir"],
        json!({"medium": "Memory", "sizeLimit": plan.shm_size.clone().unwrap()})
    );
    assert!(
        c["volumeMounts"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "dshm", "mountPath": "/dev/shm"}))
    );
    // Probes on /health; the startup probe covers the load-time estimate.
    for probe in ["startupProbe", "readinessProbe", "livenessProbe"] {
        assert_eq!(
            c[probe]["httpGet"],
            json!({"path": "/health", "port": "http"}),
            "{probe}"
        );
    }
    assert!(startup_seconds(c) >= load_time_estimate(&plan));
    assert!(
        startup_seconds(c) > 2120,
        "longer than the operator's fixed probe"
    );
    // Scheduling: the GPU product, the GPU taint.
    let mut values = Vec::new();
    required_values(pod, "nvidia.com/gpu.product", &mut values);
    assert_eq!(values, vec![json!(["NVIDIA-H100-80GB-HBM3"])]);
    assert_eq!(
        pod["tolerations"],
        json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    );
    // Restricted: non-root, no escalation, no capabilities, RuntimeDefault.
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(c["securityContext"]["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(pod["enableServiceLinks"], false);
    // The token from its Secret, the cache on the volume.
    let env = c["env"].as_array().unwrap();
    assert!(env.contains(&json!({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}})));
    assert!(env.contains(&json!({"name": "HF_HOME", "value": "/data/huggingface"})));
    assert!(
        c["volumeMounts"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "weights", "mountPath": "/data"}))
    );

    let (claim, _) = composed(&rsp, "weights_cache");
    assert_eq!(claim["kind"], "PersistentVolumeClaim");
    assert_eq!(claim["metadata"]["name"], "llama-weights");
    assert_eq!(claim["spec"]["accessModes"], json!(["ReadWriteOnce"]));
    assert_eq!(claim["spec"]["storageClassName"], "fast-rwo");
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "weights")
        .unwrap();
    assert_eq!(
        volume["persistentVolumeClaim"]["claimName"],
        "llama-weights"
    );

    let (service, _) = composed(&rsp, "service");
    assert_eq!(service["metadata"]["name"], "llama");
    assert_eq!(
        service["spec"]["ports"],
        json!([{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}])
    );
    let selector = service["spec"]["selector"].as_object().unwrap();
    for (k, v) in selector {
        assert_eq!(
            &spec["template"]["metadata"]["labels"][k], v,
            "the Service selects the pods"
        );
    }
    assert_eq!(spec["selector"]["matchLabels"], service["spec"]["selector"]);
    for doc in [&deployment, &service, &claim] {
        let problems = support::manifests::validate_composed(doc);
        assert!(problems.is_empty(), "{}: {problems:#?}", doc["kind"]);
    }
}

/// The plan says why a Deployment is recreated, each cause once: a pod that
/// holds a whole node in the update strategy's reason, a ReadWriteOnce
/// volume in the weights cache's.
#[test]
fn the_reasons_for_recreate_name_what_holds() {
    let strategy_reasons = |model: &str, gpu: u32| {
        let spec =
            json!({"model": model, "gpuType": "H100-80GB", "gpu": gpu, "runtime": "deployment"});
        let rsp = call(&request("r", LlmInference::new("m").spec(spec).build()));
        assert_not_fatal(&rsp.results, model);
        let (deployment, _) = composed(&rsp, "deployment");
        let strategy = deployment["spec"]["strategy"]["type"].clone();
        let mentions: Vec<String> = reasons(&rsp)
            .into_iter()
            .filter(|r| r.contains("Recreate"))
            .map(|r| {
                r.split_once(" (")
                    .map_or(r.clone(), |(head, _)| head.to_string())
            })
            .collect();
        (strategy, mentions)
    };
    let whole_node = "Update strategy: Recreate, since a surge pod could not schedule beside one that holds all 8 \
                      GPUs of its node.";
    assert_eq!(
        strategy_reasons("meta-llama/Llama-3.1-8B-Instruct", 8),
        (json!("Recreate"), vec![whole_node.to_string()])
    );
    let volume = "Weights cache: a 158Gi weights volume at /data";
    assert_eq!(
        strategy_reasons("meta-llama/Llama-3.1-70B-Instruct", 4),
        (json!("Recreate"), vec![volume.to_string()])
    );
    assert_eq!(
        strategy_reasons("meta-llama/Llama-3.1-70B-Instruct", 8),
        (
            json!("Recreate"),
            vec![volume.to_string(), whole_node.to_string()]
        )
    );
    assert_eq!(
        strategy_reasons("meta-llama/Llama-3.1-8B-Instruct", 1),
        (json!("RollingUpdate"), vec![])
    );
}

#[test]
fn amd_gpus_get_the_rocm_image_and_amd_gpus_on_a_deployment() {
    let spec =
        json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "MI300X", "runtime": "deployment"});
    let rsp = call(&request(
        "amd",
        LlmInference::new("qwen").spec(spec).build(),
    ));
    assert_not_fatal(&rsp.results, "MI300X");
    let (deployment, _) = composed(&rsp, "deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    let c = container(pod, "vllm");
    assert!(
        c["image"]
            .as_str()
            .unwrap()
            .starts_with("docker.io/rocm/vllm:"),
        "{}",
        c["image"]
    );
    assert_eq!(c["resources"]["limits"]["amd.com/gpu"], "1");
    assert!(c["resources"]["limits"].get("nvidia.com/gpu").is_none());
    assert_eq!(pod["tolerations"][0]["key"], "amd.com/gpu");
    assert_eq!(
        deployment["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}),
        "one of eight GPUs, no volume: rolling, stated whole so that a switch to Recreate drops it"
    );

    // The platform names its own images per vendor.
    let mut req = request(
        "amd2",
        LlmInference::new("qwen").spec(json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "MI300X", "runtime": "deployment"})).build(),
    );
    req.input = Some(input(
        json!({"defaults": {"vllmImages": {"amd": {"registry": "registry.example.com", "name": "vllm-rocm:1"}}}}),
    ));
    let (deployment, _) = composed(&call(&req), "deployment");
    assert_eq!(
        container(&deployment["spec"]["template"]["spec"], "vllm")["image"],
        "registry.example.com/vllm-rocm:1"
    );
}

/// The built-in image's plain tag is vLLM's CUDA 12.9 build, which has no
/// fp4 kernels for Blackwell Ultra: fp4 weights on a B300 get the CUDA 13
/// build of the same release, and the plan says why. Other weights, other
/// GPUs and a platform's own image keep the image they had; an image of
/// vLLM's CUDA 12.9 builds is warned about.
#[test]
fn fp4_weights_on_a_b300_get_the_cuda_13_build_of_the_built_in_image() {
    let image = |tag: &str, model: &str, gpu_type: &str, defaults: Value| {
        let spec = json!({"model": model, "gpuType": gpu_type, "runtime": "deployment"});
        let mut req = request(tag, LlmInference::new("chat").spec(spec).build());
        req.input = Some(input(json!({ "defaults": defaults })));
        let rsp = call(&req);
        let (deployment, _) = composed(&rsp, "deployment");
        let reasons = desired_status(&rsp)["plan"]["reasons"].clone();
        let about = reasons
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r.as_str().unwrap().starts_with("Image "))
            .cloned();
        (
            container(&deployment["spec"]["template"]["spec"], "vllm")["image"].clone(),
            about,
        )
    };
    let fp4 = "nvidia/Llama-3.1-8B-Instruct-FP4";
    assert_eq!(
        image("b1", fp4, "B300", json!({})),
        (
            json!("docker.io/vllm/vllm-openai:v0.19.0-cu130"),
            Some(json!(
                "Image docker.io/vllm/vllm-openai:v0.19.0-cu130, the CUDA 13 build of the same vLLM release: its \
                 CUDA 12.9 build (docker.io/vllm/vllm-openai:v0.19.0) has no fp4 kernels for B300 (compute \
                 capability 10.3)."
            ))
        )
    );
    let plain = (json!("docker.io/vllm/vllm-openai:v0.19.0"), None);
    assert_eq!(image("b2", QWEN, "B300", json!({})), plain);
    assert_eq!(image("b3", fp4, "B200", json!({})), plain);
    let own =
        json!({"vllmImages": {"nvidia": {"registry": "registry.example.com", "name": "vllm:1"}}});
    assert_eq!(
        image("b4", fp4, "B300", own),
        (json!("registry.example.com/vllm:1"), None)
    );
    // An image of the XR's own that is one of vLLM's CUDA 12.9 builds is
    // served as asked, with a warning that says which build runs fp4 there.
    let spec = json!({"model": fp4, "gpuType": "B300", "runtime": "deployment",
                      "image": {"registry": "docker.io", "name": "vllm/vllm-openai:v0.18.0"}});
    let rsp = call(&request("b5", LlmInference::new("chat").spec(spec).build()));
    assert_eq!(
        rsp.results,
        vec![warning(
            "SizingWarning",
            "Image docker.io/vllm/vllm-openai:v0.18.0 is a CUDA 12.9 build of vLLM, which has no fp4 kernels for B300 \
             (compute capability 10.3): vLLM loads the weights, then stops at engine start; use a CUDA 13 build \
             (vllm/vllm-openai:v0.19.0-cu130, or a plain tag from v0.20.0)"
        )]
    );
}

#[test]
fn the_leader_worker_set_runtime_serves_a_plan_across_nodes() {
    let spec = json!({
        "model": "meta-llama/Llama-3.1-405B-Instruct", "gpuType": "H100-80GB", "quantization": "bf16",
        "runtime": "leader-worker-set", "replicas": 2, "hfTokenSecretRef": {"name": "hf-token"},
    });
    let rsp = call(&request(
        "lws",
        LlmInference::new("llama-405b").spec(spec).build(),
    ));
    assert_eq!(
        rsp.results,
        vec![],
        "served, and no warning that one pod cannot span nodes"
    );
    assert_eq!(
        composed_names(&rsp),
        ["disruption_budget", "leader_worker_set", "service"]
    );
    let plan = plan_for(
        "meta-llama/Llama-3.1-405B-Instruct",
        "H100-80GB",
        Some(sizing::WeightPrecision::Bf16),
    );
    assert_eq!(
        (
            plan.nodes,
            plan.tensor_parallel_size,
            plan.pipeline_parallel_size
        ),
        (2, 8, 2)
    );

    let (lws, _) = composed(&rsp, "leader_worker_set");
    assert_eq!(lws["apiVersion"], "leaderworkerset.x-k8s.io/v1");
    assert_eq!(lws["spec"]["replicas"], 2, "one group per replica");
    let template = &lws["spec"]["leaderWorkerTemplate"];
    assert_eq!(template["size"], 2, "group size = nodes of the plan");
    assert_eq!(template["restartPolicy"], "RecreateGroupOnPodRestart");

    let leader_pod = &template["leaderTemplate"]["spec"];
    let leader = container(leader_pod, "vllm");
    let command = strings(&leader["command"]);
    assert_eq!(command[..2], ["/bin/sh", "-c"]);
    assert!(
        command[2].contains("ray start --head --port=6379"),
        "{}",
        command[2]
    );
    assert!(
        command[2].contains("$LWS_GROUP_SIZE"),
        "waits for the group: {}",
        command[2]
    );
    assert!(
        command[2].ends_with("exec vllm serve \"$@\"\n"),
        "{}",
        command[2]
    );
    let args = strings(&leader["args"]);
    assert_eq!(args[0], "meta-llama/Llama-3.1-405B-Instruct");
    assert_eq!(
        flag(&args, "--tensor-parallel-size"),
        Some("8"),
        "TP = GPUs per node"
    );
    assert_eq!(
        flag(&args, "--pipeline-parallel-size"),
        Some("2"),
        "PP = nodes"
    );
    assert_eq!(flag(&args, "--distributed-executor-backend"), Some("ray"));
    assert_eq!(leader["resources"]["limits"]["nvidia.com/gpu"], "8");
    assert!(startup_seconds(leader) >= load_time_estimate(&plan));
    assert_eq!(leader["readinessProbe"]["httpGet"]["path"], "/health");
    assert_eq!(
        template["leaderTemplate"]["metadata"]["labels"]["role"],
        "leader"
    );

    let worker_pod = &template["workerTemplate"]["spec"];
    let worker = container(worker_pod, "vllm-worker");
    let command = strings(&worker["command"]);
    assert!(
        command[2].contains("ray start --address=\"$LWS_LEADER_ADDRESS:6379\" --block"),
        "{}",
        command[2]
    );
    assert_eq!(worker["resources"]["limits"]["nvidia.com/gpu"], "8");
    for pod in [leader_pod, worker_pod] {
        let shm = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "dshm")
            .unwrap();
        assert_eq!(shm["emptyDir"]["medium"], "Memory");
    }
    // Every pod keeps its download on its own claim.
    assert_eq!(
        template["volumeClaimTemplates"][0]["metadata"]["name"],
        "weights"
    );
    assert_eq!(
        template["volumeClaimTemplates"][0]["spec"]["accessModes"],
        json!(["ReadWriteOnce"])
    );

    let (service, _) = composed(&rsp, "service");
    assert_eq!(service["metadata"]["name"], "llama-405b");
    assert_eq!(
        service["spec"]["selector"],
        json!({"leaderworkerset.sigs.k8s.io/name": "llama-405b", "role": "leader"})
    );
    // The controller's headless Services, one per group, take the leader
    // pods' names, so none claims the name of the XR's Service.
    assert_eq!(
        lws["spec"]["networkConfig"],
        json!({"subdomainPolicy": "UniquePerReplica"})
    );
    for doc in [&lws, &service] {
        let problems = support::manifests::validate_composed(doc);
        assert!(problems.is_empty(), "{}: {problems:#?}", doc["kind"]);
    }
}

#[test]
fn a_multi_node_plan_is_served_instead_of_refused() {
    // DeepSeek-R1 needs more than the eight H100-80GB of a node.
    let spec = json!({"model": "deepseek-ai/DeepSeek-R1", "gpuType": "H100-80GB"});
    let plan = plan_for("deepseek-ai/DeepSeek-R1", "H100-80GB", None);
    assert!(plan.nodes > 1);
    for runtime in ["auto", "leader-worker-set"] {
        let rsp = call(&request(
            "r1",
            LlmInference::new("r1")
                .spec(spec.clone())
                .runtime(runtime)
                .build(),
        ));
        assert_eq!(rsp.results, vec![], "{runtime}");
        assert_eq!(
            composed_names(&rsp),
            ["leader_worker_set", "service"],
            "{runtime}"
        );
        assert_eq!(
            desired_status(&rsp)["gpuCount"],
            plan.gpu_count,
            "{runtime}"
        );
    }
    // The platform's default runtime can be auto too.
    let mut req = request("r1", LlmInference::new("r1").spec(spec.clone()).build());
    req.input = Some(input(json!({"defaults": {"runtime": "auto"}})));
    assert_eq!(
        composed_names(&call(&req)),
        ["leader_worker_set", "service"]
    );
    // A one-pod runtime asked for explicitly is refused with the runtime that works.
    for (runtime, field, workload) in [
        ("vllm-runtime", "spec.runtime", "VLLMRuntime"),
        ("deployment", "spec.runtime", "Deployment"),
    ] {
        let rsp = call(&request(
            "r1",
            LlmInference::new("r1")
                .spec(spec.clone())
                .runtime(runtime)
                .build(),
        ));
        assert_eq!(rsp.results.len(), 1, "{runtime}");
        let r = &rsp.results[0];
        assert_eq!(r.severity, fnv1::Severity::Fatal as i32);
        assert_eq!(r.reason.as_deref(), Some("DoesNotFitOnePod"));
        // DeepSeek-R1's weights are fp8 already: int4 is the lower precision.
        assert_eq!(
            r.message,
            format!(
                "{field} is {runtime}, but one replica of deepseek-ai/DeepSeek-R1 needs 16 H100-80GB GPUs on 2 nodes \
                 (tensor parallel 8 x pipeline parallel 2), and a {workload} runs each replica as one pod on one node; \
                 set spec.runtime to leader-worker-set (or auto) to serve it across nodes, or use a GPU type with more \
                 memory (spec.gpuType, for example H200 or B200), a lower precision (spec.quantization int4) or a \
                 shorter context (spec.maxModelLen)"
            )
        );
    }
}

#[test]
fn the_startup_probe_covers_the_load_time_estimate_of_the_largest_catalog_model() {
    let largest = |fits: &dyn Fn(&sizing::Plan) -> bool, gpu: &str| {
        sizing::models()
            .iter()
            .filter_map(|m| {
                sizing::size(&SizingRequest {
                    model_id: m.id.clone(),
                    gpu_type: gpu.into(),
                    mig: MigChoice::None,
                    ..Default::default()
                })
                .ok()
                .filter(|p| fits(p))
                .map(|p| (m.params_b, p))
            })
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, p)| p)
            .unwrap()
    };
    // The largest model of the catalog, across nodes; the largest on one node.
    let cases = [
        (
            "leader-worker-set",
            largest(&|_| true, "H100-80GB"),
            "H100-80GB",
            "leader_worker_set",
        ),
        (
            "deployment",
            largest(&|p| p.nodes == 1, "B200"),
            "B200",
            "deployment",
        ),
    ];
    for (runtime, plan, gpu, key) in cases {
        // Kimi K2, the largest, loads its tokenizer's code from its repository.
        let spec = json!({"model": plan.model_id, "gpuType": gpu, "runtime": runtime,
                          "extraArgs": ["--trust-remote-code"]});
        let rsp = call(&request("big", LlmInference::new("big").spec(spec).build()));
        assert_not_fatal(&rsp.results, runtime);
        let (manifest, _) = composed(&rsp, key);
        let pod = if key == "deployment" {
            &manifest["spec"]["template"]["spec"]
        } else {
            &manifest["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
        };
        let budget = startup_seconds(container(pod, "vllm"));
        let estimate = load_time_estimate(&plan);
        assert!(
            budget >= estimate,
            "{runtime}: {} ({:.0} GiB): startup probe {budget} s < estimate {estimate} s",
            plan.model_id,
            plan.checkpoint_gib
        );
    }
}

#[test]
fn a_server_of_more_than_one_replica_is_evicted_a_pod_at_a_time() {
    let xr = |runtime: &str, replicas: i64| {
        LlmInference::new("qwen")
            .spec(json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "H100-80GB", "replicas": replicas}))
            .runtime(runtime)
            .build()
    };
    let rsp = call(&request("pdb", xr("deployment", 2)));
    assert_not_fatal(&rsp.results, "deployment");
    let (budget, ready) = composed(&rsp, "disruption_budget");
    assert_eq!(
        budget,
        json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "qwen", "namespace": "team-a", "labels": {
                "app.kubernetes.io/component": "model-server", "app.kubernetes.io/instance": "qwen",
                "app.kubernetes.io/managed-by": "function-inference", "app.kubernetes.io/name": "llminference",
            }},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {
                "app.kubernetes.io/component": "model-server", "app.kubernetes.io/instance": "qwen",
                "app.kubernetes.io/name": "llminference",
            }}},
        })
    );
    assert_eq!(ready, fnv1::Ready::False as i32, "not created yet");
    assert_eq!(
        support::manifests::validate_composed(&budget),
        Vec::<String>::new()
    );
    let (deployment, _) = composed(&rsp, "deployment");
    assert_eq!(budget["spec"]["selector"], deployment["spec"]["selector"]);

    // A LeaderWorkerSet's budget covers leaders and workers (its controller
    // labels every pod of the set with its name): a group restarts whole
    // when one of its pods is evicted.
    let rsp = call(&request("pdb", xr("leader-worker-set", 2)));
    let (budget, _) = composed(&rsp, "disruption_budget");
    assert_eq!(
        budget["spec"]["selector"],
        json!({"matchLabels": {"leaderworkerset.sigs.k8s.io/name": "qwen"}})
    );

    // The operator labels its pods app=<VLLMRuntime name>.
    let rsp = call(&request("pdb", xr("vllm-runtime", 2)));
    let (budget, _) = composed(&rsp, "disruption_budget");
    assert_eq!(
        budget["spec"]["selector"],
        json!({"matchLabels": {"app": "qwen"}})
    );

    // One replica: a budget would only stop drains, or allow what none does.
    for runtime in ["vllm-runtime", "deployment", "leader-worker-set"] {
        let rsp = call(&request("pdb", xr(runtime, 1)));
        assert!(
            !composed_names(&rsp).contains(&"disruption_budget".to_string()),
            "{runtime}"
        );
    }
}

/// A server stopped by a scale-down, rollout or drain finishes what it is
/// answering: a pause while the endpoints stop sending to it, vLLM's drain
/// where its release has one, and a grace period that covers both.
#[test]
fn a_stopping_server_finishes_its_requests() {
    let stop = |spec: Value| {
        let rsp = call(&request(
            "stop",
            LlmInference::new("qwen").spec(spec).build(),
        ));
        assert_not_fatal(&rsp.results, "stop");
        let (deployment, _) = composed(&rsp, "deployment");
        let pod = deployment["spec"]["template"]["spec"].clone();
        let c = container(&pod, "vllm").clone();
        let args: Vec<String> = serde_json::from_value(c["args"].clone()).unwrap();
        let drain = args
            .iter()
            .position(|a| a == "--shutdown-timeout")
            .map(|i| args[i + 1].clone());
        (
            drain,
            pod["terminationGracePeriodSeconds"].clone(),
            c["lifecycle"].clone(),
        )
    };
    let pause = json!({"preStop": {"exec": {"command": ["sleep", "15"]}}});
    let qwen =
        json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "L4", "runtime": "deployment"});
    // The built-in image runs vLLM 0.19, which drains.
    assert_eq!(
        stop(qwen.clone()),
        (Some("40".into()), json!(60), pause.clone())
    );
    // An image of the XR's own may run a release that refuses the flag.
    let mut own_image = qwen.clone();
    own_image["image"] = json!({"registry": "registry.example.com", "name": "vllm:custom"});
    assert_eq!(stop(own_image), (None, json!(60), pause.clone()));
    // So does the ROCm image's vLLM 0.11.
    let mut amd = qwen;
    amd["gpuType"] = json!("MI300X");
    assert_eq!(stop(amd), (None, json!(60), pause));

    // What auto chooses runs the platform's image too, whose release is
    // known once the runtime is: a LeaderWorkerSet's leader drains.
    let rsp = call(&request(
        "stop",
        LlmInference::new("r1")
            .spec(json!({"model": "deepseek-ai/DeepSeek-R1", "gpuType": "H100-80GB", "runtime": "auto"}))
            .build(),
    ));
    let (lws, _) = composed(&rsp, "leader_worker_set");
    let leader = container(
        &lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"],
        "vllm",
    );
    let args = leader["args"].as_array().unwrap();
    let at = args
        .iter()
        .position(|a| a == "--shutdown-timeout")
        .expect("the drain flag");
    assert_eq!(args[at + 1], "40");
}

/// An API key guards the OpenAI API: the serving container reads vLLM's
/// VLLM_API_KEY from the Secret (a LeaderWorkerSet's workers, which serve
/// nothing, never see it), and the plan says what clients must send.
#[test]
fn an_api_key_from_a_secret_guards_the_openai_api() {
    let compose = |runtime: &str, key: Value| {
        let spec = json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "H100-80GB",
            "runtime": runtime, "apiKeySecretRef": key});
        let rsp = call(&request(
            "key",
            LlmInference::new("qwen").spec(spec).build(),
        ));
        assert_not_fatal(&rsp.results, runtime);
        rsp
    };
    let from_secret = |key: &str| json!({"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "qwen-api-key", "key": key}}});
    let api_key = |c: &Value| -> Vec<Value> {
        c["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "VLLM_API_KEY")
            .cloned()
            .collect()
    };
    let rsp = compose("deployment", json!({"name": "qwen-api-key"}));
    let (deployment, _) = composed(&rsp, "deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(
        api_key(container(pod, "vllm")),
        vec![from_secret("api-key")]
    );
    assert!(reasons(&rsp).contains(
        &"API key: requests under /v1 need Authorization: Bearer with the key api-key of Secret qwen-api-key \
          (VLLM_API_KEY); /health and /metrics stay open for the probes and Prometheus."
            .to_string()
    ));
    assert_eq!(
        support::manifests::validate_composed(&deployment),
        Vec::<String>::new()
    );

    let rsp = compose(
        "leader-worker-set",
        json!({"name": "qwen-api-key", "key": "token"}),
    );
    let (lws, _) = composed(&rsp, "leader_worker_set");
    let template = &lws["spec"]["leaderWorkerTemplate"];
    let leader = container(&template["leaderTemplate"]["spec"], "vllm");
    assert_eq!(api_key(leader), vec![from_secret("token")]);
    let worker = container(&template["workerTemplate"]["spec"], "vllm-worker");
    assert_eq!(api_key(worker), Vec::<Value>::new());
}

/// What a VLLMRuntime cannot give the model server's pods (an API key from a
/// Secret, more than one pull secret) makes auto serve on a Deployment,
/// where a plan that the operator would otherwise serve.
#[test]
fn auto_serves_on_a_deployment_what_a_vllm_runtime_cannot_give() {
    for (field, value, why) in [
        (
            "apiKeySecretRef",
            json!({"name": "qwen-api-key"}),
            "Runtime: deployment (spec.runtime auto): a VLLMRuntime's environment holds only literal values, so \
             it cannot read spec.apiKeySecretRef's key from the Secret; a Deployment's pods read VLLM_API_KEY \
             from it.",
        ),
        (
            "imagePullSecrets",
            json!([{"name": "mirror"}, {"name": "private"}]),
            "Runtime: deployment (spec.runtime auto): a VLLMRuntime pulls with one Secret, and \
             spec.imagePullSecrets names 2 (mirror, private); a Deployment's pods pull with each.",
        ),
    ] {
        let mut spec =
            json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "H100-80GB", "runtime": "auto"});
        let rsp = call(&request(
            "auto",
            LlmInference::new("qwen").spec(spec.clone()).build(),
        ));
        assert_not_fatal(&rsp.results, field);
        assert!(
            support::models::names(&rsp).contains(&"vllm_runtime".to_string()),
            "{field}: the operator serves it without the field"
        );
        spec[field] = value;
        let rsp = call(&request(
            "auto",
            LlmInference::new("qwen").spec(spec).build(),
        ));
        assert_not_fatal(&rsp.results, field);
        assert!(
            support::models::names(&rsp).contains(&"deployment".to_string()),
            "{field}"
        );
        assert!(
            !support::models::names(&rsp).contains(&"vllm_runtime".to_string()),
            "{field}"
        );
        assert!(
            reasons(&rsp).contains(&why.to_string()),
            "{field}: {:?}",
            reasons(&rsp)
        );
    }
}

/// GPU nodes with a taint of the platform's own (AKS GPU pools carry
/// sku=gpu:NoSchedule): every runtime's model-server pods tolerate it, after
/// the GPU taint's toleration where they carry that one.
#[test]
fn model_servers_tolerate_the_platforms_taints() {
    let sku = json!({"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"});
    let gpu = json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"});
    let compose = |runtime: &str, defaults: Value| {
        let spec = json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "H100-80GB", "runtime": runtime});
        let mut req = request("taint", LlmInference::new("qwen").spec(spec).build());
        req.input = Some(input(json!({"defaults": defaults})));
        let rsp = call(&req);
        assert_not_fatal(&rsp.results, runtime);
        rsp
    };
    let platform = json!({"modelServerTolerations": [sku.clone()]});

    let (deployment, _) = composed(&compose("deployment", platform.clone()), "deployment");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["tolerations"],
        json!([gpu, sku])
    );
    let (lws, _) = composed(
        &compose("leader-worker-set", platform.clone()),
        "leader_worker_set",
    );
    let template = &lws["spec"]["leaderWorkerTemplate"];
    for role in ["leaderTemplate", "workerTemplate"] {
        assert_eq!(
            template[role]["spec"]["tolerations"],
            json!([gpu, sku]),
            "{role}"
        );
    }
    // The VLLMRuntime tolerates the GPU taint only where the platform asks.
    let (runtime, _) = composed(&compose("vllm-runtime", platform), "vllm_runtime");
    assert_eq!(
        runtime["spec"]["deploymentConfig"]["toleration"],
        json!([sku])
    );
    let both = json!({"modelServerTolerations": [sku.clone()], "gpuToleration": true});
    let (runtime, _) = composed(&compose("vllm-runtime", both), "vllm_runtime");
    assert_eq!(
        runtime["spec"]["deploymentConfig"]["toleration"],
        json!([gpu, sku])
    );
    let (runtime, _) = composed(&compose("vllm-runtime", json!({})), "vllm_runtime");
    assert_eq!(runtime["spec"]["deploymentConfig"].get("toleration"), None);
}

/// Images from private registries: every pod pulls with the platform's
/// Secrets, then the XR's own, each once; the VLLMRuntime carries its one
/// Secret for the operator to put on its pods. Without any, no pod names one.
#[test]
fn every_pod_pulls_with_the_platform_secrets_then_the_xrs() {
    let compose = |runtime: &str, platform: Value, own: Value| {
        let mut spec = json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "H100-80GB", "runtime": runtime});
        if !own.is_null() {
            spec["imagePullSecrets"] = own;
        }
        let mut req = request("pull", LlmInference::new("qwen").spec(spec).build());
        req.input = Some(input(json!({"defaults": {
            "imagePullSecrets": platform,
            "inferenceGateway": {"name": "inference-gateway"},
        }})));
        let rsp = call(&req);
        assert_not_fatal(&rsp.results, runtime);
        rsp
    };
    let both = json!([{"name": "mirror"}, {"name": "private"}]);
    let mirror = json!([{"name": "mirror"}]);
    let own = json!([{"name": "private"}, {"name": "mirror"}]);

    let rsp = compose("deployment", mirror.clone(), own.clone());
    let (deployment, _) = composed(&rsp, "deployment");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["imagePullSecrets"],
        both
    );
    assert_eq!(
        support::manifests::validate_composed(&deployment),
        Vec::<String>::new()
    );
    let (picker, _) = composed(&rsp, "endpoint_picker");
    assert_eq!(picker["spec"]["template"]["spec"]["imagePullSecrets"], both);

    let rsp = compose("leader-worker-set", mirror.clone(), own);
    let (lws, _) = composed(&rsp, "leader_worker_set");
    let template = &lws["spec"]["leaderWorkerTemplate"];
    assert_eq!(template["leaderTemplate"]["spec"]["imagePullSecrets"], both);
    assert_eq!(template["workerTemplate"]["spec"]["imagePullSecrets"], both);

    let rsp = compose("vllm-runtime", mirror.clone(), Value::Null);
    let (runtime, _) = composed(&rsp, "vllm_runtime");
    assert_eq!(
        runtime["spec"]["deploymentConfig"]["image"]["pullSecretName"],
        "mirror"
    );
    // The same Secret named by both counts once.
    let rsp = compose("vllm-runtime", mirror.clone(), mirror);
    let (runtime, _) = composed(&rsp, "vllm_runtime");
    assert_eq!(
        runtime["spec"]["deploymentConfig"]["image"]["pullSecretName"],
        "mirror"
    );

    let rsp = compose("deployment", Value::Null, Value::Null);
    for key in ["deployment", "endpoint_picker"] {
        let (manifest, _) = composed(&rsp, key);
        assert_eq!(
            manifest["spec"]["template"]["spec"].get("imagePullSecrets"),
            None,
            "{key}"
        );
    }
    let rsp = compose("vllm-runtime", Value::Null, Value::Null);
    let (runtime, _) = composed(&rsp, "vllm_runtime");
    assert_eq!(
        runtime["spec"]["deploymentConfig"]["image"].get("pullSecretName"),
        None
    );
}

#[test]
fn an_llm_inference_moved_between_runtimes_keeps_its_endpoint() {
    let spec = json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "L4", "ingressHost": "qwen.example.com"});
    let mut seen: Vec<(Value, Value, String)> = Vec::new();
    for runtime in ["vllm-runtime", "deployment", "leader-worker-set", "auto"] {
        let rsp = call(&request(
            "move",
            LlmInference::new("qwen")
                .spec(spec.clone())
                .runtime(runtime)
                .build(),
        ));
        assert_not_fatal(&rsp.results, runtime);
        let status = desired_status(&rsp);
        let (ingress, _) = composed(&rsp, "ingress");
        // The Service the Ingress points at: the operator's (named like the
        // VLLMRuntime, port 80) or ours.
        let service = match composed_names(&rsp).iter().any(|n| n == "service") {
            true => {
                let (s, _) = composed(&rsp, "service");
                assert_eq!(s["spec"]["ports"][0]["port"], 80, "{runtime}");
                s["metadata"]["name"].as_str().unwrap().to_string()
            }
            false => composed(&rsp, "vllm_runtime").0["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_string(),
        };
        seen.push((status["endpoint"].clone(), ingress["spec"].clone(), service));
    }
    assert_eq!(
        seen[0].0["internal"],
        "http://qwen.team-a.svc.cluster.local/v1"
    );
    for s in &seen[1..] {
        assert_eq!(s, &seen[0]);
    }
}

#[test]
fn auto_chooses_the_runtime_that_serves_the_plan_and_says_why() {
    let cases = [
        (
            "one NVIDIA node that loads in time: the operator",
            json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "L4"}),
            "vllm_runtime",
            "Runtime: vllm-runtime (spec.runtime auto): one NVIDIA node serves a replica",
        ),
        (
            "a 70B checkpoint loads beyond the operator's probe, on a weights volume: still the operator",
            json!({"model": "meta-llama/Llama-3.1-70B-Instruct", "gpuType": "H100-80GB"}),
            "vllm_runtime",
            "Runtime: vllm-runtime (spec.runtime auto)",
        ),
        (
            "AMD: a Deployment with the ROCm image",
            json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "MI300X"}),
            "deployment",
            "Runtime: deployment (spec.runtime auto): MI300X is an AMD GPU",
        ),
        (
            "slow to load, two replicas and no shared volume: the operator cannot start it",
            json!({"model": "meta-llama/Llama-3.1-70B-Instruct", "gpuType": "H100-80GB", "replicas": 2}),
            "deployment",
            "Runtime: deployment (spec.runtime auto): the VLLMRuntime cannot start it (spec.replicas: loading",
        ),
        (
            "several nodes: a LeaderWorkerSet",
            json!({"model": "deepseek-ai/DeepSeek-R1", "gpuType": "H100-80GB"}),
            "leader_worker_set",
            "Runtime: leader-worker-set (spec.runtime auto): one replica of deepseek-ai/DeepSeek-R1 needs 16 H100-80GB GPUs on 2 nodes",
        ),
    ];
    for (why, spec, key, reason) in cases {
        let rsp = call(&request(
            "auto",
            LlmInference::new("m").spec(spec).runtime("auto").build(),
        ));
        assert_not_fatal(&rsp.results, why);
        assert!(
            composed_names(&rsp).iter().any(|n| n == key),
            "{why}: {:?}",
            composed_names(&rsp)
        );
        let got = runtime_reason(&rsp);
        assert!(got.starts_with(reason), "{why}: {got}");
        let runtime = match key {
            "vllm_runtime" => "vllm-runtime",
            "leader_worker_set" => "leader-worker-set",
            other => other,
        };
        assert_eq!(desired_status(&rsp)["runtime"], runtime, "{why}");
    }
}

/// The `Serving` condition's status, reason and message.
fn serving_condition(rsp: &fnv1::RunFunctionResponse) -> (i32, String, String) {
    let c = response_condition(rsp, "Serving").unwrap();
    (c.status, c.reason, c.message.unwrap_or_default())
}

/// The Deployment the function composes for Qwen 7B on `gpu_type`.
fn qwen_deployment(gpu_type: &str) -> Value {
    let spec =
        json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": gpu_type, "runtime": "deployment"});
    let mut req = request("first", LlmInference::new("qwen").spec(spec).build());
    req.input = Some(pinned_gpu_type());
    composed(&call(&req), "deployment").0
}

/// The packaged Compositions' input: pods go to nodes of the GPU type.
fn pinned_gpu_type() -> prost_types::Struct {
    input(json!({"defaults": {"gpuNodeSelector": true, "gpuToleration": true}}))
}

const QWEN_ON_L4: &str = "1 x L4 (bfloat16), tensor parallel 1, max model length 32768";
const QWEN_ON_H100: &str = "1 x H100-80GB (bfloat16), tensor parallel 1, max model length 32768";

#[test]
fn ready_means_the_current_layout_serves_on_every_replica() {
    // Qwen moved from L4 to H100: the Deployment is observed in the states
    // a rollout passes through. It remembers that the L4 layout served.
    let spec = json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "H100-80GB", "runtime": "deployment"});
    let served_l4 = |mut deployment: Value| {
        deployment["metadata"]["annotations"]["infer.dev/served-layout"] = json!(QWEN_ON_L4);
        deployment
    };
    let call_with = |deployment: Value, pods: Option<Vec<Value>>| {
        let mut req = request(
            "rollout",
            LlmInference::new("qwen").spec(spec.clone()).build(),
        );
        req.input = Some(pinned_gpu_type());
        req.observed.as_mut().unwrap().resources =
            [("deployment".to_string(), resource(served_l4(deployment)))].into();
        if let Some(pods) = pods {
            req = with_required(req, "model_server_pods", pods);
        }
        call(&req)
    };
    let serving = |rsp: &fnv1::RunFunctionResponse| {
        let c = response_condition(rsp, "Serving").unwrap();
        (c.reason, c.message.unwrap_or_default())
    };
    let pod_labels = [
        ("app.kubernetes.io/component", "model-server"),
        ("app.kubernetes.io/instance", "qwen"),
        ("app.kubernetes.io/name", "llminference"),
    ];

    // Changed, not applied yet: Crossplane calls with the L4 Deployment,
    // fully rolled out, before it applies the H100 one.
    let on_h100 = qwen_deployment("H100-80GB");
    let rsp = call_with(
        applied(
            qwen_deployment("L4"),
            1,
            json!({"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1,
                   "conditions": [{"type": "Available", "status": "True"}]}),
        ),
        None,
    );
    assert_eq!(composed(&rsp, "deployment").1, fnv1::Ready::False as i32);
    assert_eq!(desired_status(&rsp)["ready"], "False");
    assert_eq!(desired_status(&rsp)["servingLayout"], QWEN_ON_L4);
    assert_eq!(
        serving(&rsp),
        (
            "RollingOut".into(),
            format!(
                "rolling out {QWEN_ON_H100}: 0 of 1 replica updated, 1 available; {QWEN_ON_L4} still serves on 1 replica"
            )
        )
    );
    assert_eq!(rsp.meta.as_ref().unwrap().ttl.unwrap().seconds, 15);
    assert_eq!(
        rsp.requirements.unwrap().resources["model_server_pods"],
        support::models::pods_selector(&pod_labels)
    );

    // The new pod cannot be scheduled: the pods say why, once, as a warning.
    let pending = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "qwen-7d9f-x2", "namespace": "team-a"},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable",
            "message": "0/6 nodes are available: 2 Insufficient nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity/selector."}]}});
    // Applied, and seen by the controller: the new pod is Pending.
    let rolling = applied(
        on_h100.clone(),
        2,
        json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1, "availableReplicas": 1,
               "unavailableReplicas": 1,
               "conditions": [{"type": "Available", "status": "True"}, {"type": "Progressing", "status": "True"}]}),
    );
    let rsp = call_with(rolling.clone(), Some(vec![pending.clone()]));
    let unschedulable = format!(
        "pod qwen-7d9f-x2 cannot be scheduled: 0/6 nodes are available: 2 Insufficient nvidia.com/gpu, 4 node(s) \
         didn't match Pod's node affinity/selector; {QWEN_ON_L4} still serves on 1 replica"
    );
    assert_eq!(
        serving(&rsp),
        ("Unschedulable".into(), unschedulable.clone())
    );
    assert_eq!(rsp.results, vec![warning("Unschedulable", &unschedulable)]);
    assert_eq!(desired_status(&rsp)["ready"], "False");
    // The XR already says so: no second event.
    let mut again = request(
        "rollout",
        LlmInference::new("qwen")
            .spec(spec.clone())
            .status(json!({"conditions": [
                {"type": "Serving", "status": "False", "reason": "Unschedulable", "message": unschedulable}]}))
            .build(),
    );
    again.input = Some(pinned_gpu_type());
    again.observed.as_mut().unwrap().resources =
        [("deployment".to_string(), resource(served_l4(rolling)))].into();
    let again = with_required(again, "model_server_pods", vec![pending.clone()]);
    assert_eq!(call(&again).results, vec![]);

    // Past its deadline: the controller's words, and the pod's reason.
    let rsp = call_with(
        applied(
            on_h100.clone(),
            2,
            json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1, "availableReplicas": 1,
                   "conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                                   "message": "ReplicaSet \"qwen-7d9f\" has timed out progressing."}]}),
        ),
        Some(vec![pending.clone()]),
    );
    let deadline = format!(
        "ReplicaSet \"qwen-7d9f\" has timed out progressing: pod qwen-7d9f-x2 cannot be scheduled: 0/6 nodes are \
         available: 2 Insufficient nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity/selector; \
         {QWEN_ON_L4} still serves on 1 replica"
    );
    assert_eq!(
        serving(&rsp),
        ("ProgressDeadlineExceeded".into(), deadline.clone())
    );
    assert_eq!(
        rsp.results,
        vec![warning("ProgressDeadlineExceeded", &deadline)]
    );

    // A quota refuses the pods: nothing serves.
    let rsp = call_with(
        applied(
            on_h100.clone(),
            1,
            json!({"observedGeneration": 1, "conditions": [{"type": "ReplicaFailure", "status": "True",
                "reason": "FailedCreate",
                "message": "pods \"qwen-7d9f-x3\" is forbidden: exceeded quota: gpus, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=0"}]}),
        ),
        None,
    );
    assert_eq!(
        serving(&rsp),
        (
            "ReplicaFailure".into(),
            "pods \"qwen-7d9f-x3\" is forbidden: exceeded quota: gpus, requested: requests.nvidia.com/gpu=1, used: \
             requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=0"
                .into()
        )
    );
    assert_eq!(desired_status(&rsp).get("servingLayout"), None);

    // Every replica runs the H100 layout: ready, and the pods are no longer asked for.
    let rsp = call_with(
        applied(
            on_h100,
            2,
            json!({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1,
                   "conditions": [{"type": "Available", "status": "True"}]}),
        ),
        None,
    );
    assert_eq!(composed(&rsp, "deployment").1, fnv1::Ready::True as i32);
    assert_eq!(desired_status(&rsp)["ready"], "True");
    assert_eq!(desired_status(&rsp)["servingLayout"], QWEN_ON_H100);
    assert_eq!(
        composed(&rsp, "deployment").0["metadata"]["annotations"]["infer.dev/served-layout"],
        QWEN_ON_H100
    );
    assert_eq!(serving(&rsp).0, "Available");
    assert_eq!(rsp.requirements, None);
    assert_eq!(rsp.meta.as_ref().unwrap().ttl.unwrap().seconds, 60);
}

#[test]
fn a_leader_worker_set_is_ready_when_every_group_of_the_current_spec_is() {
    let spec = json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "L4", "runtime": "leader-worker-set"});
    let request = || support::request("lws", LlmInference::new("qwen").spec(spec.clone()).build());
    let composed_set = composed(&call(&request()), "leader_worker_set").0;
    for (generation, status, want) in [
        (
            2,
            json!({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1}),
            fnv1::Ready::True,
        ),
        (
            3,
            json!({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1}),
            fnv1::Ready::False,
        ),
        (
            2,
            json!({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 0}),
            fnv1::Ready::False,
        ),
    ] {
        let mut req = request();
        let observed = applied(composed_set.clone(), generation, status.clone());
        req.observed.as_mut().unwrap().resources =
            [("leader_worker_set".to_string(), resource(observed))].into();
        let rsp = call(&req);
        assert_eq!(
            composed(&rsp, "leader_worker_set").1,
            want as i32,
            "{generation} {status}"
        );
    }
}

#[test]
fn a_server_whose_pods_are_never_created_says_where_to_look() {
    // A quota refuses the leader pod: only its StatefulSet's events say so,
    // the LeaderWorkerSet's status does not.
    let spec = json!({"model": "Qwen/Qwen2.5-1.5B-Instruct", "gpuType": "L4", "runtime": "leader-worker-set"});
    let request = || support::request("lws", LlmInference::new("qwen").spec(spec.clone()).build());
    let set = applied(
        composed(&call(&request()), "leader_worker_set").0,
        1,
        json!({"observedGeneration": 1, "replicas": 1}),
    );
    let with_pods = |pods: Vec<Value>| {
        let mut req = request();
        req.observed.as_mut().unwrap().resources =
            [("leader_worker_set".to_string(), resource(set.clone()))].into();
        call(&with_required(req, "model_server_pods", pods))
    };
    let serving = |rsp: &fnv1::RunFunctionResponse| {
        let c = response_condition(rsp, "Serving").unwrap();
        (c.reason, c.message.unwrap_or_default())
    };
    let starting = "Qwen/Qwen2.5-1.5B-Instruct has no available replica yet (0 of 1 replica updated, 0 \
        available): it will serve 1 x L4 (bfloat16), tensor parallel 1, max model length 32768 at \
        http://qwen.team-a.svc.cluster.local/v1";

    let rsp = with_pods(vec![]);
    assert_eq!(
        serving(&rsp),
        (
            "Starting".into(),
            format!(
                "{starting}; no pod of it exists: if that lasts, `kubectl get events -n team-a \
                 --field-selector reason=FailedCreate` says why its controller cannot create them (a \
                 ResourceQuota, Pod Security or a LimitRange can refuse them)"
            )
        )
    );
    assert_eq!(rsp.results, vec![], "a moment without pods is no warning");

    // A server that served before and lost every pod says so the same way.
    let mut req = request();
    let mut served_before = set.clone();
    served_before["metadata"]["annotations"]["infer.dev/served-layout"] =
        json!("1 x L4 (bfloat16), tensor parallel 1, max model length 32768");
    req.observed.as_mut().unwrap().resources =
        [("leader_worker_set".to_string(), resource(served_before))].into();
    assert_eq!(
        serving(&call(&with_required(req, "model_server_pods", vec![]))),
        (
            "Unavailable".into(),
            "Qwen/Qwen2.5-1.5B-Instruct has no available replica (0 of 1 replica updated, 0 available): \
             it will serve 1 x L4 (bfloat16), tensor parallel 1, max model length 32768 at \
             http://qwen.team-a.svc.cluster.local/v1 again once one is; no pod of it exists: if that lasts, \
             `kubectl get events -n team-a --field-selector reason=FailedCreate` says why its controller \
             cannot create them (a ResourceQuota, Pod Security or a LimitRange can refuse them)"
                .into()
        )
    );

    // Once a pod exists, it speaks for itself.
    let created = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "qwen-0", "namespace": "team-a"}, "status": {"phase": "Pending"}});
    assert_eq!(
        serving(&with_pods(vec![created])),
        ("Starting".into(), starting.into())
    );
}

#[test]
fn wrapped_runtimes_get_a_readiness_query_on_what_they_report() {
    let spec = json!({"model": "deepseek-ai/DeepSeek-R1", "gpuType": "H100-80GB", "runtime": "auto",
        "providerConfigName": "gpu-cluster", "targetNamespace": "inference"});
    let rsp = call(&request("wrap", LlmInference::new("r1").spec(spec).build()));
    assert_not_fatal(&rsp.results, "wrapped");
    let (object, _) = composed(&rsp, "leader_worker_set");
    assert_eq!(object["kind"], "Object");
    assert_eq!(
        object["spec"]["readiness"],
        json!({"policy": "DeriveFromCelQuery",
               "celQuery": "has(object.status) && has(object.status.observedGeneration) && \
                    object.status.observedGeneration >= object.metadata.generation && \
                    has(object.status.updatedReplicas) && object.status.updatedReplicas >= object.spec.replicas && \
                    has(object.status.readyReplicas) && object.status.readyReplicas >= object.spec.replicas && \
                    (!has(object.status.replicas) || object.status.replicas <= object.status.updatedReplicas)"})
    );
    assert_eq!(
        object["spec"]["forProvider"]["manifest"]["metadata"]["namespace"],
        "inference"
    );
    let (service, _) = composed(&rsp, "service");
    assert_eq!(
        service["spec"].get("readiness"),
        None,
        "a Service exists or not"
    );
    assert_eq!(
        desired_status(&rsp)["endpoint"]["internal"],
        "http://r1.inference.svc.cluster.local/v1"
    );
    for name in composed_names(&rsp) {
        let (doc, _) = composed(&rsp, &name);
        let problems = support::manifests::validate_composed(&doc);
        assert!(problems.is_empty(), "{name}: {problems:#?}");
    }

    let spec = json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "MI300X", "runtime": "auto", "providerConfigName": "gpu-cluster"});
    let (object, _) = composed(
        &call(&request("wrap", LlmInference::new("q").spec(spec).build())),
        "deployment",
    );
    assert_eq!(object["spec"]["readiness"]["policy"], "DeriveFromCelQuery");
    assert!(
        object["spec"]["readiness"]["celQuery"]
            .as_str()
            .unwrap()
            .contains("object.status.availableReplicas >= object.spec.replicas")
    );
}

#[test]
fn a_long_name_keeps_its_service_and_gets_a_leader_worker_set_name_its_controller_can_extend() {
    let name = format!("llama-405b-{}", "x".repeat(45));
    let spec = json!({"model": "meta-llama/Llama-3.1-405B-Instruct", "gpuType": "H100-80GB",
        "quantization": "bf16", "runtime": "leader-worker-set"});
    let rsp = call(&request(
        "long",
        LlmInference::new(&name).spec(spec).build(),
    ));
    assert_not_fatal(&rsp.results, "long name");
    let (lws, _) = composed(&rsp, "leader_worker_set");
    let lws_name = lws["metadata"]["name"].as_str().unwrap();
    assert!(lws_name.len() <= 45, "{lws_name}");
    assert!(lws_name.starts_with("llama-405b-xx"), "{lws_name}");
    let (service, _) = composed(&rsp, "service");
    assert_eq!(
        service["metadata"]["name"],
        name.as_str(),
        "the endpoint keeps the runtime's name"
    );
    assert_eq!(
        service["spec"]["selector"]["leaderworkerset.sigs.k8s.io/name"],
        lws_name
    );
}

/// A plan status without the composer's reason for the runtime, to compare
/// with the sizing engine's plan.
fn without_runtime_reason(mut plan: Value) -> Value {
    if let Some(reasons) = plan["reasons"].as_array_mut() {
        reasons.retain(|r| !r.as_str().is_some_and(|r| r.starts_with("Runtime: ")));
    }
    plan
}

/// A value as it reads back from the protobuf Struct of a response
/// (whole floats become integers).
fn as_in_response(v: Value) -> Value {
    Value::Object(function_inference::protocol::resource::struct_to_json(
        &object(json!({"v": v})),
    ))["v"]
        .clone()
}

/// The runtime's extra arguments.
fn runtime_args(rsp: &fnv1::RunFunctionResponse) -> Value {
    composed(rsp, "vllm_runtime").0["spec"]["vllmConfig"]["extraArgs"].clone()
}

#[test]
fn an_fp8_kv_cache_reaches_vllm_and_the_plan_says_so() {
    let spec = json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "L4", "kvCacheDtype": "fp8",
                      "hfTokenSecretRef": {"name": "hf-token"}});
    let rsp = call(&request("kv", LlmInference::new("chat").spec(spec).build()));
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
        without_runtime_reason(status["plan"].clone()),
        as_in_response(serde_json::to_value(SizeOutput::from(&plan).plan).unwrap())
    );
    assert_eq!(status["plan"]["kvCacheDtype"], "fp8");
    assert_eq!(status["plan"]["objective"], "balanced");
    assert_eq!(status["plan"]["architectureGuessed"], false);

    // auto: no flag, and vLLM's own default.
    let spec = json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "L4", "kvCacheDtype": "auto"});
    let rsp = call(&request("kv", LlmInference::new("chat").spec(spec).build()));
    assert_eq!(runtime_args(&rsp), Value::Null);
    assert_eq!(desired_status(&rsp)["plan"]["kvCacheDtype"], "auto");

    // An extra argument that sets it is passed on, and reported.
    let spec = json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "L4", "kvCacheDtype": "fp8",
                      "hfTokenSecretRef": {"name": "hf-token"}, "extraArgs": ["--kv-cache-dtype=auto"]});
    let rsp = call(&request("kv", LlmInference::new("chat").spec(spec).build()));
    let note = "spec.extraArgs sets --kv-cache-dtype, which overrides the sizing plan: the reported plan no longer describes the runtime; set spec.kvCacheDtype, which the plan sizes the KV cache for";
    assert_eq!(rsp.results, vec![warning("SizingWarning", note)]);
    assert_eq!(
        runtime_args(&rsp),
        json!(["--kv-cache-dtype", "fp8", "--kv-cache-dtype=auto"])
    );
}

#[test]
fn the_objective_comes_from_the_spec_else_the_platform_default() {
    // Llama-2-70B on A100-80GB with no stated context: two GPUs start it
    // (minimal), balanced keeps the recipes' headroom and plans four.
    let plan_for = |objective| {
        sizing::size(&SizingRequest {
            model_id: "meta-llama/Llama-2-70b-hf".into(),
            gpu_type: "A100-80GB".into(),
            mig: MigChoice::None,
            objective,
            ..Default::default()
        })
        .unwrap()
    };
    let spec = |objective: Option<&str>| {
        let mut s = json!({"model": "meta-llama/Llama-2-70b-hf", "gpuType": "A100-80GB"});
        if let Some(o) = objective {
            s["objective"] = json!(o);
        }
        s
    };
    let with_input = |spec: Value, defaults: Value| {
        let mut req = request("o", LlmInference::new("chat").spec(spec).build());
        req.input = Some(input(json!({"defaults": defaults})));
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

/// vLLM 0.14 brought its FP8 Marlin kernels to Turing: on the built-in
/// image (vLLM 0.19.0) an fp8 checkpoint serves on a T4, weight-only in
/// float16 and with a warning; on the VLLMRuntime's image, whose release is
/// not known, it is refused (the refusal rows) until the platform states it.
#[test]
fn an_fp8_checkpoint_serves_on_a_t4_where_the_image_runs_vllm_0_14_or_later() {
    let spec = |runtime: &str| json!({"model": "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8", "gpuType": "T4", "runtime": runtime});
    let marlin = warning(
        "SizingWarning",
        "T4 has no fp8 units: vLLM runs the fp8 weights weight-only through its FP8 Marlin kernels (compute in 16 \
         bits), slower than on a GPU with fp8 (L4, L40S, H100 and newer).",
    );
    let rsp = call(&request(
        "t4",
        LlmInference::new("chat").spec(spec("deployment")).build(),
    ));
    assert_eq!(rsp.results, vec![marlin.clone()]);
    let status = desired_status(&rsp);
    assert_eq!(
        (&status["plan"]["quantization"], &status["plan"]["dtype"]),
        (&json!("fp8"), &json!("float16"))
    );
    let args =
        &desired_resource(&rsp, "deployment")["spec"]["template"]["spec"]["containers"][0]["args"];
    assert!(
        args.as_array()
            .unwrap()
            .windows(2)
            .any(|w| w == [json!("--dtype"), json!("float16")]),
        "{args}"
    );
    // The platform that states its VLLMRuntime image's release gets the same plan.
    let mut req = request(
        "t4",
        LlmInference::new("chat").spec(spec("vllm-runtime")).build(),
    );
    req.input = Some(input(json!({"defaults": {"vllmVersion": "0.19.0"}})));
    assert_eq!(call(&req).results, vec![marlin]);
}

/// vLLM 0.20.0 and later do not run on Volta: a V100 is served by the
/// built-in images (vLLM 0.19.0), warned about where the image's release is
/// not known, and refused, naming the GPU type, where it is 0.20.0 or later.
#[test]
fn a_v100_is_served_only_by_a_vllm_release_before_0_20() {
    let on_v100 = |tag: &str, runtime: &str, defaults: Value| {
        let spec = json!({"model": QWEN, "gpuType": "V100-32GB", "runtime": runtime});
        let mut req = request(tag, LlmInference::new("chat").spec(spec).build());
        req.input = Some(input(json!({ "defaults": defaults })));
        call(&req)
    };
    let rsp = on_v100("v1", "deployment", json!({}));
    assert_eq!(rsp.results, vec![]);
    assert_eq!(desired_status(&rsp)["gpuType"], "V100-32GB");
    assert_eq!(
        on_v100("v2", "vllm-runtime", json!({})).results,
        vec![warning(
            "SizingWarning",
            "V100-32GB is a GPU of compute capability 7.0, which vLLM runs only before release 0.20.0: the pods \
             start only if the image runs an earlier vLLM"
        )]
    );
    assert_eq!(
        on_v100("v3", "vllm-runtime", json!({"vllmVersion": "0.19.0"})).results,
        vec![]
    );
    let rsp = on_v100("v4", "vllm-runtime", json!({"vllmVersion": "0.20.1"}));
    assert_eq!(
        rsp.results,
        vec![fatal(
            "CannotSize",
            "spec.gpuType: vLLM 0.20.1 does not run on V100-32GB, a GPU of compute capability 7.0: from release \
             0.20.0 vLLM is built on PyTorch 2.11, whose CUDA builds start at 7.5 (Turing); use a GPU of Turing \
             or newer (T4, L4, A10G, A100, H100 and newer), or an image of a vLLM release before 0.20.0"
        )]
    );
    assert!(rsp.desired.unwrap().resources.is_empty());
}

#[test]
fn the_platform_vllm_release_sizes_its_image_only() {
    let engine = |version: Option<&str>| {
        SizeOutput::from(
            &sizing::size(&SizingRequest {
                model_id: "meta-llama/Llama-3.1-8B-Instruct".into(),
                gpu_type: "H100-80GB".into(),
                mig: MigChoice::None,
                vllm_version: version.map(String::from),
                ..Default::default()
            })
            .unwrap(),
        )
        .plan
    };
    let call_with = |spec: Value| {
        let mut req = request("v", LlmInference::new("chat").spec(spec).build());
        req.input = Some(input(json!({"defaults": {"vllmVersion": "0.19.0"}})));
        without_runtime_reason(desired_status(&call(&req))["plan"].clone())
    };
    let spec = json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "H100-80GB",
                      "hfTokenSecretRef": {"name": "hf-token"}});
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
    let rsp = call(&request(
        "g",
        LlmInference::new("code").spec(spec.clone()).build(),
    ));
    let w = "example/my-codellama-7B is not in the model catalog and no config.json was given: its architecture is \
             assumed to be that of the Llama 3 model nearest in size (grouped-query attention), and a model \
             that caches more per token may need more GPUs for a long context; serve it \
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
        LlmInference::new("code")
            .spec(spec)
            .status(json!({"plan": {"warnings": [w]}}))
            .build(),
    ));
    assert_eq!(again.results, vec![]);
}

// ---------------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------------

#[test]
fn refusals_are_fatal_and_name_the_field_and_what_would_work() {
    let gpu_error = sizing::gpu("Z9000").unwrap_err();
    Refusals::of(LlmInference::new("bad").spec(json!({"model": QWEN})).build())
        .tag("r")
        .after(fnv1::State::default())
        .check(vec![
            refusal("no model", "spec", json!({"gpu": 1}), fatal("InvalidSpec", "spec.model is required: set a Hugging Face model id such as Qwen/Qwen2.5-7B-Instruct (or spec.modelRef to a Model)")),
            refusal("modelRef name no Model can have", "spec", json!({"modelRef": {"name": "Llama_Big"}}), fatal("InvalidSpec", "spec.modelRef.name is \"Llama_Big\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example llama-3-1-8b)")),
            refusal("empty model", "spec.model", json!(" "), fatal("InvalidSpec", "spec.model is empty; set a Hugging Face model id such as Qwen/Qwen2.5-7B-Instruct")),
            refusal("negative gpu", "spec.gpu", json!(-3), fatal("InvalidSpec", "spec.gpu: -3 is out of range; use a whole number from 1 to 64")),
            refusal("gpu as words", "spec.gpu", json!("lots"), fatal("InvalidSpec", "spec.gpu: the string \"lots\" is not a whole number; use a whole number from 1 to 64")),
            refusal("imagePullSecrets not a name", "spec.imagePullSecrets", json!([{"name": "creds"}, {"name": "Registry_Creds"}]), fatal("InvalidSpec", "spec.imagePullSecrets[1].name is \"Registry_Creds\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example registry-credentials)")),
            refusal("image with a space", "spec.image", json!({"registry": "docker.io ", "name": "vllm/vllm-openai:v0.19.0"}), fatal("InvalidSpec", "spec.image.registry is \"docker.io \"; an image reference holds no white space (for example docker.io)")),
            refusal("image the kubelet cannot pull", "spec.image", json!({"registry": "docker.io", "name": "vllm/vLLM-openai:v0.19.0"}), fatal("InvalidSpec", "spec.image: the kubelet cannot pull \"docker.io/vllm/vLLM-openai:v0.19.0\" (InvalidImageName); an image reference is an optional registry host, then lower-case path parts of letters, digits, '.', '_' and '-' separated by '/', then an optional :tag or @digest (for example registry docker.io, name vllm/vllm-openai:v0.19.0)")),
            refusal("apiKeySecretRef key with a space", "spec.apiKeySecretRef", json!({"name": "qwen-api-key", "key": "api key"}), fatal("InvalidSpec", "spec.apiKeySecretRef.key is \"api key\"; a key of a Secret or ConfigMap is at most 253 letters, digits, '-', '_' and '.', and not '.' or starting with '..' (for example api-key)")),
            refusal("apiKeySecretRef not a name", "spec.apiKeySecretRef", json!({"name": "Qwen Key"}), fatal("InvalidSpec", "spec.apiKeySecretRef.name is \"Qwen Key\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example qwen-api-key)")),
            refusal("apiKeySecretRef on a VLLMRuntime", "spec.apiKeySecretRef", json!({"name": "qwen-api-key"}), fatal("CannotStart", "spec.apiKeySecretRef: a VLLMRuntime's environment (vllmConfig.env) holds only literal values, so the key would stand in plain text in it; set spec.runtime to deployment or leader-worker-set, whose pods read VLLM_API_KEY from the Secret (spec.runtime is unset, and the platform's input.defaults.runtime is vllm-runtime)")),
            refusal("two imagePullSecrets on a VLLMRuntime", "spec.imagePullSecrets", json!([{"name": "mirror"}, {"name": "private"}]), fatal("CannotStart", "spec.imagePullSecrets: the model server's pods would pull with 2 Secrets (mirror, private), but a VLLMRuntime takes one (spec.deploymentConfig.image.pullSecretName); name one Secret that holds every registry's credentials, or set spec.runtime to deployment (spec.runtime is unset, and the platform's input.defaults.runtime is vllm-runtime)")),
            refusal("auto tool choice without a parser", "spec.extraArgs", json!(["--max-num-seqs", "64", "--enable-auto-tool-choice"]), fatal("InvalidSpec", "spec.extraArgs has --enable-auto-tool-choice without --tool-call-parser, and vLLM does not start without one (\"--enable-auto-tool-choice requires --tool-call-parser\"); add \"--tool-call-parser\", \"hermes\", the parser vLLM documents for Qwen/Qwen2.5-1.5B-Instruct")),
            refusal("auto tool choice without a parser, unknown model", "spec", json!({"model": "acme/support-bot-8b", "parameterCount": "8B", "extraArgs": ["--enable-auto-tool-choice"]}), fatal("InvalidSpec", "spec.extraArgs has --enable-auto-tool-choice without --tool-call-parser, and vLLM does not start without one (\"--enable-auto-tool-choice requires --tool-call-parser\"); add \"--tool-call-parser\" and the parser of the model's tool-call format (vLLM's tool calling guide lists them: hermes, llama3_json, mistral, pythonic, ...)")),
            refusal("extraArgs moving the port", "spec.extraArgs", json!(["--port", "9000"]), fatal("InvalidSpec", "spec.extraArgs sets --port 9000, but the probes, the Service and the metrics scrape reach vLLM on port 8000, so the server would never be Ready; drop it (clients reach the model through the Service)")),
            refusal("extraArgs listening on loopback", "spec.extraArgs", json!(["--host=127.0.0.1"]), fatal("InvalidSpec", "spec.extraArgs sets --host 127.0.0.1, but the kubelet's probes and the Service reach the pod's own address, so the server would never be Ready; drop it (vLLM listens on every interface, 0.0.0.0)")),
            refusal("extraArgs serving HTTPS", "spec.extraArgs", json!(["--ssl-certfile", "/certs/tls.crt", "--ssl-keyfile", "/certs/tls.key"]), fatal("InvalidSpec", "spec.extraArgs sets --ssl-keyfile: vLLM would answer HTTPS only, but the probes, the Service's clients and the metrics scrape speak HTTP, so the server would never be Ready; drop it and terminate TLS at the Ingress (spec.tls) or the Gateway")),
            refusal("extraArgs moving the port the last time", "spec.extraArgs", json!(["--port", "8000", "--port=9000"]), fatal("InvalidSpec", "spec.extraArgs sets --port 9000, but the probes, the Service and the metrics scrape reach vLLM on port 8000, so the server would never be Ready; drop it (clients reach the model through the Service)")),
            refusal("extraArgs serving no name", "spec.extraArgs", json!(["--served-model-name", "--max-num-seqs", "64"]), fatal("InvalidSpec", "spec.extraArgs sets --served-model-name without a name; give the names clients call the model by (for example \"--served-model-name\", \"chat\"), or drop it to serve the model under its id")),
            refusal("extraArgs serving an empty name", "spec.extraArgs", json!(["--served-model-name="]), fatal("InvalidSpec", "spec.extraArgs sets --served-model-name without a name; give the names clients call the model by (for example \"--served-model-name\", \"chat\"), or drop it to serve the model under its id")),
            refusal("extraArgs with a flag and its value in one argument", "spec.extraArgs", json!(["--enable-prefix-caching", "--max-num-seqs 64"]), fatal("InvalidSpec", "spec.extraArgs[1] is \"--max-num-seqs 64\": a flag and its value in one argument, which vLLM's parser takes for neither, so it would not start; give them as two arguments (\"--max-num-seqs\", \"64\") or as one: \"--max-num-seqs=64\"")),
            refusal("extraArgs max-num-seqs not a count", "spec.extraArgs", json!(["--max-num-seqs", "lots"]), fatal("InvalidSpec", "spec.extraArgs sets --max-num-seqs lots; vLLM takes a whole number of at least 1 there (the requests it runs at once, for example 64) and would not start otherwise")),
            refusal("model as an hf:// URI", "spec.model", json!("hf://Qwen/Qwen2.5-7B-Instruct"), fatal("InvalidSpec", "spec.model is \"hf://Qwen/Qwen2.5-7B-Instruct\": it takes a Hugging Face id such as Qwen/Qwen2.5-7B-Instruct, or an absolute path to weights in the image; write Qwen/Qwen2.5-7B-Instruct (hf:// belongs to a Model's weightsURI)")),
            refusal("model as its Hugging Face page", "spec.model", json!("https://huggingface.co/Qwen/Qwen2.5-7B-Instruct/"), fatal("InvalidSpec", "spec.model is \"https://huggingface.co/Qwen/Qwen2.5-7B-Instruct/\": it takes a Hugging Face id such as Qwen/Qwen2.5-7B-Instruct, or an absolute path to weights in the image; write Qwen/Qwen2.5-7B-Instruct, not the repository's page")),
            refusal("model in a bucket", "spec.model", json!("s3://models/llama"), fatal("InvalidSpec", "spec.model is \"s3://models/llama\": it takes a Hugging Face id such as Qwen/Qwen2.5-7B-Instruct, or an absolute path to weights in the image; for weights in a bucket, create a Model whose weightsURI names them and set spec.modelRef to it")),
            refusal("model with a revision", "spec.model", json!("Qwen/Qwen2.5-7B-Instruct:main"), fatal("InvalidSpec", "spec.model is \"Qwen/Qwen2.5-7B-Instruct:main\", not a Hugging Face id (':' is not a letter, digit, '-', '_' or '.'): it takes a Hugging Face id such as Qwen/Qwen2.5-7B-Instruct, or an absolute path to weights in the image; for a revision, add \"--revision\" and it to spec.extraArgs")),
            refusal("model a GGUF repository", "spec.model", json!("TheBloke/Llama-2-7B-GGUF"), fatal("InvalidSpec", "spec.model is \"TheBloke/Llama-2-7B-GGUF\", a repository of GGUF files, which function-inference does not serve: by its id vLLM finds no safetensors checkpoint, and a GGUF file (id:quant) it loads only experimentally, under-optimized; name the checkpoint it was converted from (its model card says which), or an AWQ, GPTQ or FP8 quantization for less memory")),
            refusal("model a file of a GGUF repository", "spec.model", json!("unsloth/Qwen3-0.6B-GGUF:Q4_K_M"), fatal("InvalidSpec", "spec.model is \"unsloth/Qwen3-0.6B-GGUF:Q4_K_M\", a repository of GGUF files, which function-inference does not serve: by its id vLLM finds no safetensors checkpoint, and a GGUF file (id:quant) it loads only experimentally, under-optimized; name the checkpoint it was converted from (its model card says which), or an AWQ, GPTQ or FP8 quantization for less memory")),
            refusal("model with a trailing slash", "spec.model", json!("Qwen/Qwen2.5-7B-Instruct/"), fatal("InvalidSpec", "spec.model is \"Qwen/Qwen2.5-7B-Instruct/\", not a Hugging Face id (it has 3 parts; an id has at most two, org/name): it takes a Hugging Face id such as Qwen/Qwen2.5-7B-Instruct, or an absolute path to weights in the image")),
            refusal("extraArgs gpu-memory-utilization above the range", "spec.extraArgs", json!(["--gpu-memory-utilization", "1.5"]), fatal("InvalidSpec", "spec.extraArgs sets --gpu-memory-utilization 1.5; use a share of each GPU's memory from 0.1 to 0.99 (the plan sizes for it), or drop it to take the platform's")),
            refusal("extraArgs gpu-memory-utilization of the whole GPU", "spec.extraArgs", json!(["--gpu-memory-utilization", "1.0"]), fatal("InvalidSpec", "spec.extraArgs sets --gpu-memory-utilization 1.0, at which vLLM would not start (it needs that share of each GPU free at start-up, and its CUDA context already takes part of it); use a share of each GPU's memory from 0.1 to 0.99 (the plan sizes for it), or drop it to take the platform's")),
            refusal("extraArgs gpu-memory-utilization not a share", "spec.extraArgs", json!(["--gpu-memory-utilization=most"]), fatal("InvalidSpec", "spec.extraArgs sets --gpu-memory-utilization most; use a share of each GPU's memory from 0.1 to 0.99 (the plan sizes for it), or drop it to take the platform's")),
            refusal("extraArgs gpu-memory-utilization without a value", "spec.extraArgs", json!(["--gpu-memory-utilization"]), fatal("InvalidSpec", "spec.extraArgs sets --gpu-memory-utilization without a value; use a share of each GPU's memory from 0.1 to 0.99 (the plan sizes for it), or drop it to take the platform's")),
            refusal("extraArgs max-num-seqs without a value", "spec.extraArgs", json!(["--max-num-seqs"]), fatal("InvalidSpec", "spec.extraArgs sets --max-num-seqs without a value; vLLM takes a whole number of at least 1 there (the requests it runs at once, for example 64) and would not start otherwise")),
            refusal("extraArgs with a literal API key", "spec.extraArgs", json!(["--api-key", "sk-qwen-0123"]), fatal("CredentialInArgs", "spec.extraArgs sets --api-key, whose value would stand in plain text in the model server's pod spec; put the key in a Secret and set spec.apiKeySecretRef {name, key} instead")),
            refusal("Kimi K2 without trusting its code", "spec", json!({"model": "moonshotai/Kimi-K2-Instruct", "gpuType": "H200", "runtime": "auto"}), fatal("InvalidSpec", "spec.model: moonshotai/Kimi-K2-Instruct ships its tokenizer as Python code in its repository (tokenization_kimi.py), which vLLM runs only with --trust-remote-code: without it the model server stops at startup; add \"--trust-remote-code\" to spec.extraArgs (the code then runs in the model server's pods: trust only repositories you would run)")),
            refusal("unknown field", "spec.gpus", json!(2), fatal("InvalidSpec", "spec.gpus: unknown field gpus; valid fields are model, modelRef, gpu, gpuType, quantization, maxModelLen, parameterCount, migProfile, kvCacheDtype, objective, replicas, autoscaling, hfTokenSecretRef, apiKeySecretRef, runtime, image, imagePullSecrets, gateway, ingressHost, ingressClassName, tls, extraArgs, providerConfigName, targetNamespace, crossplane")),
            refusal("unknown GPU", "spec.gpuType", json!("Z9000"), fatal("CannotSize", &format!("spec.gpuType: {gpu_error}"))),
            refusal("Gemma 2 quantized where it would compute in float16", "spec", json!({"model": "google/gemma-2-9b-it", "gpuType": "T4", "quantization": "int4"}), fatal("CannotSize", "spec.quantization: vLLM does not run google/gemma-2-9b-it in float16 (numerical instability), and T4 has no bfloat16, so int4 weights would compute in float16 there: use its 16-bit weights, which run in float32 on T4, or a GPU with bfloat16 (Ampere or newer: L4, A10G, A100, H100 and the rest of the catalog but T4 and the V100s)")),
            refusal("int4 at load time on an MI300X", "spec", json!({"model": "meta-llama/Llama-3.1-70B-Instruct", "gpuType": "MI300X", "quantization": "int4"}), fatal("CannotSize", "spec.quantization: meta-llama/Llama-3.1-70B-Instruct would load through bitsandbytes (quantized to int4 while loading), which vLLM's ROCm build does not run on MI300X (AMD Instinct, gfx9): use fp8 weights (quantization fp8; MI300X runs them natively), or an AWQ or GPTQ checkpoint of it")),
            refusal("Llama 3.2 Vision on the built-in vLLM 0.19.0", "spec", json!({"model": "meta-llama/Llama-3.2-11B-Vision-Instruct", "gpuType": "L40S", "runtime": "deployment"}), fatal("CannotSize", "spec.model: meta-llama/Llama-3.2-11B-Vision-Instruct is a MllamaForConditionalGeneration model, which vLLM loads only up to release 0.10.2; vLLM 0.19.0 cannot start it: serve a vision model it runs, such as google/gemma-3-12b-it or mistralai/Mistral-Small-3.1-24B-Instruct-2503, or an image of vLLM 0.10.2 or earlier")),
            refusal("DeepSeek-V4 on the built-in vLLM 0.19.0", "spec", json!({"model": "deepseek-ai/DeepSeek-V4-Flash", "gpuType": "H200", "runtime": "deployment"}), fatal("CannotSize", "spec.model: deepseek-ai/DeepSeek-V4-Flash is a DeepseekV4ForCausalLM model, which vLLM loads from release 0.20.0; vLLM 0.19.0 cannot start it: serve it on an image of vLLM 0.20.0 or later, or serve a model vLLM 0.19.0 runs")),
            refusal("Qwen3.5 on the built-in ROCm vLLM 0.11.2", "spec", json!({"model": "Qwen/Qwen3.5-27B", "gpuType": "MI300X", "runtime": "deployment"}), fatal("CannotSize", "spec.model: Qwen/Qwen3.5-27B is a Qwen3_5ForConditionalGeneration model, which vLLM loads from release 0.17.0; vLLM 0.11.2 cannot start it: serve it on an image of vLLM 0.17.0 or later, or serve a model vLLM 0.11.2 runs")),
            refusal("an AWQ checkpoint on Volta", "spec", json!({"model": "Qwen/Qwen2.5-7B-Instruct-AWQ", "gpuType": "V100"}), fatal("CannotSize", "spec.model: Qwen/Qwen2.5-7B-Instruct-AWQ is an AWQ checkpoint, whose vLLM kernels need compute capability 7.5 (Turing) or newer, which V100 (7.0) lacks: use a GPTQ or bitsandbytes checkpoint of it, whose kernels run on V100, or a GPU of Turing or newer (T4, L4, A100, H100 and the rest of the catalog but the V100s)")),
            refusal("an fp8 checkpoint on a T4 where the image's vLLM release is not known", "spec", json!({"model": "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8", "gpuType": "T4"}), fatal("CannotSize", "spec.model: fp8 weights need a GPU with fp8 support, which T4 lacks: vLLM runs them on Turing weight-only (FP8 Marlin) in release 0.14.0 and later, and this plan's release is not known: if the platform's image runs 0.14.0 or later, state it (the step input's vllmVersion; size --vllm-version); else use another GPU (L4, A10G, A100, H100, MI300X and newer) or bf16, int8 or int4 weights")),
            refusal("a ModelOpt fp8 checkpoint on a T4 on the built-in vLLM 0.19.0", "spec", json!({"model": "nvidia/Llama-3.1-8B-Instruct-FP8", "gpuType": "T4", "runtime": "deployment"}), fatal("CannotSize", "spec.model: fp8 weights need a GPU with fp8 support, which T4 lacks: vLLM's ModelOpt fp8 loader asks for compute capability 8.0 and T4 has 7.5: use a compressed-tensors or fp8 checkpoint of the model, which vLLM 0.14.0 and later run there, another GPU (L4, A10G, A100, H100, MI300X and newer) or bf16, int8 or int4 weights")),
            refusal("an fp8 checkpoint on Volta, named by the model", "spec", json!({"model": "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8", "gpuType": "V100"}), fatal("CannotSize", "spec.model: fp8 weights need a GPU with fp8 support, which V100 lacks: use a GPU with fp8 units or FP8 Marlin kernels (Ampere or newer) (L4, A10G, L40S, A30, A100-40GB, A100-40GB-PCIe, A100-80GB, A100-80GB-PCIe, H100-80GB, H100-PCIe, H100-NVL, H20, H200, H200-NVL, B200, GB200, B300, GH200, RTX-PRO-6000, MI300X, MI325X) or other weights (bf16, int8, int4)")),
            refusal("bad quantization", "spec.quantization", json!("int3"), fatal("InvalidSpec", "spec.quantization: \"int3\" is not valid; use one of auto, fp32, bf16, fp16, fp8, int8, int4, fp4")),
            refusal("too many replicas", "spec.replicas", json!(1000), fatal("InvalidSpec", "spec.replicas: 1000 is out of range; use a whole number from 0 to 100")),
            refusal("replicas and autoscaling", "spec", json!({"model": QWEN, "replicas": 2, "autoscaling": {"maxReplicas": 4}}), fatal("InvalidSpec", "spec.replicas (2) and spec.autoscaling are both set: with autoscaling the autoscaler sets the replicas between spec.autoscaling.minReplicas and maxReplicas; drop one of them")),
            refusal("autoscaling without maxReplicas", "spec.autoscaling", json!({"minReplicas": 1}), fatal("InvalidSpec", "spec.autoscaling.maxReplicas is required: the most replicas the autoscaler may run, 1 to 100")),
            refusal("autoscaling min above max", "spec.autoscaling", json!({"minReplicas": 5, "maxReplicas": 2}), fatal("InvalidSpec", "spec.autoscaling.minReplicas 5 is above maxReplicas 2; lower minReplicas or raise maxReplicas")),
            refusal("autoscaling target as words", "spec.autoscaling", json!({"maxReplicas": 4, "targetRequestsPerReplica": "many"}), fatal("InvalidSpec", "spec.autoscaling.targetRequestsPerReplica: the string \"many\" is not a whole number; use a whole number from 1 to 4096")),
            refusal("autoscaling output tokens zero", "spec.autoscaling", json!({"maxReplicas": 4, "outputTokens": 0}), fatal("InvalidSpec", "spec.autoscaling.outputTokens: 0 is out of range; use a whole number from 1 to 10485760")),
            refusal("autoscaling prompt tokens negative", "spec.autoscaling", json!({"maxReplicas": 4, "promptTokens": -1}), fatal("InvalidSpec", "spec.autoscaling.promptTokens: -1 is out of range; use a whole number from 1 to 10485760")),
            refusal("autoscaling target above vLLM's batches", "spec.autoscaling", json!({"maxReplicas": 4, "targetRequestsPerReplica": 5000}), fatal("InvalidSpec", "spec.autoscaling.targetRequestsPerReplica: 5000 is out of range; use a whole number from 1 to 4096")),
            refusal("autoscaling without an autoscaler", "spec.autoscaling", json!({"maxReplicas": 4}), fatal("AutoscalerUnavailable", "spec.autoscaling is set, but the platform names no autoscaler (input.defaults.autoscaler: keda or hpa); ask the platform team for one, or set a fixed spec.replicas")),
        ]);
}

#[test]
fn malformed_specs_are_fatal_and_name_the_field_and_what_is_valid() {
    let long = "x".repeat(5000);
    let rows = vec![
        refusal(
            "spec not an object",
            "spec",
            json!("qwen"),
            fatal(
                "InvalidSpec",
                "spec must be an object; it is the string \"qwen\"",
            ),
        ),
        refusal(
            "spec a list that serde would read by position",
            "spec",
            json!([QWEN]),
            fatal("InvalidSpec", "spec must be an object; it is a list"),
        ),
        refusal(
            "spec null",
            "spec",
            Value::Null,
            fatal("InvalidSpec", "spec must be an object; it is null"),
        ),
        refusal(
            "modelRef a list that serde would read by position",
            "spec",
            json!({"modelRef": ["llama"]}),
            fatal(
                "InvalidSpec",
                "spec.modelRef must be an object; it is a list",
            ),
        ),
        refusal(
            "image a list that serde would read by position",
            "spec.image",
            json!(["docker.io", "vllm/vllm-openai:v0.8.0"]),
            fatal("InvalidSpec", "spec.image must be an object; it is a list"),
        ),
        refusal(
            "model and modelRef both set",
            "spec.modelRef",
            json!({"name": "llama"}),
            fatal(
                "InvalidSpec",
                "spec.model and spec.modelRef are both set; pick one: model (a Hugging Face id) or modelRef (a Model in this namespace)",
            ),
        ),
        refusal(
            "model a number",
            "spec.model",
            json!(7),
            fatal("InvalidSpec", "spec.model: 7 is not a string"),
        ),
        refusal(
            "model empty",
            "spec.model",
            json!(""),
            fatal(
                "InvalidSpec",
                "spec.model is empty; set a Hugging Face model id such as Qwen/Qwen2.5-7B-Instruct",
            ),
        ),
        refusal(
            "model very long",
            "spec.model",
            json!(long),
            fatal(
                "InvalidSpec",
                "spec.model is 5000 characters long; use at most 256 (for example Qwen/Qwen2.5-7B-Instruct)",
            ),
        ),
        refusal(
            "model without parameter count",
            "spec.model",
            json!("acme/mystery-chat"),
            fatal(
                "CannotSize",
                "spec.parameterCount: cannot tell how many parameters `acme/mystery-chat` has: it is not in the model catalog and its id carries no size; give its parameter count (for example 8B, 70B or 8x7B)",
            ),
        ),
        refusal(
            "gpu fraction",
            "spec.gpu",
            json!(1.5),
            fatal(
                "InvalidSpec",
                "spec.gpu: 1.5 is not a whole number; use a whole number from 1 to 64",
            ),
        ),
        refusal(
            "gpu zero",
            "spec.gpu",
            json!(0),
            fatal(
                "InvalidSpec",
                "spec.gpu: 0 is out of range; use a whole number from 1 to 64",
            ),
        ),
        refusal(
            "gpu huge",
            "spec.gpu",
            json!(1e30),
            fatal(
                "InvalidSpec",
                "spec.gpu: 1e+30 is out of range; use a whole number from 1 to 64",
            ),
        ),
        refusal(
            "gpu NaN",
            "spec.gpu",
            json!("NaN"),
            fatal(
                "InvalidSpec",
                "spec.gpu: the string \"NaN\" is not a whole number; use a whole number from 1 to 64",
            ),
        ),
        refusal(
            "gpu 65",
            "spec.gpu",
            json!(65),
            fatal(
                "InvalidSpec",
                "spec.gpu: 65 is out of range; use a whole number from 1 to 64",
            ),
        ),
        refusal(
            "maxModelLen negative",
            "spec.maxModelLen",
            json!(-1),
            fatal(
                "InvalidSpec",
                "spec.maxModelLen: -1 is out of range; use a whole number from 256 to 10485760",
            ),
        ),
        refusal(
            "maxModelLen huge",
            "spec.maxModelLen",
            json!(1e30),
            fatal(
                "InvalidSpec",
                "spec.maxModelLen: 1e+30 is out of range; use a whole number from 256 to 10485760",
            ),
        ),
        refusal(
            "maxModelLen string",
            "spec.maxModelLen",
            json!("32k"),
            fatal(
                "InvalidSpec",
                "spec.maxModelLen: the string \"32k\" is not a whole number; use a whole number from 256 to 10485760",
            ),
        ),
        refusal(
            "gpuType unknown",
            "spec.gpuType",
            json!("Z9000"),
            fatal(
                "CannotSize",
                "spec.gpuType: unknown GPU type `Z9000`: known GPU types are T4, V100, V100-PCIe, V100-32GB, V100-32GB-PCIe, L4, A10G, L40S, A30, A100-40GB, A100-40GB-PCIe, A100-80GB, A100-80GB-PCIe, H100-80GB, H100-PCIe, H100-NVL, H20, H200, H200-NVL, B200, GB200, B300, GH200, RTX-PRO-6000, MI300X, MI325X",
            ),
        ),
        refusal(
            "gpuType empty",
            "spec.gpuType",
            json!(""),
            fatal(
                "InvalidSpec",
                "spec.gpuType is empty; set it (for example L4, A100-80GB or H100-80GB) or omit it",
            ),
        ),
        refusal(
            "gpuType long",
            "spec.gpuType",
            json!(long),
            fatal(
                "InvalidSpec",
                "spec.gpuType is 5000 characters long; use at most 64 (for example L4, A100-80GB or H100-80GB)",
            ),
        ),
        refusal(
            "quantization unknown",
            "spec.quantization",
            json!("int3"),
            fatal(
                "InvalidSpec",
                "spec.quantization: \"int3\" is not valid; use one of auto, fp32, bf16, fp16, fp8, int8, int4, fp4",
            ),
        ),
        refusal(
            "quantization number",
            "spec.quantization",
            json!(8),
            fatal(
                "InvalidSpec",
                "spec.quantization: 8 is not a string; use one of auto, fp32, bf16, fp16, fp8, int8, int4, fp4",
            ),
        ),
        refusal(
            "kvCacheDtype as a one-key object",
            "spec.kvCacheDtype",
            json!({"fp8": null}),
            fatal(
                "InvalidSpec",
                "spec.kvCacheDtype: an object is not a string; use one of auto or fp8",
            ),
        ),
        refusal(
            "runtime number",
            "spec.runtime",
            json!(0),
            fatal(
                "InvalidSpec",
                "spec.runtime: 0 is not a string; use one of vllm-runtime, deployment, leader-worker-set, auto",
            ),
        ),
        refusal(
            "migProfile unknown",
            "spec",
            json!({"model": QWEN, "gpuType": "A100-80GB", "migProfile": "5g.99gb"}),
            fatal(
                "CannotSize",
                "spec.migProfile: A100-80GB has no MIG profile `5g.99gb`: its profiles are 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb",
            ),
        ),
        refusal(
            "migProfile on L4",
            "spec.migProfile",
            json!("1g.10gb"),
            fatal(
                "CannotSize",
                "spec.migProfile: L4 has no MIG: use mig none, or a GPU with MIG (A30, A100-40GB, A100-40GB-PCIe, A100-80GB, A100-80GB-PCIe, H100-80GB, H100-PCIe, H100-NVL, H20, H200, H200-NVL, B200, GB200, B300, GH200, RTX-PRO-6000)",
            ),
        ),
        refusal(
            "parameterCount 1e30B",
            "spec",
            json!({"model": "acme/mystery-chat", "parameterCount": "1e30B"}),
            fatal(
                "CannotSize",
                "spec.parameterCount: invalid parameter count `1e30B`: it is not a number with a unit; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
        ),
        refusal(
            "parameterCount negative",
            "spec",
            json!({"model": "acme/mystery-chat", "parameterCount": "-7B"}),
            fatal(
                "CannotSize",
                "spec.parameterCount: invalid parameter count `-7B`: it is not a number with a unit; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
        ),
        refusal(
            "parameterCount zero",
            "spec",
            json!({"model": "acme/mystery-chat", "parameterCount": "0B"}),
            fatal(
                "CannotSize",
                "spec.parameterCount: invalid parameter count `0B`: it must be a positive number; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
        ),
        refusal(
            "parameterCount huge",
            "spec",
            json!({"model": "acme/mystery-chat", "parameterCount": "99999999999T"}),
            fatal(
                "CannotSize",
                "spec.parameterCount: invalid parameter count `99999999999T`: it is larger than 100T; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
        ),
        refusal(
            "parameterCount words",
            "spec",
            json!({"model": "acme/mystery-chat", "parameterCount": "seven billion"}),
            fatal(
                "CannotSize",
                "spec.parameterCount: invalid parameter count `seven billion`: it is not a number with a unit; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
        ),
        refusal(
            "replicas negative",
            "spec.replicas",
            json!(-1),
            fatal(
                "InvalidSpec",
                "spec.replicas: -1 is out of range; use a whole number from 0 to 100",
            ),
        ),
        refusal(
            "replicas bool",
            "spec.replicas",
            json!(true),
            fatal(
                "InvalidSpec",
                "spec.replicas: true is not a whole number; use a whole number from 0 to 100",
            ),
        ),
        refusal(
            "modelRef no name",
            "spec",
            json!({"modelRef": {}}),
            fatal("InvalidSpec", "spec.modelRef: name is required"),
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
            "hfTokenSecretRef empty name",
            "spec.hfTokenSecretRef",
            json!({"name": ""}),
            fatal(
                "InvalidSpec",
                "spec.hfTokenSecretRef.name is \"\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example hf-token)",
            ),
        ),
        refusal(
            "image missing name",
            "spec.image",
            json!({"registry": "docker.io"}),
            fatal("InvalidSpec", "spec.image: name is required"),
        ),
        refusal(
            "image empty",
            "spec.image",
            json!({"registry": "", "name": ""}),
            fatal(
                "InvalidSpec",
                "spec.image.registry is empty; set it (for example docker.io)",
            ),
        ),
        refusal(
            "ingressHost invalid",
            "spec.ingressHost",
            json!("not a host!"),
            fatal(
                "InvalidSpec",
                "spec.ingressHost is \"not a host!\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example qwen.example.com)",
            ),
        ),
        refusal(
            "ingressHost long",
            "spec.ingressHost",
            json!(long),
            fatal(
                "InvalidSpec",
                "spec.ingressHost is \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"... (5000 characters); use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example qwen.example.com)",
            ),
        ),
        refusal(
            "tls without secretName",
            "spec",
            json!({"model": QWEN, "ingressHost": "a.example.com", "tls": {}}),
            fatal("InvalidSpec", "spec.tls: secretName is required"),
        ),
        refusal(
            "extraArgs not list",
            "spec.extraArgs",
            json!("--x"),
            fatal(
                "InvalidSpec",
                "spec.extraArgs: the string \"--x\" is not a list",
            ),
        ),
        refusal(
            "extraArgs numbers",
            "spec.extraArgs",
            json!([1]),
            fatal("InvalidSpec", "spec.extraArgs[0]: 1 is not a string"),
        ),
        refusal(
            "providerConfigName empty",
            "spec.providerConfigName",
            json!(""),
            fatal(
                "InvalidSpec",
                "spec.providerConfigName is \"\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example incluster)",
            ),
        ),
        refusal(
            "targetNamespace invalid",
            "spec",
            json!({"model": QWEN, "providerConfigName": "pc", "targetNamespace": "Not_A_Namespace"}),
            fatal(
                "InvalidSpec",
                "spec.targetNamespace is \"Not_A_Namespace\"; use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit (for example inference)",
            ),
        ),
        refusal(
            "objective unknown",
            "spec.objective",
            json!("fast"),
            fatal(
                "InvalidSpec",
                "spec.objective: \"fast\" is not valid; use one of minimal, balanced, throughput",
            ),
        ),
        refusal(
            "kvCacheDtype unknown",
            "spec.kvCacheDtype",
            json!("int8"),
            fatal(
                "InvalidSpec",
                "spec.kvCacheDtype: \"int8\" is not valid; use one of auto or fp8",
            ),
        ),
        refusal(
            "unknown field",
            "spec.gpus",
            json!(2),
            fatal(
                "InvalidSpec",
                "spec.gpus: unknown field gpus; valid fields are model, modelRef, gpu, gpuType, quantization, maxModelLen, parameterCount, migProfile, kvCacheDtype, objective, replicas, autoscaling, hfTokenSecretRef, apiKeySecretRef, runtime, image, imagePullSecrets, gateway, ingressHost, ingressClassName, tls, extraArgs, providerConfigName, targetNamespace, crossplane",
            ),
        ),
    ];
    assert!(rows.len() >= 20);
    Refusals::of(LlmInference::new("bad").model(QWEN).build()).check(rows);
}

#[test]
fn a_model_that_needs_more_than_one_node_is_refused_with_what_would_work() {
    let spec = json!({"model": "deepseek-ai/DeepSeek-R1", "gpuType": "L4"});
    let rsp = call(&request("m", LlmInference::new("r1").spec(spec).build()));
    assert_eq!(rsp.results.len(), 1);
    let r = &rsp.results[0];
    assert_eq!(r.severity, fnv1::Severity::Fatal as i32);
    for needle in ["deepseek-ai/DeepSeek-R1", "spec.gpuType"] {
        assert!(
            r.message.contains(needle),
            "{needle:?} not in {:?}",
            r.message
        );
    }
}

#[test]
fn the_operator_runtime_asked_for_what_it_cannot_serve_is_refused_with_the_runtime_that_can() {
    let rsp = call(&request(
        "amd",
        LlmInference::new("m")
            .spec(json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "MI300X"}))
            .build(),
    ));
    let r = &rsp.results[0];
    assert_eq!(r.reason.as_deref(), Some("UnsupportedGpu"));
    assert!(
        r.message.starts_with("spec.gpuType: MI300X is an AMD GPU"),
        "{}",
        r.message
    );
    assert!(
        r.message.ends_with(
            "; or set spec.runtime to deployment (or auto), which runs the ROCm build of vLLM"
        ),
        "{}",
        r.message
    );

    let spec = json!({"model": "meta-llama/Llama-3.1-70B-Instruct", "gpuType": "H100-80GB", "replicas": 2, "runtime": "vllm-runtime"});
    let r = &call(&request("slow", LlmInference::new("m").spec(spec).build())).results[0];
    assert_eq!(r.reason.as_deref(), Some("CannotStart"));
    assert!(
        r.message.starts_with("spec.replicas: loading the"),
        "{}",
        r.message
    );
    assert!(
        r.message.ends_with(
            "or set spec.runtime to deployment (or auto), whose startup probe covers the load"
        ),
        "{}",
        r.message
    );
}

#[test]
fn a_platform_can_keep_pods_out_of_crossplanes_cache() {
    let spec =
        json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "L4", "runtime": "deployment"});
    let mut req = request("pods", LlmInference::new("qwen").spec(spec).build());
    assert!(
        call(&req)
            .requirements
            .is_some_and(|r| r.resources.contains_key("model_server_pods")),
        "asked for by default"
    );
    req.input = Some(input(json!({"defaults": {"diagnosePods": false}})));
    let rsp = call(&req);
    assert_eq!(rsp.requirements, None);
    assert_eq!(
        rsp.conditions[1].reason, "Starting",
        "still not serving, without saying why"
    );
}

/// While its Model is missing, an XR keeps what it composed as Crossplane
/// last applied it (read from managedFields), not as the API server filled
/// it in: giving back a claim's server-set class, volume and mode would
/// make Crossplane own them, and the next normal apply, which leaves them
/// out, would be refused (a claim's spec is immutable) until someone
/// deleted the claim.
#[test]
fn a_model_gone_keeps_the_claim_crossplane_applied_not_the_one_the_server_filled_in() {
    let xr = LlmInference::new("chat")
        .model_ref("llama-8b")
        .gpu_type("L4")
        .build();
    let mut req = support::models::with_model(request("gone", xr), vec![]);
    let applied = json!({
        "f:metadata": {"f:labels": {"f:app.kubernetes.io/instance": {}}},
        "f:spec": {"f:accessModes": {}, "f:resources": {"f:requests": {"f:storage": {}}}}});
    req.observed.as_mut().unwrap().resources = [(
        "weights_cache".to_string(),
        resource(json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "chat-weights", "namespace": "team-a", "uid": "u1",
                         "labels": {"app.kubernetes.io/instance": "chat"},
                         "managedFields": [
                             {"manager": "apiextensions.crossplane.io/composed/9f2c", "operation": "Apply",
                              "fieldsV1": applied},
                             {"manager": "kube-controller-manager", "operation": "Update",
                              "fieldsV1": {"f:spec": {"f:volumeName": {}}}}]},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "18Gi"}},
                     "storageClassName": "standard", "volumeMode": "Filesystem", "volumeName": "pv-7"},
            "status": {"phase": "Bound"},
        })),
    )]
    .into();
    let rsp = call(&req);
    assert_not_fatal(&rsp.results, "gone");
    assert_eq!(
        composed(&rsp, "weights_cache").0,
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": "chat-weights", "namespace": "team-a",
                            "labels": {"app.kubernetes.io/instance": "chat"}},
               "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "18Gi"}}}})
    );
}

/// While its Model is gone, what was composed is kept as it was: not the
/// current spec, so not Ready, but `Serving` says whether it still serves.
#[test]
fn a_model_gone_says_whether_the_kept_server_still_serves() {
    let xr = || {
        LlmInference::new("chat")
            .model_ref("llama-8b")
            .gpu_type("L4")
            .runtime("deployment")
            .build()
    };
    let served = call(&support::models::with_model(
        request("kept", xr()),
        vec![support::models::llama_8b()],
    ));
    let deployment = desired_resource(&served, "deployment");
    let with_deployment = |status: Value| {
        let mut req = support::models::with_model(request("kept", xr()), vec![]);
        // The replicas as an autoscaler would have set them.
        let mut observed = applied(deployment.clone(), 1, status.clone());
        observed["spec"]["replicas"] = status["replicas"].clone();
        req.observed.as_mut().unwrap().resources =
            [("deployment".to_string(), resource(observed))].into();
        call(&req)
    };
    let serving = serving_condition;
    let waiting = "waiting for Model team-a/llama-8b (spec.modelRef): it does not exist; create it in \
                   namespace team-a; what was composed before is kept as it was";

    let status = |replicas: i64, available: i64| json!({"observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas, "availableReplicas": available});
    // Serving all it runs, or in the middle of an autoscaler's scale-up.
    for (replicas, available) in [(1, 1), (3, 2)] {
        let rsp = with_deployment(status(replicas, available));
        assert_eq!(
            serving(&rsp),
            (
                fnv1::Status::ConditionTrue as i32,
                "Available".into(),
                format!("{waiting} and still serves")
            ),
            "{available} of {replicas}"
        );
    }
    let rsp = with_deployment(status(1, 1));
    assert_eq!(
        xr_readiness(&rsp),
        fnv1::Ready::False,
        "not the current spec: not Ready"
    );
    let rsp = with_deployment(status(1, 0));
    assert_eq!(
        serving(&rsp),
        (
            fnv1::Status::ConditionFalse as i32,
            "WaitingForModel".into(),
            waiting.into()
        )
    );
}

/// A step input that names another storage class cannot move an existing
/// claim: the claim keeps its class and access modes, and the platform is
/// told the new ones apply to new claims.
#[test]
fn an_existing_claim_keeps_its_class_and_modes_and_says_so() {
    let spec = json!({"model": "meta-llama/Llama-3.1-70B-Instruct", "gpuType": "H100-80GB",
                      "runtime": "deployment"});
    let mut req = request("claim", LlmInference::new("big").spec(spec).build());
    req.input = Some(input(
        json!({"defaults": {"weightsCache": {"storageClassName": "premium-rwo"}}}),
    ));
    let first = call(&req);
    let (claim, _) = composed(&first, "weights_cache");
    assert_eq!(claim["spec"]["storageClassName"], "premium-rwo");
    let mut observed = claim.clone();
    observed["spec"]["storageClassName"] = json!("standard");
    observed["spec"]["accessModes"] = json!(["ReadWriteMany"]);
    req.observed.as_mut().unwrap().resources =
        [("weights_cache".to_string(), resource(observed))].into();
    let rsp = call(&req);
    let (kept, _) = composed(&rsp, "weights_cache");
    assert_eq!(kept["spec"]["storageClassName"], "standard");
    assert_eq!(kept["spec"]["accessModes"], json!(["ReadWriteMany"]));
    let warnings = desired_status(&rsp)["plan"]["warnings"].clone();
    for said in [
        "input.defaults.weightsCache names storage class premium-rwo, but the weights volume big-weights exists on \
         standard and a claim's class cannot change: it stays on standard; new volumes use premium-rwo (delete the \
         claim to move it)",
        "the weights volume big-weights exists with access modes ReadWriteMany and a claim's access modes cannot \
         change: it keeps them; new volumes get ReadWriteOnce",
    ] {
        assert!(
            warnings.as_array().unwrap().iter().any(|w| w == said),
            "{said}\nnot in {warnings:#}"
        );
    }
}

/// Every replica runs the current spec, the one that served on all of
/// them, and one is not available: its pod was evicted by a node drain,
/// deleted or crashed, and starts again (or one more was asked for).
/// Nothing rolls out: the XR says the current layout serves on the others
/// and how many start, and is Ready again once they do. A spec not yet on
/// every replica is a rollout, as before.
#[test]
fn a_replica_starting_again_is_not_a_rollout() {
    let spec = json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "L4", "runtime": "deployment",
                      "replicas": 2});
    let xr = || LlmInference::new("qwen").spec(spec.clone()).build();
    let mut first = request("drain", xr());
    first.input = Some(pinned_gpu_type());
    let deployment = composed(&call(&first), "deployment").0;
    let call_with = |status: Value| {
        let mut observed = applied(deployment.clone(), 1, status);
        observed["metadata"]["annotations"]["infer.dev/served-layout"] = json!(QWEN_ON_L4);
        let mut req = request("drain", xr());
        req.input = Some(pinned_gpu_type());
        req.observed.as_mut().unwrap().resources =
            [("deployment".to_string(), resource(observed))].into();
        call(&req)
    };
    let serving = serving_condition;

    // A node drained: the evicted pod's replacement starts on another node.
    let rsp = call_with(
        json!({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
        "readyReplicas": 1, "availableReplicas": 1, "unavailableReplicas": 1,
        "conditions": [{"type": "Available", "status": "True"}, {"type": "Progressing", "status": "True"}]}),
    );
    assert_eq!(
        serving(&rsp),
        (
            fnv1::Status::ConditionFalse as i32,
            "ReplicasStarting".into(),
            format!(
                "Qwen/Qwen2.5-7B-Instruct serves at http://qwen.team-a.svc.cluster.local/v1 ({QWEN_ON_L4}) on 1 \
                 of 2 replicas: 1 more starting"
            )
        )
    );
    assert_eq!(composed(&rsp, "deployment").1, fnv1::Ready::False as i32);
    assert_eq!(desired_status(&rsp)["ready"], "False");
    assert_eq!(desired_status(&rsp)["servingLayout"], QWEN_ON_L4);
    assert_eq!(rsp.results, vec![]);

    // The last pod of a rollout starts while an old one is still there:
    // a rollout.
    let rsp = call_with(
        json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 2,
        "availableReplicas": 2, "unavailableReplicas": 1}),
    );
    assert_eq!(
        serving(&rsp),
        (
            fnv1::Status::ConditionFalse as i32,
            "RollingOut".into(),
            format!(
                "rolling out {QWEN_ON_L4}: 2 of 2 replicas updated, 2 available; {QWEN_ON_L4} still serves on 2 \
                 replicas"
            )
        )
    );

    // Both back: Ready.
    let rsp = call_with(
        json!({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
        "readyReplicas": 2, "availableReplicas": 2,
        "conditions": [{"type": "Available", "status": "True"}]}),
    );
    assert_eq!(serving(&rsp).1, "Available");
    assert_eq!(composed(&rsp, "deployment").1, fnv1::Ready::True as i32);
}

/// Kubernetes counts an annotation change as a new generation of a
/// Deployment (its annotations are copied to its ReplicaSets), so the write
/// that records the layout as served leaves the controller one generation
/// behind until it looks again. That write changes nothing that runs: READY
/// stays True. Any other change in that gap is a rollout: the XR is not
/// ready until the controller has seen it.
#[test]
fn recording_the_served_layout_is_not_a_rollout() {
    const SERVED: &str = "infer.dev/served-layout";
    const SERVED_SPEC: &str = "infer.dev/served-spec-digest";
    let complete = json!({"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1,
                          "conditions": [{"type": "Available", "status": "True"}]});
    let call_with = |gpu_type: &str, deployment: Value| {
        let spec = json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": gpu_type, "runtime": "deployment"});
        let mut req = request("served", LlmInference::new("qwen").spec(spec).build());
        req.input = Some(pinned_gpu_type());
        req.observed.as_mut().unwrap().resources =
            [("deployment".to_string(), resource(deployment))].into();
        call(&req)
    };
    let ready = |rsp: &fnv1::RunFunctionResponse| {
        (
            composed(rsp, "deployment").1 == fnv1::Ready::True as i32,
            desired_status(rsp)["ready"].clone(),
        )
    };
    let annotation = |o: &Value, name: &str| o["metadata"]["annotations"].get(name).cloned();

    // The first Deployment has rolled out: the answer records it as served,
    // with the digest of the spec that served.
    let rsp = call_with("L4", applied(qwen_deployment("L4"), 1, complete.clone()));
    assert_eq!(ready(&rsp), (true, json!("True")));
    let recorded = composed(&rsp, "deployment").0;
    assert_eq!(annotation(&recorded, SERVED), Some(json!(QWEN_ON_L4)));
    let digest = annotation(&recorded, "infer.dev/spec-digest");
    assert_eq!(annotation(&recorded, SERVED_SPEC), digest);

    // Applied: generation 2, which the controller has not seen yet.
    let rsp = call_with("L4", applied(recorded.clone(), 2, complete.clone()));
    assert_eq!(ready(&rsp), (true, json!("True")));
    assert_eq!(
        composed(&rsp, "deployment").0,
        recorded,
        "nothing more to write"
    );

    // Recorded by a function that did not record the spec, or two changes
    // behind: the status may be about another spec.
    let mut unrecorded = recorded.clone();
    unrecorded["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove(SERVED_SPEC);
    let rsp = call_with("L4", applied(unrecorded, 2, complete.clone()));
    assert_eq!(ready(&rsp), (false, json!("False")));
    let rsp = call_with("L4", applied(recorded.clone(), 3, complete.clone()));
    assert_eq!(ready(&rsp), (false, json!("False")));

    // Moved to H100: the new spec keeps the record of what served, and
    // while the controller has not seen it, the old status says nothing of
    // the new spec.
    let rsp = call_with("H100-80GB", applied(recorded, 2, complete));
    let moving = composed(&rsp, "deployment").0;
    assert_eq!(ready(&rsp), (false, json!("False")));
    assert_eq!(annotation(&moving, SERVED), Some(json!(QWEN_ON_L4)));
    assert_eq!(annotation(&moving, SERVED_SPEC), digest);
    let in_progress = json!({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1,
                             "conditions": [{"type": "Available", "status": "True"}]});
    let rsp = call_with("H100-80GB", applied(moving.clone(), 3, in_progress.clone()));
    assert_eq!(ready(&rsp), (false, json!("False")));

    // Rolled out on H100: recorded, with the H100 spec.
    let rsp = call_with("H100-80GB", applied(moving, 2, in_progress));
    assert_eq!(ready(&rsp), (true, json!("True")));
    let on_h100 = composed(&rsp, "deployment").0;
    assert_eq!(annotation(&on_h100, SERVED), Some(json!(QWEN_ON_H100)));
    assert_eq!(
        annotation(&on_h100, SERVED_SPEC),
        annotation(&on_h100, "infer.dev/spec-digest")
    );
}

/// A runtime that served and lost every replica is Unavailable, not
/// Starting, for as long as it has none. The workload itself remembers that
/// it served (an annotation naming the layout): Crossplane may call with a
/// stale XR whose status still says Starting, and writes that copy's
/// conditions back, so the XR's status cannot be that memory.
#[test]
fn losing_every_replica_after_serving_is_unavailable_not_a_start() {
    const SERVED: &str = "infer.dev/served-layout";
    let layout = "1 x L4 (bfloat16), tensor parallel 1, max model length 32768";
    let spec = json!({"model": "Qwen/Qwen2.5-1.5B-Instruct"});
    let runtime = composed(
        &call(&request(
            "lost",
            LlmInference::new("qwen").spec(spec.clone()).build(),
        )),
        "vllm_runtime",
    )
    .0;
    assert_eq!(runtime["metadata"]["annotations"].get(SERVED), None);
    let available = json!({"replicas": 1, "updatedReplicas": 1, "availableReplicas": 1, "unavailableReplicas": 0,
                           "modelStatus": "Ready"});
    let lost = json!({"replicas": 1, "updatedReplicas": 1, "availableReplicas": 0, "unavailableReplicas": 1,
                      "modelStatus": "Updating"});
    let remembered = |mut o: Value| {
        o["metadata"]["annotations"][SERVED] = json!(layout);
        o
    };
    // (observed runtime, the XR's observed Serving condition, want)
    let cases = [
        (
            applied(runtime.clone(), 1, available),
            "Starting",
            ("Available", Some(layout)),
        ),
        (
            applied(remembered(runtime.clone()), 1, lost.clone()),
            "Starting",
            ("Unavailable", Some(layout)),
        ),
        (
            applied(runtime.clone(), 1, lost),
            "Available",
            ("Starting", None),
        ),
    ];
    for (observed, observed_serving, (want, want_served)) in cases {
        let mut req = request(
            "lost",
            LlmInference::new("qwen")
                .spec(spec.clone())
                .status(
                    json!({"conditions": [{"type": "Serving", "reason": observed_serving,
                    "status": if observed_serving == "Available" { "True" } else { "False" }}]}),
                )
                .build(),
        );
        req.observed.as_mut().unwrap().resources =
            [("vllm_runtime".to_string(), resource(observed))].into();
        let rsp = call(&req);
        let serving = response_condition(&rsp, "Serving").unwrap();
        assert_eq!(serving.reason, want, "{:?}", serving.message);
        let desired = composed(&rsp, "vllm_runtime").0;
        assert_eq!(
            desired["metadata"]["annotations"].get(SERVED),
            want_served.map(|l| json!(l)).as_ref(),
            "{want}"
        );
    }
}

/// The engine flags the plan sizes for reach `vllm serve` on every
/// runtime: an fp8 KV cache holds twice the tokens only if vLLM is told.
#[test]
fn the_plans_engine_flags_reach_every_runtime() {
    for runtime in ["vllm-runtime", "deployment", "leader-worker-set"] {
        let spec = json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "L4", "runtime": runtime,
                          "kvCacheDtype": "fp8"});
        let rsp = call(&request(
            "flags",
            LlmInference::new("qwen").spec(spec).build(),
        ));
        assert_not_fatal(&rsp.results, runtime);
        let args = match runtime {
            "vllm-runtime" => composed(&rsp, "vllm_runtime").0["spec"]["vllmConfig"]["extraArgs"].clone(),
            "deployment" => {
                composed(&rsp, "deployment").0["spec"]["template"]["spec"]["containers"][0]["args"].clone()
            }
            _ => composed(&rsp, "leader_worker_set").0["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
                ["spec"]["containers"][0]["args"]
                .clone(),
        };
        let args: Vec<&str> = args
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            args.windows(2).any(|w| w == ["--kv-cache-dtype", "fp8"]),
            "{runtime}: {args:?}"
        );
    }
}

/// A Deployment's selector cannot change: one composed with another
/// selector (an older label scheme, say) keeps it, and its pods keep the
/// labels it selects, so the apply is accepted and the Service finds them.
#[test]
fn an_existing_deployment_keeps_its_selector() {
    let spec =
        json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "L4", "runtime": "deployment"});
    let mut req = request("selector", LlmInference::new("qwen").spec(spec).build());
    let mut existing = composed(&call(&req), "deployment").0;
    existing["spec"]["selector"] = json!({"matchLabels": {"app": "qwen"}});
    req.observed.as_mut().unwrap().resources =
        [("deployment".to_string(), resource(existing))].into();
    let rsp = call(&req);
    let (deployment, _) = composed(&rsp, "deployment");
    assert_eq!(
        deployment["spec"]["selector"],
        json!({"matchLabels": {"app": "qwen"}})
    );
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["labels"]["app"],
        "qwen"
    );
    assert_eq!(
        composed(&rsp, "service").0["spec"]["selector"],
        json!({"app": "qwen"})
    );
}

/// More replicas than a ReadWriteOnce weights volume serves, with no
/// ReadWriteMany class named, delete the volume: the platform is told
/// before Crossplane deletes it, since one replica downloads it again.
#[test]
fn a_replica_change_that_deletes_the_weights_volume_says_so() {
    let spec = |replicas: i64| {
        json!({"model": "meta-llama/Llama-3.1-70B-Instruct", "gpuType": "H100-80GB",
               "runtime": "deployment", "replicas": replicas})
    };
    let one = call(&request(
        "volume",
        LlmInference::new("big").spec(spec(1)).build(),
    ));
    let (claim, _) = composed(&one, "weights_cache");
    let mut req = request("volume", LlmInference::new("big").spec(spec(2)).build());
    req.observed.as_mut().unwrap().resources =
        [("weights_cache".to_string(), resource(claim))].into();
    let two = call(&req);
    assert!(!composed_names(&two).iter().any(|n| n == "weights_cache"));
    let said = "the weights volume big-weights is deleted: 2 replicas cannot share its ReadWriteOnce claim \
                and the platform names no ReadWriteMany storage class \
                (input.defaults.weightsCache.sharedStorageClassName), so each pod downloads the checkpoint \
                itself, and one replica downloads it again into a new volume";
    assert!(
        two.results.contains(&warning("SizingWarning", said)),
        "{:#?}",
        two.results
    );
}

/// The platform's token (a Secret it keeps in every team namespace) reaches
/// model servers whose XR and Model name none; theirs wins.
#[test]
fn the_platforms_hugging_face_token_serves_xrs_that_name_none() {
    let compose = |spec: Value| {
        let mut req = request("t", LlmInference::new("chat").spec(spec).build());
        req.input = Some(input(json!({"defaults": {"runtime": "deployment",
            "hfTokenSecretRef": {"name": "platform-hf", "key": "hf_token"}}})));
        let rsp = call(&req);
        let (deployment, _) = composed(&rsp, "deployment");
        let token: Vec<Value> = container(&deployment["spec"]["template"]["spec"], "vllm")["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "HF_TOKEN")
            .cloned()
            .collect();
        (rsp.results, token)
    };
    let from = |name: &str, key: &str| {
        vec![json!({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": name, "key": key}}})]
    };
    let (results, token) =
        compose(json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "L4"}));
    assert_eq!(
        results,
        vec![],
        "a gated model with the platform's token warns of nothing"
    );
    assert_eq!(token, from("platform-hf", "hf_token"));
    let (_, token) = compose(
        json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "L4",
                                    "hfTokenSecretRef": {"name": "team-hf"}}),
    );
    assert_eq!(token, from("team-hf", "token"));
}

/// The platform's PriorityClass (so that model servers preempt batch work
/// on shared GPU nodes), ServiceAccount (workload identity that reads
/// s3:// or gs:// weights, its token still unmounted) and scheduler (a gang
/// scheduler that places a LeaderWorkerSet's group whole) reach every pod
/// that serves; a VLLMRuntime carries neither, so auto serves on a Deployment
/// and an explicit vllm-runtime is refused.
#[test]
fn model_servers_run_at_the_platforms_priority_as_its_service_account_and_on_its_scheduler() {
    for (input_field, pod_field, value, what, carries) in [
        (
            "modelServerPriorityClassName",
            "priorityClassName",
            "inference-critical",
            "PriorityClass",
            "a Deployment's pods carry it",
        ),
        (
            "modelServerServiceAccountName",
            "serviceAccountName",
            "model-server",
            "ServiceAccount",
            "a Deployment's pods run as it",
        ),
        (
            "modelServerSchedulerName",
            "schedulerName",
            "volcano",
            "scheduler",
            "a Deployment's pods are placed by it",
        ),
    ] {
        let compose = |runtime: &str, given: &str| {
            let spec = json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "H100-80GB", "runtime": runtime});
            let mut req = request("p", LlmInference::new("qwen").spec(spec).build());
            req.input = Some(input(
                json!({"defaults": {"runtime": "auto", input_field: given}}),
            ));
            call(&req)
        };
        let rsp = compose("deployment", value);
        assert_not_fatal(&rsp.results, "deployment");
        let pod = &composed(&rsp, "deployment").0["spec"]["template"]["spec"];
        assert_eq!(pod[pod_field], value, "{pod_field}");
        assert_eq!(pod["automountServiceAccountToken"], false);
        let rsp = compose("leader-worker-set", value);
        let (lws, _) = composed(&rsp, "leader_worker_set");
        let template = &lws["spec"]["leaderWorkerTemplate"];
        for role in ["leaderTemplate", "workerTemplate"] {
            assert_eq!(template[role]["spec"][pod_field], value, "{role}");
        }
        let rsp = compose("auto", value);
        assert_not_fatal(&rsp.results, "auto");
        assert!(support::models::names(&rsp).contains(&"deployment".to_string()));
        let reason = format!(
            "Runtime: deployment (spec.runtime auto): a VLLMRuntime's pods take no {what}, and the platform gives \
             model servers {value} (input.defaults.{input_field}); {carries}."
        );
        assert!(reasons(&rsp).contains(&reason), "{:#?}", reasons(&rsp));
        // Empty, as a templated Composition may write it: none, even with
        // the VLLMRuntime as the platform's runtime.
        let spec = json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "H100-80GB", "runtime": "deployment"});
        let mut req = request("p", LlmInference::new("qwen").spec(spec).build());
        req.input = Some(input(json!({"defaults": {input_field: ""}})));
        let rsp = call(&req);
        assert_not_fatal(&rsp.results, "empty");
        assert_eq!(
            composed(&rsp, "deployment").0["spec"]["template"]["spec"].get(pod_field),
            None
        );
        let rsp = compose("vllm-runtime", value);
        assert_eq!(
            support::models::fatals(&rsp),
            vec![format!(
                "input.defaults.{input_field}: the platform gives model servers the {what} {value}, but a \
                 VLLMRuntime's pods take none (its deploymentConfig has no field for one); set spec.runtime to \
                 deployment or leader-worker-set (or auto)"
            )]
        );
    }
}

/// Replicas kept for availability are worth little on one node: the pods
/// of a model server that may run more than one replica prefer other nodes
/// than their siblings' (soft, so a full cluster still schedules
/// them); one replica gets no constraint, and its pod template stays as it
/// was.
#[test]
fn the_replicas_of_a_model_server_prefer_other_nodes() {
    let deployment_of = |spec: Value| {
        let rsp = call(&request("s", LlmInference::new("qwen").spec(spec).build()));
        assert_not_fatal(&rsp.results, "spread");
        composed(&rsp, "deployment").0
    };
    let two = deployment_of(
        json!({"model": QWEN, "gpuType": "L4", "runtime": "deployment", "replicas": 2}),
    );
    let selector = &two["spec"]["selector"]["matchLabels"];
    assert_eq!(selector["app.kubernetes.io/instance"], "qwen");
    assert_eq!(
        two["spec"]["template"]["spec"]["topologySpreadConstraints"],
        json!([
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": selector}}
        ])
    );
    let one = deployment_of(json!({"model": QWEN, "gpuType": "L4", "runtime": "deployment"}));
    assert_eq!(
        one["spec"]["template"]["spec"].get("topologySpreadConstraints"),
        None
    );
    // An autoscaler that may add a replica counts as more than one.
    let mut req = request(
        "s",
        LlmInference::new("qwen")
            .spec(
                json!({"model": QWEN, "gpuType": "L4", "runtime": "deployment",
                         "autoscaling": {"minReplicas": 1, "maxReplicas": 3}}),
            )
            .build(),
    );
    req.input = Some(input(json!({"defaults": {"autoscaler": "keda",
        "prometheusAddress": "http://prometheus.monitoring:9090"}})));
    let rsp = call(&req);
    assert_not_fatal(&rsp.results, "autoscaled");
    assert!(
        composed(&rsp, "deployment").0["spec"]["template"]["spec"]["topologySpreadConstraints"]
            .is_array()
    );
}

/// A gated Hugging Face model without a token never downloads: the XR says
/// so before its pods crash, and only then.
#[test]
fn a_gated_model_without_a_token_is_said_before_its_pods_fail() {
    let gated = "meta-llama/Llama-3.1-8B-Instruct is gated on Hugging Face (an account must accept its publisher's \
                 licence) and no token is given: unless the platform's image or mirror provides one, vLLM cannot \
                 download it and the model server never starts; set spec.hfTokenSecretRef to a Secret holding the \
                 token of an account that accepted it (key token)";
    let spec = json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "L4"});
    let rsp = call(&request("g", LlmInference::new("chat").spec(spec).build()));
    assert_eq!(rsp.results, vec![warning("SizingWarning", gated)]);
    assert_eq!(desired_status(&rsp)["plan"]["warnings"], json!([gated]));

    let spec = json!({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpuType": "L4",
                      "hfTokenSecretRef": {"name": "hf-token"}});
    let rsp = call(&request("g", LlmInference::new("chat").spec(spec).build()));
    assert_eq!(rsp.results, vec![]);
    // Qwen publishes openly.
    let spec = json!({"model": "Qwen/Qwen2.5-7B-Instruct", "gpuType": "L4"});
    let rsp = call(&request("g", LlmInference::new("chat").spec(spec).build()));
    assert_eq!(rsp.results, vec![]);
}
