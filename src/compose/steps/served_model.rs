//! The Model a serving kind names (an LLMInference's `spec.modelRef`, an
//! AgentPool's `spec.agentClass.modelRef`), with its `spec.configFrom`
//! ConfigMap read into its facts.
//!
//! The requirements for both are asked for on every call, FATAL or not, so
//! Crossplane's requirement loop sees the same ones each time. While either
//! is awaited the kind waits: `Sized` Unknown, `Serving` False, and what it
//! composed before kept as observed.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use serde_json::{Map, Value};

use crate::compose::composition::{ComposeRequest, Composition, Refusal};
use crate::compose::steps::model_config;
use crate::compose::steps::model_ref::{self, Lookup, ResolvedModel};
use crate::compose::steps::serving;
use crate::protocol::server::ResourceSelector;
use crate::response as outcome;

/// A Model reference: the field that holds it and the name it gives.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ModelRef<'a> {
    pub(crate) field: &'a str,
    pub(crate) name: &'a str,
}

impl<'a> ModelRef<'a> {
    /// The reference `field` (`spec.modelRef`) gives. A name no Model can
    /// have is refused before the Model is asked for: waiting for it would
    /// never end.
    pub(crate) fn new(field: &'a str, name: &'a str) -> Result<Self, Refusal> {
        crate::names::require_subdomain(&format!("{field}.name"), name, "llama-3-1-8b")
            .map_err(|e| Refusal::new("InvalidSpec", e))?;
        Ok(ModelRef { field, name })
    }
}

/// The kind's status while it waits: given the phase (`WaitingForModel`,
/// `WaitingForModelConfig`), the Model as `namespace/name`, and the message.
pub(crate) type WaitingStatus<'a> = &'a dyn Fn(&str, &str, &str) -> Map<String, Value>;

/// `composed` with the requirements for the Model and, once it is known,
/// its ConfigMap; a refusal becomes a FATAL result that keeps them.
pub(crate) fn with_requirements(
    req: &ComposeRequest,
    model: ModelRef,
    composed: Result<Composition, Refusal>,
) -> Composition {
    let mut out = composed.unwrap_or_else(|refusal| Composition {
        results: vec![outcome::fatal(refusal.reason, refusal.message)],
        ..Default::default()
    });
    out.requirements.extend(requirements(req, model));
    out
}

fn requirements(req: &ComposeRequest, model: ModelRef) -> BTreeMap<String, ResourceSelector> {
    let namespace = &req.xr.namespace;
    let mut requirements = BTreeMap::from([(
        model_ref::REQUIREMENT_KEY.to_string(),
        model_ref::requirement(model.name, namespace),
    )]);
    if let Ok(Lookup::Found(m)) = model_ref::lookup(req, model.field, model.name)
        && let Some(config_map) = &m.facts.config_map
    {
        requirements.insert(
            model_config::REQUIREMENT_KEY.into(),
            model_config::requirement(config_map, namespace),
        );
    }
    requirements
}

/// The Model with its config read; `Break` is the answer to give while the
/// Model or its ConfigMap is awaited, keeping the resources in `keep` and,
/// when it keeps any, the XR's last status under `status`'s fields (see
/// `WaitingFor::composition`).
pub(crate) fn resolve(
    req: &ComposeRequest,
    model: ModelRef,
    keep: &[&str],
    status: WaitingStatus,
) -> Result<ControlFlow<Composition, Box<ResolvedModel>>, Refusal> {
    let mut m = match model_ref::lookup(req, model.field, model.name)? {
        Lookup::Found(m) => m,
        Lookup::Waiting { message, not_found } => {
            let display = format!("{}/{}", req.xr.namespace, model.name);
            let phase = "WaitingForModel";
            let status = status(phase, &display, &message);
            let mut waiting = model_ref::MODEL.composition(req, &message, not_found, status, keep);
            serving::while_waiting(req, &mut waiting, phase, &message, keep);
            return Ok(ControlFlow::Break(waiting));
        }
    };
    if let Some(u) = &m.facts.unservable {
        return Err(Refusal::new(
            "UnservableModel",
            format!("{}: Model {}: {}", model.field, m.display, u.why),
        ));
    }
    let config_field = format!(
        "{}: Model {} spec.configFrom.configMapRef",
        model.field, m.display
    );
    match model_config::resolve(req, &mut m.facts, &config_field)? {
        model_config::Lookup::Ready => Ok(ControlFlow::Continue(m)),
        model_config::Lookup::Waiting { message, not_found } => {
            let phase = "WaitingForModelConfig";
            let status = status(phase, &m.display, &message);
            let mut waiting =
                model_config::MODEL_CONFIG.composition(req, &message, not_found, status, keep);
            serving::while_waiting(req, &mut waiting, phase, &message, keep);
            Ok(ControlFlow::Break(waiting))
        }
    }
}

/// The `ModelResolved` condition once the Model is found, and
/// `ModelConfigResolved` once its ConfigMap is read: said on every call,
/// since they replace the ones that said what was missing.
pub(crate) fn resolved_conditions(
    req: &ComposeRequest,
    m: &ResolvedModel,
) -> Vec<crate::protocol::server::Condition> {
    let field = format!("Model {} spec.configFrom.configMapRef", m.display);
    std::iter::once(outcome::condition(
        model_ref::MODEL_RESOLVED,
        true,
        "Found",
        format!("Model {} served as {}", m.display, m.facts.model_url),
    ))
    .chain(model_config::resolved_condition(req, &m.facts, &field))
    .collect()
}
