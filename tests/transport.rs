//! The transport under hostile or broken clients, on loopback: what the
//! server holds, how it stops, and what it refuses. Each test bounds every
//! wait and stops the server it started.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream as StdTcpStream};
use std::time::{Duration, Instant};

use support::*;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// utime + stime of `pid`, in clock ticks, from /proc/PID/stat.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc stat");
    // The command name, in parentheses, may hold spaces: count after it.
    let after = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of the line; the state (field 3) is fields[0] here.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
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
