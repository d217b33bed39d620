//! Composers: one per XR kind, each a pure function from the observed XR (and
//! the resources Crossplane fetched for it) to the resources it wants, the XR
//! status it reports and the conditions and results that explain it.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::input::Settings;
use crate::protocol::raw_message::RawResource;
use crate::protocol::struct_serializer;
use crate::protocol::wire::{self, Ready};

/// The observed composite resource, with the fields composers need at hand.
#[derive(Debug)]
pub struct Composite<'a> {
    pub api_version: Cow<'a, str>,
    pub kind: Cow<'a, str>,
    pub name: Cow<'a, str>,
    pub namespace: Cow<'a, str>,
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
struct Head<'a> {
    #[serde(borrow)]
    api_version: Option<&'a str>,
    #[serde(borrow)]
    kind: Option<&'a str>,
    #[serde(borrow)]
    metadata: Option<HeadMetadata<'a>>,
}

/// Borrowed from the request's bytes (the fast reader lends every
/// string): an XR's identity costs no copies.
#[derive(serde::Deserialize)]
struct HeadMetadata<'a> {
    #[serde(borrow)]
    name: Option<&'a str>,
    #[serde(borrow)]
    namespace: Option<&'a str>,
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
                    head.api_version.unwrap_or_default().into(),
                    head.kind.unwrap_or_default().into(),
                    metadata.name.unwrap_or_default().into(),
                    metadata.namespace.unwrap_or_default().into(),
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
            str_at(&object, &["apiVersion"]).to_string().into(),
            str_at(&object, &["kind"]).to_string().into(),
            str_at(&object, &["metadata", "name"]).to_string().into(),
            str_at(&object, &["metadata", "namespace"])
                .to_string()
                .into(),
            Source::Object(object),
        )
    }

    fn new(
        api_version: Cow<'a, str>,
        kind: Cow<'a, str>,
        name: Cow<'a, str>,
        namespace: Cow<'a, str>,
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
        let strings = |list: Vec<Value>| {
            list.into_iter()
                .filter_map(|v| match v {
                    Value::String(s) => Some(s),
                    _ => None,
                })
                .collect()
        };
        if let Source::Bytes(bytes) = &self.source {
            let full: Vec<&str> = std::iter::once("status")
                .chain(path.iter().copied())
                .collect();
            if let Ok(list) =
                crate::protocol::struct_deserializer::at_path::<Vec<Value>>(bytes, &full)
            {
                return list.map(strings).unwrap_or_default();
            }
        }
        let status = self.status().map(Value::Object);
        let mut v = status.as_ref();
        for p in path {
            v = v.and_then(|v| v.get(*p));
        }
        match v {
            Some(Value::Array(list)) => strings(list.clone()),
            _ => Vec::new(),
        }
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

    /// The observed object composed under `name` as sent, managedFields
    /// and all: what Crossplane applied to it is read from them.
    pub fn get_whole(&self, name: &str) -> Option<Map<String, Value>> {
        let full = self.resources.get(name)?.decode_full().ok()?;
        full.resource
            .as_ref()
            .map(crate::protocol::struct_json::struct_to_json)
    }

    /// What the object composed under `name` is: the object itself, or for
    /// a provider-kubernetes Object the object it applied, as last observed
    /// (`status.atProvider.manifest`).
    pub fn manifest(&self, name: &str) -> Option<Map<String, Value>> {
        let object = self.get(name)?;
        if str_at(&object, &["kind"]) != "Object" {
            return Some(object);
        }
        match object.get("status")?.get("atProvider")?.get("manifest")? {
            Value::Object(m) => Some(m.clone()),
            _ => None,
        }
    }

    /// How the object composed under `name` stands against its current
    /// spec (see [`resources::readiness`]).
    pub fn rollout(&self, name: &str) -> resources::readiness::Rollout {
        resources::readiness::rollout(self.get(name).as_ref())
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
#[derive(Debug)]
pub struct Composed {
    pub manifest: Manifest,
    pub ready: Ready,
}

/// Fields merged into the XR's desired status, typed until the edge encodes
/// them, once; none by default.
#[derive(Default)]
pub struct Status(Option<Box<dyn Encodable>>);

impl Status {
    /// `fields`, which serialize as an object.
    pub fn new(fields: impl serde::Serialize + Send + Sync + 'static) -> Self {
        Self(Some(Box::new(fields)))
    }

    /// The bytes of the Struct the fields make, lent to `read`; empty when
    /// there are none.
    pub fn with_struct_bytes<R>(
        &self,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, struct_serializer::Error> {
        match &self.0 {
            Some(fields) => {
                struct_serializer::with_struct_bytes(|out| fields.resource_field(out), read)
            }
            None => Ok(read(&[])),
        }
    }
}

impl serde::Serialize for Status {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Some(fields) => {
                let fields: &dyn erased_serde::Serialize = fields.as_ref();
                erased_serde::serialize(fields, serializer)
            }
            None => serializer.serialize_none(),
        }
    }
}

impl std::fmt::Debug for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Status(..)"
        } else {
            "Status(none)"
        })
    }
}

/// A typed value behind one dynamic call: the edge's encoding of its
/// `Struct` bytes is compiled for the concrete type (a serde walk through
/// `erased_serde` pays a virtual call at every field), and serde still
/// reaches it for every other format.
trait Encodable: erased_serde::Serialize + Send + Sync {
    fn resource_field(&self, out: &mut Vec<u8>) -> Result<(), struct_serializer::Error>;
}

impl<T: serde::Serialize + Send + Sync> Encodable for T {
    fn resource_field(&self, out: &mut Vec<u8>) -> Result<(), struct_serializer::Error> {
        struct_serializer::encode_resource_field(self, out)
    }
}

/// A composed manifest, typed until the edge encodes it, once.
pub struct Manifest {
    kind: &'static str,
    object: Box<dyn Encodable>,
}

impl Manifest {
    /// `object`, a Kubernetes object of `kind`.
    pub fn new(kind: &'static str, object: impl serde::Serialize + Send + Sync + 'static) -> Self {
        Self {
            kind,
            object: Box::new(object),
        }
    }

    /// The manifest's kind, for the policies that depend on it.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The manifest as field 1 of a `Resource`, appended to `out`.
    pub fn encode_resource_field(&self, out: &mut Vec<u8>) -> Result<(), struct_serializer::Error> {
        self.object.resource_field(out)
    }
}

impl serde::Serialize for Manifest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let object: &dyn erased_serde::Serialize = self.object.as_ref();
        erased_serde::serialize(object, serializer)
    }
}

impl std::fmt::Debug for Manifest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Manifest({})", self.kind)
    }
}

/// What a composer returns.
#[derive(Debug, Default)]
pub struct Composition {
    /// Composed resources by composition-resource-name.
    pub resources: BTreeMap<String, Composed>,
    /// Fields merged into the XR's desired status.
    pub status: Status,
    pub conditions: Vec<wire::Condition>,
    pub results: Vec<wire::Result>,
    pub requirements: BTreeMap<String, wire::ResourceSelector>,
    /// Names of resources composed on an earlier call that must be kept as
    /// they were observed (for example while a referenced Model is missing):
    /// leaving them out of the desired state would make Crossplane delete them.
    pub keep_observed: Vec<String>,
    /// How soon Crossplane should call again, when sooner than the step
    /// input's TTL: while waiting on what Crossplane does not watch.
    pub ttl_seconds: Option<u32>,
}

impl Composition {
    /// Adds `manifest` under `key`, ready as its observed counterpart says,
    /// and returns how that counterpart stands.
    ///
    /// A workload carries the digest of the spec it is composed from
    /// ([`spec_digest::ANNOTATION`]): until Crossplane has applied this
    /// spec, the observed object is an older one, and whatever its status
    /// says is about that older spec, so it is not ready.
    pub fn add(
        &mut self,
        key: &str,
        manifest: Manifest,
        observed: &Observed,
    ) -> resources::readiness::Rollout {
        let (manifest, spec) = spec_digest::annotate(manifest);
        let object = observed.get(key);
        let mut rollout = resources::readiness::rollout(object.as_ref());
        if let (Some(spec), Some(object)) = (&spec, &object)
            && !spec.applied_to(object)
        {
            rollout = resources::readiness::not_yet_applied(object);
        }
        let ready = rollout.ready();
        self.resources
            .insert(key.into(), Composed { manifest, ready });
        rollout
    }

    /// A WARNING result for each of `warnings` the XR's observed status
    /// does not show yet at `path` (for example `["plan", "warnings"]`):
    /// results become Kubernetes events, so they mark transitions while the
    /// steady state stays in the status. The status is read only when there
    /// is a warning to compare.
    pub fn warn_on_transition(
        &mut self,
        reason: &str,
        warnings: &[String],
        xr: &Composite,
        path: &[&str],
    ) {
        if warnings.is_empty() {
            return;
        }
        let reported = xr.status_strings(path);
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
        (
            crate::xr::llm_inference::KIND,
            kinds::llm_inference::compose,
        ),
        (crate::xr::model::KIND, kinds::model::compose),
        (crate::xr::agent_pool::KIND, kinds::agent_pool::compose),
    ];
    composers.iter().find(|(k, _)| *k == kind).map(|(_, c)| *c)
}

/// The kinds this function composes, for error messages.
pub const KINDS: &[&str] = &["LLMInference", "Model", "AgentPool"];

/// [`last_applied::desired_again`] for an observed resource too deep to decode:
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
                last_applied::drop_server_owned(&mut md);
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

pub mod kinds;
pub mod last_applied;
pub mod names;
pub mod resources;
pub mod spec_digest;
pub mod steps;
