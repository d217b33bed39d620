//! Composes an `LLMInference`: a sized model server on the runtime
//! `spec.runtime` picks (a VLLMRuntime, a Deployment or a LeaderWorkerSet,
//! see `runtime`) and, with `ingressHost`, an Ingress to its Service; natively into the XR's namespace, or wrapped in
//! provider-kubernetes Objects with `providerConfigName`.

use std::ops::ControlFlow;

use serde_json::{Map, Value};

use crate::compose::composition::{ComposeRequest, Composition, Refusal};
use crate::compose::names;
use crate::compose::resources::ingress::{IngressParams, external_url, ingress};
use crate::compose::resources::placement::Placement;
use crate::compose::resources::vllm_runtime::{RuntimeParams, SERVICE_PORT, internal_url};
use crate::compose::rollout::Rollout;
use crate::compose::steps::conditions;
use crate::compose::steps::model_config;
use crate::compose::steps::model_facts::ModelFacts;
use crate::compose::steps::model_ref::{self, Lookup, REQUIREMENT_KEY, ResolvedModel};
use crate::compose::steps::model_server::{Existing, ServerKeys, ServerSpec, model_server};
use crate::compose::steps::runtime::{self, Runtime};
use crate::compose::steps::serving::{self, ServingState};
use crate::response as outcome;
use crate::sizing::{self, MigChoice, Plan, SizingRequest};
use crate::xr::common::{Endpoint, PlanStatus};
use crate::xr::llm_inference::{LlmInferenceSpec, LlmInferenceStatus};

/// Composition resource names, the same as dot-inference's so that an XR
/// moving to this function keeps its resources.
pub(crate) const RUNTIME: &str = "vllm_runtime";
pub(crate) const INGRESS: &str = "ingress";
/// The other runtimes' resources: a Deployment (with its Service and
/// weights claim), or a LeaderWorkerSet (with its Service).
pub(crate) const DEPLOYMENT: &str = "deployment";
pub(crate) const SERVICE: &str = "service";
pub(crate) const WEIGHTS_CACHE: &str = "weights_cache";
pub(crate) const LEADER_WORKER_SET: &str = "leader_worker_set";
const KEYS: ServerKeys = ServerKeys {
    vllm_runtime: RUNTIME,
    deployment: DEPLOYMENT,
    service: SERVICE,
    weights: WEIGHTS_CACHE,
    leader_worker_set: LEADER_WORKER_SET,
};

/// Composes an LLMInference: resolve the model, size it, place and build
/// the model server, expose it, then report.
pub(crate) fn compose(req: &ComposeRequest) -> Result<Composition, Refusal> {
    let spec: LlmInferenceSpec = req.xr.spec().map_err(|e| Refusal::new("InvalidSpec", e))?;
    let mut out = Composition::default();
    let (model, referenced) = match resolve_model(req, &spec, &mut out)? {
        ControlFlow::Continue(resolved) => resolved,
        ControlFlow::Break(waiting) => return Ok(waiting),
    };
    spec.validate()
        .map_err(|e| Refusal::new("InvalidSpec", e))?;
    let facts = referenced.as_ref().map(|m| &m.facts);
    let mut plan = size(req, &spec, &model, facts)?;
    let replicas = spec
        .replicas
        .or_else(|| facts.and_then(|f| f.data_parallel).map(i64::from))
        .unwrap_or(1);
    let mut notes = Vec::new();
    let placement = placement(req, &spec, &mut notes);
    let (runtime_name, renamed) = names::runtime_name(&req.xr.name, "");
    plan.reasons.extend(renamed);
    let namespace = placement.namespace().to_string();
    let served = serve(
        req,
        &spec,
        facts,
        &Target {
            model: &model,
            runtime_name: &runtime_name,
            namespace: &namespace,
            placement: &placement,
            replicas,
        },
        &mut plan,
        &mut out,
        &mut notes,
    )?;
    let endpoint = expose(req, &spec, &runtime_name, &namespace, &placement, &mut out);
    if plan.architecture_guessed {
        let how = if facts.is_some() {
            model_config::GIVE_CONFIG_ON_MODEL
        } else {
            model_config::GIVE_CONFIG_VIA_MODEL_REF
        };
        notes.push(model_config::guessed_warning(&plan.model_id, how));
    }
    notes.extend(overridden_by_extra_args(&spec.extra_args));
    if let Some(m) = &referenced {
        // Said on every call: it replaces the condition that said the Model was missing.
        out.conditions.push(outcome::condition(
            model_ref::MODEL_RESOLVED,
            true,
            "Found",
            format!("Model {} served as {}", m.display, m.facts.model_url),
        ));
    }
    report(req, &mut out, &model, plan, notes, served, endpoint);
    Ok(out)
}

/// The model id or URL to serve, and the Model it came from, if any.
type ModelToServe = (String, Option<Box<ResolvedModel>>);

/// The model to serve, from `spec.model` or the Model `spec.modelRef`
/// names (with its facts); `Break` is the answer to give while the Model
/// or its ConfigMap is awaited.
fn resolve_model(
    req: &ComposeRequest,
    spec: &LlmInferenceSpec,
    out: &mut Composition,
) -> Result<ControlFlow<Composition, ModelToServe>, Refusal> {
    match (&spec.model, &spec.model_ref) {
        // Either could be meant: serving the other would be a silent guess.
        (Some(_), Some(_)) => Err(Refusal::new(
            "InvalidSpec",
            "spec.model and spec.modelRef are both set; pick one: model (a Hugging Face id) or modelRef (a Model \
             in this namespace)",
        )),
        (Some(m), _) if !m.trim().is_empty() => {
            Ok(ControlFlow::Continue((m.trim().to_string(), None)))
        }
        (Some(_), _) => Err(Refusal::new(
            "InvalidSpec",
            "spec.model is empty; set a Hugging Face model id such as Qwen/Qwen2.5-7B-Instruct",
        )),
        (None, Some(r)) => {
            out.requirements.insert(
                REQUIREMENT_KEY.into(),
                model_ref::requirement(&r.name, &req.xr.namespace),
            );
            match model_ref::lookup(req, "spec.modelRef", &r.name)? {
                Lookup::Waiting { message, not_found } => {
                    let status = Map::from_iter([("ready".to_string(), Value::from("False"))]);
                    let mut waiting = model_ref::waiting(
                        req,
                        &message,
                        not_found,
                        Some(crate::compose::composition::to_object(status)),
                        &[
                            RUNTIME,
                            DEPLOYMENT,
                            SERVICE,
                            WEIGHTS_CACHE,
                            LEADER_WORKER_SET,
                            INGRESS,
                        ],
                    );
                    waiting.requirements = std::mem::take(&mut out.requirements);
                    serving::while_waiting(&mut waiting, "WaitingForModel", &message);
                    Ok(ControlFlow::Break(waiting))
                }
                Lookup::Found(mut m) => {
                    if let Some(why) = &m.facts.unservable {
                        return Err(Refusal::new(
                            "UnservableModel",
                            format!("spec.modelRef: Model {}: {why}", m.display),
                        ));
                    }
                    if let Some(waiting) = model_config_of(req, &mut m, &mut out.requirements) {
                        return Ok(ControlFlow::Break(waiting));
                    }
                    let url = m.facts.model_url.clone();
                    Ok(ControlFlow::Continue((url, Some(m))))
                }
            }
        }
        (None, None) => Err(Refusal::new(
            "InvalidSpec",
            "spec.model is required: set a Hugging Face model id such as Qwen/Qwen2.5-7B-Instruct (or spec.modelRef to a Model)",
        )),
    }
}

/// The plan for the spec, the referenced Model's facts filling what the
/// spec leaves unset.
fn size(
    req: &ComposeRequest,
    spec: &LlmInferenceSpec,
    model: &str,
    facts: Option<&ModelFacts>,
) -> Result<Plan, Refusal> {
    let mut sizing_request = sizing_request(spec, model, req)?;
    if let Some(f) = facts {
        sizing_request.model_id = f.model_id.clone();
        sizing_request.quantization = sizing_request.quantization.or(f.precision);
        sizing_request.parameter_count = sizing_request
            .parameter_count
            .or_else(|| f.parameter_count.clone());
        if spec.kv_cache_dtype.is_none() {
            sizing_request.kv_cache_dtype = f.kv_cache_dtype;
        }
        if spec.objective.is_none() {
            sizing_request.objective = f.objective_or(req.settings.objective);
        }
        sizing_request.model_config = f.model_config.clone();
        sizing_request.checkpoint_bytes = f.checkpoint_bytes;
        // The Model's shardSpec fixes the parallelism unless spec.gpu does.
        if sizing_request.gpu_count.is_none() {
            sizing_request.tensor_parallel = f.tensor_parallel;
            sizing_request.pipeline_parallel = f.pipeline_parallel;
        }
    }
    crate::sizing::size(&sizing_request)
        .map_err(|e| Refusal::new("CannotSize", sizing_error_message(spec, &e)))
}

/// Where the resources go: natively into the XR's namespace, or through
/// provider-kubernetes with `providerConfigName`.
fn placement(req: &ComposeRequest, spec: &LlmInferenceSpec, notes: &mut Vec<String>) -> Placement {
    let xr = req.xr;
    match &spec.provider_config_name {
        Some(pc) => Placement::Remote {
            provider_config: pc.clone(),
            kind: req.settings.provider_config_kind,
            namespace: spec
                .target_namespace
                .clone()
                .unwrap_or_else(|| xr.namespace.to_string()),
        },
        None => {
            if let Some(t) = &spec.target_namespace {
                notes.push(format!(
                    "spec.targetNamespace {t:?} does not apply without spec.providerConfigName: Crossplane composes \
                     into the XR's namespace {:?}",
                    xr.namespace
                ));
            }
            Placement::Native {
                namespace: xr.namespace.to_string(),
            }
        }
    }
}

/// What the model server serves, and where.
struct Target<'a> {
    model: &'a str,
    runtime_name: &'a str,
    namespace: &'a str,
    placement: &'a Placement,
    replicas: i64,
}

/// What [`serve`] built: the runtime chosen and how it stands.
struct Served {
    runtime: Runtime,
    state: ServingState,
}

/// The model server: the runtime that can serve the plan, its weights
/// cache, and its resources, placed and with their readiness.
fn serve(
    req: &ComposeRequest,
    spec: &LlmInferenceSpec,
    facts: Option<&ModelFacts>,
    target: &Target,
    plan: &mut Plan,
    out: &mut Composition,
    notes: &mut Vec<String>,
) -> Result<Served, Refusal> {
    let hf_token = spec
        .hf_token_secret_ref
        .as_ref()
        .map(|r| {
            (
                r.name.as_str(),
                r.key
                    .as_deref()
                    .filter(|k| !k.is_empty())
                    .unwrap_or("token"),
            )
        })
        .or_else(|| {
            facts
                .and_then(|f| f.hf_token.as_ref())
                .map(|(n, k)| (n.as_str(), k.as_str()))
        });
    let mut extra_args = facts.map(|f| f.serve_args(plan)).unwrap_or_default();
    extra_args.extend(spec.extra_args.iter().cloned());
    // More than one replica comes from spec.replicas or the Model's shards.
    let (replicas_field, replicas_from) = if spec.replicas.is_some() {
        ("spec.replicas", "spec.replicas")
    } else {
        ("spec.modelRef", "the Model's data-parallel shards")
    };
    let replicas = i32::try_from(target.replicas).unwrap_or(1);
    let (runtime, cache) = runtime::choose_with_volume(
        &runtime::ServerChoice {
            asked: runtime::Asked::new(spec.runtime, req.settings.runtime),
            requested_cache: facts.is_some_and(|f| f.cache.is_some()),
            replicas,
            replicas_from,
            operator_field: replicas_field,
            what_would_fit: "use a GPU with more memory (spec.gpuType, for example H200-141GB or B200), a lower \
                             precision (spec.quantization fp8 or int4), or a shorter context (spec.maxModelLen)",
            gpu_field: gpu_type_field(spec),
        },
        plan,
        &req.settings.weights_cache,
    )?;
    if let Some(f) = facts {
        notes.extend(f.notes.iter().cloned());
        notes.extend(f.cache_not_applied());
    }
    notes.extend(cache.warnings.iter().cloned());

    let mut pod_args = facts.map(|f| f.load_args.clone()).unwrap_or_default();
    pod_args.extend(spec.extra_args.iter().cloned());
    let server = model_server(&ServerSpec {
        runtime,
        keys: KEYS,
        params: RuntimeParams {
            name: target.runtime_name,
            namespace: target.namespace,
            model_url: target.model,
            plan,
            image: &req.settings.image,
            replicas,
            hf_token,
            extra_args: &extra_args,
            settings: req.settings,
            weights_cache: cache.cache.as_ref(),
            labels: None,
        },
        image: spec.image.as_ref(),
        pod_args: &pod_args,
        xr_kind: &req.xr.kind,
        xr_name: &req.xr.name,
        existing: Existing::observed(&req.observed, KEYS),
    });
    plan.reasons.extend(server.reasons);
    notes.extend(server.warnings);
    let mut workload = Rollout::Absent;
    for (i, (key, manifest)) in server.resources.into_iter().enumerate() {
        let rollout = out.add(key, target.placement.place(manifest), &req.observed);
        if i == 0 {
            workload = rollout;
        }
    }
    let state = serving::observe(req, target.placement, &server.pod_labels, workload, out);
    Ok(Served { runtime, state })
}

/// The model's endpoints: its Service, and with `spec.ingressHost` an
/// Ingress to it.
fn expose(
    req: &ComposeRequest,
    spec: &LlmInferenceSpec,
    runtime_name: &str,
    namespace: &str,
    placement: &Placement,
    out: &mut Composition,
) -> Endpoint {
    let mut endpoint = Endpoint {
        internal: Some(internal_url(runtime_name, namespace)),
        external: None,
    };
    if let Some(host) = spec.ingress_host.as_deref().filter(|h| !h.is_empty()) {
        let ingress_name = names::dns_subdomain(&req.xr.name, "");
        let manifest = ingress(&IngressParams {
            name: &ingress_name,
            namespace,
            host,
            service: runtime_name,
            port: SERVICE_PORT,
            class_name: spec.ingress_class_name.as_deref(),
            tls_secret: spec.tls.as_ref().map(|t| t.secret_name.as_str()),
        });
        out.add(INGRESS, placement.place(manifest), &req.observed);
        endpoint.external = Some(external_url(host, spec.tls.is_some()));
    }
    endpoint
}

/// The XR's status, its `Sized` and `Serving` conditions, and a warning
/// event for each new warning.
fn report(
    req: &ComposeRequest,
    out: &mut Composition,
    model: &str,
    mut plan: Plan,
    notes: Vec<String>,
    served: Served,
    endpoint: Endpoint,
) {
    let internal = endpoint.internal.clone().unwrap_or_default();
    let layout = plan.layout_summary();
    plan.warnings.extend(notes);
    let gpu_type = plan.gpu.name;
    let gpu_count = plan.gpu_count;
    let plan = PlanStatus::from(plan);
    out.warn_on_transition(
        "SizingWarning",
        &plan.warnings,
        req.xr,
        &["plan", "warnings"],
    );
    out.conditions
        .push(conditions::sized(&plan.warnings, layout.clone()));
    let last_serving = req.xr.status().and_then(|s| {
        s.get("servingLayout")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let serving_layout = serving::report(
        req,
        &served.state,
        &serving::Report {
            what: model,
            url: &internal,
            layout: &layout,
            last_serving_layout: last_serving.as_deref(),
            served_before: serving::served_before(req),
        },
        out,
    );
    let status = LlmInferenceStatus {
        model: Some(model.to_string()),
        plan: Some(plan),
        gpu_type: Some(gpu_type.into()),
        gpu_count: Some(gpu_count),
        runtime: Some(served.runtime.as_str().into()),
        endpoint: Some(endpoint),
        ready: Some(
            if served.state.serving() {
                "True"
            } else {
                "False"
            }
            .into(),
        ),
        serving_layout,
    };
    out.status = Some(crate::compose::composition::to_object(status));
}

fn sizing_request(
    spec: &LlmInferenceSpec,
    model: &str,
    req: &ComposeRequest,
) -> Result<SizingRequest, Refusal> {
    let (gpu, max_model_len) = (spec.gpu, spec.max_model_len);
    let quantization = spec.quantization.and_then(|q| q.precision());
    let mig = match spec.mig_profile.as_deref() {
        // Whole GPUs unless asked: a MIG slice only schedules where nodes are partitioned.
        None => MigChoice::None,
        Some(m) => m
            .parse::<MigChoice>()
            .map_err(|e| Refusal::new("InvalidSpec", format!("spec.migProfile: {e}")))?,
    };
    Ok(SizingRequest {
        model_id: model.to_string(),
        gpu_type: spec
            .gpu_type
            .clone()
            .unwrap_or_else(|| req.settings.gpu_type.to_string()),
        quantization,
        max_model_len: max_model_len.map(|v| v as u64),
        parameter_count: spec.parameter_count.clone(),
        gpu_count: gpu.map(|g| g as u32),
        mig,
        gpu_memory_utilization: req.settings.gpu_memory_utilization,
        kv_cache_dtype: spec.kv_cache_dtype.unwrap_or_default(),
        objective: spec.objective.unwrap_or(req.settings.objective),
        // The platform's release describes the platform's image only.
        vllm_version: spec
            .image
            .is_none()
            .then(|| req.settings.vllm_version.clone())
            .flatten(),
        ..Default::default()
    })
}

/// Reads the referenced Model's spec.configFrom ConfigMap into its facts,
/// adding the requirement for it. `Some` is what to return instead of
/// composing: a wait while Crossplane has not returned the ConfigMap, or a
/// FATAL that keeps the requirements when it is unusable.
fn model_config_of(
    req: &ComposeRequest,
    m: &mut ResolvedModel,
    requirements: &mut std::collections::BTreeMap<
        String,
        crate::protocol::server::ResourceSelector,
    >,
) -> Option<Composition> {
    let name = m.facts.config_map.clone()?;
    requirements.insert(
        model_config::REQUIREMENT_KEY.into(),
        model_config::requirement(&name, &req.xr.namespace),
    );
    let field = format!(
        "spec.modelRef: Model {} spec.configFrom.configMapRef",
        m.display
    );
    let mut out = match model_config::resolve(req, &mut m.facts, &field) {
        Ok(model_config::Lookup::Ready) => return None,
        Ok(model_config::Lookup::Waiting { message, not_found }) => {
            let status = Map::from_iter([("ready".to_string(), Value::from("False"))]);
            let mut waiting = model_config::waiting(
                req,
                &message,
                not_found,
                Some(crate::compose::composition::to_object(status)),
                &[
                    RUNTIME,
                    DEPLOYMENT,
                    SERVICE,
                    WEIGHTS_CACHE,
                    LEADER_WORKER_SET,
                    INGRESS,
                ],
            );
            serving::while_waiting(&mut waiting, "WaitingForModelConfig", &message);
            waiting
        }
        Err(refusal) => Composition {
            results: vec![outcome::fatal(refusal.reason, refusal.message)],
            ..Default::default()
        },
    };
    out.requirements = requirements.clone();
    Some(out)
}

/// vllm serve flags the plan derives. Extra arguments come last and win, so
/// setting one of these makes the reported plan differ from what runs.
const DERIVED_FLAGS: &[&str] = &[
    "--tensor-parallel-size",
    "--pipeline-parallel-size",
    "--max-model-len",
    "--dtype",
    "--quantization",
    "--gpu-memory-utilization",
    "--kv-cache-dtype",
];

fn overridden_by_extra_args(extra_args: &[String]) -> Vec<String> {
    DERIVED_FLAGS
        .iter()
        .filter(|flag| extra_args.iter().any(|a| a == *flag || a.starts_with(&format!("{flag}="))))
        .map(|flag| format!("spec.extraArgs sets {flag}, which overrides the sizing plan: the reported plan no longer describes the runtime"))
        .collect()
}

/// The field that chose the GPU type: the spec's, or the platform default.
fn gpu_type_field(spec: &LlmInferenceSpec) -> &'static str {
    if spec.gpu_type.is_some() {
        "spec.gpuType"
    } else {
        "input.defaults.gpuType"
    }
}

/// Prefixes a sizing error with the spec field it is about.
fn sizing_error_message(spec: &LlmInferenceSpec, e: &sizing::SizingError) -> String {
    use sizing::SizingError as E;
    let field = match e {
        E::UnknownGpu { .. } => gpu_type_field(spec),
        E::UnknownPrecision { .. } | E::UnsupportedPrecision { .. } => "spec.quantization",
        E::InvalidMigChoice { .. }
        | E::MigUnsupported { .. }
        | E::UnknownMigProfile { .. }
        | E::MigProfileTooSmall { .. }
        | E::MigNeedsOneGpu { .. } => "spec.migProfile",
        E::MissingParameterCount { .. } | E::InvalidParameterCount { .. } => "spec.parameterCount",
        E::InvalidGpuCount { .. } | E::InvalidTensorParallel { .. } => "spec.gpu",
        E::ContextLongerThanModel { .. } | E::ContextDoesNotFit { .. } => "spec.maxModelLen",
        _ => "spec.model",
    };
    format!("{field}: {e}")
}
