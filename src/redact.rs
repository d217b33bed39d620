//! A request as the debug log shows it, with secrets removed.
//!
//! `--debug` logs each request so that a platform team can see what
//! Crossplane sent. Requests carry secrets: connection details of composed
//! resources, credentials Crossplane passes to the function, Secrets fetched
//! as required resources, and user fields such as `connectionString`. Every
//! such value is replaced by [`REDACTED`] before anything is written; keys
//! stay, so the log still shows that a value was there.

use prost::Message;
use serde_json::{Map, Value, json};

use crate::convert::struct_to_json;
use crate::proto::{full, wire};

/// What a secret value is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Key fragments (compared lower-case, without `_` and `-`) that mark a secret value.
const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "token",
    "secret",
    "credential",
    "connectionstring",
    "connectiondetails",
    "apikey",
    "privatekey",
    "auth",
];

/// Annotations that may embed a whole object, Secrets included.
const OPAQUE_ANNOTATIONS: &[&str] = &["kubectl.kubernetes.io/last-applied-configuration"];

/// The request as JSON, every secret replaced by [`REDACTED`].
pub fn request(req: &wire::RunFunctionRequest) -> Value {
    let Ok(req) = full::RunFunctionRequest::decode(req.encode_to_vec().as_slice()) else {
        return json!({"undecodable": true});
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
    if let Some(s) = &req.observed {
        out.insert("observed".into(), state(s));
    }
    if let Some(s) = &req.desired {
        out.insert("desired".into(), state(s));
    }
    if let Some(i) = &req.input {
        out.insert("input".into(), redact(Value::Object(struct_to_json(i))));
    }
    if let Some(c) = &req.context {
        out.insert("context".into(), redact(Value::Object(struct_to_json(c))));
    }
    if !req.credentials.is_empty() {
        // Only the names: every credential is a secret.
        out.insert("credentials".into(), names_only(req.credentials.keys()));
    }
    if !req.required_resources.is_empty() {
        let required: Map<String, Value> = req
            .required_resources
            .iter()
            .map(|(k, rs)| (k.clone(), rs.items.iter().map(resource).collect()))
            .collect();
        out.insert("requiredResources".into(), Value::Object(required));
    }
    Value::Object(out)
}

/// The names of secret values, each value replaced by [`REDACTED`].
fn names_only<'a>(names: impl Iterator<Item = &'a String>) -> Value {
    Value::Object(names.map(|k| (k.clone(), json!(REDACTED))).collect())
}

fn state(s: &full::State) -> Value {
    let mut out = Map::new();
    if let Some(c) = &s.composite {
        out.insert("composite".into(), resource(c));
    }
    let resources: Map<String, Value> = s
        .resources
        .iter()
        .map(|(k, r)| (k.clone(), resource(r)))
        .collect();
    out.insert("resources".into(), Value::Object(resources));
    Value::Object(out)
}

fn resource(r: &full::Resource) -> Value {
    let mut out = Map::new();
    if let Some(s) = &r.resource {
        out.insert("resource".into(), redact(Value::Object(struct_to_json(s))));
    }
    if !r.connection_details.is_empty() {
        out.insert(
            "connectionDetails".into(),
            names_only(r.connection_details.keys()),
        );
    }
    out.insert("ready".into(), json!(r.ready));
    Value::Object(out)
}

/// Whether a value under `key` is a secret. References to secrets
/// (`hfTokenSecretRef`, `secretName`, `tokenKeyName`) are not secrets.
pub fn is_secret_key(key: &str) -> bool {
    let k: String = key
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .collect::<String>()
        .to_ascii_lowercase();
    if k.ends_with("ref") || k.ends_with("name") || k.ends_with("namespace") {
        return false;
    }
    SECRET_KEYS.iter().any(|s| k.contains(s))
}

/// Replaces secret values anywhere in `v`.
pub fn redact(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let is_secret_object = m.get("kind").and_then(Value::as_str) == Some("Secret");
            Value::Object(
                m.into_iter()
                    .map(|(k, v)| {
                        let hide = !v.is_null()
                            && (is_secret_key(&k)
                                || OPAQUE_ANNOTATIONS.contains(&k.as_str())
                                || (is_secret_object && (k == "data" || k == "stringData")));
                        let v = if hide { json!(REDACTED) } else { redact(v) };
                        (k, v)
                    })
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.into_iter().map(redact).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_keys_are_recognised_and_references_are_not() {
        for k in [
            "password",
            "connectionString",
            "connection_string",
            "apiKey",
            "API_KEY",
            "hfToken",
            "clientSecret",
            "credentials",
            "Authorization",
        ] {
            assert!(is_secret_key(k), "{k} is a secret");
        }
        for k in [
            "hfTokenSecretRef",
            "secretName",
            "tokenKeyName",
            "model",
            "gpu",
            "name",
        ] {
            assert!(!is_secret_key(k), "{k} is not a secret");
        }
    }

    #[test]
    fn secrets_are_replaced_at_any_depth() {
        let v = json!({
            "spec": {"connectionString": "postgres://u:hunter2@db", "model": "m",
                     "env": [{"name": "X", "password": "hunter2"}]},
            "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"p\":\"hunter2\"}"}},
        });
        let got = redact(v);
        assert!(!got.to_string().contains("hunter2"), "{got}");
        assert_eq!(got["spec"]["model"], "m");
        assert_eq!(got["spec"]["connectionString"], REDACTED);
    }

    #[test]
    fn secret_objects_lose_their_data() {
        let v = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                       "data": {"k": "aHVudGVyMg=="}, "stringData": {"k": "hunter2"}});
        let got = redact(v);
        assert_eq!(got["data"], REDACTED);
        assert_eq!(got["stringData"], REDACTED);
        assert_eq!(got["metadata"]["name"], "s");
    }
}
