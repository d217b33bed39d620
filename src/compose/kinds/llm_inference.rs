//! Composes an `LLMInference`: a sized model server on the runtime
//! `spec.runtime` picks (a VLLMRuntime, a Deployment or a LeaderWorkerSet,
//! see `runtime`) and, with `ingressHost`, an Ingress to its Service; natively into the XR's namespace, or wrapped in
//! provider-kubernetes Objects with `providerConfigName`.

use std::ops::ControlFlow;

use serde_json::{Map, Value};

use crate::compose::composition::{ComposeRequest, Composition, Refusal};
use crate::compose::resources::ingress::{
    INGRESS, IngressParams, OPENAI_API_PATH, external_url, ingress,
};
use crate::compose::resources::labels::labels;
use crate::compose::resources::placement::Placement;
use crate::compose::resources::vllm_runtime::{SERVICE_PORT, internal_url};
use crate::compose::steps::autoscaling;
use crate::compose::steps::conditions;
use crate::compose::steps::hf_access;
use crate::compose::steps::inference_routing;
use crate::compose::steps::model_config;
use crate::compose::steps::model_facts::ModelFacts;
use crate::compose::steps::model_ref::ResolvedModel;
use crate::compose::steps::model_server::{self, ApiKey, Serve, Served, ServerKeys};
use crate::compose::steps::replaced_objects;
use crate::compose::steps::runtime;
use crate::compose::steps::served_model::{self, ModelRef};
use crate::compose::steps::serving;
use crate::compose::steps::sizing as steps_sizing;
use crate::compose::steps::tool_calling::{self, ToolCalling};
use crate::compose::steps::{extra_args, remote_code};
use crate::compose::steps::{routing_condition, scaling_condition};
use crate::input::Settings;
use crate::names;
use crate::sizing::{self, Plan, SizingRequest};
use crate::xr::llm_inference::{LlmInferenceSpec, LlmInferenceStatus};
use crate::xr::model_server_autoscaling::AutoscalingStatus;
use crate::xr::plan_status::PlanStatus;
use crate::xr::shared_fields::{Endpoint, HF_TOKEN_KEY, PullSecrets};

/// Composition resource names, the same as dot-inference's so that an XR
/// moving to this function keeps its resources.
pub(crate) const RUNTIME: &str = "vllm_runtime";
/// The other runtimes' resources: a Deployment (with its Service and
/// weights claim), or a LeaderWorkerSet (with its Service).
pub(crate) const DEPLOYMENT: &str = "deployment";
pub(crate) const SERVICE: &str = "service";
pub(crate) const WEIGHTS_CACHE: &str = "weights_cache";
pub(crate) const LEADER_WORKER_SET: &str = "leader_worker_set";
/// The model server's autoscaler (a ScaledObject or an HPA) and PodMonitor.
pub(crate) const AUTOSCALER: &str = "autoscaler";
pub(crate) const POD_MONITOR: &str = "pod_monitor";
/// With more than one replica, evictions take the server's pods one at a time.
pub(crate) const DISRUPTION_BUDGET: &str = "disruption_budget";
const KEYS: ServerKeys = ServerKeys {
    vllm_runtime: RUNTIME,
    deployment: DEPLOYMENT,
    service: SERVICE,
    weights: WEIGHTS_CACHE,
    leader_worker_set: LEADER_WORKER_SET,
    disruption_budget: DISRUPTION_BUDGET,
};

/// Composes an LLMInference: resolve the model, size it, place and build
/// the model server, expose it, then report.
pub(crate) fn compose(req: &ComposeRequest) -> Result<Composition, Refusal> {
    let spec: LlmInferenceSpec = req.xr.spec().map_err(|e| Refusal::new("InvalidSpec", e))?;
    Ok(match &spec.model_ref {
        Some(r) if spec.model.is_none() => {
            let model = ModelRef::new(MODEL_REF, &r.name)?;
            served_model::with_requirements(req, model, compose_spec(req, &spec))
        }
        _ => compose_spec(req, &spec)?,
    })
}

const MODEL_REF: &str = "spec.modelRef";

/// Everything the server may be composed as: kept while it waits for its Model.
const RESOURCES: &[&str] = &[
    RUNTIME,
    DEPLOYMENT,
    SERVICE,
    WEIGHTS_CACHE,
    LEADER_WORKER_SET,
    DISRUPTION_BUDGET,
    INGRESS,
    AUTOSCALER,
    POD_MONITOR,
    inference_routing::INFERENCE_POOL,
    inference_routing::HTTP_ROUTE,
    inference_routing::ENDPOINT_PICKER,
    inference_routing::ENDPOINT_PICKER_SERVICE,
    inference_routing::ENDPOINT_PICKER_ACCOUNT,
    inference_routing::ENDPOINT_PICKER_ROLE,
    inference_routing::ENDPOINT_PICKER_ROLE_BINDING,
    inference_routing::ENDPOINT_PICKER_CONFIG,
];

fn compose_spec(req: &ComposeRequest, spec: &LlmInferenceSpec) -> Result<Composition, Refusal> {
    let (model, referenced) = match resolve_model(req, spec)? {
        ControlFlow::Continue(resolved) => resolved,
        ControlFlow::Break(waiting) => return Ok(waiting),
    };
    spec.validate()
        .map_err(|e| Refusal::new("InvalidSpec", e))?;
    let pull_secrets = PullSecrets::of(&req.settings.image_pull_secrets, &spec.image_pull_secrets)
        .map_err(|e| Refusal::new("InvalidSpec", e))?;
    let autoscaling = autoscaling::check(
        req,
        spec.autoscaling.as_ref(),
        "spec.autoscaling",
        "a longer spec.maxModelLen",
        "set a fixed spec.replicas",
    )?;
    let facts = referenced.as_ref().map(|m| &m.facts);
    let mut plan = size(req, spec, &model, referenced.as_deref())?;
    let mut notes = Vec::new();
    let placement = placement(req, spec, &mut notes);
    let (runtime_name, renamed) = names::runtime_name(&req.xr.name, "");
    plan.reasons.extend(renamed);
    let served_names = extra_args::served_model_names(&spec.extra_args)
        .filter(|names| !names.is_empty())
        .unwrap_or_else(|| vec![model.as_str()]);
    let mut server = Server {
        req,
        spec,
        facts,
        model: &model,
        served_names,
        name: &runtime_name,
        placement,
        pull_secrets,
        out: Composition::default(),
        notes,
    };
    let served = server.serve(autoscaling.as_ref(), &mut plan)?;
    let scaling = server.scale(autoscaling.as_ref(), &plan, &served);
    let endpoint = server.route(&served);
    if plan.architecture_guessed {
        let how = if facts.is_some() {
            model_config::GIVE_CONFIG_ON_MODEL
        } else {
            model_config::GIVE_CONFIG_VIA_MODEL_REF
        };
        server
            .notes
            .push(model_config::guessed_warning(&plan.model_id, how));
    }
    server.notes.extend(extra_args::overriding_the_plan(
        "spec.extraArgs",
        &spec.extra_args,
    ));
    if let Some(m) = &referenced {
        server
            .out
            .conditions
            .extend(served_model::resolved_conditions(req, m));
    }
    let remote = matches!(server.placement, Placement::Remote { .. });
    let mut out = server.report(plan, &served, scaling, endpoint);
    if remote {
        replaced_objects::await_deletions(req, &mut out);
    }
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
            let model = ModelRef::new(MODEL_REF, &r.name)?;
            let waiting_status = |_: &str, _: &str, _: &str| {
                Map::from_iter([("ready".to_string(), Value::from("False"))])
            };
            Ok(
                match served_model::resolve(req, model, RESOURCES, &waiting_status)? {
                    ControlFlow::Break(waiting) => ControlFlow::Break(waiting),
                    ControlFlow::Continue(m) => {
                        ControlFlow::Continue((m.facts.model_url.clone(), Some(m)))
                    }
                },
            )
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
    referenced: Option<&ResolvedModel>,
) -> Result<Plan, Refusal> {
    let mut sizing_request = sizing_request(spec, model, req)?;
    if let Some(f) = referenced.map(|m| &m.facts) {
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
    steps_sizing::check_choice_held("spec.gpuType", spec.gpu_type.is_some(), req.settings)?;
    steps_sizing::plan(
        &sizing_request,
        "spec.gpuType",
        spec.gpu_type.is_some(),
        &req.settings.offered_gpu_types,
        req.settings,
    )
    .map_err(|e| {
        Refusal::new(
            "CannotSize",
            sizing_error_message(spec, req.settings, referenced, &e),
        )
    })
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
            owner: format!("{} {}/{}", xr.kind, xr.namespace, xr.name),
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

/// One LLMInference whose model is known: what its steps read, and what
/// they compose and note.
struct Server<'a> {
    req: &'a ComposeRequest<'a>,
    spec: &'a LlmInferenceSpec,
    /// The referenced Model's facts, if the model comes from one.
    facts: Option<&'a ModelFacts>,
    /// The model id or URL vLLM serves.
    model: &'a str,
    /// What clients call the model (`--served-model-name`, else the model
    /// itself); vLLM's responses carry the first.
    served_names: Vec<&'a str>,
    /// The model server's name (the runtime and its Service).
    name: &'a str,
    placement: Placement,
    /// The Secrets its pods pull their images with.
    pull_secrets: PullSecrets,
    out: Composition,
    notes: Vec<String>,
}

impl Server<'_> {
    /// The model server for `plan`: `spec.replicas`, the autoscaler's
    /// bounds or the Model's data-parallel shards.
    fn serve(
        &mut self,
        autoscaling: Option<&autoscaling::Asked>,
        plan: &mut Plan,
    ) -> Result<Served, Refusal> {
        let (req, spec, facts) = (self.req, self.spec, self.facts);
        let hf_token = hf_access::token(
            spec.hf_token_secret_ref
                .as_ref()
                .map(|r| r.name_and_key(HF_TOKEN_KEY)),
            facts.and_then(|f| f.hf_token.as_ref()),
            req.settings.hf_token.as_ref(),
        );
        let token_field = if facts.is_some() {
            "spec.hfTokenSecretRef (or the Model's)"
        } else {
            "spec.hfTokenSecretRef"
        };
        self.notes.extend(hf_access::gated_without_token(
            self.model,
            hf_token.is_some(),
            token_field,
        ));
        // With an autoscaler, the most replicas that may run decide the
        // runtime and whether a weights volume is shared.
        let replicas = match autoscaling {
            Some(a) => i64::from(a.max_replicas),
            None => spec
                .replicas
                .or_else(|| facts.and_then(|f| f.data_parallel).map(i64::from))
                .unwrap_or(1),
        };
        // More than one replica comes from spec.replicas, the autoscaler or the Model's shards.
        let (replicas_field, replicas_from) = if spec.replicas.is_some() {
            ("spec.replicas", "spec.replicas")
        } else if autoscaling.is_some() {
            ("spec.autoscaling", "spec.autoscaling.maxReplicas")
        } else {
            ("spec.modelRef", "the Model's data-parallel shards")
        };
        extra_args::check("spec.extraArgs", &spec.extra_args)?;
        // The Model's tool-call parser; the spec's own arguments come last and win.
        let tool_calling = facts.and_then(|f| ToolCalling::of_model(f.tool_call_parser.as_deref()));
        tool_calling::check_extra_args(
            "spec.extraArgs",
            &spec.extra_args,
            tool_calling.is_some(),
            &plan.model_id,
        )
        .map_err(|m| Refusal::new("InvalidSpec", m))?;
        // A Model states its own trust; a Model that needs it and lacks it
        // was refused when it was resolved.
        if facts.is_none()
            && let Some(why) = remote_code::untrusted(
                self.model,
                remote_code::trusted_by(&spec.extra_args),
                &format!("add \"{}\" to spec.extraArgs", remote_code::FLAG),
            )
        {
            return Err(Refusal::new("InvalidSpec", format!("spec.model: {why}")));
        }
        let mut extra_args: Vec<String> = tool_calling.iter().flat_map(ToolCalling::args).collect();
        extra_args.extend(spec.extra_args.iter().cloned());
        if let Some(t) = tool_calling {
            plan.reasons.push(t.reason);
        }
        let serve = Serve {
            choice: runtime::ServerChoice {
                asked: runtime::Asked::new(spec.runtime, req.settings.runtime),
                requested_cache: facts.is_some_and(|f| f.cache.is_some()),
                replicas: i32::try_from(replicas).unwrap_or(1),
                replicas_from,
                operator_field: replicas_field,
                fit: runtime::FitFields {
                    gpu: "spec.gpuType, for example H200 or B200",
                    precision: "spec.quantization",
                    context: "spec.maxModelLen",
                },
                gpu_field: gpu_type_field(spec, req.settings),
            },
            keys: KEYS,
            name: self.name,
            model_url: self.model,
            facts,
            hf_token,
            extra_args: &extra_args,
            image: spec.image.as_ref(),
            labels: None,
            placement: &self.placement,
            autoscaled: autoscaling.map(|a| (a.min_replicas, a.max_replicas)),
            pull_secrets: &self.pull_secrets,
            api_key: spec
                .api_key_secret_ref
                .as_ref()
                .map(|r| ApiKey::of("spec.apiKeySecretRef", r)),
        };
        // An LLMInference reports notes and warnings alike as the plan's.
        let (served, warnings) =
            model_server::serve(req, &serve, plan, &mut self.out, &mut self.notes)?;
        self.notes.extend(warnings);
        Ok(served)
    }

    /// The model server's autoscaler, when the spec asks for one, and its
    /// PodMonitor, when the platform has the Prometheus Operator.
    fn scale(
        &mut self,
        autoscaling: Option<&autoscaling::Asked>,
        plan: &Plan,
        served: &Served,
    ) -> Option<AutoscalingStatus> {
        let at = autoscaling::Scaled {
            key: AUTOSCALER,
            pod_monitor_key: POD_MONITOR,
            name: self.name,
            labels: labels("LLMInference", &self.req.xr.name, "model-server"),
            placement: &self.placement,
        };
        autoscaling::compose(
            self.req,
            autoscaling,
            plan,
            served,
            &at,
            &mut self.out,
            &mut self.notes,
        )
    }

    /// The model's endpoints: its Service, and for its host either the
    /// platform's Gateway (an InferencePool and an HTTPRoute) or, with
    /// `spec.ingressHost` and no Gateway, an Ingress.
    fn route(&mut self, served: &Served) -> Endpoint {
        let (req, spec) = (self.req, self.spec);
        let namespace = self.placement.namespace();
        let host = spec.ingress_host.as_deref().filter(|h| !h.is_empty());
        let mut endpoint = Endpoint {
            internal: Some(internal_url(self.name, namespace)),
            external: host.map(|h| external_url(h, spec.tls.is_some())),
            gateway: None,
        };
        if let Some(gateway) = req.settings.gateway_for(spec.gateway.as_ref()) {
            // The Gateway routes the host, if any: no Ingress.
            let routed = inference_routing::Routed {
                xr_kind: "LLMInference",
                name: self.name,
                served,
                model_names: &self.served_names,
                host,
                placement: &self.placement,
                pull_secrets: &self.pull_secrets.names,
            };
            endpoint.gateway = Some(inference_routing::compose(
                req,
                &gateway,
                &routed,
                &mut self.out,
            ));
        } else if let Some(host) = host {
            let manifest = ingress(&IngressParams {
                name: &names::dns_subdomain(&req.xr.name, ""),
                namespace,
                host,
                path: OPENAI_API_PATH,
                service: self.name,
                port: SERVICE_PORT,
                class_name: spec.ingress_class_name.as_deref(),
                tls_secret: spec.tls.as_ref().map(|t| t.secret_name.as_str()),
            });
            self.out
                .add(INGRESS, self.placement.place(manifest), &req.observed);
        }
        endpoint
    }

    /// The XR's status, its `Sized`, `Serving`, `Autoscaling` and `Routed`
    /// conditions, and a warning event for each new warning.
    fn report(
        mut self,
        mut plan: Plan,
        served: &Served,
        autoscaling: Option<AutoscalingStatus>,
        endpoint: Endpoint,
    ) -> Composition {
        let (req, out) = (self.req, &mut self.out);
        let internal = endpoint.internal.clone().unwrap_or_default();
        let layout = plan.layout_summary();
        plan.warnings.append(&mut self.notes);
        let gpu_type = plan.gpu.name.to_string();
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
        let serving_layout = serving::report(
            req,
            &served.state,
            &serving::Report {
                what: self.served_names[0],
                url: &internal,
                layout: &layout,
            },
            out,
        );
        scaling_condition::report(req, &[AUTOSCALER], out);
        routing_condition::report(req, out);
        let status = LlmInferenceStatus {
            model: Some(self.served_names[0].to_string()),
            plan: Some(plan),
            gpu_type: Some(gpu_type),
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
            autoscaling,
        };
        out.status = Some(crate::compose::composition::to_object(status));
        self.out
    }
}

fn sizing_request(
    spec: &LlmInferenceSpec,
    model: &str,
    req: &ComposeRequest,
) -> Result<SizingRequest, Refusal> {
    let (gpu, max_model_len) = (spec.gpu, spec.max_model_len);
    let quantization = spec.quantization;
    let mig = steps_sizing::mig_choice(spec.mig_profile.as_deref())?;
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
        mig_strategy: req.settings.mig_strategy,
        // The server's own share of each GPU, when its arguments set one.
        gpu_memory_utilization: extra_args::gpu_memory_utilization(&spec.extra_args)
            .unwrap_or(req.settings.gpu_memory_utilization),
        kv_cache_dtype: spec.kv_cache_dtype.unwrap_or_default(),
        objective: spec.objective.unwrap_or(req.settings.objective),
        // The batch it sets is the sampler warm-up the layout leaves room for.
        max_num_seqs: extra_args::max_num_seqs(&spec.extra_args),
        // An XR's own image is sized as an unknown release.
        vllm_version: if spec.image.is_none() {
            req.settings.image_release(
                spec.runtime.unwrap_or(req.settings.runtime),
                spec.gpu_type.as_deref(),
            )
        } else {
            None
        },
        ..Default::default()
    })
}

/// The field that chose the GPU type: the spec's, or the platform default.
fn gpu_type_field(spec: &LlmInferenceSpec, settings: &Settings) -> &'static str {
    steps_sizing::gpu_type_field("spec.gpuType", spec.gpu_type.is_some(), settings)
}

/// Prefixes a sizing error with the field it is about: the spec's, or,
/// for what the spec leaves to it, the referenced Model's.
fn sizing_error_message(
    spec: &LlmInferenceSpec,
    settings: &Settings,
    referenced: Option<&ResolvedModel>,
    e: &sizing::SizingError,
) -> String {
    use sizing::SizingError as E;
    let own = |field: &str| field.to_string();
    // The Model's field when the spec did not set its own.
    let from_model = |set_here: bool, field: &str, on_model: &str| match referenced {
        Some(m) if !set_here => format!("Model {} spec.{on_model}", m.display),
        _ => field.to_string(),
    };
    let field = match e {
        E::UnknownGpu { .. } | E::GpuRetired { .. } => own(gpu_type_field(spec, settings)),
        E::NoOfferedGpuServes {
            layout_too_small: false,
            ..
        } => own("input.defaults.offeredGpuTypes"),
        // Without a quantization field, the model's id or checkpoint chose it.
        E::UnknownPrecision { .. } | E::UnsupportedPrecision { .. } => from_model(
            spec.quantization.is_some(),
            if spec.quantization.is_some() {
                "spec.quantization"
            } else {
                "spec.model"
            },
            match referenced {
                Some(m) if m.facts.precision.is_none() => "weightsURI",
                _ => "quantization",
            },
        ),
        E::Float16Refused { .. } | E::BitsandbytesOnRocm { .. } if spec.quantization.is_some() => {
            own("spec.quantization")
        }
        E::InvalidMigChoice { .. }
        | E::MigUnsupported { .. }
        | E::UnknownMigProfile { .. }
        | E::MigProfileTooSmall { .. }
        | E::MigNeedsOneGpu { .. } => own("spec.migProfile"),
        E::MissingParameterCount { .. } | E::InvalidParameterCount { .. } => from_model(
            spec.parameter_count.is_some(),
            "spec.parameterCount",
            "parameterCount",
        ),
        E::InvalidGpuCount { .. } => own("spec.gpu"),
        // The Model's shardSpec sets the parallelism unless spec.gpu does.
        E::InvalidTensorParallel { .. }
        | E::WeightsExceedGpu { .. }
        | E::TooManySequences { .. }
        | E::NoOfferedGpuServes {
            layout_too_small: true,
            ..
        } => from_model(spec.gpu.is_some(), "spec.gpu", "shardSpec.count"),
        E::InvalidPipelineParallel { .. } => from_model(false, "spec.model", "shardSpec.count"),
        E::ContextLongerThanModel { .. } | E::ContextDoesNotFit { .. } => own("spec.maxModelLen"),
        _ if referenced.is_some() => own("spec.modelRef"),
        _ => own("spec.model"),
    };
    format!("{field}: {e}")
}
