//! Inference-aware routing: with a Gateway in the step input, a model
//! server becomes an InferencePool of the pods that serve its API, behind
//! its own endpoint picker, with an HTTPRoute from the Gateway; an
//! ingressHost becomes the route's host instead of an Ingress.

mod support;

use function_inference::protocol::fnv1;
use serde_json::{Value, json};
use support::fixtures::*;
use support::manifests::validate_composed;
use support::refusals::*;
use support::*;

fn gateway_platform(runtime: &str) -> Value {
    json!({"defaults": {"gpuType": "H100-80GB", "runtime": runtime,
        "inferenceGateway": {"name": "inference-gateway", "namespace": "gateway-system"}}})
}

#[test]
fn a_host_is_routed_by_the_gateway_instead_of_an_ingress() {
    let xr = LlmInference::new("chat")
        .model(QWEN)
        .field("ingressHost", json!("chat.example.com"))
        .build();
    let mut req = request("g1", xr);
    req.input = Some(input(gateway_platform("deployment")));
    let rsp = call(&req);
    assert_not_fatal(&rsp.results, "gateway");
    let keys = composed_names(&rsp);
    assert_eq!(
        keys,
        [
            "deployment",
            "endpoint_picker",
            "endpoint_picker_account",
            "endpoint_picker_config",
            "endpoint_picker_role",
            "endpoint_picker_role_binding",
            "endpoint_picker_service",
            "http_route",
            "inference_pool",
            "service",
        ]
    );
    for key in &keys {
        assert_eq!(
            validate_composed(&desired_resource(&rsp, key)),
            Vec::<String>::new(),
            "{key}"
        );
    }
    let route = desired_resource(&rsp, "http_route");
    assert_eq!(route["spec"]["hostnames"], json!(["chat.example.com"]));
    // The OpenAI API alone: vLLM's other paths (/pause, /update_weights,
    // /invocations) take no API key.
    assert_eq!(
        route["spec"]["rules"][0]["matches"],
        json!([{"path": {"type": "PathPrefix", "value": "/v1"}}])
    );
    let endpoint = &desired_status(&rsp)["endpoint"];
    assert_eq!(endpoint["external"], "http://chat.example.com/v1");
    assert_eq!(
        endpoint["gateway"],
        "Gateway gateway-system/inference-gateway for host chat.example.com, HTTPRoute team-a/chat to InferencePool chat"
    );
    let picker = desired_resource(&rsp, "endpoint_picker");
    assert_eq!(
        picker["spec"]["template"]["spec"]["containers"][0]["args"],
        json!([
            "--pool-name",
            "chat",
            "--pool-namespace",
            "team-a",
            "--zap-encoder",
            "json",
            "--config-file",
            "/config/default-plugins.yaml",
            "--tracing=false",
            "--metrics-endpoint-auth=false"
        ])
    );
}

/// vLLM answers to the names of --served-model-name instead of the model's
/// id: the route matches the model header on each of them, and the status
/// names the one vLLM's responses carry, the first.
#[test]
fn a_model_served_under_other_names_is_routed_and_reported_by_them() {
    let route_of = |extra_args: Value| {
        let xr = LlmInference::new("chat")
            .model(QWEN)
            .field("extraArgs", extra_args)
            .build();
        let mut req = request("g5", xr);
        req.input = Some(input(gateway_platform("deployment")));
        let rsp = call(&req);
        assert_not_fatal(&rsp.results, "served names");
        let matches = desired_resource(&rsp, "http_route")["spec"]["rules"][0]["matches"].clone();
        (matches, desired_status(&rsp))
    };
    let by_name = |name: &str| {
        json!({"path": {"type": "PathPrefix", "value": "/v1"},
               "headers": [{"type": "Exact", "name": "X-Gateway-Model-Name", "value": name}]})
    };
    let (matches, status) = route_of(json!([
        "--served-model-name",
        "chat",
        "qwen-7b",
        "--max-num-seqs",
        "64"
    ]));
    assert_eq!(matches, json!([by_name("chat"), by_name("qwen-7b")]));
    assert_eq!(status["model"], "chat");
    assert_eq!(
        status["endpoint"]["gateway"],
        "Gateway gateway-system/inference-gateway for requests whose model is chat or qwen-7b (header \
         X-Gateway-Model-Name, set by the Gateway's body-based router), HTTPRoute team-a/chat to InferencePool chat"
    );
    // argparse keeps the last one given.
    let (matches, status) = route_of(json!([
        "--served-model-name",
        "old",
        "--served-model-name=chat"
    ]));
    assert_eq!(matches, json!([by_name("chat")]));
    assert_eq!(status["model"], "chat");
    let (matches, status) = route_of(json!([]));
    assert_eq!(matches, json!([by_name(QWEN)]));
    assert_eq!(status["model"], QWEN);
}

#[test]
fn a_leader_worker_sets_pool_is_its_leaders() {
    let xr = LlmInference::new("big")
        .model("meta-llama/Llama-3.1-405B-Instruct")
        .gpu_type("A100-80GB")
        .build();
    let mut req = request("g2", xr);
    req.input = Some(input(gateway_platform("leader-worker-set")));
    let rsp = call(&req);
    assert_not_fatal(&rsp.results, "lws");
    assert_eq!(
        desired_resource(&rsp, "inference_pool")["spec"]["selector"]["matchLabels"],
        json!({"leaderworkerset.sigs.k8s.io/name": "big", "role": "leader"})
    );
}

#[test]
fn malformed_gateways_are_refused() {
    Refusals::of(LlmInference::new("bad").model(QWEN).build()).check(vec![
        refusal("gateway name", "input.defaults.inferenceGateway", json!({"name": "Not A Name"}), fatal("InvalidInput", "invalid step input: input.defaults.inferenceGateway.name is \"Not A Name\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example inference-gateway)")),
        refusal("gateway image", "input.defaults.inferenceGateway", json!({"name": "gw", "endpointPickerImage": {"registry": "", "name": "epp"}}), fatal("InvalidInput", "invalid step input: input.defaults.inferenceGateway.endpointPickerImage needs a non-empty registry and name")),
        refusal("gateway unknown field", "input.defaults.inferenceGateway", json!({"name": "gw", "port": 80}), fatal("InvalidInput", "cannot read the step input: input.defaults.inferenceGateway.port: unknown field port; valid fields are name, namespace, endpointPickerImage")),
    ]);
}

#[test]
fn an_xr_can_ask_for_a_gateway_the_platform_does_not_name() {
    let xr = LlmInference::new("chat")
        .model(QWEN)
        .field("gateway", json!({"name": "team-gateway"}))
        .build();
    let rsp = call(&request("g3", xr));
    assert_not_fatal(&rsp.results, "xr gateway");
    let route = desired_resource(&rsp, "http_route");
    assert_eq!(
        route["spec"]["parentRefs"],
        json!([{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "team-gateway"}])
    );
    assert_eq!(
        desired_resource(&rsp, "endpoint_picker")["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry.k8s.io/gateway-api-inference-extension/epp:v1.3.0"
    );
    // Without a Gateway anywhere: the runtime alone, as before.
    let rsp = call(&request(
        "g4",
        LlmInference::new("chat").model(QWEN).build(),
    ));
    assert_eq!(composed_names(&rsp), ["vllm_runtime"]);
}

#[test]
fn routed_says_what_the_gateway_said_of_the_route() {
    let xr = || LlmInference::new("chat").model(QWEN);
    let call_with = |xr: LlmInference, route_status: Option<Value>| {
        let mut req = request("routed", xr.build());
        req.input = Some(input(gateway_platform("deployment")));
        let route = desired_resource(&call(&req), "http_route");
        if let Some(status) = route_status {
            req.observed.as_mut().unwrap().resources = [(
                "http_route".to_string(),
                resource(applied(route, 1, status)),
            )]
            .into();
        }
        call(&req)
    };
    let routed = |rsp: &fnv1::RunFunctionResponse| {
        let c = response_condition(rsp, "Routed").unwrap();
        (c.status, c.reason, c.message.unwrap_or_default())
    };
    let parent = |conditions: Value| {
        json!({"parents": [{
            "parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway",
                          "name": "inference-gateway", "namespace": "gateway-system"},
            "controllerName": "istio.io/gateway-controller",
            "conditions": conditions}]})
    };

    // Not applied yet, or applied with no word from any Gateway controller.
    let silent = (
        fnv1::Status::ConditionUnknown as i32,
        "NotReported".to_string(),
        "no controller of Gateway gateway-system/inference-gateway has reported on HTTPRoute team-a/chat yet \
         (if this lasts, check that the Gateway exists and that a controller with Inference Extension support \
         runs it)"
            .to_string(),
    );
    assert_eq!(routed(&call_with(xr(), None)), silent);
    assert_eq!(routed(&call_with(xr(), Some(json!({})))), silent);
    // Another Gateway's word is not this one's.
    let other = json!({"parents": [{"parentRef": {"name": "other", "namespace": "gateway-system"},
        "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted"}]}]});
    assert_eq!(routed(&call_with(xr(), Some(other))), silent);

    // The listeners do not admit the route's namespace: the controller's words, once, as a warning.
    let refused = parent(json!([
        {"type": "Accepted", "status": "False", "reason": "NotAllowedByListeners",
         "message": "No listener allows routes from namespace team-a"},
        {"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs"}]));
    let rsp = call_with(xr(), Some(refused.clone()));
    let message = "Gateway gateway-system/inference-gateway does not accept HTTPRoute team-a/chat: \
                   No listener allows routes from namespace team-a";
    assert_eq!(
        routed(&rsp),
        (
            fnv1::Status::ConditionFalse as i32,
            "NotAllowedByListeners".into(),
            message.into()
        )
    );
    assert_eq!(rsp.results, vec![warning("NotAllowedByListeners", message)]);
    let said = xr().status(json!({"conditions": [{"type": "Routed", "status": "False",
        "reason": "NotAllowedByListeners", "message": message}]}));
    assert_eq!(
        call_with(said, Some(refused)).results,
        vec![],
        "no second event"
    );

    // Accepted, with no word yet on the pool.
    let pending = parent(json!([{"type": "Accepted", "status": "True", "reason": "Accepted"}]));
    assert_eq!(
        routed(&call_with(xr(), Some(pending))),
        (
            fnv1::Status::ConditionUnknown as i32,
            "NotReported".into(),
            "Gateway gateway-system/inference-gateway has not said yet whether it resolves the backend of \
             HTTPRoute team-a/chat"
                .into()
        )
    );

    // Accepted, but the pool is not a backend the controller knows.
    let unresolved = parent(json!([
        {"type": "Accepted", "status": "True", "reason": "Accepted"},
        {"type": "ResolvedRefs", "status": "False", "reason": "InvalidKind",
         "message": "backendRef chat of kind InferencePool is not supported"}]));
    assert_eq!(
        routed(&call_with(xr(), Some(unresolved))),
        (
            fnv1::Status::ConditionFalse as i32,
            "InvalidKind".into(),
            "Gateway gateway-system/inference-gateway cannot resolve the backend of HTTPRoute team-a/chat: \
             backendRef chat of kind InferencePool is not supported"
                .into()
        )
    );

    let accepted = parent(json!([
        {"type": "Accepted", "status": "True", "reason": "Accepted"},
        {"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs"}]));
    let rsp = call_with(xr(), Some(accepted.clone()));
    assert_eq!(
        routed(&rsp),
        (
            fnv1::Status::ConditionTrue as i32,
            "Accepted".into(),
            "Gateway gateway-system/inference-gateway routes HTTPRoute team-a/chat to its InferencePool".into()
        )
    );
    assert_eq!(rsp.results, vec![]);

    // The route is accepted, but the pool's own status refuses its endpoint
    // picker: the pool's word wins; a pool status that says nothing, or
    // another Gateway's, leaves the route's.
    let with_pool = |pool_status: Value| {
        let mut req = request("routed", xr().build());
        req.input = Some(input(gateway_platform("deployment")));
        let rsp = call(&req);
        let (route, pool) = (
            desired_resource(&rsp, "http_route"),
            desired_resource(&rsp, "inference_pool"),
        );
        req.observed.as_mut().unwrap().resources = [
            (
                "http_route".to_string(),
                resource(applied(route, 1, accepted.clone())),
            ),
            (
                "inference_pool".to_string(),
                resource(applied(pool, 1, pool_status)),
            ),
        ]
        .into();
        call(&req)
    };
    let pool_parent = |gateway: &str, conditions: Value| {
        json!({"parents": [{
            "parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway",
                          "name": gateway, "namespace": "gateway-system"},
            "controllerName": "istio.io/gateway-controller",
            "conditions": conditions}]})
    };
    let no_picker = pool_parent(
        "inference-gateway",
        json!([{"type": "Accepted", "status": "True", "reason": "Accepted"},
               {"type": "ResolvedRefs", "status": "False", "reason": "InvalidExtensionRef",
                "message": "Service chat-epp not found"}]),
    );
    let rsp = with_pool(no_picker.clone());
    let message = "Gateway gateway-system/inference-gateway cannot resolve the endpoint picker of InferencePool \
                   team-a/chat: Service chat-epp not found";
    assert_eq!(
        routed(&rsp),
        (
            fnv1::Status::ConditionFalse as i32,
            "InvalidExtensionRef".into(),
            message.into()
        )
    );
    assert_eq!(rsp.results, vec![warning("InvalidExtensionRef", message)]);
    let routes = (
        fnv1::Status::ConditionTrue as i32,
        "Accepted".to_string(),
        "Gateway gateway-system/inference-gateway routes HTTPRoute team-a/chat to its InferencePool".to_string(),
    );
    assert_eq!(routed(&with_pool(json!({}))), routes);
    assert_eq!(
        routed(&with_pool(pool_parent(
            "other",
            no_picker["parents"][0]["conditions"].clone()
        ))),
        routes
    );

    // The platform drops the Gateway: the XR that was routed is told.
    let mut req = request(
        "routed",
        xr().status(
            json!({"conditions": [{"type": "Routed", "status": "True", "reason": "Accepted"}]}),
        )
        .build(),
    );
    req.input = Some(input(
        json!({"defaults": {"gpuType": "H100-80GB", "runtime": "deployment"}}),
    ));
    assert_eq!(
        routed(&call(&req)),
        (
            fnv1::Status::ConditionFalse as i32,
            "NotRouted".into(),
            "no Gateway is configured and spec.ingressHost is not set: it is reached through its Service".into()
        )
    );
    // An XR that never was routed gets no such condition.
    let mut req = request("routed", xr().build());
    req.input = Some(input(
        json!({"defaults": {"gpuType": "H100-80GB", "runtime": "deployment"}}),
    ));
    assert_eq!(response_condition(&call(&req), "Routed"), None);
}

#[test]
fn routed_says_whether_an_ingress_controller_took_the_ingress() {
    let xr = |class: Option<&str>| {
        let xr = LlmInference::new("chat")
            .model(QWEN)
            .field("ingressHost", json!("chat.example.com"));
        match class {
            Some(class) => xr.field("ingressClassName", json!(class)),
            None => xr,
        }
    };
    let platform = json!({"defaults": {"gpuType": "H100-80GB", "runtime": "deployment"}});
    let call_with = |xr: LlmInference, ingress_status: Option<Value>| {
        let mut req = request("ingress", xr.build());
        req.input = Some(input(platform.clone()));
        let ingress = desired_resource(&call(&req), "ingress");
        if let Some(status) = ingress_status {
            req.observed.as_mut().unwrap().resources =
                [("ingress".to_string(), resource(applied(ingress, 1, status)))].into();
        }
        call(&req)
    };
    let routed = |rsp: &fnv1::RunFunctionResponse| {
        let c = response_condition(rsp, "Routed").unwrap();
        (c.status, c.reason, c.message.unwrap_or_default())
    };
    let no_address = |check: &str| {
        (
            fnv1::Status::ConditionUnknown as i32,
            "NoAddress".to_string(),
            format!(
                "no Ingress controller has given Ingress team-a/chat an address yet (if this lasts, check {check})"
            ),
        )
    };

    // Not applied yet, or applied and no controller took it.
    let nginx = "that IngressClass nginx exists and that its controller runs: kubectl get ingressclass nginx";
    assert_eq!(
        routed(&call_with(xr(Some("nginx")), None)),
        no_address(nginx)
    );
    assert_eq!(
        routed(&call_with(
            xr(Some("nginx")),
            Some(json!({"loadBalancer": {}}))
        )),
        no_address(nginx)
    );
    assert_eq!(
        routed(&call_with(
            xr(None),
            Some(json!({"loadBalancer": {"ingress": [{}]}}))
        )),
        no_address(
            "that the cluster has a default IngressClass and that its controller runs: kubectl get ingressclass"
        )
    );

    // Its controller gave it addresses: an IP, or a load balancer's hostname.
    let rsp = call_with(
        xr(Some("nginx")),
        Some(json!({"loadBalancer": {"ingress": [
            {"ip": "203.0.113.7", "ports": [{"port": 443, "protocol": "TCP"}]},
            {"hostname": "lb-1.example.net"}]}})),
    );
    assert_eq!(
        routed(&rsp),
        (
            fnv1::Status::ConditionTrue as i32,
            "Addressed".into(),
            "its Ingress controller serves Ingress team-a/chat at 203.0.113.7, lb-1.example.net"
                .into()
        )
    );
    assert_eq!(rsp.results, vec![], "no warning either way");
    assert_eq!(
        desired_status(&rsp)["endpoint"]["external"],
        json!("http://chat.example.com/v1")
    );

    // An XR that a Gateway routed and whose platform drops the Gateway is
    // told about its Ingress, not that nothing routes it.
    let routed_before = xr(None).status(
        json!({"conditions": [{"type": "Routed", "status": "True", "reason": "Accepted"}]}),
    );
    assert_eq!(routed(&call_with(routed_before, None)).1, "NoAddress");
}
