//! Whether an observed composed resource serves what was last asked of it,
//! and when it does not, why. Crossplane derives no readiness for composed
//! resources: a function says READY_TRUE, and the XR is Ready only when all
//! of them are. A workload is ready only when its controller has seen the
//! current spec and every desired replica runs it and is available; a
//! rollout in progress, stuck or failed is not, whatever still serves from
//! the previous spec, nor one whose replicas run the current spec but are
//! not all available (starting, or started again after a drain).

use serde_json::{Map, Value};

use crate::protocol::server::Ready;
use crate::request::{at, int_at, manifest_of, str_at};
use crate::sizing::{
    AMD_DEVICE_ID_LABEL, AMD_PARTITION_LABEL, EKS_AUTO_MODE_GPU_LABELS, GKE_ACCELERATOR_LABEL,
    GKE_PARTITION_LABEL, GKE_SHARING_LABEL, GPU_PRODUCT_LABEL, KARPENTER_GPU_LABELS,
    MIXED_MIG_RESOURCE_PREFIX, WHOLE_AMD_GPU,
};

/// How an observed object stands against its current spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Rollout {
    /// Not observed yet.
    Absent,
    /// Every desired replica runs the current spec and is available (for
    /// objects without replicas: it exists).
    Complete,
    /// On its way: `available` replicas serve (from any spec), `updated`
    /// run the current one, of `desired`.
    Progressing(Replicas),
    /// Every replica runs the current spec, which its controller has seen,
    /// and some are not available yet: a first start, more replicas asked
    /// for, or pods started again after an eviction (a node drain), a
    /// deletion or a crash. The `available` ones serve the current spec;
    /// nothing rolls out.
    ReplicasStarting(Replicas),
    /// Every replica runs the current spec and is available, but fewer
    /// than the floor (`desired`) an autoscaler is to keep.
    BelowFloor(Replicas),
    /// Every replica runs the current spec and at least the autoscaler's
    /// floor is available; the others it asked for (of `desired`) are
    /// starting. It serves what was asked: the floor, and more to come.
    AboveFloor(Replicas),
    /// Its controller (an operator the platform installs) has written no
    /// status yet: nothing is known of its replicas.
    Unreported {
        kind: &'static str,
        controller: &'static str,
    },
    /// It runs the current spec with no replica, as asked (`replicas: 0`,
    /// or an autoscaler at zero): nothing serves.
    ScaledToZero,
    /// Its controller reports that it cannot get there by itself.
    Failed {
        reason: String,
        message: String,
        replicas: Replicas,
    },
}

/// Replica counts of a workload (groups for a LeaderWorkerSet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Replicas {
    pub(crate) desired: i64,
    pub(crate) updated: i64,
    pub(crate) available: i64,
}

impl Rollout {
    /// Whether it serves what was asked: every replica asked for, or an
    /// autoscaler's floor while it scales up.
    pub(crate) fn serves(&self) -> bool {
        matches!(self, Rollout::Complete | Rollout::AboveFloor(_))
    }

    /// READY_TRUE only when it serves what was asked.
    pub(crate) fn ready(&self) -> Ready {
        if self.serves() {
            Ready::True
        } else {
            Ready::False
        }
    }

    /// How a workload that an autoscaler keeps at `floor` replicas or more
    /// stands while it runs `running`: complete only once the floor is
    /// reached (a new workload starts at one replica, before the autoscaler
    /// brings it to its minimum), whatever runs already; and while the
    /// autoscaler adds replicas beyond the floor, serving, as long as every
    /// replica runs the current spec.
    pub(crate) fn with_floor(self, running: i64, floor: i64) -> Rollout {
        match self {
            Rollout::Complete | Rollout::ScaledToZero if running < floor => {
                Rollout::BelowFloor(Replicas {
                    desired: floor,
                    updated: running,
                    available: running,
                })
            }
            Rollout::ReplicasStarting(r) if r.available >= floor.max(1) => Rollout::AboveFloor(r),
            other => other,
        }
    }

    /// Its replica counts; `None` when there is nothing to count (not
    /// observed yet, or a complete object of another kind).
    pub(crate) fn replicas(&self) -> Option<Replicas> {
        match self {
            Rollout::Absent | Rollout::Complete | Rollout::Unreported { .. } => None,
            Rollout::ScaledToZero => Some(Replicas::default()),
            Rollout::Progressing(r)
            | Rollout::ReplicasStarting(r)
            | Rollout::BelowFloor(r)
            | Rollout::AboveFloor(r)
            | Rollout::Failed { replicas: r, .. } => Some(*r),
        }
    }
}

/// The rollout of `observed` (`None`: not observed yet).
pub(crate) fn rollout(observed: Option<&Map<String, Value>>) -> Rollout {
    let Some(o) = observed else {
        return Rollout::Absent;
    };
    let kind = str_at(o, &["kind"]);
    let rollout = match kind {
        "Deployment" => workload(o, Counts::deployment(o)),
        // Groups, counted like a Deployment's pods.
        "LeaderWorkerSet" => unreported(o, "LeaderWorkerSet", "the LeaderWorkerSet controller")
            .unwrap_or_else(|| workload(o, Counts::leader_worker_set(o))),
        "VLLMRuntime" => unreported(o, "VLLMRuntime", "the vLLM production-stack operator")
            .unwrap_or_else(|| vllm_runtime(o)),
        "Object" => provider_object(o),
        "HorizontalPodAutoscaler" => {
            if condition(o, "AbleToScale").is_some_and(|c| c.status == "True") {
                Rollout::Complete
            } else {
                Rollout::Progressing(Replicas::default())
            }
        }
        // KEDA reports whether it can scale the target; before it says, the
        // object exists and that is all there is.
        "ScaledObject" => match condition(o, "Ready") {
            Some(c) if c.status == "False" => Rollout::Progressing(Replicas::default()),
            _ => Rollout::Complete,
        },
        // ConfigMaps, Services, Ingresses, PDBs, claims: existing is all there is.
        _ => Rollout::Complete,
    };
    // A workload complete with no replica asked for: nothing serves.
    let replicated = matches!(kind, "Deployment" | "LeaderWorkerSet" | "VLLMRuntime");
    if replicated && rollout == Rollout::Complete && replica_target(o) == 0 {
        Rollout::ScaledToZero
    } else {
        rollout
    }
}

/// How `observed`, a workload applied from an older spec than the one now
/// composed, stands against that new spec: none of its replicas runs it,
/// and those available serve the older one.
pub(crate) fn not_yet_applied(observed: &Map<String, Value>) -> Rollout {
    let counts = match rollout(Some(observed)) {
        Rollout::Progressing(r)
        | Rollout::ReplicasStarting(r)
        | Rollout::Failed { replicas: r, .. } => r,
        unreported @ Rollout::Unreported { .. } => return unreported,
        // Complete: every desired replica of the older spec serves.
        _ => {
            let desired = replica_target(observed);
            Replicas {
                desired,
                updated: desired,
                available: desired,
            }
        }
    };
    Rollout::Progressing(Replicas {
        updated: 0,
        ..counts
    })
}

/// How many replicas an observed workload asks for (1 when it does not say).
fn replica_target(o: &Map<String, Value>) -> i64 {
    match str_at(o, &["kind"]) {
        "VLLMRuntime" => int_at(o, &["spec", "deploymentConfig", "replicas"]),
        "Object" => manifest_of(o).map(replica_target),
        _ => int_at(o, &["spec", "replicas"]),
    }
    .unwrap_or(1)
}

/// What a workload's status counts.
struct Counts {
    replicas: Replicas,
    /// Pods (groups) of every spec that exist.
    total: i64,
    /// Whether the controller has seen the current spec.
    current: bool,
}

impl Counts {
    /// The controller saw the current spec, every desired replica is
    /// updated and no old one is left: only availability may be missing.
    fn runs_current_spec(&self) -> bool {
        self.current
            && self.replicas.updated >= self.replicas.desired
            && self.total <= self.replicas.updated
    }

    fn deployment(o: &Map<String, Value>) -> Self {
        Self {
            replicas: Replicas {
                desired: int_at(o, &["spec", "replicas"]).unwrap_or(1),
                updated: int_at(o, &["status", "updatedReplicas"]).unwrap_or(0),
                available: int_at(o, &["status", "availableReplicas"]).unwrap_or(0),
            },
            total: int_at(o, &["status", "replicas"]).unwrap_or(0),
            current: observed_generation_is_current(o) || behind_only_for_the_served_record(o),
        }
    }

    fn leader_worker_set(o: &Map<String, Value>) -> Self {
        Self {
            replicas: Replicas {
                desired: int_at(o, &["spec", "replicas"]).unwrap_or(1),
                updated: int_at(o, &["status", "updatedReplicas"]).unwrap_or(0),
                available: int_at(o, &["status", "readyReplicas"]).unwrap_or(0),
            },
            total: int_at(o, &["status", "replicas"]).unwrap_or(0),
            current: observed_generation_is_current(o),
        }
    }
}

/// A Deployment or LeaderWorkerSet: complete when, as `kubectl rollout
/// status` reads it, the controller saw the current generation, every
/// desired replica is updated, no old one is left and all are available.
fn workload(o: &Map<String, Value>, c: Counts) -> Rollout {
    let r = c.replicas;
    if let Some(failure) = condition(o, "ReplicaFailure").filter(|c| c.status == "True") {
        return Rollout::Failed {
            reason: "ReplicaFailure".into(),
            message: failure.message_or("the controller cannot create the pods"),
            replicas: r,
        };
    }
    if let Some(stuck) = condition(o, "Progressing")
        .filter(|c| c.status == "False" && c.reason == "ProgressDeadlineExceeded")
    {
        return Rollout::Failed {
            reason: "ProgressDeadlineExceeded".into(),
            message: stuck.message_or("the rollout exceeded its progress deadline"),
            replicas: r,
        };
    }
    // Only availability missing is a start, not a rollout.
    match c.runs_current_spec() {
        true if r.available >= r.desired => Rollout::Complete,
        true => Rollout::ReplicasStarting(r),
        false => Rollout::Progressing(r),
    }
}

/// The production-stack operator reports its Deployment's replica counts
/// and a `modelStatus`, no generation and no conditions: complete, or only
/// starting replicas, as far as those say (its copy of the Deployment's
/// counts trusted as the Deployment's are).
fn vllm_runtime(o: &Map<String, Value>) -> Rollout {
    let desired = int_at(o, &["spec", "deploymentConfig", "replicas"]).unwrap_or(1);
    let available = int_at(o, &["status", "availableReplicas"]).unwrap_or(0);
    let updated = int_at(o, &["status", "updatedReplicas"]);
    let r = Replicas {
        desired,
        // Older operators do not report it: what is available then.
        updated: updated.unwrap_or(available),
        available,
    };
    let unavailable = int_at(o, &["status", "unavailableReplicas"]).unwrap_or(0);
    let total = int_at(o, &["status", "replicas"]).unwrap_or(available);
    let model_status = str_at(o, &["status", "modelStatus"]);
    let complete = available >= desired
        && unavailable == 0
        && r.updated >= desired
        && total <= desired
        && matches!(model_status, "" | "Ready");
    // Every pod updated and no old one left: only availability missing.
    let runs_current_spec = updated.is_some() && r.updated >= desired && total <= r.updated;
    match (complete, runs_current_spec) {
        (true, _) => Rollout::Complete,
        (false, true) => Rollout::ReplicasStarting(r),
        (false, false) => Rollout::Progressing(r),
    }
}

/// A provider-kubernetes Object: Ready when its readiness query holds on
/// the object it applied (see `placement`); that object, observed in
/// `status.atProvider.manifest`, says what is rolling out or failing.
fn provider_object(o: &Map<String, Value>) -> Rollout {
    if let Some(synced) = condition(o, "Synced").filter(|c| c.status == "False") {
        return Rollout::Failed {
            reason: "ApplyFailed".into(),
            message: synced.message_or("provider-kubernetes cannot apply the object"),
            replicas: Replicas::default(),
        };
    }
    let ready = condition(o, "Ready").filter(|c| c.status == "True");
    let applied_current = ready.as_ref().is_some_and(|c| c.is_current(o));
    let inner = manifest_of(o).map(|m| rollout(Some(m)));
    match inner {
        Some(Rollout::Complete) | None if applied_current => Rollout::Complete,
        Some(Rollout::Complete) | None => Rollout::Progressing(Replicas::default()),
        Some(other) => other,
    }
}

/// Whether an observed autoscaler can scale its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scaling {
    /// It has not said yet (or its controller is not running).
    NotReported,
    /// It reads its metrics and sets its target's replicas.
    Active,
    /// It cannot: its own reason and message.
    Inactive { reason: String, message: String },
}

/// How the observed autoscaler `o` (an HPA or a KEDA ScaledObject, or a
/// provider-kubernetes Object wrapping one) stands. An HPA says both halves:
/// `AbleToScale` (it can read and set the target's scale) and
/// `ScalingActive` (it can compute a count from its metrics); KEDA says it
/// in `Ready`.
pub(crate) fn scaling(o: &Map<String, Value>) -> Scaling {
    let Some(o) = manifest_of(o) else {
        return Scaling::NotReported;
    };
    let checks: &[&str] = match str_at(o, &["kind"]) {
        "HorizontalPodAutoscaler" => &["AbleToScale", "ScalingActive"],
        "ScaledObject" => &["Ready"],
        _ => &[],
    };
    let mut reported = false;
    for type_ in checks {
        match condition(o, type_) {
            Some(c) if c.status == "False" => {
                // A condition's reason is required: an autoscaler may leave it out.
                let reason = match c.reason.as_str() {
                    "" => "CannotScale".to_string(),
                    _ => c.reason.clone(),
                };
                return Scaling::Inactive {
                    message: c.message_or("the autoscaler cannot scale its target"),
                    reason,
                };
            }
            Some(c) if c.status == "True" => reported = true,
            _ => return Scaling::NotReported,
        }
    }
    if reported {
        Scaling::Active
    } else {
        Scaling::NotReported
    }
}

/// A status condition, as read.
#[derive(Debug)]
pub(crate) struct Condition {
    pub(crate) status: String,
    pub(crate) reason: String,
    pub(crate) message: String,
    observed_generation: Option<i64>,
}

impl Condition {
    /// Whether it speaks of `o`'s current spec (a condition without
    /// observedGeneration, from older controllers, is believed).
    pub(crate) fn is_current(&self, o: &Map<String, Value>) -> bool {
        self.observed_generation
            .is_none_or(|g| g >= int_at(o, &["metadata", "generation"]).unwrap_or(0))
    }

    fn message_or(&self, fallback: &str) -> String {
        if self.message.is_empty() {
            fallback.to_string()
        } else {
            self.message.clone()
        }
    }
}

/// The condition of `type_` in `o.status.conditions`.
pub(crate) fn condition(o: &Map<String, Value>, type_: &str) -> Option<Condition> {
    o.get("status")?
        .get("conditions")?
        .as_array()?
        .iter()
        .filter_map(Value::as_object)
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
        .map(|c| Condition {
            status: str_at(c, &["status"]).to_string(),
            reason: str_at(c, &["reason"]).to_string(),
            message: str_at(c, &["message"]).to_string(),
            observed_generation: int_at(c, &["observedGeneration"]),
        })
}

/// [`Rollout::Unreported`] when `o`, of `kind`, has no status: its
/// controller is an operator the platform installs, and until it writes
/// one it may not be running at all.
fn unreported(
    o: &Map<String, Value>,
    kind: &'static str,
    controller: &'static str,
) -> Option<Rollout> {
    let reported = o
        .get("status")
        .and_then(Value::as_object)
        .is_some_and(|status| !status.is_empty());
    (!reported).then_some(Rollout::Unreported { kind, controller })
}

/// Whether `status.observedGeneration` has caught up with
/// `metadata.generation` (a controller that reports neither is believed).
fn observed_generation_is_current(o: &Map<String, Value>) -> bool {
    generations_unseen(o) == Some(0)
}

/// How many generations of `o` its controller has yet to see: 0 when `o`
/// carries none (the controller is believed), `None` when it carries one
/// and the controller has reported none.
fn generations_unseen(o: &Map<String, Value>) -> Option<i64> {
    match (
        int_at(o, &["metadata", "generation"]),
        int_at(o, &["status", "observedGeneration"]),
    ) {
        (Some(generation), Some(observed)) => Some((generation - observed).max(0)),
        (Some(_), None) => None,
        (None, _) => Some(0),
    }
}

/// Whether a Deployment's controller is one generation behind only because
/// the spec it has seen was recorded as served. Kubernetes gives a
/// Deployment a new generation for an annotation change too (its
/// annotations are copied to its ReplicaSets: `PrepareForUpdate` in
/// pkg/registry/apps/deployment/strategy.go), and that record is the one
/// the function adds to a spec it leaves unchanged. Taken for a rollout,
/// it would turn READY False for as long as the controller takes to look.
fn behind_only_for_the_served_record(o: &Map<String, Value>) -> bool {
    generations_unseen(o) == Some(1) && crate::compose::spec_digest::served(o)
}

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
        asks(GPU_PRODUCT_LABEL, "DoesNotExist")
            .then(|| format!("instance-gpu-name only on nodes without {GPU_PRODUCT_LABEL}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let labeller = if labels.contains(AMD_DEVICE_ID_LABEL) {
        "AMD's node labeller does, with -device-id"
    } else if labels.contains(KARPENTER_GPU_LABELS.name) {
        "GPU feature discovery does, and EKS Auto Mode and Karpenter on the nodes they provision"
    } else {
        "GPU feature discovery does"
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

    fn progressing(desired: i64, updated: i64, available: i64) -> Rollout {
        Rollout::Progressing(Replicas {
            desired,
            updated,
            available,
        })
    }

    fn starting(desired: i64, available: i64) -> Rollout {
        Rollout::ReplicasStarting(Replicas {
            desired,
            updated: desired,
            available,
        })
    }

    #[test]
    fn each_kind_is_complete_only_when_the_current_spec_serves_on_every_replica() {
        let deployment = |generation: i64, status: Value| {
            json!({"kind": "Deployment", "metadata": {"generation": generation},
                   "spec": {"replicas": 2}, "status": status})
        };
        let cases = [
            ("not observed yet", None, Rollout::Absent),
            (
                "Deployment, all updated and available",
                Some(deployment(
                    3,
                    json!({"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2,
                       "conditions": [{"type": "Available", "status": "True"}]}),
                )),
                Rollout::Complete,
            ),
            (
                "Deployment, a new spec not seen by the controller yet: the old one still says Available",
                Some(deployment(
                    4,
                    json!({"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2,
                       "conditions": [{"type": "Available", "status": "True"}]}),
                )),
                progressing(2, 2, 2),
            ),
            (
                "Deployment, the new pod Pending while the old ones serve",
                Some(deployment(
                    4,
                    json!({"observedGeneration": 4, "replicas": 3, "updatedReplicas": 1, "availableReplicas": 2,
                       "conditions": [{"type": "Available", "status": "True"}]}),
                )),
                progressing(2, 1, 2),
            ),
            (
                "Deployment, every pod updated but an old one still terminating",
                Some(deployment(
                    4,
                    json!({"observedGeneration": 4, "replicas": 3, "updatedReplicas": 2, "availableReplicas": 2}),
                )),
                progressing(2, 2, 2),
            ),
            (
                "Deployment, every pod updated, one evicted by a drain and starting again",
                Some(deployment(
                    4,
                    json!({"observedGeneration": 4, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 1,
                       "unavailableReplicas": 1}),
                )),
                starting(2, 1),
            ),
            (
                "Deployment, past its progress deadline",
                Some(deployment(
                    4,
                    json!({"observedGeneration": 4, "replicas": 3, "updatedReplicas": 1, "availableReplicas": 2,
                       "conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                                       "message": "ReplicaSet \"x-1\" has timed out progressing."}]}),
                )),
                Rollout::Failed {
                    reason: "ProgressDeadlineExceeded".into(),
                    message: "ReplicaSet \"x-1\" has timed out progressing.".into(),
                    replicas: Replicas {
                        desired: 2,
                        updated: 1,
                        available: 2,
                    },
                },
            ),
            (
                "Deployment, pods refused by a quota",
                Some(deployment(
                    1,
                    json!({"observedGeneration": 1,
                       "conditions": [{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                                       "message": "pods \"x\" is forbidden: exceeded quota: gpus"}]}),
                )),
                Rollout::Failed {
                    reason: "ReplicaFailure".into(),
                    message: "pods \"x\" is forbidden: exceeded quota: gpus".into(),
                    replicas: Replicas {
                        desired: 2,
                        updated: 0,
                        available: 0,
                    },
                },
            ),
            (
                "LeaderWorkerSet, every group updated and ready",
                Some(
                    json!({"kind": "LeaderWorkerSet", "metadata": {"generation": 2}, "spec": {"replicas": 1},
                    "status": {"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1}}),
                ),
                Rollout::Complete,
            ),
            (
                "LeaderWorkerSet, a group not ready",
                Some(
                    json!({"kind": "LeaderWorkerSet", "metadata": {"generation": 1}, "spec": {"replicas": 1},
                    "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 0}}),
                ),
                starting(1, 0),
            ),
            (
                "VLLMRuntime, one of one available",
                Some(
                    json!({"kind": "VLLMRuntime", "spec": {"deploymentConfig": {"replicas": 1}},
                    "status": {"availableReplicas": 1, "updatedReplicas": 1, "replicas": 1, "unavailableReplicas": 0,
                               "modelStatus": "Ready"}}),
                ),
                Rollout::Complete,
            ),
            (
                "VLLMRuntime, one of two available",
                Some(
                    json!({"kind": "VLLMRuntime", "spec": {"deploymentConfig": {"replicas": 2}},
                    "status": {"availableReplicas": 1, "updatedReplicas": 2, "replicas": 2, "unavailableReplicas": 1,
                               "modelStatus": "Updating"}}),
                ),
                starting(2, 1),
            ),
            (
                "VLLMRuntime, a new pod of a rollout starting while the old ones serve",
                Some(
                    json!({"kind": "VLLMRuntime", "spec": {"deploymentConfig": {"replicas": 2}},
                    "status": {"availableReplicas": 2, "updatedReplicas": 1, "replicas": 3, "unavailableReplicas": 1,
                               "modelStatus": "Updating"}}),
                ),
                progressing(2, 1, 2),
            ),
            (
                "VLLMRuntime, every pod updated but an old one still terminating",
                Some(
                    json!({"kind": "VLLMRuntime", "spec": {"deploymentConfig": {"replicas": 2}},
                    "status": {"availableReplicas": 1, "updatedReplicas": 2, "replicas": 3, "unavailableReplicas": 1,
                               "modelStatus": "Updating"}}),
                ),
                progressing(2, 2, 1),
            ),
            (
                "VLLMRuntime of an operator that reports no updatedReplicas, one of two available: a rollout or a start",
                Some(
                    json!({"kind": "VLLMRuntime", "spec": {"deploymentConfig": {"replicas": 2}},
                    "status": {"availableReplicas": 1, "replicas": 2, "unavailableReplicas": 1}}),
                ),
                progressing(2, 1, 1),
            ),
            (
                "VLLMRuntime, no status yet: the operator may not run",
                Some(json!({"kind": "VLLMRuntime", "spec": {"deploymentConfig": {"replicas": 1}}})),
                Rollout::Unreported {
                    kind: "VLLMRuntime",
                    controller: "the vLLM production-stack operator",
                },
            ),
            (
                "VLLMRuntime, an empty status",
                Some(
                    json!({"kind": "VLLMRuntime", "spec": {"deploymentConfig": {"replicas": 1}}, "status": {}}),
                ),
                Rollout::Unreported {
                    kind: "VLLMRuntime",
                    controller: "the vLLM production-stack operator",
                },
            ),
            (
                "LeaderWorkerSet, no status yet: the controller may not run",
                Some(
                    json!({"kind": "LeaderWorkerSet", "metadata": {"generation": 1}, "spec": {"replicas": 1}}),
                ),
                Rollout::Unreported {
                    kind: "LeaderWorkerSet",
                    controller: "the LeaderWorkerSet controller",
                },
            ),
            (
                "Object, Ready for the current generation",
                Some(
                    json!({"kind": "Object", "metadata": {"generation": 2}, "status": {"conditions": [
                    {"type": "Synced", "status": "True"},
                    {"type": "Ready", "status": "True", "observedGeneration": 2}]}}),
                ),
                Rollout::Complete,
            ),
            (
                "Object, Ready for an earlier generation",
                Some(
                    json!({"kind": "Object", "metadata": {"generation": 3}, "status": {"conditions": [
                    {"type": "Ready", "status": "True", "observedGeneration": 2}]}}),
                ),
                progressing(0, 0, 0),
            ),
            (
                "Object, the Deployment it applied is rolling out",
                Some(
                    json!({"kind": "Object", "metadata": {"generation": 1}, "status": {
                    "conditions": [{"type": "Ready", "status": "False"}],
                    "atProvider": {"manifest": {"kind": "Deployment", "metadata": {"generation": 2},
                        "spec": {"replicas": 1},
                        "status": {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1, "availableReplicas": 1}}}}}),
                ),
                progressing(1, 1, 1),
            ),
            (
                "Object, cannot apply",
                Some(json!({"kind": "Object", "status": {"conditions": [
                    {"type": "Synced", "status": "False", "message": "cannot create object: forbidden"}]}})),
                Rollout::Failed {
                    reason: "ApplyFailed".into(),
                    message: "cannot create object: forbidden".into(),
                    replicas: Replicas::default(),
                },
            ),
            (
                "Ingress exists",
                Some(json!({"kind": "Ingress"})),
                Rollout::Complete,
            ),
            (
                "Deployment asked for no replica, as its controller saw: nothing serves",
                Some(
                    json!({"kind": "Deployment", "metadata": {"generation": 2}, "spec": {"replicas": 0},
                            "status": {"observedGeneration": 2}}),
                ),
                Rollout::ScaledToZero,
            ),
            (
                "Deployment scaled to zero, a pod still terminating",
                Some(
                    json!({"kind": "Deployment", "metadata": {"generation": 2}, "spec": {"replicas": 0},
                            "status": {"observedGeneration": 2, "replicas": 1, "availableReplicas": 0}}),
                ),
                progressing(0, 0, 0),
            ),
            (
                "LeaderWorkerSet asked for no group",
                Some(
                    json!({"kind": "LeaderWorkerSet", "metadata": {"generation": 1}, "spec": {"replicas": 0},
                    "status": {"observedGeneration": 1, "conditions": [{"type": "Available", "status": "True"}]}}),
                ),
                Rollout::ScaledToZero,
            ),
            (
                "VLLMRuntime asked for no replica",
                Some(
                    json!({"kind": "VLLMRuntime", "spec": {"deploymentConfig": {"replicas": 0}},
                    "status": {"availableReplicas": 0, "updatedReplicas": 0, "replicas": 0, "unavailableReplicas": 0}}),
                ),
                Rollout::ScaledToZero,
            ),
            (
                "Object, the Deployment it applied asks for no replica",
                Some(
                    json!({"kind": "Object", "metadata": {"generation": 1}, "status": {
                    "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}],
                    "atProvider": {"manifest": {"kind": "Deployment", "metadata": {"generation": 2},
                        "spec": {"replicas": 0}, "status": {"observedGeneration": 2}}}}}),
                ),
                Rollout::ScaledToZero,
            ),
        ];
        for (reason, observed, want) in cases {
            let observed = observed.map(obj);
            let got = rollout(observed.as_ref());
            assert_eq!(got, want, "{reason}");
            assert_eq!(
                got.ready(),
                if want == Rollout::Complete {
                    Ready::True
                } else {
                    Ready::False
                },
                "{reason}"
            );
        }
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

    #[test]
    fn an_autoscaler_scales_once_every_condition_it_reports_is_true() {
        let hpa = |conditions: Value| {
            obj(json!({"kind": "HorizontalPodAutoscaler", "status": {"conditions": conditions}}))
        };
        let inactive = |reason: &str, message: &str| Scaling::Inactive {
            reason: reason.into(),
            message: message.into(),
        };
        let rows = [
            (hpa(json!([])), Scaling::NotReported),
            (
                hpa(json!([{"type": "AbleToScale", "status": "True"}])),
                Scaling::NotReported,
            ),
            (
                hpa(json!([{"type": "AbleToScale", "status": "True"},
                           {"type": "ScalingActive", "status": "True"}])),
                Scaling::Active,
            ),
            (
                hpa(
                    json!([{"type": "AbleToScale", "status": "False", "reason": "FailedGetScale",
                            "message": "no scale subresource"},
                           {"type": "ScalingActive", "status": "False", "reason": "FailedGetPodsMetric"}]),
                ),
                inactive("FailedGetScale", "no scale subresource"),
            ),
            // A condition's reason is required on the XR.
            (
                obj(json!({"kind": "ScaledObject", "status": {"conditions": [
                    {"type": "Ready", "status": "False"}]}})),
                inactive("CannotScale", "the autoscaler cannot scale its target"),
            ),
            (obj(json!({"kind": "Deployment"})), Scaling::NotReported),
        ];
        for (observed, want) in rows {
            assert_eq!(scaling(&observed), want, "{observed:?}");
        }
    }
}
