//! The gRPC adapter: Crossplane's `FunctionRunnerService` over the pure core.
//!
//! Flags follow Crossplane's function specification (`--insecure`,
//! `--tls-certs-dir`/`TLS_SERVER_CERTS_DIR`, `--debug`, port 9443). The server
//! is stateless: scale it with more replicas and Crossplane balances calls.

mod accept;
mod connections;
mod content_type;
mod metrics;
mod request_log;
mod request_memory;
mod service;
pub mod tls;

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use tokio::net::TcpListener;
use tonic::codegen::http;
use tonic::transport::Server;

use crate::cli::whole_number::whole_number;
use crate::protocol::server::function_runner_service_server::FunctionRunnerServiceServer;
pub use metrics::Metrics;
pub use service::{Core, Handler};

/// How the server is run.
#[derive(Args, Clone, Debug)]
pub struct ServeArgs {
    /// Address to serve gRPC on.
    #[arg(long, default_value = "0.0.0.0:9443")]
    pub(crate) address: String,
    /// Directory with tls.crt, tls.key and ca.crt; clients must present a certificate signed by ca.crt.
    #[arg(long, env = "TLS_SERVER_CERTS_DIR")]
    pub(crate) tls_certs_dir: Option<PathBuf>,
    /// Serve plaintext gRPC (wins over --tls-certs-dir), as `crossplane render` and local development need.
    #[arg(long)]
    pub(crate) insecure: bool,
    /// Log at debug level: one line per call with the XR's kind, name and the time taken.
    #[arg(long, short = 'd')]
    pub(crate) debug: bool,
    /// Log format.
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) log_format: LogFormat,
    /// Largest request accepted, in MiB (gRPC's default is 4; a reconcile carries every observed resource).
    #[arg(long, default_value_t = 32, value_parser = whole_number::<u32>(1, 2048, " of MiB"))]
    pub(crate) max_recv_message_size: u32,
    /// Request bytes the server holds at once while receiving, in MiB, over
    /// all connections (at least twice --max-recv-message-size, one connection's share); requests beyond it get RESOURCE_EXHAUSTED.
    #[arg(long, default_value_t = Limits::default().request_memory_mib, value_parser = whole_number::<u32>(1, 65536, " of MiB"))]
    pub(crate) request_memory_mib: u32,
    /// Seconds to let calls in flight finish after SIGTERM before closing
    /// every connection (Kubernetes kills the pod 30 s after SIGTERM by default).
    #[arg(long, default_value_t = Limits::default().drain.as_secs(), value_parser = whole_number::<u64>(0, 3600, " of seconds"))]
    pub(crate) drain_seconds: u64,
    /// Most gRPC connections open at once; at the cap the connection idle longest is closed to make room.
    #[arg(long, default_value_t = Limits::default().max_connections, value_parser = whole_number::<u32>(1, 65536, " of connections"))]
    pub(crate) max_connections: u32,
    /// Address for Prometheus metrics at /metrics; empty disables them.
    #[arg(long, default_value = ":8080")]
    pub(crate) metrics_address: String,
    /// Answer every call with only the tag and TTL: the transport's cost floor, for load tests.
    #[arg(long, hide = true)]
    pub(crate) noop: bool,
}

/// Log output format.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LogFormat {
    Text,
    Json,
}

/// Sets up logging for the server. `RUST_LOG` overrides the level.
pub fn init_logging(args: &ServeArgs) {
    let level = if args.debug { "debug" } else { "info" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!("function_inference={level},warn"))
    });
    let mut builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // Colour only on a terminal: `kubectl logs` and log shippers would show
    // the escape codes. On a terminal NO_COLOR still turns it off.
    if !std::io::stderr().is_terminal() {
        builder = builder.with_ansi(false);
    }
    let _ = match args.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// Parses an address that may omit the host (":8080"), as Go flags allow.
pub(crate) fn parse_address(address: &str) -> anyhow::Result<SocketAddr> {
    let full = if address.starts_with(':') {
        format!("0.0.0.0{address}")
    } else {
        address.to_string()
    };
    full.parse()
        .with_context(|| format!("invalid address {address:?}; use HOST:PORT such as 0.0.0.0:9443"))
}

/// Serves until SIGTERM or SIGINT, then lets in-flight calls finish.
pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let tls = match (&args.tls_certs_dir, args.insecure) {
        (_, true) => None,
        (Some(dir), false) => Some(tls::server_config(dir)?),
        (None, false) => bail!(
            "refusing to serve without TLS: pass --tls-certs-dir DIR (or set TLS_SERVER_CERTS_DIR) with \
             tls.crt, tls.key and ca.crt, or pass --insecure for local development"
        ),
    };
    let address = parse_address(&args.address)?;
    let listener = TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let metrics = Metrics::new();
    if !args.metrics_address.is_empty() {
        let at = parse_address(&args.metrics_address)?;
        let listener = TcpListener::bind(at)
            .await
            .with_context(|| format!("cannot serve metrics on {at}"))?;
        // The bound address, so that port 0 shows the port actually chosen.
        let bound = listener.local_addr()?;
        tokio::spawn(metrics::serve(listener, metrics.clone()));
        tracing::info!(address = %bound, "serving metrics at /metrics");
    }
    // The transport's floor answers with the tag alone.
    let core: Core = if args.noop {
        crate::run::noop
    } else {
        crate::run::run_function
    };
    // Build the catalogs now, not on the first call.
    let _ = (crate::sizing::gpus().len(), crate::sizing::models().len());
    let handler = Handler::new(core, metrics);
    let shutdown = shutdown_signal();
    tracing::info!(address = %listener.local_addr()?, tls = tls.is_some(), "serving FunctionRunnerService");
    let limits = Limits {
        max_recv_mib: args.max_recv_message_size,
        max_connections: args.max_connections,
        drain: Duration::from_secs(args.drain_seconds),
        request_memory_mib: args.request_memory_mib,
        ..Limits::default()
    };
    run_with_limits(listener, handler, tls, limits, shutdown).await
}

/// What the server lets clients hold; see docs/limits.md.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest request, in MiB.
    pub max_recv_mib: u32,
    /// Most connections open at once; at the cap, the idlest makes room.
    pub max_connections: u32,
    /// Request bytes held at once while receiving, over all connections, in
    /// MiB; never less than twice `max_recv_mib`, which one connection may hold.
    pub request_memory_mib: u32,
    /// How long calls in flight may take to finish after the shutdown signal.
    pub drain: Duration,
    /// How long a connection may stay open without carrying a call: its TLS
    /// handshake, its HTTP/2 preface and its first call must come within it.
    pub unused_timeout: Duration,
    /// How long a connection that has carried calls may stay without one.
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_recv_mib: 32,
            // Crossplane keeps one connection per function; probes add short ones.
            max_connections: 256,
            // Two requests of the largest size at once, within a 256 MiB pod
            // limit that must also hold what they decode to.
            request_memory_mib: 64,
            // Well within Kubernetes' default grace period of 30 s; calls take milliseconds.
            drain: Duration::from_secs(10),
            // As long as a TLS handshake may take.
            unused_timeout: tls::HANDSHAKE_TIMEOUT,
            // Crossplane polls each XR every minute by default; a connection
            // idle for two has no caller left, and a new one costs a handshake.
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// Serves `handler` on `listener` until `shutdown` completes. Exposed so tests
/// can run the real server on an ephemeral port in-process.
pub async fn run(
    listener: TcpListener,
    handler: Handler,
    tls: Option<tonic::transport::ServerTlsConfig>,
    max_recv_mib: u32,
    shutdown: impl Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    let limits = Limits {
        max_recv_mib,
        ..Limits::default()
    };
    run_with_limits(listener, handler, tls, limits, shutdown).await
}

/// [`run`] with every limit given.
pub async fn run_with_limits(
    listener: TcpListener,
    handler: Handler,
    tls: Option<tonic::transport::ServerTlsConfig>,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    let mib = |n: u32| {
        usize::try_from(n)
            .unwrap_or(usize::MAX)
            .saturating_mul(1024 * 1024)
    };
    let max_bytes = mib(limits.max_recv_mib);
    // One connection may hold one message of the largest size; the budget
    // holds at least two, so that one connection cannot take all of it.
    let request_memory = mib(limits.request_memory_mib).max(max_bytes.saturating_mul(2));
    if request_memory > mib(limits.request_memory_mib) {
        tracing::warn!(
            "--request-memory-mib {} is less than twice --max-recv-message-size {}: holding up to {} MiB of requests at once, so that one connection cannot take the whole budget",
            limits.request_memory_mib,
            limits.max_recv_mib,
            request_memory / (1024 * 1024)
        );
    }
    let (health_reporter, health) = tonic_health::server::health_reporter();
    health_reporter
        .set_serving::<FunctionRunnerServiceServer<Handler>>()
        .await;
    let service = FunctionRunnerServiceServer::new(handler)
        .max_decoding_message_size(max_bytes)
        .max_encoding_message_size(max_bytes);

    // Once the shutdown signal comes, health says NOT_SERVING (seen by
    // Watch streams and by calls on connections still open), then tonic sends
    // GOAWAY and waits for calls in flight.
    let (draining_tx, draining) = tokio::sync::oneshot::channel::<()>();
    let signal = {
        let health_reporter = health_reporter.clone();
        async move {
            shutdown.await;
            health_reporter
                .set_not_serving::<FunctionRunnerServiceServer<Handler>>()
                .await;
            health_reporter
                .set_service_status("", tonic_health::ServingStatus::NotServing)
                .await;
            let _ = draining_tx.send(());
        }
    };
    let mut builder = Server::builder()
        // Crossplane gives a whole reconcile two minutes; no call should outlive that.
        // The limit covers receiving the request too, so a client that stalls
        // mid-request holds its stream (and one concurrency slot) no longer.
        .timeout(Duration::from_secs(120))
        // Crossplane multiplexes calls over one connection; bound what one client can queue.
        .concurrency_limit_per_connection(MAX_STREAMS as usize)
        .max_concurrent_streams(MAX_STREAMS)
        // What HTTP/2 buffers for a connection before the service reads it:
        // 1 MiB per stream and 4 MiB per connection of unread data (hyper's
        // defaults are 1 MiB each; 4 MiB keeps large requests flowing on
        // several streams), frames of 16 KiB (the protocol's minimum and
        // default), and 64 KiB of headers (hyper allows 16 MiB; gRPC
        // metadata is a few hundred bytes).
        .initial_stream_window_size(1024 * 1024)
        .initial_connection_window_size(4 * 1024 * 1024)
        .max_frame_size(16 * 1024)
        .http2_max_header_list_size(64 * 1024)
        // Find dead peers (a stalled client holds nothing for long).
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .http2_keepalive_timeout(Some(Duration::from_secs(10)))
        .tcp_nodelay(true);
    if let Some(tls) = tls {
        builder = builder
            .tls_config(tls)
            .context("invalid TLS configuration")?;
    }
    let connections = connections::Connections::new(
        limits.max_connections as usize,
        connections::IdleLimits {
            unused: limits.unused_timeout,
            idle: limits.idle_timeout,
        },
        "gRPC",
    );
    let incoming = accept::incoming(listener, connections);
    let serving = builder
        .layer(tower::util::MapResponseLayer::new(
            oversized_is_resource_exhausted,
        ))
        .layer(connections::CallsInFlightLayer)
        .layer(content_type::GrpcContentTypeLayer)
        .layer(request_memory::RequestMemoryLayer::new(
            request_memory,
            max_bytes,
        ))
        .add_service(health)
        .add_service(service)
        .serve_with_incoming_shutdown(incoming, signal);
    // tonic waits for every connection to close, which a client may never
    // do (a stream left open, GOAWAY ignored). The drain bounds that wait;
    // returning drops the connections still open (the binary then exits).
    let drained = async {
        if draining.await.is_ok() {
            tokio::time::sleep(limits.drain).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        served = serving => served.context("gRPC server failed")?,
        () = drained => tracing::warn!(
            drain_seconds = limits.drain.as_secs_f64(),
            "connections still open after the drain time; closing them"
        ),
    }
    tracing::info!("stopped serving");
    Ok(())
}

/// Most calls in flight on one connection (RFC 9113 recommends at least 100).
const MAX_STREAMS: u32 = 100;

/// tonic answers a request over the receive limit with OUT_OF_RANGE; gRPC's
/// other implementations (grpc-go, which Crossplane uses) and its status code
/// guide say RESOURCE_EXHAUSTED. The status travels in the headers of a
/// trailers-only response, so rewriting that one code there is enough; the
/// message, which names the size and the limit, is kept.
fn oversized_is_resource_exhausted<B>(mut rsp: http::Response<B>) -> http::Response<B> {
    let headers = rsp.headers_mut();
    let out_of_range = headers
        .get("grpc-status")
        .is_some_and(|v| v.as_bytes() == b"11");
    let too_large = || {
        headers
            .get("grpc-message")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|m| {
                m.replace("%20", " ")
                    .contains("decoded message length too large")
            })
    };
    if out_of_range && too_large() {
        headers.insert("grpc-status", http::HeaderValue::from_static("8"));
    }
    rsp
}

/// Completes on SIGTERM (how Kubernetes stops a pod) or SIGINT. The
/// handlers are installed when this is called, not when the future is
/// first polled: a signal that comes between "serving" and the server's
/// first poll would otherwise kill the process instead of draining it.
pub(crate) fn shutdown_signal() -> impl Future<Output = ()> + Send {
    use tokio::signal::unix::{SignalKind, signal};
    let watch = |kind: SignalKind, name: &'static str| {
        let signal =
            signal(kind).inspect_err(|e| tracing::error!(error = %e, "cannot watch {name}"));
        async move {
            match signal {
                Ok(mut signal) => {
                    signal.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
            name
        }
    };
    let term = watch(SignalKind::terminate(), "SIGTERM");
    let int = watch(SignalKind::interrupt(), "SIGINT");
    async move {
        let name = tokio::select! { name = term => name, name = int => name };
        tracing::info!("{name}: finishing in-flight calls");
    }
}
