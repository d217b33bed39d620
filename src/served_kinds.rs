//! The custom resource kinds a composition needs the cluster to serve.
//!
//! Crossplane applies a composed object of a kind the API server does not
//! serve, fails, and keeps the object in the XR's resource references all
//! the same; from then on every reconcile waits two minutes for a watch on
//! that kind and ends in "Timeout: failed waiting for
//! *unstructured.Unstructured Informer to sync" (crossplane/crossplane#6397
//! and #7398), until the kind is installed. So before the first object of a
//! custom kind is composed, the function asks Crossplane for the kind's
//! CustomResourceDefinition, and refuses, before anything is applied, when
//! there is none, it does not serve the version composed, or its schema
//! lacks a field composed (an older release: the API server would drop the
//! field without a word), saying what to install. Once an object of the
//! kind is observed, nothing is asked.
//!
//! Not the kind's schema (`requirements.schemas`): Crossplane v2.2 caches
//! the API server's OpenAPI paths until the next CRD event, and a lookup
//! racing a CRD's installation keeps the kind missing for good.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::compose::composition::Refusal;
use crate::manifests::{
    http_route::HttpRoute, inference_pool::InferencePool, keda::ScaledObject,
    leader_worker_set::LeaderWorkerSet, pod_monitor::PodMonitor, provider_kubernetes::Object,
    vllm_runtime::VLLMRuntime,
};
use crate::protocol::resource::field_to_json;
use crate::protocol::server::{ResourceSelector, RunFunctionRequest, resource_selector::Match};
use crate::request::{Required, at, required_object, str_at};

/// The kind of what the function asks for here; `render` answers it only
/// when given CRDs.
pub(crate) const CRD_KIND: &str = "CustomResourceDefinition";

/// A custom kind the function composes: what it is for, what serves it and
/// what works without it.
struct CustomKind {
    crd: &'static str,
    api_version: &'static str,
    kind: &'static str,
    composed_for: &'static str,
    install: &'static str,
    instead: &'static str,
}

const CUSTOM_KINDS: &[CustomKind] = &[
    CustomKind {
        crd: "vllmruntimes.production-stack.vllm.ai",
        api_version: VLLMRuntime::API_VERSION,
        kind: VLLMRuntime::KIND,
        composed_for: "the vllm-runtime runtime (the default)",
        install: "the vLLM production-stack operator with its VLLMRuntime CRD (production-stack at commit 217fadb1 \
                  or later)",
        instead: "set spec.runtime to deployment, which needs only a GPU device plugin",
    },
    CustomKind {
        crd: "leaderworkersets.leaderworkerset.x-k8s.io",
        api_version: LeaderWorkerSet::API_VERSION,
        kind: LeaderWorkerSet::KIND,
        composed_for: "the leader-worker-set runtime",
        install: "LeaderWorkerSet (kubernetes-sigs/lws v0.9.0 or later)",
        instead: "set spec.runtime to deployment or vllm-runtime for a model that one node holds",
    },
    CustomKind {
        crd: "scaledobjects.keda.sh",
        api_version: ScaledObject::API_VERSION,
        kind: ScaledObject::KIND,
        composed_for: "autoscaling with the platform's autoscaler keda (input.defaults.autoscaler)",
        install: "KEDA",
        instead: "set a fixed spec.replicas, or have the platform name hpa as its autoscaler",
    },
    CustomKind {
        crd: "podmonitors.monitoring.coreos.com",
        api_version: PodMonitor::API_VERSION,
        kind: PodMonitor::KIND,
        composed_for: "the model server's metrics (input.defaults.podMonitor)",
        install: "the Prometheus Operator's CRDs",
        instead: "have the platform set input.defaults.podMonitor to false",
    },
    CustomKind {
        crd: "inferencepools.inference.networking.k8s.io",
        api_version: InferencePool::API_VERSION,
        kind: InferencePool::KIND,
        composed_for: "inference-aware routing (spec.gateway or input.defaults.inferenceGateway)",
        install: "the Gateway API Inference Extension's CRDs (v1.0 or later)",
        instead: "route without it: leave out spec.gateway, or have the platform leave out \
                  input.defaults.inferenceGateway",
    },
    CustomKind {
        crd: "httproutes.gateway.networking.k8s.io",
        api_version: HttpRoute::API_VERSION,
        kind: HttpRoute::KIND,
        composed_for: "inference-aware routing (spec.gateway or input.defaults.inferenceGateway)",
        install: "the Gateway API's standard CRDs (v1.0 or later)",
        instead: "route without it: leave out spec.gateway, or have the platform leave out \
                  input.defaults.inferenceGateway",
    },
    CustomKind {
        crd: "objects.kubernetes.m.crossplane.io",
        api_version: Object::<Value>::API_VERSION,
        kind: Object::<Value>::KIND,
        composed_for: "serving in another cluster (spec.providerConfigName)",
        install: "provider-kubernetes v1.2.0 or later (a dependency of the Configuration: kubectl get providers)",
        instead: "leave out spec.providerConfigName to serve in this cluster",
    },
];

/// The CustomResourceDefinitions to ask Crossplane for, given the objects
/// to compose (`composed`): that of each custom kind of which no object is
/// observed yet. A refusal names each kind the cluster does not serve, what
/// it is composed for, what to install and what works instead.
pub(crate) fn crds_to_require<'a>(
    req: &RunFunctionRequest,
    composed: impl IntoIterator<Item = &'a Map<String, Value>>,
) -> Result<BTreeMap<String, ResourceSelector>, Refusal> {
    let composed: Vec<&Map<String, Value>> = composed.into_iter().collect();
    let wanted: Vec<(&CustomKind, Vec<&Map<String, Value>>)> = CUSTOM_KINDS
        .iter()
        .map(|kind| {
            let objects = composed
                .iter()
                .copied()
                .filter(|o| {
                    str_at(o, &["apiVersion"]) == kind.api_version
                        && str_at(o, &["kind"]) == kind.kind
                })
                .collect();
            (kind, objects)
        })
        .filter(|(_, objects): &(_, Vec<_>)| !objects.is_empty())
        .collect();
    if wanted.is_empty() {
        return Ok(BTreeMap::new());
    }
    let observed = observed_kinds(req);
    let mut asked = BTreeMap::new();
    let mut problems = Vec::new();
    for (kind, objects) in wanted {
        if observed.contains(&(kind.api_version.to_string(), kind.kind.to_string())) {
            continue;
        }
        let key = format!("crd/{}", kind.crd);
        let answer = required_object(&req.required_resources, &key, kind.crd).map_err(|e| {
            Refusal::new(
                "UnreadableState",
                format!("CustomResourceDefinition {}: {e}", kind.crd),
            )
        })?;
        match answer {
            Required::NotLookedUp => {}
            Required::Missing => problems.push(not_served(
                kind,
                "",
                &format!("it has no CustomResourceDefinition {}", kind.crd),
            )),
            Required::Found(crd) => match served_schema(kind, &crd) {
                Err(why) => problems.push(not_served(kind, "", &why)),
                Ok(schema) => {
                    if let Some(why) = undeclared_fields(kind, schema, &objects) {
                        problems.push(not_served(kind, " as composed", &why));
                    }
                }
            },
        }
        asked.insert(
            key,
            ResourceSelector {
                api_version: "apiextensions.k8s.io/v1".into(),
                kind: CRD_KIND.into(),
                namespace: None,
                r#match: Some(Match::MatchName(kind.crd.into())),
            },
        );
    }
    if problems.is_empty() {
        Ok(asked)
    } else {
        Err(Refusal::new("KindNotServed", problems.join("; also ")))
    }
}

/// That the cluster does not serve `kind` (`as_composed` qualifies it),
/// why, and what to do about it.
fn not_served(kind: &CustomKind, as_composed: &str, why: &str) -> String {
    format!(
        "this cluster does not serve {} ({}){as_composed}, which {} needs: {why}; install {}, or {}",
        kind.kind, kind.api_version, kind.composed_for, kind.install, kind.instead
    )
}

/// The schema of the version of `kind` composed, or why `crd` does not
/// serve that version.
fn served_schema<'a>(kind: &CustomKind, crd: &'a Map<String, Value>) -> Result<&'a Value, String> {
    let version = kind.api_version.rsplit('/').next().unwrap_or_default();
    let served: Vec<&Map<String, Value>> = at(crd, &["spec", "versions"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .collect();
    if let Some(v) = served.iter().find(|v| str_at(v, &["name"]) == version) {
        // A CRD without a schema keeps every field.
        return Ok(at(v, &["schema", "openAPIV3Schema"]).unwrap_or(&Value::Null));
    }
    let serves = if served.is_empty() {
        "no version".to_string()
    } else {
        served
            .iter()
            .map(|v| str_at(v, &["name"]))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(format!(
        "its CustomResourceDefinition {} serves {serves}",
        kind.crd
    ))
}

/// The fields of `objects` that `schema` (of the version composed) does not
/// declare, which the API server would drop without a word, if any.
fn undeclared_fields(
    kind: &CustomKind,
    schema: &Value,
    objects: &[&Map<String, Value>],
) -> Option<String> {
    let mut fields = BTreeSet::new();
    for object in objects {
        undeclared_in(object, schema, "", &mut fields);
    }
    if fields.is_empty() {
        return None;
    }
    Some(format!(
        "its CustomResourceDefinition {} is an older release that declares no {}, and the API server would drop \
         them without a word",
        kind.crd,
        fields.into_iter().collect::<Vec<_>>().join(" or "),
    ))
}

/// The schema `schema` gives the field `key` of an object, if it keeps it.
fn declared<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    if let Some(property) = schema.get("properties").and_then(|p| p.get(key)) {
        return Some(property);
    }
    match schema.get("additionalProperties") {
        Some(Value::Bool(true)) => Some(&Value::Null),
        Some(additional @ Value::Object(_)) => Some(additional),
        _ => None,
    }
}

/// Adds to `fields` the paths under `path` of `value` that `schema` does
/// not declare, as the API server prunes a structural schema's unknown
/// fields.
fn undeclared(value: &Value, schema: &Value, path: &str, fields: &mut BTreeSet<String>) {
    if keeps_every_field(schema) {
        return;
    }
    match value {
        Value::Object(object) => undeclared_in(object, schema, path, fields),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    undeclared(item, item_schema, &format!("{path}[]"), fields);
                }
            }
        }
        _ => {}
    }
}

/// Whether the API server keeps whatever `schema`'s value holds: no schema,
/// or unknown fields preserved.
fn keeps_every_field(schema: &Value) -> bool {
    schema.is_null()
        || schema
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            == Some(true)
}

/// [`undeclared`] for an object; `path` is empty at the root.
fn undeclared_in(
    object: &Map<String, Value>,
    schema: &Value,
    path: &str,
    fields: &mut BTreeSet<String>,
) {
    if keeps_every_field(schema) {
        return;
    }
    // The API server keeps the apiVersion, kind and metadata of the root
    // and of an embedded resource itself.
    let resource = path.is_empty()
        || schema
            .get("x-kubernetes-embedded-resource")
            .and_then(Value::as_bool)
            == Some(true);
    for (key, value) in object {
        if resource && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        let field = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        match declared(schema, key) {
            Some(field_schema) => undeclared(value, field_schema, &field, fields),
            None => {
                fields.insert(field);
            }
        }
    }
}

/// The apiVersion and kind of every observed composed resource.
fn observed_kinds(req: &RunFunctionRequest) -> BTreeSet<(String, String)> {
    let field = |o: &crate::protocol::view::Struct, name: &str| {
        o.fields
            .get(name)
            .and_then(|bytes| field_to_json(name, bytes).ok())
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    };
    req.observed
        .iter()
        .flat_map(|o| o.resources.values())
        .filter_map(|r| r.resource.as_ref())
        .map(|o| (field(o, "apiVersion"), field(o, "kind")))
        .collect()
}
