//! The real binary under load on loopback: a bounded number of calls from 64
//! concurrent clients over mutual TLS with zero errors and bounded memory;
//! SIGTERM while 64 clients have calls in flight lets every one finish; and
//! the debug log of a request shows its identity and size, and no value.

mod support;

use std::time::{Duration, Instant};

use function_inference::protocol::fnv1;
use function_inference::protocol::fnv1::function_runner_service_client::FunctionRunnerServiceClient;
use serde_json::json;
use support::fixtures::{self, LlmInference};
use support::*;
use tonic::transport::Channel;

const CLIENTS: usize = 64;
const CALLS_PER_CLIENT: usize = 25;
/// Peak resident memory the server may reach under this load. The function
/// holds nothing between calls, so this is the runtime, the TLS sessions and
/// 64 requests at a time.
const MAX_HWM_KIB: u64 = 256 * 1024;

/// VmHWM (peak resident set) of `pid`, in KiB, from /proc.
fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc status")
}

async fn connect(server: &ServerProcess, pki: &Pki) -> FunctionRunnerServiceClient<Channel> {
    let channel = endpoint(
        server.grpc,
        Some(client_tls(&pki.ca_cert, Some(&pki.client))),
    )
    .connect()
    .await
    .expect("connect over mutual TLS");
    FunctionRunnerServiceClient::new(channel)
        .max_decoding_message_size(usize::MAX)
        .max_encoding_message_size(usize::MAX)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_clients_are_served_without_errors_in_bounded_memory() {
    let pki = Pki::generate();
    let server = ServerProcess::start(&[
        "--metrics-address=",
        "--tls-certs-dir",
        pki.certs_dir().to_str().unwrap(),
    ]);
    let idle_hwm = vm_hwm_kib(server.pid());
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client_no in 0..CLIENTS {
        let mut c = connect(&server, &pki).await;
        tasks.push(tokio::spawn(async move {
            let mut errors = Vec::new();
            let mut latencies = Vec::new();
            for call_no in 0..CALLS_PER_CLIENT {
                let tag = format!("{client_no}-{call_no}");
                let mut req = request(
                    &tag,
                    LlmInference::new(&format!("qwen-{client_no}"))
                        .model(fixtures::QWEN)
                        .field("ingressHost", json!("qwen.example.com"))
                        .field("providerConfigName", json!("incluster"))
                        .build(),
                );
                req.desired = Some(earlier_desired());
                let t = Instant::now();
                match c.run_function(req).await {
                    Ok(rsp) => {
                        let rsp = rsp.into_inner();
                        latencies.push(t.elapsed());
                        let desired = rsp.desired.unwrap_or_default();
                        if rsp.meta.map(|m| m.tag) != Some(tag.clone())
                            || !desired.resources.contains_key("vllm_runtime")
                            || desired.resources.get("bucket")
                                != earlier_desired().resources.get("bucket")
                            || rsp
                                .results
                                .iter()
                                .any(|r| r.severity == fnv1::Severity::Fatal as i32)
                        {
                            errors.push(format!("{tag}: unexpected response"));
                        }
                    }
                    Err(e) => errors.push(format!("{tag}: {e}")),
                }
            }
            (errors, latencies)
        }));
    }
    let mut errors = Vec::new();
    let mut latencies = Vec::new();
    for t in tasks {
        let (e, l) = tokio::time::timeout(PATIENCE, t)
            .await
            .expect("the load finishes in time")
            .unwrap();
        errors.extend(e);
        latencies.extend(l);
    }
    let elapsed = started.elapsed();
    let hwm = vm_hwm_kib(server.pid());
    latencies.sort();
    let p = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    eprintln!(
        "load: {} calls from {CLIENTS} clients in {elapsed:?} ({:.0} calls/s); latency p50 {:?} p99 {:?} max {:?}; \
         VmHWM idle {} KiB, after load {} KiB",
        latencies.len(),
        latencies.len() as f64 / elapsed.as_secs_f64(),
        p(0.5),
        p(0.99),
        latencies.last().unwrap(),
        idle_hwm,
        hwm
    );
    assert!(
        errors.is_empty(),
        "{} errors: {:?}",
        errors.len(),
        &errors[..errors.len().min(5)]
    );
    assert_eq!(latencies.len(), CLIENTS * CALLS_PER_CLIENT);
    assert!(
        hwm < MAX_HWM_KIB,
        "VmHWM {hwm} KiB exceeds {MAX_HWM_KIB} KiB"
    );

    server.terminate();
    let (status, log) = tokio::task::spawn_blocking(move || server.wait())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0), "log:\n{log}");
}

/// 64 clients on their own connections each have a large call in flight
/// when SIGTERM arrives; every call is answered and the process exits 0.
/// As in binary.rs, a small marker call sent after the large one on the same
/// connection proves the server accepted the large call's stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_lets_every_call_in_flight_finish() {
    let server = ServerProcess::start(&["--insecure", "--metrics-address="]);
    let mut large = Vec::new();
    let mut markers = Vec::new();
    for i in 0..CLIENTS {
        let channel = endpoint(server.grpc, None)
            .connect()
            .await
            .expect("connect");
        let c = FunctionRunnerServiceClient::new(channel)
            .max_decoding_message_size(usize::MAX)
            .max_encoding_message_size(usize::MAX);
        let mut req = request(
            &format!("large-{i}"),
            LlmInference::new(&format!("qwen-{i}"))
                .model(fixtures::QWEN)
                .field("ingressHost", json!("qwen.example.com"))
                .field("providerConfigName", json!("incluster"))
                .build(),
        );
        pad_observed(&mut req, 256 * 1024);
        let mut lc = c.clone();
        large.push(tokio::spawn(async move { lc.run_function(req).await }));
        // Give the large call's stream a head start on this connection.
        tokio::task::yield_now().await;
        let mut mc = c.clone();
        markers.push(tokio::spawn(async move {
            mc.run_function(request(&format!("marker-{i}"), spaceship()))
                .await
        }));
    }
    for m in markers {
        tokio::time::timeout(PATIENCE, m)
            .await
            .expect("markers are answered")
            .unwrap()
            .expect("a marker call succeeds");
    }
    server.terminate();
    let mut done = 0;
    for (i, h) in large.into_iter().enumerate() {
        let rsp = tokio::time::timeout(PATIENCE, h)
            .await
            .unwrap_or_else(|_| panic!("large call {i} hung"))
            .unwrap()
            .unwrap_or_else(|e| panic!("large call {i} failed after SIGTERM: {e:?}"))
            .into_inner();
        assert_eq!(rsp.meta.unwrap().tag, format!("large-{i}"));
        done += 1;
    }
    assert_eq!(done, CLIENTS);
    let (status, log) = tokio::task::spawn_blocking(move || server.wait())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0), "log:\n{log}");
    assert!(
        log.contains("SIGTERM: finishing in-flight calls"),
        "log:\n{log}"
    );
}

/// `--debug` logs each request by its identity and size: no object, so no
/// secret, reaches the log, and a reconcile is a line, not 25 KB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_debug_log_of_a_request_shows_its_identity_and_size_and_no_value() {
    const SECRET: &str = "hunter2-7f3a";
    let server = ServerProcess::start(&["--insecure", "--debug", "--metrics-address="]);
    let mut c = client(endpoint(server.grpc, None));
    let mut xr = LlmInference::new("qwen-0")
        .model(fixtures::QWEN)
        .field("ingressHost", json!("qwen.example.com"))
        .field("providerConfigName", json!("incluster"))
        .build();
    xr["spec"]["connectionString"] = json!(format!("postgres://app:{SECRET}@db:5432/app"));
    let mut req = request("secrets", xr);
    let observed = req.observed.as_mut().unwrap();
    observed.resources.insert(
        "db".into(),
        fnv1::Resource {
            resource: Some(object(json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "db", "resourceVersion": "7"}, "stringData": {"password": SECRET}}))),
            connection_details: [("password".to_string(), SECRET.as_bytes().to_vec())].into(),
            ready: 0,
        },
    );
    req.desired = Some(earlier_desired());
    req.input = Some(input(json!({"defaults": {"gpuType": "L4"}})));
    req.credentials.insert(
        "api".into(),
        fnv1::Credentials {
            source: Some(fnv1::credentials::Source::CredentialData(
                fnv1::CredentialData {
                    data: [("token".to_string(), SECRET.as_bytes().to_vec())].into(),
                },
            )),
        },
    );
    let bytes = prost::Message::encoded_len(&req);
    let rsp = c.run_function(req).await.expect("answered").into_inner();
    assert_eq!(rsp.meta.unwrap().tag, "secrets");
    server.terminate();
    let (status, log) = tokio::task::spawn_blocking(move || server.wait())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let line = log
        .lines()
        .find(|l| l.contains("RunFunctionRequest"))
        .unwrap_or_else(|| panic!("no request logged at debug:\n{log}"));
    assert!(!log.contains(SECRET), "a secret reached the log:\n{log}");
    let logged: serde_json::Value = serde_json::from_str(line).expect("a JSON log line");
    let summary: serde_json::Value =
        serde_json::from_str(logged["request"].as_str().expect("the request field")).unwrap();
    assert_eq!(
        summary,
        json!({"tag": "secrets", "bytes": bytes,
               "composite": {"kind": "LLMInference", "name": "qwen-0", "namespace": "team-a"},
               "observed": {"db": {"kind": "Secret", "resourceVersion": "7"}},
               "desired": {"bucket": {"kind": "Bucket"}},
               "credentials": 1, "input": true})
    );
    let _ = Duration::ZERO;
}
