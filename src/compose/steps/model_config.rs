//! Reading a Model's `config.json` (with its weights index and ModelOpt's
//! `hf_quant_config.json`) from the ConfigMap
//! its `spec.configFrom.configMapRef` names, through Crossplane's required
//! resources, the way `model_ref` reads a Model.
//!
//! Every composer that sizes a Model (the Model itself, an LLMInference
//! with `modelRef`, an AgentPool) asks for the ConfigMap with the same
//! requirement on every call and waits, without a FATAL, until Crossplane
//! returns it. A ConfigMap that is there but unusable (no key, a key that is
//! not JSON, a config.json that describes no language model, an absurd
//! size) is a FATAL naming the field and the key: sizing on a guess instead
//! would silently drop what the user gave.

use serde_json::Value;

use crate::compose::composition::{ComposeRequest, Refusal};
use crate::compose::steps::conditions::withdrawn;
use crate::compose::steps::model_facts::{CONFIG_MAX_BYTES, ModelFacts, parse_config};
use crate::compose::steps::model_ref::{Awaited, WaitingFor, fetched};
use crate::protocol::server::{Condition, ResourceSelector, resource_selector::Match};
use crate::response as outcome;
use crate::sizing::{read_hf_quant_config, weights_index_total_bytes};

/// Key of the requirement, in the request's `required` and the response's requirements.
pub(crate) const REQUIREMENT_KEY: &str = "model-config";

/// Condition type saying whether the Model's config ConfigMap was found.
pub(crate) const MODEL_CONFIG_RESOLVED: &str = "ModelConfigResolved";

/// The ConfigMap keys read.
pub(crate) const CONFIG_KEY: &str = "config.json";
pub(crate) const INDEX_KEY: &str = "model.safetensors.index.json";
/// Where ModelOpt 0.29 and earlier wrote a checkpoint's quantization; vLLM
/// reads it when config.json has no quantization_config.
pub(crate) const HF_QUANT_CONFIG_KEY: &str = "hf_quant_config.json";

/// The requirement for the ConfigMap `name` in `namespace`.
pub(crate) fn requirement(name: &str, namespace: &str) -> ResourceSelector {
    ResourceSelector {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some(namespace.into()),
        r#match: Some(Match::MatchName(name.into())),
    }
}

/// What reading the ConfigMap gave.
#[derive(Debug, PartialEq)]
pub(crate) enum Lookup {
    /// The facts hold the ConfigMap's config.json and weights index (or the
    /// Model names no ConfigMap).
    Ready,
    /// Crossplane has not looked it up yet, or found nothing.
    Waiting { message: String, not_found: bool },
}

/// Reads the ConfigMap `facts.config_map` names into `facts`. `field` is
/// the path of spec.configFrom.configMapRef as the caller's user sees it
/// ("spec.configFrom.configMapRef", or "spec.modelRef: Model team-a/x
/// spec.configFrom.configMapRef").
pub(crate) fn resolve(
    req: &ComposeRequest,
    facts: &mut ModelFacts,
    field: &str,
) -> Result<Lookup, Refusal> {
    let Some(name) = facts.config_map.clone() else {
        return Ok(Lookup::Ready);
    };
    let display = format!("{}/{name}", req.xr.namespace);
    let invalid = |m: String| {
        Refusal::new(
            "InvalidModelConfig",
            format!("{field}: ConfigMap {display}: {m}"),
        )
    };
    let create = format!("create it with the model's config.json under the key {CONFIG_KEY}");
    let object = match fetched(req, REQUIREMENT_KEY, "ConfigMap", &name, field, &create) {
        Ok(Ok(object)) => object,
        Ok(Err(Awaited { message, not_found })) => {
            return Ok(Lookup::Waiting { message, not_found });
        }
        Err(e) => return Err(invalid(e)),
    };
    let data = object.get("data").and_then(Value::as_object);
    let text = |key: &str| data.and_then(|d| d.get(key)).and_then(Value::as_str);
    let in_binary = |key: &str| {
        object
            .get("binaryData")
            .and_then(Value::as_object)
            .is_some_and(|b| b.contains_key(key))
    };
    for key in [CONFIG_KEY, INDEX_KEY, HF_QUANT_CONFIG_KEY] {
        if text(key).is_none() && in_binary(key) {
            return Err(invalid(format!(
                "{key} is under binaryData; put it under data, as text"
            )));
        }
    }
    let (config, index) = (text(CONFIG_KEY), text(INDEX_KEY));
    let hf_quant_config = match text(HF_QUANT_CONFIG_KEY) {
        None => None,
        Some(_) if config.is_none() => {
            return Err(invalid(format!(
                "has {HF_QUANT_CONFIG_KEY} but no {CONFIG_KEY}; put the model's config.json beside it under {CONFIG_KEY}"
            )));
        }
        Some(t) if t.len() > CONFIG_MAX_BYTES => {
            return Err(invalid(format!(
                "key {HF_QUANT_CONFIG_KEY} is {} KiB; at most {} KiB accepted",
                t.len().div_ceil(1024),
                CONFIG_MAX_BYTES / 1024
            )));
        }
        Some(t) => Some(
            read_hf_quant_config(t)
                .map_err(|e| invalid(format!("key {HF_QUANT_CONFIG_KEY} is {e}")))?,
        ),
    };
    if config.is_none() && index.is_none() {
        let keys: Vec<&str> = data
            .map(|d| d.keys().map(String::as_str).collect())
            .unwrap_or_default();
        return Err(invalid(format!(
            "has neither {CONFIG_KEY} nor {INDEX_KEY} under data (its keys: {}); put the model's config.json under {CONFIG_KEY}",
            if keys.is_empty() {
                "none".to_string()
            } else {
                keys.join(", ")
            }
        )));
    }
    if let Some(t) = config {
        let config =
            parse_config(&format!("key {CONFIG_KEY}"), t, hf_quant_config).map_err(invalid)?;
        facts.model_config = Some(config);
    }
    if let Some(t) = index {
        if facts.checkpoint_bytes.is_some() {
            return Err(invalid(format!(
                "has {INDEX_KEY} and the Model sets spec.weightsIndex too; give the weights' size once"
            )));
        }
        let bytes =
            weights_index_total_bytes(t).map_err(|e| invalid(format!("key {INDEX_KEY}: {e}")))?;
        facts.checkpoint_bytes = Some(bytes);
    }
    Ok(Lookup::Ready)
}

/// The `ModelConfigResolved` condition once the config is read, said on
/// every call: Crossplane keeps a condition a function stops returning, so
/// the one that said the ConfigMap was missing would otherwise stay. When
/// no ConfigMap is named, only an XR that had the condition is told so.
/// `field` names spec.configFrom.configMapRef as the caller's user sees it.
pub(crate) fn resolved_condition(
    req: &ComposeRequest,
    facts: &ModelFacts,
    field: &str,
) -> Option<Condition> {
    match &facts.config_map {
        Some(name) => Some(outcome::condition(
            MODEL_CONFIG_RESOLVED,
            true,
            "Found",
            format!("sized from ConfigMap {}/{name} ({field})", req.xr.namespace),
        )),
        None => withdrawn(
            req,
            outcome::condition(
                MODEL_CONFIG_RESOLVED,
                true,
                "NoConfigMap",
                format!("{field} is not set: there is no ConfigMap to read"),
            ),
        ),
    }
}

/// Waiting for the Model's ConfigMap: its requirement is the caller's.
pub(crate) const MODEL_CONFIG: WaitingFor = WaitingFor {
    condition: MODEL_CONFIG_RESOLVED,
    not_found: "ModelConfigNotFound",
    waiting: "WaitingForModelConfig",
};

/// The warning a plan on a guessed architecture gets: what was guessed, and
/// how to give the config (`how`: where this XR's Model is).
pub(crate) fn guessed_warning(model: &str, how: &str) -> String {
    format!(
        "{model} is not in the model catalog and no config.json was given: its architecture is assumed to be that of the \
         Llama 3 model nearest in size (grouped-query attention), and a model that caches more per token may need \
         more GPUs for a long context; {how}"
    )
}

/// `how` for an LLMInference with spec.model.
pub(crate) const GIVE_CONFIG_VIA_MODEL_REF: &str = "serve it through a Model (spec.modelRef) whose spec.config holds the model's \
     config.json, or whose spec.configFrom.configMapRef names a ConfigMap with the key config.json";

/// `how` for a Model and the runtimes that serve one.
pub(crate) const GIVE_CONFIG_ON_MODEL: &str = "set the Model's spec.config to the model's config.json, or spec.configFrom.configMapRef \
     to a ConfigMap with the key config.json";
