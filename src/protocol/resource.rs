//! Kubernetes objects travel as `google.protobuf.Struct`s: here they become
//! JSON and back, as the SDKs' `resource` packages do it.
//!
//! A `Struct`'s numbers are all doubles. Integral doubles become JSON
//! integers, so typed specs read `gpu: 1` as an integer and rendered YAML
//! shows `1`, not `1.0`. Non-finite doubles have no JSON form; they become
//! the strings protobuf's JSON mapping uses ("NaN", "Infinity",
//! "-Infinity"), so a typed field that expects a number refuses them with
//! its path instead of reading garbage.

use prost::Message;
use prost_types::{ListValue, Struct, Value as PbValue, value::Kind};
use serde_json::{Map, Number, Value};

use crate::protocol::view;

/// Largest integer a double holds exactly (2^53): a whole number up to it
/// reads as an integer.
const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

/// A protobuf `Struct` as a JSON object.
pub fn struct_to_json(s: &Struct) -> Map<String, Value> {
    s.fields
        .iter()
        .map(|(k, v)| (k.clone(), value_to_json(v)))
        .collect()
}

/// A protobuf `Value` as JSON. An unset kind is `null`.
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

/// A JSON object as a protobuf `Struct`.
pub fn json_to_struct(m: &Map<String, Value>) -> Struct {
    Struct {
        fields: m
            .iter()
            .map(|(k, v)| (k.clone(), json_to_value(v)))
            .collect(),
    }
}

/// JSON as a protobuf `Value`. Integers beyond 2^53 lose precision, as
/// they do in Crossplane itself.
pub(crate) fn json_to_value(v: &Value) -> PbValue {
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

/// A view `Struct` as a JSON object, each field decoded. The error names
/// the field that cannot be: nested deeper than prost decodes (100
/// levels), or not a protobuf `Value`.
pub(crate) fn view_to_json(s: &view::Struct) -> Result<Map<String, Value>, String> {
    s.fields
        .iter()
        .map(|(k, bytes)| Ok((k.clone(), field_to_json(k, bytes)?)))
        .collect()
}

/// One encoded field of a view `Struct` as JSON.
pub(crate) fn field_to_json(key: &str, bytes: &[u8]) -> Result<Value, String> {
    decode_field(key, bytes).map(|v| value_to_json(&v))
}

/// One encoded field of a view `Struct`, decoded; the error names it.
pub(crate) fn decode_field(key: &str, bytes: &[u8]) -> Result<PbValue, String> {
    PbValue::decode(bytes)
        .map_err(|e| format!("field {key:?} cannot be decoded ({})", decode_problem(&e)))
}

/// What went wrong in a decode, without the path of messages prost adds
/// (a hundred of them for an object nested too deep): "recursion limit
/// reached", "buffer underflow".
pub(crate) fn decode_problem(e: &prost::DecodeError) -> String {
    let text = e.to_string();
    text.rsplit(": ").next().unwrap_or(&text).to_string()
}

/// A JSON object as a view `Struct`.
pub(crate) fn json_to_view(m: &Map<String, Value>) -> view::Struct {
    view::Struct {
        fields: m
            .iter()
            .map(|(k, v)| (k.clone(), json_to_value(v).encode_to_vec()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_read_as_integers_when_whole_and_as_the_protocols_strings_when_not_finite() {
        let cases = [
            (1.0, json!(1)),
            (-3.0, json!(-3)),
            (0.5, json!(0.5)),
            (9_007_199_254_740_992.0, json!(9_007_199_254_740_992i64)),
            (1.0e19, json!(1.0e19)),
            (f64::NAN, json!("NaN")),
            (f64::INFINITY, json!("Infinity")),
            (f64::NEG_INFINITY, json!("-Infinity")),
        ];
        for (n, want) in cases {
            let v = PbValue {
                kind: Some(Kind::NumberValue(n)),
            };
            assert_eq!(value_to_json(&v), want, "{n}");
        }
    }

    #[test]
    fn an_object_goes_through_a_struct_and_a_view_unchanged() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {}},
                            "data": {"k": "v"}, "n": 3, "f": 0.25, "l": [true, null, "s", {"x": [1]}]});
        let object = object.as_object().unwrap();
        assert_eq!(&struct_to_json(&json_to_struct(object)), object);
        assert_eq!(&view_to_json(&json_to_view(object)).unwrap(), object);
        // A view is the Struct on the wire.
        let from_view = Struct::decode(json_to_view(object).encode_to_vec().as_slice()).unwrap();
        assert_eq!(from_view, json_to_struct(object));
    }

    #[test]
    fn a_field_nested_deeper_than_prost_decodes_is_named() {
        let mut deep = json!("bottom");
        for _ in 0..200 {
            deep = json!({ "d": deep });
        }
        let object = json!({"kind": "X", "spec": deep});
        let view = json_to_view(object.as_object().unwrap());
        let error = view_to_json(&view).unwrap_err();
        assert_eq!(
            error,
            "field \"spec\" cannot be decoded (recursion limit reached)"
        );
        // The view itself decodes: only the field is too deep.
        let bytes = view.encode_to_vec();
        assert_eq!(view::Struct::decode(bytes.as_slice()).unwrap(), view);
    }
}
