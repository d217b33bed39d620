//! The `Autoscaling` condition: whether the autoscalers an XR composed can
//! scale what they target.
//!
//! An autoscaler that cannot read its metrics (no custom metrics API, a
//! Prometheus KEDA cannot reach) leaves the workload at its count: the XR
//! serves, so `Ready` stays, but what was asked for does not happen, and
//! only the autoscaler's own status says so. This condition carries it to
//! the XR, with a warning event when it first appears. Crossplane keeps a
//! condition a function stops returning, so an XR that said it autoscaled
//! is told when it no longer does.

use serde_json::{Map, Value};

use crate::compose::composition::{ComposeRequest, Composition};
use crate::compose::rollout::{Scaling, scaling};
use crate::compose::steps::conditions::withdrawn;
use crate::compose::steps::serving::push_condition;
use crate::request::{applied_manifest, str_at};
use crate::response::{condition, condition_unknown};

pub(crate) const AUTOSCALING: &str = "Autoscaling";

/// Adds the `Autoscaling` condition for the autoscalers composed under
/// `keys` (those of `keys` that `out` composes).
pub(crate) fn report(req: &ComposeRequest, keys: &[&str], out: &mut Composition) {
    let scalers: Vec<(Autoscaler, Scaling)> = keys
        .iter()
        .filter_map(|key| {
            let composed = out.resources.get(*key)?;
            let state = req
                .observed
                .get(key)
                .map_or(Scaling::NotReported, |o| scaling(&o));
            Some((Autoscaler::of(composed.manifest.object()), state))
        })
        .collect();
    if scalers.is_empty() {
        out.conditions.extend(withdrawn(
            req,
            condition(
                AUTOSCALING,
                false,
                "NotAutoscaled",
                "no autoscaler is composed: the replicas are fixed by the spec",
            ),
        ));
        return;
    }
    let inactive: Vec<(&str, String)> = scalers
        .iter()
        .filter_map(|(what, s)| match s {
            Scaling::Inactive { reason, message } => Some((
                reason.as_str(),
                format!("the {what} cannot scale: {message}"),
            )),
            _ => None,
        })
        .collect();
    if let Some((reason, _)) = inactive.first() {
        let message = inactive
            .iter()
            .map(|(_, m)| m.trim_end_matches('.'))
            .collect::<Vec<_>>()
            .join("; ");
        push_condition(
            req,
            Some(reason),
            condition(AUTOSCALING, false, reason, message),
            out,
        );
        return;
    }
    let whats = scalers
        .iter()
        .map(|(what, _)| format!("the {what}"))
        .collect::<Vec<_>>()
        .join(" and ");
    let (reads, has, it) = match scalers.len() {
        1 => ("it reads its metrics and sets", "has", "it"),
        _ => ("each reads its metrics and sets", "have", "they"),
    };
    out.conditions
        .push(if scalers.iter().all(|(_, s)| *s == Scaling::Active) {
            condition(
                AUTOSCALING,
                true,
                "Active",
                format!("{whats} can scale: {reads} the replicas"),
            )
        } else {
            // An HPA's controller runs in every cluster; KEDA's only where
            // the platform installed it, and nothing else writes that status.
            let keda = scalers
                .iter()
                .any(|(what, s)| *s == Scaling::NotReported && what.kind == "ScaledObject");
            let hint = if keda {
                " (if this lasts, check that KEDA's operator is installed and running: it writes a ScaledObject's status)"
            } else {
                ""
            };
            condition_unknown(
                AUTOSCALING,
                "NotReported",
                format!("{whats} {has} not yet said whether {it} can scale{hint}"),
            )
        });
}

/// A composed autoscaler, as messages name it: "HorizontalPodAutoscaler chat".
struct Autoscaler {
    kind: String,
    name: String,
}

impl Autoscaler {
    /// Its kind and name, inside its provider-kubernetes Object if it has one.
    fn of(manifest: &Map<String, Value>) -> Self {
        let inner = applied_manifest(manifest).unwrap_or(manifest);
        Self {
            kind: str_at(inner, &["kind"]).to_string(),
            name: str_at(inner, &["metadata", "name"]).to_string(),
        }
    }
}

impl std::fmt::Display for Autoscaler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind, self.name)
    }
}
