//! Models as Crossplane sends them, and what the tests of the kinds that
//! read one (Model, LLMInference with modelRef, AgentPool) share: the
//! `model` and `model-config` requirements and reading a response.

use function_inference::protocol::fnv1;
use function_inference::protocol::resource::struct_to_json;
use serde_json::{Value, json};

use super::fixtures::Model;
use super::{data, resource};

/// The Model `name` in `team-a` with `spec`.
pub fn model(name: &str, spec: Value) -> Value {
    Model::new(name).spec(spec).build()
}

pub fn llama_8b() -> Value {
    model(
        "llama-8b",
        json!({"weightsURI": "hf://meta-llama/Llama-3.1-8B-Instruct", "size": "16Gi",
               "quantization": "fp16", "parameterCount": "8B", "architecture": "llama",
               "hfTokenSecretRef": {"name": "hf-token"}}),
    )
}

/// A request carrying what Crossplane fetched for the `model` requirement.
pub fn with_model(req: fnv1::RunFunctionRequest, models: Vec<Value>) -> fnv1::RunFunctionRequest {
    super::with_required(req, "model", models)
}

/// The `ModelConfigResolved` condition a response sets once the Model's
/// ConfigMap is read; `message` names it.
pub fn model_config_found(message: &str) -> Option<fnv1::Condition> {
    Some(super::condition(
        "ModelConfigResolved",
        fnv1::Status::ConditionTrue,
        "Found",
        message,
    ))
}

/// The `model` requirement for the Model `llama-8b` in `team-a`.
pub fn requirement() -> Option<fnv1::Requirements> {
    requirement_of("llama-8b")
}

/// The requirements of a pool on `llama-8b` whose model server does not
/// serve yet: the Model and the server's pods (`labels`), to say why.
pub fn requirement_with_pods(labels: &[(&str, &str)]) -> Option<fnv1::Requirements> {
    let mut requirements = requirement().unwrap();
    requirements
        .resources
        .insert("model_server_pods".into(), pods_selector(labels));
    Some(requirements)
}

/// Pods in `team-a` with `labels`, as a requirement asks for them.
pub fn pods_selector(labels: &[(&str, &str)]) -> fnv1::ResourceSelector {
    fnv1::ResourceSelector {
        api_version: "v1".into(),
        kind: "Pod".into(),
        namespace: Some("team-a".into()),
        r#match: Some(fnv1::resource_selector::Match::MatchLabels(
            fnv1::MatchLabels {
                labels: labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            },
        )),
    }
}

/// The `Sized` and `Serving` conditions of an XR waiting for a required
/// resource, after its `ModelResolved` (or `ModelConfigResolved`) one,
/// with nothing composed before.
pub fn waiting_conditions(reason: &str, message: &str) -> Vec<fnv1::Condition> {
    vec![
        sized_waiting(reason, message),
        crate::support::condition("Serving", fnv1::Status::ConditionFalse, reason, message),
    ]
}

/// `Sized` while the XR waits for its Model.
pub fn sized_waiting(reason: &str, message: &str) -> fnv1::Condition {
    crate::support::condition(
        "Sized",
        fnv1::Status::ConditionUnknown,
        reason,
        &format!("cannot size until it is there: {message}"),
    )
}

/// The `model` requirement for the Model `name` in `team-a`.
pub fn requirement_of(name: &str) -> Option<fnv1::Requirements> {
    Some(fnv1::Requirements {
        resources: [(
            "model".to_string(),
            fnv1::ResourceSelector {
                api_version: "infer.dev/v1alpha1".into(),
                kind: "Model".into(),
                namespace: Some("team-a".into()),
                r#match: Some(fnv1::resource_selector::Match::MatchName(name.into())),
            },
        )]
        .into(),
        ..Default::default()
    })
}

pub fn manifest(rsp: &fnv1::RunFunctionResponse, name: &str) -> Value {
    let r = &rsp.desired.as_ref().unwrap().resources[name];
    Value::Object(struct_to_json(r.resource.as_ref().unwrap()))
}

pub fn names(rsp: &fnv1::RunFunctionResponse) -> Vec<String> {
    rsp.desired
        .as_ref()
        .unwrap()
        .resources
        .keys()
        .cloned()
        .collect()
}

pub fn fatals(rsp: &fnv1::RunFunctionResponse) -> Vec<&str> {
    rsp.results
        .iter()
        .filter(|r| r.severity == fnv1::Severity::Fatal as i32)
        .map(|r| r.message.as_str())
        .collect()
}

/// The Model `llama-8b` as the XR being composed, with the status observed.
pub fn model_xr(spec: Value, status: Value) -> Value {
    Model::new("llama-8b").spec(spec).status(status).build()
}

pub fn codellama_config() -> Value {
    serde_json::from_str(&std::fs::read_to_string(data("models/codellama-7b-config.json")).unwrap())
        .unwrap()
}

pub fn config_map(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "team-a"}, "data": data})
}

/// A request carrying what Crossplane fetched for the `model-config` requirement.
pub fn with_config_map(
    mut req: fnv1::RunFunctionRequest,
    maps: Vec<Value>,
) -> fnv1::RunFunctionRequest {
    req.required_resources.insert(
        "model-config".into(),
        fnv1::Resources {
            items: maps.into_iter().map(resource).collect(),
        },
    );
    req
}

pub fn config_map_selector(name: &str) -> fnv1::ResourceSelector {
    fnv1::ResourceSelector {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some("team-a".into()),
        r#match: Some(fnv1::resource_selector::Match::MatchName(name.into())),
    }
}
