//! The composer contract: what a composer reads ([`ComposeRequest`]) and
//! what it returns ([`Composition`]): typed manifests kept as JSON objects,
//! their readiness, the XR's status, conditions, results and requirements.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::input::Settings;
use crate::protocol::server::{Condition, Ready, ResourceSelector, Resources, Result as FnResult};
use crate::request::{Composite, Observed};

/// Everything a composer may read.
pub struct ComposeRequest<'a> {
    pub xr: &'a Composite,
    pub observed: Observed<'a>,
    pub required: &'a BTreeMap<String, Resources>,
    pub settings: &'a Settings,
}

/// One composed resource and whether it is ready.
#[derive(Debug)]
pub struct Composed {
    pub manifest: Manifest,
    pub ready: Ready,
}

/// A composed manifest: built with typed Kubernetes structs, kept as the
/// JSON object they serialize to.
#[derive(Clone, Debug)]
pub struct Manifest {
    kind: &'static str,
    object: Map<String, Value>,
}

impl Manifest {
    /// `object`, a Kubernetes object of `kind`.
    pub fn new(kind: &'static str, object: impl serde::Serialize) -> Self {
        Self {
            kind,
            object: to_object(object),
        }
    }

    /// The manifest's kind, for the policies that depend on it.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The manifest as an object.
    pub fn object(&self) -> &Map<String, Value> {
        &self.object
    }
}

impl serde::Serialize for Manifest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.object.serialize(serializer)
    }
}

/// `value` as a JSON object: every type a composer builds serializes to one
/// (string keys, no failing `Serialize`), so anything else is a bug.
pub fn to_object(value: impl serde::Serialize) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(object)) => object,
        other => panic!("a composed object must serialize to a JSON object, not {other:?}"),
    }
}

/// What a composer returns.
#[derive(Debug, Default)]
pub struct Composition {
    /// Composed resources by composition-resource-name.
    pub resources: BTreeMap<String, Composed>,
    /// Fields merged into the XR's desired status.
    pub status: Option<Map<String, Value>>,
    pub conditions: Vec<Condition>,
    pub results: Vec<FnResult>,
    pub requirements: BTreeMap<String, ResourceSelector>,
    /// Names of resources composed on an earlier call that must be kept as
    /// Crossplane last applied them (for example while a referenced Model is
    /// missing): leaving them out of the desired state would make
    /// Crossplane delete them.
    pub keep_observed: Vec<String>,
    /// How soon Crossplane should call again, when sooner than the step
    /// input's TTL: while waiting on what Crossplane does not watch.
    pub ttl_seconds: Option<u32>,
}

impl Composition {
    /// Sets the fields merged into the XR's desired status.
    pub fn set_status(&mut self, fields: impl serde::Serialize) {
        self.status = Some(to_object(fields));
    }

    /// Adds `manifest` under `key`, ready as its observed counterpart says,
    /// and returns how that counterpart stands.
    ///
    /// A workload carries the digest of the spec it is composed from
    /// ([`crate::compose::spec_digest::ANNOTATION`]): until Crossplane has applied this
    /// spec, the observed object is an older one, and whatever its status
    /// says is about that older spec, so it is not ready.
    pub fn add(
        &mut self,
        key: &str,
        manifest: Manifest,
        observed: &Observed,
    ) -> crate::compose::rollout::Rollout {
        let mut manifest = manifest;
        let spec = crate::compose::spec_digest::annotate(manifest.kind, &mut manifest.object);
        let object = observed.get(key);
        let mut rollout = crate::compose::rollout::rollout(object.as_ref());
        if let (Some(spec), Some(object)) = (&spec, &object)
            && !spec.applied_to(object)
        {
            rollout = crate::compose::rollout::not_yet_applied(object);
        }
        let ready = rollout.ready();
        self.resources
            .insert(key.into(), Composed { manifest, ready });
        rollout
    }

    /// A WARNING result for each of `warnings` the XR's observed status
    /// does not show yet at `path` (for example `["plan", "warnings"]`):
    /// results become Kubernetes events, so they mark transitions while the
    /// steady state stays in the status. The status is read only when there
    /// is a warning to compare.
    pub fn warn_on_transition(
        &mut self,
        reason: &str,
        warnings: &[String],
        xr: &Composite,
        path: &[&str],
    ) {
        if warnings.is_empty() {
            return;
        }
        let reported = xr.status_strings(path);
        for w in warnings {
            if !reported.contains(w) {
                self.results
                    .push(crate::response::warning(reason, w.clone()));
            }
        }
    }
}

/// A composer refused the XR: the message becomes a FATAL result.
#[derive(Debug, PartialEq)]
pub struct Refusal {
    pub reason: &'static str,
    pub message: String,
}

impl Refusal {
    pub fn new(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
        }
    }
}

/// A composer: one per XR kind.
pub type Composer = fn(&ComposeRequest) -> Result<Composition, Refusal>;
