//! The weights volume of a model server: whether it gets one, which access
//! mode and storage class, and when that cannot work.
//!
//! A volume is composed when a Model's `cachePolicy` asks for one, and also
//! when the weights could not load within the operator's fixed startup probe:
//! without a volume such a pod is killed and downloads again from the start,
//! for ever; with one, each restart resumes the download. The operator
//! creates one PersistentVolumeClaim per runtime, shared by its replicas, so
//! one replica gets ReadWriteOnce (and rolls out with Recreate, since a surge
//! pod on another node could not attach it) and several need ReadWriteMany,
//! which only a storage class the platform names can provide.
//!
//! The runtimes that set their own startup probe (a Deployment, a
//! LeaderWorkerSet) never need a volume to start, so [`decide_own_probe`]
//! refuses nothing: it still keeps a long download across restarts, in one
//! claim the replicas share or, for a LeaderWorkerSet, one claim per pod.

use crate::compose::resources::weights_volume::{CACHE_MOUNT_PATH, WeightsCache};
use crate::input::WeightsCacheSettings;
use crate::manifests::vllm_runtime::{StorageAccessMode, StorageConfig};
use crate::sizing::Plan;
use crate::units::gib_quantity;

/// The operator's fixed startup probe: 120 s delay + 100 failures x 20 s.
pub(crate) const OPERATOR_STARTUP_SECONDS: u32 = 2120;

/// Headroom of the volume over the checkpoint: tokenizer, config and a
/// partial download next to a complete one.
const CACHE_HEADROOM: f64 = 1.2;

/// What a runtime gets: a volume or none, and warnings about it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct CacheDecision {
    pub(crate) cache: Option<WeightsCache>,
    pub(crate) warnings: Vec<String>,
}

/// Decides the weights volume of a runtime with `replicas` replicas.
/// `requested` is true when a Model's cachePolicy asks for a volume;
/// `replicas_from` names what set the replica count, for messages. An error
/// is a refusal: the weights cannot load in time and no volume can help.
pub(crate) fn decide(
    requested: bool,
    plan: &Plan,
    replicas: i32,
    replicas_from: &str,
    settings: &WeightsCacheSettings,
) -> Result<CacheDecision, String> {
    let slow = plan.startup_probe_seconds > OPERATOR_STARTUP_SECONDS;
    if !requested && !slow {
        return Ok(CacheDecision::default());
    }
    let slow_load = format!(
        "loading the {:.1} GiB checkpoint may take up to {} s, beyond the operator's fixed {OPERATOR_STARTUP_SECONDS} s startup probe",
        plan.checkpoint_gib, plan.startup_probe_seconds
    );
    let (access_mode, class) = if replicas <= 1 {
        (
            StorageAccessMode::ReadWriteOnce,
            settings.storage_class_name.clone(),
        )
    } else if let Some(class) = &settings.shared_storage_class_name {
        (StorageAccessMode::ReadWriteMany, Some(class.clone()))
    } else if slow {
        return Err(format!(
            "{slow_load}, so the runtime needs a weights volume that a restarted pod resumes the download from; \
             {replicas} replicas ({replicas_from}) share the operator's one volume, which needs ReadWriteMany, and the \
             platform names no ReadWriteMany storage class (input.defaults.weightsCache.sharedStorageClassName); \
             run one replica, set that storage class in the Composition's step input, or use a smaller checkpoint \
             (spec.quantization fp8 or int4)"
        ));
    } else {
        return Ok(CacheDecision {
            cache: None,
            warnings: vec![format!(
                "cachePolicy is not applied: {replicas} replicas ({replicas_from}) share the operator's one weights \
                 volume, which needs ReadWriteMany, and the platform names no ReadWriteMany storage class \
                 (input.defaults.weightsCache.sharedStorageClassName); each pod downloads the weights itself"
            )],
        });
    };
    let mode = match access_mode {
        StorageAccessMode::ReadWriteOnce => {
            "ReadWriteOnce, rolled out with Recreate since a surge pod on another node could not attach it"
        }
        _ => "ReadWriteMany, shared by the replicas",
    };
    let cache = weights_volume(plan, access_mode, class, |size, class_text| {
        format!(
            "a {size} weights volume at {CACHE_MOUNT_PATH} (storageConfig, {mode}; {class_text}): the {:.1} GiB checkpoint plus 20% headroom, \
             with HF_HOME on it so a restarted pod reuses the download",
            plan.checkpoint_gib
        )
    });
    let mut warnings = Vec::new();
    if slow {
        warnings.push(format!(
            "{slow_load}: the runtime gets a weights volume so that a pod the probe restarts resumes the download \
             instead of starting over; the first start may take several restarts (pre-load the volume, or use a \
             faster storage path, to avoid them)"
        ));
    }
    Ok(CacheDecision {
        cache: Some(cache),
        warnings,
    })
}

/// A volume of `access_mode` on `class` (None: the cluster's default)
/// holding the plan's checkpoint with headroom; `applied` words it, given
/// its size and its storage class in words.
fn weights_volume(
    plan: &Plan,
    access_mode: StorageAccessMode,
    class: Option<String>,
    applied: impl FnOnce(&str, &str) -> String,
) -> WeightsCache {
    let size = gib_quantity(plan.checkpoint_gib * CACHE_HEADROOM);
    let class_text = match &class {
        Some(c) => format!("storage class {c}"),
        None => "the cluster's default storage class".to_string(),
    };
    let applied = applied(&size, &class_text);
    WeightsCache {
        storage: StorageConfig {
            enabled: Some(true),
            size: Some(size),
            mount_path: Some(CACHE_MOUNT_PATH.into()),
            access_mode: Some(access_mode),
            storage_class_name: class,
            ..Default::default()
        },
        applied,
    }
}

/// Where the weights volume of a runtime that sets its own startup probe
/// lives: one claim for the whole runtime, or one per pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VolumeScope {
    /// One PersistentVolumeClaim the replicas share (a Deployment).
    Shared,
    /// One claim per pod from a template, kept across group restarts (a
    /// LeaderWorkerSet), so ReadWriteOnce always works.
    PerPod,
}

/// The weights volume of a runtime whose startup probe covers the load-time
/// estimate (a Deployment or a LeaderWorkerSet): nothing is refused, since a
/// slow load no longer restarts for ever. A volume is still composed when a
/// Model's cachePolicy asks for one or when the load is long (beyond
/// [`OPERATOR_STARTUP_SECONDS`]), so a pod restarted for any reason (a
/// drained node, an out-of-memory kill) does not download everything again.
pub(crate) fn decide_own_probe(
    requested: bool,
    plan: &Plan,
    replicas: i32,
    replicas_from: &str,
    scope: VolumeScope,
    settings: &WeightsCacheSettings,
) -> CacheDecision {
    let long = plan.startup_probe_seconds > OPERATOR_STARTUP_SECONDS;
    if !requested && !long {
        return CacheDecision::default();
    }
    let (access_mode, class, mode) = if scope == VolumeScope::PerPod {
        (
            StorageAccessMode::ReadWriteOnce,
            settings.storage_class_name.clone(),
            "one ReadWriteOnce claim per pod of each group, kept when the group restarts",
        )
    } else if replicas <= 1 {
        (
            StorageAccessMode::ReadWriteOnce,
            settings.storage_class_name.clone(),
            "ReadWriteOnce, rolled out with Recreate since a surge pod on another node could not attach it",
        )
    } else if let Some(class) = &settings.shared_storage_class_name {
        (
            StorageAccessMode::ReadWriteMany,
            Some(class.clone()),
            "ReadWriteMany, shared by the replicas",
        )
    } else {
        let warnings = requested
            .then(|| {
                format!(
                    "cachePolicy is not applied: {replicas} replicas ({replicas_from}) would share one weights \
                     volume, which needs ReadWriteMany, and the platform names no ReadWriteMany storage class \
                     (input.defaults.weightsCache.sharedStorageClassName); each pod downloads the weights itself"
                )
            })
            .into_iter()
            .collect();
        return CacheDecision {
            cache: None,
            warnings,
        };
    };
    let why = if requested {
        "the Model's cachePolicy asks for it"
    } else {
        "a long download is kept when a pod restarts"
    };
    let cache = weights_volume(plan, access_mode, class, |size, class_text| {
        format!(
            "a {size} weights volume at {CACHE_MOUNT_PATH} ({mode}; {class_text}): the {:.1} GiB checkpoint plus 20% \
             headroom, with HF_HOME on it; {why}",
            plan.checkpoint_gib
        )
    });
    CacheDecision {
        cache: Some(cache),
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::{self, SizingRequest};

    fn plan(model: &str, gpu: &str) -> Plan {
        sizing::size(&SizingRequest {
            model_id: model.into(),
            gpu_type: gpu.into(),
            gpu_memory_utilization: 0.9,
            ..Default::default()
        })
        .unwrap()
    }

    fn shared(class: &str) -> WeightsCacheSettings {
        WeightsCacheSettings {
            storage_class_name: None,
            shared_storage_class_name: Some(class.into()),
        }
    }

    #[test]
    fn a_model_that_loads_in_time_gets_a_volume_only_when_asked() {
        let small = plan("Qwen/Qwen2.5-7B-Instruct", "L4");
        assert!(small.startup_probe_seconds <= OPERATOR_STARTUP_SECONDS);
        let none = decide(false, &small, 1, "spec.replicas", &Default::default()).unwrap();
        assert_eq!(none, CacheDecision::default());
        let asked = decide(true, &small, 1, "spec.replicas", &Default::default()).unwrap();
        let storage = asked.cache.unwrap().storage;
        assert_eq!(storage.access_mode, Some(StorageAccessMode::ReadWriteOnce));
        assert_eq!(storage.storage_class_name, None);
        assert!(asked.warnings.is_empty());
    }

    #[test]
    fn a_model_that_cannot_load_in_time_always_gets_a_volume() {
        let big = plan("meta-llama/Llama-3.1-70B-Instruct", "H100-80GB");
        assert!(big.startup_probe_seconds > OPERATOR_STARTUP_SECONDS);
        let settings = WeightsCacheSettings {
            storage_class_name: Some("fast-rwo".into()),
            shared_storage_class_name: None,
        };
        let d = decide(false, &big, 1, "spec.replicas", &settings).unwrap();
        let storage = d.cache.unwrap().storage;
        assert_eq!(storage.access_mode, Some(StorageAccessMode::ReadWriteOnce));
        assert_eq!(storage.storage_class_name.as_deref(), Some("fast-rwo"));
        assert_eq!(d.warnings.len(), 1);
        assert!(d.warnings[0].contains("beyond the operator's fixed 2120 s startup probe"));
    }

    #[test]
    fn several_replicas_share_a_read_write_many_volume_of_the_named_class() {
        let big = plan("meta-llama/Llama-3.1-70B-Instruct", "H100-80GB");
        let d = decide(true, &big, 3, "spec.replicas", &shared("efs")).unwrap();
        let storage = d.cache.unwrap().storage;
        assert_eq!(storage.access_mode, Some(StorageAccessMode::ReadWriteMany));
        assert_eq!(storage.storage_class_name.as_deref(), Some("efs"));
    }

    #[test]
    fn a_shared_deployment_volume_without_a_shared_class_is_dropped_with_a_warning_in_plain_words()
    {
        let small = plan("Qwen/Qwen2.5-7B-Instruct", "L4");
        let settings = WeightsCacheSettings::default();
        let d = decide_own_probe(
            true,
            &small,
            2,
            "spec.replicas",
            VolumeScope::Shared,
            &settings,
        );
        assert_eq!(
            d,
            CacheDecision {
                cache: None,
                warnings: vec![
                    "cachePolicy is not applied: 2 replicas (spec.replicas) would share one weights volume, which \
                     needs ReadWriteMany, and the platform names no ReadWriteMany storage class \
                     (input.defaults.weightsCache.sharedStorageClassName); each pod downloads the weights itself"
                        .to_string()
                ],
            }
        );
    }

    #[test]
    fn several_replicas_without_a_shared_class() {
        // In time: the cache policy is dropped with a warning, never a
        // ReadWriteMany claim that stays Pending.
        let small = plan("Qwen/Qwen2.5-7B-Instruct", "L4");
        let d = decide(true, &small, 2, "spec.replicas", &Default::default()).unwrap();
        assert_eq!(d.cache, None);
        assert!(
            d.warnings[0].starts_with("cachePolicy is not applied: 2 replicas (spec.replicas)")
        );
        // Not in time: nothing can work, so it is refused with what would.
        let big = plan("meta-llama/Llama-3.1-70B-Instruct", "H100-80GB");
        let e = decide(false, &big, 2, "spec.replicas", &Default::default()).unwrap_err();
        assert!(e.contains("run one replica, set that storage class"), "{e}");
    }
}
