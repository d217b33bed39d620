//! Helpers shared by the integration tests: certificates, request builders,
//! an in-process server, the real binary run as a child process, and schema
//! validation of composed manifests.
//!
//! Each test file compiles this module on its own and uses part of it.
#![allow(dead_code)]

pub mod fixtures;
pub mod manifests;
pub mod models;
pub mod refusals;
pub mod schema;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use function_inference::protocol::fnv1;
use function_inference::protocol::fnv1::function_runner_service_client::FunctionRunnerServiceClient;
use function_inference::protocol::resource::json_to_struct;
use function_inference::server::{self, Handler, Metrics};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

/// How long anything in a test may take before it counts as hung. Generous:
/// the tests run unoptimized on a loaded two-core machine.
pub const PATIENCE: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------
// Certificates
// ---------------------------------------------------------------------------

/// A certificate and its private key, PEM-encoded.
pub struct Pem {
    pub cert: String,
    pub key: String,
}

impl Pem {
    pub fn identity(&self) -> Identity {
        Identity::from_pem(&self.cert, &self.key)
    }
}

/// The certificates of one test: a CA whose tls.crt, tls.key and ca.crt are
/// written to `dir` as Crossplane mounts them, a client certificate that CA
/// signed, and a client certificate from an unrelated ("rogue") CA.
pub struct Pki {
    pub dir: TempDir,
    pub ca_cert: String,
    pub client: Pem,
    pub rogue_client: Pem,
}

impl Pki {
    pub fn generate() -> Self {
        let (ca_cert, ca) = new_ca("function-inference test CA");
        let server = new_leaf(
            &ca,
            "localhost",
            &["localhost", "127.0.0.1"],
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        let client = new_leaf(&ca, "crossplane", &[], ExtendedKeyUsagePurpose::ClientAuth);
        let (_, rogue_ca) = new_ca("rogue CA");
        let rogue_client = new_leaf(
            &rogue_ca,
            "crossplane",
            &[],
            ExtendedKeyUsagePurpose::ClientAuth,
        );

        let dir = tempfile::tempdir().expect("create a temporary directory");
        std::fs::write(dir.path().join("tls.crt"), &server.cert).unwrap();
        std::fs::write(dir.path().join("tls.key"), &server.key).unwrap();
        std::fs::write(dir.path().join("ca.crt"), &ca_cert).unwrap();
        Self {
            dir,
            ca_cert,
            client,
            rogue_client,
        }
    }

    /// The directory to pass as `--tls-certs-dir`.
    pub fn certs_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's TLS configuration, read the way `--tls-certs-dir` reads it.
    pub fn server_tls(&self) -> tonic::transport::ServerTlsConfig {
        server::tls::server_config(self.certs_dir()).expect("read the generated certificates")
    }
}

fn new_ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

fn new_leaf(
    issuer: &Issuer<'static, KeyPair>,
    common_name: &str,
    names: &[&str],
    usage: ExtendedKeyUsagePurpose,
) -> Pem {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.use_authority_key_identifier_extension = true;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![usage];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    Pem {
        cert: cert.pem(),
        key: key.serialize_pem(),
    }
}

// ---------------------------------------------------------------------------
// Requests and responses
// ---------------------------------------------------------------------------

pub const INPUT_API_VERSION: &str = "inference.fn.crossplane.io/v1beta1";

/// A protobuf Struct from a JSON object.
pub fn object(v: Value) -> prost_types::Struct {
    json_to_struct(v.as_object().expect("a JSON object"))
}

/// A Resource holding `v`, readiness unspecified.
pub fn resource(v: Value) -> fnv1::Resource {
    fnv1::Resource {
        resource: Some(object(v)),
        ..Default::default()
    }
}

/// The desired XR `v`, marked not ready: Crossplane then reports the XR's
/// Ready condition False whatever its composed resources say.
pub fn not_ready(v: Value) -> fnv1::Resource {
    fnv1::Resource {
        ready: fnv1::Ready::False as i32,
        ..resource(v)
    }
}

/// An XR of a kind function-inference does not compose.
pub fn spaceship() -> Value {
    json!({
        "apiVersion": "example.org/v1",
        "kind": "Spaceship",
        "metadata": {"name": "enterprise", "namespace": "fleet"},
        "spec": {"crew": 430},
    })
}

/// The requirement a call adds for each custom kind it composes of which
/// nothing is observed yet: the kind's CustomResourceDefinition, by name
/// (`crd`), to learn whether the cluster serves it.
pub fn crd_requirements(
    crds: &[&str],
) -> std::collections::BTreeMap<String, fnv1::ResourceSelector> {
    crds.iter()
        .map(|crd| {
            (
                format!("crd/{crd}"),
                fnv1::ResourceSelector {
                    api_version: "apiextensions.k8s.io/v1".into(),
                    kind: "CustomResourceDefinition".into(),
                    namespace: None,
                    r#match: Some(fnv1::resource_selector::Match::MatchName(crd.to_string())),
                },
            )
        })
        .collect()
}

/// provider-kubernetes' namespaced Object's CRD.
pub const OBJECT_CRD: &str = "objects.kubernetes.m.crossplane.io";
/// The production-stack operator's VLLMRuntime CRD.
pub const VLLM_RUNTIME_CRD: &str = "vllmruntimes.production-stack.vllm.ai";

/// A request as Crossplane sends it for the first step: the tag, the
/// observed XR and an empty desired state.
pub fn request(tag: &str, xr: Value) -> fnv1::RunFunctionRequest {
    fnv1::RunFunctionRequest {
        meta: Some(fnv1::RequestMeta {
            tag: tag.into(),
            capabilities: (1..=5).collect(),
        }),
        observed: Some(fnv1::State {
            composite: Some(resource(xr)),
            resources: Default::default(),
        }),
        desired: Some(fnv1::State::default()),
        ..Default::default()
    }
}

/// The step input `{apiVersion, kind: Input, ...fields}`.
pub fn input(fields: Value) -> prost_types::Struct {
    let mut v = json!({"apiVersion": INPUT_API_VERSION, "kind": "Input"});
    v.as_object_mut()
        .unwrap()
        .extend(fields.as_object().expect("input fields").clone());
    object(v)
}

/// Desired state an earlier pipeline step built: an XR status field and a
/// composed resource with connection details, marked ready.
pub fn earlier_desired() -> fnv1::State {
    fnv1::State {
        composite: Some(resource(json!({
            "apiVersion": "example.org/v1",
            "kind": "Spaceship",
            "status": {"warpFactor": 9, "shields": "up"},
        }))),
        resources: [(
            "bucket".to_string(),
            fnv1::Resource {
                resource: Some(object(json!({
                    "apiVersion": "s3.aws.upbound.io/v1beta1",
                    "kind": "Bucket",
                    "metadata": {"labels": {"team": "bridge"}},
                    "spec": {"forProvider": {"region": "eu-west-1"}},
                }))),
                connection_details: [("password".to_string(), b"s3cr3t".to_vec())].into(),
                ready: fnv1::Ready::True as i32,
            },
        )]
        .into(),
    }
}

/// What an earlier pipeline step desired for an LLMInference: the
/// [`earlier_desired`] resources and a status field of the XR.
pub fn earlier_llm_inference_desired() -> fnv1::State {
    let mut s = earlier_desired();
    s.composite = Some(resource(json!({
        "apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference",
        "status": {"fromEarlierStep": "kept"},
    })));
    s
}

/// Adds observed composed resources of about `bytes` in total to `req`.
pub fn pad_observed(req: &mut fnv1::RunFunctionRequest, bytes: usize) {
    const EACH: usize = 64 * 1024;
    let observed = req.observed.get_or_insert_with(Default::default);
    let filler = "x".repeat(EACH);
    for i in 0..bytes.div_ceil(EACH) {
        observed.resources.insert(
            format!("configmap-{i}"),
            resource(json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": format!("configmap-{i}")},
                "data": {"filler": filler},
            })),
        );
    }
}

/// The response meta: the tag and a TTL in seconds.
pub fn meta(tag: &str, ttl_seconds: i64) -> Option<fnv1::ResponseMeta> {
    Some(fnv1::ResponseMeta {
        tag: tag.into(),
        ttl: Some(prost_types::Duration {
            seconds: ttl_seconds,
            nanos: 0,
        }),
    })
}

/// A FATAL result as function-inference writes them.
pub fn fatal(reason: &str, message: &str) -> fnv1::Result {
    fnv1::Result {
        severity: fnv1::Severity::Fatal as i32,
        message: message.into(),
        reason: Some(reason.into()),
        target: Some(fnv1::Target::Composite as i32),
    }
}

/// A WARNING result as function-inference writes them.
pub fn warning(reason: &str, message: &str) -> fnv1::Result {
    fnv1::Result {
        severity: fnv1::Severity::Warning as i32,
        ..fatal(reason, message)
    }
}

/// A NORMAL result as function-inference writes them.
pub fn normal(reason: &str, message: &str) -> fnv1::Result {
    fnv1::Result {
        severity: fnv1::Severity::Normal as i32,
        ..fatal(reason, message)
    }
}

/// A condition on the XR as function-inference writes them.
pub fn condition(
    type_: &str,
    status: fnv1::Status,
    reason: &str,
    message: &str,
) -> fnv1::Condition {
    fnv1::Condition {
        r#type: type_.into(),
        status: status as i32,
        reason: reason.into(),
        message: Some(message.into()),
        target: Some(fnv1::Target::Composite as i32),
    }
}

/// What a refused call answers: the tag, the earlier steps' desired state
/// unchanged (Crossplane applies nothing after a FATAL), and one FATAL.
pub fn refused_keeping_earlier(
    tag: &str,
    reason: &str,
    message: &str,
) -> fnv1::RunFunctionResponse {
    fnv1::RunFunctionResponse {
        meta: meta(tag, 60),
        desired: Some(earlier_desired()),
        results: vec![fatal(reason, message)],
        ..Default::default()
    }
}

/// Fails, showing every result, when any result is FATAL.
#[track_caller]
pub fn assert_not_fatal(results: &[fnv1::Result], context: &str) {
    assert!(
        results
            .iter()
            .all(|r| r.severity != fnv1::Severity::Fatal as i32),
        "{context}: {results:?}"
    );
}

/// A file of this repository (an example, usually) read as YAML.
pub fn example(path: &str) -> Value {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Runs the core on a full request, as the server would, and decodes the answer.
pub fn call(req: &fnv1::RunFunctionRequest) -> fnv1::RunFunctionResponse {
    function_inference::protocol::from_server(
        &function_inference::run::run_function(function_inference::protocol::to_server(req))
            .response,
    )
    .expect("the core's response decodes")
}

/// The composition-resource names of a response's desired resources.
pub fn composed_names(rsp: &fnv1::RunFunctionResponse) -> Vec<String> {
    rsp.desired
        .as_ref()
        .map(|d| d.resources.keys().cloned().collect())
        .unwrap_or_default()
}

/// The desired composed resource `key` of a response, as JSON.
pub fn desired_resource(rsp: &fnv1::RunFunctionResponse, key: &str) -> Value {
    let r = &rsp.desired.as_ref().unwrap().resources[key];
    Value::Object(function_inference::protocol::resource::struct_to_json(
        r.resource.as_ref().unwrap(),
    ))
}

/// The condition of `type_` a response sets on the XR.
pub fn response_condition(rsp: &fnv1::RunFunctionResponse, type_: &str) -> Option<fnv1::Condition> {
    rsp.conditions.iter().find(|c| c.r#type == type_).cloned()
}

/// A request carrying `objects` as what Crossplane fetched for the
/// requirement `key`.
pub fn with_required(
    mut req: fnv1::RunFunctionRequest,
    key: &str,
    objects: Vec<Value>,
) -> fnv1::RunFunctionRequest {
    req.required_resources.insert(
        key.into(),
        fnv1::Resources {
            items: objects.into_iter().map(resource).collect(),
        },
    );
    req
}

/// The status of the desired XR in a response.
pub fn desired_status(rsp: &fnv1::RunFunctionResponse) -> Value {
    let c = rsp.desired.as_ref().unwrap().composite.as_ref().unwrap();
    Value::Object(function_inference::protocol::resource::struct_to_json(
        c.resource.as_ref().unwrap(),
    ))["status"]
        .clone()
}

/// Whether the response marks the XR not ready (`Ready::False`) or leaves
/// its readiness to its composed resources (`Ready::Unspecified`).
pub fn xr_readiness(rsp: &fnv1::RunFunctionResponse) -> fnv1::Ready {
    let c = rsp.desired.as_ref().unwrap().composite.as_ref().unwrap();
    fnv1::Ready::try_from(c.ready).unwrap()
}

/// The FATAL message for an XR of `kind` that the function does not compose.
pub fn unknown_kind_message(kind: &str, api_version: &str) -> String {
    format!(
        "function-inference cannot compose kind {kind:?} ({api_version}); it composes LLMInference, Model, AgentPool"
    )
}

// ---------------------------------------------------------------------------
// The server in-process
// ---------------------------------------------------------------------------

/// The real gRPC server on an ephemeral loopback port, in this process.
pub struct TestServer {
    pub addr: SocketAddr,
    pub metrics: Metrics,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<anyhow::Result<()>>>,
}

impl TestServer {
    pub async fn start(tls: Option<tonic::transport::ServerTlsConfig>, max_recv_mib: u32) -> Self {
        let metrics = Metrics::new();
        let handler = Handler::new(function_inference::run::run_function, metrics.clone());
        let mut server = Self::start_handler(handler, tls, max_recv_mib).await;
        server.metrics = metrics;
        server
    }

    /// Serves `handler` (for example one with a test dispatch).
    pub async fn start_handler(
        handler: Handler,
        tls: Option<tonic::transport::ServerTlsConfig>,
        max_recv_mib: u32,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let metrics = Metrics::new();
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(server::run(listener, handler, tls, max_recv_mib, async {
            let _ = rx.await;
        }));
        Self {
            addr,
            metrics,
            shutdown: Some(tx),
            task: Some(task),
        }
    }

    /// Stops the server and checks that it stopped cleanly.
    pub async fn stop(mut self) {
        let _ = self.shutdown.take().unwrap().send(());
        let task = self.task.take().unwrap();
        tokio::time::timeout(PATIENCE, task)
            .await
            .expect("the server stops after shutdown")
            .expect("the server task does not panic")
            .expect("the server returns Ok");
    }

    /// An endpoint for this server; `https` when `tls` is given.
    pub fn endpoint(&self, tls: Option<ClientTlsConfig>) -> Endpoint {
        endpoint(self.addr, tls)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// An endpoint for `addr`, with generous timeouts.
pub fn endpoint(addr: SocketAddr, tls: Option<ClientTlsConfig>) -> Endpoint {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let mut e = Endpoint::from_shared(format!("{scheme}://{addr}"))
        .unwrap()
        .connect_timeout(PATIENCE)
        .timeout(PATIENCE);
    if let Some(tls) = tls {
        e = e.tls_config(tls).expect("a valid client TLS configuration");
    }
    e
}

/// The client TLS configuration: trust `ca`, verify the name `localhost`,
/// present `identity` if any.
pub fn client_tls(ca: &str, identity: Option<&Pem>) -> ClientTlsConfig {
    let mut c = ClientTlsConfig::new()
        .domain_name("localhost")
        .ca_certificate(Certificate::from_pem(ca));
    if let Some(id) = identity {
        c = c.identity(id.identity());
    }
    c
}

/// A client whose connection is made on the first call, so that a refused
/// handshake shows up as that call's error.
pub fn client(endpoint: Endpoint) -> FunctionRunnerServiceClient<Channel> {
    FunctionRunnerServiceClient::new(endpoint.connect_lazy())
        .max_decoding_message_size(usize::MAX)
        .max_encoding_message_size(usize::MAX)
}

// ---------------------------------------------------------------------------
// The binary as a child process
// ---------------------------------------------------------------------------

pub fn binary() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_function-inference"));
    c.env_remove("TLS_SERVER_CERTS_DIR").env_remove("RUST_LOG");
    c
}

/// The server binary, started on ephemeral ports with JSON logs; its
/// addresses are read from its own log lines.
pub struct ServerProcess {
    child: Child,
    pub grpc: SocketAddr,
    pub metrics: Option<SocketAddr>,
    log: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl ServerProcess {
    /// Starts `function-inference --address 127.0.0.1:0 --log-format json ARGS`
    /// and waits until it logs that it serves.
    pub fn start(args: &[&str]) -> Self {
        Self::start_with_env(args, &[])
    }

    /// Like [`ServerProcess::start`], with extra environment variables.
    pub fn start_with_env(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Self {
        let mut child = binary()
            .args(["--address", "127.0.0.1:0", "--log-format", "json"])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the binary");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel::<(String, SocketAddr)>();
        let reader = {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if let Ok(v) = serde_json::from_str::<Value>(&line)
                        && let (Some(message), Some(address)) = (
                            v.get("message").and_then(Value::as_str),
                            v.get("address").and_then(Value::as_str),
                        )
                        && let Ok(address) = address.parse()
                    {
                        let _ = tx.send((message.to_string(), address));
                    }
                    log.lock().unwrap().push(line);
                }
            })
        };
        let mut metrics = None;
        let deadline = Instant::now() + PATIENCE;
        let grpc = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok((message, address)) if message.starts_with("serving metrics") => {
                    metrics = Some(address)
                }
                Ok((message, address)) if message.starts_with("serving FunctionRunnerService") => {
                    break address;
                }
                Ok(_) => {}
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "the server did not log its address; its log:\n{}",
                        log.lock().unwrap().join("\n")
                    );
                }
            }
        };
        Self {
            child,
            grpc,
            metrics,
            log,
            reader: Some(reader),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM, as Kubernetes does to stop a pod.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM failed: {status}");
    }

    /// Waits for the process to exit and returns its status and log.
    pub fn wait(mut self) -> (ExitStatus, String) {
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for the binary") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "the server did not exit; its log:\n{}",
                    self.log.lock().unwrap().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        let log = self.log.lock().unwrap().join("\n");
        (status, log)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Only this test's own child, by its handle.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A path under `tests/data/`.
pub fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(path)
}

/// Runs `cmd` to completion, killing it if it outlives [`PATIENCE`].
pub fn output_within(cmd: &mut Command) -> std::process::Output {
    output_within_reading(cmd, Stdio::null())
}

/// [`output_within`], with `input` as the command's standard input.
pub fn output_within_given(cmd: &mut Command, input: &[u8]) -> std::process::Output {
    use std::io::{Seek, Write};
    let mut file = tempfile::tempfile().expect("a file for the standard input");
    file.write_all(input).expect("write the standard input");
    file.rewind().expect("rewind the standard input");
    output_within_reading(cmd, Stdio::from(file))
}

fn output_within_reading(cmd: &mut Command, stdin: Stdio) -> std::process::Output {
    let child = cmd
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the binary");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let out = child.wait_with_output();
        let _ = tx.send(());
        out
    });
    if rx.recv_timeout(PATIENCE).is_err() {
        // Our own child, by pid: it hung, so end it and fail.
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
        let _ = waiter.join();
        panic!("the binary did not exit within {PATIENCE:?}");
    }
    waiter.join().unwrap().expect("collect the binary's output")
}

/// `object` as the function composes it: a workload carries the digest of
/// the spec it was composed from (`compose::spec_digest`).
pub fn digested(object: Value) -> Value {
    use function_inference::compose::spec_digest;
    let mut object = object.as_object().unwrap().clone();
    let kind = object["kind"].as_str().unwrap_or_default().to_string();
    spec_digest::annotate(&kind, &mut object);
    Value::Object(object)
}

/// `object`, a provider-kubernetes Object, as composed before it may write:
/// only looking at what it wraps (see `compose::remote_claim`).
pub fn observe_only(mut object: Value) -> Value {
    object["spec"]["managementPolicies"] = json!(["Observe"]);
    object
}

/// What the API server returns for `composed` once applied and reconciled
/// by its controller: at `generation`, with `status`.
pub fn applied(mut composed: Value, generation: i64, status: Value) -> Value {
    composed["metadata"]["generation"] = json!(generation);
    composed["status"] = status;
    composed
}
