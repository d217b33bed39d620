//! Whether a provider-kubernetes Object may write the object it wraps.
//!
//! provider-kubernetes takes over whatever stands under the name it
//! applies: an Object that finds an object there updates it (server-side
//! apply with force) and deletes it with itself. Two LLMInferences of one
//! name in two namespaces, sent to one namespace of one cluster, would
//! overwrite each other's model server without end, and deleting either
//! would delete the other's. So a new Object first only looks
//! (`managementPolicies: [Observe]`), and writes once provider-kubernetes
//! reports that nothing stands there. Anything else is taken: the Object
//! keeps only looking, and the XR says whose it is (the owner annotation
//! each wrapped object carries) and what to change. An Object that took an
//! object over before this rule (it did not create it, and another Object's
//! field manager writes it too) stops writing as well: the one that created
//! it keeps it.

use serde_json::{Map, Value};

use crate::compose::annotations::annotation;
use crate::compose::observed_condition::condition;
use crate::request::{applied_manifest, at, observes_only, str_at};

/// The annotation naming the XR a wrapped object is composed for
/// ("LLMInference team-a/mistral").
pub(crate) const OWNER_ANNOTATION: &str = "infer.dev/owner";

/// crossplane-runtime's mark on a managed resource that created its
/// external object itself (rather than finding it there).
const CREATED_ANNOTATION: &str = "crossplane.io/external-create-succeeded";

/// How crossplane-runtime reports that an observe-only managed resource
/// found nothing.
const NOT_FOUND: &str = "external resource does not exist";

/// What an Object may do with the object it wraps.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Write it: nothing stood there (or it writes already, and no other
    /// Object that created the object writes it too).
    Owned,
    /// Only look: provider-kubernetes has not reported on this target yet.
    Checking,
    /// Only look: another's object stands there; the message says whose
    /// and what to change.
    Taken(String),
}

/// The claim of `desired`, an Object about to be composed, given the Object
/// observed under the same name (`None`: not composed before).
pub(crate) fn claim(desired: &Map<String, Value>, observed: Option<&Map<String, Value>>) -> Claim {
    let Some(observed) = observed else {
        return Claim::Checking;
    };
    // The same target: one that moved was replaced first (see `moved`).
    let target = Target::of(desired);
    // What provider-kubernetes last read at the target, if it read this target.
    let found = at(observed, &["status", "atProvider", "manifest"])
        .and_then(Value::as_object)
        .filter(|m| target.names(m));
    if !observes_only(observed) {
        // It writes. What it writes shows its own owner, so only the
        // object's field managers tell of another Object writing it too;
        // the one that created the object keeps it.
        let created = annotation(observed, CREATED_ANNOTATION).is_some();
        return match found.and_then(|f| other_writer(f, observed)) {
            Some(other) if !created => Claim::Taken(target.written_also_by(other)),
            _ => Claim::Owned,
        };
    }
    let Some(synced) = condition(observed, "Synced").filter(|c| c.is_current(observed)) else {
        return Claim::Checking;
    };
    let owner = applied_manifest(desired).and_then(|m| annotation(m, OWNER_ANNOTATION));
    match found {
        // Left by a deleted XR, on its way out.
        Some(found) if at(found, &["metadata", "deletionTimestamp"]).is_some() => Claim::Checking,
        Some(found) => {
            Claim::Taken(target.taken_message(found, owner, other_writer(found, observed)))
        }
        None if is_not_found(&synced.message) => Claim::Owned,
        // It looked and says nothing of what it read (provider-kubernetes
        // always copies it): nothing to refuse on.
        None if synced.status == "True" => Claim::Owned,
        None => Claim::Checking,
    }
}

/// provider-kubernetes' server-side apply field manager of an Object is
/// this prefix and the Object's name.
const SSA_MANAGER_PREFIX: &str = "provider-kubernetes/";

/// The Object, other than `observed`, that applies `object` too (its field
/// manager), if any.
fn other_writer<'a>(
    object: &'a Map<String, Value>,
    observed: &Map<String, Value>,
) -> Option<&'a str> {
    let ours = format!(
        "{SSA_MANAGER_PREFIX}{}",
        str_at(observed, &["metadata", "name"])
    );
    at(object, &["metadata", "managedFields"])?
        .as_array()?
        .iter()
        .filter_map(|f| f.get("manager")?.as_str())
        .find(|m| m.starts_with(SSA_MANAGER_PREFIX) && *m != ours)
        .map(|m| &m[SSA_MANAGER_PREFIX.len()..])
}

/// What `old`, an observed Object, applies, when `new`, composed under the
/// same name, is to apply another object (another namespace, name or
/// cluster): provider-kubernetes would leave the old one where it is.
pub(crate) fn moved(old: &Map<String, Value>, new: &Map<String, Value>) -> Option<String> {
    let (from, to) = (Target::of(old), Target::of(new));
    (str_at(old, &["kind"]) == "Object" && from != to).then(|| {
        format!(
            "it applies {} {}/{} in the cluster of {} {}, and the XR now wants {} {}/{} in the \
             cluster of {} {}; provider-kubernetes would leave the first where it is",
            from.kind,
            from.namespace,
            from.name,
            from.provider_config_kind,
            from.provider_config,
            to.kind,
            to.namespace,
            to.name,
            to.provider_config_kind,
            to.provider_config
        )
    })
}

/// Whether `message`, an Object's, says that it found nothing to observe.
pub(crate) fn is_not_found(message: &str) -> bool {
    message.contains(NOT_FOUND)
}

/// Makes `object`, an Object, only look at what it wraps.
pub(crate) fn observe_only(object: &mut Map<String, Value>) {
    if let Some(Value::Object(spec)) = object.get_mut("spec") {
        spec.insert("managementPolicies".into(), serde_json::json!(["Observe"]));
    }
}

/// Where an Object applies: its cluster (provider config) and the wrapped
/// object's kind, namespace and name.
#[derive(Debug, PartialEq, Eq)]
struct Target<'a> {
    provider_config_kind: &'a str,
    provider_config: &'a str,
    kind: &'a str,
    namespace: &'a str,
    name: &'a str,
}

impl<'a> Target<'a> {
    fn of(object: &'a Map<String, Value>) -> Self {
        let m = applied_manifest(object);
        let of_manifest = |path: &[&str]| m.map_or("", |m| str_at(m, path));
        Self {
            provider_config_kind: str_at(object, &["spec", "providerConfigRef", "kind"]),
            provider_config: str_at(object, &["spec", "providerConfigRef", "name"]),
            kind: of_manifest(&["kind"]),
            namespace: of_manifest(&["metadata", "namespace"]),
            name: of_manifest(&["metadata", "name"]),
        }
    }

    /// Whether `object`, as read from the cluster, is this target's.
    fn names(&self, object: &Map<String, Value>) -> bool {
        str_at(object, &["kind"]) == self.kind
            && str_at(object, &["metadata", "namespace"]) == self.namespace
            && str_at(object, &["metadata", "name"]) == self.name
    }

    /// Says whose `found` is: the XR its owner annotation names, else the
    /// Object that `writer` says writes it, else what manages it.
    fn taken_message(
        &self,
        found: &Map<String, Value>,
        ours: Option<&str>,
        writer: Option<&str>,
    ) -> String {
        let owner = annotation(found, OWNER_ANNOTATION);
        let manager = str_at(
            found,
            &["metadata", "labels", "app.kubernetes.io/managed-by"],
        );
        let whose = match (owner, writer) {
            (Some(owner), _) if Some(owner) != ours => format!("composed for {owner}"),
            (_, Some(writer)) => format!("written by the provider-kubernetes Object {writer}"),
            (Some(_), None) => "composed for this XR by an Object that no longer manages it \
                                (left over: delete it, and it is composed again)"
                .to_string(),
            (None, None) if manager.is_empty() => {
                format!("not composed by this function (it has no {OWNER_ANNOTATION} annotation)")
            }
            (None, None) => {
                format!("managed by {manager} (it has no {OWNER_ANNOTATION} annotation)")
            }
        };
        self.taken(&whose)
    }

    fn written_also_by(&self, other: &str) -> String {
        self.taken(&format!(
            "created and written by the provider-kubernetes Object {other}"
        ))
    }

    fn taken(&self, whose: &str) -> String {
        format!(
            "{} {}/{} already exists in the cluster of {} {}, {whose}: this XR only \
             observes it, and neither changes nor deletes it; set spec.targetNamespace to a \
             namespace of that cluster where the name is free, or give this XR another name",
            self.kind, self.namespace, self.name, self.provider_config_kind, self.provider_config
        )
    }
}
