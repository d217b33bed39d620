//! Why the pods of a workload do not run, read from the pods themselves:
//! the scheduler's verdict with what would place them (GPU labels, MIG
//! slices, taints, a LeaderWorkerSet group holding part of its nodes), a
//! scheduler that never looked, or a container that cannot start or keeps
//! crashing, quoted from its log. The `Serving` condition says it while a
//! model server or an AgentPool's agents do not serve.

use serde_json::{Map, Value};

use crate::compose::observed_condition::condition;
use crate::request::{at, int_at, str_at};
use crate::sizing::{
    AMD_DEVICE_ID_LABEL, AMD_PARTITION_LABEL, EKS_AUTO_MODE_GPU_LABELS, GKE_ACCELERATOR_LABEL,
    GKE_PARTITION_LABEL, GKE_SHARING_LABEL, GPU_PRODUCT_LABEL, INSTANCE_TYPE_LABEL,
    KARPENTER_GPU_LABELS, MIXED_MIG_RESOURCE_PREFIX, WHOLE_AMD_GPU,
};

/// Why the pods of a workload do not run, from the pods themselves: a pod
/// the scheduler cannot place ("Insufficient nvidia.com/gpu", no node with
/// the GPU type), or a container that cannot start. The first problem by
/// pod name, so the answer is the same on every call.
pub(crate) fn pod_problem(pods: &[Map<String, Value>]) -> Option<(String, String)> {
    let mut sorted: Vec<&Map<String, Value>> = pods.iter().collect();
    sorted.sort_by_key(|p| str_at(p, &["metadata", "name"]));
    sorted.into_iter().find_map(|pod| {
        let name = str_at(pod, &["metadata", "name"]);
        if let Some(c) = condition(pod, "PodScheduled")
            .filter(|c| c.status == "False" && c.reason == "Unschedulable")
        {
            let mut message = format!(
                "pod {name} cannot be scheduled: {}",
                c.message_or("no node fits it")
            );
            // Where a node lacks only resources, it has the labels: no hint.
            if message.contains("didn't match Pod's node affinity/selector")
                && !message.contains("Insufficient ")
                && let Some(asked) = gpu_labels_asked(pod)
            {
                message.truncate(message.trim_end_matches('.').len());
                message.push_str(&asked);
            }
            // The scheduler does not say which taint: the GPU nodes' own one
            // (AKS tells GPU pools to carry sku=gpu) is only a possibility.
            if message.contains("untolerated taint")
                && !message.contains("Insufficient ")
                && requests_gpus(pod)
            {
                message.truncate(message.trim_end_matches('.').len());
                message.push_str(
                    "; if the GPU nodes carry a taint besides the GPU's (AKS GPU pools: sku=gpu), the platform's \
                     step input lets model servers tolerate it (input.defaults.modelServerTolerations)",
                );
            }
            // A slice no node offers, or whose whole GPU's label is all that
            // keeps it off every node: how single-strategy and GKE clusters
            // offer slices.
            let only_labels = message.contains("didn't match Pod's node affinity/selector")
                && !message.contains("Insufficient ")
                && !message.contains("untolerated taint");
            if let Some(slice) = mig_resource(pod)
                .filter(|r| only_labels || message.contains(&format!("Insufficient {r}")))
            {
                message.truncate(message.trim_end_matches('.').len());
                message.push_str(&format!(
                    "; no node offers {slice}: the device plugin offers each MIG profile as its own resource \
                     only under its mixed strategy, on nodes whose GPUs are partitioned into that profile; \
                     where it runs the single strategy (the GPU Operator's mig.strategy=single) or on GKE, a \
                     slice is an nvidia.com/gpu: set input.defaults.migStrategy to single"
                ));
            }
            if message.contains("Insufficient ")
                && let Some((holder, node)) = placed_in_group(pod, pods)
            {
                message.truncate(message.trim_end_matches('.').len());
                message.push_str(&format!(
                    "; meanwhile pod {holder} of its group holds its GPUs on node {node}: a LeaderWorkerSet's \
                     group is placed pod by pod, so groups that compete for the same nodes can each hold part of \
                     them and wait for ever; a gang scheduler places a group whole or not at all \
                     (input.defaults.modelServerSchedulerName, with the LeaderWorkerSet controller's \
                     gangSchedulingManagement)"
                ));
            }
            return Some(("Unschedulable".to_string(), message));
        }
        if let Some(scheduler) = awaited_scheduler(pod) {
            // Only a model server's pods take the platform's scheduler.
            let named_by = if requests_gpus(pod) {
                " (input.defaults.modelServerSchedulerName names it)"
            } else {
                ""
            };
            return Some((
                "AwaitingScheduler".to_string(),
                format!(
                    "pod {name} waits for scheduler {scheduler}, which has not looked at it yet: if this lasts, \
                     check that {scheduler} runs{named_by}"
                ),
            ));
        }
        let statuses = at(pod, &["status", "containerStatuses"])?.as_array()?;
        statuses
            .iter()
            .filter_map(Value::as_object)
            .find_map(|s| container_problem(pod, s))
    })
}

/// Labels the LeaderWorkerSet controller puts on its pods: the set's name
/// and the group's index.
const LWS_SET_LABEL: &str = "leaderworkerset.sigs.k8s.io/name";
const LWS_GROUP_LABEL: &str = "leaderworkerset.sigs.k8s.io/group-index";

/// A pod of `pod`'s LeaderWorkerSet group that the cluster's own scheduler
/// placed, and its node: what the group holds while `pod` waits.
fn placed_in_group<'a>(
    pod: &Map<String, Value>,
    pods: &'a [Map<String, Value>],
) -> Option<(&'a str, &'a str)> {
    let group = |p: &Map<String, Value>| {
        let labels = at(p, &["metadata", "labels"])?;
        let set = labels.get(LWS_SET_LABEL)?.as_str()?;
        Some((
            set.to_string(),
            labels.get(LWS_GROUP_LABEL)?.as_str()?.to_string(),
        ))
    };
    let own = group(pod)?;
    if other_scheduler(pod).is_some() {
        return None;
    }
    let holder = pods
        .iter()
        .filter(|p| group(p).as_ref() == Some(&own) && !str_at(p, &["spec", "nodeName"]).is_empty())
        .min_by_key(|p| str_at(p, &["metadata", "name"]))?;
    Some((
        str_at(holder, &["metadata", "name"]),
        str_at(holder, &["spec", "nodeName"]),
    ))
}

/// The scheduler other than the cluster's own that `pod` names, while it
/// has placed the pod nowhere and said nothing about it: the default
/// scheduler leaves such a pod alone, so if the one it names does not run,
/// nothing ever will.
fn awaited_scheduler(pod: &Map<String, Value>) -> Option<&str> {
    let unplaced = str_at(pod, &["spec", "nodeName"]).is_empty()
        && str_at(pod, &["status", "phase"]) == "Pending"
        && condition(pod, "PodScheduled").is_none();
    other_scheduler(pod).filter(|_| unplaced)
}

/// The scheduler `pod` names, when it is not the cluster's own.
fn other_scheduler(pod: &Map<String, Value>) -> Option<&str> {
    let scheduler = str_at(pod, &["spec", "schedulerName"]);
    (!matches!(scheduler, "" | "default-scheduler")).then_some(scheduler)
}

/// The resources the containers of `pod` set limits on.
fn limited_resources(pod: &Map<String, Value>) -> impl Iterator<Item = &str> {
    at(pod, &["spec", "containers"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.pointer("/resources/limits")?.as_object())
        .flat_map(|limits| limits.keys().map(String::as_str))
}

/// The mixed strategy's MIG resource `pod` asks for, if any.
fn mig_resource(pod: &Map<String, Value>) -> Option<&str> {
    limited_resources(pod).find(|r| r.starts_with(MIXED_MIG_RESOURCE_PREFIX))
}

/// Whether a container of `pod` asks for GPUs (or MIG slices): a model
/// server's pod, which the platform's tolerations reach.
fn requests_gpus(pod: &Map<String, Value>) -> bool {
    limited_resources(pod).any(|r| r.starts_with("nvidia.com/") || r == "amd.com/gpu")
}

/// The GPU labels `pod`'s node affinity asks for, when it is the affinity
/// `input.defaults.gpuNodeSelector` composes: what no node matched, said so
/// that a cluster whose GPU nodes lack the labels is told what to do.
fn gpu_labels_asked<'a>(pod: &'a Map<String, Value>) -> Option<String> {
    let terms = at(
        pod,
        &[
            "spec",
            "affinity",
            "nodeAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            "nodeSelectorTerms",
        ],
    )?
    .as_array()?;
    let expressions = |t: &'a Value| {
        t.get("matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
    };
    let all = || terms.iter().flat_map(expressions);
    let asks = |key: &str, operator: &str| {
        all().any(|e| str_at(e, &["key"]) == key && str_at(e, &["operator"]) == operator)
    };
    // Each term's labels that name the GPU (or, for a MIG slice under the
    // single strategy, the slice), as `key=values`.
    let naming = [
        GPU_PRODUCT_LABEL,
        GKE_ACCELERATOR_LABEL,
        GKE_PARTITION_LABEL,
        EKS_AUTO_MODE_GPU_LABELS.name,
        EKS_AUTO_MODE_GPU_LABELS.memory,
        KARPENTER_GPU_LABELS.name,
        KARPENTER_GPU_LABELS.memory,
        AMD_DEVICE_ID_LABEL,
        INSTANCE_TYPE_LABEL,
    ];
    let mut labels: Vec<String> = terms
        .iter()
        .map(|t| {
            expressions(t)
                .filter(|e| naming.contains(&str_at(e, &["key"])))
                .filter_map(|e| {
                    let relation = match str_at(e, &["operator"]) {
                        "In" => "=",
                        "Gt" => ">",
                        "Lt" => "<",
                        _ => return None,
                    };
                    let values: Vec<&str> = e
                        .get("values")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    Some(format!(
                        "{}{relation}{}",
                        str_at(e, &["key"]),
                        values.join(",")
                    ))
                })
                .collect::<Vec<_>>()
                .join(" with ")
        })
        .filter(|l| !l.is_empty())
        .collect();
    // AMD's terms repeat the device IDs, once per partition requirement.
    labels.dedup();
    if labels.is_empty() {
        return None;
    }
    let labels = labels.join(" or ");
    if asks(GKE_PARTITION_LABEL, "In") || labels.contains("-MIG-") {
        return Some(format!(
            "; it asks for a node labelled {labels} (input.defaults.migStrategy is single: the device plugin \
             offers each MIG slice as an nvidia.com/gpu, and only these labels say which profile a node's slices \
             are): if no node's GPUs are partitioned into this profile and no node autoscaler is adding one, \
             partition them (the GPU Operator's nvidia.com/mig.config label, or a GKE node pool with that \
             partition size), or set migStrategy to mixed where the device plugin offers each profile as its \
             own resource"
        ));
    }
    let whole_gpus: Vec<String> = [
        asks(AMD_PARTITION_LABEL, "In")
            .then(|| format!("{AMD_PARTITION_LABEL}={WHOLE_AMD_GPU} or unset")),
        asks(GKE_PARTITION_LABEL, "DoesNotExist")
            .then(|| format!("no {GKE_PARTITION_LABEL} or {GKE_SHARING_LABEL} label")),
        cloud_names_only_without(&labels, GPU_PRODUCT_LABEL, &asks),
        cloud_names_only_without(&labels, AMD_DEVICE_ID_LABEL, &asks),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut labellers = vec![if labels.contains(AMD_DEVICE_ID_LABEL) {
        "AMD's node labeller does, with -device-id"
    } else {
        "GPU feature discovery does"
    }];
    if asks_ec2_names(&labels) {
        labellers.push("EKS Auto Mode and Karpenter on the nodes they provision");
    }
    if labels.contains(INSTANCE_TYPE_LABEL) {
        labellers.push("AKS by each node's VM size");
    }
    let labeller = match labellers.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{}, and {last}", rest.join(", ")),
        _ => labellers.concat(),
    };
    let whole = if whole_gpus.is_empty() {
        String::new()
    } else {
        format!(", on whole GPUs ({})", whole_gpus.join("; "))
    };
    Some(format!(
        "; it asks for a node labelled {labels}{whole} (input.defaults.gpuNodeSelector keeps each server on \
         the GPU type it is sized for): if no node carries that label and no node autoscaler is adding \
         one, label the GPU nodes ({labeller}) or turn gpuNodeSelector off"
    ))
}

/// Whether `labels` (asked for) include EC2's name of a GPU.
fn asks_ec2_names(labels: &str) -> bool {
    labels.contains(EKS_AUTO_MODE_GPU_LABELS.name) || labels.contains(KARPENTER_GPU_LABELS.name)
}

/// The cloud's names of a GPU (EC2's `instance-gpu-name`, the Azure VM
/// size as `instance-type`) that a term asks for only on nodes without
/// `labeller`'s label, in words.
fn cloud_names_only_without(
    labels: &str,
    labeller: &str,
    asks: &impl Fn(&str, &str) -> bool,
) -> Option<String> {
    if !asks(labeller, "DoesNotExist") {
        return None;
    }
    let names: Vec<&str> = [
        asks_ec2_names(labels).then_some("instance-gpu-name"),
        labels
            .contains(INSTANCE_TYPE_LABEL)
            .then_some("instance-type"),
    ]
    .into_iter()
    .flatten()
    .collect();
    Some(format!(
        "{} only on nodes without {labeller}",
        names.join(" and ")
    ))
}

/// Why a container of `pod` does not run: it cannot start (an image it
/// cannot pull, a Secret that is missing, a crash loop), or it crashed and
/// runs again, not ready. vLLM loads for minutes before it crashes, so a
/// crash-looping server spends most of its time running again rather than
/// in CrashLoopBackOff: both say how it last ended.
fn container_problem(
    pod: &Map<String, Value>,
    status: &Map<String, Value>,
) -> Option<(String, String)> {
    const STUCK: &[&str] = &[
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
    ];
    let (name, container) = (
        str_at(pod, &["metadata", "name"]),
        str_at(status, &["name"]),
    );
    // Built only for a container found stuck or restarted.
    let exit = || {
        last_exit(status).map(|exit| {
            let namespace = str_at(pod, &["metadata", "namespace"]);
            format!(
                "; {exit} (its log: kubectl logs -n {namespace} {name} -c {container} --previous)"
            )
        })
    };
    if let Some(waiting) = at(status, &["state", "waiting"]).and_then(Value::as_object) {
        let reason = str_at(waiting, &["reason"]);
        let message = str_at(waiting, &["message"]);
        return STUCK.contains(&reason).then(|| {
            let colon = if message.is_empty() { "" } else { ": " };
            (
                reason.to_string(),
                format!(
                    "pod {name}, container {container}: {reason}{colon}{message}{}",
                    exit().unwrap_or_default()
                ),
            )
        });
    }
    let restarts = int_at(status, &["restartCount"]).unwrap_or(0);
    let ready = at(status, &["ready"]).and_then(Value::as_bool) == Some(true);
    let running = at(status, &["state", "running"]).is_some();
    if !running || ready || restarts == 0 {
        return None;
    }
    exit().map(|exit| {
        (
            "Restarted".to_string(),
            format!(
                "pod {name}, container {container} has restarted {restarts} time(s) and is not ready{exit}"
            ),
        )
    })
}

/// Longest line of a crashed container's log to quote, in characters.
const LOG_LINE_MAX: usize = 500;

/// How a restarting container last ended ("it last exited with code 1
/// (Error): {the cause in its log}"). CrashLoopBackOff's own message only
/// says it is backing off; the cause (vLLM's CUDA out of memory, an
/// OOMKilled from the memory limit) is in `lastState`, with the log's tail
/// where the container sets `FallbackToLogsOnError`.
fn last_exit(status: &Map<String, Value>) -> Option<String> {
    let terminated = at(status, &["lastState", "terminated"])?.as_object()?;
    let mut said = format!(
        "it last exited with code {}",
        int_at(terminated, &["exitCode"])?
    );
    let reason = str_at(terminated, &["reason"]);
    if !reason.is_empty() {
        said.push_str(&format!(" ({reason})"));
    }
    // When: a restart long ago is not why it fails now.
    let finished = str_at(terminated, &["finishedAt"]);
    if !finished.is_empty() {
        said.push_str(&format!(" at {finished}"));
    }
    if let Some((line, is_exception)) = cause_in_log(str_at(terminated, &["message"])) {
        let quoted: String = line.chars().take(LOG_LINE_MAX).collect();
        let cut = if quoted.len() < line.len() { "..." } else { "" };
        // A line that is no exception (a progress bar when a probe killed
        // it, an argument error) is quoted as where the log ended, not as
        // the cause.
        let lead = if is_exception {
            ": "
        } else {
            "; its log ends: "
        };
        said.push_str(&format!("{lead}{quoted}{cut}"));
    }
    Some(said)
}

/// The line of a log's tail that says why the process stopped, and
/// whether it is a Python exception: the last exception that is not a
/// wrapper pointing elsewhere, or else the last line. vLLM's engine runs in
/// a child process whose exception (CUDA out of memory, a KV cache too
/// small) the API server wraps in "Engine core initialization failed. See
/// root cause above"; each line carries the process ("(EngineCore_DP0
/// pid=7) ") and log ("ERROR 11-26 10:00:00 [core.py:708] ") prefixes.
fn cause_in_log(log: &str) -> Option<(&str, bool)> {
    let lines: Vec<&str> = log
        .lines()
        .map(without_log_prefixes)
        .filter(|line| !line.is_empty())
        .collect();
    let is_exception = |line: &str| {
        line.split_once(": ").is_some_and(|(name, _)| {
            !name.contains(' ') && (name.ends_with("Error") || name.ends_with("Exception"))
        })
    };
    let is_wrapper = |line: &str| {
        ["See root cause above", "See stack trace for root cause"]
            .iter()
            .any(|w| line.contains(w))
    };
    let cause = lines
        .iter()
        .rev()
        .find(|line| is_exception(line) && !is_wrapper(line));
    cause
        .or(lines.last())
        .map(|line| (*line, is_exception(line)))
}

/// `line` without vLLM's process prefix ("(APIServer pid=1) ") and log
/// prefix ("ERROR 11-26 10:00:00 [file.py:12] "), trimmed.
fn without_log_prefixes(line: &str) -> &str {
    let mut line = line.trim();
    if line.starts_with('(')
        && let Some((process, rest)) = line.split_once(") ")
        && process.contains(" pid=")
    {
        line = rest.trim_start();
    }
    let levels = ["DEBUG ", "INFO ", "WARNING ", "ERROR ", "CRITICAL "];
    if levels.iter().any(|level| line.starts_with(level))
        && let Some((_, rest)) = line.split_once("] ")
    {
        line = rest.trim_start();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_pod_problem_names_the_pod_and_what_stops_it() {
        let pods = [
            obj(json!({"metadata": {"name": "b"}, "status": {"conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/6 nodes are available: 2 Insufficient nvidia.com/gpu."}]}})),
            obj(
                json!({"metadata": {"name": "a"}, "status": {"containerStatuses": [
                {"name": "vllm", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "not found"}}}]}}),
            ),
            obj(json!({"metadata": {"name": "c"}, "status": {"phase": "Running"}})),
        ];
        assert_eq!(
            pod_problem(&pods),
            Some((
                "ImagePullBackOff".into(),
                "pod a, container vllm: ImagePullBackOff: not found".into()
            ))
        );
        assert_eq!(
            pod_problem(&pods[..1]),
            Some((
                "Unschedulable".into(),
                "pod b cannot be scheduled: 0/6 nodes are available: 2 Insufficient nvidia.com/gpu.".into()
            ))
        );
        assert_eq!(pod_problem(&pods[2..]), None);
    }

    #[test]
    fn a_pod_no_node_matches_says_which_gpu_labels_it_asks_for() {
        let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["Tesla-T4"]}]},
            {"matchExpressions": [
                {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": ["nvidia-tesla-t4"]},
                {"key": "cloud.google.com/gke-gpu-partition-size", "operator": "DoesNotExist"},
                {"key": "cloud.google.com/gke-gpu-sharing-strategy", "operator": "DoesNotExist"},
            ]},
        ]}}});
        let scheduler_says = |affinity: &Value, message: &str| {
            obj(
                json!({"metadata": {"name": "p"}, "spec": {"affinity": affinity},
                "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": message}]}}),
            )
        };
        let unschedulable = |affinity: Value| {
            scheduler_says(
                &affinity,
                "0/7 nodes are available: 2 node(s) had untolerated taint(s), 5 node(s) didn't match Pod's node affinity/selector.",
            )
        };
        // Some node has the labels and lacks GPUs: the labels are not why.
        let full = "0/6 nodes are available: 2 Insufficient nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity/selector.";
        assert_eq!(
            pod_problem(&[scheduler_says(&affinity, full)]).map(|(_, m)| m),
            Some(format!("pod p cannot be scheduled: {full}"))
        );
        assert_eq!(
            pod_problem(&[unschedulable(affinity)]),
            Some((
                "Unschedulable".into(),
                "pod p cannot be scheduled: 0/7 nodes are available: 2 node(s) had untolerated taint(s), 5 node(s) \
                 didn't match Pod's node affinity/selector; it asks for a node labelled nvidia.com/gpu.product=Tesla-T4 \
                 or cloud.google.com/gke-accelerator=nvidia-tesla-t4, on whole GPUs (no \
                 cloud.google.com/gke-gpu-partition-size or cloud.google.com/gke-gpu-sharing-strategy label) \
                 (input.defaults.gpuNodeSelector keeps each server on the GPU type it is sized for): if no node \
                 carries that label and no node autoscaler is adding one, label the GPU nodes (GPU feature \
                 discovery does) or turn gpuNodeSelector off"
                    .into()
            ))
        );
        // GKE's and AKS's whole-GPU conditions side by side (a GB200).
        let gb200 = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-GB200"]}]},
            {"matchExpressions": [
                {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": ["nvidia-gb200"]},
                {"key": "cloud.google.com/gke-gpu-partition-size", "operator": "DoesNotExist"},
                {"key": "cloud.google.com/gke-gpu-sharing-strategy", "operator": "DoesNotExist"},
            ]},
            {"matchExpressions": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["Standard_ND128isr_NDR_GB200_v6"]},
                {"key": "nvidia.com/gpu.product", "operator": "DoesNotExist"},
            ]},
        ]}}});
        let (_, message) = pod_problem(&[unschedulable(gb200)]).unwrap();
        assert!(
            message.contains(
                "it asks for a node labelled nvidia.com/gpu.product=NVIDIA-GB200 or \
                 cloud.google.com/gke-accelerator=nvidia-gb200 or \
                 node.kubernetes.io/instance-type=Standard_ND128isr_NDR_GB200_v6, on whole GPUs (no \
                 cloud.google.com/gke-gpu-partition-size or cloud.google.com/gke-gpu-sharing-strategy label; \
                 instance-type only on nodes without nvidia.com/gpu.product)"
            ),
            "{message}"
        );
        let ids =
            json!({"key": "amd.com/gpu.device-id", "operator": "In", "values": ["74a5", "74b9"]});
        let amd = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [ids, {"key": "amd.com/gpu.compute-memory-partition", "operator": "In", "values": ["spx_nps1"]}]},
            {"matchExpressions": [ids, {"key": "amd.com/gpu.compute-memory-partition", "operator": "DoesNotExist"}]},
        ]}}});
        let (_, message) = pod_problem(&[unschedulable(amd)]).unwrap();
        assert!(
            message.contains(
                "it asks for a node labelled amd.com/gpu.device-id=74a5,74b9, on whole GPUs \
                 (amd.com/gpu.compute-memory-partition=spx_nps1 or unset) (input.defaults.gpuNodeSelector"
            ) && message.contains("label the GPU nodes (AMD's node labeller does, with -device-id)"),
            "{message}"
        );
        // EKS names an A100 of either size a100: its memory tells them apart.
        let eks = |prefix: &str| {
            json!({"matchExpressions": [
                {"key": format!("{prefix}/instance-gpu-name"), "operator": "In", "values": ["a100"]},
                {"key": format!("{prefix}/instance-gpu-memory"), "operator": "Gt", "values": ["61440"]},
                {"key": "nvidia.com/gpu.product", "operator": "DoesNotExist"},
            ]})
        };
        let a100 = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-A100-SXM4-80GB"]}]},
            eks("eks.amazonaws.com"),
            eks("karpenter.k8s.aws"),
        ]}}});
        let (_, message) = pod_problem(&[unschedulable(a100)]).unwrap();
        assert!(
            message.contains(
                "it asks for a node labelled nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB or \
                 eks.amazonaws.com/instance-gpu-name=a100 with eks.amazonaws.com/instance-gpu-memory>61440 or \
                 karpenter.k8s.aws/instance-gpu-name=a100 with karpenter.k8s.aws/instance-gpu-memory>61440, on \
                 whole GPUs (instance-gpu-name only on nodes without nvidia.com/gpu.product) \
                 (input.defaults.gpuNodeSelector"
            ) && message.contains(
                "label the GPU nodes (GPU feature discovery does, and EKS Auto Mode and Karpenter on the \
                 nodes they provision)"
            ),
            "{message}"
        );
        // AKS names a GPU by the node's VM size alone, also where its GPUs
        // are time-shared: only where feature discovery does not say so.
        let t4 = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["Tesla-T4"]}]},
            {"matchExpressions": [
                {"key": "eks.amazonaws.com/instance-gpu-name", "operator": "In", "values": ["t4"]},
                {"key": "nvidia.com/gpu.product", "operator": "DoesNotExist"},
            ]},
            {"matchExpressions": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In",
                 "values": ["Standard_NC4as_T4_v3", "Standard_NC64as_T4_v3"]},
                {"key": "nvidia.com/gpu.product", "operator": "DoesNotExist"},
            ]},
        ]}}});
        let (_, message) = pod_problem(&[unschedulable(t4)]).unwrap();
        assert!(
            message.contains(
                "it asks for a node labelled nvidia.com/gpu.product=Tesla-T4 or \
                 eks.amazonaws.com/instance-gpu-name=t4 or \
                 node.kubernetes.io/instance-type=Standard_NC4as_T4_v3,Standard_NC64as_T4_v3, on whole GPUs \
                 (instance-gpu-name and instance-type only on nodes without nvidia.com/gpu.product) \
                 (input.defaults.gpuNodeSelector"
            ) && message.contains(
                "label the GPU nodes (GPU feature discovery does, EKS Auto Mode and Karpenter on the nodes \
                 they provision, and AKS by each node's VM size)"
            ),
            "{message}"
        );
        let mi300x = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [ids, {"key": "amd.com/gpu.compute-memory-partition", "operator": "In", "values": ["spx_nps1"]}]},
            {"matchExpressions": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["Standard_ND96isr_MI300X_v5"]},
                {"key": "amd.com/gpu.device-id", "operator": "DoesNotExist"},
            ]},
        ]}}});
        let (_, message) = pod_problem(&[unschedulable(mi300x)]).unwrap();
        assert!(
            message.contains(
                "on whole GPUs (amd.com/gpu.compute-memory-partition=spx_nps1 or unset; instance-type only on \
                 nodes without amd.com/gpu.device-id)"
            ) && message.contains(
                "label the GPU nodes (AMD's node labeller does, with -device-id, and AKS by each node's VM size)"
            ),
            "{message}"
        );
        // A MIG slice under the single strategy is found by its labels alone.
        let slice = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [
                {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"]}]},
            {"matchExpressions": [
                {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": ["nvidia-a100-80gb"]},
                {"key": "cloud.google.com/gke-gpu-partition-size", "operator": "In", "values": ["1g.10gb"]},
                {"key": "cloud.google.com/gke-gpu-sharing-strategy", "operator": "DoesNotExist"},
            ]},
        ]}}});
        let (_, message) = pod_problem(&[unschedulable(slice)]).unwrap();
        assert_eq!(
            message,
            "pod p cannot be scheduled: 0/7 nodes are available: 2 node(s) had untolerated taint(s), 5 node(s) \
             didn't match Pod's node affinity/selector; it asks for a node labelled \
             nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB-MIG-1g.10gb or \
             cloud.google.com/gke-accelerator=nvidia-a100-80gb with cloud.google.com/gke-gpu-partition-size=1g.10gb \
             (input.defaults.migStrategy is single: the device plugin offers each MIG slice as an nvidia.com/gpu, \
             and only these labels say which profile a node's slices are): if no node's GPUs are partitioned into \
             this profile and no node autoscaler is adding one, partition them (the GPU Operator's \
             nvidia.com/mig.config label, or a GKE node pool with that partition size), or set migStrategy to \
             mixed where the device plugin offers each profile as its own resource"
        );
        // Affinity of another kind (Linux nodes only) is not the platform's GPU selector.
        let linux = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}});
        assert_eq!(
            pod_problem(&[unschedulable(linux)]).map(|(_, m)| m),
            Some("pod p cannot be scheduled: 0/7 nodes are available: 2 node(s) had untolerated taint(s), 5 node(s) didn't match Pod's node affinity/selector.".into())
        );
    }

    #[test]
    fn a_mig_slice_no_node_offers_says_how_a_single_strategy_cluster_offers_it() {
        let pod = |resource: &str, message: &str| {
            obj(json!({"metadata": {"name": "p"},
                "spec": {"containers": [{"name": "vllm", "resources": {"limits": {resource: "1"}}}]},
                "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": message}]}}))
        };
        let lacking = "0/3 nodes are available: 3 Insufficient nvidia.com/mig-1g.10gb.";
        assert_eq!(
            pod_problem(&[pod("nvidia.com/mig-1g.10gb", lacking)]).map(|(_, m)| m),
            Some(
                "pod p cannot be scheduled: 0/3 nodes are available: 3 Insufficient nvidia.com/mig-1g.10gb; no \
                 node offers nvidia.com/mig-1g.10gb: the device plugin offers each MIG profile as its own \
                 resource only under its mixed strategy, on nodes whose GPUs are partitioned into that profile; \
                 where it runs the single strategy (the GPU Operator's mig.strategy=single) or on GKE, a slice \
                 is an nvidia.com/gpu: set input.defaults.migStrategy to single"
                    .into()
            )
        );
        // Under the single strategy the whole GPU's label is on no node either.
        let elsewhere =
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.";
        let (_, message) = pod_problem(&[pod("nvidia.com/mig-1g.10gb", elsewhere)]).unwrap();
        assert!(
            message.ends_with(
                "didn't match Pod's node affinity/selector; no node offers nvidia.com/mig-1g.10gb: the device \
                 plugin offers each MIG profile as its own resource only under its mixed strategy, on nodes \
                 whose GPUs are partitioned into that profile; where it runs the single strategy (the GPU \
                 Operator's mig.strategy=single) or on GKE, a slice is an nvidia.com/gpu: set \
                 input.defaults.migStrategy to single"
            ),
            "{message}"
        );
        // Whole GPUs lacking say nothing of MIG.
        let gpus = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.";
        assert_eq!(
            pod_problem(&[pod("nvidia.com/gpu", gpus)]).map(|(_, m)| m),
            Some(format!("pod p cannot be scheduled: {gpus}"))
        );
    }

    #[test]
    fn a_gpu_pod_kept_off_tainted_nodes_says_how_the_platform_tolerates_them() {
        let pod = |limits: Value, message: &str| {
            obj(json!({"metadata": {"name": "p"},
                "spec": {"containers": [{"name": "vllm", "resources": {"limits": limits}}]},
                "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": message}]}}))
        };
        let tainted = "0/3 nodes are available: 2 node(s) had untolerated taint(s), 1 node(s) didn't match Pod's node affinity/selector.";
        let hint = "; if the GPU nodes carry a taint besides the GPU's (AKS GPU pools: sku=gpu), the platform's \
                    step input lets model servers tolerate it (input.defaults.modelServerTolerations)";
        for gpus in [
            json!({"nvidia.com/gpu": "1"}),
            json!({"nvidia.com/mig-1g.10gb": "1"}),
            json!({"amd.com/gpu": "1"}),
        ] {
            assert_eq!(
                pod_problem(&[pod(gpus, tainted)]).map(|(_, m)| m),
                Some(format!(
                    "pod p cannot be scheduled: {}{hint}",
                    tainted.trim_end_matches('.')
                ))
            );
        }
        // An agent's pod is not a model server's; and where some node lacks
        // only GPUs, the taints are not what stops it.
        let agent = pod(json!({"cpu": "1"}), tainted);
        let full = "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint(s).";
        for (p, said) in [
            (agent, tainted),
            (pod(json!({"nvidia.com/gpu": "1"}), full), full),
        ] {
            assert_eq!(
                pod_problem(&[p]).map(|(_, m)| m),
                Some(format!("pod p cannot be scheduled: {said}"))
            );
        }
    }

    #[test]
    fn a_group_member_no_node_takes_says_what_its_group_holds_meanwhile() {
        let pod = |name: &str, group: &str, node: &str, scheduler: &str| {
            let mut p = json!({"metadata": {"name": name, "labels": {
                    "leaderworkerset.sigs.k8s.io/name": "llama", "leaderworkerset.sigs.k8s.io/group-index": group}},
                "spec": {"schedulerName": scheduler}, "status": {"phase": "Pending"}});
            if node.is_empty() {
                p["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "False",
                    "reason": "Unschedulable", "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]);
            } else {
                p["spec"]["nodeName"] = json!(node);
                p["status"]["phase"] = json!("Running");
            }
            obj(p)
        };
        let waiting = "pod llama-0-1 cannot be scheduled: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu";
        let pods = [
            pod("llama-0", "0", "gpu-1", "default-scheduler"),
            pod("llama-0-1", "0", "", "default-scheduler"),
            pod("llama-1", "1", "gpu-2", "default-scheduler"),
        ];
        assert_eq!(
            pod_problem(&pods).map(|(_, m)| m),
            Some(format!(
                "{waiting}; meanwhile pod llama-0 of its group holds its GPUs on node gpu-1: a LeaderWorkerSet's \
                 group is placed pod by pod, so groups that compete for the same nodes can each hold part of them \
                 and wait for ever; a gang scheduler places a group whole or not at all \
                 (input.defaults.modelServerSchedulerName, with the LeaderWorkerSet controller's \
                 gangSchedulingManagement)"
            ))
        );
        // Nothing of its group placed (another group's pod is not), or a
        // gang scheduler already in charge: the scheduler's words alone.
        for pods in [
            vec![
                pod("llama-0-1", "0", "", "default-scheduler"),
                pod("llama-1", "1", "gpu-2", "default-scheduler"),
            ],
            vec![
                pod("llama-0", "0", "gpu-1", "volcano"),
                pod("llama-0-1", "0", "", "volcano"),
            ],
        ] {
            assert_eq!(
                pod_problem(&pods).map(|(_, m)| m),
                Some(format!("{waiting}.")),
                "{pods:?}"
            );
        }
    }

    #[test]
    fn a_pod_no_scheduler_has_looked_at_names_the_scheduler_it_waits_for() {
        let pod = |scheduler: &str, status: Value| {
            obj(
                json!({"metadata": {"name": "p"}, "spec": {"schedulerName": scheduler,
                "containers": [{"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
                "status": status}),
            )
        };
        let waiting = json!({"phase": "Pending"});
        let said = "pod p waits for scheduler volcano, which has not looked at it yet: if this lasts, check that \
                    volcano runs";
        assert_eq!(
            pod_problem(&[pod("volcano", waiting.clone())]),
            Some((
                "AwaitingScheduler".to_string(),
                format!("{said} (input.defaults.modelServerSchedulerName names it)")
            ))
        );
        // An agent's pod asks for no GPU: the platform's field for model
        // servers did not name its scheduler (a webhook may have).
        let mut agent = pod("volcano", waiting.clone());
        agent["spec"]["containers"][0]["resources"] = json!({});
        assert_eq!(
            pod_problem(&[agent]),
            Some(("AwaitingScheduler".to_string(), said.to_string()))
        );
        // The cluster's own scheduler is about to; a scheduler that looked
        // said what it found; a placed pod waits for no scheduler.
        let looked =
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]});
        let placed = obj(json!({"metadata": {"name": "p"},
            "spec": {"schedulerName": "volcano", "nodeName": "gpu-1"}, "status": {"phase": "Pending"}}));
        for quiet in [
            pod("default-scheduler", waiting.clone()),
            pod("", waiting),
            pod("volcano", looked),
            placed,
        ] {
            assert_eq!(pod_problem(std::slice::from_ref(&quiet)), None, "{quiet:?}");
        }
    }

    #[test]
    fn a_crash_loop_says_how_the_container_last_ended() {
        let crashing = |terminated: Value| {
            [obj(
                json!({"metadata": {"name": "p", "namespace": "team-a"}, "status": {"containerStatuses": [
                {"name": "vllm", "restartCount": 4,
                 "state": {"waiting": {"reason": "CrashLoopBackOff",
                                       "message": "back-off 1m20s restarting failed container=vllm pod=p"}},
                 "lastState": {"terminated": terminated}}]}}),
            )]
        };
        let cases = [
            (
                "the engine's exception under the API server's wrapper",
                json!({"exitCode": 1, "reason": "Error", "message": concat!(
                    "(EngineCore_DP0 pid=274) ERROR 11-26 10:00:01 [core.py:708]   File \"gpu_worker.py\", line 210\n",
                    "(EngineCore_DP0 pid=274) ERROR 11-26 10:00:01 [core.py:708] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
                    "(APIServer pid=1) Traceback (most recent call last):\n",
                    "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}\n\n")}),
                ": torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
            ),
            (
                "the wrapper alone, when the tail kept nothing else of note",
                json!({"exitCode": 1, "reason": "Error", "message":
                    "(APIServer pid=1)     raise RuntimeError(\n(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"}),
                ": RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
            ),
            (
                "no exception: where the log ended, not called the cause",
                json!({"exitCode": 2, "reason": "Error", "message":
                    "usage: vllm serve [-h] [model_tag]\nvllm serve: error: unrecognized arguments: --tensor-parallel 2\n"}),
                "; its log ends: vllm serve: error: unrecognized arguments: --tensor-parallel 2",
            ),
            (
                "the memory limit, no log",
                json!({"exitCode": 137, "reason": "OOMKilled"}),
                "",
            ),
        ];
        for (case, terminated, cause) in cases {
            let code = terminated["exitCode"].clone();
            let reason = terminated["reason"].as_str().unwrap().to_string();
            assert_eq!(
                pod_problem(&crashing(terminated)),
                Some((
                    "CrashLoopBackOff".into(),
                    format!(
                        "pod p, container vllm: CrashLoopBackOff: back-off 1m20s restarting failed container=vllm pod=p; it last exited with code {code} ({reason}){cause} (its log: kubectl logs -n team-a p -c vllm --previous)"
                    )
                )),
                "{case}"
            );
        }
        // Between crashes vLLM loads again for minutes: running, not ready.
        let running_again = obj(json!({"metadata": {"name": "p", "namespace": "team-a"},
            "status": {"containerStatuses": [{"name": "vllm", "restartCount": 2, "ready": false,
                "state": {"running": {"startedAt": "2026-11-26T10:03:00Z"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                    "finishedAt": "2026-11-26T10:02:50Z",
                    "message": "torch.OutOfMemoryError: CUDA out of memory."}}}]}}));
        assert_eq!(
            pod_problem(std::slice::from_ref(&running_again)),
            Some((
                "Restarted".into(),
                "pod p, container vllm has restarted 2 time(s) and is not ready; it last exited with code 1 \
                 (Error) at 2026-11-26T10:02:50Z: torch.OutOfMemoryError: CUDA out of memory. (its log: \
                 kubectl logs -n team-a p -c vllm --previous)"
                    .into()
            ))
        );
        // Ready again, or never restarted: nothing to say.
        let mut ready = running_again.clone();
        ready["status"]["containerStatuses"][0]["ready"] = json!(true);
        let mut first_start = running_again;
        first_start["status"]["containerStatuses"][0]["restartCount"] = json!(0);
        first_start["status"]["containerStatuses"][0]
            .as_object_mut()
            .unwrap()
            .remove("lastState");
        assert_eq!(pod_problem(&[ready, first_start]), None);

        let (_, no_exit_code) = pod_problem(&crashing(json!({}))).unwrap();
        assert!(no_exit_code.ends_with("pod=p"), "{no_exit_code}");
        let long = "x".repeat(LOG_LINE_MAX + 1);
        let (_, message) = pod_problem(&crashing(json!({"exitCode": 1, "message": long}))).unwrap();
        assert!(
            message.contains(&format!(
                "code 1; its log ends: {}... (its log",
                "x".repeat(LOG_LINE_MAX)
            )),
            "{message}"
        );
    }
}
