//! A container's environment variables: a literal value, or a key of a
//! Secret (never its value, which stays in the Secret); and the check of
//! the variables a user adds.

use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, SecretKeySelector};

use crate::names;

/// The variable `name` set to `value`.
pub(crate) fn literal(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        value_from: None,
    }
}

/// The variable `name` read from `key` of the Secret `secret`.
pub(crate) fn from_secret(name: &str, secret: &str, key: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: None,
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.into(),
                key: key.into(),
                optional: None,
            }),
            ..Default::default()
        }),
    }
}

/// What a container's environment may read of its pod (`fieldRef`), as
/// the API server allows it; `metadata.labels['<key>']` and
/// `metadata.annotations['<key>']` besides.
const POD_FIELDS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// What a container's environment may read of its resources
/// (`resourceFieldRef`), as the API server allows it; hugepages besides.
const CONTAINER_RESOURCES: &[&str] = &[
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
];

/// A user's variables at `field` as the API server checks them in a pod
/// template, so that a Deployment it would refuse is refused here, naming
/// the XR's field: a name, and a value or exactly one source to read.
pub(crate) fn check(field: &str, env: &[EnvVar]) -> Result<(), String> {
    for (i, var) in env.iter().enumerate() {
        let at = format!("{field}[{i}]");
        names::require_env_var_name(&format!("{at}.name"), &var.name)?;
        let Some(from) = &var.value_from else {
            continue;
        };
        let sources = [
            from.secret_key_ref.is_some(),
            from.config_map_key_ref.is_some(),
            from.field_ref.is_some(),
            from.resource_field_ref.is_some(),
        ];
        let one_source = "give one of secretKeyRef, configMapKeyRef, fieldRef or resourceFieldRef";
        match sources.iter().filter(|s| **s).count() {
            0 => return Err(format!("{at}.valueFrom reads nothing; {one_source}")),
            1 => {}
            _ => {
                return Err(format!(
                    "{at}.valueFrom reads from several sources; {one_source}"
                ));
            }
        }
        if var.value.as_deref().is_some_and(|v| !v.is_empty()) {
            return Err(format!(
                "{at} has both value and valueFrom; give one: a literal value, or where to read it from"
            ));
        }
        if let Some(s) = &from.secret_key_ref {
            let at = format!("{at}.valueFrom.secretKeyRef");
            names::require_subdomain(&format!("{at}.name"), &s.name, "agent-secrets")?;
            names::require_data_key(&format!("{at}.key"), &s.key, "api-key")?;
        }
        if let Some(c) = &from.config_map_key_ref {
            let at = format!("{at}.valueFrom.configMapKeyRef");
            names::require_subdomain(&format!("{at}.name"), &c.name, "agent-settings")?;
            names::require_data_key(&format!("{at}.key"), &c.key, "log-level")?;
        }
        if let Some(f) = &from.field_ref {
            let path = f.field_path.as_str();
            let subscript = ["metadata.labels['", "metadata.annotations['"]
                .iter()
                .find_map(|p| path.strip_prefix(p)?.strip_suffix("']"));
            if !(POD_FIELDS.contains(&path) || subscript.is_some_and(names::is_qualified_name)) {
                return Err(format!(
                    "{at}.valueFrom.fieldRef.fieldPath is {}; a variable reads one of {}, or \
                     metadata.labels['<key>'] or metadata.annotations['<key>']",
                    crate::quote::shown(path),
                    POD_FIELDS.join(", ")
                ));
            }
        }
        if let Some(r) = &from.resource_field_ref {
            let resource = r.resource.as_str();
            let hugepages = ["limits.hugepages-", "requests.hugepages-"]
                .iter()
                .any(|p| {
                    resource
                        .strip_prefix(p)
                        .is_some_and(|size| !size.is_empty())
                });
            if !(CONTAINER_RESOURCES.contains(&resource) || hugepages) {
                return Err(format!(
                    "{at}.valueFrom.resourceFieldRef.resource is {}; use one of {}, or limits.hugepages-<size>",
                    crate::quote::shown(resource),
                    CONTAINER_RESOURCES.join(", ")
                ));
            }
        }
    }
    Ok(())
}
