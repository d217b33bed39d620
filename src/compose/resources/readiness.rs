//! Whether an observed composed resource is ready. Crossplane derives no
//! readiness for composed resources: a function must say READY_TRUE, and the
//! XR is Ready only when all of them are.

use serde_json::{Map, Value};

use crate::protocol::wire::Ready;

/// What readiness reads of an observed object.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ObservedState<'a> {
    pub kind: &'a str,
    /// The types of its status conditions whose status is "True".
    pub true_conditions: Vec<&'a str>,
    /// Its `status.availableReplicas` and `status.readyReplicas`; 0 when
    /// absent or not whole numbers.
    pub available_replicas: i64,
    pub ready_replicas: i64,
}

impl<'a> ObservedState<'a> {
    /// The state of an observed object decoded as JSON.
    pub fn of(o: &'a Map<String, Value>) -> Self {
        let status = o.get("status");
        let whole = |field: &str| {
            status
                .and_then(|s| s.get(field))
                .and_then(Value::as_i64)
                .unwrap_or(0)
        };
        Self {
            kind: o.get("kind").and_then(Value::as_str).unwrap_or_default(),
            true_conditions: status
                .and_then(|s| s.get("conditions"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|c| c.get("status").and_then(Value::as_str) == Some("True"))
                .filter_map(|c| c.get("type").and_then(Value::as_str))
                .collect(),
            available_replicas: whole("availableReplicas"),
            ready_replicas: whole("readyReplicas"),
        }
    }
}

/// READY_TRUE only when the observed object says it serves; READY_FALSE
/// while it exists but does not yet; READY_FALSE when not observed yet.
pub fn observed_readiness(observed: Option<&Map<String, Value>>) -> Ready {
    match observed {
        Some(o) => readiness(&ObservedState::of(o)),
        None => Ready::False,
    }
}

/// Whether an observed object in `state` serves.
pub fn readiness(state: &ObservedState) -> Ready {
    let condition = |type_: &str| state.true_conditions.contains(&type_);
    let ready = match state.kind {
        // provider-kubernetes turns its readiness policy into a Ready condition.
        "Object" => condition("Ready"),
        // The operator reports replica counts and no conditions.
        "VLLMRuntime" => state.available_replicas >= 1,
        "Deployment" => condition("Available"),
        // Groups whose pods are all ready: the leader serves.
        "LeaderWorkerSet" => state.ready_replicas >= 1,
        "HorizontalPodAutoscaler" => condition("AbleToScale"),
        // ConfigMaps, Services, Ingresses, PDBs: existing is all there is.
        _ => true,
    };
    if ready { Ready::True } else { Ready::False }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn readiness_follows_what_each_kind_reports() {
        let cases = [
            ("not observed yet", None, Ready::False),
            (
                "Object, Ready False",
                Some(
                    json!({"kind": "Object", "status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
                ),
                Ready::False,
            ),
            (
                "Object, Ready True",
                Some(
                    json!({"kind": "Object", "status": {"conditions": [{"type": "Synced", "status": "True"}, {"type": "Ready", "status": "True"}]}}),
                ),
                Ready::True,
            ),
            (
                "Object, no status",
                Some(json!({"kind": "Object"})),
                Ready::False,
            ),
            (
                "VLLMRuntime, none available",
                Some(json!({"kind": "VLLMRuntime", "status": {"availableReplicas": 0}})),
                Ready::False,
            ),
            (
                "VLLMRuntime, one available",
                Some(json!({"kind": "VLLMRuntime", "status": {"availableReplicas": 1}})),
                Ready::True,
            ),
            (
                "Deployment, Available",
                Some(
                    json!({"kind": "Deployment", "status": {"conditions": [{"type": "Available", "status": "True"}]}}),
                ),
                Ready::True,
            ),
            (
                "Deployment, progressing only",
                Some(
                    json!({"kind": "Deployment", "status": {"conditions": [{"type": "Progressing", "status": "True"}]}}),
                ),
                Ready::False,
            ),
            (
                "LeaderWorkerSet, no group ready",
                Some(
                    json!({"kind": "LeaderWorkerSet", "status": {"replicas": 1, "readyReplicas": 0}}),
                ),
                Ready::False,
            ),
            (
                "LeaderWorkerSet, a group ready",
                Some(
                    json!({"kind": "LeaderWorkerSet", "status": {"replicas": 2, "readyReplicas": 1}}),
                ),
                Ready::True,
            ),
            (
                "Ingress exists",
                Some(json!({"kind": "Ingress"})),
                Ready::True,
            ),
        ];
        for (reason, observed, want) in cases {
            let observed = observed.map(obj);
            assert_eq!(observed_readiness(observed.as_ref()), want, "{reason}");
        }
    }
}
