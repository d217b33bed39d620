//! Everything the engine reads out of strings: parameter counts (`70B`,
//! `8x7B`, `Qwen3-30B-A3B`) and quantization markers in model ids.

use super::error::SizingError;
use super::precision::WeightPrecision;

/// Largest parameter count accepted, in billions (100T): far above any
/// model, low enough that every later product stays finite and small.
pub(crate) const MAX_PARAMS_B: f64 = 100_000.0;

/// Largest checkpoint accepted, in bytes: that many parameters in float32.
pub const MAX_CHECKPOINT_BYTES: u64 = 400_000_000_000_000;

/// A parameter count in billions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamCount {
    pub(crate) total_b: f64,
    /// Parameters used per token; equal to `total_b` for dense models.
    pub(crate) active_b: f64,
}

/// Parses a user-given count: `500M`, `8B`, `70.6B`, `1.5T`, `8x7B`,
/// `30B-A3B` (total and active). A bare number means billions.
///
/// `NxM` is read as N experts of M parameters with two active per token, the
/// Mixtral convention. N x M overstates the total (Mixtral-8x7B has 46.7B, not
/// 56B, because attention is shared), which errs on the safe side.
pub fn parse_parameter_count(value: &str) -> Result<ParamCount, SizingError> {
    let invalid = |reason: &str| SizingError::InvalidParameterCount {
        value: value.to_string(),
        reason: reason.to_string(),
    };
    let s = value.trim().to_ascii_lowercase().replace('_', "");
    if s.is_empty() {
        return Err(invalid("it is empty"));
    }
    let (total_s, active_s) = match s.split_once("-a") {
        Some((t, a)) => (t, Some(a)),
        None => (s.as_str(), None),
    };
    let total = if let Some((n, m)) = total_s.split_once('x') {
        let experts = number(n, 1.0).ok_or_else(|| invalid("the expert count is not a number"))?;
        if experts.fract() != 0.0 {
            return Err(invalid("the expert count must be a whole number"));
        }
        let each = scaled(m).ok_or_else(|| invalid("it is not a number with a unit"))?;
        ParamCount {
            total_b: experts * each,
            active_b: each * experts.min(2.0),
        }
    } else {
        let total = scaled(total_s).ok_or_else(|| invalid("it is not a number with a unit"))?;
        ParamCount {
            total_b: total,
            active_b: total,
        }
    };
    let count = match active_s {
        Some(a) => ParamCount {
            active_b: scaled(a).ok_or_else(|| invalid("the active count is not a number"))?,
            ..total
        },
        None => total,
    };
    validate(count).map_err(|r| invalid(&r))
}

fn validate(c: ParamCount) -> Result<ParamCount, String> {
    for v in [c.total_b, c.active_b] {
        if !v.is_finite() || v <= 0.0 {
            return Err("it must be a positive number".into());
        }
        if v > MAX_PARAMS_B {
            return Err("it is larger than 100T".into());
        }
    }
    if c.active_b > c.total_b {
        return Err("the active count exceeds the total".into());
    }
    Ok(c)
}

/// `7b` → 7, `500m` → 0.5, `1.5t` → 1500, `70` → 70 (billions).
fn scaled(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, unit) = match s.chars().last()? {
        'b' => (&s[..s.len() - 1], 1.0),
        'm' => (&s[..s.len() - 1], 1e-3),
        't' => (&s[..s.len() - 1], 1e3),
        'k' => (&s[..s.len() - 1], 1e-6),
        _ => (s, 1.0),
    };
    number(num, unit)
}

fn number(s: &str, unit: f64) -> Option<f64> {
    let s = s.trim();
    // Only plain decimals: no signs, exponents, `inf` or `nan`.
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    s.parse::<f64>().ok().map(|v| v * unit)
}

/// Reads the size from a model id: `Qwen2.5-7B-Instruct` → 7B,
/// `Mixtral-8x22B` → 8x22B, `Qwen3-30B-A3B` → 30B total / 3B active,
/// `Llama-2-70b-chat` → 70B. Prefers a B/T token over an M token, because an
/// `M` often names a context length (`Qwen2.5-7B-Instruct-1M`).
pub fn count_from_id(id: &str) -> Option<ParamCount> {
    let name = id.rsplit('/').next().unwrap_or(id).to_ascii_lowercase();
    let tokens: Vec<&str> = name
        .split(|c: char| c == '-' || c == '_' || c.is_whitespace())
        .collect();
    let is_count = |t: &str, units: &[char]| {
        t.chars().last().is_some_and(|u| units.contains(&u))
            && t.chars().next().is_some_and(|c| c.is_ascii_digit())
            && parse_parameter_count(t).is_ok()
    };
    let pos = tokens
        .iter()
        .position(|t| is_count(t, &['b', 't']))
        .or_else(|| tokens.iter().position(|t| is_count(t, &['m'])))?;
    let mut count = parse_parameter_count(tokens[pos]).ok()?;
    if let Some(active) = tokens
        .get(pos + 1)
        .and_then(|t| t.strip_prefix('a'))
        .filter(|a| a.ends_with('b'))
        .and_then(scaled)
        .filter(|a| *a > 0.0 && *a <= count.total_b)
    {
        count.active_b = active;
    }
    Some(count)
}

/// Whether `word` stands in `name` (lower case) between non-alphanumeric
/// characters or the ends: `awq` in `qwen2.5-7b-instruct-awq`, not in
/// `awqward-7b`.
pub(crate) fn has_word(name: &str, word: &str) -> bool {
    name.match_indices(word).any(|(i, _)| {
        let before = name[..i].chars().last();
        let after = name[i + word.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_alphanumeric())
            && !after.is_some_and(|c| c.is_ascii_alphanumeric())
    })
}

/// A precision marker in a model id (`-FP8`, `-AWQ`, `-BF16`): the
/// precision of the checkpoint's weights and the marker that said so.
pub fn precision_marker(id: &str) -> Option<(WeightPrecision, &'static str)> {
    let name = id.rsplit('/').next().unwrap_or(id).to_ascii_lowercase();
    let has = |m: &str| has_word(&name, m);
    // Order matters: GPTQ-Int8 is 8-bit, plain GPTQ is 4-bit.
    const MARKERS: &[(&str, WeightPrecision)] = &[
        ("nvfp4", WeightPrecision::Fp4),
        ("mxfp4", WeightPrecision::Fp4),
        ("fp4", WeightPrecision::Fp4),
        ("fp8", WeightPrecision::Fp8),
        ("w8a8", WeightPrecision::Int8),
        ("w8a16", WeightPrecision::Int8),
        ("int8", WeightPrecision::Int8),
        ("8bit", WeightPrecision::Int8),
        ("w4a16", WeightPrecision::Int4),
        ("int4", WeightPrecision::Int4),
        ("bnb-4bit", WeightPrecision::Int4),
        ("4bit", WeightPrecision::Int4),
        ("awq", WeightPrecision::Int4),
        ("gptq", WeightPrecision::Int4),
        // A 16-bit upload of a checkpoint published quantized
        // (unsloth/gpt-oss-20b-BF16).
        ("bf16", WeightPrecision::Bf16),
        ("fp16", WeightPrecision::Fp16),
    ];
    MARKERS.iter().find(|(m, _)| has(m)).map(|&(m, p)| (p, m))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pc(total_b: f64, active_b: f64) -> ParamCount {
        ParamCount { total_b, active_b }
    }

    #[test]
    fn explicit_counts() {
        let cases = [
            ("70B", pc(70.0, 70.0)),
            ("70b", pc(70.0, 70.0)),
            ("70.6B", pc(70.6, 70.6)),
            ("70.6", pc(70.6, 70.6)),
            ("671B", pc(671.0, 671.0)),
            ("500M", pc(0.5, 0.5)),
            ("1.5T", pc(1500.0, 1500.0)),
            ("8x7B", pc(56.0, 14.0)),
            ("30B-A3B", pc(30.0, 3.0)),
            (" 8B ", pc(8.0, 8.0)),
        ];
        for (s, want) in cases {
            let got = parse_parameter_count(s).unwrap();
            assert!(
                (got.total_b - want.total_b).abs() < 1e-9
                    && (got.active_b - want.active_b).abs() < 1e-9,
                "{s}: {got:?}"
            );
        }
    }

    #[test]
    fn bad_counts_have_exact_messages() {
        let cases = [
            (
                "",
                "invalid parameter count ``: it is empty; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
            (
                "-7B",
                "invalid parameter count `-7B`: it is not a number with a unit; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
            (
                "0B",
                "invalid parameter count `0B`: it must be a positive number; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
            (
                "1e30B",
                "invalid parameter count `1e30B`: it is not a number with a unit; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
            (
                "200T",
                "invalid parameter count `200T`: it is larger than 100T; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
            (
                "99999999999999999999999999999999B",
                "invalid parameter count `99999999999999999999999999999999B`: it is larger than 100T; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
            (
                "lots",
                "invalid parameter count `lots`: it is not a number with a unit; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
            (
                "2.5x7B",
                "invalid parameter count `2.5x7B`: the expert count must be a whole number; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
            (
                "3B-A7B",
                "invalid parameter count `3B-A7B`: the active count exceeds the total; write it like 500M, 8B, 70B, 8x7B or 1.5T",
            ),
        ];
        for (s, msg) in cases {
            assert_eq!(
                parse_parameter_count(s).unwrap_err().to_string(),
                msg,
                "{s}"
            );
        }
    }

    #[test]
    fn counts_from_ids() {
        let cases = [
            ("Qwen/Qwen2.5-7B-Instruct", Some(pc(7.0, 7.0))),
            ("mistralai/Mixtral-8x22B-v0.1", Some(pc(176.0, 44.0))),
            ("Qwen/Qwen3-30B-A3B", Some(pc(30.0, 3.0))),
            ("Qwen/Qwen3-Next-80B-A3B-Instruct", Some(pc(80.0, 3.0))),
            ("someorg/Foo-13B-FP8", Some(pc(13.0, 13.0))),
            ("TheBloke/Llama-2-70B-AWQ", Some(pc(70.0, 70.0))),
            ("unsloth/foo-7b-bnb-4bit", Some(pc(7.0, 7.0))),
            ("Llama-2-70b-chat (vLLM backend)", Some(pc(70.0, 70.0))),
            ("Qwen/Qwen2.5-7B-Instruct-1M", Some(pc(7.0, 7.0))),
            ("BAAI/bge-reranker-v2-m3", None),
            ("org/tiny-500M", Some(pc(0.5, 0.5))),
            ("moonshotai/Kimi-K2.5", None),
            ("microsoft/Phi-3-mini-4k-instruct", None),
        ];
        for (id, want) in cases {
            assert_eq!(count_from_id(id), want, "{id}");
        }
    }

    #[test]
    fn markers() {
        let cases = [
            (
                "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8",
                Some(WeightPrecision::Fp8),
            ),
            (
                "RedHatAI/Llama-3.1-8B-Instruct-FP8-dynamic",
                Some(WeightPrecision::Fp8),
            ),
            ("Qwen/Qwen2.5-7B-Instruct-AWQ", Some(WeightPrecision::Int4)),
            (
                "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4",
                Some(WeightPrecision::Int4),
            ),
            (
                "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8",
                Some(WeightPrecision::Int8),
            ),
            ("unsloth/llama-3-8b-bnb-4bit", Some(WeightPrecision::Int4)),
            (
                "nvidia/Llama-3.1-8B-Instruct-NVFP4",
                Some(WeightPrecision::Fp4),
            ),
            ("org/model-MXFP4", Some(WeightPrecision::Fp4)),
            (
                "org/Llama-3.1-8B-quantized.w4a16",
                Some(WeightPrecision::Int4),
            ),
            (
                "neuralmagic/Llama-3.1-8B-Instruct-quantized.w8a8",
                Some(WeightPrecision::Int8),
            ),
            ("org/model-INT4", Some(WeightPrecision::Int4)),
            ("unsloth/gpt-oss-20b-BF16", Some(WeightPrecision::Bf16)),
            ("TheBloke/Llama-2-7B-fp16", Some(WeightPrecision::Fp16)),
            ("Qwen/Qwen2.5-7B-Instruct", None),
            ("org/awqward-7B", None),
        ];
        for (id, want) in cases {
            assert_eq!(precision_marker(id).map(|m| m.0), want, "{id}");
        }
    }
}
