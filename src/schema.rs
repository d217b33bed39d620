//! OpenAPI v3 schemas for CRDs and XRDs, generated from the Rust types.
//!
//! The YAML files in `package/` are produced from these, and a test checks
//! they are current, so the schema users see and the code that reads their
//! objects cannot drift apart.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use kube_core::schema::{OptionalEnum, OptionalIntOrString, StructuralSchemaRewriter};
use schemars::{JsonSchema, generate::SchemaSettings};
use serde_json::Value;

/// A structural (Kubernetes-valid) OpenAPI v3 schema of `T`, without `$schema`
/// or definitions: every sub-schema is inlined.
pub fn structural_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(OptionalEnum)
        .with_transform(OptionalIntOrString)
        .with_transform(StructuralSchemaRewriter)
        .into_generator();
    let mut schema =
        serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or(Value::Null);
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("title");
        obj.remove("$schema");
        obj.remove("definitions");
        obj.remove("components");
    }
    schema
}

/// [`structural_schema`] of `T`, built once per type for the life of the
/// process: specs are checked against their schema on every call, and
/// building one took a third of a call's CPU (docs/performance.md).
pub(crate) fn shared_structural_schema<T: JsonSchema + 'static>() -> &'static Value {
    static SCHEMAS: LazyLock<Mutex<HashMap<TypeId, &'static Value>>> =
        LazyLock::new(Default::default);
    let mut schemas = SCHEMAS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    schemas
        .entry(TypeId::of::<T>())
        .or_insert_with(|| Box::leak(Box::new(structural_schema::<T>())))
}
