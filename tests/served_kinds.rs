//! Custom kinds the cluster must serve: before the first object of a custom
//! kind is composed, the call asks for the kind's CustomResourceDefinition,
//! and refuses, before anything is applied, when the cluster has none or it
//! does not serve the version composed. Crossplane would otherwise apply the
//! object, fail, keep it in the XR's resource references and time out on
//! every later reconcile.

mod support;

use function_inference::protocol::fnv1;
use serde_json::{Value, json};
use support::fixtures::*;
use support::models::{fatals, names};
use support::*;

const LWS_CRD: &str = "leaderworkersets.leaderworkerset.x-k8s.io";
const KEDA_CRD: &str = "scaledobjects.keda.sh";
const POD_MONITOR_CRD: &str = "podmonitors.monitoring.coreos.com";

/// The CRD vendored in tests/data/crds/ under `file`.
fn vendored_crd(file: &str) -> Value {
    let path = format!("{}/tests/data/crds/{file}", env!("CARGO_MANIFEST_DIR"));
    serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn lws_crd() -> Value {
    vendored_crd("leaderworkerset.x-k8s.io_leaderworkersets.yaml")
}

/// Llama 3.1 8B on the leader-worker-set runtime.
fn on_lws(tag: &str) -> fnv1::RunFunctionRequest {
    let mut req = request(
        tag,
        LlmInference::new("chat")
            .model("meta-llama/Llama-3.1-8B-Instruct")
            .field("gpuType", json!("H100-80GB"))
            .field("runtime", json!("leader-worker-set"))
            .build(),
    );
    req.input = Some(input(json!({"defaults": {"gpuNodeSelector": false}})));
    req
}

/// Llama 3.1 8B on a Deployment, scaled by KEDA, with a PodMonitor.
fn scaled_by_keda(tag: &str) -> fnv1::RunFunctionRequest {
    let mut req = request(
        tag,
        LlmInference::new("chat")
            .model("meta-llama/Llama-3.1-8B-Instruct")
            .field("autoscaling", json!({"minReplicas": 1, "maxReplicas": 4}))
            .build(),
    );
    req.input = Some(input(json!({"defaults": {
        "gpuType": "H100-80GB",
        "runtime": "deployment",
        "autoscaler": "keda",
        "prometheusAddress": "http://prometheus.monitoring:9090",
        "podMonitor": true,
    }})));
    req
}

fn requirements(rsp: &fnv1::RunFunctionResponse) -> Vec<String> {
    rsp.requirements
        .iter()
        .flat_map(|r| r.resources.keys().cloned())
        .collect()
}

#[test]
fn a_custom_kind_not_observed_yet_is_composed_and_its_crd_asked_for() {
    let rsp = call(&on_lws("s1"));
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert_eq!(names(&rsp), ["leader_worker_set", "service"]);
    // Its CRD, and (as for any server not serving yet) its pods.
    let asked = &rsp.requirements.as_ref().unwrap().resources;
    assert_eq!(
        asked.keys().collect::<Vec<_>>(),
        [&format!("crd/{LWS_CRD}"), "model_server_pods"]
    );
    assert_eq!(
        asked[&format!("crd/{LWS_CRD}")],
        crd_requirements(&[LWS_CRD])[&format!("crd/{LWS_CRD}")]
    );
}

#[test]
fn with_its_crd_the_call_composes_as_before_and_asks_the_same() {
    let first = call(&on_lws("s2"));
    // The whole LeaderWorkerSet CRD (a pod template in its schema, 33
    // levels deep) is read.
    let rsp = call(&with_required(
        on_lws("s2"),
        &format!("crd/{LWS_CRD}"),
        vec![lws_crd()],
    ));
    assert_eq!(rsp, first);
}

#[test]
fn without_its_crd_nothing_is_composed_and_the_refusal_says_what_to_install() {
    let req = with_required(on_lws("s3"), &format!("crd/{LWS_CRD}"), vec![]);
    let rsp = call(&req);
    assert_eq!(
        fatals(&rsp),
        [
            "this cluster does not serve LeaderWorkerSet (leaderworkerset.x-k8s.io/v1), which the \
             leader-worker-set runtime needs: it has no CustomResourceDefinition \
             leaderworkersets.leaderworkerset.x-k8s.io; install LeaderWorkerSet (kubernetes-sigs/lws v0.9.0 or \
             later), or set spec.runtime to deployment or vllm-runtime for a model that one node holds"
        ]
    );
    assert_eq!(rsp.results[0].reason.as_deref(), Some("KindNotServed"));
    assert_eq!(rsp.desired, Some(fnv1::State::default()));
    assert_eq!(rsp.requirements, None);
}

#[test]
fn every_kind_the_cluster_lacks_is_named_in_one_refusal() {
    let first = call(&scaled_by_keda("s4"));
    assert_eq!(fatals(&first), Vec::<&str>::new());
    assert_eq!(
        requirements(&first),
        [
            format!("crd/{POD_MONITOR_CRD}"),
            format!("crd/{KEDA_CRD}"),
            "model_server_pods".into()
        ]
    );
    let mut req = with_required(scaled_by_keda("s4"), &format!("crd/{KEDA_CRD}"), vec![]);
    req = with_required(req, &format!("crd/{POD_MONITOR_CRD}"), vec![]);
    assert_eq!(
        fatals(&call(&req)),
        [
            "this cluster does not serve ScaledObject (keda.sh/v1alpha1), which autoscaling with the platform's \
             autoscaler keda (input.defaults.autoscaler) needs: it has no CustomResourceDefinition \
             scaledobjects.keda.sh; install KEDA, or set a fixed spec.replicas, or have the platform name hpa as \
             its autoscaler; also this cluster does not serve PodMonitor (monitoring.coreos.com/v1), which the \
             model server's metrics (input.defaults.podMonitor) needs: it has no CustomResourceDefinition \
             podmonitors.monitoring.coreos.com; install the Prometheus Operator's CRDs, or have the platform set \
             input.defaults.podMonitor to false"
        ]
    );
}

#[test]
fn a_crd_that_does_not_serve_the_version_composed_is_refused() {
    let mut crd = lws_crd();
    for version in crd["spec"]["versions"].as_array_mut().unwrap() {
        version["name"] = json!("v1beta1");
    }
    let rsp = call(&with_required(
        on_lws("s5"),
        &format!("crd/{LWS_CRD}"),
        vec![crd],
    ));
    assert_eq!(
        fatals(&rsp),
        [
            "this cluster does not serve LeaderWorkerSet (leaderworkerset.x-k8s.io/v1), which the \
             leader-worker-set runtime needs: its CustomResourceDefinition \
             leaderworkersets.leaderworkerset.x-k8s.io serves v1beta1; install LeaderWorkerSet \
             (kubernetes-sigs/lws v0.9.0 or later), or set spec.runtime to deployment or vllm-runtime for a model \
             that one node holds"
        ]
    );
}

#[test]
fn once_an_object_of_the_kind_is_observed_nothing_is_asked() {
    let first = call(&on_lws("s6"));
    let mut req = on_lws("s6");
    let observed = &mut req.observed.as_mut().unwrap().resources;
    for name in ["leader_worker_set", "service"] {
        let object = desired_resource(&first, name);
        observed.insert(name.into(), resource(applied(object, 1, json!({}))));
    }
    let rsp = call(&req);
    assert_eq!(fatals(&rsp), Vec::<&str>::new());
    assert!(
        requirements(&rsp).iter().all(|k| !k.starts_with("crd/")),
        "{:?}",
        requirements(&rsp)
    );
}

#[test]
fn a_crd_older_than_the_fields_composed_is_refused_naming_them() {
    // production-stack's last release predates shmSize and the GPU
    // toleration: its CRD would let the API server drop them, and a tensor
    // parallel server would start with 64 MiB of /dev/shm.
    let mut crd = vendored_crd("production-stack.vllm.ai_vllmruntimes.yaml");
    let deployment_config = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
        ["spec"]["properties"]["deploymentConfig"]["properties"];
    let deployment_config = deployment_config.as_object_mut().unwrap();
    deployment_config.remove("shmSize").unwrap();
    deployment_config.remove("toleration").unwrap();
    let mut req = request(
        "s7",
        LlmInference::new("chat")
            .model("meta-llama/Llama-3.1-70B-Instruct")
            .field("gpuType", json!("H100-80GB"))
            .build(),
    );
    req.input = Some(input(json!({"defaults": {"gpuToleration": true}})));
    let first = call(&req);
    assert_eq!(fatals(&first), Vec::<&str>::new());
    let rsp = call(&with_required(
        req,
        &format!("crd/{VLLM_RUNTIME_CRD}"),
        vec![crd],
    ));
    assert_eq!(
        fatals(&rsp),
        [
            "this cluster does not serve VLLMRuntime (production-stack.vllm.ai/v1alpha1) as composed, which the \
             vllm-runtime runtime (the default) needs: its CustomResourceDefinition \
             vllmruntimes.production-stack.vllm.ai is an older release that declares no \
             spec.deploymentConfig.shmSize or spec.deploymentConfig.toleration, and the API server would drop \
             them without a word; install the vLLM production-stack operator with its VLLMRuntime CRD \
             (production-stack at commit 217fadb1 or later), or set spec.runtime to deployment, which needs only \
             a GPU device plugin"
        ]
    );
}
