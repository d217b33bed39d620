//! A replaced provider-kubernetes Object (told to apply elsewhere, see
//! `remote_claim::moved`) is deleted before its replacement is composed.

use serde_json::{Map, Value};

use crate::compose::annotations::annotation;
use crate::compose::composition::{ComposeRequest, Composition};
use crate::manifests::provider_kubernetes::Object;
use crate::protocol::server::{MatchLabels, ResourceSelector, resource_selector::Match};
use crate::request::{COMPOSITION_RESOURCE_NAME, at, required_objects, str_at};

/// What Crossplane is asked for under this key: the Objects of the XR's
/// namespace, those being deleted included.
pub(crate) const OBJECTS_REQUIREMENT: &str = "remote-objects";

/// Leaves out of `out` each Object that is not observed yet while an Object
/// composed under the same name is still being deleted (replaced, see
/// `remote_claim::moved`). Crossplane names a composed resource after its
/// XR and its composition-resource name, so the new Object would get the
/// old one's name: applied to it while provider-kubernetes deletes it, it
/// would make the provider delete the new target instead of the old one,
/// which would keep running. Crossplane is asked for the namespace's Objects while any
/// of the XR's is not observed; the answer comes before Crossplane applies
/// anything.
pub(crate) fn await_deletions(req: &ComposeRequest, out: &mut Composition) {
    let new: Vec<String> = out
        .resources
        .iter()
        .filter(|(key, c)| {
            c.manifest.kind() == Object::<Value>::KIND && req.observed.raw(key).is_none()
        })
        .map(|(key, _)| key.clone())
        .collect();
    if new.is_empty() {
        return;
    }
    out.requirements.insert(
        OBJECTS_REQUIREMENT.into(),
        ResourceSelector {
            api_version: Object::<Value>::API_VERSION.into(),
            kind: Object::<Value>::KIND.into(),
            namespace: Some(req.xr.namespace.clone()),
            // Every Object of the namespace: Crossplane takes its labels off
            // a composed resource before deleting it.
            r#match: Some(Match::MatchLabels(MatchLabels::default())),
        },
    );
    let objects = required_objects(req.required, OBJECTS_REQUIREMENT);
    for key in new {
        let Some(old) = objects.iter().find(|o| {
            controlled_by(o, &req.xr.kind, &req.xr.name)
                && annotation(o, COMPOSITION_RESOURCE_NAME) == Some(key.as_str())
                && at(o, &["metadata", "deletionTimestamp"]).is_some()
        }) else {
            continue;
        };
        out.resources.remove(&key);
        out.xr_not_ready = true;
        out.ttl_seconds = Some(DELETION_POLL_SECONDS);
        out.results.push(crate::response::normal(
            "Replacing",
            format!(
                "waiting for the Object {} (composed as {key}) to be deleted with what it applied \
                 before its replacement is composed",
                str_at(old, &["metadata", "name"])
            ),
        ));
    }
}

/// Whether `object`'s controller is the XR of `kind` named `name` (this
/// XR, or one of its name deleted before).
fn controlled_by(object: &Map<String, Value>, kind: &str, name: &str) -> bool {
    at(object, &["metadata", "ownerReferences"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .any(|r| {
            r.get("controller").and_then(Value::as_bool) == Some(true)
                && str_at(r, &["kind"]) == kind
                && str_at(r, &["name"]) == name
        })
}

/// How soon to look again while an Object is being deleted: Crossplane
/// no longer watches it.
const DELETION_POLL_SECONDS: u32 = 10;
