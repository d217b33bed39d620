//! The sizing engine's vocabularies as XR fields: the schemas the XRs
//! declare them by, and the readers of each kind's precision word.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;

// The sizing engine's own vocabularies, with the schemas the XRs declare
// them by: each schema lists the names the type reads, from the same
// constants. No descriptions: each field that uses one describes it.
pub(crate) use crate::sizing::{KvCacheDtype, MigStrategy, Objective, WeightPrecision};

/// A string schema admitting exactly `names`, as schemars derives for an
/// enum of unit variants.
fn names_schema(names: &[&str]) -> Schema {
    json_schema!({"type": "string", "enum": names})
}

impl JsonSchema for KvCacheDtype {
    fn schema_name() -> Cow<'static, str> {
        "KvCacheDtype".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        names_schema(&KvCacheDtype::NAMES)
    }
}

impl JsonSchema for Objective {
    fn schema_name() -> Cow<'static, str> {
        "Objective".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        names_schema(&Objective::NAMES)
    }
}

impl JsonSchema for MigStrategy {
    fn schema_name() -> Cow<'static, str> {
        "MigStrategy".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        names_schema(&MigStrategy::NAMES)
    }
}

/// What an LLMInference's `quantization` reads: `auto` (the checkpoint's
/// own precision, as dot-inference spells it), then a precision.
const AUTO_OR_PRECISION: [&str; 8] = precision_names("auto", true);
/// What a Model's `quantization` reads: a precision, then `none` (the
/// checkpoint's own, as NeuroNetes spells it).
const PRECISION_OR_NONE: [&str; 8] = precision_names("none", false);

/// Reads a weight precision an XR asks for; `own`, the kind's word for the
/// checkpoint's own precision, asks for none.
fn read_precision<'de, D: serde::Deserializer<'de>>(
    d: D,
    own: &str,
    names: &'static [&'static str],
) -> Result<Option<WeightPrecision>, D::Error> {
    let Some(word) = Option::<Cow<'de, str>>::deserialize(d)? else {
        return Ok(None);
    };
    if word == own {
        return Ok(None);
    }
    WeightPrecision::ALL
        .into_iter()
        .find(|p| p.as_str() == word)
        .map(Some)
        .ok_or_else(|| serde::de::Error::unknown_variant(&word, names))
}

/// An LLMInference's `quantization`; see [`AUTO_OR_PRECISION`].
pub(crate) fn auto_or_precision<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<WeightPrecision>, D::Error> {
    read_precision(d, "auto", &AUTO_OR_PRECISION)
}

/// The schema of [`auto_or_precision`].
pub(crate) fn auto_or_precision_schema(_: &mut SchemaGenerator) -> Schema {
    optional_names_schema(&AUTO_OR_PRECISION)
}

/// A Model's `quantization`; see [`PRECISION_OR_NONE`].
pub(crate) fn precision_or_none<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<WeightPrecision>, D::Error> {
    read_precision(d, "none", &PRECISION_OR_NONE)
}

/// The schema of [`precision_or_none`].
pub(crate) fn precision_or_none_schema(_: &mut SchemaGenerator) -> Schema {
    optional_names_schema(&PRECISION_OR_NONE)
}

/// [`names_schema`] for an optional field, as schemars derives an `Option`
/// of such an enum.
fn optional_names_schema(names: &[&str]) -> Schema {
    let mut values: Vec<serde_json::Value> = names.iter().map(|n| (*n).into()).collect();
    values.push(serde_json::Value::Null);
    json_schema!({"type": ["string", "null"], "enum": values})
}

/// [`WeightPrecision::NAMES`] with `own` (the checkpoint's own precision)
/// before or after them.
const fn precision_names<const N: usize>(own: &'static str, own_first: bool) -> [&'static str; N] {
    let mut names = [own; N];
    let offset = if own_first { 1 } else { 0 };
    let mut i = 0;
    while i < WeightPrecision::NAMES.len() {
        names[i + offset] = WeightPrecision::NAMES[i];
        i += 1;
    }
    names
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Deserialize)]
    struct Spec {
        #[serde(default, deserialize_with = "auto_or_precision")]
        llm: Option<WeightPrecision>,
        #[serde(default, deserialize_with = "precision_or_none")]
        model: Option<WeightPrecision>,
    }

    fn read(v: serde_json::Value) -> Result<Spec, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    #[test]
    fn each_kind_reads_every_precision_and_its_own_word_for_the_checkpoints() {
        for p in WeightPrecision::ALL {
            let spec = read(json!({"llm": p.as_str(), "model": p.as_str()})).unwrap();
            assert_eq!((spec.llm, spec.model), (Some(p), Some(p)));
        }
        let own = read(json!({"llm": "auto", "model": "none"})).unwrap();
        assert_eq!((own.llm, own.model), (None, None));
        // Each kind keeps its own word: the other's is not a precision.
        assert_eq!(
            read(json!({"llm": "none"})).err().unwrap(),
            "unknown variant `none`, expected one of `auto`, `fp32`, `bf16`, `fp16`, `fp8`, `int8`, `int4`, `fp4`"
        );
        assert_eq!(
            read(json!({"model": "auto"})).err().unwrap(),
            "unknown variant `auto`, expected one of `fp32`, `bf16`, `fp16`, `fp8`, `int8`, `int4`, `fp4`, `none`"
        );
    }
}
