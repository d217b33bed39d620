//! Composes an `AgentPool`: a model server for the referenced Model (a
//! VLLMRuntime, or the Deployment or LeaderWorkerSet `spec.runtime` picks),
//! sized for the pool's GPUs and token budget; the agents (a Deployment and
//! the ConfigMap it mounts); a HorizontalPodAutoscaler; a
//! PodDisruptionBudget for more than one replica; and, with `port`, a
//! Service (and with `ingressHost` an Ingress) in front of the agents.
//!
//! The Model is read through Crossplane's required resources. Until it is
//! there the pool waits without dropping anything it composed before.
//! Spec errors are FATAL results that still carry the requirement, so
//! Crossplane's requirement loop sees the same requirements on every call.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use k8s_openapi::api::core::v1::EnvVar;

use crate::compose::composition::{ComposeRequest, Composition, Refusal, to_object};
use crate::compose::last_applied;
use crate::compose::resources::agent_config::{
    ModelEndpoint, agent_config_map, check_no_credentials, config_data, config_document,
    config_hash, memory_env,
};
use crate::compose::resources::agent_deployment::{
    AgentDeploymentParams, agent_deployment, check_env_has_no_credentials, config_path,
};
use crate::compose::resources::agent_service::{AgentServiceParams, agent_service};
use crate::compose::resources::autoscaler::{AutoscalerParams, autoscaler};
use crate::compose::resources::disruption_budget::disruption_budget;
use crate::compose::resources::env_vars;
use crate::compose::resources::ingress::{INGRESS, IngressParams, ingress};
use crate::compose::resources::labels::labels;
use crate::compose::resources::placement::Placement;
use crate::compose::resources::vllm_runtime::internal_url;
use crate::compose::rollout::Rollout;
use crate::compose::steps::autoscaling;
use crate::compose::steps::conditions;
use crate::compose::steps::hf_access;
use crate::compose::steps::model_config;
use crate::compose::steps::model_ref::ResolvedModel;
use crate::compose::steps::model_server::{self, ApiKey, Serve, Served, ServerKeys};
use crate::compose::steps::routing_condition;
use crate::compose::steps::runtime;
use crate::compose::steps::scaling_condition;
use crate::compose::steps::served_model::{self, ModelRef};
use crate::compose::steps::serving;
use crate::compose::steps::sizing as steps_sizing;
use crate::compose::steps::tool_calling::ToolCalling;
use crate::input::Settings;
use crate::names::{self, runtime_name};
use crate::protocol::server::Condition;
use crate::request::int_at;
use crate::sizing::{self, Plan, Throughput};
use crate::units::{GIB, parse_duration_seconds, parse_quantity, whole_seconds};
use crate::xr::agent_pool::{
    AgentPoolSpec, AgentPoolStatus, AgentsStatus, AutoscalingStatus, ModelServerStatus,
};
use crate::xr::model::Locality;
use crate::xr::plan_status::PlanStatus;
use crate::xr::shared_fields::{
    API_KEY_KEY, CONTEXT_TOKENS_MAX, CONTEXT_TOKENS_MIN, Endpoint, GPUS_PER_REPLICA_MAX,
    PullSecrets,
};

/// Composition resource names.
pub(crate) const MODEL_SERVER: &str = "model_server";
pub(crate) const AGENTS: &str = "agents";
pub(crate) const AGENT_CONFIG: &str = "agent_config";
pub(crate) const AGENT_SERVICE: &str = "agent_service";
pub(crate) const AUTOSCALER: &str = "autoscaler";
/// The model server's own autoscaler and PodMonitor.
pub(crate) const MODEL_SERVER_AUTOSCALER: &str = "model_server_autoscaler";
pub(crate) const MODEL_SERVER_POD_MONITOR: &str = "model_server_pod_monitor";
pub(crate) const DISRUPTION_BUDGET: &str = "disruption_budget";
/// Key of the requirement for the agents' pods, asked for while they do not run.
pub(crate) const AGENT_PODS_REQUIREMENT: &str = "agent_pods";
/// The model server on the other runtimes: a Deployment (with its Service
/// and weights claim) or a LeaderWorkerSet (with its Service).
pub(crate) const MODEL_SERVER_DEPLOYMENT: &str = "model_server_deployment";
pub(crate) const MODEL_SERVER_SERVICE: &str = "model_server_service";
pub(crate) const MODEL_SERVER_WEIGHTS: &str = "model_server_weights";
pub(crate) const MODEL_SERVER_LWS: &str = "model_server_leader_worker_set";
pub(crate) const MODEL_SERVER_DISRUPTION_BUDGET: &str = "model_server_disruption_budget";
const SERVER_KEYS: ServerKeys = ServerKeys {
    vllm_runtime: MODEL_SERVER,
    deployment: MODEL_SERVER_DEPLOYMENT,
    service: MODEL_SERVER_SERVICE,
    weights: MODEL_SERVER_WEIGHTS,
    leader_worker_set: MODEL_SERVER_LWS,
    disruption_budget: MODEL_SERVER_DISRUPTION_BUDGET,
};
/// Everything the pool may compose: kept as observed while it waits for its Model.
pub(crate) const RESOURCES: &[&str] = &[
    MODEL_SERVER,
    MODEL_SERVER_DEPLOYMENT,
    MODEL_SERVER_SERVICE,
    MODEL_SERVER_WEIGHTS,
    MODEL_SERVER_LWS,
    MODEL_SERVER_DISRUPTION_BUDGET,
    AGENTS,
    AGENT_CONFIG,
    AGENT_SERVICE,
    AUTOSCALER,
    MODEL_SERVER_AUTOSCALER,
    MODEL_SERVER_POD_MONITOR,
    DISRUPTION_BUDGET,
    INGRESS,
];

/// What the agents' Deployment, Service, autoscaler, disruption budget and
/// Ingress are named after the pool: an LLMInference of the pool's name
/// composes its own under the bare name, in the same namespace.
const AGENTS_SUFFIX: &str = "-agents";

/// Model-server replicas a token budget may ask for.
const MAX_MODEL_SERVER_REPLICAS: u64 = 64;
/// Seconds a Service pins a client when sessionAffinity.ttl is unset (Kubernetes' default).
const DEFAULT_AFFINITY_SECONDS: i32 = 10_800;

/// Composes an AgentPool.
pub(crate) fn compose(req: &ComposeRequest) -> Result<Composition, Refusal> {
    let spec: AgentPoolSpec = req.xr.spec().map_err(|e| Refusal::new("InvalidSpec", e))?;
    let name = spec.agent_class.model_ref.name.trim();
    if name.is_empty() {
        return Err(Refusal::new(
            "InvalidSpec",
            "spec.agentClass.modelRef.name is empty; name a Model in the AgentPool's namespace",
        ));
    }
    let model = ModelRef::new(MODEL_REF, name)?;
    Ok(served_model::with_requirements(
        req,
        model,
        compose_pool(req, &spec, model),
    ))
}

const MODEL_REF: &str = "spec.agentClass.modelRef";

/// Agent replica bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Replicas {
    /// The warm pool and the autoscaler's floor.
    floor: i32,
    max: i32,
}

fn replicas(spec: &AgentPoolSpec, notes: &mut Vec<String>) -> Replicas {
    // `AgentPoolSpec::validate` refused bounds out of range or crossed.
    let min = spec.min_replicas.unwrap_or(1);
    let max = spec.max_replicas.unwrap_or(min.max(1));
    let prewarm = spec.prewarm_percent.unwrap_or(0);
    // ceil(max x prewarm / 100) in integers: both are non-negative here.
    let warm = min.max((max * prewarm + 99) / 100).min(max);
    if warm == 0 {
        notes.push(
            "spec.minReplicas 0: one agent stays up, since scaling to zero needs the HPAScaleToZero feature gate".into(),
        );
    }
    Replicas {
        floor: warm.max(1),
        max,
    }
}

fn validate(spec: &AgentPoolSpec) -> Result<(), Refusal> {
    spec.validate()
        .and_then(|()| env_vars::check("spec.env", &spec.env))
        .map_err(|m| Refusal::new("InvalidSpec", m))?;
    check_no_credentials(&spec.agent_class).map_err(|m| Refusal::new("CredentialInConfig", m))?;
    check_env_has_no_credentials(&spec.env).map_err(|m| Refusal::new("CredentialInEnv", m))
}

/// Composes the pool once its Model is known: size the model server, build
/// it, the agents and their scaling, expose them, then report.
fn compose_pool(
    req: &ComposeRequest,
    spec: &AgentPoolSpec,
    model_ref: ModelRef,
) -> Result<Composition, Refusal> {
    validate(spec)?;
    let pull_secrets = PullSecrets::of(&req.settings.image_pull_secrets, &spec.image_pull_secrets)
        .map_err(|m| Refusal::new("InvalidSpec", m))?;
    let mut notes = Vec::new();
    let bounds = replicas(spec, &mut notes);
    let waiting_status = |phase: &str, model: &str, message: &str| {
        to_object(AgentPoolStatus {
            phase: Some(phase.into()),
            waiting_for: Some(message.into()),
            model: Some(model.into()),
            ..Default::default()
        })
    };
    let model = match served_model::resolve(req, model_ref, RESOURCES, &waiting_status)? {
        ControlFlow::Continue(model) => model,
        ControlFlow::Break(waiting) => return Ok(waiting),
    };
    let server_autoscaling = autoscaling::check(
        req,
        spec.model_server_autoscaling.as_ref(),
        "spec.modelServerAutoscaling",
        "a longer spec.agentClass.maxContextLength",
        "drop it: the model server then runs the replicas of spec.tokensPerSecondBudget",
    )?;
    let mut plan = size(req, spec, &model)?;
    if plan.architecture_guessed {
        plan.warnings.push(model_config::guessed_warning(
            &model.facts.model_id,
            model_config::GIVE_CONFIG_ON_MODEL,
        ));
    }
    let (server_replicas, formula) = model_server_replicas(spec, &model, &plan)?;
    let (runtime_name, renamed) = runtime_name(&req.xr.name, "-model");
    plan.reasons.extend(renamed);
    let mut pool = Pool {
        req,
        spec,
        model: &model,
        pull_secrets,
        out: Composition::default(),
        notes,
    };
    let server = pool.serve_model(
        &runtime_name,
        server_replicas,
        server_autoscaling.as_ref(),
        &mut plan,
    )?;
    let mut server_warnings = Vec::new();
    let server_scaling = pool.scale_model_server(
        &runtime_name,
        server_autoscaling.as_ref(),
        &plan,
        &server,
        &mut server_warnings,
    );
    plan.warnings.extend(server_warnings);
    let base_url = internal_url(&runtime_name, &req.xr.namespace);
    let agents = pool.agents(&base_url, bounds)?;
    plan.warnings.extend(server_key_replaced(spec));
    let mut warnings = plan.warnings.clone();
    let autoscaling = pool.autoscale(&agents, bounds, &mut warnings)?;
    let endpoint = pool.expose(&agents)?;
    let tps = pool_throughput(&plan).tokens_per_second;
    let status = AgentPoolStatus {
        phase: None,
        waiting_for: None,
        model: Some(model.display.clone()),
        plan: Some(PlanStatus::from(&plan)),
        gpu_type: Some(plan.gpu.name.to_string()),
        model_server: Some(ModelServerStatus {
            name: runtime_name,
            runtime: Some(server.runtime.as_str().into()),
            replicas: server.replicas,
            base_url: base_url.clone(),
            tokens_per_second_per_replica: (tps * 10.0).round() / 10.0,
            formula,
            serving_layout: None,
            autoscaling: server_scaling,
        }),
        agents: Some(AgentsStatus {
            warm_replicas: bounds.floor,
            max_replicas: bounds.max,
            config_map: agents.config_name.clone(),
        }),
        autoscaling,
        endpoint,
        notes: std::mem::take(&mut pool.notes),
        warnings,
    };
    Ok(pool.report(&plan, &server, &base_url, &agents, status))
}

/// One AgentPool whose Model is known: what its steps read, and what they
/// compose and note.
struct Pool<'a> {
    req: &'a ComposeRequest<'a>,
    spec: &'a AgentPoolSpec,
    model: &'a ResolvedModel,
    /// The Secrets its pods pull their images with.
    pull_secrets: PullSecrets,
    out: Composition,
    notes: Vec<String>,
}

/// What [`Pool::agents`] built, for the resources around them.
struct Agents {
    name: String,
    config_name: String,
    labels: BTreeMap<String, String>,
    selector: BTreeMap<String, String>,
    rollout: Rollout,
}

impl Pool<'_> {
    /// The model server the agents call, `replicas` of `plan`.
    fn serve_model(
        &mut self,
        runtime_name: &str,
        replicas: i32,
        autoscaling: Option<&autoscaling::Asked>,
        plan: &mut Plan,
    ) -> Result<Served, Refusal> {
        // With an autoscaler, the most replicas that may run decide the
        // runtime and whether a weights volume is shared.
        let (replicas, replicas_from) = match autoscaling {
            Some(a) => (
                a.max_replicas,
                "from spec.modelServerAutoscaling.maxReplicas",
            ),
            None => (
                replicas,
                "from spec.tokensPerSecondBudget and the Model's data-parallel shards",
            ),
        };
        let (req, spec, model) = (self.req, self.spec, self.model);
        let (placement, model_labels) = self.model_server_site();
        let operator_field = format!("{MODEL_REF}: Model {}", model.display);
        let hf_token = hf_access::token(
            None,
            model.facts.hf_token.as_ref(),
            req.settings.hf_token.as_ref(),
        );
        plan.warnings.extend(hf_access::gated_without_token(
            &model.facts.model_url,
            hf_token.is_some(),
            "the Model's spec.hfTokenSecretRef",
        ));
        let own_parser = model.facts.tool_call_parser.as_deref();
        let tool_calling = if spec.agent_class.tool_permissions.is_empty() {
            ToolCalling::of_model(own_parser)
        } else {
            ToolCalling::for_agents(own_parser, &model.facts.model_id)
                .map_err(|warning| plan.warnings.push(warning))
                .ok()
        };
        let extra_args: Vec<String> = tool_calling.iter().flat_map(ToolCalling::args).collect();
        if let Some(t) = tool_calling {
            plan.reasons.push(t.reason);
        }
        let serve = Serve {
            choice: runtime::ServerChoice {
                asked: runtime::Asked::new(spec.runtime, req.settings.runtime),
                requested_cache: model.facts.cache.is_some(),
                replicas,
                replicas_from,
                operator_field: &operator_field,
                fit: runtime::FitFields {
                    gpu: "spec.gpuRequirements.type",
                    precision: "the Model's spec.quantization",
                    context: "spec.agentClass.maxContextLength",
                },
                gpu_field: gpu_type_field(spec, req.settings),
            },
            keys: SERVER_KEYS,
            name: runtime_name,
            model_url: &model.facts.model_url,
            facts: Some(&model.facts),
            hf_token,
            extra_args: &extra_args,
            image: None,
            labels: Some(&model_labels),
            placement: &placement,
            autoscaled: autoscaling.map(|a| (a.min_replicas, a.max_replicas)),
            pull_secrets: &self.pull_secrets,
            api_key: spec
                .model_server_api_key_secret_ref
                .as_ref()
                .map(|r| ApiKey::of("spec.modelServerApiKeySecretRef", r)),
        };
        // The pool's notes are what has no effect; what deserves attention
        // is a warning, as for an LLMInference.
        let (served, warnings) =
            model_server::serve(req, &serve, plan, &mut self.out, &mut self.notes)?;
        plan.warnings.extend(warnings);
        Ok(served)
    }

    /// Where the pool's model server goes (the pool's namespace) and the
    /// labels of its objects. Only labels that never change for the pool:
    /// the operator copies them into the model server Deployment's immutable
    /// selector, so the Model's name (which spec.agentClass.modelRef may
    /// change) is not one of them.
    fn model_server_site(&self) -> (Placement, BTreeMap<String, String>) {
        let xr = self.req.xr;
        (
            Placement::Native {
                namespace: xr.namespace.to_string(),
            },
            labels("AgentPool", &xr.name, "model-server"),
        )
    }

    /// The model server's autoscaler, when the pool asks for one, and its
    /// PodMonitor, when the platform has the Prometheus Operator; what it
    /// warns of (a server scaled to zero, a request longer than the
    /// context) goes to `warnings`, as an LLMInference's does.
    fn scale_model_server(
        &mut self,
        runtime_name: &str,
        autoscaling: Option<&autoscaling::Asked>,
        plan: &Plan,
        server: &Served,
        warnings: &mut Vec<String>,
    ) -> Option<crate::xr::model_server_autoscaling::AutoscalingStatus> {
        let (placement, labels) = self.model_server_site();
        let at = autoscaling::Scaled {
            key: MODEL_SERVER_AUTOSCALER,
            pod_monitor_key: MODEL_SERVER_POD_MONITOR,
            name: runtime_name,
            labels,
            placement: &placement,
        };
        autoscaling::compose(
            self.req,
            autoscaling,
            plan,
            server,
            &at,
            &mut self.out,
            warnings,
        )
    }

    /// The agents: their config ConfigMap and their Deployment.
    fn agents(&mut self, base_url: &str, bounds: Replicas) -> Result<Agents, Refusal> {
        let (req, spec, model) = (self.req, self.spec, self.model);
        let xr = req.xr;
        let namespace = &xr.namespace;
        let mut labels = labels("AgentPool", &xr.name, "agent");
        labels.insert("infer.dev/model".into(), names::label_value(&model.name));
        let selector: BTreeMap<String, String> = labels
            .iter()
            .filter(|(k, _)| {
                *k == "app.kubernetes.io/instance" || *k == "app.kubernetes.io/component"
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let class = &spec.agent_class;
        let config_name = names::dns_subdomain(&xr.name, "-agent-config");
        let name = names::dns_subdomain(&xr.name, AGENTS_SUFFIX);
        let document = config_document(
            class,
            &ModelEndpoint {
                name: &model.name,
                served_model: &model.facts.model_url,
                base_url,
            },
            spec.session_affinity.as_ref(),
        );
        let data = config_data(&document);
        check_config_size(&document, &data)?;
        let config = agent_config_map(&config_name, namespace, labels.clone(), data);
        self.out.add(AGENT_CONFIG, config, &req.observed);

        // The warm pool starts warm: a new Deployment gets the floor. When
        // the pool may grow, the count is then handed to its autoscaler as
        // the model server's is (model_server::serve says why): composed
        // again while Crossplane still owns it, left out once the
        // autoscaler's first scale took it over.
        let observed = req.observed.get(AGENTS);
        let replicas = match &observed {
            Some(observed) if bounds.max > bounds.floor => {
                last_applied::applied_count(observed, &["spec", "replicas"])
                    .map(|r| r.clamp(bounds.floor, bounds.max))
            }
            _ => Some(bounds.floor),
        };
        let mut agent_env = vec![
            env_vars::literal("OPENAI_BASE_URL", base_url),
            env_vars::literal("OPENAI_MODEL", &model.facts.model_url),
            server_key(spec),
            env_vars::literal("AGENT_CONFIG", &config_path()),
        ];
        if let Some(port) = spec.port {
            agent_env.push(env_vars::literal("AGENT_PORT", &port.to_string()));
        }
        agent_env.extend(memory_env(class));
        let empty = BTreeMap::new();
        let node_selector = spec
            .scheduling
            .as_ref()
            .map_or(&empty, |s| &s.node_selector);
        if spec
            .scheduling
            .as_ref()
            .is_some_and(|s| s.priority.is_some())
        {
            self.notes.push(
                "spec.scheduling.priority is not applied: pods take a PriorityClass name, not a number; the platform sets PriorityClasses".into(),
            );
        }
        let deployment = agent_deployment(&AgentDeploymentParams {
            name: &name,
            namespace,
            labels: labels.clone(),
            selector: selector.clone(),
            image: spec.image.trim(),
            replicas,
            port: spec.port,
            env: agent_env,
            user_env: &spec.env,
            config_map: &config_name,
            config_hash: &config_hash(&document),
            node_selector,
            pull_secrets: &self.pull_secrets.names,
            spread: bounds.max > 1,
        });
        let mut rollout = self.out.add_observed(AGENTS, deployment, observed.as_ref());
        // As the model server's: agents the autoscaler adds beyond the floor
        // do not take away what serves.
        if let Some(observed) = observed.as_ref().filter(|_| bounds.max > bounds.floor) {
            let running = int_at(observed, &["spec", "replicas"]).unwrap_or(1);
            rollout = rollout.with_floor(running, bounds.floor.into());
            self.out.set_rollout(AGENTS, &rollout);
        }
        Ok(Agents {
            name,
            config_name,
            labels,
            selector,
            rollout,
        })
    }

    /// The agents' autoscaler, when the pool may grow, and their disruption
    /// budget, when more than one stays up. The autoscaler's warnings go to
    /// `warnings` too.
    fn autoscale(
        &mut self,
        agents: &Agents,
        bounds: Replicas,
        warnings: &mut Vec<String>,
    ) -> Result<Option<AutoscalingStatus>, Refusal> {
        let (req, spec) = (self.req, self.spec);
        let namespace = &req.xr.namespace;
        let mut status = None;
        if bounds.max > bounds.floor {
            let hpa = autoscaler(&AutoscalerParams {
                name: &agents.name,
                namespace,
                labels: agents.labels.clone(),
                target: &agents.name,
                min_replicas: bounds.floor,
                max_replicas: bounds.max,
                spec: spec.autoscaling.as_ref(),
            })
            .map_err(|m| Refusal::new("InvalidSpec", m))?;
            warnings.extend(hpa.warnings.iter().cloned());
            self.notes.extend(hpa.warnings);
            self.notes.extend(hpa.notes);
            status = Some(AutoscalingStatus {
                metrics: hpa.mappings,
            });
            self.out.add(AUTOSCALER, hpa.manifest, &req.observed);
        } else if spec.autoscaling.is_some() {
            self.notes.push(format!(
                "spec.autoscaling is not applied: the pool is fixed at {} replicas (raise spec.maxReplicas above that to autoscale)",
                bounds.floor
            ));
        }
        if bounds.floor > 1 {
            let pdb = disruption_budget(
                &agents.name,
                namespace,
                agents.labels.clone(),
                agents.selector.clone(),
            );
            self.out.add(DISRUPTION_BUDGET, pdb, &req.observed);
        }
        Ok(status)
    }

    /// With `spec.port`, the agents' Service (pinning sessions when asked)
    /// and, with `spec.ingressHost`, an Ingress to it.
    fn expose(&mut self, agents: &Agents) -> Result<Option<Endpoint>, Refusal> {
        let (req, spec) = (self.req, self.spec);
        let affinity = spec.session_affinity.as_ref().filter(|s| s.enabled);
        let Some(port) = spec.port else {
            if affinity.is_some() {
                self.notes.push("spec.sessionAffinity is not applied: without spec.port there is no Service to pin sessions".into());
            }
            return Ok(None);
        };
        let namespace = &req.xr.namespace;
        let affinity_seconds = affinity
            .map(|a| affinity_seconds(a.ttl.as_deref(), &mut self.notes))
            .transpose()?;
        if affinity.is_some() {
            self.notes.push(
                "spec.sessionAffinity pins sessions by client IP (a Service cannot read headers); keyHeader and type reach the agents in their config".into(),
            );
        }
        // A Service name is a DNS-1035 label. With its suffix it is never
        // "vllm", which would inject VLLM_PORT=tcp://... into the model
        // server's pods and break vLLM.
        let service_name = names::dns1035_label(&req.xr.name, AGENTS_SUFFIX);
        let service = agent_service(&AgentServiceParams {
            name: &service_name,
            namespace,
            labels: agents.labels.clone(),
            selector: agents.selector.clone(),
            port,
            affinity_seconds,
        });
        self.out.add(AGENT_SERVICE, service, &req.observed);
        let mut endpoint = Endpoint {
            internal: Some(format!(
                "http://{service_name}.{namespace}.svc.cluster.local:{port}"
            )),
            external: None,
            gateway: None,
        };
        if let Some(host) = spec.ingress_host.as_deref().filter(|h| !h.is_empty()) {
            let manifest = ingress(&IngressParams {
                name: &agents.name,
                namespace,
                host,
                // The agents' own API, whatever its paths.
                path: "/",
                service: &service_name,
                port,
                class_name: None,
                tls_secret: None,
            });
            self.out.add(INGRESS, manifest, &req.observed);
            endpoint.external = Some(format!("http://{host}/"));
        }
        Ok(Some(endpoint))
    }

    /// The pool's status and phase, its `ModelResolved`, `Sized`,
    /// `Serving`, `Autoscaling` and `Routed` conditions, and a warning event
    /// for each new warning or problem.
    fn report(
        mut self,
        plan: &Plan,
        server: &Served,
        base_url: &str,
        agents: &Agents,
        mut status: AgentPoolStatus,
    ) -> Composition {
        let (req, model) = (self.req, self.model);
        let out = &mut self.out;
        let layout = plan.layout_summary();
        let what = format!("the model server for {}", model.facts.model_url);
        let server_report = serving::Report {
            what: &what,
            url: base_url,
            layout: &layout,
        };
        let serving_layout = serving::serving_layout(&server.state, &server_report);
        let phase = if server.state.serving() && agents.rollout.serves() {
            "Serving"
        } else if server.state.rollout == Rollout::ScaledToZero {
            "ScaledToZero"
        } else {
            "Starting"
        };
        status.phase = Some(phase.into());
        let replicas = status.model_server.as_ref().map_or(0, |m| m.replicas);
        if let Some(m) = status.model_server.as_mut() {
            m.serving_layout = serving_layout.clone();
        }
        let warnings = status.warnings.clone();
        out.warn_on_transition("AgentPoolWarning", &warnings, req.xr, &["warnings"]);
        out.status = Some(to_object(status));
        out.conditions
            .extend(served_model::resolved_conditions(req, model));
        out.conditions.push(conditions::sized(
            &warnings,
            format!(
                "{} of {layout}",
                sizing::count_of(replicas, "model-server replica")
            ),
        ));
        let (condition, problem) = if server.state.serving() {
            agents_condition(req, agents, &model.facts.model_url, base_url, out)
        } else {
            let mut condition =
                serving::condition(&server.state, &server_report, serving_layout.as_deref());
            // The model server comes first, but agents that cannot start
            // are said now, not minutes later once it serves.
            let agents_problem = agents_problem(req, agents, out);
            if let (Some(message), Some((_, why))) = (condition.message.as_mut(), &agents_problem) {
                *message = format!(
                    "{}; the agents cannot start either: {}",
                    message.trim_end_matches('.'),
                    why.trim_end_matches('.')
                );
            }
            let problem = server.state.problem.as_ref().or(agents_problem.as_ref());
            (condition, problem.map(|(reason, _)| reason.clone()))
        };
        serving::push_condition(req, problem.as_deref(), condition, out);
        scaling_condition::report(req, &[MODEL_SERVER_AUTOSCALER, AUTOSCALER], out);
        routing_condition::report(req, out);
        self.out
    }
}

/// The `Serving` condition once the model server serves, from the agents'
/// rollout and, while it is not complete, their pods; and the reason of the
/// problem it reports, if any.
fn agents_condition(
    req: &ComposeRequest,
    agents: &Agents,
    model_url: &str,
    base_url: &str,
    out: &mut Composition,
) -> (Condition, Option<String>) {
    match (&agents.rollout, agents_problem(req, agents, out)) {
        (Rollout::Complete, _) => (
            conditions::serving(format!("agents serve with {model_url} at {base_url}")),
            None,
        ),
        // The autoscaler adds agents beyond the floor.
        (Rollout::AboveFloor(r), stuck) => (
            conditions::serving(format!(
                "agents serve with {model_url} at {base_url}{}",
                serving::above_floor(*r, stuck.as_ref())
            )),
            stuck.map(|(reason, _)| reason),
        ),
        (rollout, Some((reason, message))) => {
            let still = match rollout.replicas() {
                Some(r) if r.available > 0 => {
                    format!(
                        "; {} still available",
                        sizing::count_of(r.available, "agent replica")
                    )
                }
                _ => String::new(),
            };
            (
                conditions::not_serving(
                    &reason,
                    format!(
                        "the agent Deployment: {}{still}",
                        message.trim_end_matches('.')
                    ),
                ),
                Some(reason),
            )
        }
        (Rollout::ReplicasStarting(r), None) if r.available > 0 => (
            conditions::not_serving(
                "AgentsStarting",
                format!(
                    "the model server serves; the agents serve{}",
                    serving::above_floor(*r, None)
                ),
            ),
            None,
        ),
        (rollout, None) => match rollout.replicas() {
            Some(r) if r.available > 0 => (
                conditions::not_serving(
                    "AgentsRollingOut",
                    format!(
                        "the model server serves; the agent Deployment rolls out: {}",
                        serving::counts(r)
                    ),
                ),
                None,
            ),
            _ => (
                conditions::not_serving(
                    "AgentsStarting",
                    "the model server serves; the agent Deployment is not available yet",
                ),
                None,
            ),
        },
    }
}

/// What keeps the agents from completing their rollout, from their
/// Deployment and their pods (asked of Crossplane while it is not complete).
fn agents_problem(
    req: &ComposeRequest,
    agents: &Agents,
    out: &mut Composition,
) -> Option<(String, String)> {
    let placement = Placement::Native {
        namespace: req.xr.namespace.to_string(),
    };
    serving::diagnose(
        req,
        &agents.rollout,
        AGENT_PODS_REQUIREMENT,
        &placement,
        &agents.selector,
        out,
    )
}

/// Sizes one model-server replica from the Model's facts and the pool's GPUs.
fn size(
    req: &ComposeRequest,
    spec: &AgentPoolSpec,
    model: &ResolvedModel,
) -> Result<Plan, Refusal> {
    let invalid = |m: String| Refusal::new("InvalidSpec", m);
    let gpu = spec.gpu_requirements.as_ref();
    let gpu_type = gpu
        .and_then(|g| g.r#type.clone())
        .unwrap_or_else(|| req.settings.gpu_type.to_string());
    // `AgentPoolSpec::validate` refused counts and lengths out of range; the
    // clamps only make the casts total.
    let count = gpu
        .and_then(|g| g.count)
        .map(|c| c.clamp(1, GPUS_PER_REPLICA_MAX) as u32);
    let facts = &model.facts;
    if let (Some(c), Some(tp)) = (count, facts.tensor_parallel) {
        let shards = tp * facts.pipeline_parallel.unwrap_or(1);
        if c != shards {
            return Err(invalid(format!(
                "spec.gpuRequirements.count {c} contradicts Model {} spec.shardSpec ({shards} GPUs per replica); drop one of them",
                model.display
            )));
        }
    }
    let mig = steps_sizing::mig_choice(spec.mig_profile.as_deref())?;
    let max_model_len = spec
        .agent_class
        .max_context_length
        .map(|l| l.clamp(CONTEXT_TOKENS_MIN, CONTEXT_TOKENS_MAX) as u64);
    let request = sizing::SizingRequest {
        gpu_count: if facts.tensor_parallel.is_some() {
            None
        } else {
            count
        },
        mig,
        mig_strategy: req.settings.mig_strategy,
        max_model_len,
        objective: spec
            .objective
            .unwrap_or_else(|| facts.objective_or(req.settings.objective)),
        vllm_version: req.settings.image_release(
            spec.runtime.unwrap_or(req.settings.runtime),
            gpu.and_then(|g| g.r#type.as_deref()),
        ),
        // A pool gives its model server no arguments of its own.
        max_num_seqs_settable: false,
        ..facts.sizing_request(&gpu_type, req.settings.gpu_memory_utilization)
    };
    let memory = gpu
        .and_then(|g| g.memory.as_deref())
        .map(|m| {
            parse_quantity(m)
                .map(|want| (m, want))
                .map_err(|e| invalid(format!("spec.gpuRequirements.memory: {e}")))
        })
        .transpose()?;
    let named = gpu.and_then(|g| g.r#type.as_ref()).is_some();
    // Only the offered types with the memory the pool asks for compete.
    let offered: Vec<String> = req
        .settings
        .offered_gpu_types
        .iter()
        .filter(|name| {
            memory.is_none_or(|(_, want)| {
                crate::sizing::gpu(name).is_ok_and(|g| g.memory_gib * GIB >= want)
            })
        })
        .cloned()
        .collect();
    steps_sizing::check_choice_held("spec.gpuRequirements.type", named, req.settings)?;
    if !named && req.settings.choose_gpu_type && offered.is_empty() {
        return Err(invalid(format!(
            "spec.gpuRequirements.memory {} exceeds every offered GPU type ({}); ask for less memory or name a larger spec.gpuRequirements.type",
            memory.map_or("", |(m, _)| m),
            req.settings.offered_gpu_types.join(", ")
        )));
    }
    let mut plan = steps_sizing::plan(
        &request,
        "spec.gpuRequirements.type",
        named,
        &offered,
        req.settings,
    )
    .map_err(|e| {
        Refusal::new(
            "CannotSize",
            sizing_error_message(spec, req.settings, model, &e),
        )
    })?;
    if let Some((memory, want)) = memory
        && plan.gpu.memory_gib * GIB < want
    {
        return Err(invalid(format!(
            "spec.gpuRequirements.memory {memory} exceeds the {:.0} GiB of a {}; choose a larger spec.gpuRequirements.type",
            plan.gpu.memory_gib, plan.gpu.name
        )));
    }
    // vLLM answers 400 to a request whose prompt and max_tokens exceed the
    // context, so answers as long as the whole context fail every call.
    let context = i64::try_from(plan.max_model_len).unwrap_or(i64::MAX);
    if let Some(t) = spec.agent_class.max_tokens
        && t >= context
    {
        let from = if spec.agent_class.max_context_length.is_some() {
            "spec.agentClass.maxContextLength"
        } else {
            "as the plan derived it"
        };
        return Err(invalid(format!(
            "spec.agentClass.maxTokens is {t}, but the model server's context ({from}) is {context} tokens and holds \
             the prompt too: vLLM refuses every request whose prompt and maxTokens exceed it (400, \"'max_tokens' or \
             'max_completion_tokens' is too large\"); use fewer than {context}, leaving room for the system prompt \
             and the conversation, or raise spec.agentClass.maxContextLength"
        )));
    }
    if let Some(t) = gpu.and_then(|g| g.topology.as_ref())
        && matches!(t.locality, Locality::Nvlink | Locality::SameSocket)
    {
        // Reported through the plan's warnings like the sizing engine's own.
        plan.warnings.push(
            "spec.gpuRequirements.topology.locality is not enforced: Kubernetes cannot ask for a GPU interconnect; choose a GPU type whose nodes have it".into(),
        );
    }
    Ok(plan)
}

/// A warning when the agents' own `OPENAI_API_KEY` (which wins over the
/// composed one) replaces the model server's key while they still call the
/// model server: any other key is refused there. Beside their own
/// `OPENAI_BASE_URL` (a gateway's) the key is theirs.
fn server_key_replaced(spec: &AgentPoolSpec) -> Option<String> {
    let r = spec.model_server_api_key_secret_ref.as_ref()?;
    let (secret, key) = r.name_and_key(API_KEY_KEY);
    let own = |name: &str| spec.env.iter().find(|e| e.name == name);
    let own_key = own("OPENAI_API_KEY")?;
    let same = own_key
        .value_from
        .as_ref()
        .and_then(|v| v.secret_key_ref.as_ref())
        .is_some_and(|s| s.name == secret && s.key == key);
    (!same && own("OPENAI_BASE_URL").is_none()).then(|| {
        format!(
            "spec.env sets OPENAI_API_KEY, which replaces in the agents the key the model server requires (key \
             {key} of Secret {secret}, spec.modelServerApiKeySecretRef): unless it holds the same key, the model \
             server answers the agents 401; drop it from spec.env, or set OPENAI_BASE_URL there too for a gateway \
             that takes it"
        )
    })
}

/// The key the agents send the model server: the pool's, from its Secret.
/// Without one the server takes none, but OpenAI's SDKs refuse to start
/// without a key: vLLM's documented placeholder.
fn server_key(spec: &AgentPoolSpec) -> EnvVar {
    match &spec.model_server_api_key_secret_ref {
        Some(r) => {
            let (secret, key) = r.name_and_key(API_KEY_KEY);
            env_vars::from_secret("OPENAI_API_KEY", secret, key)
        }
        None => env_vars::literal("OPENAI_API_KEY", "EMPTY"),
    }
}

/// Refuses an agent configuration larger than a ConfigMap holds, naming
/// the spec fields that made it large.
fn check_config_size(
    document: &serde_json::Value,
    data: &BTreeMap<String, String>,
) -> Result<(), Refusal> {
    let field = |key: &str| match key {
        "systemPrompt" => "spec.agentClass.systemPrompt",
        "tools" => "spec.agentClass.toolPermissions",
        "guardrails" => "spec.agentClass.guardrails",
        "slo" => "spec.agentClass.slo",
        "memory" => "spec.agentClass.memoryConfig",
        "session" => "spec.sessionAffinity",
        "model" => "spec.agentClass.modelRef",
        _ => "spec.agentClass",
    };
    let parts: Vec<(String, usize)> = document
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (field(k).to_string(), v.to_string().len()))
        .collect();
    crate::compose::resources::config_map::check_size("the agent ConfigMap", data, &parts)
        .map_err(|m| Refusal::new("ConfigTooLarge", m))
}

/// Sequences grow from the prompt to the full context: on average half.
fn average_context(plan: &Plan) -> u64 {
    (plan.max_model_len / 2).max(1)
}

/// One model-server replica's aggregate decode rate for this pool.
fn pool_throughput(plan: &Plan) -> Throughput {
    plan.batched_decode(average_context(plan))
}

/// What a batch of a mixture of experts reads beyond one sequence's
/// weights, for the formula: the experts its tokens are routed to.
fn experts_read(plan: &Plan, t: &Throughput) -> String {
    let batch = u64::from(t.batch);
    let read_b = plan.weights_read_b(batch);
    let (total_b, active_b) = plan.language_model_b();
    if read_b <= active_b {
        return String::new();
    }
    let read = format!(
        "{read_b:.1} B of the {total_b} B parameters a step, against {active_b} B for one sequence"
    );
    match plan.experts_touched(batch) {
        Some(touched) => format!(
            " and the experts its tokens are routed to ({touched:.1} of {} per layer on average: {read})",
            plan.arch.experts
        ),
        None => format!(
            " and every expert, since which experts its tokens are routed to is unknown ({read})"
        ),
    }
}

/// Model-server replicas and how they were computed: enough for the
/// token budget at the plan's decode rate, and at least the Model's
/// data-parallel shards.
fn model_server_replicas(
    spec: &AgentPoolSpec,
    model: &ResolvedModel,
    plan: &Plan,
) -> Result<(i32, String), Refusal> {
    let avg_context = average_context(plan);
    let throughput = pool_throughput(plan);
    let tps = throughput.tokens_per_second;
    // A hybrid model's windowed layers cache less of a sequence than its
    // length, so the division is by what one sequence takes.
    let cached = plan.cached_tokens(avg_context);
    let per_sequence = if cached == avg_context {
        format!("{avg_context} average context")
    } else {
        format!("{cached} tokens of every layer for a sequence of {avg_context} average context")
    };
    let estimate = format!(
        "batch {} (KV cache room for {} tokens / {per_sequence}, at most {}) x \
         single-sequence {:.1} tokens/s, slowed by reading the batch's KV cache{} = {tps:.1} tokens/s per replica",
        throughput.batch,
        plan.estimate.kv_capacity_tokens,
        plan.engine_max_num_seqs(),
        plan.decode_tokens_per_second(),
        experts_read(plan, &throughput),
    );
    let floor = u64::from(model.facts.data_parallel.unwrap_or(1));
    let (replicas, why) = match spec.tokens_per_second_budget {
        Some(budget) if tps > 0.0 => {
            let needed = (budget as f64 / tps).ceil() as u64;
            let replicas = needed.max(floor);
            let dp = if floor > needed {
                format!(", raised to the Model's data-parallel {floor}")
            } else {
                String::new()
            };
            (
                replicas,
                format!(
                    "replicas = ceil(tokensPerSecondBudget {budget} / {tps:.1}) = {needed}{dp}"
                ),
            )
        }
        _ => (
            floor,
            format!(
                "no tokensPerSecondBudget: {} (the Model's data-parallel shards, or 1)",
                sizing::count_of(floor, "replica")
            ),
        ),
    };
    if replicas > MAX_MODEL_SERVER_REPLICAS {
        return Err(Refusal::new(
            "BudgetTooLarge",
            format!(
                "spec.tokensPerSecondBudget needs {replicas} model-server replicas at {tps:.1} tokens/s each, more than {MAX_MODEL_SERVER_REPLICAS}; \
                 lower the budget, shorten spec.agentClass.maxContextLength (a replica batches more sequences of a shorter context) \
                 or choose a faster spec.gpuRequirements.type"
            ),
        ));
    }
    Ok((replicas as i32, format!("{estimate}; {why}")))
}

fn affinity_seconds(ttl: Option<&str>, notes: &mut Vec<String>) -> Result<i32, Refusal> {
    let Some(ttl) = ttl else {
        return Ok(DEFAULT_AFFINITY_SECONDS);
    };
    let s = parse_duration_seconds(ttl)
        .map_err(|e| Refusal::new("InvalidSpec", format!("spec.sessionAffinity.ttl: {e}")))?;
    if s > 86_400.0 {
        notes.push(format!(
            "spec.sessionAffinity.ttl {ttl} is capped at 24h, a Service's limit"
        ));
        return Ok(86_400);
    }
    // Validation refused a ttl of zero or less; a Service takes 1s at least.
    let whose = "a Service's affinity timeout";
    Ok(whole_seconds("spec.sessionAffinity.ttl", ttl, s, 1, whose, notes) as i32)
}

/// The field the pool's GPU type comes from: its own, or the platform's.
fn gpu_type_field(spec: &AgentPoolSpec, settings: &Settings) -> &'static str {
    let named = spec
        .gpu_requirements
        .as_ref()
        .is_some_and(|g| g.r#type.is_some());
    steps_sizing::gpu_type_field("spec.gpuRequirements.type", named, settings)
}

/// Prefixes a sizing error with the field it is about: the pool's or the Model's.
fn sizing_error_message(
    spec: &AgentPoolSpec,
    settings: &Settings,
    model: &ResolvedModel,
    e: &sizing::SizingError,
) -> String {
    use sizing::SizingError as E;
    let on_model = |f: &str| format!("Model {} spec.{f}", model.display);
    let field = match e {
        E::UnknownGpu { .. }
        | E::GpuRetired { .. }
        | E::DoesNotFit { .. }
        | E::UnsupportedPrecision { .. }
        | E::UnsupportedCheckpointFormat { .. }
        | E::Float16Refused { .. }
        | E::BitsandbytesOnRocm { .. } => gpu_type_field(spec, settings).to_string(),
        E::UnknownPrecision { .. } => on_model("quantization"),
        E::ArchitectureRetired { .. } | E::ArchitectureTooNew { .. } => on_model("weightsURI"),
        E::InvalidMigChoice { .. }
        | E::MigUnsupported { .. }
        | E::UnknownMigProfile { .. }
        | E::MigProfileTooSmall { .. }
        | E::MigNeedsOneGpu { .. } => "spec.migProfile".into(),
        E::MissingParameterCount { .. } | E::InvalidParameterCount { .. } => {
            on_model("parameterCount")
        }
        E::InvalidGpuCount { .. } | E::ParallelismMismatch { .. } => {
            "spec.gpuRequirements.count".into()
        }
        E::InvalidTensorParallel { .. } | E::InvalidPipelineParallel { .. } => {
            on_model("shardSpec.count")
        }
        // A layout too small: the field that fixed it, the Model's
        // shardSpec when it has one (it wins over the pool's count).
        E::WeightsExceedGpu { .. }
        | E::TooManySequences { .. }
        | E::NoOfferedGpuServes {
            layout_too_small: true,
            ..
        } => match model.facts.tensor_parallel {
            Some(_) => on_model("shardSpec.count"),
            None => "spec.gpuRequirements.count".into(),
        },
        E::ContextLongerThanModel { .. } | E::ContextDoesNotFit { .. } => {
            "spec.agentClass.maxContextLength".into()
        }
        E::InvalidValue { field, .. } => (*field).to_string(),
        E::NoOfferedGpuServes { .. } => "input.defaults.offeredGpuTypes".into(),
    };
    format!("{field}: {e}")
}
