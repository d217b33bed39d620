//! A PodDisruptionBudget for the pods of something with more than one
//! replica (a model server, an AgentPool's agents): drains and node upgrades
//! take them down one at a time, so the others keep serving.

use std::collections::BTreeMap;

use crate::compose::composition::Manifest;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// At most one of the selected pods voluntarily disrupted at a time.
pub(crate) fn disruption_budget(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    selector: BTreeMap<String, String>,
) -> crate::compose::composition::Manifest {
    let pdb = PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some(labels),
            ..Default::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(1)),
            selector: Some(LabelSelector {
                match_labels: Some(selector),
                match_expressions: None,
            }),
            ..Default::default()
        }),
        status: None,
    };
    Manifest::of(pdb)
}
