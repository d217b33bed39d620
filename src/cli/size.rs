//! `function-inference size`: the sizing engine on the command line.
//!
//! A thin adapter: flags become a [`SizingRequest`], the [`Plan`] becomes a
//! table with reasons, or JSON with stable camelCase names that scripts can
//! rely on. The JSON shape is its own struct so that renaming engine
//! internals never changes the output.

use std::io::Write;

use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::sizing::{self, MigChoice, Plan, Precision, SizingError, SizingRequest};
use crate::xr::common::EstimateStatus;

/// Output format of `size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
}

/// Flags of `function-inference size`.
#[derive(Debug, Clone, Args)]
pub struct SizeArgs {
    /// Hugging Face model id, e.g. meta-llama/Llama-3.1-8B-Instruct.
    #[arg(long)]
    pub model: String,
    /// GPU type, e.g. H100-80GB, L4, nvidia-h100-80gb.
    #[arg(long = "gpu-type")]
    pub gpu_type: String,
    /// Weight precision: auto, fp32, bf16, fp16, fp8, int8, int4 or fp4.
    #[arg(long, default_value = "auto")]
    pub quantization: String,
    /// Context length; default: the model's, up to 32768.
    #[arg(long = "max-model-len")]
    pub max_model_len: Option<u64>,
    /// Parameter count for models outside the catalog: 70B, 8x7B, 1.5T.
    #[arg(long = "parameter-count")]
    pub parameter_count: Option<String>,
    /// GPUs per replica; default: the fewest that hold the model.
    #[arg(long = "gpu")]
    pub gpu: Option<u64>,
    /// MIG: auto, none or a profile such as 1g.10gb.
    #[arg(long, default_value = "auto")]
    pub mig: String,
    /// Full-length sequences the KV cache must hold at once.
    #[arg(long)]
    pub concurrency: Option<u32>,
    /// vLLM gpu-memory-utilization.
    #[arg(long = "gpu-memory-utilization", default_value_t = sizing::DEFAULT_GPU_MEMORY_UTILIZATION)]
    pub gpu_memory_utilization: f64,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
}

/// Why `size` failed: a request the engine cannot size, or a failed write.
#[derive(Debug, thiserror::Error)]
pub enum SizeError {
    #[error(transparent)]
    Sizing(#[from] SizingError),
    #[error("cannot write the output: {0}")]
    Io(#[from] std::io::Error),
}

impl SizeArgs {
    /// The engine request these flags describe.
    pub fn request(&self) -> Result<SizingRequest, SizingError> {
        let quantization = match self.quantization.trim() {
            "" | "auto" => None,
            q => Some(q.parse::<Precision>()?),
        };
        let gpu_count = self
            .gpu
            .map(|g| {
                u32::try_from(g).map_err(|_| SizingError::InvalidValue {
                    field: "gpu count",
                    value: g.to_string(),
                    reason: "it must be between 1 and 4096".to_string(),
                })
            })
            .transpose()?;
        Ok(SizingRequest {
            model_id: self.model.clone(),
            gpu_type: self.gpu_type.clone(),
            quantization,
            max_model_len: self.max_model_len,
            parameter_count: self.parameter_count.clone(),
            gpu_count,
            mig: self.mig.parse::<MigChoice>()?,
            gpu_memory_utilization: self.gpu_memory_utilization,
            concurrency: self.concurrency,
            ..SizingRequest::default()
        })
    }
}

/// Sizes and writes the plan in the chosen format.
pub fn run(args: &SizeArgs, out: &mut impl Write) -> Result<(), SizeError> {
    let text = render(args)?;
    out.write_all(text.as_bytes())?;
    Ok(())
}

/// The output `run` writes, as a string.
pub fn render(args: &SizeArgs) -> Result<String, SizingError> {
    let plan = sizing::size(&args.request()?)?;
    Ok(match args.output {
        OutputFormat::Json => {
            let mut s = serde_json::to_string_pretty(&SizeOutput::from(&plan))
                .expect("plain structs serialize");
            s.push('\n');
            s
        }
        OutputFormat::Text => text(&plan),
    })
}

/// The JSON document of `size -o json`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SizeOutput {
    pub model: String,
    pub catalog_model: Option<String>,
    pub gpu_type: String,
    /// GPUs (or MIG slices) of one replica: TP x PP.
    pub gpu_count: u32,
    pub tensor_parallel_size: u32,
    pub pipeline_parallel_size: u32,
    pub nodes: u32,
    pub mig_profile: Option<String>,
    pub gpu_resource_name: String,
    pub dtype: String,
    /// Weight precision (`bf16`, `fp8`, ...).
    pub quantization: String,
    /// vLLM `--quantization`, when vLLM must be told.
    pub quantization_method: Option<String>,
    pub max_model_len: u64,
    pub gpu_memory_utilization: f64,
    pub cpu: String,
    pub memory: String,
    pub shm_size: Option<String>,
    pub startup_probe_seconds: u32,
    pub decode_tokens_per_second: f64,
    pub estimate: EstimateOutput,
    pub reasons: Vec<String>,
    pub warnings: Vec<String>,
}

/// Memory figures in GiB, rounded to 0.01, as XR status reports them, plus
/// the KV cache's per-token size and capacity.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EstimateOutput {
    #[serde(flatten)]
    pub memory: EstimateStatus,
    #[serde(rename = "kvBytesPerToken")]
    pub kv_bytes_per_token: u64,
    #[serde(rename = "kvCapacityTokens")]
    pub kv_capacity_tokens: u64,
}

impl From<&Plan> for SizeOutput {
    fn from(p: &Plan) -> Self {
        SizeOutput {
            model: p.model_id.clone(),
            catalog_model: p.catalog_model.clone(),
            gpu_type: p.gpu.name.to_string(),
            gpu_count: p.gpu_count,
            tensor_parallel_size: p.tensor_parallel_size,
            pipeline_parallel_size: p.pipeline_parallel_size,
            nodes: p.nodes,
            mig_profile: p.mig_profile.clone(),
            gpu_resource_name: p.gpu_resource_name.clone(),
            dtype: p.dtype.clone(),
            quantization: p.weight_precision.to_string(),
            quantization_method: p.quantization.clone(),
            max_model_len: p.max_model_len,
            gpu_memory_utilization: p.gpu_memory_utilization,
            cpu: p.cpu.clone(),
            memory: p.memory.clone(),
            shm_size: p.shm_size.clone(),
            startup_probe_seconds: p.startup_probe_seconds,
            decode_tokens_per_second: p.decode_tokens_per_second().round(),
            estimate: EstimateOutput {
                memory: EstimateStatus::from(&p.estimate),
                kv_bytes_per_token: p.estimate.kv_bytes_per_token.round() as u64,
                kv_capacity_tokens: p.estimate.kv_capacity_tokens,
            },
            reasons: p.reasons.clone(),
            warnings: p.warnings.clone(),
        }
    }
}

/// The human-readable plan: a two-column table, then reasons and warnings.
pub fn text(p: &Plan) -> String {
    let model = match &p.catalog_model {
        Some(c) if !c.eq_ignore_ascii_case(&p.model_id) => format!("{} (catalog: {c})", p.model_id),
        _ => p.model_id.clone(),
    };
    let layout = format!(
        "{} x {} (TP {}, PP {}, {} node{})",
        p.gpu_count,
        p.gpu.name,
        p.tensor_parallel_size,
        p.pipeline_parallel_size,
        p.nodes,
        if p.nodes == 1 { "" } else { "s" }
    );
    let weights = match &p.quantization {
        Some(q) => format!("{} (--quantization {q})", p.weight_precision),
        None => p.weight_precision.to_string(),
    };
    let e = &p.estimate;
    let rows = [
        ("Model", model),
        ("GPUs", layout),
        (
            "MIG profile",
            p.mig_profile.clone().unwrap_or_else(|| "none".into()),
        ),
        ("Resource", p.gpu_resource_name.clone()),
        ("Weights", weights),
        ("dtype", p.dtype.clone()),
        ("maxModelLen", p.max_model_len.to_string()),
        ("CPU / memory", format!("{} / {}", p.cpu, p.memory)),
        (
            "/dev/shm",
            p.shm_size.clone().unwrap_or_else(|| "none".into()),
        ),
        ("Startup probe", format!("{} s", p.startup_probe_seconds)),
        (
            "Memory (GiB)",
            format!(
                "weights {:.1}, KV {:.1}, overhead {:.1}/GPU; per GPU {:.1} of {:.1}",
                e.weights_gib, e.kv_cache_gib, e.overhead_gib, e.per_gpu_gib, e.gpu_capacity_gib
            ),
        ),
        (
            "Decode",
            format!("~{:.0} tokens/s per sequence", p.decode_tokens_per_second()),
        ),
    ];
    let mut s = String::new();
    for (k, v) in rows {
        s.push_str(&format!("{k:<14} {v}\n"));
    }
    s.push_str("\nReasons:\n");
    for r in &p.reasons {
        s.push_str(&format!("  - {r}\n"));
    }
    if !p.warnings.is_empty() {
        s.push_str("\nWarnings:\n");
        for w in &p.warnings {
            s.push_str(&format!("  - {w}\n"));
        }
    }
    s
}
