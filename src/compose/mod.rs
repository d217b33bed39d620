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

    /// Whether the object composed under `name` is ready (see
    /// [`resources::readiness`]), reading only the fields that say.
    pub fn readiness(&self, name: &str) -> crate::protocol::wire::Ready {
        let fast = self.resources.get(name).and_then(|raw| {
            let bytes = raw.struct_bytes()?;
            crate::protocol::struct_deserializer::from_struct_bytes::<ReadinessFields>(bytes).ok()
        });
        match fast {
            Some(fields) => resources::readiness::readiness(&fields.state()),
            // Not observed, or unusual bytes or values: the full decode decides.
            None => resources::readiness::observed_readiness(self.get(name).as_ref()),
        }
    }
}

/// What readiness reads of an observed object, borrowed from its bytes:
/// its kind, its status conditions and replica counts. Everything else is
/// skipped unread; a value of another type than these fails the read, and
/// the JSON path decides instead.
#[derive(serde::Deserialize)]
struct ReadinessFields<'a> {
    #[serde(borrow)]
    kind: Option<&'a str>,
    #[serde(borrow)]
    status: Option<StatusFields<'a>>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatusFields<'a> {
    #[serde(borrow)]
    conditions: Option<Vec<ConditionFields<'a>>>,
    available_replicas: Option<i64>,
    ready_replicas: Option<i64>,
}

#[derive(serde::Deserialize)]
struct ConditionFields<'a> {
    #[serde(rename = "type", borrow)]
    type_: Option<&'a str>,
    #[serde(borrow)]
    status: Option<&'a str>,
}

impl<'a> ReadinessFields<'a> {
    fn state(&self) -> resources::readiness::ObservedState<'a> {
        let status = self.status.as_ref();
        resources::readiness::ObservedState {
            kind: self.kind.unwrap_or_default(),
            true_conditions: status
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .filter(|c| c.status == Some("True"))
                .filter_map(|c| c.type_)
                .collect(),
            available_replicas: status.and_then(|s| s.available_replicas).unwrap_or(0),
            ready_replicas: status.and_then(|s| s.ready_replicas).unwrap_or(0),
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
}

impl Composition {
    /// Adds `manifest` under `key`, ready as its observed counterpart says,
    /// and returns that readiness.
    pub fn add(&mut self, key: &str, manifest: Manifest, observed: &Observed) -> Ready {
        let ready = observed.readiness(key);
        self.resources
            .insert(key.into(), Composed { manifest, ready });
        ready
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

pub mod kinds;
pub mod names;
pub mod resources;
pub mod steps;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::struct_json::json_to_struct;
    use serde_json::json;

    #[test]
    fn readiness_read_from_bytes_is_readiness_read_from_json() {
        let objects = [
            json!({"kind": "VLLMRuntime", "status": {"availableReplicas": 1}, "spec": {"big": [1, 2]}}),
            json!({"kind": "VLLMRuntime", "status": {"availableReplicas": 0.5}}),
            json!({"kind": "VLLMRuntime", "status": null}),
            json!({"kind": "Deployment", "status": {"conditions": [
                {"type": "Progressing", "status": "True"}, {"type": "Available", "status": "True", "reason": "x"}]}}),
            json!({"kind": "Deployment", "status": {"conditions": [{"type": "Available", "status": false}]}}),
            json!({"kind": "Deployment", "status": {"conditions": ["not an object"]}}),
            json!({"kind": "Object", "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            json!({"kind": 3}),
            json!({"kind": "LeaderWorkerSet", "status": {"readyReplicas": 2}}),
            json!({"kind": "LeaderWorkerSet", "status": {"readyReplicas": "2"}}),
            json!({"kind": "VLLMRuntime", "status": {"availableReplicas": 1.0e19}}),
            json!({"kind": "Deployment", "status": "not an object"}),
            json!({"kind": "Deployment", "status": {"conditions": [{"type": 1, "status": "True"}, {"type": "Available", "status": "True"}]}}),
            json!({"kind": "Object", "status": {"conditions": [{"type": "Ready", "status": "True", "extra": {"deep": [1]}}]}}),
            json!({"kind": "ConfigMap"}),
        ];
        for object in objects {
            let raw = RawResource::from_full(&crate::protocol::full::Resource {
                resource: object.as_object().map(json_to_struct),
                ..Default::default()
            });
            let want = resources::readiness::observed_readiness(object.as_object());
            assert_eq!(readiness_of(raw), want, "{object}");
        }
    }

    #[test]
    fn readiness_of_a_usual_object_is_read_from_its_bytes() {
        let object = json!({"kind": "Deployment", "metadata": {"managedFields": [{"manager": "m"}]},
            "status": {"availableReplicas": 1, "conditions": [
                {"type": "Progressing", "status": "True"}, {"type": "Available", "status": "True"}]}});
        let bytes = prost::Message::encode_to_vec(&json_to_struct(object.as_object().unwrap()));
        let state = fast_state(&bytes).expect("the fast path reads it");
        assert_eq!(
            state,
            resources::readiness::ObservedState::of(object.as_object().unwrap())
        );
    }

    /// What `Observed::readiness` answers for `raw`, observed alone.
    fn readiness_of(raw: RawResource) -> crate::protocol::wire::Ready {
        let resources: BTreeMap<String, RawResource> = [("r".to_string(), raw)].into();
        Observed::new(&resources).readiness("r")
    }

    /// What the fast path reads of the Struct encoded in `bytes`.
    fn fast_state(
        bytes: &[u8],
    ) -> Result<resources::readiness::ObservedState<'_>, crate::protocol::struct_deserializer::Error>
    {
        crate::protocol::struct_deserializer::from_struct_bytes::<ReadinessFields>(bytes)
            .map(|fields| fields.state())
    }

    /// A resource whose `resource` Struct is `objects` encoded one after
    /// the other: protobuf reads that as one Struct, a key given in two of
    /// them taking the last value.
    fn raw_resource_of_parts(objects: &[Value]) -> RawResource {
        let mut fields = Vec::new();
        for object in objects {
            let part = json_to_struct(object.as_object().unwrap());
            prost::Message::encode_raw(&part, &mut fields);
        }
        let mut resource = Vec::new();
        prost::encoding::bytes::encode(1, &fields, &mut resource);
        RawResource::from(bytes::Bytes::from(resource))
    }

    #[test]
    fn a_key_given_twice_is_left_to_the_full_decode() {
        for (parts, want) in [
            (
                [json!({"kind": "Deployment"}), json!({"kind": "ConfigMap"})],
                crate::protocol::wire::Ready::True,
            ),
            (
                [
                    json!({"kind": "VLLMRuntime", "status": {"availableReplicas": 1}}),
                    json!({"status": {"readyReplicas": 1}}),
                ],
                crate::protocol::wire::Ready::False,
            ),
        ] {
            let raw = raw_resource_of_parts(&parts);
            assert!(
                fast_state(raw.struct_bytes().unwrap()).is_err(),
                "{parts:?}"
            );
            assert_eq!(readiness_of(raw), want, "{parts:?}");
        }
    }

    /// One of `words`, as a JSON string.
    fn one_of(words: &'static [&'static str]) -> proptest::strategy::BoxedStrategy<Value> {
        use proptest::prelude::*;
        proptest::sample::select(words)
            .prop_map(Value::from)
            .boxed()
    }

    /// Values a status field may hold, the usual and the odd.
    fn status_value() -> proptest::strategy::BoxedStrategy<Value> {
        use proptest::prelude::*;
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-3i64..4).prop_map(Value::from),
            prop_oneof![Just(0.5), Just(2.0), Just(1.0e19), Just(-1.0e19)].prop_map(Value::from),
            one_of(&["True", "False", "Ready", "Available"]),
            Just(json!({"deep": [1, "x"]})),
            Just(json!(["a"])),
        ]
        .boxed()
    }

    fn condition() -> proptest::strategy::BoxedStrategy<Value> {
        use proptest::prelude::*;
        let type_ = prop_oneof![
            4 => one_of(&["Ready", "Available", "AbleToScale", "Progressing"]),
            1 => status_value(),
        ];
        let status = prop_oneof![
            3 => Just(json!("True")),
            1 => Just(json!("False")),
            1 => status_value(),
        ];
        prop_oneof![
            8 => (proptest::option::of(type_), proptest::option::of(status), any::<bool>())
                .prop_map(|(type_, status, reason)| {
                    let mut c = serde_json::Map::new();
                    if let Some(t) = type_ { c.insert("type".into(), t); }
                    if let Some(s) = status { c.insert("status".into(), s); }
                    if reason { c.insert("reason".into(), json!("Because")); }
                    Value::Object(c)
                }),
            1 => status_value(),
        ]
        .boxed()
    }

    fn observed_object() -> proptest::strategy::BoxedStrategy<Value> {
        use proptest::prelude::*;
        let kind = prop_oneof![
            6 => one_of(&[
                "Object",
                "VLLMRuntime",
                "Deployment",
                "LeaderWorkerSet",
                "HorizontalPodAutoscaler",
                "ConfigMap",
            ]),
            1 => status_value(),
        ];
        let count = prop_oneof![3 => (0i64..3).prop_map(Value::from), 1 => status_value()];
        let conditions = prop_oneof![
            4 => proptest::collection::vec(condition(), 0..4).prop_map(Value::from),
            1 => status_value(),
        ];
        let status = prop_oneof![
            6 => (
                proptest::option::of(conditions),
                proptest::option::of(count.clone()),
                proptest::option::of(count),
            )
                .prop_map(|(conditions, available, ready)| {
                    let mut s = serde_json::Map::new();
                    if let Some(c) = conditions { s.insert("conditions".into(), c); }
                    if let Some(a) = available { s.insert("availableReplicas".into(), a); }
                    if let Some(r) = ready { s.insert("readyReplicas".into(), r); }
                    s.insert("observedGeneration".into(), json!(3));
                    Value::Object(s)
                }),
            1 => status_value(),
        ];
        (proptest::option::of(kind), proptest::option::of(status))
            .prop_map(|(kind, status)| {
                let mut o = serde_json::Map::new();
                o.insert("apiVersion".into(), json!("v1"));
                o.insert(
                    "spec".into(),
                    json!({"replicas": 2, "template": {"a": [1, 2]}}),
                );
                if let Some(k) = kind {
                    o.insert("kind".into(), k);
                }
                if let Some(s) = status {
                    o.insert("status".into(), s);
                }
                Value::Object(o)
            })
            .boxed()
    }

    proptest::proptest! {
        /// Whatever the bytes say, readiness is what the JSON path reads,
        /// and an object of the usual types is read from its bytes alone.
        #[test]
        fn readiness_is_the_json_paths_for_any_status(object in observed_object()) {
            let map = object.as_object().unwrap();
            let encoded = json_to_struct(map);
            // What the JSON path reads: the object as it comes out of the bytes.
            let decoded = crate::protocol::struct_json::struct_to_json(&encoded);
            let raw = RawResource::from_full(&crate::protocol::full::Resource {
                resource: Some(encoded),
                ..Default::default()
            });
            let fast = fast_state(raw.struct_bytes().unwrap());
            let json_state = resources::readiness::ObservedState::of(&decoded);
            if let Ok(state) = &fast {
                proptest::prop_assert_eq!(state, &json_state);
            }
            let usual = is_usual(map);
            proptest::prop_assert_eq!(fast.is_ok(), usual, "{}", object);
            let want = resources::readiness::readiness(&json_state);
            proptest::prop_assert_eq!(readiness_of(raw), want);
        }
    }

    /// Whether every field readiness reads has the type it expects.
    fn is_usual(object: &serde_json::Map<String, Value>) -> bool {
        let str_or_null =
            |v: Option<&Value>| matches!(v, None | Some(Value::Null | Value::String(_)));
        let count = |v: Option<&Value>| match v {
            None | Some(Value::Null) => true,
            Some(n) => n.as_f64().is_some_and(|f| {
                f.fract() == 0.0 && f.abs() <= crate::protocol::struct_json::MAX_EXACT_INTEGER
            }),
        };
        let status_ok = match object.get("status") {
            None | Some(Value::Null) => true,
            Some(Value::Object(s)) => {
                count(s.get("availableReplicas"))
                    && count(s.get("readyReplicas"))
                    && match s.get("conditions") {
                        None | Some(Value::Null) => true,
                        Some(Value::Array(items)) => items.iter().all(|c| {
                            c.as_object().is_some_and(|c| {
                                str_or_null(c.get("type")) && str_or_null(c.get("status"))
                            })
                        }),
                        Some(_) => false,
                    }
            }
            Some(_) => false,
        };
        str_or_null(object.get("kind")) && status_ok
    }

    /// The keys of every object in `json` that come after a key they should
    /// follow, with the object's path.
    fn keys_out_of_order(json: &str) -> Vec<String> {
        use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
        use std::cell::RefCell;
        struct Check<'a> {
            path: String,
            found: &'a RefCell<Vec<String>>,
        }
        impl<'de> DeserializeSeed<'de> for Check<'_> {
            type Value = ();
            fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
                d.deserialize_any(self)
            }
        }
        impl<'de> Visitor<'de> for Check<'_> {
            type Value = ();
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
                let mut previous: Option<String> = None;
                while let Some(key) = map.next_key::<String>()? {
                    if previous
                        .as_ref()
                        .is_some_and(|p| p.as_bytes() >= key.as_bytes())
                    {
                        self.found
                            .borrow_mut()
                            .push(format!("{}: {key}", self.path));
                    }
                    let path = format!("{}.{key}", self.path);
                    map.next_value_seed(Check {
                        path,
                        found: self.found,
                    })?;
                    previous = Some(key);
                }
                Ok(())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
                let path = format!("{}[]", self.path);
                while seq
                    .next_element_seed(Check {
                        path: path.clone(),
                        found: self.found,
                    })?
                    .is_some()
                {}
                Ok(())
            }
            fn visit_bool<E>(self, _: bool) -> Result<(), E> {
                Ok(())
            }
            fn visit_i64<E>(self, _: i64) -> Result<(), E> {
                Ok(())
            }
            fn visit_u64<E>(self, _: u64) -> Result<(), E> {
                Ok(())
            }
            fn visit_f64<E>(self, _: f64) -> Result<(), E> {
                Ok(())
            }
            fn visit_str<E>(self, _: &str) -> Result<(), E> {
                Ok(())
            }
            fn visit_unit<E>(self) -> Result<(), E> {
                Ok(())
            }
        }
        let found = RefCell::new(Vec::new());
        let mut de = serde_json::Deserializer::from_str(json);
        Check {
            path: String::new(),
            found: &found,
        }
        .deserialize(&mut de)
        .expect("serde_json wrote JSON");
        found.into_inner()
    }

    /// The Struct encoder sorts an object whose fields serde walks out of
    /// key order, copying it twice; every type a composer builds declares
    /// its fields in key order (as k8s-openapi does), so that sort does not
    /// run on a call.
    #[test]
    fn composed_objects_and_statuses_are_declared_in_key_order() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/configuration");
        let read = |path: std::path::PathBuf| -> Map<String, Value> {
            let text = std::fs::read_to_string(&path).unwrap();
            serde_yaml::from_str(&text).unwrap()
        };
        let model = read(root.join("agents/model.yaml"));
        let required: BTreeMap<String, wire::Resources> = {
            let full = crate::protocol::full::RunFunctionRequest {
                required_resources: [(
                    "model".to_string(),
                    crate::protocol::full::Resources {
                        items: vec![crate::protocol::full::Resource {
                            resource: Some(json_to_struct(&model)),
                            ..Default::default()
                        }],
                    },
                )]
                .into(),
                ..Default::default()
            };
            crate::protocol::to_wire(&full).required_resources
        };
        let mut xrs: Vec<_> = std::fs::read_dir(root.join("llm-inference"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        xrs.sort();
        xrs.extend(
            [
                "agents/model.yaml",
                "agents/model-with-config.yaml",
                "agents/agentpool.yaml",
            ]
            .map(|p| root.join(p)),
        );
        let settings = Settings::default();
        let nothing_observed = BTreeMap::new();
        let mut found = Vec::new();
        for path in &xrs {
            let xr = Composite::from_object(read(path.clone())).unwrap();
            let request = ComposeRequest {
                xr: &xr,
                observed: Observed::new(&nothing_observed),
                required: &required,
                settings: &settings,
            };
            let composition = composer_for(&xr.kind).unwrap()(&request)
                .unwrap_or_else(|r| panic!("{}: {r:?}", path.display()));
            assert!(!composition.resources.is_empty(), "{}", path.display());
            let objects = composition
                .resources
                .iter()
                .map(|(name, c)| (name.as_str(), serde_json::to_string(&c.manifest).unwrap()))
                .chain([(
                    "status",
                    serde_json::to_string(&composition.status).unwrap(),
                )]);
            for (name, json) in objects {
                // k8s-openapi writes apiVersion and kind first, so a
                // ConfigMap's top level (data, metadata) still sorts; a
                // plan keeps the order people read in a Model's card
                // (plans.json), which must not change.
                let nested = keys_out_of_order(&json).into_iter().filter(|key| {
                    !key.starts_with(": ")
                        && !key.starts_with(".plan: ")
                        && !key.starts_with(".plan.estimate: ")
                        && !key.starts_with(".plans[].plan: ")
                        && !key.starts_with(".plans[].plan.estimate: ")
                });
                for key in nested {
                    found.push(format!("{} {name}{key}", path.display()));
                }
            }
        }
        assert_eq!(found, Vec::<String>::new());
    }
}
