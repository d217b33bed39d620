//! What a `Model` tells the runtimes that serve it: the id vLLM loads, the
//! facts the sizing engine needs, the parallelism its `shardSpec` fixes and
//! the weights cache its `cachePolicy` asks for.
//!
//! The Model composer and every composer that reads a Model through
//! `modelRef` use these facts, so a Model means the same thing wherever it
//! is served. Errors name the Model field (`spec.shardSpec.count`) and what
//! would be valid; `prefix` says whose spec it is.

use crate::compose::steps::{remote_code, tool_calling};
use crate::sizing::{KvCacheDtype, ModelConfig, Objective, Plan, SizingRequest, WeightPrecision};
use crate::units::{GIB, parse_quantity};
use crate::xr::model::{CachePolicy, EvictionPolicy, Locality, ModelSpec, ShardStrategy};
use crate::xr::shared_fields::HF_TOKEN_KEY;
use crate::xr::validate::{RepositoryProblem, repository_problem};

/// How far a declared size may stray from parameters x precision before it
/// counts as a contradiction: checkpoints carry embeddings, norms and
/// metadata that parameter counts round away.
const SIZE_TOLERANCE: f64 = 0.25;

/// Why no runtime can serve a Model: the Model is Failed for `reason`,
/// and XRs serving it are refused.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Unservable {
    pub(crate) reason: &'static str,
    pub(crate) why: String,
}

/// A Model's facts, read from its spec.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ModelFacts {
    /// What `vllm serve` loads: a Hugging Face id, or the object-store URI.
    pub(crate) model_url: String,
    /// What the sizing engine looks up in its catalog.
    pub(crate) model_id: String,
    /// Arguments loading these weights needs (object stores go through the Run:ai streamer).
    pub(crate) load_args: Vec<String>,
    pub(crate) parameter_count: Option<String>,
    pub(crate) precision: Option<WeightPrecision>,
    pub(crate) tensor_parallel: Option<u32>,
    pub(crate) pipeline_parallel: Option<u32>,
    /// Data-parallel shards: model-server replicas.
    pub(crate) data_parallel: Option<u32>,
    pub(crate) cache: Option<CachePolicy>,
    pub(crate) declared_size: Option<String>,
    pub(crate) hf_token: Option<(String, String)>,
    /// The Secret whose keys the pods read the weights' bucket with.
    pub(crate) storage_secret: Option<String>,
    /// Why no runtime can serve these weights, when none can.
    pub(crate) unservable: Option<Unservable>,
    /// Fields that have no effect, and why.
    pub(crate) notes: Vec<String>,
    /// The model's config.json (spec.config, or the spec.configFrom ConfigMap once read).
    pub(crate) model_config: Option<ModelConfig>,
    /// The checkpoint's total bytes (weights index).
    pub(crate) checkpoint_bytes: Option<u64>,
    /// The ConfigMap spec.configFrom names, still to be read.
    pub(crate) config_map: Option<String>,
    pub(crate) kv_cache_dtype: KvCacheDtype,
    /// spec.objective; `None` = the platform's default.
    pub(crate) objective: Option<Objective>,
    /// spec.toolCallParser: vLLM's parser for the weights' tool calls.
    pub(crate) tool_call_parser: Option<String>,
}

/// Largest config.json accepted, inline or in a ConfigMap: real ones are a
/// few KiB (multimodal ones tens of KiB).
pub(crate) const CONFIG_MAX_BYTES: usize = 256 * 1024;

/// Reads a config.json given as text, with the hf_quant_config.json beside
/// it if any; `field` names where it came from.
pub(crate) fn parse_config(
    field: &str,
    text: &str,
    hf_quant_config: Option<serde_json::Value>,
) -> Result<ModelConfig, String> {
    if text.len() > CONFIG_MAX_BYTES {
        return Err(format!(
            "{field} is {} KiB; a config.json is a few KiB (at most {} KiB accepted): give the model's config.json, not its weights or tokenizer",
            text.len().div_ceil(1024),
            CONFIG_MAX_BYTES / 1024
        ));
    }
    ModelConfig::from_files(text, hf_quant_config).map_err(|e| format!("{field}: {e}"))
}

impl ModelFacts {
    /// Reads a Model's spec. `prefix` is prepended to field paths in errors
    /// ("spec" for the Model itself, "Model team-a/llama spec" for a reference).
    pub(crate) fn from_spec(spec: &ModelSpec, prefix: &str) -> Result<Self, String> {
        let uri = spec.weights_uri.trim();
        let (scheme, path) = uri.split_once("://").ok_or_else(|| {
            format!("{prefix}.weightsURI {uri:?} has no scheme; use hf://org/name, s3://, gs://, https:// or pvc://")
        })?;
        let path = path.trim_matches('/');
        if path.is_empty() {
            return Err(format!(
                "{prefix}.weightsURI {uri:?} names no weights; for example hf://meta-llama/Llama-3.1-8B-Instruct"
            ));
        }
        let last = path.rsplit('/').next().unwrap_or(path).to_string();
        let mut notes = Vec::new();
        let mut load_args = Vec::new();
        let mut unservable = None;
        let (model_url, model_id) = match scheme {
            "hf" if spec.storage_secret_ref.is_some() => {
                return Err(format!(
                    "{prefix}.storageSecretRef gives a bucket's keys, for s3:// weights; hf:// weights download \
                     from Hugging Face, with the token of {prefix}.hfTokenSecretRef"
                ));
            }
            "hf" => {
                if path.split('/').count() != 2 {
                    return Err(format!(
                        "{prefix}.weightsURI {uri:?}: a Hugging Face URI is hf://org/name"
                    ));
                }
                if let Some(problem) = repository_problem(path) {
                    return Err(match problem {
                        RepositoryProblem::Gguf(why) => {
                            format!("{prefix}.weightsURI {uri:?}: {path} is {why}")
                        }
                        RepositoryProblem::NotAnId(problem) => format!(
                            "{prefix}.weightsURI {uri:?}: {path} is not a Hugging Face id ({problem}); a Hugging \
                             Face URI is hf://org/name"
                        ),
                    });
                }
                if let Some(revision) = &spec.revision {
                    load_args.extend(["--revision".to_string(), revision.clone()]);
                }
                (path.to_string(), path.to_string())
            }
            "s3" | "gs" if spec.revision.is_some() => {
                return Err(format!(
                    "{prefix}.revision pins a revision of a Hugging Face repository, and {scheme}:// weights are the \
                     bucket's files; put the version in the path instead (for example {scheme}://models/llama/v2)"
                ));
            }
            "s3" | "gs" => {
                // vLLM streams safetensors from object stores with the Run:ai Model Streamer.
                load_args.extend(["--load-format".to_string(), "runai_streamer".to_string()]);
                let streamer = format!(
                    "weights from {scheme}:// load through the Run:ai Model Streamer (--load-format runai_streamer)"
                );
                notes.push(match (&spec.storage_secret_ref, scheme) {
                    (Some(keys), "s3") => format!(
                        "{streamer}, with the keys in Secret {} ({prefix}.storageSecretRef) as the model server's \
                         environment; the Secret must exist where its pods run",
                        keys.name
                    ),
                    (Some(_), _) => {
                        return Err(format!(
                            "{prefix}.storageSecretRef gives a bucket's keys to the S3 client, but gs:// weights load \
                             through Google's client, which takes workload identity \
                             (input.defaults.modelServerServiceAccountName) or a key file, not keys in its \
                             environment; for HMAC keys, write the URI as s3://bucket/path and put \
                             AWS_ENDPOINT_URL=https://storage.googleapis.com and \
                             RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING=0 in the Secret"
                        ));
                    }
                    (None, _) => {
                        let keys = if scheme == "s3" {
                            format!("keys in a Secret ({prefix}.storageSecretRef), ")
                        } else {
                            String::new()
                        };
                        format!(
                            "{streamer}; the model server's pods need read access to the bucket: the platform's \
                             ServiceAccount with workload identity (input.defaults.modelServerServiceAccountName), \
                             {keys}or the nodes' own role"
                        )
                    }
                });
                (uri.to_string(), last)
            }
            "https" | "pvc" => {
                unservable = Some(Unservable {
                    reason: "UnsupportedWeightsURI",
                    why: format!(
                        "{prefix}.weightsURI {uri:?}: no runtime loads {scheme}:// weights (vLLM loads Hugging Face \
                         ids and object stores); use hf://org/name, s3://bucket/path or gs://bucket/path"
                    ),
                });
                (uri.to_string(), last)
            }
            other => {
                return Err(format!(
                    "{prefix}.weightsURI has scheme {other}://; use hf://, s3://, gs://, https:// or pvc://"
                ));
            }
        };
        let precision = spec.quantization;
        if let Some(size) = &spec.size {
            parse_quantity(size).map_err(|e| format!("{prefix}.size: {e}"))?;
        }
        let (mut tensor_parallel, mut pipeline_parallel, mut data_parallel) = (None, None, None);
        if let Some(shard) = &spec.shard_spec {
            // Within 1 to GPUS_PER_REPLICA_MAX: from_object checked the schema's range.
            let count = shard.count.unsigned_abs() as u32;
            match shard.strategy {
                ShardStrategy::TensorParallel => tensor_parallel = Some(count),
                ShardStrategy::PipelineParallel => {
                    tensor_parallel = Some(1);
                    pipeline_parallel = Some(count);
                }
                ShardStrategy::DataParallel => data_parallel = Some(count),
            }
            if let Some(t) = &shard.topology {
                match t.locality {
                    // One VLLMRuntime replica is one pod: its GPUs share a node.
                    Locality::SameNode | Locality::Any => {}
                    Locality::SameSocket | Locality::Nvlink => notes.push(format!(
                        "{prefix}.shardSpec.topology.locality {} is not enforced: a replica's GPUs share a node, but Kubernetes cannot ask for their interconnect; use GPU types whose nodes have it",
                        if t.locality == Locality::Nvlink { "nvlink" } else { "same-socket" }
                    )),
                }
                if t.min_bandwidth.is_some() {
                    notes.push(format!(
                        "{prefix}.shardSpec.topology.minBandwidth is not enforced: Kubernetes has no inter-GPU bandwidth to schedule on"
                    ));
                }
            }
        }
        // vLLM loads the safetensors it finds (from Hugging Face, else
        // PyTorch .bin files; the bucket streamer reads safetensors only),
        // whatever the card says: a GGUF checkpoint is one file it must be
        // pointed at.
        if let Some(format) = spec.format.as_deref().map(str::trim) {
            let loaded = match format.to_ascii_lowercase().as_str() {
                "safetensors" => true,
                "pytorch" => scheme == "hf",
                _ => false,
            };
            if !loaded {
                notes.push(format!(
                    "{prefix}.format {} is not applied: the model server loads the safetensors weights it finds \
                     at {prefix}.weightsURI (from Hugging Face, else PyTorch ones)",
                    crate::quote::shown(format)
                ));
            }
        }
        if spec.config.is_some() && spec.config_from.is_some() {
            return Err(format!(
                "{prefix}.config and {prefix}.configFrom are both set; give the config.json once: inline (config) or from a ConfigMap (configFrom)"
            ));
        }
        let model_config = match &spec.config {
            Some(v) if !v.is_object() => {
                return Err(format!(
                    "{prefix}.config is not an object; give the content of the model's config.json"
                ));
            }
            Some(v) => Some(parse_config(
                &format!("{prefix}.config"),
                &v.to_string(),
                None,
            )?),
            None => None,
        };
        // Within 1 to MAX_CHECKPOINT_BYTES: from_object checked the schema's range.
        let checkpoint_bytes = spec
            .weights_index
            .as_ref()
            .map(|w| w.total_size.unsigned_abs());
        if spec.trust_remote_code == Some(true) {
            load_args.push(remote_code::FLAG.to_string());
        } else if unservable.is_none() {
            unservable = remote_code::untrusted(
                &model_url,
                false,
                &format!("set {prefix}.trustRemoteCode to true"),
            )
            .map(|why| Unservable {
                reason: "RemoteCodeNotTrusted",
                why,
            });
        }
        if let Some(parser) = &spec.tool_call_parser {
            tool_calling::require_parser_name(&format!("{prefix}.toolCallParser"), parser)?;
        }
        let hf_token = spec.hf_token_secret_ref.as_ref().map(|r| {
            let (name, key) = r.name_and_key(HF_TOKEN_KEY);
            (name.to_string(), key.to_string())
        });
        Ok(Self {
            model_url,
            model_id,
            load_args,
            parameter_count: spec.parameter_count.clone(),
            precision,
            tensor_parallel,
            pipeline_parallel,
            data_parallel,
            cache: spec.cache_policy.clone(),
            declared_size: spec.size.clone(),
            hf_token,
            storage_secret: spec.storage_secret_ref.as_ref().map(|r| r.name.clone()),
            unservable,
            notes,
            model_config,
            checkpoint_bytes,
            config_map: spec
                .config_from
                .as_ref()
                .map(|c| c.config_map_ref.name.clone()),
            kv_cache_dtype: spec.kv_cache_dtype.unwrap_or_default(),
            objective: spec.objective,
            tool_call_parser: spec.tool_call_parser.clone(),
        })
    }

    /// A sizing request for these weights on `gpu_type`; the caller adds
    /// what its own spec says (GPU count, MIG, context length).
    pub(crate) fn sizing_request(
        &self,
        gpu_type: &str,
        gpu_memory_utilization: f64,
    ) -> SizingRequest {
        SizingRequest {
            model_id: self.model_id.clone(),
            gpu_type: gpu_type.to_string(),
            quantization: self.precision,
            parameter_count: self.parameter_count.clone(),
            tensor_parallel: self.tensor_parallel,
            pipeline_parallel: self.pipeline_parallel,
            gpu_memory_utilization,
            kv_cache_dtype: self.kv_cache_dtype,
            objective: self.objective.unwrap_or_default(),
            model_config: self.model_config.clone(),
            checkpoint_bytes: self.checkpoint_bytes,
            ..Default::default()
        }
    }

    /// The objective for a runtime serving the Model: the Model's, else
    /// `default` (the platform's).
    pub(crate) fn objective_or(&self, default: Objective) -> Objective {
        self.objective.unwrap_or(default)
    }

    /// The vLLM arguments these weights and this plan need beyond what the
    /// runtime builder sets: the load format, and pipeline parallelism,
    /// which the VLLMRuntime has no field for.
    pub(crate) fn serve_args(&self, plan: &Plan) -> Vec<String> {
        let mut args = self.load_args.clone();
        if plan.pipeline_parallel_size > 1 {
            args.extend([
                "--pipeline-parallel-size".to_string(),
                plan.pipeline_parallel_size.to_string(),
            ]);
        }
        args
    }

    /// What the cache policy asks that nothing here can do: a volume per
    /// runtime is all Kubernetes offers (see `weights_cache`).
    pub(crate) fn cache_not_applied(&self) -> Vec<String> {
        let Some(policy) = self.cache.as_ref() else {
            return Vec::new();
        };
        let mut not_applied = vec![format!(
            "cachePolicy.priority {} is not applied: Kubernetes has no shared weights cache to rank; the volume holds the weights for as long as the runtime exists",
            serde_json::to_value(policy.priority)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        )];
        if policy.pin_duration.is_some() {
            not_applied.push("cachePolicy.pinDuration is not applied: the volume is not evicted while the runtime exists".into());
        }
        if !policy.preload_nodes.is_empty() {
            not_applied.push("cachePolicy.preloadNodes is not applied: the volume is a PersistentVolumeClaim, not a per-node cache".into());
        }
        match policy.eviction_policy {
            None | Some(EvictionPolicy::Never) => {}
            Some(p) => not_applied.push(format!(
                "cachePolicy.evictionPolicy {} is not applied: the volume is deleted with the runtime, not on idleness or priority",
                if p == EvictionPolicy::Idle { "idle" } else { "low-priority" }
            )),
        }
        not_applied
    }

    /// The declared size checked against the weights the plan counts: the
    /// derived GiB, the formula, and a warning when they contradict.
    pub(crate) fn size_check(&self, plan: &Plan) -> (f64, String, Option<String>) {
        let derived = plan.estimate.weights_gib;
        let formula = plan.weights_formula.clone();
        let warning = self.declared_size.as_deref().and_then(|declared| {
            let declared_gib = parse_quantity(declared).ok()? / GIB;
            let off = (declared_gib - derived).abs() / derived.max(f64::MIN_POSITIVE);
            (off > SIZE_TOLERANCE).then(|| {
                format!(
                    "spec.size {declared} ({declared_gib:.2} GiB) contradicts {formula}; check {}, or correct spec.size",
                    if self.checkpoint_bytes.is_some() {
                        "spec.parameterCount, spec.weightsIndex.totalSize and spec.quantization"
                    } else {
                        "spec.parameterCount and spec.quantization"
                    }
                )
            })
        });
        (derived, formula, warning)
    }
}
