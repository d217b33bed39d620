//! How a model server's pods are replaced: rolled, a surge pod starting
//! beside the old one, or recreated, the old one stopped first, when a
//! surge pod could not run. The Deployment and the operator's VLLMRuntime
//! both follow it.

use crate::compose::resources::weights_volume::WeightsCache;
use crate::manifests::vllm_runtime::StorageAccessMode;
use crate::sizing::Plan;

/// Whether the pods of `plan` (with the weights volume `cache`) must be
/// recreated: a surge pod could not schedule beside one that holds every
/// GPU of its node, nor attach a ReadWriteOnce volume on another node.
pub(crate) fn recreate(plan: &Plan, cache: Option<&WeightsCache>) -> bool {
    holds_whole_nodes(plan)
        || cache.is_some_and(|c| c.storage.access_mode == Some(StorageAccessMode::ReadWriteOnce))
}

/// The plan's reason for recreating pods that hold whole nodes. The weights
/// volume's reason says when it is the cause.
pub(crate) fn whole_node_reason(plan: &Plan) -> Option<String> {
    holds_whole_nodes(plan).then(|| {
        format!(
            "Update strategy: Recreate, since a surge pod could not schedule beside one that holds all {} GPUs \
             of its node.",
            plan.gpu.per_node
        )
    })
}

fn holds_whole_nodes(plan: &Plan) -> bool {
    plan.gpu_count >= plan.gpu.per_node
}
