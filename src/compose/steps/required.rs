//! An object a composer asked Crossplane for, read from the request's
//! required resources: the one reading both `model_ref` and `model_config`
//! share, so that an unreadable resource is refused the same way for both.

use serde_json::{Map, Value};

use crate::compose::ComposeRequest;
use crate::protocol::raw_message::decode_problem;
use crate::protocol::struct_json::struct_to_json;

/// What Crossplane returned for one requirement.
#[derive(Debug)]
pub enum Required {
    /// Crossplane has not looked it up yet: the requirement is new.
    NotLookedUp,
    /// It looked, and found no object of that name.
    Missing,
    Found(Map<String, Value>),
}

/// The object named `name` among what Crossplane returned for the
/// requirement `key`. A returned resource that cannot be decoded is an error
/// saying why (never skipped: skipping it would report an existing object
/// as missing).
pub fn required_object(req: &ComposeRequest, key: &str, name: &str) -> Result<Required, String> {
    let Some(found) = req.required.get(key) else {
        return Ok(Required::NotLookedUp);
    };
    let mut objects = Vec::with_capacity(found.items.len());
    for raw in &found.items {
        let r = raw.decode_full().map_err(|e| {
            format!(
                "Crossplane returned a resource that cannot be read ({})",
                decode_problem(&e)
            )
        })?;
        objects.extend(r.resource.as_ref().map(struct_to_json));
    }
    Ok(objects
        .into_iter()
        .find(|o| crate::compose::str_at(o, &["metadata", "name"]) == name)
        .map_or(Required::Missing, Required::Found))
}
