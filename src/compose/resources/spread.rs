//! How the replicas of a workload spread: over nodes and zones, as a
//! preference. Kubernetes' own default spreading allows three more pods on
//! one node than on another, and a scheduler tuned to pack GPU nodes puts
//! replicas kept for availability side by side, where one node's failure
//! takes them all.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Each node and each zone as even as it can be among the pods `selector`
/// selects, as a preference (`ScheduleAnyway`): a pod that cannot be spread
/// still schedules. Constraints of a pod's own replace the scheduler's
/// defaults, so the zone is named too.
pub(crate) fn across_nodes_and_zones(
    selector: &BTreeMap<String, String>,
) -> Vec<TopologySpreadConstraint> {
    ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]
        .into_iter()
        .map(|key| TopologySpreadConstraint {
            max_skew: 1,
            topology_key: key.to_string(),
            when_unsatisfiable: "ScheduleAnyway".to_string(),
            label_selector: Some(LabelSelector {
                match_labels: Some(selector.clone()),
                match_expressions: None,
            }),
            ..Default::default()
        })
        .collect()
}
