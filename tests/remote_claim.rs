//! An LLMInference served through provider-kubernetes writes an object in
//! its cluster only once the name is known to be free or its own: a new
//! Object first only looks (`managementPolicies: [Observe]`), and an object
//! that stands there already (another XR's, anyone else's, or one left over)
//! is left alone and named, so two XRs of one name never overwrite or
//! delete each other's server.

mod support;

use function_inference::protocol::fnv1;
use serde_json::{Value, json};
use support::fixtures::LlmInference;
use support::*;

const OWNER: &str = "infer.dev/owner";

/// LLMInference team-a/mistral, served in namespace inference of the
/// cluster of ProviderConfig gpu-cluster, with `observed` as its observed
/// Deployment Object.
fn request_with(observed: Option<Value>) -> fnv1::RunFunctionRequest {
    let spec = json!({
        "model": "Qwen/Qwen2.5-1.5B-Instruct", "gpuType": "L4", "runtime": "deployment",
        "providerConfigName": "gpu-cluster", "targetNamespace": "inference",
        "ingressHost": "mistral.example.com",
    });
    let mut req = request("t", LlmInference::new("mistral").spec(spec).build());
    if let Some(o) = observed {
        observe(&mut req, "deployment", o);
    }
    req
}

fn observe(req: &mut fnv1::RunFunctionRequest, key: &str, object: Value) {
    req.observed
        .as_mut()
        .unwrap()
        .resources
        .insert(key.into(), resource(object));
}

/// The Object the first call composes for the Deployment.
fn first_deployment_object() -> Value {
    desired_resource(&call(&request_with(None)), "deployment")
}

/// The first Object as provider-kubernetes reports it at generation 1:
/// `synced` its Synced condition, `found` what it read at the target.
fn reported(synced: Value, found: Option<Value>) -> Value {
    let mut o = first_deployment_object();
    o["metadata"]["generation"] = json!(1);
    let mut synced = synced;
    synced["type"] = json!("Synced");
    synced["observedGeneration"] = json!(1);
    o["status"] = json!({"conditions": [synced]});
    if let Some(found) = found {
        o["status"]["atProvider"] = json!({"manifest": found});
        o["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "Ready", "status": "True", "reason": "Available"}));
    }
    o
}

/// The first Object, still only looking, having found `found` there.
fn looked_and_found(found: Value) -> Value {
    reported(
        json!({"status": "True", "reason": "ReconcileSuccess"}),
        Some(found),
    )
}

/// That `rsp` leaves the Object only looking, not ready, with a NameTaken
/// warning saying `whose` the object is.
fn assert_taken(rsp: &fnv1::RunFunctionResponse, whose: &str) {
    assert_eq!(policies(rsp), json!(["Observe"]));
    assert_eq!(
        ready(rsp),
        fnv1::Ready::False as i32,
        "another's object does not serve this XR"
    );
    assert!(
        rsp.results.contains(&warning("NameTaken", &taken(whose))),
        "{:?}",
        rsp.results
    );
}

/// A ready Deployment `inference/mistral` in the remote cluster with
/// `metadata` merged in.
fn remote_deployment(metadata: Value) -> Value {
    let mut d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "mistral", "namespace": "inference", "generation": 1},
        "spec": {"replicas": 1},
        "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1},
    });
    for (k, v) in metadata.as_object().unwrap() {
        d["metadata"][k] = v.clone();
    }
    d
}

fn policies(rsp: &fnv1::RunFunctionResponse) -> Value {
    desired_resource(rsp, "deployment")["spec"]
        .get("managementPolicies")
        .cloned()
        .unwrap_or(Value::Null)
}

fn ready(rsp: &fnv1::RunFunctionResponse) -> i32 {
    rsp.desired.as_ref().unwrap().resources["deployment"].ready
}

/// The NameTaken message for inference/mistral, saying `whose` it is.
fn taken(whose: &str) -> String {
    format!(
        "Deployment inference/mistral already exists in the cluster of ProviderConfig gpu-cluster, \
         {whose}: this XR only observes it, and neither changes nor deletes it; set \
         spec.targetNamespace to a namespace of that cluster where the name is free, or give this \
         XR another name"
    )
}

#[test]
fn a_new_object_only_looks_and_carries_its_owner() {
    let rsp = call(&request_with(None));
    let object = desired_resource(&rsp, "deployment");
    assert_eq!(object["spec"]["managementPolicies"], json!(["Observe"]));
    assert_eq!(
        object["spec"]["forProvider"]["manifest"]["metadata"]["annotations"][OWNER],
        "LLMInference team-a/mistral"
    );
    assert_eq!(ready(&rsp), fnv1::Ready::False as i32);
    assert!(
        rsp.results.is_empty(),
        "nothing to warn of yet: {:?}",
        rsp.results
    );
}

#[test]
fn it_writes_once_nothing_stands_at_the_target() {
    let observed = reported(
        json!({"status": "False", "reason": "ReconcileError",
               "message": "observe failed: external resource does not exist"}),
        None,
    );
    let rsp = call(&request_with(Some(observed)));
    assert_eq!(
        policies(&rsp),
        Value::Null,
        "the CRD's default: every action"
    );
    assert_eq!(ready(&rsp), fnv1::Ready::False as i32);
    assert_eq!(
        response_condition(&rsp, "Serving").unwrap().reason,
        "Starting"
    );
}

#[test]
fn its_own_left_over_object_is_named_not_taken_over() {
    // An earlier Object of this XR made it and is gone: whatever it last
    // wrote is not known to be what this XR wants now.
    let found = remote_deployment(json!({"annotations": {OWNER: "LLMInference team-a/mistral"}}));
    let rsp = call(&request_with(Some(looked_and_found(found))));
    assert_taken(
        &rsp,
        "composed for this XR by an Object that no longer manages it (left over: delete \
                 it, and it is composed again)",
    );
}

#[test]
fn an_object_that_reads_as_its_own_but_another_object_writes_is_named_by_that_writer() {
    // It wrote the object before it stopped: what it last read names this
    // XR, and the field managers the Object that writes it now.
    let found = remote_deployment(json!({
        "annotations": {OWNER: "LLMInference team-a/mistral"},
        "managedFields": [
            {"manager": "provider-kubernetes/mistral-8f3a69689dc9", "operation": "Apply"},
            {"manager": "provider-kubernetes/mistral-7e548aba162f", "operation": "Apply"},
        ],
    }));
    let mut observed = looked_and_found(found);
    observed["metadata"]["name"] = json!("mistral-7e548aba162f");
    let rsp = call(&request_with(Some(observed)));
    assert_taken(
        &rsp,
        "written by the provider-kubernetes Object mistral-8f3a69689dc9",
    );
}

#[test]
fn another_xrs_object_is_left_alone_and_named() {
    let found = remote_deployment(json!({"annotations": {OWNER: "LLMInference team-b/mistral"}}));
    let rsp = call(&request_with(Some(looked_and_found(found))));
    let whose = "composed for LLMInference team-b/mistral";
    assert_taken(&rsp, whose);
    let serving = response_condition(&rsp, "Serving").unwrap();
    assert_eq!(
        (serving.status, serving.reason.as_str()),
        (fnv1::Status::ConditionFalse as i32, "NameTaken")
    );
    assert!(
        serving.message.as_deref().unwrap().contains(&taken(whose)),
        "{serving:?}"
    );
}

#[test]
fn an_object_without_an_owner_is_named_by_its_manager() {
    let found = remote_deployment(json!({"labels": {"app.kubernetes.io/managed-by": "Helm"}}));
    let rsp = call(&request_with(Some(looked_and_found(found))));
    assert_taken(
        &rsp,
        "managed by Helm (it has no infer.dev/owner annotation)",
    );
}

#[test]
fn an_object_on_its_way_out_is_waited_for() {
    let found = remote_deployment(json!({
        "annotations": {OWNER: "LLMInference team-b/mistral"},
        "deletionTimestamp": "2026-11-27T05:00:00Z",
    }));
    let rsp = call(&request_with(Some(looked_and_found(found))));
    assert_eq!(policies(&rsp), json!(["Observe"]));
    assert_eq!(ready(&rsp), fnv1::Ready::False as i32);
    assert!(rsp.results.is_empty(), "{:?}", rsp.results);
}

#[test]
fn of_two_writers_the_one_that_created_the_object_keeps_it() {
    // Both Objects write (composed before this rule): what each reads back
    // is its own write, and the field managers show the other.
    let writer = |name: &str, other: &str| {
        let found = remote_deployment(json!({
            "annotations": {OWNER: "LLMInference team-a/mistral"},
            "managedFields": [
                {"manager": format!("provider-kubernetes/{other}"), "operation": "Apply"},
                {"manager": format!("provider-kubernetes/{name}"), "operation": "Apply"},
                {"manager": "kube-controller-manager", "operation": "Update"},
            ],
        }));
        let mut o = looked_and_found(found);
        o["metadata"]["name"] = json!(name);
        o["spec"]["managementPolicies"] = json!(["*"]);
        o
    };
    let mut creator = writer("mistral-8f3a69689dc9", "mistral-7e548aba162f");
    creator["metadata"]["annotations"]["crossplane.io/external-create-succeeded"] =
        json!("2026-11-27T04:27:36Z");
    let rsp = call(&request_with(Some(creator)));
    assert_eq!(policies(&rsp), Value::Null, "it created it: it keeps it");
    assert!(rsp.results.is_empty(), "{:?}", rsp.results);

    let rsp = call(&request_with(Some(writer(
        "mistral-7e548aba162f",
        "mistral-8f3a69689dc9",
    ))));
    // It took it over: it stops.
    assert_taken(
        &rsp,
        "created and written by the provider-kubernetes Object mistral-8f3a69689dc9",
    );

    // Alone, an Object that found what it writes (composed before this
    // rule, or its own left over) keeps writing.
    let mut alone = writer("mistral-7e548aba162f", "mistral-7e548aba162f");
    alone["status"]["atProvider"]["manifest"]["metadata"]["managedFields"] = json!([]);
    assert_eq!(policies(&call(&request_with(Some(alone)))), Value::Null);
}

#[test]
fn what_keeps_provider_kubernetes_from_looking_is_said() {
    let message = "connect failed: cannot get referenced ProviderConfig: \
                   ProviderConfig.kubernetes.m.crossplane.io \"gpu-cluster\" not found";
    let observed = reported(
        json!({"status": "False", "reason": "ReconcileError", "message": message}),
        None,
    );
    let rsp = call(&request_with(Some(observed)));
    assert_eq!(policies(&rsp), json!(["Observe"]));
    let serving = response_condition(&rsp, "Serving").unwrap();
    assert_eq!(serving.reason, "ApplyFailed");
    assert!(
        serving.message.as_deref().unwrap().contains(message),
        "{serving:?}"
    );
}

#[test]
fn an_object_told_to_apply_elsewhere_is_replaced() {
    // Written to namespace old before spec.targetNamespace changed:
    // provider-kubernetes would leave that server running. Left out once,
    // the Object is deleted with it; the next call composes a new Object,
    // which looks first.
    let found = remote_deployment(json!({"annotations": {OWNER: "LLMInference team-a/mistral"}}));
    let mut observed = looked_and_found(found);
    observed["metadata"]["name"] = json!("mistral-8f3a69689dc9");
    observed["spec"]["managementPolicies"] = json!(["*"]);
    observed["spec"]["forProvider"]["manifest"]["metadata"]["namespace"] = json!("old");
    let rsp = call(&request_with(Some(observed)));
    assert!(!composed_names(&rsp).contains(&"deployment".to_string()));
    assert_eq!(xr_readiness(&rsp), fnv1::Ready::False);
    assert_eq!(
        rsp.results,
        vec![normal(
            "Replacing",
            "replacing the Object mistral-8f3a69689dc9 (composed as deployment): it applies \
             Deployment old/mistral in the cluster of ProviderConfig gpu-cluster, and the XR now \
             wants Deployment inference/mistral in the cluster of ProviderConfig gpu-cluster; \
             provider-kubernetes would leave the first where it is; it is deleted now, and its \
             replacement is composed on the next reconcile"
        )]
    );
    assert_eq!(policies(&call(&request_with(None))), json!(["Observe"]));
}

#[test]
fn what_another_xrs_object_reports_is_not_this_xrs() {
    // The Ingress there is another XR's, and its controller gave it an
    // address: that routes nothing to this XR.
    let mut req = request_with(None);
    let mut ingress = desired_resource(&call(&req), "ingress");
    ingress["metadata"]["generation"] = json!(1);
    ingress["status"] = json!({
        "conditions": [
            {"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "observedGeneration": 1},
            {"type": "Ready", "status": "True", "reason": "Available"},
        ],
        "atProvider": {"manifest": {
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "mistral", "namespace": "inference",
                         "annotations": {OWNER: "LLMInference team-b/mistral"}},
            "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}},
        }},
    });
    observe(&mut req, "ingress", ingress);
    let rsp = call(&req);
    assert_eq!(
        desired_resource(&rsp, "ingress")["spec"]["managementPolicies"],
        json!(["Observe"])
    );
    let routed = response_condition(&rsp, "Routed").unwrap();
    assert_ne!(
        routed.status,
        fnv1::Status::ConditionTrue as i32,
        "{routed:?}"
    );
    assert!(
        rsp.results
            .iter()
            .any(|r| r.reason.as_deref() == Some("NameTaken")
                && r.message
                    .starts_with("Ingress inference/mistral already exists")),
        "{:?}",
        rsp.results
    );
}

#[test]
fn a_replaced_object_is_deleted_before_its_replacement_is_composed() {
    // Crossplane names the new Object like the old one: applied to it while
    // provider-kubernetes deletes it, the provider would delete the new
    // target and leave the old server running. So while the namespace's
    // Objects (asked of Crossplane) show the old one being deleted, it waits.
    let mut old = first_deployment_object();
    old["metadata"]["name"] = json!("mistral-8f3a69689dc9");
    // Crossplane took its labels off; its controller is still the XR.
    old["metadata"]["ownerReferences"] = json!([{"apiVersion": "infer.dev/v1alpha1",
        "kind": "LLMInference", "name": "mistral", "uid": "u1", "controller": true}]);
    old["metadata"]["annotations"]["crossplane.io/composition-resource-name"] = json!("deployment");
    old["metadata"]["deletionTimestamp"] = json!("2026-11-27T05:00:00Z");
    // Another XR's Object of that composition-resource name, being deleted
    // too, is no reason to wait.
    let mut others = old.clone();
    others["metadata"]["ownerReferences"][0]["name"] = json!("qwen");
    let rsp = call(&with_required(
        request_with(None),
        "remote-objects",
        vec![others],
    ));
    assert!(composed_names(&rsp).contains(&"deployment".to_string()));
    let rsp = call(&with_required(
        request_with(None),
        "remote-objects",
        vec![old.clone()],
    ));
    assert!(!composed_names(&rsp).contains(&"deployment".to_string()));
    assert!(composed_names(&rsp).contains(&"service".to_string()));
    assert_eq!(xr_readiness(&rsp), fnv1::Ready::False);
    assert_eq!(
        rsp.results,
        vec![normal(
            "Replacing",
            "waiting for the Object mistral-8f3a69689dc9 (composed as deployment) to be deleted with \
             what it applied before its replacement is composed"
        )]
    );
    assert_eq!(rsp.meta.unwrap().ttl.unwrap().seconds, 10);

    // Gone (or never there, or not yet asked about): composed.
    for req in [
        with_required(request_with(None), "remote-objects", vec![]),
        request_with(None),
    ] {
        let rsp = call(&req);
        assert_eq!(policies(&rsp), json!(["Observe"]));
        assert!(
            rsp.requirements
                .unwrap()
                .resources
                .contains_key("remote-objects")
        );
    }
    // All observed: nothing to ask.
    let mut req = request_with(None);
    let first = call(&req);
    for key in composed_names(&first) {
        observe(&mut req, &key, desired_resource(&first, &key));
    }
    let asked = call(&req).requirements.unwrap_or_default().resources;
    assert!(!asked.contains_key("remote-objects"), "{asked:?}");
}
