//! Whether a model server serves its current layout, and the `Serving`
//! condition, status and warning that say so.
//!
//! The workload's own status tells a rollout in progress, stuck past its
//! deadline or refused by admission (a quota). What the workload's status
//! does not tell, a pod the scheduler cannot place ("Insufficient
//! nvidia.com/gpu", no node with the GPU type), the pods do (and when
//! none exists, the condition names the events that say why): while the
//! server (or an AgentPool's agents) does not serve, the composer asks
//! Crossplane for them as required resources (natively composed servers
//! only: a remote cluster's pods are out of reach; and not when the step
//! input turns `diagnosePods` off, since Crossplane then caches every Pod
//! of the cluster). Crossplane watches neither those pods nor Models, so
//! the answer then carries a short TTL, and the XR is looked at again soon.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::compose::annotations::annotation;
use crate::compose::composition::{ComposeRequest, Composition};
use crate::compose::pod_problem::pod_problem;
use crate::compose::resources::placement::Placement;
use crate::compose::rollout::{Replicas, Rollout, rollout};
use crate::compose::spec_digest;
use crate::compose::steps::conditions;
use crate::protocol::server::{Condition, ResourceSelector, resource_selector::Match};
use crate::request::{manifest_of, required_objects, str_at};
use crate::response as outcome;
use crate::sizing::count_of;

/// Key of the requirement for the model server's pods.
pub(crate) const PODS_REQUIREMENT_KEY: &str = "model_server_pods";

/// Seconds until Crossplane calls again while the server does not serve
/// its current layout: neither its pods nor a cluster's new nodes are
/// watched, and a new problem or its end should show within that.
pub(crate) const NOT_SERVING_TTL_SECONDS: u32 = 15;

/// The annotation of a model server's workload that names the layout it
/// last served on every replica. It lives on the workload rather than in the
/// XR's status: Crossplane may compose from a stale copy of the XR and
/// writes that copy's conditions back, which would lose a memory kept there;
/// and a workload that is replaced starts without it.
pub(crate) const SERVED_LAYOUT_ANNOTATION: &str = "infer.dev/served-layout";

/// How the model server stands.
#[derive(Debug)]
pub(crate) struct ServingState {
    pub(crate) rollout: Rollout,
    /// What keeps it from serving, when known: (reason, message).
    pub(crate) problem: Option<(String, String)>,
    /// The layout the workload last served on every replica, if it has.
    pub(crate) last_served: Option<String>,
    /// The namespace, when its pods were asked for and none exists: its
    /// controller has created none yet, or admission refuses them, which
    /// only the controller's events say.
    pub(crate) no_pods_in: Option<String>,
}

impl ServingState {
    pub(crate) fn serving(&self) -> bool {
        self.rollout.serves()
    }
}

/// A model server's workload: composed under `key` with `layout`, as
/// observed, and its rollout.
pub(crate) struct Workload<'a> {
    pub(crate) key: &'a str,
    pub(crate) observed: Option<&'a Map<String, Value>>,
    pub(crate) layout: &'a str,
    pub(crate) rollout: Rollout,
}

/// Reads how the model server stands: its workload's rollout, the layout
/// it last served, and, while it does not serve and runs in this cluster,
/// the pods `pod_labels` select (adding the requirement for them to `out`).
/// The desired workload carries the layout that served last.
pub(crate) fn observe(
    req: &ComposeRequest,
    workload: Workload,
    placement: &Placement,
    pod_labels: &BTreeMap<String, String>,
    out: &mut Composition,
) -> ServingState {
    let Workload {
        key,
        observed,
        layout,
        rollout,
    } = workload;
    let recorded = |name| observed.and_then(|o| annotation(o, name)).map(String::from);
    let last_served = recorded(SERVED_LAYOUT_ANNOTATION);
    let served = match &rollout {
        Rollout::Complete | Rollout::AboveFloor(_) => {
            let composed = out.resources.get(key);
            let digest = composed.and_then(|c| spec_digest::of(c.manifest.object()));
            Some((layout.to_string(), digest.map(String::from)))
        }
        // Kept as observed: left out, server-side apply would remove it.
        _ => last_served
            .clone()
            .map(|layout| (layout, recorded(spec_digest::SERVED_ANNOTATION))),
    };
    if let Some((layout, digest)) = served {
        out.annotate(key, SERVED_LAYOUT_ANNOTATION, &layout);
        if let Some(digest) = digest {
            out.annotate(key, spec_digest::SERVED_ANNOTATION, &digest);
        }
    }
    let problem = diagnose(
        req,
        &rollout,
        PODS_REQUIREMENT_KEY,
        placement,
        pod_labels,
        out,
    );
    let no_pods_in = match placement {
        // Only of a workload that exists: before, no pod is no news.
        Placement::Native { namespace }
            if problem.is_none()
                && observed.is_some()
                && out.requirements.contains_key(PODS_REQUIREMENT_KEY)
                && req
                    .required
                    .get(PODS_REQUIREMENT_KEY)
                    .is_some_and(|pods| pods.items.is_empty()) =>
        {
            Some(namespace.clone())
        }
        _ => None,
    };
    ServingState {
        rollout,
        problem,
        last_served,
        no_pods_in,
    }
}

/// What keeps a workload that is not complete from completing: a failure
/// its own status reports and, when it runs in this cluster, what its pods
/// (those `pod_labels` select) say, asked of Crossplane under `requirement`.
/// Neither is watched, so the answer carries a short TTL while incomplete.
pub(crate) fn diagnose(
    req: &ComposeRequest,
    rollout: &Rollout,
    requirement: &str,
    placement: &Placement,
    pod_labels: &BTreeMap<String, String>,
    out: &mut Composition,
) -> Option<(String, String)> {
    let stuck = match rollout {
        // No pod to ask about: it serves, or runs none as asked.
        Rollout::Complete | Rollout::ScaledToZero => return None,
        Rollout::Failed {
            reason, message, ..
        } => Some((reason.clone(), message.clone())),
        _ => None,
    };
    out.ttl_seconds = Some(NOT_SERVING_TTL_SECONDS);
    let (Placement::Native { namespace }, true) = (placement, req.settings.diagnose_pods) else {
        return stuck;
    };
    out.requirements.insert(
        requirement.into(),
        ResourceSelector {
            api_version: "v1".into(),
            kind: "Pod".into(),
            namespace: Some(namespace.clone()),
            r#match: Some(Match::MatchLabels(crate::protocol::server::MatchLabels {
                labels: pod_labels.clone().into_iter().collect(),
            })),
        },
    );
    // The workload says that it is stuck, its pods say why.
    match (
        stuck,
        pod_problem(&required_objects(req.required, requirement)),
    ) {
        (Some((reason, stuck)), Some((_, why))) => {
            Some((reason, format!("{}: {why}", stuck.trim_end_matches('.'))))
        }
        (None, pods) => pods,
        (stuck, None) => stuck,
    }
}

/// What is said about a server that serves at `url` with `layout`.
pub(crate) struct Report<'a> {
    /// "Qwen/Qwen2.5-7B-Instruct" or "agents ... with ...": who serves.
    pub(crate) what: &'a str,
    pub(crate) url: &'a str,
    pub(crate) layout: &'a str,
}

/// The `Serving` condition for `state`, the layout that serves now (if
/// anything does), and a WARNING result when a problem first appears.
pub(crate) fn report(
    req: &ComposeRequest,
    state: &ServingState,
    r: &Report,
    out: &mut Composition,
) -> Option<String> {
    let layout = serving_layout(state, r);
    let condition = condition(state, r, layout.as_deref());
    // The problem's own reason (Unschedulable, ...): while it serves, what
    // keeps more replicas from starting is not `Serving`'s reason.
    let problem = state.problem.as_ref().map(|(reason, _)| reason.as_str());
    push_condition(req, problem, condition, out);
    layout
}

/// The layout that serves now: the current one once the rollout is
/// complete or every replica runs it, the last one that served (or the
/// current one, if none did before) while some replicas are available,
/// none while nothing serves.
pub(crate) fn serving_layout(state: &ServingState, r: &Report) -> Option<String> {
    let available = state.rollout.replicas().map_or(0, |c| c.available);
    let on_current_spec = matches!(state.rollout, Rollout::ReplicasStarting(_));
    if state.serving() || (on_current_spec && available > 0) {
        Some(r.layout.to_string())
    } else if available > 0 {
        Some(state.last_served.as_deref().unwrap_or(r.layout).to_string())
    } else {
        None
    }
}

/// The `Serving` condition for `state`.
pub(crate) fn condition(
    state: &ServingState,
    r: &Report,
    serving_layout: Option<&str>,
) -> Condition {
    let replicas = state.rollout.replicas();
    let still = match (serving_layout, replicas) {
        (Some(l), Some(c)) => format!("; {l} still serves on {}", count_of(c.available, "replica")),
        _ => String::new(),
    };
    match (&state.problem, replicas) {
        _ if state.serving() => {
            let scaling_up = match &state.rollout {
                Rollout::AboveFloor(c) => above_floor(*c, state.problem.as_ref()),
                _ => String::new(),
            };
            conditions::serving(format!(
                "{} serves at {} ({}){scaling_up}",
                r.what, r.url, r.layout
            ))
        }
        (Some((reason, message)), _) => {
            conditions::not_serving(reason, format!("{}{still}", message.trim_end_matches('.')))
        }
        (None, _) if state.rollout == Rollout::ScaledToZero => conditions::not_serving(
            "ScaledToZero",
            format!(
                "{} is scaled to zero replicas: nothing serves at {}; it serves {} once it is scaled up",
                r.what, r.url, r.layout
            ),
        ),
        (None, Some(c)) if matches!(state.rollout, Rollout::BelowFloor(_)) => {
            conditions::not_serving(
                "BelowMinReplicas",
                format!(
                    "{} serves at {} ({}) on {}, fewer than minReplicas {}: the autoscaler has not scaled it up yet",
                    r.what,
                    r.url,
                    r.layout,
                    count_of(c.available, "replica"),
                    c.desired
                ),
            )
        }
        (None, Some(c))
            if matches!(state.rollout, Rollout::ReplicasStarting(_)) && c.available > 0 =>
        {
            conditions::not_serving(
                "ReplicasStarting",
                format!(
                    "{} serves at {} ({}){}",
                    r.what,
                    r.url,
                    r.layout,
                    above_floor(c, None)
                ),
            )
        }
        (None, Some(c)) if c.available > 0 => conditions::not_serving(
            "RollingOut",
            format!("rolling out {}: {}{still}", r.layout, counts(c)),
        ),
        // It served before, and nothing serves now: losing every replica
        // is not a start.
        (None, Some(c)) if state.last_served.is_some() => conditions::not_serving(
            "Unavailable",
            format!(
                "{} has no available replica ({}): it will serve {} at {} again once one is{}",
                r.what,
                counts(c),
                r.layout,
                r.url,
                no_pods(state)
            ),
        ),
        (None, _) if let Rollout::Unreported { kind, controller } = state.rollout => {
            conditions::not_serving(
                "Starting",
                format!(
                    "{} has no available replica yet: its {kind} has no status yet, which {controller} \
                     writes (if this lasts, check that {controller} is installed and running): it \
                     will serve {} at {}",
                    r.what, r.layout, r.url
                ),
            )
        }
        (None, _) => conditions::not_serving(
            "Starting",
            format!(
                "{} has no available replica yet{}: it will serve {} at {}{}",
                r.what,
                replicas
                    .map(|c| format!(" ({})", counts(c)))
                    .unwrap_or_default(),
                r.layout,
                r.url,
                no_pods(state)
            ),
        ),
    }
}

/// " on 2 of 3 replicas: 1 more starting" (or "cannot start: {why}") of
/// a workload the autoscaler scales up beyond its floor.
pub(crate) fn above_floor(c: Replicas, problem: Option<&(String, String)>) -> String {
    let more = match problem {
        None => "starting".to_string(),
        Some((_, why)) => format!("cannot start: {}", why.trim_end_matches('.')),
    };
    format!(
        " on {} of {}: {} more {more}",
        c.available,
        count_of(c.desired, "replica"),
        c.desired - c.available
    )
}

/// "; no pod of it exists ..." when none of the server's pods exists: a
/// pod that admission refuses is never created, and only its controller's
/// events say why (a LeaderWorkerSet's status does not).
fn no_pods(state: &ServingState) -> String {
    state
        .no_pods_in
        .as_ref()
        .map_or_else(String::new, |namespace| {
            format!(
                "; no pod of it exists: if that lasts, `kubectl get events -n {namespace} \
             --field-selector reason=FailedCreate` says why its controller cannot create them \
             (a ResourceQuota, Pod Security or a LimitRange can refuse them)"
            )
        })
}

/// Adds `condition`, with a WARNING result of reason `problem` carrying its
/// message when it reports a problem the XR's observed status does not show
/// yet.
pub(crate) fn push_condition(
    req: &ComposeRequest,
    problem: Option<&str>,
    condition: Condition,
    out: &mut Composition,
) {
    if let Some(reason) = problem
        && !observed_condition_is(req, &condition)
    {
        out.results.push(outcome::warning(
            reason,
            condition.message.clone().unwrap_or_default(),
        ));
    }
    out.conditions.push(condition);
}

/// The `Sized` and `Serving` conditions of a composer that waits for a
/// required resource (`reason`, `message`): it cannot size, and what it
/// composed before, if anything (the observed resources in `keep`), is kept
/// as it was. That is not the current spec, but when every kept workload
/// serves, it serves, and `Serving` says so.
pub(crate) fn while_waiting(
    req: &ComposeRequest,
    out: &mut Composition,
    reason: &str,
    message: &str,
    keep: &[&str],
) {
    out.conditions.push(outcome::condition_unknown(
        conditions::SIZED,
        reason,
        format!("cannot size until it is there: {message}"),
    ));
    let kept: Vec<Map<String, Value>> = keep.iter().filter_map(|k| req.observed.get(k)).collect();
    let workloads: Vec<Rollout> = kept
        .iter()
        .filter(|o| {
            manifest_of(o).is_some_and(|m| {
                matches!(
                    str_at(m, &["kind"]),
                    "Deployment" | "LeaderWorkerSet" | "VLLMRuntime"
                )
            })
        })
        .map(|o| rollout(Some(o)))
        .collect();
    out.conditions.push(if kept.is_empty() {
        conditions::not_serving(reason, message.to_string())
    } else if !workloads.is_empty()
        && workloads.iter().all(|w| {
            // Without the Model the floor of an autoscaled workload is not
            // known: one that has replicas available serves, scaling or not.
            w.serves() || w.replicas().is_some_and(|c| c.available > 0)
        })
    {
        conditions::serving(format!(
            "{message}; what was composed before is kept as it was and still serves"
        ))
    } else {
        conditions::not_serving(
            reason,
            format!("{message}; what was composed before is kept as it was"),
        )
    });
}

/// "1 of 2 replicas updated, 1 available".
pub(crate) fn counts(c: Replicas) -> String {
    format!(
        "{} of {} updated, {} available",
        c.updated,
        count_of(c.desired, "replica"),
        c.available
    )
}

/// Whether the XR's observed status already carries `condition` (same
/// status, reason and message): a warning is an event, for transitions.
fn observed_condition_is(req: &ComposeRequest, condition: &Condition) -> bool {
    let want_status = match condition.status {
        s if s == crate::protocol::server::Status::ConditionTrue as i32 => "True",
        s if s == crate::protocol::server::Status::ConditionFalse as i32 => "False",
        _ => "Unknown",
    };
    req.xr.condition(&condition.r#type).is_some_and(|c| {
        c.get("status").and_then(Value::as_str) == Some(want_status)
            && c.get("reason").and_then(Value::as_str) == Some(&condition.reason)
            && c.get("message").and_then(Value::as_str) == condition.message.as_deref()
    })
}
