//! ConfigMaps: the one builder for every ConfigMap a composer makes, so
//! each carries the same labels and nothing but the data it is given.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The most a ConfigMap's data may hold, keys and values together: the API
/// server refuses a ConfigMap of more than 1 MiB, and Crossplane would retry
/// applying it forever, so a composer refuses it first.
pub(crate) const MAX_DATA_BYTES: usize = 1024 * 1024;

/// Refuses `data` of more than [`MAX_DATA_BYTES`]. `parts` are the spec
/// fields written into it with their approximate sizes; the message names
/// the largest, since those are what to shorten.
pub(crate) fn check_size(
    what: &str,
    data: &BTreeMap<String, String>,
    parts: &[(String, usize)],
) -> Result<(), String> {
    let total: usize = data.iter().map(|(k, v)| k.len() + v.len()).sum();
    if total <= MAX_DATA_BYTES {
        return Ok(());
    }
    let mut parts = parts.to_vec();
    parts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    // The largest part, and any other of at least an eighth of the whole.
    let largest: Vec<String> = parts
        .iter()
        .enumerate()
        .filter(|(i, (_, n))| *i == 0 || n * 8 >= total)
        .map(|(_, (field, n))| format!("{field} (about {n} bytes)"))
        .collect();
    let (verb, them) = if largest.len() == 1 {
        ("makes", "it")
    } else {
        ("make", "them")
    };
    Err(format!(
        "{} {verb} {what} {total} bytes, more than the {MAX_DATA_BYTES} bytes a ConfigMap holds; shorten {them}",
        largest.join(" and ")
    ))
}

/// A ConfigMap holding `data`.
pub(crate) fn config_map(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    data: BTreeMap<String, String>,
) -> crate::compose::composition::Manifest {
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
    crate::compose::composition::Manifest::of(cm)
}

/// Pretty JSON for a ConfigMap value: reviewers read these.
pub(crate) fn pretty(v: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_over_a_mebibyte_is_refused_naming_its_large_parts() {
        let data = |n: usize| BTreeMap::from([("a.json".to_string(), "x".repeat(n))]);
        let parts = [
            ("spec.small".to_string(), 10),
            ("spec.prompt".to_string(), 600_000),
            ("spec.tools".to_string(), 500_000),
        ];
        assert_eq!(
            check_size("the ConfigMap", &data(MAX_DATA_BYTES - 6), &parts),
            Ok(())
        );
        assert_eq!(
            check_size("the ConfigMap", &data(MAX_DATA_BYTES), &parts),
            Err("spec.prompt (about 600000 bytes) and spec.tools (about 500000 bytes) make the ConfigMap \
                 1048582 bytes, more than the 1048576 bytes a ConfigMap holds; shorten them"
                .into())
        );
    }
}
