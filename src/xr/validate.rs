//! Checks of user-written strings and numbers that serde cannot express:
//! length limits and ranges (Kubernetes names are `crate::names`'s). The CRD schemas carry the same
//! limits, but the function must not rely on them: `render`, older CRDs and
//! hand-built requests skip the API server. Errors name the field and what
//! would be valid, and never echo more than a short prefix of a long value.

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

/// Refuses a part of an image reference (`docker.io`,
/// `vllm/vllm-openai:v0.19.0`) with white space in it: the API server
/// refuses it at either end, and the kubelet cannot pull it
/// (`InvalidImageName`) with it inside.
pub(crate) fn image_part(field: &str, value: &str, example: &str) -> Result<(), String> {
    if value.chars().any(char::is_whitespace) {
        return Err(format!(
            "{field} is {}; an image reference holds no white space (for example {example})",
            crate::quote::shown(value)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_in_messages() {
        let e = text("spec.model", &"x".repeat(5000), 256, "m").unwrap_err();
        assert_eq!(
            e,
            "spec.model is 5000 characters long; use at most 256 (for example m)"
        );
    }
}
