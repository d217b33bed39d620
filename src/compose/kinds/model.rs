//! Composes a `Model`: a ConfigMap holding the normalized model card and
//! its serving plan on each GPU type the platform offers, and a status that
//! says whether (and where) it can be served, and what size it derived.
//!
//! A Model composes no workload: runtimes that serve it read it through
//! `modelRef`. Its phase is Failed when no offered GPU type can serve it,
//! with every GPU type's reason in `status.plans`; one that only another
//! runtime than the platform's default serves is servable, and says so.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use serde::Serialize;
use serde_json::Value;

use crate::compose::composition::{ComposeRequest, Composition, Refusal};
use crate::compose::resources::config_map::{config_map, pretty};
use crate::compose::resources::labels::labels;
use crate::compose::steps::model_config;
use crate::compose::steps::model_facts::ModelFacts;
use crate::compose::steps::runtime::{Unserved, cannot_serve};
use crate::compose::steps::weights_cache;
use crate::names;
use crate::protocol::server::ResourceSelector;
use crate::response as outcome;
use crate::sizing::{self, MigChoice};
use crate::xr::model::{CacheStatus, GpuPlanStatus, ModelSpec, ModelStatus, SizeStatus};
use crate::xr::plan_status::PlanStatus;
use crate::xr::plan_status::round2;
use crate::xr::shared_fields::RuntimeChoice;

/// Composition resource name of the model card.
pub(crate) const CARD: &str = "model_card";

/// Condition type saying whether the Model can be served.
pub(crate) const SERVABLE: &str = "Servable";

/// Composes a Model.
pub(crate) fn compose(req: &ComposeRequest) -> Result<Composition, Refusal> {
    let spec: ModelSpec = req.xr.spec().map_err(|e| Refusal::new("InvalidSpec", e))?;
    spec.validate()
        .map_err(|e| Refusal::new("InvalidSpec", e))?;
    let mut facts =
        ModelFacts::from_spec(&spec, "spec").map_err(|e| Refusal::new("InvalidSpec", e))?;
    let xr = req.xr;
    let requirements = match read_config(req, &mut facts) {
        ControlFlow::Continue(requirements) => requirements,
        ControlFlow::Break(answer) => return Ok(answer),
    };
    let plans = plan_each_gpu(req, &facts);
    let first_plan = plans.iter().find_map(|(_, p)| p.as_ref().ok());

    let mut warnings = Vec::new();
    let mut notes = facts.notes.clone();
    if let Some(dp) = facts.data_parallel {
        notes.push(format!("spec.shardSpec data-parallel {dp}: runtimes serving the Model run at least {dp} replicas"));
    }
    let size = first_plan.map(|plan| {
        let (derived, formula, warning) = facts.size_check(plan);
        warnings.extend(warning.clone());
        SizeStatus {
            declared: spec.size.clone(),
            derived_gib: round2(derived),
            formula,
            consistent: warning.is_none(),
        }
    });
    let cache = facts
        .cache
        .as_ref()
        .and(first_plan)
        .map(|plan| cache_status(req, &facts, plan));
    if let Some(plan) = first_plan {
        warnings.extend(plan.warnings.iter().cloned());
        if plan.architecture_guessed {
            warnings.push(model_config::guessed_warning(
                &facts.model_id,
                model_config::GIVE_CONFIG_ON_MODEL,
            ));
        }
    }

    let serveable: Vec<&str> = plans
        .iter()
        .filter(|(_, p)| p.is_ok())
        .map(|(g, _)| g.as_str())
        .collect();
    let shard_problem = shard_problem(req, &facts);
    // Weights no runtime loads fail the Model as its spec's own problem.
    let spec_problem = facts
        .unservable
        .clone()
        .map(|u| (u.reason, u.why))
        .or(shard_problem.map(|why| ("InvalidShardSpec", why)));
    let failed = serveable.is_empty() || spec_problem.is_some();
    let reason = spec_problem
        .as_ref()
        .map(|(_, why)| why.clone())
        .or_else(|| {
            failed.then(|| {
                let errors: Vec<(&String, &String)> = plans
                    .iter()
                    .filter_map(|(gpu, p)| p.as_ref().err().map(|e| (gpu, e)))
                    .collect();
                let texts: Vec<&String> = errors.iter().map(|(_, e)| *e).collect();
                let why = match sizing::shared_refusal(&texts) {
                    Some(e) => e.to_string(),
                    None => errors
                        .iter()
                        .map(|(gpu, e)| format!("{gpu}: {e}"))
                        .collect::<Vec<_>>()
                        .join("; "),
                };
                format!(
                    "no offered GPU type ({}) can serve the Model: {why}",
                    req.settings.offered_gpu_types.join(", "),
                )
            })
        });
    // A Model that cannot serve says so where people look too: a WARNING
    // result, which Crossplane records as an event on the Model.
    warnings.extend(reason.clone());
    let card_name = names::dns_subdomain(&xr.name, "-model");

    let status = ModelStatus {
        phase: Some(if failed { "Failed" } else { "Ready" }.into()),
        reason: reason.clone(),
        model_id: Some(facts.model_url.clone()),
        parameters_billions: first_plan.map(|p| round2(p.parameters_b)),
        precision: first_plan.map(|p| p.weight_precision.to_string()),
        size,
        plans: plans
            .iter()
            .map(|(gpu, p)| GpuPlanStatus {
                gpu_type: gpu.clone(),
                plan: p.as_ref().ok().map(PlanStatus::from),
                error: p.as_ref().err().cloned(),
            })
            .collect(),
        serveable_on: (!failed).then(|| serveable.join(",")),
        cache,
        config_map: Some(card_name.clone()),
        notes,
        warnings: warnings.clone(),
        waiting_for: None,
    };

    let mut out = Composition {
        requirements,
        // A Model no GPU type can serve is of no use to what references it.
        xr_not_ready: failed,
        ..Default::default()
    };
    let card = card(&xr.name, &spec, &facts);
    let data = BTreeMap::from([
        ("model.json".to_string(), pretty(&card)),
        ("plans.json".to_string(), pretty(&status.plans)),
    ]);
    check_card_size(&card, &data)?;
    let manifest = config_map(
        &card_name,
        &xr.namespace,
        labels("Model", &xr.name, "model-card"),
        data,
    );
    out.add(CARD, manifest, &req.observed);

    out.warn_on_transition("ModelWarning", &warnings, req.xr, &["warnings"]);
    out.conditions.extend(model_config::resolved_condition(
        req,
        &facts,
        "spec.configFrom.configMapRef",
    ));
    out.conditions.push(match (&spec_problem, &reason) {
        (Some((condition_reason, why)), _) => {
            outcome::condition(SERVABLE, false, condition_reason, why.clone())
        }
        (None, Some(r)) => outcome::condition(SERVABLE, false, "NoGpuFits", r.clone()),
        // Servable is what some runtime serves: an XR may choose another
        // runtime than the platform's default, which the Model cannot know,
        // so where the default cannot serve a plan the Model says so
        // instead of failing.
        (None, None) => {
            let mut message = format!("servable on {}", serveable.join(", "));
            for part in not_by_default_runtime(req.settings.runtime, &plans) {
                message.push_str("; ");
                message.push_str(&part);
            }
            outcome::condition(SERVABLE, true, "Planned", message)
        }
    });
    out.status = Some(crate::compose::composition::to_object(status));
    Ok(out)
}

/// The requirements for `spec.configFrom`'s ConfigMap (asked for on every
/// call), with its config read into `facts`; `Break` is the answer to give
/// while it is awaited, or a FATAL that keeps the requirement, so that
/// Crossplane does not call again without the ConfigMap.
fn read_config(
    req: &ComposeRequest,
    facts: &mut ModelFacts,
) -> ControlFlow<Composition, BTreeMap<String, ResourceSelector>> {
    let mut requirements = BTreeMap::new();
    if let Some(name) = &facts.config_map {
        requirements.insert(
            model_config::REQUIREMENT_KEY.to_string(),
            model_config::requirement(name, &req.xr.namespace),
        );
    }
    match model_config::resolve(req, facts, "spec.configFrom.configMapRef") {
        Ok(model_config::Lookup::Ready) => ControlFlow::Continue(requirements),
        Ok(model_config::Lookup::Waiting { message, not_found }) => {
            let status = ModelStatus {
                phase: Some("Pending".into()),
                waiting_for: Some(message.clone()),
                model_id: Some(facts.model_url.clone()),
                ..Default::default()
            };
            // The card is kept, and the plans it holds stay in the status.
            let mut out = model_config::MODEL_CONFIG.composition(
                req,
                &message,
                not_found,
                crate::compose::composition::to_object(status),
                &[CARD],
            );
            // A kept `reason` said why the Model failed; a Pending Model
            // has no verdict, and `waitingFor` says what it waits for.
            if let Some(status) = out.status.as_mut() {
                status.remove("reason");
            }
            out.requirements = requirements;
            ControlFlow::Break(out)
        }
        Err(refusal) => ControlFlow::Break(Composition {
            results: vec![outcome::fatal(refusal.reason, refusal.message)],
            requirements,
            ..Default::default()
        }),
    }
}

/// A plan on each GPU type the platform offers, or why there is none.
fn plan_each_gpu(
    req: &ComposeRequest,
    facts: &ModelFacts,
) -> Vec<(String, Result<sizing::Plan, String>)> {
    req.settings
        .offered_gpu_types
        .iter()
        .map(|gpu| {
            // Whole GPUs: a MIG plan depends on the pool that serves the Model.
            let request = sizing::SizingRequest {
                mig: MigChoice::None,
                objective: facts.objective_or(req.settings.objective),
                // The release of the image the platform's default runtime runs.
                vllm_version: req.settings.image_release(req.settings.runtime, Some(gpu)),
                ..facts.sizing_request(gpu, req.settings.gpu_memory_utilization)
            };
            (
                gpu.clone(),
                crate::sizing::size(&request).map_err(|e| e.to_string()),
            )
        })
        .collect()
}

/// Where the platform's default runtime cannot serve the Model's plans,
/// and the runtime the XRs serving it there need: one sentence per reason.
fn not_by_default_runtime(
    default: RuntimeChoice,
    plans: &[(String, Result<sizing::Plan, String>)],
) -> Vec<String> {
    let (mut across_nodes, mut not_nvidia) = (Vec::new(), Vec::new());
    for (gpu, plan) in plans {
        let Ok(plan) = plan else { continue };
        match cannot_serve(default, plan) {
            Some(Unserved::AcrossNodes) => across_nodes.push(format!(
                "{gpu} ({} GPUs on {} nodes)",
                plan.gpu_count, plan.nodes
            )),
            Some(Unserved::NotNvidia) => not_nvidia.push(gpu.as_str()),
            None => {}
        }
    }
    let mut said = Vec::new();
    if !across_nodes.is_empty() {
        said.push(format!(
            "the platform's default runtime (input.defaults.runtime) runs a replica as one pod on one node, and \
             a replica needs several nodes on {}: XRs that serve it there set spec.runtime to leader-worker-set or \
             auto",
            across_nodes.join(", ")
        ));
    }
    if !not_nvidia.is_empty() {
        said.push(format!(
            "the platform's default runtime (input.defaults.runtime) runs only on NVIDIA, not on {}: XRs that \
             serve it there set spec.runtime to deployment or auto",
            not_nvidia.join(", ")
        ));
    }
    said
}

/// What a runtime serving the Model with its data-parallel replicas gets
/// of its cache policy.
fn cache_status(req: &ComposeRequest, facts: &ModelFacts, plan: &sizing::Plan) -> CacheStatus {
    let replicas = facts.data_parallel.map_or(1, |d| d as i32);
    let mut not_applied = facts.cache_not_applied();
    let applied = match weights_cache::decide(
        true,
        plan,
        replicas,
        "the Model's data-parallel shards",
        &req.settings.weights_cache,
    ) {
        Ok(decision) => {
            not_applied.extend(decision.warnings);
            decision.cache.map(|c| c.applied)
        }
        Err(why) => {
            not_applied.push(why);
            None
        }
    };
    CacheStatus {
        applied,
        not_applied,
    }
}

/// A shardSpec the weights cannot be split by fails on every GPU type
/// alike: checked once against the Model's own architecture, so the reason
/// names the field instead of repeating a plan error per GPU. Reported as
/// phase Failed, like any Model that cannot be served: the status is what
/// the runtimes referencing the Model read, and a FATAL result would leave
/// it stale.
fn shard_problem(req: &ComposeRequest, facts: &ModelFacts) -> Option<String> {
    let tp = facts.tensor_parallel.filter(|tp| *tp > 1)?;
    let request = facts.sizing_request(&req.settings.gpu_type, req.settings.gpu_memory_utilization);
    sizing::check_tensor_parallel(&request, tp)
        .err()
        .map(|e| format!("spec.shardSpec.count: {e}"))
}

/// The normalized model card: the spec with defaults resolved and the
/// derived ids, as agents and people read it from the ConfigMap.
#[serde_with::skip_serializing_none]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Card<'a> {
    name: &'a str,
    #[serde(rename = "weightsURI")]
    weights_uri: &'a str,
    model_id: &'a str,
    size: Option<&'a str>,
    quantization: String,
    parameter_count: Option<&'a str>,
    format: Option<&'a str>,
    architecture: Option<&'a str>,
    shard_spec: Option<Value>,
    cache_policy: Option<Value>,
    config: Option<&'a Value>,
    weights_index: Option<Value>,
    config_from: Option<Value>,
    kv_cache_dtype: Option<Value>,
    objective: Option<Value>,
}

fn card<'a>(name: &'a str, spec: &'a ModelSpec, facts: &'a ModelFacts) -> Card<'a> {
    Card {
        name,
        weights_uri: &spec.weights_uri,
        model_id: &facts.model_url,
        size: spec.size.as_deref(),
        quantization: facts
            .precision
            .map_or_else(|| "none".to_string(), |p| p.to_string()),
        parameter_count: spec.parameter_count.as_deref(),
        format: spec.format.as_deref(),
        architecture: spec.architecture.as_deref(),
        shard_spec: spec
            .shard_spec
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok()),
        cache_policy: spec
            .cache_policy
            .as_ref()
            .and_then(|c| serde_json::to_value(c).ok()),
        config: spec.config.as_ref(),
        weights_index: spec
            .weights_index
            .as_ref()
            .and_then(|w| serde_json::to_value(w).ok()),
        config_from: spec
            .config_from
            .as_ref()
            .and_then(|c| serde_json::to_value(c).ok()),
        kv_cache_dtype: spec
            .kv_cache_dtype
            .and_then(|k| serde_json::to_value(k).ok()),
        objective: spec.objective.and_then(|o| serde_json::to_value(o).ok()),
    }
}

/// Refuses a model card larger than a ConfigMap holds, naming the spec
/// fields that made it large.
fn check_card_size(card: &Card, data: &BTreeMap<String, String>) -> Result<(), Refusal> {
    let parts: Vec<(String, usize)> = serde_json::to_value(card)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| {
            let field = match k.as_str() {
                "name" => "metadata.name".to_string(),
                "modelId" => "spec.weightsURI".to_string(),
                other => format!("spec.{other}"),
            };
            (field, v.to_string().len())
        })
        .collect();
    crate::compose::resources::config_map::check_size("the model card ConfigMap", data, &parts)
        .map_err(|m| Refusal::new("ConfigTooLarge", m))
}
