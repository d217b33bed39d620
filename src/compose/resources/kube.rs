//! Kubernetes built-in objects, built with k8s-openapi types, which write
//! their own apiVersion and kind when the edge encodes them.

use k8s_openapi::Resource;
use serde::Serialize;

use crate::compose::composition::Manifest;

/// A k8s-openapi object as a manifest.
pub(crate) fn manifest<T: Resource + Serialize + Send + Sync + 'static>(object: T) -> Manifest {
    Manifest::new(T::KIND, object)
}

/// The standard labels of everything an XR composes.
pub(crate) fn labels(
    xr_kind: &str,
    xr_name: &str,
    component: &str,
) -> std::collections::BTreeMap<String, String> {
    [
        ("app.kubernetes.io/name", xr_kind.to_ascii_lowercase()),
        (
            "app.kubernetes.io/instance",
            crate::names::label_value(xr_name),
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
