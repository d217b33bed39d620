//! The Gateway API Inference Extension's `InferencePool`
//! (`inference.networking.k8s.io/v1`): model-server pods a Gateway routes
//! to through an endpoint picker, which chooses the pod for each request
//! from their queue, KV-cache use and prefix cache.
//!
//! Written from the CRD in `tests/data/crds/inference.networking.k8s.io_inferencepools.yaml`
//! (gateway-api-inference-extension v1.3.0).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// Pods that serve one model, behind an endpoint picker.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InferencePool {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: InferencePoolSpec,
}

impl InferencePool {
    pub(crate) const API_VERSION: &str = "inference.networking.k8s.io/v1";
    pub(crate) const GROUP: &str = "inference.networking.k8s.io";
    pub(crate) const KIND: &str = "InferencePool";
}

/// Not derived: the default carries the right apiVersion and kind.
impl Default for InferencePool {
    fn default() -> Self {
        Self {
            api_version: Self::API_VERSION.to_owned(),
            kind: Self::KIND.to_owned(),
            metadata: ObjectMeta::default(),
            spec: InferencePoolSpec::default(),
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InferencePoolSpec {
    pub selector: PoolSelector,
    /// The model servers' ports (one per pod for a single engine).
    pub target_ports: Vec<Port>,
    pub endpoint_picker_ref: EndpointPickerRef,
}

/// Labels of the pods in the pool (a plain map: the CRD has no expressions).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PoolSelector {
    pub match_labels: BTreeMap<String, String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Port {
    pub number: i32,
}

/// The endpoint picker's Service (a Service in the pool's namespace by default).
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EndpointPickerRef {
    pub name: String,
    pub port: Option<Port>,
    /// `FailOpen` or `FailClose` (the default): what the Gateway does when
    /// the picker does not answer.
    pub failure_mode: Option<String>,
}
