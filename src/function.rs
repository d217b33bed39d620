//! One `RunFunction` call, start to finish, with no I/O.
//!
//! The gRPC server, `render` and the benchmarks all call [`run_function`]:
//! decode what the call is about, dispatch on the XR's kind, compose, and
//! encode the composition into the response. It copies the tag, sets the
//! TTL, starts from the desired state earlier steps built (passing through
//! everything it has no opinion about) and merges what the composer returns.
//! Any problem with the request becomes a FATAL result that names it.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use crate::compose::{self, ComposeRequest, Composite, Composition, Observed};
use crate::input::{Input, Settings};
use crate::outcome;
use crate::protocol::raw_message::{RawResource, RawStruct};
use crate::protocol::struct_json::struct_to_json;
use crate::protocol::struct_serializer;
use crate::protocol::wire;

/// Annotation Crossplane puts on every composed resource; render shows it too.
pub const COMPOSITION_RESOURCE_NAME: &str = "crossplane.io/composition-resource-name";

/// Which XR a call was about, for logs and metrics. Shared strings: the
/// server's memo hands the same subject to every call it answers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subject {
    pub kind: Arc<str>,
    pub name: Arc<str>,
    pub namespace: Arc<str>,
}

/// One finished call.
#[derive(Clone, Debug)]
pub struct Call {
    pub subject: Subject,
    pub response: wire::RunFunctionResponse,
}

/// Runs the function for one request.
pub fn run_function(mut req: wire::RunFunctionRequest) -> Call {
    let mut subject = Subject::default();
    let mut rsp = wire::RunFunctionResponse {
        meta: Some(wire::ResponseMeta {
            tag: req.meta.as_ref().map(|m| m.tag.clone()).unwrap_or_default(),
            ttl: Some(ttl(crate::input::DEFAULT_TTL_SECONDS)),
        }),
        // Earlier steps' desired state is the starting point, moved not copied.
        desired: Some(req.desired.take().unwrap_or_default()),
        // The pipeline context is for later steps (the environment, other
        // functions' notes); this function adds nothing to it and drops nothing.
        context: req.context.take(),
        ..Default::default()
    };
    let input = read_input(req.input.as_ref());
    let settings = match &*input {
        Ok(s) => s,
        Err(message) => return refused(subject, rsp, "InvalidInput", message.clone()),
    };
    if let Some(meta) = rsp.meta.as_mut() {
        meta.ttl = Some(ttl(settings.ttl_seconds));
    }
    let composite = match observed_composite(&req) {
        Ok(c) => c,
        Err(message) => return refused(subject, rsp, "MissingComposite", message),
    };
    subject = Subject::of(&composite);
    let Some(compose) = compose::composer_for(&composite.kind) else {
        let message = format!(
            "function-inference cannot compose kind {:?} ({}); it composes {}",
            composite.kind,
            composite.api_version,
            compose::KINDS.join(", ")
        );
        return refused(subject, rsp, "UnknownKind", message);
    };
    // Every composed name and label derives from these: the API server
    // admits no other, and a huge one would build a response larger than
    // gRPC carries (ending as OUT_OF_RANGE instead of a result that says why).
    if let Err(message) = check_identity(&composite) {
        return refused(subject, rsp, "InvalidName", message);
    }
    let empty = Default::default();
    let observed = Observed::new(req.observed.as_ref().map_or(&empty, |o| &o.resources));
    let request = ComposeRequest {
        xr: &composite,
        observed,
        required: &req.required_resources,
        settings,
    };
    let response = match compose(&request) {
        Ok(composition) => apply(rsp, &composite, &request.observed, composition),
        Err(refusal) => refuse(rsp, refusal.reason, refusal.message),
    };
    Call { subject, response }
}

impl Subject {
    fn of(xr: &Composite) -> Self {
        Self {
            kind: shared_kind(&xr.kind),
            name: (*xr.name).into(),
            namespace: (*xr.namespace).into(),
        }
    }
}

/// `kind`, shared when it is one the function composes: every call names
/// its kind, and a copy of it cost an allocation.
fn shared_kind(kind: &str) -> Arc<str> {
    static COMPOSED: std::sync::LazyLock<Vec<Arc<str>>> =
        std::sync::LazyLock::new(|| compose::KINDS.iter().map(|k| Arc::from(*k)).collect());
    COMPOSED
        .iter()
        .find(|k| ***k == *kind)
        .cloned()
        .unwrap_or_else(|| kind.into())
}

/// Which XR an observed composite is, as far as it can be read.
pub fn subject_of(composite: &RawResource) -> Subject {
    match composite
        .struct_bytes()
        .ok_or_else(String::new)
        .and_then(Composite::from_bytes)
    {
        Ok(c) => Subject::of(&c),
        Err(_) => Subject::default(),
    }
}

/// Answers with only the tag and TTL: the `--noop` transport floor.
pub fn noop(req: wire::RunFunctionRequest) -> Call {
    let tag = req.meta.map(|m| m.tag).unwrap_or_default();
    let response = wire::RunFunctionResponse {
        meta: Some(wire::ResponseMeta {
            tag,
            ttl: Some(ttl(crate::input::DEFAULT_TTL_SECONDS)),
        }),
        ..Default::default()
    };
    Call {
        subject: Subject {
            kind: "noop".into(),
            ..Default::default()
        },
        response,
    }
}

fn refused(
    subject: Subject,
    rsp: wire::RunFunctionResponse,
    reason: &str,
    message: String,
) -> Call {
    Call {
        subject,
        response: refuse(rsp, reason, message),
    }
}

/// The XR's name and namespace, checked as the API server checks them (a
/// name is a DNS-1123 subdomain of at most 253 characters; unlike a host
/// name, its dot-separated parts may be longer than 63).
fn check_identity(xr: &Composite) -> Result<(), String> {
    if !compose::names::is_dns_subdomain(&xr.name) {
        return Err(format!(
            "metadata.name is {}; use a DNS-1123 subdomain, as Kubernetes names objects: at most 253 characters of \
             lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (for example qwen-7b)",
            crate::xr::validate::shown(&xr.name)
        ));
    }
    crate::xr::validate::dns_label("metadata.namespace", &xr.namespace, "team-a")
}

fn ttl(seconds: u64) -> prost_types::Duration {
    prost_types::Duration {
        seconds: i64::try_from(seconds).unwrap_or(i64::MAX),
        nanos: 0,
    }
}

fn refuse(
    mut rsp: wire::RunFunctionResponse,
    reason: &str,
    message: String,
) -> wire::RunFunctionResponse {
    rsp.results.push(outcome::fatal(reason, message));
    rsp
}

/// The settings of a step input, or why it is invalid.
type ReadInput = Rc<Result<Settings, String>>;

thread_local! {
    /// Recently read step inputs by their bytes, most recent first. Every
    /// XR of a Composition comes with the same input, so reading it once
    /// per thread serves them all.
    static INPUTS: RefCell<VecDeque<(Box<[u8]>, ReadInput)>> = const { RefCell::new(VecDeque::new()) };
}

/// Inputs a thread remembers: a platform has a few Compositions.
const INPUTS_KEPT: usize = 8;
/// An input larger than this is read each time rather than remembered.
const INPUT_KEPT_BYTES: usize = 4096;

fn read_input(input: Option<&RawStruct>) -> ReadInput {
    let Some(input) = input else {
        return Rc::new(Ok(Settings::default()));
    };
    let bytes = input.as_bytes();
    if bytes.len() > INPUT_KEPT_BYTES {
        return Rc::new(settings_of(input));
    }
    INPUTS.with_borrow_mut(|kept| {
        if let Some(i) = kept.iter().position(|(b, _)| **b == *bytes) {
            let hit = kept.remove(i).expect("found at i");
            let read = Rc::clone(&hit.1);
            kept.push_front(hit);
            return read;
        }
        let read = Rc::new(settings_of(input));
        kept.truncate(INPUTS_KEPT - 1);
        kept.push_front((bytes.into(), Rc::clone(&read)));
        read
    })
}

fn settings_of(input: &RawStruct) -> Result<Settings, String> {
    // As for the spec: the typed read straight from the bytes is the fast
    // path; anything it does not read, the JSON path answers, with its message.
    let parsed =
        match crate::protocol::struct_deserializer::from_struct_bytes::<Input>(input.as_bytes()) {
            Ok(parsed) => parsed,
            Err(_) => input_through_json(input)?,
        };
    parsed
        .settings()
        .map_err(|e| format!("invalid step input: {e}"))
}

/// The step input read through JSON: the bytes straight into JSON when they
/// are canonical, else through prost, which reports what is wrong.
fn input_through_json(input: &RawStruct) -> Result<Input, String> {
    let object = match crate::protocol::struct_json::decode_struct(input.as_bytes()) {
        Ok(object) => object,
        Err(_) => input
            .decode_full()
            .map(|s| struct_to_json(&s))
            .map_err(|e| format!("cannot decode the step input: {e}"))?,
    };
    crate::de::from_object(Value::Object(object), "input")
        .map_err(|e| format!("cannot read the step input: {e}"))
}

fn observed_composite(req: &wire::RunFunctionRequest) -> Result<Composite<'_>, String> {
    let raw = req
        .observed
        .as_ref()
        .and_then(|o| o.composite.as_ref())
        .ok_or("the request has no observed composite resource")?;
    // The fast path reads the bytes; anything unusual goes through prost,
    // whose errors are the ones reported.
    if let Some(composite) = raw
        .struct_bytes()
        .and_then(|b| Composite::from_bytes(b).ok())
    {
        return Ok(composite);
    }
    let full = raw
        .decode_full()
        .map_err(|e| format!("cannot decode the observed composite resource: {e}"))?;
    let mut object = full
        .resource
        .as_ref()
        .map(struct_to_json)
        .ok_or("the observed composite resource is empty")?;
    compose::drop_managed_fields(&mut object);
    Composite::from_object(object)
}

/// The response with `composition` merged in: its resources encoded once,
/// its status merged into the desired XR, its results and conditions added.
fn apply(
    mut rsp: wire::RunFunctionResponse,
    xr: &Composite,
    observed: &Observed,
    composition: Composition,
) -> wire::RunFunctionResponse {
    // What could fail is worked out before the response changes: a FATAL
    // answer then carries the earlier steps' desired state untouched.
    let desired = rsp.desired.get_or_insert_with(Default::default);
    let merged = composition.status.with_struct_bytes(|status| {
        if status.is_empty() {
            return Ok(None);
        }
        merge_status(
            desired.composite.as_ref(),
            &xr.api_version,
            &xr.kind,
            status,
        )
        .map(Some)
    });
    let composite = match merged {
        Ok(Ok(composite)) => composite,
        Ok(Err(message)) => return refuse(rsp, "UnreadableState", message),
        Err(e) => {
            return refuse(
                rsp,
                "InternalError",
                format!("cannot encode the XR's status: {e}"),
            );
        }
    };
    let mut kept = Vec::new();
    for name in &composition.keep_observed {
        if composition.resources.contains_key(name) || desired.resources.contains_key(name) {
            continue;
        }
        if let Some(object) = observed.get_whole(name) {
            let manifest = compose::last_applied::desired_again(object);
            kept.push((
                name.clone(),
                encode_resource(
                    |out| struct_serializer::encode_resource_field(&manifest, out),
                    wire::Ready::Unspecified,
                ),
            ));
        } else if let Some(raw) = observed.raw(name) {
            // Observed but not decodable: leaving it out would make
            // Crossplane delete it, so it is kept as bytes or refused.
            match compose::desired_from_observed_raw(raw) {
                Ok(r) => kept.push((name.clone(), r)),
                Err(why) => {
                    let message = format!(
                        "cannot keep the observed resource {name:?}: {why}; function-inference refuses to \
                         answer rather than drop it (Crossplane would delete it)"
                    );
                    return refuse(rsp, "UnreadableState", message);
                }
            }
        }
    }
    let desired = rsp.desired.get_or_insert_with(Default::default);
    if composite.is_some() {
        desired.composite = composite;
    }
    desired.resources.extend(kept);
    for (name, composed) in composition.resources {
        let manifest = &composed.manifest;
        let resource = encode_resource(|out| manifest.encode_resource_field(out), composed.ready);
        desired.resources.insert(name, resource);
    }
    if let (Some(sooner), Some(meta)) = (composition.ttl_seconds, rsp.meta.as_mut()) {
        let seconds = meta.ttl.as_ref().map_or(i64::MAX, |t| t.seconds);
        if i64::from(sooner) < seconds {
            meta.ttl = Some(ttl(u64::from(sooner)));
        }
    }
    rsp.results.extend(composition.results);
    rsp.conditions.extend(composition.conditions);
    if !composition.requirements.is_empty() {
        rsp.requirements = Some(wire::Requirements {
            resources: composition.requirements,
            ..Default::default()
        });
    }
    rsp
}

/// Merges the composer's status (the bytes of a Struct, as
/// `struct_serializer::to_struct_bytes` writes them) into the desired
/// composite earlier steps built, keeping their fields. Only apiVersion,
/// kind and status are written: a function never sets an XR's spec or
/// metadata. Only the top level and the status of the earlier step's object
/// are read; every other field is copied as it came, so an object nested
/// too deep to decode is merged all the same. One that is not a resource at
/// all is an error naming it.
fn merge_status(
    existing: Option<&RawResource>,
    api_version: &str,
    kind: &str,
    status: &[u8],
) -> Result<RawResource, String> {
    let none = RawResource::default();
    let existing = existing.unwrap_or(&none);
    merge_status_raw(existing, api_version, kind, status).ok_or_else(|| {
        let problem = match existing.decode_full() {
            Err(e) => crate::protocol::raw_message::decode_problem(&e),
            Ok(_) => "its object is not a Struct".into(),
        };
        format!(
            "cannot read the desired composite resource an earlier pipeline step set, to merge status into it \
             ({problem})"
        )
    })
}

fn merge_status_raw(
    existing: &RawResource,
    api_version: &str,
    kind: &str,
    status: &[u8],
) -> Option<RawResource> {
    use crate::protocol::struct_json::{
        encode_raw_entry, encode_struct_entry, raw_entries, raw_struct_value,
    };
    let (object, rest) = existing.parts()?;
    let entries = raw_entries(&object).ok()?;
    // A status that is not an object is replaced by one.
    let earlier_status = match entries.get("status") {
        Some(v) => raw_struct_value(v).ok()?.unwrap_or_default(),
        None => Vec::new(),
    };
    let earlier_status = raw_entries(&earlier_status).ok()?;
    // Ours is the serializer's canonical encoding (entries in key order,
    // each key once), so with nothing earlier to keep it is the result.
    let fields = if earlier_status.is_empty() {
        std::borrow::Cow::Borrowed(status)
    } else {
        let ours = raw_entries(status).ok()?;
        let mut fields = Vec::with_capacity(status.len());
        let keys: std::collections::BTreeSet<&str> =
            earlier_status.keys().chain(ours.keys()).copied().collect();
        for key in keys {
            let value = ours.get(key).or_else(|| earlier_status.get(key))?;
            encode_raw_entry(key, value, &mut fields);
        }
        std::borrow::Cow::Owned(fields)
    };
    // The Resource's key and the body's length go in front of the body
    // once it is written, into room left for them, rather than the body
    // being copied behind them. A length takes at most 5 bytes below
    // 32 GiB, far above any request the server accepts.
    const HEADER: usize = 1 + 5;
    // Room for the header, every entry, the headers of the entries written
    // here (the status and, when absent, apiVersion and kind) and the rest.
    let mut body = Vec::with_capacity(
        HEADER + object.len() + fields.len() + api_version.len() + kind.len() + 64 + rest.len(),
    );
    body.resize(HEADER, 0);
    let mut write = |key: &str| -> Option<()> {
        match (key, entries.get(key)) {
            ("status", _) => encode_struct_entry(key, &fields, &mut body),
            (_, Some(v)) => encode_raw_entry(key, v, &mut body),
            ("apiVersion", None) => {
                struct_serializer::encode_entry(key, api_version, &mut body).ok()?
            }
            (_, None) => struct_serializer::encode_entry(key, kind, &mut body).ok()?,
        }
        Some(())
    };
    const OURS: [&str; 3] = ["apiVersion", "kind", "status"];
    if entries.is_empty() {
        // The usual case, and already in key order.
        OURS.into_iter().try_for_each(&mut write)?;
    } else {
        let keys: std::collections::BTreeSet<&str> = entries.keys().copied().chain(OURS).collect();
        keys.into_iter().try_for_each(&mut write)?;
    }
    let mut header = [0u8; HEADER];
    let unused = {
        let mut free = &mut header[..];
        prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut free);
        prost::encoding::encode_varint((body.len() - HEADER) as u64, &mut free);
        free.len()
    };
    let header = &header[..HEADER - unused];
    body[unused..HEADER].copy_from_slice(header);
    body.extend_from_slice(&rest);
    let mut bytes = Bytes::from(body);
    bytes::Buf::advance(&mut bytes, unused);
    Some(RawResource::from(bytes))
}

/// A composed resource as the response carries it: the manifest encoded
/// straight to protobuf (see `protocol::struct_serializer`) and its readiness.
fn encode_resource(
    write_manifest: impl FnOnce(&mut Vec<u8>) -> Result<(), struct_serializer::Error>,
    ready: wire::Ready,
) -> RawResource {
    // Written into the thread's scratch and copied once at its size: a
    // buffer grown per manifest cost a copy and a reallocation at every
    // doubling of a VLLMRuntime.
    struct_serializer::with_scratch(|bytes| {
        // Not an object: no resource field, as prost gives for None.
        if write_manifest(bytes).is_err() {
            bytes.clear();
        }
        if ready != wire::Ready::Unspecified {
            prost::encoding::int32::encode(3, &(ready as i32), bytes);
        }
        RawResource::from(Bytes::copy_from_slice(bytes))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::full;
    use crate::protocol::struct_json::json_to_struct;
    use serde_json::json;

    fn manifest() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
               "data": {"a": "1", "": "empty key"}, "n": [1, 2.5, null, true]})
    }

    fn encoded(manifest: &Value, ready: wire::Ready) -> RawResource {
        encode_resource(
            |out| struct_serializer::encode_resource_field(manifest, out),
            ready,
        )
    }

    #[test]
    fn a_composed_resource_is_encoded_as_prost_would() {
        for ready in [
            wire::Ready::Unspecified,
            wire::Ready::True,
            wire::Ready::False,
        ] {
            let want = RawResource::from_full(&full::Resource {
                resource: manifest().as_object().map(json_to_struct),
                ready: ready as i32,
                ..Default::default()
            });
            assert_eq!(encoded(&manifest(), ready), want, "{ready:?}");
        }
        // Not an object: no resource field, as prost gives for None.
        assert_eq!(
            encoded(&json!("x"), wire::Ready::True),
            RawResource::from_full(&full::Resource {
                ready: wire::Ready::True as i32,
                ..Default::default()
            })
        );
    }

    #[test]
    fn the_step_input_read_from_bytes_is_the_input_read_through_json() {
        let valid = [
            json!({"apiVersion": "inference.fn.crossplane.io/v1beta1", "kind": "Input"}),
            json!({
                "apiVersion": "inference.fn.crossplane.io/v1beta1", "kind": "Input",
                "metadata": {"name": "x", "labels": {"a": "b"}, "n": 3}, "ttl": "1h30m",
                "defaults": {
                    "gpuType": "L4", "offeredGpuTypes": ["L4", "H100-80GB"],
                    "image": {"registry": "docker.io", "name": "vllm/vllm-openai:v0.9.2"},
                    "gpuMemoryUtilization": 0.9, "gpuNodeSelector": false, "gpuToleration": true,
                    "providerConfigKind": "ClusterProviderConfig",
                    "weightsCache": {"storageClassName": "fast", "sharedStorageClassName": "nfs"},
                    "objective": "throughput", "vllmVersion": "0.9.2", "runtime": "auto",
                    "vllmImages": {"nvidia": {"registry": "r", "name": "n"}},
                },
            }),
            json!({"ttl": null, "defaults": {"gpuMemoryUtilization": 1}}),
        ];
        let unusual = [
            json!({"ttl": 60}),
            json!({"ttl": "soon"}),
            json!({"defaults": ["L4"]}),
            json!({"defaults": {"gpuType": "L4", "gpuTypo": "L4"}}),
            json!({"defaults": {"runtime": "docker"}}),
            json!({"defaults": {"gpuMemoryUtilization": "high"}}),
            json!({"spec": {}}),
        ];
        for (input, must_read) in valid
            .iter()
            .map(|i| (i, true))
            .chain(unusual.iter().map(|i| (i, false)))
        {
            let raw = RawStruct::from_full(&json_to_struct(input.as_object().unwrap()));
            let fast =
                crate::protocol::struct_deserializer::from_struct_bytes::<Input>(raw.as_bytes());
            let through_json = input_through_json(&raw);
            assert_eq!(fast.is_ok(), must_read, "{input}: {fast:?}");
            match fast {
                Ok(fast) => assert_eq!(Ok(fast), through_json, "{input}"),
                Err(_) => assert!(through_json.is_err(), "{input}: {through_json:?}"),
            }
        }
    }

    #[test]
    fn a_step_input_read_again_has_the_settings_it_had() {
        let input = |gpu: usize| {
            let ttl = if gpu.is_multiple_of(3) {
                json!("-5s")
            } else {
                json!(format!("{}s", gpu + 1))
            };
            let v = json!({"ttl": ttl, "defaults": {"gpuType": format!("GPU-{gpu}")}});
            RawStruct::from_full(&json_to_struct(v.as_object().unwrap()))
        };
        let large = json!({"defaults": {"offeredGpuTypes": vec!["L4"; 2000]}});
        let large = RawStruct::from_full(&json_to_struct(large.as_object().unwrap()));
        assert!(large.as_bytes().len() > INPUT_KEPT_BYTES);
        // More inputs than a thread keeps, in turn and back again, invalid
        // ones among them, and one too large to keep.
        let order = (0..INPUTS_KEPT + 3)
            .chain((0..INPUTS_KEPT + 3).rev())
            .chain([0, 0, 1]);
        for gpu in order {
            let raw = input(gpu);
            let read = read_input(Some(&raw));
            assert_eq!(*read, settings_of(&raw), "input {gpu}");
            assert_eq!(
                read.is_ok(),
                !gpu.is_multiple_of(3),
                "input {gpu}: {read:?}"
            );
            assert_eq!(*read_input(Some(&large)), settings_of(&large));
        }
        assert_eq!(*read_input(None), Ok(Settings::default()));
    }

    fn struct_bytes(v: &Value) -> Vec<u8> {
        struct_serializer::to_struct_bytes(v).unwrap()
    }

    #[test]
    fn merging_status_keeps_what_an_earlier_step_set() {
        let earlier = RawResource::from_full(&full::Resource {
            resource: json!({"apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference",
                             "status": {"fromEarlier": 1, "ready": false}})
            .as_object()
            .map(json_to_struct),
            connection_details: [("url".to_string(), b"http://x".to_vec())].into(),
            ready: wire::Ready::True as i32,
        });
        let status = json!({"ready": true, "endpoint": "http://e"});
        let merged = merge_status(
            Some(&earlier),
            "infer.dev/v1alpha1",
            "LLMInference",
            &struct_bytes(&status),
        )
        .unwrap();
        let want = full::Resource {
            resource: json!({"apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference",
                             "status": {"fromEarlier": 1, "ready": true, "endpoint": "http://e"}})
            .as_object()
            .map(json_to_struct),
            connection_details: [("url".to_string(), b"http://x".to_vec())].into(),
            ready: wire::Ready::True as i32,
        };
        assert_eq!(merged, RawResource::from_full(&want), "byte for byte");
        // With nothing earlier: apiVersion, kind and status only.
        let alone = merge_status(
            None,
            "infer.dev/v1alpha1",
            "LLMInference",
            &struct_bytes(&json!({"a": 1})),
        )
        .unwrap();
        let want =
            json!({"apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference", "status": {"a": 1}});
        assert_eq!(alone, encoded(&want, wire::Ready::Unspecified));
    }

    /// What merging the decoded objects gives: the earlier object with
    /// apiVersion and kind if it had none, and its status (an object, or
    /// none) extended by ours.
    fn merged_as_json(earlier: &Value, ours: &Value) -> Value {
        let mut object = earlier.as_object().cloned().unwrap_or_default();
        object.entry("apiVersion").or_insert_with(|| json!("v"));
        object.entry("kind").or_insert_with(|| json!("K"));
        let status = object.entry("status").or_insert_with(|| json!({}));
        if !status.is_object() {
            *status = json!({});
        }
        for (k, v) in ours.as_object().unwrap() {
            status[k] = v.clone();
        }
        Value::Object(object)
    }

    #[test]
    fn merging_status_as_bytes_equals_merging_the_decoded_objects() {
        let status = json!({"ready": true, "endpoint": "http://e", "plan": {"gpuCount": 2}});
        for object in [
            json!({"apiVersion": "infer.dev/v1alpha1", "kind": "LLMInference",
                   "status": {"fromEarlier": 1, "ready": false, "plan": {"old": 1}}, "spec": {"a": [1, {"b": null}]}}),
            json!({"status": "not an object", "": "empty key", "z": {}}),
            json!({"kind": "Other", "metadata": {"name": "x"}}),
            json!({}),
        ] {
            let raw = RawResource::from_full(&full::Resource {
                resource: object.as_object().map(json_to_struct),
                connection_details: [("url".to_string(), b"http://x".to_vec())].into(),
                ready: wire::Ready::True as i32,
            });
            let got = merge_status(Some(&raw), "v", "K", &struct_bytes(&status)).unwrap();
            let want = RawResource::from_full(&full::Resource {
                resource: merged_as_json(&object, &status)
                    .as_object()
                    .map(json_to_struct),
                connection_details: [("url".to_string(), b"http://x".to_vec())].into(),
                ready: wire::Ready::True as i32,
            });
            assert_eq!(got, want, "{object}");
        }
    }

    #[test]
    fn a_desired_composite_that_is_not_a_resource_is_an_error_naming_it() {
        let garbage = RawResource::from(Bytes::from_static(&[0x0a, 0x05, 0x01]));
        let e =
            merge_status(Some(&garbage), "v", "K", &struct_bytes(&json!({"a": 1}))).unwrap_err();
        assert!(
            e.starts_with(
                "cannot read the desired composite resource an earlier pipeline step set"
            ),
            "{e}"
        );
    }
}
