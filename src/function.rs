//! One `RunFunction` call, start to finish, with no I/O.
//!
//! The gRPC server, `render` and the benchmarks all call [`run_function`].
//! It copies the tag, sets the TTL, starts from the desired state earlier
//! steps built (passing through everything it has no opinion about), reads
//! the step input, dispatches on the XR's kind and merges what the composer
//! returns. Any problem with the request becomes a FATAL result that names
//! it; nothing here panics on bad input.

use serde_json::{Map, Value};

use crate::compose::{self, ComposeRequest, Composite, Observed};
use crate::convert::{json_to_struct, struct_to_json};
use crate::input::{Input, Settings};
use crate::outcome;
use crate::proto::{full, wire};
use crate::raw_resource::RawResource;

/// Annotation Crossplane puts on every composed resource; render shows it too.
pub const COMPOSITION_RESOURCE_NAME: &str = "crossplane.io/composition-resource-name";

/// Which XR a call was about, for logs and metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subject {
    pub kind: String,
    pub name: String,
    pub namespace: String,
}

/// One finished call.
#[derive(Debug)]
pub struct Call {
    pub subject: Subject,
    pub response: wire::RunFunctionResponse,
}

/// Runs the function for one request.
pub fn run_function(req: wire::RunFunctionRequest) -> wire::RunFunctionResponse {
    run(req).response
}

/// Runs the function and says which XR the call was about.
pub fn run(req: wire::RunFunctionRequest) -> Call {
    let mut subject = Subject::default();
    let response = respond(req, &mut subject);
    Call { subject, response }
}

/// Answers with only the tag and TTL: the `--noop` transport floor.
pub fn noop(req: &wire::RunFunctionRequest) -> Call {
    let tag = req.meta.as_ref().map(|m| m.tag.clone()).unwrap_or_default();
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

/// The core of [`run`]. `subject` is filled in as soon as the XR is read, so
/// a caller that catches a panic can still say which XR caused it.
pub fn respond(req: wire::RunFunctionRequest, subject: &mut Subject) -> wire::RunFunctionResponse {
    respond_with(req, subject, compose::composer_for)
}

/// [`respond`] with the composer lookup given (see [`compose::Dispatch`]).
pub fn respond_with(
    mut req: wire::RunFunctionRequest,
    subject: &mut Subject,
    dispatch: compose::Dispatch,
) -> wire::RunFunctionResponse {
    let tag = req.meta.as_ref().map(|m| m.tag.clone()).unwrap_or_default();
    let mut rsp = wire::RunFunctionResponse {
        meta: Some(wire::ResponseMeta {
            tag,
            ttl: Some(ttl(crate::input::DEFAULT_TTL_SECONDS)),
        }),
        // Earlier steps' desired state is the starting point, moved not copied.
        desired: Some(req.desired.take().unwrap_or_default()),
        ..Default::default()
    };
    let settings = match read_input(req.input.as_ref()) {
        Ok(s) => s,
        Err(message) => return refuse(rsp, "InvalidInput", message),
    };
    if let Some(meta) = rsp.meta.as_mut() {
        meta.ttl = Some(ttl(settings.ttl_seconds));
    }
    let composite = match observed_composite(&req) {
        Ok(c) => c,
        Err(message) => return refuse(rsp, "MissingComposite", message),
    };
    *subject = Subject {
        kind: composite.kind.clone(),
        name: composite.name.clone(),
        namespace: composite.namespace.clone(),
    };
    let Some(compose) = dispatch(&composite.kind) else {
        let message = format!(
            "function-inference cannot compose kind {:?} ({}); it composes {}",
            composite.kind,
            composite.api_version,
            compose::KINDS.join(", ")
        );
        return refuse(rsp, "UnknownKind", message);
    };
    let empty = Default::default();
    let observed_resources = req.observed.as_ref().map_or(&empty, |o| &o.resources);
    let request = ComposeRequest {
        xr: &composite,
        observed: Observed::new(observed_resources),
        required: &req.required_resources,
        settings: &settings,
    };
    // A panic in a composer is a bug; answering FATAL here keeps the desired
    // state of earlier steps in the response instead of losing it.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| compose(&request))) {
        Ok(Ok(composition)) => apply(rsp, &composite, &request.observed, composition),
        Ok(Err(refusal)) => refuse(rsp, refusal.reason, refusal.message),
        Err(panic) => {
            let what = panic_message(panic.as_ref());
            tracing::error!(kind = %composite.kind, name = %composite.name, panic = %what, "composer panicked");
            let message = format!(
                "function-inference failed on {} {:?}: {what}; this is a bug, please report it",
                composite.kind, composite.name
            );
            refuse(rsp, "InternalError", message)
        }
    }
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

fn read_input(input: Option<&prost_types::Struct>) -> Result<Settings, String> {
    let Some(input) = input else {
        return Ok(Settings::default());
    };
    let value = Value::Object(struct_to_json(input));
    let parsed: Input = crate::de::from_value(value, "input")
        .map_err(|e| format!("cannot read the step input: {e}"))?;
    parsed
        .settings()
        .map_err(|e| format!("invalid step input: {e}"))
}

fn observed_composite(req: &wire::RunFunctionRequest) -> Result<Composite, String> {
    let raw = req
        .observed
        .as_ref()
        .and_then(|o| o.composite.as_ref())
        .ok_or("the request has no observed composite resource")?;
    let full = raw
        .decode_full()
        .map_err(|e| format!("cannot decode the observed composite resource: {e}"))?;
    let object = full
        .resource
        .as_ref()
        .map(struct_to_json)
        .ok_or("the observed composite resource is empty")?;
    Composite::from_object(object)
}

fn apply(
    mut rsp: wire::RunFunctionResponse,
    xr: &Composite,
    observed: &Observed,
    composition: compose::Composition,
) -> wire::RunFunctionResponse {
    let desired = rsp.desired.get_or_insert_with(Default::default);
    if !composition.status.is_empty() {
        desired.composite = Some(merge_status(
            desired.composite.as_ref(),
            xr,
            composition.status,
        ));
    }
    for name in &composition.keep_observed {
        if composition.resources.contains_key(name) || desired.resources.contains_key(name) {
            continue;
        }
        if let Some(object) = observed.get(name) {
            let manifest = compose::desired_from_observed(object);
            desired.resources.insert(
                name.clone(),
                encode_resource(&manifest, wire::Ready::Unspecified),
            );
        }
    }
    for (name, composed) in composition.resources {
        desired
            .resources
            .insert(name, encode_resource(&composed.manifest, composed.ready));
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

/// Merges the composer's status into the desired composite earlier steps
/// built, keeping their fields. Only apiVersion, kind and status are written:
/// a function never sets an XR's spec or metadata.
fn merge_status(
    existing: Option<&RawResource>,
    xr: &Composite,
    status: Map<String, Value>,
) -> RawResource {
    let mut existing = existing
        .and_then(|r| r.decode_full().ok())
        .unwrap_or_default();
    let mut object = existing
        .resource
        .as_ref()
        .map(struct_to_json)
        .unwrap_or_default();
    object
        .entry("apiVersion")
        .or_insert_with(|| Value::String(xr.api_version.clone()));
    object
        .entry("kind")
        .or_insert_with(|| Value::String(xr.kind.clone()));
    let merged = object
        .entry("status")
        .or_insert_with(|| Value::Object(Map::new()));
    if !merged.is_object() {
        *merged = Value::Object(Map::new());
    }
    if let Value::Object(m) = merged {
        m.extend(status);
    }
    existing.resource = Some(json_to_struct(&object));
    RawResource::from_full(&existing)
}

fn encode_resource(manifest: &Value, ready: wire::Ready) -> RawResource {
    RawResource::from_full(&full::Resource {
        resource: manifest.as_object().map(json_to_struct),
        ready: ready as i32,
        ..Default::default()
    })
}

/// The text a panic carried, if any.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
