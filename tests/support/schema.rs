//! Strict validation of manifests against the CRDs in `tests/data/crds/`.
//!
//! The API server silently prunes fields its structural schema does not know,
//! so a misspelt field in composed output never errors in a cluster: it just
//! disappears. This validator treats every object schema that declares
//! `properties` (or nothing at all) and lacks
//! `x-kubernetes-preserve-unknown-fields` as closed, i.e. as if it had
//! `additionalProperties: false`, and reports each unknown field. It also
//! checks types (including `x-kubernetes-int-or-string` and int32/int64
//! ranges), required properties, enums, minimum/maximum, array items,
//! `additionalProperties` maps, `nullable`, and embedded resources
//! (`x-kubernetes-embedded-resource`: apiVersion and kind must be set, and
//! the embedded object is validated in turn when its CRD is in the directory).
//!
//! Not checked: CEL rules (`x-kubernetes-validations`), string formats and
//! patterns, list-type uniqueness, and `metadata`, which the API server
//! validates as ObjectMeta itself.
//!
//! Usage from a test crate:
//! ```ignore
//! mod support;
//! let problems = support::schema::validate(&serde_json::to_value(&obj)?);
//! assert!(problems.is_empty(), "{problems:#?}");
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

/// Where the CRDs live. Any `*.yaml` file there is loaded; each document that
/// is a CustomResourceDefinition contributes one schema per served version.
pub const CRD_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/crds");

/// Problems found in `manifest`, one line each, starting with the path of the
/// offending field (e.g. `spec.deploymentConfig.replicas: expected integer,
/// got string`). Empty when the manifest is valid. The CRD is chosen by the
/// manifest's apiVersion and kind; a manifest without a known CRD yields one
/// problem saying so.
pub fn validate(manifest: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    validate_resource(manifest, "", &mut problems);
    problems
}

/// Problems found in `value` checked against one openAPIV3Schema `schema`,
/// with paths relative to `value`.
pub fn validate_against(schema: &Value, value: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    check(schema, value, "", &mut problems);
    problems
}

/// The openAPIV3Schema of the CRD serving `api_version` (`group/version`) and
/// `kind`, if one is in [`CRD_DIR`].
pub fn schema_for(api_version: &str, kind: &str) -> Option<&'static Value> {
    schemas().get(&(api_version.to_owned(), kind.to_owned()))
}

/// Property paths the CRD declares but `manifest` does not set, with `[]` for
/// array items and `*` for map values (e.g. `spec.toleration[].value`). An
/// item's property counts as set if any item sets it. Subtrees that preserve
/// unknown fields are not descended into. Tests use it to prove a "fully
/// populated" value really exercises every field of the schema.
pub fn unset_properties(manifest: &Value) -> Vec<String> {
    let Some(schema) = resource_schema(manifest) else {
        return vec![format!("{}: no CRD for this apiVersion and kind", at(""))];
    };
    let mut declared = BTreeSet::new();
    declared_paths(schema, "", &mut declared);
    let mut set = BTreeSet::new();
    set_paths(schema, manifest, "", &mut set);
    declared.difference(&set).cloned().collect()
}

fn resource_schema(manifest: &Value) -> Option<&'static Value> {
    let api_version = manifest.get("apiVersion")?.as_str()?;
    let kind = manifest.get("kind")?.as_str()?;
    schema_for(api_version, kind)
}

fn schemas() -> &'static BTreeMap<(String, String), Value> {
    static SCHEMAS: OnceLock<BTreeMap<(String, String), Value>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let mut out = BTreeMap::new();
        let mut files: Vec<_> = std::fs::read_dir(CRD_DIR)
            .unwrap_or_else(|e| panic!("reading {CRD_DIR}: {e}"))
            .map(|entry| entry.expect("directory entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
            for doc in serde_yaml::Deserializer::from_str(&text) {
                let crd = Value::deserialize(doc)
                    .unwrap_or_else(|e| panic!("parsing {}: {e}", file.display()));
                add_crd(&crd, &mut out);
            }
        }
        out
    })
}

fn add_crd(crd: &Value, out: &mut BTreeMap<(String, String), Value>) {
    if crd["kind"] != "CustomResourceDefinition" {
        return;
    }
    let group = crd["spec"]["group"].as_str().expect("CRD spec.group");
    let kind = crd["spec"]["names"]["kind"].as_str().expect("CRD kind");
    for version in crd["spec"]["versions"].as_array().into_iter().flatten() {
        let name = version["name"].as_str().expect("CRD version name");
        let schema = version["schema"]["openAPIV3Schema"].clone();
        out.insert((format!("{group}/{name}"), kind.to_owned()), schema);
    }
}

/// Validates a whole resource (top level or embedded) found at `path`.
fn validate_resource(manifest: &Value, path: &str, problems: &mut Vec<String>) {
    let api_version = manifest.get("apiVersion").and_then(Value::as_str);
    let kind = manifest.get("kind").and_then(Value::as_str);
    let (Some(api_version), Some(kind)) = (api_version, kind) else {
        problems.push(format!("{}: apiVersion and kind must be strings", at(path)));
        return;
    };
    match schema_for(api_version, kind) {
        Some(schema) => {
            // Every CRD declares `metadata` as a bare object: the API server
            // validates it as ObjectMeta, not through the CRD's schema.
            let mut body = manifest.clone();
            if let Some(metadata) = body.as_object_mut().and_then(|o| o.remove("metadata"))
                && !metadata.is_object()
            {
                problems.push(format!(
                    "{}: expected object, got {}",
                    child(path, "metadata"),
                    type_name(&metadata)
                ));
            }
            check(schema, &body, path, problems)
        }
        None => problems.push(format!(
            "{}: no CRD in tests/data/crds for {api_version} {kind}",
            at(path)
        )),
    }
}

fn check(schema: &Value, value: &Value, path: &str, problems: &mut Vec<String>) {
    if value.is_null() {
        if schema["nullable"] != true {
            problems.push(format!("{}: null is not allowed", at(path)));
        }
        return;
    }
    if schema["x-kubernetes-int-or-string"] == true {
        if !(value.is_string() || is_integer(value)) {
            problems.push(format!(
                "{}: expected integer or string, got {}",
                at(path),
                type_name(value)
            ));
        }
        return;
    }
    if let Some(expected) = schema["type"].as_str()
        && !has_type(value, expected)
    {
        problems.push(format!(
            "{}: expected {expected}, got {}",
            at(path),
            type_name(value)
        ));
        return;
    }
    if let Some(choices) = schema["enum"].as_array()
        && !choices.contains(value)
    {
        let choices: Vec<String> = choices.iter().map(Value::to_string).collect();
        problems.push(format!(
            "{}: {value} is not one of [{}]",
            at(path),
            choices.join(", ")
        ));
    }
    if value.is_number() {
        check_number(schema, value, path, problems);
    }
    match value {
        Value::Object(fields) => check_object(schema, fields, path, problems),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item_schema, item, &format!("{path}[{i}]"), problems);
                }
            }
        }
        _ => {}
    }
}

fn check_object(
    schema: &Value,
    fields: &serde_json::Map<String, Value>,
    path: &str,
    problems: &mut Vec<String>,
) {
    for name in schema["required"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap_or_default();
        if !fields.contains_key(name) {
            problems.push(format!("{}: required field is missing", child(path, name)));
        }
    }
    if schema["x-kubernetes-embedded-resource"] == true {
        // Crossplane and the API server both insist on apiVersion and kind.
        // If we know the embedded kind's CRD, hold it to the same standard.
        validate_embedded(fields, path, problems);
    }
    let properties = schema["properties"].as_object();
    let additional = schema.get("additionalProperties");
    let preserve = schema["x-kubernetes-preserve-unknown-fields"] == true;
    for (name, value) in fields {
        let path = child(path, name);
        match (properties.and_then(|p| p.get(name)), additional) {
            (Some(property), _) => check(property, value, &path, problems),
            (None, Some(Value::Bool(true))) => {}
            (None, Some(map_values @ Value::Object(_))) => {
                check(map_values, value, &path, problems)
            }
            _ if preserve => {}
            _ => problems.push(format!(
                "{path}: unknown field (the API server would prune it)"
            )),
        }
    }
}

fn validate_embedded(
    fields: &serde_json::Map<String, Value>,
    path: &str,
    problems: &mut Vec<String>,
) {
    let api_version = fields.get("apiVersion").and_then(Value::as_str);
    let kind = fields.get("kind").and_then(Value::as_str);
    match (api_version, kind) {
        (Some(a), Some(k)) if !a.is_empty() && !k.is_empty() => {
            if schema_for(a, k).is_some() {
                validate_resource(&Value::Object(fields.clone()), path, problems);
            }
        }
        _ => problems.push(format!(
            "{}: an embedded resource needs apiVersion and kind",
            at(path)
        )),
    }
}

fn check_number(schema: &Value, value: &Value, path: &str, problems: &mut Vec<String>) {
    let n = value.as_f64().unwrap_or_default();
    let range = match schema["format"].as_str() {
        Some("int32") => Some((f64::from(i32::MIN), f64::from(i32::MAX))),
        Some("int64") => Some((i64::MIN as f64, i64::MAX as f64)),
        _ => None,
    };
    if let Some((lo, hi)) = range
        && !(lo..=hi).contains(&n)
    {
        problems.push(format!(
            "{}: {value} is out of range for {}",
            at(path),
            schema["format"].as_str().unwrap_or_default()
        ));
    }
    if let Some(min) = schema["minimum"].as_f64()
        && n < min
    {
        problems.push(format!(
            "{}: {value} is less than the minimum {min}",
            at(path)
        ));
    }
    if let Some(max) = schema["maximum"].as_f64()
        && n > max
    {
        problems.push(format!(
            "{}: {value} is more than the maximum {max}",
            at(path)
        ));
    }
}

fn has_type(value: &Value, expected: &str) -> bool {
    match expected {
        "string" => value.is_string(),
        "integer" => is_integer(value),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        _ => false,
    }
}

fn is_integer(value: &Value) -> bool {
    value.is_i64() || value.is_u64()
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn at(path: &str) -> &str {
    if path.is_empty() { "<root>" } else { path }
}

fn declared_paths(schema: &Value, path: &str, out: &mut BTreeSet<String>) {
    if schema["x-kubernetes-preserve-unknown-fields"] == true {
        return;
    }
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        let path = child(path, name);
        out.insert(path.clone());
        declared_paths(property, &path, out);
    }
    if let Some(map_values @ Value::Object(_)) = schema.get("additionalProperties") {
        declared_paths(map_values, &child(path, "*"), out);
    }
    if let Some(items) = schema.get("items") {
        declared_paths(items, &format!("{path}[]"), out);
    }
}

fn set_paths(schema: &Value, value: &Value, path: &str, out: &mut BTreeSet<String>) {
    if schema["x-kubernetes-preserve-unknown-fields"] == true {
        return;
    }
    match value {
        Value::Object(fields) => {
            for (name, v) in fields {
                if let Some(property) = schema["properties"].get(name) {
                    let path = child(path, name);
                    out.insert(path.clone());
                    set_paths(property, v, &path, out);
                } else if let Some(map_values @ Value::Object(_)) =
                    schema.get("additionalProperties")
                {
                    set_paths(map_values, v, &child(path, "*"), out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    set_paths(item_schema, item, &format!("{path}[]"), out);
                }
            }
        }
        _ => {}
    }
}
