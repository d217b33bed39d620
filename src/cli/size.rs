//! `function-inference size`: the sizing engine on the command line.
//!
//! A thin adapter: flags become a [`SizingRequest`], the [`Plan`] becomes a
//! table with reasons, or JSON with stable camelCase names that scripts can
//! rely on. The JSON shape is its own struct so that renaming engine
//! internals never changes the output.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde::Serialize;

use super::input_file;
use super::whole_number::whole_number;
use crate::sizing::{
    self, ConfigError, Gpu, GpuPrices, KvCacheDtype, MigChoice, MigStrategy, ModelConfig,
    Objective, Plan, PriceFault, ScalingTarget, SizingError, SizingRequest, WeightPrecision,
    checked_price, read_hf_quant_config, weights_index_total_bytes,
};
use crate::xr::llm_inference::MODEL_MAX;
use crate::xr::plan_status::{PlanStatus, round2};
use crate::xr::validate::{RepositoryProblem, repository_problem};

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
    #[arg(value_name = "MODEL", required_unless_present = "model")]
    pub(crate) model_id: Option<String>,
    /// The model id as a flag, as earlier releases took it.
    #[arg(long, value_name = "MODEL", conflicts_with = "model_id")]
    pub(crate) model: Option<String>,
    /// GPU type, e.g. H100-80GB, L4, nvidia-h100-80gb; several, comma-separated
    /// (L4,H100-80GB), or omitted or `all` for every GPU type of the catalog:
    /// side by side.
    #[arg(long = "gpu-type")]
    pub(crate) gpu_type: Option<String>,
    /// Weight precision: auto, fp32, bf16, fp16, fp8, int8, int4 or fp4.
    #[arg(long, default_value = "auto")]
    pub(crate) quantization: String,
    /// Context length; default: the model's, up to 32768.
    #[arg(long = "max-model-len", value_parser = context_length)]
    pub(crate) max_model_len: Option<u64>,
    /// Parameter count for models outside the catalog: 70B, 8x7B, 1.5T.
    #[arg(long = "parameter-count")]
    pub(crate) parameter_count: Option<String>,
    /// GPUs per replica; default: the fewest that hold the model.
    #[arg(long = "gpu", value_parser = gpus_per_replica)]
    pub(crate) gpu: Option<u32>,
    /// MIG: auto, none or a profile such as 1g.10gb.
    #[arg(long, default_value = "auto")]
    pub(crate) mig: String,
    /// How the NVIDIA device plugin offers MIG slices: mixed (each profile
    /// its own resource, nvidia.com/mig-1g.10gb) or single (every slice an
    /// nvidia.com/gpu, as on GKE).
    #[arg(long = "mig-strategy", default_value = "mixed")]
    pub(crate) mig_strategy: String,
    /// Full-length sequences the KV cache must hold at once; without
    /// --max-model-len, the context is capped to what the fewest GPUs that
    /// hold them leave (at least 4,096 tokens).
    #[arg(long, value_parser = sequences)]
    pub(crate) concurrency: Option<u32>,
    /// Tensor-parallel size; default: chosen with the GPU count.
    #[arg(long = "tensor-parallel", value_parser = gpus)]
    pub(crate) tensor_parallel: Option<u32>,
    /// Pipeline-parallel size; default: chosen with the GPU count.
    #[arg(long = "pipeline-parallel", value_parser = gpus)]
    pub(crate) pipeline_parallel: Option<u32>,
    /// The model's Hugging Face config.json: its exact architecture, for any
    /// model (wins over the catalog); `-` reads it from standard input.
    #[arg(long = "config", value_name = "CONFIG_JSON")]
    pub(crate) config: Option<PathBuf>,
    /// The checkpoint's hf_quant_config.json, where ModelOpt 0.29 and earlier
    /// wrote its quantization (NVIDIA's older NVFP4 and FP8 checkpoints): the
    /// modules it leaves in 16 bits. Read, as vLLM reads it, when config.json
    /// has no quantization_config.
    #[arg(
        long = "hf-quant-config",
        value_name = "HF_QUANT_CONFIG_JSON",
        requires = "config"
    )]
    pub(crate) hf_quant_config: Option<PathBuf>,
    /// The model's model.safetensors.index.json: the checkpoint's total
    /// bytes (metadata.total_size), the exact weights.
    #[arg(long = "weights-index", value_name = "INDEX_JSON")]
    pub(crate) weights_index: Option<PathBuf>,
    /// vLLM --kv-cache-dtype: auto or fp8 (half the KV cache per token).
    #[arg(long = "kv-cache-dtype", default_value = "auto")]
    pub(crate) kv_cache_dtype: String,
    /// What the layout is for: minimal (the fewest GPUs vLLM starts on),
    /// balanced (the recipes' headroom) or throughput (room for a batch).
    #[arg(long, default_value = "balanced")]
    pub(crate) objective: String,
    /// The vLLM release to size for, e.g. 0.19.0; unknown releases get the
    /// larger activation peak of earlier ones.
    #[arg(long = "vllm-version", value_parser = vllm_release)]
    pub(crate) vllm_version: Option<String>,
    /// vLLM --max-num-seqs: the requests the server runs at once, which set
    /// its sampler's warm-up peak; default: vLLM's for the GPU (1024 on 70
    /// GiB or more, except A100s; 256 otherwise).
    #[arg(long = "max-num-seqs", value_parser = batch)]
    pub(crate) max_num_seqs: Option<u64>,
    /// Prompt tokens of a typical request: with --output-tokens, the request
    /// size the autoscaling target is derived for (default: the full context).
    #[arg(long = "prompt-tokens", value_parser = request_tokens)]
    pub(crate) prompt_tokens: Option<u64>,
    /// Output tokens of a typical request.
    #[arg(long = "output-tokens", value_parser = request_tokens)]
    pub(crate) output_tokens: Option<u64>,
    /// Price of one GPU for one hour, as TYPE=PRICE (repeat it: --gpu-price
    /// L4=0.8 --gpu-price H100-80GB=4.1): the comparison shows each
    /// replica's cost and which priced type is cheapest, on one node where
    /// one serves.
    #[arg(long = "gpu-price", value_name = "TYPE=PRICE")]
    pub(crate) gpu_prices: Vec<String>,
    /// vLLM gpu-memory-utilization.
    #[arg(long = "gpu-memory-utilization", default_value_t = sizing::DEFAULT_GPU_MEMORY_UTILIZATION,
          value_parser = gpu_memory_utilization)]
    pub(crate) gpu_memory_utilization: f64,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
}

/// Why `size` failed: a request the engine cannot size, or a failed write.
#[derive(Debug, thiserror::Error)]
pub enum SizeError {
    #[error("{}", led_by_flag(.error, *.quantization_given))]
    Sizing {
        error: SizingError,
        /// Whether `--quantization` chose the precision, not the model.
        quantization_given: bool,
    },
    #[error("cannot write the output: {0}")]
    Io(#[from] std::io::Error),
}

/// A sizing error led by the flag to change: the engine's messages speak of
/// an XR's fields (`maxModelLen`), and at a terminal one types flags.
/// A precision the model's id or config.json chose is the model's to
/// change: `--quantization` would only size weights it does not have.
fn led_by_flag(e: &SizingError, quantization_given: bool) -> String {
    use SizingError as E;
    let flag = match e {
        E::UnknownGpu { .. } | E::GpuRetired { .. } => "--gpu-type",
        E::UnknownPrecision { .. } | E::UnsupportedPrecision { .. } if !quantization_given => {
            "MODEL"
        }
        E::UnknownPrecision { .. } | E::UnsupportedPrecision { .. } => "--quantization",
        E::InvalidMigChoice { .. }
        | E::MigUnsupported { .. }
        | E::UnknownMigProfile { .. }
        | E::MigProfileTooSmall { .. }
        | E::MigNeedsOneGpu { .. } => "--mig",
        E::MissingParameterCount { .. } => {
            "--parameter-count (or --config with the model's config.json, or --weights-index)"
        }
        E::InvalidParameterCount { .. } => "--parameter-count",
        E::InvalidGpuCount { .. }
        | E::WeightsExceedGpu { .. }
        | E::InvalidValue {
            field: "gpu count", ..
        } => "--gpu",
        E::InvalidValue {
            field: "objective", ..
        } => "--objective",
        E::InvalidValue {
            field: "MIG strategy",
            ..
        } => "--mig-strategy",
        E::InvalidValue {
            field: "KV cache dtype",
            ..
        } => "--kv-cache-dtype",
        E::InvalidTensorParallel { .. } => "--tensor-parallel",
        E::InvalidPipelineParallel { .. } => "--pipeline-parallel",
        E::ParallelismMismatch { .. } => "--gpu, --tensor-parallel and --pipeline-parallel",
        E::ContextLongerThanModel { .. } | E::ContextDoesNotFit { .. } => "--max-model-len",
        E::TooManySequences { .. } => "--concurrency",
        _ => return e.to_string(),
    };
    format!("{flag}: {e}")
}

/// `--prompt-tokens` and `--output-tokens` take what an LLMInference's
/// `spec.autoscaling.promptTokens` and `outputTokens` take.
fn request_tokens(written: &str) -> Result<u64, String> {
    let max = crate::xr::shared_fields::CONTEXT_TOKENS_MAX as u64;
    whole_number(1, max, " of tokens")(written)
}

/// `--max-model-len` takes what an LLMInference's `spec.maxModelLen` takes.
fn context_length(written: &str) -> Result<u64, String> {
    use crate::xr::shared_fields::{CONTEXT_TOKENS_MAX as MAX, CONTEXT_TOKENS_MIN as MIN};
    whole_number(MIN as u64, MAX as u64, " of tokens")(written)
}

/// `--concurrency` takes as many sequences as the sizing engine plans for.
fn sequences(written: &str) -> Result<u32, String> {
    whole_number(1, u64::from(sizing::MAX_CONCURRENCY), " of sequences")(written)
}

/// `--max-num-seqs` takes what vLLM does: a whole number of at least 1.
fn batch(written: &str) -> Result<u64, String> {
    whole_number(1, u64::from(u32::MAX), " of requests")(written)
}

/// `--tensor-parallel` and `--pipeline-parallel` take at most the GPUs an
/// LLMInference's `spec.gpu` may ask for.
fn gpus(written: &str) -> Result<u32, String> {
    whole_number(1, crate::xr::shared_fields::GPUS_PER_REPLICA_MAX as u64, "")(written)
}

/// `--gpu` takes the GPUs of one replica; a GPU type given to it is pointed
/// to `--gpu-type`, the flag it was meant for.
fn gpus_per_replica(written: &str) -> Result<u32, String> {
    let max = crate::xr::shared_fields::GPUS_PER_REPLICA_MAX as u64;
    whole_number(1, max, " of GPUs per replica")(written).map_err(|why| match sizing::gpu(written) {
        Ok(_) => format!("{written} is a GPU type, which --gpu-type takes; --gpu takes the GPUs per replica, from 1 to {max}"),
        Err(_) => why,
    })
}

/// `--gpu-memory-utilization` takes what the step input's
/// `defaults.gpuMemoryUtilization` takes.
fn gpu_memory_utilization(written: &str) -> Result<f64, String> {
    use crate::input::{GPU_MEMORY_UTILIZATION_MAX as MAX, GPU_MEMORY_UTILIZATION_MIN as MIN};
    crate::input::gpu_memory_utilization(written.trim())
        .ok_or_else(|| format!("use a share from {MIN} to {MAX} (0.9 is usual)"))
}

/// `--vllm-version` takes what the step input's `defaults.vllmVersion` takes.
fn vllm_release(written: &str) -> Result<String, String> {
    let max = crate::input::VLLM_VERSION_MAX;
    if written.chars().count() > max {
        return Err(format!(
            "it is longer than {max} characters; use the vLLM release the image runs, such as 0.19.0"
        ));
    }
    sizing::release(written)
        .map(|_| written.to_string())
        .ok_or_else(|| "use the vLLM release the image runs, such as 0.19.0".to_string())
}

impl SizeArgs {
    /// What `--gpu-type` asks for: one type's plan, or several side by side.
    fn gpu_types(&self) -> Result<GpuTypes<'_>, SizingError> {
        let written = self.gpu_type.as_deref().map(str::trim).unwrap_or_default();
        if written.is_empty() || written.eq_ignore_ascii_case("all") {
            return Ok(GpuTypes::Compare(sizing::gpus().iter().collect()));
        }
        if !written.contains(',') {
            return Ok(GpuTypes::One(written));
        }
        let mut listed: Vec<&'static Gpu> = Vec::new();
        for name in written.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let gpu = sizing::gpu(name)?;
            if !listed.iter().any(|g| g.name == gpu.name) {
                listed.push(gpu);
            }
        }
        if listed.is_empty() {
            return Err(SizingError::invalid(
                "--gpu-type",
                written.to_string(),
                "name GPU types separated by commas, such as L4,H100-80GB",
            ));
        }
        Ok(GpuTypes::Compare(listed))
    }

    /// The prices of `--gpu-price`, by canonical GPU type name.
    fn prices(&self) -> Result<GpuPrices, SizingError> {
        let mut prices = GpuPrices::new();
        for pair in &self.gpu_prices {
            let invalid = |reason: &str| SizingError::invalid("--gpu-price", pair.clone(), reason);
            let (name, price) = pair
                .split_once('=')
                .ok_or_else(|| invalid("write it as TYPE=PRICE, such as L4=0.8"))?;
            let price: f64 = price.trim().parse().map_err(|_| {
                invalid("the price is not a number; write it as TYPE=PRICE, such as L4=0.8")
            })?;
            let name = name.trim();
            let (gpu, price) = checked_price(name, price).map_err(|fault| match fault {
                PriceFault::UnknownGpu(e) => invalid(&e),
                PriceFault::Value(why) => invalid(&format!("{name} {why}")),
            })?;
            if prices.insert(gpu.clone(), price).is_some() {
                return Err(invalid(&format!(
                    "{gpu} is priced by an earlier --gpu-price already; give each GPU type one price"
                )));
            }
        }
        Ok(prices)
    }

    /// Whether `--quantization` names a precision (not `auto`).
    fn quantization_given(&self) -> bool {
        !matches!(self.quantization.trim(), "" | "auto")
    }

    /// The engine request these flags describe, but for the GPU type, which
    /// [`render`] sets from [`Self::gpu_types`].
    pub(crate) fn request(&self) -> Result<SizingRequest, SizingError> {
        input_file::stdin_once([
            ("--config", self.config.as_deref()),
            ("--hf-quant-config", self.hf_quant_config.as_deref()),
            ("--weights-index", self.weights_index.as_deref()),
        ])
        .map_err(|reason| SizingError::invalid("--config", "-".to_string(), reason))?;
        let quantization = if self.quantization_given() {
            // `auto` is the flag's, not the engine's: the engine's refusal
            // would leave it out of what is valid.
            let written = self.quantization.trim();
            Some(written.parse::<WeightPrecision>().map_err(|_| {
                SizingError::invalid(
                    "--quantization",
                    written.to_string(),
                    format!(
                        "use auto (the checkpoint's precision) or one of {}",
                        WeightPrecision::NAMES.join(", ")
                    ),
                )
            })?)
        } else {
            None
        };
        let hf_quant_config = read_json(
            self.hf_quant_config.as_deref(),
            "hf quant config",
            read_hf_quant_config,
        )?;
        let model_config = read_json(self.config.as_deref(), "config", |text| {
            ModelConfig::from_files(text, hf_quant_config)
        })?;
        let checkpoint_bytes = read_json(
            self.weights_index.as_deref(),
            "weights index",
            weights_index_total_bytes,
        )?;
        let model_id = self
            .model_id
            .clone()
            .or_else(|| self.model.clone())
            .unwrap_or_default()
            .trim()
            .to_string();
        check_model_id(&model_id)?;
        Ok(SizingRequest {
            model_id,
            quantization,
            max_model_len: self.max_model_len,
            parameter_count: self.parameter_count.clone(),
            gpu_count: self.gpu,
            tensor_parallel: self.tensor_parallel,
            pipeline_parallel: self.pipeline_parallel,
            mig: self.mig.parse::<MigChoice>()?,
            mig_strategy: self.mig_strategy.parse::<MigStrategy>()?,
            gpu_memory_utilization: self.gpu_memory_utilization,
            concurrency: self.concurrency,
            kv_cache_dtype: self.kv_cache_dtype.parse::<KvCacheDtype>()?,
            objective: self.objective.parse::<Objective>()?,
            model_config,
            checkpoint_bytes,
            vllm_version: self.vllm_version.clone(),
            max_num_seqs: self.max_num_seqs,
            ..SizingRequest::default()
        })
    }
}

/// Refuses a model id an LLMInference's spec.model would refuse, so that
/// `size` plans only what an XR can ask for.
fn check_model_id(id: &str) -> Result<(), SizingError> {
    // An empty id has its own message; a path names weights in the image.
    if id.is_empty() || id.starts_with('/') {
        return Ok(());
    }
    let n = id.chars().count();
    let problem = if n > MODEL_MAX {
        Some(format!(
            "it is {n} characters long; use at most {MODEL_MAX}"
        ))
    } else {
        repository_problem(id).map(|problem| match problem {
            RepositoryProblem::Gguf(why) => format!("it is {why}"),
            RepositoryProblem::NotAnId(p) => {
                format!("not a Hugging Face id ({p}); use one such as Qwen/Qwen2.5-7B-Instruct")
            }
        })
    };
    problem.map_or(Ok(()), |reason| {
        Err(SizingError::invalid("model", id.to_string(), reason))
    })
}

/// What `parse` reads from the JSON file a flag names, if it names one; an
/// error names the flag's `field` and the file.
fn read_json<T>(
    path: Option<&Path>,
    field: &'static str,
    parse: impl FnOnce(&str) -> Result<T, ConfigError>,
) -> Result<Option<T>, SizingError> {
    let Some(path) = path else { return Ok(None) };
    let invalid = |reason: String| SizingError::invalid(field, input_file::shown(path), reason);
    let text = input_file::read_text(path, "a JSON file")
        .map_err(|e| invalid(format!("cannot read it: {e}")))?;
    parse(&text).map(Some).map_err(|e| invalid(e.to_string()))
}

/// Sizes and writes the plan in the chosen format.
pub fn run(args: &SizeArgs, out: &mut impl Write) -> Result<(), SizeError> {
    let text = render(args).map_err(|error| SizeError::Sizing {
        error,
        quantization_given: args.quantization_given(),
    })?;
    out.write_all(text.as_bytes())?;
    Ok(())
}

/// The output `run` writes, as a string.
pub fn render(args: &SizeArgs) -> Result<String, SizingError> {
    let mut request = args.request()?;
    let prices = args.prices()?;
    match args.gpu_types()? {
        GpuTypes::One(name) => request.gpu_type = name.to_string(),
        GpuTypes::Compare(gpus) => {
            let unlisted: Vec<&str> = prices
                .keys()
                .filter(|p| !gpus.iter().any(|g| &g.name == *p))
                .map(String::as_str)
                .collect();
            if !unlisted.is_empty() {
                let (names, is, them, prices) = match unlisted.as_slice() {
                    [one] => (one.to_string(), "is", "it", "its price"),
                    many => (many.join(", "), "are", "them", "their prices"),
                };
                return Err(SizingError::invalid(
                    "--gpu-price",
                    args.gpu_prices.join(" "),
                    format!(
                        "{names} {is} not among the compared GPU types; add {them} to --gpu-type or drop {prices}"
                    ),
                ));
            }
            return compare(&request, &gpus, &prices, args.output);
        }
    }
    let mut plan = sizing::size(&request).map_err(|e| with_stages_hint(e, &request))?;
    let shape = plan.request_shape(args.prompt_tokens, args.output_tokens);
    let stated_by = match (args.prompt_tokens, args.output_tokens) {
        (Some(_), Some(_)) => "--prompt-tokens + --output-tokens",
        (Some(_), None) => "--prompt-tokens",
        _ => "--output-tokens",
    };
    plan.warnings
        .extend(shape.beyond_context_warning(stated_by, "a longer --max-model-len"));
    let scaling = plan.scaling_target(shape, None);
    Ok(match args.output {
        OutputFormat::Json => json(
            &SizeOutput::from(&plan)
                .priced(&plan, &prices)
                .with_scaling(&scaling),
        ),
        OutputFormat::Text => text(&plan, &prices, &scaling),
    })
}

/// A GPU count that no tensor-parallel layout makes may still run as
/// pipeline stages, which `size` can ask for and an XR cannot: the error
/// names the split with the largest TP that holds the model.
fn with_stages_hint(e: SizingError, req: &SizingRequest) -> SizingError {
    let SizingError::InvalidGpuCount {
        count,
        limits,
        valid,
    } = e
    else {
        return e;
    };
    let staged = (req.tensor_parallel.is_none() && req.pipeline_parallel.is_none())
        .then(|| {
            (2..=count).filter(|p| count % p == 0).find(|&p| {
                let staged = SizingRequest {
                    pipeline_parallel: Some(p),
                    ..req.clone()
                };
                serves(&sizing::size(&staged)).is_ok()
            })
        })
        .flatten();
    let valid = match staged {
        Some(p) => format!(
            "{valid}; or --pipeline-parallel {p}, which runs them as {p} pipeline stages of TP {}",
            count / p
        ),
        None => valid,
    };
    SizingError::InvalidGpuCount {
        count,
        limits,
        valid,
    }
}

fn json(value: &impl Serialize) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("plain structs serialize");
    s.push('\n');
    s
}

/// One GPU type of a comparison: its plan, or why it cannot serve.
#[serde_with::skip_serializing_none]
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Compared {
    gpu_type: String,
    plan: Option<SizeOutput>,
    error: Option<String>,
}

/// `size -o json` without one GPU type: every type, and when prices are
/// given, the cheapest priced one with the reason it won.
#[serde_with::skip_serializing_none]
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Comparison {
    gpu_types: Vec<Compared>,
    cheapest: Option<Cheapest>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Cheapest {
    gpu_type: String,
    reason: String,
}

/// What `--gpu-type` names: one GPU type, or the types to compare.
enum GpuTypes<'a> {
    One(&'a str),
    Compare(Vec<&'static Gpu>),
}

/// `request` on each of `gpus`, side by side; a GPU type that cannot serve
/// the model is a row that says why. With prices, each priced row shows a
/// replica's cost and the last line the cheapest priced type, chosen as for
/// an XR that names no GPU type. When every type fails alike, the fault is
/// the request's, not a GPU's: that one error is the answer, led by its flag.
fn compare(
    request: &SizingRequest,
    gpus: &[&Gpu],
    prices: &GpuPrices,
    output: OutputFormat,
) -> Result<String, SizingError> {
    let rows: Vec<_> = gpus
        .iter()
        .map(|gpu| {
            let on_gpu = SizingRequest {
                gpu_type: gpu.name.clone(),
                ..request.clone()
            };
            (gpu.name.clone(), sizing::size(&on_gpu))
        })
        .collect();
    let errors: Vec<&SizingError> = rows.iter().filter_map(|(_, p)| p.as_ref().err()).collect();
    if errors.len() == rows.len()
        && let Some(e) = sizing::shared_refusal(&errors)
    {
        return Err((*e).clone());
    }
    // The priced types, in the order of the prices, from the plans above.
    let cheapest = (!prices.is_empty()).then(|| {
        let priced = prices.keys().filter_map(|name| {
            rows.iter()
                .find(|(gpu_type, _)| gpu_type == name)
                .map(|(gpu_type, plan)| (gpu_type.clone(), plan.clone()))
        });
        sizing::cheapest_of(priced, prices)
    });
    if let OutputFormat::Json = output {
        let gpu_types: Vec<Compared> = rows
            .iter()
            .map(|(gpu_type, plan)| {
                let verdict = serves(plan);
                Compared {
                    gpu_type: gpu_type.clone(),
                    plan: verdict
                        .as_ref()
                        .ok()
                        .map(|p| SizeOutput::from(*p).priced(p, prices)),
                    error: verdict.err(),
                }
            })
            .collect();
        let cheapest = cheapest.and_then(Result::ok).map(|p| Cheapest {
            gpu_type: p.gpu.name.clone(),
            reason: p.reasons.first().cloned().unwrap_or_default(),
        });
        return Ok(json(&Comparison {
            gpu_types,
            cheapest,
        }));
    }
    let compared = if gpus.len() == sizing::gpus().len() {
        "every GPU type of the catalog".to_string()
    } else {
        let names: Vec<&str> = gpus.iter().map(|g| g.name.as_str()).collect();
        format!("GPU types {}", names.join(", "))
    };
    let mut s = format!(
        "Model {}, {compared} (--gpu-type TYPE for one plan and its reasons)\n\n",
        request.model_id
    );
    let cost_header = if prices.is_empty() { "" } else { "    cost/h" };
    s.push_str(&format!(
        "{:<16} {:>4}  {:<8}  {:<7} {:>5}  {:>11}  {:>20}  {:>8}{cost_header}\n",
        "GPU type",
        "GPUs",
        "MIG",
        "TP x PP",
        "nodes",
        "maxModelLen",
        "KV holds (requests)",
        "decode/s"
    ));
    for (gpu_type, plan) in &rows {
        match serves(plan) {
            Ok(p) => s.push_str(&format!(
                "{:<16} {:>4}  {:<8}  {:<7} {:>5}  {:>11}  {:>20}  {:>8.0}{}\n",
                gpu_type,
                p.gpu_count,
                // A slice holds less than its GPU: without it a B200 row
                // would read as a whole B200 holding few requests.
                p.mig_profile.as_deref().unwrap_or("-"),
                format!("{} x {}", p.tensor_parallel_size, p.pipeline_parallel_size),
                p.nodes,
                p.max_model_len,
                format!("{:.1}", p.sequences_held_fraction(p.max_model_len)),
                p.decode_tokens_per_second(),
                match sizing::hourly_cost(p, prices) {
                    Some(c) => format!("  {c:>8.2}"),
                    None => String::new(),
                },
            )),
            Err(why) => s.push_str(&format!(
                "{gpu_type:<16} cannot serve it: {}\n",
                first_clause(&why)
            )),
        }
    }
    s.push_str("\nMIG: the slice of each GPU a replica runs on (- for whole GPUs); KV holds: full-length requests (of maxModelLen tokens) the KV cache of one replica holds at once; decode/s: one sequence's tokens per second at most (the memory-bandwidth bound)");
    s.push_str(if prices.is_empty() {
        ".\n"
    } else {
        "; cost/h: one replica at --gpu-price.\n"
    });
    // Only priced types compete: where some are not, say which did, or
    // "the only one that serves it" would pass over the unpriced ones.
    let mut cheapest_of = if gpus.iter().all(|g| prices.contains_key(&g.name)) {
        "Cheapest".to_string()
    } else {
        let priced: Vec<&str> = prices.keys().map(String::as_str).collect();
        format!("Cheapest of the priced types ({})", priced.join(", "))
    };
    match cheapest {
        Some(Ok(p)) => {
            // One node wins over a cheaper replica spread over several:
            // plain "Cheapest" would then contradict the costs above it.
            let cost = |plan: &Plan| sizing::hourly_cost(plan, prices);
            if rows
                .iter()
                .filter_map(|(_, plan)| serves(plan).ok().and_then(cost))
                .any(|c| cost(&p).is_some_and(|chosen| c < chosen))
            {
                cheapest_of.push_str(" on one node");
            }
            let reason = p.reasons.first().cloned().unwrap_or_default();
            s.push_str(&format!("\n{cheapest_of}: {}. {reason}\n", p.gpu.name));
        }
        Some(Err(e)) => s.push_str(&format!("\n{cheapest_of}: none; {e}\n")),
        None => {}
    }
    Ok(s)
}

/// A comparison row's verdict: the plan, where it serves, or why the type
/// cannot. A layout the request fixed is planned even where it cannot hold
/// the model (with a warning); as the cheapest choice, a comparison counts
/// it among those that cannot serve.
fn serves(plan: &Result<Plan, SizingError>) -> Result<&Plan, String> {
    match plan {
        Ok(p) => p.overflow().map_or(Ok(p), Err),
        Err(e) => Err(e.to_string()),
    }
}

/// The first clause of an engine error, for a table row: up to its first
/// "; " outside parentheses, so that a row never ends inside an aside.
fn first_clause(message: &str) -> &str {
    let mut depth = 0usize;
    for (i, c) in message.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ';' if depth == 0 && message[i + 1..].starts_with(' ') => return &message[..i],
            _ => {}
        }
    }
    message
}

/// The JSON document of `size -o json`: what an XR's `status.plan` reports,
/// plus what only a person sizing by hand needs.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SizeOutput {
    pub(crate) model: String,
    #[serialize_always]
    pub(crate) catalog_model: Option<String>,
    #[serde(flatten)]
    pub plan: PlanStatus,
    pub(crate) nodes: u32,
    /// `vllm serve` flags the plan needs beyond TP, PP, dtype,
    /// max-model-len and gpu-memory-utilization.
    pub(crate) engine_args: Vec<String>,
    pub(crate) gpu_memory_utilization: f64,
    pub(crate) startup_probe_seconds: u32,
    pub(crate) decode_tokens_per_second: f64,
    /// Weights on one GPU, rotary cache included, in GiB.
    #[serde(rename = "weightsPerGpuGiB")]
    pub(crate) weights_per_gpu_gib: f64,
    pub(crate) kv_cache: KvCacheOutput,
    /// One replica's cost per hour at `--gpu-price`, when its GPU type has one.
    pub(crate) hourly_cost: Option<f64>,
    /// The requests one replica serves at once and the autoscaling target.
    pub(crate) scaling: Option<ScalingOutput>,
}

/// `size`'s view of [`ScalingTarget`].
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ScalingOutput {
    pub(crate) request_tokens: u64,
    pub(crate) kv_cache_requests: u64,
    pub(crate) max_num_seqs: u64,
    pub(crate) target_requests_per_replica: u64,
    pub(crate) reason: String,
}

/// The KV cache vLLM will allocate.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct KvCacheOutput {
    pub(crate) bytes_per_token: u64,
    /// Tokens it holds per replica.
    pub(crate) capacity_tokens: u64,
    /// Its memory on each GPU, in GiB.
    #[serde(rename = "perGpuGiB")]
    pub(crate) per_gpu_gib: f64,
}

impl From<&Plan> for SizeOutput {
    fn from(p: &Plan) -> Self {
        SizeOutput {
            model: p.model_id.clone(),
            catalog_model: p.catalog_model.clone(),
            plan: PlanStatus::from(p),
            nodes: p.nodes,
            engine_args: {
                // The plan holds only on a server that batches what it was sized for.
                let mut args = p.engine_args();
                if let Some(n) = p.max_num_seqs {
                    args.extend(["--max-num-seqs".to_string(), n.to_string()]);
                }
                args
            },
            gpu_memory_utilization: p.gpu_memory_utilization,
            startup_probe_seconds: p.startup_probe_seconds,
            decode_tokens_per_second: p.decode_tokens_per_second().round(),
            weights_per_gpu_gib: round2(p.estimate.weights_per_gpu_gib),
            kv_cache: KvCacheOutput {
                bytes_per_token: p.estimate.kv_bytes_per_token.round() as u64,
                capacity_tokens: p.estimate.kv_capacity_tokens,
                per_gpu_gib: round2(p.estimate.kv_cache_per_gpu_gib),
            },
            hourly_cost: None,
            scaling: None,
        }
    }
}

impl SizeOutput {
    /// With the cost of one replica of `plan` at `prices`.
    fn priced(mut self, plan: &Plan, prices: &GpuPrices) -> Self {
        self.hourly_cost = sizing::hourly_cost(plan, prices).map(round2);
        self
    }

    /// With the autoscaling target at the request size `size` was given.
    fn with_scaling(mut self, t: &ScalingTarget) -> Self {
        self.scaling = Some(ScalingOutput {
            request_tokens: t.request_tokens,
            kv_cache_requests: t.kv_requests,
            max_num_seqs: t.engine_limit,
            target_requests_per_replica: t.requests_per_replica,
            reason: t.reason.clone(),
        });
        self
    }
}

/// Characters of the per-GPU memory bar.
const BAR_WIDTH: f64 = 40.0;

/// One GPU's memory as a bar, because people would rather look than read:
/// weights (W), KV cache (K), activations and overhead (o), and what vLLM
/// leaves free of the GPU's memory (.).
fn memory_bar(p: &Plan) -> String {
    let e = &p.estimate;
    // The device vLLM sees: a MIG slice's memory, or the whole GPU's.
    let total = (e.gpu_capacity_gib / p.gpu_memory_utilization.max(0.01)).max(e.gpu_capacity_gib);
    let used = e.weights_per_gpu_gib + e.kv_cache_per_gpu_gib + e.overhead_gib;
    let cells = |gib: f64| ((gib / total.max(used)) * BAR_WIDTH).round() as usize;
    let (w, k, o) = (
        cells(e.weights_per_gpu_gib),
        cells(e.kv_cache_per_gpu_gib),
        cells(e.overhead_gib),
    );
    let free = (BAR_WIDTH as usize).saturating_sub(w + k + o);
    format!(
        "[{}{}{}{}] W weights {:.1} | K KV cache {:.1} | o overhead {:.1} | . free {:.1} of {:.1} GiB",
        "W".repeat(w),
        "K".repeat(k),
        "o".repeat(o),
        ".".repeat(free),
        e.weights_per_gpu_gib,
        e.kv_cache_per_gpu_gib,
        e.overhead_gib,
        (total - used).max(0.0),
        total
    )
}

/// The human-readable plan: a two-column table, then reasons and warnings.
pub(crate) fn text(p: &Plan, prices: &GpuPrices, scaling: &ScalingTarget) -> String {
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
    let args = p.engine_args();
    let weights = if args.is_empty() {
        p.weight_precision.to_string()
    } else {
        format!("{} ({})", p.weight_precision, args.join(" "))
    };
    // A mixed-strategy slice resource exists only where the device plugin
    // offers each profile as its own: say what the other strategy asks for.
    let resource = if p
        .gpu_resource_name
        .starts_with(sizing::MIXED_MIG_RESOURCE_PREFIX)
    {
        format!(
            "{} (the device plugin's mixed MIG strategy; --mig-strategy single where it offers slices as nvidia.com/gpu)",
            p.gpu_resource_name
        )
    } else {
        p.gpu_resource_name.to_string()
    };
    let e = &p.estimate;
    let rows = [
        ("Model", model),
        ("GPUs", layout),
        (
            "MIG profile",
            p.mig_profile.clone().unwrap_or_else(|| "none".into()),
        ),
        ("Resource", resource),
        ("Weights", weights),
        ("dtype", p.dtype.to_string()),
        ("KV cache", p.kv_cache_dtype.to_string()),
        ("Objective", p.objective.to_string()),
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
        ("Per GPU", memory_bar(p)),
        (
            "Decode",
            format!(
                "up to {:.0} tokens/s per sequence (the memory-bandwidth bound)",
                p.decode_tokens_per_second()
            ),
        ),
    ];
    let mut s = String::new();
    for (k, v) in rows {
        s.push_str(&format!("{k:<14} {v}\n"));
    }
    s.push_str(&format!("{:<14} {}\n", "Autoscaling", scaling.reason));
    if let Some(cost) = sizing::hourly_cost(p, prices) {
        s.push_str(&format!("{:<14} {cost:.2}/h per replica\n", "Cost"));
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
