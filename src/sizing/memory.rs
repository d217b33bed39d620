//! The memory model: what one GPU must hold for a given layout.
//!
//! Per GPU, vLLM needs its share of the weights, the KV cache for the tokens
//! it must keep, and a runtime overhead, all inside `gpu-memory-utilization`
//! of the device:
//!
//! ```text
//! weights / (TP x PP) + overhead + kv_per_token_per_gpu x tokens <= utilization x memory
//! ```

use super::Precision;
use super::models::ModelSpec;

/// Bytes in a GiB.
pub const GIB: f64 = 1_073_741_824.0;

/// CUDA context, cuBLAS/NCCL workspaces and CUDA graphs, per GPU.
pub const BASE_OVERHEAD_GIB: f64 = 1.5;

/// Tokens in one prefill chunk during vLLM's memory profiling
/// (`max-num-batched-tokens` on large GPUs).
pub const PROFILE_TOKENS: f64 = 8192.0;

/// Live activation bytes per token and hidden unit at the profiling peak:
/// about a dozen bf16 hidden-sized buffers at once.
pub const ACTIVATION_BYTES_PER_HIDDEN: f64 = 24.0;

/// The shape of a model as far as memory is concerned.
#[derive(Debug, Clone, PartialEq)]
pub struct Arch {
    pub layers: u32,
    pub attention_heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub hidden_size: u32,
    /// MLA latent elements per token and layer, 0 for ordinary attention.
    pub mla_kv_dim: u32,
}

impl Arch {
    pub fn from_spec(m: &ModelSpec) -> Arch {
        Arch {
            layers: m.layers,
            attention_heads: m.attention_heads,
            kv_heads: m.kv_heads,
            head_dim: m.head_dim,
            hidden_size: m.hidden_size,
            mla_kv_dim: m.mla_kv_dim,
        }
    }

    /// A conservative guess for a model the catalog does not know, from its
    /// size: the shape of the largest common dense model of that size class
    /// (Llama/Qwen/Mistral-Large), with 8 KV heads. Older models with full
    /// multi-head attention need more KV cache than this.
    pub fn estimate(params_b: f64) -> Arch {
        // (up to billions, layers, hidden, heads, head_dim)
        const SHAPES: &[(f64, u32, u32, u32, u32)] = &[
            (1.5, 28, 2048, 16, 128),
            (4.0, 36, 3072, 32, 128),
            (9.0, 40, 4096, 32, 128),
            (16.0, 48, 5120, 40, 128),
            (36.0, 64, 5120, 64, 128),
            (80.0, 80, 8192, 64, 128),
            (150.0, 88, 12288, 96, 128),
        ];
        let (layers, hidden, heads, head_dim) = SHAPES
            .iter()
            .find(|s| params_b <= s.0)
            .map(|s| (s.1, s.2, s.3, s.4))
            .unwrap_or((126, 16384, 128, 128));
        Arch {
            layers,
            attention_heads: heads,
            kv_heads: 8,
            head_dim,
            hidden_size: hidden,
            mla_kv_dim: 0,
        }
    }

    /// KV cache bytes one token takes on one GPU of a TP x PP layout.
    ///
    /// Ordinary attention: `2 (K and V) x layers/PP x max(1, kv_heads/TP) x
    /// head_dim x bytes`. MLA caches one latent vector per layer that every
    /// tensor-parallel rank keeps whole: `layers/PP x mla_dim x bytes`.
    pub fn kv_bytes_per_token(&self, kv_bytes: f64, tp: u32, pp: u32) -> f64 {
        let layers = f64::from(self.layers.div_ceil(pp.max(1)));
        if self.mla_kv_dim > 0 {
            return layers * f64::from(self.mla_kv_dim) * kv_bytes;
        }
        let heads = (self.kv_heads / tp.max(1)).max(1);
        2.0 * layers * f64::from(heads) * f64::from(self.head_dim) * kv_bytes
    }

    /// Runtime overhead per GPU in GiB: [`BASE_OVERHEAD_GIB`] plus the
    /// activation peak of a profiling chunk, `8192 tokens x hidden x 24 B`.
    pub fn overhead_gib(&self) -> f64 {
        BASE_OVERHEAD_GIB
            + PROFILE_TOKENS * f64::from(self.hidden_size) * ACTIVATION_BYTES_PER_HIDDEN / GIB
    }
}

/// Weight bytes in GiB: parameters x bytes per parameter, except that a
/// quantized model keeps `unquantized_b` parameters (embeddings, router) in
/// bf16.
pub fn weights_gib(params_b: f64, unquantized_b: f64, precision: Precision) -> f64 {
    let bytes = precision.bytes_per_param();
    let kept = if bytes < 2.0 {
        unquantized_b.clamp(0.0, params_b)
    } else {
        0.0
    };
    ((params_b - kept) * bytes + kept * 2.0) * 1e9 / GIB
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::models::model;

    #[test]
    fn llama_70b_kv_per_token() {
        let a = Arch::from_spec(model("meta-llama/Llama-3.1-70B-Instruct").unwrap());
        assert_eq!(a.kv_bytes_per_token(2.0, 1, 1), 327_680.0);
        assert_eq!(a.kv_bytes_per_token(2.0, 8, 1), 40_960.0);
        // 8 KV heads under TP 16 stay at one head per rank.
        assert_eq!(a.kv_bytes_per_token(2.0, 16, 1), 40_960.0);
        assert_eq!(a.kv_bytes_per_token(2.0, 1, 2), 163_840.0);
    }

    #[test]
    fn mla_kv_is_not_split_by_tp() {
        let a = Arch::from_spec(model("deepseek-ai/DeepSeek-V3").unwrap());
        assert_eq!(a.kv_bytes_per_token(2.0, 1, 1), 61.0 * 576.0 * 2.0);
        assert_eq!(a.kv_bytes_per_token(2.0, 8, 1), 61.0 * 576.0 * 2.0);
    }

    #[test]
    fn weights() {
        let w = weights_gib(8.03, 0.0, Precision::Bf16);
        assert!((w - 14.957).abs() < 0.01, "{w}");
        let w = weights_gib(117.0, 2.3, Precision::Fp4);
        assert!((w - (114.7 * 0.5 + 4.6) * 1e9 / GIB).abs() < 1e-9);
        assert!((Arch::estimate(8.0).overhead_gib() - 2.25).abs() < 1e-9);
    }
}
