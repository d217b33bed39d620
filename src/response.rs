//! Writing the response, in the SDK's words: `to` starts it from the
//! request (the tag, a TTL, the desired state earlier steps built, the
//! pipeline context); the composer's desired resources, the XR's status,
//! results, conditions and requirements are added to it. Results and
//! conditions are built here only, so wording, reasons and severities stay
//! the same across kinds.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use prost::Message;

use crate::protocol::resource::{json_to_value, json_to_view};
use crate::protocol::server::{
    Condition, Ready, Requirements, Resource, ResourceSelector, ResponseMeta, Result as FnResult,
    RunFunctionRequest, RunFunctionResponse, Severity, Status, Target,
};
use crate::protocol::view;

/// The response to `req`: its tag, a TTL of `ttl`, the desired state
/// of earlier steps (everything this function has no opinion about passes
/// through as it came) and the pipeline context (other functions' notes;
/// this function adds nothing to it and drops nothing).
pub(crate) fn to(req: &mut RunFunctionRequest, ttl: Duration) -> RunFunctionResponse {
    RunFunctionResponse {
        meta: Some(ResponseMeta {
            tag: req.meta.as_ref().map(|m| m.tag.clone()).unwrap_or_default(),
            ttl: Some(protobuf_duration(ttl)),
        }),
        desired: Some(req.desired.take().unwrap_or_default()),
        context: req.context.take(),
        ..Default::default()
    }
}

/// Asks Crossplane to call again after `ttl` (its response cache, too,
/// keeps the answer that long).
pub(crate) fn set_ttl(rsp: &mut RunFunctionResponse, ttl: Duration) {
    if let Some(meta) = rsp.meta.as_mut() {
        meta.ttl = Some(protobuf_duration(ttl));
    }
}

/// Asks Crossplane to call again within `ttl`, when sooner than asked so far.
pub(crate) fn call_again_within(rsp: &mut RunFunctionResponse, ttl: Duration) {
    if let Some(meta) = rsp.meta.as_mut() {
        let sooner = meta
            .ttl
            .and_then(|t| Duration::try_from(t).ok())
            .is_none_or(|now| ttl < now);
        if sooner {
            meta.ttl = Some(protobuf_duration(ttl));
        }
    }
}

/// `ttl` as protobuf writes it; a TTL beyond its range (about 292 billion
/// years) is written as the longest it holds.
pub(crate) fn protobuf_duration(ttl: Duration) -> prost_types::Duration {
    prost_types::Duration::try_from(ttl).unwrap_or(prost_types::Duration {
        seconds: i64::MAX,
        nanos: 999_999_999,
    })
}

/// Sets the desired object composed under `name`, with its readiness.
pub(crate) fn set_desired_resource(
    rsp: &mut RunFunctionResponse,
    name: &str,
    object: &Map<String, Value>,
    ready: Ready,
) {
    let desired = rsp.desired.get_or_insert_with(Default::default);
    desired.resources.insert(
        name.to_string(),
        Resource {
            resource: Some(json_to_view(object)),
            ready: ready as i32,
            ..Default::default()
        },
    );
}

/// Merges `status` into the desired XR an earlier step may have set (or an
/// empty one): its
/// fields win over the earlier status's, whose others are kept. Only
/// `apiVersion`, `kind` and `status` are written: a function never sets an
/// XR's spec or metadata. The earlier object's other fields, and the
/// earlier status's fields, stay encoded as they came, however deep they
/// nest. An earlier status that cannot be read as an object is an error
/// naming it.
pub(crate) fn merge_status(
    composite: &mut Resource,
    api_version: &str,
    kind: &str,
    status: &Map<String, Value>,
) -> Result<(), String> {
    let object = composite.resource.get_or_insert_with(Default::default);
    let mut merged = match object.fields.get("status") {
        Some(earlier) => match view::StructValue::decode(earlier.as_slice()) {
            Ok(earlier) => earlier.struct_value.unwrap_or_default(),
            Err(e) => {
                return Err(format!(
                    "cannot read the status an earlier pipeline step set on the desired composite resource, to \
                     merge into it ({})",
                    crate::protocol::resource::decode_problem(&e)
                ));
            }
        },
        None => view::Struct::default(),
    };
    merged.fields.extend(json_to_view(status).fields);
    let text = |s: &str| json_to_value(&Value::String(s.to_string())).encode_to_vec();
    object
        .fields
        .entry("apiVersion".into())
        .or_insert_with(|| text(api_version));
    object
        .fields
        .entry("kind".into())
        .or_insert_with(|| text(kind));
    object.fields.insert(
        "status".into(),
        view::StructValue {
            struct_value: Some(merged),
        }
        .encode_to_vec(),
    );
    Ok(())
}

/// Sets what the response requires Crossplane to fetch.
pub(crate) fn require(
    rsp: &mut RunFunctionResponse,
    resources: BTreeMap<String, ResourceSelector>,
) {
    if !resources.is_empty() {
        rsp.requirements = Some(Requirements {
            resources,
            ..Default::default()
        });
    }
}

/// A FATAL result: Crossplane stops the pipeline and reports `message`.
pub fn fatal(reason: &str, message: impl Into<String>) -> FnResult {
    result(Severity::Fatal, reason, message)
}

/// A NORMAL result: an event that says what the function does and why.
pub(crate) fn normal(reason: &str, message: impl Into<String>) -> FnResult {
    result(Severity::Normal, reason, message)
}

/// A WARNING result. Emit only on a transition: results become events.
pub(crate) fn warning(reason: &str, message: impl Into<String>) -> FnResult {
    result(Severity::Warning, reason, message)
}

/// Results and conditions target the composite, as Crossplane's SDKs do by
/// default: v2 namespaced XRs have no claim.
const TARGET: Target = Target::Composite;

fn result(severity: Severity, reason: &str, message: impl Into<String>) -> FnResult {
    FnResult {
        severity: severity as i32,
        message: message.into(),
        reason: Some(reason.to_string()),
        target: Some(TARGET as i32),
    }
}

/// A condition on the XR. `reason` is PascalCase and never empty.
pub(crate) fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    message: impl Into<String>,
) -> Condition {
    Condition {
        r#type: type_.to_string(),
        status: if status {
            Status::ConditionTrue
        } else {
            Status::ConditionFalse
        } as i32,
        reason: reason.to_string(),
        message: Some(message.into()).filter(|m: &String| !m.is_empty()),
        target: Some(TARGET as i32),
    }
}

/// A condition whose truth is not known yet (for example while waiting for a Model).
pub(crate) fn condition_unknown(
    type_: &str,
    reason: &str,
    message: impl Into<String>,
) -> Condition {
    Condition {
        status: Status::ConditionUnknown as i32,
        ..condition(type_, false, reason, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::resource::view_to_json;
    use serde_json::json;

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_status_merges_into_an_earlier_steps_and_nothing_else_changes() {
        let earlier = object(json!({"apiVersion": "x/v1", "kind": "X", "spec": {"a": 1},
                                    "status": {"earlier": "kept", "ready": "overwritten"}}));
        let mut composite = Resource {
            resource: Some(json_to_view(&earlier)),
            connection_details: [("url".to_string(), b"http://x".to_vec())].into(),
            ready: Ready::True as i32,
        };
        merge_status(
            &mut composite,
            "y/v1",
            "Y",
            &object(json!({"ready": "True", "n": 2})),
        )
        .unwrap();
        assert_eq!(
            view_to_json(composite.resource.as_ref().unwrap()).unwrap(),
            object(json!({"apiVersion": "x/v1", "kind": "X", "spec": {"a": 1},
                          "status": {"earlier": "kept", "ready": "True", "n": 2}}))
        );
        assert_eq!(composite.ready, Ready::True as i32);
        assert_eq!(composite.connection_details.len(), 1);
    }

    #[test]
    fn with_no_earlier_desired_xr_the_status_comes_with_its_api_version_and_kind() {
        let mut composite = Resource::default();
        merge_status(
            &mut composite,
            "infer.dev/v1alpha1",
            "Model",
            &object(json!({"phase": "Ready"})),
        )
        .unwrap();
        assert_eq!(
            view_to_json(composite.resource.as_ref().unwrap()).unwrap(),
            object(
                json!({"apiVersion": "infer.dev/v1alpha1", "kind": "Model", "status": {"phase": "Ready"}})
            )
        );
    }

    #[test]
    fn a_ttl_only_shortens() {
        let ttl = |rsp: &RunFunctionResponse| rsp.meta.as_ref()?.ttl.map(|t| (t.seconds, t.nanos));
        let mut rsp = to(
            &mut RunFunctionRequest::default(),
            Duration::from_millis(60_500),
        );
        call_again_within(&mut rsp, Duration::from_secs(90));
        assert_eq!(ttl(&rsp), Some((60, 500_000_000)));
        call_again_within(&mut rsp, Duration::from_secs(60));
        assert_eq!(ttl(&rsp), Some((60, 0)));
    }
}
