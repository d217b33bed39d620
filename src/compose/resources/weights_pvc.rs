//! The weights volume of a runtime that builds its own pods: a
//! PersistentVolumeClaim from the decision in `weights_cache`, composed
//! beside a Deployment, or as a LeaderWorkerSet's per-pod claim template.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimSpec, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::compose::steps::weights_cache::WeightsCache;
use crate::manifests::vllm_runtime::StorageAccessMode;

/// A claim named `name` for `cache` (namespace and labels set by the caller
/// for a standalone claim, left empty in a template).
pub fn weights_claim(name: &str, cache: &WeightsCache) -> PersistentVolumeClaim {
    let storage = &cache.storage;
    let mode = match storage.access_mode {
        Some(StorageAccessMode::ReadWriteMany) => "ReadWriteMany",
        _ => "ReadWriteOnce",
    };
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec![mode.into()]),
            storage_class_name: storage.storage_class_name.clone(),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity(storage.size.clone().unwrap_or_else(|| "1Gi".into())),
                )])),
                limits: None,
            }),
            ..Default::default()
        }),
        status: None,
    }
}
