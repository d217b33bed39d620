//! The precisions a plan speaks of (the weights', the computation's and the
//! KV cache's) and the MIG choice: the small vocabularies of sizing.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::error::SizingError;

/// The precision the weights are stored in on the GPU.
///
/// It decides the bytes per parameter, and so most of the memory a model
/// needs. KV cache and activations stay in the [`ComputeDtype`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightPrecision {
    Fp32,
    Bf16,
    Fp16,
    Fp8,
    Int8,
    Int4,
    Fp4,
}

impl WeightPrecision {
    /// Every precision, widest first.
    pub(crate) const ALL: [WeightPrecision; 7] = [
        WeightPrecision::Fp32,
        WeightPrecision::Bf16,
        WeightPrecision::Fp16,
        WeightPrecision::Fp8,
        WeightPrecision::Int8,
        WeightPrecision::Int4,
        WeightPrecision::Fp4,
    ];

    /// Bytes one parameter takes: fp32 4, bf16/fp16 2, fp8/int8 1, int4/fp4 0.5.
    pub(crate) fn bytes_per_param(self) -> f64 {
        match self {
            WeightPrecision::Fp32 => 4.0,
            WeightPrecision::Bf16 | WeightPrecision::Fp16 => 2.0,
            WeightPrecision::Fp8 | WeightPrecision::Int8 => 1.0,
            WeightPrecision::Int4 | WeightPrecision::Fp4 => 0.5,
        }
    }

    /// Every precision's name, in the order of [`WeightPrecision::ALL`]: the
    /// vocabulary of the XRs, the command line and the JSON output.
    pub(crate) const NAMES: [&'static str; 7] =
        ["fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4"];

    /// The lowercase name used on the command line and in the JSON output.
    pub(crate) fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// True for the precisions below 16 bits, which need a quantized
    /// checkpoint or a vLLM `--quantization` method.
    pub(crate) fn is_quantized(self) -> bool {
        self.bytes_per_param() < 2.0
    }
}

impl fmt::Display for WeightPrecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for WeightPrecision {
    type Err = SizingError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fp32" | "float32" | "float" => Ok(WeightPrecision::Fp32),
            "bf16" | "bfloat16" => Ok(WeightPrecision::Bf16),
            "fp16" | "float16" | "half" => Ok(WeightPrecision::Fp16),
            "fp8" | "float8" => Ok(WeightPrecision::Fp8),
            "int8" => Ok(WeightPrecision::Int8),
            "int4" => Ok(WeightPrecision::Int4),
            "fp4" | "nvfp4" | "mxfp4" => Ok(WeightPrecision::Fp4),
            _ => Err(SizingError::UnknownPrecision {
                value: s.to_string(),
            }),
        }
    }
}

/// The activations' type, vLLM's `--dtype`: quantized weights still
/// compute in 16 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ComputeDtype {
    Float32,
    Bfloat16,
    Float16,
}

impl ComputeDtype {
    /// The `--dtype` value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ComputeDtype::Float32 => "float32",
            ComputeDtype::Bfloat16 => "bfloat16",
            ComputeDtype::Float16 => "float16",
        }
    }
}

impl fmt::Display for ComputeDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether to run on a MIG slice of the GPU.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum MigChoice {
    /// A slice for small models when one holds the weights and a useful KV
    /// cache; whole GPUs otherwise.
    #[default]
    Auto,
    /// Whole GPUs only.
    None,
    /// This profile, e.g. `1g.10gb`; an error when it cannot hold the model.
    Profile(String),
}

impl FromStr for MigChoice {
    type Err = SizingError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v = s.trim().to_ascii_lowercase();
        match v.as_str() {
            "auto" | "" => return Ok(MigChoice::Auto),
            "none" | "off" | "false" => return Ok(MigChoice::None),
            _ => {}
        }
        let profile = v.strip_prefix("mig-").unwrap_or(&v);
        if is_profile_name(profile) {
            Ok(MigChoice::Profile(profile.to_string()))
        } else {
            Err(SizingError::InvalidMigChoice {
                value: s.to_string(),
            })
        }
    }
}

/// How the NVIDIA device plugin offers MIG slices: its `mig-strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MigStrategy {
    /// Each profile as its own resource, `nvidia.com/mig-<profile>`.
    #[default]
    Mixed,
    /// Every slice as an `nvidia.com/gpu`, its profile only in the node's
    /// labels (GKE's MIG node pools too).
    Single,
}

impl MigStrategy {
    /// Every strategy's name, in declaration order.
    pub(crate) const NAMES: [&'static str; 2] = ["mixed", "single"];
}

impl FromStr for MigStrategy {
    type Err = SizingError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "mixed" => Ok(MigStrategy::Mixed),
            "single" => Ok(MigStrategy::Single),
            _ => Err(SizingError::invalid(
                "MIG strategy",
                s.to_string(),
                "use mixed or single",
            )),
        }
    }
}

/// The KV cache's element type, vLLM's `--kv-cache-dtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KvCacheDtype {
    /// The activations' dtype (2 bytes, 4 in float32); no flag.
    #[default]
    Auto,
    /// One byte per element: twice the tokens in the same memory
    /// (`--kv-cache-dtype fp8`).
    Fp8,
}

impl KvCacheDtype {
    /// The `--kv-cache-dtype` value to pass, when not the default.
    pub(crate) fn vllm_arg(self) -> Option<&'static str> {
        match self {
            KvCacheDtype::Auto => None,
            KvCacheDtype::Fp8 => Some("fp8"),
        }
    }

    /// Every value's name, in declaration order.
    pub(crate) const NAMES: [&'static str; 2] = ["auto", "fp8"];

    pub(crate) fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

impl fmt::Display for KvCacheDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for KvCacheDtype {
    type Err = SizingError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(KvCacheDtype::Auto),
            "fp8" | "fp8_e4m3" | "fp8_e5m2" => Ok(KvCacheDtype::Fp8),
            _ => Err(SizingError::invalid(
                "KV cache dtype",
                s.to_string(),
                "use auto or fp8",
            )),
        }
    }
}

/// What a replica's layout is chosen for (see docs/sizing.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Objective {
    /// The fewest GPUs on which vLLM starts and holds `concurrency` sequences
    /// of maxModelLen: its own start-up check, nothing more.
    Minimal,
    /// Room for what the caller asked: with a maxModelLen or a concurrency,
    /// the fewest GPUs that hold `concurrency` sequences of maxModelLen (the
    /// caller said what the replica must serve); without either, the vLLM
    /// recipes' headroom on top of [`Objective::Minimal`] (the layout's
    /// memory is at least 1.2 x the weights, so the KV cache is useful).
    #[default]
    Balanced,
    /// Room for a full batch: the KV cache holds
    /// [`super::THROUGHPUT_SEQUENCES`] sequences of maxModelLen (or
    /// `concurrency`, when larger), on top of [`Objective::Balanced`].
    Throughput,
}

impl Objective {
    /// Whether a layout must keep the recipes' headroom beyond what vLLM
    /// needs to start: `need_stated` is true when the caller gave the
    /// context or the concurrency to hold, which then sizes `balanced`.
    pub(crate) fn keeps_headroom(self, need_stated: bool) -> bool {
        match self {
            Objective::Minimal => false,
            Objective::Balanced => !need_stated,
            Objective::Throughput => true,
        }
    }

    /// Every objective's name, in declaration order.
    pub(crate) const NAMES: [&'static str; 3] = ["minimal", "balanced", "throughput"];

    pub(crate) fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Objective {
    type Err = SizingError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "minimal" => Ok(Objective::Minimal),
            "" | "balanced" => Ok(Objective::Balanced),
            "throughput" => Ok(Objective::Throughput),
            _ => Err(SizingError::invalid(
                "objective",
                s.to_string(),
                "use minimal, balanced or throughput",
            )),
        }
    }
}

/// `<n>g.<m>gb`, the shape of every MIG profile name.
fn is_profile_name(s: &str) -> bool {
    let Some((g, mem)) = s.split_once("g.") else {
        return false;
    };
    let Some(gb) = mem.strip_suffix("gb") else {
        return false;
    };
    !g.is_empty()
        && g.bytes().all(|b| b.is_ascii_digit())
        && !gb.is_empty()
        && gb.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_names() {
        for (s, p) in [
            ("fp32", WeightPrecision::Fp32),
            ("bfloat16", WeightPrecision::Bf16),
            ("BF16", WeightPrecision::Bf16),
            ("float16", WeightPrecision::Fp16),
            ("fp8", WeightPrecision::Fp8),
            ("int8", WeightPrecision::Int8),
            ("int4", WeightPrecision::Int4),
            ("fp4", WeightPrecision::Fp4),
        ] {
            assert_eq!(s.parse::<WeightPrecision>().unwrap(), p, "{s}");
        }
        for p in WeightPrecision::ALL {
            assert_eq!(p.to_string().parse::<WeightPrecision>().unwrap(), p);
            // The XRs read the same names serde writes.
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
        for k in [KvCacheDtype::Auto, KvCacheDtype::Fp8] {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
        for o in [
            Objective::Minimal,
            Objective::Balanced,
            Objective::Throughput,
        ] {
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
        assert_eq!(
            "int3".parse::<WeightPrecision>().unwrap_err().to_string(),
            "unknown precision `int3`: use one of fp32, bf16, fp16, fp8, int8, int4, fp4"
        );
    }

    #[test]
    fn mig_choices() {
        assert_eq!("auto".parse::<MigChoice>().unwrap(), MigChoice::Auto);
        assert_eq!("none".parse::<MigChoice>().unwrap(), MigChoice::None);
        assert_eq!(
            "1g.10gb".parse::<MigChoice>().unwrap(),
            MigChoice::Profile("1g.10gb".into())
        );
        assert_eq!(
            "mig-3g.40gb".parse::<MigChoice>().unwrap(),
            MigChoice::Profile("3g.40gb".into())
        );
        assert_eq!(
            "half".parse::<MigChoice>().unwrap_err().to_string(),
            "invalid MIG choice `half`: use auto, none or a profile such as 1g.10gb"
        );
    }
}
