//! Whether an observed composed resource serves what was last asked of it,
//! and when it does not, what its controller says (why its pods do not run
//! is `pod_problem`'s). Crossplane derives no readiness for composed
//! resources: a function says READY_TRUE, and the XR is Ready only when all
//! of them are. A workload is ready only when its controller has seen the
//! current spec and every desired replica runs it and is available; a
//! rollout in progress, stuck or failed is not, whatever still serves from
//! the previous spec, nor one whose replicas run the current spec but are
//! not all available (starting, or started again after a drain).

use serde_json::{Map, Value};

use crate::compose::observed_condition::condition;
use crate::protocol::server::Ready;
use crate::request::{int_at, manifest_of, str_at};

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
