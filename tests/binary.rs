//! The real `function-inference` binary as Kubernetes runs it: flags,
//! SIGTERM with calls in flight, and the metrics endpoint.

mod support;

use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::mpsc;
use std::task::Poll;

use function_inference::protocol::fnv1;
use serde_json::{Value, json};
use support::*;

#[test]
fn refuses_to_serve_without_tls_or_insecure() {
    let out = output_within(binary().args(["--address", "127.0.0.1:0", "--metrics-address="]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains("--tls-certs-dir") && stderr.contains("--insecure"),
        "the error names both flags: {stderr}"
    );
}

#[test]
fn refuses_a_certs_dir_without_certificates() {
    let empty = tempfile::tempdir().unwrap();
    let out = output_within(
        binary()
            .args(["--address", "127.0.0.1:0", "--metrics-address="])
            .arg("--tls-certs-dir")
            .arg(empty.path()),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    let missing = empty.path().join("tls.crt");
    assert!(
        stderr.contains(&format!("cannot read {}", missing.display())),
        "the error names the missing file: {stderr}"
    );
}

/// The certificates directory can come from TLS_SERVER_CERTS_DIR, as
/// Crossplane's function runtime sets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_mutual_tls_from_the_environment() {
    let pki = Pki::generate();
    let server = ServerProcess::start_with_env(
        &["--metrics-address="],
        &[("TLS_SERVER_CERTS_DIR", pki.certs_dir().as_os_str())],
    );
    let mut c = client(endpoint(
        server.grpc,
        Some(client_tls(&pki.ca_cert, Some(&pki.client))),
    ));
    let rsp = c
        .run_function(request("over-tls", spaceship()))
        .await
        .expect("a client of the CA is served")
        .into_inner();
    assert_eq!(rsp.meta.unwrap().tag, "over-tls");
    server.terminate();
    let (status, log) = server.wait();
    assert_eq!(status.code(), Some(0), "log:\n{log}");
}

/// Polls `fut` once, so that a gRPC call hands its request to the channel.
async fn poll_once<F: Future + Unpin>(fut: &mut F) {
    std::future::poll_fn(|cx| {
        let _ = Pin::new(&mut *fut).poll(cx);
        Poll::Ready(())
    })
    .await;
}

/// SIGTERM lets calls in flight finish, then the process exits 0.
///
/// To know the calls were in flight without sleeping: all calls share one
/// HTTP/2 connection, whose streams are opened in the order the calls are
/// started. The large calls are started first, a small marker call last.
/// Once the marker is answered the server has accepted its stream, so it has
/// accepted every earlier one, and HTTP/2 graceful shutdown (GOAWAY with the
/// last accepted stream) must complete them. SIGTERM is sent right then, while
/// the large requests are typically still being received.
///
/// The large requests, all in flight on one connection, must together fit in
/// that connection's share of the request memory (one message of the largest
/// size, set here to 64 MiB); beyond it the server rightly refuses with
/// RESOURCE_EXHAUSTED, which would fail the test whenever the machine is slow
/// to answer the first calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_calls_in_flight_finish() {
    const LARGE: usize = 19;
    const SHARE_MIB: usize = 64;
    let server = ServerProcess::start(&[
        "--insecure",
        "--metrics-address=",
        &format!("--max-recv-message-size={SHARE_MIB}"),
    ]);
    let channel = endpoint(server.grpc, None)
        .connect()
        .await
        .expect("connect to the binary");
    let c = fnv1::function_runner_service_client::FunctionRunnerServiceClient::new(channel)
        .max_decoding_message_size(usize::MAX)
        .max_encoding_message_size(usize::MAX);
    let mut warm = c.clone();
    warm.run_function(request("warm-up", spaceship()))
        .await
        .expect("the server answers");

    let mut large = Vec::new();
    let mut in_flight_bytes = 0;
    for i in 0..LARGE {
        let mut req = request(&format!("large-{i}"), spaceship());
        pad_observed(&mut req, 3 * 1024 * 1024);
        in_flight_bytes += prost::Message::encoded_len(&req);
        let mut c = c.clone();
        let mut call = Box::pin(async move { c.run_function(req).await });
        poll_once(&mut call).await;
        large.push(call);
    }
    assert!(
        in_flight_bytes < SHARE_MIB * 1024 * 1024,
        "the large calls ({in_flight_bytes} bytes) must fit the connection's share"
    );
    let large: Vec<_> = large.into_iter().map(tokio::spawn).collect();

    let mut marker = c.clone();
    let rsp = marker
        .run_function(request("marker", spaceship()))
        .await
        .expect("the marker call is answered")
        .into_inner();
    assert_eq!(rsp.meta.unwrap().tag, "marker");
    server.terminate();
    let done_before = large.iter().filter(|h| h.is_finished()).count();
    eprintln!("{done_before} of {LARGE} large calls had finished when SIGTERM was sent");

    for (i, handle) in large.into_iter().enumerate() {
        let rsp = tokio::time::timeout(PATIENCE, handle)
            .await
            .unwrap_or_else(|_| panic!("large call {i} hung"))
            .expect("the call's task does not panic")
            .unwrap_or_else(|e| panic!("large call {i} failed after SIGTERM: {e:?}"))
            .into_inner();
        assert_eq!(rsp.meta.unwrap().tag, format!("large-{i}"));
        assert_eq!(
            rsp.results,
            vec![fatal(
                "UnknownKind",
                &unknown_kind_message("Spaceship", "example.org/v1")
            )]
        );
    }
    let (status, log) = tokio::task::spawn_blocking(move || server.wait())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0), "log:\n{log}");
    assert!(
        log.contains("SIGTERM: finishing in-flight calls") && log.contains("stopped serving"),
        "log:\n{log}"
    );
}

/// A SIGTERM the moment the server says it serves stops it cleanly: the
/// handler is installed before that line, so the signal cannot take the
/// default action (death by SIGTERM, no drain), which it did on a loaded
/// machine when the handler waited for the server's first poll.
#[test]
fn sigterm_as_soon_as_it_serves_is_a_clean_stop() {
    // The race was narrow: a few starts make a miss show.
    for _ in 0..10 {
        let server = ServerProcess::start(&["--insecure", "--metrics-address="]);
        server.terminate();
        let (status, log) = server.wait();
        assert_eq!(status.code(), Some(0), "log:\n{log}");
        assert!(
            log.contains("SIGTERM: finishing in-flight calls"),
            "log:\n{log}"
        );
    }
}

/// GETs `path` over plain HTTP/1.1 and returns the status line and body.
fn http_get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to the metrics port");
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response
        .split_once("\r\n\r\n")
        .expect("an HTTP response with a body");
    (
        head.lines().next().unwrap_or_default().to_string(),
        body.to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_endpoint_counts_calls() {
    let server = ServerProcess::start(&["--insecure", "--metrics-address", "127.0.0.1:0"]);
    let metrics = server.metrics.expect("the binary logs its metrics address");
    let mut c = client(endpoint(server.grpc, None));
    for tag in ["one", "two"] {
        c.run_function(request(tag, spaceship())).await.unwrap();
    }
    let mut base = spaceship();
    base["kind"] = json!("Starbase");
    c.run_function(request("three", base)).await.unwrap();

    let (status, body) = tokio::task::spawn_blocking(move || http_get(metrics, "/metrics"))
        .await
        .unwrap();
    assert_eq!(status, "HTTP/1.1 200 OK");
    let lines: Vec<&str> = body.lines().collect();
    for want in [
        // Kinds the function does not compose share one label value.
        r#"function_inference_run_function_calls_total{kind="other"} 3"#,
        r#"function_inference_run_function_results_total{kind="other",severity="fatal"} 3"#,
    ] {
        assert!(lines.contains(&want), "missing {want:?} in:\n{body}");
    }
    // Callers choose kinds: 500 distinct ones and one of 1 MiB leave the page
    // as small as before, give or take longer counts (it grew by every kind
    // sent: 2,000 kinds and one of 1 MiB made it 28 MB).
    let before = body.len();
    for i in 0..500 {
        let mut xr = spaceship();
        xr["kind"] = json!(format!("Kind{i}"));
        c.run_function(request("many", xr)).await.unwrap();
    }
    let mut huge = spaceship();
    huge["kind"] = json!("K".repeat(1024 * 1024));
    c.run_function(request("huge", huge)).await.unwrap();
    let (_, body) = tokio::task::spawn_blocking(move || http_get(metrics, "/metrics"))
        .await
        .unwrap();
    assert!(
        body.len() <= before + 1024,
        "the page grew from {before} to {} bytes",
        body.len()
    );
    assert!(body.contains(r#"function_inference_run_function_calls_total{kind="other"} 504"#));

    let (status, _) = tokio::task::spawn_blocking(move || http_get(metrics, "/other"))
        .await
        .unwrap();
    assert_eq!(status, "HTTP/1.1 404 Not Found");

    server.terminate();
    let (status, log) = tokio::task::spawn_blocking(move || server.wait())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0), "log:\n{log}");
}

/// A request-memory budget below two of the largest requests is raised to
/// two, and the log says so rather than serving with another number than
/// the one given.
#[test]
fn a_request_memory_budget_too_small_for_two_requests_is_raised_and_logged() {
    let server = ServerProcess::start(&[
        "--insecure",
        "--metrics-address=",
        "--max-recv-message-size",
        "100",
        "--request-memory-mib",
        "64",
    ]);
    server.terminate();
    let (_, log) = server.wait();
    let warnings: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["level"] == "WARN")
        .map(|v| v["message"].clone())
        .collect();
    assert_eq!(
        warnings,
        [json!(
            "--request-memory-mib 64 is less than twice --max-recv-message-size 100: holding up to 200 MiB \
             of requests at once, so that one connection cannot take the whole budget"
        )],
        "{log}"
    );
}

/// Text logs written to a pipe, as under `kubectl logs`, carry no ANSI
/// colour codes: there they would show as escape sequences.
#[test]
fn text_logs_to_a_pipe_have_no_colour_codes() {
    let mut child = binary()
        .args([
            "--insecure",
            "--address",
            "127.0.0.1:0",
            "--metrics-address=",
        ])
        .args(["--log-format", "text"])
        // Colour must be off without the user's help.
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the binary");
    let stderr = child.stderr.take().unwrap();
    let (first_line, first_line_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = Vec::new();
        let _ = BufReader::new(stderr).read_until(b'\n', &mut line);
        let _ = first_line.send(line);
    });
    let line = first_line_rx.recv_timeout(PATIENCE);
    // Only our own child, by its handle; its exit status is not the point.
    let _ = child.kill();
    let _ = child.wait();
    let line = line.expect("the server logs within PATIENCE");
    let text = String::from_utf8_lossy(&line);
    assert!(!line.contains(&0x1b), "an ESC byte in {text:?}");
    assert!(
        text.contains(
            " INFO function_inference::server: serving FunctionRunnerService address=127.0.0.1:"
        ) && text.ends_with(" tls=false\n"),
        "{text:?}"
    );
}
