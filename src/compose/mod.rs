//! Composers: one per XR kind, each a pure function from the observed XR (and
//! the resources Crossplane fetched for it) to the resources it wants, the XR
//! status it reports and the conditions and results that explain it.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::input::Settings;
use crate::protocol::raw_message::RawResource;
use crate::protocol::wire::{self, Ready};

/// The observed composite resource, with the fields composers need at hand.
#[derive(Debug)]
pub struct Composite<'a> {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
    source: Source<'a>,
}

/// Where the rest of the XR is read from.
#[derive(Debug)]
enum Source<'a> {
    /// The bytes of its `Struct`, read field by field as composers ask.
    Bytes(&'a [u8]),
    /// The whole object as JSON, less `metadata.managedFields`.
    Object(Map<String, Value>),
}

/// The fields that identify an XR, read without the rest.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head {
    api_version: Option<String>,
    kind: Option<String>,
    metadata: Option<HeadMetadata>,
}

#[derive(serde::Deserialize)]
struct HeadMetadata {
    name: Option<String>,
    namespace: Option<String>,
}

impl<'a> Composite<'a> {
    /// Reads the XR from the bytes of its `Struct`: only its identity now,
    /// the rest when a composer asks. Errors say what is missing.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Self, String> {
        use crate::protocol::{struct_deserializer, struct_json};
        match struct_deserializer::from_struct_bytes::<Head>(bytes) {
            Ok(head) => {
                let metadata = head.metadata.unwrap_or(HeadMetadata {
                    name: None,
                    namespace: None,
                });
                Self::new(
                    head.api_version.unwrap_or_default(),
                    head.kind.unwrap_or_default(),
                    metadata.name.unwrap_or_default(),
                    metadata.namespace.unwrap_or_default(),
                    Source::Bytes(bytes),
                )
            }
            // Unusual bytes or types: JSON decides what they mean.
            Err(_) => {
                let object = struct_json::decode_object(bytes)
                    .map_err(|_| "cannot decode the observed composite resource".to_string())?;
                Composite::from_object(object)
            }
        }
    }

    /// Reads the XR's identity from a whole object. Errors say what is missing.
    pub fn from_object(object: Map<String, Value>) -> Result<Self, String> {
        Self::new(
            str_at(&object, &["apiVersion"]).to_string(),
            str_at(&object, &["kind"]).to_string(),
            str_at(&object, &["metadata", "name"]).to_string(),
            str_at(&object, &["metadata", "namespace"]).to_string(),
            Source::Object(object),
        )
    }

    fn new(
        api_version: String,
        kind: String,
        name: String,
        namespace: String,
        source: Source<'a>,
    ) -> Result<Self, String> {
        if kind.is_empty() {
            return Err("the observed composite resource has no kind".into());
        }
        Ok(Self {
            api_version,
            kind,
            name,
            // kubectl puts an XR applied without a namespace into "default";
            // a file given to render may simply omit it.
            namespace: if namespace.is_empty() {
                "default".into()
            } else {
                namespace
            },
            source,
        })
    }

    /// The spec read as `T`; an error names the failing field path under `spec`.
    pub fn spec<T: DeserializeOwned + schemars::JsonSchema + 'static>(&self) -> Result<T, String> {
        let spec = match &self.source {
            Source::Bytes(bytes) => {
                use crate::protocol::struct_deserializer::field_from_struct_bytes;
                if let Ok(Some(spec)) = field_from_struct_bytes::<T>(bytes, "spec") {
                    return Ok(spec);
                }
                // Absent, or not what T reads: the JSON path gives the answer
                // and the message.
                crate::protocol::struct_json::decode_object(bytes)
                    .ok()
                    .and_then(|mut o| o.remove("spec"))
            }
            Source::Object(object) => object.get("spec").cloned(),
        };
        crate::de::from_object(spec.unwrap_or_else(|| Value::Object(Map::new())), "spec")
    }

    /// The observed status, for transition checks.
    pub fn status(&self) -> Option<Map<String, Value>> {
        let status = match &self.source {
            Source::Bytes(bytes) => {
                use crate::protocol::struct_deserializer::field_from_struct_bytes;
                match field_from_struct_bytes::<Value>(bytes, "status") {
                    Ok(status) => status,
                    Err(_) => crate::protocol::struct_json::decode_object(bytes)
                        .ok()
                        .and_then(|mut o| o.remove("status")),
                }
            }
            Source::Object(object) => object.get("status").cloned(),
        };
        match status {
            Some(Value::Object(m)) => Some(m),
            _ => None,
        }
    }

    /// The strings of the observed status list at `path` (for example
    /// `["plan", "warnings"]`), to tell what the XR already reports.
    pub fn status_strings(&self, path: &[&str]) -> Vec<String> {
        let status = self.status().map(Value::Object);
        let mut v = status.as_ref();
        for p in path {
            v = v.and_then(|v| v.get(*p));
        }
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The string at `path`, or "" when absent or not a string.
pub fn str_at<'a>(object: &'a Map<String, Value>, path: &[&str]) -> &'a str {
    let Some((first, rest)) = path.split_first() else {
        return "";
    };
    let mut v = object.get(*first);
    for p in rest {
        v = v.and_then(|v| v.get(*p));
    }
    v.and_then(Value::as_str).unwrap_or_default()
}

/// Observed composed resources, decoded only when a composer asks for one.
pub struct Observed<'a> {
    resources: &'a BTreeMap<String, RawResource>,
}

impl<'a> Observed<'a> {
    pub fn new(resources: &'a BTreeMap<String, RawResource>) -> Self {
        Self { resources }
    }

    /// The observed object composed under `name`, if it exists and decodes,
    /// less `metadata.managedFields`.
    pub fn get(&self, name: &str) -> Option<Map<String, Value>> {
        let raw = self.resources.get(name)?;
        // The fast path reads the bytes straight into JSON; anything unusual
        // goes through prost, which decides what it means.
        if let Some(object) = raw
            .struct_bytes()
            .and_then(|b| crate::protocol::struct_json::decode_object(b).ok())
        {
            return Some(object);
        }
        let full = raw.decode_full().ok()?;
        full.resource.as_ref().map(|s| {
            let mut object = crate::protocol::struct_json::struct_to_json(s);
            drop_managed_fields(&mut object);
            object
        })
    }

    /// The observed resource composed under `name`, as sent: for passing
    /// through one that [`Observed::get`] cannot decode.
    pub fn raw(&self, name: &str) -> Option<&RawResource> {
        self.resources.get(name)
    }

    /// Whether the object composed under `name` is ready (see
    /// [`readiness::observed_readiness`]), reading only its kind and status.
    pub fn readiness(&self, name: &str) -> crate::protocol::wire::Ready {
        let fast = self.resources.get(name).and_then(|raw| {
            let bytes = raw.struct_bytes()?;
            crate::protocol::struct_json::decode_fields(bytes, &["kind", "status"]).ok()
        });
        match fast {
            Some(object) => readiness::observed_readiness(Some(&object)),
            // Not observed, or unusual bytes: the full decode decides.
            None => readiness::observed_readiness(self.get(name).as_ref()),
        }
    }
}

/// Removes `metadata.managedFields`, as `convert::decode_object` leaves it out:
/// no composer reads it, and it is often half of an object.
pub fn drop_managed_fields(object: &mut Map<String, Value>) {
    if let Some(Value::Object(md)) = object.get_mut("metadata") {
        md.remove("managedFields");
    }
}

/// Everything a composer may read.
pub struct ComposeRequest<'a> {
    pub xr: &'a Composite<'a>,
    pub observed: Observed<'a>,
    pub required: &'a BTreeMap<String, wire::Resources>,
    pub settings: &'a Settings,
}

/// One composed resource and whether it is ready.
#[derive(Clone, Debug, PartialEq)]
pub struct Composed {
    pub manifest: Value,
    pub ready: Ready,
}

/// What a composer returns.
#[derive(Debug, Default)]
pub struct Composition {
    /// Composed resources by composition-resource-name.
    pub resources: BTreeMap<String, Composed>,
    /// Fields merged into the XR's desired status.
    pub status: Map<String, Value>,
    pub conditions: Vec<wire::Condition>,
    pub results: Vec<wire::Result>,
    pub requirements: BTreeMap<String, wire::ResourceSelector>,
    /// Names of resources composed on an earlier call that must be kept as
    /// they were observed (for example while a referenced Model is missing):
    /// leaving them out of the desired state would make Crossplane delete them.
    pub keep_observed: Vec<String>,
}

impl Composition {
    /// A WARNING result for each of `warnings` the XR's observed status does
    /// not show yet (`reported`): results become Kubernetes events, so they
    /// mark transitions while the steady state stays in the status.
    pub fn warn_on_transition(&mut self, reason: &str, warnings: &[String], reported: &[String]) {
        for w in warnings {
            if !reported.contains(w) {
                self.results
                    .push(crate::outcome::warning(reason, w.clone()));
            }
        }
    }
}

/// A composer refused the XR: the message becomes a FATAL result.
#[derive(Debug, PartialEq)]
pub struct Refusal {
    pub reason: &'static str,
    pub message: String,
}

impl Refusal {
    pub fn new(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
        }
    }
}

/// A composer: one per XR kind.
pub type Composer = fn(&ComposeRequest) -> Result<Composition, Refusal>;

/// The composer for an XR kind. Dispatch is on the kind alone, not the API
/// group, so XRs of other groups (dot-inference's) compose unchanged.
pub fn composer_for(kind: &str) -> Option<Composer> {
    let composers: &[(&str, Composer)] = &[
        (crate::xr::llm_inference::KIND, llm_inference::compose),
        (crate::xr::model::KIND, model::compose),
        (crate::xr::agent_pool::KIND, agent_pool::compose),
    ];
    composers.iter().find(|(k, _)| *k == kind).map(|(_, c)| *c)
}

/// The kinds this function composes, for error messages.
pub const KINDS: &[&str] = &["LLMInference", "Model", "AgentPool"];

/// An observed object turned back into a desired one: identity, labels,
/// annotations and everything but status, without the fields the API server
/// owns. Used to keep resources alive while the XR cannot be composed anew.
pub fn desired_from_observed(mut observed: Map<String, Value>) -> Value {
    observed.remove("status");
    if let Some(Value::Object(md)) = observed.get_mut("metadata") {
        drop_server_owned(md);
    }
    Value::Object(observed)
}

/// [`desired_from_observed`] for an observed resource too deep to decode:
/// only its metadata is read; every other field but status is passed
/// through as its bytes, so nothing Crossplane would delete is dropped.
/// The error says what could not be read.
pub fn desired_from_observed_raw(raw: &RawResource) -> Result<RawResource, String> {
    use crate::protocol::struct_json::{
        decode_struct, encode_raw_entry, raw_entries, raw_struct_value,
    };
    let unreadable = "its bytes are not a protobuf Struct";
    let (object, _) = raw.parts().ok_or(unreadable)?;
    let entries = raw_entries(&object).map_err(|_| unreadable)?;
    let mut body = Vec::with_capacity(object.len());
    for (key, value) in entries {
        match key {
            "status" => {}
            "metadata" => {
                let mut md = raw_struct_value(value)
                    .ok()
                    .flatten()
                    .and_then(|b| decode_struct(&b).ok())
                    .ok_or("its metadata cannot be decoded (nested too deep, or not an object)")?;
                drop_server_owned(&mut md);
                crate::protocol::struct_serializer::encode_entry(
                    key,
                    &Value::Object(md),
                    &mut body,
                )
                .expect("JSON always encodes");
            }
            _ => encode_raw_entry(key, value, &mut body),
        }
    }
    let mut bytes = Vec::with_capacity(body.len() + 8);
    prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut bytes);
    prost::encoding::encode_varint(body.len() as u64, &mut bytes);
    bytes.extend_from_slice(&body);
    Ok(RawResource::from(bytes::Bytes::from(bytes)))
}

/// Removes the metadata fields the API server owns.
fn drop_server_owned(md: &mut Map<String, Value>) {
    for server_owned in [
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "managedFields",
        "ownerReferences",
        "finalizers",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generateName",
        "selfLink",
    ] {
        md.remove(server_owned);
    }
}

pub mod agent_config;
pub mod agent_deployment;
pub mod agent_pool;
pub mod agent_service;
pub mod autoscaler;
pub mod config_map;
pub mod disruption_budget;
pub mod ingress;
pub mod kube;
pub mod llm_inference;
pub mod model;
pub mod model_config;
pub mod model_facts;
pub mod model_ref;
pub mod names;
pub mod placement;
pub mod readiness;
pub mod validate;
pub mod vllm_runtime;
pub mod weights_cache;
