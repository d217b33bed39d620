//! Load tool for function-inference: a closed loop of `-c` concurrent
//! `RunFunction` calls on ONE HTTP/2 connection (as Crossplane calls a
//! function), every response checked, results as JSON on stdout.
//!
//! ```sh
//! # the server under test (or the same binary with --noop for the transport floor)
//! function-inference --insecure --address 127.0.0.1:9443 --metrics-address "" &
//! cargo run --release --example loadgen -- --address 127.0.0.1:9443 --insecure \
//!     -c 16 -d 10 --payload examples/loadgen/llm-inference.yaml --observed 100 --pid $!
//! # the function against its own --noop floor, alternating, in one run
//! cargo run --release --example loadgen -- --compare --rounds 10 -d 3 --address 127.0.0.1:9443 \
//!     --insecure --payload examples/loadgen/llm-inference.yaml \
//!     -- target/release/function-inference --insecure --metrics-address ""
//! # time to SERVING from a cold start
//! cargo run --release --example loadgen -- --startup --address 127.0.0.1:9444 --insecure \
//!     -- target/release/function-inference --insecure --address 127.0.0.1:9444 --metrics-address ""
//! ```
//!
//! With `--pid` it reads the server's CPU time (sum of
//! `/proc/PID/task/*/schedstat`, in ns; `/proc/PID/stat` ticks as a cross
//! check) and memory (`VmRSS`, `VmHWM` from `/proc/PID/status`) before and
//! after the measured window, and reports CPU per RPC. Only loopback
//! addresses are accepted, and every run is bounded in time.

#[path = "../../tests/support/workload.rs"]
mod workload;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use function_inference::protocol::{fnv1, server, to_server};
use prost::Message;
use serde::Deserialize;
use serde_json::{Value, json};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

const RUN_FUNCTION: &str = "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction";
/// Longest run accepted: the tool must stop by itself.
const MAX_SECONDS: u64 = 300;

#[derive(Parser, Debug)]
#[command(about = "Closed-loop load test of a function-inference server on loopback")]
struct Args {
    /// Server address (loopback only).
    #[arg(long, default_value = "127.0.0.1:9443")]
    address: SocketAddr,
    /// Plaintext gRPC.
    #[arg(long, conflicts_with = "tls_certs_dir")]
    insecure: bool,
    /// Directory with the client's tls.crt and tls.key and the CA's ca.crt.
    #[arg(long)]
    tls_certs_dir: Option<PathBuf>,
    /// Server name to verify in TLS.
    #[arg(long, default_value = "localhost")]
    tls_server_name: String,
    /// Concurrent calls in flight.
    #[arg(short = 'c', long, default_value_t = 16)]
    concurrency: usize,
    /// Seconds to measure.
    #[arg(short = 'd', long, default_value_t = 10)]
    duration: u64,
    /// Seconds of load before measuring (not counted).
    #[arg(long, default_value_t = 1)]
    warmup: u64,
    /// YAML payload: composite, observed (name -> object), desired (name -> object), input.
    #[arg(long)]
    payload: Option<PathBuf>,
    /// Synthesize N realistic observed composed resources (with managedFields) instead of the payload's.
    #[arg(long)]
    observed: Option<usize>,
    /// Cycle through N copies of the composite that differ in one annotation,
    /// so that no two consecutive calls carry the same XR (defeats the
    /// server's response memo when N exceeds its size).
    #[arg(long, default_value_t = 1)]
    distinct: usize,
    /// Send requests without a tag. By default each distinct request
    /// carries a tag of its own, as Crossplane tags a request with a hash
    /// of its content; untagged, the server recognises a repeated request
    /// by its bytes instead.
    #[arg(long)]
    untagged: bool,
    /// Server PID, to report its CPU time per call and its memory.
    #[arg(long)]
    pid: Option<u32>,
    /// Measure the time from starting the command after `--` until health reports SERVING.
    #[arg(long)]
    startup: bool,
    /// Startup runs to make.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Compare the server with its own `--noop` floor in one run: start the
    /// command after `--` twice (at --address, and with --noop at
    /// --noop-address), then load them in turn for --rounds windows of -d
    /// seconds each and report both, and their ratio of CPU per call.
    #[arg(long, conflicts_with_all = ["startup", "pid"])]
    compare: bool,
    /// Address of the --noop server in --compare mode (default: --address's port + 1).
    #[arg(long)]
    noop_address: Option<SocketAddr>,
    /// Windows per server in --compare mode, alternating noop-function and
    /// function-noop so that a drift in the machine's speed hits both alike.
    #[arg(long, default_value_t = 10)]
    rounds: usize,
    /// Print the payload (after --observed) as YAML and exit: a starting point for a payload file.
    #[arg(long)]
    print_payload: bool,
    /// The server command for --startup and --compare (without --address).
    #[arg(last = true)]
    command: Vec<String>,
}

#[derive(Deserialize, Default)]
struct Payload {
    composite: Value,
    #[serde(default)]
    observed: BTreeMap<String, Value>,
    #[serde(default)]
    desired: BTreeMap<String, Value>,
    #[serde(default)]
    input: Option<Value>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if !args.address.ip().is_loopback() {
        bail!(
            "--address {} is not a loopback address; this tool only loads servers on this machine",
            args.address
        );
    }
    let seconds = if args.compare {
        2 * (args.warmup + args.rounds as u64 * args.duration)
    } else {
        args.duration + args.warmup
    };
    if seconds > MAX_SECONDS {
        bail!("the run would take {seconds} s; at most {MAX_SECONDS} s are allowed");
    }
    if args.print_payload {
        let p = read_payload(&args)?;
        let doc = json!({"composite": p.composite, "observed": p.observed, "desired": p.desired, "input": p.input});
        print!("{}", serde_yaml::to_string(&doc)?);
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let report = if args.startup {
        runtime.block_on(startup(&args))?
    } else if args.compare {
        runtime.block_on(compare(&args))?
    } else {
        runtime.block_on(load(&args))?
    };
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

fn endpoint(args: &Args, address: SocketAddr) -> anyhow::Result<Endpoint> {
    let scheme = if args.insecure { "http" } else { "https" };
    let mut endpoint = Endpoint::from_shared(format!("{scheme}://{address}"))?
        .connect_timeout(Duration::from_secs(2))
        .tcp_nodelay(true);
    if !args.insecure {
        let Some(dir) = &args.tls_certs_dir else {
            bail!("pass --insecure or --tls-certs-dir DIR");
        };
        let read = |f: &str| {
            std::fs::read_to_string(dir.join(f)).with_context(|| format!("{}/{f}", dir.display()))
        };
        endpoint = endpoint.tls_config(
            ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(read("ca.crt")?))
                .identity(Identity::from_pem(read("tls.crt")?, read("tls.key")?))
                .domain_name(&args.tls_server_name),
        )?;
    }
    Ok(endpoint)
}

fn read_payload(args: &Args) -> anyhow::Result<Payload> {
    let mut payload = match &args.payload {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let yaml: serde_yaml::Value = serde_yaml::from_str(&text)
                .with_context(|| format!("{} is not YAML", path.display()))?;
            serde_json::from_value(serde_json::to_value(yaml)?).with_context(|| {
                format!(
                    "{}: expected composite, observed, desired, input",
                    path.display()
                )
            })?
        }
        None => Payload {
            composite: workload::llm_inference_xr("chat", false),
            ..Default::default()
        },
    };
    if let Some(n) = args.observed {
        let kind = payload.composite["kind"].as_str().unwrap_or_default();
        let name = payload.composite["metadata"]["name"]
            .as_str()
            .unwrap_or_default();
        payload.observed = workload::observed_resources(kind, name, n);
    }
    Ok(payload)
}

/// The requests to send, already in the server's wire form so that building
/// one costs the client a few copies: `distinct` variants of the composite.
fn requests(payload: &Payload, distinct: usize, tagged: bool) -> Vec<server::RunFunctionRequest> {
    (0..distinct.max(1))
        .map(|i| {
            let mut composite = payload.composite.clone();
            if distinct > 1
                && let Some(md) = composite.get_mut("metadata").and_then(Value::as_object_mut)
            {
                let annotations = md.entry("annotations").or_insert_with(|| json!({}));
                annotations["loadgen.example.com/variant"] = json!(i.to_string());
            }
            let mut req = workload::request(
                "",
                &composite,
                &payload.observed,
                &payload.desired,
                payload.input.as_ref(),
            );
            if tagged {
                req.meta.get_or_insert_default().tag = content_tag(&req);
            }
            to_server(&req)
        })
        .collect()
}

/// A tag that identifies `req`'s content, 64 hex digits like the SHA-256
/// Crossplane computes (a fixed-seed hash serves: only its uniqueness among
/// the requests sent matters).
fn content_tag(req: &fnv1::RunFunctionRequest) -> String {
    use std::hash::BuildHasher;
    let bytes = req.encode_to_vec();
    (0..4)
        .map(|seed| {
            format!(
                "{:016x}",
                foldhash::quality::FixedState::with_seed(seed).hash_one(&bytes)
            )
        })
        .collect()
}

#[derive(Default)]
struct WorkerStats {
    latencies_us: Vec<u64>,
    /// Size of the largest response seen, encoded.
    response_bytes: usize,
    errors: BTreeMap<String, u64>,
    first_error: Option<String>,
}

impl WorkerStats {
    fn error(&mut self, kind: &str, detail: String) {
        *self.errors.entry(kind.into()).or_default() += 1;
        self.first_error.get_or_insert(detail);
    }
}

async fn call(
    channel: &Channel,
    req: server::RunFunctionRequest,
) -> Result<server::RunFunctionResponse, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let codec =
        tonic_prost::ProstCodec::<server::RunFunctionRequest, server::RunFunctionResponse>::default(
        );
    grpc.unary(
        tonic::Request::new(req),
        PathAndQuery::from_static(RUN_FUNCTION),
        codec,
    )
    .await
    .map(tonic::Response::into_inner)
}

async fn worker(
    id: usize,
    channel: Channel,
    requests: Arc<Vec<server::RunFunctionRequest>>,
    measuring: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> WorkerStats {
    let mut stats = WorkerStats::default();
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let req = requests[(id + n * 7919) % requests.len()].clone();
        let tag = req.meta.as_ref().map(|m| m.tag.clone()).unwrap_or_default();
        n += 1;
        let counted = measuring.load(Ordering::Relaxed);
        let started = Instant::now();
        let result = call(&channel, req).await;
        let elapsed = started.elapsed();
        if !counted || !measuring.load(Ordering::Relaxed) {
            continue;
        }
        match result {
            Err(status) => stats.error(&format!("grpc-{:?}", status.code()), status.to_string()),
            Ok(rsp) => {
                let echoed = rsp.meta.as_ref().map(|m| m.tag.as_str());
                if echoed != Some(tag.as_str()) {
                    stats.error("tag", format!("sent tag {tag}, got {echoed:?}"));
                } else if let Some(fatal) = rsp
                    .results
                    .iter()
                    .find(|r| r.severity == server::Severity::Fatal as i32)
                {
                    stats.error("fatal", fatal.message.clone());
                } else {
                    stats.latencies_us.push(elapsed.as_micros() as u64);
                    let size = prost::Message::encoded_len(&rsp);
                    stats.response_bytes = stats.response_bytes.max(size);
                }
            }
        }
    }
    stats
}

async fn load(args: &Args) -> anyhow::Result<Value> {
    let payload = read_payload(args)?;
    let requests = Arc::new(requests(&payload, args.distinct, !args.untagged));
    let request_bytes = prost::Message::encoded_len(&requests[0]);
    let channel = connect(args, args.address, &requests[0]).await?;
    let window = drive(
        &channel,
        &requests,
        args.concurrency,
        Duration::from_secs(args.warmup),
        Duration::from_secs(args.duration),
        args.pid,
    )
    .await?;
    let mut report = json!({
        "address": args.address.to_string(),
        "payload": args.payload.as_ref().map(|p| p.display().to_string()),
        "observed": payload.observed.len(),
        "request_bytes": request_bytes,
        "response_bytes": window.response_bytes,
        "concurrency": args.concurrency,
        "distinct": args.distinct,
        "seconds": round(window.wall.as_secs_f64(), 3),
        "requests": window.calls(),
        "errors": window.error_count(),
        "error_kinds": window.errors,
        "rps": round(window.calls() as f64 / window.wall.as_secs_f64(), 1),
        "latency_ms": window.latency_ms(),
    });
    if let Some(e) = &window.first_error {
        report["first_error"] = json!(e);
    }
    if let Some(cpu) = window.cpu {
        let mut server = cpu.report(window.calls(), window.wall);
        server["pid"] = json!(args.pid);
        report["server"] = server;
    }
    if window.error_count() > 0 {
        eprintln!(
            "loadgen: {} of {} calls failed",
            window.error_count(),
            window.calls()
        );
    }
    Ok(report)
}

/// One HTTP/2 connection, as Crossplane holds one per function, checked
/// with one call so that a broken server fails fast with its message.
async fn connect(
    args: &Args,
    address: SocketAddr,
    request: &server::RunFunctionRequest,
) -> anyhow::Result<Channel> {
    let channel = endpoint(args, address)?
        .connect()
        .await
        .with_context(|| format!("cannot connect to {address}"))?;
    let mut probe = request.clone();
    probe.meta = Some(server::RequestMeta {
        tag: "probe".into(),
        capabilities: vec![],
    });
    let rsp = call(&channel, probe)
        .await
        .context("the first call failed")?;
    if let Some(fatal) = rsp
        .results
        .iter()
        .find(|r| r.severity == server::Severity::Fatal as i32)
    {
        bail!("the server answered FATAL: {}", fatal.message);
    }
    Ok(channel)
}

/// What one measured window of load saw.
struct Window {
    wall: Duration,
    latencies_us: Vec<u64>,
    errors: BTreeMap<String, u64>,
    first_error: Option<String>,
    response_bytes: usize,
    /// The server's use of the machine over the window, when its PID is known.
    cpu: Option<CpuUse>,
}

impl Window {
    fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    fn calls(&self) -> u64 {
        self.latencies_us.len() as u64 + self.error_count()
    }

    fn latency_ms(&self) -> Value {
        let mut sorted = self.latencies_us.clone();
        sorted.sort_unstable();
        let pct = |p: f64| -> f64 {
            if sorted.is_empty() {
                return 0.0;
            }
            let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
            sorted[i] as f64 / 1000.0
        };
        json!({"p50": pct(0.50), "p90": pct(0.90), "p99": pct(0.99), "max": pct(1.0)})
    }
}

/// A closed loop of `concurrency` calls on `channel`: `warmup` uncounted,
/// then `duration` measured.
async fn drive(
    channel: &Channel,
    requests: &Arc<Vec<server::RunFunctionRequest>>,
    concurrency: usize,
    warmup: Duration,
    duration: Duration,
    pid: Option<u32>,
) -> anyhow::Result<Window> {
    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|id| {
            tokio::spawn(worker(
                id,
                channel.clone(),
                requests.clone(),
                measuring.clone(),
                stop.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(warmup).await;
    let before = pid.map(ProcSample::read).transpose()?;
    let started = Instant::now();
    measuring.store(true, Ordering::Relaxed);
    tokio::time::sleep(duration).await;
    measuring.store(false, Ordering::Relaxed);
    let wall = started.elapsed();
    let after = pid.map(ProcSample::read).transpose()?;
    stop.store(true, Ordering::Relaxed);

    let mut window = Window {
        wall,
        latencies_us: Vec::new(),
        errors: BTreeMap::new(),
        first_error: None,
        response_bytes: 0,
        cpu: before.zip(after).map(|(b, a)| CpuUse::between(&b, &a)),
    };
    for w in workers {
        let s = w.await?;
        window.latencies_us.extend(s.latencies_us);
        window.response_bytes = window.response_bytes.max(s.response_bytes);
        for (k, v) in s.errors {
            *window.errors.entry(k).or_default() += v;
        }
        window.first_error = window.first_error.or(s.first_error);
    }
    Ok(window)
}

/// A server's CPU time and memory between two samples.
#[derive(Clone, Copy, Default)]
struct CpuUse {
    cpu_ns: u64,
    user_ticks: u64,
    system_ticks: u64,
    rss_kib_before: u64,
    rss_kib_after: u64,
    hwm_kib: u64,
}

impl CpuUse {
    fn between(b: &ProcSample, a: &ProcSample) -> Self {
        Self {
            cpu_ns: a.cpu_ns.saturating_sub(b.cpu_ns),
            user_ticks: a.user_ticks.saturating_sub(b.user_ticks),
            system_ticks: a.system_ticks.saturating_sub(b.system_ticks),
            rss_kib_before: b.rss_kib,
            rss_kib_after: a.rss_kib,
            hwm_kib: a.hwm_kib,
        }
    }

    /// The sum of this window and a later one of the same server.
    fn add(self, o: Self) -> Self {
        Self {
            cpu_ns: self.cpu_ns + o.cpu_ns,
            user_ticks: self.user_ticks + o.user_ticks,
            system_ticks: self.system_ticks + o.system_ticks,
            rss_kib_before: self.rss_kib_before,
            rss_kib_after: o.rss_kib_after,
            hwm_kib: self.hwm_kib.max(o.hwm_kib),
        }
    }

    fn us_per_call(&self, calls: u64) -> f64 {
        if calls == 0 {
            0.0
        } else {
            self.cpu_ns as f64 / 1e3 / calls as f64
        }
    }

    fn report(&self, calls: u64, wall: Duration) -> Value {
        let tick_us = 1e6 / clock_ticks() as f64;
        let per = |x: f64| if calls == 0 { 0.0 } else { x / calls as f64 };
        json!({
            "cpu_seconds": round(self.cpu_ns as f64 / 1e9, 4),
            "cpu_us_per_rpc": round(self.us_per_call(calls), 2),
            "cpu_us_per_rpc_from_ticks": round(per((self.user_ticks + self.system_ticks) as f64 * tick_us), 1),
            "user_us_per_rpc": round(per(self.user_ticks as f64 * tick_us), 1),
            "system_us_per_rpc": round(per(self.system_ticks as f64 * tick_us), 1),
            "cpu_cores_busy": round(self.cpu_ns as f64 / 1e9 / wall.as_secs_f64(), 3),
            "rss_kib_before": self.rss_kib_before,
            "rss_kib_after": self.rss_kib_after,
            "hwm_kib": self.hwm_kib,
        })
    }
}

/// `--compare`: the function and its `--noop` floor, same binary, same
/// payload, same run, loaded in alternating windows.
async fn compare(args: &Args) -> anyhow::Result<Value> {
    let noop_address = match args.noop_address {
        Some(a) => a,
        None => SocketAddr::new(args.address.ip(), args.address.port().wrapping_add(1)),
    };
    if !noop_address.ip().is_loopback() {
        bail!("--noop-address {noop_address} is not a loopback address");
    }
    let payload = read_payload(args)?;
    let requests = Arc::new(requests(&payload, args.distinct, !args.untagged));
    let function = Server::start(args, args.address, &[]).await?;
    let noop = Server::start(args, noop_address, &["--noop"]).await?;
    let servers = [&noop, &function];
    let mut channels = Vec::new();
    for server in servers {
        let channel = connect(args, server.address, &requests[0]).await?;
        // Warm both up before anything is counted.
        drive(
            &channel,
            &requests,
            args.concurrency,
            Duration::from_secs(args.warmup),
            Duration::ZERO,
            None,
        )
        .await?;
        channels.push(channel);
    }
    let mut windows: [Vec<Window>; 2] = [Vec::new(), Vec::new()];
    for round in 0..args.rounds.max(1) {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let window = drive(
                &channels[i],
                &requests,
                args.concurrency,
                Duration::from_millis(250),
                Duration::from_secs(args.duration),
                Some(servers[i].pid()),
            )
            .await?;
            windows[i].push(window);
        }
    }
    let [noop_windows, function_windows] = windows;
    let per_round = |ws: &[Window]| -> Vec<f64> {
        ws.iter()
            .map(|w| w.cpu.unwrap_or_default().us_per_call(w.calls()))
            .collect()
    };
    let noop_rounds = per_round(&noop_windows);
    let function_rounds = per_round(&function_windows);
    let mut ratios: Vec<f64> = function_rounds
        .iter()
        .zip(&noop_rounds)
        .map(|(f, n)| if *n > 0.0 { f / n } else { 0.0 })
        .collect();
    let summary = |ws: &[Window], rounds: &[f64]| -> (Value, f64) {
        let calls: u64 = ws.iter().map(Window::calls).sum();
        let wall: Duration = ws.iter().map(|w| w.wall).sum();
        let cpu = ws
            .iter()
            .filter_map(|w| w.cpu)
            .reduce(CpuUse::add)
            .unwrap_or_default();
        let errors: u64 = ws.iter().map(Window::error_count).sum();
        let first_error = ws.iter().find_map(|w| w.first_error.clone());
        let mut sorted = rounds.to_vec();
        sorted.sort_by(f64::total_cmp);
        let report = json!({
            "requests": calls,
            "errors": errors,
            "first_error": first_error,
            "rps": round(calls as f64 / wall.as_secs_f64(), 1),
            "response_bytes": ws.iter().map(|w| w.response_bytes).max().unwrap_or(0),
            "cpu_us_per_rpc_by_round": rounds.iter().map(|x| round(*x, 2)).collect::<Vec<_>>(),
            "cpu_us_per_rpc_median": round(median(&sorted), 2),
            "server": cpu.report(calls, wall),
        });
        (report, cpu.us_per_call(calls))
    };
    let (noop_report, noop_us) = summary(&noop_windows, &noop_rounds);
    let (function_report, function_us) = summary(&function_windows, &function_rounds);
    let errors = noop_report["errors"].as_u64().unwrap_or(0)
        + function_report["errors"].as_u64().unwrap_or(0);
    if errors > 0 {
        eprintln!("loadgen: {errors} calls failed");
    }
    let by_round: Vec<f64> = ratios.iter().map(|r| round(*r, 3)).collect();
    ratios.sort_by(f64::total_cmp);
    Ok(json!({
        "payload": args.payload.as_ref().map(|p| p.display().to_string()),
        "observed": payload.observed.len(),
        "request_bytes": prost::Message::encoded_len(&requests[0]),
        "concurrency": args.concurrency,
        "rounds": args.rounds.max(1),
        "round_seconds": args.duration,
        "noop": noop_report,
        "function": function_report,
        "ratio": round(if noop_us > 0.0 { function_us / noop_us } else { 0.0 }, 3),
        "ratio_by_round": by_round,
        "ratio_median": round(median(&ratios), 3),
        "ratio_max": round(ratios.last().copied().unwrap_or(0.0), 3),
    }))
}

/// The middle of sorted values (the mean of the two middle ones for an even count).
fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// A server started for `--compare`, stopped (SIGTERM, then reaped) when dropped.
struct Server {
    child: std::process::Child,
    address: SocketAddr,
}

impl Server {
    async fn start(args: &Args, address: SocketAddr, extra: &[&str]) -> anyhow::Result<Self> {
        let Some((program, rest)) = args.command.split_first() else {
            bail!("--compare needs the server command after --");
        };
        let child = Command::new(program)
            .args(rest)
            .arg("--address")
            .arg(address.to_string())
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {program}"))?;
        let server = Self { child, address };
        let endpoint = endpoint(args, address)?.connect_timeout(Duration::from_millis(50));
        if !wait_serving(&endpoint, Instant::now() + Duration::from_secs(10)).await {
            bail!("{program} at {address} did not report SERVING within 10 s");
        }
        Ok(server)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// SIGTERM, as Kubernetes stops a pod; then reaps the process.
fn stop(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

/// Polls the health service until it reports SERVING; false at the deadline.
async fn wait_serving(endpoint: &Endpoint, deadline: Instant) -> bool {
    loop {
        if Instant::now() > deadline {
            return false;
        }
        if let Ok(channel) = endpoint.connect().await {
            let mut health = HealthClient::new(channel);
            let status = health
                .check(HealthCheckRequest {
                    service: String::new(),
                })
                .await
                .map(|r| r.into_inner().status);
            if status.is_ok_and(|s| s == ServingStatus::Serving as i32) {
                return true;
            }
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// CPU time and memory of a process, from /proc.
#[derive(Clone, Copy)]
struct ProcSample {
    /// Sum over the process's threads of the time on CPU, in ns.
    cpu_ns: u64,
    /// utime and stime of the whole process, in clock ticks.
    user_ticks: u64,
    system_ticks: u64,
    rss_kib: u64,
    hwm_kib: u64,
}

impl ProcSample {
    fn read(pid: u32) -> anyhow::Result<Self> {
        let proc_dir = PathBuf::from(format!("/proc/{pid}"));
        let mut cpu_ns = 0;
        for task in std::fs::read_dir(proc_dir.join("task"))
            .with_context(|| format!("no process {pid}"))?
            .flatten()
        {
            // A thread may exit between listing and reading.
            if let Ok(s) = std::fs::read_to_string(task.path().join("schedstat")) {
                cpu_ns += s
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
        let stat = std::fs::read_to_string(proc_dir.join("stat"))?;
        // Fields after the parenthesised command name: utime is field 14, stime 15.
        let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let fields: Vec<&str> = after.split_whitespace().collect();
        let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<u64>().ok());
        let (rss_kib, hwm_kib) = memory_kib(&proc_dir)?;
        Ok(Self {
            cpu_ns,
            user_ticks: field(14).unwrap_or(0),
            system_ticks: field(15).unwrap_or(0),
            rss_kib,
            hwm_kib,
        })
    }
}

/// VmRSS and VmHWM from /proc/PID/status.
fn memory_kib(proc_dir: &Path) -> anyhow::Result<(u64, u64)> {
    let status = std::fs::read_to_string(proc_dir.join("status"))?;
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Ok((kib("VmRSS:"), kib("VmHWM:")))
}

/// `getconf CLK_TCK`, 100 on Linux unless told otherwise.
fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// Starts the command `runs` times, each time polling until the health
/// service reports SERVING; reports the times and the idle memory.
async fn startup(args: &Args) -> anyhow::Result<Value> {
    let Some((program, rest)) = args.command.split_first() else {
        bail!("--startup needs the server command after --");
    };
    let endpoint = endpoint(args, args.address)?.connect_timeout(Duration::from_millis(50));
    let mut times_ms = Vec::new();
    let mut idle = Vec::new();
    for _ in 0..args.runs.max(1) {
        let started = Instant::now();
        let mut child = Command::new(program)
            .args(rest)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {program}"))?;
        let serving = wait_serving(&endpoint, started + Duration::from_secs(10)).await;
        let elapsed = started.elapsed();
        // Let the first connection settle before reading idle memory.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let memory = memory_kib(&PathBuf::from(format!("/proc/{}", child.id())));
        // SIGTERM, as Kubernetes stops a pod; then reap it.
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let _ = child.wait();
        if !serving {
            bail!("{program} did not report SERVING within 10 s");
        }
        times_ms.push(round(elapsed.as_secs_f64() * 1000.0, 2));
        if let Ok((rss, hwm)) = memory {
            idle.push(json!({"rss_kib": rss, "hwm_kib": hwm}));
        }
    }
    let mut sorted = times_ms.clone();
    sorted.sort_by(f64::total_cmp);
    Ok(json!({
        "command": args.command,
        "runs": times_ms.len(),
        "ready_ms": times_ms,
        "ready_ms_median": sorted[sorted.len() / 2],
        "ready_ms_max": sorted[sorted.len() - 1],
        "idle_memory": idle,
    }))
}
