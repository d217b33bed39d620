//! How numbers and lists read in reasons and errors.
//!
//! Every sentence the engine writes formats GiB, token counts and GPU lists
//! the same way; keeping the formatters in one place keeps them consistent.

use super::gpus::{Gpu, gpus};

/// `12.3 GiB`: one decimal is as precise as a sizing estimate is.
pub(crate) fn gib(v: f64) -> String {
    format!("{v:.1} GiB")
}

/// `8.2`, `714.01`: a figure to the hundredth, as reasons write parameter
/// counts and memory sizes (an estimate is not exact past it, and `{}`
/// then shows no trailing zeros and no float noise such as 7.609999).
pub(crate) fn hundredths(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// `131,072`: token counts are easier to read with thousands separators.
pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1 request`, `1,024 requests`: a count with its noun in the number it
/// takes (the nouns here take an `s`); of any integer type, a negative
/// count (which no Kubernetes count is) reads as 0.
pub(crate) fn count_of(n: impl TryInto<u64>, noun: &str) -> String {
    let n = n.try_into().unwrap_or(0);
    let s = if n == 1 { "" } else { "s" };
    format!("{} {noun}{s}", thousands(n))
}

/// `1, 2, 4`: the valid choices an error offers.
pub(crate) fn join_counts(v: &[u32]) -> String {
    let s: Vec<String> = v.iter().map(u32::to_string).collect();
    s.join(", ")
}

/// The catalog GPUs that have a feature, so that an error can name them.
pub(crate) fn gpus_with(pred: impl Fn(&Gpu) -> bool) -> String {
    let names: Vec<&str> = gpus()
        .iter()
        .filter(|g| pred(g))
        .map(|g| g.name.as_str())
        .collect();
    names.join(", ")
}
