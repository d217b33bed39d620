//! The agents' configuration: a ConfigMap with the system prompt, sampling,
//! tools, guardrails, SLO, memory and session settings, mounted into every
//! agent pod.
//!
//! A ConfigMap is readable by anyone who can read the namespace, so it must
//! never hold a credential: a password in `memoryConfig.connectionString`
//! or a secret-looking guardrail setting is refused, and the memory
//! connection from `connectionSecretRef` reaches the pod only as a
//! `secretKeyRef` environment variable.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, SecretKeySelector};
use serde_json::{Map, Value, json};

use super::config_map::{config_map, pretty};
use crate::xr::agent_pool::{AgentClass, SessionAffinity};

/// File name of the configuration inside the ConfigMap and the pod.
pub const CONFIG_FILE: &str = "agent.json";
/// Where the ConfigMap is mounted.
pub const CONFIG_DIR: &str = "/etc/agent";
/// Environment variable carrying the memory connection string from its Secret.
pub const MEMORY_URL_ENV: &str = "AGENT_MEMORY_URL";
/// Default key of `connectionSecretRef`.
pub const DEFAULT_MEMORY_KEY: &str = "connectionString";

/// The model server the agents talk to.
pub struct ModelEndpoint<'a> {
    /// The Model's name.
    pub name: &'a str,
    /// The name vLLM serves it under (its `modelURL`).
    pub served_model: &'a str,
    /// OpenAI-compatible base URL.
    pub base_url: &'a str,
}

/// Refuses settings that would put a credential into the ConfigMap. The
/// message names the field and the safe alternative, never the value.
pub fn check_no_credentials(class: &AgentClass) -> Result<(), String> {
    if let Some(memory) = &class.memory_config {
        if let Some(conn) = &memory.connection_string
            && holds_password(conn)
        {
            return Err(
                "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; \
                 put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef \
                 {name, key} instead"
                    .into(),
            );
        }
        if memory.connection_string.is_some() && memory.connection_secret_ref.is_some() {
            return Err(
                "spec.agentClass.memoryConfig: set connectionString or connectionSecretRef, not both".into(),
            );
        }
    }
    for (i, g) in class.guardrails.iter().enumerate() {
        if let Some(key) = g.config.keys().find(|k| looks_secret(k)) {
            return Err(format!(
                "spec.agentClass.guardrails[{i}].config.{key} looks like a credential, which would land in a ConfigMap; \
                 put it in a Secret and pass it with spec.env valueFrom.secretKeyRef"
            ));
        }
    }
    Ok(())
}

/// True when a connection string carries a password: `scheme://user:pass@host`
/// or a `password=` style parameter (DSNs and query strings).
pub fn holds_password(conn: &str) -> bool {
    let lower = conn.to_ascii_lowercase();
    let param = ["password=", "passwd=", "pwd=", "secret=", "token=", "auth="]
        .iter()
        .any(|p| {
            lower
                .split(|c: char| c == '?' || c == '&' || c == ';' || c.is_whitespace())
                .any(|part| part.starts_with(p))
        });
    let userinfo = conn
        .split_once("://")
        .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(rest))
        .and_then(|authority| authority.rsplit_once('@'))
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .is_some_and(|(_, password)| !password.is_empty());
    param || userinfo
}

fn looks_secret(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace(['-', '_'], "");
    [
        "password",
        "passwd",
        "secret",
        "token",
        "apikey",
        "credential",
        "privatekey",
    ]
    .iter()
    .any(|s| k.contains(s))
}

/// The `AGENT_MEMORY_URL` variable from the memory Secret, when there is one.
pub fn memory_env(class: &AgentClass) -> Option<EnvVar> {
    let r = class
        .memory_config
        .as_ref()?
        .connection_secret_ref
        .as_ref()?;
    Some(EnvVar {
        name: MEMORY_URL_ENV.into(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: r.name.clone(),
                key: r
                    .key
                    .clone()
                    .filter(|k| !k.is_empty())
                    .unwrap_or_else(|| DEFAULT_MEMORY_KEY.into()),
                optional: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// The configuration document the agents read.
pub fn config_document(
    class: &AgentClass,
    model: &ModelEndpoint,
    session: Option<&SessionAffinity>,
) -> Value {
    let mut doc = Map::new();
    doc.insert(
        "model".into(),
        json!({"name": model.name, "servedModel": model.served_model, "baseURL": model.base_url}),
    );
    if let Some(p) = &class.system_prompt {
        doc.insert("systemPrompt".into(), json!(p));
    }
    let mut sampling = Map::new();
    if let Some(t) = class.temperature {
        sampling.insert("temperature".into(), json!(t));
    }
    if let Some(t) = class.max_tokens {
        sampling.insert("maxTokens".into(), json!(t));
    }
    if let Some(t) = class.max_context_length {
        sampling.insert("maxContextLength".into(), json!(t));
    }
    doc.insert("sampling".into(), Value::Object(sampling));
    doc.insert(
        "tools".into(),
        serde_json::to_value(&class.tool_permissions).unwrap_or_default(),
    );
    doc.insert(
        "guardrails".into(),
        serde_json::to_value(&class.guardrails).unwrap_or_default(),
    );
    if let Some(slo) = &class.slo {
        doc.insert("slo".into(), serde_json::to_value(slo).unwrap_or_default());
    }
    if let Some(m) = &class.memory_config {
        let mut memory = serde_json::to_value(m).unwrap_or_default();
        if let Some(o) = memory.as_object_mut() {
            // The reference stays out; the agents read the Secret's value from the environment.
            if o.remove("connectionSecretRef").is_some() {
                o.insert("connectionStringFromEnv".into(), json!(MEMORY_URL_ENV));
            }
        }
        doc.insert("memory".into(), memory);
    }
    if let Some(s) = session.filter(|s| s.enabled) {
        doc.insert(
            "session".into(),
            serde_json::to_value(s).unwrap_or_default(),
        );
    }
    Value::Object(doc)
}

/// The ConfigMap holding the configuration document.
pub fn agent_config_map(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    document: &Value,
) -> Value {
    config_map(
        name,
        namespace,
        labels,
        BTreeMap::from([(CONFIG_FILE.to_string(), pretty(document))]),
    )
}

/// A short, stable hash of the configuration: a pod annotation, so a
/// changed configuration rolls the agents (FNV-1a, 64 bits).
pub fn config_hash(document: &Value) -> String {
    format!(
        "{:016x}",
        super::names::fnv1a64(document.to_string().as_bytes())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_connection_strings_are_found() {
        let cases = [
            ("redis with password", "redis://:s3cr3t@redis:6379/0", true),
            (
                "user and password",
                "postgres://agent:pw@db:5432/memory",
                true,
            ),
            (
                "postgres DSN",
                "host=db user=agent password=pw dbname=m",
                true,
            ),
            ("query parameter", "rediss://redis:6380?password=pw", true),
            ("no credentials", "redis://redis:6379", false),
            ("user only", "postgres://agent@db/memory", false),
            (
                "memcached host list",
                "memcached-0:11211,memcached-1:11211",
                false,
            ),
        ];
        for (reason, conn, want) in cases {
            assert_eq!(holds_password(conn), want, "{reason}");
        }
    }
}
