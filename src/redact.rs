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

use crate::protocol::struct_json::struct_to_json;
use crate::protocol::{full, wire};

/// What a secret value is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Key fragments (compared lower-case, without `_` and `-`) of values that
/// hold whole connection strings or connection details: redacted here even
/// though [`crate::credential`] does not call them credentials (a connection
/// string without a password is fine in a ConfigMap, but a log need not show it).
const CONNECTION_KEYS: &[&str] = &["connectionstring", "connectiondetails"];

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
        // Only the names: other functions write the context (environment
        // configs among them) in shapes this function cannot know, so no key
        // rule can tell which of its values are secrets.
        out.insert("context".into(), names_only(c.fields.keys()));
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

/// Whether a value under `key` is a secret: a credential (see
/// [`crate::credential`]) or a connection string. References to secrets
/// (`hfTokenSecretRef`, `secretName`, `tokenKeyName`) are not secrets.
pub fn is_secret_key(key: &str) -> bool {
    if crate::credential::is_credential_key(key) {
        return true;
    }
    let k: String = key
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .collect::<String>()
        .to_ascii_lowercase();
    if k.ends_with("ref") || k.ends_with("name") || k.ends_with("namespace") {
        return false;
    }
    CONNECTION_KEYS.iter().any(|s| k.contains(s))
}

/// Whether `arg` is a command-line flag whose next argument is a secret
/// (`--api-key X`, `--hf-token X`). Wider than a credential key, since a
/// log loses little by hiding the value of, say, `--license-key`.
fn is_secret_flag(arg: &str) -> bool {
    let Some(name) = arg.strip_prefix('-') else {
        return false;
    };
    !name.contains('=')
        && (crate::credential::is_credential_key(name)
            || name.to_ascii_lowercase().ends_with("key"))
}

/// Replaces secret values anywhere in `v`: values under secret keys, the
/// value of an environment variable whose name is secret (`{name: API_KEY,
/// value: ...}`), the argument after a secret flag, and credentials inside
/// any string (`https://user:pass@host`, `password=...`, `--api-key=...`).
pub fn redact(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let is_secret_object = m.get("kind").and_then(Value::as_str) == Some("Secret");
            // An environment variable (or any name/value pair) named like a credential.
            let is_secret_pair = m
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(crate::credential::is_credential_key);
            Value::Object(
                m.into_iter()
                    .map(|(k, v)| {
                        let hide = !v.is_null()
                            && (is_secret_key(&k)
                                || (is_secret_pair && k == "value")
                                || OPAQUE_ANNOTATIONS.contains(&k.as_str())
                                || (is_secret_object && (k == "data" || k == "stringData")));
                        let v = if hide { json!(REDACTED) } else { redact(v) };
                        (k, v)
                    })
                    .collect(),
            )
        }
        Value::Array(a) => {
            let mut after_secret_flag = false;
            Value::Array(
                a.into_iter()
                    .map(|v| {
                        let hide = std::mem::take(&mut after_secret_flag) && v.is_string();
                        after_secret_flag = v.as_str().is_some_and(is_secret_flag);
                        if hide { json!(REDACTED) } else { redact(v) }
                    })
                    .collect(),
            )
        }
        Value::String(s) => Value::String(crate::credential::redact_text(&s, REDACTED)),
        other => other,
    }
}

/// `s` with control characters escaped (`\n`, `\u{1b}`), for log fields:
/// a newline in an XR's name would otherwise start a forged log line.
pub fn escape_control(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
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
            "accessKey",
            "x-api-key",
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
            "maxTokens",
            "tokensPerSecondBudget",
            "author",
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

    /// Values that a key-name rule alone lets through, each with the secret
    /// it must hide and a neighbour that must stay.
    #[test]
    fn secrets_in_values_are_replaced() {
        let cases = [
            (
                "env value under a secret name",
                json!({"env": [{"name": "API_KEY", "value": "hunter2"}, {"name": "LOG_LEVEL", "value": "debug"}]}),
                "debug",
            ),
            (
                "env value under a token name",
                json!({"env": [{"name": "HF_TOKEN", "value": "hunter2"}, {"name": "MAX_TOKENS", "value": "512"}]}),
                "512",
            ),
            (
                "flag then value",
                json!({"extraArgs": ["--api-key", "hunter2", "--max-model-len", "4096"]}),
                "4096",
            ),
            (
                "flag=value",
                json!({"extraArgs": ["--api-key=hunter2", "--max-num-seqs=8"]}),
                "--max-num-seqs=8",
            ),
            (
                "token flag then value",
                json!({"extraArgs": ["--hf-token", "hunter2", "--max-num-batched-tokens", "8192"]}),
                "8192",
            ),
            (
                "password in a URL",
                json!({"spec": {"endpoint": "https://user:hunter2@host/v1"}}),
                "https://user:<redacted>@host/v1",
            ),
            (
                "password in a redis URL",
                json!({"spec": {"cache": "redis://:hunter2@redis:6379/0"}}),
                "redis://:<redacted>@redis:6379/0",
            ),
            (
                "password parameter in a string",
                json!({"spec": {"dsn": "host=db user=app password=hunter2"}}),
                "host=db user=app password=<redacted>",
            ),
        ];
        for (reason, v, kept) in cases {
            let got = redact(v).to_string();
            assert!(!got.contains("hunter2"), "{reason}: {got}");
            assert!(got.contains(kept), "{reason}: {kept:?} missing from {got}");
        }
    }

    #[test]
    fn context_values_are_not_logged() {
        let mut ctx = Map::new();
        ctx.insert(
            "apiextensions.crossplane.io/environment".into(),
            json!({"db": {"pw": "hunter2"}}),
        );
        let req = full::RunFunctionRequest {
            context: Some(crate::protocol::struct_json::json_to_struct(&ctx)),
            ..Default::default()
        };
        let got = request(&crate::protocol::to_wire(&req));
        assert_eq!(
            got["context"],
            json!({"apiextensions.crossplane.io/environment": REDACTED})
        );
    }

    #[test]
    fn control_characters_are_escaped() {
        let cases = [
            ("plain", "llama-8b", "llama-8b"),
            ("newline", "x\nERROR forged line", "x\\nERROR forged line"),
            ("carriage return", "x\rthat", "x\\rthat"),
            ("escape sequence", "x\u{1b}[31mred", "x\\u{1b}[31mred"),
            ("non-ASCII stays", "modèle", "modèle"),
        ];
        for (reason, input, want) in cases {
            assert_eq!(escape_control(input), want, "{reason}");
        }
    }
}
