//! The digest of the spec a workload was composed from, carried in an
//! annotation, so that readiness can tell an observed object applied from
//! the current spec from an older one.
//!
//! Crossplane calls the function with the objects as they are before it
//! applies what the function returns. Right after a change (another GPU
//! type, another model), the observed Deployment is still the previous
//! spec, fully rolled out: judged on its status alone, the XR would report
//! the new layout Ready for one reconcile, and record it as serving. The
//! annotation sits in the object's metadata, not its pod template, so it
//! starts no rollout of its own.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::compose::annotations::{annotation, set_annotation};
use crate::request::{applied_manifest, int_at};

/// The annotation that carries the digest.
pub(crate) const ANNOTATION: &str = "infer.dev/spec-digest";

/// The annotation that carries the digest of the spec that last served on
/// every replica, written beside the layout it served.
pub(crate) const SERVED_ANNOTATION: &str = "infer.dev/served-spec-digest";

/// Kinds whose readiness is a rollout of their spec.
const WORKLOADS: &[&str] = &["Deployment", "LeaderWorkerSet", "VLLMRuntime"];

/// What identifies the spec a workload is composed from: the digest of
/// everything but its replica count, and that count. The count is compared
/// on its own, and only when composed: an autoscaler may own it, and the
/// workload then leaves it out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    digest: String,
    replicas: Option<i64>,
}

impl Spec {
    /// Whether `observed` was applied from this spec.
    pub(crate) fn applied_to(&self, observed: &Map<String, Value>) -> bool {
        of(observed) == Some(self.digest.as_str())
            && self.replicas.is_none_or(|r| replicas(observed) == Some(r))
    }
}

/// Where a workload's replica count is: in the object, or in the manifest
/// a provider-kubernetes Object wraps.
fn replicas_path(object: &Map<String, Value>) -> Vec<&'static str> {
    let kind_at = |o: &Map<String, Value>| o.get("kind").and_then(Value::as_str).map(String::from);
    let mut path = Vec::new();
    let mut kind = kind_at(object);
    if kind.as_deref() == Some("Object") {
        path.extend(["spec", "forProvider", "manifest"]);
        kind = applied_manifest(object).and_then(kind_at);
    }
    match kind.as_deref() {
        Some("VLLMRuntime") => path.extend(["spec", "deploymentConfig", "replicas"]),
        _ => path.extend(["spec", "replicas"]),
    }
    path
}

fn replicas(object: &Map<String, Value>) -> Option<i64> {
    int_at(object, &replicas_path(object))
}

/// `object` without its replica count, for the digest.
fn without_replicas(object: &Map<String, Value>) -> Value {
    let path = replicas_path(object);
    let mut copy = Value::Object(object.clone());
    let (last, parents) = path.split_last().expect("a path");
    let mut at = Some(&mut copy);
    for p in parents {
        at = at.and_then(|v| v.get_mut(*p));
    }
    if let Some(Value::Object(parent)) = at {
        parent.remove(*last);
    }
    copy
}

/// Annotates `object`, a composed object of `kind`, with the digest of its
/// spec and returns that spec, when it is a workload or a
/// provider-kubernetes Object wrapping one; otherwise leaves it as it is.
pub fn annotate(kind: &str, object: &mut Map<String, Value>) -> Option<Spec> {
    let wrapped = applied_manifest(object)
        .and_then(|m| m.get("kind"))
        .and_then(Value::as_str);
    let workload = WORKLOADS.contains(&kind) || wrapped.is_some_and(|k| WORKLOADS.contains(&k));
    if !workload {
        return None;
    }
    // serde_json's maps are sorted: the same spec gives the same bytes.
    let bytes = serde_json::to_vec(&without_replicas(object)).unwrap_or_default();
    let digest: String = Sha256::digest(&bytes)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    set_annotation(object, ANNOTATION, &digest);
    Some(Spec {
        digest,
        replicas: replicas(object),
    })
}

/// The digest an observed object carries, if any.
pub(crate) fn of(object: &Map<String, Value>) -> Option<&str> {
    annotation(object, ANNOTATION)
}

/// Whether `object` records that the spec it carries has served on every
/// replica.
pub(crate) fn served(object: &Map<String, Value>) -> bool {
    of(object).is_some_and(|digest| annotation(object, SERVED_ANNOTATION) == Some(digest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec_of(v: Value) -> Spec {
        annotate("Deployment", &mut v.as_object().unwrap().clone()).unwrap()
    }

    fn applied(v: Value) -> Map<String, Value> {
        let mut object = v.as_object().unwrap().clone();
        annotate("Deployment", &mut object);
        object
    }

    #[test]
    fn a_workload_is_applied_from_a_spec_when_its_digest_and_replicas_match() {
        let one = json!({"kind": "Deployment", "metadata": {"name": "q"}, "spec": {"replicas": 1, "x": 1}});
        let two = json!({"kind": "Deployment", "metadata": {"name": "q"}, "spec": {"replicas": 2, "x": 1}});
        let other = json!({"kind": "Deployment", "metadata": {"name": "q"}, "spec": {"replicas": 1, "x": 2}});
        assert!(spec_of(one.clone()).applied_to(&applied(one.clone())));
        assert!(!spec_of(two.clone()).applied_to(&applied(one.clone())));
        assert!(!spec_of(other).applied_to(&applied(one.clone())));
        // An autoscaler scaled the applied object to 4, and the composer
        // leaves the count to it: the same spec.
        let mut scaled = applied(one);
        scaled["spec"]["replicas"] = json!(4);
        let autoscaled = json!({"kind": "Deployment", "metadata": {"name": "q"}, "spec": {"x": 1}});
        assert!(spec_of(autoscaled.clone()).applied_to(&scaled));
        assert!(!spec_of(two.clone()).applied_to(&scaled));
        // Composed before digests existed.
        assert!(
            !spec_of(two).applied_to(&json!({"kind": "Deployment"}).as_object().unwrap().clone())
        );
    }

    #[test]
    fn what_has_no_rollout_is_left_as_it_is() {
        let service = json!({"kind": "Service", "metadata": {"name": "q"}});
        let mut object = service.as_object().unwrap().clone();
        assert_eq!(annotate("Service", &mut object), None);
        assert_eq!(Value::Object(object), service);
        let wrapped = json!({"kind": "Object", "spec": {"forProvider": {"manifest": {
            "kind": "VLLMRuntime", "spec": {"deploymentConfig": {"replicas": 3}}}}}});
        let spec = annotate("Object", &mut wrapped.as_object().unwrap().clone()).unwrap();
        assert_eq!(spec.replicas, Some(3));
    }
}
