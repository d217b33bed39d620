//! The weights volume of a model server: what it is (size, access mode,
//! class, as `steps::weights_cache` decides), where it is mounted, and, for
//! a runtime that builds its own pods, its PersistentVolumeClaim, composed
//! beside a Deployment or as a LeaderWorkerSet's per-pod claim template.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimSpec, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::manifests::vllm_runtime::{StorageAccessMode, StorageConfig};

/// Where the volume is mounted; `HF_HOME` points into it so vLLM downloads
/// there and a restarted pod finds what was downloaded.
pub(crate) const CACHE_MOUNT_PATH: &str = "/data";
pub(crate) const HF_HOME: &str = "/data/huggingface";

/// A weights volume and what it is, in words for the plan's reasons.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct WeightsCache {
    pub(crate) storage: StorageConfig,
    pub(crate) applied: String,
}

/// A claim named `name` for `cache` (namespace and labels set by the caller
/// for a standalone claim, left empty in a template).
pub(crate) fn weights_claim(name: &str, cache: &WeightsCache) -> PersistentVolumeClaim {
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
