//! What Crossplane last applied to a composed resource, read back from the
//! object's `metadata.managedFields`: the desired state to give again while a
//! composer cannot compose anew (its Model is missing, say) and must not
//! let Crossplane delete what it composed before.
//!
//! Crossplane applies composed resources with server-side apply, under a
//! field manager of its own per XR (`apiextensions.crossplane.io/composed/
//! <hash>`). Echoing the whole observed object instead would hand that
//! manager the fields the API server and controllers set (a claim's
//! `storageClassName` and `volumeName`, a Service's `clusterIP`): once
//! owned, the next normal apply, which leaves them out, asks to clear them,
//! and the API server refuses (they are immutable) for as long as the
//! object lives. Giving back exactly the fields that manager owns keeps the
//! ownership where it was.

use prost::Message;
use serde_json::{Map, Value};

use crate::protocol::resource::{field_to_json, json_to_value, json_to_view, view_to_json};
use crate::protocol::server::Resource;
use crate::protocol::view;
use crate::request::int_at;

/// Crossplane's field managers for composed resources (one per XR).
pub(crate) const COMPOSED_FIELD_MANAGER_PREFIX: &str = "apiextensions.crossplane.io/composed/";

/// The desired resource that keeps `observed` as Crossplane last applied
/// it. An object nested too deep to decode keeps every field but its
/// status, as it came, its metadata cleaned of what the API server owns;
/// the error says what cannot be read even so.
pub(crate) fn desired_again(observed: &Resource) -> Result<Resource, String> {
    let view = observed.resource.clone().unwrap_or_default();
    let resource = match view_to_json(&view) {
        Ok(object) => match desired_object(object) {
            Value::Object(o) => json_to_view(&o),
            _ => view::Struct::default(),
        },
        Err(_) => without_server_fields(view)?,
    };
    Ok(Resource {
        resource: Some(resource),
        ..Default::default()
    })
}

/// [`desired_again`] for an object that decodes: the fields Crossplane's
/// field manager owns, with the object's identity. An object without such a
/// manager (composed before server-side apply, or given to `render` without
/// managedFields) falls back to everything but its status and the metadata
/// the API server owns.
fn desired_object(observed: Map<String, Value>) -> Value {
    let Some(owned) = owned_fields(&observed) else {
        return fallback(observed);
    };
    let mut object = match project(&Value::Object(observed.clone()), &owned) {
        Some(Value::Object(o)) => o,
        _ => Map::new(),
    };
    for identity in ["apiVersion", "kind"] {
        if let Some(v) = observed.get(identity) {
            object.insert(identity.into(), v.clone());
        }
    }
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let (Value::Object(md), Some(Value::Object(observed_md))) =
        (metadata, observed.get("metadata"))
    {
        for identity in ["name", "namespace"] {
            if let Some(v) = observed_md.get(identity) {
                md.insert(identity.into(), v.clone());
            }
        }
        // Crossplane sets its own references on every apply.
        md.remove("ownerReferences");
    }
    Value::Object(object)
}

/// The count at `path` of `observed` while Crossplane's field manager owns
/// it: what Crossplane applied there and still applies. `None` once another
/// manager took it over (a scale through the scale subresource does) or
/// when Crossplane never applied it.
pub(crate) fn applied_count(observed: &Map<String, Value>, path: &[&str]) -> Option<i32> {
    let owned = owned_fields(observed)?;
    path.iter().try_fold(&owned, |fields, p| {
        fields.get(&format!("f:{p}"))?.as_object()
    })?;
    int_at(observed, path).and_then(|c| i32::try_from(c).ok())
}

/// The union of the `fieldsV1` sets Crossplane's composed field managers
/// applied (not a subresource's).
fn owned_fields(observed: &Map<String, Value>) -> Option<Map<String, Value>> {
    let entries = observed.get("metadata")?.get("managedFields")?.as_array()?;
    let mut owned: Option<Map<String, Value>> = None;
    for entry in entries {
        let manager = entry.get("manager").and_then(Value::as_str).unwrap_or("");
        let applied = entry.get("operation").and_then(Value::as_str) == Some("Apply");
        let subresource = entry
            .get("subresource")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !manager.starts_with(COMPOSED_FIELD_MANAGER_PREFIX)
            || !applied
            || !subresource.is_empty()
        {
            continue;
        }
        if let Some(Value::Object(fields)) = entry.get("fieldsV1") {
            merge(owned.get_or_insert_with(Map::new), fields);
        }
    }
    owned
}

fn merge(into: &mut Map<String, Value>, from: &Map<String, Value>) {
    for (k, v) in from {
        match (into.get_mut(k), v) {
            (Some(Value::Object(a)), Value::Object(b)) => merge(a, b),
            (None, _) => {
                into.insert(k.clone(), v.clone());
            }
            _ => {}
        }
    }
}

/// The part of `value` the field set `fields` covers. In a `fieldsV1` set,
/// `f:<name>` is a field of an object, `k:<json>` the item of a list whose
/// key fields have those values, `v:<json>` an item of a set, `i:<n>` an
/// item by position, and `.` the node itself; an empty set owns the whole
/// value below it.
fn project(value: &Value, fields: &Map<String, Value>) -> Option<Value> {
    if fields.keys().all(|k| k == ".") {
        return Some(value.clone());
    }
    match value {
        Value::Object(object) => {
            let mut out = Map::new();
            for (key, v) in object {
                if let Some(Value::Object(sub)) = fields.get(&format!("f:{key}"))
                    && let Some(p) = project(v, sub)
                {
                    out.insert(key.clone(), p);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                for (key, sub) in fields {
                    let Value::Object(sub) = sub else { continue };
                    let selected = if let Some(k) = key.strip_prefix("k:") {
                        keyed_item(item, k)
                    } else if let Some(v) = key.strip_prefix("v:") {
                        serde_json::from_str::<Value>(v).is_ok_and(|v| &v == item)
                    } else if let Some(n) = key.strip_prefix("i:") {
                        n.parse::<usize>() == Ok(i)
                    } else {
                        false
                    };
                    if selected {
                        let mut p = project(item, sub).unwrap_or(Value::Null);
                        // A keyed item keeps its key fields, or it could not be matched.
                        if let (Value::Object(p), Some(k), Value::Object(item)) =
                            (&mut p, key.strip_prefix("k:"), item)
                            && let Ok(Value::Object(keys)) = serde_json::from_str::<Value>(k)
                        {
                            for name in keys.keys() {
                                if let Some(v) = item.get(name) {
                                    p.insert(name.clone(), v.clone());
                                }
                            }
                        }
                        out.push(p);
                        break;
                    }
                }
            }
            Some(Value::Array(out))
        }
        _ => Some(value.clone()),
    }
}

/// Whether `item` has every key field of the `k:` entry `keys` (JSON).
fn keyed_item(item: &Value, keys: &str) -> bool {
    let (Ok(Value::Object(keys)), Value::Object(item)) =
        (serde_json::from_str::<Value>(keys), item)
    else {
        return false;
    };
    keys.iter().all(|(k, v)| item.get(k) == Some(v))
}

/// An object too deep to decode, less its status and the metadata the API
/// server owns; its other fields as they came.
fn without_server_fields(mut object: view::Struct) -> Result<view::Struct, String> {
    object.fields.remove("status");
    if let Some(bytes) = object.fields.get("metadata") {
        let metadata = field_to_json("metadata", bytes)
            .map_err(|e| format!("its metadata cannot be read ({e})"))?;
        let Value::Object(mut md) = metadata else {
            return Err("its metadata is not an object".into());
        };
        drop_server_owned(&mut md);
        object.fields.insert(
            "metadata".into(),
            json_to_value(&Value::Object(md)).encode_to_vec(),
        );
    }
    Ok(object)
}

/// Everything but the status and the metadata the API server owns.
fn fallback(mut observed: Map<String, Value>) -> Value {
    observed.remove("status");
    if let Some(Value::Object(md)) = observed.get_mut("metadata") {
        drop_server_owned(md);
    }
    Value::Object(observed)
}

/// Removes the metadata fields the API server owns.
fn drop_server_owned(md: &mut Map<String, Value>) {
    for server_owned in [
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "managedFields",
        "ownerReferences",
        "finalizers",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generateName",
        "selfLink",
    ] {
        md.remove(server_owned);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A PVC as the API server returns it after Crossplane applied its
    /// name, labels, access modes and size: the class, volume and mode were
    /// filled in by the server and the binder.
    fn bound_claim() -> Map<String, Value> {
        json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": "qwen-weights", "namespace": "team-a", "uid": "u", "resourceVersion": "7",
                "labels": {"app.kubernetes.io/instance": "qwen", "crossplane.io/composite": "qwen"},
                "annotations": {"crossplane.io/composition-resource-name": "weights_cache",
                                "pv.kubernetes.io/bind-completed": "yes"},
                "ownerReferences": [{"apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference", "name": "qwen", "uid": "x"}],
                "finalizers": ["kubernetes.io/pvc-protection"],
                "managedFields": [
                    {"manager": "apiextensions.crossplane.io/composed/0b1c", "operation": "Apply",
                     "fieldsV1": {
                        "f:metadata": {"f:annotations": {"f:crossplane.io/composition-resource-name": {}},
                                       "f:labels": {"f:app.kubernetes.io/instance": {}, "f:crossplane.io/composite": {}},
                                       "f:ownerReferences": {"k:{\"uid\":\"x\"}": {}}},
                        "f:spec": {"f:accessModes": {}, "f:resources": {"f:requests": {"f:storage": {}}}}}},
                    {"manager": "kube-controller-manager", "operation": "Update",
                     "fieldsV1": {"f:metadata": {"f:annotations": {"f:pv.kubernetes.io/bind-completed": {}}},
                                  "f:spec": {"f:volumeName": {}}}},
                    {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status",
                     "fieldsV1": {"f:status": {"f:phase": {}}}}
                ]
            },
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "18Gi"}},
                     "storageClassName": "standard", "volumeMode": "Filesystem", "volumeName": "pv-1"},
            "status": {"phase": "Bound"}
        })
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn a_kept_claim_is_what_crossplane_applied_not_what_the_server_filled_in() {
        assert_eq!(
            desired_object(bound_claim()),
            json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": "qwen-weights", "namespace": "team-a",
                    "labels": {"app.kubernetes.io/instance": "qwen", "crossplane.io/composite": "qwen"},
                    "annotations": {"crossplane.io/composition-resource-name": "weights_cache"}
                },
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "18Gi"}}}
            })
        );
    }

    #[test]
    fn keyed_list_items_keep_their_keys_and_only_their_owned_fields() {
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "managedFields": [
                {"manager": "apiextensions.crossplane.io/composed/1", "operation": "Apply", "fieldsV1": {
                    "f:spec": {"f:template": {"f:spec": {"f:containers": {
                        "k:{\"name\":\"vllm\"}": {".": {}, "f:image": {}, "f:args": {}}}}}}}}]},
            "spec": {"template": {"spec": {
                "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.19.0", "args": ["serve"],
                                "terminationMessagePath": "/dev/termination-log"},
                               {"name": "injected-sidecar", "image": "mesh"}],
                "dnsPolicy": "ClusterFirst"}}}
        });
        assert_eq!(
            desired_object(deployment.as_object().unwrap().clone()),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                   "spec": {"template": {"spec": {"containers": [
                       {"name": "vllm", "image": "vllm/vllm-openai:v0.19.0", "args": ["serve"]}]}}}})
        );
    }

    #[test]
    fn without_crossplanes_field_manager_everything_but_status_and_server_metadata_is_kept() {
        let mut claim = bound_claim();
        claim["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        let kept = desired_object(claim);
        assert_eq!(kept["spec"]["volumeName"], "pv-1");
        assert_eq!(kept.get("status"), None);
        assert_eq!(kept["metadata"].get("uid"), None);
        assert_eq!(kept["metadata"].get("finalizers"), None);
    }

    #[test]
    fn a_count_is_crossplanes_until_a_scale_takes_it_over() {
        let deployment = |managers: Value| {
            json!({"kind": "Deployment", "metadata": {"name": "chat", "managedFields": managers},
                   "spec": {"replicas": 3}})
            .as_object()
            .unwrap()
            .clone()
        };
        let crossplane = |fields: Value| json!({"manager": "apiextensions.crossplane.io/composed/0b1c", "operation": "Apply", "fieldsV1": fields});
        let applied = deployment(json!([crossplane(json!({"f:spec": {"f:replicas": {}}}))]));
        assert_eq!(applied_count(&applied, &["spec", "replicas"]), Some(3));
        // As the API server records `kubectl scale` or an autoscaler's scale.
        let scaled = deployment(json!([
            crossplane(json!({"f:spec": {"f:selector": {}}})),
            {"manager": "kube-controller-manager", "operation": "Update", "subresource": "scale",
             "fieldsV1": {"f:spec": {"f:replicas": {}}}}
        ]));
        assert_eq!(applied_count(&scaled, &["spec", "replicas"]), None);
        let never = deployment(json!([crossplane(json!({"f:spec": {"f:selector": {}}}))]));
        assert_eq!(applied_count(&never, &["spec", "replicas"]), None);
    }
}
