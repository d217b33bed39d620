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

use k8s_openapi::api::core::v1::EnvVar;
use serde_json::{Map, Value, json};

use crate::compose::resources::config_map::{config_map, pretty};
use crate::compose::resources::env_vars;
use crate::credential::{holds_credential, is_credential_key};
use crate::xr::agent_pool::{AgentClass, MEMORY_KEY, SessionAffinity};

/// File name of the configuration inside the ConfigMap and the pod.
pub(crate) const CONFIG_FILE: &str = "agent.json";
/// Where the ConfigMap is mounted.
pub(crate) const CONFIG_DIR: &str = "/etc/agent";
/// Environment variable carrying the memory connection string from its Secret.
pub(crate) const MEMORY_URL_ENV: &str = "AGENT_MEMORY_URL";

/// The model server the agents talk to.
pub(crate) struct ModelEndpoint<'a> {
    /// The Model's name.
    pub(crate) name: &'a str,
    /// The name vLLM serves it under (its `modelURL`).
    pub(crate) served_model: &'a str,
    /// OpenAI-compatible base URL.
    pub(crate) base_url: &'a str,
}

/// Refuses settings that would put a credential into the ConfigMap. The
/// message names the field and the safe alternative, never the value. What
/// counts as a credential is decided in one place, [`crate::credential`].
pub(crate) fn check_no_credentials(class: &AgentClass) -> Result<(), String> {
    if let Some(memory) = &class.memory_config {
        if let Some(conn) = &memory.connection_string
            && holds_credential(conn)
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
        for (key, value) in &g.config {
            if is_credential_key(key) {
                return Err(format!(
                    "spec.agentClass.guardrails[{i}].config.{key} looks like a credential, which would land in a ConfigMap; \
                     put it in a Secret and pass it with spec.env valueFrom.secretKeyRef"
                ));
            }
            if holds_credential(value) {
                return Err(format!(
                    "spec.agentClass.guardrails[{i}].config.{key} holds a credential (a password in a URL or a secret \
                     key=value pair), which would land in a ConfigMap; put it in a Secret and pass it with spec.env \
                     valueFrom.secretKeyRef"
                ));
            }
        }
    }
    Ok(())
}

/// The `AGENT_MEMORY_URL` variable from the memory Secret, when there is one.
pub(crate) fn memory_env(class: &AgentClass) -> Option<EnvVar> {
    let r = class
        .memory_config
        .as_ref()?
        .connection_secret_ref
        .as_ref()?;
    let (name, key) = r.name_and_key(MEMORY_KEY);
    Some(env_vars::from_secret(MEMORY_URL_ENV, name, key))
}

/// The configuration document the agents read.
pub(crate) fn config_document(
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

/// The ConfigMap holding the configuration document, whose data is
/// [`config_data`].
pub(crate) fn agent_config_map(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    data: BTreeMap<String, String>,
) -> crate::compose::composition::Manifest {
    config_map(name, namespace, labels, data)
}

/// The ConfigMap's data: the document, pretty-printed, under one key.
pub(crate) fn config_data(document: &Value) -> BTreeMap<String, String> {
    BTreeMap::from([(CONFIG_FILE.to_string(), pretty(document))])
}

/// A short, stable hash of the configuration: a pod annotation, so a
/// changed configuration rolls the agents (FNV-1a, 64 bits).
pub(crate) fn config_hash(document: &Value) -> String {
    format!(
        "{:016x}",
        crate::names::fnv1a64(document.to_string().as_bytes())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xr::agent_pool::{Guardrail, MemoryConfig};

    fn with_connection(conn: &str) -> AgentClass {
        AgentClass {
            memory_config: Some(MemoryConfig {
                connection_string: Some(conn.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn with_guardrail_config(key: &str, value: &str) -> AgentClass {
        AgentClass {
            guardrails: vec![Guardrail {
                type_: "content-filter".into(),
                config: BTreeMap::from([(key.to_string(), value.to_string())]),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    const IN_CONNECTION: &str = "spec.agentClass.memoryConfig.connectionString holds a password, which would land in a ConfigMap; \
        put the connection string in a Secret and set spec.agentClass.memoryConfig.connectionSecretRef {name, key} instead";

    #[test]
    fn credentials_in_connection_strings_are_refused() {
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
            ("spaces around =", "host=db user=agent password = pw", true),
            ("ADO.NET style", "Server=db;User Id=agent;Password=x;", true),
            ("query parameter", "rediss://redis:6380?password=pw", true),
            ("api_key parameter", "rediss://redis:6380?api_key=k", true),
            (
                "access_token parameter",
                "https://mem.example.com/v1?access_token=t",
                true,
            ),
            ("sslpassword", "host=db sslpassword=x", true),
            ("userinfo without a scheme", "agent:pw@db:5432/memory", true),
            ("no credentials", "redis://redis:6379", false),
            ("user only", "postgres://agent@db/memory", false),
            (
                "memcached host list",
                "memcached-0:11211,memcached-1:11211",
                false,
            ),
            (
                "DSN without password",
                "host=db user=agent dbname=m sslmode=require",
                false,
            ),
        ];
        for (reason, conn, refused) in cases {
            let want = if refused {
                Err(IN_CONNECTION.to_string())
            } else {
                Ok(())
            };
            assert_eq!(
                check_no_credentials(&with_connection(conn)),
                want,
                "{reason}"
            );
        }
    }

    #[test]
    fn credentials_in_guardrail_config_are_refused() {
        let key = |k: &str| {
            Err(format!(
                "spec.agentClass.guardrails[0].config.{k} looks like a credential, which would land in a ConfigMap; \
                 put it in a Secret and pass it with spec.env valueFrom.secretKeyRef"
            ))
        };
        let value = |k: &str| {
            Err(format!(
                "spec.agentClass.guardrails[0].config.{k} holds a credential (a password in a URL or a secret \
                 key=value pair), which would land in a ConfigMap; put it in a Secret and pass it with spec.env \
                 valueFrom.secretKeyRef"
            ))
        };
        let cases = [
            ("api key", "apiKey", "sk-1", key("apiKey")),
            (
                "authorization header",
                "authorization",
                "Bearer x",
                key("authorization"),
            ),
            ("auth", "auth", "u:p", key("auth")),
            ("access key", "accessKey", "AKIA", key("accessKey")),
            ("client secret", "client_secret", "s", key("client_secret")),
            (
                "password in endpoint",
                "endpoint",
                "https://u:p@filter.example.com",
                value("endpoint"),
            ),
            (
                "token in query",
                "url",
                "https://filter.example.com/?access_token=t",
                value("url"),
            ),
            ("max tokens", "max_tokens", "512", Ok(())),
            ("token budget", "token_budget", "1000", Ok(())),
            ("tokenizer", "tokenizer", "cl100k", Ok(())),
            ("author", "author", "jane", Ok(())),
            (
                "plain endpoint",
                "endpoint",
                "https://filter.example.com/v1",
                Ok(()),
            ),
            ("secret reference", "apiKeySecretRef", "filter-key", Ok(())),
        ];
        for (reason, k, v, want) in cases {
            assert_eq!(
                check_no_credentials(&with_guardrail_config(k, v)),
                want,
                "{reason}"
            );
        }
    }
}
