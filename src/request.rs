//! Reading the request, in the SDK's words: the observed composite resource
//! (the XR), the observed composed resources, the required resources
//! Crossplane fetched, and the step input.
//!
//! Objects arrive as view `Struct`s (`protocol::view`) and are decoded to
//! JSON as they are read, so an object nested too deep for prost fails
//! where it is read, naming itself, and never the whole request.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::input::{Input, Settings};
use prost_types::value::Kind;

use crate::protocol::resource::{decode_field, field_to_json, value_to_json, view_to_json};
use crate::protocol::server::{Resource, Resources, RunFunctionRequest};

/// The observed XR: its identity at hand, the rest read as asked.
#[derive(Debug)]
pub(crate) struct Composite {
    pub(crate) api_version: String,
    pub(crate) kind: String,
    pub(crate) name: String,
    /// "default" when the object names none (a file given to `render`).
    pub(crate) namespace: String,
    object: Map<String, Value>,
}

impl Composite {
    /// The XR as an object. Errors say what is missing.
    pub(crate) fn from_object(object: Map<String, Value>) -> Result<Self, String> {
        let text = |path: &[&str]| str_at(&object, path).to_string();
        let kind = text(&["kind"]);
        if kind.is_empty() {
            return Err("the observed composite resource has no kind".into());
        }
        let namespace = match text(&["metadata", "namespace"]) {
            // kubectl puts an XR applied without a namespace into "default".
            n if n.is_empty() => "default".to_string(),
            n => n,
        };
        Ok(Self {
            api_version: text(&["apiVersion"]),
            name: text(&["metadata", "name"]),
            kind,
            namespace,
            object,
        })
    }

    /// The spec read as `T`; an error names the failing field path under `spec`.
    pub(crate) fn spec<T: DeserializeOwned + schemars::JsonSchema + 'static>(
        &self,
    ) -> Result<T, String> {
        let spec = self
            .object
            .get("spec")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        crate::de::from_object(spec, "spec")
    }

    /// The observed status, for transition checks.
    pub(crate) fn status(&self) -> Option<&Map<String, Value>> {
        self.object.get("status").and_then(Value::as_object)
    }

    /// The observed status condition of `type_`, to tell what the XR
    /// already reports.
    pub(crate) fn condition(&self, type_: &str) -> Option<&Map<String, Value>> {
        self.status()?
            .get("conditions")?
            .as_array()?
            .iter()
            .filter_map(Value::as_object)
            .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
    }

    /// The strings of the observed status list at `path` (for example
    /// `["plan", "warnings"]`), to tell what the XR already reports.
    pub(crate) fn status_strings(&self, path: &[&str]) -> Vec<String> {
        let mut v = self.object.get("status");
        for p in path {
            v = v.and_then(|v| v.get(*p));
        }
        v.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect()
    }
}

/// The observed XR of `req`.
pub(crate) fn observed_composite(req: &RunFunctionRequest) -> Result<Composite, String> {
    let object = req
        .observed
        .as_ref()
        .and_then(|o| o.composite.as_ref())
        .and_then(|c| c.resource.as_ref())
        .ok_or("the request has no observed composite resource")?;
    let object = xr_to_json(object)
        .map_err(|e| format!("cannot decode the observed composite resource: {e}"))?;
    Composite::from_object(object)
}

/// The XR as JSON, less its `metadata.managedFields`: no composer reads an
/// XR's, and converting them took a few percent of a call's CPU.
fn xr_to_json(xr: &crate::protocol::view::Struct) -> Result<Map<String, Value>, String> {
    xr.fields
        .iter()
        .map(|(k, bytes)| {
            let value = if k == "metadata" {
                let mut metadata = decode_field(k, bytes)?;
                if let Some(Kind::StructValue(m)) = &mut metadata.kind {
                    m.fields.remove("managedFields");
                }
                value_to_json(&metadata)
            } else {
                field_to_json(k, bytes)?
            };
            Ok((k.clone(), value))
        })
        .collect()
}

/// The value at `path` of `object`, if there is one.
pub(crate) fn at<'a>(object: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter().try_fold(object.get(*first)?, |v, p| v.get(*p))
}

/// The string at `path`, or "" when absent or not a string.
pub(crate) fn str_at<'a>(object: &'a Map<String, Value>, path: &[&str]) -> &'a str {
    at(object, path).and_then(Value::as_str).unwrap_or_default()
}

/// The API group of an `apiVersion` ("" for the core group's "v1").
pub(crate) fn api_group(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(group, _)| group)
}

/// Annotation Crossplane puts on every composed resource: its name in the
/// composition (the key of observed and desired resources).
pub(crate) const COMPOSITION_RESOURCE_NAME: &str = "crossplane.io/composition-resource-name";

/// What a composed object is: the object itself, or for a
/// provider-kubernetes Object the object it applied, as last observed
/// (`status.atProvider.manifest`). An Object that only observes applied
/// nothing: what it read there is not this XR's.
pub(crate) fn manifest_of(object: &Map<String, Value>) -> Option<&Map<String, Value>> {
    if str_at(object, &["kind"]) != "Object" {
        return Some(object);
    }
    if observes_only(object) {
        return None;
    }
    at(object, &["status", "atProvider", "manifest"])?.as_object()
}

/// Whether `object`, a provider-kubernetes Object, only observes what it
/// wraps (`managementPolicies: [Observe]`).
pub(crate) fn observes_only(object: &Map<String, Value>) -> bool {
    at(object, &["spec", "managementPolicies"])
        .and_then(Value::as_array)
        .is_some_and(|p| p.len() == 1 && p[0] == "Observe")
}

/// The manifest a composed provider-kubernetes Object applies
/// (`spec.forProvider.manifest`); `None` for any other object.
pub(crate) fn applied_manifest(object: &Map<String, Value>) -> Option<&Map<String, Value>> {
    if str_at(object, &["kind"]) != "Object" {
        return None;
    }
    at(object, &["spec", "forProvider", "manifest"])?.as_object()
}

/// The integer at `path`, if there is one.
pub(crate) fn int_at(object: &Map<String, Value>, path: &[&str]) -> Option<i64> {
    at(object, path).and_then(Value::as_i64)
}

/// The observed composed resources, by composition-resource name, each
/// decoded as it is read.
pub(crate) struct Observed<'a> {
    resources: &'a BTreeMap<String, Resource>,
}

impl<'a> Observed<'a> {
    pub(crate) fn new(resources: &'a BTreeMap<String, Resource>) -> Self {
        Self { resources }
    }

    /// The observed object composed under `name`, if it exists and decodes.
    pub(crate) fn get(&self, name: &str) -> Option<Map<String, Value>> {
        view_to_json(self.resources.get(name)?.resource.as_ref()?).ok()
    }

    /// The observed resource composed under `name`, as sent: for keeping
    /// one that [`Observed::get`] cannot decode.
    pub(crate) fn raw(&self, name: &str) -> Option<&'a Resource> {
        self.resources.get(name)
    }

    /// [`manifest_of`] the object composed under `name`.
    pub(crate) fn manifest(&self, name: &str) -> Option<Map<String, Value>> {
        let object = self.get(name)?;
        if str_at(&object, &["kind"]) != "Object" {
            // Itself: moved, not copied.
            return Some(object);
        }
        manifest_of(&object).cloned()
    }
}

/// What Crossplane returned for one requirement.
#[derive(Debug)]
pub(crate) enum Required {
    /// Crossplane has not looked it up yet: the requirement is new.
    NotLookedUp,
    /// It looked, and found no object of that name.
    Missing,
    Found(Map<String, Value>),
}

/// The object named `name` among what Crossplane returned for the
/// requirement `key`. A returned resource that cannot be decoded is an
/// error saying why (never skipped: skipping it would report an existing
/// object as missing).
pub(crate) fn required_object(
    required: &BTreeMap<String, Resources>,
    key: &str,
    name: &str,
) -> Result<Required, String> {
    let Some(found) = required.get(key) else {
        return Ok(Required::NotLookedUp);
    };
    for item in &found.items {
        let Some(object) = &item.resource else {
            continue;
        };
        let object = view_to_json(object)
            .map_err(|e| format!("Crossplane returned a resource that cannot be read: {e}"))?;
        if str_at(&object, &["metadata", "name"]) == name {
            return Ok(Required::Found(object));
        }
    }
    Ok(Required::Missing)
}

/// Every object Crossplane returned for the requirement `key` that decodes.
pub(crate) fn required_objects(
    required: &BTreeMap<String, Resources>,
    key: &str,
) -> Vec<Map<String, Value>> {
    required
        .get(key)
        .into_iter()
        .flat_map(|r| &r.items)
        .filter_map(|item| view_to_json(item.resource.as_ref()?).ok())
        .collect()
}

/// The step input's settings: the built-in defaults when there is none.
pub(crate) fn settings(req: &RunFunctionRequest) -> Result<Settings, String> {
    let Some(input) = &req.input else {
        return Ok(Settings::default());
    };
    let object = view_to_json(input).map_err(|e| format!("cannot decode the step input: {e}"))?;
    let input: Input = crate::de::from_object(Value::Object(object), "input")
        .map_err(|e| format!("cannot read the step input: {e}"))?;
    input
        .settings()
        .map_err(|e| format!("invalid step input: {e}"))
}
