//! The transport under hostile or broken clients, on loopback: what the
//! server holds, how it stops, and what it refuses. Each test bounds every
//! wait and stops the server it started.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream as StdTcpStream};
use std::time::{Duration, Instant};

use bytes::Bytes;
use function_inference::server::{self, Handler, Limits, Metrics};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

const RUN_FUNCTION: &str = "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction";

/// utime + stime of `pid`, in clock ticks, from /proc/PID/stat.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc stat");
    // The command name, in parentheses, may hold spaces: count after it.
    let after = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of the line; the state (field 3) is fields[0] here.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// A field of /proc/PID/status in KiB (VmRSS, VmHWM).
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc status"))
}

/// Open file descriptors of `pid`.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("read /proc fd")
        .count()
}

/// Sends a raw HTTP/1.1 request and returns the whole response.
fn http1(addr: SocketAddr, request: &str) -> String {
    let mut stream = StdTcpStream::connect_timeout(&addr, PATIENCE).expect("connect");
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// A raw HTTP/2 connection (no gRPC library), driven by its own task.
async fn h2_connect(addr: SocketAddr) -> h2::client::SendRequest<Bytes> {
    let tcp = tokio::time::timeout(PATIENCE, TcpStream::connect(addr))
        .await
        .expect("connect in time")
        .expect("connect");
    let (send, connection) = tokio::time::timeout(PATIENCE, h2::client::handshake(tcp))
        .await
        .expect("HTTP/2 handshake in time")
        .expect("HTTP/2 handshake");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    send
}

/// A RunFunction request's head with `content_type`.
fn run_function_head(addr: SocketAddr, content_type: Option<&str>) -> http::Request<()> {
    let mut r = http::Request::builder()
        .method("POST")
        .uri(format!("http://{addr}{RUN_FUNCTION}"))
        .header("te", "trailers");
    if let Some(t) = content_type {
        r = r.header("content-type", t);
    }
    r.body(()).unwrap()
}

/// A normal call over a fresh connection is answered.
async fn answers_a_call(addr: SocketAddr, tag: &str) {
    let mut c = client(endpoint(addr, None));
    let rsp = tokio::time::timeout(
        Duration::from_secs(30),
        c.run_function(request(tag, spaceship())),
    )
    .await
    .unwrap_or_else(|_| panic!("call {tag} was not answered in time"))
    .unwrap_or_else(|e| panic!("call {tag} failed: {e}"))
    .into_inner();
    assert_eq!(rsp.meta.unwrap().tag, tag);
}

/// SIGTERM, then the exit status and log, the wait bounded by [`PATIENCE`].
async fn terminate(server: ServerProcess) -> (std::process::ExitStatus, String, Duration) {
    let started = Instant::now();
    server.terminate();
    let (status, log) = tokio::task::spawn_blocking(move || server.wait())
        .await
        .unwrap();
    (status, log, started.elapsed())
}

// ---------------------------------------------------------------------------
// Out of file descriptors
// ---------------------------------------------------------------------------

/// With its descriptors exhausted, the server neither spins (accept fails
/// at once while a connection waits in the listen queue; retrying without a
/// pause took 100-200 % CPU) nor stays stuck: once the connections close it
/// serves again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_file_descriptors_backs_off_and_recovers() {
    let server = ServerProcess::start(&["--insecure", "--metrics-address", "127.0.0.1:0"]);
    let pid = server.pid();
    let metrics = server.metrics.unwrap();
    // Room for a few connections only: lower the running server's limit.
    let limit = open_fds(pid) + 6;
    let set = std::process::Command::new("prlimit")
        .args([
            "--pid",
            &pid.to_string(),
            &format!("--nofile={limit}:{limit}"),
        ])
        .status();
    let Ok(set) = set else {
        eprintln!("prlimit is not installed; skipping");
        return;
    };
    assert!(set.success(), "prlimit failed: {set}");

    // More connections than descriptors, to both ports; the rest wait in
    // the listen queues, so each accept fails with EMFILE.
    let mut held = Vec::new();
    for i in 0..40 {
        let addr = if i % 4 == 0 { metrics } else { server.grpc };
        held.push(StdTcpStream::connect_timeout(&addr, PATIENCE).expect("connect"));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while open_fds(pid) < limit && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(open_fds(pid) >= limit, "the server used up its descriptors");

    // CPU time over two seconds out of descriptors: a spinning accept loop
    // takes about 200 ticks (one core); backing off takes a few.
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_ticks(pid) - before;
    eprintln!("CPU over 2 s out of descriptors: {used} ticks");
    assert!(
        used < 40,
        "{used} ticks of CPU in 2 s: the accept loops spin"
    );

    // The connections close; the server accepts again.
    drop(held);
    answers_a_call(server.grpc, "after-emfile").await;
    let response = tokio::task::spawn_blocking(move || {
        http1(
            metrics,
            "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
    })
    .await
    .unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");

    let (status, log, _) = terminate(server).await;
    assert_eq!(status.code(), Some(0), "log:\n{log}");
    assert!(
        log.contains("cannot accept gRPC connections; retrying with backoff")
            && log.contains("accepting gRPC connections again"),
        "the backoff is logged once and the recovery too:\n{log}"
    );
}

// ---------------------------------------------------------------------------
// Shutdown
// ---------------------------------------------------------------------------

/// Opens a RunFunction stream on `send` and sends part of a body, never the
/// rest: the stream stays open until the server gives up on it.
async fn open_unfinished_call(
    send: &mut h2::client::SendRequest<Bytes>,
    addr: SocketAddr,
) -> h2::SendStream<Bytes> {
    let (_, mut body) = tokio::time::timeout(PATIENCE, send.clone().ready())
        .await
        .expect("the connection is ready in time")
        .expect("the connection is ready")
        .send_request(run_function_head(addr, Some("application/grpc")), false)
        .expect("open a stream");
    // A gRPC message header announcing 1 KiB, and 10 bytes of it.
    let mut partial = vec![0u8, 0, 0, 4, 0];
    partial.extend_from_slice(&[0u8; 10]);
    body.send_data(Bytes::from(partial), false)
        .expect("send part of a body");
    body
}

/// The next status a health Watch stream reports, waited for in bounded time.
async fn next_status(watch: &mut tonic::Streaming<tonic_health::pb::HealthCheckResponse>) -> i32 {
    tokio::time::timeout(Duration::from_secs(30), watch.message())
        .await
        .expect("a health update in time")
        .expect("a health update")
        .expect("the watch goes on")
        .status
}

/// SIGTERM ends the process within the drain time whatever clients do: one
/// that never sends the HTTP/2 preface, one whose call never finishes
/// sending (and that holds its connection past GOAWAY), and a health Watch
/// stream, which never ends on its own and first sees NOT_SERVING. Without a
/// bound the first kept the process alive for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_exits_within_the_drain_time_whatever_clients_do() {
    const DRAIN_SECONDS: u64 = 2;
    let server = ServerProcess::start(&[
        "--insecure",
        "--metrics-address=",
        "--drain-seconds",
        &DRAIN_SECONDS.to_string(),
    ]);
    let silent = TcpStream::connect(server.grpc).await.expect("connect");
    let mut h2 = h2_connect(server.grpc).await;
    let _unfinished = open_unfinished_call(&mut h2, server.grpc).await;

    let channel = endpoint(server.grpc, None)
        .connect()
        .await
        .expect("connect");
    let mut watch = HealthClient::new(channel)
        .watch(HealthCheckRequest {
            service: "apiextensions.fn.proto.v1.FunctionRunnerService".into(),
        })
        .await
        .expect("watch health")
        .into_inner();
    assert_eq!(next_status(&mut watch).await, ServingStatus::Serving as i32);

    let started = Instant::now();
    server.terminate();
    assert_eq!(
        next_status(&mut watch).await,
        ServingStatus::NotServing as i32,
        "draining is NOT_SERVING"
    );
    let (status, log) = tokio::task::spawn_blocking(move || server.wait())
        .await
        .unwrap();
    let took = started.elapsed();
    eprintln!("exited {took:?} after SIGTERM with a {DRAIN_SECONDS} s drain");
    assert_eq!(status.code(), Some(0), "log:\n{log}");
    // The drain, and generous room for a loaded machine; far below the 30 s
    // Kubernetes allows and the 120 s a stalled call could hold out.
    assert!(
        took < Duration::from_secs(DRAIN_SECONDS + 10),
        "exit took {took:?}:\n{log}"
    );
    assert!(
        log.contains("connections still open after the drain time"),
        "log:\n{log}"
    );
    drop(silent);
}

/// The real server in this process on a loopback port, with `limits` (and
/// `tls` when given); stops when `stop` is sent (see [`stop_in_process`]).
async fn in_process(
    limits: Limits,
    tls: Option<tonic::transport::ServerTlsConfig>,
) -> (
    SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<anyhow::Result<()>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handler = Handler::new(function_inference::run::run_function, Metrics::new());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server::run_with_limits(
        listener,
        handler,
        tls,
        limits,
        async {
            let _ = stopped.await;
        },
    ));
    (addr, stop, task)
}

/// Stops a server [`in_process`] started and checks that it stopped in time.
async fn stop_in_process(
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
) {
    let _ = stop.send(());
    tokio::time::timeout(PATIENCE, task)
        .await
        .expect("stops")
        .unwrap()
        .unwrap();
}

/// Reads `stream` until the server closes it (EOF or an error), bounded by
/// 30 s; true if it was closed.
async fn closed_by_server<S: tokio::io::AsyncRead + Unpin>(stream: &mut S) -> bool {
    let mut buf = [0u8; 256];
    tokio::time::timeout(Duration::from_secs(30), async {
        // The server's SETTINGS may come first; then EOF or a reset.
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// A connection that carries no call in time is closed, whatever it sent:
/// nothing, half the HTTP/2 preface, or the preface and its SETTINGS with
/// no stream (which held a slot for ever before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_call_are_closed() {
    let limits = Limits {
        unused_timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let (addr, stop, task) = in_process(limits, None).await;
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut half = TcpStream::connect(addr).await.unwrap();
    half.write_all(b"PRI * HTTP/2.0\r\n").await.unwrap();
    let mut no_stream = TcpStream::connect(addr).await.unwrap();
    // The client preface, then an empty SETTINGS frame.
    no_stream
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();

    // A client that calls is served meanwhile, and stays connected past the timeout.
    let mut good = client(endpoint(addr, None));
    good.run_function(request("first", spaceship()))
        .await
        .expect("served");
    for (what, stalled) in [
        ("silent", &mut silent),
        ("half a preface", &mut half),
        ("no stream", &mut no_stream),
    ] {
        assert!(
            closed_by_server(stalled).await,
            "a {what} connection stays open"
        );
    }
    good.run_function(request("second", spaceship()))
        .await
        .expect("still served");
    stop_in_process(stop, task).await;
}

/// Over TLS, a client that completes the handshake and then says nothing
/// is closed in time too (the handshake's own timeout ends with it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_client_that_never_sends_a_preface_is_closed() {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use tokio_rustls::rustls::{self, RootCertStore};

    let pki = Pki::generate();
    let limits = Limits {
        unused_timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let (addr, stop, task) = in_process(limits, Some(pki.server_tls())).await;

    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(pki.ca_cert.as_bytes()).unwrap())
        .unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_client_auth_cert(
        vec![CertificateDer::from_pem_slice(pki.client.cert.as_bytes()).unwrap()],
        PrivateKeyDer::from_pem_slice(pki.client.key.as_bytes()).unwrap(),
    )
    .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = TcpStream::connect(addr).await.unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .expect("the TLS handshake completes");
    assert!(
        closed_by_server(&mut tls).await,
        "a TLS connection without a preface stays open"
    );
    stop_in_process(stop, task).await;
}

/// Connections that open and say nothing cannot lock a real client out:
/// after 500 silent TCP connections and 500 HTTP/2 connections with no
/// stream (twice the cap of 256), a call is answered at once, because the
/// cap closes the connections that carry no call to make room; before, the
/// call waited in the listen queue for ever. Memory stays bounded meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_cannot_lock_a_client_out() {
    const EACH: usize = 500;
    const MAX_RSS_KIB: u64 = 64 * 1024;
    let server = ServerProcess::start(&["--insecure", "--metrics-address="]);
    let pid = server.pid();
    let mut silent = Vec::new();
    let mut no_stream = Vec::new();
    for _ in 0..EACH {
        silent.push(TcpStream::connect(server.grpc).await.unwrap());
        no_stream.push(h2_connect(server.grpc).await);
    }
    let mut c = client(endpoint(server.grpc, None));
    let answered = tokio::time::timeout(
        Duration::from_secs(10),
        c.run_function(request("during", spaceship())),
    )
    .await;
    let rss = status_kib(pid, "VmHWM");
    let fds = open_fds(pid);
    eprintln!(
        "{} idle connections: server VmHWM {rss} KiB, {fds} descriptors",
        2 * EACH
    );
    let rsp = answered
        .expect("a call is answered while idle connections fill the cap")
        .expect("served")
        .into_inner();
    assert_eq!(rsp.meta.unwrap().tag, "during");
    assert!(
        fds <= 256 + 32,
        "{fds} descriptors open: the cap does not hold"
    );
    assert!(
        rss < MAX_RSS_KIB,
        "VmHWM {rss} KiB exceeds {MAX_RSS_KIB} KiB"
    );
    drop((silent, no_stream));
    let (status, log, _) = terminate(server).await;
    assert_eq!(status.code(), Some(0), "log:\n{log}");
}

/// The metrics port holds the same bound: silent connections cannot keep a
/// scrape out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_cannot_lock_the_metrics_port() {
    let server = ServerProcess::start(&["--insecure", "--metrics-address", "127.0.0.1:0"]);
    let metrics = server.metrics.unwrap();
    let mut silent = Vec::new();
    for _ in 0..300 {
        silent.push(TcpStream::connect(metrics).await.unwrap());
    }
    let scrape = tokio::task::spawn_blocking(move || {
        http1(
            metrics,
            "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
    });
    let response = tokio::time::timeout(Duration::from_secs(10), scrape)
        .await
        .expect("a scrape is answered while silent connections fill the cap")
        .unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    assert!(
        open_fds(server.pid()) <= 64 + 32,
        "the metrics cap does not hold"
    );
    drop(silent);
    let (status, log, _) = terminate(server).await;
    assert_eq!(status.code(), Some(0), "log:\n{log}");
}

// ---------------------------------------------------------------------------
// Memory under partial bodies
// ---------------------------------------------------------------------------

/// Sends up to `total` bytes of `chunk` on `body` as the server grants flow
/// control, never ending the stream; stops when the server stops granting
/// (it refused the call or holds what it will hold). Returns the bytes sent
/// and the stream, which resets the call when dropped.
async fn send_partial(
    mut body: h2::SendStream<Bytes>,
    chunk: Bytes,
    total: usize,
) -> (usize, h2::SendStream<Bytes>) {
    let mut sent = 0;
    // Each turn sends at least a byte or waits at most 2 s; the count bounds the rest.
    for _ in 0..100_000 {
        if sent >= total {
            break;
        }
        body.reserve_capacity((total - sent).min(chunk.len()));
        let granted = tokio::time::timeout(
            Duration::from_secs(2),
            std::future::poll_fn(|cx| body.poll_capacity(cx)),
        )
        .await;
        let n = match granted {
            Ok(Some(Ok(n))) => n.min(total - sent),
            _ => break,
        };
        if n > 0 && body.send_data(chunk.slice(..n), false).is_err() {
            break;
        }
        sent += n;
    }
    (sent, body)
}

/// Partial request bodies on many streams of a few connections cannot make
/// the server hold more than its request memory budget: before the budget,
/// 64 streams of 8 MiB partial bodies took 515 MiB in half a second. The
/// server answers while under attack (refusing with RESOURCE_EXHAUSTED is an
/// answer) and serves normally once the attackers leave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_bodies_cannot_exhaust_memory() {
    const CONNECTIONS: usize = 2;
    const STREAMS: usize = 32;
    const MESSAGE: usize = 8 * 1024 * 1024;
    /// The budget given below, plus the runtime, HTTP/2 windows (4 MiB per
    /// connection) and allocator slack.
    const MAX_HWM_KIB: u64 = 128 * 1024;
    let server = ServerProcess::start(&[
        "--insecure",
        "--metrics-address=",
        "--max-recv-message-size",
        "8",
        "--request-memory-mib",
        "32",
    ]);
    let pid = server.pid();
    let idle = status_kib(pid, "VmHWM");

    // One message header announcing just under 8 MiB, then zeros, shared by
    // every stream without copies.
    let mut message = vec![0u8; MESSAGE];
    message[1..5].copy_from_slice(&((MESSAGE - 5) as u32).to_be_bytes());
    let chunk = Bytes::from(message);
    let mut connections = Vec::new();
    let mut senders = Vec::new();
    for _ in 0..CONNECTIONS {
        let send = h2_connect(server.grpc).await;
        for _ in 0..STREAMS {
            let ready = tokio::time::timeout(PATIENCE, send.clone().ready()).await;
            let Ok(Ok(mut ready)) = ready else { break };
            let Ok((_, body)) = ready.send_request(
                run_function_head(server.grpc, Some("application/grpc")),
                false,
            ) else {
                break;
            };
            // One byte short of the whole message: it never completes.
            senders.push(tokio::spawn(send_partial(body, chunk.clone(), MESSAGE - 1)));
        }
        connections.push(send);
    }
    let mut sent = 0;
    let mut streams = Vec::new();
    for s in senders {
        let (n, stream) = tokio::time::timeout(PATIENCE, s)
            .await
            .expect("the attack stops in time")
            .unwrap();
        sent += n;
        streams.push(stream);
    }
    let hwm = status_kib(pid, "VmHWM");
    let rss = status_kib(pid, "VmRSS");
    eprintln!(
        "partial bodies: {} MiB sent on {} streams; server VmHWM {idle} KiB idle, {hwm} KiB after, VmRSS {rss} KiB",
        sent / (1024 * 1024),
        CONNECTIONS * STREAMS
    );
    assert!(
        hwm < MAX_HWM_KIB,
        "VmHWM {hwm} KiB exceeds {MAX_HWM_KIB} KiB"
    );

    // Under attack the server still answers: served, or refused for want of memory.
    let mut c = client(endpoint(server.grpc, None));
    let during = tokio::time::timeout(
        Duration::from_secs(30),
        c.run_function(request("during", spaceship())),
    )
    .await
    .expect("an answer during the attack");
    if let Err(status) = &during {
        assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    }

    // The attackers leave; the budget is whole again.
    drop(streams);
    drop(connections);
    let mut served = false;
    for _ in 0..50 {
        if c.run_function(request("after", spaceship())).await.is_ok() {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(served, "the server serves once the attackers leave");
    let (status, log, _) = terminate(server).await;
    assert_eq!(status.code(), Some(0), "log:\n{log}");
}

/// One connection holding many partial bodies takes at most its share of
/// the request memory budget (one message of the largest size), so a call
/// on another connection is served during the attack; before, the attacker
/// held the whole budget and that call got RESOURCE_EXHAUSTED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connection_cannot_take_the_whole_request_budget() {
    const STREAMS: usize = 4;
    const MESSAGE: usize = 8 * 1024 * 1024;
    let server = ServerProcess::start(&[
        "--insecure",
        "--metrics-address=",
        "--max-recv-message-size",
        "8",
        "--request-memory-mib",
        "16",
    ]);
    let mut message = vec![0u8; MESSAGE];
    message[1..5].copy_from_slice(&((MESSAGE - 5) as u32).to_be_bytes());
    let chunk = Bytes::from(message);
    let send = h2_connect(server.grpc).await;
    // One stream after another, each one byte short of a whole message: two
    // would hold all 16 MiB but two bytes, and the rest are refused.
    let mut streams = Vec::new();
    for _ in 0..STREAMS {
        let mut ready = tokio::time::timeout(PATIENCE, send.clone().ready())
            .await
            .expect("a stream in time")
            .expect("a stream");
        let (_, body) = ready
            .send_request(
                run_function_head(server.grpc, Some("application/grpc")),
                false,
            )
            .expect("a request");
        let (_, stream) =
            tokio::time::timeout(PATIENCE, send_partial(body, chunk.clone(), MESSAGE - 1))
                .await
                .expect("the attack stops in time");
        streams.push(stream);
    }
    // What is still in flight reaches the server.
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Another client, with a request of a few hundred KiB, is served.
    let mut c = client(endpoint(server.grpc, None));
    let mut req = request("other-connection", spaceship());
    pad_observed(&mut req, 512 * 1024);
    let rsp = tokio::time::timeout(Duration::from_secs(30), c.run_function(req))
        .await
        .expect("an answer during the attack")
        .expect("a call on another connection is served")
        .into_inner();
    assert_eq!(rsp.meta.unwrap().tag, "other-connection");
    drop((streams, send));
    let (status, log, _) = terminate(server).await;
    assert_eq!(status.code(), Some(0), "log:\n{log}");
}

// ---------------------------------------------------------------------------
// What is refused
// ---------------------------------------------------------------------------

/// A request whose content-type is not gRPC, or names a codec other than
/// protobuf, gets HTTP 415, as the gRPC specification asks; tonic alone
/// decoded any body as protobuf.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_is_not_grpc_gets_415() {
    let (addr, stop, task) = in_process(Limits::default(), None).await;
    let send = h2_connect(addr).await;
    for content_type in [
        Some("application/json"),
        Some("application/grpc+json"),
        Some("text/plain"),
        None,
    ] {
        let mut ready = tokio::time::timeout(PATIENCE, send.clone().ready())
            .await
            .unwrap()
            .unwrap();
        let (response, mut body) = ready
            .send_request(run_function_head(addr, content_type), false)
            .unwrap();
        // An empty protobuf message, framed as gRPC: valid but for its type.
        // The server may answer from the headers and reset the stream before
        // the body is sent; then sending fails, and the answer still counts.
        let _ = body.send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), true);
        let response = tokio::time::timeout(PATIENCE, response)
            .await
            .expect("an answer in time")
            .expect("an HTTP response");
        assert_eq!(response.status(), 415, "content-type {content_type:?}");
    }
    // The same with application/grpc is a gRPC call (answered with status 200).
    let mut ready = send.clone().ready().await.unwrap();
    let (response, mut body) = ready
        .send_request(run_function_head(addr, Some("application/grpc")), false)
        .unwrap();
    body.send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), true)
        .unwrap();
    let response = tokio::time::timeout(PATIENCE, response)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(response.status(), 200);
    stop_in_process(stop, task).await;
}

/// The metrics port offers GET and HEAD on /metrics; other methods get 405
/// with an Allow header.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_answer_only_get_and_head() {
    let server = ServerProcess::start(&["--insecure", "--metrics-address", "127.0.0.1:0"]);
    let metrics = server.metrics.unwrap();
    let ask = move |method: &'static str| {
        tokio::task::spawn_blocking(move || {
            http1(
                metrics,
                &format!(
                    "{method} /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                ),
            )
        })
    };
    let get = ask("GET").await.unwrap();
    assert!(get.starts_with("HTTP/1.1 200 OK"), "{get}");
    let head = ask("HEAD").await.unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(head.ends_with("\r\n\r\n"), "HEAD has no body: {head}");
    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        let response = ask(method).await.unwrap();
        assert!(
            response.starts_with("HTTP/1.1 405 Method Not Allowed"),
            "{method}: {response}"
        );
        assert!(
            response
                .to_ascii_lowercase()
                .contains("\r\nallow: get, head\r\n"),
            "{method}: {response}"
        );
    }
    let (status, log, _) = terminate(server).await;
    assert_eq!(status.code(), Some(0), "log:\n{log}");
}
