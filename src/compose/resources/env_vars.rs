//! A container's environment variables: a literal value, or a key of a
//! Secret (never its value, which stays in the Secret).

use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, SecretKeySelector};

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
