//! The `imagePullSecrets` of every pod an XR composes.

use k8s_openapi::api::core::v1::LocalObjectReference;

/// A pod's `imagePullSecrets` naming `names`; none without Secrets.
pub(crate) fn image_pull_secrets(names: &[String]) -> Option<Vec<LocalObjectReference>> {
    (!names.is_empty()).then(|| {
        names
            .iter()
            .map(|n| LocalObjectReference { name: n.clone() })
            .collect()
    })
}
