//! The real gRPC server, in-process on a loopback port, called the way
//! Crossplane calls it: over mutual TLS with certificates read through the
//! `--tls-certs-dir` code path.

mod support;

use function_inference::protocol::fnv1;
use serde_json::json;
use support::*;
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

/// The response function-inference gives for `request(tag, spaceship())`
/// with the given TTL and desired state.
fn spaceship_refused(tag: &str, ttl: i64, desired: fnv1::State) -> fnv1::RunFunctionResponse {
    fnv1::RunFunctionResponse {
        meta: meta(tag, ttl),
        desired: Some(desired),
        results: vec![fatal(
            "UnknownKind",
            &unknown_kind_message("Spaceship", "example.org/v1"),
        )],
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_admits_only_clients_of_the_ca() {
    let pki = Pki::generate();
    let server = TestServer::start(Some(pki.server_tls()), 4).await;

    // A client certificate signed by ca.crt: the call is answered, tag echoed.
    let mut good = client(server.endpoint(Some(client_tls(&pki.ca_cert, Some(&pki.client)))));
    let rsp = good
        .run_function(request("good-client", spaceship()))
        .await
        .expect("a client with a certificate from the CA is served")
        .into_inner();
    assert_eq!(rsp.meta.unwrap().tag, "good-client");

    // No client certificate: the handshake is refused, so the call fails.
    let mut anonymous = client(server.endpoint(Some(client_tls(&pki.ca_cert, None))));
    let refused = anonymous
        .run_function(request("anonymous", spaceship()))
        .await
        .expect_err("a client without a certificate must be refused");
    assert_ne!(refused.code(), Code::Ok);

    // A client certificate from another CA: refused as well.
    let mut rogue =
        client(server.endpoint(Some(client_tls(&pki.ca_cert, Some(&pki.rogue_client)))));
    let refused = rogue
        .run_function(request("rogue", spaceship()))
        .await
        .expect_err("a client with a certificate from another CA must be refused");
    assert_ne!(refused.code(), Code::Ok);

    // The refusals did not disturb the server.
    let rsp = good
        .run_function(request("still-good", spaceship()))
        .await
        .expect("the server still serves")
        .into_inner();
    assert_eq!(rsp.meta.unwrap().tag, "still-good");

    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_reports_serving() {
    let pki = Pki::generate();
    let server = TestServer::start(Some(pki.server_tls()), 4).await;
    let channel = server
        .endpoint(Some(client_tls(&pki.ca_cert, Some(&pki.client))))
        .connect()
        .await
        .expect("connect over mutual TLS");
    let mut health = HealthClient::new(channel);
    for service in ["", "apiextensions.fn.proto.v1.FunctionRunnerService"] {
        let status = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap_or_else(|e| panic!("health check of {service:?}: {e}"))
            .into_inner()
            .status;
        assert_eq!(
            status,
            ServingStatus::Serving as i32,
            "health of service {service:?}"
        );
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tag_ttl_and_desired_pass_through() {
    let pki = Pki::generate();
    let server = TestServer::start(Some(pki.server_tls()), 4).await;
    let mut c = client(server.endpoint(Some(client_tls(&pki.ca_cert, Some(&pki.client)))));

    // No step input: the SDKs' default TTL of 60 s.
    let rsp = c
        .run_function(request("default-ttl", spaceship()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        rsp,
        spaceship_refused("default-ttl", 60, fnv1::State::default())
    );

    // The step input sets the TTL.
    let mut req = request("input-ttl", spaceship());
    req.input = Some(input(json!({"ttl": "5m"})));
    let rsp = c.run_function(req).await.unwrap().into_inner();
    assert_eq!(
        rsp,
        spaceship_refused("input-ttl", 300, fnv1::State::default())
    );

    // What an earlier step desired comes back unchanged: the XR's status
    // field and the composed resource with its connection details and
    // readiness.
    let mut req = request("pass-through", spaceship());
    req.desired = Some(earlier_desired());
    let rsp = c.run_function(req).await.unwrap().into_inner();
    assert_eq!(rsp.desired, Some(earlier_desired()));
    assert_eq!(
        rsp,
        spaceship_refused("pass-through", 60, earlier_desired())
    );

    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_kind_is_fatal_and_the_server_keeps_serving() {
    let pki = Pki::generate();
    let server = TestServer::start(Some(pki.server_tls()), 4).await;
    let mut c = client(server.endpoint(Some(client_tls(&pki.ca_cert, Some(&pki.client)))));

    let rsp = c
        .run_function(request("spaceship", spaceship()))
        .await
        .expect("a FATAL result is an answer, not a gRPC error")
        .into_inner();
    assert_eq!(rsp.results.len(), 1);
    let result = &rsp.results[0];
    assert_eq!(result.severity, fnv1::Severity::Fatal as i32);
    assert!(
        result.message.contains("\"Spaceship\""),
        "the message names the kind: {}",
        result.message
    );

    let mut other = spaceship();
    other["kind"] = json!("Starbase");
    let rsp = c
        .run_function(request("starbase", other))
        .await
        .expect("the server still serves")
        .into_inner();
    assert_eq!(
        rsp.results,
        vec![fatal(
            "UnknownKind",
            &unknown_kind_message("Starbase", "example.org/v1")
        )]
    );

    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_over_the_size_limit_is_refused_and_the_server_keeps_serving() {
    let pki = Pki::generate();
    let server = TestServer::start(Some(pki.server_tls()), 1).await;
    let mut c = client(server.endpoint(Some(client_tls(&pki.ca_cert, Some(&pki.client)))));

    let mut big = request("too-big", spaceship());
    pad_observed(&mut big, 2 * 1024 * 1024);
    let status = c
        .run_function(big)
        .await
        .expect_err("a 2 MiB request exceeds a 1 MiB limit");
    // RESOURCE_EXHAUSTED, as grpc-go answers (tonic's own OUT_OF_RANGE is
    // rewritten by the server); the message names the size and the limit.
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(
        status
            .message()
            .starts_with("Error, decoded message length too large: found ")
            && status
                .message()
                .ends_with(" bytes, the limit is: 1048576 bytes"),
        "the message names the limit: {status:?}"
    );

    // Just under the limit is fine, on the same connection.
    let mut fits = request("fits", spaceship());
    pad_observed(&mut fits, 512 * 1024);
    let rsp = c
        .run_function(fits)
        .await
        .expect("the server still serves")
        .into_inner();
    assert_eq!(rsp.meta.unwrap().tag, "fits");

    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_calls_and_results_by_kind_and_severity() {
    let pki = Pki::generate();
    let server = TestServer::start(Some(pki.server_tls()), 4).await;
    let mut c = client(server.endpoint(Some(client_tls(&pki.ca_cert, Some(&pki.client)))));

    for i in 0..3 {
        c.run_function(request(&format!("ship-{i}"), spaceship()))
            .await
            .unwrap();
    }
    let mut starbase = spaceship();
    starbase["kind"] = json!("Starbase");
    c.run_function(request("starbase", starbase)).await.unwrap();
    let mut bad_input = request("bad-input", spaceship());
    bad_input.input = Some(input(json!({"ttl": 5})));
    c.run_function(bad_input).await.unwrap();

    let text = server.metrics.encode();
    let lines: Vec<&str> = text.lines().collect();
    for want in [
        "# TYPE function_inference_run_function_calls counter",
        // Kinds the function does not compose share one label value.
        r#"function_inference_run_function_calls_total{kind="other"} 4"#,
        // The input is read before the XR, so that call has no kind.
        r#"function_inference_run_function_calls_total{kind=""} 1"#,
        "# TYPE function_inference_run_function_results counter",
        r#"function_inference_run_function_results_total{kind="other",severity="fatal"} 4"#,
        r#"function_inference_run_function_results_total{kind="",severity="fatal"} 1"#,
        "# TYPE function_inference_run_function_duration_seconds histogram",
        r#"function_inference_run_function_duration_seconds_count{kind="other"} 4"#,
    ] {
        assert!(
            lines.contains(&want),
            "missing line {want:?} in the exposition:\n{text}"
        );
    }
    assert!(
        !text.contains("severity=\"warning\"") && !text.contains("severity=\"normal\""),
        "no results other than FATAL were returned:\n{text}"
    );

    server.stop().await;
}

/// A client that opens TCP and never speaks, and one that starts a TLS
/// handshake and never finishes it, do not keep a good client from being
/// served; the half-done handshake is closed after the handshake timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_clients_do_not_block_others() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let pki = Pki::generate();
    let tls = pki.server_tls().timeout(std::time::Duration::from_secs(1));
    let server = TestServer::start(Some(tls), 4).await;

    let mut silent = Vec::new();
    for _ in 0..8 {
        silent.push(tokio::net::TcpStream::connect(server.addr).await.unwrap());
    }
    // The first bytes of a TLS ClientHello record, then nothing.
    let mut half_hello = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    half_hello
        .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .await
        .unwrap();

    let mut good = client(server.endpoint(Some(client_tls(&pki.ca_cert, Some(&pki.client)))));
    let rsp = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        good.run_function(request("served", spaceship())),
    )
    .await
    .expect("a good client is served while others stall")
    .expect("the call succeeds")
    .into_inner();
    assert_eq!(rsp.meta.unwrap().tag, "served");

    // The server closes the stalled handshake (EOF or reset) on its own.
    let mut buf = [0u8; 64];
    let closed = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        half_hello.read(&mut buf),
    )
    .await
    .expect("the server closes a stalled TLS handshake after its timeout");
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    drop(silent);
    server.stop().await;
}

/// rustls speaks TLS 1.2 and 1.3 only: a TLS 1.1 client is refused. Checked
/// with the openssl command-line client when it is installed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_1_1_is_refused() {
    let pki = Pki::generate();
    let server = TestServer::start(Some(pki.server_tls()), 4).await;
    let addr = server.addr.to_string();
    let dir = pki.certs_dir().to_path_buf();
    let run = |version: &'static str| {
        let addr = addr.clone();
        let dir = dir.clone();
        tokio::task::spawn_blocking(move || {
            std::process::Command::new("openssl")
                .args(["s_client", "-connect", &addr, version, "-CAfile"])
                .arg(dir.join("ca.crt"))
                .stdin(std::process::Stdio::null())
                .output()
        })
    };
    let Ok(tls11) = run("-tls1_1").await.unwrap() else {
        eprintln!("openssl is not installed; skipping the TLS 1.1 check");
        server.stop().await;
        return;
    };
    let out = String::from_utf8_lossy(&tls11.stdout).into_owned()
        + &String::from_utf8_lossy(&tls11.stderr);
    assert!(!tls11.status.success(), "TLS 1.1 must be refused:\n{out}");
    // The server answers the TLS 1.1 ClientHello with an alert: no
    // certificate is sent and no cipher is agreed.
    assert!(
        out.contains("no peer certificate available") && out.contains("Cipher is (NONE)"),
        "no TLS 1.1 session:\n{out}"
    );
    // The same client speaking TLS 1.2 gets through the protocol negotiation
    // (and then needs a client certificate, which it does not present).
    let tls12 = run("-tls1_2").await.unwrap().unwrap();
    let out12 = String::from_utf8_lossy(&tls12.stdout).into_owned();
    assert!(out12.contains("TLSv1.2"), "TLS 1.2 is negotiated:\n{out12}");
    server.stop().await;
}
