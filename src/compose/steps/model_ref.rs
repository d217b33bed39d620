//! Reading a `Model` through Crossplane's required resources.
//!
//! A composer that serves a Model asks Crossplane for it with the same
//! requirement on every call (Crossplane calls again until the requirements
//! stop changing), and gets it back in `required`. Until the Model is there
//! the composer waits: no FATAL, a condition and a status saying what it
//! waits for, and the resources it composed before kept as observed, since
//! leaving them out of the desired state would delete them.

use serde_json::{Map, Value};

use crate::compose::composition::{ComposeRequest, Composition, Refusal};
use crate::compose::steps::model_facts::ModelFacts;
use crate::protocol::server::{ResourceSelector, resource_selector::Match};
use crate::request::{Required, required_object};
use crate::response as outcome;
use crate::xr::model::{KIND as MODEL_KIND, ModelSpec};

/// Key of the requirement, in the request's `required` and the response's requirements.
pub(crate) const REQUIREMENT_KEY: &str = "model";

/// Condition type saying whether the referenced Model was found.
pub(crate) const MODEL_RESOLVED: &str = "ModelResolved";

/// Seconds until Crossplane calls again while a required resource is
/// awaited: it does not watch them, so a Model created now is seen within
/// that, not at the next poll.
pub(crate) const WAITING_TTL_SECONDS: u32 = 10;

/// The requirement for the Model `name` in `namespace`.
pub(crate) fn requirement(name: &str, namespace: &str) -> ResourceSelector {
    ResourceSelector {
        api_version: crate::xr::API_VERSION.into(),
        kind: MODEL_KIND.into(),
        namespace: Some(namespace.into()),
        r#match: Some(Match::MatchName(name.into())),
    }
}

/// A Model that was found.
#[derive(Debug)]
pub(crate) struct ResolvedModel {
    /// `namespace/name`, for messages.
    pub(crate) display: String,
    pub(crate) name: String,
    pub(crate) facts: ModelFacts,
}

/// What looking the Model up gave.
#[derive(Debug)]
pub(crate) enum Lookup {
    Found(Box<ResolvedModel>),
    /// Crossplane has not looked it up yet, or found nothing.
    Waiting {
        message: String,
        not_found: bool,
    },
}

/// Looks up the Model `name` that `field` refers to. A Model whose spec
/// cannot be read is a refusal that names the Model's field.
pub(crate) fn lookup(req: &ComposeRequest, field: &str, name: &str) -> Result<Lookup, Refusal> {
    let display = format!("{}/{name}", req.xr.namespace);
    let create = format!("create it in namespace {}", req.xr.namespace);
    let object = match fetched(req, REQUIREMENT_KEY, "Model", name, field, &create) {
        Ok(Ok(object)) => object,
        Ok(Err(Awaited { message, not_found })) => {
            return Ok(Lookup::Waiting { message, not_found });
        }
        Err(e) => {
            return Err(Refusal::new(
                "InvalidModel",
                format!("{field}: Model {display}: {e}"),
            ));
        }
    };
    let spec = read_spec(&object)
        .map_err(|e| Refusal::new("InvalidModel", format!("{field}: Model {display}: {e}")))?;
    let facts = ModelFacts::from_spec(&spec, "spec")
        .map_err(|e| Refusal::new("InvalidModel", format!("{field}: Model {display}: {e}")))?;
    Ok(Lookup::Found(Box::new(ResolvedModel {
        display,
        name: name.to_string(),
        facts,
    })))
}

/// What a composer waits for while a required resource is not there.
#[derive(Debug)]
pub(crate) struct Awaited {
    pub(crate) message: String,
    /// Crossplane looked it up and found nothing (rather than not yet).
    pub(crate) not_found: bool,
}

/// The `kind` `name` Crossplane fetched under `key` for `field`, or what
/// to wait with until it does; `create` says how to create one that does not
/// exist. An error is a fetched object that cannot be read.
pub(crate) fn fetched(
    req: &ComposeRequest,
    key: &str,
    kind: &str,
    name: &str,
    field: &str,
    create: &str,
) -> Result<Result<Map<String, Value>, Awaited>, String> {
    let display = format!("{}/{name}", req.xr.namespace);
    Ok(match required_object(req.required, key, name)? {
        Required::Found(object) => Ok(object),
        Required::NotLookedUp => Err(Awaited {
            message: format!("waiting for Crossplane to look up {kind} {display} ({field})"),
            not_found: false,
        }),
        Required::Missing => Err(Awaited {
            message: format!("waiting for {kind} {display} ({field}): it does not exist; {create}"),
            not_found: true,
        }),
    })
}

fn read_spec(object: &Map<String, Value>) -> Result<ModelSpec, String> {
    let spec = object
        .get("spec")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    crate::de::from_object(spec, "spec")
}

/// What a composer waits for, in the words of its condition.
pub(crate) struct WaitingFor {
    /// The condition type.
    pub(crate) condition: &'static str,
    /// Its reason (and the warning's) once the resource turns out missing.
    pub(crate) not_found: &'static str,
    /// Its reason while the resource may still come.
    pub(crate) waiting: &'static str,
}

/// Waiting for the Model: its requirement is the caller's.
pub(crate) const MODEL: WaitingFor = WaitingFor {
    condition: MODEL_RESOLVED,
    not_found: "ModelNotFound",
    waiting: "WaitingForModel",
};

impl WaitingFor {
    /// The composition of a composer that waits: a condition, a status
    /// with the `waiting` fields (which should say what it waits for), the
    /// resources in `keep` kept as observed, the XR not ready, and a warning
    /// only when the resource turns out missing and the observed status
    /// (`waitingFor`) did not say so yet. The caller adds its requirements.
    ///
    /// What is kept stays as it was, so the status that describes it (an
    /// endpoint, a plan) stays too, under the waiting fields: Crossplane
    /// would remove every field the answer leaves out.
    pub(crate) fn composition(
        &self,
        req: &ComposeRequest,
        message: &str,
        not_found: bool,
        waiting: Map<String, Value>,
        keep: &[&str],
    ) -> Composition {
        let kept = keep.iter().any(|name| req.observed.raw(name).is_some());
        let mut status = match (kept, req.xr.status()) {
            (true, Some(last)) => last.clone(),
            _ => Map::new(),
        };
        status.remove("conditions");
        status.extend(waiting);
        let mut out = Composition {
            status: Some(status),
            keep_observed: keep.iter().map(|k| k.to_string()).collect(),
            // Crossplane does not watch required resources: it looks again
            // when the answer expires.
            ttl_seconds: Some(WAITING_TTL_SECONDS),
            xr_not_ready: true,
            ..Default::default()
        };
        out.conditions.push(if not_found {
            outcome::condition(self.condition, false, self.not_found, message)
        } else {
            outcome::condition_unknown(self.condition, self.waiting, message)
        });
        let observed = req.xr.status();
        let seen = observed
            .as_ref()
            .and_then(|s| s.get("waitingFor"))
            .and_then(Value::as_str);
        if not_found && seen != Some(message) {
            out.results.push(outcome::warning(self.not_found, message));
        }
        out
    }
}
