//! Values that many responses carry alike, encoded once.
//!
//! XRs sized alike report the same plan: its numbers and a dozen sentences
//! of reasons are most of an XR's status, and writing them as a `Struct`
//! was a sixth of a composing call. They also run the same model server:
//! a VLLMRuntime's model, vLLM options and pod follow from the plan and
//! the platform's settings, and writing them was another sixth. A field
//! serialized through [`option`] or [`value`] is written as itself by every
//! serializer but ours; the `Struct` writer
//! ([`super::struct_serializer`]) looks for an equal value among those it
//! wrote last on this thread and copies that value's bytes instead.
//!
//! Equal must mean "encodes to the same bytes": the value's `PartialEq`
//! has to tell apart what serializes differently (`-0.0` from `0.0`).

use std::any::Any;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use serde::{Serialize, Serializer};

use super::struct_serializer;

/// The name our writer recognizes; any other serializer sees an ordinary
/// newtype and writes the value.
pub(super) const NEWTYPE: &str = "$function_inference::encode_once";

/// Values kept per thread, with their bytes. A Model's card lists a plan
/// per offered GPU type, and its calls ask for them in turn: each found
/// after comparing with the others (a field or two each), where a plan
/// not kept costs its encoding and a copy.
const KEPT: usize = 64;

/// A value written before, and its bytes.
struct Written {
    value: Box<dyn Any>,
    bytes: Arc<[u8]>,
}

thread_local! {
    /// Most recently used first.
    static WRITTEN: RefCell<VecDeque<Written>> = const { RefCell::new(VecDeque::new()) };
}

/// `serialize_with` for an optional value many responses share.
pub fn option<T, S>(value: &Option<T>, serializer: S) -> Result<S::Ok, S::Error>
where
    T: Serialize + PartialEq + Clone + 'static,
    S: Serializer,
{
    match value {
        Some(v) => self::value(v, serializer),
        None => serializer.serialize_none(),
    }
}

/// `serialize_with` for a value many responses share.
pub fn value<T, S>(value: &T, serializer: S) -> Result<S::Ok, S::Error>
where
    T: Serialize + PartialEq + Clone + 'static,
    S: Serializer,
{
    serializer.serialize_newtype_struct(NEWTYPE, &Once(value))
}

/// What our writer asks for inside the newtype: the bytes, as bytes. A
/// serializer that is not ours is human-readable and gets the value.
struct Once<'a, T>(&'a T);

impl<T: Serialize + PartialEq + Clone + 'static> Serialize for Once<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            return self.0.serialize(serializer);
        }
        let bytes = encoded(self.0).map_err(serde::ser::Error::custom)?;
        serializer.serialize_bytes(&bytes)
    }
}

/// The `Value` bytes of `value`: those of an equal value written before on
/// this thread, or written now and kept.
fn encoded<T: Serialize + PartialEq + Clone + 'static>(
    value: &T,
) -> Result<Arc<[u8]>, struct_serializer::Error> {
    let found = WRITTEN.with_borrow_mut(|written| {
        let i = written
            .iter()
            .position(|w| w.value.downcast_ref::<T>() == Some(value))?;
        let hit = written.remove(i)?;
        let bytes = hit.bytes.clone();
        written.push_front(hit);
        Some(bytes)
    });
    if let Some(bytes) = found {
        return Ok(bytes);
    }
    let bytes: Arc<[u8]> = struct_serializer::to_value_bytes(value)?.into();
    WRITTEN.with_borrow_mut(|written| {
        written.truncate(KEPT - 1);
        written.push_front(Written {
            value: Box::new(value.clone()),
            bytes: bytes.clone(),
        });
    });
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::protocol::struct_json::json_to_struct;
    use crate::xr::common::{EstimateStatus, PlanStatus};
    use crate::xr::llm_inference::LlmInferenceStatus;

    /// What prost writes for the same value after serde_json.
    fn through_prost<T: Serialize>(value: &T) -> Vec<u8> {
        let json = serde_json::to_value(value).unwrap();
        json_to_struct(json.as_object().unwrap()).encode_to_vec()
    }

    fn status(gpu_type: &str, weights_gib: f64, reasons: &[&str]) -> LlmInferenceStatus {
        let mut plan = PlanStatus {
            gpu_type: gpu_type.to_string().into(),
            gpu_count: 2,
            dtype: "bfloat16".into(),
            estimate: EstimateStatus {
                weights_gib,
                ..Default::default()
            },
            ..Default::default()
        };
        plan.reasons.extend(reasons.iter().map(|r| r.repeat(40)));
        LlmInferenceStatus {
            model: Some("m".into()),
            plan: Some(plan),
            ready: Some("False".into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_value_written_again_is_what_prost_writes_each_time() {
        let mut statuses = vec![
            status("L4", 1.5, &["a", "b"]),
            status("L4", 1.5, &["a", "b"]),
            // Equal by `==` on f64, but printed differently.
            status("L4", 0.0, &["a"]),
            status("L4", -0.0, &["a"]),
            status("L4", 0.0, &["a"]),
            status("L4", 1.5, &["a", "c"]),
            LlmInferenceStatus::default(),
        ];
        // More plans than a thread keeps, then the first again.
        statuses.extend((0..KEPT + 4).map(|i| status(&format!("gpu-{i}"), 1.5, &["a"])));
        statuses.push(status("L4", 1.5, &["a", "b"]));
        for (i, s) in statuses.iter().enumerate() {
            let written = struct_serializer::to_struct_bytes(s).unwrap();
            assert_eq!(written, through_prost(s), "status {i}");
        }
    }

    #[test]
    fn runtimes_alike_and_not_are_what_prost_writes_each_time() {
        use crate::manifests::vllm_runtime::{EnvVar, VLLMRuntime, VLLMRuntimeSpec};
        let runtime = |name: &str, model: &str, tp: i32, replicas: i32| {
            let mut spec = VLLMRuntimeSpec::default();
            spec.model.model_url = model.into();
            spec.vllm_config.tensor_parallel_size = Some(tp);
            spec.vllm_config.env = (tp > 1).then(|| {
                vec![EnvVar {
                    name: "VLLM_WORKER_MULTIPROC_METHOD".into(),
                    value: "spawn".into(),
                }]
            });
            spec.deployment_config.replicas = Some(replicas);
            spec.deployment_config.image.name = "x".repeat(150);
            VLLMRuntime::new(name, spec)
        };
        // Each part alike in some runtimes and not in others, in turn.
        let runtimes = [
            runtime("a", "m", 1, 1),
            runtime("b", "m", 1, 1),
            runtime("a", "n", 1, 1),
            runtime("a", "m", 2, 1),
            runtime("a", "m", 1, 2),
            runtime("c", "n", 2, 2),
            runtime("a", "m", 1, 1),
        ];
        for (i, r) in runtimes.iter().enumerate() {
            let written = struct_serializer::to_struct_bytes(r).unwrap();
            assert_eq!(written, through_prost(r), "runtime {i}");
        }
    }

    #[test]
    fn other_serializers_write_the_value_itself() {
        let s = status("L4", -0.0, &["a"]);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["plan"]["gpuType"], "L4");
        assert_eq!(json["plan"]["estimate"]["weightsGiB"].to_string(), "-0.0");
        assert_eq!(json["plan"]["reasons"][0], "a".repeat(40));
        let yaml = serde_yaml::to_string(&s).unwrap();
        assert!(yaml.contains("gpuType: L4"), "{yaml}");
    }
}
