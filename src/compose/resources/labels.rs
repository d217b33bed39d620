//! The standard labels of everything an XR composes.

use std::collections::BTreeMap;

/// `app.kubernetes.io/{name, instance, component, managed-by}` for a
/// `component` of the XR `xr_kind`/`xr_name`.
pub(crate) fn labels(xr_kind: &str, xr_name: &str, component: &str) -> BTreeMap<String, String> {
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

/// The labels of `labels` that never change for the XR (all but
/// managed-by): what a Deployment's immutable selector may hold.
pub(crate) fn selector_labels(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    labels
        .iter()
        .filter(|(k, _)| {
            matches!(
                k.as_str(),
                "app.kubernetes.io/name"
                    | "app.kubernetes.io/instance"
                    | "app.kubernetes.io/component"
            )
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
