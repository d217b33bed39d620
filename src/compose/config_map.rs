//! ConfigMaps: the one builder for every ConfigMap a composer makes, so
//! each carries the same labels and nothing but the data it is given.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

/// A ConfigMap holding `data`.
pub fn config_map(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    data: BTreeMap<String, String>,
) -> Value {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            labels: (!labels.is_empty()).then_some(labels),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    };
    super::kube::manifest(&cm)
}

/// Pretty JSON for a ConfigMap value: reviewers read these.
pub fn pretty(v: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}
