//! Composers: one per XR kind, each a pure function from the observed XR (and
//! the resources Crossplane fetched for it) to the resources it wants, the XR
//! status it reports and the conditions and results that explain it.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::input::Settings;
use crate::proto::wire::{self, Ready};
use crate::raw_message::RawResource;

/// The observed composite resource, with the fields composers need at hand.
#[derive(Debug)]
pub struct Composite {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
    /// The whole object as Crossplane sent it, less `metadata.managedFields`.
    pub object: Map<String, Value>,
}

impl Composite {
    /// Reads the XR's identity. Errors say what is missing.
    pub fn from_object(object: Map<String, Value>) -> Result<Self, String> {
        let kind = str_at(&object, &["kind"]).to_string();
        if kind.is_empty() {
            return Err("the observed composite resource has no kind".into());
        }
        Ok(Self {
            api_version: str_at(&object, &["apiVersion"]).to_string(),
            name: str_at(&object, &["metadata", "name"]).to_string(),
            // kubectl puts an XR applied without a namespace into "default";
            // a file given to render may simply omit it.
            namespace: Some(str_at(&object, &["metadata", "namespace"]))
                .filter(|ns| !ns.is_empty())
                .unwrap_or("default")
                .to_string(),
            kind,
            object,
        })
    }

    /// The spec read as `T`; an error names the failing field path under `spec`.
    pub fn spec<T: DeserializeOwned + schemars::JsonSchema + 'static>(&self) -> Result<T, String> {
        let spec = self
            .object
            .get("spec")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        crate::de::from_object(spec, "spec")
    }

    /// A value from the observed status, for transition checks.
    pub fn status(&self) -> Option<&Map<String, Value>> {
        self.object.get("status").and_then(Value::as_object)
    }

    /// The strings of the observed status list at `path` (for example
    /// `["plan", "warnings"]`), to tell what the XR already reports.
    pub fn status_strings(&self, path: &[&str]) -> Vec<&str> {
        let mut v = self.object.get("status");
        for p in path {
            v = v.and_then(|v| v.get(*p));
        }
        v.and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// The observed status condition of `type_`, if any.
    pub fn condition(&self, type_: &str) -> Option<&Map<String, Value>> {
        self.status()?
            .get("conditions")?
            .as_array()?
            .iter()
            .filter_map(Value::as_object)
            .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
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
/// It remembers which ones were asked for: the memo (`crate::memo`) may
/// reuse a composer's output only while those resources are unchanged.
pub struct Observed<'a> {
    resources: &'a BTreeMap<String, RawResource>,
    reads: RefCell<Vec<String>>,
}

impl<'a> Observed<'a> {
    pub fn new(resources: &'a BTreeMap<String, RawResource>) -> Self {
        Self {
            resources,
            reads: RefCell::default(),
        }
    }

    /// The names asked for so far with the bytes each had (None: not observed).
    pub fn reads(&self) -> Vec<(String, Option<Vec<u8>>)> {
        let mut names = self.reads.borrow().clone();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|n| {
                let bytes = self.resources.get(&n).map(|r| r.as_bytes().to_vec());
                (n, bytes)
            })
            .collect()
    }

    /// The observed object composed under `name`, if it exists and decodes,
    /// less `metadata.managedFields`.
    pub fn get(&self, name: &str) -> Option<Map<String, Value>> {
        self.reads.borrow_mut().push(name.to_string());
        let raw = self.resources.get(name)?;
        // The fast path reads the bytes straight into JSON; anything unusual
        // goes through prost, which decides what it means.
        if let Some(object) = raw
            .struct_bytes()
            .and_then(|b| crate::convert::decode_object(b).ok())
        {
            return Some(object);
        }
        let full = raw.decode_full().ok()?;
        full.resource.as_ref().map(|s| {
            let mut object = crate::convert::struct_to_json(s);
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
    pub fn readiness(&self, name: &str) -> crate::proto::wire::Ready {
        let fast = self.resources.get(name).and_then(|raw| {
            let bytes = raw.struct_bytes()?;
            crate::convert::decode_fields(bytes, &["kind", "status"]).ok()
        });
        match fast {
            Some(object) => {
                self.reads.borrow_mut().push(name.to_string());
                readiness::observed_readiness(Some(&object))
            }
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
    pub xr: &'a Composite,
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
    pub fn warn_on_transition(&mut self, reason: &str, warnings: &[String], reported: &[&str]) {
        for w in warnings {
            if !reported.contains(&w.as_str()) {
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

/// Finds the composer for a kind: [`composer_for`] in production. The
/// server and [`crate::function::respond_with`] take it as a parameter so
/// that tests can exercise the panic handling with a composer that panics,
/// without any such composer existing in the binary.
pub type Dispatch = fn(&str) -> Option<Composer>;

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
    use crate::convert::{
        decode_struct, encode_entry, encode_raw_entry, raw_entries, raw_struct_value,
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
                encode_entry(key, &Value::Object(md), &mut body);
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
pub mod leader_worker_set;
pub mod llm_inference;
pub mod model;
pub mod model_facts;
pub mod model_ref;
pub mod model_server;
pub mod names;
pub mod placement;
pub mod readiness;
pub mod runtime;
pub mod validate;
pub mod vllm_deployment;
pub mod vllm_pod;
pub mod vllm_runtime;
pub mod vllm_service;
pub mod weights_cache;
pub mod weights_pvc;
