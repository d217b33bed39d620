//! How a user's value is quoted in an error message: whole when short,
//! else its first characters and its length, so that a huge value never
//! makes a huge message (or log line, or event).

/// Longest value shown in an error message, in characters.
const SHOWN: usize = 64;

/// `value` as an error message shows it: quoted and cut short.
pub(crate) fn shown(value: &str) -> String {
    quoted(value, false)
}

/// [`shown`], with the value's length even when it is shown whole, for a
/// message about its length.
pub(crate) fn shown_with_length(value: &str) -> String {
    quoted(value, true)
}

/// `value` unquoted, for a message that marks it otherwise (`like this`):
/// whole when short, else its first characters and its length.
pub(crate) fn cut(value: &str) -> std::borrow::Cow<'_, str> {
    let n = value.chars().count();
    if n <= SHOWN {
        value.into()
    } else {
        let head: String = value.chars().take(SHOWN).collect();
        format!("{head}... ({n} characters)").into()
    }
}

/// A JSON value as an error message shows it: a string by [`shown`], a
/// number or boolean as written, else "a list" or "an object".
pub(crate) fn shown_value(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => shown(s),
        serde_json::Value::Array(_) => "a list".into(),
        serde_json::Value::Object(_) => "an object".into(),
        other => other.to_string(),
    }
}

/// A number as an error message shows it: as Rust writes it while that is
/// short, else in exponent form (1e308, not its 309 digits).
pub(crate) fn shown_number<T: std::fmt::Display + std::fmt::LowerExp>(value: T) -> String {
    let plain = value.to_string();
    if plain.len() <= 20 {
        plain
    } else {
        format!("{value:e}")
    }
}

/// [`shown`] for a value serde has already quoted (its messages write a
/// string as Rust's `{:?}` does): an escape (a backslash and what it
/// escapes, through the brace of `\u{...}`) counts as the one character the
/// user wrote, and is never cut in half.
pub(crate) fn shown_quoted(quoted: &str) -> String {
    let inside = quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or(quoted);
    let mut characters = Vec::new();
    let mut chars = inside.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if c == '\\' && chars.next().is_some_and(|(_, e)| e == 'u') {
            chars.by_ref().find(|&(_, e)| e == '}');
        }
        let end = chars.peek().map_or(inside.len(), |&(i, _)| i);
        characters.push(&inside[start..end]);
    }
    let n = characters.len();
    if n <= SHOWN {
        return format!("\"{inside}\"");
    }
    format!("\"{}\"... ({n} characters)", characters[..SHOWN].concat())
}

fn quoted(value: &str, always_length: bool) -> String {
    let n = value.chars().count();
    if n <= SHOWN {
        let length = if always_length {
            format!(" ({n} characters)")
        } else {
            String::new()
        };
        format!("{value:?}{length}")
    } else {
        let head: String = value.chars().take(SHOWN).collect();
        format!("{head:?}... ({n} characters)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unquoted_value_is_cut_at_the_same_length() {
        assert_eq!(cut("H100-80GB"), "H100-80GB");
        let long = "é".repeat(100);
        assert_eq!(
            cut(&long),
            format!("{}... (100 characters)", "é".repeat(64))
        );
    }

    #[test]
    fn a_quoted_value_is_cut_between_escapes() {
        let value = format!("{}\n\u{1b}{}", "x".repeat(62), "y".repeat(100));
        // `{:?}` writes the newline as \n and the escape as \u{1b}: each is
        // one character, kept whole.
        let got = shown_quoted(&format!("{value:?}"));
        let want = format!("\"{}\\n\\u{{1b}}\"... (164 characters)", "x".repeat(62));
        assert_eq!(got, want);
        assert_eq!(shown_quoted("\"short\""), "\"short\"");
    }
}
