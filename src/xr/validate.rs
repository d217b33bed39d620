//! Checks of user-written strings that serde cannot express: Kubernetes
//! names, host names and length limits. The CRD schemas carry the same
//! limits, but the function must not rely on them: `render`, older CRDs and
//! hand-built requests skip the API server. Errors name the field and what
//! would be valid, and never echo more than a short prefix of a long value.

/// Longest value shown in an error message, in characters.
const SHOWN: usize = 64;

/// `value` as an error message shows it: quoted and cut short.
pub(crate) fn shown(value: &str) -> String {
    let n = value.chars().count();
    if n <= SHOWN {
        format!("{value:?}")
    } else {
        let head: String = value.chars().take(SHOWN).collect();
        format!("{head:?}... ({n} characters)")
    }
}

/// A non-blank string of at most `max` characters.
pub(crate) fn text(field: &str, value: &str, max: usize, example: &str) -> Result<(), String> {
    if value.trim().is_empty() {
        return Err(format!(
            "{field} is empty; set it (for example {example}) or omit it"
        ));
    }
    let n = value.chars().count();
    if n > max {
        return Err(format!(
            "{field} is {n} characters long; use at most {max} (for example {example})"
        ));
    }
    Ok(())
}

/// A number checked against `min..=max` (no upper bound when `max` is
/// None); the error names the field and the valid range.
pub(crate) fn in_range<T: PartialOrd + std::fmt::Display + Copy>(
    field: &str,
    value: Option<T>,
    min: T,
    max: Option<T>,
) -> Result<(), String> {
    match (value, max) {
        (Some(v), Some(max)) if v < min || v > max => {
            Err(format!("{field} is {v}; use {min} to {max}"))
        }
        (Some(v), None) if v < min => Err(format!("{field} is {v}; use at least {min}")),
        _ => Ok(()),
    }
}

/// A DNS-1123 subdomain: what most Kubernetes object names and host names must be.
pub(crate) fn dns_subdomain(field: &str, value: &str, example: &str) -> Result<(), String> {
    let ok = !value.is_empty()
        && value.len() <= 253
        && value.split('.').all(|label| is_label(label, 63));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{field} is {}; use a DNS name: at most 253 characters of lower-case letters, digits, '-' and '.', \
             starting and ending with a letter or digit (for example {example})",
            shown(value)
        ))
    }
}

/// A DNS-1123 label: what a namespace name must be.
pub(crate) fn dns_label(field: &str, value: &str, example: &str) -> Result<(), String> {
    if is_label(value, 63) {
        Ok(())
    } else {
        Err(format!(
            "{field} is {}; use at most 63 lower-case letters, digits and '-', starting and ending with a letter \
             or digit (for example {example})",
            shown(value)
        ))
    }
}

fn is_label(s: &str, max: usize) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= max
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["a", "qwen.example.com", "a-b.c-d", "x1"] {
            assert!(dns_subdomain("f", ok, "e").is_ok(), "{ok}");
        }
        for bad in [
            "",
            "A",
            "a_b",
            "-a",
            "a-",
            "a..b",
            "not a host!",
            &"a".repeat(254),
        ] {
            assert!(dns_subdomain("f", bad, "e").is_err(), "{bad}");
        }
        assert!(dns_label("f", "team-a", "e").is_ok());
        assert!(dns_label("f", "a.b", "e").is_err());
    }

    #[test]
    fn long_values_are_cut_in_messages() {
        let e = text("spec.model", &"x".repeat(5000), 256, "m").unwrap_err();
        assert_eq!(
            e,
            "spec.model is 5000 characters long; use at most 256 (for example m)"
        );
        let e = dns_subdomain("spec.ingressHost", &"x".repeat(5000), "h").unwrap_err();
        assert!(e.len() < 300 && e.contains("(5000 characters)"), "{e}");
    }
}
