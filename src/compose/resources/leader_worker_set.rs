//! vLLM across nodes on a `LeaderWorkerSet`, the pattern vLLM documents:
//! each replica is a group of `nodes` pods recreated together
//! (`RecreateGroupOnPodRestart`). The leader starts the Ray head, waits
//! until every pod of its group has joined, and runs `vllm serve` with the
//! plan's tensor parallelism within a node and pipeline stages across
//! nodes on the Ray backend; the workers join the leader's Ray cluster at
//! `LWS_LEADER_ADDRESS` and hold their GPUs for it. Only the leader serves,
//! so only it has probes, and the Service selects it.
//!
//! The Ray bootstrap is a few lines of shell here rather than a script from
//! an image, so any image with `vllm` and `ray` works (vLLM's CUDA image,
//! the ROCm build). A weights volume is one ReadWriteOnce claim per pod
//! from the set's claim template, since every pod reads its own shards.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSetPersistentVolumeClaimRetentionPolicy;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::compose::resources::vllm_pod::{
    PodParams, pod_spec, serve_args, serving_container, volumes, worker_container,
};
use crate::compose::resources::weights_volume::weights_claim;
use crate::manifests::leader_worker_set::{
    LeaderWorkerSet, LeaderWorkerSetSpec, LeaderWorkerTemplate, NAME_LABEL, NetworkConfig,
};

/// Ray's port on the leader.
pub(crate) const RAY_PORT: u16 = 6379;
/// The label that tells the leader from the workers (the Service selects it).
pub(crate) const ROLE_LABEL: &str = "role";

/// What the LeaderWorkerSet is built from besides the pod.
pub(crate) struct LwsParams<'a> {
    pub(crate) name: &'a str,
    pub(crate) namespace: &'a str,
    /// Groups: model replicas; `None` when an autoscaler owns the count.
    pub(crate) replicas: Option<i32>,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) pod: PodParams<'a>,
}

/// The leader's shell: start the Ray head, wait for the group, then exec
/// `vllm serve` with the arguments that follow the script (`"$@"`), so no
/// argument is ever re-parsed by the shell. A group of one needs no Ray.
fn leader_command(nodes: u32) -> Vec<String> {
    let script = if nodes > 1 {
        format!(
            "set -e\n\
             ray start --head --port={RAY_PORT} --disable-usage-stats\n\
             until [ \"$(python3 -c 'import ray; ray.init(address=\"auto\", logging_level=\"ERROR\"); print(sum(1 for n in ray.nodes() if n[\"Alive\"]))')\" -ge \"$LWS_GROUP_SIZE\" ]; do\n\
             \x20 echo \"waiting for $LWS_GROUP_SIZE Ray nodes\"; sleep 5\n\
             done\n\
             exec vllm serve \"$@\"\n"
        )
    } else {
        "exec vllm serve \"$@\"\n".to_string()
    };
    vec!["/bin/sh".into(), "-c".into(), script, "vllm-leader".into()]
}

/// The workers' shell: join the leader's Ray cluster and stay there.
fn worker_command() -> Vec<String> {
    vec![
        "/bin/sh".into(),
        "-c".into(),
        format!(
            "exec ray start --address=\"$LWS_LEADER_ADDRESS:{RAY_PORT}\" --block --disable-usage-stats\n"
        ),
    ]
}

/// Labels of the leader's pods: the Service selects them.
pub(crate) fn leader_labels(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME_LABEL.to_string(), name.to_string()),
        (ROLE_LABEL.to_string(), "leader".to_string()),
    ])
}

/// The LeaderWorkerSet.
pub(crate) fn leader_worker_set(l: &LwsParams) -> LeaderWorkerSet {
    let p = &l.pod;
    let nodes = p.nodes.max(1);
    let mut leader_labels_all = l.labels.clone();
    leader_labels_all.insert(ROLE_LABEL.into(), "leader".into());
    let mut worker_labels = l.labels.clone();
    worker_labels.insert(ROLE_LABEL.into(), "worker".into());
    let leader = serving_container(p, leader_command(nodes), serve_args(p));
    let worker = worker_container(p, worker_command());
    let template = |labels: BTreeMap<String, String>, container| PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels),
            ..Default::default()
        }),
        spec: Some(pod_spec(p, vec![container], volumes(p, None))),
    };
    let claims = p.weights_cache.map(|c| {
        vec![weights_claim(
            crate::compose::resources::vllm_pod::WEIGHTS_VOLUME,
            c,
        )]
    });
    LeaderWorkerSet {
        metadata: ObjectMeta {
            name: Some(l.name.to_string()),
            namespace: Some(l.namespace.to_string()),
            labels: Some(l.labels.clone()),
            ..Default::default()
        },
        spec: LeaderWorkerSetSpec {
            replicas: l.replicas,
            // Under the default `Shared` policy the controller creates a
            // headless Service named like the set, the name of the XR's own
            // Service: if the controller's comes first, Crossplane cannot
            // apply ours (two controllers); if ours does, the controller
            // adopts it as the group's subdomain, and as it is not headless
            // `LWS_LEADER_ADDRESS` never resolves. A headless Service per
            // group, named after its leader pod, leaves the name to the XR.
            network_config: Some(NetworkConfig {
                subdomain_policy: "UniquePerReplica".into(),
            }),
            leader_worker_template: LeaderWorkerTemplate {
                size: i32::try_from(nodes).ok(),
                restart_policy: Some("RecreateGroupOnPodRestart".into()),
                leader_template: Some(template(leader_labels_all, leader)),
                worker_template: template(worker_labels, worker),
                persistent_volume_claim_retention_policy: claims.as_ref().map(|_| {
                    StatefulSetPersistentVolumeClaimRetentionPolicy {
                        when_deleted: Some("Delete".into()),
                        when_scaled: Some("Delete".into()),
                    }
                }),
                volume_claim_templates: claims,
                ..Default::default()
            },
            ..Default::default()
        },
        ..Default::default()
    }
}
