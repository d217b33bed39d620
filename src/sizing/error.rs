//! The one error type of the sizing engine.
//!
//! Every message says what was wrong and what would work instead, because the
//! reader is a platform engineer looking at a failed composition or a CLI run,
//! not at this code.

use std::fmt;

use crate::quote::cut;

/// Why a request cannot be sized.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SizingError {
    #[error("unknown GPU type `{}`: known GPU types are {known}", cut(.name))]
    UnknownGpu { name: String, known: String },

    #[error("none of the offered GPU types ({offered}) serves it: {why}")]
    NoOfferedGpuServes {
        offered: String,
        why: String,
        /// Every offered type failed only for the layout the request
        /// fixed ([`SizingError::WeightsExceedGpu`]): that is the field to
        /// change, not the offer.
        layout_too_small: bool,
    },

    #[error(
        "unknown precision `{}`: use one of fp32, bf16, fp16, fp8, int8, int4, fp4",
        cut(.value)
    )]
    UnknownPrecision { value: String },

    #[error(
        "invalid MIG choice `{}`: use auto, none or a profile such as 1g.10gb",
        cut(.value)
    )]
    InvalidMigChoice { value: String },

    #[error(
        "cannot tell how many parameters `{model}` has: it is not in the model catalog and its id carries no size; give its parameter count (for example 8B, 70B or 8x7B)"
    )]
    MissingParameterCount { model: String },

    #[error(
        "invalid parameter count `{}`: {reason}; write it like 500M, 8B, 70B, 8x7B or 1.5T",
        cut(.value)
    )]
    InvalidParameterCount { value: String, reason: String },

    #[error("invalid {field} `{}`: {reason}", cut(.value))]
    InvalidValue {
        field: &'static str,
        value: String,
        reason: String,
    },

    #[error(
        "{precision} weights need a GPU with {precision} support, which {gpu} lacks: {alternatives}"
    )]
    UnsupportedPrecision {
        /// The weight precision's name.
        precision: &'static str,
        gpu: String,
        alternatives: String,
    },

    #[error(
        "{model} is {format}, whose vLLM kernels need compute capability 7.5 (Turing) or newer, which {gpu} ({sm}) lacks: use a GPTQ or bitsandbytes checkpoint of it, whose kernels run on {gpu}, or a GPU of Turing or newer (T4, L4, A100, H100 and the rest of the catalog but the V100s)"
    )]
    UnsupportedCheckpointFormat {
        model: String,
        /// `an AWQ checkpoint`.
        format: &'static str,
        gpu: String,
        sm: String,
    },

    #[error(
        "{model} would load through bitsandbytes ({how}), which vLLM's ROCm build does not run on {gpu} (AMD Instinct, gfx9): use fp8 weights (quantization fp8; {gpu} runs them natively), or an AWQ or GPTQ checkpoint of it"
    )]
    BitsandbytesOnRocm {
        model: String,
        how: &'static str,
        gpu: String,
    },

    #[error("vLLM does not run {model} in float16 (numerical instability){instead}")]
    Float16Refused {
        model: String,
        /// Why the plan would compute in float16, and what runs instead.
        instead: String,
    },

    #[error(
        "{model} is a {architecture} model, which vLLM loads only up to release {last}; vLLM {release} cannot start it: serve {instead}, or an image of vLLM {last} or earlier"
    )]
    ArchitectureRetired {
        model: String,
        architecture: &'static str,
        /// The last release that loads it.
        last: String,
        /// The release the plan is for.
        release: String,
        /// What to serve instead.
        instead: &'static str,
    },

    #[error(
        "{model} is a {architecture} model, which vLLM loads from release {first}; vLLM {release} cannot start it: serve it on an image of vLLM {first} or later, or serve a model vLLM {release} runs"
    )]
    ArchitectureTooNew {
        model: String,
        architecture: &'static str,
        /// The first release that loads it.
        first: String,
        /// The release the plan is for.
        release: String,
    },

    #[error(
        "vLLM {release} does not run on {gpu}, a GPU of compute capability {sm}: from release {from} vLLM is built on PyTorch 2.11, whose CUDA builds start at 7.5 (Turing); use a GPU of Turing or newer (T4, L4, A10G, A100, H100 and newer), or an image of a vLLM release before {from}"
    )]
    GpuRetired {
        gpu: String,
        sm: String,
        /// The release the plan is for.
        release: String,
        /// The first release without it.
        from: String,
    },

    #[error("{gpu} has no MIG: use mig none, or a GPU with MIG ({mig_gpus})")]
    MigUnsupported { gpu: String, mig_gpus: String },

    #[error("{gpu} has no MIG profile `{}`: its profiles are {profiles}", cut(.profile))]
    UnknownMigProfile {
        gpu: String,
        profile: String,
        profiles: String,
    },

    #[error(
        "MIG profile {profile} of {gpu} ({usable_gib:.1} GiB usable) cannot hold {model}, {shortfall}: {suggestion}"
    )]
    MigProfileTooSmall {
        gpu: &'static str,
        profile: &'static str,
        model: String,
        usable_gib: f64,
        shortfall: MigShortfall,
        suggestion: String,
    },

    #[error(
        "a MIG profile gives one slice per replica, but {requested} GPUs were requested: drop the GPU count or use mig none"
    )]
    MigNeedsOneGpu { requested: u32 },

    #[error("{count} GPUs is not a valid tensor-parallel layout for {limits}: use {valid}")]
    InvalidGpuCount {
        count: u32,
        limits: TpLimits,
        valid: String,
    },

    #[error("tensor parallel size {tp} is not valid for {limits}: use {valid}")]
    InvalidTensorParallel {
        tp: u32,
        limits: TpLimits,
        valid: String,
    },

    #[error(
        "pipeline parallel size {pp} is not valid for {model} ({layers} layers): use 1 to {layers}"
    )]
    InvalidPipelineParallel { pp: u32, model: String, layers: u32 },

    #[error(
        "{gpu_count} GPUs do not match tensor parallel {tp} x pipeline parallel {pp}: set gpu count to {product} or drop it"
    )]
    ParallelismMismatch {
        gpu_count: u32,
        tp: u32,
        pp: u32,
        product: u64,
    },

    #[error(
        "maxModelLen {requested} exceeds the {context}-token context of {model}: use at most {context}"
    )]
    ContextLongerThanModel {
        requested: u64,
        context: u64,
        model: String,
    },

    #[error(
        "{model} with {precision} weights ({weights_gib:.1} GiB) does not fit on {gpu}: {suggestion}"
    )]
    DoesNotFit {
        model: String,
        gpu: String,
        /// The weight precision's name.
        precision: &'static str,
        weights_gib: f64,
        suggestion: String,
    },

    #[error(
        "{layout} cannot hold {model}: each GPU's share of the weights is {weights}, more than its {memory}, so vLLM cannot load them whatever its flags{hint}"
    )]
    WeightsExceedGpu {
        /// The layout the caller fixed, "1 x L4 (TP 1, PP 1)".
        layout: String,
        model: String,
        weights: String,
        memory: String,
        /// "; 16 x L4 (TP 8, PP 2) would hold it", or empty.
        hint: String,
    },

    #[error(
        "{layout} holds the KV cache of at most {held} beside the weights, not {requested}: a lower concurrency would fit{hint}"
    )]
    TooManySequences {
        /// The layout the caller fixed, "1 x L4 (TP 1, PP 1)".
        layout: String,
        /// "104 sequences of 256 tokens": of the shortest context the plan
        /// could cap to, or of the one requested.
        held: String,
        /// The concurrency requested, "1,000".
        requested: String,
        /// "; 2 x L4 (TP 2, PP 1) would hold them", or empty.
        hint: String,
    },

    #[error(
        "maxModelLen {requested} does not fit next to {model} on {layout}: at most {fits} tokens fit; {suggestion}"
    )]
    ContextDoesNotFit {
        requested: u64,
        fits: u64,
        model: String,
        layout: String,
        suggestion: String,
    },
}

impl SizingError {
    /// A value outside its range: `invalid {field} `{value}`: {reason}`.
    pub(crate) fn invalid(
        field: &'static str,
        value: String,
        reason: impl Into<String>,
    ) -> SizingError {
        SizingError::InvalidValue {
            field,
            value,
            reason: reason.into(),
        }
    }
}

/// What bounds the tensor-parallel size of a model on a GPU type: its
/// attention and KV heads, and the GPUs in one node. Both layout errors
/// name it the same way, so that the reader sees why a count is invalid.
#[derive(Debug, Clone, PartialEq)]
pub struct TpLimits {
    pub(crate) model: String,
    pub(crate) heads: u32,
    pub(crate) kv_heads: u32,
    pub(crate) gpu: String,
    pub(crate) per_node: u32,
}

impl fmt::Display for TpLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} attention heads, {} KV heads, {} {} per node)",
            self.model, self.heads, self.kv_heads, self.per_node, self.gpu
        )
    }
}

/// Why a MIG slice cannot hold a model: too little memory, or too little
/// left for the KV cache that the balanced objective keeps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MigShortfall {
    /// GiB the model needs on the slice.
    Memory { need_gib: f64 },
    /// GiB the KV cache would be left.
    KvShare { kv_gib: f64 },
}

impl fmt::Display for MigShortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Memory { need_gib } => write!(f, "which needs {need_gib:.1} GiB"),
            Self::KvShare { kv_gib } => write!(
                f,
                "which would leave the KV cache {kv_gib:.1} GiB, less than the sixth the balanced objective keeps for it"
            ),
        }
    }
}
