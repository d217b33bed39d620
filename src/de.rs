//! Reading user-written JSON into typed specs, with errors a user can act on.
//!
//! serde says `invalid type: floating point `1.5`, expected i64`; a platform
//! user reading `kubectl describe` wants `spec.gpu: 1.5 is not a whole
//! number`. [`from_value`] keeps serde's field path (via serde_path_to_error)
//! and rewrites the message into words: what was found, and what would be
//! valid (of a number, the range the field's schema states, so the range
//! has one home). Messages it does not recognise pass through unchanged.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Deserializes `value` as `T`. An error starts with the field path under
/// `root` (for example `spec.gpu` or `input.defaults.gpuType`); a number
/// that is not one the field takes is told the range `schema` states for it.
fn from_value<T: DeserializeOwned>(
    value: Value,
    root: &str,
    schema: Option<&Value>,
) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            root.to_string()
        } else {
            format!("{root}.{path}")
        };
        let range = schema.and_then(|s| stated_range(s, &path));
        format!(
            "{field}: {}",
            humanize(&e.inner().to_string(), range.as_deref())
        )
    })
}

/// The range `schema` states for the number at `path` (`a.b[0].c`, as
/// serde_path_to_error writes it), in words (see [`range_in_words`]).
fn stated_range(schema: &Value, path: &str) -> Option<String> {
    let mut at = schema;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (name, indexes) = part.split_once('[').unwrap_or((part, ""));
        if !name.is_empty() {
            at = field_schema(at, name)?;
        }
        for _ in indexes.matches(']') {
            at = at.get("items")?;
        }
    }
    range_in_words(at)
}

/// The range a number's schema states, in words: "a whole number from 1 to
/// 64", "a number from 0 to 2", "a whole number of at least 1".
fn range_in_words(at: &Value) -> Option<String> {
    let kind = match at.get("type")?.as_str()? {
        "integer" => "a whole number",
        "number" => "a number",
        _ => return None,
    };
    let (min, max) = bounds(at);
    let shown = |b: Option<f64>| b.map(crate::quote::shown_number);
    match (shown(min), shown(max)) {
        (Some(min), Some(max)) => Some(format!("{kind} from {min} to {max}")),
        (Some(min), None) => Some(format!("{kind} of at least {min}")),
        (None, Some(max)) => Some(format!("{kind} of at most {max}")),
        (None, None) => None,
    }
}

/// The `minimum` and `maximum` a number's schema states.
fn bounds(at: &Value) -> (Option<f64>, Option<f64>) {
    let bound = |key| at.get(key).and_then(Value::as_f64);
    (bound("minimum"), bound("maximum"))
}

/// [`from_value`] for a value that must be an object of type `T`, such as
/// a spec. serde reads more shapes than the schema (and so the API server)
/// takes, and reads them as something else: a struct from a list, by
/// position (a spec `["Qwen/Qwen2.5-7B-Instruct"]` would read as
/// `{model: ...}`), and a named value from a one-key object (`{fp8: null}`
/// as `fp8`), and it takes any number its type holds. Those shapes, and
/// numbers outside their schema's range, are refused first, with their path
/// (`render`, older CRDs and hand-built requests skip the API server's
/// check).
pub(crate) fn from_object<T>(value: Value, root: &str) -> Result<T, String>
where
    T: DeserializeOwned + schemars::JsonSchema + 'static,
{
    if !value.is_object() {
        return Err(format!(
            "{root} must be an object; it is {}",
            described(&value)
        ));
    }
    let schema = crate::schema::shared_structural_schema::<T>();
    refused_by_schema(&value, schema, root)?;
    from_value(value, root, Some(schema))
}

/// The first value the schema refuses but serde would take, as an error: a
/// list where the schema wants an object, anything but a string (or null)
/// where it wants one of a list of names, and a number outside the range
/// the schema states (so each range has one home, its field's attribute).
fn refused_by_schema(value: &Value, schema: &Value, path: &str) -> Result<(), String> {
    if let Some(names) = schema.get("enum").and_then(Value::as_array)
        && !(value.is_string() || value.is_null())
    {
        let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
        return Err(format!(
            "{path}: {} is not a string; use one of {}",
            crate::quote::shown_value(value),
            one_of(&names)
        ));
    }
    match value {
        Value::Array(items) => {
            if schema.get("type").and_then(Value::as_str) == Some("object") {
                return Err(format!("{path} must be an object; it is a list"));
            }
            if let Some(item) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    refused_by_schema(v, item, &format!("{path}[{i}]"))?;
                }
            }
        }
        Value::Object(fields) => {
            for (k, v) in fields {
                if let Some(field) = field_schema(schema, k) {
                    refused_by_schema(v, field, &format!("{path}.{k}"))?;
                }
            }
        }
        Value::Number(n) => {
            let v = n.as_f64().unwrap_or(f64::NAN);
            let (min, max) = bounds(schema);
            let outside = min.is_some_and(|min| v < min) || max.is_some_and(|max| v > max);
            if outside && let Some(range) = range_in_words(schema) {
                return Err(format!("{path}: {n} is out of range; use {range}"));
            }
        }
        _ => {}
    }
    Ok(())
}

/// The schema of an object's field `name`: its property, or the schema of
/// every value of a map.
fn field_schema<'a>(object: &'a Value, name: &str) -> Option<&'a Value> {
    object
        .get("properties")
        .and_then(|p| p.get(name))
        .or_else(|| object.get("additionalProperties").filter(|a| a.is_object()))
}

/// Names as serde lists the variants it expects: "a", "a or b", "a, b, c".
fn one_of(names: &[&str]) -> String {
    match names {
        [a, b] => format!("{a} or {b}"),
        _ => names.join(", "),
    }
}

/// A JSON value's type, for messages: "a list", "the string \"x\"", "null".
fn described(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {}", crate::quote::shown(s)),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// Rewrites one serde message (see the module docs); `range` is what the
/// field's schema says of a number, when it says anything.
fn humanize(message: &str, range: Option<&str>) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix)
            && let Some((found, expected)) = rest.rsplit_once(", expected ")
        {
            return wrong_value(found, expected, range);
        }
    }
    // A list where a struct was expected: serde reads structs from lists too.
    if let Some(rest) = message.strip_prefix("invalid length ")
        && let Some((_, expected)) = rest.split_once(", expected ")
    {
        if expected.starts_with("struct ") {
            return "a list is not an object".to_string();
        }
        return format!("the list has the wrong length; expected {expected}");
    }
    if let Some(rest) = message.strip_prefix("unknown field ") {
        let (name, valid) = rest.split_once(", ").unwrap_or((rest, ""));
        let valid = valid
            .strip_prefix("expected one of ")
            .or_else(|| valid.strip_prefix("expected "))
            .map(|v| v.replace('`', ""));
        return match valid {
            Some(v) => format!("unknown field {}; valid fields are {v}", unquote(name)),
            None => format!(
                "unknown field {}; this object takes no fields",
                unquote(name)
            ),
        };
    }
    if let Some(rest) = message.strip_prefix("unknown variant ") {
        let (name, valid) = rest.split_once(", ").unwrap_or((rest, ""));
        let valid = valid
            .strip_prefix("expected one of ")
            .or_else(|| valid.strip_prefix("expected "))
            .unwrap_or(valid)
            .replace('`', "");
        return format!(
            "{} is not valid; use one of {valid}",
            crate::quote::shown(unquote(name))
        );
    }
    if let Some(rest) = message.strip_prefix("missing field ") {
        return format!("{} is required", unquote(rest));
    }
    message.to_string()
}

/// "found X, expected Y" in words, with the range a number must be in.
fn wrong_value(found: &str, expected: &str, range: Option<&str>) -> String {
    let shown = shown(found);
    let integral_number = found
        .strip_prefix("floating point `")
        .and_then(|f| f.strip_suffix('`'))
        .and_then(|f| f.parse::<f64>().ok())
        .is_some_and(|f| f.fract() == 0.0)
        || found.starts_with("integer `");
    let use_range = |problem: String| match range {
        Some(range) => format!("{problem}; use {range}"),
        None => problem,
    };
    let want = match expected {
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128"
        | "usize" => {
            if !integral_number {
                return use_range(format!("{shown} is not a whole number"));
            }
            // Without a stated range, an unsigned type's own is the one to give.
            let unsigned = expected
                .starts_with('u')
                .then(|| format!("a whole number from 0 to {}", unsigned_max(expected)));
            return match range.map(str::to_string).or(unsigned) {
                Some(range) => format!("{shown} is out of range; use {range}"),
                None => format!("{shown} is out of range for a whole number"),
            };
        }
        "f32" | "f64" => return use_range(format!("{shown} is not a number")),
        "a string" | "a borrowed string" | "a character" => "a string".to_string(),
        "a boolean" => "true or false".to_string(),
        "a sequence" => "a list".to_string(),
        "a map" => "an object".to_string(),
        other if other.starts_with("struct ") => "an object".to_string(),
        // k8s-openapi's objects expect their bare type name ("Toleration").
        other
            if other.starts_with(|c: char| c.is_ascii_uppercase())
                && other.chars().all(|c| c.is_ascii_alphanumeric()) =>
        {
            "an object".to_string()
        }
        other if other.starts_with("enum ") => "one of the listed values".to_string(),
        other => other.to_string(),
    };
    format!("{shown} is not {want}")
}

fn unsigned_max(t: &str) -> String {
    match t {
        "u8" => u8::MAX.to_string(),
        "u16" => u16::MAX.to_string(),
        "u32" => u32::MAX.to_string(),
        _ => u64::MAX.to_string(),
    }
}

/// serde's description of a found value, as the user wrote it.
fn shown(found: &str) -> String {
    for prefix in ["integer ", "floating point ", "boolean "] {
        if let Some(v) = found.strip_prefix(prefix) {
            return v.trim_matches('`').to_string();
        }
    }
    if let Some(s) = found.strip_prefix("string ") {
        return format!("the string {}", crate::quote::shown_quoted(s));
    }
    match found {
        "map" => "an object".into(),
        "sequence" => "a list".into(),
        "unit value" => "null".into(),
        other => other.into(),
    }
}

fn unquote(s: &str) -> &str {
    s.trim_matches('`')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Spec {
        gpu: Option<i64>,
        count: Option<u32>,
        ratio: Option<f64>,
        name: Option<String>,
        flag: Option<bool>,
        args: Option<Vec<String>>,
        color: Option<Color>,
        nested: Option<Nested>,
        toleration: Option<k8s_openapi::api::core::v1::Toleration>,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Nested {
        name: String,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    enum Color {
        Red,
        Blue,
    }

    #[test]
    fn messages_name_the_field_and_what_is_valid() {
        let cases = [
            (json!({"gpu": 1.5}), "spec.gpu: 1.5 is not a whole number"),
            (
                json!({"gpu": "two"}),
                "spec.gpu: the string \"two\" is not a whole number",
            ),
            (
                json!({"gpu": 1e30}),
                "spec.gpu: 1e+30 is out of range for a whole number",
            ),
            (
                json!({"count": -1}),
                "spec.count: -1 is out of range; use a whole number from 0 to 4294967295",
            ),
            (
                json!({"ratio": "x"}),
                "spec.ratio: the string \"x\" is not a number",
            ),
            (json!({"name": 3}), "spec.name: 3 is not a string"),
            (
                json!({"flag": "yes"}),
                "spec.flag: the string \"yes\" is not true or false",
            ),
            (
                json!({"args": "a"}),
                "spec.args: the string \"a\" is not a list",
            ),
            (json!({"args": [1]}), "spec.args[0]: 1 is not a string"),
            (
                json!({"color": "Green"}),
                "spec.color: \"Green\" is not valid; use one of Red or Blue",
            ),
            (
                json!({"nested": []}),
                "spec.nested: a list is not an object",
            ),
            (json!({"nested": {}}), "spec.nested: name is required"),
            (
                json!({"nested": {"name": "a", "x": 1}}),
                "spec.nested.x: unknown field x; valid fields are name",
            ),
            (
                json!({"gpus": 1}),
                "spec.gpus: unknown field gpus; valid fields are gpu, count, ratio, name, flag, args, color, nested, toleration",
            ),
            (json!([]), "spec: a list is not an object"),
            (
                json!({"toleration": "NoSchedule"}),
                "spec.toleration: the string \"NoSchedule\" is not an object",
            ),
        ];
        for (value, want) in cases {
            let got = from_value::<Spec>(value.clone(), "spec", None).unwrap_err();
            assert_eq!(got, want, "for {value}");
        }
    }

    #[test]
    fn a_valid_spec_reads_whole() {
        let spec = from_value::<Spec>(
            json!({"gpu": 2, "count": 3, "ratio": 0.5, "name": "a", "flag": true,
                   "args": ["x"], "color": "Blue", "nested": {"name": "n"},
                   "toleration": {"key": "sku", "operator": "Exists"}}),
            "spec",
            None,
        )
        .unwrap();
        assert_eq!(
            (
                spec.gpu,
                spec.count,
                spec.ratio,
                spec.name.as_deref(),
                spec.flag
            ),
            (Some(2), Some(3), Some(0.5), Some("a"), Some(true))
        );
        assert_eq!(spec.args, Some(vec!["x".to_string()]));
        assert_eq!(spec.color, Some(Color::Blue));
        assert_eq!(spec.nested.map(|n| n.name), Some("n".to_string()));
        assert_eq!(spec.toleration.and_then(|t| t.key), Some("sku".to_string()));
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Choices {
        color: Option<Color>,
        shade: Option<Shade>,
        nested: Option<Vec<Nested>>,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema, PartialEq)]
    #[serde(rename_all = "kebab-case")]
    enum Shade {
        Light,
        Dark,
        HighContrast,
    }

    impl schemars::JsonSchema for Color {
        fn schema_name() -> std::borrow::Cow<'static, str> {
            "Color".into()
        }
        fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
            schemars::json_schema!({"type": "string", "enum": ["Red", "Blue"]})
        }
    }

    #[test]
    fn shapes_serde_would_misread_are_refused_with_what_is_valid() {
        let cases = [
            (
                json!({"color": -1}),
                "spec.color: -1 is not a string; use one of Red or Blue",
            ),
            (
                json!({"color": {"Red": null}}),
                "spec.color: an object is not a string; use one of Red or Blue",
            ),
            (
                json!({"shade": ["dark"]}),
                "spec.shade: a list is not a string; use one of light, dark, high-contrast",
            ),
            (
                json!({"shade": true}),
                "spec.shade: true is not a string; use one of light, dark, high-contrast",
            ),
            (
                json!({"nested": [{"name": "a"}, ["b"]]}),
                "spec.nested[1] must be an object; it is a list",
            ),
            (json!([]), "spec must be an object; it is a list"),
        ];
        for (value, want) in cases {
            let got = from_object::<Choices>(value.clone(), "spec").unwrap_err();
            assert_eq!(got, want, "for {value}");
        }
        let read: Choices = from_object(
            json!({"color": null, "shade": "high-contrast", "nested": [{"name": "a"}]}),
            "spec",
        )
        .unwrap();
        assert_eq!((read.color, read.shade), (None, Some(Shade::HighContrast)));
        assert_eq!(read.nested.unwrap()[0].name, "a");
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Ranged {
        #[schemars(range(min = 1, max = 64))]
        gpu: Option<i64>,
        #[schemars(range(min = 1, max = 65535))]
        port: Option<i32>,
        #[schemars(range(min = 0.0, max = 2.0))]
        temperature: Option<f64>,
        #[schemars(range(min = 1))]
        tokens: Option<u64>,
        unbounded: Option<i64>,
        pools: Option<Vec<Pool>>,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Pool {
        #[schemars(range(min = 0, max = 100))]
        percent: i64,
    }

    #[test]
    fn a_number_the_field_does_not_take_is_told_the_range_its_schema_states() {
        let cases = [
            (
                json!({"gpu": 1.5}),
                "spec.gpu: 1.5 is not a whole number; use a whole number from 1 to 64",
            ),
            (
                json!({"gpu": "16k"}),
                "spec.gpu: the string \"16k\" is not a whole number; use a whole number from 1 to 64",
            ),
            (
                json!({"gpu": 1e30}),
                "spec.gpu: 1e+30 is out of range; use a whole number from 1 to 64",
            ),
            (
                json!({"gpu": 0}),
                "spec.gpu: 0 is out of range; use a whole number from 1 to 64",
            ),
            (
                json!({"gpu": 65}),
                "spec.gpu: 65 is out of range; use a whole number from 1 to 64",
            ),
            (
                json!({"temperature": 1e308}),
                "spec.temperature: 1e+308 is out of range; use a number from 0 to 2",
            ),
            (
                json!({"temperature": -0.5}),
                "spec.temperature: -0.5 is out of range; use a number from 0 to 2",
            ),
            (
                json!({"pools": [{"percent": 1}, {"percent": 150}]}),
                "spec.pools[1].percent: 150 is out of range; use a whole number from 0 to 100",
            ),
            (
                json!({"gpu": true}),
                "spec.gpu: true is not a whole number; use a whole number from 1 to 64",
            ),
            (
                json!({"port": 3_000_000_000_u64}),
                "spec.port: 3000000000 is out of range; use a whole number from 1 to 65535",
            ),
            (
                json!({"temperature": "hot"}),
                "spec.temperature: the string \"hot\" is not a number; use a number from 0 to 2",
            ),
            (
                json!({"tokens": -1}),
                "spec.tokens: -1 is out of range; use a whole number of at least 1",
            ),
            (
                json!({"unbounded": 0.5}),
                "spec.unbounded: 0.5 is not a whole number",
            ),
            (
                json!({"pools": [{"percent": 1}, {"percent": [50]}]}),
                "spec.pools[1].percent: a list is not a whole number; use a whole number from 0 to 100",
            ),
        ];
        for (value, want) in cases {
            let got = from_object::<Ranged>(value.clone(), "spec").unwrap_err();
            assert_eq!(got, want, "for {value}");
        }
        let read: Ranged = from_object(
            json!({"gpu": 2, "port": 80, "temperature": 0.5, "tokens": 3, "unbounded": -4,
                   "pools": [{"percent": 5}]}),
            "spec",
        )
        .unwrap();
        assert_eq!(
            (
                read.gpu,
                read.port,
                read.temperature,
                read.tokens,
                read.unbounded
            ),
            (Some(2), Some(80), Some(0.5), Some(3), Some(-4))
        );
        assert_eq!(read.pools.unwrap()[0].percent, 5);
    }

    #[test]
    fn long_strings_are_shortened() {
        let long = "x".repeat(10_000);
        for field in ["gpu", "color"] {
            let got = from_value::<Spec>(json!({field: long}), "spec", None).unwrap_err();
            assert!(got.len() < 200, "{got}");
            assert!(got.contains("(10000 characters)"), "{got}");
        }
    }
}
