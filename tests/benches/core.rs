//! Criterion benchmarks of the core, in-process, without the transport.
//!
//! - `run_function/<Kind>/<n>`: for LLMInference, Model and AgentPool, one whole call (decode the XR, size, compose,
//!   encode the response) with `n` realistic observed composed resources
//!   (managedFields included, 5-10 KB each); the request is cloned outside
//!   the timed part.
//! - `sizing/<model>`: the sizing engine alone.
//! - `convert/...`: protobuf Struct <-> serde_json, both ways, for an XR and
//!   an observed Deployment.
//!
//! `cargo bench --bench core` runs them; `cargo bench --bench core -- sizing`
//! runs one group.

#[path = "../support/workload.rs"]
mod workload;

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use function_inference::protocol::resource::{json_to_struct, struct_to_json};
use function_inference::protocol::{fnv1, server, to_server};
use function_inference::run::run_function;
use function_inference::sizing::{self, SizingRequest};
use prost::Message;

/// The request for an XR with `n` observed composed resources and, for an
/// AgentPool, its Model as the required resource Crossplane fetched.
fn request(
    xr: &serde_json::Value,
    n: usize,
    model: Option<&serde_json::Value>,
) -> server::RunFunctionRequest {
    let kind = xr["kind"].as_str().unwrap_or_default();
    let name = xr["metadata"]["name"].as_str().unwrap_or_default();
    let observed = workload::observed_resources(kind, name, n);
    let mut req = workload::request("bench", xr, &observed, &Default::default(), None);
    if let Some(m) = model {
        req.required_resources.insert(
            "model".into(),
            fnv1::Resources {
                items: vec![fnv1::Resource {
                    resource: m.as_object().map(json_to_struct),
                    ..Default::default()
                }],
            },
        );
    }
    to_server(&req)
}

/// An example from `examples/`, as JSON.
fn example(path: &str) -> serde_json::Value {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&file).expect("the example exists");
    serde_yaml::from_str(&text).expect("the example is YAML")
}

fn run_function_benches(c: &mut Criterion) {
    let model = example("examples/configuration/agents/model.yaml");
    let xrs = [
        (
            "LLMInference",
            workload::llm_inference_xr("chat", false),
            None,
        ),
        (
            "LLMInference-remote",
            workload::llm_inference_xr("chat", true),
            None,
        ),
        ("Model", model.clone(), None),
        (
            "AgentPool",
            example("examples/configuration/agents/agentpool.yaml"),
            Some(&model),
        ),
    ];
    for (label, xr, required) in &xrs {
        let mut group = c.benchmark_group(format!("run_function/{label}"));
        for n in [0, 10, 100] {
            let req = request(xr, n, *required);
            // Sanity: the benchmark measures a successful composition.
            let rsp = run_function(req.clone()).response;
            assert!(
                rsp.results
                    .iter()
                    .all(|r| r.severity != server::Severity::Fatal as i32),
                "{label}: {:?}",
                rsp.results
            );
            group.throughput(Throughput::Bytes(req.encoded_len() as u64));
            group.bench_function(n.to_string(), |b| {
                b.iter_batched(
                    || req.clone(),
                    |r| black_box(run_function(r).response),
                    BatchSize::SmallInput,
                )
            });
        }
        group.finish();
    }
}

fn sizing_benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("sizing");
    let cases = [
        ("llama-8b-l4", "meta-llama/Llama-3.1-8B-Instruct", "L4"),
        (
            "llama-70b-h100",
            "meta-llama/Llama-3.1-70B-Instruct",
            "H100-80GB",
        ),
        ("qwen-1.5b-a100", "Qwen/Qwen2.5-1.5B-Instruct", "A100-80GB"),
        ("unknown-13b-l40s", "example/custom-13B-chat", "L40S"),
    ];
    for (label, model, gpu) in cases {
        let req = SizingRequest {
            model_id: model.into(),
            gpu_type: gpu.into(),
            ..Default::default()
        };
        assert!(sizing::size(&req).is_ok(), "{label} sizes");
        group.bench_function(label, |b| {
            b.iter(|| black_box(sizing::size(black_box(&req))))
        });
    }
    group.finish();
}

fn convert_benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("convert");
    let objects = [
        ("xr", workload::llm_inference_xr("chat", false)),
        ("deployment", workload::deployment("web", "chat", 1)),
        ("object", workload::object_wrapper("web", "chat", 2)),
    ];
    for (label, v) in &objects {
        let map = v.as_object().expect("an object");
        let pb = json_to_struct(map);
        group.throughput(Throughput::Bytes(pb.encoded_len() as u64));
        group.bench_function(format!("struct_to_json/{label}"), |b| {
            b.iter(|| black_box(struct_to_json(black_box(&pb))))
        });
        group.bench_function(format!("json_to_struct/{label}"), |b| {
            b.iter(|| black_box(json_to_struct(black_box(map))))
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    run_function_benches,
    sizing_benches,
    convert_benches
);
criterion_main!(benches);
