//! The one place where protobuf `Struct`s become serde values and back.
//!
//! Kubernetes objects travel as `google.protobuf.Struct`, whose numbers are
//! all doubles. Integral doubles become JSON integers here, so typed specs can
//! read `gpu: 1` as an integer and rendered YAML shows `1`, not `1.0`.
//! Non-finite doubles have no JSON form; they become the strings protobuf's
//! JSON mapping uses ("NaN", "Infinity", "-Infinity"), so a typed field that
//! expects a number rejects them with its path instead of reading garbage.

use std::collections::BTreeMap;

use prost_types::{ListValue, Struct, Value as PbValue, value::Kind};
use serde_json::{Map, Number, Value};

/// Largest integer a double holds exactly (2^53).
const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

/// Converts a protobuf `Struct` into a JSON object.
pub fn struct_to_json(s: &Struct) -> Map<String, Value> {
    s.fields
        .iter()
        .map(|(k, v)| (k.clone(), value_to_json(v)))
        .collect()
}

/// Converts a protobuf `Value` into a JSON value. An unset kind is `null`.
pub fn value_to_json(v: &PbValue) -> Value {
    match &v.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(*b),
        Some(Kind::StringValue(s)) => Value::String(s.clone()),
        Some(Kind::NumberValue(n)) => number_to_json(*n),
        Some(Kind::StructValue(s)) => Value::Object(struct_to_json(s)),
        Some(Kind::ListValue(l)) => Value::Array(l.values.iter().map(value_to_json).collect()),
    }
}

fn number_to_json(n: f64) -> Value {
    if n.is_nan() {
        return Value::String("NaN".into());
    }
    if n.is_infinite() {
        return Value::String(if n > 0.0 { "Infinity" } else { "-Infinity" }.into());
    }
    if n.fract() == 0.0 && n.abs() <= MAX_EXACT_INTEGER {
        // Exact: |n| <= 2^53 fits an i64 without rounding.
        return Value::Number(Number::from(n as i64));
    }
    Number::from_f64(n).map_or(Value::Null, Value::Number)
}

/// Converts a JSON object into a protobuf `Struct`.
pub fn json_to_struct(m: &Map<String, Value>) -> Struct {
    Struct {
        fields: m
            .iter()
            .map(|(k, v)| (k.clone(), json_to_value(v)))
            .collect::<BTreeMap<_, _>>(),
    }
}

/// Converts a JSON value into a protobuf `Value`. Integers beyond 2^53 lose
/// precision, as they would in Crossplane itself.
pub fn json_to_value(v: &Value) -> PbValue {
    let kind = match v {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Array(a) => Kind::ListValue(ListValue {
            values: a.iter().map(json_to_value).collect(),
        }),
        Value::Object(m) => Kind::StructValue(json_to_struct(m)),
    };
    PbValue { kind: Some(kind) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_kubernetes_shaped_json() {
        let v = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "labels": {"a": "b"}, "generation": 3},
            "data": {"k": "v"}, "list": [1, 2.5, null, true, {"n": -7}],
        });
        let s = json_to_struct(v.as_object().unwrap());
        assert_eq!(Value::Object(struct_to_json(&s)), v);
    }

    #[test]
    fn integral_doubles_become_integers() {
        let cases = [
            (1.0, json!(1)),
            (-3.0, json!(-3)),
            (2.5, json!(2.5)),
            (1e300, json!(1e300)),
        ];
        for (n, want) in cases {
            assert_eq!(number_to_json(n), want, "{n}");
        }
    }

    #[test]
    fn non_finite_doubles_use_protobuf_json_strings() {
        assert_eq!(number_to_json(f64::NAN), json!("NaN"));
        assert_eq!(number_to_json(f64::INFINITY), json!("Infinity"));
        assert_eq!(number_to_json(f64::NEG_INFINITY), json!("-Infinity"));
    }

    #[test]
    fn an_unset_value_is_null() {
        assert_eq!(value_to_json(&PbValue { kind: None }), Value::Null);
    }
}
