//! Malformed input, kind by kind: every case is answered with a FATAL result
//! (or, where noted, a warning) whose message names the field path and what
//! would be valid. Each case states why it is wrong in its name.

mod support;

use bytes::Bytes;
use function_inference::protocol::raw_message::RawStruct;
use function_inference::protocol::{from_wire, full, to_wire};
use serde_json::{Value, json};
use support::*;

const MODEL: &str = "Qwen/Qwen2.5-1.5B-Instruct";

fn xr(spec: Value) -> Value {
    json!({
        "apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference",
        "metadata": {"name": "bad", "namespace": "team-a"},
        "spec": spec,
    })
}

/// A spec with `field` set to `value` on top of a valid one.
fn with(field: &str, value: Value) -> Value {
    let mut spec = json!({"model": MODEL});
    spec[field] = value;
    spec
}

/// One malformed spec: what it is, the spec, and the FATAL result expected.
struct Case {
    name: &'static str,
    spec: Value,
    reason: &'static str,
    message: String,
}

fn case(name: &'static str, spec: Value, reason: &'static str, message: &str) -> Case {
    Case {
        name,
        spec,
        reason,
        message: message.to_string(),
    }
}

#[test]
fn malformed_llm_inference_specs_are_fatal_and_name_the_field_and_what_is_valid() {
    let long = "x".repeat(5000);
    let cases = vec![
        case(
            "spec not an object",
            json!("qwen"),
            "InvalidSpec",
            "spec must be an object; it is the string \"qwen\"",
        ),
        case(
            "spec a list that serde would read by position",
            json!([MODEL]),
            "InvalidSpec",
            "spec must be an object; it is a list",
        ),
        case(
            "spec null",
            Value::Null,
            "InvalidSpec",
            "spec must be an object; it is null",
        ),
        case(
            "modelRef a list that serde would read by position",
            json!({"modelRef": ["llama"]}),
            "InvalidSpec",
            "spec.modelRef must be an object; it is a list",
        ),
        case(
            "image a list that serde would read by position",
            json!({"model": MODEL, "image": ["docker.io", "vllm/vllm-openai:v0.8.0"]}),
            "InvalidSpec",
            "spec.image must be an object; it is a list",
        ),
        case(
            "model and modelRef both set",
            json!({"model": MODEL, "modelRef": {"name": "llama"}}),
            "InvalidSpec",
            "spec.model and spec.modelRef are both set; pick one: model (a Hugging Face id) or modelRef (a Model in this namespace)",
        ),
        case(
            "model a number",
            json!({"model": 7}),
            "InvalidSpec",
            "spec.model: 7 is not a string",
        ),
        case(
            "model empty",
            json!({"model": ""}),
            "InvalidSpec",
            "spec.model is empty; set a Hugging Face model id such as Qwen/Qwen2.5-7B-Instruct",
        ),
        case(
            "model very long",
            json!({"model": long}),
            "InvalidSpec",
            "spec.model is 5000 characters long; use at most 256 (for example Qwen/Qwen2.5-7B-Instruct)",
        ),
        case(
            "model without parameter count",
            json!({"model": "acme/mystery-chat"}),
            "CannotSize",
            "spec.parameterCount: cannot tell how many parameters `acme/mystery-chat` has: it is not in the model catalog and its id carries no size; set parameterCount (for example 8B, 70B or 8x7B)",
        ),
        case(
            "gpu fraction",
            with("gpu", json!(1.5)),
            "InvalidSpec",
            "spec.gpu: 1.5 is not a whole number; use a whole number from 1 to 64",
        ),
        case(
            "gpu zero",
            with("gpu", json!(0)),
            "InvalidSpec",
            "spec.gpu is 0; use a whole number from 1 to 64; omit it to derive the count from the model and GPU type",
        ),
        case(
            "gpu huge",
            with("gpu", json!(1e30)),
            "InvalidSpec",
            "spec.gpu: 1e+30 is out of range; use a whole number from 1 to 64",
        ),
        case(
            "gpu NaN",
            with("gpu", json!("NaN")),
            "InvalidSpec",
            "spec.gpu: the string \"NaN\" is not a whole number; use a whole number from 1 to 64",
        ),
        case(
            "gpu 65",
            with("gpu", json!(65)),
            "InvalidSpec",
            "spec.gpu is 65; use a whole number from 1 to 64; omit it to derive the count from the model and GPU type",
        ),
        case(
            "maxModelLen negative",
            with("maxModelLen", json!(-1)),
            "InvalidSpec",
            "spec.maxModelLen is -1; use a whole number from 256 to 10485760 tokens; omit it to derive the longest context that fits",
        ),
        case(
            "maxModelLen huge",
            with("maxModelLen", json!(1e30)),
            "InvalidSpec",
            "spec.maxModelLen: 1e+30 is out of range; use a whole number from 256 to 10485760",
        ),
        case(
            "maxModelLen string",
            with("maxModelLen", json!("32k")),
            "InvalidSpec",
            "spec.maxModelLen: the string \"32k\" is not a whole number; use a whole number from 256 to 10485760",
        ),
        case(
            "gpuType unknown",
            with("gpuType", json!("Z9000")),
            "CannotSize",
            "spec.gpuType: unknown GPU type `Z9000`: known GPU types are T4, V100, V100-PCIe, V100-32GB, V100-32GB-PCIe, L4, A10G, L40S, A30, A100-40GB, A100-40GB-PCIe, A100-80GB, A100-80GB-PCIe, H100-80GB, H100-PCIe, H100-NVL, H20, H200, H200-NVL, B200, GB200, B300, GH200, RTX-PRO-6000, MI300X, MI325X",
        ),
        case(
            "gpuType empty",
            with("gpuType", json!("")),
            "InvalidSpec",
            "spec.gpuType is empty; set it (for example L4, A100-80GB or H100-80GB) or omit it",
        ),
        case(
            "gpuType long",
            with("gpuType", json!(long)),
            "InvalidSpec",
            "spec.gpuType is 5000 characters long; use at most 64 (for example L4, A100-80GB or H100-80GB)",
        ),
        case(
            "quantization unknown",
            with("quantization", json!("int3")),
            "InvalidSpec",
            "spec.quantization is \"int3\"; use auto, fp32, bf16, fp16, fp8, int8, int4 or fp4",
        ),
        case(
            "quantization number",
            with("quantization", json!(8)),
            "InvalidSpec",
            "spec.quantization: 8 is not a string",
        ),
        case(
            "migProfile unknown",
            json!({"model": MODEL, "gpuType": "A100-80GB", "migProfile": "5g.99gb"}),
            "CannotSize",
            "spec.migProfile: A100-80GB has no MIG profile `5g.99gb`: its profiles are 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb",
        ),
        case(
            "migProfile on L4",
            json!({"model": MODEL, "migProfile": "1g.10gb"}),
            "CannotSize",
            "spec.migProfile: L4 has no MIG: use mig none, or a GPU with MIG (A30, A100-40GB, A100-40GB-PCIe, A100-80GB, A100-80GB-PCIe, H100-80GB, H100-PCIe, H100-NVL, H20, H200, H200-NVL, B200, GB200, B300, GH200, RTX-PRO-6000)",
        ),
        case(
            "parameterCount 1e30B",
            json!({"model": "acme/mystery-chat", "parameterCount": "1e30B"}),
            "CannotSize",
            "spec.parameterCount: invalid parameter count `1e30B`: it is not a number with a unit; write it like 500M, 8B, 70B, 8x7B or 1.5T",
        ),
        case(
            "parameterCount negative",
            json!({"model": "acme/mystery-chat", "parameterCount": "-7B"}),
            "CannotSize",
            "spec.parameterCount: invalid parameter count `-7B`: it is not a number with a unit; write it like 500M, 8B, 70B, 8x7B or 1.5T",
        ),
        case(
            "parameterCount zero",
            json!({"model": "acme/mystery-chat", "parameterCount": "0B"}),
            "CannotSize",
            "spec.parameterCount: invalid parameter count `0B`: it must be a positive number; write it like 500M, 8B, 70B, 8x7B or 1.5T",
        ),
        case(
            "parameterCount huge",
            json!({"model": "acme/mystery-chat", "parameterCount": "99999999999T"}),
            "CannotSize",
            "spec.parameterCount: invalid parameter count `99999999999T`: it is larger than 100T; write it like 500M, 8B, 70B, 8x7B or 1.5T",
        ),
        case(
            "parameterCount words",
            json!({"model": "acme/mystery-chat", "parameterCount": "seven billion"}),
            "CannotSize",
            "spec.parameterCount: invalid parameter count `seven billion`: it is not a number with a unit; write it like 500M, 8B, 70B, 8x7B or 1.5T",
        ),
        case(
            "replicas negative",
            with("replicas", json!(-1)),
            "InvalidSpec",
            "spec.replicas is -1; use a whole number from 0 to 100",
        ),
        case(
            "replicas bool",
            with("replicas", json!(true)),
            "InvalidSpec",
            "spec.replicas: true is not a whole number; use a whole number from 0 to 100",
        ),
        case(
            "modelRef no name",
            json!({"modelRef": {}}),
            "InvalidSpec",
            "spec.modelRef: name is required",
        ),
        case(
            "hfTokenSecretRef configmap",
            with(
                "hfTokenSecretRef",
                json!({"name": "hf", "kind": "ConfigMap"}),
            ),
            "InvalidSpec",
            "spec.hfTokenSecretRef.kind: unknown field kind; valid fields are name or key",
        ),
        case(
            "hfTokenSecretRef empty name",
            with("hfTokenSecretRef", json!({"name": ""})),
            "InvalidSpec",
            "spec.hfTokenSecretRef.name is \"\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example hf-token)",
        ),
        case(
            "image missing name",
            with("image", json!({"registry": "docker.io"})),
            "InvalidSpec",
            "spec.image: name is required",
        ),
        case(
            "image empty",
            with("image", json!({"registry": "", "name": ""})),
            "InvalidSpec",
            "spec.image.registry is empty; set it (for example docker.io) or omit it",
        ),
        case(
            "ingressHost invalid",
            with("ingressHost", json!("not a host!")),
            "InvalidSpec",
            "spec.ingressHost is \"not a host!\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example qwen.example.com)",
        ),
        case(
            "ingressHost long",
            with("ingressHost", json!(long)),
            "InvalidSpec",
            "spec.ingressHost is \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"... (5000 characters); use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example qwen.example.com)",
        ),
        case(
            "tls without secretName",
            json!({"model": MODEL, "ingressHost": "a.example.com", "tls": {}}),
            "InvalidSpec",
            "spec.tls: secretName is required",
        ),
        case(
            "extraArgs not list",
            with("extraArgs", json!("--x")),
            "InvalidSpec",
            "spec.extraArgs: the string \"--x\" is not a list",
        ),
        case(
            "extraArgs numbers",
            with("extraArgs", json!([1])),
            "InvalidSpec",
            "spec.extraArgs[0]: 1 is not a string",
        ),
        case(
            "providerConfigName empty",
            with("providerConfigName", json!("")),
            "InvalidSpec",
            "spec.providerConfigName is \"\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example incluster)",
        ),
        case(
            "targetNamespace invalid",
            json!({"model": MODEL, "providerConfigName": "pc", "targetNamespace": "Not_A_Namespace"}),
            "InvalidSpec",
            "spec.targetNamespace is \"Not_A_Namespace\"; use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit (for example inference)",
        ),
        case(
            "objective unknown",
            with("objective", json!("fast")),
            "InvalidSpec",
            "spec.objective: \"fast\" is not valid; use one of minimal, balanced, throughput",
        ),
        case(
            "kvCacheDtype unknown",
            with("kvCacheDtype", json!("int8")),
            "InvalidSpec",
            "spec.kvCacheDtype: \"int8\" is not valid; use one of auto or fp8",
        ),
        case(
            "unknown field",
            with("gpus", json!(2)),
            "InvalidSpec",
            "spec.gpus: unknown field gpus; valid fields are model, modelRef, gpu, gpuType, quantization, maxModelLen, parameterCount, migProfile, kvCacheDtype, objective, replicas, hfTokenSecretRef, runtime, image, ingressHost, ingressClassName, tls, extraArgs, providerConfigName, targetNamespace, crossplane",
        ),
    ];
    assert!(cases.len() >= 20);
    for c in cases {
        // Resources composed on an earlier call are observed: a FATAL result
        // makes Crossplane stop before applying anything, so they stay.
        let mut req = request("bad", xr(c.spec.clone()));
        req.desired = Some(earlier_desired());
        let rsp = call(&req);
        assert_eq!(
            rsp,
            refused_keeping_earlier("bad", c.reason, &c.message),
            "case {:?}",
            c.name
        );
        assert!(
            c.message.starts_with("spec"),
            "case {:?}: the message names the field: {}",
            c.name,
            c.message
        );
        assert!(
            c.message.len() < 400,
            "case {:?}: long values are not echoed: {}",
            c.name,
            c.message
        );
    }
}

#[test]
fn malformed_step_inputs_are_fatal_and_name_the_field_and_what_is_valid() {
    let cases = vec![
        case(
            "input apiVersion",
            json!({"apiVersion": "inference.fn.crossplane.io/v1"}),
            "InvalidInput",
            "invalid step input: input.apiVersion is \"inference.fn.crossplane.io/v1\"; expected \"inference.fn.crossplane.io/v1beta1\"",
        ),
        case(
            "input kind",
            json!({"kind": "Inputs"}),
            "InvalidInput",
            "invalid step input: input.kind is \"Inputs\"; expected \"Input\"",
        ),
        case(
            "ttl number",
            json!({"ttl": 60}),
            "InvalidInput",
            "cannot read the step input: input.ttl: 60 is not a duration; use one such as 60s, 5m or 1h30m",
        ),
        case(
            "ttl words",
            json!({"ttl": "soon"}),
            "InvalidInput",
            "cannot read the step input: input.ttl: \"soon\" is not a duration; use one such as 60s, 5m or 1h30m",
        ),
        case(
            "ttl negative",
            json!({"ttl": "-5s"}),
            "InvalidInput",
            "invalid step input: input.ttl is negative (-5s); use a positive duration such as 60s",
        ),
        case(
            "ttl zero",
            json!({"ttl": "0s"}),
            "InvalidInput",
            "invalid step input: input.ttl must be at least 1s",
        ),
        case(
            "defaults not object",
            json!({"defaults": "L4"}),
            "InvalidInput",
            "cannot read the step input: input.defaults: the string \"L4\" is not an object",
        ),
        case(
            "default gpuType unknown",
            json!({"defaults": {"gpuType": "Z9000"}}),
            "CannotSize",
            "input.defaults.gpuType: unknown GPU type `Z9000`: known GPU types are T4, V100, V100-PCIe, V100-32GB, V100-32GB-PCIe, L4, A10G, L40S, A30, A100-40GB, A100-40GB-PCIe, A100-80GB, A100-80GB-PCIe, H100-80GB, H100-PCIe, H100-NVL, H20, H200, H200-NVL, B200, GB200, B300, GH200, RTX-PRO-6000, MI300X, MI325X",
        ),
        case(
            "offeredGpuTypes empty",
            json!({"defaults": {"offeredGpuTypes": []}}),
            "InvalidInput",
            "invalid step input: input.defaults.offeredGpuTypes is empty; list at least one GPU type",
        ),
        case(
            "offeredGpuTypes string",
            json!({"defaults": {"offeredGpuTypes": "L4"}}),
            "InvalidInput",
            "cannot read the step input: input.defaults.offeredGpuTypes: the string \"L4\" is not a list",
        ),
        case(
            "image empty registry",
            json!({"defaults": {"image": {"registry": "", "name": "x"}}}),
            "InvalidInput",
            "invalid step input: input.defaults.image needs a non-empty registry and name",
        ),
        case(
            "gpuMemoryUtilization 2",
            json!({"defaults": {"gpuMemoryUtilization": 2}}),
            "InvalidInput",
            "invalid step input: input.defaults.gpuMemoryUtilization is 2; use a value from 0.1 to 0.99",
        ),
        case(
            "gpuMemoryUtilization NaN",
            json!({"defaults": {"gpuMemoryUtilization": "NaN"}}),
            "InvalidInput",
            "cannot read the step input: input.defaults.gpuMemoryUtilization: the string \"NaN\" is not a number",
        ),
        case(
            "gpuNodeSelector string",
            json!({"defaults": {"gpuNodeSelector": "yes"}}),
            "InvalidInput",
            "cannot read the step input: input.defaults.gpuNodeSelector: the string \"yes\" is not true or false",
        ),
        case(
            "providerConfigKind unknown",
            json!({"defaults": {"providerConfigKind": "Cluster"}}),
            "InvalidInput",
            "cannot read the step input: input.defaults.providerConfigKind: \"Cluster\" is not valid; use one of ProviderConfig or ClusterProviderConfig",
        ),
        case(
            "vllmVersion not a release",
            json!({"defaults": {"vllmVersion": "latest"}}),
            "InvalidInput",
            "invalid step input: input.defaults.vllmVersion is \"latest\"; use the vLLM release the image runs, such as 0.19.0",
        ),
        case(
            "objective unknown",
            json!({"defaults": {"objective": "cheap"}}),
            "InvalidInput",
            "cannot read the step input: input.defaults.objective: \"cheap\" is not valid; use one of minimal, balanced, throughput",
        ),
        case(
            "unknown field",
            json!({"default": {}}),
            "InvalidInput",
            "cannot read the step input: input.default: unknown field default; valid fields are apiVersion, kind, metadata, ttl, defaults",
        ),
    ];
    for c in cases {
        let mut req = request("bad", xr(json!({"model": MODEL})));
        let mut v = json!({"apiVersion": INPUT_API_VERSION, "kind": "Input"});
        v.as_object_mut()
            .unwrap()
            .extend(c.spec.as_object().unwrap().clone());
        req.input = Some(object(v));
        req.desired = Some(earlier_desired());
        let rsp = call(&req);
        assert_eq!(
            rsp.results,
            vec![fatal(c.reason, &c.message)],
            "case {:?}",
            c.name
        );
        assert_eq!(rsp.desired, Some(earlier_desired()), "case {:?}", c.name);
        assert!(
            c.message.contains("input."),
            "case {:?}: names the field",
            c.name
        );
    }
}

#[test]
fn a_step_input_that_is_not_a_struct_is_fatal_and_keeps_earlier_steps() {
    // The server keeps the input as bytes until it reads it, so bytes that
    // are no Struct reach the function rather than failing the whole call.
    let mut req = request("bad", xr(json!({"model": MODEL})));
    req.desired = Some(earlier_desired());
    let mut wire = to_wire(&req);
    // A map entry (field 1) whose declared length runs past the message.
    wire.input = Some(RawStruct::from(Bytes::from_static(&[0x0a, 0x05, 0x0a])));
    let rsp = from_wire(&function_inference::function::run_function(wire).response).unwrap();
    assert_eq!(
        rsp.results,
        vec![fatal(
            "InvalidInput",
            "cannot decode the step input: failed to decode Protobuf message: \
             Struct.fields: buffer underflow"
        )]
    );
    assert_eq!(rsp.desired, Some(earlier_desired()));
}

/// Sets (or with `null`, removes) the field at a dotted path.
fn set(v: &mut Value, path: &str, x: Value) {
    let parts: Vec<&str> = path.split('.').collect();
    let (last, parents) = parts.split_last().unwrap();
    let mut cur = v;
    for p in parents {
        cur = &mut cur[*p];
    }
    if x.is_null() {
        cur.as_object_mut().unwrap().remove(*last);
    } else {
        cur[*last] = x;
    }
}

/// Runs each `(name, field path, value, expected result)` against the
/// example XR at `path`, with `required` given as Crossplane would.
fn run_table(path: &str, required: Option<Value>, cases: Vec<(&str, &str, Value, full::Result)>) {
    assert!(cases.len() >= 20, "{path}: at least twenty cases");
    for (name, field, value, want) in cases {
        let mut xr = example(path);
        set(&mut xr, field, value);
        let mut req = request("bad", xr);
        req.desired = Some(earlier_desired());
        if let Some(m) = &required {
            req.required_resources.insert(
                "model".into(),
                full::Resources {
                    items: vec![resource(m.clone())],
                },
            );
        }
        let rsp = call(&req);
        assert!(
            rsp.results.contains(&want),
            "case {name:?}: want {want:?}, got {:?}",
            rsp.results
        );
        assert!(
            want.message.starts_with("spec"),
            "case {name:?} names the field: {}",
            want.message
        );
        assert!(
            want.message.len() < 400,
            "case {name:?}: long values are not echoed"
        );
        let desired = rsp.desired.unwrap();
        for (k, r) in &earlier_desired().resources {
            assert_eq!(desired.resources.get(k), Some(r), "case {name:?}: {k} kept");
        }
        if want.severity == full::Severity::Fatal as i32 {
            assert_eq!(
                desired.resources.len(),
                earlier_desired().resources.len(),
                "case {name:?}: a refusal composes nothing"
            );
        }
    }
}

#[test]
fn malformed_models_are_fatal_and_name_the_field_and_what_is_valid() {
    let long = "x".repeat(5000);
    run_table(
        "examples/configuration/agents/model.yaml",
        None,
        vec![
            (
                "weightsURI missing",
                "spec.weightsURI",
                Value::Null,
                fatal("InvalidSpec", "spec: weightsURI is required"),
            ),
            (
                "weightsURI number",
                "spec.weightsURI",
                json!(7),
                fatal("InvalidSpec", "spec.weightsURI: 7 is not a string"),
            ),
            (
                "weightsURI empty",
                "spec.weightsURI",
                json!(""),
                fatal(
                    "InvalidSpec",
                    "spec.weightsURI is empty; set it (for example hf://meta-llama/Llama-3.1-8B-Instruct) or omit it",
                ),
            ),
            (
                "weightsURI scheme",
                "spec.weightsURI",
                json!("ftp://x/y"),
                fatal(
                    "InvalidSpec",
                    "spec.weightsURI has scheme ftp://; use hf://, s3://, gs://, https:// or pvc://",
                ),
            ),
            (
                "weightsURI long",
                "spec.weightsURI",
                json!(format!("hf://{long}")),
                fatal(
                    "InvalidSpec",
                    "spec.weightsURI is 5005 characters long; use at most 1024 (for example hf://meta-llama/Llama-3.1-8B-Instruct)",
                ),
            ),
            (
                "size bad quantity",
                "spec.size",
                json!("sixteen gigs"),
                fatal(
                    "InvalidSpec",
                    "spec.size: \"sixteen gigs\" is not a quantity; write one like 16Gi, 40G or 500Mi",
                ),
            ),
            (
                "size negative",
                "spec.size",
                json!("-16Gi"),
                fatal(
                    "InvalidSpec",
                    "spec.size: \"-16Gi\" is not a quantity; write one like 16Gi, 40G or 500Mi",
                ),
            ),
            (
                "size huge",
                "spec.size",
                json!("1e30Gi"),
                fatal(
                    "InvalidSpec",
                    "spec.size: \"1e30Gi\" has an unknown unit \"e30Gi\"; use Ki, Mi, Gi, Ti (or k, M, G, T)",
                ),
            ),
            (
                "quantization unknown",
                "spec.quantization",
                json!("int3"),
                fatal(
                    "InvalidSpec",
                    "spec.quantization: \"int3\" is not valid; use one of fp32, bf16, fp16, fp8, int8, int4, fp4, none",
                ),
            ),
            (
                "parameterCount 1e30B",
                "spec.parameterCount",
                json!("1e30B"),
                fatal(
                    "InvalidSpec",
                    "spec.parameterCount: invalid parameter count `1e30B`: it is not a number with a unit; write it like 500M, 8B, 70B, 8x7B or 1.5T",
                ),
            ),
            (
                "parameterCount zero",
                "spec.parameterCount",
                json!("0B"),
                fatal(
                    "InvalidSpec",
                    "spec.parameterCount: invalid parameter count `0B`: it must be a positive number; write it like 500M, 8B, 70B, 8x7B or 1.5T",
                ),
            ),
            (
                "parameterCount number",
                "spec.parameterCount",
                json!(8),
                fatal("InvalidSpec", "spec.parameterCount: 8 is not a string"),
            ),
            (
                "shardSpec strategy short name",
                "spec.shardSpec",
                json!({"count": 0, "strategy": "tensor"}),
                fatal(
                    "InvalidSpec",
                    "spec.shardSpec.strategy: \"tensor\" is not valid; use one of tensor-parallel, pipeline-parallel, data-parallel",
                ),
            ),
            (
                "shardSpec count huge",
                "spec.shardSpec",
                json!({"count": 1e30, "strategy": "tensor"}),
                fatal(
                    "InvalidSpec",
                    "spec.shardSpec.count: 1e+30 is out of range for a whole number",
                ),
            ),
            (
                "shardSpec strategy unknown",
                "spec.shardSpec",
                json!({"count": 2, "strategy": "diagonal"}),
                fatal(
                    "InvalidSpec",
                    "spec.shardSpec.strategy: \"diagonal\" is not valid; use one of tensor-parallel, pipeline-parallel, data-parallel",
                ),
            ),
            (
                "cachePolicy priority unknown",
                "spec.cachePolicy.priority",
                json!("urgent"),
                fatal(
                    "InvalidSpec",
                    "spec.cachePolicy.priority: \"urgent\" is not valid; use one of critical, high, medium, low",
                ),
            ),
            (
                "cachePolicy pinDuration bad",
                "spec.cachePolicy.pinDuration",
                json!("forever"),
                fatal(
                    "InvalidSpec",
                    "spec.cachePolicy.pinDuration: \"forever\" is not a duration; write one like 500ms, 30s, 5m, 2h or 1d",
                ),
            ),
            (
                "evictionPolicy unknown",
                "spec.cachePolicy.evictionPolicy",
                json!("sometimes"),
                fatal(
                    "InvalidSpec",
                    "spec.cachePolicy.evictionPolicy: \"sometimes\" is not valid; use one of never, idle, low-priority",
                ),
            ),
            (
                "hfTokenSecretRef configmap",
                "spec.hfTokenSecretRef",
                json!({"name": "hf", "kind": "ConfigMap"}),
                fatal(
                    "InvalidSpec",
                    "spec.hfTokenSecretRef.kind: unknown field kind; valid fields are name or key",
                ),
            ),
            (
                "hfTokenSecretRef empty name",
                "spec.hfTokenSecretRef",
                json!({"name": ""}),
                fatal(
                    "InvalidSpec",
                    "spec.hfTokenSecretRef.name is \"\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example hf-token)",
                ),
            ),
            (
                "architecture long",
                "spec.architecture",
                json!(long),
                fatal(
                    "InvalidSpec",
                    "spec.architecture is 5000 characters long; use at most 64 (for example llama)",
                ),
            ),
            (
                "config not an object",
                "spec.config",
                json!("see config.json"),
                fatal(
                    "InvalidSpec",
                    "spec.config is not an object; give the content of the model's config.json",
                ),
            ),
            (
                "config describes no language model",
                "spec.config",
                json!({"model_type": "llama", "hidden_size": 4096}),
                fatal(
                    "InvalidSpec",
                    "spec.config: config.json has no num_hidden_layers (nor under text_config): it does not describe a language model sizing can read",
                ),
            ),
            (
                "config too large",
                "spec.config",
                json!({"num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096, "padding": "x".repeat(300 * 1024)}),
                fatal(
                    "InvalidSpec",
                    "spec.config is 301 KiB; a config.json is a few KiB (at most 256 KiB accepted): give the model's config.json, not its weights or tokenizer",
                ),
            ),
            (
                "configFrom name invalid",
                "spec.configFrom",
                json!({"configMapRef": {"name": "Llama_Config"}}),
                fatal(
                    "InvalidSpec",
                    "spec.configFrom.configMapRef.name is \"Llama_Config\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example llama-config)",
                ),
            ),
            (
                "weightsIndex zero",
                "spec.weightsIndex",
                json!({"totalSize": 0}),
                fatal(
                    "InvalidSpec",
                    "spec.weightsIndex.totalSize is 0; use the bytes in metadata.total_size of model.safetensors.index.json",
                ),
            ),
            (
                "unknown field",
                "spec.weights",
                json!("hf://x"),
                fatal(
                    "InvalidSpec",
                    "spec.weights: unknown field weights; valid fields are weightsURI, size, quantization, shardSpec, cachePolicy, format, architecture, parameterCount, hfTokenSecretRef, config, weightsIndex, configFrom, kvCacheDtype, objective, crossplane",
                ),
            ),
            (
                "spec list",
                "spec",
                json!([]),
                fatal("InvalidSpec", "spec must be an object; it is a list"),
            ),
            (
                "cachePolicy too large for a ConfigMap",
                "spec.cachePolicy",
                json!({"priority": "high", "preloadNodes": ["n".repeat(1 << 20)]}),
                fatal(
                    "ConfigTooLarge",
                    "spec.cachePolicy (about 1048615 bytes) makes the model card ConfigMap 1058418 bytes, more than \
                     the 1048576 bytes a ConfigMap holds; shorten it",
                ),
            ),
            (
                "weightsURI over the schema's 1024 characters",
                "spec.weightsURI",
                json!(format!("hf://org/{}", "w".repeat(1100))),
                fatal(
                    "InvalidSpec",
                    "spec.weightsURI is 1109 characters long; use at most 1024 (for example hf://meta-llama/Llama-3.1-8B-Instruct)",
                ),
            ),
            (
                "shardSpec a list that serde would read by position",
                "spec.shardSpec",
                json!([2, "tensor-parallel"]),
                fatal(
                    "InvalidSpec",
                    "spec.shardSpec must be an object; it is a list",
                ),
            ),
        ],
    );
}

#[test]
fn malformed_agent_pools_are_refused_and_name_the_field_and_what_is_valid() {
    let long = "x".repeat(5000);
    run_table(
        "examples/configuration/agents/agentpool.yaml",
        Some(example("examples/configuration/agents/model.yaml")),
        vec![
            (
                "image missing",
                "spec.image",
                Value::Null,
                fatal("InvalidSpec", "spec: image is required"),
            ),
            (
                "image empty",
                "spec.image",
                json!(""),
                fatal(
                    "InvalidSpec",
                    "spec.image is empty; set the agent runtime image",
                ),
            ),
            (
                "image long",
                "spec.image",
                json!(long),
                fatal(
                    "InvalidSpec",
                    "spec.image is 5000 characters long; use at most 512 (for example ghcr.io/example/agent-runtime:1.0)",
                ),
            ),
            (
                "port zero",
                "spec.port",
                json!(0),
                fatal("InvalidSpec", "spec.port is 0; use 1 to 65535"),
            ),
            (
                "port huge",
                "spec.port",
                json!(70000),
                fatal("InvalidSpec", "spec.port is 70000; use 1 to 65535"),
            ),
            (
                "port fraction",
                "spec.port",
                json!(80.5),
                fatal("InvalidSpec", "spec.port: 80.5 is not a whole number"),
            ),
            (
                "minReplicas negative",
                "spec.minReplicas",
                json!(-1),
                fatal("InvalidSpec", "spec.minReplicas is -1; use 0 to 1000"),
            ),
            (
                "maxReplicas below min",
                "spec.maxReplicas",
                json!(1),
                fatal(
                    "InvalidSpec",
                    "spec.minReplicas 2 exceeds spec.maxReplicas 1",
                ),
            ),
            (
                "maxReplicas 1e30",
                "spec.maxReplicas",
                json!(1e30),
                fatal(
                    "InvalidSpec",
                    "spec.maxReplicas: 1e+30 is out of range for a whole number",
                ),
            ),
            (
                "prewarmPercent 150",
                "spec.prewarmPercent",
                json!(150),
                fatal("InvalidSpec", "spec.prewarmPercent is 150; use 0 to 100"),
            ),
            (
                "tokensPerSecondBudget negative",
                "spec.tokensPerSecondBudget",
                json!(-5),
                fatal(
                    "InvalidSpec",
                    "spec.tokensPerSecondBudget is -5; use at least 1",
                ),
            ),
            (
                "temperature NaN",
                "spec.agentClass.temperature",
                json!("NaN"),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.temperature: the string \"NaN\" is not a number",
                ),
            ),
            (
                "temperature 5",
                "spec.agentClass.temperature",
                json!(5),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.temperature is 5; use 0 to 2",
                ),
            ),
            (
                "temperature negative",
                "spec.agentClass.temperature",
                json!(-0.5),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.temperature is -0.5; use 0 to 2",
                ),
            ),
            (
                "maxTokens zero",
                "spec.agentClass.maxTokens",
                json!(0),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.maxTokens is 0; use a whole number of at least 1, or omit it",
                ),
            ),
            (
                "maxTokens huge",
                "spec.agentClass.maxTokens",
                json!(1e30),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.maxTokens: 1e+30 is out of range for a whole number",
                ),
            ),
            (
                "maxContextLength string",
                "spec.agentClass.maxContextLength",
                json!("16k"),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.maxContextLength: the string \"16k\" is not a whole number",
                ),
            ),
            (
                "modelRef missing name",
                "spec.agentClass.modelRef",
                json!({}),
                fatal("InvalidSpec", "spec.agentClass.modelRef: name is required"),
            ),
            (
                "modelRef empty name",
                "spec.agentClass.modelRef",
                json!({"name": ""}),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.modelRef.name is empty; name a Model in the AgentPool's namespace",
                ),
            ),
            (
                "memory credential in configmap",
                "spec.agentClass.memoryConfig",
                json!({"type": "redis", "connectionString": "redis://:pw@redis:6379"}),
                fatal(
                    "CredentialInConfig",
                    "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead",
                ),
            ),
            (
                "memory password with spaces",
                "spec.agentClass.memoryConfig",
                json!({"type": "postgres", "connectionString": "host=db user=agent password = pw dbname=m"}),
                fatal(
                    "CredentialInConfig",
                    "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead",
                ),
            ),
            (
                "memory ADO.NET password",
                "spec.agentClass.memoryConfig",
                json!({"type": "postgres", "connectionString": "Server=db;User Id=agent;Password=x;"}),
                fatal(
                    "CredentialInConfig",
                    "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead",
                ),
            ),
            (
                "memory api_key parameter",
                "spec.agentClass.memoryConfig",
                json!({"type": "postgres", "connectionString": "rediss://redis:6380?api_key=k"}),
                fatal(
                    "CredentialInConfig",
                    "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead",
                ),
            ),
            (
                "memory access_token parameter",
                "spec.agentClass.memoryConfig",
                json!({"type": "postgres", "connectionString": "https://mem.example.com/v1?access_token=t"}),
                fatal(
                    "CredentialInConfig",
                    "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead",
                ),
            ),
            (
                "memory sslpassword",
                "spec.agentClass.memoryConfig",
                json!({"type": "postgres", "connectionString": "host=db sslpassword=x"}),
                fatal(
                    "CredentialInConfig",
                    "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead",
                ),
            ),
            (
                "memory userinfo without scheme",
                "spec.agentClass.memoryConfig",
                json!({"type": "postgres", "connectionString": "agent:pw@db:5432/memory"}),
                fatal(
                    "CredentialInConfig",
                    "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead",
                ),
            ),
            (
                "guardrail authorization key",
                "spec.agentClass.guardrails",
                json!([{"type": "content-filter", "action": "block", "config": {"authorization": "x"}}]),
                fatal(
                    "CredentialInConfig",
                    "spec.agentClass.guardrails[0].config.authorization looks like a credential, which would land in a ConfigMap; put it in a Secret and pass it with spec.env valueFrom.secretKeyRef",
                ),
            ),
            (
                "guardrail auth key",
                "spec.agentClass.guardrails",
                json!([{"type": "content-filter", "action": "block", "config": {"auth": "x"}}]),
                fatal(
                    "CredentialInConfig",
                    "spec.agentClass.guardrails[0].config.auth looks like a credential, which would land in a ConfigMap; put it in a Secret and pass it with spec.env valueFrom.secretKeyRef",
                ),
            ),
            (
                "guardrail accessKey",
                "spec.agentClass.guardrails",
                json!([{"type": "content-filter", "action": "block", "config": {"accessKey": "x"}}]),
                fatal(
                    "CredentialInConfig",
                    "spec.agentClass.guardrails[0].config.accessKey looks like a credential, which would land in a ConfigMap; put it in a Secret and pass it with spec.env valueFrom.secretKeyRef",
                ),
            ),
            (
                "guardrail password in a URL value",
                "spec.agentClass.guardrails",
                json!([{"type": "content-filter", "action": "block", "config": {"endpoint": "https://u:p@filter.example.com"}}]),
                fatal(
                    "CredentialInConfig",
                    "spec.agentClass.guardrails[0].config.endpoint holds a credential (a password in a URL or a secret key=value pair), which would land in a ConfigMap; put it in a Secret and pass it with spec.env valueFrom.secretKeyRef",
                ),
            ),
            (
                "memory type unknown",
                "spec.agentClass.memoryConfig.type",
                json!("floppy"),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.memoryConfig.type: \"floppy\" is not valid; use one of ephemeral, redis, memcached, postgres",
                ),
            ),
            (
                "memory ttl bad",
                "spec.agentClass.memoryConfig.ttl",
                json!("a while"),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.memoryConfig.ttl: \"a while\" is not a duration; write one like 500ms, 30s, 5m, 2h or 1d",
                ),
            ),
            (
                "slo ttft bad",
                "spec.agentClass.slo.ttft",
                json!("fast"),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.slo.ttft: \"fast\" is not a duration; write one like 500ms, 30s, 5m, 2h or 1d",
                ),
            ),
            (
                "tool timeout bad",
                "spec.agentClass.toolPermissions",
                json!([{"name": "x", "timeout": "soon"}]),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.toolPermissions[0].timeout: \"soon\" is not a duration; write one like 500ms, 30s, 5m, 2h or 1d",
                ),
            ),
            (
                "rateLimit bad",
                "spec.agentClass.toolPermissions",
                json!([{"name": "x", "rateLimit": "lots"}]),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.toolPermissions[0].rateLimit is \"lots\"; write it like 100/min, 10/s or 1000/h",
                ),
            ),
            (
                "guardrail action unknown",
                "spec.agentClass.guardrails",
                json!([{"type": "pii-detection", "action": "explode"}]),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.guardrails[0].action: \"explode\" is not valid; use one of block, redact, warn, log",
                ),
            ),
            (
                "autoscaling metric unknown",
                "spec.autoscaling.metrics",
                json!([{"type": "vibes", "target": "1"}]),
                warning(
                    "AgentPoolWarning",
                    "spec.autoscaling.metrics[0].type \"vibes\" has no HorizontalPodAutoscaler mapping and is not applied; use concurrent-sessions, tokens-in-queue, queue-depth, tokens-per-second, tool-call-rate, context-length, ttft-p95, cpu or memory",
                ),
            ),
            (
                "gpu count 1e30",
                "spec.gpuRequirements.count",
                json!(1e30),
                fatal(
                    "InvalidSpec",
                    "spec.gpuRequirements.count: 1e+30 is out of range for a whole number",
                ),
            ),
            (
                "gpu type unknown",
                "spec.gpuRequirements.type",
                json!("Z9000"),
                fatal(
                    "CannotSize",
                    "spec.gpuRequirements.type: unknown GPU type `Z9000`: known GPU types are T4, V100, V100-PCIe, V100-32GB, V100-32GB-PCIe, L4, A10G, L40S, A30, A100-40GB, A100-40GB-PCIe, A100-80GB, A100-80GB-PCIe, H100-80GB, H100-PCIe, H100-NVL, H20, H200, H200-NVL, B200, GB200, B300, GH200, RTX-PRO-6000, MI300X, MI325X",
                ),
            ),
            (
                "migProfile unknown",
                "spec.migProfile",
                json!("9g.1tb"),
                fatal(
                    "InvalidSpec",
                    "spec.migProfile: invalid MIG choice `9g.1tb`: use auto, none or a profile such as 1g.10gb",
                ),
            ),
            (
                "sessionAffinity ttl bad",
                "spec.sessionAffinity.ttl",
                json!("1 hour"),
                fatal(
                    "InvalidSpec",
                    "spec.sessionAffinity.ttl: \"1 hour\" is not a duration; write one like 500ms, 30s, 5m, 2h or 1d",
                ),
            ),
            (
                "ingressHost invalid",
                "spec.ingressHost",
                json!("Not A Host"),
                fatal(
                    "InvalidSpec",
                    "spec.ingressHost is \"Not A Host\"; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example agents.example.com)",
                ),
            ),
            (
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
            (
                "tool maxConcurrency zero",
                "spec.agentClass.toolPermissions",
                json!([{"name": "code-search", "maxConcurrency": 0}]),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.toolPermissions[0].maxConcurrency is 0; use at least 1",
                ),
            ),
            (
                "guardrail threshold above 1",
                "spec.agentClass.guardrails",
                json!([{"type": "pii-detection", "action": "redact", "threshold": 1.5}]),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.guardrails[0].threshold is 1.5; use 0 to 1",
                ),
            ),
            (
                "slo tokensPerSecond zero",
                "spec.agentClass.slo.tokensPerSecond",
                json!(0),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.slo.tokensPerSecond is 0; use at least 1",
                ),
            ),
            (
                "slo maxCostPerRequest negative",
                "spec.agentClass.slo.maxCostPerRequest",
                json!(-0.5),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.slo.maxCostPerRequest is -0.5; use at least 0",
                ),
            ),
            (
                "slo availabilityPercent above 100",
                "spec.agentClass.slo.availabilityPercent",
                json!(101),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.slo.availabilityPercent is 101; use 0 to 100",
                ),
            ),
            (
                "memory maxSize zero",
                "spec.agentClass.memoryConfig.maxSize",
                json!(0),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.memoryConfig.maxSize is 0; use at least 1",
                ),
            ),
            (
                "scaleUp periodSeconds zero",
                "spec.autoscaling.behavior.scaleUp.periodSeconds",
                json!(0),
                fatal(
                    "InvalidSpec",
                    "spec.autoscaling.behavior.scaleUp.periodSeconds is 0; use 1 to 1800",
                ),
            ),
            (
                "scaleDown maxChangePercent above 1000",
                "spec.autoscaling.behavior.scaleDown.maxChangePercent",
                json!(2000),
                fatal(
                    "InvalidSpec",
                    "spec.autoscaling.behavior.scaleDown.maxChangePercent is 2000; use 1 to 1000",
                ),
            ),
            (
                "scaleDown maxChangeAbsolute zero",
                "spec.autoscaling.behavior.scaleDown.maxChangeAbsolute",
                json!(0),
                fatal(
                    "InvalidSpec",
                    "spec.autoscaling.behavior.scaleDown.maxChangeAbsolute is 0; use 1 to 1000",
                ),
            ),
            (
                "systemPrompt 2 MiB",
                "spec.agentClass.systemPrompt",
                json!("p".repeat(2 << 20)),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.systemPrompt is 2097152 characters long; use at most 65536",
                ),
            ),
            (
                "tool name over 128",
                "spec.agentClass.toolPermissions",
                json!([{"name": "t".repeat(129)}]),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.toolPermissions[0].name is 129 characters long; use at most 128 (for example code-search)",
                ),
            ),
            (
                "env entry a list that serde would read by position",
                "spec.env",
                json!([["A", "B"]]),
                fatal("InvalidSpec", "spec.env[0] must be an object; it is a list"),
            ),
            (
                "modelRef a list that serde would read by position",
                "spec.agentClass.modelRef",
                json!(["llama-3-1-8b"]),
                fatal(
                    "InvalidSpec",
                    "spec.agentClass.modelRef must be an object; it is a list",
                ),
            ),
            (
                "env not list",
                "spec.env",
                json!("A=B"),
                fatal("InvalidSpec", "spec.env: the string \"A=B\" is not a list"),
            ),
            (
                "unknown field",
                "spec.replicas",
                json!(3),
                fatal(
                    "InvalidSpec",
                    "spec.replicas: unknown field replicas; valid fields are agentClass, image, env, port, minReplicas, maxReplicas, prewarmPercent, tokensPerSecondBudget, migProfile, objective, autoscaling, gpuRequirements, runtime, sessionAffinity, scheduling, ingressHost, crossplane",
                ),
            ),
        ],
    );
}

#[test]
fn xr_names_the_api_server_would_refuse_are_fatal_before_composing() {
    let subdomain = "use a DNS-1123 subdomain, as Kubernetes names objects: at most 253 characters of \
                     lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for \
                     example qwen-7b)";
    let huge = "a".repeat(9 << 20);
    let cases = [
        (
            "9 MiB name",
            huge.as_str(),
            format!(
                "metadata.name is \"{}\"... (9437184 characters); {subdomain}",
                "a".repeat(64)
            ),
        ),
        (
            "254 characters",
            &huge[..254],
            format!(
                "metadata.name is \"{}\"... (254 characters); {subdomain}",
                "a".repeat(64)
            ),
        ),
        (
            "ends with a dot",
            "llama-v3.",
            format!("metadata.name is \"llama-v3.\"; {subdomain}"),
        ),
        (
            "upper case and underscore",
            "Bad_Name",
            format!("metadata.name is \"Bad_Name\"; {subdomain}"),
        ),
        ("empty", "", format!("metadata.name is \"\"; {subdomain}")),
    ];
    for kind_example in [
        None,
        Some("examples/configuration/agents/model.yaml"),
        Some("examples/configuration/agents/agentpool.yaml"),
    ] {
        for (name, value, message) in &cases {
            let mut x = match kind_example {
                None => xr(json!({"model": MODEL})),
                Some(path) => example(path),
            };
            x["metadata"]["name"] = json!(value);
            let mut req = request("bad", x);
            req.desired = Some(earlier_desired());
            let rsp = call(&req);
            assert_eq!(
                rsp,
                refused_keeping_earlier("bad", "InvalidName", message),
                "{kind_example:?}: {name}"
            );
        }
    }
    // A namespace is a DNS label.
    let mut req = request("bad", xr(json!({"model": MODEL})));
    req.observed.as_mut().unwrap().composite = Some(resource(json!({
        "apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference",
        "metadata": {"name": "ok", "namespace": "team.a"}, "spec": {"model": MODEL},
    })));
    assert_eq!(
        call(&req).results,
        vec![fatal(
            "InvalidName",
            "metadata.namespace is \"team.a\"; use at most 63 lower-case letters, digits and '-', starting and \
             ending with a letter or digit (for example team-a)"
        )]
    );
    // The longest valid name composes (names.rs shortens what derives from it).
    // Kubernetes limits a name, not its dot-separated parts, to 253.
    let longest = format!("{}.{}", &huge[..200], &huge[..52]);
    assert_eq!(longest.len(), 253);
    let rsp = call(&request("ok", xr(json!({"model": MODEL}))).tap_name(&longest));
    assert_not_fatal(&rsp.results, "the longest valid name");
}

trait TapName {
    fn tap_name(self, name: &str) -> Self;
}

impl TapName for full::RunFunctionRequest {
    fn tap_name(mut self, name: &str) -> Self {
        let composite = self.observed.as_mut().unwrap().composite.as_mut().unwrap();
        let mut object = function_inference::protocol::struct_json::struct_to_json(
            composite.resource.as_ref().unwrap(),
        );
        object["metadata"]["name"] = json!(name);
        composite.resource = Some(function_inference::protocol::struct_json::json_to_struct(
            &object,
        ));
        self
    }
}

#[test]
fn an_agent_pool_waiting_for_its_model_still_checks_its_numbers() {
    for (field, value, message) in [
        (
            "spec.gpuRequirements.count",
            json!(0),
            "spec.gpuRequirements.count is 0; use 1 to 64, or omit it to derive the count",
        ),
        (
            "spec.agentClass.maxContextLength",
            json!(100),
            "spec.agentClass.maxContextLength is 100; use 256 to 10485760 tokens",
        ),
        (
            "spec.tokensPerSecondBudget",
            json!(0),
            "spec.tokensPerSecondBudget is 0; use at least 1",
        ),
    ] {
        let mut pool = example("examples/configuration/agents/agentpool.yaml");
        set(&mut pool, field, value);
        let rsp = call(&request("w", pool));
        assert_eq!(rsp.results, vec![fatal("InvalidSpec", message)], "{field}");
        assert!(
            rsp.requirements.is_some(),
            "{field}: the Model is still required"
        );
    }
}
