//! Whether an observed composed resource is ready. Crossplane derives no
//! readiness for composed resources: a function must say READY_TRUE, and the
//! XR is Ready only when all of them are.

use serde_json::{Map, Value};

use crate::protocol::wire::Ready;

/// READY_TRUE only when the observed object says it serves; READY_FALSE
/// while it exists but does not yet; READY_FALSE when not observed yet.
pub fn observed_readiness(observed: Option<&Map<String, Value>>) -> Ready {
    let Some(o) = observed else {
        return Ready::False;
    };
    let ready = match o.get("kind").and_then(Value::as_str).unwrap_or_default() {
        // provider-kubernetes turns its readiness policy into a Ready condition.
        "Object" => condition_is_true(o, "Ready"),
        // The operator reports replica counts and no conditions.
        "VLLMRuntime" => int_at(o, &["status", "availableReplicas"]) >= 1,
        "Deployment" => condition_is_true(o, "Available"),
        // Groups whose pods are all ready: the leader serves.
        "LeaderWorkerSet" => int_at(o, &["status", "readyReplicas"]) >= 1,
        "HorizontalPodAutoscaler" => condition_is_true(o, "AbleToScale"),
        // ConfigMaps, Services, Ingresses, PDBs: existing is all there is.
        _ => true,
    };
    if ready { Ready::True } else { Ready::False }
}

fn condition_is_true(o: &Map<String, Value>, type_: &str) -> bool {
    o.get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| {
            c.get("type").and_then(Value::as_str) == Some(type_)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

fn int_at(o: &Map<String, Value>, path: &[&str]) -> i64 {
    let mut v = o.get(path[0]);
    for p in &path[1..] {
        v = v.and_then(|v| v.get(*p));
    }
    v.and_then(Value::as_i64).unwrap_or(0)
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
