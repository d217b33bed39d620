//! Gateway API's `HTTPRoute` (`gateway.networking.k8s.io/v1`): requests a
//! Gateway sends to a backend, here an InferencePool.
//!
//! Written from the standard-channel CRD in
//! `tests/data/crds/gateway.networking.k8s.io_httproutes.yaml` (Gateway API
//! v1.4.1); only the fields a composer sets are typed.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// Routes from a Gateway to backends.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HttpRoute {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: HttpRouteSpec,
}

impl HttpRoute {
    pub(crate) const API_VERSION: &str = "gateway.networking.k8s.io/v1";
    pub(crate) const KIND: &str = "HTTPRoute";
}

/// Not derived: the default carries the right apiVersion and kind.
impl Default for HttpRoute {
    fn default() -> Self {
        Self {
            api_version: Self::API_VERSION.to_owned(),
            kind: Self::KIND.to_owned(),
            metadata: ObjectMeta::default(),
            spec: HttpRouteSpec::default(),
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HttpRouteSpec {
    pub parent_refs: Vec<ParentRef>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hostnames: Vec<String>,
    pub rules: Vec<Rule>,
}

/// The Gateway the route attaches to.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ParentRef {
    pub group: Option<String>,
    pub kind: Option<String>,
    pub name: String,
    pub namespace: Option<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Rule {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<Match>,
    pub backend_refs: Vec<BackendRef>,
    pub timeouts: Option<Timeouts>,
}

#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Match {
    pub path: Option<PathMatch>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HeaderMatch>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PathMatch {
    /// `Exact`, `PathPrefix` or `RegularExpression`.
    #[serde(rename = "type")]
    pub type_: String,
    pub value: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HeaderMatch {
    /// `Exact` or `RegularExpression`.
    #[serde(rename = "type")]
    pub type_: String,
    pub name: String,
    pub value: String,
}

#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BackendRef {
    pub group: Option<String>,
    pub kind: Option<String>,
    pub name: String,
}

/// Gateway API durations such as `300s`.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Timeouts {
    pub request: Option<String>,
}
