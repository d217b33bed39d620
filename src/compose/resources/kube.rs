//! Kubernetes built-in objects, built with k8s-openapi types and turned into
//! JSON once, at the edge, with their apiVersion and kind.

use k8s_openapi::Resource;
use serde::Serialize;
use serde_json::Value;

/// A k8s-openapi object as a manifest.
pub fn manifest<T: Resource + Serialize>(object: &T) -> Value {
    let mut v = serde_json::to_value(object).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.insert("apiVersion".into(), T::API_VERSION.into());
        o.insert("kind".into(), T::KIND.into());
    }
    v
}

/// The standard labels of everything an XR composes.
pub fn labels(
    xr_kind: &str,
    xr_name: &str,
    component: &str,
) -> std::collections::BTreeMap<String, String> {
    [
        ("app.kubernetes.io/name", xr_kind.to_ascii_lowercase()),
        (
            "app.kubernetes.io/instance",
            crate::compose::names::label_value(xr_name),
        ),
        ("app.kubernetes.io/component", component.to_string()),
        (
            "app.kubernetes.io/managed-by",
            "function-inference".to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}
