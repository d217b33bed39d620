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
