//! The pod that runs `vllm serve` for the runtimes that build their own pods
//! (a Deployment, a LeaderWorkerSet): everything the plan knows, where the
//! operator's VLLMRuntime fixes it.
//!
//! - `vllm serve` arguments from the plan (TP, PP, context, dtype,
//!   quantization, GPU memory utilisation), then the Model's load arguments
//!   and the user's extra arguments, which come last and win;
//! - requests equal to limits (GPUs or a MIG slice, CPU, memory), and an
//!   ephemeral-storage request for the download when no volume holds it;
//! - `/dev/shm` as a memory-backed emptyDir of the plan's size, counted in
//!   the memory limit since tmpfs pages are charged to the pod;
//! - a startup probe whose budget covers the load-time estimate, then
//!   readiness and liveness on `/health`, which vLLM serves once loaded;
//! - the GPU taint toleration, and node affinity on the GPU product label
//!   when the platform asks for it;
//! - the Pod Security Standard "restricted" on NVIDIA (non-root, no
//!   privilege escalation, no capabilities, RuntimeDefault seccomp), with
//!   HOME, the caches and `/tmp` on emptyDirs since the images' HOME is
//!   root's. ROCm needs the host's `video`/`render` device groups, whose ids
//!   vary per node, so AMD pods run as root, without capabilities;
//! - no service links: a Service named `vllm` in the namespace would
//!   otherwise set `VLLM_PORT` in the pod, which breaks vLLM;
//! - a stop that finishes what the server is answering: a preStop sleep
//!   while the endpoints stop sending it requests, then vLLM's drain
//!   (`--shutdown-timeout`), within the grace period.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Capabilities, Container, ContainerPort, EmptyDirVolumeSource, EnvFromSource, EnvVar,
    ExecAction, HTTPGetAction, Lifecycle, LifecycleHandler, NodeAffinity, NodeSelector,
    PodSecurityContext, PodSpec, Probe, ResourceRequirements, SeccompProfile, SecretEnvSource,
    SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::compose::resources::env_vars;
use crate::compose::resources::pull_secrets::image_pull_secrets;
use crate::compose::resources::vllm_runtime::{gpu_node_terms, gpu_toleration};
use crate::compose::resources::weights_volume::{CACHE_MOUNT_PATH, HF_HOME, WeightsCache};
use crate::input::{Image, Settings};
use crate::sizing::{Plan, VllmGeneration};
use crate::units::{GIB, gib_quantity, parse_quantity};

/// The port `vllm serve` listens on, named for the Service's target port.
pub(crate) const CONTAINER_PORT: i32 = 8000;
pub(crate) const PORT_NAME: &str = "http";
/// HOME of the vLLM process: an emptyDir, since the images' HOME is /root.
pub(crate) const HOME: &str = "/home/vllm";
/// Names of the pod's volumes.
pub(crate) const WEIGHTS_VOLUME: &str = "weights";
const HOME_VOLUME: &str = "home";
const TMP_VOLUME: &str = "tmp";
const SHM_VOLUME: &str = "dshm";
/// The user of NVIDIA pods (the images have no non-root user of their own).
const USER_ID: i64 = 1000;

/// Probe periods: the startup probe checks every 10 s until the budget is
/// spent; readiness every 10 s; liveness every 20 s, six misses (2 minutes)
/// before a restart, so a long request burst does not kill a server.
const STARTUP_PERIOD_SECONDS: i32 = 10;
const READINESS_PERIOD_SECONDS: i32 = 10;
const LIVENESS_PERIOD_SECONDS: i32 = 20;
const LIVENESS_FAILURES: i32 = 6;

/// How a pod stops. Kubernetes takes a deleted pod out of its Service's
/// endpoints while it sends SIGTERM, and kube-proxy, an Ingress controller
/// or a Gateway's endpoint picker learn it a few seconds later: the preStop
/// sleep keeps vLLM answering until they stop sending. On SIGTERM vLLM 0.19
/// refuses new requests and finishes those in flight for up to
/// `--shutdown-timeout` seconds (its default, 0, aborts them: every scale-down,
/// rollout and drain would cut answers off). The grace period covers both,
/// and a few seconds to exit.
const PRE_STOP_SECONDS: i64 = 15;
const DRAIN_SECONDS: i64 = 40;
const EXIT_SECONDS: i64 = 5;
const SHUTDOWN_TIMEOUT_FLAG: &str = "--shutdown-timeout";

/// Whether the pod's vLLM takes `--shutdown-timeout`: a release of 0.19 or
/// later (0.18 added it). An unknown release (an image of the XR's own, or
/// the platform's with no `vllmVersion`) does not get it, as vLLM refuses a
/// flag it does not know and would not start.
fn drains_in_flight_requests(p: &PodParams) -> bool {
    VllmGeneration::from_version(p.vllm_release) == VllmGeneration::Current
}

/// How long vLLM drains: the user's `--shutdown-timeout`, which wins over
/// ours as it comes later, else ours.
fn drain_seconds(p: &PodParams) -> i64 {
    let mut args = p.extra_args.iter();
    let mut seconds = None;
    while let Some(arg) = args.next() {
        let value = match arg.strip_prefix(SHUTDOWN_TIMEOUT_FLAG) {
            Some("") => args.next().map(String::as_str),
            Some(v) => v.strip_prefix('='),
            None => None,
        };
        if let Some(v) = value.and_then(|v| v.trim().parse::<i64>().ok()) {
            seconds = Some(v.clamp(0, 24 * 3600));
        }
    }
    seconds.unwrap_or(DRAIN_SECONDS)
}

/// A preStop hook that sleeps `seconds`.
fn sleep_before_stop(seconds: i64) -> Lifecycle {
    Lifecycle {
        pre_stop: Some(LifecycleHandler {
            exec: Some(ExecAction {
                command: Some(vec!["sleep".into(), seconds.to_string()]),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The failures the startup probe allows: the budget in probe periods.
pub(crate) fn startup_failure_threshold(plan: &Plan) -> i32 {
    let periods = plan
        .startup_probe_seconds
        .div_ceil(STARTUP_PERIOD_SECONDS as u32);
    i32::try_from(periods).unwrap_or(i32::MAX)
}

/// What one vLLM pod is built from.
pub(crate) struct PodParams<'a> {
    /// What `vllm serve` loads: a Hugging Face id or a path.
    pub(crate) model_url: &'a str,
    pub(crate) plan: &'a Plan,
    pub(crate) image: &'a Image,
    /// The vLLM release `image` runs, when known: it decides the flags vLLM takes.
    pub(crate) vllm_release: Option<&'a str>,
    pub(crate) hf_token: Option<(&'a str, &'a str)>,
    /// The Model's load arguments, then the user's; appended last.
    pub(crate) extra_args: &'a [String],
    pub(crate) settings: &'a Settings,
    pub(crate) weights_cache: Option<&'a WeightsCache>,
    /// Secrets to pull the image with.
    pub(crate) pull_secrets: &'a [String],
    /// (Secret name, key) of the API key the serving container requires.
    pub(crate) api_key: Option<(&'a str, &'a str)>,
    /// The Secret whose keys (AWS_*) every vLLM container reads the
    /// weights' bucket with.
    pub(crate) storage_keys: Option<&'a str>,
    /// Pods a replica spans (1, or the LeaderWorkerSet's group size).
    pub(crate) nodes: u32,
}

/// `vllm serve` arguments after the command: the model, the listen address
/// and everything the plan decided, then the extra arguments.
pub(crate) fn serve_args(p: &PodParams) -> Vec<String> {
    let plan = p.plan;
    let mut args = vec![
        p.model_url.to_string(),
        "--host".into(),
        "0.0.0.0".into(),
        "--port".into(),
        CONTAINER_PORT.to_string(),
        "--tensor-parallel-size".into(),
        plan.tensor_parallel_size.to_string(),
    ];
    if plan.pipeline_parallel_size > 1 {
        args.extend([
            "--pipeline-parallel-size".into(),
            plan.pipeline_parallel_size.to_string(),
        ]);
    }
    if p.nodes > 1 {
        // Ranks on other pods are reached through the Ray cluster.
        args.extend(["--distributed-executor-backend".into(), "ray".into()]);
    }
    args.extend([
        "--max-model-len".into(),
        plan.max_model_len.to_string(),
        "--dtype".into(),
        plan.dtype.to_string(),
    ]);
    // --quantization and --kv-cache-dtype, when the plan needs them, as the
    // VLLMRuntime gets them.
    args.extend(plan.engine_args());
    args.extend([
        "--gpu-memory-utilization".into(),
        plan.gpu_memory_utilization.to_string(),
    ]);
    if drains_in_flight_requests(p) {
        args.extend([SHUTDOWN_TIMEOUT_FLAG.into(), DRAIN_SECONDS.to_string()]);
    }
    args.extend(p.extra_args.iter().cloned());
    args
}

/// The environment of every vLLM container of the pod.
pub(crate) fn env(p: &PodParams) -> Vec<EnvVar> {
    let mut env = vec![
        env_vars::literal("HOME", HOME),
        // torch and Ray ask for the user's name, which a uid without a
        // passwd entry does not have, unless USER says it.
        env_vars::literal("USER", "vllm"),
        env_vars::literal(
            "HF_HOME",
            if p.weights_cache.is_some() {
                HF_HOME
            } else {
                "/home/vllm/huggingface"
            },
        ),
        env_vars::literal("VLLM_NO_USAGE_STATS", "1"),
    ];
    if p.plan.tensor_parallel_size > 1 && p.nodes <= 1 {
        // vLLM's default fork breaks CUDA in tensor-parallel workers.
        env.push(env_vars::literal("VLLM_WORKER_MULTIPROC_METHOD", "spawn"));
    }
    if let Some((name, key)) = p.hf_token {
        env.push(env_vars::from_secret("HF_TOKEN", name, key));
    }
    env
}

/// The bucket's keys, each a variable of the Secret's: every pod of a
/// group streams its own share of the weights.
fn env_from(p: &PodParams) -> Option<Vec<EnvFromSource>> {
    p.storage_keys.map(|name| {
        vec![EnvFromSource {
            secret_ref: Some(SecretEnvSource {
                name: name.to_string(),
                optional: None,
            }),
            ..Default::default()
        }]
    })
}

/// Requests equal to limits for one pod holding `gpus` of the replica's
/// GPUs (or its MIG slice), its share of CPU and memory, plus the memory
/// /dev/shm may take. The second value is the pod's memory in words.
pub(crate) fn resources(p: &PodParams) -> (ResourceRequirements, String) {
    let plan = p.plan;
    let nodes = f64::from(p.nodes.max(1));
    let gpus = plan.gpus_per_pod();
    let cpu = (parse_quantity(&plan.cpu).unwrap_or(1.0) / nodes)
        .ceil()
        .max(1.0);
    let memory_gib = (parse_quantity(&plan.memory).unwrap_or(8.0 * GIB) / GIB / nodes).ceil();
    let shm_gib = plan
        .shm_size
        .as_deref()
        .and_then(|s| parse_quantity(s).ok())
        .map_or(0.0, |b| (b / GIB).ceil());
    let memory = gib_quantity(memory_gib + shm_gib);
    let limits = BTreeMap::from([
        ("cpu".to_string(), Quantity(format!("{cpu}"))),
        ("memory".to_string(), Quantity(memory.clone())),
        (
            plan.gpu_resource_name.to_string(),
            Quantity(gpus.to_string()),
        ),
    ]);
    let mut requests = limits.clone();
    if p.weights_cache.is_none() {
        // The download lands on the node's disk: ask the scheduler for room.
        requests.insert(
            "ephemeral-storage".into(),
            Quantity(gib_quantity(plan.checkpoint_gib * 1.2)),
        );
    }
    let words = if shm_gib > 0.0 {
        format!("{memory} memory per pod ({memory_gib}Gi of the plan and {shm_gib}Gi for /dev/shm)")
    } else {
        format!("{memory} memory per pod")
    };
    (
        ResourceRequirements {
            limits: Some(limits),
            requests: Some(requests),
            ..Default::default()
        },
        words,
    )
}

fn health(period: i32, failures: i32, timeout: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some("/health".into()),
            port: IntOrString::String(PORT_NAME.into()),
            ..Default::default()
        }),
        period_seconds: Some(period),
        failure_threshold: Some(failures),
        timeout_seconds: Some(timeout),
        ..Default::default()
    }
}

/// The container that serves: `command` runs vllm serve (directly, or
/// after starting Ray), with probes on /health.
pub(crate) fn serving_container(
    p: &PodParams,
    command: Vec<String>,
    args: Vec<String>,
) -> Container {
    let (resources, _) = resources(p);
    let mut env = env(p);
    // The leader alone serves the API: workers never see the key.
    if let Some((name, key)) = p.api_key {
        env.push(env_vars::from_secret("VLLM_API_KEY", name, key));
    }
    Container {
        name: "vllm".into(),
        image: Some(p.image.reference()),
        command: Some(command),
        args: Some(args),
        env: Some(env),
        env_from: env_from(p),
        ports: Some(vec![ContainerPort {
            name: Some(PORT_NAME.into()),
            container_port: CONTAINER_PORT,
            protocol: Some("TCP".into()),
            ..Default::default()
        }]),
        resources: Some(resources),
        startup_probe: Some(health(
            STARTUP_PERIOD_SECONDS,
            startup_failure_threshold(p.plan),
            5,
        )),
        readiness_probe: Some(health(READINESS_PERIOD_SECONDS, 3, 5)),
        liveness_probe: Some(health(LIVENESS_PERIOD_SECONDS, LIVENESS_FAILURES, 10)),
        lifecycle: Some(sleep_before_stop(PRE_STOP_SECONDS)),
        volume_mounts: Some(volume_mounts(p)),
        security_context: Some(container_security(p.plan)),
        termination_message_policy: Some(LOG_TAIL_ON_ERROR.into()),
        ..Default::default()
    }
}

/// A container of a LeaderWorkerSet worker: it joins the leader's Ray
/// cluster and holds its GPUs for it; vLLM's health is the leader's.
pub(crate) fn worker_container(p: &PodParams, command: Vec<String>) -> Container {
    let (resources, _) = resources(p);
    Container {
        name: "vllm-worker".into(),
        image: Some(p.image.reference()),
        command: Some(command),
        env: Some(env(p)),
        env_from: env_from(p),
        resources: Some(resources),
        // A group stops all at once; the leader's engine needs its workers'
        // GPUs until it has drained.
        lifecycle: Some(sleep_before_stop(PRE_STOP_SECONDS + drain_seconds(p))),
        volume_mounts: Some(volume_mounts(p)),
        security_context: Some(container_security(p.plan)),
        termination_message_policy: Some(LOG_TAIL_ON_ERROR.into()),
        ..Default::default()
    }
}

/// A container that exits with an error leaves its log's tail in its
/// status (`lastState.terminated.message`), where the XR's Serving
/// condition quotes it: vLLM writes why it stopped (CUDA out of memory,
/// a KV cache too small for the context) to its log, not to a file.
pub(crate) const LOG_TAIL_ON_ERROR: &str = "FallbackToLogsOnError";

fn volume_mounts(p: &PodParams) -> Vec<VolumeMount> {
    let mount = |name: &str, path: &str| VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        ..Default::default()
    };
    let mut mounts = vec![mount(HOME_VOLUME, HOME), mount(TMP_VOLUME, "/tmp")];
    if p.plan.shm_size.is_some() {
        mounts.push(mount(SHM_VOLUME, "/dev/shm"));
    }
    if p.weights_cache.is_some() {
        mounts.push(mount(WEIGHTS_VOLUME, CACHE_MOUNT_PATH));
    }
    mounts
}

/// The pod's volumes; `weights_claim` names the PersistentVolumeClaim of a
/// shared weights volume (a LeaderWorkerSet's per-pod claims come from its
/// template instead).
pub(crate) fn volumes(p: &PodParams, weights_claim: Option<&str>) -> Vec<Volume> {
    let empty = |name: &str, source: EmptyDirVolumeSource| Volume {
        name: name.into(),
        empty_dir: Some(source),
        ..Default::default()
    };
    let mut volumes = vec![
        empty(HOME_VOLUME, EmptyDirVolumeSource::default()),
        empty(TMP_VOLUME, EmptyDirVolumeSource::default()),
    ];
    if let Some(shm) = &p.plan.shm_size {
        volumes.push(empty(
            SHM_VOLUME,
            EmptyDirVolumeSource {
                medium: Some("Memory".into()),
                size_limit: Some(Quantity(shm.clone())),
            },
        ));
    }
    if let Some(claim) = weights_claim {
        volumes.push(Volume {
            name: WEIGHTS_VOLUME.into(),
            persistent_volume_claim: Some(
                k8s_openapi::api::core::v1::PersistentVolumeClaimVolumeSource {
                    claim_name: claim.into(),
                    read_only: None,
                },
            ),
            ..Default::default()
        });
    }
    volumes
}

fn is_amd(plan: &Plan) -> bool {
    plan.gpu.vendor == "amd"
}

fn container_security(plan: &Plan) -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            add: None,
        }),
        run_as_non_root: (!is_amd(plan)).then_some(true),
        ..Default::default()
    }
}

fn pod_security(plan: &Plan) -> PodSecurityContext {
    let seccomp = Some(SeccompProfile {
        type_: "RuntimeDefault".into(),
        localhost_profile: None,
    });
    if is_amd(plan) {
        return PodSecurityContext {
            seccomp_profile: seccomp,
            ..Default::default()
        };
    }
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(USER_ID),
        run_as_group: Some(USER_ID),
        // The weights volume is written by the same user.
        fs_group: Some(USER_ID),
        seccomp_profile: seccomp,
        ..Default::default()
    }
}

/// A pod spec around `containers`: scheduling on the GPU nodes, security,
/// volumes.
pub(crate) fn pod_spec(p: &PodParams, containers: Vec<Container>, volumes: Vec<Volume>) -> PodSpec {
    let affinity = gpu_node_terms(p.plan, p.settings).map(|node_selector_terms| Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms,
            }),
            ..Default::default()
        }),
        ..Default::default()
    });
    PodSpec {
        containers,
        volumes: Some(volumes),
        affinity,
        // Harmless where the taint is absent, needed where it is.
        tolerations: Some(
            std::iter::once(gpu_toleration(p.plan))
                .chain(p.settings.model_server_tolerations.iter().cloned())
                .collect(),
        ),
        security_context: Some(pod_security(p.plan)),
        enable_service_links: Some(false),
        automount_service_account_token: Some(false),
        termination_grace_period_seconds: Some(PRE_STOP_SECONDS + drain_seconds(p) + EXIT_SECONDS),
        image_pull_secrets: image_pull_secrets(p.pull_secrets),
        priority_class_name: p.settings.model_server_priority_class.clone(),
        service_account_name: p.settings.model_server_service_account.clone(),
        scheduler_name: p.settings.model_server_scheduler.clone(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::{self, MigChoice, SizingRequest};

    #[test]
    fn the_startup_probe_covers_the_load_estimate() {
        let plan = |model: &str, gpu: &str| {
            sizing::size(&SizingRequest {
                model_id: model.into(),
                gpu_type: gpu.into(),
                mig: MigChoice::None,
                ..Default::default()
            })
            .unwrap()
        };
        // Small: the engine's 600 s floor, 60 periods of 10 s.
        let small = plan("Qwen/Qwen2.5-1.5B-Instruct", "L4");
        assert_eq!(startup_failure_threshold(&small), 60);
        // 70B: 300 + 20 x 131.4 GiB = 2,928 s, rounded up to 2,940 s.
        let llama = plan("meta-llama/Llama-3.1-70B-Instruct", "H100-80GB");
        assert_eq!(startup_failure_threshold(&llama), 294);
        // DeepSeek-R1: beyond 3 h, and all of it.
        let r1 = plan("deepseek-ai/DeepSeek-R1", "H100-80GB");
        assert!(r1.startup_probe_seconds > 10_800);
        assert!(f64::from(r1.startup_probe_seconds) >= 300.0 + 20.0 * r1.checkpoint_gib);
        assert_eq!(
            startup_failure_threshold(&r1),
            r1.startup_probe_seconds.div_ceil(10) as i32
        );
    }

    #[test]
    fn a_stopping_pod_finishes_its_requests_within_the_grace_period() {
        let plan = sizing::size(&SizingRequest {
            model_id: "Qwen/Qwen2.5-7B-Instruct".into(),
            gpu_type: "L4".into(),
            mig: MigChoice::None,
            ..Default::default()
        })
        .unwrap();
        let settings = Settings::default();
        let pod = |vllm_release: Option<&str>, extra_args: &[String]| {
            let p = PodParams {
                model_url: "Qwen/Qwen2.5-7B-Instruct",
                plan: &plan,
                image: &settings.image,
                vllm_release,
                hf_token: None,
                extra_args,
                settings: &settings,
                weights_cache: None,
                pull_secrets: &[],
                api_key: None,
                storage_keys: None,
                nodes: 2,
            };
            let spec = pod_spec(&p, vec![], vec![]);
            let leader = serving_container(&p, vec![], vec![]);
            let worker = worker_container(&p, vec![]);
            let sleep = |c: &Container| {
                c.lifecycle
                    .clone()
                    .unwrap()
                    .pre_stop
                    .unwrap()
                    .exec
                    .unwrap()
                    .command
                    .unwrap()
            };
            (
                serve_args(&p),
                spec.termination_grace_period_seconds,
                sleep(&leader),
                sleep(&worker),
            )
        };
        let shutdown_timeout = |args: &[String]| {
            args.iter()
                .position(|a| a == "--shutdown-timeout")
                .map(|i| args[i + 1].clone())
        };

        // vLLM 0.19 drains for 40 s after a 15 s pause; the workers stay
        // until it has.
        let current = Some("0.19.0");
        let (args, grace, leader, worker) = pod(current, &[]);
        assert_eq!(shutdown_timeout(&args).as_deref(), Some("40"));
        assert_eq!(grace, Some(60));
        assert_eq!(leader, ["sleep", "15"]);
        assert_eq!(worker, ["sleep", "55"]);

        // The user's timeout, given last, wins, and the grace period follows it.
        for extra in [
            vec!["--shutdown-timeout".to_string(), "300".to_string()],
            vec!["--shutdown-timeout=300".to_string()],
        ] {
            let (args, grace, _, worker) = pod(current, &extra);
            assert_eq!(args[args.len() - extra.len()..], extra[..]);
            assert_eq!(grace, Some(320), "{extra:?}");
            assert_eq!(worker, ["sleep", "315"]);
        }

        // An unknown or earlier release would refuse the flag: the pause
        // and the grace period stay.
        for version in [None, Some("0.11.2")] {
            let (args, grace, leader, _) = pod(version, &[]);
            assert_eq!(shutdown_timeout(&args), None, "{version:?}");
            assert_eq!(grace, Some(60));
            assert_eq!(leader, ["sleep", "15"]);
        }
    }
}
