//! Reading and setting an annotation of a composed or observed object.

use serde_json::{Map, Value};

/// The annotation `name` of `object`, if it has one.
pub(crate) fn annotation<'a>(object: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    object
        .get("metadata")?
        .get("annotations")?
        .get(name)?
        .as_str()
}

/// Sets the annotation `name` of `object` to `value`.
pub(crate) fn set_annotation(object: &mut Map<String, Value>, name: &str, value: &str) {
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(md) = metadata {
        let annotations = md
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(a) = annotations {
            a.insert(name.into(), Value::String(value.into()));
        }
    }
}
