//! How the replicas of a workload spread over nodes, as a preference.
//! Kubernetes' own default spreading allows three more pods on one node
//! than on another, and a scheduler tuned to pack GPU nodes puts replicas
//! kept for availability side by side, where one node's failure takes them
//! all.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Each node as even as it can be among the pods `selector` selects, as a
/// preference (`ScheduleAnyway`): a pod that cannot be spread still
/// schedules. It replaces the scheduler's default constraints, whose zone
/// one goes too: a zone constraint of the pod's own would make the
/// scheduler's PodTopologySpread scoring ignore every node without a zone
/// label (`requireAllTopologies`), so on a cluster without zones nothing
/// would spread at all.
pub(crate) fn across_nodes(selector: &BTreeMap<String, String>) -> Vec<TopologySpreadConstraint> {
    vec![TopologySpreadConstraint {
        max_skew: 1,
        topology_key: "kubernetes.io/hostname".to_string(),
        when_unsatisfiable: "ScheduleAnyway".to_string(),
        label_selector: Some(LabelSelector {
            match_labels: Some(selector.clone()),
            match_expressions: None,
        }),
        ..Default::default()
    }]
}
