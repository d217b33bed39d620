//! The composer contract: what a composer reads ([`ComposeRequest`]) and
//! what it returns ([`Composition`]): typed manifests kept as JSON objects,
//! their readiness, the XR's status, conditions, results and requirements.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::compose::remote_claim::{self, Claim};
use crate::compose::rollout::Rollout;
use crate::input::Settings;
use crate::manifests::provider_kubernetes::Object;
use crate::protocol::server::{Condition, Ready, ResourceSelector, Resources, Result as FnResult};
use crate::request::{Composite, Observed, api_group, str_at};

/// Everything a composer may read.
pub(crate) struct ComposeRequest<'a> {
    pub(crate) xr: &'a Composite,
    pub(crate) observed: Observed<'a>,
    pub(crate) required: &'a BTreeMap<String, Resources>,
    pub(crate) settings: &'a Settings,
}

/// One composed resource and whether it is ready.
#[derive(Debug)]
pub(crate) struct Composed {
    pub(crate) manifest: Manifest,
    pub(crate) ready: Ready,
}

/// A composed manifest: built with typed Kubernetes structs, kept as the
/// JSON object they serialize to.
#[derive(Clone, Debug)]
pub(crate) struct Manifest {
    kind: &'static str,
    object: Map<String, Value>,
}

impl Manifest {
    /// `object`, a Kubernetes object of `kind`.
    pub(crate) fn new(kind: &'static str, object: impl serde::Serialize) -> Self {
        Self {
            kind,
            object: to_object(object),
        }
    }

    /// A k8s-openapi object, which writes its own apiVersion and kind.
    pub(crate) fn of<T: k8s_openapi::Resource + serde::Serialize>(object: T) -> Self {
        Self::new(T::KIND, object)
    }

    /// The manifest's kind, for the policies that depend on it.
    pub(crate) fn kind(&self) -> &'static str {
        self.kind
    }

    /// The manifest as an object.
    pub(crate) fn object(&self) -> &Map<String, Value> {
        &self.object
    }

    /// Sets the annotation `name` of the manifest.
    pub(crate) fn annotate(&mut self, name: &str, value: &str) {
        crate::compose::annotations::set_annotation(&mut self.object, name, value);
    }
}

impl serde::Serialize for Manifest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.object.serialize(serializer)
    }
}

/// `value` as a JSON object: every type a composer builds serializes to one
/// (string keys, no failing `Serialize`), so anything else is a bug.
pub(crate) fn to_object(value: impl serde::Serialize) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(object)) => object,
        other => panic!("a composed object must serialize to a JSON object, not {other:?}"),
    }
}

/// What a composer returns.
#[derive(Debug, Default)]
pub(crate) struct Composition {
    /// Composed resources by composition-resource-name.
    pub(crate) resources: BTreeMap<String, Composed>,
    /// Fields merged into the XR's desired status.
    pub(crate) status: Option<Map<String, Value>>,
    pub(crate) conditions: Vec<Condition>,
    pub(crate) results: Vec<FnResult>,
    pub(crate) requirements: BTreeMap<String, ResourceSelector>,
    /// Names of resources composed on an earlier call that must be kept as
    /// Crossplane last applied them (for example while a referenced Model is
    /// missing): leaving them out of the desired state would make
    /// Crossplane delete them.
    pub(crate) keep_observed: Vec<String>,
    /// How soon Crossplane should call again, when sooner than the step
    /// input's TTL: while waiting on what Crossplane does not watch.
    pub(crate) ttl_seconds: Option<u32>,
    /// The XR is not ready whatever its composed resources say: it waits
    /// for what it needs, or cannot be served. Crossplane derives an XR's
    /// Ready from its composed resources alone, so an XR that composes
    /// nothing yet would otherwise be Ready. Written with `status`, which
    /// every composition that sets it has.
    pub(crate) xr_not_ready: bool,
}

impl Composition {
    /// Sets the annotation `name` of the resource composed under `key`.
    pub(crate) fn annotate(&mut self, key: &str, name: &str, value: &str) {
        if let Some(c) = self.resources.get_mut(key) {
            crate::compose::annotations::set_annotation(&mut c.manifest.object, name, value);
        }
    }

    /// Adds `manifest` under `key`, ready as its observed counterpart says,
    /// and returns how that counterpart stands.
    ///
    /// A workload carries the digest of the spec it is composed from
    /// ([`crate::compose::spec_digest::ANNOTATION`]): until Crossplane has applied this
    /// spec, the observed object is an older one, and whatever its status
    /// says is about that older spec, so it is not ready.
    pub(crate) fn add(
        &mut self,
        key: &str,
        manifest: Manifest,
        observed: &Observed,
    ) -> crate::compose::rollout::Rollout {
        self.add_observed(key, manifest, observed.get(key).as_ref())
    }

    /// [`Composition::add`], given the observed counterpart (`None` when
    /// there is none yet) by a caller that reads it too.
    pub(crate) fn add_observed(
        &mut self,
        key: &str,
        manifest: Manifest,
        object: Option<&Map<String, Value>>,
    ) -> crate::compose::rollout::Rollout {
        if let Some(old) = object
            && let Some(why) = replaced_because(old, &manifest)
        {
            self.replace(key, old, &why);
            return Rollout::Absent;
        }
        let mut manifest = manifest;
        let spec = crate::compose::spec_digest::annotate(manifest.kind, &mut manifest.object);
        let mut rollout = crate::compose::rollout::rollout(object);
        if let (Some(spec), Some(object)) = (&spec, &object)
            && !spec.applied_to(object)
        {
            rollout = crate::compose::rollout::not_yet_applied(object);
        }
        if manifest.kind == Object::<Manifest>::KIND {
            rollout = self.claim(&mut manifest, object, rollout);
        }
        let ready = rollout.ready();
        self.resources
            .insert(key.into(), Composed { manifest, ready });
        rollout
    }

    /// Leaves out what is composed under `key` this once, as `old` cannot
    /// become it (`why`): Crossplane deletes `old`, and the next call
    /// composes the new object.
    fn replace(&mut self, key: &str, old: &Map<String, Value>, why: &str) {
        self.xr_not_ready = true;
        self.results.push(crate::response::normal(
            "Replacing",
            format!(
                "replacing the {} {} (composed as {key}): {why}; it is deleted now, and its \
                 replacement is composed on the next reconcile",
                str_at(old, &["kind"]),
                str_at(old, &["metadata", "name"]),
            ),
        ));
    }

    /// Lets `object`, a provider-kubernetes Object, write what it wraps only
    /// when [`remote_claim`] says it may, and says how it stands if not.
    fn claim(
        &mut self,
        object: &mut Manifest,
        observed: Option<&Map<String, Value>>,
        rollout: Rollout,
    ) -> Rollout {
        // Nothing at the target is no failure: the object is about to be
        // created.
        let rollout = match rollout {
            Rollout::Failed { ref message, .. } if remote_claim::is_not_found(message) => {
                Rollout::Absent
            }
            rollout => rollout,
        };
        match remote_claim::claim(&object.object, observed) {
            Claim::Owned => rollout,
            Claim::Checking => {
                remote_claim::observe_only(&mut object.object);
                match rollout {
                    // What keeps provider-kubernetes from looking (a missing
                    // ProviderConfig, say).
                    failed @ Rollout::Failed { .. } => failed,
                    _ => Rollout::Absent,
                }
            }
            Claim::Taken(message) => {
                remote_claim::observe_only(&mut object.object);
                self.results
                    .push(crate::response::warning(NAME_TAKEN, message.clone()));
                Rollout::Failed {
                    reason: NAME_TAKEN.into(),
                    message,
                    replicas: Default::default(),
                }
            }
        }
    }

    /// Makes the resource under `key` ready as `rollout` says, for a caller
    /// that knows more than its observed object tells.
    pub(crate) fn set_rollout(&mut self, key: &str, rollout: &crate::compose::rollout::Rollout) {
        if let Some(c) = self.resources.get_mut(key) {
            c.ready = rollout.ready();
        }
    }

    /// A WARNING result for each of `warnings` the XR's observed status
    /// does not show yet at `path` (for example `["plan", "warnings"]`):
    /// results become Kubernetes events, so they mark transitions while the
    /// steady state stays in the status. The status is read only when there
    /// is a warning to compare.
    pub(crate) fn warn_on_transition(
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

/// Why `old`, an observed object, cannot become `new`, composed under the
/// same name, if it cannot. Crossplane keeps a composed resource's name
/// whatever its kind: it would name the new object after the old one and
/// drop the old one from the XR's resources, still running (an XR moved to
/// or from another cluster, an autoscaler the platform changed). And
/// provider-kubernetes leaves what an Object applied where it is when the
/// Object is told to apply another object (a new targetNamespace): the old
/// server would keep its GPUs.
fn replaced_because(old: &Map<String, Value>, new: &Manifest) -> Option<String> {
    fn group_kind(o: &Map<String, Value>) -> (&str, &str) {
        (api_group(str_at(o, &["apiVersion"])), str_at(o, &["kind"]))
    }
    if group_kind(old) != group_kind(&new.object) {
        return Some(format!(
            "it would now be a {}, and Crossplane cannot change the kind of a composed resource",
            new.kind
        ));
    }
    remote_claim::moved(old, &new.object)
}

/// The reason of a composed object whose name another owner's object holds.
const NAME_TAKEN: &str = "NameTaken";

/// A composer refused the XR: the message becomes a FATAL result.
#[derive(Debug, PartialEq)]
pub(crate) struct Refusal {
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

impl Refusal {
    pub(crate) fn new(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
        }
    }
}

/// A composer: one per XR kind.
pub(crate) type Composer = fn(&ComposeRequest) -> Result<Composition, Refusal>;
