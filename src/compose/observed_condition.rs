//! A status condition of an observed object, as read: the one reader that
//! readiness, pod diagnosis and provider-kubernetes claims share.

use serde_json::{Map, Value};

use crate::request::{int_at, str_at};

/// A status condition, as read.
#[derive(Debug)]
pub(crate) struct Condition {
    pub(crate) status: String,
    pub(crate) reason: String,
    pub(crate) message: String,
    observed_generation: Option<i64>,
}

impl Condition {
    /// Whether it speaks of `o`'s current spec (a condition without
    /// observedGeneration, from older controllers, is believed).
    pub(crate) fn is_current(&self, o: &Map<String, Value>) -> bool {
        self.observed_generation
            .is_none_or(|g| g >= int_at(o, &["metadata", "generation"]).unwrap_or(0))
    }

    pub(crate) fn message_or(&self, fallback: &str) -> String {
        if self.message.is_empty() {
            fallback.to_string()
        } else {
            self.message.clone()
        }
    }
}

/// The condition of `type_` in `o.status.conditions`.
pub(crate) fn condition(o: &Map<String, Value>, type_: &str) -> Option<Condition> {
    o.get("status")?
        .get("conditions")?
        .as_array()?
        .iter()
        .filter_map(Value::as_object)
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
        .map(|c| Condition {
            status: str_at(c, &["status"]).to_string(),
            reason: str_at(c, &["reason"]).to_string(),
            message: str_at(c, &["message"]).to_string(),
            observed_generation: int_at(c, &["observedGeneration"]),
        })
}
