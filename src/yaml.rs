//! YAML as Kubernetes tools read it. serde_yaml writes YAML 1.2, in which
//! `off`, `yes` or `n` is a string that needs no quotes; kubectl, crank and
//! the other Go tools read YAML 1.1 (go-yaml v2, through sigs.k8s.io/yaml),
//! in which each is a boolean: ingress-nginx's `proxy-buffering: off` would
//! reach the API server as `false`, which no annotation may be. Such strings
//! are written single-quoted, which both versions read as strings.

use serde_json::{Map, Value};

/// What YAML 1.1 reads as a boolean and serde_yaml writes unquoted
/// (go-yaml v2's `resolve.go`; `true` and `false` it quotes already).
const YAML_1_1_BOOLEANS: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off",
    "OFF",
];

/// A private-use character, which serde_yaml writes as it is: it marks the
/// strings to quote, and appears in no string of a Kubernetes object.
const MARK: char = '\u{E000}';

/// `value` as a YAML document that YAML 1.1 and 1.2 readers read alike.
pub fn to_string(value: &Value) -> Result<String, serde_yaml::Error> {
    if !has_mark(value) {
        let marked = marked(value);
        if marked != *value {
            return Ok(quote_marked(&serde_yaml::to_string(&marked)?));
        }
    }
    serde_yaml::to_string(value)
}

/// `text` with each marked word (the mark, then letters to the end of the
/// scalar) single-quoted.
fn quote_marked(text: &str) -> String {
    let mut parts = text.split(MARK);
    let mut out = parts.next().unwrap_or_default().to_string();
    for part in parts {
        let word_end = part
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(part.len());
        let (word, rest) = part.split_at(word_end);
        out.push_str(&format!("'{word}'{rest}"));
    }
    out
}

/// `value` with each YAML 1.1 boolean string, as a value or a key, marked.
fn marked(value: &Value) -> Value {
    let mark = |s: &str| match YAML_1_1_BOOLEANS.contains(&s) {
        true => format!("{MARK}{s}"),
        false => s.to_string(),
    };
    match value {
        Value::String(s) => Value::String(mark(s)),
        Value::Array(items) => Value::Array(items.iter().map(marked).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (mark(k), marked(v)))
                .collect::<Map<String, Value>>(),
        ),
        other => other.clone(),
    }
}

/// Whether a string of `value` holds the mark already: then marking could
/// not be undone exactly, and `value` is written as serde_yaml writes it.
fn has_mark(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains(MARK),
        Value::Array(items) => items.iter().any(has_mark),
        Value::Object(fields) => fields.iter().any(|(k, v)| k.contains(MARK) || has_mark(v)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_yaml_1_1_reads_as_booleans_are_quoted() {
        let doc = json!({
            "metadata": {"annotations": {"nginx.ingress.kubernetes.io/proxy-buffering": "off", "on": "yes"}},
            "args": ["n", "no-op", "offline", "off\nline"],
            "enabled": true,
            "text": "true",
        });
        assert_eq!(
            to_string(&doc).unwrap(),
            "args:\n- 'n'\n- no-op\n- offline\n- |-\n  off\n  line\nenabled: true\nmetadata:\n  annotations:\n    \
             nginx.ingress.kubernetes.io/proxy-buffering: 'off'\n    'on': 'yes'\ntext: 'true'\n"
        );
        // Read back as YAML 1.2 would: the same document.
        let back: Value = serde_yaml::from_str(&to_string(&doc).unwrap()).unwrap();
        assert_eq!(back, doc);
    }

    #[test]
    fn a_document_holding_the_mark_is_written_as_it_is() {
        let doc = json!({"a": format!("{MARK}x"), "b": "off"});
        assert_eq!(
            to_string(&doc).unwrap(),
            serde_yaml::to_string(&doc).unwrap()
        );
    }
}
