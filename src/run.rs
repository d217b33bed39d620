//! One `RunFunction` call, start to finish, with no I/O.
//!
//! The gRPC server, `render` and the benchmarks all call [`run_function`]:
//! start the response from the request (`response::to`), read the step
//! input and the XR ([`request`]), dispatch on the XR's kind, compose, and
//! write the composition into the response. Any problem with the request
//! becomes a FATAL result that names it; a FATAL answer carries the earlier
//! steps' desired state untouched.

use std::collections::BTreeMap;

use crate::compose;
use crate::compose::composition::{ComposeRequest, Composition, Refusal};
use crate::input::DEFAULT_TTL;
use crate::protocol::server::{Ready, ResourceSelector, RunFunctionRequest, RunFunctionResponse};
use crate::request::{self, Composite, Observed};
use crate::response;
use crate::served_kinds;

/// Which XR a call was about, for logs and metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Subject {
    pub(crate) kind: String,
    pub(crate) name: String,
    pub(crate) namespace: String,
}

impl Subject {
    fn of(xr: &Composite) -> Self {
        Self {
            kind: xr.kind.clone(),
            name: xr.name.clone(),
            namespace: xr.namespace.clone(),
        }
    }
}

/// One finished call.
#[derive(Clone, Debug)]
pub struct Call {
    pub(crate) subject: Subject,
    pub response: RunFunctionResponse,
}

/// Runs the function for one request.
pub fn run_function(mut req: RunFunctionRequest) -> Call {
    let mut rsp = response::to(&mut req, DEFAULT_TTL);
    let refused = |mut rsp: RunFunctionResponse, subject, reason, message| {
        rsp.results.push(response::fatal(reason, message));
        Call {
            subject,
            response: rsp,
        }
    };
    let settings = match request::settings(&req) {
        Ok(s) => s,
        Err(message) => return refused(rsp, Subject::default(), "InvalidInput", message),
    };
    response::set_ttl(&mut rsp, settings.ttl);
    let xr = match request::observed_composite(&req) {
        Ok(xr) => xr,
        Err(message) => return refused(rsp, Subject::default(), "MissingComposite", message),
    };
    let subject = Subject::of(&xr);
    let Some(compose) = compose::composer_for(&xr.kind) else {
        let of_api = match xr.api_version.as_str() {
            "" => String::new(),
            v => format!(" ({v})"),
        };
        let message = format!(
            "function-inference cannot compose kind {:?}{of_api}; it composes {}",
            xr.kind,
            compose::KINDS.join(", ")
        );
        return refused(rsp, subject, "UnknownKind", message);
    };
    // Every composed name and label derives from these: the API server
    // admits no other, and a huge one would build a response larger than
    // gRPC carries (ending as OUT_OF_RANGE instead of a result that says why).
    if let Err(message) = check_identity(&xr) {
        return refused(rsp, subject, "InvalidName", message);
    }
    let empty = Default::default();
    let observed = Observed::new(req.observed.as_ref().map_or(&empty, |o| &o.resources));
    let compose_request = ComposeRequest {
        xr: &xr,
        observed,
        required: &req.required_resources,
        settings: &settings,
    };
    let written = compose(&compose_request).and_then(|c| {
        let crds =
            served_kinds::crds_to_require(&req, c.resources.values().map(|r| r.manifest.object()))?;
        write(&mut rsp, &xr, &compose_request.observed, c, crds)
    });
    match written {
        Ok(()) => Call {
            subject,
            response: rsp,
        },
        Err(refusal) => refused(rsp, subject, refusal.reason, refusal.message),
    }
}

/// Answers with only the tag and TTL: the `--noop` transport floor.
pub(crate) fn noop(req: RunFunctionRequest) -> Call {
    let response = RunFunctionResponse {
        meta: Some(crate::protocol::server::ResponseMeta {
            tag: req.meta.map(|m| m.tag).unwrap_or_default(),
            ttl: Some(response::protobuf_duration(DEFAULT_TTL)),
        }),
        ..Default::default()
    };
    Call {
        subject: Subject {
            kind: "noop".into(),
            ..Default::default()
        },
        response,
    }
}

/// The XR's name and namespace, checked as the API server checks them
/// (see [`crate::names::require_xr_name`]).
fn check_identity(xr: &Composite) -> Result<(), String> {
    crate::names::require_xr_name(&xr.name)?;
    crate::names::require_dns1123_label("metadata.namespace", &xr.namespace, "team-a")
}

/// Writes `composition` into `rsp`: its status merged into the desired XR,
/// the resources it keeps as observed, its resources, results, conditions,
/// requirements (with the `crds` [`served_kinds`] asks for) and TTL. What
/// can fail is worked out before `rsp` changes, so that a refusal answers
/// with the earlier steps' desired state untouched.
fn write(
    rsp: &mut RunFunctionResponse,
    xr: &Composite,
    observed: &Observed,
    mut composition: Composition,
    crds: BTreeMap<String, ResourceSelector>,
) -> Result<(), Refusal> {
    let unreadable = |message: String| Refusal::new("UnreadableState", message);
    let desired = rsp.desired.get_or_insert_with(Default::default);
    let composite = match composition.status.take() {
        Some(mut status) => {
            if let Some(declared) = compose::status_fields_for(&xr.api_version) {
                status.retain(|field, _| declared.contains(&field.as_str()));
            }
            let mut composite = desired.composite.clone().unwrap_or_default();
            response::merge_status(&mut composite, &xr.api_version, &xr.kind, &status)
                .map_err(unreadable)?;
            if composition.xr_not_ready {
                composite.ready = Ready::False as i32;
            }
            Some(composite)
        }
        None => None,
    };
    let mut kept = Vec::new();
    for name in &composition.keep_observed {
        if composition.resources.contains_key(name) || desired.resources.contains_key(name) {
            continue;
        }
        let Some(raw) = observed.raw(name) else {
            continue;
        };
        // Leaving it out would make Crossplane delete it: kept as
        // Crossplane applied it, or refused.
        let resource = compose::last_applied::desired_again(raw).map_err(|why| {
            unreadable(format!(
                "cannot keep the observed resource {name:?}: {why}; function-inference refuses to answer rather \
                 than drop it (Crossplane would delete it)"
            ))
        })?;
        kept.push((name.clone(), resource));
    }
    if composite.is_some() {
        desired.composite = composite;
    }
    desired.resources.extend(kept);
    for (name, composed) in &composition.resources {
        response::set_desired_resource(rsp, name, composed.manifest.object(), composed.ready);
    }
    rsp.results.extend(composition.results);
    rsp.conditions.extend(composition.conditions);
    let mut requirements = composition.requirements;
    requirements.extend(crds);
    response::require(rsp, requirements);
    if let Some(seconds) = composition.ttl_seconds {
        response::call_again_within(rsp, std::time::Duration::from_secs(u64::from(seconds)));
    }
    Ok(())
}
