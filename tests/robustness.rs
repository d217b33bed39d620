//! The function never fails its caller: a panic becomes a FATAL result that
//! names the XR and the server keeps serving; arbitrary specs, inputs and
//! observed bytes are answered (tag echoed, earlier steps' desired state
//! kept) in bounded time; and nothing composed before is lost when the XR
//! turns invalid.

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use function_inference::protocol::resource::{json_to_struct, struct_to_json};
use function_inference::protocol::{fnv1, from_server, server, to_server, view};
use function_inference::response;
use function_inference::run::{Call, run_function};
use function_inference::server::{Handler, Metrics};
use proptest::prelude::*;
use prost::Message;
use prost_types::value::Kind;
use serde_json::{Value, json};
use support::fixtures::*;
use support::*;

// ---------------------------------------------------------------------------
// Panics
// ---------------------------------------------------------------------------

/// Everything the tests of this file log, for assertions on log lines.
fn captured_log() -> Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = Arc::new(Mutex::new(Vec::new()));
        let writer = log.clone();
        let _ = tracing_subscriber::fmt()
            .with_env_filter("function_inference=debug")
            .with_ansi(false)
            .with_writer(move || LogWriter(writer.clone()))
            .try_init();
        log
    })
    .clone()
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn log_text() -> String {
    String::from_utf8_lossy(&captured_log().lock().unwrap()).into_owned()
}

/// A core with a bug: it panics on every call, as a composer with a bug would.
fn panicking_core(_: server::RunFunctionRequest) -> Call {
    panic!("index out of bounds: the len is 0 but the index is 3")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_composer_is_answered_fatal_logged_and_the_server_keeps_serving() {
    let _ = captured_log();
    let (xr_name, what) = (
        "panics-in-core",
        "index out of bounds: the len is 0 but the index is 3",
    );
    {
        let handler = Handler::new(panicking_core, Metrics::new());
        let server = TestServer::start_handler(handler, None, 4).await;
        let mut c = client(server.endpoint(None));

        let mut req = request("boom", LlmInference::qwen(xr_name).build());
        req.desired = Some(earlier_desired());
        let rsp = c
            .run_function(req)
            .await
            .expect("a panic is answered, not a transport error")
            .into_inner();
        assert_eq!(rsp.meta.as_ref().unwrap().tag, "boom");
        let message = format!(
            "function-inference failed on LLMInference {xr_name:?}: {what}; this is a bug, please report it"
        );
        assert_eq!(rsp.results, vec![fatal("InternalError", &message)]);

        let log = log_text();
        let line = log
            .lines()
            .find(|l| l.contains("panicked") && l.contains(xr_name))
            .unwrap_or_else(|| panic!("no log line names {xr_name}:\n{log}"));
        assert!(
            line.contains("kind=LLMInference") && line.contains(what),
            "the log line names the kind and the panic: {line}"
        );

        // The same server, on the same connection, answers the next call.
        let rsp = c
            .run_function(request("after", spaceship()))
            .await
            .expect("the server keeps serving after a panic")
            .into_inner();
        assert_eq!(rsp.meta.unwrap().tag, "after");
        let message = format!(
            "function-inference failed on Spaceship \"enterprise\": {what}; this is a bug, please report it"
        );
        assert_eq!(rsp.results, vec![fatal("InternalError", &message)]);
        server.stop().await;
    }
}

// ---------------------------------------------------------------------------
// Nothing is lost
// ---------------------------------------------------------------------------

#[test]
fn a_composition_adds_its_resources_and_changes_nothing_else() {
    let alone = call(&request("p", LlmInference::qwen("qwen").build()));
    let mut req = request("p", LlmInference::qwen("qwen").build());
    req.desired = Some(earlier_llm_inference_desired());
    let after_earlier = call(&req);

    // The whole response is the function's own response, plus the earlier
    // step's resources, with its status fields merged under ours.
    let mut expected = alone.clone();
    let desired = expected.desired.as_mut().unwrap();
    for (name, r) in earlier_llm_inference_desired().resources {
        assert!(!desired.resources.contains_key(&name));
        desired.resources.insert(name, r);
    }
    let ours = struct_to_json(
        desired
            .composite
            .as_ref()
            .unwrap()
            .resource
            .as_ref()
            .unwrap(),
    );
    let mut merged = struct_to_json(
        earlier_llm_inference_desired()
            .composite
            .unwrap()
            .resource
            .as_ref()
            .unwrap(),
    );
    let status = merged["status"].as_object_mut().unwrap();
    status.extend(ours["status"].as_object().unwrap().clone());
    desired.composite = Some(fnv1::Resource {
        resource: Some(json_to_struct(&merged)),
        ..Default::default()
    });
    assert_eq!(after_earlier, expected);
}

#[test]
fn an_xr_that_turns_invalid_keeps_what_was_composed() {
    // First call: the runtime is composed.
    let first = call(&request("1", LlmInference::qwen("qwen").build()));
    let runtime = first.desired.as_ref().unwrap().resources["vllm_runtime"].clone();

    // The XR's spec (or the step input) turns invalid while the runtime
    // exists. The answer is FATAL, never a WARNING with fewer resources:
    // Crossplane stops on a FATAL result without applying the desired state,
    // so the runtime stays, and the XR's Synced condition carries the message.
    let mut observed = request(
        "2",
        LlmInference::new("qwen")
            .model(QWEN)
            .field("gpu", json!("two"))
            .build(),
    );
    observed
        .observed
        .as_mut()
        .unwrap()
        .resources
        .insert("vllm_runtime".into(), runtime.clone());
    observed.desired = Some(earlier_llm_inference_desired());
    let rsp = call(&observed);
    assert_eq!(
        rsp,
        fnv1::RunFunctionResponse {
            meta: meta("2", 60),
            desired: Some(earlier_llm_inference_desired()),
            results: vec![fatal(
                "InvalidSpec",
                "spec.gpu: the string \"two\" is not a whole number; use a whole number from 1 to 64"
            )],
            ..Default::default()
        }
    );

    let mut bad_input = observed.clone();
    bad_input.observed.as_mut().unwrap().composite =
        Some(resource(LlmInference::qwen("qwen").build()));
    bad_input.input = Some(input(json!({"defaults": {"gpuMemoryUtilization": "NaN"}})));
    let rsp = call(&bad_input);
    assert_eq!(
        rsp,
        fnv1::RunFunctionResponse {
            meta: meta("2", 60),
            desired: Some(earlier_llm_inference_desired()),
            results: vec![fatal(
                "InvalidInput",
                "cannot read the step input: input.defaults.gpuMemoryUtilization: the string \"NaN\" is not a number; use a number from 0.1 to 0.99"
            )],
            ..Default::default()
        }
    );
}

// ---------------------------------------------------------------------------
// Property tests
// ---------------------------------------------------------------------------

/// Field names of the XR specs and the step input, so that generated
/// objects reach typed code, mixed with arbitrary keys.
const KEYS: &[&str] = &[
    "model",
    "modelRef",
    "name",
    "key",
    "gpu",
    "gpuType",
    "quantization",
    "maxModelLen",
    "parameterCount",
    "migProfile",
    "replicas",
    "hfTokenSecretRef",
    "image",
    "registry",
    "ingressHost",
    "ingressClassName",
    "tls",
    "secretName",
    "extraArgs",
    "providerConfigName",
    "targetNamespace",
    "crossplane",
    "apiVersion",
    "kind",
    "ttl",
    "defaults",
    "offeredGpuTypes",
    "gpuMemoryUtilization",
    "gpuNodeSelector",
    "gpuToleration",
    "providerConfigKind",
    "weightsCache",
    "storageClassName",
    "sharedStorageClassName",
    "status",
    "availableReplicas",
    "conditions",
    "type",
];

/// Strings that mean something to the function, and arbitrary ones.
fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "Qwen/Qwen2.5-1.5B-Instruct",
            "meta-llama/Llama-3.1-70B-Instruct",
            "L4",
            "A100-80GB",
            "H100-80GB",
            "1g.10gb",
            "auto",
            "none",
            "fp8",
            "int4",
            "70B",
            "8x7B",
            "1e30B",
            "-1B",
            "60s",
            "-5m",
            "0s",
            "NaN",
            "",
            "True",
            "LLMInference",
            "Object",
            "VLLMRuntime",
            "inference.fn.crossplane.io/v1beta1",
            "Input",
        ])
        .prop_map(String::from),
        ".{0,40}",
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(KEYS).prop_map(String::from),
        1 => "[a-zA-Z]{1,10}",
    ]
}

/// Any protobuf value, NaN and infinities included.
fn pb_value() -> impl Strategy<Value = prost_types::Value> {
    let leaf = prop_oneof![
        Just(Kind::NullValue(0)),
        any::<bool>().prop_map(Kind::BoolValue),
        prop_oneof![
            any::<f64>(),
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(1e30),
            Just(-1.0),
            Just(0.0),
            (0i64..100_000).prop_map(|i| i as f64),
        ]
        .prop_map(Kind::NumberValue),
        string().prop_map(Kind::StringValue),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|values| Kind::ListValue(
                prost_types::ListValue {
                    values: values
                        .into_iter()
                        .map(|k| prost_types::Value { kind: Some(k) })
                        .collect()
                }
            )),
            prop::collection::btree_map(key(), inner, 0..6).prop_map(|m| {
                Kind::StructValue(prost_types::Struct {
                    fields: m
                        .into_iter()
                        .map(|(k, v)| (k, prost_types::Value { kind: Some(v) }))
                        .collect(),
                })
            }),
        ]
    })
    .prop_map(|k| prost_types::Value { kind: Some(k) })
}

fn pb_struct() -> impl Strategy<Value = prost_types::Struct> {
    prop::collection::btree_map(key(), pb_value(), 0..8)
        .prop_map(|fields| prost_types::Struct { fields })
}

/// An LLMInference (or another kind) with an arbitrary spec and status.
fn composite() -> impl Strategy<Value = prost_types::Struct> {
    (
        prop::sample::select(vec!["LLMInference", "Model", "AgentPool", "Spaceship"]),
        pb_struct(),
        pb_struct(),
    )
        .prop_map(|(kind, spec, status)| {
            let mut xr = object(json!({
                "apiVersion": "infer.dev/v1alpha1", "kind": kind,
                "metadata": {"name": "prop", "namespace": "team-a"},
            }));
            xr.fields.insert(
                "spec".into(),
                prost_types::Value {
                    kind: Some(Kind::StructValue(spec)),
                },
            );
            xr.fields.insert(
                "status".into(),
                prost_types::Value {
                    kind: Some(Kind::StructValue(status)),
                },
            );
            xr
        })
}

/// Appends `observed.resources[name] = <bytes>` to an encoded request: the
/// Resource's bytes are arbitrary, as a buggy or hostile client could send.
fn with_raw_observed(mut encoded: Vec<u8>, name: &str, bytes: &[u8]) -> Vec<u8> {
    use prost::encoding::{WireType, encode_key, encode_varint};
    let mut entry = Vec::new();
    encode_key(1, WireType::LengthDelimited, &mut entry);
    encode_varint(name.len() as u64, &mut entry);
    entry.extend_from_slice(name.as_bytes());
    encode_key(2, WireType::LengthDelimited, &mut entry);
    encode_varint(bytes.len() as u64, &mut entry);
    entry.extend_from_slice(bytes);
    let mut state = Vec::new();
    encode_key(2, WireType::LengthDelimited, &mut state);
    encode_varint(entry.len() as u64, &mut state);
    state.extend_from_slice(&entry);
    encode_key(2, WireType::LengthDelimited, &mut encoded);
    encode_varint(state.len() as u64, &mut encoded);
    encoded.extend_from_slice(&state);
    encoded
}

/// Runs one request and checks the invariants every answer keeps.
fn check(req: server::RunFunctionRequest) -> Result<(), TestCaseError> {
    let tag = req.meta.as_ref().map(|m| m.tag.clone()).unwrap_or_default();
    let before = req.desired.clone().unwrap_or_default();
    let started = Instant::now();
    let rsp = run_function(req).response;
    let took = started.elapsed();
    prop_assert!(took < Duration::from_secs(5), "took {took:?}");
    prop_assert_eq!(rsp.meta.as_ref().map(|m| m.tag.clone()), Some(tag));
    let after = rsp.desired.clone().unwrap_or_default();
    for (name, r) in &before.resources {
        // Only the LLMInference composer's own names may be replaced.
        if name != "vllm_runtime" && name != "ingress" {
            prop_assert_eq!(
                after.resources.get(name),
                Some(r),
                "resource {} was changed or dropped",
                name
            );
        }
    }
    for r in &rsp.results {
        prop_assert!(!r.message.is_empty());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_spec_input_and_observed_state_is_answered(
        xr in composite(),
        input in prop::option::of(pb_struct()),
        context in prop::option::of(pb_struct()),
        observed_runtime in prop::option::of(pb_struct()),
        raw in prop::option::of(prop::collection::vec(any::<u8>(), 0..64)),
        tag in ".{0,20}",
    ) {
        let mut req = fnv1::RunFunctionRequest {
            meta: Some(fnv1::RequestMeta { tag, capabilities: (1..=5).collect() }),
            observed: Some(fnv1::State { composite: Some(fnv1::Resource { resource: Some(xr), ..Default::default() }), resources: Default::default() }),
            desired: Some(earlier_desired()),
            input,
            context,
            ..Default::default()
        };
        if let Some(o) = observed_runtime {
            req.observed.as_mut().unwrap().resources.insert("vllm_runtime".into(), fnv1::Resource { resource: Some(o), ..Default::default() });
        }
        let mut encoded = req.encode_to_vec();
        if let Some(bytes) = &raw {
            encoded = with_raw_observed(encoded, "ingress", bytes);
        }
        // Bytes the server could not decode are refused by gRPC before the
        // function runs; everything that decodes must be answered.
        if let Ok(wire_req) = server::RunFunctionRequest::decode(encoded.as_slice()) {
            check(wire_req)?;
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(req) = server::RunFunctionRequest::decode(bytes.as_slice()) {
            let _ = run_function(req).response;
        }
    }
}

/// Writes `text` to a file and renders it as the XR, the step input and the
/// observed resources in turn: each ends in output or an error, never a panic.
fn render_text(text: &str) {
    use function_inference::cli::render::{self, RenderArgs};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.yaml");
    std::fs::write(&path, text).unwrap();
    let good = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/compat/dot-inference/llm-inference.yaml");
    for args in [
        RenderArgs {
            xr: path.clone(),
            observed: None,
            required: None,
            input: None,
            context: None,
        },
        RenderArgs {
            xr: good.clone(),
            observed: None,
            required: None,
            input: Some(path.clone()),
            context: None,
        },
        RenderArgs {
            xr: good.clone(),
            observed: Some(path.clone()),
            required: Some(path.clone()),
            input: None,
            context: Some(path.clone()),
        },
    ] {
        let mut out = Vec::new();
        let _ = render::run(&args, &mut out, &mut std::io::sink());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// The example XR with a few characters replaced: YAML that is almost right.
    #[test]
    fn render_survives_mangled_yaml(
        edits in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(vec![":", "-", " ", "\n", "{", "[", "'", "\"", "1e30", "NaN", "~", "&a", "*a", "!!binary", "x"])), 1..6),
    ) {
        let mut text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/compat/dot-inference/llm-inference.yaml"),
        ).unwrap();
        for (at, with) in edits {
            let i = at.index(text.len());
            let i = (0..=i).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
            text.insert_str(i, with);
        }
        render_text(&text);
    }

    #[test]
    fn render_survives_arbitrary_text(text in ".{0,200}") {
        render_text(&text);
    }
}

/// Specs close to valid: real models, GPUs, MIG profiles and precisions
/// with numbers across and beyond their ranges, so that sizing arithmetic
/// runs on extreme values rather than stopping at the first type error.
fn near_valid_spec() -> impl Strategy<Value = Value> {
    let model = prop::sample::select(vec![
        "Qwen/Qwen2.5-1.5B-Instruct",
        "Qwen/Qwen2.5-7B-Instruct",
        "meta-llama/Llama-3.1-70B-Instruct",
        "deepseek-ai/DeepSeek-R1",
        "mistralai/Mixtral-8x7B-Instruct-v0.1",
        "acme/mystery-chat",
        "acme/tiny-0.5B",
        "acme/huge-9999B",
    ]);
    let gpu_type = prop::option::of(prop::sample::select(vec![
        "T4",
        "L4",
        "A10G",
        "L40S",
        "A30",
        "A100-40GB",
        "A100-80GB",
        "H100-80GB",
        "H200",
        "B200",
        "MI300X",
    ]));
    let number = prop_oneof![
        Just(json!(null)),
        (-5i64..100).prop_map(|v| json!(v)),
        (0i64..20_000_000).prop_map(|v| json!(v)),
        Just(json!(1e30)),
        Just(json!(-1e30)),
        Just(json!(1.5)),
        Just(json!(i64::MAX)),
        Just(json!(u64::MAX)),
    ];
    let mig = prop::option::of(prop::sample::select(vec![
        "auto", "none", "1g.10gb", "3g.40gb", "7g.80gb", "1g.5gb",
    ]));
    let quant = prop::option::of(prop::sample::select(vec![
        "auto", "fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4",
    ]));
    let params = prop::option::of(prop::sample::select(vec![
        "0.5B", "8B", "70B", "8x7B", "1.5T", "100T", "0.0001M", "999999M",
    ]));
    (model, gpu_type, number.clone(), number.clone(), number, mig, quant, params).prop_map(
        |(model, gpu_type, gpu, max_model_len, replicas, mig, quant, params)| {
            let mut spec = json!({"model": model, "gpu": gpu, "maxModelLen": max_model_len, "replicas": replicas});
            if let Some(g) = gpu_type { spec["gpuType"] = json!(g); }
            if let Some(m) = mig { spec["migProfile"] = json!(m); }
            if let Some(q) = quant { spec["quantization"] = json!(q); }
            if let Some(p) = params { spec["parameterCount"] = json!(p); }
            spec
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn near_valid_specs_are_answered(spec in near_valid_spec()) {
        let mut req = request("near", LlmInference::new("near").spec(spec).build());
        req.desired = Some(earlier_desired());
        check(to_server(&req))?;
    }
}

/// A Model that disappears keeps everything composed from it: the next
/// response desires each resource exactly as it was composed (the API
/// server's fields stripped), says why in a condition, warns once, and is
/// not FATAL, so Crossplane applies it and deletes nothing.
#[test]
fn a_model_that_disappears_keeps_what_was_composed() {
    let model = example("examples/configuration/agents/model.yaml");
    let mut llm = LlmInference::new("qwen").model_ref("llama-3-1-8b").build();
    llm["metadata"]["namespace"] = json!("team-a");
    for xr in [example("examples/configuration/agents/agentpool.yaml"), llm] {
        let kind = xr["kind"].as_str().unwrap().to_string();
        let with_model = |tag: &str, items: Vec<fnv1::Resource>| {
            let mut req = request(tag, xr.clone());
            req.desired = Some(earlier_desired());
            req.required_resources
                .insert("model".into(), fnv1::Resources { items });
            req
        };
        let first = call(&with_model("1", vec![resource(model.clone())]));
        assert_not_fatal(&first.results, &kind.to_string());
        let composed = first.desired.clone().unwrap().resources;
        let ours: Vec<String> = composed
            .keys()
            .filter(|k| !earlier_desired().resources.contains_key(*k))
            .cloned()
            .collect();
        assert!(!ours.is_empty(), "{kind} composed something");

        // Observed: what was composed, as the API server returns it.
        let mut req = with_model("2", vec![]);
        for name in &ours {
            let mut o = struct_to_json(composed[name].resource.as_ref().unwrap());
            let md = o.entry("metadata").or_insert(json!({}));
            md["uid"] = json!("6b1c");
            md["resourceVersion"] = json!("42");
            md["managedFields"] = json!([{"manager": "crossplane"}]);
            o.insert("status".into(), json!({"observedGeneration": 1}));
            req.observed.as_mut().unwrap().resources.insert(
                name.clone(),
                fnv1::Resource {
                    resource: Some(json_to_struct(&o)),
                    ..Default::default()
                },
            );
        }
        let rsp = call(&req);
        let desired = rsp.desired.clone().unwrap();
        let mut want = earlier_desired().resources;
        for name in &ours {
            want.insert(
                name.clone(),
                fnv1::Resource {
                    resource: composed[name].resource.clone(),
                    ..Default::default()
                },
            );
        }
        assert_eq!(
            desired.resources, want,
            "{kind}: every resource kept as composed"
        );
        assert_not_fatal(&rsp.results, &format!("{kind}: not FATAL"));
        assert!(
            rsp.results
                .iter()
                .any(|r| r.severity == fnv1::Severity::Warning as i32
                    && r.message.contains("llama-3-1-8b")),
            "{kind}: a warning names the missing Model: {:?}",
            rsp.results
        );
        assert!(
            rsp.conditions.iter().any(|c| c.r#type == "ModelResolved"
                && c.status == fnv1::Status::ConditionFalse as i32
                && c.reason == "ModelNotFound"),
            "{kind}: a condition says why: {:?}",
            rsp.conditions
        );
        assert_eq!(
            rsp.requirements.as_ref().map(|r| r.resources.len()),
            Some(1),
            "{kind}: the Model is still required"
        );
    }
}

// ---------------------------------------------------------------------------
// What the function cannot decode is passed through, never dropped
// ---------------------------------------------------------------------------

/// `{"d": {"d": ... "bottom"}}`, `depth` objects deep: deeper than the
/// decoders' recursion limit (100) when `depth` is 200.
fn nested(depth: usize) -> Value {
    let mut v = json!("bottom");
    for _ in 0..depth {
        v = json!({ "d": v });
    }
    v
}

/// A view Struct decoded with no recursion limit, for checking responses
/// whose objects nest deeper than prost decodes: a field too deep for
/// prost is read as an object of fields, one level at a time.
fn decode_deep(object: &view::Struct) -> Value {
    let mut out = serde_json::Map::new();
    for (key, bytes) in &object.fields {
        let v = match prost_types::Value::decode(bytes.as_slice()) {
            Ok(v) => function_inference::protocol::resource::value_to_json(&v),
            Err(_) => decode_deep(
                &view::StructValue::decode(bytes.as_slice())
                    .unwrap()
                    .struct_value
                    .unwrap(),
            ),
        };
        out.insert(key.clone(), v);
    }
    Value::Object(out)
}

/// A desired resource as its object (decoded without a depth limit) and its other fields.
fn split(r: &server::Resource) -> (Value, fnv1::Resource) {
    (
        decode_deep(r.resource.as_ref().expect("an object")),
        fnv1::Resource {
            connection_details: r.connection_details.clone(),
            ready: r.ready,
            ..Default::default()
        },
    )
}

#[test]
fn an_earlier_desired_composite_nested_too_deep_to_decode_keeps_every_field() {
    let deep = nested(200);
    let earlier_xr = json!({
        "apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference",
        "status": {"fromEarlierStep": "kept", "deep": deep, "ready": "overwritten"},
        "spec": {"deep": deep},
    });
    let mut req = request("deep", LlmInference::qwen("qwen").build());
    let mut desired = earlier_desired();
    desired.composite = Some(fnv1::Resource {
        resource: Some(json_to_struct(earlier_xr.as_object().unwrap())),
        connection_details: [("url".to_string(), b"http://earlier".to_vec())].into(),
        ready: fnv1::Ready::True as i32,
    });
    req.desired = Some(desired);
    let rsp = run_function(to_server(&req)).response;
    assert!(
        rsp.results
            .iter()
            .all(|r| r.severity != fnv1::Severity::Fatal as i32),
        "{:?}",
        rsp.results
    );
    // The status the function reports on its own, to merge by hand.
    let alone = call(&request("deep", LlmInference::qwen("qwen").build()));
    let ours = desired_status(&alone);
    let mut want = earlier_xr.clone();
    for (k, v) in ours.as_object().unwrap() {
        want["status"][k] = v.clone();
    }
    let (got, rest) = split(rsp.desired.as_ref().unwrap().composite.as_ref().unwrap());
    assert_eq!(got, want, "the earlier fields kept, the status merged");
    assert_eq!(
        rest,
        fnv1::Resource {
            connection_details: [("url".to_string(), b"http://earlier".to_vec())].into(),
            ready: fnv1::Ready::True as i32,
            ..Default::default()
        },
        "connection details and readiness kept"
    );
    // The rest of the response is as without the deep fields.
    let mut plain = from_server(&server::RunFunctionResponse {
        desired: None,
        ..rsp.clone()
    })
    .unwrap();
    let mut alone_but_desired = alone.clone();
    alone_but_desired.desired = None;
    plain.desired = None;
    assert_eq!(plain, alone_but_desired);
    let resources = &rsp.desired.as_ref().unwrap().resources;
    assert!(resources.contains_key("bucket") && resources.contains_key("vllm_runtime"));
}

#[test]
fn an_earlier_desired_status_that_is_not_a_value_is_fatal_and_kept() {
    let mut server_req = to_server(&request("bad", LlmInference::qwen("qwen").build()));
    // A status whose string (field 3) declares more bytes than it has.
    let bad = server::Resource {
        resource: Some(view::Struct {
            fields: [("status".to_string(), vec![0x1a, 0x05, 0x61])].into(),
        }),
        ..Default::default()
    };
    server_req.desired.as_mut().unwrap().composite = Some(bad.clone());
    let rsp = run_function(server_req).response;
    assert_eq!(
        rsp.results,
        vec![response::fatal(
            "UnreadableState",
            "cannot read the status an earlier pipeline step set on the desired composite resource, to merge into \
             it (buffer underflow)"
        )]
    );
    assert_eq!(rsp.desired.unwrap().composite, Some(bad), "passed through");
}

#[test]
fn a_waiting_agent_pool_keeps_an_observed_resource_too_deep_to_decode() {
    let pool = example("examples/configuration/agents/agentpool.yaml");
    let observed = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "agents", "namespace": "team-a", "uid": "6b1c",
                     "resourceVersion": "42", "labels": {"a": "b"}},
        "spec": {"template": nested(200)},
        "status": {"replicas": 1},
    });
    let mut req = request("w", pool);
    req.desired = Some(earlier_desired());
    req.required_resources
        .insert("model".into(), fnv1::Resources { items: vec![] });
    req.observed
        .as_mut()
        .unwrap()
        .resources
        .insert("agents".into(), resource(observed.clone()));
    let rsp = run_function(to_server(&req)).response;
    let kept = &rsp.desired.as_ref().unwrap().resources["agents"];
    let mut want = observed.clone();
    want.as_object_mut().unwrap().remove("status");
    let md = want["metadata"].as_object_mut().unwrap();
    md.remove("uid");
    md.remove("resourceVersion");
    assert_eq!(split(kept), (want, fnv1::Resource::default()));
    assert!(
        rsp.results
            .iter()
            .all(|r| r.severity != fnv1::Severity::Fatal as i32),
        "{:?}",
        rsp.results
    );
}

#[test]
fn a_required_model_too_deep_to_decode_is_fatal_not_missing() {
    let mut model = example("examples/configuration/agents/model.yaml");
    model["metadata"]["annotations"] = json!({"x": "y"});
    model["status"] = nested(200);
    let req = with_required(
        request(
            "m",
            LlmInference::new("qwen").model_ref("llama-3-1-8b").build(),
        ),
        "model",
        vec![model],
    );
    let rsp = call(&req);
    assert_eq!(
        rsp.results,
        vec![fatal(
            "InvalidModel",
            "spec.modelRef: Model team-a/llama-3-1-8b: Crossplane returned a resource that cannot be read: field \
             \"status\" cannot be decoded (recursion limit reached)"
        )]
    );
}
