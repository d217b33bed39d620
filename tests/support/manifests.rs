//! Validation of every composed manifest, whatever its kind: custom
//! resources against their CRDs (`schema`), Kubernetes kinds by a round trip
//! through k8s-openapi's types. k8s-openapi ignores fields it does not know,
//! so a re-serialized object that differs from the original had a field the
//! API server would reject or prune.

use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use super::schema;

/// Problems with one composed resource (and the manifest an Object wraps).
pub fn validate_composed(resource: &Value) -> Vec<String> {
    let mut problems = validate_one(resource);
    if resource["kind"] == "Object" {
        problems.extend(
            validate_one(&resource["spec"]["forProvider"]["manifest"])
                .into_iter()
                .map(|p| format!("manifest: {p}")),
        );
    }
    problems
}

fn validate_one(m: &Value) -> Vec<String> {
    let api = m["apiVersion"].as_str().unwrap_or_default();
    let kind = m["kind"].as_str().unwrap_or_default();
    use k8s_openapi::api::{apps, autoscaling, core, networking, policy, rbac};
    match (api, kind) {
        ("v1", "ConfigMap") => round_trip::<core::v1::ConfigMap>(m),
        ("v1", "Service") => round_trip::<core::v1::Service>(m),
        ("v1", "Secret") => round_trip::<core::v1::Secret>(m),
        ("v1", "PersistentVolumeClaim") => round_trip::<core::v1::PersistentVolumeClaim>(m),
        ("apps/v1", "Deployment") => round_trip::<apps::v1::Deployment>(m),
        ("networking.k8s.io/v1", "Ingress") => round_trip::<networking::v1::Ingress>(m),
        ("autoscaling/v2", "HorizontalPodAutoscaler") => {
            round_trip::<autoscaling::v2::HorizontalPodAutoscaler>(m)
        }
        ("policy/v1", "PodDisruptionBudget") => round_trip::<policy::v1::PodDisruptionBudget>(m),
        ("v1", "ServiceAccount") => round_trip::<core::v1::ServiceAccount>(m),
        ("rbac.authorization.k8s.io/v1", "Role") => round_trip::<rbac::v1::Role>(m),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => round_trip::<rbac::v1::RoleBinding>(m),
        // A LeaderWorkerSet against its CRD, and its pod templates and claim
        // templates as the built-in kinds they are (the CRD's copy of the
        // pod schema is Kubernetes' own, and the round trip is stricter).
        ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet") => {
            let mut problems = schema::validate(m);
            let lwt = &m["spec"]["leaderWorkerTemplate"];
            for key in ["leaderTemplate", "workerTemplate"] {
                if !lwt[key].is_null() {
                    problems.extend(
                        round_trip::<core::v1::PodTemplateSpec>(&lwt[key])
                            .into_iter()
                            .map(|p| format!("spec.leaderWorkerTemplate.{key}.{p}")),
                    );
                }
            }
            for (i, claim) in lwt["volumeClaimTemplates"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                problems.extend(
                    round_trip::<core::v1::PersistentVolumeClaim>(claim)
                        .into_iter()
                        .map(|p| {
                            format!("spec.leaderWorkerTemplate.volumeClaimTemplates[{i}].{p}")
                        }),
                );
            }
            problems
        }
        _ => schema::validate(m),
    }
}

fn round_trip<T: DeserializeOwned + Serialize>(m: &Value) -> Vec<String> {
    match serde_json::from_value::<T>(m.clone()) {
        Err(e) => vec![format!("{}: {e}", m["kind"])],
        Ok(typed) => {
            let back = serde_json::to_value(&typed).unwrap();
            let mut problems = Vec::new();
            diff(m, &back, "", &mut problems);
            problems
        }
    }
}

/// Paths present in `original` but missing or different in `back`.
fn diff(original: &Value, back: &Value, path: &str, problems: &mut Vec<String>) {
    match (original, back) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match b.get(k) {
                    Some(w) => diff(v, w, &p, problems),
                    None if v.is_null() => {}
                    None => {
                        problems.push(format!("{p}: unknown field (would be pruned or rejected)"))
                    }
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                diff(v, w, &format!("{path}[{i}]"), problems);
            }
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => {}
        (a, b) if a == b => {}
        (a, b) => problems.push(format!("{path}: {a} became {b}")),
    }
}
