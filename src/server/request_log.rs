//! What `--debug` says about a request: which XR it is about, what it
//! carries by name and how large it is, never its values.
//!
//! A reconcile's request holds every observed object whole (some 25 KB for
//! one LLMInference) and secrets besides: connection details, credentials,
//! Secrets fetched as required resources, user fields. A line per call that
//! names the XR, the resources by name and kind and the request's size tells
//! a platform team what Crossplane sent without any of that in the log. It
//! is JSON, whose strings escape control characters, so a newline in a name
//! cannot forge a log line.

use std::borrow::Cow;

use prost::Message;
use serde_json::{Map, Value, json};

use crate::protocol::{fnv1, server};

/// The request's identity and size, as one JSON object.
pub(crate) fn summary(req: &server::RunFunctionRequest) -> Value {
    let bytes = req.encoded_len();
    let Ok(req) = fnv1::RunFunctionRequest::decode(req.encode_to_vec().as_slice()) else {
        return json!({"bytes": bytes, "undecodable": true});
    };
    let mut out = Map::new();
    out.insert(
        "tag".into(),
        json!(
            req.meta
                .as_ref()
                .map(|m| m.tag.as_str())
                .unwrap_or_default()
        ),
    );
    out.insert("bytes".into(), json!(bytes));
    if let Some(xr) = req
        .observed
        .as_ref()
        .and_then(|o| o.composite.as_ref())
        .and_then(|c| c.resource.as_ref())
    {
        out.insert("composite".into(), identity(xr));
    }
    for (field, state) in [("observed", &req.observed), ("desired", &req.desired)] {
        if let Some(s) = state.as_ref().filter(|s| !s.resources.is_empty()) {
            out.insert(field.into(), kinds(s.resources.iter()));
        }
    }
    if !req.required_resources.is_empty() {
        let required: Map<String, Value> = req
            .required_resources
            .iter()
            .map(|(k, rs)| (k.clone(), json!(rs.items.len())))
            .collect();
        out.insert("required".into(), Value::Object(required));
    }
    if !req.credentials.is_empty() {
        out.insert("credentials".into(), json!(req.credentials.len()));
    }
    out.insert("input".into(), json!(req.input.is_some()));
    Value::Object(out)
}

/// `kind name.namespace` of an object.
fn identity(object: &prost_types::Struct) -> Value {
    let field = |v: Option<&prost_types::Value>| match v.and_then(|v| v.kind.as_ref()) {
        Some(prost_types::value::Kind::StringValue(s)) => s.clone(),
        _ => String::new(),
    };
    let metadata = match object.fields.get("metadata").and_then(|m| m.kind.as_ref()) {
        Some(prost_types::value::Kind::StructValue(m)) => Some(m),
        _ => None,
    };
    let mut identity = json!({
        "kind": field(object.fields.get("kind")),
        "name": field(metadata.and_then(|m| m.fields.get("name"))),
        "namespace": field(metadata.and_then(|m| m.fields.get("namespace"))),
    });
    // Which version Crossplane sent: a call that reads an older one than an
    // earlier call did shows a cache that lags.
    let version = field(metadata.and_then(|m| m.fields.get("resourceVersion")));
    if !version.is_empty() {
        identity["resourceVersion"] = json!(version);
    }
    identity
}

/// Each composed resource's name, kind and resource version.
fn kinds<'a>(resources: impl Iterator<Item = (&'a String, &'a fnv1::Resource)>) -> Value {
    Value::Object(
        resources
            .map(|(name, r)| {
                let kind = r.resource.as_ref().map(|o| {
                    let identity = identity(o);
                    let mut kind = json!({"kind": identity["kind"]});
                    if let Some(version) = identity.get("resourceVersion") {
                        kind["resourceVersion"] = version.clone();
                    }
                    kind
                });
                (name.clone(), kind.unwrap_or(Value::Null))
            })
            .collect(),
    )
}

/// `s` with control characters escaped (`\n`, `\u{1b}`), for log fields:
/// a newline in an XR's name would otherwise start a forged log line.
pub(crate) fn escape_control(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::resource::json_to_struct;

    fn object(v: Value) -> prost_types::Struct {
        json_to_struct(v.as_object().unwrap())
    }

    #[test]
    fn the_summary_names_and_sizes_what_a_request_carries_and_no_value() {
        let secret = "hunter2-7f3a";
        let req = fnv1::RunFunctionRequest {
            meta: Some(fnv1::RequestMeta {
                tag: "t".into(),
                ..Default::default()
            }),
            observed: Some(fnv1::State {
                composite: Some(fnv1::Resource {
                    resource: Some(object(json!({"kind": "LLMInference",
                        "metadata": {"name": "qwen\nforged", "namespace": "team-a", "resourceVersion": "41"},
                        "spec": {"connectionString": format!("postgres://a:{secret}@db")}}))),
                    ..Default::default()
                }),
                resources: [(
                    "db".to_string(),
                    fnv1::Resource {
                        resource: Some(object(
                            json!({"kind": "Secret", "metadata": {"resourceVersion": "7"},
                                   "stringData": {"password": secret}}),
                        )),
                        connection_details: [("password".to_string(), secret.as_bytes().to_vec())]
                            .into(),
                        ready: 0,
                    },
                )]
                .into(),
            }),
            input: Some(object(json!({"defaults": {"gpuType": "L4"}}))),
            ..Default::default()
        };
        let bytes = req.encoded_len();
        let wire = crate::protocol::to_server(&req);
        let summary = summary(&wire);
        assert_eq!(
            summary,
            json!({"tag": "t", "bytes": bytes,
                   "composite": {"kind": "LLMInference", "name": "qwen\nforged", "namespace": "team-a",
                                 "resourceVersion": "41"},
                   "observed": {"db": {"kind": "Secret", "resourceVersion": "7"}}, "input": true})
        );
        assert!(!summary.to_string().contains(secret));
    }
}
